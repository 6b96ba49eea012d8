"""What ``croqvm run`` says while a function runs: the progress line and the watchdog.

``Monitor`` is the progress hook the CLI gives the engine (croqvm.core.position). It keeps one
line on stderr up to date -- blocks done of the launch, warp-instructions, their rate and
the time left in the launch -- once a run has taken ``PROGRESS_AFTER`` seconds (or from
the start when asked, one line per update when stderr is not a terminal). The watchdog
never stops a run: when one block (or the host code between launches) has run for
``watchdog`` seconds it prints, once, a note showing the loop the running warp is in, so
that an endless loop is noticed in seconds while a long, correct run goes on.
"""
from __future__ import annotations

import time

from ..core.diagnostics import Diagnostic, render
from ..core.position import RunPosition

PROGRESS_AFTER = 2.0        # seconds before a terminal gets a progress line
REDRAW_EVERY = 0.25         # seconds between two redraws of the line on a terminal
LINE_EVERY = 1.0            # seconds between two lines when they are not redrawn
WATCHDOG_HINT = ("a loop that never ends runs until Ctrl-C, which says where the run was; "
                 "--max-steps N stops a run after N {}.")
# what --max-steps counts where a run's steps are not warp-instructions
STEP_LIMIT_UNIT = {"loop iterations": "loop iterations of a lane"}


def _count(n: float) -> str:
    """``950``, ``12.3k``, ``75.1M``, ``2.0G``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.1f}{suffix}"
    return f"{n:.0f}"


def _seconds(t: float) -> str:
    if t < 60:
        return f"{t:.0f} s"
    if t < 3600:
        return f"{t // 60:.0f} min {t % 60:02.0f} s"
    return f"{t // 3600:.0f} h {t % 3600 // 60:02.0f} min"


class Monitor:
    """The progress hook of one CLI run. ``show``: "auto" (a terminal, after
    PROGRESS_AFTER seconds), "always" or "never"; ``watchdog``: seconds, 0 for none."""

    def __init__(self, stream, sources: dict, *, show: str, watchdog: float, tty: bool,
                 clock=time.monotonic):
        self.stream, self.sources = stream, sources
        self.show, self.watchdog, self.tty, self.clock = show, watchdog, tty, clock
        self.start = clock()
        self.drawn = False           # a redrawn line is on the terminal
        self.last_line = None        # when the line was last written
        self.launch_seen = (0, self.start, 0)  # (launch, when first seen, its block then)
        self.stretch = (None, self.start)     # (what runs: launch and block, since when)
        self.warned: set = set()

    def __call__(self, pos: RunPosition) -> None:
        now = self.clock()
        if pos.launch != self.launch_seen[0]:
            self.launch_seen = (pos.launch, now, pos.block_number)
        key = (pos.launch, pos.block_number if pos.in_kernel else None)
        if key != self.stretch[0]:
            self.stretch = (key, now)
        elif self.watchdog and now - self.stretch[1] >= self.watchdog and key not in self.warned:
            self.warned.add(key)
            self._note(pos, now - self.stretch[1])
        if self._due(now):
            self._write(self._line(pos, now))
            self.last_line = now

    def _due(self, now: float) -> bool:
        if self.show == "never" or (self.show == "auto" and not self.tty):
            return False
        if self.show == "auto" and now - self.start < PROGRESS_AFTER:
            return False
        return self.last_line is None or now - self.last_line >= (
            REDRAW_EVERY if self.tty else LINE_EVERY)

    def _line(self, pos: RunPosition, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        parts = [f"'{pos.function}'"]
        if pos.in_kernel:
            done = pos.block_number
            parts.append(f"launch {pos.launch}, block {done + 1}/{pos.blocks} "
                         f"({100 * done // pos.blocks}%)")
        elif pos.on_threads:
            parts.append(f"launch {pos.launch}, blocks on threads, {pos.block_number}/"
                         f"{pos.blocks} started")
        else:
            parts.append("host code")
        parts.append(f"{_count(pos.steps)} {pos.unit}, {_count(pos.steps / elapsed)}/s")
        _, seen, first = self.launch_seen
        if pos.in_kernel and pos.block_number > first:   # the pace of blocks seen to end
            left = (now - seen) / (pos.block_number - first) * (pos.blocks - pos.block_number)
            parts.append(f"launch ends in ~{_seconds(left)}")
        return "progress: " + ", ".join(parts)

    def _note(self, pos: RunPosition, running: float) -> None:
        who = (f"block {pos.block_text()} of the kernel launched at {pos.kernel_span}"
               if pos.in_kernel else f"the kernel launched at {pos.kernel_span} (its blocks "
               f"on threads)" if pos.on_threads else f"the host code of '{pos.function}'")
        steps = pos.block_steps if pos.in_kernel else pos.steps
        place = "this loop" if pos.loop_span else "this statement"
        lanes = f"; {pos.lanes} is in {place}" if pos.lanes else f"; it is in {place}"
        diag = Diagnostic("note", f"{who} has been running for {_seconds(running)} ({steps} "
                          f"{pos.unit}){lanes}",
                          pos.loop_span or pos.span or pos.kernel_span,
                          WATCHDOG_HINT.format(STEP_LIMIT_UNIT.get(pos.unit, pos.unit)))
        self._write(render(diag, self.sources), keep=True)

    def _write(self, text: str, keep: bool = False) -> None:
        """A progress line (redrawn in place on a terminal) or, with ``keep``, text that
        stays."""
        if self.tty:
            self.stream.write("\r\033[K")
            self.drawn = False
            if keep:
                self.stream.write(text + "\n")
            else:
                self.stream.write(text)
                self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Take the progress line off the terminal, before the results are printed."""
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False
