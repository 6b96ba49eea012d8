"""Register fragments and their operations (LANGUAGE.md §11.7; Croqtile: mma.md, "Fragment
Reductions"; lib/parser.yy ``frag_stmt``, lib/Target/GPU/cute_codegen.cpp).

A ``frag T[shape] f`` is a ``local`` buffer (the checker sees it as one). ``apply`` is a
``foreach`` over the span of a buffer or of an MMA accumulator; over an accumulator the
lowering visits only the elements the lane holds. ``copy``, ``reduce_*`` and
``all_reduce_*`` are checked here; facts for lowering are left on the node:

- ``s.frag`` (Apply): the accumulator an ``apply`` iterates, and ``s.loop`` the
  ``foreach`` it is over a frag or buffer;
- ``s.acc`` (FragOp): the accumulator a ``reduce_*`` reads, or whose rows the frag of an
  ``all_reduce_*`` holds;
- ``s.dst_map``: for ``reduce_*``, the position of the row index among ``dst``'s indices;
- ``sym.info["rows_of"]``: a 1-D buffer whose element ``i`` an ``apply`` over an
  accumulator wrote, or a ``reduce_*`` of one: it is replicated over the lanes holding
  row ``i`` (what ``all_reduce_*`` needs under a warp or warpgroup).
"""
from __future__ import annotations

from croqvm.lang import ast
from croqvm.lang.parse_stmt import FRAG_OPS
from croqvm.lang.types import Buffer, Fragment, Future, shape_str

from .consteval import const_value
from .decls import note_param_write
from .loops import check_foreach
from .mma import _unit_kind, _use
from .typerules import is_unknown, tname
from .views import fragment_source, root_name
from .walk import nodes_under

APPLY_HINT = "write 'apply {i, j} in x.span', where x is a frag, a buffer or an MMA accumulator"
REPLICATED_HINT = ("accumulate it row by row in an 'apply {i, j} in acc.span' over an MMA "
                   "accumulator, as in 'row.at(i) = row.at(i) + acc.at(i, j)', or fill it "
                   "with 'reduce_sum(row, acc, 1)'")


def _accumulator(ck, e):
    """The accumulator symbol ``e`` names, None for anything else, False for an operand
    fragment or an accumulator without a shape yet (reported)."""
    if isinstance(e, ast.Name) and isinstance(e.ty, Fragment) and e.sym is not None:
        return e.sym if fragment_source(ck, e.ty, e) is not None else False
    return None


def check_apply(ck, s: ast.Apply):
    w = s.within
    bound = w.bound[0] if len(w.bound) == 1 and not w.bound_is_list else None
    if not (isinstance(bound, ast.SpanOf) and bound.dim is None):
        ck.error(w.span, "'apply' iterates over the '.span' of one fragment, accumulator or "
                         "buffer.", hint=APPLY_HINT)
        return
    s.loop = ast.Foreach([w], [], s.body, s.span)
    check_foreach(ck, s.loop)
    _check_reach(ck, w, bound, s.body)
    base = bound.base
    if isinstance(base, ast.Name) and isinstance(base.ty, Fragment) and base.ty.role == "acc":
        s.frag = acc = base.sym
    else:
        return
    if len(w.names) == 2:
        _note_rows(s.body, w.names[0], acc)


def _element_accesses(node):
    """Every ``x.at(...)`` in the statements and expressions under ``node``."""
    return (n for n in nodes_under(node) if isinstance(n, ast.ElemAccess))


def _check_reach(ck, w: ast.Within, bound: ast.SpanOf, body) -> None:
    """An element indexed by an apply's own variable must exist for every value the
    variable takes: a smaller extent than the span's is an apply over mismatched shapes."""
    span = getattr(bound.ty, "shape", None)
    if span is None or len(span) != len(w.names):
        return
    reach = dict(zip(w.names, span))
    for e in _element_accesses(body):
        shape = getattr(getattr(e.base, "ty", None), "shape", None)
        if shape is None or len(shape) != len(e.indices):
            continue
        for k, idx in enumerate(e.indices):
            name = idx.id if isinstance(idx, ast.Name) else None
            extent, need = shape[k], reach.get(name)
            if isinstance(extent, int) and isinstance(need, int) and extent < need:
                ck.error(e.span, f"'{root_name(e.base)}' {shape_str(shape)} is indexed by "
                                 f"'{name}' of an apply over "
                                 f"'{root_name(bound.base)}' {shape_str(span)}, which "
                                 f"reaches {need - 1}: the shapes do not match.",
                         hint=f"make dimension {k} of '{root_name(e.base)}' {need}, or "
                              f"apply over '{root_name(e.base)}.span'")
                break


def _note_rows(stmt, row: str, acc) -> None:
    """Mark 1-D buffers written at ``[row]`` in an apply over ``acc`` as replicated over
    the lanes holding that row."""
    stack = [stmt]
    while stack:
        s = stack.pop()
        if isinstance(s, ast.Block):
            stack.extend(s.stmts)
        elif isinstance(s, ast.If):
            stack.extend(x for x in (s.then, s.other) if x is not None)
        elif isinstance(s, ast.Assign) and isinstance(s.target, ast.ElemAccess):
            t = s.target
            sym = getattr(t.base, "sym", None)
            if (sym is not None and len(t.indices) == 1 and isinstance(t.indices[0], ast.Name)
                    and t.indices[0].id == row and isinstance(sym.type, Buffer)):
                sym.info["rows_of"] = acc


def _buffer(ck, e, what):
    """A buffer operand: its type, else None (reported)."""
    ty = ck.expr(e)
    if is_unknown(ty):
        return None
    if isinstance(ty, Buffer) and not ty.array:
        return ty
    ck.error(e.span, f"{what} needs a frag or a buffer but '{root_name(e)}' is "
                     f"'{tname(ty)}'.")
    return None


def _data(ck, e):
    """A buffer, or a future's data (§9.4.5), as a Buffer type; else None (reported)."""
    ty = ck.expr(e)
    if isinstance(ty, Future) and ty.dtype is not None:
        return Buffer(ty.dtype, tuple(ty.shape), ty.storage)
    if is_unknown(ty) or isinstance(ty, Future):
        return None
    if isinstance(ty, Buffer) and not ty.array:
        return ty
    ck.error(e.span, f"mma.load into a frag needs a buffer or a future but "
                     f"'{root_name(e)}' is '{tname(ty)}'.",
             hint="copy a tile into shared memory first, as in 'sa = dma.copy x.chunkat(i, "
                  "j) => shared;'")
    return None


def _same_shape(a, b) -> bool:
    return len(a) != len(b) or all(not (isinstance(x, int) and isinstance(y, int)) or x == y
                                   for x, y in zip(a, b))


def check_frag_op(ck, s: ast.FragOp):
    want = FRAG_OPS[s.op]
    if len(s.args) != want:
        ck.error(s.span, f"'{s.op}' takes {want} argument{'s' if want > 1 else ''} but got "
                         f"{len(s.args)}.", hint=_USAGE[s.op])
        return
    {"copy": _check_copy, "mma.load": _check_copy}.get(s.op, _check_all_reduce if want == 1 else _check_reduce)(ck, s)


_USAGE = {"copy": "'copy(dst, src)'", "mma.load": "'mma.load src, f;'", **{f"reduce_{k}": f"'reduce_{k}(dst, src, 1)'"
                                         for k in ("sum", "max", "min")},
          **{f"all_reduce_{k}": f"'all_reduce_{k}(row)'" for k in ("sum", "max", "min")}}


def _check_copy(ck, s):
    """``copy(dst, src)``; ``mma.load src, dst;`` copies a buffer or a future's data into a
    frag."""
    dst = _buffer(ck, s.args[0], s.op)
    if s.op == "mma.load":
        src = _data(ck, s.args[1])
        if dst is not None and dst.storage != "local":
            ck.error(s.args[0].span, f"'mma.load src, f' loads into a frag but "
                                     f"'{root_name(s.args[0])}' is a {dst.storage} buffer.",
                     hint="load into a 'frag', or write 'f = mma.load src;'")
            return
    else:
        src = _buffer(ck, s.args[1], s.op)
    if dst is None or src is None:
        return
    if len(dst.shape) != len(src.shape) or not _same_shape(dst.shape, src.shape):
        ck.error(s.span, f"{s.op}: '{root_name(s.args[0])}' is {shape_str(dst.shape)} but "
                         f"'{root_name(s.args[1])}' is {shape_str(src.shape)}: the shapes "
                         f"must be equal.")
        return
    note_param_write(ck, s.args[0])


def _check_reduce(ck, s):
    dst_e, src_e, axis_e = s.args
    dst = _buffer(ck, dst_e, s.op)
    sty = ck.expr(src_e)
    acc = _accumulator(ck, src_e)
    if acc is False or dst is None or is_unknown(sty):
        return
    if acc:
        if sty.shape is None:
            return
        shape, s.acc = tuple(sty.shape), acc
    elif isinstance(sty, Buffer) and not sty.array:
        shape = tuple(sty.shape)
    else:
        ck.error(src_e.span, f"{s.op} needs a frag, a buffer or an MMA accumulator but "
                             f"'{root_name(src_e)}' is '{tname(sty)}'.")
        return
    axis = const_value(axis_e)
    if not isinstance(axis, int) or isinstance(axis, bool):
        ck.error(axis_e.span, f"the axis of {s.op} must be an integer constant.",
                 hint=_USAGE[s.op])
        return
    if len(shape) != 2:
        ck.error(src_e.span, f"{s.op} reduces the rows of a 2-dimensional tile, but "
                             f"'{root_name(src_e)}' is {shape_str(shape)}.")
        return
    if axis != 1:
        ck.error(axis_e.span, f"{s.op} reduces dimension 1 (along each row), but got "
                              f"dimension {axis}.",
                 hint="the reference reduces rows only; for the columns, reduce a transposed "
                      "copy")
        return
    rows, cols = shape
    if cols == 0:
        ck.error(src_e.span, f"{s.op} of '{root_name(src_e)}' {shape_str(shape)} has no "
                             f"element to start from.")
        return
    # dst holds one value per row: [M], or [M] with a dimension of 1 before or after it
    dshape = tuple(dst.shape)
    places = [k for k, d in enumerate(dshape) if d != 1] if len(dshape) <= 2 else []
    if len(dshape) == 1:
        places = [0]
    elif len(places) == 0 and len(dshape) == 2 and rows == 1:
        places = [0]
    if len(places) != 1 or (isinstance(rows, int) and isinstance(dshape[places[0]], int)
                            and dshape[places[0]] != rows):
        ck.error(dst_e.span, f"{s.op} writes one value per row of '{root_name(src_e)}' "
                             f"{shape_str(shape)}, so '{root_name(dst_e)}' must be "
                             f"[{rows}] (or [{rows}, 1], [1, {rows}]) but it is "
                             f"{shape_str(dshape)}.")
        return
    if acc and dst.storage != "local" and _unit_kind(ck) is not None:
        ck.error(dst_e.span, f"{s.op} of accumulator '{root_name(src_e)}' writes each lane's "
                             f"rows into its own frag, but '{root_name(dst_e)}' is a "
                             f"{dst.storage} buffer.",
                 hint=f"declare 'frag {dst.dtype.name}[{rows}] {root_name(dst_e)};'")
        return
    s.dst_map = (places[0], len(dshape))
    note_param_write(ck, dst_e)
    dsym = getattr(dst_e, "sym", None)
    if acc and dsym is not None and len(dshape) == 1:
        dsym.info["rows_of"] = acc


def _check_all_reduce(ck, s):
    (x,) = s.args
    ty = _buffer(ck, x, s.op)
    if ty is None:
        return
    sym = getattr(x, "sym", None)
    if len(ty.shape) != 1:
        ck.error(x.span, f"{s.op} needs a 1-dimensional frag but '{root_name(x)}' is "
                         f"{shape_str(ty.shape)}.")
        return
    note_param_write(ck, x)
    if _unit_kind(ck) is None:
        return      # one lane holds every element: nothing to combine
    if sym is None or "rows_of" not in sym.info or ty.storage != "local":
        ck.error(s.span, f"{s.op} requires a replicated 1D fragment layout: '{root_name(x)}' "
                         f"is not known to hold one row of an MMA accumulator per element.",
                 hint=REPLICATED_HINT)
        return
    s.acc = sym.info["rows_of"]
    if ck.in_parallel:
        _use(ck, s.acc, s.span)


RULES = {ast.Apply: check_apply, ast.FragOp: check_frag_op}
