"""The cost of tracing (croqvm trace, docs/TRACE.md): for each of bench/run.py's programs,
the traced run against the plain run on the Python engine (the engine that traces) and on
the native engine (the default), at the Python engine's size, CPU time, best of repeats.

    python bench/trace.py            # bench/run.py's Python-engine sizes (minutes)
    python bench/trace.py --quick    # small sizes, to check the harness
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import BENCHMARKS  # noqa: E402

import croqvm  # noqa: E402


def _cpu(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (best)")
    opts = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'benchmark':21s} {'size':14s} {'native s':>9s} {'python s':>9s} {'traced s':>9s} "
          f"{'x python':>9s} {'x native':>9s} {'slices':>8s}")
    for make in BENCHMARKS:
        bench = make()
        size = bench.sizes["quick" if opts.quick else "python"]
        program = croqvm.compile_file(str(bench.path), defines=bench.defines or {})
        args0, dims = bench.make(np.random.default_rng(0), size)

        def fresh():
            return [np.array(a, copy=True) for a in args0]
        quiet = io.StringIO()
        native = _cpu(lambda: program.run(bench.func, *fresh(), engine="native", jobs=1,
                                          out=quiet, **dims), opts.repeats)
        python = _cpu(lambda: program.run(bench.func, *fresh(), engine="python", out=quiet,
                                          **dims), opts.repeats)
        traces = []
        traced = _cpu(lambda: traces.append(program.trace(bench.func, *fresh(), out=quiet,
                                                          **dims)), opts.repeats)
        shape = "x".join(map(str, size)) if isinstance(size, tuple) else str(size)
        print(f"{bench.name:21s} {shape:14s} {native:9.3f} {python:9.3f} {traced:9.3f} "
              f"{traced / python:9.2f} {traced / native:9.0f} {len(traces[-1].slices):8d}",
              flush=True)


if __name__ == "__main__":
    main()
