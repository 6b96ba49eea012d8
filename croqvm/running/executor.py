"""Where the independent runs of a sweep or an exploration execute.

An executor maps a top-level function over items: ``fn(shared, item)`` for each item, where
``shared`` is what every run needs (the module's bytes, the function, the options) and is
shipped once, and an item is small (a point, seeds). Results come back in completion order
as ``(index, value)``, each index exactly once, so the caller can show progress and stop
early; the caller puts them back in item order, which makes the report independent of the
executor and of the number of workers.

A run that takes longer than the executor's per-task time limit yields ``TimedOut``
instead of a value. ``SerialExecutor`` runs in this process, one item after another, with
no time limit (the engines' step limit bounds a run); the Dask executor
(``croqvm.sweep.cluster``) runs them on a cluster.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class TimedOut:
    """The value of a run stopped by the per-task time limit."""
    seconds: float


class Executor(Protocol):
    def map_unordered(self, fn: Callable[[Any, Any], Any], shared: Any,
                      items: Sequence) -> Iterator[tuple[int, Any]]:
        """``(i, fn(shared, items[i]))`` for every i, in completion order. On Ctrl-C the
        executor cancels what has not finished and raises KeyboardInterrupt."""


class SerialExecutor:
    """One item after another, in this process."""

    def map_unordered(self, fn, shared, items):
        for i, item in enumerate(items):
            yield i, fn(shared, item)
