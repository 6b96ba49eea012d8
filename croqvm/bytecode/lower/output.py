"""``print``, ``println`` and ``assert`` (LANGUAGE.md §6.9, §13), and the run-time checks
whose messages show values (``emit_check``).

A ``PrintFormat`` is a list of pieces printed back to back: one " " between arguments,
ituples as ``{a, b}``, mdspans as ``[a, b]`` (D19). At outer level these happen once per
instance (§7.2.2).
"""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.bytecode.module import PieceKind, PrintFormat
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang import types as T

from .builder import CodeBuilder
from .exprs import copy, lower_as, mutates
from .state import Lowerer
from .values import Val


def lower_print(lw: Lowerer, s: ast.Print) -> None:
    pieces: list[tuple[PieceKind, str | int]] = []     # STR pieces hold their text here
    for i, arg in enumerate(s.args):
        if i:
            pieces.append((PieceKind.STR, " "))
        _pieces(lw, arg, s.args[i + 1:], pieces)
    b = lw.b
    merged: list[tuple[PieceKind, str | int]] = []
    for kind, x in pieces:
        if kind == PieceKind.STR and merged and merged[-1][0] == PieceKind.STR:
            merged[-1] = (kind, merged[-1][1] + x)
        else:
            merged.append((kind, x))
    final = [(kind, b.string(x) if kind == PieceKind.STR else x) for kind, x in merged]
    fmt = b.add("prints", PrintFormat(final, s.newline))
    with lw.once_guard():
        b.emit("PRINT", fmt)


def _pieces(lw: Lowerer, e: ast.Expr, later: list, out: list) -> None:
    if isinstance(e, ast.StringLit):
        out.append((PieceKind.STR, e.value))
        return
    v = lw.expr(e)
    if not isinstance(v, Val):
        lw.error(e.span, f"can not print a value of type '{e.ty}'.")
    if any(mutates(x) for x in later):
        v = copy(lw, v)
    _val_pieces(v, isinstance(e.ty, T.Mdspan), out)


def _val_pieces(v: Val, is_mdspan: bool, out: list) -> None:
    if not v.is_tuple:
        out.append((PieceKind.REG, v.reg))
        return
    out.append((PieceKind.STR, "[" if is_mdspan else "{"))
    for i, x in enumerate(v.elems):
        if i:
            out.append((PieceKind.STR, ", "))
        _val_pieces(x, False, out)
    out.append((PieceKind.STR, "]" if is_mdspan else "}"))


def emit_check(b: CodeBuilder, ok: int, *parts: str | int) -> None:
    """Fault where register ``ok`` is false, with a message of ``parts``: text, and
    registers shown as print shows them (§13.2). The message is a print format, so no text
    is ever read as a placeholder."""
    pieces = [(PieceKind.STR, b.string(x)) if isinstance(x, str) else (PieceKind.REG, x)
              for x in parts]
    b.emit("ASSERT_FMT", ok, b.add("prints", PrintFormat(pieces, False)))


def lower_assert(lw: Lowerer, s: ast.Assert) -> None:
    """Statically true asserts vanish; the checker rejects statically false ones (§6.9)."""
    if const_value(s.cond) is True:
        return
    cond = lower_as(lw, s.cond, dtypes.BOOL)
    msg = lw.b.string(f"assertion failed: {s.message}")
    with lw.once_guard():
        lw.b.emit("ASSERT", cond, msg)


TABLE = {ast.Print: lower_print, ast.Assert: lower_assert}
