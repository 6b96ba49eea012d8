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

A name means a variable of the *frames* the current instruction lies in: the calls
around it, innermost first, then the function's own body (``Registers``).
"""
from __future__ import annotations

from ..bytecode.dataflow import registers_read, registers_written
from ..bytecode.opcodes import SPAN, decode


class Places:
    """The places of one program's instructions: ``of[pc]`` the number of the place
    of a statement's instruction (-1: no statement starts there, as at the end of a
    structure); per place, its caller's number (``caller``, -1 outside calls) and how
    many calls it lies in (``calls``). ``chains[pc]``: the calls instruction ``pc`` lies
    in (``Registers.calls``)."""

    def __init__(self, statement_lines: list, chains: list, spans):
        self.spans = spans
        self.caller: list[int] = []
        self.calls: list[int] = []
        self._numbers: dict = {}
        self.of = [-1 if at is None else self._number(chain, at)
                   for chain, at in zip(chains, statement_lines)]

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


class Registers:
    """Where each register of one program's code is a variable: ``first[r]``, the index of
    the first instruction writing it (the number of instructions: never), and
    ``frame[r]``, the call instance it belongs to, as the spans of the calls around it
    (outermost first; ``()``: the function's own body). ``calls[pc]``: the same for each
    instruction.

    A register belongs to the frame of the instruction first writing it, but for a
    scalar parameter: the call copies its argument in at the calling statement, before
    the callee's first instruction, so a register written there and used nowhere but
    inside one call made from that frame belongs to that call. (A parameter the callee
    never uses stays with the caller.)"""

    def __init__(self, code, spans):
        ins = decode(code.code)
        count = len(ins)
        self.calls = [tuple(reversed(spans.calls_around(i[SPAN]))) for i in ins]
        self.first = [count] * len(code.regs)
        used: list[list] = [[] for _ in code.regs]    # frames of its later uses
        for n, i in enumerate(ins):
            for r in registers_written(code, i):
                if self.first[r] == count:
                    self.first[r] = n
                else:
                    used[r].append(self.calls[n])
            for r in registers_read(code, i):
                used[r].append(self.calls[n])
        self.frame = [self._frame(r, used[r]) for r in range(len(code.regs))]
        self.reg_names = code.reg_names
        self._names: dict = {}         # pc -> names()

    def _frame(self, r: int, used: list) -> tuple:
        own = self.calls[self.first[r]] if self.first[r] < len(self.calls) else ()
        if not used or not all(len(u) > len(own) and u[:len(own)] == own for u in used):
            return own
        common = used[0]
        for u in used[1:]:
            k = 0
            while k < min(len(common), len(u)) and common[k] == u[k]:
                k += 1
            common = common[:k]
        return common if len(common) > len(own) else own

    def chain(self, pc: int) -> tuple:
        """The calls instruction ``pc`` lies in, outermost first (past the end: none)."""
        return self.calls[pc] if pc < len(self.calls) else ()

    def visible(self, r: int, chain: tuple) -> bool:
        """Whether register ``r`` is a variable of one of the frames of ``chain``."""
        return self.frame[r] == chain[:len(self.frame[r])]

    def names(self, pc: int) -> dict:
        """Per name, the registers that may stand for it at instruction ``pc``, the one
        meant first: of the frames around ``pc``, the innermost that has written one by
        ``pc``, and there the one first written last; else one not written yet."""
        if pc not in self._names:
            chain = self.chain(pc)
            found: dict = {}
            for r, name in enumerate(self.reg_names):
                if name and self.visible(r, chain):
                    found.setdefault(name, []).append(r)

            def rank(r):
                written = self.first[r] <= pc
                return written, len(self.frame[r]), self.first[r] if written else -r
            self._names[pc] = {name: sorted(rs, key=rank, reverse=True)
                               for name, rs in found.items()}
        return self._names[pc]
