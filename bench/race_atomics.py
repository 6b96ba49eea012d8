"""The cost of the race check on a kernel made of atomics (docs/EXECUTION.md §20): a
histogram, each of 64 blocks of 256 threads adding ITERS values into its shared counts with
``__atomic_add`` and then the counts into global bins, race-checked on the native engine
against the plain native run, in CPU time, best of repeats taken in turns. Two kernels:
``indexed`` reads each value from a global input of 64 * 256 * ITERS elements (whose shadow
the check keeps too), ``computed`` computes it (the atomics alone). The reference engine's
checked run, which such a kernel got before the C detector covered atomics, is timed at a
small size.

    python bench/race_atomics.py              # ITERS = 128, 3 repeats
    python bench/race_atomics.py --iters 16 --repeats 5
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import croqvm

SOURCE = """
__co__ void hist(global s32 [N] input, global s32 [64] bins) {
  parallel b by 64 : block, t by 256 : thread {
    shared s32 [64] counts;
    if (t < 64) counts.at(t) = 0;
    sync.barrier : block;
    foreach i in [ITERS]
      __atomic_add(counts.at(VALUE % 64), 1);
    sync.barrier : block;
    if (t < 64) __atomic_add(bins.at(t), counts.at(t));
  }
}
"""
VALUES = {"indexed": "input.at((b * 256 + t) * ITERS + i)", "computed": "(t * 7 + i)"}


def seconds(kind: str, iters: int, engine: str, check: str | None) -> float:
    """CPU seconds of one run; the bins are checked against numpy."""
    n = 64 * 256 * iters
    source = SOURCE.replace("VALUE", VALUES[kind]).replace("ITERS", str(iters)) \
        .replace("[N]", f"[{n}]")
    program = croqvm.compile(source, "hist.co")
    values = np.random.default_rng(0).integers(0, 1000, n).astype(np.int32)
    bins = np.zeros(64, np.int32)
    start = time.process_time()
    program.run("hist", values, bins, engine=engine, check=check, jobs=1)
    spent = time.process_time() - start
    if kind == "indexed":
        expected = np.bincount(values % 64, minlength=64)
    else:
        t, i = np.meshgrid(np.arange(256), np.arange(iters), indexing="ij")
        expected = 64 * np.bincount(((t * 7 + i) % 64).ravel(), minlength=64)
    assert (bins == expected).all()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seconds("computed", 1, "native", None)      # loads the extension, untimed
    for kind in VALUES:
        best = {None: float("inf"), "race": float("inf")}
        for _ in range(args.repeats):
            for check, so_far in list(best.items()):
                best[check] = min(so_far, seconds(kind, args.iters, "native", check))
        print(f"{kind:9s} ITERS={args.iters}: native {best[None]:.3f} s, race-checked "
              f"{best['race']:.3f} s, {best['race'] / best[None]:.2f}x")
    python = seconds("indexed", 2, "python", "race")
    native = seconds("indexed", 2, "native", "race")
    print(f"indexed   ITERS=2: race-checked on the reference engine {python:.3f} s, on the "
          f"native engine {native:.3f} s")


if __name__ == "__main__":
    main()
