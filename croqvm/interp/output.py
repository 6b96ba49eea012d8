"""PRINT, ASSERT and ASSERT_FMT (LANGUAGE.md §6.9, §13): one lane after another, in lane
order; a failed check faults in its lowest failing lane (§7.1.3).

Conventions: handlers take (``w``, ``ins``); text goes to the call's output stream; ``i``
indexes the warp's lanes.
"""
from __future__ import annotations

from ..bytecode.module import PieceKind
from ..faults import LaneFault
from .fmt import format_value


def _text(w, fmt, i: int) -> str:
    """Lane ``i``'s text of print format ``fmt``, without its newline (§13.2)."""
    strings, rtypes = w.blk.prog.code.strings, w.blk.prog.rtypes
    return "".join(strings[x] if kind == PieceKind.STR else format_value(w.regs[x][i], rtypes[x])
                   for kind, x in fmt.pieces)


def op_print(w, ins):
    blk = w.blk
    fmt = blk.prog.code.prints[ins[1]]
    for i in w.active_indices():
        blk.call.out.write(_text(w, fmt, i) + ("\n" if fmt.newline else ""))


def _first_failure(w, r: int) -> int | None:
    failed = ~w.regs[r].astype(bool) & w.act
    return int(failed.nonzero()[0][0]) if failed.any() else None


def op_assert(w, ins):
    """§6.9: message S[b] as lowering worded it (``assertion failed: msg``), verbatim."""
    _, r, s = ins[:3]
    i = _first_failure(w, r)
    if i is not None:
        raise LaneFault(w.blk.prog.code.strings[s], i)


def op_assert_fmt(w, ins):
    """A check whose message shows the failing lane's values, as print writes them:
    `the parallel bound of 'q' is 0: ...` (§6.2.2), `(lo 3, hi 1)` (§5.5.2)."""
    _, r, p = ins[:3]
    i = _first_failure(w, r)
    if i is not None:
        raise LaneFault(_text(w, w.blk.prog.code.prints[p], i), i)


HANDLERS = {"PRINT": op_print, "ASSERT": op_assert, "ASSERT_FMT": op_assert_fmt}
