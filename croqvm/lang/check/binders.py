"""Names bound by ``parallel``, ``with`` and ``foreach`` (LANGUAGE.md §5.1, §6.2, §6.4).

A bound is a list of integers, one integer, or an mdspan; it yields one *item* per
dimension: ``(expr, dim)`` where ``expr`` is the expression the dimension comes from and
``dim`` its static value (types.Dim). Each sub-index gets a bounded symbol with
``bound_expr`` = that expression; when the expression is an mdspan,
``sym.info["bound_dim"]`` says which of its dimensions is the bound.
"""
from __future__ import annotations

from croqvm.lang.types import Bounded, ITuple, Mdspan

from .context import UNKNOWN
from .typerules import dim_of, is_integer, is_unknown, tname


def bound_items(ck, exprs, bad_type_message) -> list[tuple]:
    """``[(expr, dim, position_in_expr_or_None)]`` for the written bound expressions;
    ``bad_type_message(ty)`` words the error for a non-integer, non-mdspan bound."""
    items = []
    for b in exprs:
        ty = ck.expr(b)
        if isinstance(ty, Mdspan):
            items.extend((b, d, k) for k, d in enumerate(ty.shape))
        elif isinstance(ty, ITuple) and not ty.bounded:
            items.extend((b, None, k) for k in range(ty.rank))
        elif is_integer(ty):
            items.append((b, dim_of(b), None))
        elif is_unknown(ty):
            items.append((b, None, None))
        else:
            ck.error(b.span, bad_type_message(ty))
            items.append((b, None, None))
    return items


def declare_indices(ck, node, items, binder: str, skip=(), **fields) -> list:
    """Declare ``node.names`` (then ``node.tuple_name``) as bounded values; returns the
    symbols in the layout of ``PLevel.syms`` / ``Within.syms``. Names in ``skip`` were
    reported already: they get symbols outside every scope."""
    syms = []
    for i, name in enumerate(node.names):
        expr, dim, pos = items[i] if i < len(items) else (None, None, None)
        declare = ck.bad_symbol if name in skip else ck.declare
        sym = declare(name, "bounded", Bounded(dim), node, node.span, sub_index=i,
                      bound_expr=expr, **fields)
        sym.info["binder"] = binder
        if pos is not None:
            sym.info["bound_dim"] = pos
        if i >= len(items):
            sym.type = UNKNOWN  # count mismatch, already reported
        syms.append(sym)
    if node.tuple_name is not None:
        declare = ck.bad_symbol if node.tuple_name in skip else ck.declare
        sym = declare(node.tuple_name, "ituple", ITuple(len(node.names), bounded=True),
                         node, node.span, sub_index=len(node.names), **fields)
        sym.info["binder"] = binder
        syms.append(sym)
    return syms


def with_bound_message(ty) -> str:
    return f"expect a span type or int type, but got '{tname(ty)}'."
