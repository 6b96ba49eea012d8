"""Reference-engine benchmark: wall time, lane-instructions per second, ratio to numpy.

    python bench/run.py                # the benchmark sizes (minutes on the Python engine)
    python bench/run.py --quick        # the test sizes, to check the harness
    python bench/run.py --check race   # also the cost of race checking (LANGUAGE.md §7.5)

Runs the DMA matmul (s32, 128x256x256) and the warp-specialised 1P1C pipeline (f16 in,
f32 out, 256x256x256) of programs/, checks each result against its numpy reference, and
prints one row per program.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import croqvm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "programs"))
from catalog import PROGRAMS  # noqa: E402

BENCHMARKS = [("matmul_dma.co", {}), ("matmul_1p1c.co", {})]


def entry_for(file: str, defines: dict):
    return next(e for e in PROGRAMS if e.file == file and e.defines == defines)


def numpy_seconds(entry, args) -> float:
    """Best of 5 runs of the numpy reference on the same inputs."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        entry.reference(args)
        best = min(best, time.perf_counter() - t0)
    return best


def check(entry, args, result) -> None:
    expected = entry.reference(args)
    for key, want in expected.items():
        got = result if key == "return" else args[entry.params.index(key)]
        bound = entry.tolerance(args) if entry.tolerance else 0
        assert np.all(np.abs(np.asarray(got, np.float64) - want) <= bound), f"{key} differs"


def run_one(file: str, defines: dict, scale: str) -> str:
    entry = entry_for(file, defines)
    program = croqvm.compile_file(entry.path, defines=entry.defines)
    args, dims = entry.make_args(np.random.default_rng(0), scale)
    shapes = " ".join("x".join(map(str, np.shape(a))) for a in args if isinstance(a, np.ndarray))
    stats: dict = {}
    t0 = time.perf_counter()
    result = program.run(entry.func, *args, stats=stats, **dims)
    wall = time.perf_counter() - t0
    check(entry, args, result)
    ref = numpy_seconds(entry, [np.array(a, copy=True) if isinstance(a, np.ndarray) else a
                                for a in args])
    lanes = stats["lane_steps"]
    return (f"{file:22s} {shapes:22s} {wall:9.2f} s  {stats['warp_steps']:>12,d} warp-instr  "
            f"{lanes:>14,d} lane-instr  {lanes / wall / 1e6:6.2f} M lane-instr/s  "
            f"numpy {ref * 1e3:8.2f} ms  ratio {wall / ref:>10,.0f}x")


def check_cost(file: str, defines: dict, scale: str, checking: str) -> str:
    """The run with the check ``checking`` against the plain run, on the same inputs: CPU
    seconds (the machine may be shared) of the better of two runs each."""
    entry = entry_for(file, defines)
    program = croqvm.compile_file(entry.path, defines=entry.defines)
    best = {None: float("inf"), checking: float("inf")}
    for _ in range(2):
        for which in best:
            args, dims = entry.make_args(np.random.default_rng(0), scale)
            t0 = time.process_time()
            result = program.run(entry.func, *args, check=which, **dims)
            best[which] = min(best[which], time.process_time() - t0)
            check(entry, args, result)
    return (f"{file:22s} --check {checking}: {best[checking]:8.2f} s CPU, "
            f"{best[checking] / best[None]:5.2f}x the plain run ({best[None]:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="use the small test sizes")
    parser.add_argument("--check", choices=["race"],
                        help="also time each program with this run-time check")
    options = parser.parse_args()
    scale = "test" if options.quick else "bench"
    for file, defines in BENCHMARKS:
        print(run_one(file, defines, scale), flush=True)
        if options.check:
            print(check_cost(file, defines, scale, options.check), flush=True)


if __name__ == "__main__":
    main()
