"""The verifier's rules for MMA instructions (LANGUAGE.md §11.3, D11): what the fragments
and views an MMA op names must be.

- MMA_FILL, MMA_STORE act on an accumulator; MMA_LOAD fills an A or B operand fragment,
  or an accumulator with the tile it starts from (LANGUAGE.md §11.3.2);
  MMA_EXEC takes an accumulator, an A and a B fragment in that order (``FragDecl.role``).
- Views are 2-D; MMA_LOAD's view has the fragment's element type (a load never
  converts); A and B have one element type, or are both 8-bit integers; operands of a
  float type accumulate in a float type, integer ones in an integer type.
- Tile extents agree wherever the module states both statically (``FragDecl`` extents,
  extent registers holding known constants): a view's with its fragment's, and in
  MMA_EXEC the M, N and K of the accumulator [M, N], A ([M, K] row, [K, M] col) and B
  ([N, K] row, [K, N] col) by the layout. Extents known only at run time are checked by
  the engines at the first use of each fragment copy (``FragDecl``).

Each rule is an entry rule of the opcode table (``Op.entry``); conventions as in
verify_base.
"""
from __future__ import annotations

from croqvm.core.dtypes import BY_CODE, MMA_ACCUMULATOR

from .module import DYNAMIC, BaseKind, FragRole, Storage
from .verify_base import (CodeCtx, Where, element_dtype, extents_text, known_extents, label,
                          operand)

ROLE_NAMES = {FragRole.ACC: "an accumulator", FragRole.A: "an A operand fragment",
              FragRole.B: "a B operand fragment"}
# (A's rows, A's cols) and (B's rows, B's cols) as (M, N, K) letters, per layout.
_LAYOUT_DIMS = {0: ("MK", "NK"), 1: ("MK", "KN"), 2: ("KM", "NK"), 3: ("KM", "KN")}


def _frag(cx: CodeCtx, at: Where, op, m: int, *roles: FragRole):
    frag = cx.code.frags[m]
    if frag.role not in roles:
        wanted = " or ".join(ROLE_NAMES[r] for r in roles)
        at.fail(f"{label('fragment', m, frag.name)} is {ROLE_NAMES[frag.role]}; "
                f"{op.name} takes {wanted} there")
    return frag


def _view_extents(cx: CodeCtx, at: Where, v: int) -> list[int]:
    view = cx.code.views[v]
    if len(view.shown_extents) != 2:
        at.fail(f"view {v} has rank {len(view.shown_extents)}; MMA tiles are 2-D")
    _windowed(at, v, view)
    return known_extents(cx, view.shown_extents)


def _windowed(at: Where, v: int, view) -> None:
    """The engines read MMA operands as windows of a buffer or of a reshape of one."""
    if view.strides or (view.space and view.base_kind == BaseKind.FUT):
        at.fail(f"view {v} has element strides or reshapes a future's data; MMA tiles are "
                "windows of a buffer or of a reshape of one")


def _agree(at: Where, what: str, have, want, fragment="the fragment") -> None:
    """Extents ``have`` (of ``what``) against a fragment's ``want``, where both static."""
    if any(DYNAMIC not in (x, y) and x != y for x, y in zip(have, want)):
        at.fail(f"{what} has extents {extents_text(have)}, but {fragment} is "
                f"{extents_text(want)}")


def mma_fill(cx, at, op, used):
    _frag(cx, at, op, operand(op, used, "m"), FragRole.ACC)


def mma_load(cx, at, op, used):
    m, v = operand(op, used, "m"), operand(op, used, "v")
    frag = _frag(cx, at, op, m, FragRole.A, FragRole.B, FragRole.ACC)
    extents = _view_extents(cx, at, v)
    view = cx.code.views[v]
    elem = element_dtype(cx, view.base_kind, view.base)
    if elem.code != frag.dtype:
        at.fail(f"view {v} has {elem.name} elements, but {label('fragment', m, frag.name)} "
                f"is {BY_CODE[frag.dtype].name}")
    _agree(at, f"view {v}", extents, (frag.rows, frag.cols))


def mma_store(cx, at, op, used):
    m, v = operand(op, used, "m"), operand(op, used, "v")
    frag = _frag(cx, at, op, m, FragRole.ACC)
    extents = _view_extents(cx, at, v)
    if op.name == "MMA_STORE" and used[2] == 1:      # V is [N, M] (§11.3.4)
        _agree(at, f"view {v}", extents, (frag.cols, frag.rows), "the fragment stored transposed")
    else:
        _agree(at, f"view {v}", extents, (frag.rows, frag.cols))


def mma_exec(cx, at, op, used):
    c, a, b, layout = used[:4]
    acc = _frag(cx, at, op, c, FragRole.ACC)
    fa, fb = _frag(cx, at, op, a, FragRole.A), _frag(cx, at, op, b, FragRole.B)
    ta, tb, tc = (BY_CODE[f.dtype] for f in (fa, fb, acc))
    if ta.name not in MMA_ACCUMULATOR:
        at.fail(f"{ta.name} operands; MMA takes {', '.join(MMA_ACCUMULATOR)}")
    if ta is not tb and not (ta.bits == tb.bits == 8 and ta.is_int and tb.is_int):
        at.fail(f"A is {ta.name} but B is {tb.name}; MMA operands have one element type "
                f"(or are both 8-bit integers)")
    if ta.is_int != tc.is_int:
        at.fail(f"{ta.name} operands accumulate in {'an integer' if ta.is_int else 'a float'} "
                f"type, not {tc.name}")
    if 0 <= layout < len(_LAYOUT_DIMS):
        _shapes_agree(at, layout, fa, fb, acc)


def _shapes_agree(at: Where, layout: int, fa, fb, acc) -> None:
    """M, N and K of the three tiles agree where both sides state them."""
    seen: dict = {}
    (a_dims, b_dims), c_dims = _LAYOUT_DIMS[layout], "MN"
    for frag, dims, what in ((acc, c_dims, "C"), (fa, a_dims, "A"), (fb, b_dims, "B")):
        for letter, extent in zip(dims, (frag.rows, frag.cols)):
            if extent == DYNAMIC:
                continue
            if letter in seen and seen[letter][0] != extent:
                at.fail(f"{letter} is {seen[letter][0]} in {seen[letter][1]} but {extent} in "
                        f"{what} ('{frag.name}' {extents_text((frag.rows, frag.cols))})")
            seen.setdefault(letter, (extent, f"{what} ('{frag.name}')"))


def mma_acc(cx, at, op, used):
    """MMA_ASYNC and MMA_WAIT name an accumulator (§11.5)."""
    _frag(cx, at, op, operand(op, used, "m"), FragRole.ACC)


def frag_elem(cx, at, op, used):
    """FRAG_GET and FRAG_SET name an accumulator of static shape (§11.7)."""
    m = operand(op, used, "m")
    frag = _frag(cx, at, op, m, FragRole.ACC)
    if DYNAMIC in (frag.rows, frag.cols):
        at.fail(f"{label('fragment', m, frag.name)} has extents "
                f"{extents_text((frag.rows, frag.cols))}; {op.name} needs static ones")


def mma_gather(cx, at, op, used):
    """A local 2-D buffer whose element type is the fragment's and whose static extents
    agree with it."""
    m, b = operand(op, used, "m"), operand(op, used, "b")
    frag = cx.code.frags[m]
    buf = cx.code.buffers[b]
    if buf.storage != Storage.LOCAL or len(buf.shape) != 2:
        at.fail(f"{label('buffer', b, buf.name)} is not a 2-D local buffer")
    if buf.dtype != frag.dtype:
        at.fail(f"{label('buffer', b, buf.name)} has {BY_CODE[buf.dtype].name} elements, but "
                f"{label('fragment', m, frag.name)} is {BY_CODE[frag.dtype].name}")
    _agree(at, f"buffer {b}", known_extents(cx, buf.shape), (frag.rows, frag.cols))


def mma_scale(cx, at, op, used):
    """MMA_SCALE (§11.8): an f16 or f32 accumulator, a partial sum of its type, shape and
    unit, and a view of f32 row scales, one per row."""
    a, b, v = used[:3]
    acc = _frag(cx, at, op, a, FragRole.ACC)
    part = _frag(cx, at, op, b, FragRole.ACC)
    if a == b:
        at.fail(f"{label('fragment', a, acc.name)} is its own partial sum")
    if BY_CODE[acc.dtype].name not in ("f16", "f32"):
        at.fail(f"{label('fragment', a, acc.name)} is {BY_CODE[acc.dtype].name}; scaled "
                f"accumulators are f16 or f32")
    if (part.dtype, part.unit) != (acc.dtype, acc.unit):
        at.fail(f"the partial sum {label('fragment', b, part.name)} differs from "
                f"{label('fragment', a, acc.name)} in element type or unit")
    _agree(at, f"{label('fragment', b, part.name)}", (part.rows, part.cols),
           (acc.rows, acc.cols), "the accumulator")
    view = cx.code.views[v]
    _windowed(at, v, view)
    if len(view.extents) not in (1, 2):
        at.fail(f"view {v} has rank {len(view.extents)}; row scales are 1-D or 2-D")
    elem = element_dtype(cx, view.base_kind, view.base)
    if elem.name != "f32":
        at.fail(f"view {v} has {elem.name} elements; row scales are f32")
    extents = known_extents(cx, view.extents)
    if DYNAMIC not in extents and acc.rows != DYNAMIC and \
            extents[0] * (extents[1] if len(extents) > 1 else 1) != acc.rows:
        at.fail(f"view {v} has extents {extents_text(extents)}, not one scale per row of "
                f"{label('fragment', a, acc.name)} {extents_text((acc.rows, acc.cols))}")


def mma_sparse(cx, at, op, used):
    """MMA_SPARSE (§11.9): a dense A operand of the packed one's element type, 8-bit
    integer metadata, and extents [M, 2K], [M, K], [M, K/4] where static."""
    a, b, c = used[:3]
    dense = _frag(cx, at, op, a, FragRole.A)
    packed = _frag(cx, at, op, b, FragRole.A, FragRole.B)
    meta = _frag(cx, at, op, c, FragRole.A, FragRole.B)
    if dense.dtype != packed.dtype:
        at.fail(f"{label('fragment', a, dense.name)} is {BY_CODE[dense.dtype].name}, but the "
                f"packed {label('fragment', b, packed.name)} is {BY_CODE[packed.dtype].name}")
    if BY_CODE[meta.dtype].name not in ("u8", "s8"):
        at.fail(f"metadata {label('fragment', c, meta.name)} is {BY_CODE[meta.dtype].name}, "
                f"not 8-bit integers")
    k = packed.cols
    _agree(at, label('fragment', a, dense.name), (dense.rows, dense.cols),
           (packed.rows, 2 * k if k != DYNAMIC else DYNAMIC), "twice the packed operand")
    _agree(at, label('fragment', c, meta.name), (meta.rows, meta.cols * 4 if meta.cols !=
           DYNAMIC else DYNAMIC), (packed.rows, k), "the packed operand (a quarter of it)")


RULES = {"mma_fill": mma_fill, "mma_scale": mma_scale, "mma_sparse": mma_sparse, "mma_load": mma_load, "mma_store": mma_store,
         "mma_exec": mma_exec, "mma_acc": mma_acc, "mma_gather": mma_gather,
         "frag_elem": frag_elem}
