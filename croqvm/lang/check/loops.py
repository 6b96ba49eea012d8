"""``with``, ``foreach``, ``while``, ``break`` and ``continue`` (LANGUAGE.md §5.5, §6.4,
§6.5)."""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.lang.types import Bounded, ITuple

from .binders import bound_items, declare_indices, with_bound_message
from .consteval import const_value
from .exprs import check_name, require_bool
from .typerules import is_bounded_like, is_integer, is_unknown, tname


def _bind_withins(ck, withins):
    for w in withins:
        items = bound_items(ck, w.bound, with_bound_message)
        if not w.braced and len(items) > 1:
            # ``idx in [a, b]``: one name for several dimensions binds the bounded ituple
            # ``idx`` (Croqtile: iteration.md); its elements are ``idx(0)``, ``idx(1)``...
            w.tuple_name = w.names[0]
            w.names = [f"{w.tuple_name}({k})" for k in range(len(items))]
            w.braced = True
        if len(w.names) != len(items) and not any(is_unknown(b.ty) for b in w.bound):
            names = ", ".join(f"i{k}" for k in range(len(items)))
            ck.error(w.span, f"un-matched with-matcher-count({len(w.names)}) and mdspan "
                             f"rank({len(items)}).",
                     hint=f"name every dimension, as in 'idx = {{{names}}} in ...'"
                     if len(items) > 1 else None)
        w.syms = declare_indices(ck, w, items, "with")


def check_with(ck, s: ast.With):
    with ck.scoped():
        _bind_withins(ck, s.withins)
        ck.body(s.body, joined=True)


def _loop_body(ck, body, joined=False):
    ck.loop_depth += 1
    try:
        ck.body(body, joined)
    finally:
        ck.loop_depth -= 1


def _range_bound(ck, expr, which):
    if expr is None:
        return 0
    ty = ck.expr(expr)
    if not is_unknown(ty) and not is_integer(ty):
        ck.error(expr.span, f"the {which} bound is not an integer.")
        return None
    value = const_value(expr)
    return value if isinstance(value, int) else None


def _check_range(ck, r: ast.Range, repeated: bool):
    """One ``[u =] t(lo:hi:step)`` of a ``foreach`` (§5.5.2-§5.5.3)."""
    ref = ast.Name(r.name, r.span)
    ty = check_name(ck, ref)
    sym = ref.sym
    r.var_sym = sym
    r.sym = sym
    lo, hi = _range_bound(ck, r.lo, "lower"), _range_bound(ck, r.hi, "upper")
    if sym is None or is_unknown(ty):
        return
    has_range = r.lo is not None or r.hi is not None or r.step is not None
    if not is_bounded_like(ty):
        ck.error(r.span, f"expect a bounded type for iteration variable '{r.name}' but got "
                         f"'{tname(ty)}'.")
        return
    if sym.info.get("binder") != "with":
        extra = " instead of 'parallel-by'" if sym.plevel is not None else ""
        ck.error(r.span, f"expect the bounded variable '{r.name}' to be declared by a "
                         f"'with' statement{extra}.")
        return
    if ck.outside_current_parallel(sym):  # D14: iterating modifies it
        ck.error(r.span, f"'{r.name}' is declared outside the parallel-by and can not be "
                         f"modified inside it.")
    if has_range and isinstance(ty, ITuple):
        ck.error(r.span, f"only bounded ints take ranges, but '{r.name}' is '{tname(ty)}'.")
    if (lo is not None and lo < 0) or (hi is not None and hi > 0):
        shown = ["?" if v is None else v for v in (lo, hi)]
        ck.error(r.span, f"range of '{r.name}' is invalid (lo {shown[0]}, hi {shown[1]}).",
                 hint="'lo' is a start (>= 0) and 'hi' an offset added to the bound (<= 0)")
    if r.step is not None and r.step <= 0:
        ck.error(r.span, f"the step of a range must be a positive integer (got {r.step}).")
    if r.new_name is not None:
        declare = ck.bad_symbol if repeated else ck.declare
        new = declare(r.new_name, "bounded", ty, r, r.span, sub_index=sym.sub_index,
                      bound_expr=sym.bound_expr)
        new.info["binder"] = "foreach"
        if "bound_dim" in sym.info:
            new.info["bound_dim"] = sym.info["bound_dim"]
        r.sym = new


def check_foreach(ck, s: ast.Foreach):
    """``foreach X in B`` = ``with X in B { foreach X }`` (§6.4.1)."""
    with ck.scoped():
        if s.withins:
            _bind_withins(ck, s.withins)
        seen = set()
        for r in s.ranges:
            repeated = r.new_name is not None and r.new_name in seen
            if repeated:
                ck.error(r.span, f"local iteration variable '{r.new_name}' is already used "
                                 f"in this foreach.")
            seen.add(r.new_name)
            _check_range(ck, r, repeated)
        if s.unroll:
            _check_unroll(ck, s)
        _loop_body(ck, s.body, joined=True)


def _check_unroll(ck, s: ast.Foreach):
    """``: unroll(k)`` may not exceed the static extent of the outermost loop
    (lib/semacheck.cpp)."""
    if s.withins:
        syms = s.withins[0].syms
    else:
        sym = s.ranges[0].var_sym
        syms = [sym] + list(getattr(sym.decl, "syms", []) if sym is not None and
                            isinstance(sym.type, ITuple) else [])
    bounds = [x.type.bound for x in syms if x is not None and isinstance(x.type, Bounded)]
    extent = bounds[0] if bounds else None
    if isinstance(extent, int) and s.unroll > extent:
        ck.error(s.span, f"unroll factor ({s.unroll}) exceeds the loop extent ({extent}).",
                 hint=f"use a factor of at most {extent}")


def check_while(ck, s: ast.While):
    require_bool(ck, ck.expr(s.cond), s.cond)
    _loop_body(ck, s.body)


def _jump(word):
    def check(ck, s):
        if ck.loop_depth == 0:
            ck.error(s.span, f"unable to {word} outside a loop.")
    return check


RULES = {
    ast.With: check_with,
    ast.Foreach: check_foreach,
    ast.While: check_while,
    ast.Break: _jump("break"),
    ast.Continue: _jump("continue"),
}
