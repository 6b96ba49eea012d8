"""Buffers, views and element access (LANGUAGE.md §8) as plain integer arithmetic.

A view is (base, origin, extents) with origin and extents relative to the base's own view
(a buffer's whole extent, or a future's data). Extents of the base come from the static
type when known, else from ``DIMOF`` / ``FUT_DIM`` at run time, read where a view uses them
(an element access or a sized ``subspan`` never does). The arithmetic works on *operands*
-- a Python int (known now) or a register -- and folds when both sides are known, so
static tiles cost no instructions.
"""
from __future__ import annotations

from dataclasses import dataclass

from croqvm import dtypes, numerics
from croqvm.bytecode.module import Access, BaseKind, View
from croqvm.faults import LaneFault
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang import types as T

from .state import Lowerer
from .values import BufRef, FutRef, Val


@dataclass(frozen=True)
class Reg:
    r: int


@dataclass(frozen=True)
class Extent:
    """Extent ``k`` of a base known only at run time, read by ``op`` (DIMOF or FUT_DIM)."""
    op: str
    slot: int
    k: int


@dataclass
class Base:
    """The root of a view or access: a buffer slot (``arr`` register or -1) or a future."""
    kind: BaseKind
    slot: int
    arr: int
    dtype: dtypes.DType
    storage: str
    extents: list        # operands, or ``Extent``s read by ``extent`` where used
    text: str


# --------------------------------------------------------------------------- operands

def operand(lw: Lowerer, r: int):
    """Register ``r`` as an operand: its value when it holds a known constant."""
    known = lw.b.known.get(r)
    return Reg(r) if known is None else known


def extent(lw: Lowerer, x):
    """An extent as an operand: a run-time ``Extent`` is read here, at its use."""
    return Reg(lw.b.op_dim(x.op, x.slot, x.k)) if isinstance(x, Extent) else x


def reg_of(lw: Lowerer, x) -> int:
    return x.r if isinstance(x, Reg) else lw.int_reg(x)


def o_op(lw: Lowerer, name: str, a, b):
    """``a <name> b`` on s32 operands: its value when both are known and it does not
    fault (croqvm.numerics computes it as the engine would), else an instruction."""
    if not isinstance(a, Reg) and not isinstance(b, Reg):
        try:
            return numerics.fold_binary(name, a, dtypes.S32, b, dtypes.S32)[0]
        except LaneFault:
            pass
    return Reg(lw.b.op(name, dtypes.S32, reg_of(lw, a), reg_of(lw, b)))


def o_add(lw, a, b):
    if b == 0:
        return a
    if a == 0:
        return b
    return o_op(lw, "ADD", a, b)


def o_mul(lw, a, b):
    if b == 1:
        return a
    if a == 1:
        return b
    return o_op(lw, "MUL", a, b)


def o_div(lw, a, b):
    if b == 1:
        return a
    return o_op(lw, "DIV", a, b)


def int_operand(lw: Lowerer, e: ast.Expr):
    """An integer expression as an s32 operand (folded when constant)."""
    c = const_value(e)
    if isinstance(c, int) and not isinstance(c, bool):
        return numerics.value_of(c, dtypes.S32)
    from .exprs import lower_as
    return operand(lw, lower_as(lw, e, dtypes.S32))


def int_operands(lw: Lowerer, exprs) -> list:
    """Operands of a list of integer expressions; ituples and mdspans count as their elements."""
    out = []
    for e in exprs:
        if isinstance(e.ty, (T.ITuple, T.Mdspan)):
            v = lw.expr(e)
            out.extend(operand(lw, lw.as_int(x)) for x in v.elems)
        else:
            out.append(int_operand(lw, e))
    return out


# --------------------------------------------------------------------------- bases

def resolve_base(lw: Lowerer, e: ast.Expr) -> Base:
    """The buffer or future data that ``e`` (a name, ``f.data``, ``buf[i]``) denotes."""
    text = lw.snippet(e.span)
    if isinstance(e, ast.DataOf):
        e = e.base
    e, arr_idx = peel_subscripts(e)
    if not isinstance(e, ast.Name):
        lw.unsupported(e, f"'{text}' as a buffer")
    ref = lw.lookup(e.sym, e)
    if isinstance(ref, FutRef):
        ty = e.sym.type if isinstance(e.sym.type, T.Future) else e.ty
        shape = ty.shape if isinstance(ty, T.Future) and ty.shape is not None else None
        if shape is None or ty.dtype is None:
            lw.unsupported(e, f"the data of future '{e.id}' whose type is unknown here")
        ext = [d if isinstance(d, int) else Extent("FUT_DIM", ref.slot, k)
               for k, d in enumerate(shape)]
        return Base(BaseKind.FUT, ref.slot, -1, ty.dtype, ty.storage or "shared", ext, text)
    if not isinstance(ref, BufRef):
        lw.unsupported(e, f"'{text}' as a buffer")
    arr = _array_index(lw, ref, arr_idx, e)
    ty = e.sym.type
    shape = ty.shape if isinstance(ty, T.Buffer) else (None,) * ref.rank
    ext = [d if isinstance(d, int) else Extent("DIMOF", ref.slot, k)
           for k, d in enumerate(shape)]
    return Base(BaseKind.BUF, ref.slot, arr, ref.dtype, ref.storage, ext, text)


def peel_subscripts(e: ast.Expr):
    """``(name, [subscripts])`` of ``x[i][j]``: the array element an Index chain selects."""
    subs = []
    while isinstance(e, ast.Index):
        subs.insert(0, e.index)
        e = e.base
    return e, subs


def flat_subscript(lw: Lowerer, subs: list, dims: list[int]) -> int:
    """The row-major flat index register of ``subs`` in an array of shape ``dims``."""
    flat = 0
    for k, e in enumerate(subs):
        flat = o_add(lw, o_mul(lw, flat, dims[k]), int_operand(lw, e))
    return reg_of(lw, flat)


def _array_index(lw: Lowerer, ref: BufRef, idx: list, node) -> int:
    """The flat buffer-array index register (§8.5), or -1 for a single buffer."""
    if not idx:
        return -1
    if len(idx) != len(ref.array):
        lw.unsupported(node, f"indexing buffer array '{ref.name}' with {len(idx)} subscripts")
    return flat_subscript(lw, idx, ref.array)


# --------------------------------------------------------------------------- views

def view_parts(lw: Lowerer, e: ast.Expr):
    """``(base, origin operands, extent operands)`` of a view chain (§8.1-§8.3)."""
    if isinstance(e, ast.ChunkAt):
        base, org, ext = view_parts(lw, e.base)
        args = _chunk_args(lw, e.args)
        if len(args) != len(ext):
            lw.unsupported(e, "chunkat with a tiling factor count different from the rank")
        for k, a in enumerate(args):
            if a is None:                       # `_`: the whole dimension
                continue
            ext[k] = o_div(lw, extent(lw, ext[k]), operand(lw, a.bound))
            org[k] = o_add(lw, org[k], o_mul(lw, operand(lw, lw.as_int(a)), ext[k]))
        return base, org, ext
    if isinstance(e, ast.Subspan):
        base, org, ext = view_parts(lw, e.base)
        new_ext = _sizes(lw, e.sizes, ext)
        steps = int_operands(lw, e.steps) if e.steps else new_ext
        if e.at:
            for k, i in enumerate(int_operands(lw, e.at)):
                org[k] = o_add(lw, org[k], o_mul(lw, i, steps[k]))
        return base, org, new_ext
    if isinstance(e, ast.ViewFrom):
        base, org, ext = view_parts(lw, e.base)
        new_ext = _sizes(lw, e.sizes, ext)
        for k, f in enumerate(int_operands(lw, e.origin)):
            org[k] = o_add(lw, org[k], f)
        return base, org, new_ext
    base = resolve_base(lw, e)
    return base, [0] * len(base.extents), list(base.extents)


def _sizes(lw: Lowerer, sizes, ext) -> list:
    """The extents of ``subspan(...)`` or ``view(...)``: ``_`` keeps the current one;
    ituples and mdspans count as their elements."""
    out = []
    for s in sizes:
        if isinstance(s, ast.Wildcard):
            out.append(extent(lw, ext[len(out)]))
        else:
            out.extend(int_operands(lw, [s]))
    return out


def _chunk_args(lw: Lowerer, args) -> list:
    """chunkat arguments as bounded ``Val``s (None for ``_``); bounded ituples spread."""
    out = []
    for a in args:
        if isinstance(a, ast.Wildcard):
            out.append(None)
            continue
        v = lw.expr(a)
        for x in (v.elems if v.is_tuple else [v]):
            if x.bound < 0:
                lw.unsupported(a, "a chunkat argument without a bound")
            out.append(x)
    return out


def view_of(lw: Lowerer, e: ast.Expr, extents=None):
    """Lower a view chain to a ``View`` entry; returns ``(view index, base, extents)``.
    ``extents``: operands that replace the chain's extents (a destination cut to the
    source that fits it)."""
    base, org, ext = view_parts(lw, e)
    ext = [extent(lw, x) for x in (ext if extents is None else extents)]
    view = View(base.kind, base.slot, base.arr, [reg_of(lw, o) for o in org],
                [reg_of(lw, x) for x in ext], _root_text(base.text))
    return lw.b.add("views", view), base, ext


def k_view(lw: Lowerer, e: ast.Expr, dim: int, origin: int, size: int):
    """Like ``view_of``, restricted to ``size`` elements from ``origin`` in dimension
    ``dim``: one K tile of an MMA operand (§11.6)."""
    base, org, ext = view_parts(lw, e)
    org[dim] = o_add(lw, org[dim], origin)
    ext[dim] = size
    ext = [extent(lw, x) for x in ext]
    view = View(base.kind, base.slot, base.arr, [reg_of(lw, o) for o in org],
                [reg_of(lw, x) for x in ext], _root_text(base.text))
    return lw.b.add("views", view), base, ext


def _root_text(text: str) -> str:
    return text[:-5] if text.endswith(".data") else text


# --------------------------------------------------------------------------- element access

def access_of(lw: Lowerer, e: ast.ElemAccess) -> tuple[int, Base]:
    base = resolve_base(lw, e.base)
    idx = [reg_of(lw, x) for x in int_operands(lw, e.indices)]
    # named as written (``f.data.at(1, 2)``): ``f.at`` is no construct of the language
    acc = Access(base.kind, base.slot, base.arr, idx, base.text)
    return lw.b.add("accesses", acc), base


def lower_elem(lw: Lowerer, e: ast.ElemAccess) -> Val:
    from .frags import is_fragment_elem, lower_fragment_elem   # frags imports this module
    if is_fragment_elem(e):
        return lower_fragment_elem(lw, e)
    acc, base = access_of(lw, e)
    r = lw.b.reg(base.dtype)
    lw.b.emit("LOAD", r, acc)
    return Val(base.dtype, r)


def lower_span_of(lw: Lowerer, e: ast.SpanOf) -> Val:
    """``a.span`` -> mdspan of extents; ``a.span(i)`` -> extent i (§4.4)."""
    if isinstance(e.base.ty, T.Mdspan):
        elems = lw.expr(e.base).elems
    elif isinstance(e.base.ty, T.Fragment):      # an accumulator's static shape (§11.5)
        elems = list(e.base.ty.shape)
    else:
        elems = resolve_base(lw, e.base).extents
    if e.dim is None:
        return Val(None, elems=[_extent_val(lw, x) for x in elems])
    k = const_value(e.dim)
    if not isinstance(k, int) or not 0 <= k < len(elems):
        lw.unsupported(e.dim, "a non-constant dimension in '.span(i)'")
    return _extent_val(lw, elems[k])


def _extent_val(lw: Lowerer, x) -> Val:
    return x if isinstance(x, Val) else Val(dtypes.S32, reg_of(lw, extent(lw, x)))


def lower_elem_count(lw: Lowerer, e: ast.ElemCount) -> Val:
    v = lw.expr(e.operand)
    total = 1
    for x in (v.elems if v.is_tuple else [v]):
        total = o_mul(lw, total, operand(lw, lw.as_int(x)))
    return Val(dtypes.S32, reg_of(lw, total))


TABLE = {ast.ElemAccess: lower_elem, ast.SpanOf: lower_span_of, ast.ElemCount: lower_elem_count}
