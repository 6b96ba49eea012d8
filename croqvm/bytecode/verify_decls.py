"""The verifier's checks of a Code's side tables (croqvm.bytecode.module).

Each table has one check function, called for every entry from ``TABLE_CHECKS``; all use
``verify_code.lookup`` for indices, so an index error reads the same everywhere. The
rules state the module model's own conventions (module.py docstrings, EXECUTION.md):

- every constant holds a value of its dtype: an int in range, 0 or 1 for bool, a float
  the dtype represents exactly (§12.1);
- host buffers are ``GLOBAL`` (§3.2.2); extents are integer registers; a buffer without
  shape registers must get its shape elsewhere: a host parameter or a launch binding (a
  kernel's ``global`` slot) -- a DMA-owned buffer has its own (§9.4.1);
- futures and fragments declare a known dtype and extents >= 1 or ``DYNAMIC``; a
  fragment's dtype is a number type;
- element accesses and views name a ``BUF`` (with an array-index register exactly when
  the buffer is an array, §8.5) or a ``FUT`` base; their index lists match the base's
  rank when the module states it;
- DMA descriptors have a destination of the source's element type and rank (§9.2), a
  permutation for ``TRANSP`` and padding for ``PAD`` of that rank (§9.1); a future
  they fill has their element type, rank, destination storage and async-ness (§9.4.4);
- lane sets are straight-line register code with a bool result (EXECUTION.md §3).

Conventions as in verify_code: ``cx`` CodeCtx, ``at`` Where.
"""
from __future__ import annotations

import math

import numpy as np

from croqvm.core.dtypes import BY_CODE
from croqvm.core.numerics import round_to
from croqvm.core.limits import MAX_REGISTERS

from .module import (DYNAMIC, SWIZZLES, BaseKind, DmaOp, L2Hint, ParamKind, PieceKind, Storage,
                     swizzled_sides)
from .opcodes import FUT_DIM, GRID_SYNC, SWAP, TRIGGER_CLUSTER, WIDTH
from .verify_base import (CodeCtx, Where, base_rank, base_storage, buffer_rank, check_unit,
                          element_dtype, extents_text, future_text, known_extents, label,
                          lookup, want_reg)
from .verify_code import check_instructions

MAX_BUFFER_ARRAY = 65536      # engines keep one instance slot per array element (§8.5)


def check_code(cx: CodeCtx) -> None:
    """Registers, constants and every side table of ``cx.code``, then its instructions."""
    code, where = cx.code, cx.where
    if len(code.regs) > MAX_REGISTERS:
        where.fail(f"{len(code.regs)} registers, more than the limit of {MAX_REGISTERS}")
    for r, dtype in enumerate(code.regs):
        want_dtype(where.at(f"register r{r}"), dtype)
    if len(code.reg_names) > len(code.regs):
        where.fail(f"{len(code.reg_names)} register names for {len(code.regs)} registers")
    for k, const in enumerate(code.consts):
        _const(where.at(f"constant k{k}"), const)
    if cx.is_kernel and code.launches:
        where.fail("launch descriptors belong to host code")
    for attr, noun, check in TABLE_CHECKS:
        for n, entry in enumerate(getattr(code, attr)):
            name = getattr(entry, "name", None) or getattr(entry, "text", "")
            check(cx, where.at(label(noun, n, name)), n, entry)
    for n, use in unaddressed_futures(code):
        where.at(label("DMA", n, code.dmas[n].text)).fail(
            f"fills {label('future', code.dmas[n].future, '')} through a reshaped, squeezed "
            f"or strided destination view, and the code uses such data ({use})")
    if not 0 <= code.once_sites <= len(code.code) // WIDTH:
        where.fail(f"{code.once_sites} once sites for {len(code.code) // WIDTH} instructions")
    check_instructions(cx, code.code, where)


def want_dtype(at: Where, code: int):
    if code not in BY_CODE:
        at.fail(f"unknown dtype code {code}")
    return BY_CODE[code]


def want_span(cx: CodeCtx, at: Where, span: int):
    lookup(at, "span", span, cx.module.spans)


def _const(at: Where, const) -> None:
    """A constant's value is one its dtype holds (module.Const)."""
    dt, value = want_dtype(at, const.dtype), const.value
    if dt.is_float:
        if type(value) is not float:
            at.fail(f"a {dt.name} constant holds the integer {value}")
        # a value beyond the type rounds to inf, and a signalling NaN is 'invalid' to cast:
        # the constant's error, not numpy's warnings
        with np.errstate(over="ignore", invalid="ignore"):
            rounded = float(round_to(np.array([value]), dt)[0])
        if not (math.isnan(value) or rounded == value):
            at.fail(f"{value!r} is not a {dt.name} value (constants are rounded to their "
                    "dtype by the compiler)")
        return
    if type(value) is not int:
        at.fail(f"a {dt.name} constant holds the float {value!r}")
    lo, hi = (0, 1) if dt.kind == "bool" else \
        (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.signed else (0, (1 << dt.bits) - 1)
    if not lo <= value <= hi:
        at.fail(f"{value} is out of range for {dt.name} ({lo}..{hi})")


def _extents(at: Where, what: str, extents: list[int]) -> None:
    for d in extents:
        if d < 1 and d != DYNAMIC:
            at.fail(f"{what} {d} (expected an extent >= 1, or {DYNAMIC} for one known at "
                    "run time)")


# -- one check per table ------------------------------------------------------------------

def _buffer(cx: CodeCtx, at: Where, b: int, buf):
    if not cx.is_kernel and buf.storage != Storage.GLOBAL:
        at.fail(f"a {buf.storage.name.lower()} buffer in host code; host buffers are global "
                "(§3.2.2)")
    want_dtype(at, buf.dtype)
    for reg in buf.shape:
        want_reg(cx, at, reg, "index", "extent register")
    count = 1
    for d in buf.array:
        if d < 1:
            at.fail(f"buffer array extent {d} must be at least 1")
        count *= d
        if count > MAX_BUFFER_ARRAY:
            at.fail(f"buffer array of more than {MAX_BUFFER_ARRAY} buffers")
    param = lookup(at, "parameter", buf.param, cx.fn.params, optional=True)
    if param is not None:
        if param.kind != ParamKind.BUFFER or param.dtype != buf.dtype:
            at.fail(f"bound to parameter {buf.param} ('{param.name}'), which is not a "
                    f"{BY_CODE[buf.dtype].name} buffer")
        if not cx.is_kernel and param.slot != b:
            at.fail(f"bound to parameter {buf.param} ('{param.name}'), whose slot is "
                    f"{param.slot}")
    bound = (param is not None) if not cx.is_kernel else buf.storage == Storage.GLOBAL
    if not buf.shape and not bound:
        at.fail("no shape registers, and no parameter or launch binding gives it a shape")
    want_span(cx, at, buf.span)


def _future(cx, at, n, fut):
    want_dtype(at, fut.dtype)
    if not fut.shape:
        at.fail("a future's data has rank >= 1")
    _extents(at, "extent", fut.shape)
    want_span(cx, at, fut.span)


def _event(cx, at, n, ev):
    if ev.slots < 1:
        at.fail(f"{ev.slots} slots; an event has at least 1")
    if ev.count < -1 or ev.count == 0:
        at.fail(f"arrival count {ev.count} (expected -1 for the lane sets' count, or >= 1)")
    for ls in ev.lanesets:
        lookup(at, "lane set", ls, cx.code.lanesets)
    want_span(cx, at, ev.span)


def _frag(cx, at, n, frag):
    if want_dtype(at, frag.dtype).kind == "bool":   # MMA computes on numbers (§11.1)
        at.fail("a fragment holds numbers, not bool")
    _extents(at, "tile extent", [frag.rows, frag.cols])
    check_unit(at, frag.unit)
    want_span(cx, at, frag.span)


def _base(cx: CodeCtx, at: Where, kind: BaseKind, base: int, arr: int) -> int | None:
    """Check an access's or view's base; returns its rank when known."""
    if kind == BaseKind.FUT:
        lookup(at, "future", base, cx.code.futures)
        if arr != -1:
            at.fail(f"a future base takes no array index (got r{arr})")
        return base_rank(cx, kind, base)
    buf = lookup(at, "buffer", base, cx.code.buffers)
    want_reg(cx, at, arr, "index", "array index", optional=True)
    if buf.array and arr == -1:
        at.fail(f"buffer array '{buf.name}' needs an array index register")
    return buffer_rank(cx, base)


def _ranked(at: Where, what: str, items: list, rank: int | None):
    if rank is not None and len(items) != rank:
        at.fail(f"{len(items)} {what} for a base of rank {rank}")


def _access(cx, at, n, acc):
    rank = _base(cx, at, acc.base_kind, acc.base, acc.arr)
    _ranked(at, "indices", acc.indices, rank)
    for reg in acc.indices:
        want_reg(cx, at, reg, "index", "index register")


def _view(cx, at, n, view):
    rank = _base(cx, at, view.base_kind, view.base, view.arr)
    if len(view.origin) != len(view.extents) or not view.extents:
        at.fail(f"{len(view.origin)} origin and {len(view.extents)} extent registers "
                "(expected the same number, at least 1)")
    if view.strides:
        _strided(cx, at, view)
    elif view.space or view.flat != -1:
        _reshaped(cx, at, view)
    else:
        _ranked(at, "extents", view.extents, rank)
    for reg in view.origin + view.extents:
        want_reg(cx, at, reg, "index", "origin/extent register")
    if view.shown and (sorted(set(view.shown)) != view.shown or view.shown[0] < 0
                       or view.shown[-1] >= len(view.extents)
                       or len(view.shown) == len(view.extents)):
        at.fail(f"shown dimensions {view.shown} (expected some of the view's "
                f"{len(view.extents)} dimensions, increasing, fewer than all)")
    _swizzle(at, view.swizzle)


def _reshaped(cx, at, view):
    """A ``span_as`` view (§8.3.3): a reshape of a buffer's own elements, one extent
    register per dimension of it; engines read a swizzled side in the buffer's own
    layout, so no swizzle goes with it."""
    want_reg(cx, at, view.flat, "index", "first-element register")
    if len(view.space) != len(view.extents):
        at.fail(f"{len(view.extents)} extents in a reshape of rank {len(view.space)}")
    for reg in view.space:
        want_reg(cx, at, reg, "index", "reshape extent register")
    if view.swizzle:
        at.fail(f"swizzle of {view.swizzle} bytes on a reshaped view")


def _strided(cx, at, view):
    """A view with element strides (§8.3.2): a first-element register and one stride
    register per dimension; its elements lie apart in memory, so no reshape and no
    swizzle go with it."""
    want_reg(cx, at, view.flat, "index", "first-element register")
    if len(view.strides) != len(view.extents):
        at.fail(f"{len(view.strides)} stride registers for a view of rank {len(view.extents)}")
    for reg in view.strides:
        want_reg(cx, at, reg, "index", "stride register")
    if view.space:
        at.fail("a reshape with element strides")
    if view.swizzle:
        at.fail(f"swizzle of {view.swizzle} bytes on a view with element strides")


def _swizzle(at, n: int):
    if n not in SWIZZLES:
        at.fail(f"swizzle of {n} bytes (expected one of {', '.join(map(str, SWIZZLES))})")


def _dma(cx, at, n, dma):
    src = lookup(at, "view", dma.src, cx.code.views)
    rank, etype = len(src.shown_extents), element_dtype(cx, src.base_kind, src.base)
    op = dma.op.name.lower()
    if sorted(dma.perm) != (list(range(rank)) if dma.op == DmaOp.TRANSP else []):
        at.fail(f"permutation {dma.perm} for a DMA '{op}' of rank {rank}")
    pads = (dma.pad_lo, dma.pad_hi, dma.pad_mid)
    want = rank if dma.op == DmaOp.PAD else 0
    if any(len(p) != want for p in pads) or (dma.pad_value == -1) != (dma.op != DmaOp.PAD):
        at.fail(f"padding registers do not fit a DMA '{op}' of rank {rank}")
    for reg in dma.pad_lo + dma.pad_hi + dma.pad_mid:
        want_reg(cx, at, reg, "index", "padding register")
    pad = want_reg(cx, at, dma.pad_value, "any", "pad value", optional=True)
    if pad not in (None, etype):
        at.fail(f"pad value r{dma.pad_value} is {pad.name}, but the elements are {etype.name}")
    dst = _dma_destination(cx, at, dma, rank, etype)
    if dst is None:     # a future's data is the destination only once it holds some (§9.4)
        at.fail("no destination (a view or the statement's own buffer)")
    _tma(cx, at, dma, base_storage(cx, src.base_kind, src.base), dst[0])
    fut = lookup(at, "future", dma.future, cx.code.futures, optional=True)
    views = [src, lookup(at, "view", dma.dst_view, cx.code.views, optional=True)]
    shared_side = views[0 if swizzled_sides(cx.code, dma)[0] else 1]
    if dma.swizzle and shared_side is not None and (shared_side.space or shared_side.strides):
        at.fail(f"swizzle of {dma.swizzle} bytes on a reshaped or strided view")
    if fut is not None:
        storage = dst[0]
        if (fut.dtype, len(fut.shape), fut.storage, fut.is_async) != \
                (etype.code, rank, storage, dma.is_async):
            at.fail(f"fills {label('future', dma.future, fut.name)} ({future_text(fut)}) with "
                    f"{'async ' if dma.is_async else ''}{storage.name.lower()} "
                    f"{etype.name} data of rank {rank}")
        extents = known_extents(cx, dst[1])
        if any(DYNAMIC not in (x, y) and x != y for x, y in zip(extents, fut.shape)):
            at.fail(f"fills {label('future', dma.future, fut.name)} ({future_text(fut)}) with "
                    f"data of extents {extents_text(extents)}")


def _tma(cx, at, dma, src: Storage, dst: Storage):
    """§9.7: a TMA transfer goes between global and shared memory; an L2 hint belongs to a
    TMA load; a swizzle lays out a shared side."""
    if dma.tma and {src, dst} != {Storage.GLOBAL, Storage.SHARED}:
        at.fail(f"TMA transfer from {src.name.lower()} to {dst.name.lower()} memory "
                "(expected between global and shared)")
    if dma.l2_hint != L2Hint.NONE and not (dma.tma and dst == Storage.SHARED):
        at.fail("L2 hint on a DMA that is not a TMA load into shared memory")
    if dma.multicast and not (dma.tma and dst == Storage.SHARED and dma.l2_hint == L2Hint.NONE):
        at.fail("multicast on a DMA that is not a TMA load into shared memory without an "
                "L2 hint")
    _swizzle(at, dma.swizzle)
    if dma.swizzle and Storage.SHARED not in (src, dst):
        at.fail(f"swizzle of {dma.swizzle} bytes with neither side in shared memory")


def _dma_destination(cx, at, dma, rank, etype):
    """Check a DMA's view or own buffer: (its storage, its extent registers), or None if
    the DMA has neither."""
    view = lookup(at, "view", dma.dst_view, cx.code.views, optional=True)
    own = lookup(at, "buffer", dma.dst_buffer, cx.code.buffers, optional=True)
    if view is not None:
        kind, base, extents, what = (view.base_kind, view.base, view.shown_extents,
                                     "destination view")
    elif own is not None:
        if not own.shape:
            at.fail(f"own {label('buffer', dma.dst_buffer, own.name)} has no shape registers")
        kind, base, extents, what = BaseKind.BUF, dma.dst_buffer, own.shape, "own buffer"
    else:
        return None
    dtype = element_dtype(cx, kind, base)
    if len(extents) != rank or dtype is not etype:
        at.fail(f"copies {etype.name} data of rank {rank} into the {what}, of {dtype.name} "
                f"elements and rank {len(extents)} (§9.2: one element type and rank)")
    return base_storage(cx, kind, base), extents


def _coll(cx, at, n, coll):
    lookup(at, "lane set", coll.laneset, cx.code.lanesets)
    check_unit(at, coll.unit)


def _laneset(cx, at, n, ls):
    want_reg(cx, at, ls.result, "bool", "result", optional=True)
    check_instructions(cx, ls.code, at, laneset=True)


def _print(cx, at, n, fmt):
    for kind, index in fmt.pieces:
        if kind == PieceKind.STR:
            lookup(at, "string", index, cx.code.strings)
        else:
            lookup(at, "register", index, cx.code.regs)


def _launch(cx, at, n, launch):
    kernel = lookup(at, "kernel", launch.kernel, cx.fn.kernels)
    kcode = kernel.code
    if len(launch.grid) != kernel.grid_rank:
        at.fail(f"{len(launch.grid)} grid extents for a kernel of grid rank {kernel.grid_rank}")
    for reg in launch.grid:
        want_reg(cx, at, reg, "index", "grid extent")
    if len(launch.cluster) > kernel.grid_rank:
        at.fail(f"{len(launch.cluster)} cluster extents for a kernel of grid rank "
                f"{kernel.grid_rank}")
    for reg in launch.cluster:
        want_reg(cx, at, reg, "index", "cluster extent")
    if kernel.block_size == 0:
        if launch.block == -1:
            at.fail(f"gives no block size register for kernel {launch.kernel}, whose block "
                    "size is given at launch")
        want_reg(cx, at, launch.block, "index", "block size register")
    elif launch.block != -1:
        at.fail(f"gives block size register r{launch.block} for a kernel whose block size is "
                f"{kernel.block_size}")
    bound = set()
    for kslot, hslot in launch.buffers:
        kbuf = lookup(at, "kernel buffer", kslot, kcode.buffers)
        hbuf = lookup(at, "buffer", hslot, cx.code.buffers)
        if kbuf.storage != Storage.GLOBAL or kbuf.dtype != hbuf.dtype or kslot in bound:
            at.fail(f"binds kernel buffer {kslot} ('{kbuf.name}', {kbuf.storage.name.lower()} "
                    f"{_dt(kbuf.dtype)}) to buffer {hslot} ('{hbuf.name}', {_dt(hbuf.dtype)}); "
                    "expected a global kernel buffer of the same dtype, bound once")
        kcx = cx.beside(kcode, kernel, cx.where)
        krank, hrank = buffer_rank(kcx, kslot), buffer_rank(cx, hslot)
        if None not in (krank, hrank) and krank != hrank:
            at.fail(f"binds kernel buffer {kslot} of rank {krank} to buffer {hslot} of rank "
                    f"{hrank}")
        bound.add(kslot)
    unbound = [b.name or str(i) for i, b in enumerate(kcode.buffers)
               if b.storage == Storage.GLOBAL and i not in bound]
    if unbound:
        at.fail(f"leaves global kernel buffer(s) {', '.join(unbound)} unbound")
    set_regs = set()
    for kreg, hreg in launch.scalars:
        kdt = lookup(at, "kernel register", kreg, kcode.regs)
        hdt = lookup(at, "register", hreg, cx.code.regs)
        if kdt != hdt or kreg in set_regs:
            at.fail(f"passes r{hreg} ({_dt(hdt)}) to kernel register r{kreg} ({_dt(kdt)}); "
                    "expected the same dtype, each kernel register once")
        set_regs.add(kreg)
    want_span(cx, at, launch.span)
    if not launch.cooperative and any(
            kcode.code[i] == GRID_SYNC for i in range(0, len(kcode.code), WIDTH)):
        at.fail(f"launches kernel {launch.kernel}, which has a grid barrier (GRID_SYNC), "
                "without cooperative")
    if launch.cooperative and any(
            kcode.code[i] == TRIGGER_CLUSTER for i in range(0, len(kcode.code), WIDTH)):
        at.fail(f"launches kernel {launch.kernel}, which has a cluster-scope trigger "
                "(TRIGGER_CLUSTER), cooperatively")
    if launch.stream != -1:
        params = cx.fn.params
        if not 0 <= launch.stream < len(params) or \
                params[launch.stream].kind != ParamKind.STREAM:
            at.fail(f"runs on stream {launch.stream}, which is not a stream parameter of the "
                    "function")


def _dt(code: int) -> str:
    return BY_CODE[code].name     # kernels are checked before the host launching them


# Lane sets first: events and collective sites refer to them, and their code must be sane
# before anything else assumes it.
def unaddressed_futures(code) -> list[tuple[int, str]]:
    """The DMAs that fill a future through a reshaped, squeezed or strided destination
    view, whose data, not a window of its buffer, the engines do not address, where the
    code uses the data of a future that may hold it (one linked by SWAP): (DMA, the
    use). Waiting for and rotating such futures is all the code may do with them."""
    ins, links = code.code, list(range(len(code.futures)))

    def root(f: int) -> int:
        while links[f] != f:
            f = links[f]
        return f

    whole = range(0, len(ins) - WIDTH + 1, WIDTH)     # a cut last one: check_instructions'
    for pc in whole:
        if ins[pc] == SWAP and 0 <= ins[pc + 1] < len(links) and 0 <= ins[pc + 2] < len(links):
            links[root(ins[pc + 1])] = root(ins[pc + 2])
    uses = {}
    for pc in whole:
        if ins[pc] == FUT_DIM and 0 <= ins[pc + 2] < len(links):
            uses.setdefault(root(ins[pc + 2]), "an extent of its data")
    for v in code.views:
        if v.base_kind == BaseKind.FUT and 0 <= v.base < len(links):
            uses.setdefault(root(v.base), "a view of its data")
    for a in code.accesses:
        if a.base_kind == BaseKind.FUT and 0 <= a.base < len(links):
            uses.setdefault(root(a.base), "an element of its data")
    for d in code.dmas:
        if d.dst_view < 0 and 0 <= d.future < len(links):
            uses.setdefault(root(d.future), "a copy into the buffer it holds")
    out = []
    for n, d in enumerate(code.dmas):
        if not (0 <= d.future < len(links) and 0 <= d.dst_view < len(code.views)):
            continue
        v = code.views[d.dst_view]
        if (v.space or v.shown or v.strides) and root(d.future) in uses:
            out.append((n, uses[root(d.future)]))
    return out


TABLE_CHECKS = (
    ("lanesets", "lane set", _laneset),
    ("buffers", "buffer", _buffer),
    ("futures", "future", _future),
    ("events", "event", _event),
    ("frags", "fragment", _frag),
    ("accesses", "access", _access),
    ("views", "view", _view),
    ("dmas", "DMA", _dma),
    ("colls", "collective site", _coll),
    ("prints", "print format", _print),
    ("launches", "launch", _launch),
)
