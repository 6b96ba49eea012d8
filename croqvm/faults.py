"""The two ways a handler reports a runtime error (LANGUAGE.md §15.3).

``LaneFault`` comes from per-lane array code (croqvm.numerics, memory access): its
``index`` is the lane's position in the arrays the warp computed on. ``Fault`` names a
lane of the block directly; collectives use it, since the faulting lane may belong to
another warp than the one completing the rendezvous. The engine is the one place that
turns either into a ``KernelFault`` with span, kernel, block and lane (Lua's pc
discipline, STYLE.md §1).
"""
from __future__ import annotations


class LaneFault(Exception):
    """A runtime error of the lane at array index ``index`` of the executing warp."""

    def __init__(self, message: str, index: int):
        super().__init__(message)
        self.message = message
        self.index = index


class Fault(Exception):
    """A runtime error of block lane ``lane`` (None: no lane, e.g. a deadlock), at the
    executing instruction unless ``span`` (a span index) says otherwise."""

    def __init__(self, message: str, lane: int | None = None, *, hint: str | None = None,
                 notes=(), span: int | None = None):
        super().__init__(message)
        self.message = message
        self.lane = lane
        self.hint = hint
        self.notes = list(notes)
        self.span = span
