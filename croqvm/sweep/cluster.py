"""The Dask executor: the runs of a sweep or an exploration on a cluster of processes.

``DaskExecutor(workers=N)`` starts a local cluster of N worker processes, one thread each
(the engines hold the GIL between slices, so threads of one process would not run at
once); ``DaskExecutor(scheduler=ADDRESS)`` uses a running cluster (``dask scheduler``,
``dask worker ADDRESS`` on each machine, docs/SWEEP.md "On a cluster"). ``shared`` is
sent to every worker once (a broadcast scatter) and each task gets one item: what crosses
the network per task is an item and its result.

Every task has a key of its own and its index is reported once: a worker that dies while
running a task has it run again by the scheduler on another worker (Dask does that for
any task whose worker is lost, up to ``distributed.scheduler.allowed-failures`` times), and
its result, like every other, comes back through exactly one future.

The per-task time limit (``task_timeout``) is kept on the worker: a Python thread can not
be killed, so when a task's time is up a watchdog raises an interrupt in the thread that
runs it, as Ctrl-C does in the main thread. The engines stop at the next point they check
for Ctrl-C (the reference engine between two instructions, the native engine between two
slices of its run, cuda-cpu at its loop steps), and the task yields ``TimedOut``. Code
that never returns to Python (a C++ device function that loops forever) is not stopped.

Importing this module imports Dask; the serial path (croqvm.sweep.executor) never does.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import signal
import threading
import uuid

import dask
from distributed import Client, LocalCluster, as_completed

from .. import __version__
from ..errors import ArgumentError
from .executor import TimedOut

CONNECT_TIMEOUT = "10s"     # to reach a scheduler given by its address


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


def _croqvm_version() -> str:
    return __version__


@contextlib.contextmanager
def _sigint_ignored():
    """Ctrl-C ignored while the local cluster's processes start: they inherit that, so the
    interrupt the terminal sends to all of them reaches only this process, which cancels
    the tasks and closes the cluster in order."""
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
            raise ValueError("DaskExecutor: give workers or scheduler, not both")
        self.workers, self.scheduler, self.task_timeout = workers, scheduler, task_timeout
        self._cluster = self._client = None
        self._held = False

    def __enter__(self):
        self._connect()
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
        with dask.config.set({"distributed.comm.timeouts.connect": CONNECT_TIMEOUT}):
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
            raise ArgumentError(f"--scheduler {self.scheduler}: worker {worker} runs croqvm "
                                f"{version}, this is croqvm {__version__}; results would "
                                f"differ from a serial run")

    def close(self):
        """Disconnect, and stop the local cluster if this executor started one."""
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def map_unordered(self, fn, shared, items):
        client = self._connect()
        futures = []
        try:
            # a list of one, so that a tuple or a dict is sent whole, not item by item
            [everywhere] = client.scatter([shared], broadcast=True, hash=False)
            run = uuid.uuid4().hex
            futures = client.map(run_task, [fn] * len(items), [everywhere] * len(items),
                                 list(items), [self.task_timeout] * len(items),
                                 key=[f"croqvm-task-{run}-{i}" for i in range(len(items))],
                                 pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            for future in as_completed(futures):
                i = index.pop(future.key)
                value = future.result()     # a task's own exception is raised here
                future.release()
                yield i, value
        finally:
            unfinished = [f for f in futures if not f.done()]
            if unfinished and self._client is not None:
                client.cancel(unfinished)
            if not self._held:
                self.close()

