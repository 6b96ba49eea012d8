"""PRINT and ASSERT (LANGUAGE.md §6.9, §13): one lane after another, in lane order.

Conventions: handlers take (``w``, ``ins``); text goes to the call's output stream.
"""
from __future__ import annotations

from .faults import LaneFault
from .fmt import format_value


def op_print(w, ins):
    blk = w.blk
    fmt = blk.prog.code.prints[ins[1]]
    consts, rtypes, out = blk.prog.code.consts, blk.prog.rtypes, blk.call.out
    for i in w.active_indices():
        parts = [str(consts[x][1]) if kind == "str" else format_value(w.regs[x][i], rtypes[x])
                 for kind, x in fmt.pieces]
        out.write("".join(parts) + ("\n" if fmt.newline else ""))


def op_assert(w, ins):
    """§6.9: the lowest active lane where the condition is false fails with message
    K[b], as lowering worded it (``assertion failed: msg``, or a check of its own)."""
    _, r, k = ins[:3]
    failed = ~w.regs[r].astype(bool) & w.act
    if failed.any():
        i = int(failed.nonzero()[0][0])
        raise LaneFault(str(w.blk.prog.code.consts[k][1]), i)


HANDLERS = {"PRINT": op_print, "ASSERT": op_assert}
