"""Runtime error and deadlock reports of the reference engine (LANGUAGE.md §15.3, §10.5,
Appendix A.8).

Every runtime error leaves the engine through ``fault`` (or ``deadlock``, or
``internal``): ``fault`` makes the ``FaultRecord`` that any engine reports, ``deadlock``
the ``BlockView`` any engine exports, and ``croqvm.reports.render`` renders them.
"""
from __future__ import annotations

import traceback

from ..bytecode.opcodes import SPAN
from ..reports import render as report
from ..reports.blockview import BlockView, FrameView, WarpView
from ..core.errors import InternalError, KernelFault
from ..core.faults import FaultRecord, Kind
from .warp import BLOCKED


def context(blk, lane) -> str:
    return report.context(blk.call.spans, blk.call.fn, blk.launch_index, blk.index, lane)


def fault(blk, kind: Kind, operands: tuple, lane, ip: int, span=None) -> KernelFault:
    """Runtime error ``kind`` of block lane ``lane`` at instruction ``ip`` (-1: none) of
    the block's code; its message points at ``span``, by default the instruction's."""
    if span is None:
        span = blk.prog.ins[ip][SPAN]
    rec = FaultRecord(kind, tuple(operands), blk.launch_index, blk.index,
                      None if blk.is_host else lane, ip, span)
    return report.fault(blk.call.spans, blk.call.fn, rec)


def internal(blk, span: int, exc: BaseException) -> InternalError:
    """A failure valid bytecode cannot cause (an engine bug), at the instruction it
    happened at; the engine function it came from helps the bug report."""
    where = blk.call.spans.span(span)
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    origin = f" (in {frame.name})" if frame else ""
    msg = f"internal error: {type(exc).__name__}: {exc}{origin}"
    text = f"{where}: error: {msg}" if where else f"error: {msg}"
    return InternalError(text + "\n" + context(blk, None))


def block_view(blk) -> BlockView:
    """What the report of a stuck block needs, as any engine exports it
    (croqvm.reports.blockview)."""
    def lanes(w, mask):
        return tuple(w.lanes[mask].tolist())

    warps = tuple(WarpView(w.index, w.state, w.ip, lanes(w, w.act), lanes(w, w.live),
                           tuple(FrameView(f.opener, lanes(w, f.entered)) for f in w.stack),
                           w.blocker.view() if w.state == BLOCKED else ())
                  for w in blk.warps)
    return BlockView(blk.launch_index, blk.index, warps)


def deadlock(blk) -> KernelFault:
    """§10.5: no warp can run while some live lane is blocked."""
    return report.deadlock(blk.call.spans, blk.call.fn, block_view(blk))
