"""Register fragments and their operations (LANGUAGE.md §11.7).

A ``frag`` is a ``local`` buffer, so ``copy`` and ``reduce_*`` over buffers are loops of
LOAD and STORE. An MMA accumulator's elements are read and written with FRAG_GET and
FRAG_SET, which let a lane touch only the elements the hardware layout gives it:

- a warp's accumulator [M, N] is tiled by the C fragment of ``mma.sync.m16n8``: lane
  ``l`` holds the elements (i, j) with ``i % 8 == l / 4`` and ``(j % 8) / 2 == l % 4``;
- a warpgroup's by the D fragment of ``wgmma.m64nN``: warp ``w`` holds the rows with
  ``(i / 16) % 4 == w``, each as a warp above;
- a one-lane unit (``thread`` level, the host) holds every element.

``apply`` over an accumulator therefore visits the rows ``8t + l/4`` (of the lane's warp's
bands) and the columns ``8u + 2(l%4) + e``, e in {0, 1}, in that order: row by row,
columns ascending, as the registers of a lane hold them. ``reduce_*`` of an accumulator
reduces each held row over the lane's columns, then across the four lanes of the row
with two warp shuffles (lane xor 2, then xor 1), as the reference's generated code does
(lib/Target/GPU/cute_codegen.cpp, ``FragReduce``), so sums round as on the hardware;
``all_reduce_*`` is the same butterfly over every element of a row fragment.
"""
from __future__ import annotations

import math

import numpy as np

from croqvm.core import dtypes
from croqvm.bytecode.module import Access, BaseKind, BufferDecl, Storage
from croqvm.lang import ast
from croqvm.core.limits import WARP_SIZE
from croqvm.lang.check.walk import child_stmts

from .exprs import scalar_value
from .mma import frag_ref
from .owned import Owned, loop, when
from .state import Lowerer
from .values import BufRef, Val
from .views import int_operands, reg_of, resolve_base

# reduce_* and all_reduce_*: the ALU op, the identity a held row starts from
_FOLDS = {"sum": "ADD", "max": "MAX", "min": "MIN"}
_BUTTERFLY = (2, 1)      # their shuffle masks, as the reference's code orders them


def _fold_type(t: dtypes.DType) -> dtypes.DType:
    """The type a reduction computes in: f32 for narrower floats (the reference reduces
    in float registers), else the element type's computation type."""
    if t.is_float:
        return dtypes.F64 if t is dtypes.F64 else dtypes.F32
    return dtypes.promote(t, t)


def _identity(op: str, t: dtypes.DType):
    if op == "sum":
        return 0
    if t.is_float:
        return -math.inf if op == "max" else math.inf
    info = np.iinfo(t.np)
    return int(info.min if op == "max" else info.max)


# ------------------------------------------------------------------------ element access

def is_fragment_elem(e) -> bool:
    sym = getattr(getattr(e, "base", None), "sym", None)
    return isinstance(e, ast.ElemAccess) and sym is not None and sym.kind == "fragment"


def _elem_operands(lw: Lowerer, e: ast.ElemAccess):
    ref = frag_ref(lw, e.base.sym, e.base)
    i, j = (reg_of(lw, x) for x in int_operands(lw, e.indices))
    return ref, i, j


def lower_fragment_elem(lw: Lowerer, e: ast.ElemAccess) -> Val:
    ref, i, j = _elem_operands(lw, e)
    r = lw.b.reg(ref.dtype)
    lw.b.emit("FRAG_GET", r, ref.acc, i, j)
    return Val(ref.dtype, r)


def store_fragment_elem(lw: Lowerer, s: ast.Assign, op_name: str | None) -> None:
    """``acc.at(i, j) = v`` and ``acc.at(i, j) op= v`` (§6.6)."""
    ref, i, j = _elem_operands(lw, s.target)
    v = scalar_value(lw, s.value)
    b = lw.b
    if op_name is None:
        b.emit("FRAG_SET", ref.acc, i, j, v.reg)
        return
    common = dtypes.promote(ref.dtype, v.dtype)
    cur = b.reg(common)
    b.emit("FRAG_GET", cur, ref.acc, i, j)
    b.emit("FRAG_SET", ref.acc, i, j, b.op(op_name, common, cur, b.convert(v.reg, common)))


def update_fragment(lw: Lowerer, s: ast.Assign, op_name: str) -> None:
    """``acc op= v`` (§11.7): every element the lane holds, with one value of ``v``."""
    sym = s.target.sym
    ref = frag_ref(lw, sym, s.target)
    owned = Owned(lw, ref, sym.type.shape, sym.name, s.target)
    v = scalar_value(lw, s.value)
    b = lw.b
    common = dtypes.promote(ref.dtype, v.dtype)
    value = b.convert(v.reg, common)

    def update(i: int, j: int) -> None:
        cur = b.reg(common)
        b.emit("FRAG_GET", cur, ref.acc, i, j)
        b.emit("FRAG_SET", ref.acc, i, j, b.op(op_name, common, cur, value))
    owned.each(update)


# ------------------------------------------------------------------------ call arguments

# The rows of an accumulator one warp's registers cover, by unit (§11.4): the C fragment
# of mma.sync.m16n8, and a warpgroup's 64-row D fragment of wgmma.m64nN, whose warp w
# holds band w.
_TILE_ROWS = {WARP_SIZE: 16, 4 * WARP_SIZE: 64}
_TILE_COLS = 8
_CHUNK_REGS = 4          # a lane's registers per 8-column chunk of its band


def lane_registers(lw: Lowerer, e: ast.Name):
    """An accumulator passed to a function (§11.7 item 10), as the lane's registers: a
    hidden local buffer of the elements the lane holds, copied in before the call in the
    order of the PTX fragment's registers -- per 16-row band (a warpgroup's: 64 rows) and
    8-column chunk, (r, c), (r, c + 1), (r + 8, c), (r + 8, c + 1) -- or every element
    row-major where one lane holds them all. Returns the buffer's ref, its length, and a
    function that copies the buffer back (the callee may write it)."""
    sym = e.sym
    ref = frag_ref(lw, sym, e)
    shape = sym.type.shape
    owned = Owned(lw, ref, shape, sym.name, e)
    rows, cols = shape
    if not (isinstance(rows, int) and isinstance(cols, int)):
        lw.unsupported(e, f"passing accumulator '{sym.name}', whose shape is known only at "
                          f"run time, to a function")
    per_lane = owned.per_lane()
    tile = _TILE_ROWS.get(ref.unit, 1)
    if per_lane and (rows % tile or cols % _TILE_COLS):
        lw.unsupported(e, f"passing accumulator '{sym.name}' [{rows}, {cols}], whose shape "
                          f"is not a multiple of the [{tile}, {_TILE_COLS}] register fragment, "
                          f"to a function")
    count = rows * cols // (ref.unit if per_lane else 1)
    b = lw.b
    slot = b.add("buffers", BufferDecl("", Storage.LOCAL, ref.dtype.code, [lw.int_reg(count)],
                                       span=lw.spans.intern(e.span)))
    b.emit("ALLOC", slot)
    text = f"{sym.name} (registers)"

    def each(body):
        """body(k, i, j): register k of the lane holds element (i, j)."""
        if not per_lane:
            loop(lw, rows * cols, "frag.k", lambda k: body(
                k, _int(lw, "DIV", k, cols), _int(lw, "MOD", k, cols)))
            return
        row0, col0, warp = owned.lane_parts()
        band0 = row0 if ref.unit == WARP_SIZE else \
            b.op("ADD", dtypes.S32, row0, _int(lw, "MUL", warp, 16))
        chunks = cols // _TILE_COLS

        def register(t, u, q):
            add = lambda x, y: b.op("ADD", dtypes.S32, x, y)      # noqa: E731
            k = add(_int(lw, "MUL", add(_int(lw, "MUL", t, chunks), u), _CHUNK_REGS), q)
            i = add(add(_int(lw, "MUL", t, tile), band0),
                    _int(lw, "MUL", _int(lw, "DIV", q, 2), 8))
            j = add(add(_int(lw, "MUL", u, _TILE_COLS), col0), _int(lw, "MOD", q, 2))
            body(k, i, j)
        loop(lw, rows // tile, "frag.band", lambda t: loop(
            lw, chunks, "frag.chunk", lambda u: loop(
                lw, _CHUNK_REGS, "frag.reg", lambda q: register(t, u, q))))

    def access(k):
        return b.add("accesses", Access(BaseKind.BUF, slot, -1, [k], text))

    def copy_in(k, i, j):
        r = b.reg(ref.dtype)
        b.emit("FRAG_GET", r, ref.acc, i, j)
        b.emit("STORE", access(k), r)

    def copy_out(k, i, j):
        r = b.reg(ref.dtype)
        b.emit("LOAD", r, access(k))
        b.emit("FRAG_SET", ref.acc, i, j, r)
    each(copy_in)
    return (BufRef(slot, ref.dtype, "local", 1, [], sym.name), count,
            lambda: each(copy_out))


def _int(lw: Lowerer, name: str, x: int, k: int) -> int:
    """R[x] <name> k in s32, k a constant."""
    return lw.b.op(name, dtypes.S32, x, lw.int_reg(k))


# ------------------------------------------------------------------------ statements

def lower_apply(lw: Lowerer, s: ast.Apply) -> None:
    if s.frag is None:
        lw.stmt(s.loop)
        return
    node = s.within.bound[0].base
    owned = Owned(lw, frag_ref(lw, s.frag, node), s.frag.type.shape, s.frag.name, node)
    if not owned.per_lane():
        lw.stmt(s.loop)
        return
    jump = _leaving_jump(s.body)
    if jump is not None:
        lw.error(jump.span, "'break' and 'continue' can not leave an 'apply' over an "
                            "accumulator: each lane visits only the elements it holds.",
                 hint="use 'if' around the part of the body to skip")
        return
    names = list(s.within.syms or [])[:2]
    vals = [Val(dtypes.S32, lw.b.reg(dtypes.S32, sym.name), lw.int_reg(n))
            for sym, n in zip(names, (owned.rows, owned.cols))]
    lw.names.append({})
    try:
        for sym, v in zip(names, vals):
            lw.bind(sym, v)

        def row(i, _):
            lw.b.emit("MOV", vals[0].reg, i)

            def col(j):
                lw.b.emit("MOV", vals[1].reg, j)
                lw.body(s.body)
            owned.cols_loop(col)
        owned.rows_loop(row)
    finally:
        lw.names.pop()


def _leaving_jump(s):
    """A ``break`` or ``continue`` of ``s`` that is not inside a loop of its own."""
    if isinstance(s, (ast.Break, ast.Continue)):
        return s
    if isinstance(s, (ast.While, ast.Foreach, ast.Apply)):
        return None
    for c in child_stmts(s):
        found = _leaving_jump(c)
        if found is not None:
            return found
    return None


def _access(lw: Lowerer, e: ast.Expr, idx: list[int]):
    base = resolve_base(lw, e)
    return lw.b.add("accesses", Access(base.kind, base.slot, base.arr, idx, base.text)), base


def _store(lw: Lowerer, e: ast.Expr, idx: list[int], r: int) -> None:
    acc, base = _access(lw, e, idx)
    with lw.once_guard(base.storage in ("shared", "global")):
        lw.b.emit("STORE", acc, r)


def _load(lw: Lowerer, e: ast.Expr, idx: list[int], dtype: dtypes.DType) -> int:
    acc, _ = _access(lw, e, idx)
    r = lw.b.reg(dtype)
    lw.b.emit("LOAD", r, acc)
    return r


def lower_frag_op(lw: Lowerer, s: ast.FragOp) -> None:
    if s.op in ("copy", "mma.load"):
        _copy(lw, s)
    elif s.op.startswith("reduce_"):
        _reduce(lw, s, s.op[len("reduce_"):])
    else:
        _all_reduce(lw, s, s.op[len("all_reduce_"):])


def _copy(lw: Lowerer, s: ast.FragOp) -> None:
    """Element by element, in row-major order, converted as a STORE converts."""
    dst, src = s.args
    shape = dst.ty.shape
    if not all(isinstance(d, int) for d in shape):
        lw.unsupported(dst, "copy of a buffer whose shape is not known at compile time")

    def nest(idx):
        if len(idx) == len(shape):
            _store(lw, dst, idx, _load(lw, src, idx, dst.ty.dtype))
            return
        loop(lw, shape[len(idx)], f"copy.{len(idx)}", lambda i: nest(idx + [i]))
    nest([])


def _dst_index(s: ast.FragOp, lw: Lowerer, i: int) -> list[int]:
    place, rank = s.dst_map
    zero = lw.int_reg(0)
    return [i if k == place else zero for k in range(rank)]


def _reduce(lw: Lowerer, s: ast.FragOp, kind: str) -> None:
    dst, src, _ = s.args
    acc = s.acc
    if acc is None:
        _reduce_buffer(lw, s, kind)
        return
    owned = Owned(lw, frag_ref(lw, acc, src), acc.type.shape, acc.name, src)
    t = _fold_type(acc.type.dtype)
    if not owned.per_lane():
        _reduce_rows(lw, s, kind, t, owned.rows, owned.cols,
                     lambda i, j: owned.get(i, j, t))
        return
    b, alu = lw.b, _FOLDS[kind]

    def row(i, inside):
        v = b.load_const(t, _identity(kind, t), "reduce.value")

        def col(j):
            when(lw, inside, lambda: b.emit(alu, v, v, owned.get(i, j, t)))
        owned.cols_loop(col)
        _butterfly(lw, v, alu, t)
        when(lw, inside, lambda: _store(lw, dst, _dst_index(s, lw, i),
                                       b.convert(v, dst.ty.dtype)))
    owned.rows_loop(row, uniform=True)


def _butterfly(lw: Lowerer, v: int, alu: str, t: dtypes.DType) -> None:
    """Combine ``v`` over the four lanes of a row: every one ends with the same value."""
    for mask in _BUTTERFLY:
        other = lw.b.reg(t)
        lw.b.emit("SHFL_XOR", other, v, mask)
        lw.b.emit(alu, v, v, other)


def _reduce_buffer(lw: Lowerer, s: ast.FragOp, kind: str) -> None:
    _, src, _ = s.args
    rows, cols = src.ty.shape
    if not (isinstance(rows, int) and isinstance(cols, int)):
        lw.unsupported(src, f"{s.op} of a tile whose shape is not known at compile time")
    t = _fold_type(src.ty.dtype)
    _reduce_rows(lw, s, kind, t, rows, cols, lambda i, j: _load(lw, src, [i, j], t))


def _reduce_rows(lw: Lowerer, s, kind: str, t, rows: int, cols: int, read) -> None:
    """Each row in full by the executing lane, from the identity (0, -inf, +inf, or the
    integer type's extreme), elements in order: a maximum equals the reference's, which
    starts from the first element."""
    dst = s.args[0]
    b, alu = lw.b, _FOLDS[kind]

    def row(i):
        v = b.load_const(t, _identity(kind, t), "reduce.value")
        loop(lw, cols, "reduce.col", lambda j: b.emit(alu, v, v, read(i, j)))
        _store(lw, dst, _dst_index(s, lw, i), b.convert(v, dst.ty.dtype))
    loop(lw, rows, "reduce.row", row)


def _all_reduce(lw: Lowerer, s: ast.FragOp, kind: str) -> None:
    acc = s.acc
    if acc is None:
        return          # one lane holds the whole row (§11.7)
    (x,) = s.args
    owned = Owned(lw, frag_ref(lw, acc, x), acc.type.shape, acc.name, x)
    if not owned.per_lane():
        return
    t, alu = _fold_type(x.ty.dtype), _FOLDS[kind]

    def elem(i):
        v = _load(lw, x, [i], t)
        _butterfly(lw, v, alu, t)
        _store(lw, x, [i], lw.b.convert(v, x.ty.dtype))
    loop(lw, x.ty.shape[0], "all_reduce.elem", elem)


TABLE = {ast.Apply: lower_apply, ast.FragOp: lower_frag_op}
