"""Recording a run's timeline (``croqvm trace``, docs/TRACE.md).

The ``Recorder`` is the engine's tracing hook (``Call.tracer``, croqvm.interp.engine.prepare):
its ``instrument`` wraps every step of a program the call prepares, so the engine runs as
it always does and only the wrapped steps know of time. Time is the cost model's
(croqvm.trace.cost), not the interpreter's order: every warp has its own clock, which each
instruction advances by its cost; a warp that waits (a collective, an event, a future, a
named barrier) resumes at the time the wait is released on the releasing side's clock --
the last participant's arrival, the trigger that completed the generation, the copy's
landing -- whenever the interpreter happened to run that side. The interpreter's schedule
only guarantees that the releasing side has run, and so has its time, when the waiter
resumes.

Conventions: ``ws`` a warp's ``Lane`` (its clock, its open slice, its pending wait);
``st`` a block's ``Track`` state; ``info`` the ``Step`` facts of one instruction
(statement, cost class, stats row); times are cycles (floats).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from ..bytecode.module import BaseKind, Storage
from ..bytecode.opcodes import SPAN, TABLE, Mode
from ..core.dtypes import BY_CODE
from ..core.faults import Fault
from ..core.limits import NAMED_BARRIERS
from ..core.source import SpanTable
from ..interp.memory import view_of
from ..interp.sync import Waiting
from ..reports.blockview import BLOCKED
from .cost import CostModel

HOST_PID = 0
COPY_TID = 1000        # the first copy track of a block; warps are tids 0, 1, ...

_CLASS = {
    **dict.fromkeys(("IF", "ELSE", "LOOP", "BREAK_IF", "CONTINUE_IF", "END", "YIELD"),
                    "control"),
    "DIV": "divide", "MOD": "divide", "MATH": "math", "ATOMIC": "atomic",
    "SHFL_XOR": "shuffle", "PRINT": "print", "ASSERT": "print", "ASSERT_FMT": "print",
    **dict.fromkeys(("TRIGGER", "TRIGGER_CLUSTER", "WAIT_EVENT", "WAIT_EVENT_AT"), "event"),
    **dict.fromkeys(("WAIT", "FUT_BIND", "FUT_ANY", "SWAP", "FUT_DIM"), "future"),
    **dict.fromkeys(("BARRIER", "BAR_SYNC", "BAR_ARRIVE", "GRID_SYNC", "ONCE"), "barrier"),
    **dict.fromkeys(("NOP", "ALLOC", "FENCE", "SYNC_GLOBAL", "LAUNCH", "RET", "RET_VAL",
                     "RET_BUF", "ASM", "CALL_CXX", "DMA", "MMA_FILL", "MMA_LOAD", "MMA_EXEC",
                     "MMA_STORE", "MMA_STORE_MASK", "MMA_ASYNC", "MMA_WAIT", "MMA_GATHER",
                     "FRAG_GET", "FRAG_SET"), "other"),
}
_MEMORY = {"LOAD", "STORE", "UPDATE", "FILL"}   # by the storage of what they name
_STORAGE = {Storage.LOCAL: "local", Storage.SHARED: "shared", Storage.GLOBAL: "global"}
# the steps that may wait or whose cost depends on what they do: the slow wrapper
_TIMED = {op.code for op in TABLE if op.blocks != Mode.NEVER or op.collective != Mode.NEVER
          or op.name in ("TRIGGER", "TRIGGER_CLUSTER", "DMA", "FUT_BIND", "LAUNCH",
                         "BAR_ARRIVE")}
_OP = {op.name: op.code for op in TABLE}
# arrivals at an event: a cluster-scope one is timed by its arrival in its own block
_TRIGGERS = (_OP["TRIGGER"], _OP["TRIGGER_CLUSTER"])
# the operations whose cost depends on what they move or compute (``Recorder._complete``)
_COSTED = {_OP[n] for n in ("DMA", "MMA_EXEC", "MMA_LOAD", "MMA_STORE", "MMA_STORE_MASK",
                            "MMA_FILL", "MMA_GATHER")}


@dataclass
class Slice:
    """A span of one track: a statement that ran (``kind`` "run", ``lanes`` active, their
    ``mask`` when not the whole warp), a wait (``kind`` "wait", named by what it waits
    for), a copy in flight ("copy") or a launch ("launch")."""
    pid: int
    tid: int
    name: str
    start: float
    end: float
    kind: str
    where: str = ""
    lanes: int = 0
    mask: str = ""


@dataclass
class Flow:
    """An arrow through ``points`` (pid, tid, time): a copy from its issue to its landing
    to the wait that consumes it, or a trigger to the wait it releases."""
    id: int
    name: str
    points: list


@dataclass
class StatRow:
    """One statement's totals: warp-steps, lane-instructions, the lane slots those steps
    had (warp width each), cycles run and cycles waited."""
    where: str
    text: str
    steps: int = 0
    lanes: int = 0
    slots: int = 0
    cycles: float = 0.0
    wait: float = 0.0

    @property
    def divergence(self) -> float:
        """The percentage of lane slots idle in this statement's steps."""
        return 100.0 * (self.slots - self.lanes) / self.slots if self.slots else 0.0


class Trace:
    """A run's timeline: slices, flows, the names of processes (blocks, the host) and
    threads (warps, copy tracks), the statements' totals and the cost model's clock; the
    call's result, or the runtime error it stopped with (``error``, the KernelFault;
    croqvm.trace.record). ``slices`` may be given as a function that makes the list: it
    is called when they are first read (a native trace keeps them as columns till then)."""

    def __init__(self, slices, flows: list, processes: dict, threads: dict, stats: list,
                 clock_ghz: float, result=None, error=None):
        self._slices = slices
        self.flows, self.processes, self.threads, self.stats = flows, processes, threads, stats
        self.clock_ghz, self.result, self.error = clock_ghz, result, error

    @property
    def slices(self) -> list:
        if callable(self._slices):
            self._slices = self._slices()
        return self._slices

    @property
    def end(self) -> float:
        """When the last slice ends (cycles; 0 without slices)."""
        return max((s.end for s in self.slices), default=0.0)

    def first(self, kind: str):
        """The first slice of ``kind`` (``Slice.kind``), or None."""
        return next((s for s in self.slices if s.kind == kind), None)

    def overlap(self, a, b) -> float:
        """Cycles during which some slice ``a`` selects and some slice ``b`` selects both
        run (``a`` and ``b`` predicates on ``Slice``): e.g. a producer's copies and a
        consumer's MMAs."""
        xs, ys = _union(self.slices, a), _union(self.slices, b)
        total, i, j = 0.0, 0, 0
        while i < len(xs) and j < len(ys):
            total += max(0.0, min(xs[i][1], ys[j][1]) - max(xs[i][0], ys[j][0]))
            if xs[i][1] < ys[j][1]:
                i += 1
            else:
                j += 1
        return total


def _union(slices, chosen) -> list:
    """The time the slices ``chosen`` selects cover, as sorted disjoint intervals."""
    out = []
    for start, end in sorted((s.start, s.end) for s in slices if chosen(s) and s.end > s.start):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


class Step:
    """What the recorder knows of one instruction before it runs."""
    __slots__ = ("pc", "op", "name", "where", "cost", "stat", "line")

    def __init__(self, pc, op, name, where, cost, stat, line):
        self.pc, self.op, self.name, self.where = pc, op, name, where
        self.cost, self.stat, self.line = cost, stat, line


class Lane:
    """A warp's clock and open slice: [step, start, end, mask, lanes]; ``pending`` a wait
    the warp blocked in, resolved when it next runs or its block ends."""
    __slots__ = ("pid", "tid", "width", "clock", "open", "pending")

    def __init__(self, pid, tid, width, clock):
        self.pid, self.tid, self.width, self.clock = pid, tid, width, clock
        self.open = None
        self.pending = None


@dataclass
class Track:
    """A block's timeline state."""
    pid: int
    code: object                                  # the bytecode Code it runs
    start: float
    warps: list
    gens: dict = field(default_factory=dict)      # (event, slot) -> [(time, flow source)]
    partial: dict = field(default_factory=dict)   # (event, slot) -> (time, source)
    bars: dict = field(default_factory=dict)      # (barrier, phase) -> latest arrival
    released: dict = field(default_factory=dict)  # (barrier, phase) -> release time
    engine: float = 0.0                           # when the block's copy engine is free
    copy_ends: list = field(default_factory=list)  # per copy track, its last copy's end


class Recorder:
    """The tracing hook of one call: ``instrument`` wraps step tables; ``trace`` gives
    what was recorded."""

    def __init__(self, module, cost: CostModel):
        self.cost = cost
        self.spans = SpanTable(module.sources, module.spans, module.calls)
        self.slices: list = []
        self.flows: list = []
        self.processes = {HOST_PID: "host"}
        self.threads = {(HOST_PID, 0): "host program"}
        self.rows: dict = {}
        self.blk = None
        self.cur = None
        self.tracks: dict = {}
        self.launch = (0, 0.0)        # (launches started, when their blocks start)
        self.coll = weakref.WeakKeyDictionary()     # Rendezvous -> latest arrival
        self.coll_done = weakref.WeakKeyDictionary()  # Rendezvous -> (release, done)
        self.landing = weakref.WeakKeyDictionary()  # Handle -> (landing time, flow)

    # ------------------------------------------------------------------ the hook

    def instrument(self, prog, steps: list) -> list:
        out = []
        for pc, (ins, (handler, operands)) in enumerate(zip(prog.ins, steps)):
            info = self._step_info(prog, pc, ins)
            wrap = self._timed if ins[0] in _TIMED else self._plain
            out.append((wrap(handler, info), operands))
        return out

    def _plain(self, handler, info):
        def step(w, operands):
            if w.blk is not self.blk:
                self._enter(w.blk)
            ws = self.cur.warps[w.index]
            if ws.pending is not None:
                self._resume(ws)
            nact, act = w.nact, w.act
            handler(w, operands)
            self._run(ws, info, ws.clock, info.cost, nact, act)
        return step

    def _timed(self, handler, info):
        def step(w, operands):
            if w.blk is not self.blk:
                self._enter(w.blk)
            ws = self.cur.warps[w.index]
            if ws.pending is not None:
                self._resume(ws)
            if info.op == _OP["LAUNCH"]:
                self._launch(ws, w, handler, operands, info)
                return
            self._sync(ws, w, handler, operands, info)
        return step

    # ------------------------------------------------------------------ statements

    def _step_info(self, prog, pc, ins) -> Step:
        code, op = prog.code, TABLE[ins[0]]
        cls = _CLASS.get(op.name, "alu")
        if op.name in _MEMORY:
            cls = _STORAGE[self._storage(code, op, ins)]
        span = self.spans.span(ins[SPAN])
        key = (span.file, span.line) if span else ("?", 0)
        row = self.rows.get(key)
        if row is None:
            text = self._text(span)
            row = self.rows[key] = StatRow(f"{key[0]}:{key[1]}", text)
        return Step(pc, ins[0], row.text, row.where, float(self.cost.cycles[cls]), row, key)

    @staticmethod
    def _storage(code, op, ins) -> Storage:
        """Where the element access or buffer a memory instruction names lives."""
        if "a" in op.operands:
            acc = code.accesses[ins[1 + op.operands.index("a")]]
            decls = code.buffers if acc.base_kind == BaseKind.BUF else code.futures
            return decls[acc.base].storage
        return code.buffers[ins[1 + op.operands.index("b")]].storage

    def _where(self, index) -> str:
        span = self.spans.span(index)
        return f"{span.file}:{span.line}" if span else "?"

    def _text(self, span) -> str:
        if span is None:
            return "?"
        src = self.spans.files.get(span.file)
        lines = src.text.split("\n") if src else []
        text = lines[span.line - 1] if 1 <= span.line <= len(lines) else ""
        return text.split("//")[0].strip() or f"line {span.line}"

    def _run(self, ws, info, start, cost, nact, act) -> None:
        """``info``'s instruction ran from ``start`` for ``cost`` cycles on ``nact`` lanes
        (mask ``act``): extend the warp's open slice when it is the same statement on the
        same lanes right before, else open a new one."""
        row = info.stat
        row.steps += 1
        row.lanes += nact
        row.slots += ws.width
        row.cycles += cost
        end = start + cost
        o = ws.open
        if o is not None and o[0].line == info.line and o[2] == start and \
                (o[3] is act or (o[4] == nact and (nact == ws.width
                                                   or np.array_equal(o[3], act)))):
            o[2] = end
        else:
            if o is not None:
                self._close(ws)
            ws.open = [info, start, end, act, nact]
        ws.clock = end

    def _close(self, ws) -> None:
        info, start, end, act, nact = ws.open
        ws.open = None
        mask = "" if nact == ws.width else \
            hex(sum(1 << int(i) for i in np.flatnonzero(act)))
        self.slices.append(Slice(ws.pid, ws.tid, info.name, start, end, "run", info.where,
                                 nact, mask))

    def _wait(self, ws, info, start, end, what: str, stopped: bool = False) -> None:
        """A wait from ``start`` to ``end``: none when it takes no time, but for a warp
        still waiting when the run ``stopped`` (the warp that blocked last waits to its
        own clock: the slice still says it waits)."""
        if end < start or end == start and not stopped:
            return
        if ws.open is not None:
            self._close(ws)
        self.slices.append(Slice(ws.pid, ws.tid, what, start, end, "wait", info.where))
        info.stat.wait += end - start
        ws.clock = end

    # ------------------------------------------------------------------ blocks

    def _enter(self, blk) -> None:
        self.blk = blk
        if blk.is_host:
            key = HOST_PID
            if key not in self.tracks:
                self.tracks[key] = Track(HOST_PID, blk.prog.code, 0.0,
                                         [Lane(HOST_PID, 0, 1, 0.0)])
        else:
            key = (self.launch[0], blk.number)
            if key not in self.tracks:
                pid = len(self.processes)
                index = ", ".join(map(str, blk.index))
                self.processes[pid] = f"block ({index}) of launch {self.launch[0]}"
                start = self.launch[1]
                lanes = []
                for w in blk.warps:
                    lanes.append(Lane(pid, w.index, w.width, start))
                    self.threads[(pid, w.index)] = f"warp {w.index}"
                self.tracks[key] = Track(pid, blk.prog.code, start, lanes, engine=start)
        self.cur = self.tracks[key]

    def _launch(self, ws, w, handler, operands, info) -> None:
        """A launch: its blocks start ``launch`` cycles after the host reaches it (every
        block on its own SM), and the host goes on when the last of them ends."""
        start = ws.clock
        n, _ = self.launch
        self.launch = (n + 1, start + self.cost.cycles["launch"])
        first = len(self.processes)
        host = self.cur
        handler(w, operands)
        end = self.launch[1]
        for key in [k for k in self.tracks if k != HOST_PID and k[0] == n + 1]:
            end = max(end, self._end_block(self.tracks.pop(key)))
        self.blk, self.cur = w.blk, host
        if ws.open is not None:
            self._close(ws)
        blocks = len(self.processes) - first
        self.slices.append(Slice(HOST_PID, 0, f"launch: {info.name}", start, end, "launch",
                                 info.where, blocks))
        info.stat.steps += 1          # its blocks' time is theirs, not the statement's
        info.stat.lanes += 1
        info.stat.slots += 1
        ws.clock = end

    def _end_block(self, st) -> float:
        """Close a block's tracks: resolve waits a warp ended in; the block's end."""
        end = st.start
        self.blk, self.cur = None, st
        for ws in st.warps:
            if ws.pending is not None:
                self._resume(ws)
            if ws.open is not None:
                self._close(ws)
            end = max(end, ws.clock)
        return end

    def finish(self, stopped: bool = False) -> None:
        """The run ended: close what is open (the host's track; when it ``stopped`` with a
        runtime error, the blocks it stopped in, whose waiting warps wait to the end)."""
        for st in self.tracks.values():
            if stopped:
                end = max(ws.clock for ws in st.warps)
                for ws in st.warps:
                    if ws.pending is not None:
                        info, t = ws.pending[1], ws.pending[2]
                        ws.pending = None
                        self._wait(ws, info, t, end, f"still waiting when the run stopped: "
                                                     f"{info.name}", stopped=True)
            self._end_block(st)
        self.tracks = {}

    def trace(self, result=None, error=None) -> Trace:
        return Trace(self.slices, self.flows, self.processes, self.threads,
                     list(self.rows.values()), self.cost.clock_ghz, result, error)

    # ------------------------------------------------------------------ waits

    def _sync(self, ws, w, handler, operands, info) -> None:
        """A step that may wait, or whose cost depends on what it does."""
        blk, op = w.blk, info.op
        t, nact, act = ws.clock, w.nact, w.act
        ins = blk.prog.ins[info.pc]
        opened = [r for k, r in blk.rendezvous.items() if k[0] == info.pc]
        pre = self._before(w, blk, ins, op)
        handler(w, operands)
        blocker = w.blocker if w.state == BLOCKED else None
        mine = blocker.recs if isinstance(blocker, Waiting) else []
        for rec in mine:
            self.coll[rec] = max(self.coll.get(rec, t), t)
        completed = [r for r in dict.fromkeys(opened + list(mine))
                     if r.done and r not in self.coll_done]
        for rec in completed:
            release = max(self.coll.pop(rec, t), t)
            lanes = np.flatnonzero(rec.arrived & blk.live)
            self.coll_done[rec] = (release, self._complete(blk, lanes, ins, op, release))
        alone = None        # a collective of this warp alone, or an operation without a site
        if blocker is None and not completed and op in _COSTED:
            alone = (t, self._complete(blk, w.lanes[act], ins, op, t))
        if op in (_OP["BAR_SYNC"], _OP["BAR_ARRIVE"]) and pre is not None:
            self._arrived(blk, pre, t)
        wait = (ins, info, t, nact, act, list(mine), pre, opened, alone)
        if blocker is not None:
            ws.pending = wait
            return
        self._settle(ws, wait)

    def _resume(self, ws) -> None:
        wait, ws.pending = ws.pending, None
        self._settle(ws, wait)

    def _settle(self, ws, wait) -> None:
        """The wait of a step is over (the interpreter ran what released it): place the
        wait and the step on the warp's clock."""
        ins, info, t, nact, act, mine, pre, opened, alone = wait
        op = info.op
        release, done, what = t, t + info.cost, ""
        recs = mine or [r for r in opened if r.done]
        times = [self.coll_done[r] for r in recs if r in self.coll_done] or \
            ([alone] if alone else [])
        code = self.cur.code
        if times:
            release = max(x[0] for x in times)
            done = max(x[1] for x in times)
            what = code.colls[recs[0].coll].text if recs else ""
        flow = None           # (name, the points before the waiter) of the flow it ends
        if op in (_OP["WAIT_EVENT"], _OP["WAIT_EVENT_AT"]):
            when, flow = self._generation(pre)
            if when > release:
                release, done = when, when + info.cost
            ev = code.events[ins[1]]
            what = f"{ev.name}[{pre[0][1]}]" if len(pre) == 1 else ev.name
        elif op in (_OP["WAIT"], _OP["FUT_BIND"]):
            landed = [self.landing[h] for h in pre if h in self.landing]
            if landed:
                when, flow = max(landed, key=lambda x: x[0])
                if when > release:
                    done += when - release
                    release = when
            what = code.futures[ins[1]].name
        elif op in (_OP["BAR_SYNC"], _OP["BAR_ARRIVE"]) and pre is not None:
            if op == _OP["BAR_SYNC"] and pre in self.cur.released:
                release = max(t, self.cur.released[pre])
                done = release + info.cost
            what = f"named barrier {pre[0]}"
        self._wait(ws, info, t, release, f"wait {what}".rstrip())
        if flow is not None:
            self.flows.append(Flow(len(self.flows), flow[0],
                                   flow[1] + [(ws.pid, ws.tid, release)]))
        self._run(ws, info, release, done - release, nact, act)
        if op in _TRIGGERS:
            self._triggered(ws, pre, release, done)

    def _triggered(self, ws, pre, start, done) -> None:
        """The warp's lanes arrived at their slots at ``done``: a generation completes
        at the latest arrival that counts toward it."""
        ev, before, slots = pre
        st = self.cur
        mine = (done, (ws.pid, ws.tid, start))
        for s in slots.tolist():
            if not 0 <= s < ev.decl.slots:
                continue
            key = (ev.index, s)
            gens = self._gens(st, ev.index, s)
            latest = max(st.partial.get(key, mine), mine, key=lambda x: x[0])
            completed = int(ev.completed[s] - before[s])
            gens.extend([latest] * completed)
            if ev.arrivals[s]:
                st.partial[key] = mine if completed else latest
            else:
                st.partial.pop(key, None)

    def _arrived(self, blk, key, when) -> None:
        """A warp arrived at a named barrier's phase ``key`` at ``when``; the phase is
        released at its latest arrival once the interpreter completed it."""
        st = self.cur
        index, phase = key
        st.bars[key] = max(st.bars.get(key, when), when)
        if blk.named[index].phases > phase:
            st.released[key] = st.bars.pop(key)

    def _before(self, w, blk, ins, op):
        """What a step's timing needs from the state before it runs."""
        if op in _TRIGGERS:
            ev = blk.events[ins[1]]
            return ev, ev.completed.copy(), np.unique(w.regs[ins[2]][w.act])
        if op in (_OP["WAIT_EVENT"], _OP["WAIT_EVENT_AT"]):
            ev = blk.events[ins[1]]
            n = ev.decl.slots
            values = w.regs[ins[2]][w.act].astype(np.int64)
            if values.size == 0 or values.min() < 0 or \
                    (op == _OP["WAIT_EVENT"] and values.max() >= n):
                return []
            if op == _OP["WAIT_EVENT"]:
                slots, need = values, ev.waits[w.lanes[w.act], values] + 1
            else:
                slots, need = values % n, values // n + 1
            return sorted({(ins[1], int(s), int(c)) for s, c in zip(slots, need)})
        if op in (_OP["WAIT"], _OP["FUT_BIND"]):
            futs = blk.futures[ins[1]]
            return {id(h): h for h in (futs[lane] for lane in w.lanes[w.act].tolist())
                    if h is not None}.values()
        if op in (_OP["BAR_SYNC"], _OP["BAR_ARRIVE"]):
            active = w.active_indices()
            if not active.size:
                return None
            index = int(w.regs[ins[1]][active[0]])
            if not 1 <= index < NAMED_BARRIERS:
                return None
            return (index, blk.named[index].phases)
        return None

    def _generation(self, needs):
        """When the generations ``needs`` (event, slot, count) completed: the latest, and
        the flow from the trigger that completed it."""
        st, best = self.cur, (-1.0, None)
        for ev, slot, count in needs:
            gens = self._gens(st, ev, slot)
            if gens:
                best = max(best, gens[min(count, len(gens)) - 1], key=lambda x: x[0])
        when, source = best
        return when, None if source is None else ("trigger", [source])

    def _gens(self, st, ev, slot) -> list:
        gens = st.gens.get((ev, slot))
        if gens is None:
            ready = st.code.events[ev].ready
            gens = st.gens[(ev, slot)] = [(st.start, None)] if ready else []
        return gens

    # ------------------------------------------------------------------ what steps do

    def _complete(self, blk, lanes, ins, op, release) -> float:
        """A collective of block lanes ``lanes`` completed, its last participant arriving
        at ``release`` (or an operation without a site ran on them): when it is done (its
        rendezvous and its operation's cost)."""
        barrier = self.cost.cycles["barrier"]
        if not lanes.size:
            return release + barrier
        lane = int(lanes[0])
        code = blk.prog.code
        if op == _OP["MMA_EXEC"]:
            acc, a = self._frag(blk, ins[1], lane), self._frag(blk, ins[2], lane)
            k = a.shape[1] if ins[4] in (0, 1) else a.shape[0]
            unit = code.frags[ins[1]].unit
            return release + barrier + self.cost.mma_cycles(
                max(acc.shape[0], 1), max(acc.shape[1], 1), max(k, 1), a.dtype.name, unit)
        if op in (_OP["MMA_LOAD"], _OP["MMA_STORE"], _OP["MMA_STORE_MASK"],
                  _OP["MMA_FILL"], _OP["MMA_GATHER"]):
            f = self._frag(blk, ins[1], lane)
            elems = max(f.shape[0], 1) * max(f.shape[1], 1)
            return release + barrier + self.cost.move_cycles(elems * f.dtype.bits / 8)
        if op == _OP["DMA"]:       # a collective's lanes issue one copy, others one each
            issuing = lanes[:1] if ins[2] >= 0 else lanes
            return self._issue(blk, ins, lanes, release, self._dma_bytes(blk, ins, issuing))
        return release + barrier

    @staticmethod
    def _frag(blk, m, lane):
        unit = blk.prog.code.frags[m].unit
        frag = blk.frags.get((m, lane // unit if unit > 0 else 0))
        if frag is None:
            decl = blk.prog.code.frags[m]
            return _Shape((decl.rows, decl.cols), BY_CODE[decl.dtype])
        return frag

    def _dma_bytes(self, blk, ins, lanes) -> float:
        """The bytes the copies ``lanes`` issue move: the first lane's source view, once
        per lane."""
        desc = blk.prog.code.dmas[ins[1]]
        if not len(lanes):
            return 0.0
        w, i = blk.warp_of(int(lanes[0]))
        try:
            buf, _, extents = view_of(w, desc.src, i)
        except Fault:
            return 0.0         # the DMA itself reports it
        return float(np.prod(extents)) * buf.dtype.bits / 8 * len(lanes)

    def _issue(self, blk, ins, lanes, release, nbytes) -> float:
        """A copy of ``nbytes`` issued at ``release`` on the block's copy engine: an async
        one's landing goes with its future's handle, and its issuer goes on; a sync one's
        issuer waits for it. Returns when the issuer is done."""
        desc = blk.prog.code.dmas[ins[1]]
        st = self.cur
        busy, latency = self.cost.copy_cycles(nbytes, desc.tma)
        begin = max(release, st.engine)
        st.engine = begin + busy
        land = begin + busy + latency
        tid = next((k for k, e in enumerate(st.copy_ends) if e <= release), None)
        if tid is None:
            tid = len(st.copy_ends)
            st.copy_ends.append(0.0)
            self.threads[(st.pid, COPY_TID + tid)] = "copies" if tid == 0 else f"copies {tid}"
        st.copy_ends[tid] = land
        kind = "tma" if desc.tma else "dma"
        self.slices.append(Slice(st.pid, COPY_TID + tid, f"{desc.text} ({int(nbytes)} B)",
                                 release, land, "copy", self._where(ins[SPAN]),
                                 len(lanes)))
        barrier = self.cost.cycles["barrier"]
        if not (desc.is_async and desc.future >= 0):
            return land + barrier
        issuer, _ = blk.warp_of(int(lanes[0]))
        flow = (kind, [(st.pid, issuer.index, release), (st.pid, COPY_TID + tid, land)])
        futs = blk.futures[desc.future]
        for handle in {id(futs[lane]): futs[lane] for lane in lanes.tolist()}.values():
            if handle is not None:
                self.landing[handle] = (land, flow)
        return release + barrier


@dataclass
class _Shape:
    """A fragment not created yet: its declared shape and type."""
    shape: tuple
    dtype: object
