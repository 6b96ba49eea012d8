"""Initialisation checking on the reference engine: ``check="init"`` (LANGUAGE.md §14.4;
docs/EXECUTION.md §20), which the native engine follows (``registers_read`` and
``registers_written`` are its lists too: croqvm/native/flatten.py).

Buffers are checked by poison mode (croqvm.interp.memory): a declared buffer starts zeroed
and written (§3.2.4), a DMA's own buffer poisoned, and reading an element never written is
a runtime error. The checker adds registers: a lane reading a register no instruction has
written for it is the runtime error ``UNINITIALISED_REGISTER``. Compiled programs never do
(every declaration has an initializer, §3.4.1); a hand-made or damaged ``.cqb`` may.

Per warp and register the checker keeps which lanes have written it, and whether all have
(then the register costs nothing more). A register starts written where the engine sets it
before the code runs: a kernel's argument registers (``Launch.scalars``), the host
program's scalar parameters and symbolic dimensions. An instruction reads and writes the
registers of ``registers_read`` and ``registers_written`` (croqvm/bytecode/dataflow.py):
its register operands and those the side-table entries it names hold.
"""
from __future__ import annotations

import numpy as np

from ..bytecode.dataflow import registers_read, registers_written
from ..bytecode.module import ParamKind
from ..core.faults import Kind, LaneFault
from .checks import Checker


class Written:
    """Which lanes of one warp have written each register: ``lanes[r]`` per lane, and
    ``full[r]`` once every lane of the warp has."""

    def __init__(self, nregs: int, width: int, preset):
        self.lanes = np.zeros((nregs, width), bool)
        self.full = np.zeros(nregs, bool)
        for r in preset:
            self.lanes[r] = True
            self.full[r] = True

    def wrote(self, r: int, act: np.ndarray) -> None:
        self.lanes[r] |= act
        self.full[r] = self.lanes[r].all()


class InitChecker(Checker):
    """The ``check="init"`` checker of one call: registers (croqvm.interp.checks)."""

    def __init__(self, call):
        self.call = call

    def instrument(self, prog, steps: list) -> list:
        out = list(steps)
        for ip, ins in enumerate(prog.ins):
            reads = registers_read(prog.code, ins)
            writes = registers_written(prog.code, ins)
            if reads or writes:
                out[ip] = (_checked(self, steps[ip][0], reads, writes), steps[ip][1])
        return out

    def written(self, w) -> Written:
        """The warp's record, made when it first acts."""
        blk = w.blk
        if blk.check_state is None:
            preset = self._preset(blk)
            nregs = len(blk.prog.rtypes)
            blk.check_state = [Written(nregs, x.width, preset) for x in blk.warps]
        return blk.check_state[w.index]

    def _preset(self, blk) -> list[int]:
        """The registers the engine sets before the code runs (docs/EXECUTION.md §2-§3)."""
        fn = self.call.fn
        if blk.is_host:
            return [p.slot for p in fn.params if p.kind == ParamKind.SCALAR] + \
                [r for _, r in fn.dims]
        return [k for k, _ in fn.host.launches[blk.launch_index].scalars]


def _checked(checker, handler, reads: list, writes: list):
    def op(w, ins):
        rec = checker.written(w)
        for r in reads:
            if not rec.full[r]:
                unset = w.act & ~rec.lanes[r]
                if unset.any():
                    raise LaneFault(Kind.UNINITIALISED_REGISTER, (r,),
                                    int(np.flatnonzero(unset)[0]))
        handler(w, ins)
        for r in writes:
            if not rec.full[r]:
                rec.wrote(r, w.act)
    return op
