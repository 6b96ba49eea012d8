"""Deadlock and partial-group reports of the native engine: the faulting block read from
C (native/view.c) as the neutral block view (croqvm.reports.blockview), which
croqvm.reports.render words for every engine alike.

Conventions: ``c`` the C call, ``k`` a warp index, lane sets are 32-bit words (bit b of
word j is block lane 32 j + b).
"""
from __future__ import annotations

from ..reports import render as report
from ..reports.blockview import BLOCKED, DONE, READY, BlockView, EventWaitView, FrameView, \
    GridWaitView, NamedBarrierView, RendezvousView, WarpView

STATES = (READY, BLOCKED, DONE)


def _lanes(words, base: int = 0) -> tuple:
    """The block lanes of a lane set: ``words`` (one word for a warp's lanes at ``base``)."""
    return tuple(base + 32 * j + b for j, word in enumerate(words) for b in range(32)
                 if word >> b & 1)


def deadlock(lib, ffi, c, fn, spans):
    """The KernelFault of the deadlock (or partial group) C reported."""
    f = lib.cq_get_fault(c)
    nwarps, size = ffi.new("int32_t *"), ffi.new("int32_t *")
    lib.cq_view_size(c, nwarps, size, ffi.new("uint32_t[32]"))
    launch = int(f.launch)
    block = () if launch < 0 else \
        tuple(int(f.block[d]) for d in range(len(fn.host.launches[launch].grid)))
    warps = tuple(_warp(lib, ffi, c, k) for k in range(nwarps[0]))
    return report.deadlock(spans, fn, BlockView(launch, block, warps))


def _warp(lib, ffi, c, k) -> WarpView:
    v = ffi.new("cq_warp_view *")
    lib.cq_view_warp(c, k, v, ffi.NULL, ffi.NULL, 0)
    openers, entered = ffi.new("int32_t[]", v.nframes + 1), ffi.new("uint32_t[]", v.nframes + 1)
    lib.cq_view_warp(c, k, v, openers, entered, v.nframes)
    frames = tuple(FrameView(openers[j], _lanes([entered[j]], v.base))
                   for j in range(v.nframes))
    waits = ()
    if v.blocker == 1:
        out = ffi.new("cq_rdv_view[]", 32)
        waits = tuple(RendezvousView(r.ip, r.site, r.unit_index, _lanes(r.arrived),
                                     _lanes(r.members), bool(r.whole_unit))
                      for r in (out[j] for j in range(lib.cq_view_rdvs(c, k, out, 32)))
                      if not r.done)
    elif v.blocker == 2:
        e = ffi.new("int64_t[6]")
        lib.cq_view_event_wait(c, k, e)
        waits = (EventWaitView(v.ip, *(int(x) for x in e)),)
    elif v.blocker == 3:
        b = ffi.new("int64_t[3]")
        lib.cq_view_named_barrier(c, k, b)
        waits = (NamedBarrierView(v.ip, *(int(x) for x in b)),)
    elif v.blocker == 4:
        waits = (GridWaitView(v.ip),)
    return WarpView(k, STATES[v.state], v.ip, _lanes([v.act], v.base),
                    _lanes([v.live], v.base), frames, waits)
