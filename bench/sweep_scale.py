"""How runs of croqvm scale on a Dask cluster (croqvm.sweep.cluster), measured on this
machine: a sweep of one real kernel on 1, 2 and 4 local workers against the serial loop,
the cluster's cost per item and per task, the memory a pending task takes in the client
and scheduler, and what that makes of a campaign on many machines.

    python bench/sweep_scale.py                 # programs/matmul_dma.co at 200 shapes
    python bench/sweep_scale.py --workers 1 2 --only campaign --repeat 3

Each item is a point of ``croqvm sweep`` (``run_point``): the kernel at one shape (M and N
varied, K fixed), its inputs drawn on the worker from the point's seed; the executor sends
them in chunks, a task each. The figures are wall-clock times of this process, with the
speed-up of each cluster over the serial loop (no Dask) and over the cluster of 1 worker;
the load of the machine (printed) weighs on them. The CPU time of this process (the
client, and a local cluster's scheduler and nannies) and of the workers, against the
loop's, shows what the cluster itself costs, whatever the load.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import statistics
import sys
import time

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import croqvm  # noqa: E402
from croqvm.bytecode.cqb import encode  # noqa: E402
from croqvm.running.executor import SerialExecutor  # noqa: E402
from croqvm.sweep import points as grid  # noqa: E402
from croqvm.sweep import cluster  # noqa: E402
from croqvm.sweep.cluster import DaskExecutor, chunked  # noqa: E402
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


def cpu_seconds() -> tuple[float, float]:
    """CPU time of this process (the client; with a local cluster, its scheduler and
    nannies too) and of every process it started (a local cluster's workers)."""
    here = psutil.Process()
    times = here.cpu_times()
    mine, theirs = times.user + times.system, 0.0
    for process in here.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            theirs += times.user + times.system
    return mine, theirs


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min: {five:.1f}) on {os.cpu_count()} cores"


def spread(values) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def campaign(args):
    program = croqvm.compile_file(PROGRAM)
    job = Job(encode(program.module), "matmul", seed=0)
    shapes = SHAPES + [f"K={args.k}"]
    dims = grid.parse_dims(shapes)
    points = grid.product(dims)
    print(f"sweep: {len(points)} points of 'matmul' ({os.path.basename(PROGRAM)}, "
          f"{' '.join(shapes)}), in chunks of "
          f"{'/'.join(str(len(chunked(len(points), w))) for w in args.workers)} tasks on "
          f"{'/'.join(map(str, args.workers))} workers; {load()}")
    print("  CPU: of this process (client, scheduler, nannies) + of the workers; "
          "overhead: CPU beyond the loop's, per point")
    walls = {}                  # "loop" or a worker count -> wall-clock times
    for _ in range(args.repeat):
        start = sum(cpu_seconds())
        loop_s, want = timed(SerialExecutor(), run_point, job, points)
        loop_cpu = sum(cpu_seconds()) - start
        walls.setdefault("loop", []).append(loop_s)
        args.run_s = loop_cpu / len(points)
        print(f"  serial loop   {loop_s:7.2f} s  {args.run_s * 1e3:6.1f} ms of CPU a point "
              f"(CPU {loop_cpu:.1f} s); {load()}")
        for workers in args.workers:
            plain_s = plain_processes(workers, job, points)
            walls.setdefault(f"plain {workers}", []).append(plain_s)
            print(f"  {workers} plain process{'es' if workers > 1 else '  '} "
                  f"{plain_s:7.2f} s  {loop_s / plain_s:4.2f}x over the loop (no Dask: what "
                  f"the machine allows now)")
            start = time.perf_counter()
            with DaskExecutor(workers=workers) as executor:
                up = time.perf_counter() - start
                before = cpu_seconds()
                took, got = timed(executor, traced_point, job, points)
                ended = time.time()
                mine, theirs = (b - a for a, b in zip(before, cpu_seconds()))
            last = {}               # worker pid -> when its last point ended
            for _, pid, when in got.values():
                last[pid] = max(last.get(pid, 0.0), when)
            idle = ended - min(last.values())
            got = {i: result for i, (result, _, _) in got.items()}
            walls.setdefault(workers, []).append(took)
            over_one = (f", {walls[1][-1] / took:4.2f}x over 1 worker"
                        if workers != 1 and 1 in walls else "")
            over_one += f", {plain_s / took:4.2f} of the plain processes' speed"
            print(f"  {workers} worker{'s' if workers > 1 else ' '}     {took:7.2f} s  "
                  f"{loop_s / took:4.2f}x over the loop{over_one}  (CPU {mine:.1f} + "
                  f"{theirs:.1f} s, overhead "
                  f"{(mine + theirs - loop_cpu) / len(points) * 1e3:+.1f} ms; the worker "
                  f"done first idle {idle:.2f} s at the end; start {up:.1f} s; outcomes "
                  f"{'identical' if got == want else 'DIFFER'})")
    if args.repeat > 1:
        print(f"  over {args.repeat} rounds, median (min to max) of the wall-clock times and "
              f"of the speed-ups of each round:")
        for workers in args.workers:
            line = (f"    {workers} worker{'s' if workers > 1 else ' '}  "
                    f"{spread(walls[workers])} s, over the loop "
                    f"{spread([a / b for a, b in zip(walls['loop'], walls[workers])])}x")
            if workers != 1 and 1 in walls:
                line += (f", over 1 worker "
                         f"{spread([a / b for a, b in zip(walls[1], walls[workers])])}x")
            ratios = [a / b for a, b in zip(walls[f"plain {workers}"], walls[workers])]
            print(f"{line}; {spread(ratios)} of the plain processes' speed")


def traced_point(job, point):
    """``run_point``, with the worker's pid and the time it ended."""
    return run_point(job, point), os.getpid(), time.time()


def plain_processes(workers: int, job, points) -> float:
    """Seconds ``workers`` processes forked from this one (its imports and decoded module
    with them) take to run the points, each taking the next point as it frees up: the
    speed-up the machine allows without Dask."""
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        start = time.perf_counter()
        for _ in pool.imap_unordered(functools.partial(run_point, job), points):
            pass
        return time.perf_counter() - start


def overhead(args):
    """What the cluster costs an item that does nothing, the items in chunks as a map
    sends them, and the tasks a second the scheduler hands out when each is one item."""
    items = list(range(args.tasks))
    loop_s, _ = timed(SerialExecutor(), echo, None, items)
    print(f"overhead: {args.tasks} items that do nothing; {load()}")
    print(f"  plain loop       {loop_s / len(items) * 1e6:9.1f} us/item")
    for workers in (1, 2):
        with DaskExecutor(workers=workers) as executor:
            timed(executor, echo, None, items[:200])        # warm the workers
            took, _ = timed(executor, echo, None, items)
            chunks_per_thread = cluster.CHUNKS_PER_THREAD
            cluster.CHUNKS_PER_THREAD = len(items)          # one item a chunk
            try:
                one_s, _ = timed(executor, echo, None, items)
            finally:
                cluster.CHUNKS_PER_THREAD = chunks_per_thread
        print(f"  {workers} worker{'s' if workers > 1 else ' '}        "
              f"{took / len(items) * 1e6:9.1f} us/item in "
              f"{len(chunked(len(items), workers))} chunks; one a task: "
              f"{one_s / len(items) * 1e6:9.1f} us/task, {len(items) / one_s:5.0f} tasks/s")
    return len(items) / one_s


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
    tasks = len(chunked(points, machines * cores))
    dispatch = tasks / rate
    bound = "scheduler" if dispatch > compute else "runs"
    total = max(compute, dispatch)
    print(f"{points:,} runs of {run_s * 1e3:.0f} ms on {machines} machines of {cores} "
          f"cores: {compute:.0f} s of work per core, {dispatch:.0f} s for the scheduler to "
          f"hand out their {tasks:,} chunks at {rate:.0f} tasks/s: about {total:.0f} s, "
          f"bound by the {bound}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--k", type=int, default=128, help="K of every point (its cost)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the campaign (the loop and each cluster)")
    parser.add_argument("--tasks", type=int, default=3000, help="items of the overhead figure")
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
