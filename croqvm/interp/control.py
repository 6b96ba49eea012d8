"""Structured control flow: IF / ELSE / LOOP / BREAK_IF / CONTINUE_IF / END / YIELD
(LANGUAGE.md §6.5, §7.3 (D18); docs/EXECUTION.md §3).

Conventions: handlers take (``w``, ``ins``) with ``w.pc`` already past the instruction;
a jump sets ``w.pc``. The control stack holds ``Frame``s; reconvergence happens only at
END. When the active mask becomes empty inside a frame the warp skips structurally to the
frame's ELSE/END (``settle``), never running an instruction with no lanes.
"""
from __future__ import annotations

import numpy as np

from .sync import recheck_rendezvous
from .warp import Frame


def settle(w) -> None:
    """After lanes left the active mask: if none remain, go to the innermost frame's
    ELSE/END; with no frame open, every lane has terminated and the warp is done."""
    if w.act.any():
        return
    if not w.stack:
        w.finish()
        return
    w.pc = w.stack[-1].jump


def op_if(w, ins):
    _, r, t = ins[:3]
    cond = w.regs[r].astype(bool) & w.act
    w.stack.append(Frame("if", w.ip, w.act.copy(), t, other=w.act & ~cond))
    w.act = cond
    if not cond.any():
        w.pc = t


def op_else(w, ins):
    f = w.stack[-1]
    f.in_else, f.jump = True, ins[1]
    w.act = f.other & w.live
    if not w.act.any():
        w.pc = ins[1]


def op_loop(w, ins):
    w.stack.append(Frame("loop", w.ip, w.act.copy(), ins[1], out=np.zeros(w.width, bool)))


def _leave(w, lanes) -> int:
    """Take ``lanes`` out of the active mask and out of the IF frames above the
    innermost loop, so no END re-enables them before the loop's own END; returns that
    loop frame's position in the stack."""
    k = len(w.stack) - 1
    while w.stack[k].kind != "loop":
        f = w.stack[k]
        f.entered &= ~lanes
        if f.other is not None:
            f.other &= ~lanes
        k -= 1
    w.act &= ~lanes
    return k


def op_break_if(w, ins):
    lanes = w.regs[ins[1]].astype(bool) & w.act
    if lanes.any():
        loop = w.stack[_leave(w, lanes)]
        loop.out |= lanes
        settle(w)


def op_continue_if(w, ins):
    lanes = w.regs[ins[1]].astype(bool) & w.act
    if lanes.any():
        _leave(w, lanes)   # the loop's END takes them into the next iteration
        settle(w)


def op_end(w, ins):
    f = w.stack[-1]
    if f.kind == "loop":
        nxt = f.entered & ~f.out & w.live
        if nxt.any():
            w.act = nxt
            w.pc = f.opener + 1
            return
    w.stack.pop()
    w.act = f.entered & w.live
    settle(w)


def op_yield(w, ins):
    """§6.5: the active lanes terminate; collectives stop waiting for them."""
    w.live &= ~w.act
    w.act = np.zeros(w.width, bool)
    recheck_rendezvous(w.blk)
    settle(w)


HANDLERS = {
    "IF": op_if, "ELSE": op_else, "LOOP": op_loop, "BREAK_IF": op_break_if,
    "CONTINUE_IF": op_continue_if, "END": op_end, "YIELD": op_yield,
}
