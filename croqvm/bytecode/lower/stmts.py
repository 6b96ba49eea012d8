"""Declarations, assignments and structured control flow (LANGUAGE.md §3.3-§3.4, §5.5,
§6.4-§6.6; shapes of docs/EXECUTION.md §4).

Loops put their increment at the top so that ``CONTINUE_IF`` cannot skip it::

    i := start - step ; LOOP ; i := i + step ; t := i >= end ; BREAK_IF t ; body ; END
"""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.bytecode import opcodes
from croqvm.bytecode.module import BufferDecl, Storage
from croqvm.lang import ast
from croqvm.lang import types as T
from croqvm.lang.check.walk import child_stmts

from .exprs import atomic, literal, lower_as, scalar_value, step, value
from .frags import is_fragment_elem, store_fragment_elem, update_fragment
from .output import emit_check
from .state import Lowerer, dtype_of
from .values import BufRef, Val, ViewAlias
from .views import Reg, access_of, int_operands, reg_of


# --------------------------------------------------------------------------- declarations

def declare_value(lw: Lowerer, sym, v: Val) -> Val:
    """Bind a newly declared scalar/bounded/ituple/mdspan ``sym`` to a copy of ``v``."""
    b = lw.b
    if v.is_tuple:
        elems = [declare_value(lw, None, x) for x in v.elems]
        out = Val(None, elems=elems)
    else:
        want = dtype_of(sym.type) if sym is not None else v.dtype
        want = want or v.dtype
        name = sym.name if sym is not None else ""
        if v.dtype is want:
            r = b.variable(v.reg, name, mutable=sym is None or sym.mutable)
        else:
            r = b.reg(want, name)
            b.emit("CVT", r, v.reg)
        bound = v.bound if sym is None or isinstance(sym.type, T.Bounded) else -1
        out = Val(want, r, bound)
    if sym is not None:
        lw.bind(sym, out)
    return out


def declare(lw: Lowerer, sym, init: ast.Expr) -> None:
    """``sym = init``: a literal of the variable's own type is loaded straight into it; a
    scalar keeps no bound, so none is computed for it."""
    if getattr(sym, "kind", None) == "view":
        lw.bind(sym, ViewAlias(init))
        return
    ty = getattr(sym, "type", None)
    want = dtype_of(ty) if isinstance(ty, T.Scalar) else None
    lit = literal(init)
    if lit is not None and want is not None and dtype_of(init.ty) is want:
        lw.bind(sym, Val(want, lw.b.load_const(want, lit, sym.name)))
    else:
        declare_value(lw, sym, scalar_value(lw, init) if want is not None else lw.expr(init))


def lower_scalar_decl(lw: Lowerer, s: ast.ScalarDecl) -> None:
    for item in s.items:
        if item.init is None:
            lw.unsupported(item, f"declaring '{item.name}' without an initializer")
        declare(lw, item.sym, item.init)


def lower_buffer_decl(lw: Lowerer, s: ast.BufferDecl) -> None:
    """One slot per item; ALLOC (first execution per instance, §3.2.4); FILL for ``{v}``.
    A global buffer declared inside a parallel-by was made by the host code before it."""
    if getattr(s, "hoisted", False) and lw.kernel is not None:
        return
    storage = s.storage or "global"
    for item in s.items:
        ty = item.sym.type
        shape = [reg_of(lw, x) for x in int_operands(lw, s.shape)]
        array = lw.static_sizes(item.array, "a buffer array")
        slot = lw.b.add("buffers", BufferDecl(item.name, Storage[storage.upper()],
                                              ty.dtype.code, shape, array,
                                              span=lw.spans.intern(item.span)))
        lw.bind(item.sym, BufRef(slot, ty.dtype, storage, len(shape), array, item.name))
        lw.b.emit("ALLOC", slot)
        if item.init is not None:
            fill = lower_as(lw, item.init, ty.dtype)
            coll = lw.coll_site("fill") if storage == "shared" else -1
            lw.b.emit("FILL", slot, fill, coll)


def hoist_globals(lw: Lowerer, s: ast.Parallel) -> None:
    """§3.2.3: the global buffers declared inside the kernel ``s``, made by the host code
    before its launch (lib/latenorm.hpp)."""
    stack = [s.body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BufferDecl) and node.storage in (None, "global"):
            lower_buffer_decl(lw, node)
            node.hoisted = True
        stack.extend(reversed(list(child_stmts(node))))


# --------------------------------------------------------------------------- assignments

_COMPOUND = {"+=": "ADD", "-=": "SUB", "*=": "MUL", "/=": "DIV", "%=": "MOD"}


def lower_assign(lw: Lowerer, s: ast.Assign) -> None:
    if getattr(s, "alias", False):          # c = select(i, ...): another name, no code
        return
    if getattr(s, "declares", False):
        declare(lw, s.sym, s.value)
        return
    if getattr(s, "frag_update", False):
        update_fragment(lw, s, _COMPOUND[s.op])
        return
    if is_fragment_elem(s.target):
        store_fragment_elem(lw, s, _COMPOUND.get(s.op))
        return
    if isinstance(s.target, ast.ElemAccess):
        _store(lw, s)
        return
    target = value(lw, s.target)
    b = lw.b
    if s.op == "=":
        r = lower_as(lw, s.value, target.dtype)
        b.emit("MOV", target.reg, r)
        return
    v = scalar_value(lw, s.value)           # x op= e  ==  x = x op (e)   (§6.6)
    common = dtypes.promote(target.dtype, v.dtype)
    operands = (b.convert(target.reg, common), b.convert(v.reg, common))
    if common is target.dtype:
        b.emit(_COMPOUND[s.op], target.reg, *operands)
    else:
        b.emit("CVT", target.reg, b.op(_COMPOUND[s.op], common, *operands))


def _store(lw: Lowerer, s: ast.Assign) -> None:
    """``b.at(i) = v`` -> STORE; ``b.at(i) op= v`` -> one UPDATE, applied lane after lane.

    UPDATE computes in the arithmetic type of (element type, R[b]'s type) and converts the
    result to the element type (§12.2-§12.3), so the value is passed in that common type.
    """
    acc, base = access_of(lw, s.target)
    v = scalar_value(lw, s.value)
    b = lw.b
    shared = base.storage in ("shared", "global")
    with lw.once_guard(shared):
        if s.op == "=":
            b.emit("STORE", acc, v.reg)
        else:
            common = dtypes.promote(base.dtype, v.dtype)
            b.emit("UPDATE", acc, b.convert(v.reg, common), opcodes.BY_NAME[_COMPOUND[s.op]].code)


def lower_builtin_stmt(lw: Lowerer, s: ast.BuiltinStmt) -> None:
    """An atomic whose value is discarded: once per instance at an outer level (§7.2.2),
    like a store."""
    with lw.once_guard():
        atomic(lw, s.call)


def lower_incdec(lw: Lowerer, s: ast.IncDec) -> None:
    step(lw, s.target, s.op)


# --------------------------------------------------------------------------- control flow

def lower_block(lw: Lowerer, s: ast.Block) -> None:
    lw.names.append({})
    try:
        for x in s.stmts:
            lw.stmt(x)
    finally:
        lw.names.pop()


def lower_empty(lw: Lowerer, s) -> None:
    pass


def lower_if(lw: Lowerer, s: ast.If) -> None:
    b = lw.b
    cond = lower_as(lw, s.cond, dtypes.BOOL)
    pc = b.open_if(cond)
    lw.body(s.then)
    if s.other is not None:
        else_pc = b.open_else(pc)
        lw.body(s.other)
        b.close_if(pc, else_pc)
    else:
        b.close_if(pc)


def lower_while(lw: Lowerer, s: ast.While) -> None:
    b = lw.b
    loop = b.open_loop()
    cond = lower_as(lw, s.cond, dtypes.BOOL)
    b.emit("BREAK_IF", b.op("NOT", dtypes.BOOL, cond))
    lw.body(s.body)
    b.close_loop(loop)


def lower_break(lw: Lowerer, s) -> None:
    lw.b.emit("BREAK_IF", lw.true_reg())


def lower_continue(lw: Lowerer, s) -> None:
    lw.b.emit("CONTINUE_IF", lw.true_reg())


def lower_yield(lw: Lowerer, s) -> None:
    lw.b.emit("YIELD")


# --------------------------------------------------------------------------- with / foreach

def bind_within(lw: Lowerer, w: ast.Within) -> list[Val]:
    """Bind ``t in B`` / ``{a, b} in B`` (§5.5.1): each name a register holding 0 and a bound."""
    bounds = [reg_of(lw, x) for x in int_operands(lw, w.bound)]
    syms = list(w.syms or [])
    names = syms[:len(w.names)]
    if len(names) != len(bounds):
        lw.unsupported(w, "this with/foreach form")
    vals = []
    for sym, bound in zip(names, bounds):
        r = lw.b.load_const(dtypes.S32, 0, sym.name)
        v = Val(dtypes.S32, r, bound)
        lw.bind(sym, v)
        vals.append(v)
    if w.tuple_name is not None and len(syms) > len(names):
        lw.bind(syms[-1], Val(None, elems=vals))
    return vals


def lower_with(lw: Lowerer, s: ast.With) -> None:
    lw.names.append({})
    try:
        for w in s.withins:
            bind_within(lw, w)
        lw.body(s.body)
    finally:
        lw.names.pop()


def lower_foreach(lw: Lowerer, s: ast.Foreach) -> None:
    lw.names.append({})
    try:
        loops = []
        if s.withins:
            for w in s.withins:
                loops += [(v, 0, v.bound, 1) for v in bind_within(lw, w)]
        else:
            for r in s.ranges:
                loops += _range_loops(lw, r)
        _nest(lw, loops, s.body)
    finally:
        lw.names.pop()


def _range_loops(lw: Lowerer, rg: ast.Range) -> list:
    """``t(lo:hi:step)``: t = lo, lo+step, ... while t < #t + hi (§5.5.2); a bounded ituple
    bound by ``with`` iterates its elements, leftmost outermost (§6.4.1)."""
    var = lw.lookup(rg.var_sym, rg)
    if isinstance(var, Val) and var.is_tuple and rg.new_name is None and \
            rg.lo is None and rg.hi is None and rg.step is None:
        return [(v, 0, v.bound, 1) for v in var.elems]
    return [_range_loop(lw, rg, var)]


def _range_loop(lw: Lowerer, rg: ast.Range, var):
    if not isinstance(var, Val) or var.bound < 0:
        lw.unsupported(rg, f"iterating '{rg.name}'")
    b = lw.b
    lo = lower_as(lw, rg.lo, dtypes.S32) if rg.lo is not None else None
    hi = lower_as(lw, rg.hi, dtypes.S32) if rg.hi is not None else None
    _check_range(lw, rg, lo, hi)
    end = var.bound if hi is None else b.op("ADD", dtypes.S32, var.bound, hi)
    it = var
    if rg.new_name is not None:
        it = Val(dtypes.S32, b.load_const(dtypes.S32, 0, rg.new_name), var.bound)
        lw.bind(rg.sym, it)
    return (it, 0 if lo is None else Reg(lo), end, rg.step or 1)


def _check_range(lw: Lowerer, rg: ast.Range, lo: int | None, hi: int | None) -> None:
    """lo >= 0 and hi <= 0 (§5.5.2), checked when the loop starts unless known statically."""
    b = lw.b
    checks = [("GE", r) for r in [lo] if r is not None and r not in b.known]
    checks += [("LE", r) for r in [hi] if r is not None and r not in b.known]
    if not checks:
        return
    zero = lw.int_reg(0)
    ok = lw.true_reg()
    for cmp, r in checks:
        ok = b.op("AND", dtypes.BOOL, ok, b.op(cmp, dtypes.BOOL, r, zero))
    emit_check(b, ok, f"range of '{rg.name}' is invalid (lo ", zero if lo is None else lo,
               ", hi ", zero if hi is None else hi, ").")


def _nest(lw: Lowerer, loops: list, body: ast.Stmt) -> None:
    """Nested loops, leftmost outermost (§6.4.1); each variable is 0 again afterwards."""
    if not loops:
        lw.body(body)
        return
    (v, start, end, step), rest = loops[0], loops[1:]
    b = lw.b
    step_r = lw.int_reg(step)
    if isinstance(start, Reg):
        b.emit("SUB", v.reg, start.r, step_r)
    else:
        b.emit("CONST", v.reg, b.const(dtypes.S32, start - step))
    loop = b.open_loop()
    b.emit("ADD", v.reg, v.reg, step_r)
    b.emit("BREAK_IF", b.op("GE", dtypes.BOOL, v.reg, end))
    _nest(lw, rest, body)
    b.close_loop(loop)
    b.emit("CONST", v.reg, b.const(dtypes.S32, 0))


TABLE = {
    ast.Block: lower_block, ast.Empty: lower_empty, ast.ScalarDecl: lower_scalar_decl,
    ast.BufferDecl: lower_buffer_decl, ast.Assign: lower_assign, ast.IncDec: lower_incdec,
    ast.BuiltinStmt: lower_builtin_stmt,
    ast.If: lower_if, ast.While: lower_while, ast.Break: lower_break,
    ast.Continue: lower_continue, ast.Yield: lower_yield, ast.With: lower_with,
    ast.Foreach: lower_foreach,
}
