"""Events, ``trigger`` and ``wait`` (LANGUAGE.md §10.1-§10.2, §9.5 for waits on futures)."""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.lang import ast
from croqvm.lang.types import Event, Future, OpFuture

from . import dma
from .consteval import const_value
from .typerules import is_unknown, tname


@dataclass
class EventFacts:
    first_wait: dict = field(default_factory=dict)  # Symbol -> span of its first wait
    triggered: set = field(default_factory=set)


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
        item.sym = ck.declare(item.name, "event", Event(array), item, item.span)
        item.sym.info["ready"] = item.ready


def _ref_name(ref) -> str:
    while isinstance(ref, ast.Index):
        ref = ref.base
    return ref.id if isinstance(ref, ast.Name) else "<expression>"


def _ref_symbol(ref):
    while isinstance(ref, ast.Index):
        ref = ref.base
    return ref.sym if isinstance(ref, ast.Name) else None


def check_trigger(ck, s: ast.Trigger):
    for ref in s.refs:
        ty = ck.expr(ref)
        if is_unknown(ty):
            continue
        if not isinstance(ty, Event):
            ck.error(ref.span, f"expect `{_ref_name(ref)}' an event but got '{tname(ty)}'.")
            continue
        facts(ck).triggered.add(_ref_symbol(ref))


def check_wait(ck, s: ast.Wait):
    """``wait`` takes futures (§9.5) and events (§10.3), left to right."""
    for ref in s.refs:
        ty = ck.expr(ref)
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
    """§10.2: an event that is waited must be triggered somewhere or start ``ready``."""
    f = facts(ck)
    for sym, span in f.first_wait.items():
        if sym not in f.triggered and not sym.info.get("ready"):
            ck.error(span, f"event '{sym.name}' is waited but never triggered.")


RULES = {
    ast.EventDecl: check_event_decl,
    ast.Trigger: check_trigger,
    ast.Wait: check_wait,
}
