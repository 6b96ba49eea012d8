"""``Session``: one call of a function under the debugger, its commands as methods that
return data (croqvm.debug.console turns them into text).

The call runs on the reference engine in a thread of its own. The session's hook
(``instrument``, attached as ``Call.debugger``) wraps each instruction's handler: before
it, the hook decides whether to stop there (a step command's rule, a breakpoint); after
it, whether a watched element changed or the race checker found a race. To stop, the
run's thread hands a ``Stop`` to the session and parks until the next command; the state
it stands in (registers, buffers, warps) is then read by the session's thread alone.

A stop is named by the call's step count, ``call.steps``: the stop *before* warp-step N
is the state after N - 1 steps, which a re-run from the start reproduces exactly (the
engine and both schedules are deterministic). Going back (``reverse_step``, ...) re-runs
the call twice: once recording the steps where the wanted stop could be (statement
starts, breakpoint and watchpoint hits: ``_History``), once to the chosen step (before
it, or after it for a watchpoint's hit), with the program's printing silenced until then.

A launch's blocks in which the run can not stop run on the native engine
(croqvm.debug.forward, ``_Run.blocks``): the session shows the same either way.
"""
from __future__ import annotations

import io
import queue
import sys
import threading
from dataclasses import dataclass, field, fields

import numpy as np

from ..bytecode.module import END_OF_PARALLEL, BaseKind, Storage
from ..bytecode.opcodes import BY_NAME, SPAN, TABLE, WIDTH, decode
from ..core import dtypes
from ..core.errors import ArgumentError, KernelFault
from ..core.limits import buffer_bytes
from ..core.source import SpanTable
from ..interp.host import run_function
from ..interp.sync import EventWait
from ..lang import ast
from ..reports.blockview import BLOCKED, DONE
from ..running.program import check_seed
from .forward import FastForward
from .frames import Places, Registers
from .values import DebugError, Scope, Tile, parse, scalar_text

# What ends a step: the focused warp starts a new statement (STEP), one at its nesting
# depth or outside it, blocks and calls counted (NEXT), any instruction (STEPI), its
# block is left (FINISH), nothing but a breakpoint or a watchpoint (CONTINUE), the step
# count (TO). STEP, NEXT and FINISH also end where the focused warp is back in a caller
# of the call it was in: the rest of the statement holding the call.
STEP, NEXT, STEPI, FINISH, CONTINUE, TO = "step", "next", "stepi", "finish", "continue", "to"
# Instructions that close a structure: their span is the opener's, and stopping there
# would show the opener's line again (a breakpoint on a parallel's line would stop twice
# per block); so does the barrier that ends a parallel (_closes).
_STRUCTURAL = frozenset(BY_NAME[n].code for n in ("END", "ELSE"))
_BARRIER = BY_NAME["BARRIER"].code


def _closes(prog, ins) -> bool:
    return ins[0] in _STRUCTURAL or \
        ins[0] == _BARRIER and prog.code.colls[ins[1]].text == END_OF_PARALLEL


@dataclass
class Breakpoint:
    number: int
    file: str
    line: int
    condition: str = ""
    expr: object = None
    hit_steps: list = field(default_factory=list)   # the step of each stop it made

    @property
    def hits(self) -> int:
        return len(self.hit_steps)


@dataclass
class Watch:
    number: int
    text: str
    read: bool                      # rwatch: stop when an instruction reads it
    buffer: tuple                   # (block index or None for the host, slot, lane)
    index: tuple
    old: object = None


@dataclass
class WarpInfo:
    """One warp at a stop: where it is and what it waits for."""
    block: tuple | None             # None: the host program
    warp: int
    state: str
    file: str
    line: int
    text: str
    active: list
    waits: str = ""                 # a blocked warp: what it waits for
    depth: int = 0                  # the blocks and ``call``s its instruction lies in


@dataclass
class EventSlot:
    """One slot of an event: its completed generations, the arrivals toward the next,
    and who waits on it: (warp, its lanes still waiting) per warp."""
    done: int
    arrived: int
    waiting: list


@dataclass
class Stop:
    """Where and why the run stopped, before step ``step`` (after it for a watchpoint
    or a race). ``reason``: "step", "breakpoint", "watch", "race", "fault",
    "interrupted", "finished"; ``message``: the race, the runtime error it stopped
    with, or why a breakpoint's condition could not be evaluated (the warp stops
    then); ``result``: what the function returned; ``lanes``: the lanes that met a
    breakpoint's condition, or the faulting lane; ``watch``: (watch, old, new, (block,
    warp), lanes) of the access seen; ``at``: (file, line) of the statement whose
    instruction a watchpoint or race stop came after."""
    reason: str
    step: int
    place: WarpInfo | None = None
    breakpoint: Breakpoint | None = None
    lanes: list = field(default_factory=list)
    watch: tuple | None = None
    message: str = ""
    result: object = None
    at: tuple | None = None


class _Abort(BaseException):
    """Unwinds a run the session abandons (not an Exception: the engine lets it pass)."""


class _Silent(io.TextIOBase):
    """The program's output during a re-run, until the run reaches its target step."""

    def __init__(self, out):
        self.out, self.quiet = out, True

    def write(self, text):
        if not self.quiet:
            self.out.write(text)
        return len(text)

    def flush(self):
        self.out.flush()


class _Run:
    """One execution of the call: its thread and the hook's state."""

    def __init__(self, session, mode, target=0, record=None, after=False):
        self.s = session
        self.mode, self.target, self.record = mode, target, record
        self.to_after = after         # a re-run that stops after step ``target``
        self.focus_warp = None
        self.depth = self.calls = 0   # the focused warp's nesting and calls at the stop
        self.call = self.host = self.blk = self.cur = None
        self.last = {}                # id(warp) -> pc of its last statement instruction
        self.races = 0
        self.after_step = False       # stopped after the current warp's instruction
        self.interrupt = False        # Ctrl-C: stop before the next step
        self.go: queue.Queue = queue.Queue()
        self.out = _Silent(session.out)
        self.out.quiet = target > 0
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.thread.start()

    def _main(self):
        s = self.s
        try:
            result = s.runner(self, self.out)
            self.cur = None
            s.stops.put(Stop("finished", self.call.steps if self.call else 0, result=result))
        except _Abort:
            s.stops.put(None)
        except KernelFault as fault:      # the faulting warp is ``cur``, at its instruction
            self.after_step = False
            s.stops.put(Stop("fault", self.call.steps if self.call else 0,
                             lanes=self._faulting_lane(fault.record), message=str(fault)))
        except BaseException as exc:   # noqa: BLE001 - bad arguments, a croqvm bug: the
            s.stops.put(exc)           # session raises it

    def _faulting_lane(self, record) -> list:
        """[the lane of ``cur`` the fault ``record`` names], or [] (none, a deadlock)."""
        w = self.cur
        if record is None or record.lane is None or w is None:
            return []
        lane = record.lane - w.base
        return [lane] if 0 <= lane < w.width else []

    # ------------------------------------------------------------------ the hook

    def instrument(self, prog, steps: list) -> list:
        lines = self.s.lines(prog)
        places = self.s.places(prog)
        return [(self._wrap(handler, pc, lines[pc], places), operands)
                for pc, (handler, operands) in enumerate(steps)]

    def _wrap(self, handler, pc: int, line, places: Places):
        def step(w, operands):
            self.before(w, pc, line, places)
            handler(w, operands)
            if self.s.watches or self.s.break_race:
                self.after(w, pc)
        return step

    def before(self, w, pc, line, places: Places):
        call = w.blk.call
        if self.call is None:
            self.call, self.host = call, w.blk
        if w.blk is not self.blk:
            self.blk, self.last = w.blk, {}
        self.cur = w
        place = places.of[pc]
        new = False
        if place >= 0:
            new = places.starts(pc, self.last.get(id(w)))
            self.last[id(w)] = pc
        n = call.steps
        if self.mode == TO:
            if self.record is not None and n < self.target and new:
                self.record(self, w, line, len(w.stack) + places.calls[place])
            if n == self.target and not self.to_after:
                self.out.quiet = False
                self.pause(w, Stop("step", n))
            return
        if self.interrupt:
            self.interrupt = False
            self.pause(w, Stop("interrupted", n))
            return
        if new:
            hit = self.s.breakpoint_hit(self, w, line)
            if hit is not None:
                bp, lanes, error = hit
                bp.hit_steps.append(n)
                self.pause(w, Stop("breakpoint", n, breakpoint=bp, lanes=lanes, message=error))
                return
        if self.wanted(w, new, places.calls[place] if place >= 0 else -1):
            self.pause(w, Stop("step", n))

    def wanted(self, w, new: bool, calls: int) -> bool:
        """Whether the run stops before ``w``'s instruction: ``new``, whether it starts
        a statement; ``calls``, the calls that statement lies in (-1: not a statement's
        instruction)."""
        mode, fw = self.mode, self.focus_warp
        if mode == CONTINUE:
            return False
        if fw is None:                       # the start: the first statement
            return new
        if w is fw:
            if mode == STEPI:
                return True
            if 0 <= calls < self.calls:     # back in a caller: the rest of its statement
                return True
            return new and (mode == STEP or mode == NEXT and
                            len(w.stack) + calls <= self.depth)
        # another warp: the focused one is done, or waits, or is the host inside a launch
        left = fw.state == DONE or w.blk is not fw.blk
        back = w.blk.is_host and not fw.blk.is_host          # from a kernel to its host
        if mode == STEPI:
            return left
        if mode == STEP:
            return new and left
        if mode == NEXT:
            return new and (fw.state == DONE or back)
        return new and back                                   # FINISH

    @property
    def replaying(self) -> bool:
        """Whether the run goes to a step count (a re-run), blind to the rest."""
        return self.mode == TO

    def stops_only_at_marks(self) -> bool:
        """Whether, by ``wanted``, the run's next stop can only be at a breakpoint, a
        watchpoint, a fault or a step count, not at what any warp runs next."""
        if self.mode in (CONTINUE, TO):
            return True
        fw = self.focus_warp
        if fw is None:
            return False
        # finish stops when a kernel warp's host resumes, or in the focused warp's block
        # (which runs under the hook) when it returns from a call; next from the host
        # steps over
        return self.mode == FINISH or self.mode == NEXT and fw.blk.is_host

    def after(self, w, pc):
        s = self.s
        if self.mode == TO:
            if self.record is not None:
                self.record.after(self, w, pc)
            elif self.to_after and self.call.steps == self.target:
                self.out.quiet = False
                self.pause(w, Stop("watch", self.target), after=True)
            return
        for watch in s.watches:
            hit, watch.old = s.seen(self, w, pc, watch, watch.old)
            if hit is not None:
                self.pause(w, Stop("watch", self.call.steps, watch=hit,
                                   at=s.lines(w.blk.prog)[pc]), after=True)
                if not watch.read:
                    return
        if s.break_race and self.call.checker is not None:
            races = getattr(self.call.checker, "races", {})
            if len(races) > self.races:
                self.races = len(races)
                race = list(races.values())[-1]           # the newest pair of statements
                self.pause(w, Stop("race", self.call.steps, message=self._race_text(race),
                                   at=s.lines(w.blk.prog)[pc]), after=True)

    def _race_text(self, race) -> str:
        kernel, slot, _ = race.buffer
        blk = self.blk if kernel >= 0 else self.host
        name = blk.prog.code.buffers[slot].name
        element = ", ".join(str(i) for i in race.element)
        return f"data race on '{name}' element ({element})"

    def blocks(self, call, hblk, index: int, grid):
        """The blocks of launch ``index`` the reference engine runs under the hook,
        (number, index) in row-major order; the session's fast-forward runs the others
        natively (croqvm.debug.forward)."""
        return self.s.forward.blocks(self, call, hblk, index, grid)

    def where_of(self, w) -> tuple:
        return (None if w.blk.is_host else w.blk.index, w.index)

    def pause(self, w, stop: Stop, after: bool = False):
        """Hand ``stop`` to the session and park until it says what next: the mode and
        target step of the next stop, or None to abandon the run."""
        self.after_step = after
        self.cur = w
        self.s.stops.put(stop)
        order = self.go.get()
        if order is None:
            raise _Abort
        self.mode, self.target, self.record = order
        self.focus_warp = self.s.focused_warp(self)
        self.depth, self.calls = (0, 0) if self.focus_warp is None else \
            self.s.nesting(self.focus_warp)

    def resume(self, mode, target=0):
        self.go.put((mode, target, None))

    def abort(self):
        if self.thread.is_alive():
            self.go.put(None)
            self.thread.join()
            self.s.stops.get()        # the None its end handed over


def _same(a, b) -> bool:
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


class Session:
    """``program.run(func, *args, **options)`` under the debugger, stopped before its
    first statement. ``options``: those of ``croqvm.Program.run`` the Python engine takes
    (``schedule``, ``seed``, ``poison``, ``check``, ``max_steps``, dims) and ``out``,
    where the program's printing goes (default sys.stdout). ``fast_forward``: the
    blocks the run can not stop in run on the native engine, where it is built
    (croqvm.debug.forward); False runs every block under the hook."""

    def __init__(self, program, func: str, *args, out=None, schedule: str = "rr",
                 seed: int = 0, poison: bool = False, check=None, max_steps=None,
                 fast_forward: bool = True, **dims):
        module = program.module
        if module.function(func) is None:
            raise ArgumentError(f"no function named '{func}' in this module.")
        if check not in (None, "race", "init"):
            raise ArgumentError(f"unknown check '{check}': use 'race' or 'init'.")
        if schedule not in ("rr", "random"):
            raise ArgumentError(f"unknown schedule '{schedule}': use 'rr' or 'random'.")
        self.module, self.func = module, func
        self.out = sys.stdout if out is None else out
        self.spans = SpanTable(module.sources, module.spans, module.calls)
        self._lines: dict = {}
        self._places: dict = {}
        self._registers: dict = {}
        pristine = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        self.args = args

        def runner(run, out):
            fresh = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a
                     for a in pristine]
            result = run_function(module, func, fresh, dims, poison=poison,
                                  schedule=schedule, seed=check_seed(seed),
                                  max_steps=max_steps, out=out, stats=None, check=check,
                                  debugger=run)
            for given, final in zip(self.args, fresh):
                if isinstance(given, np.ndarray) and given.flags.writeable:
                    given[...] = final
            return result
        self.runner = runner
        self.forward = FastForward(self, module, func, fast_forward)
        self.breakpoints: list[Breakpoint] = []
        self.watches: list[Watch] = []
        self.check = check
        self.break_fault = False
        self.break_race = False
        self._numbers = 0
        self.focus = None               # (block index or None, warp, lane)
        self.ended_focus = None         # the focus when the run ended
        self.stops: queue.Queue = queue.Queue()
        self.run = _Run(self, STEP)
        self.stop = self._wait()

    # ------------------------------------------------------------------ running

    def _wait(self) -> Stop:
        """The run's next stop; Ctrl-C while it runs stops it before its next step."""
        while True:
            try:
                got = self.stops.get()
                break
            except KeyboardInterrupt:
                self.run.interrupt = True
        if isinstance(got, BaseException):
            raise got
        stop = got
        if stop.reason == "fault" and not self.break_fault:
            stop.reason = "finished"
        if stop.reason == "finished":
            stop.place = None
            self._end()
        else:
            stop.place = self._place(self.run.cur)
            self._focus_on(stop)
        self.stop = stop
        return stop

    def _end(self) -> None:
        """Focus on the host program, whose buffers outlive the blocks; going back from
        the end starts from the warp focused before."""
        self.ended_focus, self.focus = self.focus, (None, 0, 0)

    def _focus_on(self, stop: Stop) -> None:
        """Focus on the warp that made ``stop``, and in it on a lane that follows from the
        stop alone, whichever way (forward or back) the run reached it: the first lane
        that met a breakpoint, the first lane whose access a watchpoint saw, the faulting
        lane; after a step, the lane focused before when the warp is the same."""
        w = self.run.cur
        here = (None if w.blk.is_host else w.blk.index, w.index)
        first = int(np.flatnonzero(w.act)[0]) if w.nact else 0
        if stop.watch is not None and stop.watch[4]:
            lane = stop.watch[4][0]
        elif stop.lanes:
            lane = stop.lanes[0]
        elif stop.reason in ("step", "interrupted") and self.focus is not None and \
                self.focus[:2] == here:
            lane = self.focus[2]
        else:
            lane = first
        self.focus = here + (lane,)

    @property
    def finished(self) -> bool:
        """Whether the run is over (a fault it stopped at included)."""
        return self.stop.reason in ("finished", "fault")

    def _go(self, mode, target=0) -> Stop:
        if self.finished:
            raise DebugError("the program is not running")
        self.run.resume(mode, target)
        return self._wait()

    def step(self) -> Stop:
        """Run the focused warp to its next statement, into a kernel it launches or a
        function it calls, or out of a function to the rest of the calling statement."""
        return self._go(STEP)

    def next(self) -> Stop:
        """Run the focused warp to its next statement outside nested blocks, calls and
        launches (or out of the function it is in, as ``step``)."""
        return self._go(NEXT)

    def stepi(self) -> Stop:
        """Run one instruction of the focused warp."""
        return self._go(STEPI)

    def cont(self) -> Stop:
        """Run to a breakpoint, a watchpoint, a fault (with break fault) or the end."""
        if self.stop.reason == "fault":
            self.run.thread.join()
            self.stop = Stop("finished", self.stop.step, message=self.stop.message)
            self._end()
            return self.stop
        return self._go(CONTINUE)

    def finish(self) -> Stop:
        """Run the focused warp out of the function it is in, to the rest of the calling
        statement; outside calls, until the host program resumes after the kernel."""
        return self._go(FINISH)

    def quit(self) -> None:
        self.run.abort()

    # ------------------------------------------------------------------ going back

    def _replay(self, target: int, record=None, after: bool = False) -> None:
        """Run the call again from its start and stop before step ``target`` (``after``:
        after it); watched elements are compared from there on."""
        self.run.abort()
        self.run = _Run(self, TO, target, record, after)
        self._wait()
        for watch in self.watches:
            arr = self.watch_array(self.run, watch)
            watch.old = None if arr is None else arr[watch.index].copy()

    def _history(self, upto: int):
        """What the run passes before step ``upto`` (``_History``)."""
        record = _History(self)
        self._replay(upto, record)
        return record

    def _back_to(self, pick) -> Stop:
        here, focused = self.stop, (self.focus, self.ended_focus)
        focus = self.ended_focus if here.reason == "finished" else self.focus
        depth = here.place.depth if here.place is not None else 0
        record = self._history(here.step)      # ends where it began: in this very state
        events = record.events
        if not events:
            self.stop, (self.focus, self.ended_focus) = here, focused
            raise DebugError("already at the first statement of the run")
        self.focus = focus            # a step back keeps the focused lane of this warp
        if pick is None:
            return self._back_to_hit(record)
        chosen = pick(events, focus, depth)
        self._replay(chosen[0] if chosen else events[0][0])
        self._rewind_hits(self.stop.step, chosen is not None and chosen[4])
        self.stop.reason = "step"
        return self.stop

    def _back_to_hit(self, record) -> Stop:
        """To the last breakpoint or watchpoint hit ``record`` saw, else the start."""
        hits = [((e[0], 0), e) for e in record.events if e[4]] + \
            [((step, 1), hit) for step, hit, _ in record.watched]
        if not hits:
            self._replay(record.events[0][0])
            self._rewind_hits(self.stop.step, False)
            self.stop.reason = "step"
            return self.stop
        (step, after), hit = max(hits, key=lambda h: h[0])
        self._replay(step, after=bool(after))
        self._rewind_hits(step, True)
        stop = self.stop
        if after:
            stop.watch, stop.at = hit, next(at for n, h, at in record.watched if h is hit)
        else:
            w = self.run.cur              # the hit as the run that made it saw it
            # the history saw this very hit in this very state
            stop.breakpoint, stop.lanes, stop.message = \
                self.breakpoint_hit(self.run, w, self.lines(w.blk.prog)[w.ip])
            stop.reason = "breakpoint"
        self._focus_on(stop)
        return stop

    def _rewind_hits(self, step: int, at: bool) -> None:
        """The breakpoints' hit counts as they were at ``step`` (``at``: the hit there
        counted)."""
        for bp in self.breakpoints:
            bp.hit_steps = [n for n in bp.hit_steps if n < step or at and n == step]

    def reverse_step(self) -> Stop:
        """Back to the focused warp's previous statement start (exactly that state)."""
        return self._back_to(_last_of_focus)

    def reverse_next(self) -> Stop:
        """Back to the previous statement start at the focused warp's depth or outside."""
        return self._back_to(_last_at_depth)

    def reverse_continue(self) -> Stop:
        """Back to the last breakpoint or watchpoint hit before now (a watchpoint's: just
        after the instruction it saw, as it stopped there), else to the start."""
        return self._back_to(None)

    # ------------------------------------------------------------------ where

    def lines(self, prog) -> list:
        """(file, line) of each instruction of ``prog``; None for a function's prologue
        and epilogue (the constants it hoists, its return: on its header's line) and a
        kernel's (its indices and constants: the span of its parallel statement), which
        no statement owns."""
        key = id(prog.code)
        if key not in self._lines:
            fn = self.module.function(self.func)
            header = self.spans.span(fn.span)
            own = {k.span for k in fn.kernels if prog.code is k.code}
            table = []
            for ins in prog.ins:
                sp = self.spans.span(ins[SPAN])
                hidden = sp is None or ins[SPAN] in own or \
                    (sp.file, sp.line) == (header.file, header.line)
                table.append(None if hidden else (sp.file, sp.line))
            self._lines[key] = table
        return self._lines[key]

    def statement_lines(self, prog) -> list:
        """(file, line) of each instruction of ``prog`` that is a statement's, where a
        new statement can start (``_Run.before``); None for the others, the closing
        instructions of structures among them."""
        lines = self.lines(prog)
        return [None if _closes(prog, ins) else lines[pc] for pc, ins in enumerate(prog.ins)]

    def registers(self, code) -> Registers:
        """Where each register of ``code`` is a variable (croqvm.debug.frames)."""
        key = id(code)
        if key not in self._registers:
            self._registers[key] = Registers(code, self.spans)
        return self._registers[key]

    def places(self, prog) -> Places:
        """The places of ``prog``'s statements (croqvm.debug.frames)."""
        key = id(prog.code)
        if key not in self._places:
            self._places[key] = Places(self.statement_lines(prog),
                                       self.registers(prog.code).calls, self.spans)
        return self._places[key]

    def source_line(self, file: str, line: int) -> str:
        src = self.spans.files.get(file)
        if src is None:
            return ""
        text = src.text.split("\n")
        return text[line - 1] if 1 <= line <= len(text) else ""

    def _at(self, w) -> int:
        """The instruction ``w`` is at: the one it stopped before, blocks in, or (the
        host program while a kernel runs) launched from; else the next."""
        run = self.run
        inside = w.blk.is_host and run.blk is not None and run.blk is not w.blk
        return w.ip if w is run.cur and not run.after_step or w.state == BLOCKED or inside \
            else w.pc

    def _calls(self, w) -> tuple:
        """The spans of the calls ``w``'s instruction lies in, innermost first."""
        return tuple(reversed(self.registers(w.blk.prog.code).chain(self._at(w))))

    def nesting(self, w) -> tuple[int, int]:
        """(the blocks and calls ``w``'s instruction lies in, the calls among them)."""
        calls = len(self._calls(w))
        return len(w.stack) + calls, calls

    def _place(self, w, span=None) -> WarpInfo:
        """``w`` where it is; with ``span``, the span of a call its instruction lies
        in, at that call (a frame of ``backtrace``)."""
        blk, ip, code = w.blk, self._at(w), w.blk.prog.ins
        if span is None and ip < len(code):
            span = code[ip][SPAN]
        sp = self.spans.span(span) if span is not None else None
        file, line = (sp.file, sp.line) if sp is not None else ("", 0)
        return WarpInfo(None if blk.is_host else blk.index, w.index, w.state, file, line,
                        self.source_line(file, line).strip() if line else "",
                        np.flatnonzero(w.act).tolist(), _waits(w), self.nesting(w)[0])

    def _block(self, index):
        run = self.run
        if run.host is None:
            raise DebugError("the program has not started")
        if index is None:
            return run.host
        if run.blk is None or run.blk.is_host or run.blk.index != index:
            now = "the host program" if run.blk is None or run.blk.is_host \
                else f"block {run.blk.block_text()}"
            raise DebugError(f"block {_text(index)} is not running (blocks run one at a time; "
                             f"now: {now})")
        return run.blk

    def focused_warp(self, run=None):
        if self.focus is None:
            return None
        try:
            return self._block(self.focus[0]).warps[self.focus[1]]
        except DebugError:
            return None

    def where(self) -> list[WarpInfo]:
        """Every warp of the focused block."""
        blk = self._block(self.focus[0])
        return [self._place(w) for w in blk.warps]

    def backtrace(self) -> list[WarpInfo]:
        """The focused warp, then each ``call`` it is inside, innermost first (the line
        of the call), then the host program's launch it runs under."""
        w = self._block(self.focus[0]).warps[self.focus[1]]
        out = [self._place(w)] + [self._place(w, call) for call in self._calls(w)]
        if self.focus[0] is not None:
            out.append(self._place(self.run.host.warps[0]))
        return out

    def warps(self) -> list[WarpInfo]:
        """Every warp of the running block, with the host program's first."""
        out = [self._place(self.run.host.warps[0])]
        if self.run.blk is not None and not self.run.blk.is_host:
            out += [self._place(w) for w in self.run.blk.warps]
        return out

    # ------------------------------------------------------------------ focus

    def set_focus(self, block=None, warp=None, lane=None) -> tuple:
        """Focus on ``block`` (an index tuple, or "host"), ``warp`` of it, ``lane`` of that."""
        cur_block, cur_warp, cur_lane = self.focus
        if block is not None:
            index = None if block == "host" else tuple(block)
            blk = self._block(index)
            self.focus = (index, 0, 0)
            cur_block, cur_warp, cur_lane = self.focus
        blk = self._block(cur_block)
        if warp is not None:
            if not 0 <= warp < len(blk.warps):
                raise DebugError(f"no warp {warp}: the block has {len(blk.warps)} "
                                 f"warp(s), 0-{len(blk.warps) - 1}")
            cur_warp, cur_lane = warp, 0
        if lane is not None:
            width = blk.warps[cur_warp].width
            if not 0 <= lane < width:
                raise DebugError(f"no lane {lane}: warp {cur_warp} has {width} lane(s), "
                                 f"0-{width - 1}")
            cur_lane = lane
        self.focus = (cur_block, cur_warp, cur_lane)
        return self.focus

    # ------------------------------------------------------------------ values

    def scope(self) -> Scope:
        blk = self._block(self.focus[0])
        w = blk.warps[self.focus[1]]
        here = w.ip if w is self.run.cur else w.pc
        return Scope(blk, w, here, None if blk.is_host else self.run.host, self.registers)

    def evaluate(self, text: str):
        """``text`` in the focused warp: Lanes (one value per lane) or Tile (elements)."""
        e = parse(text)
        with np.errstate(all="ignore"):
            return self.scope().evaluate(e, self.focus[2])

    def variables(self) -> list[tuple[str, list]]:
        """Per program in force (the focused warp's, then the host's): (scope name, [(name,
        value text)]) of the named registers its frames (``call``s) around the focused
        warp's instruction have written so far, each name as ``p`` means it, and its
        allocated buffers."""
        out = []
        sc = self.scope()
        places = [(sc.blk, sc.w, sc.ip)]
        if sc.host is not None:
            places.append((sc.host, sc.host.warps[0], len(sc.host.prog.ins)))
        lane = self.focus[2]
        for blk, w, ip in places:
            code = blk.prog.code
            regs = self.registers(code)
            meant = [rs[0] for name, rs in regs.names(ip).items()
                     if not name.startswith("#") and regs.first[rs[0]] < ip]
            items = []
            for r in sorted(meant, key=lambda r: -regs.first[r]):
                t = blk.prog.rtypes[r]
                items.append((code.reg_names[r],
                              scalar_text(w.regs[r][lane if w is sc.w else 0], t)))
            for slot, decl in enumerate(code.buffers):
                if decl.name and blk.instances(slot, w.base + (lane if w is sc.w else 0)):
                    tile = sc.tile(blk, slot, lane if w is sc.w else 0)
                    items.append((decl.name, _brief(tile)))
            name = "host" if blk.is_host else f"kernel block {blk.block_text()} warp " \
                f"{w.index} lane {lane}"
            out.append((name, items))
        return out

    def memory(self) -> list[tuple[str, str, str, list, int]]:
        """Every allocated named buffer: (name, storage, dtype, shape, bytes), host
        program first, then the running block's."""
        out, seen = [], set()
        blocks = [self.run.host] + ([self.run.blk] if self.run.blk is not None
                                    and not self.run.blk.is_host else [])
        for blk in blocks:
            code = blk.prog.code
            found = [(slot, insts) for slot, insts in blk.bufs.items()] + \
                [(slot, insts) for (slot, _), insts in blk.locals.items()]
            for slot, insts in sorted(found, key=lambda x: x[0]):
                decl = code.buffers[slot]
                if not decl.name or id(insts[0].data) in seen:
                    continue
                seen.add(id(insts[0].data))
                t = dtypes.BY_CODE[decl.dtype]
                shape = list(insts[0].data.shape)
                out.append((decl.name, Storage(decl.storage).name.lower(), t.name, shape,
                            buffer_bytes(t.bits, decl.count, shape)))
        return out

    def futures(self) -> list[tuple[str, str]]:
        """(future, its state in the focused lane): empty, or whether its last transfer
        is async and still pending, and the view of the data it holds."""
        blk = self._block(self.focus[0])
        lane = blk.warps[self.focus[1]].base + self.focus[2]
        out = []
        for slot, decl in enumerate(blk.prog.code.futures):
            h = blk.futures[slot][lane]
            if h is None or h.buf is None:
                out.append((decl.name, "empty"))
                continue
            state = "pending" if h.pending(lane) else "completed"
            kind = "async" if h.is_async else "sync"
            box = ", ".join(f"{o}:{o + e}" for o, e in zip(h.origin, h.extents))
            out.append((decl.name, f"{state} ({kind}), data [{box}]"))
        return out

    def events(self) -> list[tuple[str, list[EventSlot]]]:
        """Each event of the focused block: (its name, its slots)."""
        blk = self._block(self.focus[0])
        waiting: dict = {}            # (event, slot) -> [(warp, its lanes waiting)]
        for w in blk.warps:
            wait = w.blocker
            if not isinstance(wait, EventWait):
                continue
            pending = wait.pending()
            for slot in sorted(set(wait.slots[pending].tolist())):
                lanes = wait.lanes[pending & (wait.slots == slot)] - w.base
                waiting.setdefault((wait.ev.index, slot), []).append(
                    (w.index, sorted(lanes.tolist())))
        return [(decl.name, [EventSlot(int(ev.completed[s]), int(ev.arrivals[s]),
                                       waiting.get((ev.index, s), []))
                             for s in range(decl.slots)])
                for decl, ev in zip(blk.prog.code.events, blk.events)]

    # ------------------------------------------------------------------ breakpoints

    def _file(self, file: str | None) -> str:
        names = self.spans.names
        if file is None:
            return names[0]
        for n in names:
            if n == file or n.endswith("/" + file):
                return n
        raise DebugError(f"no source file '{file}' in this program")

    def break_at(self, line: int, file: str | None = None, condition: str = "") -> Breakpoint:
        """A breakpoint at the first statement of ``line``; with ``condition``, the warp
        stops when an active lane meets it."""
        name = self._file(file)
        lines = set()
        fn = self.module.function(self.func)
        for code in [fn.host] + [k.code for k in fn.kernels]:
            for n in range(0, len(code.code), WIDTH):
                sp = self.spans.span(code.code[n + SPAN])
                if sp is not None and sp.file == name:
                    lines.add(sp.line)
        if line not in lines:
            raise DebugError(f"line {line} of {name} has no code")
        expr = parse(condition) if condition else None
        if expr is not None:
            self._names_exist(expr, name, line)
        self._numbers += 1
        bp = Breakpoint(self._numbers, name, line, condition, expr)
        self.breakpoints.append(bp)
        return bp

    def _names_exist(self, expr, file: str, line: int) -> None:
        """DebugError when a name of a breakpoint's condition means nothing at ``line``:
        at none of its statements' instructions (in whichever calls they lie) a variable
        of the frames around it, a buffer or future of its program, nor of the host's."""
        fn = self.module.function(self.func)
        known = set()
        for code in [fn.host] + [k.code for k in fn.kernels]:
            regs = self.registers(code)
            ins = decode(code.code)
            at = [pc for pc, i in enumerate(ins)
                  if (sp := self.spans.span(i[SPAN])) is not None
                  and (sp.file, sp.line) == (file, line)]
            if code is fn.host:
                at.append(len(ins))             # the host as a kernel sees it
            for pc in at:
                known |= set(regs.names(pc))
            if at:
                known |= {b.name for b in code.buffers} | {f.name for f in code.futures}
        for node in _walk(expr):
            if isinstance(node, ast.Name) and node.id not in known:
                raise DebugError(f"no variable '{node.id}' at line {line}")

    def delete(self, number: int | None = None) -> list[Breakpoint]:
        """Delete breakpoint ``number`` (or watchpoint), or every one: those deleted."""
        if number is None:
            gone, self.breakpoints, self.watches = self.breakpoints + self.watches, [], []
            return gone
        for items in (self.breakpoints, self.watches):
            for item in items:
                if item.number == number:
                    items.remove(item)
                    return [item]
        raise DebugError(f"no breakpoint number {number}")

    def delete_at(self, line: int, file: str | None = None) -> list[Breakpoint]:
        """Delete the breakpoints at ``line`` (co-mock's ``d LINE``): those deleted."""
        name = self._file(file)
        gone = [bp for bp in self.breakpoints if (bp.file, bp.line) == (name, line)]
        if not gone:
            raise DebugError(f"no breakpoint at line {line}")
        self.breakpoints = [bp for bp in self.breakpoints if bp not in gone]
        return gone

    def breakpoint_hit(self, run, w, line):
        """The breakpoint warp ``w``, starting a statement of ``line``, stops at: (it, the
        lanes that met its condition, "") or, when the condition can not be evaluated
        there, (it, every active lane, why): the warp stops and says so. None: no stop."""
        for bp in self.breakpoints:
            if (bp.file, bp.line) != line:
                continue
            active = np.flatnonzero(w.act).tolist()
            if bp.expr is None:
                return bp, active, ""
            sc = Scope(w.blk, w, w.ip, None if w.blk.is_host else run.host, self.registers)
            try:
                with np.errstate(all="ignore"):
                    v = sc.evaluate(bp.expr, 0)
                if isinstance(v, Tile):
                    raise DebugError(f"'{v.name}' is a buffer, not a condition")
            except DebugError as err:
                return bp, active, f"its condition can not be evaluated here: {err}"
            met = (v.values != 0) & w.act
            if met.any():
                return bp, np.flatnonzero(met).tolist(), ""
        return None

    # ------------------------------------------------------------------ watchpoints

    def watch(self, text: str, read: bool = False) -> Watch:
        """Stop after an instruction changes (``read``: reads) element ``BUF.at(...)``,
        indices evaluated in the focused lane."""
        e = parse(text)
        if not isinstance(e, ast.ElemAccess) or not isinstance(e.base, ast.Name):
            raise DebugError("watch takes an element: BUF.at(i, ...)")
        sc = self.scope()
        base = sc.evaluate(e.base, self.focus[2])
        if not isinstance(base, Tile):
            raise DebugError(f"'{e.base.id}' is not a buffer")
        blk = sc.blk if sc.buffer(e.base.id, sc.blk) is not None else sc.host
        idx = tuple(int(sc._scalar(i, self.focus[2]).values[self.focus[2]])
                    for i in e.indices)
        if len(idx) != base.data.ndim or not all(0 <= i < n for i, n in
                                                 zip(idx, base.data.shape)):
            raise DebugError(f"{text} is not an element of '{base.name}' (extents "
                             f"{list(base.data.shape)})")
        slot = sc.buffer(e.base.id, blk)
        where = (None if blk.is_host else blk.index, slot,
                 sc.w.base + self.focus[2] if blk is sc.blk else 0)
        if not blk.is_host:             # a buffer the host passed: watched in every block
            launch = self.run.host.prog.code.launches[blk.launch_index]
            host_slot = dict(launch.buffers).get(slot)
            if host_slot is not None:
                where = (None, host_slot, 0)
        self._numbers += 1
        w = Watch(self._numbers, text, read, where, idx)
        w.old = base.data[idx].copy()
        self.watches.append(w)
        return w

    def seen(self, run, w, pc, watch, old):
        """What instruction ``pc`` of ``w``, just run, did to ``watch``'s element, whose
        last value seen is ``old``: (the ``Stop.watch`` of a hit or None, the value to
        remember)."""
        arr = self.watch_array(run, watch)
        if arr is None:
            return None, old
        new = arr[watch.index]
        if watch.read:
            hit = self.reads(run, w, pc, watch)
            return ((watch, new, new, run.where_of(w), self.touching(run, w, pc, watch))
                    if hit else None), old
        if old is not None and old.tobytes() == new.tobytes():
            return None, old                # unchanged (the common case, checked cheaply)
        new = new.copy()
        if old is not None and not _same(old, new):
            return (watch, old, new, run.where_of(w), self.touching(run, w, pc, watch)), new
        return None, new

    def watch_array(self, run, watch):
        block, slot, lane = watch.buffer
        blk = run.host if block is None else run.blk
        if blk is None or (block is not None and (blk.is_host or blk.index != block)):
            return None
        insts = blk.instances(slot, lane)
        return None if insts is None else insts[0].data

    def touching(self, run, w, pc, watch) -> list:
        """The lanes of ``w`` whose element access at ``pc`` names the watched element
        (all active lanes when the instruction is not an element access)."""
        ins = w.blk.prog.ins[pc]
        op = TABLE[ins[0]]
        lanes = np.flatnonzero(w.act).tolist()
        if "a" not in op.operands:
            return lanes
        acc = w.blk.prog.code.accesses[ins[1 + op.operands.index("a")]]
        hit = []
        for i in lanes:
            if tuple(int(w.regs[r][i]) for r in acc.indices) == watch.index:
                hit.append(i)
        return hit or lanes

    def reads(self, run, w, pc, watch) -> bool:
        ins = w.blk.prog.ins[pc]
        op = TABLE[ins[0]]
        if "a" not in op.operands or op.writes < 0:     # an element load
            return False
        acc = w.blk.prog.code.accesses[ins[1 + op.operands.index("a")]]
        watched = self.watch_array(run, watch)
        return any(_reads_element(w, acc, i, watched, watch.index)
                   for i in np.flatnonzero(w.act))


class _History:
    """What a re-run passes (``_Run.record``): ``events``, its statement starts (step,
    block, warp, depth (the blocks and calls the statement lies in), breakpoint hit), in
    step order, and ``watched``, the watchpoint hits after its steps (step, the
    ``Stop.watch`` it makes, the statement's line)."""

    def __init__(self, session):
        self.s, self.events, self.watched = session, [], []
        self.olds: dict = {}          # watch number -> the element's last value seen

    def after(self, run, w, pc):
        """After step ``run.call.steps``: the watchpoints it sets off (as _Run.after)."""
        for watch in self.s.watches:
            hit, self.olds[watch.number] = self.s.seen(run, w, pc, watch,
                                                       self.olds.get(watch.number))
            if hit is not None:
                self.watched.append((run.call.steps, hit, self.s.lines(w.blk.prog)[pc]))
                if not watch.read:
                    return

    def __call__(self, run, w, line, depth):
        """A statement start of ``w`` at ``depth``, blocks and calls counted."""
        hit = self.s.breakpoint_hit(run, w, line) is not None
        self.events.append((run.call.steps, None if w.blk.is_host else w.blk.index,
                            w.index, depth, hit))

    def add(self, step, block, warp, depth):
        """One the fast-forward passed, on no breakpoint's line (croqvm.debug.forward)."""
        self.events.append((step, block, warp, depth, False))


# Choosing where to go back to among the statement starts before now, (step, block,
# warp, depth, breakpoint hit): the focused warp's last (else the run's last, as when
# stepping back out of a kernel's first statement into the host program), or ...
def _last_of_focus(events, focus, depth):
    mine = [e for e in events if (e[1], e[2]) == focus[:2]]
    return mine[-1] if mine else (events[-1] if events else None)


def _last_at_depth(events, focus, depth):
    """... the focused warp's last at its depth or outside (over nested blocks and
    calls) (reverse-continue's choice is Session._back_to_hit's)."""
    mine = [e for e in events if (e[1], e[2]) == focus[:2] and e[3] <= depth]
    return mine[-1] if mine else _last_of_focus(events, focus, depth)


def _walk(node):
    """``node`` and every expression inside it."""
    yield node
    for value in (getattr(node, f.name) for f in fields(node)):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.Node):
                yield from _walk(item)


def _reads_element(w, acc, i, watched, index) -> bool:
    """Whether lane ``i`` of ``w`` loading through access ``acc`` reads ``watched[index]``."""
    if acc.base_kind != BaseKind.BUF:
        return False
    insts = w.blk.instances(acc.base, w.base + i)
    return insts is not None and insts[0].data is watched and \
        tuple(int(w.regs[r][i]) for r in acc.indices) == index


def _waits(w) -> str:
    b = w.blocker
    if b is None:
        return ""
    if b.ready():
        return "its wait is over; it resumes when next picked"
    views = b.view() if hasattr(b, "view") else ()
    code = w.blk.prog.code
    names = []
    for v in views:
        if hasattr(v, "site"):
            names.append(code.colls[v.site].text)
        elif hasattr(v, "event"):
            names.append(f"event '{code.events[v.event].name}' slot {v.slot}")
    return "waiting for " + (", ".join(names) or "a wait")


def _text(index) -> str:
    return "(" + ", ".join(str(i) for i in index) + ")"


def _brief(tile: Tile) -> str:
    flat = tile.data.reshape(-1)
    shown = ", ".join(scalar_text(v, tile.dtype) for v in flat[:8])
    more = ", ..." if flat.size > 8 else ""
    dims = ", ".join(str(d) for d in tile.data.shape)
    return f"{tile.storage} {tile.dtype.name}[{dims}]  [{shown}{more}]"


