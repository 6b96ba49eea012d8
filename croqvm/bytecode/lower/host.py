"""Functions: parameters, symbolic dimensions, the host program and returns (LANGUAGE.md
§3.3.3, §14; docs/EXECUTION.md §2-§3).

Buffer parameters become host buffer slots bound by parameter index; scalar parameters
and symbolic dimensions become host registers the engine sets before the host program
runs. Kernels are lowered where their ``parallel`` statement stands (kernel.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.core import dtypes
from croqvm.bytecode import module as M
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang.check.walk import child_stmts
from croqvm.lang import types as T

from .builder import CodeBuilder
from .dma import refuse_unaddressed
from .exprs import lower_as
from .state import Lowerer, dtype_of
from .values import BufRef, Env, Val
from .views import reg_of, view_of


@dataclass
class FunctionState:
    name: str
    ret_kind: M.RetKind = M.RetKind.VOID
    ret_dtype: dtypes.DType | None = None
    kernels: list = field(default_factory=list)
    cache: dict = field(default_factory=dict)     # per-concern facts (future groups)
    body: ast.Stmt | None = None                  # for scans of host-level statements


def lower_function(lw: Lowerer, fn: ast.Function) -> M.Function:
    code = M.Code()
    b = CodeBuilder(code, lw.spans)
    b.span = fn.name_span or fn.span
    lw.fn = FunctionState(fn.name, body=fn.body)
    lw.names = [{}]
    with lw.using(b, Env()):
        params, dims = _bind_params(lw, fn)
        _return_type(lw, fn)
        lw.stmt(fn.body)
        b.span = fn.span
        b.emit("RET")
        refuse_unaddressed(lw)
        b.finish(fn.name_span or fn.span)
    fs = lw.fn
    ret_dtype = fs.ret_dtype.code if fs.ret_dtype is not None else -1
    return M.Function(fn.name, params, dims, fs.ret_kind, ret_dtype, code, fs.kernels,
                      lw.spans.intern(fn.name_span or fn.span))


def _bind_params(lw: Lowerer, fn: ast.Function):
    b = lw.b
    params: list[M.Param] = []
    dims: dict[str, int] = {}
    for i, p in enumerate(fn.params):
        name = p.name or ""
        if p.type.name == "stream":
            params.append(M.Param(name, M.ParamKind.STREAM, -1))
            continue
        dtype = dtypes.lookup(p.type.name) or dtypes.BOOL
        if p.shape is None:
            r = b.reg(dtype, name)
            params.append(M.Param(name, M.ParamKind.SCALAR, dtype.code, slot=r))
            if p.sym is not None:
                lw.bind(p.sym, Val(dtype, r))
            continue
        shape = [_param_dim(lw, d, dims) for d in p.shape]
        slot = b.add("buffers", M.BufferDecl(name, M.Storage.GLOBAL, dtype.code, [], param=i,
                                             span=lw.spans.intern(p.span)))
        # ``&`` (§14.3.3) asks for what ``global`` gives: the caller's array is updated.
        copied_back = p.storage == "global" or p.by_ref
        storage = M.ParamStorage.GLOBAL if copied_back else M.ParamStorage.DEFAULT
        params.append(M.Param(name, M.ParamKind.BUFFER, dtype.code, shape, storage, slot))
        if p.sym is not None:
            lw.bind(p.sym, BufRef(slot, dtype, "global", len(shape), [], name))
    for sym in fn.sym_table or []:
        if sym.kind == "dim" and sym.name in dims:
            lw.bind(sym, Val(dtypes.S32, dims[sym.name]))
    return params, list(dims.items())


def _param_dim(lw: Lowerer, d: ast.Dim, dims: dict):
    """A parameter dimension: an int, a symbolic name (bound at call time, §14.3.2) or "?"."""
    if d.expr is None:
        return "?"
    e = d.expr
    sym = getattr(e, "sym", None)
    if isinstance(e, ast.Name) and (sym is None or sym.kind == "dim"):
        if e.id not in dims:
            dims[e.id] = lw.b.reg(dtypes.S32, e.id)
        if sym is not None:
            lw.bind(sym, Val(dtypes.S32, dims[e.id]))
        return e.id
    c = const_value(e)
    if isinstance(c, int) and not isinstance(c, bool):
        return c
    lw.unsupported(e, "a parameter dimension that is neither a constant nor a name")


def _return_type(lw: Lowerer, fn: ast.Function) -> None:
    """The result kind: written, or for ``auto`` the type of the first ``return e`` (§14.3.4)."""
    fs = lw.fn
    name = fn.ret.name
    if name == "void":
        return
    if name != "auto":
        fs.ret_dtype = dtypes.lookup(name) or (dtypes.BOOL if name == "bool" else dtypes.S32)
        fs.ret_kind = M.RetKind.BUFFER if fn.ret_shape else M.RetKind.SCALAR
        return
    ret = _first_return(fn.body)
    if ret is None:
        return
    ty = ret.value.ty
    if isinstance(ty, T.Buffer):
        fs.ret_kind, fs.ret_dtype = M.RetKind.BUFFER, ty.dtype
    elif dtype_of(ty) is not None:
        fs.ret_kind, fs.ret_dtype = M.RetKind.SCALAR, dtype_of(ty)
    else:
        lw.error(ret.span, f"returning value with type '{ty}' is not supported.")


def _first_return(s):
    if isinstance(s, ast.Return) and s.value is not None:
        return s
    for c in child_stmts(s):
        r = _first_return(c)
        if r is not None:
            return r
    return None


def lower_return(lw: Lowerer, s: ast.Return) -> None:
    fs = lw.fn
    if s.value is None or fs.ret_kind == M.RetKind.VOID:
        lw.b.emit("RET")
        return
    if fs.ret_kind == M.RetKind.BUFFER:
        ref = lw.expr(s.value) if isinstance(s.value, ast.Name) else None
        if isinstance(ref, BufRef) and not ref.array:
            lw.b.emit("RET_BUF", ref.slot)
        else:
            lw.b.emit("RET_BUF", _copy_out(lw, s.value))
        return
    lw.b.emit("RET_VAL", lower_as(lw, s.value, fs.ret_dtype))


def _copy_out(lw: Lowerer, e: ast.Expr) -> int:
    """``return f.data;`` / ``return buf[i];``: a fresh buffer holding a copy (§14.3.4)."""
    src, base, ext = view_of(lw, e)
    shape = [reg_of(lw, x) for x in ext]
    slot = lw.b.add("buffers", M.BufferDecl("result", M.Storage.GLOBAL, base.dtype.code, shape,
                                            span=lw.spans.intern(e.span)))
    lw.b.emit("ALLOC", slot)
    zeros = [lw.int_reg(0) for _ in shape]
    dst = lw.b.add("views", M.View(M.BaseKind.BUF, slot, -1, zeros, shape, "result"))
    lw.b.emit("DMA", lw.b.add("dmas", M.DmaDesc(M.DmaOp.COPY, src, dst_view=dst, text="return")),
              -1)
    return slot


TABLE = {ast.Return: lower_return}
