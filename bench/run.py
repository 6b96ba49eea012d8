"""Interpreter benchmark: both engines side by side, with ratios to numpy and between them.

    python bench/run.py              # the benchmark sizes (a few minutes)
    python bench/run.py --quick      # small sizes, to check the harness
    python bench/run.py --no-python  # the native engine only
    python bench/run.py --no-python --check race   # the cost of race checking (§7.5)
    python bench/run.py --no-python --check init   # the cost of the init check (§14.4)

Each benchmark runs on the native engine at its benchmark size and, where the Python engine
would take too long there, on both engines at a smaller size too, so the speed-up is
measured on the same work. Every result is checked against its numpy reference.

A row gives the wall time and the process's CPU time (best of the repeats), the
warp- and lane-instructions run, lane-instructions per CPU second, numpy's time on the same
inputs and the ratio to it. CPU time is the figure for "one core": the machine may be
shared, and then wall time counts other processes too. The ``jobs`` rows run one launch's
blocks on 1 and 2 threads; there wall time is the measure (CPU time adds the threads up).
``--check race`` and ``--check init`` add, per benchmark, a checked run on the native engine
at the benchmark size beside the plain one, their ratio in CPU time and whether it meets the
goal of at most 2x; ``--check race`` without ``--no-python`` also a race-checked run on the
Python engine beside its plain one.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import croqvm
from croqvm.running.program import available

ROOT = Path(__file__).resolve().parent.parent
KERNELS = Path(__file__).resolve().parent / "kernels"
sys.path.insert(0, str(ROOT / "programs"))
from catalog import PROGRAMS  # noqa: E402


def _catalog(file: str, defines: dict | None = None):
    return next(e for e in PROGRAMS if e.file == file and e.defines == (defines or {}))


def _s32(rng, *shape):
    # 16-bit magnitudes, as the catalogue's matmuls: products fit, sums wrap now and then
    return rng.integers(-2 ** 15, 2 ** 15, size=shape, dtype=np.int64).astype(np.int32)


def _wrap32(x):
    return ((np.asarray(x, np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def _alu_reference(x, iters: int):
    """The per-lane loop of bench/kernels/alu.co, on every lane at once (int32 wraps)."""
    acc = x.astype(np.int32)
    with np.errstate(over="ignore"):
        for i in range(iters):
            acc = acc * np.int32(3) + np.int32(i)
            acc = acc ^ (acc >> np.int32(3))
    return acc


@dataclass(frozen=True)
class Bench:
    """One benchmark: ``make(rng, size) -> (args, dims)``, ``reference(args) -> {name or
    "return": expected}`` and ``bound(args)``, the absolute error allowed (0: exact).
    ``sizes`` maps "native", "python" and "quick" to a size; ``target(row)`` says whether
    the native row at the benchmark size meets the goal set for it."""
    name: str
    path: Path
    func: str
    params: tuple
    make: Callable
    reference: Callable
    sizes: dict
    target: tuple[str, Callable] | None = None
    bound: Callable = lambda args: 0
    defines: dict | None = None


def _matmul_dma():
    entry = _catalog("matmul_dma.co")
    return Bench(
        "DMA matmul s32", entry.path, entry.func, entry.params,
        make=lambda rng, s: ([_s32(rng, s[0], s[1]), _s32(rng, s[1], s[2])],
                             {"M": s[0], "K": s[1], "N": s[2]}),
        reference=entry.reference,
        sizes={"native": (128, 256, 256), "python": (128, 256, 256), "quick": (16, 48, 32)},
        target=("<= 8x numpy", lambda row: row.cpu <= 8 * row.numpy))


def _gemm_args(rng, s):
    m, n, k = s
    return ([rng.uniform(-1, 1, (m, k)).astype(np.float16),
             rng.uniform(-1, 1, (n, k)).astype(np.float16),
             np.full((m, n), np.nan, np.float32)], {"M": m, "N": n, "K": k})


def _matmul_1p1c():
    entry = _catalog("matmul_1p1c.co")
    return Bench(
        "1P1C pipeline f16", entry.path, entry.func, entry.params, make=_gemm_args,
        reference=entry.reference, bound=entry.tolerance,
        sizes={"native": (1024, 1024, 1024), "python": (256, 256, 256),
               "quick": (80, 64, 160)},
        target=("< 10 s", lambda row: row.cpu < 10))


def _alu():
    iters = 1000
    return Bench(
        "ALU loop s32", KERNELS / "alu.co", "alu", ("x",),
        make=lambda rng, s: ([_s32(rng, s)], {"N": s}),
        reference=lambda args: {"x": _alu_reference(args[0], iters)},
        sizes={"native": 64 * 256, "python": 2 * 256, "quick": 256},
        target=(">= 1e9 lane-instr/s", lambda row: row.lanes / row.cpu >= 1e9),
        defines={"ITERS": str(iters)})


def _host_matmul():
    return Bench(
        "host foreach matmul", KERNELS / "host_matmul.co", "host_matmul", ("a", "b"),
        make=lambda rng, s: ([_s32(rng, s, s), _s32(rng, s, s)], {"M": s, "K": s, "N": s}),
        reference=lambda args: {"return": _wrap32(args[0].astype(np.int64) @ args[1])},
        sizes={"native": 128, "python": 32, "quick": 8},
        target=("< 0.3 s", lambda row: row.cpu < 0.3))


BENCHMARKS = (_matmul_dma, _alu, _matmul_1p1c, _host_matmul)
CHECK_GOAL = 2.0    # a checked native run's CPU time, at most this times the plain one


@dataclass
class Row:
    bench: Bench
    engine: str
    size: object
    jobs: int | None
    check: str | None
    wall: float
    cpu: float
    warps: int
    lanes: int
    numpy: float


def best_cpu(fn, repeats: int, before=lambda: None) -> float:
    """The least CPU time of ``repeats`` calls of ``fn``, each after ``before`` (untimed)."""
    best = float("inf")
    for _ in range(repeats):
        before()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _best(fn, repeats: int) -> tuple[float, float, object]:
    """(best wall, best CPU, the last result) of ``repeats`` calls of ``fn``."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu, result


def _check(bench: Bench, inputs: list, outputs: list, result) -> None:
    """The run that left ``outputs`` (the arguments after it) and ``result`` against the
    reference computed from ``inputs``."""
    for key, want in bench.reference(inputs).items():
        got = result if key == "return" else outputs[bench.params.index(key)]
        error = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))
        if not np.all(error <= bench.bound(inputs)):
            raise SystemExit(f"{bench.name}: '{key}' differs from the numpy reference")


def measure(bench: Bench, engine: str, size, jobs: int | None, repeats: int,
            check: str | None = None) -> Row:
    program = croqvm.compile_file(str(bench.path), defines=bench.defines or {})
    args0, dims = bench.make(np.random.default_rng(0), size)
    fresh = lambda: [np.array(a, copy=True) for a in args0]   # noqa: E731
    stats: dict = {}
    runs = []
    options = {"jobs": jobs} if jobs is not None else {}
    if check is not None:
        options["check"] = check

    def once():
        args = fresh()
        stats.clear()
        runs.append(args)
        return program.run(bench.func, *args, stats=stats, engine=engine, **options, **dims)
    wall, cpu, result = _best(once, repeats)
    _check(bench, fresh(), runs[-1], result)
    _, numpy_cpu, _ = _best(lambda: bench.reference(fresh()), 5)
    return Row(bench, engine, size, jobs, check, wall, cpu, stats["warp_steps"],
               stats["lane_steps"], numpy_cpu)


def _size(size) -> str:
    return "x".join(map(str, size)) if isinstance(size, tuple) else str(size)


HEADER = (f"{'benchmark':21s} {'size':14s} {'engine':11s} {'wall s':>8s} {'CPU s':>8s} "
          f"{'lane-instr':>14s} {'M lane/s':>9s} {'numpy ms':>9s} {'x numpy':>8s}  target")


def show(row: Row, target: bool = False) -> None:
    engine = row.engine + (f" j{row.jobs}" if row.jobs else "") + \
        (f" {row.check}" if row.check else "")
    note = ""
    if target and row.bench.target:
        text, met = row.bench.target
        note = f"{text}: {'met' if met(row) else 'MISSED'}"
    print(f"{row.bench.name:21s} {_size(row.size):14s} {engine:11s} {row.wall:8.3f} "
          f"{row.cpu:8.3f} {row.lanes:>14,d} {row.lanes / row.cpu / 1e6:9.1f} "
          f"{row.numpy * 1e3:9.2f} {row.cpu / row.numpy:8.1f}  {note}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--no-python", action="store_true", help="native rows only")
    parser.add_argument("--repeats", type=int, default=3, help="native runs per row (best)")
    parser.add_argument("--check", choices=["race", "init"],
                        help="also time runs with this run-time check on the native engine "
                             "(race: on the Python engine too)")
    opts = parser.parse_args()
    if not available(engine="native"):
        raise SystemExit("the native engine is not built: pip install -e . (or python "
                         "setup.py build_ext --inplace)")
    repeats = 1 if opts.quick else opts.repeats
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(HEADER)
    speedups, costs = [], []
    for make in BENCHMARKS:
        bench = make()
        main_size = bench.sizes["quick" if opts.quick else "native"]
        first = measure(bench, "native", main_size, 1, repeats)
        show(first, target=not opts.quick)
        if opts.check:
            checked = measure(bench, "native", main_size, 1, repeats, check=opts.check)
            show(checked)
            costs.append((bench.name, _size(main_size), "native", checked.cpu / first.cpu))
        if opts.no_python:
            continue
        small = bench.sizes["quick" if opts.quick else "python"]
        same = first if small == main_size else measure(bench, "native", small, 1, repeats)
        if same is not first:
            show(same)
        python = measure(bench, "python", small, None, 1)
        show(python)
        speedups.append((bench.name, _size(small), python.cpu / same.cpu))
        if opts.check == "race":
            checked = measure(bench, "python", small, None, 1, check=opts.check)
            show(checked)
            costs.append((bench.name, _size(small), "python", checked.cpu / python.cpu))
    print()
    for name, size, ratio in speedups:
        print(f"speed-up of native over python, {name} {size}: {ratio:,.0f}x (CPU time)")
    for name, size, engine, ratio in costs:
        goal = f"; at most {CHECK_GOAL:g}x: {'met' if ratio <= CHECK_GOAL else 'MISSED'}" \
            if engine == "native" else ""
        print(f"cost of --check {opts.check}, {name} {size}: {ratio:.2f}x the plain run "
              f"({engine} engine, CPU time{goal})")
    print()
    print("a launch's blocks on 1 and 2 threads (native; wall time):")
    for make in (_matmul_dma, _alu):
        bench = make()
        size = bench.sizes["quick" if opts.quick else "native"]
        one, two = (measure(bench, "native", size, jobs, repeats) for jobs in (1, 2))
        show(one)
        show(two)
        print(f"  {bench.name}: jobs=2 wall time {one.wall / two.wall:.2f}x faster than "
              f"jobs=1")


if __name__ == "__main__":
    main()
