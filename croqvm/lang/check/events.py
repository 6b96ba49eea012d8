"""Events, ``trigger`` and ``wait`` (LANGUAGE.md §10.1-§10.2, §10.6-§10.7, §9.5 for waits on
futures)."""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.lang import ast
from croqvm.lang.types import Event, Future, OpFuture

from . import dma
from .consteval import const_value
from .typerules import UNKNOWN, is_integer, is_unknown, tname


@dataclass
class EventFacts:
    first_wait: dict = field(default_factory=dict)  # Symbol -> span of its first wait
    triggered: set = field(default_factory=set)
    first_trigger: dict = field(default_factory=dict)  # Symbol -> span of its first trigger
    scope_of: dict = field(default_factory=dict)    # Symbol -> whether trigger.cluster names it


def facts(ck) -> EventFacts:
    return ck.fact("events", EventFacts)


def _positive_constant(ck, expr, what):
    ck.expr(expr)
    value = const_value(expr)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        ck.error(expr.span, f"{what} must be a positive integer constant.")
        return 1
    return value


def check_event_decl(ck, d: ast.EventDecl):
    """Only ``shared`` events, inside ``parallel``, not inside ``inthreads`` (§10.1)."""
    if d.storage != "shared":
        ck.error(d.span, f"'{d.storage or 'local'}' events are not supported by croqvm.",
                 hint="declare it 'shared event'")
    elif not ck.in_parallel:
        for item in d.items:
            ck.error(item.span, f"shared variable '{item.name}' must be declared inside "
                                f"parallel-by.")
    if ck.inthreads_total:
        ck.error(d.span, "events can not be declared inside inthreads.",
                 hint="declare the event in the enclosing parallel-by")
    if d.count is not None:
        _positive_constant(ck, d.count, "the arrival count of 'event<N>'")
    for item in d.items:
        array = tuple(_positive_constant(ck, x, f"the size of event array '{item.name}'")
                      for x in item.array)
        # an event of an enclosing scope is shadowed, as every name is (§3.4.4, §10.1)
        item.sym = ck.declare(item.name, "event", Event(array), item, item.span)
        item.sym.info["ready"] = item.ready


def _ref_name(ref) -> str:
    while isinstance(ref, (ast.Index, ast.EventAt)):
        ref = ref.base
    return ref.id if isinstance(ref, ast.Name) else "<expression>"


def _ref_symbol(ref):
    while isinstance(ref, (ast.Index, ast.EventAt)):
        ref = ref.base
    return ref.sym if isinstance(ref, ast.Name) else None


def _direct_step(e) -> bool:
    """Whether ``e`` is ``x++``, ``++x``, ``x--`` or ``--x``."""
    return isinstance(e, (ast.Unary, ast.Postfix)) and e.op in ("++", "--")


def _steps(e) -> bool:
    """Whether ``e`` contains an increment or decrement anywhere."""
    children = [v for v in ast.field_values(e) if isinstance(v, ast.Expr)]
    children += [x for v in ast.field_values(e) if isinstance(v, list)
                 for x in v if isinstance(x, ast.Expr)]
    return _direct_step(e) or any(_steps(c) for c in children)


def check_event_at(ck, e: ast.EventAt):
    """``e.at(order)`` (§10.6): slot ``order % N``, phase ``order / N % 2`` of ``event[N]``;
    the rules of lib/earlysema.cpp."""
    base = ck.expr(e.base)
    if not is_unknown(base) and (not isinstance(base, Event) or not base.array):
        ck.error(e.span, "'.at(order)' requires an event array.")
        base = None
    elif not is_unknown(base) and len(base.array) != 1:
        ck.error(e.span, "'.at(order)' requires a one-dimensional event array.")
        base = None
    if _steps(e.order) and not _direct_step(e.order):
        ck.error(e.order.span, "an event order update must be the direct '.at' argument; "
                               "use '.at(order++)' or update the order separately.")
        return UNKNOWN
    order = ck.expr(e.order)
    if not is_unknown(order) and not is_integer(order):
        ck.error(e.order.span, "event order must be an integer expression.")
        return UNKNOWN
    if base is None or is_unknown(base) or is_unknown(order):
        return UNKNOWN
    return Event(())


def _ref_type(ck, ref):
    if isinstance(ref, ast.EventAt):
        ref.ty = check_event_at(ck, ref)
        return ref.ty
    return ck.expr(ref)


def check_trigger(ck, s: ast.Trigger):
    if s.cluster:
        _check_cluster_scope(ck, s)
    for ref in s.refs:
        ty = _ref_type(ck, ref)
        if is_unknown(ty):
            continue
        if not isinstance(ty, Event):
            ck.error(ref.span, f"expect `{_ref_name(ref)}' an event but got '{tname(ty)}'.")
            continue
        sym = _ref_symbol(ref)
        facts(ck).triggered.add(sym)
        facts(ck).first_trigger.setdefault(sym, ref.span)
        _check_one_scope(ck, s, ref, sym)
    if s.after and not s.cluster:
        _check_after(ck, s)


def _check_cluster_scope(ck, s: ast.Trigger):
    """``trigger.cluster`` (§10.8) arrives in every block of the kernel's cluster: it needs
    a ``cluster`` level, and publishes no async copies."""
    kernel = ck.parallels[0] if ck.parallels else None
    if kernel is not None and kernel.kinds and kernel.kinds[0] != "cluster":
        ck.error(s.span, "'trigger.cluster' arrives at the event in every block of the "
                         "cluster, but this kernel has no 'cluster' level.",
                 hint="write 'parallel c by C : cluster, b by B : block { ... }', or use "
                      "'trigger' to arrive in the lane's own block")
    if s.after:
        ck.error(s.after[0].span, "'trigger.cluster' can not publish async copies with "
                                  "'after': the copies land in the lane's own block only.",
                 hint="wait for the copies and trigger a block-scope event with "
                      "'trigger e after f;'")


def _check_one_scope(ck, s: ast.Trigger, ref, sym):
    """An event is triggered either with ``trigger.cluster`` or with ``trigger``: the
    arrivals of a generation are counted for the whole cluster or for one block (§10.8)."""
    if facts(ck).scope_of.setdefault(sym, s.cluster) != s.cluster:
        ck.error(ref.span, f"event '{sym.name}' is triggered both by 'trigger.cluster' and "
                           f"by 'trigger'.",
                 hint="a generation of an event that 'trigger.cluster' names counts the "
                      "arrivals of every block of the cluster; trigger it only with "
                      "'trigger.cluster'")


def _check_after(ck, s: ast.Trigger):
    """``trigger e after f0, f1`` (§10.7): binds the completion of async copies to one
    event slot; the rules and wording of lib/semacheck.cpp and lib/earlysema.cpp."""
    ref = s.refs[0]
    if len(s.refs) != 1 or (isinstance(ref.ty, Event) and ref.ty.array):
        ck.error(s.span, "trigger-after requires exactly one shared event that can be bound "
                         "to native async completion.",
                 hint="name one event slot, e.g. 'trigger full[s] after f;'")
    if len(s.after) > 1 and isinstance(ref, ast.EventAt) and _direct_step(ref.order):
        ck.error(ref.order.span, "an incremented event order cannot be shared by multiple "
                                 "trigger-after dependencies; advance the order in a "
                                 "separate statement after the joined trigger.")
    for dep in s.after:
        if not isinstance(dep, ast.Name):
            ck.error(dep.span, "trigger-after currently requires a named future.")
            continue
        ty = ck.expr(dep)
        if is_unknown(ty):
            continue
        if not isinstance(ty, Future):
            ck.error(dep.span, f"trigger-after dependency '{dep.id}' must be an async future, "
                               f"but got '{tname(ty)}'.")
            continue
        dma.note_bind(ck, dep, dep.sym)


def check_wait(ck, s: ast.Wait):
    """``wait`` takes futures (§9.5) and events (§10.3, §10.6), left to right."""
    for ref in s.refs:
        ty = _ref_type(ck, ref)
        sym = _ref_symbol(ref)
        if is_unknown(ty) or sym is None:
            continue
        if isinstance(ty, Future) and isinstance(ref, ast.Name):
            dma.note_wait(ck, ref, sym)
        elif isinstance(ty, OpFuture) and isinstance(ref, ast.Name):
            _observe(ck, ref, sym)
        elif isinstance(ty, Event):
            facts(ck).first_wait.setdefault(sym, s.span)
        else:
            ck.error(ref.span, f"'{_ref_name(ref)}' of type \"{tname(ty)}\" can not be "
                               f"waited.")


def _observe(ck, ref, sym):
    """An operation future has one wait statement in a function (§11.5; lib/semacheck.cpp
    ``ObserveAsyncFuture``): to tell several consumers, wait once and trigger an event."""
    if sym.info.get("waited_at") is not None:
        ck.error(ref.span, f"wait observes future '{sym.name}' more than once.",
                 hint="an operation future is waited at one place; to tell several "
                      "consumers, wait once and trigger an event after the wait")
        return
    sym.info["waited_at"] = ref.span
    dma.facts(ck).waited.add(sym)


def finish(ck):
    """§10.2: an event that is waited must be triggered somewhere or start ``ready``; one
    that is triggered but never waited orders nothing, which is worth a warning."""
    f = facts(ck)
    for sym, span in f.first_wait.items():
        if sym not in f.triggered and not sym.info.get("ready"):
            ck.error(span, f"event '{sym.name}' is waited but never triggered.")
    for sym, span in f.first_trigger.items():
        if sym not in f.first_wait:
            ck.warning(span, f"event '{sym.name}' is triggered but never waited: its "
                             f"triggers order nothing.",
                       hint=f"the lanes that read what the trigger publishes should "
                            f"'wait {sym.name}' first")


RULES = {
    ast.EventDecl: check_event_decl,
    ast.Trigger: check_trigger,
    ast.Wait: check_wait,
}
