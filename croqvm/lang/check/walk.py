"""Generic traversal of the AST: statement children and the names inside an expression."""
from __future__ import annotations

import dataclasses

from croqvm.lang import ast


def child_stmts(s: ast.Stmt):
    """The statements directly nested in ``s`` (bodies and branches)."""
    if isinstance(s, ast.Block):
        yield from s.stmts
    elif isinstance(s, ast.If):
        yield s.then
        if s.other is not None:
            yield s.other
    elif isinstance(s, (ast.While, ast.With, ast.Foreach, ast.Inthreads, ast.Parallel,
                        ast.Apply, ast.DeviceRegion)):
        yield s.body


def nested_parallels(s: ast.Stmt):
    """The ``parallel`` statements nested in ``s`` with no ``parallel`` in between."""
    for child in child_stmts(s):
        if isinstance(child, ast.Parallel):
            yield child
        else:
            yield from nested_parallels(child)


def nodes_under(node):
    """Every AST node under ``node`` (itself included): statements and expressions, at
    any depth, parents before their children."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if not dataclasses.is_dataclass(n):
            continue
        for f in dataclasses.fields(n):
            value = getattr(n, f.name)
            if isinstance(value, ast.Node):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.Node))


def value_names(node):
    """Every ``ast.Name`` whose value an expression reads. The bound ``#x`` reads no value
    of ``x`` (it is fixed per launch), so names under ``ast.Extent`` are left out."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name):
            yield n
            continue
        if isinstance(n, ast.Extent) or not dataclasses.is_dataclass(n):
            continue
        for f in dataclasses.fields(n):
            value = getattr(n, f.name)
            if isinstance(value, ast.Expr):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.Expr))


def thread_dependence(expr) -> str | None:
    """The name of a 'thread'-level parallel variable that ``expr`` depends on, directly
    or through scalars computed from one (§9.3.3), else None."""
    for n in value_names(expr):
        sym = n.sym
        if sym is None:
            continue
        if sym.plevel is not None and sym.level == "thread":
            return n.id
        dep = sym.info.get("lane_dep")
        if dep:
            return dep
    return None
