"""Race checking on the reference engine: ``check="race"`` (LANGUAGE.md §7.5;
docs/EXECUTION.md §20).

The checker follows the run as it happens and keeps a happens-before order of the memory
accesses with vector clocks, one per warp of the running block (``Clocks``): a warp's
lanes run in lockstep, so its accesses are ordered by its instruction order; a
rendezvous (a barrier or any other collective) joins the clocks of the warps taking part;
a trigger releases its warp's clock into the event generation its arrival belongs to, and
a wait acquires the generations it consumes (a cluster-scope trigger, §10.8, releases into
its own block's generation only: the clocks of other blocks are not the warp's to order,
so what blocks of a cluster tell each other through global memory stays unordered, as
between any blocks of a launch); an async copy bound to a trigger (``trigger e
after f``, §10.7) completes for a warp when that warp acquires the generation the trigger
arrived at, never for the binding warp itself; the lane that performs an outer-level
effect (ONCE) publishes its clock for the lanes that pass the same execution of the site
later; an async copy reads its source and writes its destination from its issue until
its wait, and an asynchronous MMA reads its view operands from its issue until its wait.
Global memory outlives blocks: an access there also carries its *segment*, the
block (or stretch of host code) that made it, and segments are ordered by launches: the
blocks of one launch are concurrent with each other, a launch is ordered after
everything before it, and an asynchronous launch is concurrent with what follows it until
a ``sync.global`` or a synchronous launch. Each buffer instance has a ``Shadow``
(croqvm.interp.shadow) checked and updated for a whole warp's access, or a whole tile, at
once.

A conflict is kept as a ``Race`` (once per pair of statements) and the run goes on; the
races are reported together when the function returns or stops (croqvm.interp.racereport).

Conventions: ``st`` the running block's ``Clocks``; ``x`` and ``w`` warp indices in it;
``c`` a clock value; a *site* is an instruction of a code together with the kind of
access it makes (``Site``); ``info`` identifies an access in a shadow: ``site << 10 |
lane`` for one lane's element access, ``-(record + 1)`` for a collective's.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from ..bytecode import opcodes
from ..bytecode.module import Storage
from ..bytecode.opcodes import SPAN
from ..core import dtypes
from ..core.faults import LaneFault
from ..core.limits import WARP_SIZE
from .access import LOCATED
from .checks import Access, Checker
from .memory import Reshaped, Strided, distinct, locate
from .shadow import MAX_WARPS, Actor, Box, Flat, Shadow
from .warp import BLOCKED

LANE_BITS = 10                 # a block lane in ``info``: lanes < MAX_BLOCK_SIZE = 1024
NO_EVENT = -1                  # ``Clocks.src``: what last raised a clock entry is no event
FOREVER = 1 << 62              # the end of a launch still running (a segment range)


@dataclass(frozen=True)
class Site:
    """An instruction that accesses memory: ``code`` -1 for the host program, else the
    kernel index; ``ip`` its index; ``kind`` the access; ``text`` the statement text that
    names a copy or a tile operation ("" for element accesses); ``is_async``: an async copy.
    ``once``: the ONCE site of the outer-level statement it belongs to (§7.2.2), for an
    access in its effect block or before its ONCE, else -1."""
    code: int
    ip: int
    span: int
    kind: str
    text: str = ""
    is_async: bool = False
    once: int = -1


@dataclass
class Who:
    """The lanes of one dynamic access: its segment and lanes (block lanes);
    ``collective``: the lanes of a collective (or one lane's copy or tile), not one
    lane per element."""
    seq: int
    lanes: np.ndarray
    collective: bool = False


@dataclass
class Copy:
    """An async copy (§9.5.3): issued by ``who`` at ``site``; its source and destination
    (shadow, buffer, box); ``waited`` the span of the first wait, and ``done`` the (warp,
    clock) its accesses were recorded at then."""
    site_read: int
    site_write: int
    who: Who
    src: tuple
    dst: tuple
    waited: int | None = None
    done: tuple | None = None
    is_mma: bool = False          # an asynchronous MMA's read of one operand tile (§11.5)


@dataclass
class Gen:
    """One generation of an event slot: the join of its triggers' clocks and, per
    triggering warp, the trigger's span and clock (for reports)."""
    vc: np.ndarray = field(default_factory=lambda: np.zeros(MAX_WARPS, np.int64))
    triggers: dict = field(default_factory=dict)     # warp -> (span, clock)
    slot: tuple = ()              # (event, slot) as croqvm.reports.messages writes it
    id: int = -1
    copies: list = field(default_factory=list)       # handles of the bound async copies


@dataclass
class Race:
    """Two conflicting accesses: ``first`` before ``second`` in the run, neither ordered
    before the other. Each is (site, Who); ``why`` says what fails to order them (a tuple:
    a croqvm.reports.messages report name and its arguments, or a ``Copy`` whose wait is not known
    yet); ``buffer`` the buffer's ref, ``storage`` its storage, ``element`` the first
    conflicting element; ``same_instruction`` for lanes of one warp in one instruction."""
    buffer: tuple
    storage: Storage
    element: tuple
    first: tuple
    second: tuple
    why: object
    same_instruction: bool = False


class Clocks:
    """The happens-before state of one block (or of the host program)."""

    def __init__(self, nwarps: int, seq: int, ranges: list):
        self.seq, self.ranges = seq, ranges
        self.vc = np.zeros((nwarps, MAX_WARPS), np.int64)
        self.vc[np.arange(nwarps), np.arange(nwarps)] = 1
        self.src_gen = np.full((nwarps, MAX_WARPS), NO_EVENT, np.int64)
        self.src_wait = np.zeros((nwarps, MAX_WARPS), np.int64)
        self.actors = [Actor(seq, x, self.vc[x], ranges) for x in range(nwarps)]
        self.triggers = [[] for _ in range(nwarps)]   # per warp, clocks of its triggers
        self.gens: dict = {}          # (event, slot) -> {generation: Gen}
        self.published: dict = {}     # (site, unit instance, execution) -> (warp, clock vector)
        self.tick_at: dict = {}       # warp -> the effect-block END after which it ticks
        self.coll = None              # the collective whose effect runs: (Actor, lanes, ip)
        self.lane_copies = (None, [])  # ((warp, step), [(buffer, box, lane)]): per-lane DMAs
        self.copies: dict = {}        # id(transfer) -> (Copy, the transfer) of async copies
        self.bound = [[] for _ in range(nwarps)]      # per warp, handles FUT_BIND gave it
        self.bars: dict = {}          # (named barrier, phase) -> join of its arrivals' clocks
        self.mma_loads: dict = {}     # (lane, ip) -> (buffer, origin, extents) of an mma.load
        self.mma_flights: dict = {}   # (accumulator, lane) -> [Copy] of async MMAs

    def join(self, warps: np.ndarray) -> None:
        """A rendezvous of ``warps``: each takes the join of their clocks."""
        joined = self.vc[warps].max(axis=0)
        raised = joined[None, :] > self.vc[warps]
        self.src_gen[warps] = np.where(raised, NO_EVENT, self.src_gen[warps])
        self.vc[warps] = joined

    def acquire(self, x: int, vc: np.ndarray, gen: int, wait_span: int) -> None:
        raised = vc > self.vc[x]
        if raised.any():
            self.src_gen[x][raised] = gen
            self.src_wait[x][raised] = wait_span
            np.maximum(self.vc[x], vc, out=self.vc[x])

    def tick(self, warps) -> None:
        self.vc[warps, warps] += 1


class RaceChecker(Checker):
    """The ``check="race"`` checker of one call (croqvm.interp.checks explains the hooks)."""

    def __init__(self, call):
        self.call = call
        self.sites: list[Site] = []
        self._site_index: dict = {}
        self.records: list[tuple] = []        # (site, Who) of tile and copy accesses
        self.segments: list[tuple] = []       # seq -> (launch index, block index)
        self.gens: list[Gen] = []             # every event generation, by id
        self.races: dict = {}                 # (site, site) -> Race
        self.pending: list = []               # (segment range, stream) of launches running
        self.launch = None                    # (first segment, ranges) of the running launch
        self.host = None                      # the host program's Clocks

    def instrument(self, prog, steps: list) -> list:
        return instrument(self, prog, steps)

    # ------------------------------------------------------------------ blocks and launches

    def _new_seq(self, launch: int, index: tuple) -> int:
        self.segments.append((launch, index))
        return len(self.segments) - 1

    def clocks(self, blk) -> Clocks:
        """The block's happens-before state, made when it first acts."""
        st = blk.check_state
        if st is None:
            if blk.is_host:
                st = self.host = Clocks(1, self._new_seq(-1, ()), [])
            else:
                first, ranges = self.launch
                st = Clocks(len(blk.warps), self._new_seq(blk.launch_index, blk.index),
                            [(first, FOREVER)] + ranges)
            blk.check_state = st
        return st

    def launch_begin(self, hblk, index: int) -> None:
        """A synchronous launch on the default stream waits for every earlier launch; a
        launch on stream s starts after the earlier launches on s; an async launch of the
        default stream runs concurrently with the launches still running."""
        launch = hblk.prog.code.launches[index]
        if not launch.is_async and launch.stream < 0:
            self.pending = []
        if launch.stream >= 0:
            self.pending = [p for p in self.pending if p[1] != launch.stream]
        self.launch = (len(self.segments), [r for r, _ in self.pending])

    def launch_end(self, hblk, index: int) -> None:
        """The host goes on at once after an async launch; after ``parallel<s>`` it has
        waited for stream s only, which the launch began by emptying."""
        first, _ = self.launch
        launch = hblk.prog.code.launches[index]
        if launch.is_async:
            self.pending.append(((first, len(self.segments) - 1), launch.stream))
        self._host_resumes(hblk)

    def grid_released(self, blocks) -> None:
        """The grid barrier of a cooperative launch released ``blocks``, every block of
        the launch (§7.1.4): what any of them did before it is ordered before what any
        does after it. Each goes on in a new segment, concurrent only with the segments
        from the first of these on and with the async launches still running."""
        first = len(self.segments)
        _, pending = self.launch
        for blk in blocks:
            st = self.clocks(blk)
            st.seq = self._new_seq(blk.launch_index, blk.index)
            st.ranges = [(first, FOREVER)] + pending
            st.actors = [Actor(st.seq, x, st.vc[x], st.ranges) for x in range(len(st.actors))]

    def sync_global(self, hblk) -> None:
        self.pending = []
        self._host_resumes(hblk)

    def _host_resumes(self, hblk) -> None:
        """The host program goes on after a launch: a new segment, concurrent with the
        async launches still running."""
        st = self.clocks(hblk)
        st.seq = self._new_seq(-1, ())
        st.ranges = [r for r, _ in self.pending]
        st.actors = [Actor(st.seq, 0, st.vc[0], st.ranges)]

    # ------------------------------------------------------------------ sites and records

    def site(self, blk, ip: int, kind: str, text: str = "", is_async: bool = False) -> int:
        key = (blk.kernel_index, ip, kind)
        n = self._site_index.get(key)
        if n is None:
            n = self._site_index[key] = len(self.sites)
            self.sites.append(Site(blk.kernel_index, ip, blk.prog.ins[ip][SPAN], kind, text,
                                   is_async, statement_once(blk.prog, ip)))
        return n

    def _record(self, site: int, who: Who) -> int:
        self.records.append((site, who))
        return -len(self.records)

    def who(self, info: int, seq: int) -> tuple:
        """(site, Who) of the access ``info`` of segment ``seq`` (lanes: just its own)."""
        if info < 0:
            return self.records[-info - 1]
        site, lane = divmod(int(info), 1 << LANE_BITS)
        return site, Who(seq, np.array([lane]))

    # ------------------------------------------------------------------ synchronisation

    def collective(self, rec, lanes: np.ndarray) -> None:
        """A rendezvous completes: its warps join their clocks; its effect's accesses are
        the lowest participant's warp's, at the joined clock."""
        st = self.clocks(rec.blk)
        warps = np.unique(lanes // WARP_SIZE)
        st.join(warps)
        st.coll = (st.actors[int(warps[0])], lanes, rec.ip, warps)

    def collective_done(self, rec, lanes: np.ndarray) -> None:
        st = self.clocks(rec.blk)
        st.tick(st.coll[3])
        st.coll = None

    def trigger(self, w, ins, before: tuple) -> None:
        """The active lanes of ``w`` arrived at event ``ins[1]``: ``before`` is the slot's
        (completed, arrivals) before them; each arrival belongs to generation
        completed + arrivals // need, counted in lane order (§10.3)."""
        blk = w.blk
        ev = blk.events[ins[1]]
        if ev.need <= 0:
            return
        st = self.clocks(blk)
        x = w.index
        completed, arrivals = before
        slots = w.regs[ins[2]][w.act].astype(np.int64)
        for s in np.unique(slots):
            n = int(np.count_nonzero(slots == s))
            first = int(completed[s]) + int(arrivals[s]) // ev.need
            last = int(completed[s]) + (int(arrivals[s]) + n - 1) // ev.need
            for g in range(first, last + 1):
                gen = self._gen(st, ev, int(s), g)
                np.maximum(gen.vc, st.vc[x], out=gen.vc)
                gen.triggers[x] = (ins[SPAN], int(st.vc[x][x]))
                gen.copies += [h for h in st.bound[x] if h not in gen.copies]
        st.bound[x] = []
        st.triggers[x].append(int(st.vc[x][x]))
        st.tick([x])

    def _gen(self, st, ev, s: int, g: int) -> Gen:
        gens = st.gens.setdefault((ev.index, s), {})
        gen = gens.get(g)
        if gen is None:
            gen = gens[g] = Gen(slot=(ev.index, s))
            self.gens.append(gen)
            gen.id = len(self.gens) - 1
        return gen

    def waited_event(self, w, ins, consumed: np.ndarray, slots: np.ndarray) -> None:
        """The active lanes of ``w`` passed a wait: lane k consumed generation
        ``consumed[k]`` of slot ``slots[k]``."""
        blk = w.blk
        ev = blk.events[ins[1]]
        st = self.clocks(blk)
        for s, g in set(zip(slots.tolist(), consumed.tolist())):
            gen = st.gens.get((ev.index, s), {}).get(g)
            if gen is not None:           # else a `= ready` generation: nothing to acquire
                st.acquire(w.index, gen.vc, gen.id, ins[SPAN])
                for handle in gen.copies:   # the bound copies have landed for this warp
                    self.dma_wait(blk, handle, int(w.lanes[0]))

    def dma_bind(self, blk, handle, lane: int) -> None:
        """``trigger e after f``: the copy stays in flight for the binding warp; it is
        handed to the generation the warp's next trigger arrives at (§10.7)."""
        bound = self.clocks(blk).bound[lane // WARP_SIZE]
        if handle not in bound:
            bound.append(handle)

    def bar_arrived(self, w, index: int, phase: int) -> None:
        """``w`` arrived at phase ``phase`` of named barrier ``index``: its clock joins the
        phase's, which every BAR_SYNC of the phase acquires when the phase completes."""
        st = self.clocks(w.blk)
        x = w.index
        vc = st.bars.get((index, phase))
        if vc is None:
            vc = st.bars[(index, phase)] = np.zeros(MAX_WARPS, np.int64)
        np.maximum(vc, st.vc[x], out=vc)
        st.tick([x])

    def bar_passed(self, w, index: int, phase: int) -> None:
        """``w`` passed BAR_SYNC: what every arrival of its phase did before arriving is
        ordered before what it does next. An arrival orders nothing for its own warp."""
        st = self.clocks(w.blk)
        st.acquire(w.index, st.bars[(index, phase)], NO_EVENT, 0)

    def once(self, w, ins, claimed: np.ndarray, nth: np.ndarray, end: int) -> None:
        """After ONCE (§7.2.2): the claiming lanes publish their warp's clock for their
        execution, and their warp ticks after the effect block (``end``); the other
        lanes acquire what the claimer of their execution published."""
        st = self.clocks(w.blk)
        site, unit = ins[2], ins[3]
        lanes = w.lanes[w.act]
        units = lanes // unit if unit > 0 else np.zeros(lanes.size, np.int64)
        x = w.index
        for k in np.flatnonzero(claimed):
            st.published[(site, int(units[k]), int(nth[k]))] = (x, st.vc[x].copy())
            st.tick_at[x] = end
        rest = ~claimed
        if rest.any():
            for key in np.unique((units[rest] << 32) | nth[rest]).tolist():
                pub = st.published.get((site, key >> 32, key & 0xFFFFFFFF))
                if pub is not None and pub[0] != x:
                    st.acquire(x, pub[1], NO_EVENT, 0)

    def effect_end(self, w) -> None:
        st = self.clocks(w.blk)
        if st.tick_at.get(w.index) == w.ip:
            del st.tick_at[w.index]
            st.tick([w.index])

    # ------------------------------------------------------------------ accesses

    def _actor(self, st, lane: int) -> Actor:
        """Who performs an access of ``lane`` now: the collective whose effect runs, else
        the lane's warp."""
        return st.coll[0] if st.coll is not None else st.actors[lane // WARP_SIZE]

    def _ip(self, st, blk, lane: int) -> int:
        """The instruction making an access of ``lane`` now."""
        return st.coll[2] if st.coll is not None else blk.warp_of(lane)[0].ip

    def _who(self, st, lane: int) -> Who:
        lanes = st.coll[1] if st.coll is not None else np.array([lane])
        return Who(st.seq, lanes, collective=True)

    def _shadow(self, buf):
        """The buffer's shadow, made at its first checked access."""
        sh = buf.shadow
        if sh is None:
            storage = self.storage(buf)
            sh = buf.shadow = Shadow(buf.shape, storage == Storage.GLOBAL)
            sh.storage = storage
        return sh

    def storage(self, buf) -> Storage:
        """Where ``buf`` lives: host buffers (parameters included) are global."""
        code, slot, _ = buf.ref
        if code < 0:
            return Storage.GLOBAL
        return self.call.fn.kernels[code].code.buffers[slot].storage

    def elements(self, w, site: int, groups, olds, values, kind: str) -> None:
        """An element access (LOAD, STORE, UPDATE) at ``site`` by the active lanes of
        ``w`` that succeeded: ``groups`` what ``locate`` gave (buffer, lane indices,
        offsets); for a write ``olds`` the elements' values before it, and for a STORE
        ``values`` what each lane stored. A write that leaves an element as it was is no
        write: no read can tell whether it happened (the lanes of a level that store one
        value to one element, §7.2.1)."""
        blk = w.blk
        st = blk.check_state or self.clocks(blk)
        actor = st.actors[w.index]
        writes = kind not in (Access.READ, Access.ATOMIC)   # atomics of a warp never race
        for n, (buf, lanes, flat) in enumerate(groups):
            sh = buf.shadow
            if sh is None:
                if self.storage(buf) == Storage.LOCAL:
                    continue          # a lane's own buffer, no copy ever in flight there
                sh = self._shadow(buf)
            lanes = lanes + w.base
            if writes:
                changed = _bits(olds[n]) != _bits(buf.flat[flat])
                if len(flat) > 1 and not distinct(flat):
                    self._same_instruction(sh, buf, flat, Who(st.seq, lanes), values,
                                           changed, site)
                if not changed.all():
                    flat, lanes = flat[changed], lanes[changed]
                    if not len(flat):
                        continue
            key = Flat(flat)
            if sh.inflight:
                self._inflight(sh, buf, key, kind, site, Who(st.seq, lanes))
            if sh.storage == Storage.LOCAL:
                continue
            if sh.atomics is not None or kind == Access.ATOMIC:
                self._atomic(sh, buf, key, kind, site, Who(st.seq, lanes), st, actor)
                if kind == Access.ATOMIC:
                    continue
            prior = sh.after_writes(key, actor)
            if prior is not None:
                self._conflicts(sh, buf, key, prior, site, Who(st.seq, lanes), st, actor)
            if writes:
                prior = sh.after_reads(key, actor)
                if prior is not None:
                    self._conflicts(sh, buf, key, prior, site, Who(st.seq, lanes), st, actor)
                sh.wrote(key, actor, (site << LANE_BITS) | lanes)
            else:
                sh.read(key, actor, (site << LANE_BITS) | lanes)

    def _atomic(self, sh, buf, key, kind: str, site: int, who, st, actor) -> None:
        """Atomics (§4.5) are ordered among themselves: an atomic is checked against the
        other accesses and recorded apart (``Shadow.atomics``); any other access is
        checked against the atomics too."""
        if kind != Access.ATOMIC:
            prior = sh.atomics.after_reads(key, actor)
            if prior is not None:
                self._conflicts(sh, buf, key, prior, site, who, st, actor)
            return
        for prior in (sh.after_writes(key, actor), sh.after_reads(key, actor)):
            if prior is not None:
                self._conflicts(sh, buf, key, prior, site, who, st, actor)
        if sh.atomics is None:
            sh.atomics = Shadow(sh.shape, sh.glob)
        sh.atomics.read(key, actor, (site << LANE_BITS) | who.lanes)

    def tile(self, blk, buf, origin, extents, kind: str, lane: int, text: str = "",
             swizzle: int = 0) -> None:
        """A tile of ``buf`` (at ``origin``, ``extents``; the part in range; laid out by
        ``swizzle``) that a collective's effect (mma.load, mma.store, a copy, a fill) or
        lane ``lane`` reads or writes."""
        buf, key = _footprint(buf, origin, extents, swizzle)
        if key is None or (buf.shadow is None and self.storage(buf) == Storage.LOCAL):
            return
        st = self.clocks(blk)
        actor = self._actor(st, lane)
        site = self.site(blk, self._ip(st, blk, lane), kind, text)
        who = self._who(st, lane)
        sh = self._shadow(buf)
        if sh.inflight:
            self._inflight(sh, buf, key, kind, site, who)
        if sh.storage == Storage.LOCAL:
            return
        writes = kind in Access.WRITES
        if sh.atomics is not None:
            self._atomic(sh, buf, key, kind, site, who, st, actor)
        self._check(sh, buf, key, actor, site, who, st, writes=writes)
        (sh.wrote if writes else sh.read)(key, actor, self._record(site, who))
        if text == "mma.load":
            st.mma_loads[(lane, self._ip(st, blk, lane))] = (buf, key)

    # ------------------------------------------------------------------ asynchronous MMA

    def mma_async(self, blk, m: int, lane: int, text: str) -> None:
        """The unit instance of ``lane`` issued the MMAs on accumulator ``m`` just before
        (the statement's instructions): their view operands, loaded by the statement's
        own mma.loads, stay in flight until the wait (§11.5, LANGUAGE.md §7.5.4)."""
        st = self.clocks(blk)
        ip = self._ip(st, blk, lane)
        ins, span = blk.prog.ins, blk.prog.ins[ip][SPAN]
        site = self.site(blk, ip, Access.TILE_READ, text, True)
        flights = st.mma_flights.setdefault((m, lane), [])
        k = ip - 1
        while k >= 0 and ins[k][SPAN] == span:
            loaded = st.mma_loads.pop((lane, k), None) if ins[k][0] == opcodes.MMA_LOAD \
                else None
            if loaded is not None:
                buf, box = loaded
                sh = self._shadow(buf)
                copy = Copy(site, site, self._who(st, lane), (sh, buf, box),
                            (None, None, None), is_mma=True)
                sh.inflight.append((copy, Access.COPY_READ, box))
                flights.append(copy)
            k -= 1

    def mma_wait(self, blk, m: int, lane: int) -> None:
        """The wait of the operation future of accumulator ``m`` in ``lane``'s unit
        instance: the operand reads of its MMAs count from here."""
        st = self.clocks(blk)
        for copy in st.mma_flights.pop((m, lane), []):
            self._complete(blk, st, copy, lane)

    def _check(self, sh, buf, key, actor, site, who, st, *, writes: bool) -> None:
        """Conflicts of the current access with the earlier ones: writes, and reads too
        when the current access writes."""
        found = [sh.after_writes(key, actor)]
        if writes:
            found.append(sh.after_reads(key, actor))
        for prior in found:
            if prior is not None:
                self._conflicts(sh, buf, key, prior, site, who, st, actor)

    # ------------------------------------------------------------------ DMA

    def dma_issue(self, blk, desc, plan, lanes, handle) -> None:
        """A DMA issued by ``lanes`` (a collective's participants, or one lane): a
        synchronous copy reads and writes now; an async one from now until its wait."""
        lane = int(lanes[0])
        (src, so, _), (dst, do, dd) = plan.src, plan.dst
        se = plan.read_extents()
        swz_src, swz_dst = plan.swizzles
        if self.clocks(blk).coll is None:
            self._lane_copy(blk, desc, *_footprint(dst, do, dd, swz_dst), lane)
        if handle is None or not handle.is_async:
            self.tile(blk, src, so, se, Access.COPY_READ, lane, desc.text, swz_src)
            self.tile(blk, dst, do, dd, Access.COPY_WRITE, lane, desc.text, swz_dst)
            return
        st = self.clocks(blk)
        actor = self._actor(st, lane)
        who = self._who(st, lane)
        ip = self._ip(st, blk, lane)
        copy = Copy(self.site(blk, ip, Access.COPY_READ, desc.text, True),
                    self.site(blk, ip, Access.COPY_WRITE, desc.text, True), who, None, None)
        parts = []
        for (buf, o, e), kind, site, swz in (
                ((src, so, se), Access.COPY_READ, copy.site_read, swz_src),
                (plan.dst, Access.COPY_WRITE, copy.site_write, swz_dst)):
            buf, box = _footprint(buf, o, e, swz)
            sh = None
            if box is not None:
                sh = self._shadow(buf)
                if sh.inflight:
                    self._inflight(sh, buf, box, kind, site, who)
                if sh.storage != Storage.LOCAL:
                    self._check(sh, buf, box, actor, site, who, st,
                                writes=kind == Access.COPY_WRITE)
                sh.inflight.append((copy, kind, box))
            parts.append((sh, buf, box))
        copy.src, copy.dst = parts
        st.copies[id(handle.transfer)] = (copy, handle.transfer)

    def _lane_copy(self, blk, desc, buf, box, lane: int) -> None:
        """A DMA each lane makes (§9.3.1) writing ``box`` of a block-wide buffer: lanes of
        one warp whose copies of one instruction write one element race."""
        if box is None or self.storage(buf) == Storage.LOCAL:
            return
        st = self.clocks(blk)
        key = (lane // WARP_SIZE, self.call.steps)
        if st.lane_copies[0] != key:
            st.lane_copies = (key, [])
        site = self.site(blk, self._ip(st, blk, lane), Access.COPY_WRITE, desc.text)
        for other, obox, olane in st.lane_copies[1]:
            if other is buf and not self._known(site, site, True):
                lo = _first_shared(box, obox, buf.shape)
                if lo is not None:
                    who = Who(st.seq, np.array([olane, lane]), collective=True)
                    self._add(Race(buf.ref, self.storage(buf), tuple(lo), (site, who),
                                   (site, who), ("why_lanes", ()), same_instruction=True))
        st.lane_copies[1].append((buf, box, lane))

    def dma_wait(self, blk, handle, lane: int) -> None:
        """Lane ``lane`` waited ``handle``'s transfer: the copy is complete for it, and
        for whoever the waiting lanes are ordered before; its accesses count from here.
        The first wait records them: a collective wait at its joined clock, which every
        participant has; a lane's own wait at a clock of its warp's that only the copy
        has (the warp ticks before and after), so that the lanes of other warps that
        wait the same copy later (a collective copy each lane waits for itself) acquire
        just that."""
        st = self.clocks(blk)
        copy = st.copies.get(id(handle.transfer), (None,))[0]
        if copy is not None:
            self._complete(blk, st, copy, lane)

    def _complete(self, blk, st, copy: Copy, lane: int) -> None:
        """``copy`` is complete for ``lane`` (see ``dma_wait``)."""
        x = lane // WARP_SIZE
        if copy.done is not None:     # another lane waited it first
            w, c = copy.done
            if st.coll is None and w != x and st.vc[x][w] < c:
                st.vc[x][w] = c
            return
        copy.waited = blk.prog.ins[self._ip(st, blk, lane)][SPAN]
        if st.coll is None:
            st.tick([x])
        actor = self._actor(st, lane)
        copy.done = (actor.warp, int(actor.vc[actor.warp]))
        for (sh, buf, box), writes, site in ((copy.src, False, copy.site_read),
                                            (copy.dst, True, copy.site_write)):
            if sh is None:
                continue
            sh.inflight = [x for x in sh.inflight if x[0] is not copy]
            if sh.storage != Storage.LOCAL:
                (sh.wrote if writes else sh.read)(box, actor, self._record(site, copy.who))
        if st.coll is None:
            st.tick([x])

    def _inflight(self, sh, buf, key, kind: str, site: int, who: Who) -> None:
        """An access to ``buf`` while async copies read or write it (§9.5.3)."""
        for copy, mode, box in list(sh.inflight):
            if mode == Access.COPY_READ and kind not in Access.WRITES:
                continue              # reading a copy's source while it reads it too
            inside = _meets(key, box, sh.shape)
            if not inside.any():
                continue
            pos = int(np.flatnonzero(inside)[0])
            first = (copy.site_read if mode == Access.COPY_READ else copy.site_write, copy.who)
            mine = who if who.collective else Who(who.seq, who.lanes[inside])
            self._add(Race(buf.ref, sh.storage, key.coords(sh.shape, pos), first,
                           (site, mine), copy))

    # ------------------------------------------------------------------ conflicts

    def _same_instruction(self, sh, buf, flat, who: Who, values, changed, site: int) -> None:
        """Lanes of one warp that write one element in one instruction: a race when they
        store different values (``values`` per warp lane), or, for an update, change it."""
        if self._known(site, site, True):
            return
        order = np.argsort(flat, kind="stable")
        f = flat[order]
        dup = f[1:] == f[:-1]
        if values is not None:
            v = _bits(values[who.lanes % WARP_SIZE])[order]
            differ = dup & (v[1:] != v[:-1])
        else:
            differ = dup & changed[order][1:]
        if not differ.any():
            return
        off = f[int(np.flatnonzero(differ)[0])]
        mine = Who(who.seq, who.lanes[flat == off])
        pos = int(np.flatnonzero(flat == off)[0])
        self._add(Race(buf.ref, sh.storage, Flat(flat).coords(sh.shape, pos), (site, mine),
                       (site, mine), ("why_lanes", ()), same_instruction=True))

    def _conflicts(self, sh, buf, key, prior, site: int, who: Who, st, actor) -> None:
        """Record the races of the current access with the earlier accesses ``prior``:
        one per earlier statement not yet reported with this one."""
        sites = np.where(prior.info < 0, -1, prior.info >> LANE_BITS)
        for info_site in np.unique(sites):
            same = np.flatnonzero(sites == info_site)
            k = same[0]
            seq = int(prior.seq[k]) if prior.seq is not None else st.seq
            s, first = self.who(int(prior.info[k]), seq)
            if self._known(s, site) or self._own_effect(s, site):
                continue
            if info_site >= 0:        # element accesses: every lane of this statement here
                first = Who(seq, np.unique(prior.info[same] & ((1 << LANE_BITS) - 1)))
            mine = who if who.collective else Who(who.seq, np.unique(who.lanes[prior.pos[same]]))
            own = _last_access(sh, key.offsets(sh.shape, prior.pos[k:k + 1])[0], actor)
            why = self._why(st, actor, int(prior.warp[k]), int(prior.clock[k]), seq, s, site,
                            own)
            self._add(Race(buf.ref, sh.storage, key.coords(sh.shape, int(prior.pos[k])),
                           (s, first), (site, mine), why))

    def _own_effect(self, a: int, b: int) -> bool:
        """Whether sites ``a`` and ``b`` are a read of an outer-level statement and the
        write of that statement's own effect: the lanes that do not perform the effect
        read what they do not use (only the performing lane's values are stored,
        §7.2.2), and the performing lane reads before it writes."""
        r, w = sorted((self.sites[a], self.sites[b]), key=lambda s: s.kind != Access.READ)
        return r.kind == Access.READ and w.kind != Access.READ and w.once >= 0 and \
            (w.code, w.once) == (r.code, r.once) and r.ip < w.ip

    def _known(self, a: int, b: int, same_instruction: bool = False) -> bool:
        return (min(a, b), max(a, b), same_instruction) in self.races

    def _add(self, race: Race) -> None:
        """Keep ``race`` unless one of the same statements is known: once per pair of
        statements, and once more for the lanes of one warp in one statement."""
        a, b = race.first[0], race.second[0]
        self.races.setdefault((min(a, b), max(a, b), race.same_instruction), race)

    def _why(self, st, actor, w: int, c: int, seq: int, first_site: int, site: int,
             own: int):
        """Why the earlier access (warp ``w`` at clock ``c`` of segment ``seq``) is not
        ordered before the current one (whose warp last accessed the element at clock
        ``own``, 0: never): a croqvm.reports.messages report name and arguments."""
        if seq != actor.seq:
            launch = self.segments[seq][0]
            if launch >= 0 and launch == self.segments[actor.seq][0]:
                return ("why_blocks", ())
            other = self.call.fn.host.launches[
                launch if launch >= 0 else self.segments[actor.seq][0]]
            if other.stream >= 0:
                return ("why_stream", (other.span, self.call.fn.params[other.stream].name))
            return ("why_async", (other.span,))
        x = actor.warp
        return self._early_trigger(st, x, w, c, first_site) or \
            self._early_trigger(st, w, x, int(st.vc[x][x]), site, own) or ("why_none", ())

    def _early_trigger(self, st, acquirer: int, releaser: int, c: int, site: int,
                       own: int = 0):
        """The event generation through which ``acquirer`` last learnt ``releaser``'s
        clock, when it was triggered before ``releaser``'s access at clock ``c`` (at
        ``site``) with no other trigger of that warp in between: the trigger that
        belongs after the access. Not when the releaser accessed the element since its
        trigger before that one (at clock ``own``): the trigger then publishes that
        access, and the race is a protocol that lacks an event, not a misplaced trigger."""
        gen_id = int(st.src_gen[acquirer][releaser])
        if gen_id == NO_EVENT:
            return None
        gen = self.gens[gen_id]
        span, t = gen.triggers.get(releaser, (None, 0))
        if span is None or t >= c:
            return None
        mine = st.triggers[releaser]
        k = bisect.bisect_right(mine, t)
        if k < len(mine) and mine[k] < c:
            return None
        before = mine[k - 2] if k >= 2 else 0     # the trigger before the one at t
        if before < own <= t:
            return None
        return ("why_trigger", (span, gen.slot, int(st.src_wait[acquirer][releaser]), site))

    # ------------------------------------------------------------------ the end

    def finish(self, fault=None):
        """The KernelFault reporting the run's races (then ``fault``, the error the run
        stopped with, if any), or None when there are none."""
        if not self.races:
            return None
        from .racereport import race_fault
        return race_fault(self, list(self.races.values()), fault)


def _last_access(sh, offset: int, actor) -> int:
    """The clock of the actor's warp's last access to element ``offset`` of ``sh`` in its
    segment, 0 for none."""
    out = 0
    if int(sh.w_warp[offset]) == actor.warp and (sh.w_seq is None or
                                                 int(sh.w_seq[offset]) == actor.seq):
        out = int(sh.w_clock[offset])
    row = int(sh.row_of[actor.warp])
    if row >= 0 and (sh.r_seq is None or int(sh.r_seq[row, offset]) == actor.seq):
        out = max(out, int(sh.r_clock[row, offset]))
    return out


def _meets(key, other, shape) -> np.ndarray:
    """Which elements of ``key`` lie in ``other`` (a ``Box`` answers for its whole box,
    see ``Box.inside``), both keys of one buffer of extents ``shape``."""
    if isinstance(other, Box):
        return key.inside(shape, other.lo, other.hi)
    return np.isin(key.offsets(shape, np.arange(key.size)), other.off)


def _first_shared(key, other, shape):
    """The first element two keys of one buffer share, as coordinates, or None."""
    if isinstance(key, Box) and isinstance(other, Box):
        lo = [max(a, b) for a, b in zip(key.lo, other.lo)]
        return lo if all(a < min(b, c) for a, b, c in zip(lo, key.hi, other.hi)) else None
    common = np.intersect1d(key.offsets(shape, np.arange(key.size)),
                            other.offsets(shape, np.arange(other.size)))
    return [int(x) for x in np.unravel_index(int(common[0]), shape)] if common.size else None


def _footprint(buf, o, e, swizzle: int = 0):
    """(buffer, key) of the tile at origin ``o`` with extents ``e`` in ``buf``: a ``Box``
    (see ``_box``), or for a reshaped or strided view (memory.Reshaped, memory.Strided,
    which take no swizzle) the buffer it addresses and the flat positions there of the
    part in range: a strided copy touches its elements, not the box around them."""
    if not isinstance(buf, (Reshaped, Strided)):
        return buf, _box(buf, o, e, swizzle)
    box = _box(buf, o, e)
    return buf.buf, None if box is None else Flat(buf.offsets(box.lo, box.hi))


def _box(buf, o, e, swizzle: int = 0):
    """The part of the tile at origin ``o`` with extents ``e`` inside ``buf``, or None.
    Under a swizzle (§9.7) the elements lie elsewhere, but each stays in its aligned
    ``swizzle``-byte block: the box grows to whole blocks of the last dimension, or to
    the whole buffer when its rows do not hold whole blocks."""
    lo = [max(0, int(a)) for a in o]
    hi = [min(int(a) + int(x), d) for a, x, d in zip(o, e, buf.shape)]
    if any(h <= l for l, h in zip(lo, hi)):
        return None
    block = swizzle // dtypes.width_bytes(buf.dtype)
    if block and buf.shape[-1] % block == 0:
        lo[-1], hi[-1] = lo[-1] // block * block, -(-hi[-1] // block) * block
    elif block:
        lo, hi = [0] * len(lo), list(buf.shape)
    return Box(lo, hi)


def statement_once(prog, ip: int) -> int:
    """The ONCE site of the outer-level statement instruction ``ip`` belongs to: the ONCE
    that ends the straight run of its statement's instructions (one span) it lies in, or
    whose effect block holds it; -1 if none."""
    span = prog.ins[ip][SPAN]
    k = ip
    while k < len(prog.ins) and prog.ins[k][SPAN] == span:
        if prog.ins[k][0] == opcodes.ONCE:
            return prog.ins[k][2]
        k += 1
    k = ip
    while k >= 0 and prog.ins[k][SPAN] == span:
        if prog.ins[k][0] == opcodes.ONCE:
            return prog.ins[k][2] if ip <= effect_block_end(prog, k) else -1
        k -= 1
    return -1


def effect_block_end(prog, ip: int) -> int:
    """The END of the effect block of the ONCE at ``ip``: the ``IF r`` right after it, as
    the verifier guarantees (§7.2.2)."""
    return prog.ins[ip + 1][2]


def instrument(checker, prog, steps: list) -> list:
    """The step table of ``prog`` with handlers that tell ``checker`` what happened
    (croqvm.interp.checks); ``steps`` is the engine's own."""
    out = list(steps)
    for ip, ins in enumerate(prog.ins):
        handler, operands = steps[ip]
        make = WRAPPERS.get(ins[0])
        if make is not None:
            out[ip] = (make(checker, handler), operands)
        if ins[0] == opcodes.ONCE:
            end = effect_block_end(prog, ip)
            out[end] = (_effect_end(checker, steps[end][0]), steps[end][1])
    return out


def _bits(values: np.ndarray) -> np.ndarray:
    """Values as unsigned integers of their width: equal values are equal bits."""
    return values.view(f"u{values.dtype.itemsize}")


def _elements(op_name: str, a_at: int, uniform_at: int, kind: str, stored=None):
    """LOAD, STORE, UPDATE: the elements are located first, so that a write's old values
    are known, and the instruction runs on them (``access.LOCATED``) instead of locating
    them again; a fault of ``locate`` is the instruction's to raise. ``stored(ins, w)``
    gives what each lane of a STORE stores."""
    run = LOCATED[op_name]

    def make(checker, handler):
        site = []             # this instruction's, once known

        def op(w, ins):
            try:
                groups, fault = locate(w, ins[a_at], ins[uniform_at]), None
            except LaneFault as f:
                groups, fault = None, f
            olds = None if kind == Access.READ or fault is not None else \
                [buf.flat[flat] for buf, _, flat in groups]
            run(w, ins, groups, fault)
            if not site:
                site.append(checker.site(w.blk, w.ip, kind))
            checker.elements(w, site[0], groups, olds, stored and stored(ins, w), kind)
        return op
    return make


def _trigger(checker, handler):
    def op(w, ins):
        ev = w.blk.events[ins[1]]
        before = (ev.completed.copy(), ev.arrivals.copy())
        handler(w, ins)
        checker.trigger(w, ins, before)
    return op


class _Acquiring:
    """A blocked event wait whose waking also lets the checker acquire the generations
    the lanes consumed (the blocker protocol of croqvm.interp.warp: ready, wake, view)."""

    def __init__(self, wait, acquire):
        self.wait, self.acquire = wait, acquire

    def ready(self) -> bool:
        return self.wait.ready()

    def wake(self) -> None:
        self.wait.wake()
        self.acquire()

    def view(self) -> tuple:
        return self.wait.view()


def _wait_event(checker, handler):
    def op(w, ins):
        ev = w.blk.events[ins[1]]
        lanes = w.lanes[w.act]
        slots = w.regs[ins[2]][w.act].astype(np.int64)
        if ((slots < 0) | (slots >= ev.decl.slots)).any():
            handler(w, ins)           # the handler's fault
            return
        consumed = ev.waits[lanes, slots]        # each lane's next generation
        handler(w, ins)
        _acquire_after(checker, w, ins, consumed, slots)
    return op


def _wait_event_at(checker, handler):
    """A parity wait (§10.6) observes the slot's last completed generation, whichever
    it is: when it passes, the lanes acquire that one."""
    def op(w, ins):
        ev = w.blk.events[ins[1]]
        orders = w.regs[ins[2]][w.act].astype(np.int64)
        if (orders < 0).any():
            handler(w, ins)           # the handler's fault
            return
        slots = orders % ev.decl.slots
        handler(w, ins)
        _acquire_after(checker, w, ins, None, slots)
    return op


def _acquire_after(checker, w, ins, consumed, slots) -> None:
    """After an event wait's handler: acquire now, or when the blocked warp wakes; a
    parity wait (``consumed`` None) acquires the last generation its slots completed by
    then."""
    def acquire():
        gens = consumed
        if gens is None:
            gens = w.blk.events[ins[1]].completed[slots] - 1
        checker.waited_event(w, ins, gens, slots)
    if w.state == BLOCKED:            # it completes when the warp wakes
        w.blocker = _Acquiring(w.blocker, acquire)
    else:
        acquire()


def _named_barrier(checker, handler):
    """BAR_SYNC and BAR_ARRIVE: the arrival is known once the handler ran without a fault
    (the barrier's phase count moved on, or it holds the warp's arrival); a BAR_SYNC
    acquires its phase when it passes, at once or when its warp wakes."""
    def op(w, ins):
        lane = int(w.lanes[w.active_indices()[0]])
        index = int(w.blk.lane_reg(lane, ins[1]))
        phase = w.blk.named[index].phases if 0 <= index < len(w.blk.named) else -1
        handler(w, ins)         # faults on a bad index before the checker sees it
        checker.bar_arrived(w, index, phase)
        if ins[0] == opcodes.BAR_ARRIVE:
            return
        if w.state == BLOCKED:
            w.blocker = _Acquiring(w.blocker, lambda: checker.bar_passed(w, index, phase))
        else:
            checker.bar_passed(w, index, phase)
    return op


def _once(checker, handler):
    def op(w, ins):
        handler(w, ins)
        blk = w.blk
        claimed = w.regs[ins[1]][w.act].astype(bool)
        nth = blk.once[("arrivals", ins[2])][w.lanes[w.act]]
        checker.once(w, ins, claimed, nth, effect_block_end(blk.prog, w.ip))
    return op


def _effect_end(checker, handler):
    def op(w, ins):
        handler(w, ins)
        checker.effect_end(w)
    return op


def _launch(checker, handler):
    def op(w, ins):
        checker.launch_begin(w.blk, ins[1])
        handler(w, ins)
        checker.launch_end(w.blk, ins[1])
    return op


def _sync_global(checker, handler):
    def op(w, ins):
        handler(w, ins)
        checker.sync_global(w.blk)
    return op


# opcode -> (checker, the engine's handler) -> the handler to run
WRAPPERS = {
    opcodes.LOAD: _elements("LOAD", 1, 2, Access.READ),      # prepared: (r, a, uniform, to_reg)
    opcodes.STORE: _elements("STORE", 0, 1, Access.WRITE,    # (a, uniform, r, to_elem)
                             lambda ins, w: ins[3](w.regs[ins[2]], w.act)),
    opcodes.UPDATE: _elements("UPDATE", 0, 1, Access.UPDATE),   # (a, uniform, r, ops)
    opcodes.ATOMIC: _elements("ATOMIC", 1, 2, Access.ATOMIC),   # (r, a, uniform, ...)
    opcodes.TRIGGER: _trigger,
    opcodes.TRIGGER_CLUSTER: _trigger,     # its own block's arrival; see the docstring
    opcodes.WAIT_EVENT: _wait_event,
    opcodes.WAIT_EVENT_AT: _wait_event_at,
    opcodes.ONCE: _once,
    opcodes.BAR_SYNC: _named_barrier,
    opcodes.BAR_ARRIVE: _named_barrier,
    opcodes.LAUNCH: _launch,
    opcodes.SYNC_GLOBAL: _sync_global,
}
