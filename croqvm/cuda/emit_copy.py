"""Tile copies whose shapes are known when generating (LANGUAGE.md §9.5.1): a plain
``dma.copy`` between views of buffers, no reshape, strides, ``.sqz()`` or permutation,
a swizzle only on the destination (§9.7), the extents of both sides constants. Such a copy is written out with its
shape in the code: no ``cq_view``/``cq_dma`` records passed to the runtime's general
helpers, index arithmetic by constant divisors in 32 bits, each element moved as one
word of its size. From global into shared memory, with rows of whole 16-byte chunks at
16-byte aligned addresses, it goes by 16-byte ``cp.async`` (LDGSTS.128), the source
size operand zero-filling what lies beyond the source or the tile. The checks and
their fault records are the general path's (EMPTY_TILE, TILE_OUTSIDE, DMA_SHAPE), in
its order; whatever does not qualify, at generation or at run time, takes the general
path (emit_sync.op_dma).
"""
from __future__ import annotations

from ..bytecode.module import BaseKind, DmaOp, Storage, dst_storage, swizzled_sides
from ..core.faults import Kind
from . import cnum
from .emit import op_name
from .emit_ops import buffer_instance
from . import emit_tma

CHUNK = 16     # bytes a cp.async moves at most


class Side:
    """One side of the copy as scalars: base pointer, per dimension its buffer extent,
    origin and (constant) extent, and how messages name the buffer."""

    def __init__(self, name, base, dims, origin, ext, elem, slot, index):
        self.name, self.base, self.dims, self.origin = name, base, dims, origin
        self.ext, self.elem, self.slot, self.index = ext, elem, slot, index

    def lo(self, j) -> str:
        return f"{self.name}_lo{j}"

    def hi(self, j) -> str:
        return f"{self.name}_hi{j}"

    def declare(self, k, ins) -> None:
        """Scalars of the side: origin, buffer extent, and the in-range interval of each
        dimension, [max(0, -o), min(e, d - o)) (cq_lo/cq_hi)."""
        rank = len(self.ext)
        k.line(f"unsigned char *const {self.name}_base = {self.base};", ins)
        for j in range(rank):
            o, d = f"{self.name}_o{j}", f"{self.name}_d{j}"
            k.line(f"const long long {o} = {self.origin[j]}, {d} = {self.dims[j]};", ins)
            k.line(f"const long long {self.lo(j)} = {o} < 0 ? -{o} : 0, {self.hi(j)} = "
                   f"{d} - {o} < {self.ext[j]} ? {d} - {o} : {self.ext[j]};", ins)

    def offset(self, index) -> str:
        """The byte offset of view element ``index`` (C expressions, one per dimension),
        row-major in the buffer."""
        off = ""
        for j, i in enumerate(index):
            term = f"{self.name}_o{j} + {i}"
            off = f"({term})" if not off else f"({off} * {self.name}_d{j} + {term})"
        return f"{off} * {self.elem}"

    def address(self, index, swizzle: int = 0) -> str:
        """The address of view element ``index``, through the buffer's swizzle (§9.7)."""
        off = self.offset(index)
        if swizzle:
            size = " * ".join(f"{self.name}_d{j}" for j in range(len(self.ext)))
            off = f"cq_swizzle_at({off}, {self.elem}, {size} * {self.elem}, {swizzle})"
        return f"{self.name}_base + {off}"

    def view(self) -> str:
        """The side as a ``cq_view`` (a future holds its destination)."""
        rank = len(self.ext)
        dims = ", ".join(f"{self.name}_d{j}" for j in range(rank))
        origin = ", ".join(f"{self.name}_o{j}" for j in range(rank))
        ext = ", ".join(f"{e}ll" for e in self.ext)
        return (f"cq_view{{{self.name}_base, {self.elem}, {rank}, {self.slot}, {self.index}, "
                f"{{{dims}}}, {{{origin}}}, {{{ext}}}}}")


def _plain(k, v: int) -> bool:
    d = k.code.views[v]
    return d.base_kind == BaseKind.BUF and not (d.space or d.shown or d.strides) and \
        d.flat < 0 and not d.swizzle and all(e in k.consts for e in d.extents)


def _buffer_side(k, name, v, ins, ip) -> Side:
    d = k.code.views[v]
    inst = buffer_instance(k, d.base, d.arr, ins, ip)
    origin = [f"(long long)r{o}" for o in d.origin]
    return Side(name, inst.base, inst.dims, origin, [int(k.consts[e]) for e in d.extents],
                cnum.elem_bytes(inst.dtype), inst.slot, inst.index)


def _storage(k, v: int):
    return k.code.buffers[k.code.views[v].base].storage


def applies(k, desc) -> bool:
    """Whether DMA ``desc`` qualifies when generating."""
    if desc.op != DmaOp.COPY or desc.perm or not _plain(k, desc.src) or \
            swizzled_sides(k.code, desc)[0]:
        return False       # a swizzled destination is written in place, a source is not
    src_ext = [int(k.consts[e]) for e in k.code.views[desc.src].extents]
    dst_ext = _dst_extents(k, desc)
    if dst_ext is None:
        return False
    return len(src_ext) == len(dst_ext) and min(src_ext + dst_ext) >= 1 and \
        (desc.zfill or all(t >= e for t, e in zip(src_ext, dst_ext)))


def tile_copy(k, desc, ins, ip, part: str, parts: str) -> str | None:
    """Emits DMA ``desc`` (inside its collective, lane share ``part`` of ``parts``) when
    it qualifies: None when it does not (nothing emitted); "done" when the copy is
    complete; "guarded" when its destination (a future's buffer) is known only at run
    time: the fast copy is emitted under a test of it and an ``else {`` opened, for the
    caller to emit the general copy in and close."""
    if not applies(k, desc):
        return None
    src = _buffer_side(k, "cs", desc.src, ins, ip)
    _check_tile(k, src, ins, ip)
    guarded = False
    if desc.dst_view >= 0:
        dst = _buffer_side(k, "cd", desc.dst_view, ins, ip)
        _check_tile(k, dst, ins, ip)
    else:
        inst = buffer_instance(k, desc.dst_buffer, -1, ins, ip)
        ext = [int(k.consts[r]) for r in k.code.buffers[desc.dst_buffer].shape]
        rank = len(ext)
        if desc.future >= 0:
            # the future's buffer once it holds data (§9.4), whose shape may differ
            f = f"f{desc.future}.v"
            if not _fixed_shape(k, desc.future, ext):
                same = " && ".join([f"!{f}.strided && {f}.rank == {rank}"] +
                                   [f"{f}.ext[{j}] == {e}" for j, e in enumerate(ext)])
                k.line(f"if (!f{desc.future}.has_data || ({same})) {{", ins)
                k.depth += 1
                guarded = True
            base = f"f{desc.future}.has_data ? {f}.base : {inst.base}"
            dims = [f"f{desc.future}.has_data ? {f}.dims[{j}] : {inst.dims[j]}"
                    for j in range(rank)]
            origin = [f"f{desc.future}.has_data ? {f}.origin[{j}] : 0" for j in range(rank)]
            index = f"f{desc.future}.has_data ? {f}.index : {inst.index}"
            slot = f"f{desc.future}.has_data ? {f}.slot : {inst.slot}"
        else:
            base, dims, origin = inst.base, inst.dims, ["0"] * rank
            index, slot = inst.index, inst.slot
        dst = Side("cd", f"({base})", dims, origin, ext, cnum.elem_bytes(inst.dtype),
                   f"({slot})", f"({index})")
        dst.declare(k, ins)      # the statement's own buffer or the future's: no check
    # DMA_SHAPE cannot fail: applies() saw the tile cover the destination or .zfill
    k.site(Kind.DMA_SHAPE, ip, ins[-1], lambda a, refs: ())
    tensor = emit_tma.issue_tile(k, ins, ip, desc, part, src, dst)    # `if (fits) {...} else`
    if tensor:
        k.line("{", ins)
        k.depth += 1
    _move(k, desc, src, dst, ins, part, parts)
    if tensor:
        k.depth -= 1
        k.line("}", ins)
    if desc.future >= 0:
        fill_future(k, desc, dst.view(), ins)
    if not guarded:
        return "done"
    k.depth -= 1
    k.line("} else {", ins)
    return "guarded"


def fill_future(k, desc, view: str, ins) -> None:
    """The future of DMA ``desc`` now refers to ``view`` (a C ``cq_view``), the copy
    issued by this statement and, if async, in the lane's latest cp.async group."""
    f = f"f{desc.future}"
    k.line(f"{f}.v = {view}; {f}.has_data = 1; {f}.is_async = {int(desc.is_async)}; "
           f"{f}.waited = 0; {f}.issued = {ins[-1]}; {f}.tma = 0; {f}.group = cqg;", ins)


def _dst_extents(k, desc):
    """The constant extents of DMA ``desc``'s destination when it is a plain view or the
    statement's own buffer of constant shape, else None."""
    if desc.dst_view >= 0:
        return [int(k.consts[e]) for e in k.code.views[desc.dst_view].extents] \
            if _plain(k, desc.dst_view) else None
    if desc.dst_buffer in k.shared or desc.dst_buffer in k.local:
        return [int(k.consts[r]) for r in k.code.buffers[desc.dst_buffer].shape]
    return None


def _fixed_shape(k, future: int, ext) -> bool:
    """Whether future ``future``, whenever it holds data, holds a plain view of extents
    ``ext``: every DMA into it or into a future it is swapped with (SWAP exchanges
    handles) writes such a destination; nothing else gives a future data."""
    group = {future}
    changed = True
    while changed:
        changed = False
        for ins in k.ins:
            if op_name(ins) == "SWAP" and (ins[1] in group) != (ins[2] in group):
                group |= {ins[1], ins[2]}
                changed = True
    return all(_dst_extents(k, d) == list(ext) for d in k.code.dmas if d.future in group)


def _check_tile(k, side: Side, ins, ip) -> None:
    """cq_check_tile of a side with constant extents of at least 1: only TILE_OUTSIDE can
    fail; its record is cq_check_tile's (buffer, origin, buffer extents)."""
    from .emit_sync import _tile_operands
    rank = len(side.ext)
    k.site(Kind.EMPTY_TILE, ip, ins[-1], _tile_operands(Kind.EMPTY_TILE, rank))
    n = k.site(Kind.TILE_OUTSIDE, ip, ins[-1], _tile_operands(Kind.TILE_OUTSIDE, rank))
    side.declare(k, ins)
    outside = " || ".join(f"{side.hi(j)} <= {side.lo(j)}" for j in range(rank))
    args = ", ".join([f"(long long){side.slot}", f"(long long){side.index}",
                      *(f"{side.name}_o{j}" for j in range(rank)),
                      *(f"{side.name}_d{j}" for j in range(rank))])
    k.line(f"if ({outside}) {{ cq_fault({n}, {args}); cq_leave(); }}", ins)


def _decompose(k, name: str, n: str, ext, ins) -> list[str]:
    """Row-major indices of element ``n`` of extents ``ext`` (constants), 32-bit."""
    names = [f"{name}{j}" for j in range(len(ext))]
    rest = n
    parts = []
    for j in range(len(ext) - 1, -1, -1):
        if j == 0:
            parts.append(f"{names[j]} = {rest}")
        else:
            parts.append(f"{names[j]} = {rest} % {ext[j]}")
            rest = f"{rest} / {ext[j]}"
    k.line(f"const int {', '.join(reversed(parts))};", ins)
    return names


def _move(k, desc, src: Side, dst: Side, ins, part: str, parts: str) -> None:
    """cq_dma_move of a plain copy: every destination element in range inside the tile
    (the source extents) gets its source element when that is in range, else 0 with
    .zfill (else it stays); with .zfill the elements beyond the tile become 0."""
    rank, elem, tile = len(dst.ext), dst.elem, src.ext
    # a tile laid out for wgmma (emit_mma.swizzled_layouts) is written through its layout
    # too, synchronously, and fenced for the async proxy that reads it
    layout = emit_tma.layout_of_destination(k, desc)
    swizzle = swizzled_sides(k.code, desc)[1] or layout
    total = 1
    for e in dst.ext:
        total *= e
    chunked = not layout and _chunkable(k, desc, src, dst)
    word = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}.get(elem)
    if chunked:
        per = CHUNK // elem
        rows = total // dst.ext[-1]
        per_row = dst.ext[-1] // per
        last = rank - 1
        aligned = [f"(unsigned long long){side.name}_base % {CHUNK} == 0 && "
                   f"({side.name}_d{last} * {elem}) % {CHUNK} == 0 && "
                   f"({side.name}_o{last} * {elem}) % {CHUNK} == 0" for side in (src, dst)]
        inside = " && ".join(f"{dst.lo(j)} == 0 && {dst.hi(j)} == {dst.ext[j]}"
                             for j in range(rank))
        whole = " && ".join(f"{src.lo(j)} == 0 && {src.hi(j)} >= {min(tile[j], dst.ext[j])}"
                            for j in range(rank))
        cond = f"{aligned[0]} && {aligned[1]} && {inside} && {src.lo(last)} == 0"
        if not desc.zfill:
            cond += f" && {whole}"
        k.line(f"if ({cond}) {{", ins)
        k.depth += 1
        k.line(f"for (int n = {part}; n < {rows * per_row}; n += {parts}) {{", ins)
        k.depth += 1
        t = _decompose(k, "t", f"n / {per_row}", dst.ext[:-1], ins) if rank > 1 else []
        k.line(f"const int c = n % {per_row} * {per};", ins)
        in_rows = " && ".join(f"{x} >= {src.lo(j)} && {x} < {src.hi(j)} && {x} < {tile[j]}"
                              for j, x in enumerate(t)) or "true"
        k.line(f"const long long hi = {src.hi(last)} < {tile[last]} ? {src.hi(last)} : "
               f"{tile[last]};", ins)
        k.line(f"const int valid = !({in_rows}) || c >= hi ? 0 : hi - c >= {per} ? {per} : "
               f"(int)(hi - c);", ins)
        k.line(f"cq_cp_async<{CHUNK}>({dst.address([*t, 'c'], swizzle)}, valid ? "
               f"{src.address([*t, 'c'])} : cs_base, valid * {elem});", ins)
        k.depth -= 1
        k.line("}", ins)
        k.line("cq_cp_async_commit();", ins)
        if desc.is_async and desc.future >= 0:
            k.line("cqg++;", ins)
        else:
            k.line("cq_cp_async_wait<0>();", ins)
        k.depth -= 1
        k.line("} else {", ins)
        k.depth += 1
    k.line(f"for (int n = {part}; n < {total}; n += {parts}) {{", ins)
    k.depth += 1
    t = _decompose(k, "t", "n", dst.ext, ins)
    in_dst = " || ".join(f"{x} < {dst.lo(j)} || {x} >= {dst.hi(j)}" for j, x in enumerate(t))
    k.line(f"if ({in_dst}) continue;", ins)
    in_src = " && ".join(f"{x} < {tile[j]} && {x} >= {src.lo(j)} && {x} < {src.hi(j)}"
                         for j, x in enumerate(t))
    to = dst.address(t, swizzle)
    fr = src.address(t)
    if word:
        k.line(f"if ({in_src}) *({word} *)({to}) = *(const {word} *)({fr});", ins)
        if desc.zfill:
            k.line(f"else *({word} *)({to}) = 0;", ins)
    else:
        k.line(f"if ({in_src}) memcpy({to}, {fr}, {elem});", ins)
        if desc.zfill:
            k.line(f"else memset({to}, 0, {elem});", ins)
    k.depth -= 1
    k.line("}", ins)
    if layout:
        k.line("cq_fence_proxy_async();", ins)
    if chunked:
        k.depth -= 1
        k.line("}", ins)


def _chunkable(k, desc, src: Side, dst: Side) -> bool:
    """Whether the copy may go by 16-byte cp.async when its addresses allow: from global
    into shared memory, destination rows of whole chunks."""
    return _storage(k, desc.src) == Storage.GLOBAL and \
        dst_storage(k.code, desc) == Storage.SHARED and \
        CHUNK % dst.elem == 0 and (dst.ext[-1] * dst.elem) % CHUNK == 0

