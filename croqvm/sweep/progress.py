"""The progress bar of a sweep or an exploration: runs done of all, elapsed time and the
time left, on stderr, redrawn in place. The caller drives it (``advance`` for each run
that ends) and ends it with ``summary``. It shows only on a terminal (a log file or a pipe
gets the summary alone), and never when the caller turns it off.
"""
from __future__ import annotations

import sys
import time


class Progress:
    """``with Progress(100, "runs") as bar: ... bar.advance()``; ``show`` None: when stderr
    is a terminal."""

    def __init__(self, total: int, what: str, show: bool | None = None):
        self.total, self.what, self.done = total, what, 0
        self.show = sys.stderr.isatty() if show is None else show
        self.started = time.monotonic()
        self._bar = None

    def __enter__(self):
        if self.show:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            self._bar = Bar(TextColumn(self.what), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def summary(self, where: str) -> str:
        """``200 runs in 12.3 s on 2 local workers (16.3 runs/s)``: what was done, where."""
        seconds = time.monotonic() - self.started
        rate = f" ({self.done / seconds:.1f} {self.what}/s)" if seconds > 0 else ""
        return f"{self.done} {self.what} in {seconds:.1f} s {where}{rate}"
