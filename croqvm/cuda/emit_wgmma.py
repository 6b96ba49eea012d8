"""wgmma chains on sm_90a: runs of `mma.load`s and execs that read 128B-swizzled shared
tiles in place, which meet once and whose wgmmas are waited for once (docs/CUDA.md
"Fast paths on sm_90a").

A *chain* is a straight run of instructions, no control flow between them:

    (MMA_LOAD ... MMA_EXEC)+  [MMA_ASYNC MMA_WAIT]

each exec reading in place (``emit_mma._direct_views``) the views its loads just read,
every exec of the chain accumulating into one register accumulator with one wgmma
shape and tile grid, every collective of the chain a warpgroup's (unit 128) over one
lane set, and nothing else between them but register arithmetic that cannot fault.
The first collective of the chain meets and checks its unit as every collective does
(its lanes have arrived or terminated; a terminated one is UNIT_TERMINATED); the others
meet no more: between them no lane can terminate alone, since the only faults of the
chain are the loads' and execs' checks of operands that are uniform in the unit
(§7.4.5, §11.2) and of masks that are fixed by then, which every lane of the unit
takes alike.

The execs issue their wgmmas and commit them without waiting: the results stay in
flight in the *region*'s accumulator copy ``wq<m>`` until the region ends, where
``wgmma.wait_group 0`` lands them, the copy goes back to the accumulator's registers and
the unit meets once, so that no lane goes on while a wgmma of its warpgroup may still
read the operand tiles. A region is a chain, or a LOOP whose body is only chains of one
accumulator, register arithmetic that cannot fault and BREAK_IF on values that are the
same in every lane (a K slab's slices: the lanes of the warpgroup step through it
together). Its step limit check may end a lane alone inside the region; the next
chain's first collective finds it terminated, as before. An exec whose tiles do not
lie as wgmma reads them in place (the check made when it runs) lands the region's
wgmmas and goes cell by cell. A fault's exit inside a region waits for the wgmmas in
flight first (``cq_wgmma_wait_all``): the wait ptxas would otherwise insert on that
divergent path makes it serialize every wgmma of the kernel.

An MMA_ASYNC followed by the MMA_WAIT of the same accumulator ends a chain as an
asynchronous exec waited at once does: the pending count the pair adds and clears is
the one the chain's execs checked to be zero (MMA_PENDING), and the wait can not find
it zero (MMA_NOT_PENDING), so the pair emits nothing.

A loop region's chains meet before the loop rather than at each slice
(``_meet_before_loop``): what the meeting checks, the lanes of the unit that have
terminated, cannot change from one slice to the next. Nor from one run of the loop to
the next, when the loop around it holds nothing else but what every lane of the
warpgroup goes through or ends at alike (``_alike``, a divergence analysis:
uniform.py): such a K loop's slabs meet before their slices in the first slab only
(``Region.once``), and then once each, where the region ends.

An MMA_ASYNC whose MMA_WAIT follows later in a straight run of one block, nothing on
the way naming the accumulator (``_wait_after``), makes the chain a region that ends at
that wait (LANGUAGE.md §11.5 point 5, as Croqtile infers wait depths from the waits of
operation futures): the wait is ``wgmma.wait_group N``, N the commit groups of such
regions issued after this one and still open there, which stay in flight. The pair
emits no count for the same reasons; the wait meets and checks the unit.

An MMA_ASYNC whose accumulator's one MMA_WAIT stands at the top level of a LOOP's body
(not in a block of it) is *carried* (``_carried``) when every MMA_ASYNC of that
accumulator ends a chain that either runs straight into the LOOP (the first group,
issued before it) or lies in the body after the wait, outside any inner loop (at its top
level, or in a block of it and so issued on some iterations only; docs/CUDA.md says which
of these ptxas keeps in flight), and nothing else in the loop names the accumulator:
each group the loop's wait finds was issued before the loop or in the iteration before,
so the groups that the body issues at its top level before the wait, on every path,
were committed after it; the wait is ``wgmma.wait_group N``, N those of
them still open there (one per iteration: the slab just issued stays in flight while the
one before it is waited for and its slot handed back). The region runs from the first
chain to the end of the loop, its accumulator copy declared before the loop; each chain
in the loop takes the accumulator into the copy again. Whether a group is pending at the
wait now depends on which iterations issued one, so each lane keeps the pending count of
its warpgroup's accumulator in a register (``pending``): the issues set it, the wait
checks it after meeting (MMA_NOT_PENDING) and clears it, and the accumulator's other
uses check it (MMA_PENDING) as they check the count of their unit's copy; every lane of
the warpgroup takes each of these collectives, so their registers agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..bytecode import opcodes
from ..core.faults import Kind
from ..bytecode.dataflow import registers_read
from .uniform import Uniformity, arithmetic


@dataclass
class Region:
    first: int          # ip before which the accumulator copy is taken
    last: int           # ip after which the wgmmas are waited and the unit meets
    mc: int             # the accumulator
    plan: object        # emit_mma.WgmmaPlan of its execs
    m: int              # rows of C
    n: int              # columns of C
    meet: int           # ip of the exec whose mbarrier the closing rendezvous uses
    execs: tuple = ()   # ips of its execs: one commit group each
    waits: bool = False  # an asynchronous exec's region, which ends at its `wait f`
    depth: int = 0      # the groups of other regions still in flight at that wait
    hoisted: int = -1   # a slice loop's: ip of the collective whose meeting it holds
    once: int = -1      # ... and of the LOOP around it in which it meets only once
    wait: int = -1      # a carried region's: ip of its `wait f` in the loop (last: END)
    issues: tuple = ()  # (first ip, groups) of each chain: its commit groups, in order

    @property
    def tiles(self) -> int:
        return self.m // 64 * (self.n // self.plan.n)

    @property
    def carried(self) -> bool:
        return self.wait >= 0

    @property
    def name(self) -> str:
        """The accumulator copy: one per region, as regions of `wait`s overlap in one
        C scope."""
        return f"wq{self.mc}_{self.first}" if self.waits else f"wq{self.mc}"


@dataclass
class Chains:
    """ip -> "first" or "inner" for each collective of a chain; the ips of the
    MMA_ASYNC/MMA_WAIT pairs that emit nothing; the regions by first and by last ip,
    and each chained exec's region; of carried regions, by the first ip of each chain in
    the loop (``takes``) and by their wait (``lands``), and their accumulators."""
    role: dict
    silent: set
    starts: dict
    ends: dict
    region_of: dict
    takes: dict = field(default_factory=dict)
    lands: dict = field(default_factory=dict)
    met: dict = field(default_factory=dict)       # "hoisted" collective -> its region
    once: dict = field(default_factory=dict)      # LOOP ip -> the regions meeting once in it
    carried: set = field(default_factory=set)
    uncounted: set = field(default_factory=set)   # accumulators whose MMA_ASYNCs are silent


def _quiet(ins) -> bool:
    """Register arithmetic that cannot fault."""
    return arithmetic(ins) and not opcodes.TABLE[ins[0]].faults


def _segment(k, ip: int):
    """(exec ip, its key) when a run of loads starting at ``ip`` feeds an exec that
    reads them in place, with nothing but loads of its operands and quiet arithmetic
    before it; else None."""
    from .emit_mma import _direct_views, _dynamic, _exec_after, _exec_shapes, wgmma_plan
    if ip >= len(k.ins) or k.ins[ip][0] != opcodes.MMA_LOAD:
        return None
    e = _exec_after(k, ip)
    if e is None:
        return None
    ins = k.ins[e]
    _, mc, ma, mb, layout, c = ins[:6]
    plan = wgmma_plan(k, ins)
    if plan is None or mc not in k.reg_frags or not _direct_views(k, ins, e):
        return None
    ops = k.view_operands.get(e, {})
    laneset = k.code.colls[c].laneset
    for at in range(ip, e):
        x = k.ins[at]
        if x[0] == opcodes.MMA_LOAD:
            m, lc = x[1], x[3]
            if m not in ops or m in k.async_frags or _dynamic(k, m) or lc < 0 or \
                    k.code.colls[lc].unit != 128 or k.code.colls[lc].laneset != laneset:
                return None
        elif not _quiet(x):
            return None
    M, N, _ = _exec_shapes(k, ins, mc, ma, mb, layout)
    return e, (mc, plan.shape, M, N, laneset)


# what ends a straight run of one block: control flow, calls, returns
_BRANCHES = {opcodes.ELSE, opcodes.BREAK_IF, opcodes.CONTINUE_IF, opcodes.YIELD}


def _names(ins, mc: int) -> bool:
    """Whether instruction ``ins`` names accumulator ``mc``."""
    op = opcodes.TABLE[ins[0]]
    return any(kind == "m" and x == mc for kind, x in zip(op.operands, ins[1:]))


def _stops_run(ins, mc: int) -> bool:
    """Whether ``ins`` ends a straight run of one block, or names ``mc`` in it."""
    op = opcodes.TABLE[ins[0]]
    return op.opens or op.closes or ins[0] in _BRANCHES or op.returns or op.host_only or \
        op.name.startswith("CALL") or _names(ins, mc)


def _wait_after(k, ip: int, mc: int):
    """The ip of the MMA_WAIT of accumulator ``mc`` that the run from ``ip`` reaches
    straight, in one block, with nothing else naming ``mc`` on the way; else None."""
    for at in range(ip, len(k.ins)):
        ins = k.ins[at]
        if ins[0] == opcodes.MMA_WAIT and ins[1] == mc:
            return at if ins[2] >= 0 else None
        if _stops_run(ins, mc):
            return None
    return None


def _chain(k, ip: int):
    """(last ip, exec ips, key, wait ip) of the chain that starts at ``ip``, or None;
    the wait ip is that of the `wait f` of a chain ending in an asynchronous exec that
    its region reaches (``_wait_after``), else None."""
    seg = _segment(k, ip)
    if seg is None:
        return None
    execs, key = [seg[0]], seg[1]
    while True:
        at = execs[-1] + 1
        while at < len(k.ins) and _quiet(k.ins[at]):
            at += 1
        nxt = _segment(k, at)
        if nxt is None or nxt[1] != key:
            break
        execs.append(nxt[0])
    last = execs[-1]
    pair = k.ins[last + 1:last + 3]
    if pair and pair[0][0] == opcodes.MMA_ASYNC and pair[0][1] == key[0]:
        if len(pair) == 2 and pair[1][0] == opcodes.MMA_WAIT and pair[1][1] == key[0]:
            return last + 2, execs, key, None
        wait = _wait_after(k, last + 2, key[0])
        return last + 1, execs, key, CARRIED if wait is None else wait
    return last, execs, key, None


CARRIED = -1     # _chain's wait of an MMA_ASYNC not waited in a straight run (_carried)


def _straight_into(k, ip: int, loop: int, mc: int) -> bool:
    """Whether the run from ``ip`` reaches the LOOP at ``loop`` straight, in one block,
    with nothing on the way naming ``mc`` (as ``_wait_after``)."""
    return not any(_stops_run(k.ins[at], mc) for at in range(ip, loop))


def _body_levels(k, loop: int) -> dict:
    """ip -> the opcodes of the blocks that enclose it inside the body of the LOOP at
    ``loop`` (() at the top level of the body)."""
    levels, stack = {}, []
    for at in range(loop + 1, _loop_end(k, loop)):
        op = opcodes.TABLE[k.ins[at][0]]
        if op.closes:
            stack.pop()
        levels[at] = tuple(stack)
        if op.opens:
            stack.append(k.ins[at][0])
    return levels


def _carried(k, chains) -> dict:
    """accumulator -> (LOOP ip, wait ip, its chains) of each accumulator whose chains
    end in an MMA_ASYNC (``CARRIED``) and whose wait is carried across the iterations
    of a loop (see the module's docstring)."""
    out = {}
    by_acc: dict = {}
    for c in chains:
        by_acc.setdefault(c[3][0], []).append(c)
    for mc, group in by_acc.items():
        waits = [ip for ip, ins in enumerate(k.ins)
                 if ins[0] == opcodes.MMA_WAIT and ins[1] == mc]
        issues = [ip for ip, ins in enumerate(k.ins)
                  if ins[0] == opcodes.MMA_ASYNC and ins[1] == mc]
        if len(waits) != 1 or k.ins[waits[0]][2] < 0 or len({c[3] for c in group}) != 1 \
                or sorted(c[1] for c in group) != issues:
            continue
        wait = waits[0]
        loops = [ip for ip, ins in enumerate(k.ins)
                 if ins[0] == opcodes.LOOP and ip < wait < _loop_end(k, ip)]
        if not loops:
            continue
        loop = loops[-1]
        levels = _body_levels(k, loop)
        before = [c for c in group if c[1] < loop]
        inside = [c for c in group if wait < c[0] and c[1] < _loop_end(k, loop)
                  and opcodes.LOOP not in levels[c[0]]]
        chained = {at for c in inside for at in range(c[0], c[1] + 1)}
        if levels[wait] or len(before) != 1 or len(before) + len(inside) != len(group) or \
                not _straight_into(k, before[0][1] + 1, loop, mc) or \
                any(_names(k.ins[at], mc) for at in range(loop, _loop_end(k, loop))
                    if at != wait and at not in chained):
            continue
        out[mc] = (loop, wait, group)
    return out


def _loop_end(k, ip: int):
    """The ip of the END of the LOOP at ``ip``."""
    return k.ins[ip][1]


def _enclosing_loop(k, ip: int):
    """The ip of the innermost LOOP around the instruction at ``ip``, or None."""
    return max((at for at in range(ip) if k.ins[at][0] == opcodes.LOOP
                and _loop_end(k, at) > ip), default=None)


def _alike(k, ip: int, uniform) -> bool:
    """Whether every lane of a warpgroup that executes the instruction at ``ip`` together
    with the others goes on or ends as they do: register arithmetic that cannot fault or
    faults on uniform operands, a BREAK_IF or CONTINUE_IF on a uniform value, a trigger of
    or a wait for an event slot that is the same in every lane."""
    ins = k.ins[ip]
    reads_uniform = all(uniform.uniform(ip, r) for r in registers_read(k.code, ins))
    if ins[0] in (opcodes.BREAK_IF, opcodes.CONTINUE_IF, opcodes.TRIGGER, opcodes.WAIT_EVENT):
        return reads_uniform
    return _quiet(ins) or arithmetic(ins) and reads_uniform


def _meets_once_in(k, loop: int, uniform) -> int:
    """The outermost LOOP around the slice loop at ``loop`` in whose body everything but
    that slice loop (or the loop that holds it) is ``_alike``: a lane of the warpgroup
    ends there only with the others, so that what the slice loop's meeting found (the
    terminated lanes, the step count) holds in every later iteration; -1 if none."""
    found, inner = -1, loop
    while (outer := _enclosing_loop(k, inner)) is not None and all(
            _alike(k, at, uniform) for at in range(outer + 1, _loop_end(k, outer))
            if not inner <= at <= _loop_end(k, inner)):
        found, inner = outer, outer
    return found


def plan_chains(k) -> Chains:
    """The chains and regions of kernel ``k`` (on sm_90a; none elsewhere)."""
    from .emit_kernel import _coll_operand
    from .emit_mma import wgmma_plan
    out = Chains({}, set(), {}, {}, {})
    if k.arch != "sm_90a":
        return out
    chains = []          # (first, last, execs, key, wait)
    ip = 0
    while ip < len(k.ins):
        found = _chain(k, ip)
        if found is None:
            ip += 1
            continue
        chains.append((ip, *found))
        ip = found[0] + 1
    carried = _carried(k, [c for c in chains if c[4] == CARRIED])
    chains = [c if c[4] != CARRIED else c if c[3][0] in carried else
              (c[0], c[2][-1], c[2], c[3], None) for c in chains]
    by_first = {c[0]: c for c in chains}
    uniform = Uniformity(k.code, k.ins) if chains else None
    regions = []
    taken = set()
    hoisted = {}         # LOOP regions, whose chains meet before the loop -> Region.once
    for ip, ins in enumerate(k.ins):
        if ins[0] != opcodes.LOOP or not chains:
            continue
        end = _loop_end(k, ip)
        body, keys, at = [], set(), ip + 1
        while at < end:
            if at in by_first and by_first[at][4] is None:
                body.append(by_first[at])
                keys.add(by_first[at][3])
                at = by_first[at][1] + 1
            elif (k.ins[at][0] == opcodes.BREAK_IF and uniform.uniform(at, k.ins[at][1])) \
                    or _quiet(k.ins[at]):
                at += 1
            else:
                break
        if at == end and len(keys) == 1:
            regions.append((ip, end, body))
            hoisted[ip] = _meets_once_in(k, ip, uniform)
            taken |= {c[0] for c in body}
    for c in chains:
        if c[0] not in taken and c[4] != CARRIED:
            regions.append((c[0], c[1], [c]))
    for mc, (loop, wait, group) in carried.items():
        regions.append((group[0][0], _loop_end(k, loop), group))
    for first, last, body in regions:
        mc, _, M, N, _ = body[0][3]
        plan = wgmma_plan(k, k.ins[body[0][2][0]])
        across = mc in carried and body is carried[mc][2]
        wait = carried[mc][1] if across else body[0][4]
        execs = tuple(e for chain in body for e in chain[2])
        region = Region(first, last if wait is None or across else wait, mc, plan,
                        M, N, body[-1][2][-1], execs, wait is not None,
                        hoisted=body[0][0] if first in hoisted else -1,
                        once=hoisted.get(first, -1),
                        wait=wait if across else -1,
                        issues=tuple((c[0], len(c[2])) for c in body))
        out.starts[first] = region
        if region.once >= 0:
            out.once.setdefault(region.once, []).append(region)
        out.ends[region.last] = region
        if wait is not None:
            out.silent.add(wait)
        if region.carried:
            out.carried.add(mc)
            out.lands[wait] = region
            out.takes.update((c[0], region) for c in body[1:])
        for start, end, chain_execs, _, _ in body:
            for at in range(start, end + 1):
                if _coll_operand(k.ins[at]) is not None and k.ins[at][0] in (
                        opcodes.MMA_LOAD, opcodes.MMA_EXEC):
                    out.role[at] = "inner" if at != start else \
                        "hoisted" if region.hoisted >= 0 else "first"
                    if out.role[at] == "hoisted":
                        out.met[at] = region
                elif k.ins[at][0] in (opcodes.MMA_ASYNC, opcodes.MMA_WAIT):
                    out.silent.add(at)
            for e in chain_execs:
                out.region_of[e] = region
    for r in out.ends.values():
        if r.waits:      # wgmma.wait_group leaves the newest groups in flight, theirs
            r.depth = _depth(k, r, out.ends.values())
    issues: dict = {}
    for ip, ins in enumerate(k.ins):
        if ins[0] == opcodes.MMA_ASYNC:
            issues.setdefault(ins[1], []).append(ip)
    out.uncounted = {m for m, ips in issues.items() if all(ip in out.silent for ip in ips)}
    return out


def _depth(k, r: Region, regions) -> int:
    """The commit groups of other regions of `wait`s that every path from ``r``'s issue
    to its wait commits after it and that are still open there: of a region in a straight
    run, those issued between its last exec and its wait; of a carried region, those the
    loop's body issues at its top level before the wait (in this iteration, after the
    group it waits for, which the iteration before or the run into the loop issued)."""
    if r.carried:
        loop = next(ip for ip in range(r.wait, -1, -1) if k.ins[ip][0] == opcodes.LOOP
                    and _loop_end(k, ip) == r.last)
        levels = _body_levels(k, loop)
        after = {at for at in range(loop + 1, r.wait) if not levels[at]}
        at_wait = r.wait
    else:
        after = set(range(r.execs[-1] + 1, r.last))
        at_wait = r.last
    return sum(n for o in regions if o is not r and o.waits
               for first, n in o.issues
               if first in after and (o.carried or o.last > at_wait))


# ------------------------------------------------------------------ emitted code

def _tile_loops(region: Region) -> tuple[str, str]:
    return (f"CQ_UNROLL for (int mt = 0; mt < {region.m}; mt += 64)",
            f"  CQ_UNROLL for (int nt = 0; nt < {region.n}; nt += {region.plan.n}) {{")


def copy(region: Region) -> str:
    """The region's accumulator copy of tile (mt, nt): ``wq<m>[tile]``."""
    return f"{region.name}[mt / 64 * {region.n // region.plan.n} + nt / {region.plan.n}]"


def _move(k, region: Region, ins, into_copy: bool) -> None:
    from .emit_mma import wgmma_cell
    cell, q = wgmma_cell(k, region.mc), copy(region) + "[i]"
    dst, src = (q, cell) if into_copy else (cell, q)
    each = f"    CQ_UNROLL for (int i = 0; i < {region.plan.shape}::ND; i++) {dst} = {src};"
    for line in (*_tile_loops(region), each, "  }"):
        k.line(line, ins)


def take(k, region: Region, ins) -> None:
    """The accumulator's registers into the region's copy, which the wgmmas chain on."""
    _move(k, region, ins, True)


def land(k, region: Region, ins, depth: int = 0) -> None:
    """Wait for the region's wgmma groups (all but the newest ``depth`` groups) and copy
    the results back."""
    W = region.plan.shape
    for line in (*_tile_loops(region), f"    cq_wgmma_wait<{depth}, {W}>({copy(region)});",
                 "  }"):
        k.line(line, ins)
    _move(k, region, ins, False)


def open_region(k, region: Region, ins) -> None:
    if region.waits:     # no C block: the regions of `wait`s overlap
        k.line("// a wgmma region: the wgmmas below are waited for at their `wait`", ins)
    else:
        k.line("{  // a wgmma region: the wgmmas below are waited for where it ends", ins)
        k.depth += 1
    k.in_wgmma_region += 1
    W = region.plan.shape
    k.line(f"{W}::c_value {region.name}[{region.tiles}][{W}::ND];", ins)
    take(k, region, ins)
    if region.hoisted >= 0:
        _meet_before_loop(k, region, ins)


def _gone(region: Region) -> list[str]:
    """The lanes of the warpgroup that the meeting before the slice loop found
    terminated: four words of 32 (``_meet_before_loop``)."""
    return [f"hg{region.hoisted}_{w}" for w in range(4)]


def _met(region: Region) -> str:
    """Whether the slice loop has met since its ``once`` loop began."""
    return f"hm{region.hoisted}"


def _meet_before_loop(k, region: Region, ins) -> None:
    """The meeting of a slice loop's chains, before the loop: the lanes of the warpgroup
    meet at the first chain's collective and note which have terminated (``_gone``),
    which each chain's first collective then reports as it would after meeting
    (UNIT_TERMINATED, ``terminated_check``) -- the same lanes: inside the loop a lane
    ends only by a fault every lane of the warpgroup takes alike, or by the step limit,
    which the lanes reach together from the count they agree on here (without a step
    limit the counts decide nothing, and are left as they are). A second meeting keeps a
    lane that leaves in the loop from being noted as terminated by a lane slower to
    note.

    In a loop where lanes end only together besides (``Region.once``: a K loop, whose
    slabs are the slice loop's runs), what the first run's meeting found holds in every
    later one, so the slices meet only in the loop's first iteration that reaches them;
    their region's closing rendezvous is then the slab's one."""
    at = region.hoisted
    slot = f"(unsigned long long *)(smem + {k.off_steps}) + lane / 128"
    n = k.wait_site_for(k.ins[at], at)
    gone = ", ".join(f"{g} = cq_coll_gone(hl, {w})" for w, g in enumerate(_gone(region)))
    lines = [f"const cq_coll hl = {k.coll(at)};",
             f"if (cq_limit != ~0ull) cq_steps_offer({slot}, cq_steps);",
             f"cq_coll_sync(hl, {n});   // the slices below meet no more",
             f"{gone};" if region.once >= 0 else f"const unsigned {gone};",
             f"if (cq_limit != ~0ull) cq_steps = cq_steps_largest({slot});",
             f"cq_coll_sync(hl, {n});   // no lane leaves before all have noted them"]
    if region.once >= 0:
        lines = [f"if (!{_met(region)}) {{   // the slabs after the first meet no more",
                 *("  " + line for line in lines), f"  {_met(region)} = true;", "}"]
    for line in lines:
        k.line(line, ins)


def declare_once(k, ip: int, ins) -> None:
    """Before a LOOP in which slice loops meet once (``Region.once``): what their
    meetings find, and whether they have met."""
    for region in k.chains.once.get(ip, ()):
        k.line(f"bool {_met(region)} = false;   // a slice loop in the loop below meets "
               f"in its first slab only", ins)
        k.line(f"unsigned {', '.join(g + ' = 0' for g in _gone(region))};", ins)


def terminated_check(k, ins, ip) -> None:
    """UNIT_TERMINATED at a slice's first collective, from what the meeting before its
    loop found (``_meet_before_loop``)."""
    from .emit_kernel import _coll_operand
    c = _coll_operand(ins)
    gone = _gone(k.chains.met[ip])
    k.fault(f"({' | '.join(gone)}) != 0", Kind.UNIT_TERMINATED, ins, ip, ("cl.lo", *gone),
            lambda a, refs, c=c: (c, 128, int(a[0]) // 128, tuple(
                int(a[0]) + 32 * w + b for w in range(4) for b in range(32)
                if (int(a[1 + w]) >> b) & 1)))


def before(k, ip: int, ins) -> None:
    """What a region needs before the instruction at ``ip``: opened, or its accumulator
    taken into its copy again by a chain of a carried region."""
    declare_once(k, ip, ins)
    region = k.chains.starts.get(ip)
    if region:
        open_region(k, region, ins)
    elif ip in k.chains.takes:
        take(k, k.chains.takes[ip], ins)


def after(k, ip: int, ins) -> None:
    """What a region needs after the instruction at ``ip``: a carried region's wait, or
    the region's end."""
    if ip in k.chains.lands:
        _land_carried(k, k.chains.lands[ip], ins)
    region = k.chains.ends.get(ip)
    if region:
        close_region(k, region, ins)


def pending(m: int) -> str:
    """The lane's register holding the pending count of carried accumulator ``m``."""
    return f"wp{m}"


def close_region(k, region: Region, ins) -> None:
    if region.carried:  # after its loop: its groups were waited for in the loop
        pass
    elif region.waits:
        _close_at_wait(k, region, ins)
    else:
        land(k, region, ins)
        n = k.wait_site_for(k.ins[region.meet], region.meet)
        k.line(f"cq_coll_sync({k.coll(region.meet)}, {n});   // no lane goes on while a "
               f"wgmma of its warpgroup may read", ins)
        k.depth -= 1
        k.line("}", ins)
    k.in_wgmma_region -= 1


def _close_at_wait(k, region: Region, ins) -> None:
    """`wait f` of an asynchronous exec's region: wgmma.wait_group leaves the groups of
    the regions issued after it in flight (``region.depth``), its results go back, and
    the unit meets as the wait does: a lane may have terminated since the exec
    (UNIT_TERMINATED). Nothing else names the accumulator in between (``_wait_after``),
    so the wait finds it pending, as MMA_NOT_PENDING asks."""
    from .emit_mma import frag_ref
    from .emit_sync import collective
    land(k, region, ins, region.depth)
    with collective(k, ins, region.last, True, frag_ref(k, region.mc)[2], whole_unit=True,
                    meet="entry"):
        k.line("// no lane goes on while a wgmma of its warpgroup may read", ins)


def _land_carried(k, region: Region, ins) -> None:
    """`wait f` of a carried region: as ``_close_at_wait``, and after meeting, the pending
    count that the lane keeps (``pending``) must be one (MMA_NOT_PENDING), then zero."""
    from .emit_mma import frag_ref
    from .emit_sync import collective
    m = region.mc
    land(k, region, ins, region.depth)
    with collective(k, ins, region.wait, True, frag_ref(k, m)[2], whole_unit=True,
                    meet="entry"):
        k.line(f"if (!{pending(m)}) cq_coll_sync(cl, {k.wait_site_for(ins, region.wait)});"
               f"   // every lane alike: each has checked its unit before one leaves", ins)
        k.fault(f"!{pending(m)}", Kind.MMA_NOT_PENDING, ins, region.wait, (),
                lambda a, refs, m=m: (m,))
        k.line(f"{pending(m)} = 0;   // no lane goes on while a wgmma of its warpgroup "
               f"may read", ins)
