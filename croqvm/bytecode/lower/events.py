"""Shared events, ``trigger`` and ``wait`` (LANGUAGE.md §10; docs/EXECUTION.md §11).

Each event declaration gets an ``EventDecl`` per name with its slot count; its arrival
count is ``event<N>``'s N, else the size of the union of the lanesets of every ``trigger``
statement naming it (§10.2), which the engine evaluates when a block starts. A whole
array in ``trigger``/``wait`` acts on each slot in index order (§10.1).
"""
from __future__ import annotations

from math import prod

from croqvm.bytecode.module import EventDecl
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value

from .dma import lower_future_wait
from .state import Lowerer
from .mma import lower_op_future_wait
from .values import EventRef, FragRef, FutRef
from .views import flat_subscript, peel_subscripts


def lower_event_decl(lw: Lowerer, s: ast.EventDecl) -> None:
    count = -1
    if s.count is not None:
        count = const_value(s.count)
        if not isinstance(count, int):
            lw.error(s.count.span, "croqvm needs the arrival count of 'event<N>' at compile time.")
    for item in s.items:
        dims = lw.static_sizes(item.array, "an event array")
        decl = EventDecl(item.name, prod(dims), item.ready, count, [], lw.spans.intern(item.span))
        lw.bind(item.sym, EventRef(lw.b.add("events", decl), dims, item.name))


def _slots(lw: Lowerer, ref_expr: ast.Expr):
    """``(target, [slot registers])`` of ``e``, ``e[i]``, ``e[i][j]`` or a future name."""
    e, subs = peel_subscripts(ref_expr)
    if not isinstance(e, ast.Name):
        lw.unsupported(ref_expr, f"'{lw.snippet(ref_expr.span)}' in trigger/wait")
    target = lw.lookup(e.sym, e)
    if isinstance(target, (FutRef, FragRef)):
        return target, e.sym, []
    if not isinstance(target, EventRef):
        lw.unsupported(ref_expr, f"'{lw.snippet(ref_expr.span)}' in trigger/wait")
    if not subs:                                   # the whole array, slot by slot
        return target, e.sym, [lw.int_reg(i) for i in range(prod(target.array))]
    if len(subs) != len(target.array):
        lw.unsupported(ref_expr, "a partially indexed event array")
    return target, e.sym, [flat_subscript(lw, subs, target.array)]


def lower_trigger(lw: Lowerer, s: ast.Trigger) -> None:
    for r in s.refs:
        ev, _, slots = _slots(lw, r)
        if isinstance(ev, (FutRef, FragRef)):
            lw.unsupported(r, "triggering a future")
        decl = lw.b.code.events[ev.index]
        ls = _laneset(lw)
        if ls not in decl.lanesets:
            decl.lanesets.append(ls)
        for slot in slots:
            lw.b.emit("TRIGGER", ev.index, slot)


def lower_wait(lw: Lowerer, s: ast.Wait) -> None:
    for r in s.refs:
        target, sym, slots = _slots(lw, r)
        if isinstance(target, FutRef):
            lower_future_wait(lw, target, sym)
            continue
        if isinstance(target, FragRef):
            lower_op_future_wait(lw, target)
            continue
        for slot in slots:
            lw.b.emit("WAIT_EVENT", target.index, slot)


def _laneset(lw: Lowerer) -> int:
    from .kernel import laneset
    return laneset(lw, lw.kernel, lw.ctx.guards)


TABLE = {ast.EventDecl: lower_event_decl, ast.Trigger: lower_trigger, ast.Wait: lower_wait}
