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
program's scalar parameters and symbolic dimensions. An instruction reads the registers
among its operands other than the one it writes (``Op.writes``), and those the side-table
entries it names hold: an access's indices, a view's origin and extents, a DMA's views,
padding and own buffer's shape, a buffer's shape (ALLOC), a print format's values, a
launch's grid, arguments and block size, a C++ call's arguments and inline assembly's
inputs; it writes ``Op.writes`` and a C++ call's result or inline assembly's outputs.
"""
from __future__ import annotations

import numpy as np

from ..bytecode.module import ParamKind
from ..bytecode.opcodes import TABLE
from ..core.faults import Kind, LaneFault
from ..reports.messages import print_registers
from .checks import Checker


def _access(code, a):
    acc = code.accesses[a]
    return list(acc.indices) + ([acc.arr] if acc.arr >= 0 else [])


def _view(code, v):
    view = code.views[v]
    return list(view.origin) + list(view.extents) + list(view.space) + \
        ([view.flat] if view.flat >= 0 else []) + ([view.arr] if view.arr >= 0 else [])


def _dma(code, d):
    desc = code.dmas[d]
    regs = _view(code, desc.src) + desc.pad_lo + desc.pad_hi + desc.pad_mid
    if desc.dst_view >= 0:
        regs += _view(code, desc.dst_view)
    elif desc.dst_buffer >= 0:
        regs += code.buffers[desc.dst_buffer].shape
    return regs + ([desc.pad_value] if desc.pad_value >= 0 else [])


def _print(code, p):
    return print_registers(code.prints[p])


def _launch(code, n):
    launch = code.launches[n]
    return list(launch.grid) + [h for _, h in launch.scalars] + \
        ([launch.block] if launch.block >= 0 else [])


def _asm_reads(code, a):
    asm = code.asms[a]
    return [x.reg for x in asm.inputs] + \
        [x.reg for x in asm.outputs if x.constraint.startswith("+")]


# operand kind -> the registers that the side-table entry it names holds
SIDE_TABLES = {"a": _access, "v": _view, "d": _dma, "p": _print, "l": _launch,
               "x": _asm_reads, "y": lambda code, c: list(code.cxx_calls[c].args)}
# operand kind -> the registers that the side-table entry it names has written
SIDE_WRITES = {"x": lambda code, a: [x.reg for x in code.asms[a].outputs],
               "y": lambda code, c: [code.cxx_calls[c].result]}
# opcodes reading the registers of a buffer operand's shape: those that allocate
SHAPE_READERS = {"ALLOC"}


def registers_read(code, ins) -> list[int]:
    """The registers instruction ``ins`` of ``code`` reads, each once."""
    op = TABLE[ins[0]]
    regs = []
    for n, kind in enumerate(op.operands):
        value = ins[1 + n]
        if kind == "r" and n != op.writes:
            regs.append(value)
        elif kind in SIDE_TABLES:
            regs += SIDE_TABLES[kind](code, value)
        elif kind == "b" and op.name in SHAPE_READERS:
            regs += code.buffers[value].shape
    return list(dict.fromkeys(r for r in regs if r >= 0))


def registers_written(code, ins) -> list[int]:
    """The registers instruction ``ins`` of ``code`` writes."""
    op = TABLE[ins[0]]
    regs = [ins[1 + op.writes]] if op.writes >= 0 else []
    for n, kind in enumerate(op.operands):
        if kind in SIDE_WRITES:
            regs += SIDE_WRITES[kind](code, ins[1 + n])
    return [r for r in regs if r >= 0]


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
