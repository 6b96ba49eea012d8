"""The cost of tracing (croqvm trace, docs/TRACE.md): for each of bench/run.py's programs,
the run traced with its file written on the native engine against the plain native run
(one thread, the default engine's work), in CPU time, best of repeats; the goal is at
most 3x. And the size
of the file a trace of about 10^6 events makes (the goal: under 100 MB).

    python bench/trace.py                 # bench/run.py's native sizes (a few minutes)
    python bench/trace.py --quick         # small sizes, to check the harness
    python bench/trace.py --python        # also the reference engine, at its sizes (minutes)
    python bench/trace.py --events 1e6    # the file of a trace of about 10^6 events

A row gives the plain CPU seconds, then what ``croqvm trace -o FILE`` pays after loading
the program: the run traced and its file written (``record``, ``write`` and the modelled
time the command reports), as ``.json`` and as ``.json.gz``, each with its ratio to the
plain run (the goal's figures). Then the traced run alone, up to the ``Trace`` object
(``program.trace``), its ratio and the slices it holds, and ``materialise``: making its
``Slice`` objects once (which the file does not need). A second line gives the same
ratios in wall time (best of the repeats), which is what a user waits.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import BENCHMARKS, _alu, _best  # noqa: E402

import croqvm  # noqa: E402
from croqvm.trace import record  # noqa: E402
from croqvm.trace.output import TraceFile, write  # noqa: E402

GOAL = 3.0              # traced with its file written / plain, native engine, CPU time
SIZE_GOAL = 100e6       # bytes of a trace of 10^6 events


def _setup(bench, size):
    program = croqvm.compile_file(str(bench.path), defines=bench.defines or {})
    args0, dims = bench.make(np.random.default_rng(0), size)
    return program, (lambda: [np.array(a, copy=True) for a in args0]), dims


def _traced_to_file(program, bench, fresh, dims, engine, path):
    """What ``croqvm trace -o path`` does once the program is loaded: the file written as
    the run goes."""
    sink = TraceFile(path)
    trace = record(program, bench.func, fresh(), dims, engine=engine, out=io.StringIO(),
                   file=sink)
    sink.close(trace)
    return trace.end


def _best_new(fn, repeats: int, path: str) -> tuple[float, float]:
    """(best wall, best CPU) of ``repeats`` calls of ``fn``, each after removing ``path``
    (untimed)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        if os.path.exists(path):
            os.remove(path)
        w, c, _ = _best(fn, 1)
        wall, cpu = min(wall, w), min(cpu, c)
    return wall, cpu


def _goal(times, plain: float) -> str:
    """Whether each format's time (``.json``, ``.json.gz``) is within the bound."""
    return f"  at most {GOAL:g}x: " + "/".join("met" if t <= GOAL * plain else "MISSED"
                                              for t in times)


def costs(which: str, repeats: int, python: bool) -> None:
    print(f"{'benchmark':21s} {'size':14s} {'engine':7s} {'plain s':>9s} {'.json s':>9s} "
          f"{'x plain':>8s} {'.json.gz s':>10s} {'x plain':>8s} {'traced s':>9s} "
          f"{'x plain':>8s} {'slices':>9s} {'materialise s':>14s}")
    tmp = tempfile.TemporaryDirectory()
    for make in BENCHMARKS:
        bench = make()
        for engine in ("native", "python") if python else ("native",):
            size = bench.sizes["quick" if which == "quick" else
                               "python" if engine == "python" else which]
            program, fresh, dims = _setup(bench, size)
            quiet = io.StringIO()
            extra = {"jobs": 1} if engine == "native" else {}
            runs = repeats if engine == "native" else 1
            if runs == 1:       # the first call of a program also loads it: not timed
                program.run(bench.func, *fresh(), engine=engine, out=quiet, **extra, **dims)
            plain_wall, plain, _ = _best(lambda: program.run(
                bench.func, *fresh(), engine=engine, out=quiet, **extra, **dims), runs)
            # each file new, as a first trace writes it (truncating one costs time too)
            walls, files = zip(*(_best_new(
                lambda: _traced_to_file(program, bench, fresh, dims, engine, path), runs, path)
                for path in (os.path.join(tmp.name, name)
                             for name in ("trace.json", "trace.json.gz"))))
            traces = []
            traced_wall, traced, _ = _best(lambda: traces.append(program.trace(
                bench.func, *fresh(), engine=engine, out=quiet, **dims)), runs)
            start = time.process_time()
            slices = len(traces[-1].slices)
            made = time.process_time() - start
            shape = "x".join(map(str, size)) if isinstance(size, tuple) else str(size)
            goal = "" if engine == "python" else _goal(files, plain)
            print(f"{bench.name:21s} {shape:14s} {engine:7s} {plain:9.3f} {files[0]:9.3f} "
                  f"{files[0] / plain:8.2f} {files[1]:10.3f} {files[1] / plain:8.2f} "
                  f"{traced:9.3f} {traced / plain:8.2f} {slices:9d} {made:14.3f}{goal}",
                  flush=True)
            goal = "" if engine == "python" else _goal(walls, plain_wall)
            print(f"{'':21s} {'':14s} {'wall':7s} {plain_wall:9.3f} {walls[0]:9.3f} "
                  f"{walls[0] / plain_wall:8.2f} {walls[1]:10.3f} {walls[1] / plain_wall:8.2f} "
                  f"{traced_wall:9.3f} {traced_wall / plain_wall:8.2f}{'':25s}{goal}",
                  flush=True)
    tmp.cleanup()


def file_size(events: float) -> None:
    """A trace of bench/run.py's ALU loop with about ``events`` slices, written as .json
    and .json.gz."""
    bench = _alu()
    lanes = max(256, int(events / 24000 * 256) // 256 * 256)   # ~24000 slices per block
    program, fresh, dims = _setup(bench, lanes)
    trace = program.trace(bench.func, *fresh(), out=io.StringIO(), **dims)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("trace.json", "trace.json.gz"):
            path = os.path.join(tmp, name)
            start = time.process_time()
            n = write(trace, path)
            took = time.process_time() - start
            size = os.path.getsize(path)
            goal = f"; 10^6 events at this rate: {size / n * 1e6 / 1e6:.0f} MB, under " \
                   f"{SIZE_GOAL / 1e6:.0f} MB: {'met' if size / n * 1e6 < SIZE_GOAL else 'MISSED'}" \
                if name == "trace.json" else ""
            print(f"{name}: {n} events, {size / 1e6:.1f} MB, {size / n:.1f} B per event, "
                  f"written in {took:.2f} s CPU{goal}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--python", action="store_true",
                        help="also the reference engine, at its sizes")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (best)")
    parser.add_argument("--events", type=float, help="only the file size of a trace of "
                                                     "about this many events")
    opts = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if opts.events:
        file_size(opts.events)
        return
    costs("quick" if opts.quick else "native", 1 if opts.quick else opts.repeats, opts.python)


if __name__ == "__main__":
    main()
