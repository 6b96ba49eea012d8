"""Shared events, ``trigger`` and ``wait`` (LANGUAGE.md §10; docs/EXECUTION.md §11).

Each event declaration gets an ``EventDecl`` per name with its slot count; its arrival
count is ``event<N>``'s N, else the size of the union of the lanesets of every ``trigger``
statement naming it (§10.2), which the engine evaluates when a block starts. A whole
array in ``trigger``/``wait`` acts on each slot in index order (§10.1).

``e.at(order)`` (§10.6) evaluates ``order`` once, as s64: a trigger arrives at slot
``order % N`` (a TRIGGER of that slot; a negative order is passed on as the slot, which
faults), a wait is a WAIT_EVENT_AT of the order, which the engine turns into the slot and
the parity. ``trigger e after f0, f1`` (§10.7) is one FUT_BIND per future followed by the
TRIGGER that publishes them. ``trigger.cluster e`` (§10.8) is a TRIGGER_CLUSTER per slot,
and marks ``e``'s declaration as counting the arrivals of the whole cluster.
"""
from __future__ import annotations

from math import prod

from croqvm.core import dtypes
from croqvm.bytecode.module import EventDecl
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value

from .dma import lower_future_wait
from .exprs import lower_as
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


def _order(lw: Lowerer, at: ast.EventAt):
    """``(event, s64 order register)`` of ``e.at(order)``."""
    target = lw.lookup(at.base.sym, at.base)
    return target, lower_as(lw, at.order, dtypes.S64)


def _slots(lw: Lowerer, ref_expr: ast.Expr):
    """``(target, [slot registers])`` of ``e``, ``e[i]``, ``e[i][j]``, ``e.at(order)`` or a
    future name."""
    if isinstance(ref_expr, ast.EventAt):
        ev, order = _order(lw, ref_expr)
        # slot order % N; a negative order stays negative, so that TRIGGER faults on it as
        # WAIT_EVENT_AT does
        b = lw.b
        wrapped = b.op("MOD", dtypes.S64, order, b.load_const(dtypes.S64, ev.array[0]))
        negative = b.op("LT", dtypes.BOOL, order, b.load_const(dtypes.S64, 0))
        slot = b.op("SELECT", dtypes.S64, negative, order, wrapped)
        return ev, None, [b.convert(slot, dtypes.S32)]
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
    if s.cluster and lw.kernel.par.cooperative:
        lw.unsupported(s, "'trigger.cluster' in a cooperative launch")
    for r in s.refs:
        ev, _, slots = _slots(lw, r)
        if isinstance(ev, (FutRef, FragRef)):
            lw.unsupported(r, "triggering a future")
        decl = lw.b.code.events[ev.index]
        ls = _laneset(lw)
        if ls not in decl.lanesets:
            decl.lanesets.append(ls)
        for dep in s.after:
            lw.b.emit("FUT_BIND", lw.lookup(dep.sym, dep).slot)
        decl.cluster = s.cluster
        for slot in slots:
            lw.b.emit("TRIGGER_CLUSTER" if s.cluster else "TRIGGER", ev.index, slot)


def lower_wait(lw: Lowerer, s: ast.Wait) -> None:
    for r in s.refs:
        if isinstance(r, ast.EventAt):
            ev, order = _order(lw, r)
            lw.b.emit("WAIT_EVENT_AT", ev.index, order)
            continue
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
