"""Buffers, views and element access: ranks and static bounds (LANGUAGE.md §4.4, §8).

Shapes follow ``croqvm.lang.types``: a dimension is an int when known, a symbolic
dimension's name, or None. A static check fires only when every number involved is known.
"""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.lang.types import (Bounded, Buffer, Event, Fragment, Future, ITuple, Mdspan,
                               OpFuture, Scalar,
                               View, shape_str)

from .consteval import const_value
from .context import UNKNOWN, ordinal
from .typerules import INT, dim_of, is_integer, is_unknown, tname


def root_name(e) -> str:
    """The name messages use for an operand: ``a``, ``sa`` for ``sa[i]``, ``f.data``."""
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.DataOf):
        return root_name(e.base) + ".data"
    base = getattr(e, "base", None)
    return root_name(base) if base is not None else "<expression>"


def view_source(ck, ty, expr, what="a view"):
    """The data an operand denotes, as a ``View`` (dtype, shape, storage): a buffer, a view,
    or a future standing for its data (§9.4.5). None when unusable (reported)."""
    if is_unknown(ty):
        return None
    if isinstance(ty, Fragment) and what in ("'.span'", "element access"):
        return fragment_source(ck, ty, expr)
    if isinstance(ty, Buffer):
        if ty.array and not isinstance(expr, ast.Index):
            ck.error(expr.span, f"buffer array '{root_name(expr)}' needs an index, as in "
                                f"'{root_name(expr)}[i]'.")
            return None
        return _whole(ty)     # a partial subscript: the sub-array's first buffer (§8.5)
    if isinstance(ty, View):
        return ty
    if isinstance(ty, Future):
        if ty.dtype is None:
            return None  # a placeholder without data: a runtime error (§9.5.4)
        return _whole(ty)
    ck.error(expr.span, f"{what} requires a buffer, a view or a future but got "
                        f"'{tname(ty)}'.")
    return None


def fragment_source(ck, ty, expr):
    """The elements of an MMA accumulator, for '.span' and '.at' (§11.7)."""
    name = root_name(expr)
    if ty.role != "acc":
        ck.error(expr.span, f"'{name}' is an MMA operand fragment: only accumulators and "
                            f"frags have elements a program can use.",
                 hint="make it an accumulator with 'mma.fill', or copy the data into a "
                      "'frag'")
        return None
    if getattr(getattr(expr, "sym", None), "info", {}).get("array"):
        ck.error(expr.span, f"not supported by croqvm yet: the elements of '{name}', an "
                            f"array of accumulators.")
        return None
    if ty.shape is None or ty.dtype is None:
        sym = getattr(expr, "sym", None)
        if sym is not None:
            sym.info["shape_early"] = True      # a second pass may know it (see mma)
        ck.error(expr.span, f"the shape of accumulator '{name}' is not known here: it comes "
                            f"from its first 'mma' or 'mma.store'.")
        return None
    sym = getattr(expr, "sym", None)
    if sym is not None and ck.in_parallel:
        from .mma import _use       # mma imports this module
        _use(ck, sym, expr.span)
    return View(ty.dtype, tuple(ty.shape), "local")


def _whole(ty) -> View:
    """All of a buffer or of a future's data, as a view."""
    shape = tuple(ty.shape)
    return View(ty.dtype, shape, ty.storage, shape, shape)


def _derived(src: View, shape) -> View:
    """``src`` after a rank-keeping operation (chunkat, subspan, view) on the dimensions it
    shows, which now have the extents ``shape``."""
    full = None
    if src.full is not None:
        keep = src.keep if src.keep is not None else range(len(src.full))
        full = list(src.full)
        for k, d in zip(keep, shape):
            full[k] = d
        full = tuple(full)
    return View(src.dtype, tuple(shape), src.storage, src.space, full, src.keep)


def contiguous_prefix(full, space) -> int | None:
    """The dimension before which a view of extents ``full`` in the row-major space
    ``space`` has extent 1 and after which it covers whole extents, so that its elements
    are consecutive in memory (when its origin is 0 in those whole dimensions); None when
    that is not known."""
    j = len(full) - 1
    while j > 0 and full[j] is not None and full[j] == space[j]:
        j -= 1
    if all(full[i] == 1 for i in range(j)):
        return j
    return None


def may_be_contiguous(full, space) -> bool:
    """Whether a view of extents ``full`` in the row-major space ``space`` may be
    contiguous: False when some dimension of an extent known not to be 1 comes before
    one known not to be whole (lib/types.hpp IsContiguous's NOT)."""
    not_one = [isinstance(x, int) and x != 1 for x in full]
    partial = [isinstance(x, int) and isinstance(d, int) and x != d
               for x, d in zip(full, space)]
    return not any(not_one[i] and any(partial[i + 1:]) for i in range(len(full)))


# --------------------------------------------------------------------------- buffers


def check_index(ck, e: ast.Index):
    """``buf[i]`` (§8.5) and ``ev[i]`` (§10.1)."""
    base, ity = ck.expr(e.base), ck.expr(e.index)
    if not is_unknown(ity) and not is_integer(ity):
        ck.error(e.index.span, f"an array subscript must be an integer but got "
                               f"'{tname(ity)}'.")
    if is_unknown(base):
        return UNKNOWN
    if isinstance(base, (Buffer, Event)) and base.array:
        kind = "buffer" if isinstance(base, Buffer) else "event"
        i = const_value(e.index)
        if isinstance(i, int) and not 0 <= i < base.array[0]:
            ck.error(e.index.span, f"index {i} is out of range for {kind} array "
                                   f"'{root_name(e.base)}' [0, {base.array[0]}).")
        if isinstance(base, Buffer):
            return Buffer(base.dtype, base.shape, base.storage, tuple(base.array[1:]))
        return Event(tuple(base.array[1:]))
    ck.error(e.span, f"'{root_name(e.base)}' of type '{tname(base)}' is not an array of "
                     f"buffers or events.")
    return UNKNOWN


def check_data(ck, e: ast.DataOf):
    """``f.data`` (§9.4.5): the buffer a future refers to."""
    ty = ck.expr(e.base)
    if is_unknown(ty):
        return UNKNOWN
    if isinstance(ty, Future):
        if ty.dtype is None:
            return UNKNOWN
        return Buffer(ty.dtype, tuple(ty.shape), ty.storage)
    if isinstance(ty, OpFuture):
        ck.error(e.span, f"the operation future '{root_name(e.base)}' has no '.data': after "
                         f"'wait {root_name(e.base)}', the result is the accumulator "
                         f"'{ty.acc}'.")
        return UNKNOWN
    ck.error(e.span, f"'.data' requires a future but '{root_name(e.base)}' is "
                     f"'{tname(ty)}'.")
    return UNKNOWN


def _later_shape(ck, e: ast.SpanOf, ty) -> View | None:
    """``f.span`` of a ``dma.any`` placeholder before the DMA (or swap) that fixes its type
    (§9.4.4, §9.4.5): that shape, which the checker knows in its second pass over the
    function (see ``dma``), and which must be known at compile time: nothing has run yet."""
    sym = e.base.sym if isinstance(e.base, ast.Name) else None
    if not (isinstance(ty, Future) and ty.dtype is None and sym is not None):
        return None
    if "later" not in sym.info:
        sym.info["span_early"] = True
        return None
    fty, where = sym.info["later"]
    k = const_value(e.dim) if e.dim is not None else None
    used = [fty.shape[k]] if isinstance(k, int) and 0 <= k < len(fty.shape) else fty.shape
    if not all(isinstance(d, int) for d in used):
        ck.error(e.span, f"'{sym.name}.span' is used before the shape of '{sym.name}' is "
                         f"fixed (line {where.line}), and that shape, "
                         f"{shape_str(fty.shape)}, is not known at compile time.",
                 hint=f"use '{sym.name}.span' after line {where.line}")
        return None
    return View(fty.dtype, tuple(fty.shape), fty.storage)


def check_span(ck, e: ast.SpanOf):
    """``a.span`` / ``a.span(i)`` (§4.4)."""
    ty = ck.expr(e.base)
    dim_ty = ck.expr(e.dim) if e.dim is not None else None
    src = view_source(ck, ty, e.base, "'.span'") or _later_shape(ck, e, ty)
    if src is None:
        return UNKNOWN
    if e.dim is None:
        return Mdspan(src.shape)
    if not is_unknown(dim_ty) and not is_integer(dim_ty):
        ck.error(e.dim.span, f"a dimension index must be an integer but got "
                             f"'{tname(dim_ty)}'.")
        return UNKNOWN
    i = const_value(e.dim)
    if isinstance(i, int) and not 0 <= i < len(src.shape):
        ck.error(e.span, "out of bound in 'dimof'.")
        return UNKNOWN
    return INT


def check_elem_access(ck, e: ast.ElemAccess):
    """``b.at(i, ...)`` (§8.6): an lvalue element of a buffer or a view, indices relative
    to what it shows (§8.3.5)."""
    base = ck.expr(e.base)
    types = [ck.expr(i) for i in e.indices]
    if is_unknown(base):
        return UNKNOWN
    if isinstance(base, Future):
        ck.error(e.span, f"element access needs a buffer: write "
                         f"'{root_name(e.base)}.data.at(...)'.")
        return UNKNOWN
    src = view_source(ck, base, e.base, "element access")
    if src is None:
        return UNKNOWN
    count = 0
    positions = []  # (index expr, dimension) for plain integer indices
    for idx, ty in zip(e.indices, types):
        if isinstance(ty, ITuple):
            count += ty.rank
            continue
        if not is_integer(ty) and not is_unknown(ty):
            ck.error(idx.span, f"an element index must be an integer but got "
                               f"'{tname(ty)}'.")
        positions.append((idx, count))
        count += 1
    if count != len(src.shape):
        ck.error(e.span, f"accessing an spanned data (rank: {len(src.shape)}) with "
                         f"{count} indices.")
        return Scalar(src.dtype)
    name = root_name(e.base)
    for idx, k in positions:
        value, extent = const_value(idx), src.shape[k]
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if value < 0:
            ck.error(idx.span, f"The {ordinal(k + 1)} index `{value}` of element access "
                               f"'{name}' should not be negative")
        elif isinstance(extent, int) and value >= extent:
            ck.error(idx.span, f"The {ordinal(k + 1)} index `{value}` of element access "
                               f"'{name}' should be less than {extent}")
    return Scalar(src.dtype)


# --------------------------------------------------------------------------- views


def _rank_mismatch(ck, e, rank, what, count) -> bool:
    if count != rank:
        ck.error(e.span, f"data rank ({rank}) must be consistent with {what} ({count}).")
        return True
    return False


def check_chunkat(ck, e: ast.ChunkAt):
    """§8.2: factor ``#a`` per dimension (1 for ``_``), extent ``floor(e_k / #a)``."""
    src = view_source(ck, ck.expr(e.base), e.base, "'chunkat'")
    factors = []
    for a in e.args:
        if isinstance(a, ast.Wildcard):
            a.ty = Bounded(1)
            factors.append(1)
            continue
        ty = ck.expr(a)
        if isinstance(ty, Bounded):
            factors.append(ty.bound)
        elif isinstance(ty, ITuple) and ty.bounded:
            factors.extend([None] * ty.rank)
        else:
            if not is_unknown(ty):
                ck.error(a.span, f"chunkat requires bounded values (or '_') but got "
                                 f"'{tname(ty)}'.")
            factors.append(None)
    if src is None or _rank_mismatch(ck, e, len(src.shape), "tiling factor count",
                                     len(factors)):
        return UNKNOWN
    shape = []
    for k, (extent, t) in enumerate(zip(src.shape, factors)):
        if t == 0:
            ck.error(e.span, f"tiling factor can not be zero for dimension {k}.")
        elif isinstance(t, int) and isinstance(extent, int) and t > extent:
            ck.error(e.span, f"tiling factor exceeds data size ({t} > {extent}) in "
                             f"dimension {k}.")
        if t == 1:
            shape.append(extent)
        elif isinstance(t, int) and isinstance(extent, int) and t > 0:
            shape.append(extent // t)
        else:
            shape.append(None)
    return _derived(src, shape)


def _int_items(ck, exprs, what, wildcard_ok=False):
    """Integer items with mdspans and ituples spliced: a list of (expr, dim, k) where
    ``k`` counts the items; wildcards yield dim ``"_"``."""
    items = []
    for x in exprs:
        if isinstance(x, ast.Wildcard) and wildcard_ok:
            x.ty = INT
            items.append((x, "_"))
            continue
        ty = ck.expr(x)
        if isinstance(ty, Mdspan):
            items.extend((x, d) for d in ty.shape)
        elif isinstance(ty, ITuple):
            items.extend((x, None) for _ in range(ty.rank))
        elif is_integer(ty) or is_unknown(ty):
            items.append((x, dim_of(x) if not is_unknown(ty) else None))
        else:
            ck.error(x.span, f"{what} requires integers but got '{tname(ty)}'.")
            items.append((x, None))
    return items


def check_subspan(ck, e: ast.Subspan):
    """§8.3.1: extents ``s_k``, origin ``o_k + i_k * t_k``."""
    src = view_source(ck, ck.expr(e.base), e.base, "'subspan'")
    sizes = _int_items(ck, e.sizes, "subspan", wildcard_ok=True)
    steps = _int_items(ck, e.steps, "step") if e.steps is not None else None
    at = _int_items(ck, e.at, "'.at'") if e.at is not None else None
    if src is None:
        return UNKNOWN
    rank = len(src.shape)
    if (_rank_mismatch(ck, e, rank, "subspan rank", len(sizes))
            or (steps is not None and _rank_mismatch(ck, e, rank, "step count", len(steps)))
            or (at is not None and _rank_mismatch(ck, e, rank, "index count", len(at)))):
        return UNKNOWN
    shape = []
    for k, ((x, s), extent) in enumerate(zip(sizes, src.shape)):
        s = extent if s == "_" else s
        shape.append(s)
        if s == 0:
            ck.error(x.span, f"subspan dimension {k} can not be zero.")
        elif isinstance(s, int) and isinstance(extent, int) and s > extent:
            ck.error(x.span, f"subspan too large for dimension {k} ({s} > {extent}).")
    for k, (x, _) in enumerate(at or []):
        value = const_value(x)
        step = steps[k][1] if steps is not None else shape[k]
        extent = src.shape[k]
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if value < 0:
            ck.error(x.span, f"index out of bounds for dimension {k} ({value} < 0).")
        elif isinstance(step, int) and isinstance(extent, int) and step > 0:
            tiles = -(-extent // step)  # an index must leave some element in range
            if value >= tiles:
                ck.error(x.span, f"index out of bounds for dimension {k} ({value} >= "
                                 f"{tiles}).")
    return _derived(src, shape)


def check_view(ck, e: ast.ViewFrom):
    """§8.3.2: extents ``s_k`` (``_``: the whole extent), origin ``o_k + f_k``. With
    element strides ``t_k``, element ``i`` lies ``sum((f_k + i_k) * t_k)`` elements after
    the source's first one in memory: a view of its own layout, not a window, so not
    contiguous (Croqtile: view-operations.md)."""
    src = view_source(ck, ck.expr(e.base), e.base, "'view'")
    sizes = _int_items(ck, e.sizes, "view", wildcard_ok=True)
    origin = _int_items(ck, e.origin, "'.from'")
    strides = _int_items(ck, e.strides, "view stride") if e.strides is not None else None
    if src is None:
        return UNKNOWN
    rank = len(src.shape)
    if (_rank_mismatch(ck, e, rank, "view size count", len(sizes))
            or _rank_mismatch(ck, e, rank, "offset index count", len(origin))
            or (strides is not None
                and _rank_mismatch(ck, e, rank, "view stride count", len(strides)))):
        return UNKNOWN
    sizes = [(x, extent if s == "_" else s) for (x, s), extent in zip(sizes, src.shape)]
    for k, ((x, s), (ox, _), extent) in enumerate(zip(sizes, origin, src.shape)):
        if s == 0 or (isinstance(s, int) and s < 0):
            ck.error(x.span, f"view dimension {k} must be greater than 0.")
        offset = const_value(ox)
        if strides is None and isinstance(offset, int) and isinstance(extent, int) and \
                offset >= extent:
            ck.error(ox.span, f"offset out of bounds for dimension {k} ({offset} >= "
                              f"{extent}).")
        elif strides is not None and isinstance(offset, int) and offset < 0:
            ck.error(ox.span, f"view offset {k} must not be negative ({offset}).")
    for k, (x, _) in enumerate(strides or []):
        stride = const_value(x)
        if isinstance(stride, int) and stride < 1:
            ck.error(x.span, f"view stride {k} must be greater than 0.")
    view = _derived(src, [s for _, s in sizes])
    if strides is not None:     # extents in no row-major space: not contiguous
        _strided_reach(ck, e, sizes, origin, strides, src)
        view = View(view.dtype, view.shape, view.storage, src.space)
    return view


def _strided_reach(ck, e: ast.ViewFrom, sizes, origin, strides, src) -> None:
    """A view with element strides whose last element lies beyond the memory of its
    source's space even from the source's first position, when all of it is known (at
    run time lowering checks every copy and access)."""
    values = [const_value(x) for x, _ in origin] + [s for _, s in sizes] + \
        [const_value(x) for x, _ in strides]
    count = _count(src.space) if src.space is not None else None
    if count is None or not all(isinstance(v, int) and not isinstance(v, bool)
                                for v in values):
        return
    rank = len(sizes)
    reach = sum((f + s - 1) * t for f, s, t in
                zip(values[:rank], values[rank:2 * rank], values[2 * rank:]))
    if reach >= count:
        ck.error(e.span, f"a view with element strides reaches element {reach} of "
                         f"'{root_name(e.base)}' in memory order, which has {count} "
                         f"elements.",
                 hint="element (i, j, ...) lies sum((offset + i) * stride) elements after "
                      "the first one of the view's source")


def _count(shape):
    total = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        total *= d
    return total


def check_span_as(ck, e: ast.SpanAs):
    """§8.3.3: the elements of a contiguous view, in row-major order, under a new shape
    of as many elements (Croqtile: view-operations.md; lib/shapeinfer.cpp)."""
    src = view_source(ck, ck.expr(e.base), e.base, "'span_as'")
    items = _int_items(ck, e.sizes, "span_as")
    if src is None:
        return UNKNOWN
    shape = tuple(d for _, d in items)
    for (x, d) in items:
        if isinstance(d, int) and d < 1:
            ck.error(x.span, f'The mdspan size "{d}" is invalid!')
            return UNKNOWN
    shown = shape_str(src.full or src.shape)
    whole = "apply span_as to a whole buffer, or to a tile of whole rows (extent 1 before " \
            "the first partial dimension, whole extents after it)"
    if src.full is None or not may_be_contiguous(src.full, src.space):
        ck.error(e.span, f"span_as requires a contiguous view, but the view {shown} of "
                         f"'{root_name(e.base)}' {shape_str(src.space or ())} is not one.",
                 hint=whole)
        return UNKNOWN
    if contiguous_prefix(src.full, src.space) is None:    # lib/semacheck.cpp warns too
        ck.warning(e.span, f"span_as may be applied to a view that is not contiguous: the "
                           f"view {shown} of '{root_name(e.base)}' "
                           f"{shape_str(src.space or ())} is checked at run time.",
                   hint=whole)
    old, new = _count(src.shape), _count(shape)
    if old is not None and new is not None and old != new:
        ck.error(e.span, f"can not apply span_as to reshape from {shape_str(src.shape)}"
                         f"({old}) to {shape_str(shape)}({new}).")
        return UNKNOWN
    return View(src.dtype, shape, src.storage, shape, shape)


def _shaped_chain(e) -> bool:
    """Whether a view chain has a subspan, view or span_as that fixed its extents (the
    rule of lib/shapeinfer.cpp for '.sqz()'); a named view counts."""
    while True:
        if isinstance(e, (ast.Subspan, ast.ViewFrom, ast.SpanAs)):
            return True
        if isinstance(e, ast.Name):
            return isinstance(e.ty, View) and e.sym is not None and e.sym.kind == "view"
        if not isinstance(e, (ast.ChunkAt, ast.Squeeze)):
            return False
        e = e.base


def check_squeeze(ck, e: ast.Squeeze):
    """§8.3.4: the view without the dimensions whose extent is 1 at compile time (all of
    them 1: the last one stays)."""
    src = view_source(ck, ck.expr(e.base), e.base, "'.sqz'")
    if src is None:
        return UNKNOWN
    if not _shaped_chain(e.base):
        ck.error(e.span, ".sqz requires a preceding .subspan, .span_as, or .view.",
                 hint="the extents of 1 that '.sqz()' removes come from one of them")
        return UNKNOWN
    shown = [k for k, d in enumerate(src.shape) if d != 1] or [len(src.shape) - 1]
    keep = src.keep if src.keep is not None else tuple(range(len(src.shape)))
    return View(src.dtype, tuple(src.shape[k] for k in shown), src.storage, src.space,
                src.full, tuple(keep[k] for k in shown))


RULES = {
    ast.Index: check_index,
    ast.DataOf: check_data,
    ast.SpanOf: check_span,
    ast.ElemAccess: check_elem_access,
    ast.ChunkAt: check_chunkat,
    ast.Subspan: check_subspan,
    ast.ViewFrom: check_view,
    ast.SpanAs: check_span_as,
    ast.Squeeze: check_squeeze,
}
