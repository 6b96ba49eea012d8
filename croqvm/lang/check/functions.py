"""Functions: parameters and symbolic dimensions (LANGUAGE.md §3.3.3, §14.3) and the
return rules of §14.3.4."""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.types import Bounded, Buffer, Scalar, Stream, Symbol

from .consteval import const_value
from .context import Checker, is_bad
from .dma import expect_later_types, later_types
from .mma import expect_later_shapes, later_shapes
from .typerules import INT, convert, dim_of, is_integer, is_unknown, resolve_type, tname


def _param_dim(ck, p: ast.Param, dim: ast.Dim):
    """One dimension of a parameter shape: ``?``, a symbolic name, or an expression."""
    if dim.expr is None:
        if p.storage != "global":
            ck.error(dim.span, "The parameter with an unbounded dimension must be global.",
                     hint="write 'global' before the parameter's type")
        return None
    e = dim.expr
    if isinstance(e, ast.Name):
        sym = ck.lookup(e.id)
        if sym is None:  # a symbolic dimension, bound by its first occurrence (§14.3.2)
            sym = ck.declare(e.id, "dim", INT, dim, e.span)
        if sym.kind == "dim":
            e.sym, e.ty = sym, INT
            return e.id
    ty = ck.expr(e)
    if not is_unknown(ty) and not is_integer(ty):
        ck.error(e.span, f"a parameter shape requires integers but got '{tname(ty)}'.")
        return None
    value = const_value(e)
    if isinstance(value, int) and value <= 0:
        ck.error(e.span, f'The mdspan size "{value}" is invalid!')
    return dim_of(e)


def declare_params(ck, fn: ast.Function):
    for index, p in enumerate(fn.params):
        kind, mutable = "scalar", False
        if p.type.name == "stream":
            kind, ty = "stream", Stream()
        elif p.shape is None:
            dt = resolve_type(ck, p.type)
            control = p.type.name in ("int", "bool")
            ty = Scalar(dt, control=control) if dt is not None else None
            mutable = not control  # §3.4.2
        else:
            if p.storage in ("shared", "local"):
                ck.error(p.span, f"the {p.storage} data can not be used as a parameter.")
            dt = resolve_type(ck, p.type)
            shape = tuple(_param_dim(ck, p, d) for d in p.shape)
            kind, mutable = "buffer", True
            ty = Buffer(dt, shape, "global") if dt is not None else None
        _check_by_ref(ck, p, kind)
        if p.name is None:
            p.sym = Symbol("", kind, ty, p, mutable=mutable, param_index=index)
            continue
        p.sym = ck.declare(p.name, kind, ty, p, p.span, mutable=mutable, param_index=index)
        if ty is None:
            p.sym.info["bad"] = True


def _check_by_ref(ck, p: ast.Param, kind: str):
    """``&`` on a buffer parameter asks for its writes to reach the caller (§14.3.3);
    the reference's rules for where it may stand (lib/earlysema.cpp, Parameter)."""
    if not p.by_ref:
        return
    if p.name is None:
        ck.error(p.span, "Unnamed parameter is not allowed to be passed by reference.",
                 hint="name the parameter after '&'")
    elif kind != "buffer":
        ck.error(p.span, "Scalar parameter is not supported to be passed by reference for "
                         "now.", hint="remove the '&'; return the value instead")
    elif p.storage == "global":
        ck.error(p.span, f"The parameter '{p.name}' is global, which is not allowed to be "
                         f"passed by reference.",
                 hint="a 'global' parameter is updated in place already: remove the '&'")


# --------------------------------------------------------------------------- returns


def _return_type(ck, fn: ast.Function):
    """The written return type, or None for ``auto``/``void``."""
    if fn.ret.name in ("auto", "void"):
        return None
    dt = resolve_type(ck, fn.ret)
    if dt is None:
        return None
    if fn.ret_shape is not None:
        shape = tuple(dim_of(e) if not is_unknown(ck.expr(e)) else None for e in fn.ret_shape)
        return Buffer(dt, shape, "global")
    return Scalar(dt)


def _spelling(ty) -> str:
    return tname(Scalar(ty.dtype) if isinstance(ty, Scalar) else ty)


def _compatible(a, b) -> bool:
    if isinstance(a, Buffer) and isinstance(b, Buffer):
        return a.dtype is b.dtype and len(a.shape) == len(b.shape) and all(
            x == y or x is None or y is None for x, y in zip(a.shape, b.shape))
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        return a.dtype is b.dtype
    return False


def check_returns(ck, fn: ast.Function):
    """§14.3.4. A scalar returned from a function with a written scalar result type
    initialises the result: it converts to that type as an initialisation does (§3.4.6,
    the lossy-conversion warning included), as lowering's ``RET_VAL`` converts it. A
    returned buffer, and every return of an ``auto`` function, must have the type of the
    written or first returned one."""
    void = fn.ret.name == "void"
    expected = _return_type(ck, fn)
    first = expected
    for stmt, ty in ck.returns:
        if stmt.value is None:
            if not void:
                ck.error(stmt.span, f"non-void function '{fn.name}' must return a value.")
            continue
        if void:
            ck.error(stmt.span, f"return statement found in void function '{fn.name}'.")
            continue
        if is_unknown(ty):
            continue
        if isinstance(expected, Scalar) and isinstance(ty, (Scalar, Bounded)):
            convert(ck, ty, expected.dtype, stmt.value)
            continue
        if isinstance(ty, Bounded):
            ty = INT
        if isinstance(ty, Buffer):
            if ty.storage != "global":
                ck.error(stmt.span, "can not return type with non-default/global storage.")
                continue
        elif not isinstance(ty, Scalar):
            ck.error(stmt.span, f"returning value with type '{tname(ty)}' is not supported.")
            continue
        if first is None:
            first = ty
        elif not _compatible(first, ty):
            ck.error(stmt.span, f"return type inconsistent: {_spelling(first)} vs. "
                                f"{_spelling(ty)}")
    if not void and not ck.returns:
        ck.error(fn.name_span or fn.span,
                 f"non-void function '{fn.name}' does not contain a return statement.")


# --------------------------------------------------------------------------- driver


def check_function(fn: ast.Function, sink, expr_rules, stmt_rules, finishers,
                   function_names=frozenset(), device_functions=None):
    """Check ``fn``, reporting into ``sink``. A function using the shape of a ``dma.any``
    placeholder before the DMA that fixes it (§9.4.4), or the elements of an accumulator
    before the MMA that shapes it (§11.3.3), is checked a second time, knowing those types
    from the first pass (see ``dma``, ``mma``); only the last pass reports."""
    first = DiagnosticSink()
    ck = _check_pass(fn, first, expr_rules, stmt_rules, finishers, function_names,
                     device_functions, {}, {})
    later, shapes = later_types(ck), later_shapes(ck)
    if later or shapes:
        ck = _check_pass(fn, sink, expr_rules, stmt_rules, finishers, function_names,
                         device_functions, later, shapes)
    else:
        for d in first.items:
            sink.add(d)
    fn.sym_table = ck.symbols


def _check_pass(fn, sink, expr_rules, stmt_rules, finishers, function_names,
                device_functions, later, shapes) -> Checker:
    ck = Checker(sink, fn, expr_rules, stmt_rules, function_names, device_functions)
    expect_later_types(ck, later)
    expect_later_shapes(ck, shapes)
    try:
        declare_params(ck, fn)
        ck.body(fn.body, joined=True)
        check_returns(ck, fn)
        for finish in finishers:
            finish(ck)
        for name in ck.late_names:  # futures and fragments are typed by later statements
            if not is_bad(name.sym):
                name.ty = name.sym.type
    except RecursionError:
        ck.error(fn.span, "nesting too deep")
    except Exception as exc:  # never let a checker bug escape (§15.1)
        ck.error(fn.span, f"internal error: {type(exc).__name__}: {exc}")
    return ck
