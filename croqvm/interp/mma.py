"""MMA: MMA_FILL, MMA_LOAD, MMA_EXEC, MMA_STORE, MMA_STORE_MASK, MMA_ASYNC, MMA_WAIT
(LANGUAGE.md §11, §12.4; docs/EXECUTION.md §8).

Conventions: each op is a collective of its unit (``arrive(..., whole_unit=True)``);
its effect runs once per fragment instance among the participants (a block-level
``mc = mma.fill`` fills every warpgroup's copy, §11.2). A ``Fragment`` holds f64 values
(int64 for integer types), each already rounded to the fragment's declared type; its
shape is the declared one, an extent the module leaves ``DYNAMIC`` being fixed by the
first operation on the copy (``FragDecl``). An asynchronous MMA computes when it is
issued; what is asynchronous is when its result may be used: its accumulator copy counts
the completions still pending (MMA_ASYNC), and any use of it before MMA_WAIT is an
error (§11.5).
"""
from __future__ import annotations

import numpy as np

from ..bytecode import opcodes
from ..bytecode.module import DYNAMIC
from ..core import dtypes
from ..core.faults import Fault, Kind, LaneFault
from ..core.limits import UNIT_OF_LANES, WARP_SIZE
from ..core.numerics import convert, fma_to, round_to
from .checks import Access
from .memory import allocating, laid_out, lane_view, shown, unshown, view_registers
from .sync import arrive, check_uniform, groups_of

HOST_LANE = 1        # the unit of an op without a site: the host lane (§11.2 (c))

class Fragment:
    """One unit's copy of a fragment: a 2-D tile, or only a fill value until an exec
    or store needs its data (§11.3.3)."""

    def __init__(self, m: int, decl):
        self.m, self.dtype = m, dtypes.BY_CODE[decl.dtype]
        self.shape = (decl.rows, decl.cols)     # DYNAMIC extents until the first use
        self.data = None
        self.fill = 0
        self.pending = 0     # asynchronous MMAs on it not yet waited (§11.5)

    def ready(self, lane) -> "Fragment":
        """This copy, when no asynchronous MMA on it is pending."""
        if self.pending:
            raise Fault(Kind.MMA_PENDING, (self.m,), lane)
        return self

    @property
    def holder(self):
        """The numpy type values are kept in: exact for every element type."""
        return np.int64 if self.dtype.is_int else np.float64

    def fits(self, shape) -> bool:
        """Whether a tile of ``shape`` agrees with this copy's shape; fixes its dynamic
        extents if so."""
        if any(d not in (x, DYNAMIC) for d, x in zip(self.shape, shape)):
            return False
        self.shape = tuple(shape)
        return True

    def shaped(self, lane) -> np.ndarray:
        """The tile, made of the fill value at the first use (the shape is fixed)."""
        if self.data is None:
            with allocating(Kind.ALLOC_FRAGMENT, (self.m,), self.shape, lane):
                self.data = np.full(self.shape, self.fill, self.holder)
        return self.data


def _fragment(blk, m: int, u: int) -> Fragment:
    """Unit instance ``u``'s copy of fragment ``m``."""
    frag = blk.frags.get((m, u))
    if frag is None:
        frag = blk.frags[(m, u)] = Fragment(m, blk.prog.code.frags[m])
    return frag


def _instance(blk, m: int, lane: int) -> Fragment:
    """The copy of fragment ``m`` that block lane ``lane`` owns."""
    unit = blk.prog.code.frags[m].unit
    return _fragment(blk, m, lane // unit if unit > 0 else 0)


def _by_instance(blk, m, lanes):
    """Participant lanes grouped by the copy of fragment ``m`` they own: a list of
    (fragment, its lanes as a list), by increasing unit instance."""
    lanes = np.asarray(lanes)
    unit = blk.prog.code.frags[m].unit
    units = lanes // unit if unit > 0 else np.zeros(len(lanes), np.int64)
    return [(_fragment(blk, m, u), lanes[mine].tolist()) for u, mine in groups_of(units)]


def _collective(w, ins, coll: int, effect) -> None:
    """Run ``effect`` as a collective of the op's unit at site ``coll`` (§11.2); without a
    site (host level, §11.2 (c)) each active lane runs it alone, in lane order, as DMA and
    FILL without a site do: on the host, the host lane as any host statement."""
    if coll >= 0:
        arrive(w, ins, coll, effect, whole_unit=True)
        return
    for i in w.active_indices():
        effect(w.blk, None, w.lanes[i:i + 1])


def _step(c, a, b, t, exact_product):
    """§12.4: c + a * b exact, then rounded to the accumulator type (integers wrap)."""
    if t.is_int:
        return convert(c + a * b, dtypes.S64, t, np.ones(c.shape, bool)).astype(np.int64)
    return fma_to(c, a, b, t, exact_product)


def op_mma_fill(w, ins):
    _, m, r, coll = ins[:4]

    def effect(blk, rec, lanes):
        check_uniform(blk, rec, lanes, lambda lane: [("value", blk.lane_reg(lane, r))], [r])
        for frag, ls in _by_instance(blk, m, lanes):
            frag.ready(ls[0])
            v = convert(np.asarray([blk.lane_reg(ls[0], r)]), blk.prog.rtypes[r], frag.dtype,
                        np.ones(1, bool))
            frag.fill = v.astype(frag.holder)[0]
            if frag.data is not None:
                frag.data[...] = frag.fill
    _collective(w, ins, coll, effect)


def _view_operands(blk, v):
    def operands(lane):
        buf, o, e = lane_view(blk, v, lane)
        return [("buffer", ("buffer", buf.ref)), ("origin", ("tuple", o)),
                ("extents", ("tuple", e))]
    return operands


def _first_outside(o, e, shape):
    """The first element in row-major order of the tile at ``o`` with extents ``e`` that
    lies outside ``shape``, or None: the origin itself, else the origin moved to the edge
    along the last dimension the tile overflows (any earlier one comes later in order)."""
    if any(x < 1 for x in e):
        return None
    if any(not 0 <= a < d for a, d in zip(o, shape)):
        return o
    over = [k for k, (a, x, d) in enumerate(zip(o, e, shape)) if a + x > d]
    if not over:
        return None
    k = over[-1]
    return o[:k] + (shape[k],) + o[k + 1:]


def _load_tile(blk, v, lane, coll):
    buf, o, e = lane_view(blk, v, lane)
    if any(x < 1 for x in e):      # as a DMA's tile (§9.5.1): no K = 0 or sliced-off MMA
        raise Fault(Kind.EMPTY_TILE, (buf.ref, o, e), lane)
    bad = _first_outside(o, e, buf.shape)
    if bad is not None:
        raise Fault(Kind.MMA_READ_OUTSIDE, (coll, tuple(bad), buf.ref), lane)
    region = tuple(slice(a, a + x) for a, x in zip(o, e))
    view = blk.prog.code.views[v]
    laid = laid_out(buf, view.swizzle)     # §9.7
    if laid.written is not None and not laid.written[region].all():
        bad = np.argwhere(~laid.written[region])[0] + np.asarray(o)
        raise Fault(Kind.MMA_UNINITIALISED, (buf.ref, tuple(int(x) for x in bad)), lane)
    if blk.call.checker is not None:
        blk.call.checker.tile(blk, buf, o, e, Access.TILE_READ, lane, "mma.load", view.swizzle)
    tile = laid.data[region]
    return buf, tile.reshape(shown(view, tile.shape))


def op_mma_load(w, ins):
    _, m, v, coll = ins[:4]

    def effect(blk, rec, lanes):
        check_uniform(blk, rec, lanes, _view_operands(blk, v),
                      view_registers(blk.prog.code, v))
        for frag, ls in _by_instance(blk, m, lanes):
            buf, tile = _load_tile(blk, v, ls[0], coll)
            frag.ready(ls[0])       # an accumulator loaded anew (§11.3.2, §11.5)
            if not frag.fits(tile.shape):
                raise Fault(Kind.MMA_TILE_SHAPE, (m, frag.shape, buf.ref, tile.shape), ls[0])
            frag.data = tile.astype(frag.holder)
    _collective(w, ins, coll, effect)


def _tile(blk, m, lane):
    frag = _instance(blk, m, lane)
    if frag.data is None:
        raise Fault(Kind.FRAGMENT_EMPTY, (m,), lane)
    return frag.data


def _mismatch(x: int, x_shape, y: int, y_shape, lane) -> Fault:
    """§11.3.1 for fragments ``x`` and ``y``, worded as the checker words it when the
    shapes are known statically."""
    return Fault(Kind.MMA_SHAPES, (x, x_shape, y, y_shape), lane)


def op_mma_exec(w, ins):
    """C[m][n] += A[m][k] * B[k][n] for k ascending, rounding after each step (§11.3,
    §12.4). ``layout`` (0 row.row, 1 row.col, 2 col.row, 3 col.col) says how A and B
    are stored: A row [M, K] / col [K, M]; B row [N, K] / col [K, N]."""
    _, mc, ma, mb, layout, coll = ins[:6]

    def effect(blk, rec, lanes):
        for frag, ls in _by_instance(blk, mc, lanes):
            frag.ready(ls[0])
            sa, sb = _tile(blk, ma, ls[0]), _tile(blk, mb, ls[0])
            a = sa if layout in (0, 1) else sa.T
            b = sb.T if layout in (0, 2) else sb
            if a.shape[1] != b.shape[0]:
                raise _mismatch(ma, sa.shape, mb, sb.shape, ls[0])
            declared = frag.shape
            if not frag.fits((a.shape[0], b.shape[1])):
                # as the checker does: A when M disagrees, else B
                m, s = (ma, sa) if declared[0] not in (a.shape[0], DYNAMIC) else (mb, sb)
                raise _mismatch(mc, declared, m, s.shape, ls[0])
            c = frag.shaped(ls[0])
            wide = np.int64 if frag.dtype.is_int else np.float64
            a, b = a.astype(wide), b.astype(wide)
            # products of element types narrower than f64 are exact in f64
            types = (_instance(blk, ma, ls[0]).dtype, _instance(blk, mb, ls[0]).dtype)
            exact = dtypes.F64 not in types
            for k in range(a.shape[1]):
                col, row = np.broadcast_arrays(a[:, k, None], b[None, k, :])
                c = _step(c, col, row, frag.dtype, exact)
            frag.data = c
    _collective(w, ins, coll, effect)


def op_mma_store(w, ins):
    """MMA_STORE, and MMA_STORE_MASK: only rows below R[rows] and columns below R[cols]
    of the tile are written (§11.3.4)."""
    masked = ins[0] == opcodes.MMA_STORE_MASK
    if masked:
        _, m, v, rows, cols, coll = ins[:6]
        transp = 0
    else:
        _, m, v, transp, coll = ins[:5]
    site_unit = w.blk.prog.code.colls[coll].unit if coll >= 0 else HOST_LANE
    decl = w.blk.prog.code.frags[m]

    def effect(blk, rec, lanes):
        check_uniform(blk, rec, lanes, _view_operands(blk, v),
                      view_registers(blk.prog.code, v))
        groups = _by_instance(blk, m, lanes)
        if site_unit == 0 and len(groups) > 1 and decl.unit in UNIT_OF_LANES:
            raise Fault(Kind.MMA_STORE_OWNERS, (m, len(groups), decl.unit), int(lanes[0]))
        for frag, ls in groups:
            frag.ready(ls[0])
            buf, o, full = lane_view(blk, v, ls[0])
            e = shown(blk.prog.code.views[v], full)
            want = tuple(e[::-1]) if transp else tuple(e)
            if not frag.fits(want):      # §11.3.4: V is [M, N] ([N, M] with .transp)
                raise Fault(Kind.MMA_TILE_SHAPE, (m, frag.shape, buf.ref, e), ls[0])
            c = frag.shaped(ls[0])
            if masked:
                keep = [max(0, min(int(blk.lane_reg(ls[0], r)), x))
                        for r, x in ((rows, e[0]), (cols, e[1]))]
                c, e = c[:keep[0], :keep[1]], tuple(keep)
                if 0 in keep:
                    continue
            c = unshown(blk.prog.code.views[v], c.T if transp else c)
            _store_tile(buf, o, c, frag.dtype)
            if blk.call.checker is not None:
                blk.call.checker.tile(blk, buf, o, c.shape, Access.TILE_WRITE, ls[0],
                                      "mma.store")
    _collective(w, ins, coll, effect)


def _store_tile(buf, o, c, t):
    """§11.3.4: converted to the destination's type; out-of-range elements skipped."""
    vals = convert(c.astype(t.np) if not t.is_float else round_to(c, t), t, buf.dtype,
                   np.ones(c.shape, bool))
    lo = [max(0, -a) for a in o]
    hi = [min(x, d - a) for a, x, d in zip(o, c.shape, buf.shape)]
    if any(h <= l for l, h in zip(lo, hi)):
        return
    inner = tuple(slice(l, h) for l, h in zip(lo, hi))
    root = tuple(slice(a + l, a + h) for a, l, h in zip(o, lo, hi))
    buf.data[root] = vals[inner]
    if buf.written is not None:
        buf.written[root] = True


def _row_scales(blk, v, frag, lane, coll):
    """The f32 scale of each row of ``frag`` (§11.8): the view's elements in row-major
    order, 0 where the view leaves its buffer, times the factor the caller applies."""
    buf, o, e = lane_view(blk, v, lane)
    if any(x < 0 for x in e) or int(np.prod(e)) != frag.shape[0]:
        raise Fault(Kind.MMA_TILE_SHAPE, (frag.m, frag.shape, buf.ref, e), lane)
    index = np.indices(e).reshape(len(e), -1) + np.asarray(o)[:, None]
    inside = np.all((index >= 0) & (index < np.asarray(buf.shape)[:, None]), axis=0)
    at = tuple(np.where(inside, x, 0) for x in index)
    if buf.written is not None and not buf.written[at][inside].all():
        bad = index[:, np.flatnonzero(inside & ~buf.written[at])[0]]
        raise Fault(Kind.MMA_UNINITIALISED, (buf.ref, tuple(int(x) for x in bad)), lane)
    if blk.call.checker is not None:
        blk.call.checker.tile(blk, buf, o, e, Access.TILE_READ, lane, "mma.scale")
    return np.where(inside, buf.data[at].astype(np.float64), 0.0)    # f32 (verified)


def op_mma_scale(w, ins):
    """acc[i][j] += partial[i][j] * s_i, s_i = f32(rows[i] * factor), then partial := 0
    (§11.8): one rounding for an f32 accumulator (runtime/choreo_cute.h's fmaf), the
    product rounded to f32 and then to f16 before the add for an f16 one (its CPU path)."""
    _, ma, mp, v, r, coll = ins[:6]

    def effect(blk, rec, lanes):
        check_uniform(blk, rec, lanes, _view_operands(blk, v), view_registers(blk.prog.code, v))
        check_uniform(blk, rec, lanes, lambda lane: [("value", blk.lane_reg(lane, r))], [r])
        for frag, ls in _by_instance(blk, ma, lanes):
            part = _instance(blk, mp, ls[0])
            frag.ready(ls[0])
            part.ready(ls[0])
            shape = part.shape if DYNAMIC in frag.shape else frag.shape
            if DYNAMIC in shape or not (frag.fits(shape) and part.fits(shape)):
                raise Fault(Kind.FRAGMENT_EMPTY, (mp,), ls[0])    # no MMA has shaped it
            factor = np.float64(blk.lane_reg(ls[0], r))
            scales = round_to(_row_scales(blk, v, frag, ls[0], coll) * factor, dtypes.F32)
            s = np.broadcast_to(scales.astype(np.float64)[:, None], frag.shape)
            c, p = frag.shaped(ls[0]), part.shaped(ls[0])
            if frag.dtype.name == "f32":
                frag.data = fma_to(c, p, s, frag.dtype, True)
            else:
                x = round_to(round_to(p * s, dtypes.F32).astype(np.float64), frag.dtype)
                frag.data = round_to(c + x.astype(np.float64), frag.dtype).astype(np.float64)
            part.data[...] = 0
    _collective(w, ins, coll, effect)


def op_mma_sparse(w, ins):
    """The dense A that a packed 2:4 operand and its metadata stand for (§11.9;
    runtime/choreo.h Sparse2to4HostPolicyWGMMA::encode is the inverse)."""
    _, md, mp, mm, coll = ins[:5]

    def effect(blk, rec, lanes):
        for frag, ls in _by_instance(blk, md, lanes):
            packed, meta = _tile(blk, mp, ls[0]), _tile(blk, mm, ls[0])
            rows, half = packed.shape
            if meta.shape[0] != rows or 4 * meta.shape[1] != half:
                raise _mismatch(mm, meta.shape, mp, packed.shape, ls[0])
            if not frag.fits((rows, 2 * half)):
                raise _mismatch(md, frag.shape, mp, packed.shape, ls[0])
            dense = np.zeros((rows, 2 * half), frag.holder)
            g = np.arange(half // 2)
            nibbles = (meta[:, g // 2].astype(np.int64) >> (4 * (g % 2))) & 0xF
            r = np.arange(rows)[:, None]
            dense[r, 4 * g + (nibbles & 3)] = packed[:, 0::2]
            dense[r, 4 * g + (nibbles >> 2)] = packed[:, 1::2]     # q wins when p = q
            frag.data = dense
    _collective(w, ins, coll, effect)


def op_mma_async(w, ins):
    """The MMAs just executed on accumulator ``m`` are pending until MMA_WAIT (§11.5)."""
    _, m, coll = ins[:3]

    def effect(blk, rec, lanes):
        for frag, ls in _by_instance(blk, m, lanes):
            frag.pending += 1
            if blk.call.checker is not None:
                text = blk.prog.code.colls[coll].text if coll >= 0 else "mma.async"
                blk.call.checker.mma_async(blk, m, ls[0], text)
    _collective(w, ins, coll, effect)


def op_mma_wait(w, ins):
    _, m, coll = ins[:3]

    def effect(blk, rec, lanes):
        for frag, ls in _by_instance(blk, m, lanes):
            if not frag.pending:
                raise Fault(Kind.MMA_NOT_PENDING, (m,), ls[0])
            frag.pending = 0
            if blk.call.checker is not None:
                blk.call.checker.mma_wait(blk, m, ls[0])
    _collective(w, ins, coll, effect)


def owner(unit: int, i: int, j: int) -> int:
    """The rank in its unit of the lane holding element (i, j) of an accumulator (§11.7):
    the C fragment of mma.sync.m16n8 per warp; a warpgroup's warps take 16-row bands in
    turn (wgmma's D fragment); a unit of another size is one lane, or the whole block,
    which holds every element itself (-1)."""
    if unit not in UNIT_OF_LANES:
        return -1
    lane = (i % 8) * 4 + (j % 8) // 2
    return lane + WARP_SIZE * ((i // 16) % 4) if unit > WARP_SIZE else lane


def _element(w, ins, m: int, ri: int, rj: int):
    """(fragment copy, i, j) per active lane, in lane order, after the range and the
    ownership checks."""
    blk = w.blk
    decl = blk.prog.code.frags[m]
    for k in w.active_indices():
        lane = int(w.lanes[k])
        i, j = int(w.regs[ri][k]), int(w.regs[rj][k])
        if not (0 <= i < decl.rows and 0 <= j < decl.cols):
            raise Fault(Kind.FRAGMENT_INDEX, (m, (i, j), (decl.rows, decl.cols)), lane)
        who = owner(decl.unit, i, j)
        if who >= 0 and who != lane % decl.unit:
            raise Fault(Kind.FRAGMENT_NOT_OWNED, (m, (i, j), decl.unit, who), lane)
        yield k, _instance(blk, m, lane), i, j, lane


def op_frag_get(w, ins):
    _, r, m, ri, rj = ins[:5]
    t = w.blk.prog.rtypes[r]
    out = w.regs[r].copy()
    for k, frag, i, j, lane in _element(w, ins, m, ri, rj):
        held = frag.shaped(lane)[i:i + 1, j]
        stored = held.astype(frag.dtype.np) if frag.dtype.is_int else round_to(held, frag.dtype)
        out[k] = _one(lambda: convert(stored, frag.dtype, t, np.ones(1, bool)), k)
    w.write(r, out)


def _one(convert_one, k: int):
    """A conversion of one lane's value, its fault naming that lane (index ``k``)."""
    try:
        return convert_one()[0]
    except LaneFault as e:
        raise e.at(int(k)) from None


def op_frag_set(w, ins):
    _, m, ri, rj, r = ins[:5]
    src = w.blk.prog.rtypes[r]
    for k, frag, i, j, lane in _element(w, ins, m, ri, rj):
        v = _one(lambda: convert(w.regs[r][k:k + 1], src, frag.dtype, np.ones(1, bool)), k)
        frag.shaped(lane)[i, j] = np.asarray([v]).astype(frag.holder)[0]


def op_mma_gather(w, ins):
    """Each element from the copy of the local buffer that its holder has: the fragment
    a unit's lanes build from their registers (§11.7)."""
    _, m, b, transposed, coll = ins[:5]
    decl = w.blk.prog.code.frags[m]

    def effect(blk, rec, lanes):
        for frag, ls in _by_instance(blk, m, lanes):
            base = ls[0] - ls[0] % decl.unit if decl.unit in UNIT_OF_LANES else ls[0]
            copies: dict = {}

            def copy_of(lane):
                if lane not in copies:
                    insts = blk.instances(b, lane)
                    if insts is None:
                        raise Fault(Kind.BUFFER_BEFORE_DECLARATION, (b,), lane)
                    copies[lane] = insts[0]
                return copies[lane]
            shape = copy_of(ls[0]).shape
            if not frag.fits(shape):
                raise Fault(Kind.MMA_TILE_SHAPE, (m, frag.shape, copy_of(ls[0]).ref, shape),
                            ls[0])
            data = np.empty(shape, frag.holder)
            for r in range(shape[0]):
                for c in range(shape[1]):
                    who = owner(decl.unit, c, r) if transposed else owner(decl.unit, r, c)
                    holder = base + who if who >= 0 else ls[0]
                    src = copy_of(holder)
                    if src.written is not None and not src.written[r, c]:
                        raise Fault(Kind.MMA_UNINITIALISED, (src.ref, (r, c)), holder)
                    data[r, c] = src.data[r, c]
            frag.data = data
    _collective(w, ins, coll, effect)


HANDLERS = {
    "MMA_FILL": op_mma_fill, "MMA_LOAD": op_mma_load, "MMA_EXEC": op_mma_exec,
    "MMA_STORE": op_mma_store, "MMA_STORE_MASK": op_mma_store, "MMA_ASYNC": op_mma_async,
    "MMA_WAIT": op_mma_wait, "MMA_GATHER": op_mma_gather, "FRAG_GET": op_frag_get,
    "FRAG_SET": op_frag_set, "MMA_SCALE": op_mma_scale, "MMA_SPARSE": op_mma_sparse,
}
