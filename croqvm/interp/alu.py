"""Register handlers: constants, moves, conversions, lane and block ids, arithmetic,
comparisons, selection (LANGUAGE.md §4, §12). The numbers themselves are
croqvm.interp.scalar's; these handlers only fetch operands and write results.

Conventions: handlers take (``w``, ``ins``); ``t`` types come from ``w.blk.prog.rtypes``;
results are converted to the destination register's type (§12.3) and written to the
active lanes.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..bytecode.opcodes import BINARY_ALU, COMPARE, TABLE
from .scalar import binary, convert, round_to, unary


def const_array(kind: int, value, dst, width: int) -> np.ndarray:
    """Constant ``value`` of type code ``kind`` as ``width`` lanes of type ``dst``."""
    src = dtypes.BY_CODE[kind]
    if src.kind == "bool":
        arr = np.array([bool(value)])
    elif src.is_int:
        lo = -(1 << (src.bits - 1)) if src.signed else 0
        v = (int(value) - lo) % (1 << src.bits) + lo
        arr = np.array([v], src.np)
    else:
        arr = round_to(np.array([float(value)]), src)
    one = convert(arr, src, dst, np.ones(1, bool))
    return np.repeat(one, width)


def op_nop(w, ins):
    pass


def op_const(w, ins):
    _, r, k = ins[:3]
    prog = w.blk.prog
    key = (k, r, w.width)
    vals = prog.const_cache.get(key)
    if vals is None:
        kind, value = prog.code.consts[k]
        vals = prog.const_cache[key] = const_array(kind, value, prog.rtypes[r], w.width)
    w.write(r, vals)


def op_mov(w, ins):
    w.write(ins[1], w.regs[ins[2]])


def op_cvt(w, ins):
    _, a, b = ins[:3]
    rt = w.blk.prog.rtypes
    w.write(a, convert(w.regs[b], rt[b], rt[a], w.act))


def op_lane(w, ins):
    """The lane's index in its block; the host lane is lane 0 of a one-lane block."""
    t = w.blk.prog.rtypes[ins[1]]
    w.write(ins[1], convert(w.lanes.astype(np.int64), dtypes.S64, t, w.act))


def op_blockidx(w, ins):
    _, r, d = ins[:3]
    index = w.blk.index[d] if d < len(w.blk.index) else 0
    w.write(r, const_array(dtypes.S64.code, index, w.blk.prog.rtypes[r], w.width))


def _binary(name):
    def op(w, ins):
        _, a, b, c = ins[:4]
        rt = w.blk.prog.rtypes
        vals, t = binary(name, w.regs[b], w.regs[c], rt[b], rt[c], w.act)
        w.write(a, convert(vals, t, rt[a], w.act))
    op.__name__ = f"op_{name.lower()}"
    return op


def _unary(name):
    def op(w, ins):
        _, a, b = ins[:3]
        rt = w.blk.prog.rtypes
        vals, t = unary(name, w.regs[b], rt[b], w.act)
        w.write(a, convert(vals, t, rt[a], w.act))
    op.__name__ = f"op_{name.lower()}"
    return op


def op_select(w, ins):
    _, a, b, c, d = ins[:5]
    rt = w.blk.prog.rtypes
    yes = convert(w.regs[c], rt[c], rt[a], w.act)
    no = convert(w.regs[d], rt[d], rt[a], w.act)
    w.write(a, np.where(w.regs[b].astype(bool), yes, no))


HANDLERS = {
    "NOP": op_nop, "CONST": op_const, "MOV": op_mov, "CVT": op_cvt, "LANE": op_lane,
    "BLOCKIDX": op_blockidx, "SELECT": op_select,
    **{TABLE[c].name: _binary(TABLE[c].name) for c in BINARY_ALU + COMPARE},
    **{n: _unary(n) for n in ("NEG", "NOT", "BNOT")},
}
