"""Collectives, barriers, ONCE and events (LANGUAGE.md §7.2, §7.4, §10; docs/EXECUTION.md
§4, §5, §7).

Conventions: ``lane`` a block lane; ``i`` a lane index in the warp ``w``; a *unit* is the
group of ``site.unit`` consecutive lanes a collective is confined to (0: the block). A
collective's dynamic instance is a ``Rendezvous`` keyed by (instruction, unit, the
lane's execution count of that instruction); its effect runs once, when the last live
participant arrives, and is followed by the release of every participant.
"""
from __future__ import annotations

import numpy as np

from ..bytecode.opcodes import BAR_ARRIVE, SPAN
from ..core.faults import Fault, Kind, LaneFault
from ..core.limits import NAMED_BARRIERS, UNIT_OF_LANES, WARP_SIZE
from ..reports.blockview import EventWaitView, GridWaitView, NamedBarrierView, RendezvousView


def unit_members(inset: np.ndarray, unit: int, u: int) -> np.ndarray:
    """The lanes of lane set ``inset`` in instance ``u`` of ``unit`` (0: the block)."""
    if unit <= 0:
        return inset
    m = np.zeros(inset.size, bool)
    m[u * unit:(u + 1) * unit] = inset[u * unit:(u + 1) * unit]
    return m


class Rendezvous:
    """One dynamic instance of a collective (§7.4.3). ``members``: the lanes of the
    unit in the site's lane set; terminated ones are not awaited."""

    def __init__(self, blk, ip, ins, coll, members, effect, unit_index, whole_unit):
        self.blk, self.ip, self.ins, self.coll = blk, ip, ins, coll
        self.site = blk.prog.code.colls[coll]
        self.members, self.effect = members, effect
        self.unit_index, self.whole_unit = unit_index, whole_unit
        self.arrived = np.zeros(blk.size, bool)
        self.done = False

    def missing(self) -> np.ndarray:
        return self.members & self.blk.live & ~self.arrived

    def complete(self) -> None:
        """Run the effect once for the live participants, then release them all."""
        lanes = np.flatnonzero(self.arrived & self.blk.live)
        checker = self.blk.call.checker if lanes.size else None
        if checker is not None:
            checker.collective(self, lanes)
        if self.effect is not None and lanes.size:
            try:
                self.effect(self.blk, self, lanes)
            except Fault as f:
                if f.span is None:
                    f.span = self.ins[SPAN]
                raise
        if checker is not None:
            checker.collective_done(self, lanes)
        self.done = True
        self.blk.released = True

    def view(self) -> RendezvousView:
        live = self.blk.live
        return RendezvousView(self.ip, self.coll, self.unit_index,
                              tuple(np.flatnonzero(self.arrived & live).tolist()),
                              tuple(np.flatnonzero(self.members & live).tolist()),
                              self.whole_unit)


class Waiting:
    """What a warp blocked at a collective waits for: its lanes' rendezvous."""

    def __init__(self, recs):
        self.recs = recs

    def ready(self) -> bool:
        return all(r.done for r in self.recs)

    def wake(self) -> None:
        """Nothing is left to do: the collective's effect ran when it completed."""

    def view(self) -> tuple:
        """The block view's waits (croqvm.reports.blockview): the rendezvous not complete."""
        return tuple(r.view() for r in self.recs if not r.done)


def _open(blk, key, make):
    rec = blk.rendezvous.get(key)
    if rec is None:
        rec = blk.rendezvous[key] = make()
    return rec


def _check_converged(w, coll, members, unit, u, whole_unit):
    """§7.4.4: every live participant lane of this warp must be active here."""
    blk = w.blk
    lane = int(w.lanes[w.active_indices()[0]])
    whole = whole_unit and unit in UNIT_OF_LANES
    if whole:
        gone = np.flatnonzero(members & ~blk.live)
        if gone.size:
            raise Fault(Kind.UNIT_TERMINATED, (coll, unit, u, tuple(gone.tolist())), lane)
    if w.full:
        return
    idle = np.flatnonzero(members[w.base:w.base + w.width] & w.live & ~w.act)
    if not idle.size:
        return
    if whole:
        raise Fault(Kind.UNIT_INACTIVE, (coll, unit, u, tuple((idle + w.base).tolist())), lane)
    n = int((members & blk.live).sum())
    raise Fault(Kind.DIVERGENT_COLLECTIVE, (coll, n, tuple(idle.tolist()), w.index), lane)


def groups_of(keys):
    """(value, selection) for each distinct value of ``keys`` in increasing order; the
    usual case, one value, without sorting."""
    first = keys[0]
    if not np.count_nonzero(keys != first):
        return [(int(first), slice(None))]
    return [(int(k), keys == k) for k in np.unique(keys)]


def arrive(w, ins, coll: int, effect=None, whole_unit: bool = False) -> None:
    """The active lanes of ``w`` reach collective site ``coll``; ``effect(blk, rec,
    lanes)`` runs once when the group is complete. The warp blocks until then."""
    blk = w.blk
    site = blk.prog.code.colls[coll]
    inset = blk.lanesets[site.laneset]
    active = w.active_indices()
    lanes = w.lanes[active]
    if np.count_nonzero(inset[lanes]) != lanes.size:
        # lowering keeps lane sets and control flow in step; a .cqb may not
        outside = int(lanes[~inset[lanes]][0])
        raise Fault(Kind.NOT_A_PARTICIPANT, (outside, coll), outside)
    counts = w.counts.get(w.ip)
    if counts is None:
        counts = w.counts[w.ip] = np.zeros(w.width, np.int64)
    counts[active] += 1
    reached = counts[active]        # which execution of the instruction, per lane
    units = groups_of(lanes // site.unit) if site.unit > 0 else [(0, slice(None))]
    recs = []
    for u, in_unit in units:
        members = unit_members(inset, site.unit, u)
        _check_converged(w, coll, members, site.unit, u, whole_unit)
        for c, same in groups_of(reached[in_unit]):
            key = (w.ip, u, c)
            rec = _open(blk, key, lambda: Rendezvous(blk, w.ip, ins, coll, members, effect,
                                                     u, whole_unit))
            rec.arrived[lanes[in_unit][same]] = True
            if not np.count_nonzero(rec.missing()):
                del blk.rendezvous[key]
                rec.complete()
            recs.append(rec)
    if not all(r.done for r in recs):
        w.block_on(Waiting(recs))


def recheck_rendezvous(blk) -> None:
    """Lanes terminated (§6.5): collectives stop waiting for them."""
    for key, rec in list(blk.rendezvous.items()):
        if not rec.missing().any():
            del blk.rendezvous[key]
            rec.complete()


def _bits(values: np.ndarray) -> np.ndarray:
    """Register values as unsigned integers of their width: identical values are equal
    bit patterns (so NaN matches NaN, and -0.0 does not match 0.0)."""
    return values.view(f"u{values.dtype.itemsize}") if values.dtype != bool else values


def _same_registers(blk, lanes, regs) -> bool:
    """Whether every lane of ``lanes`` holds the lowest one's value in each of ``regs``."""
    first, last = int(lanes[0]), int(lanes[-1])
    w0, i0 = blk.warp_of(first)
    want = [_bits(w0.regs[r][i0:i0 + 1])[0] for r in regs]
    for w in blk.warps[w0.index:blk.warp_of(last)[0].index + 1]:
        mine = lanes[(lanes >= w.base) & (lanes < w.base + w.width)] - w.base
        whole = len(mine) == w.width
        for r, value in zip(regs, want):
            if np.count_nonzero(_bits(w.regs[r] if whole else w.regs[r][mine]) != value):
                return False
    return True


def register_operand(blk, lane: int, r: int) -> tuple:
    """R[r] of block lane ``lane`` as a collective's operand (``typed`` of
    croqvm.reports.messages)."""
    w, i = blk.warp_of(lane)
    return "value", (blk.prog.code.regs[r], w.regs[r][i])


def _same_operand(a: tuple, b: tuple) -> bool:
    if a[0] == "value":
        return a[1][0] == b[1][0] and \
            _bits(np.asarray(a[1][1])).tolist() == _bits(np.asarray(b[1][1])).tolist()
    return a == b


def check_uniform(blk, rec, lanes, operands, regs=None) -> None:
    """§7.4.5: every participant presents the operands of the lowest one.
    ``operands(lane)`` gives a list of (label, operand) pairs, each operand a typed value
    of croqvm.reports.messages (type ``typed``); values compare by their bits. ``regs``, when
    given, are registers that determine the operands completely: identical values there
    settle it without looking lane by lane."""
    if regs is not None and _same_registers(blk, lanes, regs):
        return
    first = int(lanes[0])
    ref = operands(first)
    for lane in lanes[1:]:
        got = operands(int(lane))
        for (label, a), (_, b) in zip(ref, got):
            if not _same_operand(a, b):
                raise Fault(Kind.OPERANDS_DIFFER, (rec.coll, first, int(lane), label, a, b),
                            int(lane))


def op_barrier(w, ins):
    arrive(w, ins, ins[1])


# --------------------------------------------------------------------------- ONCE (§7.2.2)

def op_once(w, ins):
    """A lane's n-th arrival at the site claims execution n of its instance unless
    another lane already has; in lane order, so the lowest live lane under the default
    schedule. The other lanes must see the effect from the next statement on (§7.2.2):
    the ``IF r ... END`` that follows is the effect block (the verifier guarantees it),
    and a warp that claims runs it without being preempted, so no schedule lets another
    warp pass its END before the effect has happened."""
    _, r, site, unit = ins[:4]
    blk = w.blk
    arrivals = blk.once.get(("arrivals", site))
    if arrivals is None:
        arrivals = blk.once[("arrivals", site)] = np.zeros(blk.size, np.int64)
    active = w.active_indices()
    lanes = w.lanes[active]
    arrivals[lanes] += 1
    nth = arrivals[lanes]
    res = np.zeros(w.width, bool)
    units = lanes // unit if unit > 0 else np.zeros(lanes.size, np.int64)
    for u, mine in groups_of(units):
        # in lane order, a lane claims when its arrival is beyond every claim so far
        claimed = blk.once.get((site, u), 0)
        want = nth[mine]
        before = np.maximum.accumulate(np.concatenate(([claimed], want[:-1])))
        res[active[mine][want > before]] = True
        blk.once[(site, u)] = max(claimed, int(want.max()))
    w.write(r, res)
    if res.any():
        w.hold = blk.prog.ins[w.pc][2]      # the effect block's END


# --------------------------------------------------------------------------- events (§10)

class EventSlots:
    """A shared event's per-block state (§10.3): per slot ``completed`` generations and
    ``arrivals``; per lane and slot the count of completed ``waits``."""

    def __init__(self, index: int, decl, need: int, size: int):
        self.index, self.decl, self.need = index, decl, need
        self.completed = np.full(decl.slots, 1 if decl.ready else 0, np.int64)
        self.arrivals = np.zeros(decl.slots, np.int64)
        self.waits = np.zeros((size, decl.slots), np.int64)


def init_events(blk, cluster_blocks: int) -> None:
    """Arrivals per generation: ``event<N>``, else the lanes of the union of the
    trigger statements' lane sets (§10.2), times the ``cluster_blocks`` blocks of the
    cluster for an event that ``trigger.cluster`` names (§10.8)."""
    for index, decl in enumerate(blk.prog.code.events):
        need = decl.count
        if need < 0:
            union = np.zeros(blk.size, bool)
            for ls in decl.lanesets:
                union |= blk.lanesets[ls]
            need = int(union.sum()) * (cluster_blocks if decl.cluster else 1)
        blk.events.append(EventSlots(index, decl, need, blk.size))


def _slots(w, ev: EventSlots, r: int) -> np.ndarray:
    slots = w.regs[r].astype(np.int64)
    bad = (slots < 0) | (slots >= ev.decl.slots)
    hit = np.flatnonzero(bad & w.act)
    if hit.size:
        i = int(hit[0])
        raise LaneFault(Kind.EVENT_INDEX, (int(slots[i]), ev.index, ev.decl.slots), i)
    return slots


def _arrive(blk, ev: EventSlots, slots: np.ndarray) -> None:
    """One arrival per entry of ``slots`` at event ``ev`` of block ``blk``; every
    ``need``-th arrival completes a generation, and the surplus counts toward the next
    one."""
    for s, same in groups_of(slots):
        total = int(ev.arrivals[s]) + len(slots[same])
        if ev.need > 0 and total >= ev.need:
            ev.completed[s] += total // ev.need
            blk.released = True
            total %= ev.need
        ev.arrivals[s] = total


def op_trigger(w, ins):
    """Each active lane arrives at its slot."""
    ev = w.blk.events[ins[1]]
    _arrive(w.blk, ev, _slots(w, ev, ins[2])[w.active_indices()])


def op_trigger_cluster(w, ins):
    """§10.8: each active lane arrives at its slot of the event in every block of its
    cluster, in the order of the cluster's blocks."""
    slots = _slots(w, w.blk.events[ins[1]], ins[2])[w.active_indices()]
    for blk in w.blk.cluster:
        _arrive(blk, blk.events[ins[1]], slots)


class EventWait:
    """A warp whose active lanes wait for their next generations (§10.3), or, for a parity
    wait (§10.6), each for generation ``gens[k]`` of its slot: an mbarrier parity wait
    passes when the slot's completed count has the parity of ``gens[k] + 1``."""

    def __init__(self, ev, ip, lanes, slots, gens=None):
        self.ev, self.ip, self.lanes, self.slots, self.gens = ev, ip, lanes, slots, gens

    def pending(self) -> np.ndarray:
        ev = self.ev
        if self.gens is not None:
            return ev.completed[self.slots] % 2 == self.gens % 2
        return ev.completed[self.slots] <= ev.waits[self.lanes, self.slots]

    def ready(self) -> bool:
        return not self.pending().any()

    def wake(self) -> None:
        """Each waiting lane has waited for one more generation of its slot; a parity
        wait counts nothing."""
        if self.gens is None:
            self.ev.waits[self.lanes, self.slots] += 1

    def view(self) -> tuple:
        """The block view's waits (croqvm.reports.blockview): the first lane still waiting's."""
        ev = self.ev
        n = int(np.flatnonzero(self.pending())[0])
        s = int(self.slots[n])
        gen = int(self.gens[n]) if self.gens is not None else int(ev.waits[self.lanes[n], s])
        return (EventWaitView(self.ip, ev.index, s, int(ev.completed[s]), int(ev.arrivals[s]),
                              ev.need, gen),)


def op_wait_event(w, ins):
    ev = w.blk.events[ins[1]]
    slots = _slots(w, ev, ins[2])[w.act]
    lanes = w.lanes[w.act]
    _block_or_pass(w, EventWait(ev, w.ip, lanes, slots))


def order_slots(w, ev: EventSlots, r: int):
    """§10.6: the slot ``order % N`` and generation ``order / N`` of each active lane's
    order; a negative order faults as the slot it names."""
    orders = w.regs[r].astype(np.int64)
    hit = np.flatnonzero((orders < 0) & w.act)
    if hit.size:
        i = int(hit[0])
        raise LaneFault(Kind.EVENT_INDEX, (int(orders[i]), ev.index, ev.decl.slots), i)
    orders = orders[w.act]
    return orders % ev.decl.slots, orders // ev.decl.slots


def op_wait_event_at(w, ins):
    ev = w.blk.events[ins[1]]
    slots, gens = order_slots(w, ev, ins[2])
    _block_or_pass(w, EventWait(ev, w.ip, w.lanes[w.act], slots, gens))


def _block_or_pass(w, wait: EventWait) -> None:
    if wait.ready():
        wait.wake()
    else:
        w.block_on(wait)     # one step: waking completes the wait, nothing runs again


# --------------------------------------------------------------------------- named barriers (§6.8)

class NamedBarrier:
    """One of a block's named barriers: the thread count its current phase began with (0
    before the phase's first arrival), the threads arrived in that phase (32 per warp),
    and the phases completed so far."""

    def __init__(self):
        self.count = self.arrived = self.phases = 0


def new_named_barriers() -> list:
    return [NamedBarrier() for _ in range(NAMED_BARRIERS)]


class BarrierWait:
    """A warp blocked at BAR_SYNC (instruction ``ip``) until phase ``phase`` of named
    barrier ``index`` completes."""

    def __init__(self, bar: NamedBarrier, index: int, phase: int, ip: int):
        self.bar, self.index, self.phase, self.ip = bar, index, phase, ip

    def ready(self) -> bool:
        return self.bar.phases > self.phase

    def wake(self) -> None:
        """Nothing is left to do: the phase completed."""

    def view(self) -> tuple:
        return (NamedBarrierView(self.ip, self.index, self.bar.arrived, self.bar.count),)


def _warp_uniform(w, coll: int, active, regs_labels) -> tuple:
    """The value every active lane of ``w`` gives in each register (the lowest lane's);
    a lane giving another is OPERANDS_DIFFER: a warp arrives as one."""
    lanes = w.lanes[active]
    out = []
    for r, label in regs_labels:
        values = w.regs[r][active]
        odd = np.flatnonzero(values != values[0])
        if odd.size:
            k = int(odd[0])
            dtype = w.blk.prog.code.regs[r]
            raise Fault(Kind.OPERANDS_DIFFER, (coll, int(lanes[0]), int(lanes[k]), label,
                                               ("value", (dtype, values[0])),
                                               ("value", (dtype, values[k]))), int(lanes[k]))
        out.append(int(values[0]))
    return tuple(out)


def _arrive_converged(w, coll: int):
    """The active lanes of ``w`` arrive at a statement of collective site ``coll`` as a
    whole warp: each is a participant, and no live participant of the warp is missing
    (§7.4.4). Returns the active indices."""
    blk = w.blk
    inset = blk.lanesets[blk.prog.code.colls[coll].laneset]
    active = w.active_indices()
    lanes = w.lanes[active]
    if np.count_nonzero(inset[lanes]) != lanes.size:
        outside = int(lanes[~inset[lanes]][0])
        raise Fault(Kind.NOT_A_PARTICIPANT, (outside, coll), outside)
    _check_converged(w, coll, inset, 0, 0, False)
    return active


def op_named_barrier(w, ins):
    """BAR_SYNC and BAR_ARRIVE: the warp, with every live lane of its collective set
    active, arrives for its 32 threads at barrier R[a] with count R[b]; the arrival that
    reaches the count completes the phase; BAR_SYNC then waits for its phase."""
    _, rid, rcount, coll = ins[:4]
    blk = w.blk
    active = _arrive_converged(w, coll)
    lanes = w.lanes[active]
    index, count = _warp_uniform(w, coll, active, ((rid, "barrier"), (rcount, "thread count")))
    lane = int(lanes[0])
    if not 1 <= index < NAMED_BARRIERS:       # 0: the block barrier of sync.shared
        raise Fault(Kind.BAR_ID, (coll, index), lane)
    limit = WARP_SIZE * len(blk.warps)
    if count <= 0 or count % WARP_SIZE or count > limit:
        raise Fault(Kind.BAR_COUNT, (coll, count, limit), lane)
    bar = blk.named[index]
    if bar.count and bar.count != count:
        raise Fault(Kind.BAR_COUNT_DIFFERS, (coll, index, count, bar.count), lane)
    phase = bar.phases
    bar.count = count
    bar.arrived += WARP_SIZE
    if bar.arrived == count:
        bar.phases += 1
        bar.count = bar.arrived = 0
        blk.released = True
    elif ins[0] != BAR_ARRIVE:
        w.block_on(BarrierWait(bar, index, phase, w.ip))


# --------------------------------------------------------------------------- grid barriers (§7.1.4)

class GridWait:
    """A warp blocked at GRID_SYNC (instruction ``ip``) until the launch's grid barrier
    releases generation ``gen``: when every resident block waits at it and every block
    of the grid is resident (croqvm.interp.engine runs cooperative launches)."""

    def __init__(self, grid, gen: int, ip: int):
        self.grid, self.gen, self.ip = grid, gen, ip

    def ready(self) -> bool:
        return self.grid.gen > self.gen

    def wake(self) -> None:
        """Nothing is left to do: the grid barrier released."""

    def view(self) -> tuple:
        return (GridWaitView(self.ip),)


def op_grid_sync(w, ins):
    """The warp's participant lanes wait at the grid barrier; a block whose warps all
    wait there (or are done) is parked until the launch releases it."""
    _arrive_converged(w, ins[1])
    w.block_on(GridWait(w.blk.grid, w.blk.grid.gen, w.ip))


def op_no_effect(w, ins):
    """FENCE and SYNC_GLOBAL: memory is sequentially consistent and every launch runs to
    completion at its LAUNCH (docs/EXECUTION.md §3), so there is nothing to order or to
    wait for."""


HANDLERS = {
    "BARRIER": op_barrier, "ONCE": op_once, "TRIGGER": op_trigger,
    "WAIT_EVENT": op_wait_event, "FENCE": op_no_effect, "SYNC_GLOBAL": op_no_effect,
    "WAIT_EVENT_AT": op_wait_event_at, "TRIGGER_CLUSTER": op_trigger_cluster,
    "BAR_SYNC": op_named_barrier, "BAR_ARRIVE": op_named_barrier, "GRID_SYNC": op_grid_sync,
}
