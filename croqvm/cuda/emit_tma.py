"""Tensor-map TMA on sm_90a (LANGUAGE.md §9.7; docs/CUDA.md "Fast paths on sm_90a").

A copy from a global buffer into shared memory goes as one
``cp.async.bulk.tensor.2d`` (UTMALDG) of a host-built tensor map where the facts known at
compile time allow it: sm_90a, a plain copy (no transposition, no swizzle on the global
side) of a rank-2 tile of a kernel buffer parameter whose extents are constants of at most
256 elements (the box), rows of whole 16-byte chunks, and with a swizzle on the shared
side only when a row is exactly one swizzle span. Each such (buffer, box, swizzle) is a
``const __grid_constant__ cq_tmap`` kernel parameter the host encodes at launch
(croqvm/cuda/launch.py); the host marks it unusable where the tensor breaks TMA's rules
(a row not a multiple of 16 bytes, an unaligned base).

What is known only at run time is checked where the copy runs (``cq_tma_box_fits``):
the map is usable, the destination is a whole shared buffer instance of the box's shape
at an aligned address, and the tile lies inside the tensor unless the copy zero-fills
(TMA fills what lies outside with zeros, which is what ``.zfill`` means, §9.5.1).
Otherwise the copy takes the general path, so every program keeps its meaning.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..bytecode.module import BaseKind, DmaOp, Storage, dst_decl, swizzled_sides
from ..core import dtypes
from . import cnum

MAX_BOX = 256        # elements per dimension of a TMA box (cuTensorMapEncodeTiled)
SWIZZLES = (0, 32, 64, 128)


@dataclass(frozen=True)
class TensorMap:
    """A tensor map kernel parameter: the rank-2 global buffer ``slot``, the tile a copy
    moves (``box``: rows, columns), the shared layout's swizzle in bytes, the element
    size."""
    slot: int
    box: tuple
    swizzle: int
    elem: int

    @property
    def bytes(self) -> int:
        return self.box[0] * self.box[1] * self.elem

    @property
    def align(self) -> int:
        """The destination's alignment: the swizzle pattern repeats every 1024 bytes of
        shared address, an unswizzled box needs 128."""
        return 1024 if self.swizzle else 128


def plan(k, desc, layout: bool = True) -> TensorMap | None:
    """The tensor map DMA ``desc`` can go by, from what is known at compile time;
    ``layout``: with the destination's swizzled layout (emit_mma.swizzled_layouts),
    which is decided from the plans without it."""
    if k.arch != "sm_90a" or desc.op != DmaOp.COPY or desc.perm or desc.multicast:
        return None
    src = k.code.views[desc.src]
    if src.base_kind != BaseKind.BUF or src.arr >= 0 or src.space or src.flat >= 0 or \
            src.strides or src.shown or len(src.origin) != 2:
        return None
    buf = k.code.buffers[src.base]
    dst = dst_decl(k.code, desc)
    if buf.storage != Storage.GLOBAL or dst.storage != Storage.SHARED or dst.dtype != buf.dtype:
        return None
    if not all(e in k.consts for e in src.extents):
        return None
    box = tuple(int(k.consts[e]) for e in src.extents)
    elem = cnum.elem_bytes(dtypes.BY_CODE[buf.dtype])
    swz_src, swz_dst = swizzled_sides(k.code, desc)
    if layout:
        swz_dst = swz_dst or layout_of_destination(k, desc)
    row = box[1] * elem
    if swz_src or swz_dst not in SWIZZLES or not all(1 <= b <= MAX_BOX for b in box) or \
            row % 16 or (swz_dst and (row != swz_dst or box[0] * row % 1024)):
        return None
    return TensorMap(src.base, box, swz_dst, elem)


def layout_of_destination(k, desc) -> int:
    """The swizzle of a destination laid out for wgmma (emit_mma.swizzled_layouts) that
    the program did not ask for, which every copy into it must write, else 0."""
    if desc.swizzle or desc.dst_view < 0:
        return 0
    from .emit_mma import layout_swizzle
    return layout_swizzle(k, desc.dst_view)


def tensor_maps(k, bound: set) -> list[TensorMap]:
    """The kernel's tensor map parameters, one per distinct map of a buffer its launches
    bind (``bound``: kernel slots), in DMA order."""
    out: list[TensorMap] = []
    for desc in k.code.dmas:
        m = plan(k, desc)
        if m is not None and m.slot in bound and m not in out:
            out.append(m)
    return out


def shared_alignment(k, slot: int) -> int:
    """The alignment shared buffer ``slot`` needs: 1024 bytes when TMA boxes land in it,
    swizzled or not (its layout may be swizzled for wgmma, which is decided later, from
    the plans: emit_mma.swizzled_layouts), else 16. Each instance then starts aligned
    where the instances' size is a multiple."""
    for desc in k.code.dmas:
        if plan(k, desc, layout=False) is not None and slot in _dst_slots(k.code, desc):
            return 1024
    return 16


def _dst_slots(code, desc) -> set:
    if desc.dst_view >= 0:
        v = code.views[desc.dst_view]
        return {v.base} if v.base_kind == BaseKind.BUF else set()
    return {desc.dst_buffer} if desc.dst_buffer >= 0 else set()


def param(k, i: int) -> str:
    return f"const CQ_GRID_CONSTANT cq_tmap tm{i}"


def issue(k, ins, ip, desc, part: str) -> bool:
    """Begins ``if (the box fits) { issue } else`` before the copy's other paths, when
    ``desc`` has a tensor map; the first participant publishes the parity of the phase
    the copy completes (as for bulk copies, emit_sync._bulk_issue), fences its earlier
    ordinary accesses against the async proxy, announces the box's bytes and issues."""
    m = plan(k, desc)
    if m is None or m not in k.tmaps:
        return False
    i = k.tmaps.index(m)
    _issue(k, ins, ip, desc, part, m, f"cq_tma_box_fits(dm, tm{i}.ok, {m.box[0]}, "
           f"{m.box[1]}, {int(desc.zfill)}, {m.align})", k.tma_bar("dm.dst"), "dm.dst.base",
           "(int)dm.src.origin[0]", "(int)dm.src.origin[1]")
    return True


def issue_tile(k, ins, ip, desc, part: str, src, dst) -> bool:
    """``issue`` for a copy emit_copy writes out with scalars (its ``Side``s ``src`` and
    ``dst``): the box fits when the map is usable, the destination is a whole instance of
    the box's shape, aligned, and the tile lies inside the tensor unless it zero-fills."""
    m = plan(k, desc)
    if m is None or m not in k.tmaps or list(dst.ext) != list(m.box) or \
            list(src.ext) != list(m.box):
        return False
    i = k.tmaps.index(m)
    whole = " && ".join(f"{dst.name}_o{j} == 0 && {dst.name}_d{j} == {m.box[j]}"
                        for j in range(2))
    fits = f"tm{i}.ok && {whole} && (cq_smem_addr({dst.name}_base) & {m.align - 1}u) == 0"
    if not desc.zfill:
        fits += "".join(f" && {src.name}_o{j} >= 0 && {src.name}_o{j} + {m.box[j]} <= "
                        f"{src.name}_d{j}" for j in range(2))
    _issue(k, ins, ip, desc, part, m, fits, k.tma_bar_of(dst.slot, dst.index),
           f"{dst.name}_base", f"(int){src.name}_o0", f"(int){src.name}_o1")
    return True


def _issue(k, ins, ip, desc, part, m, fits: str, bar: str, base: str, row: str,
           col: str) -> None:
    i = k.tmaps.index(m)
    tb = f"tb{ip}"
    k.line(f"if ({fits}) {{ {tb} = {bar}; if ({part} == 0) {{ {arm(k, ins, ip, desc, tb)} "
           f"cq_fence_proxy_async(); cq_tma_expect({tb}, {m.bytes}); "
           f"cq_tma_tile({base}, &tm{i}, {col}, {row}, {tb}, {int(desc.l2_hint)}); }} }} else",
           ins)


def arm(k, ins, ip, desc, tb: str) -> str:
    """What the issuer runs on barrier ``tb`` before a copy announces its bytes: it
    publishes the parity of the new phase for the participants and the copy's waiters;
    in a kernel whose events publish copies (emit_sync.op_fut_bind), nobody may have
    waited for the phase armed before, so the issuer waits for it first
    (``cq_tma_arm``)."""
    if not k.off_landings:
        return f"cq_tma_publish({tb});"
    from .emit_sync import wait_site
    return f"cq_tma_arm({tb}, {wait_site(k, ins, ip, desc.text)});"
