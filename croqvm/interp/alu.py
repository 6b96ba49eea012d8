"""Register handlers: constants, moves, conversions, lane and block ids, arithmetic,
comparisons, selection (LANGUAGE.md §4, §12). The numbers themselves are
croqvm.core.numerics'; these handlers only fetch operands and write results.

Conventions: handlers take (``w``, ``ins``); ``t`` types come from ``w.blk.prog.rtypes``;
results are converted to the destination register's type (§12.3) and written to the
active lanes. Register types are fixed, so the arithmetic ops are resolved once per
instruction (``PREPARE``): their handlers receive the destination, the sources and the
operation for those types, its result converted to the destination's type, instead of
the instruction.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..bytecode.opcodes import BINARY_ALU, COMPARE, TABLE
from ..core.faults import Kind, LaneFault
from ..core.intrinsics import MATH
from ..core.numerics import (binary_op, convert, converter, math_op, round_to, same, storage_array,
                        unary_op)


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


def prepare_const(prog, ins):
    """CONST: the constant, of the destination's type (the verifier's guarantee), as one
    value of its storage type."""
    _, r, k = ins[:3]
    return r, storage_array([prog.code.consts[k].value], prog.rtypes[r])[0]


def op_const(w, ins):
    r, value = ins
    w.write(r, value)


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


def _converted(fn, t, dst):
    """``fn(..., act)`` with its result, of type ``t``, converted to type ``dst``."""
    to_dst = converter(t, dst)
    if to_dst is same:
        return fn
    return lambda *operands: to_dst(fn(*operands), operands[-1])


def prepare_binary(prog, ins):
    """(a, b, c, ``fn(x, y, act)``): the operation for R[b] and R[c]'s types, its result
    converted to R[a]'s."""
    _, a, b, c = ins[:4]
    rt = prog.rtypes
    fn, t = binary_op(TABLE[ins[0]].name, rt[b], rt[c])
    return a, b, c, _converted(fn, t, rt[a])


def op_binary(w, ins):
    a, b, c, fn = ins
    w.write(a, fn(w.regs[b], w.regs[c], w.act))


def prepare_unary(prog, ins):
    """(a, b, ``fn(x, act)``), as ``prepare_binary``."""
    _, a, b = ins[:3]
    rt = prog.rtypes
    fn, t = unary_op(TABLE[ins[0]].name, rt[b])
    return a, b, _converted(fn, t, rt[a])


def op_unary(w, ins):
    a, b, fn = ins
    w.write(a, fn(w.regs[b], w.act))


def op_select(w, ins):
    _, a, b, c, d = ins[:5]
    rt = w.blk.prog.rtypes
    yes = convert(w.regs[c], rt[c], rt[a], w.act)
    no = convert(w.regs[d], rt[d], rt[a], w.act)
    w.write(a, np.where(w.regs[b].astype(bool), yes, no))


def op_shfl_xor(w, ins):
    """R[a] := R[b] of the warp's lane at index (own index xor c), which must be active."""
    _, a, b, mask = ins[:4]
    partner = w.every ^ mask
    for k in w.active_indices():
        p = int(partner[k])
        if p >= w.width or not w.act[p]:
            raise LaneFault(Kind.SHUFFLE_INACTIVE, (p,), int(k))
    w.write(a, w.regs[b][np.minimum(partner, w.width - 1)])


def prepare_math(prog, ins):
    """(a, the argument registers, ``fn(args, act)``) for the function and its type."""
    _, a, b, c, d, e = ins[:6]
    fn = MATH[e]
    return a, (b, c, d)[:fn.arity], math_op(fn.name, prog.rtypes[b])


def op_math(w, ins):
    a, args, fn = ins
    w.write(a, fn([w.regs[r] for r in args], w.act))


_BINARY = [TABLE[c].name for c in BINARY_ALU + COMPARE]
_UNARY = ("NEG", "NOT", "BNOT")

HANDLERS = {
    "NOP": op_nop, "CONST": op_const, "MOV": op_mov, "CVT": op_cvt, "LANE": op_lane,
    "BLOCKIDX": op_blockidx, "SELECT": op_select, "SHFL_XOR": op_shfl_xor, "MATH": op_math,
    **{n: op_binary for n in _BINARY}, **{n: op_unary for n in _UNARY},
}
PREPARE = {
    "CONST": prepare_const, "MATH": prepare_math,
    **{n: prepare_binary for n in _BINARY}, **{n: prepare_unary for n in _UNARY},
}
