"""Parallel levels: normalisation and limits (LANGUAGE.md §6.2-§6.3, D15).

A kernel's levels form a tree: the levels of one ``parallel`` statement are a chain, and
each nested ``parallel`` hangs below the last level of the statement enclosing it.
``normalise_kernel`` gives every level its kind before the body is checked (symbols need
it); ``check_kernel_sizes`` runs after the body, when the bounds are typed, and checks the
instance counts that are known statically.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.lang import ast
from croqvm.core.limits import MAX_BLOCK_SIZE, TOO_MANY_THREADS, UNIT_OF_LEVEL, WARP_SIZE
from croqvm.lang.types import Mdspan

from .consteval import const_value
from .walk import nested_parallels

ORDER = {"cluster": -1, "block": 0, "group-4": 1, "group": 2, "thread": 3}  # outer -> inner
DEFAULT_ROWS = {1: ("thread",), 2: ("block", "thread"), 3: ("block", "group", "thread")}
MAX_DEPTH = 3


@dataclass(eq=False)
class LevelNode:
    plevel: ast.PLevel
    parallel: ast.Parallel
    parent: LevelNode | None
    depth: int
    children: list = field(default_factory=list)
    kind: str = "thread"


def level_tree(kernel: ast.Parallel) -> list[LevelNode]:
    nodes: list[LevelNode] = []

    def add(par, parent, depth):
        for pl in par.levels:
            node = LevelNode(pl, par, parent, depth)
            if parent is not None:
                parent.children.append(node)
            nodes.append(node)
            parent, depth = node, depth + 1
        for inner in nested_parallels(par.body):
            add(inner, parent, depth)

    add(kernel, None, 0)
    return nodes


def _has_annotated_below(node: LevelNode) -> bool:
    return any(c.plevel.level is not None or _has_annotated_below(c) for c in node.children)


def _default_kinds(ck, nodes) -> bool:
    """§6.3.2: no level annotated; the kinds of row D by depth."""
    depth = max(n.depth for n in nodes) + 1
    ok = depth <= MAX_DEPTH
    if not ok:
        deepest = next(n for n in nodes if n.depth == MAX_DEPTH)
        ck.error(deepest.plevel.span, f"too many parallel-by levels: {depth} > {MAX_DEPTH}.")
    row = DEFAULT_ROWS[min(depth, MAX_DEPTH)]
    for n in nodes:
        n.kind = row[min(n.depth, len(row) - 1)]
    return ok


def _mixed_kinds(ck, nodes) -> bool:
    """D15: an unannotated innermost level directly inside an annotated one is 'thread';
    an unannotated kernel level enclosing annotated ones is 'block'."""
    ok = True
    for n in nodes:
        if n.plevel.level is not None:
            n.kind = n.plevel.level
        elif not n.children and n.parent is not None and n.parent.plevel.level is not None:
            n.kind = "thread"
        elif n.depth == 0 and _has_annotated_below(n):
            n.kind = "block"
        else:
            ck.error(n.plevel.span,
                     "unable to infer the parallel-by level(s) between thread and block.",
                     hint="annotate this level with ': block', ': group-4', ': group' or "
                          "': thread'")
            ok = False
    return ok


def _check_order(ck, nodes) -> bool:
    """§6.3.1: levels strictly descend along every path; no 'group' in 'group-4'."""
    ok = True
    for n in nodes:
        if n.kind == "cluster" and (n.parent is not None or len(n.children) != 1 or
                                    n.children[0].kind != "block" or
                                    n.children[0].parallel is not n.parallel):
            ck.error(n.plevel.span, "a 'cluster' level must be the outermost level of a "
                                    "kernel, directly around its 'block' level.",
                     "write 'parallel c by C : cluster, b by B : block { ... }', or a "
                     "'cluster' parallel-by whose body is only the 'block' one")
            ok = False
            continue
        if n.parent is None:
            continue
        outer, inner = n.parent.kind, n.kind
        if outer == "group-4" and inner == "group":
            ck.error(n.plevel.span,
                     "explicit 'group' inside the 'group-4' parallel-by is not supported.")
            ok = False
        elif ORDER[inner] <= ORDER[outer]:
            ck.error(n.plevel.span,
                     f"parallel-by level '{outer}' can not enclose level '{inner}'.")
            ok = False
    return ok


def normalise_kernel(ck, kernel: ast.Parallel) -> list[LevelNode]:
    """Set ``kinds`` and ``is_kernel`` on the kernel and every nested ``parallel``.
    Returns the level tree, or [] when the kinds could not be inferred or are out of
    order (reported): sizes are then not checked."""
    nodes = level_tree(kernel)
    if not nodes:
        kernel.kinds, kernel.is_kernel = [], True
        return nodes
    if any(n.plevel.level is not None for n in nodes):
        inferred = _mixed_kinds(ck, nodes)
    else:
        inferred = _default_kinds(ck, nodes)
    valid = inferred and _check_order(ck, nodes)
    kinds: dict[int, list] = {}
    pars: dict[int, ast.Parallel] = {}
    for n in nodes:
        kinds.setdefault(id(n.parallel), []).append(n.kind)
        pars[id(n.parallel)] = n.parallel
    for key, par in pars.items():
        par.kinds = kinds[key]
        par.is_kernel = par is kernel
    return nodes if valid else []


# --------------------------------------------------------------------------- sizes


def instances(pl: ast.PLevel):
    """The number of instances of a level when known statically, else None."""
    total = 1
    for b in pl.bounds:
        ty = getattr(b, "ty", None)
        dims = ty.shape if isinstance(ty, Mdspan) else (const_value(b),)
        for d in dims:
            if not isinstance(d, int) or isinstance(d, bool):
                return None
            total *= d
    return total


def _lanes(leaf: LevelNode):
    """Lanes a nest needs in one block (§6.3.4), or None when not static."""
    lanes = 1
    node = leaf
    while node is not None:
        count = instances(node.plevel)
        inside_unit = node.parent is not None and node.parent.kind in UNIT_OF_LEVEL
        if node.kind in UNIT_OF_LEVEL:
            lanes = None if count is None or lanes is None else lanes * count * \
                UNIT_OF_LEVEL[node.kind].lanes
        elif node.kind == "thread" and not inside_unit:
            lanes = None if count is None or lanes is None else lanes * count
        node = node.parent
    return lanes


def check_kernel_sizes(ck, kernel: ast.Parallel, nodes: list[LevelNode]):
    """§6.3.3: an explicit 'thread' inside 'group'/'group-4' has 32/128 instances (an
    inferred one at most that many); §6.3.6: at most 1024 threads per block."""
    for n in nodes:
        if n.kind == "thread" and n.parent is not None and n.parent.kind in UNIT_OF_LEVEL:
            want, got = UNIT_OF_LEVEL[n.parent.kind].lanes, instances(n.plevel)
            if got is None:
                continue
            if n.plevel.level is not None and got != want:
                ck.error(n.plevel.span, f"a 'thread' level inside '{n.parent.kind}' must "
                                        f"have exactly {want} instances (got {got}).")
            elif got > want:  # an inferred level may leave lanes idle (D16), not overflow
                ck.error(n.plevel.span, f"a 'thread' level inside '{n.parent.kind}' can "
                                        f"have at most {want} instances (got {got}).")
    sizes = [_lanes(n) for n in nodes if not n.children]
    known = [s for s in sizes if s is not None]
    if known and max(known) > MAX_BLOCK_SIZE:
        ck.error(kernel.span, TOO_MANY_THREADS,
                 hint=f"this kernel needs {max(known)} threads per block")
    elif known and len(known) == len(sizes):
        _check_named_counts(ck, kernel, -(-max(known) // WARP_SIZE) * WARP_SIZE)


def _check_named_counts(ck, kernel: ast.Parallel, threads: int):
    """§6.8: a constant named-barrier count within the block's warps, when its size is
    known."""
    for s, count in kernel.named_counts:
        if WARP_SIZE <= count <= MAX_BLOCK_SIZE and count % WARP_SIZE == 0 and count > threads:
            name = "__bar_arrive" if s.arrive else "__bar_sync"
            ck.error(s.args[1].span, f"'{name}' waits for {count} threads, but a block of "
                                     f"this kernel has {threads}.",
                     f"count the threads (32 per warp) of the warps that reach the barrier; "
                     f"this kernel's blocks have {threads // WARP_SIZE} warps")
