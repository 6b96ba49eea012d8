"""The report of a race-checked run (LANGUAGE.md §7.5; docs/EXECUTION.md §20): every
race the run found, in the order found, as a runtime error at the later access (its
statement with a caret, its lanes, where it ran) followed by a note at the earlier one,
through the diagnostics renderer and the message catalogue; at most ``MAX_SHOWN`` of
them, then a count of the others. A run that also stopped with a runtime error ends with
that error.
"""
from __future__ import annotations

from ..bytecode.module import Storage
from ..bytecode.opcodes import (SPAN, TRIGGER, TRIGGER_CLUSTER, WAIT_EVENT, WAIT_EVENT_AT,
                                WIDTH)
from ..core.diagnostics import Diagnostic, render
from ..core.errors import KernelFault
from ..core.limits import WARP_SIZE
from ..reports import render as report
from ..reports.messages import ACCESS_DONE, ACCESS_NOUN, Context, format_lanes
from ..reports.messages import report as line
from .race import Copy

MAX_SHOWN = 10

STORAGE = {Storage.GLOBAL: "global", Storage.SHARED: "shared", Storage.LOCAL: "local"}


def _kind(site) -> str:
    return ("async " if site.is_async else "") + site.kind


def _done(site) -> str:
    return ACCESS_DONE[_kind(site)].format(text=site.text)


class _Writer:
    """What the report needs of the run: its checker's sites and segments, the spans."""

    def __init__(self, checker):
        self.checker = checker
        self.call = checker.call
        self.spans = checker.call.spans
        self.cx = Context(self.spans, self.call.fn, self.call.fn.host)

    def code_cx(self, who) -> Context:
        """The context of messages about what ran in ``who``'s segment."""
        launch = self.checker.segments[who.seq][0]
        return Context(self.spans, self.call.fn, report.code_of(self.call.fn, launch))

    def by(self, site, who) -> str:
        """``read by block (0), warp 1 (lanes 32-63)``."""
        launch, block = self.checker.segments[who.seq]
        if launch < 0:
            return line("race_by_host", (_done(site),), self.cx)
        warps = sorted({int(x) // WARP_SIZE for x in who.lanes})
        noun = "warp" if len(warps) == 1 else "warps"
        return line("race_by", (_done(site), block, f"{noun} {format_lanes(warps)}",
                                who.lanes), self.cx)

    def context(self, who) -> str:
        launch, block = self.checker.segments[who.seq]
        return report.context(self.spans, self.call.fn, launch, block, None)

    def missing_wait(self, race):
        """(event, the arguments of ``why_no_wait``) when the race lacks a wait: after the
        earlier access the kernel's code triggers an event that it does not wait on before
        the later access (a pipeline without its ``wait full``); else None."""
        first, second = (self.checker.sites[s] for s, _ in (race.first, race.second))
        if first.code < 0 or first.code != second.code:
            return None
        code = self.call.fn.kernels[first.code].code
        ins = [code.code[k:k + WIDTH] for k in range(0, len(code.code), WIDTH)]
        waited = {x[1] for x in ins[:second.ip] if x[0] in (WAIT_EVENT, WAIT_EVENT_AT)}
        trigger = next((x for x in ins[first.ip + 1:]
                        if x[0] in (TRIGGER, TRIGGER_CLUSTER) and x[1] not in waited), None)
        if trigger is None:
            return None
        noun = lambda site: ACCESS_NOUN[_kind(site)].format(text=site.text)   # noqa: E731
        return trigger[1], (code.events[trigger[1]].name, noun(second), noun(first),
                            trigger[SPAN])

    def why(self, race) -> str:
        why = race.why
        missing = None if isinstance(why, Copy) else self.missing_wait(race)
        # a missing wait explains the race better than no explanation, or than the early
        # trigger of another event (a pipeline's initial credits)
        if missing is not None and (why[0] == "why_none" or
                                    why[0] == "why_trigger" and why[1][1][0] != missing[0]):
            return line("why_no_wait", missing[1], self.code_cx(race.second[1]))
        if isinstance(why, Copy):
            what = "mma" if why.is_mma else "copy"
            if why.waited is None:
                return line(f"why_{what}_open", (), self.cx)
            return line(f"why_{what}", (why.waited,), self.cx)
        name, args = why
        if name == "why_trigger":
            trigger, slot, wait, site = args
            site = self.checker.sites[site]
            args = (trigger, slot, wait, ACCESS_NOUN[_kind(site)].format(text=site.text))
        return line(name, args, self.code_cx(race.second[1]))

    def diagnostics(self, race) -> list[Diagnostic]:
        (s1, who1), (s2, who2) = race.first, race.second
        first, second = self.checker.sites[s1], self.checker.sites[s2]
        storage = STORAGE[race.storage]
        if race.same_instruction:
            text = line("race_lanes", (storage, race.buffer, race.element, _done(second),
                                       self.why(race)), self.cx)
            return [Diagnostic("runtime error", text, self.spans.span(second.span), None,
                               ["  " + self.by(second, who2), self.context(who2)])]
        text = line("race", (storage, race.buffer, race.element, _done(second), _done(first),
                             first.span, self.why(race)), self.cx)
        here = Diagnostic("runtime error", text, self.spans.span(second.span), None,
                          ["  " + self.by(second, who2), self.context(who2)])
        notes = [] if self.context(who1) == self.context(who2) else [self.context(who1)]
        there = Diagnostic("note", self.by(first, who1), self.spans.span(first.span), None,
                           notes)
        return [here, there]


def race_fault(checker, races: list, fault=None) -> KernelFault:
    """The KernelFault listing ``races`` (croqvm.interp.race.Race), then ``fault``."""
    writer = _Writer(checker)
    diags = []
    for race in races[:MAX_SHOWN]:
        diags += writer.diagnostics(race)
    texts = [render(d, writer.spans.files) for d in diags]
    if len(races) > MAX_SHOWN:
        texts.append(line("races_more", (len(races) - MAX_SHOWN,), writer.cx))
    if fault is not None:
        texts.append(str(fault))
        diags += fault.diagnostics
    return KernelFault("\n".join(texts), diags)

