"""CUDA path figures per program of programs/: build times cold and cached (nvcc for
sm_80 and sm_90a, the host compiler for cuda-cpu) and run times on cuda-cpu against
the Python engine, with the same inputs and agreement checked.

    python bench/cuda.py               # test sizes
    python bench/cuda.py --bench       # the catalogue's benchmark sizes (slow on the engine)
    python bench/cuda.py --only matmul # the programs whose name contains "matmul"

Cold builds use a fresh cache directory; "cached" is the second build of the same text
(a cache hit: the key is hashed and the file found). CPU seconds of the compilers are
shown beside wall seconds, which on a shared machine include waiting for a core.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import croqvm
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import emit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "programs"))
from catalog import PROGRAMS  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build_times(text: str, target: str):
    """(cold wall s, cold compiler CPU s, cached wall s) of one build."""
    t0, c0 = time.perf_counter(), children_cpu()
    cc.build(text, target)
    cold, cpu = time.perf_counter() - t0, children_cpu() - c0
    t0 = time.perf_counter()
    cc.build(text, target)
    return cold, cpu, time.perf_counter() - t0


def run_seconds(prog, entry, device: str, scale: str):
    """(seconds, outputs) of one run of the entry on ``device`` (best of 3)."""
    best, outputs = float("inf"), None
    for _ in range(3):
        args, dims = entry.make_args(np.random.default_rng(7), scale) if entry.func else \
            ([], {})
        t0 = time.perf_counter()
        if entry.func is None:
            for fn in prog.functions:
                if not fn.params:
                    prog.run(fn.name, device=device, out=open(os.devnull, "w"))
        else:
            outputs = prog.run(entry.func, *args, device=device, **dims), args
        best = min(best, time.perf_counter() - t0)
    return best, outputs


def agree(a, b) -> bool:
    if a is None or b is None:
        return a is b
    (ra, aa), (rb, ab) = a, b
    same = (ra is None and rb is None) or np.array_equal(np.asarray(ra), np.asarray(rb))
    return same and all(np.array_equal(x, y) for x, y in zip(aa, ab)
                        if isinstance(x, np.ndarray))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", action="store_true", help="benchmark sizes")
    ap.add_argument("--only", default="", help="programs whose name contains this")
    opts = ap.parse_args()
    scale = "bench" if opts.bench else "test"
    cache = tempfile.mkdtemp(prefix="croqvm-bench-cache-")
    os.environ["CROQVM_CACHE_DIR"] = cache
    nvcc = shutil.which("nvcc") is not None
    print(f"{'program':34} {'sm_80 cold/cpu/hit':>20} {'sm_90a cold/cpu/hit':>20} "
          f"{'cpu-lib cold/cpu/hit':>21} {'interp s':>9} {'cuda-cpu s':>10} agree")
    try:
        for entry in PROGRAMS:
            if entry.stage is not None or opts.only not in entry.id:
                continue
            prog = croqvm.compile_file(entry.path, defines=entry.defines)
            if not any(fn.kernels for fn in prog.functions):
                continue
            cols = []
            for arch in ("sm_80", "sm_90a"):
                if nvcc:
                    cold, cpu, hit = build_times(emit(prog.module, arch=arch).text, arch)
                    cols.append(f"{cold:6.2f}/{cpu:5.2f}/{hit:5.3f}")
                else:
                    cols.append("no nvcc")
            cold, cpu, hit = build_times(emit(prog.module).text, cc.CPU)
            cols.append(f"{cold:6.2f}/{cpu:5.2f}/{hit:5.3f}")
            t_interp, want = run_seconds(prog, entry, "cpu", scale)
            t_cuda, got = run_seconds(prog, entry, "cuda-cpu", scale)
            print(f"{entry.id:34} {cols[0]:>20} {cols[1]:>20} {cols[2]:>21} "
                  f"{t_interp:9.3f} {t_cuda:10.3f} {'yes' if agree(want, got) else 'NO'}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
