"""Buffer instances, future handles, views and bounds-checked element access
(LANGUAGE.md §3.2, §8, §9.4, §14.4; docs/EXECUTION.md §9-§10).

Conventions: ``w`` the executing warp, ``i`` a lane index in it, ``acc`` an
``Access``, ``buf`` a ``Buffer`` (one instance), ``o``/``e`` a view's origin and extents
(tuples of ints, in root coordinates). Faults go through ``LaneFault`` for the lowest
active lane that has one (§7.1.3).
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from ..bytecode.module import BaseKind, Storage
from ..core import dtypes
from ..core.dtypes import DType
from ..core.faults import Fault, Kind, LaneFault
from ..core.records import dataclass


class Buffer:
    """One buffer instance: values, and in poison mode which elements were written.
    ``flat`` is a one-dimensional view of ``data`` in row-major order, what element
    accesses index by offset. ``ref`` = (code, slot, element) names the declaration it
    was allocated for, as messages name buffers (croqvm.reports.messages, type ``buffer``).
    ``shadow`` is a race checker's state of it (croqvm.interp.shadow), or None."""

    __slots__ = ("ref", "dtype", "data", "flat", "written", "shadow")

    def __init__(self, ref: tuple, dtype: DType, data: np.ndarray, written):
        data = np.ascontiguousarray(data)
        self.ref, self.dtype, self.data, self.written = ref, dtype, data, written
        self.flat = data.reshape(-1)
        self.shadow = None

    @property
    def shape(self) -> tuple:
        return self.data.shape


def new_buffer(ref: tuple, dtype: DType, shape, poison: bool, defined: bool = True) -> Buffer:
    """Zero-filled; in poison mode (§14.4) a ``defined`` buffer, one a declaration makes
    (§3.2.4), has every element written, and another one, a DMA's own destination
    (§9.4.1), holds NaN / bytes 0xA5 with nothing written."""
    shape = tuple(int(d) for d in shape)
    data = np.zeros(shape, dtype.np)
    if not poison:
        return Buffer(ref, dtype, data, None)
    if defined:
        return Buffer(ref, dtype, data, np.ones(shape, bool))
    if dtype.is_float:
        data[...] = np.nan
    else:
        data.view(np.uint8)[...] = 0xA5
    return Buffer(ref, dtype, data, np.zeros(shape, bool))


def swizzled_positions(count: int, elem_bytes: int, swizzle: int) -> np.ndarray:
    """§9.7: where a swizzle of ``swizzle`` bytes places each element of a buffer of
    ``count`` elements: ``pos[k]`` is the row-major position that holds logical element
    ``k``. The byte offset ``b = k * elem_bytes`` goes to ``b ^ ((b & M) >> 3)``, ``M`` the
    log2(swizzle / 16) bits from bit 7 up (PTX/CUTLASS Swizzle<B, 4, 3>, as
    lib/Target/GPU/cute_codegen.cpp addresses a swizzled tile); the function permutes each
    whole ``swizzle``-byte block, and the elements after the last whole block stay put."""
    k = np.arange(count, dtype=np.int64)
    b = k * elem_bytes
    mask = ((swizzle >> 4) - 1) << 7
    pos = (b ^ ((b & mask) >> 3)) // elem_bytes
    whole = count * elem_bytes // swizzle * swizzle // elem_bytes
    pos[whole:] = k[whole:]
    return pos


class Laid:
    """A buffer as its logical elements, when a swizzle lays it out (§9.7): ``data`` and
    ``written`` are copies in logical order; ``store`` puts changes back where the swizzle
    places them. Read and written where a ``Buffer`` would be (``ref``, ``shape``)."""

    __slots__ = ("buf", "pos", "ref", "data", "written")

    def __init__(self, buf: Buffer, swizzle: int):
        self.buf, self.ref = buf, buf.ref
        self.pos = swizzled_positions(buf.flat.size, dtypes.width_bytes(buf.dtype), swizzle)
        self.data = buf.flat[self.pos].reshape(buf.shape)
        self.written = None if buf.written is None else \
            buf.written.reshape(-1)[self.pos].reshape(buf.shape)

    @property
    def shape(self) -> tuple:
        return self.data.shape

    def store(self) -> None:
        self.buf.flat[self.pos] = self.data.reshape(-1)
        if self.written is not None:
            self.buf.written.reshape(-1)[self.pos] = self.written.reshape(-1)


class Reshaped:
    """A buffer's elements from row-major position ``first`` on, seen as an array of
    extents ``shape`` (span_as, §8.3.3): ``data`` and ``written`` are numpy views of the
    buffer's own, so what is written lands in it. Read and written where a ``Buffer``
    would be (``ref``, ``dtype``, ``shape``); ``offsets`` gives the race checker the
    buffer's own positions of a box of it."""

    __slots__ = ("buf", "first", "ref", "dtype", "data", "written")

    def __init__(self, buf: Buffer, first: int, shape: tuple):
        n = math.prod(shape)
        self.buf, self.first, self.ref, self.dtype = buf, first, buf.ref, buf.dtype
        self.data = buf.flat[first:first + n].reshape(shape)
        self.written = None if buf.written is None else \
            buf.written.reshape(-1)[first:first + n].reshape(shape)

    @property
    def shape(self) -> tuple:
        return self.data.shape

    def offsets(self, lo, hi) -> np.ndarray:
        """Positions in ``buf``, in row-major order, of the box [lo, hi) of this array."""
        grid = np.ix_(*(np.arange(l, h, dtype=np.int64) for l, h in zip(lo, hi)))
        return self.first + np.ravel_multi_index(grid, self.shape).reshape(-1)


class Strided:
    """A view's elements at element strides (§8.3.2): element ``i`` of a box of extents
    ``pos.shape`` lies at row-major position ``pos[i]`` of ``buf``. ``data`` and
    ``written`` are copies made when it is made, read where a ``Buffer``'s would be;
    ``laid_out`` makes a fresh one when data moves, and ``store`` puts its values back,
    the last in row-major order where two elements share a position (docs/EXECUTION.md
    §9.2). ``offsets`` gives the race checker the positions of a box of it."""

    __slots__ = ("buf", "pos", "ref", "dtype", "data", "written")

    def __init__(self, buf: Buffer, pos: np.ndarray):
        self.buf, self.pos, self.ref, self.dtype = buf, pos, buf.ref, buf.dtype
        self.data = buf.flat[pos]
        self.written = None if buf.written is None else buf.written.reshape(-1)[pos]

    @property
    def shape(self) -> tuple:
        return self.pos.shape

    def offsets(self, lo, hi) -> np.ndarray:
        """Positions in ``buf``, in row-major order, of the box [lo, hi) of this array."""
        return self.pos[tuple(slice(l, h) for l, h in zip(lo, hi))].reshape(-1)

    def store(self) -> None:
        pos = self.pos.reshape(-1)
        _, back = np.unique(pos[::-1], return_index=True)
        last = pos.size - 1 - back              # each position's last element
        self.buf.flat[pos[last]] = self.data.reshape(-1)[last]
        if self.written is not None:
            self.buf.written.reshape(-1)[pos[last]] = self.written.reshape(-1)[last]


def laid_out(buf: Buffer, swizzle: int):
    """``buf`` in logical order: itself, or its ``Laid`` copy under a swizzle; a
    ``Strided`` view as a fresh copy of its elements."""
    if isinstance(buf, Strided):
        return Strided(buf.buf, buf.pos)
    return Laid(buf, swizzle) if swizzle else buf


@contextmanager
def allocating(kind: Kind, operands: tuple, shape, lane):
    """numpy refusing to make an array of ``shape`` (extents no memory can hold, say from a
    hand-made module) becomes the runtime error ``kind`` (its operands, then the extents)
    of ``lane`` at the executing instruction."""
    try:
        yield
    except (MemoryError, ValueError):
        raise Fault(kind, operands + (tuple(int(d) for d in shape),), lane) from None


@dataclass
class Transfer:
    """One DMA's data movement (§9.5.3): done at issue, or under a random schedule at a
    random point before its wait (``land``)."""
    move: object = None          # callable doing the copy; None once landed

    def land(self) -> None:
        if self.move is not None:
            move, self.move = self.move, None
            move()


@dataclass(eq=False)
class Handle:
    """What a lane's future holds (§9.4, §9.6): a view of a buffer instance (``buf``
    None for a placeholder without data) and the transfer that last wrote it. The lanes
    that issue one DMA hold one handle; which of them have waited for an async transfer
    is kept per block lane in ``waited``. ``swap`` exchanges handles lane by lane, so a
    lane's entry goes with the handle."""
    buf: Buffer | None = None
    origin: tuple = ()
    extents: tuple = ()
    is_async: bool = False
    waited: np.ndarray | None = None   # per block lane, for an async transfer
    issued: int = 0               # span index of the issuing DMA
    transfer: Transfer | None = None

    def pending(self, lane: int) -> bool:
        """An async transfer block lane ``lane`` has not waited for."""
        return self.is_async and not self.waited[lane]


def first_pending(futs, lanes: list):
    """The lowest of ``lanes`` (block lanes, increasing) whose handle in ``futs`` (one
    future's handles) has an async transfer the lane has not waited for, or None."""
    held = [futs[lane] for lane in lanes]
    first = None
    for h in {h for h in held if h is not None and h.is_async}:
        mine = np.array([lane for lane, x in zip(lanes, held) if x is h])
        late = mine[~h.waited[mine]]
        if late.size and (first is None or late[0] < first):
            first = int(late[0])
    return first


def block_wide(decl) -> bool:
    """Whether buffer declaration ``decl`` has one instance for the whole block (shared,
    global) rather than one per lane (local, §3.2.1)."""
    return decl.storage != Storage.LOCAL


def check_array_index(a: int, slot: int, decl, i: int) -> None:
    if not 0 <= a < decl.count:
        raise LaneFault(Kind.BUFFER_ARRAY_INDEX, (a, slot, decl.count), i)


def buffer_of(w, slot: int, arr: int, i: int) -> Buffer:
    """Lane ``i``'s instance of buffer slot ``slot`` (element R[arr] of an array)."""
    decl = w.blk.prog.code.buffers[slot]
    insts = w.blk.instances(slot, w.base + i)
    if insts is None:
        raise LaneFault(Kind.BUFFER_BEFORE_DECLARATION, (slot,), i)
    a = 0
    if arr >= 0:
        a = int(w.regs[arr][i])
        check_array_index(a, slot, decl, i)
    return insts[a]


def future_data(w, slot: int, i: int) -> Handle:
    """Lane ``i``'s handle of future ``slot``, which must hold waited data (§9.5.4)."""
    h = w.blk.futures[slot][w.base + i]
    if h is None or h.buf is None:
        raise LaneFault(Kind.FUTURE_NO_DATA, (slot,), i)
    if h.pending(w.base + i):
        raise LaneFault(Kind.FUTURE_NOT_WAITED, (slot,), i)
    return h


def base_view(w, kind: str, base: int, arr: int, i: int):
    """(buffer, origin, extents) of a view's or access's base for lane ``i``."""
    if kind == BaseKind.FUT:
        h = future_data(w, base, i)
        return h.buf, h.origin, h.extents
    buf = buffer_of(w, base, arr, i)
    return buf, (0,) * buf.data.ndim, buf.shape


def view_registers(code, v: int):
    """The registers that fully determine view ``v`` when its base is one instance for
    the whole block (a shared or global buffer), else None (per-lane bases)."""
    view = code.views[v]
    if view.base_kind != BaseKind.BUF or not block_wide(code.buffers[view.base]):
        return None
    return list(view.origin) + list(view.extents) + list(view.space) + \
        list(view.strides) + ([view.flat] if view.flat >= 0 else []) + \
        ([view.arr] if view.arr >= 0 else [])


def lane_view(blk, v: int, lane: int):
    """``view_of`` for block lane ``lane``, as a collective's effect resolves its views: it
    runs in whichever warp's step completes the rendezvous, so its faults name the block
    lane, never an index into the completing warp (EXECUTION.md §14.2)."""
    w, i = blk.warp_of(lane)
    try:
        return view_of(w, v, i)
    except LaneFault as f:
        raise Fault(f.kind, f.operands, w.base + f.index) from None


def view_of(w, v: int, i: int):
    """Resolve view ``v`` for lane ``i``: (buffer, origin, extents), root coordinates;
    the buffer a ``Reshaped`` one for a reshaped view, which faults where the reshape
    is not inside the buffer (lowering checks that first, §8.3.3)."""
    view = w.blk.prog.code.views[v]
    buf, o, e = base_view(w, view.base_kind, view.base, view.arr, i)
    start = window_start(view, buf, o, e, i) if view.flat >= 0 else 0
    if view.space:
        first = start + int(w.regs[view.flat][i])
        space = tuple(int(w.regs[r][i]) for r in view.space)
        if first < 0 or min(space) < 0 or first + math.prod(space) > buf.flat.size:
            raise LaneFault(Kind.TILE_OUTSIDE, (buf.ref, (first,), (buf.flat.size,)), i)
        buf, o = Reshaped(buf, first, space), (0,) * len(space)
    origin = tuple(int(a) + int(w.regs[r][i]) for a, r in zip(o, view.origin))
    extents = tuple(1 if view.shown and k not in view.shown else int(w.regs[r][i])
                    for k, r in enumerate(view.extents))    # .sqz(): not shown, 1 deep
    if view.strides:
        return strided(w, view, buf, start, extents, i)
    return buf, origin, extents


def window_start(view, buf, o, e, i) -> int:
    """Where a view's base starts in its buffer's memory order: a buffer at 0; a
    future's data at its first element, when it lies contiguous there (one extent other
    than 1 at most before whole dimensions), else FUTURE_NOT_CONTIGUOUS."""
    if view.base_kind != BaseKind.FUT:
        return 0
    ok, partial, start = True, False, 0
    for a, x, d in zip(o, e, buf.shape):
        ok = ok and 0 <= a and a + x <= d and (not partial or x == d)
        partial = partial or x != 1
        start = start * d + a
    if not ok:
        raise LaneFault(Kind.FUTURE_NOT_CONTIGUOUS, (view.base, buf.ref, tuple(o), tuple(e)), i)
    return start


def strided(w, view, buf, start: int, extents: tuple, i: int):
    """A view with element strides (§8.3.2) for lane ``i``: a ``Strided`` box of its
    extents at origin 0, whose element ``r`` lies at position ``start + R[flat] +
    sum((origin + r) * stride)`` of ``buf``; an element outside the buffer is a
    TILE_OUTSIDE fault (lowering checks that first), the lowest in row-major order."""
    pos = np.full([max(x, 0) for x in extents], start + int(w.regs[view.flat][i]), np.int64)
    for k, (o, t) in enumerate(zip(view.origin, view.strides)):
        line = (int(w.regs[o][i]) + np.arange(max(extents[k], 0), dtype=np.int64)) * \
            int(w.regs[t][i])
        pos += line.reshape([-1 if j == k else 1 for j in range(len(extents))])
    bad = np.flatnonzero((pos < 0) | (pos >= buf.flat.size))
    if bad.size:
        at = int(pos.reshape(-1)[bad[0]])
        raise LaneFault(Kind.TILE_OUTSIDE, (buf.ref, (at,), (buf.flat.size,)), i)
    return Strided(buf, pos), (0,) * len(extents), extents


def shown(view, e) -> tuple:
    """The extents ``e`` of ``view`` (all its dimensions) that it shows (.sqz(), §8.3.4)."""
    return tuple(e[k] for k in view.shown) if view.shown else tuple(e)


def unshown(view, a: np.ndarray) -> np.ndarray:
    """Array ``a``, of the rank ``view`` shows, as one of all its dimensions: the ones
    it does not show have extent 1, so the row-major order is the same."""
    if not view.shown:
        return a
    shape = [1] * len(view.extents)
    for k, x in zip(view.shown, a.shape):
        shape[k] = x
    return a.reshape(shape)


# --------------------------------------------------------------------------- element access
# A base resolves to groups (buffer, origin, extents, lane numbers): the active lanes
# that see one view, numbered by position among the active lanes, None meaning all of
# them (the usual case: a shared or global buffer, or a future a collective DMA filled).

def _uniform_bases(w, acc, lanes):
    """Groups for a shared or global slot: one instance, or one per array element."""
    decl = w.blk.prog.code.buffers[acc.base]
    insts = w.blk.instances(acc.base, 0)
    if insts is None:
        return [], LaneFault(Kind.BUFFER_BEFORE_DECLARATION, (acc.base,), int(lanes[0]))
    if acc.arr < 0:
        buf = insts[0]
        return [(buf, (0,) * buf.data.ndim, buf.shape, None)], None
    arr = w.regs[acc.arr][lanes].astype(np.int64)
    bad = np.flatnonzero((arr < 0) | (arr >= decl.count))
    fault, upto = None, len(lanes)
    if bad.size:
        upto = int(bad[0])
        fault = LaneFault(Kind.BUFFER_ARRAY_INDEX, (int(arr[upto]), acc.base, decl.count),
                          int(lanes[upto]))
    groups = []
    for a in np.unique(arr[:upto]):
        buf = insts[int(a)]
        groups.append((buf, (0,) * buf.data.ndim, buf.shape,
                       np.flatnonzero(arr[:upto] == a)))
    return groups, fault


def _same_future_data(w, acc, lanes):
    """The handle every active lane holds, if they hold one and may read its data (the
    common case after a collective DMA), else None."""
    futs = w.blk.futures[acc.base]
    h0 = futs[w.base + int(lanes[0])]
    if h0 is None or h0.buf is None:
        return None
    held = futs[w.base:w.base + w.width] if w.full else [futs[w.base + i] for i in lanes]
    if held.count(h0) != len(held):
        return None
    if h0.is_async and not h0.waited[w.base + lanes].all():
        return None
    return h0


def _lane_bases(w, acc, lanes):
    """Groups for per-lane bases (futures, local buffers), built lane by lane."""
    if acc.base_kind == BaseKind.FUT:
        h = _same_future_data(w, acc, lanes)
        if h is not None:
            return [(h.buf, h.origin, h.extents, None)], None
    groups, fault = {}, None
    for n, i in enumerate(lanes):
        try:
            buf, o, e = base_view(w, acc.base_kind, acc.base, acc.arr, int(i))
        except LaneFault as f:
            fault = f
            break   # lanes are in increasing order: nothing later can come first
        groups.setdefault((id(buf), o, e), (buf, o, e, []))[3].append(n)
    return [(b, o, e, np.asarray(ns)) for b, o, e, ns in groups.values()], fault


def _offsets(buf, o, idx, count: int):
    """Row-major offsets in ``buf`` of the ``count`` elements at ``idx`` (one array per
    dimension, in range) of the view at origin ``o``."""
    flat = np.zeros(count, np.int64) if not idx else None
    for x, a, d in zip(idx, o, buf.shape):
        x = x + a if a else x
        flat = x if flat is None else flat * d + x
    return flat


def is_uniform(code, acc) -> bool:
    """Whether access ``acc`` of ``code`` has one base instance for the whole block (a
    shared or global buffer)."""
    return acc.base_kind == BaseKind.BUF and block_wide(code.buffers[acc.base])


def locate(w, a: int, uniform: bool):
    """Element access ``a`` for every active lane: a list of (buffer, lane indices, flat
    offsets), grouped by buffer instance; every index checked (§8.6). ``uniform``: what
    ``is_uniform`` says of the access."""
    acc = w.blk.prog.code.accesses[a]
    lanes = w.active_indices()
    groups, fault = (_uniform_bases if uniform else _lane_bases)(w, acc, lanes)
    if w.full and fault is None and len(groups) == 1 and acc.indices:
        buf, o, e, ns = groups[0]
        if ns is None and e == buf.data.shape and not any(o):   # one whole buffer
            try:
                return [(buf, lanes, np.ravel_multi_index([w.regs[r] for r in acc.indices],
                                                          e))]
            except ValueError:
                pass    # an index out of range: found and reported below
    idx = [w.regs[r][lanes].astype(np.int64) for r in acc.indices]
    faults = [fault] if fault else []
    out = []
    for buf, o, e, ns in groups:
        sub = idx if ns is None else [x[ns] for x in idx]
        lo = [max(0, -a) for a in o]
        hi = [min(b, d - a) for a, b, d in zip(o, e, buf.shape)]
        bad = np.logical_or.reduce([(x < l) | (x >= h) for x, l, h in zip(sub, lo, hi)])
        if np.count_nonzero(bad):
            n = int(np.flatnonzero(bad)[0])
            lane = int(lanes[n if ns is None else ns[n]])
            faults.append(_range_fault(a, [int(x[n]) for x in sub], lo, hi, lane))
        elif not faults:
            mine = lanes if ns is None else lanes[ns]
            out.append((buf, mine, _offsets(buf, o, sub, len(mine))))
    if faults:
        raise min(faults, key=lambda f: f.index)
    return out


def _range_fault(a: int, idx: list, lo, hi, i) -> LaneFault:
    """The fault of the first dimension of ``idx`` (indices of access ``a``) out of range."""
    k = next(k for k, x in enumerate(idx) if not lo[k] <= x < hi[k])
    return LaneFault(Kind.OUT_OF_RANGE, (a, tuple(idx), idx[k], k, lo[k], hi[k]), i)


def check_written(w, a: int, buf: Buffer, lanes, flat) -> None:
    """Poison mode (§14.4): reading a never-written element is a runtime error."""
    if buf.written is None:
        return
    unset = ~buf.written.reshape(-1)[flat]
    if unset.any():
        n = int(np.flatnonzero(unset)[0])
        idx = tuple(int(w.regs[r][lanes[n]]) for r in w.blk.prog.code.accesses[a].indices)
        raise LaneFault(Kind.UNINITIALISED, (a, idx, buf.ref), int(lanes[n]))


def load(w, a: int, uniform: bool):
    """The element of access ``a`` per lane (array over the warp; inactive lanes 0).
    Poison checks follow lane order across buffer instances."""
    return gather(w, a, locate(w, a, uniform))


def gather(w, a: int, groups):
    """``load`` of the elements ``locate`` found (``groups``)."""
    if len(groups) == 1 and w.full:        # one instance, every lane: a plain gather
        buf, lanes, flat = groups[0]
        check_written(w, a, buf, lanes, flat)
        return buf.flat[flat]
    out = None
    faults = []
    for buf, lanes, flat in groups:
        try:
            check_written(w, a, buf, lanes, flat)
        except LaneFault as f:
            faults.append(f)
        if out is None:
            out = np.zeros(w.width, buf.data.dtype)
        out[lanes] = buf.flat[flat]
    if faults:
        raise min(faults, key=lambda f: f.index)
    return out


def distinct(flat) -> bool:
    """Whether no two of the offsets ``flat`` are equal."""
    return len(set(flat.tolist())) == len(flat)


def store(buf: Buffer, lanes, flat, values) -> None:
    """Write ``values[lanes]`` in lane order: where two lanes write one element, the
    higher lane's value stays (it wrote last)."""
    vals = values[lanes]
    if distinct(flat):
        buf.flat[flat] = vals
        if buf.written is not None:
            buf.written.reshape(-1)[flat] = True
        return
    rev_flat = flat[::-1]
    uniq, first = np.unique(rev_flat, return_index=True)
    keep = len(flat) - 1 - first
    buf.flat[uniq] = vals[keep]
    if buf.written is not None:
        buf.written.reshape(-1)[uniq] = True
