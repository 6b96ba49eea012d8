"""Blocks, ``if``, ``yield``, ``return``, ``sync``, ``print`` and ``assert``
(LANGUAGE.md §6.5, §6.8, §6.9, §13.2)."""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.core.limits import MAX_BLOCK_SIZE, NAMED_BARRIERS, WARP_SIZE
from croqvm.lang.types import Bounded, Buffer, ITuple, Mdspan, Scalar, String, View

from .consteval import const_value
from .context import Unknown
from .exprs import require_bool
from .typerules import is_integer, is_unknown, tname

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
    # Croqtile: cooperative-launch.md; lib/semacheck.cpp
    s.grid = s.kind == "barrier" and s.level == "block" and ck.in_parallel and \
        ck.parallels[0].cooperative


def check_builtin_stmt(ck, s: ast.BuiltinStmt):
    ck.expr(s.call)


def check_named_barrier(ck, s: ast.NamedBarrier):
    """§6.8: ``__bar_sync(id, count)`` / ``__bar_arrive(id, count)`` inside parallel-by,
    integers both; a constant id is 1-15 (0 is the block barrier) and a constant count a positive multiple of 32
    within a block (the engines check the rest when the statement runs)."""
    name = "__bar_arrive" if s.arrive else "__bar_sync"
    if not ck.in_parallel:
        ck.error(s.span, f"'{name}' must be inside parallel-by.")
    if len(s.args) != 2:
        for arg in s.args:
            ck.expr(arg)
        ck.error(s.span, f"'{name}' expects 2 arguments (barrier id, thread count) but got "
                         f"{len(s.args)}.", f"write '{name}(id, count)': a barrier id 1-15 "
                                            "and the number of threads it waits for")
        return
    for arg, what in zip(s.args, ("barrier id", "thread count")):
        ty = ck.expr(arg)
        if not is_unknown(ty) and not is_integer(ty):
            ck.error(arg.span, f"the {what} of '{name}' must be an integer but got "
                               f"'{tname(ty)}'.")
    bar_id, count = (const_value(a) for a in s.args)
    if isinstance(bar_id, int) and not 1 <= bar_id < NAMED_BARRIERS:
        ck.error(s.args[0].span, f"'{name}' can not use named barrier {bar_id}: ids are 1 to "
                                 f"{NAMED_BARRIERS - 1}.",
                 "barrier 0 is the block barrier of 'sync.shared' and of the barriers croqvm "
                 "inserts" if bar_id == 0 else None)
    if isinstance(count, int) and ck.in_parallel:
        kernel = ck.parallels[0]
        kernel.named_counts = kernel.named_counts + ((s, count),)
    if isinstance(count, int) and (count <= 0 or count % WARP_SIZE or count > MAX_BLOCK_SIZE):
        ck.error(s.args[1].span, f"'{name}' can not wait for {count} threads: the count must "
                                 f"be a positive multiple of {WARP_SIZE} and at most "
                                 f"{MAX_BLOCK_SIZE}.",
                 "a warp arrives for all of its 32 threads: count the threads of the warps "
                 "that reach the barrier")


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
    ast.NamedBarrier: check_named_barrier,
}
