"""``call`` of a ``__co_device__`` function: the callee is inlined (LANGUAGE.md §6.10);
inline assembly (§6.11) at the end.

The arguments are evaluated in the caller, in order: a scalar argument is converted to its
parameter's type into a new register (parameters are passed by value), a buffer argument
binds the parameter to the caller's buffer itself (a pointer, as in C++). The callee's body
is then lowered in place, its statements carrying their own source positions, interned as
positions *inside this call* (``SpanTable.calling``) so that a runtime error in the callee
names the callee's line and the call.

``return v;`` in the callee stores ``v`` in the call's result register and marks the call
done; the statements after one that may return run under ``IF !done`` (the checker keeps
returns out of loops, so no loop has to be left)::

    res := 0 ; done := false ; ... ; res := v ; done := true ; ... ; t := NOT done ;
    IF t ; <rest of the block> ; END
"""
from __future__ import annotations

from contextlib import contextmanager

from croqvm.core import dtypes
from croqvm.lang import ast

from croqvm.bytecode import module as M
from croqvm.lang.check.calls import ExternFunction, RegisterBudget
from croqvm.lang.check.walk import child_stmts

from croqvm.lang.check.consteval import const_value
from croqvm.lang.check.context import ordinal

from .exprs import lower_as, scalar_value
from .frags import lane_registers
from .state import Lowerer, dtype_of
from .values import BufRef, Val
from .views import access_of, extent, reg_of, resolve_base


class _Inlined:
    """One call being inlined: its result and done registers (-1 when not needed)."""

    def __init__(self, result: int, done: int):
        self.result = result
        self.done = done


class CxxTable:
    """The C++ device functions kernels call (``Module.cxx``), numbered in the order of
    their first call; their text goes into ``Module.cxx_source`` in file order, every one
    of them, as a function may call another."""

    def __init__(self, found: list):
        self.found = found
        self.funcs: list[M.CxxFunc] = []
        self.index: dict[str, int] = {}

    def number(self, fn) -> int:
        if fn.name not in self.index:
            self.index[fn.name] = len(self.funcs)
            ret = dtypes.lookup(fn.ret).code if fn.ret is not None else -1
            self.funcs.append(M.CxxFunc(fn.name, ret,
                                        [dtypes.lookup(p.rstrip("*")).code for p in fn.params],
                                        [p.endswith("*") for p in fn.params]))
        return self.index[fn.name]

    def source(self) -> str:
        return "\n\n".join(fn.text for fn in self.found) if self.funcs else ""


def _cxx_call(lw: Lowerer, e: ast.DeviceCall) -> Val | None:
    """A C++ device function (§6.10.4): scalar arguments converted to their parameters'
    types, buffers by slot; CALL_CXX runs it per lane."""
    fn = e.callee
    b = lw.b
    copies = []
    args = [_pointer(lw, a, copies) if p.endswith("*") else lower_as(lw, a, dtypes.lookup(p))
            for a, p in zip(e.args, fn.params)]
    ret = dtypes.lookup(fn.ret) if fn.ret is not None else None
    result = b.reg(ret, f"{fn.name}()") if ret is not None else -1
    b.emit("CALL_CXX", b.add("cxx_calls", M.CxxCall(lw.cxx.number(fn), args, result)))
    for copy_back in copies:
        copy_back()
    return Val(ret, result) if ret is not None else None


def _is_accumulator(a: ast.Expr) -> bool:
    return isinstance(a, ast.Name) and a.sym is not None and a.sym.kind == "fragment"


def _pointer(lw: Lowerer, a: ast.Expr, copies: list) -> int:
    """The buffer slot a pointer argument passes: a buffer's own, or for an accumulator
    the lane's registers (§11.7 item 10), whose copy back joins ``copies``."""
    if not _is_accumulator(a):
        return lw.lookup(a.sym, a).slot
    ref, _, copy_back = lane_registers(lw, a)
    copies.append(copy_back)
    return ref.slot


def _extern_call(lw: Lowerer, e: ast.DeviceCall) -> None:
    """A function defined in no file of the program (§6.10.6): scalars in registers of
    their own types, buffers by slot; the template arguments travel as written."""
    args, buffers, copies = [], [], []
    for a in e.args:
        ref = lw.lookup(a.sym, a) if isinstance(a, ast.Name) and a.sym is not None else None
        pointer = isinstance(ref, BufRef) or _is_accumulator(a)
        buffers.append(pointer)
        args.append(_pointer(lw, a, copies) if pointer else scalar_value(lw, a).reg)
    targs = ", ".join(lw.snippet(t.span) for t in e.targs)
    b = lw.b
    b.emit("CALL_EXTERN", b.string(e.func),
           b.add("extern_calls", M.ExternCall(targs, args, buffers)))
    for copy_back in copies:
        copy_back()


def _register_budget(lw: Lowerer, e: ast.DeviceCall) -> None:
    lw.b.emit("SET_MAXNREG", e.callee.count, int(e.callee.increase))


def lower_device_call(lw: Lowerer, e: ast.DeviceCall) -> Val | None:
    if isinstance(e.callee, ExternFunction):
        return _extern_call(lw, e)
    if isinstance(e.callee, RegisterBudget):
        return _register_budget(lw, e)
    if not isinstance(e.callee, ast.Function):
        return _cxx_call(lw, e)
    callee = e.callee
    copies = []
    bindings = [(p, _argument(lw, e, k, p, a, copies))
                for k, (p, a) in enumerate(zip(callee.params, e.args))]
    b = lw.b
    ret = dtype_of(e.ty)
    result = b.reg(ret, f"{callee.name}()") if ret is not None else -1
    done = -1
    if _returns_early(callee.body):
        done = b.reg(dtypes.BOOL, f"{callee.name}.done")
        b.emit("MOV", done, b.load_const(dtypes.BOOL, False))
        if result >= 0:
            b.emit("MOV", result, b.load_const(ret, 0))
    with _inlining(lw, e, _Inlined(result, done)):
        for p, v in bindings:
            _bind_param(lw, p, v)
        lw.stmt(callee.body)
    for copy_back in copies:
        copy_back()
    return Val(ret, result) if ret is not None else None


def lower_call_stmt(lw: Lowerer, s: ast.CallStmt) -> None:
    lower_device_call(lw, s.call)


def _argument(lw: Lowerer, e: ast.DeviceCall, k: int, p: ast.Param, a: ast.Expr,
              copies: list):
    if p.shape is None:
        dtype = dtypes.lookup(p.type.name) or dtypes.BOOL
        v = lower_as(lw, a, dtype)
        copy = lw.b.reg(dtype, p.name or "")
        lw.b.emit("MOV", copy, v)
        return Val(dtype, copy)
    if _is_accumulator(a):
        ref, count, copy_back = lane_registers(lw, a)
        want = const_value(p.shape[0].expr) if p.shape[0].expr is not None else None
        if isinstance(want, int) and want != count:
            lw.error(a.span, f"({ordinal(k + 1)}) argument of '{e.func}' is accumulator "
                             f"'{a.id}', whose {count} elements in each lane's registers do "
                             f"not fit parameter '{p.name}' [{want}].",
                     hint=f"a lane of this unit holds {count} of its elements")
        copies.append(copy_back)
        return ref, [count]
    ref = lw.lookup(a.sym, a)
    if not isinstance(ref, BufRef) or ref.array:
        lw.unsupported(a, f"passing '{lw.snippet(a.span)}' to a '__co_device__' function")
    return ref, resolve_base(lw, a).extents


def _bind_param(lw: Lowerer, p: ast.Param, v) -> None:
    if p.sym is None:
        return
    if isinstance(v, Val):
        lw.bind(p.sym, v)
        return
    ref, extents = v
    lw.bind(p.sym, ref)
    for d, x in zip(p.shape, extents):
        sym = getattr(d.expr, "sym", None)
        if isinstance(d.expr, ast.Name) and sym is not None and sym.kind == "dim":
            lw.bind(sym, x if isinstance(x, Val) else
                    Val(dtypes.S32, reg_of(lw, extent(lw, x))))


@contextmanager
def _inlining(lw: Lowerer, e: ast.DeviceCall, frame: _Inlined):
    """Lower the callee's body: its own names, ``return`` ending the call, its spans
    interned as positions inside the call ``e``."""
    saved_table, saved_names = lw.stmt_table, lw.names
    lw.stmt_table = {**lw.stmt_table, ast.Return: lambda lw_, s: _return(lw_, s, frame),
                     ast.Block: lambda lw_, s: _block(lw_, s, frame)}
    lw.names = [{}]
    with lw.spans.calling(e.span):
        try:
            yield
        finally:
            lw.stmt_table, lw.names = saved_table, saved_names


def _return(lw: Lowerer, s: ast.Return, frame: _Inlined) -> None:
    b = lw.b
    if s.value is not None and frame.result >= 0:
        b.emit("MOV", frame.result, lower_as(lw, s.value, b.reg_dtype(frame.result)))
    if frame.done >= 0:
        b.emit("MOV", frame.done, b.load_const(dtypes.BOOL, True))


def _block(lw: Lowerer, s: ast.Block, frame: _Inlined) -> None:
    """A block of the callee: after a statement that may return, the rest runs only in
    the lanes that have not returned."""
    lw.names.append({})
    opened = []
    try:
        for i, x in enumerate(s.stmts):
            lw.stmt(x)
            if frame.done >= 0 and i + 1 < len(s.stmts) and _contains_return(x):
                b = lw.b
                opened.append(b.open_if(b.op("NOT", dtypes.BOOL, frame.done)))
        for pc in reversed(opened):
            lw.b.close_if(pc)
    finally:
        lw.names.pop()


def _contains_return(s) -> bool:
    return isinstance(s, ast.Return) or any(_contains_return(c) for c in child_stmts(s))


def _returns_early(body: ast.Block) -> bool:
    """Whether some ``return`` is not the last statement of the body."""
    tail = body.stmts[-1] if body.stmts else None
    return any(_contains_return(c) for c in child_stmts(body) if c is not tail) or (
        tail is not None and not isinstance(tail, ast.Return) and _contains_return(tail))


def lower_asm(lw: Lowerer, s: ast.Asm) -> None:
    """Inline assembly (§6.11) writes registers of its own, which nothing else writes (so
    no analysis takes one for a constant): each output goes through one, loaded first for
    a read-write ('+') operand, and is moved or stored to its target after::

        t := MOV x | LOAD @e (for '+') ; ASM a ; x := MOV t | STORE @e, t
    """
    b = lw.b
    outputs, results = [], []
    for op in s.outputs:
        read = op.constraint.startswith("+")
        if isinstance(op.expr, ast.ElemAccess):
            acc, base = access_of(lw, op.expr)
            reg = b.reg(base.dtype)
            if read:
                b.emit("LOAD", reg, acc)
            results.append((reg, acc, base))
        else:
            var = lw.lookup(op.expr.sym, op.expr).reg
            reg = b.reg(b.reg_dtype(var))
            if read:
                b.emit("MOV", reg, var)
            results.append((reg, var, None))
        outputs.append(M.AsmOperand(op.constraint, reg, op.name or ""))
    inputs = [M.AsmOperand(op.constraint, scalar_value(lw, op.expr).reg, op.name or "")
              for op in s.inputs]
    b.emit("ASM", b.add("asms", M.AsmDecl(s.template, s.volatile, outputs, inputs,
                                          list(s.clobbers))))
    for reg, target, base in results:
        if base is None:
            b.emit("MOV", target, reg)
            continue
        with lw.once_guard(base.storage in ("shared", "global")):
            b.emit("STORE", target, reg)


TABLE = {ast.CallStmt: lower_call_stmt, ast.Asm: lower_asm}
EXPR_TABLE = {ast.DeviceCall: lower_device_call}
