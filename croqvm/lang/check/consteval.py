"""Compile-time values of expressions: exactly what the engine would compute (LANGUAGE.md
§12; macros are already expanded, symbolic dimensions are unknown).

``const_value(expr)`` returns the Python value (bool, int or float) of a constant
expression, else None; ``const_as(expr, dtype)`` its value converted to ``dtype``, as an
initialisation does. Folding follows lowering step by step: each operand has the type
lowering gives it (that of its checked ``.ty``), is converted as lowering converts it, the
operation runs in the same arithmetic type, and its result is converted to the type of
the expression; every step is a ``croqvm.core.numerics`` function, so a folded value is by
construction the value the code would compute.

A value comes from literals, from ``Name.sym.info["const"]`` (an immutable scalar
initialised with a constant), and from the static bounds and shapes the checker found.
An expression that would fault at run time (division by zero, a shift count out of
range, a float out of an integer's range) is not a constant, even where the fault is in
an operand that ``&&``, ``||`` or ``?:`` might skip (lowering evaluates both sides in
straight-line code): it stays in the code and faults when it runs.
"""
from __future__ import annotations

from croqvm.core import dtypes, numerics
from croqvm.core.faults import LaneFault
from croqvm.lang import ast
from croqvm.lang.types import Bounded, Buffer, Mdspan, View, value_dtype


def const_value(expr):
    """The value of a compile-time constant expression, or None."""
    try:
        typed = _eval(expr)
    except (LaneFault, RecursionError):
        return None
    return None if typed is None else typed[0]


def const_as(expr, dtype: dtypes.DType):
    """The value of constant ``expr`` converted to ``dtype`` (§12.3.3), or None (not a
    constant, or the conversion faults)."""
    try:
        typed = _eval(expr)
        return None if typed is None else numerics.fold_convert(*typed, dtype)
    except (LaneFault, RecursionError):
        return None


def _eval(e):
    """(value, dtype) of ``e``, or None when not known; raises ``LaneFault`` where the
    engine would fault."""
    rule = _RULES.get(type(e))
    return None if rule is None else rule(e)


def _type_of(e) -> dtypes.DType | None:
    """The register type lowering gives the value of ``e``."""
    return value_dtype(getattr(e, "ty", None))


def _converted(typed, dtype):
    if typed is None or dtype is None:
        return None
    return numerics.fold_convert(*typed, dtype), dtype


def _result(e, typed):
    """An operation's (value, type) converted to the type of ``e`` (lowering's
    ``result_val``)."""
    want = _type_of(e)
    return typed if want is None or typed is None else _converted(typed, want)


def _op(name: str, x, y, t: dtypes.DType):
    """``x <name> y`` with both operands converted to ``t`` first, as lowering emits it."""
    if x is None or y is None:
        return None
    return numerics.fold_binary(name, *_converted(x, t), *_converted(y, t))


def _literal(e):
    t = dtypes.lookup(e.dtype)
    return numerics.value_of(e.value, t), t


_ARITH = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD",
          "&": "AND", "|": "OR", "^": "XOR", "<<": "SHL", ">>": "SHR"}
_COMPARE = {"==": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}


def _binary(e: ast.Binary):
    if e.op in ("&&", "||"):
        return _logical(e)
    if e.op not in _ARITH and e.op not in _COMPARE:
        return None
    lhs, rhs = _eval(e.lhs), _eval(e.rhs)
    if lhs is None or rhs is None:
        return None
    (_, tx), (_, ty) = lhs, rhs
    if e.op in _COMPARE:
        common = dtypes.BOOL if tx.kind == ty.kind == "bool" else dtypes.promote(tx, ty)
        return _op(_COMPARE[e.op], lhs, rhs, common)
    if e.op in ("<<", ">>"):
        return _result(e, numerics.fold_binary(_ARITH[e.op], *lhs, *rhs))
    return _result(e, _op(_ARITH[e.op], lhs, rhs, dtypes.promote(tx, ty)))


def _logical(e: ast.Binary):
    """``&&`` and ``||``: the left operand decides when it can; a fault in either
    operand makes the whole expression non-constant (see the module docstring)."""
    lhs, rhs = _converted(_eval(e.lhs), dtypes.BOOL), _converted(_eval(e.rhs), dtypes.BOOL)
    decides = e.op == "||"
    if lhs is not None and lhs[0] is decides:
        return decides, dtypes.BOOL
    if lhs is None or rhs is None:
        return None
    return rhs


def _unary(e: ast.Unary):
    name = {"-": "NEG", "~": "BNOT", "!": "NOT"}.get(e.op)
    v = _eval(e.operand)
    if name is None or v is None:
        return None
    if name == "NOT":
        v = _converted(v, dtypes.BOOL)
    return _result(e, numerics.fold_unary(name, *v))


def _ternary(e: ast.Ternary):
    c = _converted(_eval(e.cond), dtypes.BOOL)
    want = _type_of(e)
    yes, no = _converted(_eval(e.then), want), _converted(_eval(e.other), want)
    if c is None:
        return None
    return yes if c[0] else no


def _call(e: ast.Call):
    if e.func not in ("cdiv", "__min", "__max", "__alignup", "__aligndown") or \
            len(e.args) != 2:
        return None
    a, b = (_eval(x) for x in e.args)
    if a is None or b is None:
        return None
    common = dtypes.promote(a[1], b[1])
    if e.func in ("cdiv", "__alignup"):     # (a + b - 1) / b, times b for __alignup
        t = _op("SUB", _op("ADD", a, b, common), (1, common), common)
        q = _op("DIV", t, b, common)
        return _result(e, q if e.func == "cdiv" else _op("MUL", q, b, common))
    if e.func == "__aligndown":             # a / b * b
        return _result(e, _op("MUL", _op("DIV", a, b, common), b, common))
    return _result(e, _op("MIN" if e.func == "__min" else "MAX", a, b, common))


def _convert(e: ast.Convert):
    dt = dtypes.lookup(e.dtype) or (dtypes.BOOL if e.dtype == "bool" else None)
    return _converted(_eval(e.operand), dt)


def _name(e: ast.Name):
    sym = e.sym
    value = None if sym is None else sym.info.get("const")
    t = _type_of(e)
    return None if value is None or t is None else (value, t)


def _s32(n):
    """A static extent or bound, as the s32 register lowering holds it in."""
    return (numerics.value_of(n, dtypes.S32), dtypes.S32) if isinstance(n, int) else None


def _extent(e: ast.Extent):
    ty = getattr(e.name, "ty", None)
    return _s32(ty.bound) if isinstance(ty, Bounded) else None


def _shape_of(base):
    ty = getattr(base, "ty", None)
    if isinstance(ty, (Buffer, View, Mdspan)):
        return ty.shape
    shape = getattr(ty, "shape", None)
    return shape if isinstance(shape, tuple) else None


def _span_of(e: ast.SpanOf):
    if e.dim is None:
        return None
    shape, i = _shape_of(e.base), const_value(e.dim)
    if shape is None or not isinstance(i, int) or not 0 <= i < len(shape):
        return None
    return _s32(shape[i])


def _elem_count(e: ast.ElemCount):
    """The product of the extents, multiplied in s32 as lowering does."""
    shape = _shape_of(e.operand)
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    total = (1, dtypes.S32)
    for d in shape:
        total = _op("MUL", total, _s32(d), dtypes.S32)
    return total


_RULES = {
    ast.IntLit: _literal,
    ast.FloatLit: _literal,
    ast.BoolLit: lambda e: (e.value, dtypes.BOOL),
    ast.Binary: _binary,
    ast.Unary: _unary,
    ast.Ternary: _ternary,
    ast.Call: _call,
    ast.Convert: _convert,
    ast.Name: _name,
    ast.Extent: _extent,
    ast.SpanOf: _span_of,
    ast.ElemCount: _elem_count,
}
