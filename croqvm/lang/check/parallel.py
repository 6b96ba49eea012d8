"""``parallel`` and ``inthreads`` statements (LANGUAGE.md §6.2, §6.3, §6.7)."""
from __future__ import annotations

import math

from croqvm.core.limits import GRID_LIMIT_TAIL, MAX_CLUSTER, MAX_GRID, MAX_INT
from croqvm.lang import ast

from . import levels
from .binders import bound_items, declare_indices
from .consteval import const_value
from .exprs import require_bool
from .typerules import is_integer, is_unknown, tname
from .walk import value_names

MAX_SUB_INDICES = 3


def _check_bounds(ck, pl: ast.PLevel, kind: str, items):
    """§6.2.2-§6.2.3: counts of sub-indices and bounds; static bounds >= 1, that fit an
    'int' and, on a block level, CUDA's grid (§6.3.6)."""
    names = len(pl.names)
    if len(items) > MAX_SUB_INDICES:
        ck.error(pl.span, "The number of parallel dimensions is limited to 3 (x, y, z).")
    if names == 1 and pl.tuple_name is None and len(items) > 1:
        ck.error(pl.span, f"The parallel variable '{pl.names[0]}' can not be assigned "
                          f"multiple bounds.")
    elif names and names > len(items):
        ck.error(pl.span, f"parallel variables are more than their bounds ({names} vs. "
                          f"{len(items)}).")
    elif names and names < len(items):
        ck.error(pl.span, f"parallel variables are less than their bounds ({names} vs. "
                          f"{len(items)}).")
    for i, (expr, dim, _) in enumerate(items):
        value = const_value(expr) if isinstance(dim, int) else None
        if not isinstance(value, int):
            continue
        who = pl.names[i] if i < names else pl.tuple_name
        subject = f"the parallel bound of '{who}'" if who else "the parallel bound"
        if value < 1:
            ck.error(expr.span, f"{subject} is {value}: it should be greater than 0.")
        elif value > MAX_INT:
            ck.error(expr.span, f"{subject} is {value}: it does not fit in an 'int' (at most "
                                f"{MAX_INT}).")
        elif kind == "block" and i < len(MAX_GRID) and value > MAX_GRID[i]:
            ck.error(expr.span, f"{subject} is {value}: " +
                     GRID_LIMIT_TAIL.format(limit=MAX_GRID[i]))
    sizes = [const_value(e) for e, d, _ in items if isinstance(d, int)]
    if kind == "cluster" and all(isinstance(v, int) for v in sizes) and \
            math.prod(sizes) > MAX_CLUSTER:
        ck.error(pl.span, f"a cluster of {math.prod(sizes)} blocks is more than the "
                          f"{MAX_CLUSTER} a cluster may have.")


def _check_attrs(ck, p: ast.Parallel):
    """``[[launch_bounds(threads[, min_blocks[, max_cluster]])]]`` and ``[[maxnreg(n)]]``
    (§6.2.5): on a block level only, compile-time integers (lib/earlysema.cpp,
    lib/semacheck.cpp); ``_`` for the thread count means the kernel's block size."""
    for a in p.attrs:
        where = f"[[{a.name}]]"
        if p.kinds[0] != "block":
            ck.error(a.span, f"{where} is only valid on block-level parallel-by.")
        if a.name == "launch_bounds" and not 1 <= len(a.args) <= 3:
            ck.error(a.span, f"{where} expects 1 to 3 integer arguments, but got "
                             f"{len(a.args)}.")
            continue
        values = []
        for i, arg in enumerate(a.args):
            if isinstance(arg, ast.Wildcard) and a.name == "launch_bounds" and i == 0:
                values.append(0)
                continue
            ty = ck.expr(arg)
            if is_unknown(ty):
                continue
            if not is_integer(ty):
                ck.error(arg.span, f"{where} argument must be an integer but got "
                                   f"'{tname(ty)}'.")
                continue
            value = const_value(arg)
            if not isinstance(value, int):
                ck.error(arg.span, f"{where} argument must be a compile-time integer "
                                   f"constant.")
            elif a.name == "maxnreg" and value <= 0:
                ck.error(arg.span, f"{where} argument must be a positive integer.")
            elif value < 0:
                ck.error(arg.span, f"{where} argument must be a non-negative integer.")
            elif i > 0 and value == 0:
                ck.error(arg.span, f"{where} minBlocks/maxCluster must be positive (use 0 "
                                   f"only for maxThreadsPerBlock to auto-compute).")
            else:
                values.append(value)
        if len(values) == len(a.args):
            if a.name == "maxnreg":
                p.maxnreg = values[0]
            else:
                p.launch_bounds = values


def _parallel_bound_message(ty):
    return f"the parallel bound requires integers but got '{tname(ty)}'."


def check_parallel(ck, p: ast.Parallel):
    kernel = not ck.in_parallel
    nodes = levels.normalise_kernel(ck, p) if kernel else None
    if p.kinds is None:  # a region the kernel walk did not reach: keep going quietly
        p.kinds = ["thread"] * len(p.levels)
    if not kernel and p.is_async:
        ck.error(p.span, "inner parallel-by level can not be asynchronous.")
    _check_attrs(ck, p)
    for pl, kind in zip(p.levels, p.kinds):
        if pl.cooperative and (kind != "block" or not kernel):
            ck.warning(pl.span, "'cooperative' annotation is only valid on block-level "
                                "parallel-by; ignoring.")
        elif pl.cooperative:
            p.cooperative = True
    if p.stream is not None:
        sym = ck.lookup(p.stream)
        if sym is None or sym.kind != "stream":
            ck.error(p.span, f"'{p.stream}' is not a stream parameter.")
        elif not kernel:
            ck.error(p.span, "only a kernel, the outermost parallel-by, runs on a stream.",
                     f"put '<{p.stream}>' on the parallel-by that encloses this one")
        else:
            p.stream_param = sym.param_index
    # Bounds are evaluated when the statement starts, outside its own names (§6.2.2).
    all_items = []
    for pl, kind in zip(p.levels, p.kinds):
        items = bound_items(ck, pl.bounds, _parallel_bound_message)
        _check_bounds(ck, pl, kind, items)
        all_items.append(items)
    with ck.scoped():
        ck.parallels.append(p)
        seen: set[str] = set()
        for pl, kind, items in zip(p.levels, p.kinds, all_items):
            repeated = set()
            for name in pl.names + ([pl.tuple_name] if pl.tuple_name else []):
                if name in seen:
                    ck.error(pl.span, f"The parallel variable '{name}' has been used in "
                                      f"the same parallelby block.")
                    repeated.add(name)
                seen.add(name)
            pl.syms = declare_indices(ck, pl, items, "parallel", skip=repeated, level=kind,
                                      plevel=pl)
            ck.levels.append((kind, pl))
        saved = ck.loop_depth, ck.inthreads
        ck.loop_depth, ck.inthreads = 0, []
        try:
            ck.body(p.body, joined=True)
        finally:
            ck.loop_depth, ck.inthreads = saved
            del ck.levels[len(ck.levels) - len(p.levels):]
            ck.parallels.pop()
    if kernel:
        levels.check_kernel_sizes(ck, p, nodes)


# --------------------------------------------------------------------------- inthreads

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
NOT_DIVERGENT = "inthreads' predicate must be strictly divergent."
_ALLOWED_NODES = (ast.IntLit, ast.FloatLit, ast.BoolLit, ast.Name, ast.Binary, ast.Unary,
                  ast.Ternary, ast.Call, ast.Element, ast.Convert, ast.Extent, ast.SpanOf)
# The sub-expressions of an allowed node that must be allowed nodes too. The other allowed
# nodes are leaves here: what ``#x`` and ``a.span`` are written over is not restricted.
_OPERANDS = {
    ast.Binary: lambda n: [n.lhs, n.rhs],
    ast.Unary: lambda n: [n.operand],
    ast.Ternary: lambda n: [n.cond, n.then, n.other],
    ast.Call: lambda n: n.args,
    ast.Element: lambda n: [n.base, *n.args],
    ast.Convert: lambda n: [n.operand],
}


def _is_parallel_var(e) -> bool:
    return isinstance(e, ast.Name) and e.sym is not None and e.sym.plevel is not None


def _launch_constant(sym) -> bool:
    """croqvm evaluates the non-parallel side once per launch (§6.7.1), so it may read only
    values fixed at launch."""
    return (sym.kind == "dim" or sym.param_index is not None
            or (sym.kind in ("scalar", "bounded") and sym.parallel is None))


def _divergence_problem(e):
    """None when ``e`` is strictly divergent, else ``(message, hint)``."""
    if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
        return _divergence_problem(e.lhs) or _divergence_problem(e.rhs)
    if not (isinstance(e, ast.Binary) and e.op in COMPARISONS):
        return NOT_DIVERGENT, "join comparisons such as 'p == 0' with '&&' or '||'"
    left, right = _is_parallel_var(e.lhs), _is_parallel_var(e.rhs)
    if left == right:
        return NOT_DIVERGENT, ("compare one parallel variable of an enclosing level with an "
                               "expression free of parallel variables")
    other = e.rhs if left else e.lhs
    stack = [other]
    while stack:
        n = stack.pop()
        if not isinstance(n, _ALLOWED_NODES):
            return _restricted(f"'{type(n).__name__}' is not one")
        operands = _OPERANDS.get(type(n))
        if operands is not None:
            stack += operands(n)
    for n in value_names(other):
        if n.sym is not None and not _launch_constant(n.sym):
            return _restricted(f"'{n.id}' is not one")
    return None


def _restricted(what):
    return (NOT_DIVERGENT[:-1] + ": croqvm allows only literals, symbolic dimensions, "
            "parameters and host-level scalars beside the parallel variable.",
            f"{what}; compute the value at host level before the parallel-by")


def check_inthreads(ck, s: ast.Inthreads):
    require_bool(ck, ck.expr(s.cond), s.cond)
    if not ck.in_parallel:
        ck.error(s.cond.span, "inthreads can not be declared in global scope.")
    else:
        if s.is_async and ck.inthreads:
            ck.error(s.cond.span, "inner inthreads can not be declared as async.")
        problem = _divergence_problem(s.cond)
        if problem is not None:
            ck.error(s.cond.span, problem[0], hint=problem[1])
    ck.inthreads.append(s)
    ck.inthreads_total += 1
    try:
        ck.body(s.body)
    finally:
        ck.inthreads.pop()
        ck.inthreads_total -= 1


RULES = {
    ast.Parallel: check_parallel,
    ast.Inthreads: check_inthreads,
}
