"""Runtime error and deadlock reports of the reference engine (LANGUAGE.md §15.3, §10.5,
Appendix A.8).

Every runtime error leaves the engine through ``fault`` (or ``deadlock``, or
``internal``): ``fault`` makes the ``FaultRecord`` that any engine reports and renders it
with ``croqvm.report``.
"""
from __future__ import annotations

import traceback

import numpy as np

from ..bytecode.opcodes import SPAN
from .. import report
from ..errors import InternalError, KernelFault
from ..faults import FaultRecord, Kind
from ..messages import Context, lanes_phrase, message
from .warp import BLOCKED, DONE


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


def _group(items):
    """Merge consecutive warps with the same report into ``warps 0-3 (lanes 0-127)``."""
    lines, run = [], []
    for w, text in items + [(None, None)]:
        if run and (w is None or text != run[-1][1] or w.index != run[-1][0].index + 1):
            ws = [x.index for x, _ in run]
            lanes = np.concatenate([x.lanes[x.act] for x, _ in run])
            who = f"warp {ws[0]}" if len(ws) == 1 else f"warps {ws[0]}-{ws[-1]}"
            lines.append(f"  {who} ({lanes_phrase(lanes)}): {run[-1][1]}")
            run = []
        if w is not None:
            run.append((w, text))
    return lines


def _suspended(blk, w):
    """Live lanes of a blocked warp that divergence has set aside (§7.3)."""
    idle = w.live & ~w.act
    if not idle.any():
        return []
    frame = next((f for f in reversed(w.stack) if (f.entered & idle).any()), None)
    where = blk.call.spans.where(blk.prog.ins[frame.opener][SPAN]) if frame else \
        "the kernel's start"
    return [f"  {lanes_phrase(w.lanes[idle])} suspended in divergent code at {where}"]


def _stuck_collective(blk, blocked):
    """The first collective a blocked warp waits at whose group can no longer complete
    because some of its lanes finished the kernel, or, for an mma operation, because
    its unit is not all there (§7.4.3, §11.2): (record, headline) or (None, None)."""
    done = np.zeros(blk.size, bool)
    for w in blk.warps:
        if w.state == DONE:
            done[w.base:w.base + w.width] = w.live
    for w in blocked:
        for rec in getattr(w.blocker, "recs", ()):
            if rec.done:
                continue
            unit = rec.incomplete_unit()
            if unit:
                cx = Context(blk.call.spans, blk.call.fn, blk.prog.code)
                return rec, message(*unit, cx)
            gone = rec.missing() & done
            if gone.any():
                return rec, (f"'{rec.site.text}' was reached by only part of its group: "
                             f"{lanes_phrase(np.flatnonzero(gone))} finished the kernel "
                             f"without arriving.")
    return None, None


def deadlock(blk) -> KernelFault:
    """§10.5: no warp can run while some live lane is blocked."""
    call = blk.call
    blocked = [w for w in blk.warps if w.state == BLOCKED]
    lines = _group([(w, w.blocker.report(call)) for w in blocked])
    for w in blocked:
        lines += _suspended(blk, w)
    hint = next((h for h in (w.blocker.hint(call) for w in blocked) if h), None)
    rec, text = _stuck_collective(blk, blocked)
    if rec is not None:
        span = rec.ins[SPAN]
    else:
        text = f"deadlock: every live lane of block {blk.block_text()} is blocked"
        span = blk.prog.ins[blocked[0].ip][SPAN]
    return report.kernel_fault(call.spans, call.fn, span, text, lines + [context(blk, None)],
                               hint)
