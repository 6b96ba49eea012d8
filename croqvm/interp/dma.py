"""DMA and futures: DMA, FUT_ANY, WAIT, SWAP, FUT_DIM (LANGUAGE.md §9; docs/EXECUTION.md
§6).

Conventions: ``desc`` a ``DmaDesc``; a *tile* is the source view read into arrays of its
nominal extents ``e`` (values, which elements were in range, which were written); ``T``
the extents after the operation (``copy``: ``e``, ``transp``: permuted, ``pad``: grown);
``D`` the destination view's extents. A DMA is planned at issue (views resolved, shapes
checked, futures updated) and its data moves when its ``Transfer`` lands: at once under
the default schedule, later (before its wait) under a random one.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..bytecode.module import DmaOp, swizzled_sides
from ..bytecode.opcodes import SPAN
from ..core.faults import Fault, Kind
from ..core.numerics import convert
from .memory import (Handle, Reshaped, Strided, Transfer, allocating, first_pending, laid_out,
                     lane_view, shown, unshown, view_registers)
from .sync import arrive, check_uniform


def _in_range(o, e, shape):
    """Per dimension, the index range [lo, hi) of a view that lies inside its root."""
    return [max(0, -a) for a in o], [min(x, d - a) for a, x, d in zip(o, e, shape)]


def _check_tile(buf, o, e, lane):
    if any(x < 1 for x in e):
        raise Fault(Kind.EMPTY_TILE, (buf.ref, o, e), lane)
    lo, hi = _in_range(o, e, buf.shape)
    if any(h <= l for l, h in zip(lo, hi)):
        raise Fault(Kind.TILE_OUTSIDE, (buf.ref, o, buf.shape), lane)


def new_tile(shape, dtype):
    """Zeroed tile arrays: values, which elements were in range, which were written."""
    return np.zeros(shape, dtype), np.zeros(shape, bool), np.zeros(shape, bool)


def read_tile(buf, o, tile):
    """Fill the zeroed ``tile`` (extents: its shape) from ``buf`` at origin ``o``."""
    vals, valid, written = tile
    lo, hi = _in_range(o, vals.shape, buf.shape)
    inner = tuple(slice(l, h) for l, h in zip(lo, hi))
    root = tuple(slice(a + l, a + h) for a, l, h in zip(o, lo, hi))
    vals[inner] = buf.data[root]
    valid[inner] = True
    written[inner] = True if buf.written is None else buf.written[root]
    return tile


def _pad(tile, lo, mid, value, out):
    """§9.6.3: source element i lands at lo + i * (mid + 1); every other element is V.
    ``out`` is a zeroed tile of the padded extents."""
    vals, valid, written = tile
    res, ok, wr = out
    res[...], ok[...], wr[...] = value, True, True
    sl = tuple(slice(l, l + (e - 1) * (m + 1) + 1, m + 1) for l, e, m in zip(lo, vals.shape, mid))
    res[sl], ok[sl], wr[sl] = vals, valid, written
    return out


def out_shape(desc, e, pads):
    if desc.op == DmaOp.TRANSP:
        return tuple(e[p] for p in desc.perm)
    if desc.op == DmaOp.PAD:
        lo, hi, mid = pads
        return tuple(l + x + (x - 1) * m + h for l, x, m, h in zip(lo, e, mid, hi))
    return tuple(e)


def write_tile(buf, o, D, tile, zfill):
    """§9.5.1: in-range elements copied; source out of range leaves the destination
    unchanged (zero with .zfill); destination out of range skipped; .zfill also clears
    the destination beyond the tile."""
    vals, valid, written = tile
    lo, hi = _in_range(o, D, buf.shape)
    if any(h <= l for l, h in zip(lo, hi)):
        return
    if zfill:
        region = tuple(slice(a + l, a + h) for a, l, h in zip(o, lo, hi))
        buf.data[region] = 0
        if buf.written is not None:
            buf.written[region] = True
    thi = [min(h, t) for h, t in zip(hi, vals.shape)]
    if any(h <= l for l, h in zip(lo, thi)):
        return
    inner = tuple(slice(l, h) for l, h in zip(lo, thi))
    root = tuple(slice(a + l, a + h) for a, l, h in zip(o, lo, thi))
    np.copyto(buf.data[root], vals[inner], where=valid[inner])
    if buf.written is not None:
        np.copyto(buf.written[root], written[inner], where=valid[inner])


class Plan:
    """DMA ``d`` resolved for one (lowest participating) lane."""

    def __init__(self, blk, d: int, lane: int):
        desc = blk.prog.code.dmas[d]
        w, i = blk.warp_of(lane)
        self.src = lane_view(blk, desc.src, lane)
        _check_tile(*self.src, lane)
        regs = lambda rs: tuple(int(w.regs[r][i]) for r in rs)   # noqa: E731
        self.pads = (regs(desc.pad_lo), regs(desc.pad_hi), regs(desc.pad_mid))
        self.pad_value = w.regs[desc.pad_value][i] if desc.op == DmaOp.PAD else None
        code = blk.prog.code
        self.views = (code.views[desc.src],
                      code.views[desc.dst_view] if desc.dst_view >= 0 else None)
        self.shape = out_shape(desc, shown(self.views[0], self.src[2]), self.pads)
        self.dst = self._destination(blk, desc, w, i, lane)
        buf, o, D = self.dst
        if desc.dst_view >= 0:
            _check_tile(buf, o, D, lane)
            D = shown(self.views[1], D)
        # a larger source is cut to the destination (§9.5.1), but not through a .sqz()
        cut = not (self.views[0].shown or (self.views[1] is not None and self.views[1].shown))
        if len(self.shape) != len(D) or any((t < x and not desc.zfill) or (t > x and not cut)
                                            for t, x in zip(self.shape, D)):
            raise Fault(Kind.DMA_SHAPE, (d, tuple(self.shape), tuple(D)), lane)
        self.d, self.desc = d, desc
        self.tiles = []          # the working tiles, from reserve() until the data moves
        self.swizzles = swizzled_sides(blk.prog.code, desc)

    def read_extents(self):
        """The part of the source the copy reads (§9.5.1): a copy or transposition reads no
        element beyond the destination's extents."""
        se, D = self.src[2], self.dst[2]
        if self.desc.op == DmaOp.PAD:
            return se
        if self.desc.op == DmaOp.TRANSP:
            D = [D[self.desc.perm.index(k)] for k in range(len(D))]
        return tuple(min(e, x) for e, x in zip(se, D))

    def _destination(self, blk, desc, w, i, lane):
        if desc.dst_view >= 0:
            return lane_view(blk, desc.dst_view, lane)
        if desc.future >= 0:
            h = blk.futures[desc.future][lane]
            if h is not None and h.buf is not None:
                return h.buf, h.origin, h.extents
        insts = blk.instances(desc.dst_buffer, lane) or \
            blk.allocate_declared(desc.dst_buffer, lane, [
                int(w.regs[r][i]) for r in blk.prog.code.buffers[desc.dst_buffer].shape],
                defined=False)
        buf = insts[0]
        return buf, (0,) * buf.data.ndim, buf.shape

    def operands(self):
        """What every participant of a collective DMA must present alike (§7.4.5)."""
        (sb, so, se), (db, do, de) = self.src, self.dst
        lo, hi, mid = self.pads
        pad = [] if self.pad_value is None else \
            [("padding value", ("value", (self.pad_value[1].code, self.pad_value[0][0])))]
        return [("source", ("buffer", sb.ref)), ("origin", ("tuple", so)),
                ("extents", ("shape", se)), ("destination", ("buffer", db.ref)),
                ("destination origin", ("tuple", do)), ("destination extents", ("shape", de)),
                ("low padding", ("tuple", lo)), ("high padding", ("tuple", hi)),
                ("interior padding", ("tuple", mid))] + pad

    def reserve(self, lane):
        """Allocate the working tiles when the DMA is issued, so that a tile no memory can
        hold is a fault of the DMA whenever its data would move."""
        src_buf, _, e = self.src
        shapes = [e] + ([self.shape] if self.desc.op == DmaOp.PAD else [])
        for shape in shapes:
            with allocating(Kind.ALLOC_TILE, (self.d,), shape, lane):
                self.tiles.append(new_tile(shape, src_buf.data.dtype))

    def move(self):
        """Read the source and write the destination, each in logical order: the shared
        side of a swizzled copy through its swizzle (§9.7)."""
        src_buf, o, _ = self.src
        tile = read_tile(laid_out(src_buf, self.swizzles[0]), o, self.tiles[0])
        if self.views[0].shown:
            tile = tuple(a.reshape(shown(self.views[0], a.shape)) for a in tile)
        if self.desc.op == DmaOp.TRANSP:
            tile = tuple(np.transpose(a, self.desc.perm) for a in tile)
        elif self.desc.op == DmaOp.PAD:
            lo, _, mid = self.pads
            tile = _pad(tile, lo, mid, self.pad_value, self.tiles[1])
        self.tiles = []
        dst_buf, do, D = self.dst
        if self.views[1] is not None:
            tile = tuple(unshown(self.views[1], a) for a in tile)
        dst = laid_out(dst_buf, self.swizzles[1])
        write_tile(dst, do, D, tile, self.desc.zfill)
        if dst is not dst_buf:
            dst.store()



def _check_unwaited(blk, desc, lanes):
    """§9.5.4: issuing into a future whose async transfer this lane never waited."""
    if desc.future < 0:
        return
    futs = blk.futures[desc.future]
    lane = first_pending(futs, np.asarray(lanes).tolist())
    if lane is not None:
        raise Fault(Kind.NEVER_WAITED, (futs[lane].issued, desc.future), lane)


def _issue(blk, desc, plan, lanes, span):
    plan.reserve(int(lanes[0]))
    transfer = Transfer(plan.move)
    is_async = desc.is_async and desc.future >= 0
    if is_async and blk.call.scheduler.defers_copies:
        blk.transfers.append(transfer)
    else:
        transfer.land()
    handle = None
    if desc.future >= 0:
        buf, o, D = plan.dst
        if isinstance(buf, (Reshaped, Strided)):    # its data is not addressed as the
            buf = buf.buf                           # future's (lowering refuses that)
        waited = np.zeros(blk.size, bool) if is_async else None
        handle = Handle(buf, o, D, is_async, waited, span, transfer)
        futs = blk.futures[desc.future]
        for lane in np.asarray(lanes).tolist():
            futs[lane] = handle
    if blk.call.checker is not None:
        blk.call.checker.dma_issue(blk, desc, plan, lanes, handle)


def _same_view(h, h0) -> bool:
    if h is None or h0 is None:
        return h is h0
    return h.buf is h0.buf and h.origin == h0.origin and h.extents == h0.extents


def _registers(blk, desc, lanes):
    """The registers that determine a collective DMA's operands, when the lanes' views
    have block-wide bases and any destination future is held alike by every lane."""
    code = blk.prog.code
    src = view_registers(code, desc.src)
    dst = view_registers(code, desc.dst_view) if desc.dst_view >= 0 else []
    if src is None or dst is None:
        return None
    if desc.dst_view < 0 and desc.future >= 0:
        futs = blk.futures[desc.future]
        held = [futs[lane] for lane in lanes.tolist()]
        if held.count(held[0]) != len(held) and \
                not all(_same_view(h, held[0]) for h in held):
            return None
    pads = desc.pad_lo + desc.pad_hi + desc.pad_mid + \
        ([desc.pad_value] if desc.op == DmaOp.PAD else [])
    return src + dst + pads


def op_dma(w, ins):
    blk = w.blk
    d = ins[1]
    desc = blk.prog.code.dmas[d]
    if ins[2] >= 0:
        def effect(blk, rec, lanes):
            _check_unwaited(blk, desc, lanes)
            plans = {}
            check_uniform(blk, rec, lanes, lambda lane: plans.setdefault(
                lane, Plan(blk, d, lane)).operands(), _registers(blk, desc, lanes))
            plan = plans.get(int(lanes[0])) or Plan(blk, d, int(lanes[0]))
            _issue(blk, desc, plan, lanes, ins[SPAN])
        arrive(w, ins, ins[2], effect)
        return
    for lane in w.lanes[w.act]:
        _check_unwaited(blk, desc, [lane])
        _issue(blk, desc, Plan(blk, d, int(lane)), [lane], ins[SPAN])


def op_fut_any(w, ins):
    futs = w.blk.futures[ins[1]]
    for lane in w.lanes[w.act]:
        futs[lane] = Handle()


def wait_lane(blk, slot, lane, bind=False):
    """§9.5.3-4: complete the lane's transfer; a second wait of it faults; waiting a
    placeholder without data, or a sync transfer, does nothing. ``bind``: FUT_BIND's
    completion (§10.7), which the race checker hands to a trigger."""
    h = blk.futures[slot][lane]
    if h is None or h.buf is None or not h.is_async:
        return
    if h.waited[lane]:
        raise Fault(Kind.FUTURE_WAITED_TWICE, (slot,), lane)
    h.waited[lane] = True
    h.transfer.land()
    if blk.call.checker is not None:
        (blk.call.checker.dma_bind if bind else blk.call.checker.dma_wait)(blk, h, lane)


def op_wait(w, ins):
    _, slot, coll = ins[:3]
    if coll >= 0:
        def effect(blk, rec, lanes):
            for lane in lanes:
                wait_lane(blk, slot, int(lane))
        arrive(w, ins, coll, effect)
        return
    for lane in w.lanes[w.act]:
        wait_lane(w.blk, slot, int(lane))


def op_fut_bind(w, ins):
    """§10.7: each active lane hands its transfer to the TRIGGER that follows: the copy
    lands now, before the arrival that publishes it, and counts as the lane's wait;
    nothing blocks."""
    for lane in w.lanes[w.act]:
        wait_lane(w.blk, ins[1], int(lane), bind=True)


def op_swap(w, ins):
    a, b = w.blk.futures[ins[1]], w.blk.futures[ins[2]]
    for lane in w.lanes[w.act]:
        a[lane], b[lane] = b[lane], a[lane]


def op_fut_dim(w, ins):
    _, r, slot, k = ins[:4]
    blk = w.blk
    out = np.zeros(w.width, np.int64)
    for i in w.active_indices():
        h = blk.futures[slot][w.base + int(i)]
        if h is None or h.buf is None:
            raise Fault(Kind.FUTURE_NO_DATA, (slot,), w.base + int(i))
        out[i] = h.extents[k]
    w.write(r, convert(out, dtypes.S64, blk.prog.rtypes[r], w.act))


def check_kernel_end(blk) -> None:
    """§9.5.4: a kernel (or the host program, at the function) ending with an async
    transfer some lane never waited."""
    for slot, futs in enumerate(blk.futures):
        lane = first_pending(futs, list(range(blk.size)))
        if lane is not None:
            span = blk.call.fn.span if blk.is_host else blk.kernel.span
            raise Fault(Kind.NEVER_WAITED, (futs[lane].issued, slot), lane, span=span)


HANDLERS = {
    "DMA": op_dma, "FUT_ANY": op_fut_any, "WAIT": op_wait, "SWAP": op_swap,
    "FUT_BIND": op_fut_bind,
    "FUT_DIM": op_fut_dim,
}
