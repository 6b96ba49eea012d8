"""Runtime error reports (LANGUAGE.md §15.3): what any engine reports becomes a
``KernelFault`` whose text comes from the catalogue of ``croqvm.messages``, rendered by the
shared diagnostic renderer: the message at its span, the source line and caret, the
report's lines, then where it ran::

      in kernel launched at FILE:L:C, block (1, 0), lane 37 (warp 1, lane 5)
      in host code of 'f'

This module reads only the module, the function that ran and the engine's records, never
an engine's state, so the Python engine and a C engine print the same text.
"""
from __future__ import annotations

from .diagnostics import Diagnostic, render
from .errors import KernelFault
from .faults import FaultRecord
from .limits import WARP_SIZE
from .messages import Context, message, report
from .source import SpanTable


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
    diag = Diagnostic("runtime error", text, spans.span(span), hint, list(lines))
    return KernelFault(render(diag, spans.files), [diag], record)


def fault(spans: SpanTable, fn, rec: FaultRecord) -> KernelFault:
    """The runtime error ``rec`` of a call of ``fn``."""
    text = message(rec.kind, rec.operands, Context(spans, fn, code_of(fn, rec.launch)))
    where = context(spans, fn, rec.launch, rec.block, rec.lane)
    return kernel_fault(spans, fn, rec.span, text, [where], record=rec)
