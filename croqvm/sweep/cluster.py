"""The Dask executor: the runs of a sweep or an exploration on a cluster of processes.

``DaskExecutor(workers=N)`` starts a local cluster of N worker processes, one thread each
(the engines hold the GIL between slices, so threads of one process would not run at
once); ``DaskExecutor(scheduler=ADDRESS)`` uses a running cluster (``dask scheduler``,
``dask worker ADDRESS`` on each machine, docs/CLUSTER.md "On a cluster"). ``shared`` is
sent to the cluster once and reaches each worker once.

The items go in chunks, a task each (``chunked``): a task costs the client, the scheduler
and the worker a few milliseconds of CPU (messages, bookkeeping, a result gathered), which
on a machine whose cores all run workers is taken from the runs. The first chunks are
large and the last hold one item each, so that the workers still end together. The
results of a chunk come back together, and on Ctrl-C those of the chunks not done are
lost with them.

Every chunk has a key of its own and each index is reported once: a worker that dies while
running a chunk has it run again whole by the scheduler on another worker (Dask does that
for any task whose worker is lost, up to ``distributed.scheduler.allowed-failures``
times), and its results, like every other, come back through exactly one future.

The per-item time limit (``task_timeout``) is kept on the worker: a Python thread can not
be killed, so when an item's time is up a watchdog raises an interrupt in the thread that
runs it, as Ctrl-C does in the main thread. The engines stop at the next point they check
for Ctrl-C (the reference engine between two instructions, the native engine between two
slices of its run, cuda-cpu at its loop steps), the item yields ``TimedOut`` and its chunk
goes on with the next. Code that never returns to Python (a C++ device function that
loops forever) is not stopped.

Importing this module imports Dask; the serial path (croqvm.running.executor) never does.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import random
import signal
import threading
import uuid

import dask
from distributed import Client, KilledWorker, LocalCluster, as_completed

from .. import __version__
from ..core.errors import ArgumentError, InternalError
from ..running.executor import TimedOut

CONNECT_TIMEOUT = "10s"     # to reach a scheduler given by its address
# The settings of a local cluster. Its scheduler keeps the chunks and hands each worker
# thread two, in their order: a worker that ends one starts the next without waiting for
# the scheduler, and holds no more, so a worker that runs dry takes the next chunk of the
# queue (work stealing, every second, stays on for the chunk a worker holds in waiting).
# Each process's periodic checks (event loop, system and memory monitors) run less often:
# at Dask's defaults they cost an idle cluster of two workers a tenth of a core. The
# workers' sampling profiler (a stack walk every 10 ms) is off: it cost a worker a fifth
# of its CPU time.
CLUSTER_CONFIG = {"distributed.comm.timeouts.connect": CONNECT_TIMEOUT,
                  "distributed.scheduler.worker-saturation": 2.0,
                  "distributed.admin.tick.interval": "1s",
                  "distributed.admin.system-monitor.interval": "2s",
                  "distributed.worker.memory.monitor-interval": "1s",
                  "distributed.deploy.cluster-repr-interval": "2s",
                  "distributed.worker.profile.enabled": False}
CHUNKS_PER_THREAD = 4      # a chunk holds the items left / (this x the worker threads)


class _TimeUp(KeyboardInterrupt):
    """Raised in a task's thread by its watchdog; a KeyboardInterrupt, so that every engine
    stops on it where it stops on Ctrl-C."""


def _raise_in(thread: int, exc) -> None:
    """Raise ``exc`` in the thread ``thread`` when it next runs Python code (None: take
    back one that thread has not raised yet)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                               ctypes.py_object(exc) if exc else None)


class _Watchdog:
    """Interrupts the calling thread after ``seconds`` unless ``disarm`` came first."""

    def __init__(self, seconds: float):
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.fired = self.disarmed = False
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self):
        with self.lock:
            if not self.disarmed:
                self.fired = True
                _raise_in(self.thread, _TimeUp)

    def disarm(self):
        with self.lock:
            self.disarmed = True
            self.timer.cancel()
            if self.fired:      # an interrupt raised just as the task ended: not delivered
                _raise_in(self.thread, None)


def run_task(fn, shared, item, seconds: float | None):
    """``fn(shared, item)``, or ``TimedOut(seconds)`` when it runs longer than ``seconds``.

    The interrupt may arrive anywhere from the task's first instruction to the moment the
    watchdog is disarmed; the outer ``try`` catches it wherever it lands.
    """
    if seconds is None:
        return fn(shared, item)
    watchdog = _Watchdog(seconds)
    try:
        try:
            return fn(shared, item)
        finally:
            watchdog.disarm()
    except KeyboardInterrupt:
        if watchdog.fired:
            return TimedOut(seconds)
        raise


def run_chunk(fn, shared, chunk, seconds: float | None) -> list:
    """``(i, run_task(fn, shared, item, seconds))`` for each ``(i, item)`` of ``chunk``:
    the time limit is each item's."""
    return [(i, run_task(fn, shared, item, seconds)) for i, item in chunk]


def chunked(count: int, threads: int) -> list[list[int]]:
    """The indices 0 to ``count``-1 in chunks, each chunk a task: guided self-scheduling,
    each chunk holding the items not yet in one divided by ``CHUNKS_PER_THREAD`` times
    ``threads`` (at least one), so the first chunks are large and the last hold one item
    each, and the threads end together. The indices are dealt in a fixed shuffled order:
    items that cost alike often come together (a sweep's points grow with their index),
    and a chunk of a random sample costs about its size times the mean."""
    order = list(range(count))
    random.Random(count).shuffle(order)
    chunks, start = [], 0
    while start < count:
        size = max(1, (count - start) // (CHUNKS_PER_THREAD * threads))
        chunks.append(order[start:start + size])
        start += size
    return chunks


def _given(value):
    return value


def _croqvm_version() -> str:
    return __version__


@contextlib.contextmanager
def _sigint_ignored():
    """Ctrl-C ignored while the local cluster's processes start: they inherit that (a
    signal held back would not stay so in them), so that the interrupt the terminal sends
    to all of them reaches only this process, which cancels the tasks and closes the
    cluster in order. An interrupt while the cluster starts is lost."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class DaskExecutor:
    """Runs the tasks of ``map_unordered`` on a Dask cluster: a local one of ``workers``
    processes, or the one whose scheduler listens at ``scheduler``. ``task_timeout``
    (seconds) limits each task. Used as a context manager, one cluster serves every map
    until the end of the ``with``; otherwise each map starts and closes its own."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None,
                 task_timeout: float | None = None):
        if (workers is None) == (scheduler is None):
            raise ValueError("DaskExecutor: give one of workers and scheduler")
        self.workers, self.scheduler, self.task_timeout = workers, scheduler, task_timeout
        self._cluster = self._client = None
        self._held = False

    def __enter__(self):
        try:
            self._connect()
        except BaseException:       # an interrupt while it started
            self.close()
            raise
        self._held = True
        return self

    def __exit__(self, *exc):
        self._held = False
        self.close()

    @property
    def address(self) -> str:
        """The scheduler's address (a local cluster's too, once started): where other
        clients (``--scheduler``) and ``dask worker`` processes reach this cluster."""
        return self._connect().scheduler.address

    def _connect(self):
        if self._client is not None:
            return self._client
        with dask.config.set(CLUSTER_CONFIG):
            if self.scheduler is None:
                with _sigint_ignored():
                    self._cluster = LocalCluster(
                        n_workers=self.workers, threads_per_worker=1, processes=True,
                        dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
                    self._client = Client(self._cluster)
            else:
                try:
                    self._client = Client(self.scheduler, timeout=CONNECT_TIMEOUT)
                except (OSError, ValueError) as exc:
                    raise ArgumentError(f"--scheduler {self.scheduler}: can not reach a "
                                        f"Dask scheduler there ({exc})") from None
                self._check_versions()
        return self._client

    def _check_versions(self):
        """Every worker must run this croqvm: schedules and results depend on it."""
        found = self._client.run(_croqvm_version)
        other = {w: v for w, v in found.items() if v != __version__}
        if other:
            worker, version = next(iter(other.items()))
            self.close()
            raise ArgumentError(f"--scheduler {self.scheduler}: worker {worker} runs "
                                f"croqvm {version}, this is croqvm {__version__}; results "
                                f"would differ from a serial run")

    def close(self):
        """Disconnect, and stop the local cluster if this executor started one."""
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def map_unordered(self, fn, shared, items):
        pending = {}        # key -> future, while it runs: a future dropped is released
        try:
            client = self._connect()
            run = uuid.uuid4().hex
            # A task that gives ``shared``: the first worker to need it runs it, the others
            # fetch it from a worker that has it, and were they all lost it would be run
            # again (data scattered to the workers would be gone with them).
            everywhere = client.submit(_given, shared, key=f"croqvm-shared-{run}",
                                       pure=False)
            chunks = chunked(len(items), sum(client.nthreads().values()) or 1)
            keys = [f"croqvm-chunk-{run}-{c}" for c in range(len(chunks))]
            # the chunks start in their order, the largest first
            futures = [client.submit(run_chunk, fn, everywhere,
                                     [(i, items[i]) for i in chunk], self.task_timeout,
                                     key=key, priority=len(chunks) - c, pure=False)
                       for c, (key, chunk) in enumerate(zip(keys, chunks))]
            pending = dict(zip(keys, futures))
            chunk_of = dict(zip(keys, chunks))      # key -> the item indices it runs
            # results come in batches, each gathered at once; a task's exception is
            # raised here
            done = as_completed(futures, with_results=True)
            del futures
            attempts = 0
            try:
                for batch in done.batches():
                    for future, values in batch:
                        del pending[future.key]
                        chunk = chunk_of.pop(future.key)
                        if future.cancelled():     # by the cluster, which lost it: again
                            attempts += 1
                            key = f"croqvm-chunk-{run}-again{attempts}"
                            chunk_of[key] = chunk
                            pending[key] = client.submit(
                                run_chunk, fn, everywhere, [(i, items[i]) for i in chunk],
                                self.task_timeout, key=key, priority=len(chunks) + 1,
                                pure=False)
                            done.add(pending[key])
                            continue
                        yield from values
            except KilledWorker as exc:
                chunk = chunk_of[exc.task]
                raise InternalError(
                    f"internal error: the chunk of item{'s' if len(chunk) > 1 else ''} "
                    f"{', '.join(map(str, chunk))} "
                    f"({', '.join(repr(items[i]) for i in chunk)}) ended each of the "
                    f"{exc.allowed_failures + 1} worker processes that ran it (the last at "
                    f"{exc.last_worker.address}): a crash, or its memory exhausted; run its "
                    f"items alone to see which") from None
        finally:
            if pending and self._client is not None:
                self._client.cancel(list(pending.values()))
            if not self._held:
                self.close()
