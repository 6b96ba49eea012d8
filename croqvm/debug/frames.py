"""The places the debugger steps between, and the ``call`` frames a warp is in
(croqvm.debug.session; native/debug.c follows the same tables).

A ``__co_device__`` function is inlined where it is called (LANGUAGE.md §6.10), so a warp
has no call stack at run time; but each instruction of a callee has a span of its own,
paired with the call's (``Module.calls``, ``SpanTable.calls_around``), so the calls an
instruction lies in follow from the instruction alone, whichever engine ran the warp
there.

A *place* is a statement's line together with the calls around it (outermost first).
The *caller* of a place inside a call is the place of that call: the call's line, inside
the calls around the call. A warp starts a new statement when it runs an instruction of
a place and the last place it ran one of is neither this place nor called from it, or
is this instruction or a later one (a loop went round): the rest of a statement after
its callee returned is the same execution of that statement, so a breakpoint on the
line of a ``call`` stops once each time the line runs.
"""
from __future__ import annotations

from ..bytecode.opcodes import SPAN


class Places:
    """The places of one program's instructions: ``of[pc]`` the number of the place
    of a statement's instruction (-1: no statement starts there, as at the end of a
    structure); per place, its caller's number (``caller``, -1 outside calls) and how
    many calls it lies in (``calls``)."""

    def __init__(self, prog, statement_lines: list, spans):
        self.spans = spans
        self.caller: list[int] = []
        self.calls: list[int] = []
        self._numbers: dict = {}
        self.of = [-1 if at is None else self._number(self._chain(ins), at)
                   for ins, at in zip(prog.ins, statement_lines)]

    def _chain(self, ins) -> tuple:
        """The spans of the calls instruction ``ins`` lies in, outermost first."""
        return tuple(reversed(self.spans.calls_around(ins[SPAN])))

    def _number(self, chain: tuple, line: tuple) -> int:
        key = (chain, line)
        if key not in self._numbers:
            n = self._numbers[key] = len(self.caller)
            self.caller.append(-1)
            self.calls.append(len(chain))
            if chain:
                call = self.spans.span(chain[-1])
                self.caller[n] = self._number(chain[:-1], (call.file, call.line))
        return self._numbers[key]

    def starts(self, pc: int, last: int | None) -> bool:
        """Whether a warp whose last statement instruction was ``last`` (None: it ran
        none in this block yet) starts a new statement at ``pc``."""
        if last is None or pc <= last:
            return True
        here, place = self.of[pc], self.of[last]
        while place >= 0:
            if place == here:
                return False
            place = self.caller[place]
        return True
