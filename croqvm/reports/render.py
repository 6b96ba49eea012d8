"""Runtime error reports (LANGUAGE.md §15.3): what any engine reports becomes a
``KernelFault`` whose text comes from the catalogue of ``croqvm.reports.messages``, rendered by the
shared diagnostic renderer: the message at its span, the source line and caret, the
report's lines, then where it ran::

      in kernel launched at FILE:L:C, block (1, 0), lane 37 (warp 1, lane 5)
      in host code of 'f'

This module reads only the module, the function that ran and what the engine exports (a
``FaultRecord``, a ``croqvm.reports.blockview.BlockView``), never an engine's state, so the Python
engine and a C engine print the same text.
"""
from __future__ import annotations

from ..bytecode.opcodes import BY_NAME, SPAN, WIDTH
from ..core.diagnostics import Diagnostic, render
from ..core.errors import KernelFault
from ..core.faults import FaultRecord, Kind
from ..core.limits import UNIT_OF_LANES, WARP_SIZE
from ..core.source import SpanTable
from .blockview import (
    BLOCKED,
    DONE,
    BlockView,
    EventWaitView,
    GridWaitView,
    NamedBarrierView,
    RendezvousView,
)
from .messages import Context, hint, message, report


def code_of(fn, launch: int):
    """The code that ran: the host program (``launch`` -1) or the launched kernel."""
    return fn.host if launch < 0 else fn.kernels[fn.host.launches[launch].kernel].code


def context(spans: SpanTable, fn, launch: int, block: tuple, lane) -> str:
    """The "in kernel launched at ..." / "in host code of ..." line."""
    cx = Context(spans, fn, code_of(fn, launch))
    if launch < 0:
        return report("in_host", (fn.name,), cx)
    where = fn.host.launches[launch].span
    if lane is None:
        return report("in_kernel", (where,), cx)
    warp, index = divmod(lane, WARP_SIZE)
    return report("in_kernel_lane", (where, block, lane, warp, index), cx)


def kernel_fault(spans: SpanTable, fn, span: int, text: str, lines=(), hint=None,
                 record=None) -> KernelFault:
    """The runtime error ``text`` at ``span``; ``lines`` end with where it ran, and the
    calls of ``__co_device__`` functions the span lies in come before that line."""
    lines = list(lines)
    cx = Context(spans, fn, fn.host)
    calls = [report("in_call", (call,), cx) for call in spans.calls_around(span)]
    lines[len(lines) - 1:len(lines) - 1] = calls
    diag = Diagnostic("runtime error", text, spans.span(span), hint, lines)
    return KernelFault(render(diag, spans.files), [diag], record)


def fault(spans: SpanTable, fn, rec: FaultRecord) -> KernelFault:
    """The runtime error ``rec`` of a call of ``fn``."""
    cx = Context(spans, fn, code_of(fn, rec.launch))
    text = message(rec.kind, rec.operands, cx)
    where = context(spans, fn, rec.launch, rec.block, rec.lane)
    return kernel_fault(spans, fn, rec.span, text, [where], hint(rec.kind, rec.operands, cx),
                        record=rec)


# --------------------------------------------------------------------------- deadlocks

def _span(code, ip: int) -> int:
    return code.code[ip * WIDTH + SPAN]


def _waiting(cx: Context, wait) -> str:
    """What a blocked warp waits for, as its report line says."""
    code = cx.code
    if isinstance(wait, EventWaitView):
        return report("at_event", (_span(code, wait.ip), _span(code, wait.ip),
                                   (wait.event, wait.slot), wait.completed, wait.arrivals,
                                   wait.need, wait.generation), cx)
    if isinstance(wait, GridWaitView):
        return report("at_grid", (code.code[wait.ip * WIDTH + 1], _span(code, wait.ip)), cx)
    if isinstance(wait, NamedBarrierView):
        return report("at_named_barrier", (_span(code, wait.ip), _span(code, wait.ip),
                                           wait.barrier, wait.arrived, wait.need), cx)
    name = "at_barrier" if code.code[wait.ip * WIDTH] == BY_NAME["BARRIER"].code \
        else "at_collective"
    return report(name, (wait.site, _span(code, wait.ip), len(wait.arrived),
                         len(wait.members)), cx)


def _grouped(cx: Context, blocked) -> list[str]:
    """One line per run of consecutive blocked warps waiting alike: ``warps 0-3 (lanes
    0-127): ...``, with the active lanes of the run."""
    lines, run = [], []
    items = [(w, _waiting(cx, w.waits[0])) for w in blocked]
    for w, text in items + [(None, None)]:
        if run and (w is None or text != run[-1][1] or w.index != run[-1][0].index + 1):
            lanes = [lane for x, _ in run for lane in x.active]
            first, last = run[0][0].index, run[-1][0].index
            lines.append(report("warp", (first, lanes, run[-1][1]), cx) if first == last
                         else report("warps", (first, last, lanes, run[-1][1]), cx))
            run = []
        if w is not None:
            run.append((w, text))
    return lines


def _suspended(cx: Context, w) -> list[str]:
    """Live lanes of a blocked warp that divergence has set aside (§7.3), and where: the
    innermost open frame some of them entered."""
    idle = sorted(set(w.live) - set(w.active))
    if not idle:
        return []
    frame = next((f for f in reversed(w.frames) if set(f.entered) & set(idle)), None)
    if frame is None:
        return [report("suspended_at_start", (idle,), cx)]
    return [report("suspended", (idle, _span(cx.code, frame.opener)), cx)]


def _hint(cx: Context, blocked):
    """The repair, when the first event wait of the report is a parity wait (§10.6) whose
    generation completed long ago, a wait on a cluster-scope event (§10.8) some of whose
    arrivals came, or has never been triggered. When
    no other blocked warp waits on an event, the only lanes left that might trigger it are
    lanes of the waiting warp set aside in divergent code, and those run only after the
    waiting lanes leave it (§7.3): a same-warp protocol, which initial credits do not
    repair. Otherwise it is a cross-warp pipeline that lacks its initial credits. A warp
    waiting at a named barrier waits for a count that the warps which can still arrive do
    not make up."""
    for w in blocked:
        wait = w.waits[0]
        if isinstance(wait, EventWaitView) and wait.completed > wait.generation:
            return report("stale_phase", ((wait.event, wait.slot), wait.generation,
                                          wait.completed), cx)
        if isinstance(wait, EventWaitView) and wait.arrivals and \
                cx.code.events[wait.event].cluster:
            return report("cluster_short", ((wait.event, wait.slot), wait.need,
                                            wait.arrivals), cx)
        if isinstance(wait, NamedBarrierView):
            return report("named_barrier_short", (wait.barrier, wait.need, wait.arrived), cx)
        if isinstance(wait, EventWaitView) and wait.completed == 0 and wait.arrivals == 0:
            slot = (wait.event, wait.slot)
            idle = sorted(set(w.live) - set(w.active))
            if idle and not any(isinstance(x.waits[0], EventWaitView)
                                for x in blocked if x is not w):
                return report("same_warp_trigger", (slot, idle), cx)
            return report("needs_credits", (slot,), cx)
    return None


def _stuck_collective(cx: Context, view: BlockView, blocked):
    """The first collective a blocked warp waits at whose group can no longer complete:
    an MMA operation whose unit is not all there (§11.2), or a group some of whose lanes
    finished the kernel (§7.4.3); (its span, the headline) or None."""
    done = {lane for w in view.warps if w.state == DONE for lane in w.live}
    for w in blocked:
        for wait in w.waits:
            if not isinstance(wait, RendezvousView):
                continue
            missing = sorted(set(wait.members) - set(wait.arrived))
            unit = cx.code.colls[wait.site].unit
            if wait.whole_unit and unit in UNIT_OF_LANES:
                text = message(Kind.UNIT_INACTIVE, (wait.site, unit, wait.unit_index, missing),
                               cx)
                return _span(cx.code, wait.ip), text
            gone = [lane for lane in missing if lane in done]
            if gone:
                return _span(cx.code, wait.ip), report("partial_group", (wait.site, gone), cx)
    return None


def deadlock(spans: SpanTable, fn, view: BlockView) -> KernelFault:
    """§10.5: no warp of the block can run while some live lane is blocked. The report
    lists each run of blocked warps with what it waits for, the lanes divergence set
    aside, and a hint when one is known; a collective that can no longer complete gives
    the headline."""
    cx = Context(spans, fn, code_of(fn, view.launch))
    blocked = [w for w in view.warps if w.state == BLOCKED]
    lines = _grouped(cx, blocked)
    for w in blocked:
        lines += _suspended(cx, w)
    stuck = _stuck_collective(cx, view, blocked)
    if stuck is None:
        stuck = _span(cx.code, blocked[0].ip), report("deadlock", (view.block,), cx)
    span, text = stuck
    where = context(spans, fn, view.launch, view.block, None)
    return kernel_fault(spans, fn, span, text, lines + [where], _hint(cx, blocked))
