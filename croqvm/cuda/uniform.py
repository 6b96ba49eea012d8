"""Which registers hold the same value in every lane that reads them together: a
divergence analysis of a kernel's bytecode. The wgmma regions (emit_wgmma.py) use it to
know that the lanes of a warpgroup step through a loop together and fault together.

A register is *uniform at* an instruction when every lane executing that instruction at
once holds the same value in it:

- each write of the register computes the same value in every lane: register arithmetic
  (no LANE, no memory, nothing of another lane's: ONCE, SHFL_XOR) of operands uniform at
  the write (inline assembly and C++ calls write values of their own);
- each write lies inside every divergent construct that encloses the write -- an IF whose
  condition, or a LOOP whose BREAK_IF or CONTINUE_IF, is not uniform (or lies in a
  divergent IF inside the loop) -- and in the same branch of each: a read outside it
  (or in the other branch) may meet lanes that took the branch, or left the loop, and
  lanes that did not, each with its own last write.

The constructs' divergence and the registers' uniformity depend on each other; both are
computed together until neither grows.
"""
from __future__ import annotations

from ..bytecode import opcodes
from ..bytecode.dataflow import registers_read, registers_written
from ..bytecode.opcodes import TABLE

_EXITS = {opcodes.BREAK_IF, opcodes.CONTINUE_IF}


def register_only(ins) -> bool:
    """Whether ``ins`` only computes a register: no memory, no control flow, no
    collective, nothing that blocks."""
    op = TABLE[ins[0]]
    return op.writes == 0 and all(x in "rki" for x in op.operands) and not op.opens and \
        not op.closes and op.collective == opcodes.Mode.NEVER and \
        op.blocks == opcodes.Mode.NEVER


def arithmetic(ins) -> bool:
    """Register arithmetic: the value of its operands, in this lane (not another lane's
    or one lane's: SHFL_XOR, ONCE)."""
    return register_only(ins) and ins[0] not in (opcodes.ONCE, opcodes.SHFL_XOR)


def _computes(ins) -> bool:
    """A value of its register operands and constants alone, the same in every lane
    that has the same operands (not LANE)."""
    return arithmetic(ins) and ins[0] != opcodes.LANE


class Uniformity:
    """The divergence analysis of one kernel: ``uniform(ip, r)``."""

    def __init__(self, code, ins):
        self.code, self.ins = code, ins
        self.writes: dict[int, list[int]] = {}      # register -> ips writing it
        for ip, x in enumerate(ins):
            for r in registers_written(code, x):
                self.writes.setdefault(r, []).append(ip)
        self.varying: set[int] = set()          # registers whose writes differ by lane
        self.context: list[tuple] = [()] * len(ins)
        while True:
            before = (len(self.varying), self.context)
            self.context = self._contexts(self._divergent())
            self._grow()
            if (len(self.varying), self.context) == before:
                return

    def uniform(self, ip: int, r: int) -> bool:
        """Whether every lane executing the instruction at ``ip`` at once holds the same
        value in register ``r``."""
        at = self.context[ip]
        return r not in self.varying and \
            all(at[:len(self.context[w])] == self.context[w] for w in self.writes.get(r, ()))

    def _divergent(self) -> set[int]:
        """The ips of the IFs and LOOPs whose lanes may part."""
        out, stack = set(), []
        for ip, x in enumerate(self.ins):
            op = TABLE[x[0]]
            if op.closes:
                stack.pop()
            elif x[0] == opcodes.IF and not self.uniform(ip, x[1]):
                out.add(ip)
            elif x[0] in _EXITS:
                loop = max((s for s in stack if self.ins[s][0] == opcodes.LOOP), default=None)
                if loop is not None and (not self.uniform(ip, x[1]) or
                                         any(s > loop and s in out for s in stack)):
                    out.add(loop)
            if op.opens:
                stack.append(ip)
        return out

    def _contexts(self, divergent: set[int]) -> list[tuple]:
        """ip -> the divergent constructs around it, outermost first, as (opener ip,
        branch: 0, or 1 after an ELSE)."""
        out, stack = [], []
        for ip, x in enumerate(self.ins):
            op = TABLE[x[0]]
            if x[0] == opcodes.ELSE:
                stack[-1] = (stack[-1][0], 1)
            out.append(tuple(s for s in stack if s[0] in divergent))
            if op.closes:
                stack.pop()
            if op.opens:
                stack.append((ip, 0))
        return out

    def _grow(self) -> None:
        """Adds to ``varying`` the registers some write of which is not register
        arithmetic of operands uniform there, until none is added."""
        while True:
            before = len(self.varying)
            for r, ips in self.writes.items():
                if r not in self.varying and any(
                        not _computes(self.ins[w]) or
                        not all(self.uniform(w, x)
                                for x in registers_read(self.code, self.ins[w]))
                        for w in ips):
                    self.varying.add(r)
            if len(self.varying) == before:
                return
