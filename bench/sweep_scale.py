"""How runs of croqvm scale on a Dask cluster (croqvm.sweep.cluster), measured on this
machine: a sweep of one real kernel on 1, 2 and 4 local workers against the serial loop,
the cluster's cost per task, the memory a pending task takes in the client and scheduler,
and what that makes of a campaign on many machines.

    python bench/sweep_scale.py                 # programs/matmul_dma.co at 200 shapes
    python bench/sweep_scale.py --workers 1 2 --only campaign

Each task is a point of ``croqvm sweep`` (``run_point``): the kernel at one shape (M and N
varied, K fixed), its inputs drawn on the worker from the point's seed. The figures are
wall-clock times of this process; the load of the machine (printed) weighs on them, and
the CPU time of the processes of the campaign (this one and the cluster's) shows what the
cluster itself costs.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import croqvm  # noqa: E402
from croqvm.bytecode.cqb import encode  # noqa: E402
from croqvm.running.executor import SerialExecutor  # noqa: E402
from croqvm.sweep import points as grid  # noqa: E402
from croqvm.sweep.cluster import DaskExecutor  # noqa: E402
from croqvm.sweep.task import Job, run_point  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(__file__), "..", "programs", "matmul_dma.co")
SHAPES = ["M=16:400:16", "N=16:128:16"]         # 25 x 8 = 200 points, at one K
GiB = 1 << 30


def echo(_, item):
    """A task that does nothing: what is left of its time is the cluster's."""
    return item


def timed(executor, fn, shared, items) -> tuple[float, dict]:
    start = time.perf_counter()
    got = dict(executor.map_unordered(fn, shared, items))
    return time.perf_counter() - start, got


def cpu_seconds() -> float:
    """CPU time of this process and every process it started (a local cluster's)."""
    here = psutil.Process()
    total = 0.0
    for process in [here, *here.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min: {five:.1f}) on {os.cpu_count()} cores"


def campaign(args):
    program = croqvm.compile_file(PROGRAM)
    job = Job(encode(program.module), "matmul", seed=0)
    shapes = SHAPES + [f"K={args.k}"]
    dims = grid.parse_dims(shapes)
    points = grid.product(dims)
    print(f"sweep: {len(points)} points of 'matmul' ({os.path.basename(PROGRAM)}, "
          f"{' '.join(shapes)}); {load()}")
    cpu = cpu_seconds()
    serial_s, want = timed(SerialExecutor(), run_point, job, points)
    args.run_s = serial_s / len(points)
    print(f"  serial loop      {serial_s:7.2f} s  {args.run_s * 1e3:7.1f} ms/run  "
          f"(CPU {cpu_seconds() - cpu:.1f} s)")
    for workers in args.workers:
        start = time.perf_counter()
        with DaskExecutor(workers=workers) as executor:
            up = time.perf_counter() - start
            cpu = cpu_seconds()
            took, got = timed(executor, run_point, job, points)
            cpu = cpu_seconds() - cpu
        same = got == want
        print(f"  {workers} worker{'s' if workers > 1 else ' '}        {took:7.2f} s  "
              f"speed-up {serial_s / took:4.2f}x over the loop  (CPU {cpu:.1f} s; cluster "
              f"start {up:.1f} s; outcomes {'identical' if same else 'DIFFER'})")


def overhead(args):
    items = list(range(args.tasks))
    loop_s, _ = timed(SerialExecutor(), echo, None, items)
    print(f"overhead: {args.tasks} tasks that do nothing; {load()}")
    print(f"  plain loop       {loop_s / len(items) * 1e6:9.1f} us/task")
    for workers in (1, 2):
        with DaskExecutor(workers=workers) as executor:
            timed(executor, echo, None, items[:200])        # warm the workers
            took, _ = timed(executor, echo, None, items)
        print(f"  {workers} worker{'s' if workers > 1 else ' '}        "
              f"{took / len(items) * 1e6:9.1f} us/task  {len(items) / took:7.0f} tasks/s")
    return len(items) / took


def memory(args):
    """Bytes a pending task takes in this process (the client and a local cluster's
    scheduler): the growth of its RSS with ``args.pending`` tasks submitted that can not
    start (the one worker is busy)."""
    with DaskExecutor(workers=1) as executor:
        client = executor._connect()
        busy = client.submit(time.sleep, 600, pure=False)
        before = psutil.Process().memory_info().rss
        futures = client.map(echo, [None] * args.pending, range(args.pending), pure=False)
        while client.run_on_scheduler(_known) < len(futures) + 1:
            time.sleep(0.1)
        grown = psutil.Process().memory_info().rss - before
        del futures, busy       # closing the cluster drops them
    per_task = grown / args.pending
    print(f"memory: {args.pending:,} pending tasks take {grown / 2**20:.0f} MiB in the "
          f"client and scheduler, {per_task / 1024:.1f} KiB a task: 24 GB hold "
          f"{24e9 / per_task:,.0f} of them")


def _known(dask_scheduler) -> int:
    return len(dask_scheduler.tasks)


def scale_note(run_s: float, rate: float, machines=100, cores=32, points=100_000):
    """What ``machines`` machines of ``cores`` cores would do with ``points`` runs of
    ``run_s`` seconds each, given a scheduler of ``rate`` tasks a second."""
    compute = points * run_s / (machines * cores)
    dispatch = points / rate
    bound = "scheduler" if dispatch > compute else "runs"
    total = max(compute, dispatch)
    print(f"{points:,} runs of {run_s * 1e3:.0f} ms on {machines} machines of {cores} "
          f"cores: {compute:.0f} s of work per core, {dispatch:.0f} s for the scheduler to "
          f"hand out the tasks at {rate:.0f} tasks/s: about {total:.0f} s, "
          f"bound by the {bound}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--k", type=int, default=128, help="K of every point (its cost)")
    parser.add_argument("--tasks", type=int, default=3000, help="of the overhead figure")
    parser.add_argument("--pending", type=int, default=20_000, help="of the memory figure")
    parser.add_argument("--only", choices=["campaign", "overhead", "memory"])
    args = parser.parse_args()
    if args.only in (None, "campaign"):
        campaign(args)
    if args.only in (None, "overhead"):
        rate = overhead(args)
        if args.only is None:
            scale_note(args.run_s, rate)
    if args.only in (None, "memory"):
        memory(args)


if __name__ == "__main__":
    main()
