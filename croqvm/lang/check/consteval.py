"""Compile-time values of expressions (LANGUAGE.md §12.3 arithmetic; macros are already
expanded, symbolic dimensions are unknown).

``const_value(expr)`` returns the Python value (int, float or bool) of a constant
expression, else None. It reads the checker's annotations: ``Name.sym`` (an immutable
scalar initialised with a constant keeps it in ``sym.info["const"]``) and ``.ty`` (the
result type that integer results wrap to). Anything that would fault at run time
(division by zero, a bad shift) is not a constant.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from croqvm import dtypes
from croqvm.lang import ast
from croqvm.lang.types import Bounded, Buffer, Mdspan, Scalar, View


def const_value(expr):
    """The value of a compile-time constant expression, or None."""
    try:
        return _eval(expr)
    except (ArithmeticError, ValueError, TypeError, RecursionError):
        return None


def _eval(e):
    rule = _RULES.get(type(e))
    return None if rule is None else rule(e)


def _result_dtype(e, *values):
    ty = getattr(e, "ty", None)
    if isinstance(ty, Scalar):
        return ty.dtype
    if isinstance(ty, Bounded):
        return dtypes.S32
    if any(isinstance(v, float) for v in values):
        return dtypes.F64
    return dtypes.S32


def wrap(value, dtype):
    """Round or wrap a Python number to ``dtype`` (§12.3.1-§12.3.3)."""
    if dtype.kind == "bool":
        return bool(value)
    if dtype.is_int:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError("not an integer")
            value = int(value)  # truncation toward zero
        mask = (1 << dtype.bits) - 1
        value &= mask
        if dtype.signed and value >> (dtype.bits - 1):
            value -= 1 << dtype.bits
        return value
    value = float(value)
    if dtype.name in ("f16", "f32"):
        with np.errstate(over="ignore"):
            return float(np.dtype(dtype.storage).type(value))
    return value


def _int_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_mod(a, b):
    return a - _int_div(a, b) * b


def _div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if b == 0:
            raise ZeroDivisionError
        return a / b
    return _int_div(a, b)


def _mod(a, b):
    if isinstance(a, float) or isinstance(b, float):
        raise TypeError("% on floats")
    return _int_mod(a, b)


def _shift(fn):
    def apply(a, b):
        if not isinstance(a, int) or not isinstance(b, int) or not 0 <= b < 64:
            raise ValueError("shift")
        return fn(a, b)
    return apply


_ARITH = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "%": _mod,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": _shift(operator.lshift), ">>": _shift(operator.rshift),
}
_COMPARE = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


def _binary(e: ast.Binary):
    if e.op in ("&&", "||"):
        lhs = _eval(e.lhs)
        if lhs is None:
            return None
        if (e.op == "&&" and not lhs) or (e.op == "||" and lhs):
            return bool(lhs)
        rhs = _eval(e.rhs)
        return None if rhs is None else bool(rhs)
    lhs, rhs = _eval(e.lhs), _eval(e.rhs)
    if lhs is None or rhs is None:
        return None
    if e.op in _COMPARE:
        return _COMPARE[e.op](lhs, rhs)
    if e.op in _ARITH:
        return wrap(_ARITH[e.op](_num(lhs), _num(rhs)), _result_dtype(e, lhs, rhs))
    return None


def _num(v):
    return int(v) if isinstance(v, bool) else v


def _unary(e: ast.Unary):
    v = _eval(e.operand)
    if v is None:
        return None
    if e.op == "!":
        return not v
    if e.op == "-":
        return wrap(-_num(v), _result_dtype(e, v))
    if e.op == "~" and isinstance(v, int):
        return wrap(~_num(v), _result_dtype(e, v))
    return None


def _ternary(e: ast.Ternary):
    c = _eval(e.cond)
    if c is None:
        return None
    return _eval(e.then if c else e.other)


def _call(e: ast.Call):
    if e.func not in ("cdiv", "__min", "__max") or len(e.args) != 2:
        return None
    a, b = (_eval(x) for x in e.args)
    if a is None or b is None:
        return None
    if e.func == "cdiv":
        return wrap(_int_div(a + b - 1, b), _result_dtype(e, a, b))
    return (min if e.func == "__min" else max)(a, b)


def _convert(e: ast.Convert):
    v = _eval(e.operand)
    dt = dtypes.lookup(e.dtype)
    if v is None or dt is None:
        return None
    return (v != 0) if dt.kind == "bool" else wrap(_num(v), dt)


def _name(e: ast.Name):
    sym = e.sym
    return None if sym is None else sym.info.get("const")


def _extent(e: ast.Extent):
    ty = getattr(e.name, "ty", None)
    bound = ty.bound if isinstance(ty, Bounded) else None
    return bound if isinstance(bound, int) else None


def _shape_of(base):
    ty = getattr(base, "ty", None)
    if isinstance(ty, (Buffer, View, Mdspan)):
        return ty.shape
    shape = getattr(ty, "shape", None)
    return shape if isinstance(shape, tuple) else None


def _span_of(e: ast.SpanOf):
    if e.dim is None:
        return None
    shape, i = _shape_of(e.base), _eval(e.dim)
    if shape is None or not isinstance(i, int) or not 0 <= i < len(shape):
        return None
    return shape[i] if isinstance(shape[i], int) else None


def _elem_count(e: ast.ElemCount):
    shape = _shape_of(e.operand)
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return math.prod(shape)


_RULES = {
    ast.IntLit: lambda e: e.value,
    ast.FloatLit: lambda e: wrap(e.value, dtypes.lookup(e.dtype) or dtypes.F64),
    ast.BoolLit: lambda e: e.value,
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
