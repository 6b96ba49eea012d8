"""Deadlock and partial-group reports of the native engine: the faulting block, read
from C (native/view.c), rebuilt as the reference engine's own objects (warps with their
control frames, rendezvous records, event waits), so that croqvm/interp/diagnose.py
words the report for both engines from one place.

Conventions: ``c`` the C call, ``code`` the faulting Code, ``blk`` the rebuilt block.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..interp import diagnose
from ..interp.machine import Program
from ..interp.sync import EventSlots, EventWait, Rendezvous, Waiting
from ..interp.warp import BLOCKED, DONE, READY

STATES = (READY, BLOCKED, DONE)


def _mask(words, n: int, base: int = 0) -> np.ndarray:
    """Bits ``base .. base + n`` of a little-endian array of 32-bit words, as bools."""
    return np.array([bool(words[(base + k) >> 5] >> ((base + k) & 31) & 1) for k in range(n)])


class _Block:
    """The attributes of croqvm.interp.machine.Block that the report reads."""

    def __init__(self, pycall, fn, f, size, live):
        self.call, self.launch_index = pycall, int(f.launch)
        self.is_host = self.launch_index < 0
        launch = None if self.is_host else fn.host.launches[self.launch_index]
        self.index = () if self.is_host else tuple(int(f.block[d]) for d in range(len(launch.grid)))
        self.prog = Program(fn.host if self.is_host else fn.kernels[launch.kernel].code)
        self.size, self.live = size, live
        self.warps: list = []

    def block_text(self) -> str:
        return "(" + ", ".join(str(i) for i in self.index) + ")"


def deadlock(lib, ffi, c, prog, pycall):
    """The KernelFault of the deadlock (or partial group) C reported."""
    f = lib.cq_get_fault(c)
    nwarps, size = ffi.new("int32_t *"), ffi.new("int32_t *")
    live_words = ffi.new("uint32_t[32]")
    lib.cq_view_size(c, nwarps, size, live_words)
    blk = _Block(pycall, prog.fn, f, size[0], _mask(live_words, size[0]))
    code = blk.prog.code
    events: dict = {}
    depth = 1 + len(code.code)
    for k in range(nwarps[0]):
        v = ffi.new("cq_warp_view *")
        openers, entered = ffi.new("int32_t[]", depth), ffi.new("uint32_t[]", depth)
        lib.cq_view_warp(c, k, v, openers, entered)
        w = SimpleNamespace(index=k, base=v.base, width=v.width, ip=v.ip,
                            state=STATES[v.state],
                            lanes=np.arange(v.base, v.base + v.width),
                            act=_mask([v.act], v.width), live=_mask([v.live], v.width),
                            stack=[SimpleNamespace(opener=openers[j],
                                                   entered=_mask([entered[j]], v.width))
                                   for j in range(v.nframes)],
                            blocker=None)
        if v.blocker == 1:
            w.blocker = Waiting(_rendezvous(lib, ffi, c, k, blk, code))
        elif v.blocker == 2:
            w.blocker = _event_wait(lib, ffi, c, k, blk, code, events)
        blk.warps.append(w)
    return diagnose.deadlock(blk)


def _rendezvous(lib, ffi, c, k, blk, code) -> list:
    out = ffi.new("cq_rdv_view[]", 32)
    recs = []
    for j in range(lib.cq_view_rdvs(c, k, out, 32)):
        r = out[j]
        rec = Rendezvous(blk, r.ip, blk.prog.ins[r.ip], r.site, _mask(r.members, blk.size),
                         None, r.unit_index, bool(r.whole_unit))
        rec.arrived = _mask(r.arrived, blk.size)
        rec.done = bool(r.done)
        recs.append(rec)
    return recs


def _event_wait(lib, ffi, c, k, blk, code, events) -> EventWait:
    event, span = ffi.new("int32_t *"), ffi.new("int32_t *")
    lanes, slots = ffi.new("int32_t[32]"), ffi.new("int32_t[32]")
    n = lib.cq_view_event_wait(c, k, event, span, lanes, slots, 32)
    e = event[0]
    if e not in events:
        decl = code.events[e]
        ev = EventSlots(e, decl, 0, blk.size)
        completed = ffi.new("int64_t[]", decl.slots)
        arrivals = ffi.new("int64_t[]", decl.slots)
        waits = ffi.new("int64_t[]", decl.slots * blk.size)
        need = ffi.new("int64_t *")
        lib.cq_view_event(c, e, completed, arrivals, waits, decl.slots, blk.size, need)
        ev.need = int(need[0])
        ev.completed[:] = list(completed)
        ev.arrivals[:] = list(arrivals)
        ev.waits[:] = np.array(list(waits), np.int64).reshape(blk.size, decl.slots)
        events[e] = ev
    return EventWait(events[e], -1, span[0], np.array(list(lanes)[:n]),
                     np.array(list(slots)[:n]))
