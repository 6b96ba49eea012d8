"""Runtime error and deadlock reports (LANGUAGE.md §15.3, §10.5, Appendix A.8).

Every runtime error leaves the engine through ``fault`` (or ``deadlock``), which renders
it with the shared diagnostic renderer: the message at the statement's span, the source
line and caret, the report's item lines, then where it ran::

      in kernel launched at FILE:L:C, block (1, 0), lane 37 (warp 1, lane 5)
      in host code of 'f'
"""
from __future__ import annotations

import traceback

import numpy as np

from ..bytecode.opcodes import SPAN
from ..errors import InternalError, KernelFault
from ..limits import WARP_SIZE
from ..diagnostics import Diagnostic, render
from .fmt import lanes_phrase
from .warp import BLOCKED, DONE


def context(blk, lane) -> str:
    call = blk.call
    if blk.is_host:
        return f"  in host code of '{call.fn.name}'"
    where = f"  in kernel launched at {call.where(blk.launch.span)}"
    if lane is None:
        return where
    warp, i = divmod(lane, WARP_SIZE)
    return f"{where}, block {blk.block_text()}, lane {lane} (warp {warp}, lane {i})"


def fault(blk, span: int, message: str, lane=None, hint=None, notes=()) -> KernelFault:
    if blk.is_host:
        lane = None
    diag = Diagnostic("runtime error", message, blk.call.span(span), hint,
                      list(notes) + [context(blk, lane)])
    return KernelFault(render(diag, blk.call.sources), [diag])


def internal(blk, span: int, exc: BaseException) -> InternalError:
    """A failure valid bytecode cannot cause (an engine bug), at the instruction it
    happened at; the engine function it came from helps the bug report."""
    where = blk.call.span(span)
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
    where = blk.call.where(blk.prog.ins[frame.opener][SPAN]) if frame else "the kernel's start"
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
            message = rec.incomplete_unit()
            if message:
                return rec, message
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
    rec, message = _stuck_collective(blk, blocked)
    if rec is not None:
        span = rec.ins[SPAN]
    else:
        message = f"deadlock: every live lane of block {blk.block_text()} is blocked"
        span = blk.prog.ins[blocked[0].ip][SPAN]
    diag = Diagnostic("runtime error", message, call.span(span), hint,
                      lines + [context(blk, None)])
    return KernelFault(render(diag, call.sources), [diag])
