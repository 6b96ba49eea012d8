"""The registers an instruction reads and writes, the side-table entries it names
included: the initialisation check follows them on both engines
(croqvm/interp/initcheck.py, croqvm/native/flatten.py) and lowering moves loop-invariant
instructions by them (croqvm/bytecode/lower/hoist.py).

An instruction reads the registers among its operands other than the one it writes
(``Op.writes``), and those the side-table entries it names hold: an access's indices, a
view's origin, extents, reshape and strides, a DMA's views, padding and own buffer's shape,
a buffer's shape (ALLOC), a print format's values, a launch's grid, cluster, arguments and
block size, a C++ call's arguments, an extern call's register arguments and inline
assembly's inputs; it writes ``Op.writes`` and a C++ call's result or inline assembly's
outputs.
"""
from __future__ import annotations

from .module import PieceKind
from .opcodes import TABLE


def _access(code, a):
    acc = code.accesses[a]
    return list(acc.indices) + ([acc.arr] if acc.arr >= 0 else [])


def _view(code, v):
    view = code.views[v]
    return list(view.origin) + list(view.extents) + list(view.space) + list(view.strides) + \
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
    return [x for kind, x in code.prints[p].pieces if kind == PieceKind.REG]


def _launch(code, n):
    launch = code.launches[n]
    return list(launch.grid) + list(launch.cluster) + [h for _, h in launch.scalars] + \
        ([launch.block] if launch.block >= 0 else [])


def _asm_reads(code, a):
    asm = code.asms[a]
    return [x.reg for x in asm.inputs] + \
        [x.reg for x in asm.outputs if x.constraint.startswith("+")]


def _extern_args(code, c):
    call = code.extern_calls[c]
    return [r for r, buffer in zip(call.args, call.buffers) if not buffer]


# operand kind -> the registers that the side-table entry it names holds
SIDE_TABLES = {"a": _access, "v": _view, "d": _dma, "p": _print, "l": _launch,
               "x": _asm_reads, "y": lambda code, c: list(code.cxx_calls[c].args),
               "z": _extern_args}
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
