"""DMA statements, futures, ``dma.any``, ``swap``/``rotate`` and future waits (LANGUAGE.md
§9; docs/EXECUTION.md §9-§10).

A DMA not touching ``local`` memory is a collective of its statement's collective set
within its issuing unit (§9.3: the block, or the instance of the group or group-4 level
its operands use); its ``WAIT`` is a barrier of the same participants, so futures remember
the site of the collective copy that filled them. A shared future (§9.5.6) has a hidden
one-slot event instead: each async copy into it is followed by ``FUT_BIND`` + ``TRIGGER``
of its participants, and each ``wait`` of it is a ``WAIT_EVENT``. ``rotate(f0, ..., fn)``
is a left rotation (§9.6.1) and lowers to ``SWAP f0 f1 ; SWAP f1 f2 ; ...``.
"""
from __future__ import annotations

from croqvm.bytecode.module import (DYNAMIC, BufferDecl, DmaDesc, DmaOp, EventDecl, FutureDecl,
                                     L2Hint, Storage, swizzled_sides)
from croqvm.bytecode.verify_decls import unaddressed_futures
from croqvm.lang import ast
from croqvm.lang import types as T

from croqvm.lang.check.dma import root_symbol

from .state import Lowerer
from .values import FutRef
from .views import o_add, o_mul, int_operands, reg_of, view_of


def future_ref(lw: Lowerer, sym, node, declares: bool) -> FutRef:
    """The future slot of ``sym`` in the current code, created on its declaration."""
    ref = None if declares else lw.env.get(sym)
    if ref is None:
        in_host = not declares and sym.parallel is None and lw.kernel is not None
        if in_host and not sym.info.get("instance_future"):
            lw.unsupported(node, f"using the host future '{sym.name}' inside a parallel-by")
        slot = lw.b.add("futures", _future_decl(lw, sym, node))
        ref = FutRef(slot, sym.name)
        if in_host:     # the kernel's own placeholder, one for all its scopes (§3.4.5)
            lw.kernel.args_env.bind(sym, ref)
        else:
            lw.bind(sym, ref)
    if not isinstance(ref, FutRef):
        lw.unsupported(node, f"'{sym.name}' as a future")
    return ref


def _future_decl(lw: Lowerer, sym, node) -> FutureDecl:
    """The future's type as the checker fixed it (§9.4.4): every future a program keeps
    has one by now (a placeholder never typed is a static error)."""
    ty = sym.type
    if not isinstance(ty, T.Future) or ty.dtype is None or ty.storage is None:
        lw.unsupported(node, f"the future '{sym.name}' whose type is unknown here")
    shape = [d if isinstance(d, int) else DYNAMIC for d in ty.shape]
    return FutureDecl(sym.name, ty.dtype.code, Storage[ty.storage.upper()], ty.is_async, shape,
                      lw.spans.intern(node.span))


def _cache(lw: Lowerer, name: str) -> dict:
    holder = lw.kernel.cache if lw.kernel is not None else lw.fn.cache
    return holder.setdefault(name, {})


def _sites(lw: Lowerer) -> dict:
    """Group root -> collective site of the copy that filled it (-1: per lane)."""
    return _cache(lw, "future_sites")


def _group_key(lw: Lowerer, sym):
    """Futures linked by swap/rotate form one group (§9.5.5) with one collective site."""
    links = _cache(lw, "future_links")
    while sym in links:
        sym = links[sym]
    return sym


def lower_dma(lw: Lowerer, s: ast.Dma) -> None:
    b = lw.b
    src, sbase, ext = view_of(lw, s.src)
    op = DmaOp.COPY if s.op == "load" else DmaOp[s.op.upper()]
    desc = DmaDesc(op, src, is_async=s.is_async, zfill=s.zfill,
                   text=f"tma.{s.op}" if s.tma else f"dma.{s.op}", tma=s.tma_transfer,
                   swizzle=s.swizzle or 0,
                   l2_hint=L2Hint[s.l2_hint.upper()] if s.l2_hint else L2Hint.NONE,
                   multicast=s.multicast)
    desc.perm = list(s.perm)
    storages = {sbase.storage}
    if isinstance(s.dst, str):
        storages.add(s.dst)
        shape = [reg_of(lw, x) for x in _dst_extents(lw, s, ext)]
        name = s.target.id if s.target is not None else f"dma@{s.span.line}"
        desc.dst_buffer = b.add("buffers", BufferDecl(name, Storage[s.dst.upper()],
                                                      sbase.dtype.code, shape,
                                                      span=lw.spans.intern(s.span)))
    else:
        # a smaller source that fits (§9.2) writes the part of the destination it covers
        fit = ext if getattr(s, "fits_smaller", False) else None
        desc.dst_view, dbase, _ = view_of(lw, s.dst, fit)
        storages.add(dbase.storage)
    if s.op == "pad":
        desc.pad_lo = [reg_of(lw, x) for x in int_operands(lw, s.pad_lo)]
        desc.pad_hi = [reg_of(lw, x) for x in int_operands(lw, s.pad_hi)]
        desc.pad_mid = [reg_of(lw, x) for x in int_operands(lw, s.pad_mid)]
        if s.pad_value is not None:
            from .exprs import lower_as
            desc.pad_value = lower_as(lw, s.pad_value, sbase.dtype)
    _refuse_reshaped(lw, s, desc)
    collective = lw.kernel is not None and "local" not in storages
    coll = lw.coll_site(desc.text, s.tma_unit) if collective else -1
    if s.target is not None:
        sym = s.sym if getattr(s, "declares", False) else s.target.sym
        desc.future = future_ref(lw, sym, s.target, getattr(s, "declares", False)).slot
        key = _group_key(lw, sym)
        if _sites(lw).get(key, -1) < 0:
            _sites(lw)[key] = coll
    b.emit("DMA", b.add("dmas", desc), coll)
    if s.target is not None and s.is_async and sym.info.get("shared_future"):
        _publish(lw, s, sym, desc.future)


def _publish(lw: Lowerer, s: ast.Dma, sym, slot: int) -> None:
    """§9.5.6: each participant hands the copy into the shared future ``sym`` (future slot
    ``slot``) to an arrival at its completion event, as ``trigger e after f`` does."""
    from .kernel import laneset       # kernel.py imports this module
    ev = _completion_event(lw, sym, s.target)
    issuers = lw.b.code.events[ev].lanesets
    ls = laneset(lw, lw.kernel, lw.ctx.guards)
    if issuers and ls not in issuers:      # one generation would need the lanes of both
        lw.unsupported(s, f"copies into the shared future '{sym.name}' by different sets "
                          f"of lanes")
    if not issuers:
        issuers.append(ls)
    lw.b.emit("FUT_BIND", slot)
    lw.b.emit("TRIGGER", ev, lw.int_reg(0))


def _completion_event(lw: Lowerer, sym, node) -> int:
    """The hidden one-slot event of the shared future ``sym`` (§9.5.6); a generation
    completes when every lane of its copies' collective set has arrived."""
    events = _cache(lw, "future_events")
    if sym not in events:
        decl = EventDecl(sym.name, 1, span=lw.spans.intern(node.span))
        events[sym] = lw.b.add("events", decl)
    return events[sym]


def _refuse_reshaped(lw: Lowerer, s: ast.Dma, desc: DmaDesc) -> None:
    """What the engines do not take yet of a view made by ``span_as``, ``.sqz()`` or
    element strides: the data of a future filled through it (a future's data is a window
    of a buffer; ``refuse_unaddressed`` once the code is lowered), and a reshape or
    strided view laid out by a swizzle."""
    views = lw.b.code.views
    dst = views[desc.dst_view] if desc.dst_view >= 0 else None
    if dst is not None and s.target is not None and (dst.space or dst.shown or dst.strides):
        _cache(lw, "unaddressed_fills")[len(lw.b.code.dmas)] = s.dst
    shared_side = views[desc.src] if swizzled_sides(lw.b.code, desc)[0] else dst
    if desc.swizzle and shared_side is not None and (shared_side.space or shared_side.strides):
        lw.unsupported(s, "a swizzled copy into or out of a view made by 'span_as' or "
                          "element strides")


def refuse_unaddressed(lw: Lowerer) -> None:
    """Once a code is lowered: a future filled through a reshaped, squeezed or strided
    view may be waited for and rotated, but its data is not used (verify_decls)."""
    fills = _cache(lw, "unaddressed_fills")
    for d, use in unaddressed_futures(lw.b.code):
        lw.unsupported(fills[d], f"the data of a future filled through a view made by "
                                 f"'span_as', '.sqz()' or element strides ({use})")


def _dst_extents(lw: Lowerer, s: ast.Dma, ext: list) -> list:
    """The shape of the statement's own destination buffer (§9.4.1, §9.6.2-§9.6.3)."""
    if s.op == "transp" and s.perm:
        return [ext[p] for p in s.perm]
    if s.op == "pad":
        lo, hi = int_operands(lw, s.pad_lo), int_operands(lw, s.pad_hi)
        mid = int_operands(lw, s.pad_mid) if s.pad_mid else [0] * len(ext)
        out = []
        for k, e in enumerate(ext):
            gaps = o_mul(lw, o_add(lw, e, -1), mid[k]) if mid[k] != 0 else 0
            out.append(o_add(lw, o_add(lw, o_add(lw, lo[k], e), gaps), hi[k]))
        return out
    return list(ext)


def swizzled_view(lw: Lowerer, e: ast.Expr, swizzle: int | None = None) -> tuple:
    """``view_of`` for a tile an MMA reads (§9.7): through ``swizzle`` when given, else
    through the swizzle the checker found its buffer laid out with."""
    view, base, ext = view_of(lw, e, mma=True)
    set_swizzle(lw, e, view, buffer_swizzle(e) if swizzle is None else swizzle)
    return view, base, ext


def set_swizzle(lw: Lowerer, e: ast.Expr, view: int, swizzle: int) -> None:
    """View ``view`` (of ``e``) read through ``swizzle``; not yet for a ``span_as``."""
    if swizzle and lw.b.code.views[view].space:
        lw.unsupported(e, "a view made by 'span_as' of a swizzled buffer as an MMA operand")
    lw.b.code.views[view].swizzle = swizzle


def buffer_swizzle(e: ast.Expr) -> int:
    """The swizzle the checker found the buffer under ``e`` laid out with (0: none)."""
    sym = root_symbol(e)
    return (sym.info.get("swizzle") or (0,))[0] if sym is not None else 0


def lower_dma_any(lw: Lowerer, s: ast.DmaAny) -> None:
    sym = s.sym if getattr(s, "declares", False) else s.target.sym
    ref = future_ref(lw, sym, s.target, getattr(s, "declares", False))
    lw.b.emit("FUT_ANY", ref.slot)


def lower_swap(lw: Lowerer, s: ast.Swap) -> None:
    for n in s.names:
        if n.sym.info.get("shared_future"):
            lw.unsupported(n, f"'swap' or 'rotate' of the shared future '{n.sym.name}'")
    refs = [future_ref(lw, n.sym, n, False) for n in s.names]
    links = _cache(lw, "future_links")
    root = _group_key(lw, s.names[0].sym)
    sites = _sites(lw)
    for n in s.names[1:]:
        other = _group_key(lw, n.sym)
        if other is not root:
            links[other] = root
            if sites.get(root, -1) < 0 and sites.get(other, -1) >= 0:
                sites[root] = sites[other]
    for a, c in zip(refs, refs[1:]):
        lw.b.emit("SWAP", a.slot, c.slot)


def lower_future_wait(lw: Lowerer, ref: FutRef, sym) -> None:
    """``wait f`` (§9.5.3): on a collective copy also a barrier of its participants."""
    if lw.kernel is not None and sym.info.get("shared_future"):
        lw.b.emit("WAIT_EVENT", _completion_event(lw, sym, sym.decl), lw.int_reg(0))
        return
    coll = -1
    if lw.kernel is not None and getattr(sym.type, "storage", None) != "local":
        key = _group_key(lw, sym)
        coll = _sites(lw).get(key, -1)
        if coll < 0:
            coll = lw.coll_site("wait", 0)
    lw.b.emit("WAIT", ref.slot, coll)


TABLE = {ast.Dma: lower_dma, ast.DmaAny: lower_dma_any, ast.Swap: lower_swap}
