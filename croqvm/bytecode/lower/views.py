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

from croqvm.core import dtypes, numerics
from croqvm.bytecode.module import Access, BaseKind, View
from croqvm.core.faults import LaneFault
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang import types as T

from .output import emit_check
from .state import Lowerer
from .values import BufRef, FutRef, Val, ViewAlias


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
    fault (croqvm.core.numerics computes it as the engine would), else an instruction."""
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
        inside = {id(g) for g in lw.ctx.guards}
        if e.sym.info.get("shared_future") and \
                not all(id(i) in inside for i in e.sym.info["filled_in"]):
            lw.unsupported(e, f"the data of the shared future '{e.id}' outside the "
                              f"'inthreads' branch that fills it (read its destination buffer)")
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
    if len(idx) > len(ref.array):
        lw.unsupported(node, f"indexing buffer array '{ref.name}' with {len(idx)} subscripts")
    flat = flat_subscript(lw, idx, ref.array)
    for d in ref.array[len(idx):]:        # a partial subscript: the sub-array's first buffer
        flat = lw.b.op("MUL", dtypes.S32, flat, lw.int_reg(d))
    return flat


# --------------------------------------------------------------------------- views

@dataclass
class VState:
    """A view chain lowered (§8.1-§8.3): origin and extents (operands) in an index
    space of extents ``space`` -- the base's own, or the shape of a ``span_as`` of the
    contiguous view ``under`` -- and the dimensions it shows (``keep``, None: all).
    With ``strides`` (operands), a view with element strides over the memory of
    ``under`` from its first element: index ``x`` lies ``sum(x_k * strides_k)`` elements
    after it."""
    base: Base
    org: list
    ext: list
    space: list
    keep: list | None = None
    under: "VState | None" = None
    strides: list | None = None

    @property
    def shown(self) -> list[int]:
        return list(range(len(self.ext))) if self.keep is None else self.keep


def view_state(lw: Lowerer, e: ast.Expr) -> VState:
    """The ``VState`` of a view chain; a named view stands for its chain (§8.3.5)."""
    if isinstance(e, ast.Name) and isinstance(e.ty, T.View):
        alias = lw.lookup(e.sym, e)
        if not isinstance(alias, ViewAlias):
            lw.unsupported(e, f"'{e.id}' as a view")
        return view_state(lw, alias.expr)
    if isinstance(e, ast.ViewFrom) and e.strides is not None:
        return _strided(lw, e, view_state(lw, e.base))
    if isinstance(e, (ast.ChunkAt, ast.Subspan, ast.ViewFrom)):
        st = view_state(lw, e.base)
        shown = st.shown
        org, ext = _window(lw, e, [st.org[k] for k in shown], [st.ext[k] for k in shown])
        for k, o, x in zip(shown, org, ext):
            st.org[k], st.ext[k] = o, x
        return st
    if isinstance(e, ast.SpanAs):
        return _span_as(lw, e, view_state(lw, e.base))
    if isinstance(e, ast.Squeeze):
        st = view_state(lw, e.base)
        keep = list(e.ty.keep)
        st.keep = None if keep == list(range(len(st.ext))) else keep
        return st
    base = resolve_base(lw, e)
    return VState(base, [0] * len(base.extents), list(base.extents), list(base.extents))


def _window(lw: Lowerer, e, org: list, ext: list):
    """``chunkat``, ``subspan`` or ``view`` applied to origin and extents (§8.2, §8.3)."""
    if isinstance(e, ast.ChunkAt):
        args = _chunk_args(lw, e.args)
        if len(args) != len(ext):
            lw.unsupported(e, "chunkat with a tiling factor count different from the rank")
        for k, a in enumerate(args):
            if a is None:                       # `_`: the whole dimension
                continue
            ext[k] = o_div(lw, extent(lw, ext[k]), operand(lw, a.bound))
            org[k] = o_add(lw, org[k], o_mul(lw, operand(lw, lw.as_int(a)), ext[k]))
        return org, ext
    new_ext = _sizes(lw, e.sizes, ext)
    if isinstance(e, ast.Subspan):
        steps = int_operands(lw, e.steps) if e.steps else new_ext
        if e.at:
            for k, i in enumerate(int_operands(lw, e.at)):
                org[k] = o_add(lw, org[k], o_mul(lw, i, steps[k]))
        return org, new_ext
    for k, f in enumerate(int_operands(lw, e.origin)):
        org[k] = o_add(lw, org[k], f)
    return org, new_ext


def _span_as(lw: Lowerer, e: ast.SpanAs, under: VState) -> VState:
    """§8.3.3: a new index space over the elements of the contiguous ``under``. Its
    element count and its origin in the dimensions it covers whole are checked here when
    not known at compile time (the checker proved the rest)."""
    from croqvm.lang.check.views import contiguous_prefix
    sizes = int_operands(lw, e.sizes)
    shown = [extent(lw, under.ext[k]) for k in under.shown]
    under.ext = [extent(lw, x) for x in under.ext]
    new, old = _product(lw, sizes), _product(lw, shown)
    if isinstance(new, Reg) or isinstance(old, Reg):
        ok = lw.b.op("EQ", dtypes.BOOL, reg_of(lw, new), reg_of(lw, old))
        emit_check(lw.b, ok, "span_as reshapes ", reg_of(lw, old), " elements into ",
                   reg_of(lw, new), ".")
    src = e.base.ty     # a buffer or a future's data is contiguous as a whole
    prefix = contiguous_prefix(src.full, src.space) if isinstance(src, T.View) \
        else len(under.org) - 1
    if prefix is None:
        _check_contiguous(lw, under)
        return VState(under.base, [0] * len(sizes), list(sizes), list(sizes), None, under)
    for k in range(prefix + 1, len(under.org)):
        o = under.org[k]
        if isinstance(o, Reg):
            ok = lw.b.op("EQ", dtypes.BOOL, o.r, lw.int_reg(0))
            emit_check(lw.b, ok, f"span_as needs a contiguous view, but its origin in "
                                 f"dimension {k} is ", o.r, ", not 0.")
    return VState(under.base, [0] * len(sizes), list(sizes), list(sizes), None, under)


def _check_contiguous(lw: Lowerer, st: VState) -> None:
    """At run time, that the view ``st`` a ``span_as`` reshapes is contiguous, where
    the checker could not tell (§8.3.3): after its first dimension of an extent other
    than 1, each dimension is whole, from 0."""
    partial = lw.b.op("NE", dtypes.BOOL, lw.int_reg(0), lw.int_reg(0))
    for k, (o, x, n) in enumerate(zip(st.org, st.ext, st.space)):
        o, x, n = reg_of(lw, o), reg_of(lw, extent(lw, x)), reg_of(lw, extent(lw, n))
        if k:
            whole = lw.b.op("AND", dtypes.BOOL, lw.b.op("EQ", dtypes.BOOL, o, lw.int_reg(0)),
                            lw.b.op("EQ", dtypes.BOOL, x, n))
            ok = lw.b.op("OR", dtypes.BOOL, lw.b.op("NOT", dtypes.BOOL, partial), whole)
            emit_check(lw.b, ok, f"span_as needs a contiguous view, but dimension {k} of "
                                 f"'{_root_text(st.base.text)}' spans [", o, ", ",
                       lw.b.op("ADD", dtypes.S32, o, x), ") of [0, ", n,
                       ") after a dimension of extent other than 1.")
        partial = lw.b.op("OR", dtypes.BOOL, partial,
                          lw.b.op("NE", dtypes.BOOL, x, lw.int_reg(1)))


def _strided(lw: Lowerer, e: ast.ViewFrom, under: VState) -> VState:
    """§8.3.2 with element strides (Croqtile: view-operations.md): extents and origin in
    a space of the view's own, whose index ``x`` lies ``sum(x_k * t_k)`` elements after
    the first element of ``under`` in memory (lib/Target/GPU/cute_codegen.cpp scales the
    ``.from`` offsets by the strides too)."""
    if under.strides is not None:
        lw.unsupported(e, "element strides on a view that has element strides already")
    ext = _sizes(lw, e.sizes, [under.ext[k] for k in under.shown])
    org = int_operands(lw, e.origin)
    strides = int_operands(lw, e.strides)
    return VState(under.base, org, ext, list(ext), None, under, strides)


def _strided_index(lw: Lowerer, st: VState, full: list) -> list:
    """The base element at index ``full`` of the strided ``st``: its offset from the
    first element of ``st.under``, checked to lie inside the space of ``st.under``, then
    that space's row-major index of it."""
    under = st.under
    space = [extent(lw, x) for x in under.space]
    linear = 0
    for o, x in zip(under.org, space):         # the first element of under
        linear = o_add(lw, o_mul(lw, linear, x), o)
    for x, t in zip(full, st.strides):
        linear = o_add(lw, linear, o_mul(lw, x, t))
    count = _product(lw, space)
    if isinstance(linear, Reg) or isinstance(count, Reg) or not 0 <= linear < count:
        at = reg_of(lw, linear)
        ok = lw.b.op("AND", dtypes.BOOL, lw.b.op("GE", dtypes.BOOL, at, lw.int_reg(0)),
                     lw.b.op("LT", dtypes.BOOL, at, reg_of(lw, count)))
        emit_check(lw.b, ok, "a view with element strides reaches element ", at,
                   f" of '{_root_text(under.base.text)}' in memory order, which has ",
                   reg_of(lw, count), " elements.")
    idx = []
    for x in reversed(space[1:]):
        idx.insert(0, o_op(lw, "MOD", linear, x))
        linear = o_div(lw, linear, x)
    idx.insert(0, linear)
    whole = VState(under.base, [0] * len(space), space, space, None, under.under)
    return _base_index(lw, whole, idx)


def _product(lw: Lowerer, xs: list):
    total = 1
    for x in xs:
        total = o_mul(lw, total, x)
    return total


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


def view_of(lw: Lowerer, e: ast.Expr, extents=None, mma: bool = False):
    """Lower a view chain to a ``View`` entry; returns ``(view index, base, extents)``, the
    extents those it shows. ``extents``: operands that replace the shown extents (a
    destination cut to the source that fits it). ``mma``: an MMA operand, which is not
    yet a view with element strides or a reshape of a future's data."""
    st = view_state(lw, e)
    if extents is not None:
        for k, x in zip(st.shown, extents):
            st.ext[k] = x
    return _view_record(lw, e, st, mma)


def k_view(lw: Lowerer, e: ast.Expr, dim: int, origin: int, size: int):
    """Like ``view_of``, restricted to ``size`` elements from ``origin`` in shown
    dimension ``dim``: one K tile of an MMA operand (§11.6)."""
    st = view_state(lw, e)
    k = st.shown[dim]
    st.org[k] = o_add(lw, st.org[k], origin)
    st.ext[k] = size
    return _view_record(lw, e, st, True)


def _view_record(lw: Lowerer, e: ast.Expr, st: VState, mma: bool):
    """The ``View`` of ``st`` as a DMA or MMA operand: a window of its base, or of a
    reshape of the base's elements from the first element of the contiguous view a
    ``span_as`` reinterprets (§8.3.3), or its elements at element strides from a first
    one (§8.3.2); a ``.sqz()`` shows some of its dimensions."""
    base = st.base
    if mma and (st.strides is not None or (st.under is not None and base.kind == BaseKind.FUT)):
        lw.unsupported(e, "a view with element strides or a 'span_as' of a future's data "
                          "as an MMA operand")
    ext = [extent(lw, x) for x in st.ext]
    view = View(base.kind, base.slot, base.arr, [reg_of(lw, o) for o in st.org],
                [reg_of(lw, x) for x in ext], _root_text(base.text),
                shown=[] if st.keep is None else list(st.keep))
    if st.strides is not None:
        view.strides = [reg_of(lw, t) for t in st.strides]
        view.flat = reg_of(lw, _strided_first(lw, st, ext))
    elif st.under is not None:
        view.space = [reg_of(lw, extent(lw, x)) for x in st.space]
        view.flat = reg_of(lw, _first_element(lw, st.under))
    return lw.b.add("views", view), base, [ext[k] for k in st.shown]


def _strided_first(lw: Lowerer, st: VState, ext: list):
    """The base position of index 0 of the strided ``st`` as a DMA operand (§8.3.2):
    the first element of ``st.under``, from which its strides count. Every element of
    the tile is checked here to lie in the memory the strides count in, as an element
    access of it would be (``_strided_index``): the index space of ``st.under``, a
    base or a reshape. The lowest and the highest element settle it."""
    under = st.under
    space = [extent(lw, x) for x in under.space]
    start = _first_element(lw, under.under) if under.under is not None else 0
    lead = 0
    for o, x in zip(under.org, space):         # the first element of under, in its space
        lead = o_add(lw, o_mul(lw, lead, x), o)
    lo = hi = lead
    for o, x, t in zip(st.org, ext, st.strides):
        first, last = o_mul(lw, o, t), o_mul(lw, o_add(lw, o_add(lw, o, x), -1), t)
        lo = o_add(lw, lo, o_op(lw, "MIN", first, last))
        hi = o_add(lw, hi, o_op(lw, "MAX", first, last))
    count = _product(lw, space)
    text = _root_text(under.base.text)
    for at, test, bound in ((lo, "GE", 0), (hi, "LT", count)):
        if isinstance(at, Reg) or isinstance(count, Reg) or not 0 <= at < count:
            ok = lw.b.op(test, dtypes.BOOL, reg_of(lw, at), reg_of(lw, bound))
            emit_check(lw.b, ok, "a view with element strides reaches element ",
                       reg_of(lw, at), f" of '{text}' in memory order, which has ",
                       reg_of(lw, count), " elements.")
    return o_add(lw, start, lead)


def _first_element(lw: Lowerer, st: VState):
    """The row-major position in its base of the first element of ``st``, a contiguous
    view that a ``span_as`` reinterprets. Each window on the way down is checked to lie
    inside its index space (at run time where that is not known at compile time): only
    then does the reshape cover elements of the buffer it names."""
    space = [extent(lw, x) for x in st.space]
    first = _first_element(lw, st.under) if st.under is not None else 0
    pos = 0
    for k, (o, x, n) in enumerate(zip(st.org, st.ext, space)):
        end = o_add(lw, o, extent(lw, x))
        if isinstance(o, Reg) or isinstance(end, Reg) or isinstance(n, Reg) \
                or not (0 <= o and end <= n):
            ok = lw.b.op("AND", dtypes.BOOL,
                         lw.b.op("GE", dtypes.BOOL, reg_of(lw, o), lw.int_reg(0)),
                         lw.b.op("LE", dtypes.BOOL, reg_of(lw, end), reg_of(lw, n)))
            emit_check(lw.b, ok, f"span_as of a view outside {st.base.text}: dimension {k} "
                                 f"spans [", reg_of(lw, o), ", ", reg_of(lw, end),
                       ") of [0, ", reg_of(lw, n), ").")
        pos = o_add(lw, o_mul(lw, pos, n), o)
    return o_add(lw, first, pos)


def _root_text(text: str) -> str:
    return text[:-5] if text.endswith(".data") else text


# --------------------------------------------------------------------------- element access

def access_of(lw: Lowerer, e: ast.ElemAccess) -> tuple[int, Base]:
    if isinstance(e.base.ty, T.View):
        return _view_access(lw, e)
    base = resolve_base(lw, e.base)
    idx = [reg_of(lw, x) for x in int_operands(lw, e.indices)]
    # named as written (``f.data.at(1, 2)``): ``f.at`` is no construct of the language
    acc = Access(base.kind, base.slot, base.arr, idx, base.text)
    return lw.b.add("accesses", acc), base


def _view_access(lw: Lowerer, e: ast.ElemAccess) -> tuple[int, Base]:
    """Element ``i`` of a view (§8.3.5): ``i`` is checked against the extents the view
    shows, then maps to an element of its base, through the row-major order of each
    ``span_as`` on the way; the base's own access check follows."""
    st = view_state(lw, e.base)
    idx = int_operands(lw, e.indices)
    text = lw.snippet(e.span)
    for k, (i, x) in enumerate(zip(idx, [extent(lw, st.ext[k]) for k in st.shown])):
        if not isinstance(i, Reg) and not isinstance(x, Reg) and 0 <= i < x:
            continue
        ok = lw.b.op("AND", dtypes.BOOL,
                     lw.b.op("GE", dtypes.BOOL, reg_of(lw, i), lw.int_reg(0)),
                     lw.b.op("LT", dtypes.BOOL, reg_of(lw, i), reg_of(lw, x)))
        emit_check(lw.b, ok, f"out-of-range access {text}: index ", reg_of(lw, i),
                   f" of dimension {k} is not in [0, ", reg_of(lw, x), ").")
    full = _base_index(lw, st, idx)
    base = st.base
    acc = Access(base.kind, base.slot, base.arr, [reg_of(lw, x) for x in full], base.text)
    return lw.b.add("accesses", acc), base


def _base_index(lw: Lowerer, st: VState, idx: list) -> list:
    """The base element that shown index ``idx`` of ``st`` names."""
    full = list(st.org)
    for k, i in zip(st.shown, idx):
        full[k] = o_add(lw, full[k], i)
    if st.under is None:
        return full
    if st.strides is not None:
        return _strided_index(lw, st, full)
    linear = 0
    for k, i in enumerate(full):                # row-major in the span_as space
        linear = o_add(lw, o_mul(lw, linear, extent(lw, st.space[k])), i)
    under = st.under
    shape = [extent(lw, under.ext[k]) for k in under.shown]
    inner = []
    for x in reversed(shape):                   # the same position in the view reshaped
        inner.insert(0, o_op(lw, "MOD", linear, x))
        linear = o_div(lw, linear, x)
    return _base_index(lw, under, inner)


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
    elif isinstance(e.base.ty, T.Fragment):      # an accumulator's static shape (§11.7)
        elems = list(e.base.ty.shape)
    elif isinstance(e.base.ty, T.View):
        st = view_state(lw, e.base)
        elems = [st.ext[k] for k in st.shown]
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
