"""Blocks, ``if``, ``yield``, ``return``, ``sync``, ``print`` and ``assert``
(LANGUAGE.md §6.5, §6.8, §6.9, §13.2)."""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.lang.types import Bounded, Buffer, ITuple, Mdspan, Scalar, String, View

from .consteval import const_value
from .context import Unknown
from .exprs import require_bool
from .typerules import tname

PRINTABLE = (Scalar, Bounded, ITuple, Mdspan, String, Unknown)  # §13.2


def check_block(ck, s: ast.Block):
    ck.body(s)


def check_if(ck, s: ast.If):
    require_bool(ck, ck.expr(s.cond), s.cond)
    ck.body(s.then)
    if s.other is not None:
        ck.body(s.other)


def check_yield(ck, s: ast.Yield):
    if not ck.in_parallel:
        ck.error(s.span, "unable to yield outside the parallel-by block(s).")


def check_return(ck, s: ast.Return):
    ty = ck.expr(s.value) if s.value is not None else None
    if ck.in_parallel:
        ck.error(s.span, "unable to return inside the parallel-by block(s).")
        return
    ck.returns.append((s, ty))


def check_print(ck, s: ast.Print):
    for arg in s.args:
        ty = ck.expr(arg)
        if not isinstance(ty, PRINTABLE):
            ck.error(arg.span, f"can not print a value of type '{tname(ty)}'.",
                     _element_loop(arg, ty) if isinstance(ty, (Buffer, View)) else None)


def _element_loop(arg, ty) -> str:
    """The hint for printing a buffer: a loop over its elements, written with its name
    and one index per dimension."""
    name = arg.id if isinstance(arg, ast.Name) else "b"
    index = ", ".join("ijklmn"[d] if d < 6 else f"i{d}" for d in range(ty.rank))
    loop = index if ty.rank == 1 else "{" + index + "}"
    return (f"print the elements one by one: 'foreach {loop} in [...] "
            f"println({name}.at({index}));'")


def check_assert(ck, s: ast.Assert):
    require_bool(ck, ck.expr(s.cond), s.cond)
    if const_value(s.cond) is False:
        ck.error(s.span, f"assertion failed: {s.message}")


_SYNC_LEVELS = ("block", "group-4", "group", "thread")


def check_sync(ck, s: ast.Sync):
    """§6.8: barriers inside ``parallel``; ``sync.global`` on the host."""
    if s.kind == "global":
        if ck.in_parallel:
            ck.error(s.span, "'sync.global' can only be used outside parallel-by.")
        return
    if not ck.in_parallel:
        ck.error(s.span, f"'sync.{s.kind}' must be inside parallel-by.")
    if s.kind in ("barrier", "fence") and s.level not in _SYNC_LEVELS:
        ck.error(s.span, f"'sync.{s.kind}' needs a level: block, group-4, group or thread.")


def check_builtin_stmt(ck, s: ast.BuiltinStmt):
    ck.expr(s.call)


RULES = {
    ast.BuiltinStmt: check_builtin_stmt,
    ast.Block: check_block,
    ast.Empty: lambda ck, s: None,
    ast.If: check_if,
    ast.Yield: check_yield,
    ast.Return: check_return,
    ast.Print: check_print,
    ast.Assert: check_assert,
    ast.Sync: check_sync,
}
