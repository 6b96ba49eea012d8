"""Expressions -> register code (LANGUAGE.md §4, §5, §12.2).

Binary operations convert both operands to the arithmetic type of §12.2 (``CVT``) and
compute in it (a shift converts its left operand only); comparisons produce ``bool``. Bounded arithmetic (§5.3-§5.4) computes the
value normally and carries a bound register. ``&&``, ``||`` and ``?:`` evaluate their
second operand per lane under an ``IF`` when it could fault or has side effects (§4.2.4,
docs/EXECUTION.md §4); otherwise, and always in a laneset's straight-line code, they
become ``AND``/``OR``/``SELECT``.
"""
from __future__ import annotations

import numpy as np

from croqvm.core import dtypes
from croqvm.core.intrinsics import ATOMIC_BY_NAME, CAS, MATH_BY_NAME
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang import types as T

from .state import Lowerer, dtype_of
from .values import Val

ARITH = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD",
         "&": "AND", "|": "OR", "^": "XOR", "<<": "SHL", ">>": "SHR"}
COMPARE = {"==": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
FAULTING = {"/", "%", "<<", ">>"}     # may fault: never evaluated speculatively
BOUNDED = {"#", "#+", "#-"}
SHIFTS = {"<<", ">>"}


# --------------------------------------------------------------------------- helpers

def value(lw: Lowerer, e: ast.Expr) -> Val:
    """Lower ``e`` and require a single value (scalar or bounded int)."""
    v = lw.expr(e)
    if not isinstance(v, Val) or v.is_tuple:
        lw.unsupported(e, f"'{lw.snippet(e.span)}' used as a value")
    return v


def lower_as(lw: Lowerer, e: ast.Expr, dtype: dtypes.DType) -> int:
    """``e`` as a register of ``dtype`` (§12.3). A literal is loaded directly in that type."""
    lit = literal(e)
    if lit is not None and not (dtype.kind == "bool") ^ isinstance(lit, bool):
        return lw.b.load_const(dtype, lit)
    v = scalar_value(lw, e)
    return lw.b.convert(v.reg, dtype)


def scalar_value(lw: Lowerer, e: ast.Expr) -> Val:
    """``value(lw, e)`` where the bound of ``e`` is not used (an index, a scalar): a
    top-level ``a # b``, ``x #+ n`` or ``x #- n`` does not compute one (§5.2-§5.3)."""
    if isinstance(e, ast.Binary) and e.op in BOUNDED:
        return _bounded_op(lw, e, with_bound=False)
    return value(lw, e)


def literal(e):
    """The value of a literal (or negated literal) expression ``e``, else None."""
    if isinstance(e, (ast.IntLit, ast.BoolLit)):
        return e.value
    if isinstance(e, ast.FloatLit):
        return _round_literal(e.value, e.dtype)
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, (ast.IntLit, ast.FloatLit)):
        inner = literal(e.operand)
        return -inner
    return None


def _round_literal(x: float, dtype: str) -> float:
    """An ``f32`` literal denotes the nearest f32 (§2.2.2)."""
    return float(np.float32(x)) if dtype == "f32" else float(x)


def pure(e) -> bool:
    """True when evaluating ``e`` can neither fault nor change anything (§4.2.4)."""
    if isinstance(e, (ast.IntLit, ast.FloatLit, ast.BoolLit, ast.Name, ast.Extent)):
        return True
    if isinstance(e, ast.Binary):
        return e.op not in FAULTING and pure(e.lhs) and pure(e.rhs)
    if isinstance(e, ast.Unary):
        return e.op in ("-", "!", "~") and pure(e.operand)
    if isinstance(e, ast.Ternary):
        return pure(e.cond) and pure(e.then) and pure(e.other)
    if isinstance(e, (ast.ITupleLit, ast.MdspanLit)):
        return all(pure(x) for x in e.elems)
    return False


def mutates(e) -> bool:
    """Does ``e`` contain ``++``/``--`` (so earlier operands must be copied, §4.2.6)?"""
    if isinstance(e, ast.Postfix) or (isinstance(e, ast.Unary) and e.op in ("++", "--")):
        return True
    for child in ast.field_values(e):
        if isinstance(child, ast.Expr) and mutates(child):
            return True
        if isinstance(child, list) and any(isinstance(c, ast.Expr) and mutates(c) for c in child):
            return True
    return False


def stable(lw: Lowerer, v: Val, later: ast.Expr | None) -> Val:
    """``v``, copied when a later operand may modify its register (left-to-right, §4.2.6)."""
    return copy(lw, v) if later is not None and mutates(later) else v


def copy(lw: Lowerer, v: Val) -> Val:
    if v.is_tuple:
        return Val(None, elems=[copy(lw, x) for x in v.elems])
    r = lw.b.reg(v.dtype)
    lw.b.emit("MOV", r, v.reg)
    return Val(v.dtype, r, v.bound)


def result_val(lw: Lowerer, e: ast.Expr, reg: int, bound: int = -1) -> Val:
    """Wrap ``reg`` as the value of ``e``, converted to the type the checker gave ``e``."""
    want = dtype_of(e.ty)
    if want is not None:
        reg = lw.b.convert(reg, want)
    return Val(lw.b.reg_dtype(reg), reg, bound if isinstance(e.ty, T.Bounded) else -1)


# --------------------------------------------------------------------------- leaves

def lower_literal(lw: Lowerer, e) -> Val:
    dtype = dtypes.BOOL if isinstance(e, ast.BoolLit) else dtypes.BY_NAME[e.dtype]
    lit = literal(e)
    return Val(dtype, lw.b.load_const(dtype, lit))


def lower_name(lw: Lowerer, e: ast.Name):
    return lw.lookup(e.sym, e)


def lower_extent(lw: Lowerer, e: ast.Extent) -> Val:
    v = lw.lookup(e.name.sym, e.name)
    if not isinstance(v, Val) or v.bound < 0:
        lw.unsupported(e, f"'#{e.name.id}' here")
    return Val(dtypes.S32, v.bound)


def lower_tuple(lw: Lowerer, e) -> Val:
    elems = []
    for i, x in enumerate(e.elems):
        later = e.elems[i + 1] if i + 1 < len(e.elems) else None
        v = stable(lw, lw.expr(x), later)
        if isinstance(x.ty, T.Mdspan) or (isinstance(v, Val) and v.is_tuple):
            elems.extend(v.elems)
        else:
            elems.append(v)
    return Val(None, elems=elems)


# --------------------------------------------------------------------------- operators

def lower_binary(lw: Lowerer, e: ast.Binary) -> Val:
    if e.op in ("&&", "||"):
        return _logical(lw, e)
    if e.op in BOUNDED:
        return _bounded_op(lw, e)
    if e.op in ("#*", "#/", "#%"):
        lw.error(e.span, f"operator '{e.op}' is not supported by croqvm.")
    if isinstance(e.ty, T.Mdspan):
        return _shape_arith(lw, e)
    lhs = stable(lw, value(lw, e.lhs), e.rhs)
    rhs = value(lw, e.rhs)
    b = lw.b
    if e.op in COMPARE:
        common = dtypes.BOOL if lhs.dtype.kind == rhs.dtype.kind == "bool" else \
            dtypes.promote(lhs.dtype, rhs.dtype)
        out = b.op(COMPARE[e.op], dtypes.BOOL, b.convert(lhs.reg, common),
                   b.convert(rhs.reg, common))
        return Val(dtypes.BOOL, out)
    if e.op in SHIFTS:
        # the count keeps its value: its own promotion (§12.2) never wraps it, and that
        # value, not a wrapped copy, is checked against the width (§12.3.1)
        common = dtypes.promote(lhs.dtype, lhs.dtype)
        count = b.convert(rhs.reg, dtypes.promote(rhs.dtype, rhs.dtype))
    else:
        common = dtypes.promote(lhs.dtype, rhs.dtype)
        count = b.convert(rhs.reg, common)
    out = b.op(ARITH[e.op], common, b.convert(lhs.reg, common), count)
    bound = lhs.bound if lhs.bound >= 0 else rhs.bound   # §5.4: the bounded operand's bound
    return result_val(lw, e, out, bound)


def _shape_arith(lw: Lowerer, e: ast.Binary) -> Val:
    """``sp op n`` / ``sp op t``: an mdspan computed dimension by dimension in 'int'."""
    left = lw.expr(e.lhs).elems
    right = lw.expr(e.rhs)
    right = right.elems if right.is_tuple else [right] * len(left)
    b = lw.b
    elems = []
    for x, y in zip(left, right):
        r = b.op(ARITH[e.op], dtypes.S32, lw.as_int(x), lw.as_int(y))
        elems.append(Val(dtypes.S32, r))
    return Val(None, elems=elems)


def _bounded_op(lw: Lowerer, e: ast.Binary, with_bound: bool = True) -> Val:
    """``a # b`` (§5.3), ``x #+ n`` / ``x #- n`` (§5.2); the bound only ``with_bound``."""
    a = value(lw, e.lhs)
    c = value(lw, e.rhs)
    b = lw.b
    bound = -1
    if e.op == "#":
        if a.bound < 0 or c.bound < 0:
            lw.unsupported(e, "'#' on values without bounds")
        # the value last, so that a variable it initialises can take it over (builder.variable)
        if with_bound:
            bound = b.op("MUL", dtypes.S32, a.bound, c.bound)
        scaled = b.op("MUL", dtypes.S32, lw.as_int(a), c.bound)
        val = b.op("ADD", dtypes.S32, scaled, lw.as_int(c))
        return Val(dtypes.S32, val, bound)
    if a.bound < 0:
        lw.unsupported(e, f"'{e.op}' on a value without a bound")
    if with_bound:
        bound = b.op("ADD" if e.op == "#+" else "SUB", dtypes.S32, a.bound, lw.as_int(c))
    return Val(dtypes.S32, a.reg, bound)


def _logical(lw: Lowerer, e: ast.Binary) -> Val:
    b = lw.b
    lhs = lower_as(lw, e.lhs, dtypes.BOOL)
    if lw.straight or pure(e.rhs):
        lhs = stable(lw, Val(dtypes.BOOL, lhs), e.rhs).reg
        rhs = lower_as(lw, e.rhs, dtypes.BOOL)
        return Val(dtypes.BOOL, b.op("AND" if e.op == "&&" else "OR", dtypes.BOOL, lhs, rhs))
    out = b.reg(dtypes.BOOL)
    b.emit("MOV", out, lhs)
    cond = out
    if e.op == "||":
        cond = b.op("NOT", dtypes.BOOL, out)
    pc = b.open_if(cond)
    b.emit("MOV", out, lower_as(lw, e.rhs, dtypes.BOOL))
    b.close_if(pc)
    return Val(dtypes.BOOL, out)


def lower_unary(lw: Lowerer, e: ast.Unary) -> Val:
    if e.op in ("++", "--"):
        reg = step(lw, e.operand, e.op)
        copy = lw.b.reg(lw.b.reg_dtype(reg))
        lw.b.emit("MOV", copy, reg)
        return Val(lw.b.reg_dtype(copy), copy)
    want = dtype_of(e.ty)
    lit = literal(e)
    if lit is not None and want is not None:
        return Val(want, lw.b.load_const(want, lit))
    v = value(lw, e.operand)
    if e.op == "!":
        return Val(dtypes.BOOL, lw.b.op("NOT", dtypes.BOOL, lw.b.convert(v.reg, dtypes.BOOL)))
    name = {"-": "NEG", "~": "BNOT"}[e.op]
    want = want or v.dtype
    out = lw.b.op(name, want, lw.b.convert(v.reg, want))
    return Val(want, out)


def lower_postfix(lw: Lowerer, e: ast.Postfix) -> Val:
    v = value(lw, e.operand)
    old = lw.b.reg(v.dtype)
    lw.b.emit("MOV", old, v.reg)
    step(lw, e.operand, e.op)
    return Val(v.dtype, old)


def step(lw: Lowerer, target: ast.Expr, op: str) -> int:
    """``x := x ± 1`` on a mutable scalar name (§4.2.6), computed in x's arithmetic type
    (§12.2) and converted back; returns x's register."""
    v = value(lw, target)
    b = lw.b
    t = dtypes.promote(v.dtype, v.dtype)
    one = b.load_const(t, 1)
    name = "ADD" if op == "++" else "SUB"
    if t is v.dtype:
        b.emit(name, v.reg, v.reg, one)
    else:
        b.emit("CVT", v.reg, b.op(name, t, b.convert(v.reg, t), one))
    return v.reg


def lower_ternary(lw: Lowerer, e: ast.Ternary) -> Val:
    want = dtype_of(e.ty)
    if want is None:
        lw.unsupported(e, "'?:' on tuples")
    cond = lower_as(lw, e.cond, dtypes.BOOL)
    b = lw.b
    bounded = isinstance(e.ty, T.Bounded)
    if lw.straight or (pure(e.then) and pure(e.other)):
        x, y = value(lw, e.then), value(lw, e.other)
        out = b.op("SELECT", want, cond, b.convert(x.reg, want), b.convert(y.reg, want))
        bound = b.op("SELECT", dtypes.S32, cond, x.bound, y.bound) \
            if bounded and x.bound >= 0 and y.bound >= 0 else -1
        return Val(want, out, bound)
    out = b.reg(want)
    bound = b.reg(dtypes.S32) if bounded else -1
    pc = b.open_if(cond)
    _move_into(lw, out, bound, e.then)
    else_pc = b.open_else(pc)
    _move_into(lw, out, bound, e.other)
    b.close_if(pc, else_pc)
    return Val(want, out, bound)


def _move_into(lw: Lowerer, out: int, bound: int, e: ast.Expr) -> None:
    v = value(lw, e)
    lw.b.emit("MOV", out, lw.b.convert(v.reg, lw.b.reg_dtype(out)))
    if bound >= 0:
        lw.b.emit("MOV", bound, v.bound if v.bound >= 0 else v.reg)


# --------------------------------------------------------------------------- builtins

def lower_call(lw: Lowerer, e: ast.Call) -> Val:
    if e.func in ("cdiv", "__min", "__max", "__alignup", "__aligndown"):
        return _builtin(lw, e)
    if e.func in MATH_BY_NAME:
        return _math(lw, e)
    if e.func in ATOMIC_BY_NAME:
        if lw.ctx.in_kernel and lw.ctx.outer:
            lw.unsupported(e, "the value of an atomic at an outer level, where one lane "
                              "performs it (§7.2.2)")
        return atomic(lw, e)
    sym = getattr(e, "sym", None) or lw.symbol_named(e.func)
    base = lw.lookup(sym, e) if sym is not None else None
    return _element(lw, e, base)


def lower_element(lw: Lowerer, e: ast.Element) -> Val:
    """``e(i)`` on an expression other than a name (§4.1 level 15): as ``t(i)``."""
    return _element(lw, e, lw.expr(e.base))


def _element(lw: Lowerer, e, base) -> Val:
    """Element ``i`` of the ituple ``base`` or ``x(-n)`` of the bounded int ``base`` (§4.4)."""
    if not isinstance(base, Val) or len(e.args) != 1:
        lw.unsupported(e, f"the call '{lw.snippet(e.span)}'")
    if base.is_tuple:                       # t(i): an ituple element
        i = const_value(e.args[0])
        if not isinstance(i, int) or not 0 <= i < len(base.elems):
            lw.unsupported(e.args[0], "a non-constant ituple element index")
        return base.elems[i]
    if base.bound < 0:                      # x(-n): #x - n, bounded by #x
        lw.unsupported(e, f"the call '{lw.snippet(e.span)}'")
    off = lower_as(lw, e.args[0], dtypes.S32)
    return Val(dtypes.S32, lw.b.op("ADD", dtypes.S32, base.bound, off), base.bound)


def _builtin(lw: Lowerer, e: ast.Call) -> Val:
    a = stable(lw, value(lw, e.args[0]), e.args[1])
    c = value(lw, e.args[1])
    common = dtypes.promote(a.dtype, c.dtype)
    b = lw.b
    x, y = b.convert(a.reg, common), b.convert(c.reg, common)
    if e.func in ("cdiv", "__alignup"):     # (a + b - 1) / b, times b for __alignup
        t = b.op("ADD", common, x, y)
        t = b.op("SUB", common, t, b.load_const(common, 1))
        out = b.op("DIV", common, t, y)
        if e.func == "__alignup":
            out = b.op("MUL", common, out, y)
    elif e.func == "__aligndown":          # a / b * b
        out = b.op("MUL", common, b.op("DIV", common, x, y), y)
    else:
        out = b.op("MIN" if e.func == "__min" else "MAX", common, x, y)
    return result_val(lw, e, out)


def math_type(types) -> dtypes.DType:
    """The float type a math function computes in (§4.4): f64 with an f64 argument, f16
    or bf16 when every argument is of that type, else f32."""
    names = {t.name for t in types}
    if "f64" in names:
        return dtypes.F64
    if len(names) == 1 and names <= {"f16", "bf16"}:
        return types[0]
    return dtypes.F32


def _math(lw: Lowerer, e: ast.Call) -> Val:
    """MATH in the function's float type; the result converts to the first argument's
    type (bool for a predicate)."""
    fn = MATH_BY_NAME[e.func]
    args = []
    for i, a in enumerate(e.args):   # left to right (§4.2.6)
        v = value(lw, a)
        args.append(copy(lw, v) if any(mutates(x) for x in e.args[i + 1:]) else v)
    t = math_type([a.dtype for a in args])
    b = lw.b
    regs = [b.convert(a.reg, t) for a in args]
    regs += regs[:1] * (3 - len(regs))
    out = b.reg(dtypes.BOOL if fn.predicate else t)
    b.emit("MATH", out, *regs, fn.code)
    want = dtypes.BOOL if fn.predicate else args[0].dtype
    return Val(want, b.convert(out, want))


def atomic(lw: Lowerer, e: ast.Call) -> Val:
    """ATOMIC on the element: the values convert to the element type (§4.5)."""
    from .views import access_of
    op = ATOMIC_BY_NAME[e.func]
    acc, base = access_of(lw, e.args[0])
    regs = [lower_as(lw, a, base.dtype) for a in e.args[1:]]
    if op.code == CAS:                      # __atomic_cas(b.at(i), cmp, v)
        regs = [regs[1], regs[0]]
    b = lw.b
    out = b.reg(base.dtype)
    b.emit("ATOMIC", out, acc, regs[0], regs[-1], op.code)
    return Val(base.dtype, out)


def lower_convert(lw: Lowerer, e: ast.Convert) -> Val:
    """``__to<T>(e)``: bool -> 1/0, number -> ``e != 0`` (§4.4)."""
    target = dtypes.lookup(e.dtype) or (dtypes.BOOL if e.dtype == "bool" else None)
    if target is None:
        lw.unsupported(e, f"conversion to '{e.dtype}'")
    v = value(lw, e.operand)
    if target.kind == "bool" and v.dtype.kind != "bool":
        t = dtypes.promote(v.dtype, v.dtype)       # compared in its arithmetic type
        zero = lw.b.load_const(t, 0)
        return Val(dtypes.BOOL, lw.b.op("NE", dtypes.BOOL, lw.b.convert(v.reg, t), zero))
    return Val(target, lw.b.convert(v.reg, target))


TABLE = {
    ast.IntLit: lower_literal, ast.FloatLit: lower_literal, ast.BoolLit: lower_literal,
    ast.Name: lower_name, ast.Extent: lower_extent,
    ast.ITupleLit: lower_tuple, ast.MdspanLit: lower_tuple,
    ast.Binary: lower_binary, ast.Unary: lower_unary, ast.Postfix: lower_postfix,
    ast.Ternary: lower_ternary, ast.Call: lower_call, ast.Element: lower_element,
    ast.Convert: lower_convert,
}
