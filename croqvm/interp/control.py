"""Structured control flow: IF / ELSE / LOOP / BREAK_IF / CONTINUE_IF / END / YIELD
(LANGUAGE.md §6.5, §7.3 (D18); docs/EXECUTION.md §4).

Conventions: handlers take (``w``, ``ins``) with ``w.pc`` already past the instruction;
a jump sets ``w.pc``. The control stack holds ``Frame``s; reconvergence happens only at
END. When the active mask becomes empty inside a frame the warp skips structurally to the
frame's ELSE/END (``settle``), never running an instruction with no lanes. Masks are
values: a new mask is a new array, never an update in place, so a frame may keep the very
array that was the active mask when it opened.
"""
from __future__ import annotations

import numpy as np

from .sync import recheck_rendezvous
from .warp import Frame


def settle(w) -> None:
    """After lanes left the active mask: if none remain, go to the innermost frame's
    ELSE/END; with no frame open, every lane has terminated and the warp is done."""
    if w.nact:
        return
    if not w.stack:
        w.finish()
        return
    w.pc = w.stack[-1].jump


def op_if(w, ins):
    _, r, t = ins[:3]
    cond = np.logical_and(w.regs[r], w.act)
    w.stack.append(Frame("if", w.ip, w.act, t, other=w.act & ~cond))
    if not w.set_active(cond):
        w.pc = t


def op_else(w, ins):
    f = w.stack[-1]
    f.jump = ins[1]
    if not w.set_active(f.other & w.live):
        w.pc = ins[1]


def op_loop(w, ins):
    w.stack.append(Frame("loop", w.ip, w.act, ins[1], out=np.zeros(w.width, bool)))


def _leave(w, lanes) -> int:
    """Take ``lanes`` out of the active mask and out of the IF frames above the
    innermost loop, so no END re-enables them before the loop's own END; returns that
    loop frame's position in the stack."""
    k = len(w.stack) - 1
    while w.stack[k].kind != "loop":
        f = w.stack[k]
        f.entered = f.entered & ~lanes
        if f.other is not None:
            f.other = f.other & ~lanes
        k -= 1
    w.set_active(w.act & ~lanes)
    return k


def op_break_if(w, ins):
    lanes = np.logical_and(w.regs[ins[1]], w.act)
    if np.count_nonzero(lanes):
        loop = w.stack[_leave(w, lanes)]
        loop.out = loop.out | lanes
        settle(w)


def op_continue_if(w, ins):
    lanes = np.logical_and(w.regs[ins[1]], w.act)
    if np.count_nonzero(lanes):
        _leave(w, lanes)   # the loop's END takes them into the next iteration
        settle(w)


def op_end(w, ins):
    f = w.stack[-1]
    if f.kind == "loop":
        if w.set_active(f.entered & ~f.out & w.live):   # lanes for the next iteration
            w.pc = f.opener + 1
            return
    w.stack.pop()
    w.set_active(f.entered & w.live)
    settle(w)


def op_yield(w, ins):
    """§6.5: the active lanes terminate; collectives stop waiting for them."""
    w.live &= ~w.act
    w.set_active(np.zeros(w.width, bool))
    recheck_rendezvous(w.blk)
    settle(w)


HANDLERS = {
    "IF": op_if, "ELSE": op_else, "LOOP": op_loop, "BREAK_IF": op_break_if,
    "CONTINUE_IF": op_continue_if, "END": op_end, "YIELD": op_yield,
}
