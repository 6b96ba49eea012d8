"""Instruction handlers of the CUDA generator that synchronise lanes or move tiles:
collectives, ONCE, events, DMA and futures, MMA, output and checks (LANGUAGE.md §7.2,
§7.4, §9, §10, §11, §13; docs/EXECUTION.md §4-§8).

Conventions as in ``emit_ops``. A collective is emitted as: rendezvous (``cq_coll_sync``),
the effect shared out among the participants by rank, rendezvous again (opcodes.py: a
collective implies a barrier of its participants before and after its effect). Every
participant computes the operands itself (they are uniform, §7.4.5), so each also
detects the same faults; the fault record keeps the lowest lane's, as the engines
report the lowest participant's.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..core import dtypes
from ..bytecode.module import BaseKind, DmaOp, swizzled_sides
from ..bytecode.opcodes import BAR_ARRIVE
from ..core.faults import Kind
from ..core.limits import NAMED_BARRIERS, WARP_SIZE
from ..reports.messages import print_registers
from . import cnum, departure, emit_tma
from .emit_copy import fill_future, tile_copy
from .emit_kernel import TMA_BAR_BYTES, bulk_load, tma_load
from .emit import span_of
from .emit_ops import allocate, buffer_instance, future_view


def wait_site(k, ins, ip, text: str) -> int:
    from .emit_kernel import _coll_operand
    c = _coll_operand(ins)
    return k.site(None, ip, ins[-1], text=text, coll=-1 if c is None else c)


@contextmanager
def collective(k, ins, ip, is_collective: bool, lo_hi=None, whole_unit=False,
               meet="both"):
    """Wraps an effect: for a collective, a rendezvous before and after it and the
    lane's share (part, parts) of the work among the participants (of the lanes
    [lo, hi) when given: a fragment's instance); else the lane does it all.
    ``whole_unit``: an mma operation, which needs every lane of its warp or warpgroup
    (§11.2): a terminated one is a fault. ``meet``: "entry" for the first collective
    of a wgmma chain, "none" for the others (emit_wgmma), which meet no more."""
    k.line("{", ins)
    k.depth += 1
    if not is_collective:
        yield "0", "1"
    else:
        site = k.colls[ip][0]
        k.line(f"const cq_coll cl = {k.coll(ip)};", ins)
        if meet != "none":
            n = wait_site(k, ins, ip, site.text)
            k.line(f"cq_coll_sync(cl, {n});", ins)
            if whole_unit and site.unit in (32, 128) and departure.may_depart(k, ip):
                _unit_terminated(k, ins, ip, site, n)
        if lo_hi is not None:
            k.line(f"const cq_coll share = cq_coll{{cl.bar, cl.members, cl.live, "
                   f"{lo_hi[0]}, {lo_hi[1]}}};", ins)
        else:
            k.line("const cq_coll &share = cl;", ins)
        k.line("const int part = cq_coll_rank(share, lane), parts = cq_coll_parts(share);",
               ins)
        yield "part", "parts"
        if meet == "both":
            k.line(f"cq_coll_sync(cl, {n});", ins)
    k.depth -= 1
    k.line("}", ins)


def _unit_terminated(k, ins, ip, site, n: int) -> None:
    """UNIT_TERMINATED: members of the lane's unit instance that have terminated; the
    fault carries the instance's first lane and the terminated lanes as bit words.

    Every lane that met finds the same lanes gone, and so faults; they meet again before
    any leaves, or a slower lane would find the faster ones gone too (the interpreter
    names the lanes gone when the unit met). Only a fault's way out pays for it. A lane
    finds none gone while another finds one only when that one ended after meeting: in
    the collective, whose end meets on the same barrier, or in a wgmma chain, where every
    lane ends alike (emit_wgmma)."""
    # four words of bits, each computed whole: no array indexed at run time
    k.line("const unsigned gone0 = cq_coll_gone(cl, 0), gone1 = cq_coll_gone(cl, 1), "
           "gone2 = cq_coll_gone(cl, 2), gone3 = cq_coll_gone(cl, 3);", ins)
    coll = _site_index(k, ip)
    k.fault("(gone0 | gone1 | gone2 | gone3) != 0", Kind.UNIT_TERMINATED, ins, ip,
            ("cl.lo", "gone0", "gone1", "gone2", "gone3"),
            lambda a, refs, c=coll, u=site.unit: (c, u, int(a[0]) // u, tuple(
                int(a[0]) + 32 * w + b for w in range(4) for b in range(32)
                if (int(a[1 + w]) >> b) & 1)), first=f"cq_coll_sync(cl, {n});")


def _site_index(k, ip) -> int:
    from .emit_kernel import _coll_operand
    return _coll_operand(k.ins[ip])


def op_fence(k, ins, ip):
    """sync.fence (§6.8): a CTA-scope fence orders memory for any unit of the block."""
    k.line("cq_fence_block();", ins)


def op_barrier(k, ins, ip):
    site = k.colls[ip][0]
    k.line(f"cq_coll_sync({k.coll(ip)}, {wait_site(k, ins, ip, site.text)});", ins)


def op_named_barrier(k, ins, ip):
    """``__bar_sync`` / ``__bar_arrive`` (§6.8): barrier.sync / barrier.arrive, after the
    checks of the id and the count that the engines make; a count mixed within a phase is
    reported by the CPU runtime (a GPU leaves it to the hardware), and a warp not all there
    or split over two barriers is left to the barrier itself."""
    _, a, b, c = ins[:4]
    k.line("{", ins)
    k.depth += 1
    k.fault(f"r{a} < 1 || r{a} >= {NAMED_BARRIERS}", Kind.BAR_ID, ins, ip,
            (f"(long long)r{a}",), lambda args, refs, c=c: (c, int(args[0])))
    k.line(f"const int limit = (nlanes + {WARP_SIZE - 1}) / {WARP_SIZE} * {WARP_SIZE};", ins)
    k.fault(f"r{b} <= 0 || r{b} % {WARP_SIZE} || r{b} > limit", Kind.BAR_COUNT, ins, ip,
            (f"(long long)r{b}", "(long long)limit"),
            lambda args, refs, c=c: (c, int(args[0]), int(args[1])))
    call = "cq_bar_arrive" if k.ins[ip][0] == BAR_ARRIVE else "cq_bar_sync"
    mixed = k.site(Kind.BAR_COUNT_DIFFERS, ip, span_of(ins),
                   lambda args, refs, c=c: (c, int(args[0]), int(args[1]), int(args[2])))
    k.line(f"if (!{call}(r{a}, r{b}, {wait_site(k, ins, ip, k.code.colls[c].text)}, "
           f"{mixed})) cq_leave();", ins)
    k.depth -= 1
    k.line("}", ins)


def op_grid_sync(k, ins, ip):
    """A grid barrier (§7.1.4): the participants of the block meet, the lowest-ranked
    arrives at the grid barrier for the block (``cq_grid_sync``, which needs every block
    resident: a cooperative launch), and the participants meet again, so none goes on
    before the grid barrier has released its block. ``finished`` is the fault the CPU
    runtime records when a block finished the kernel without arriving (GRID_FINISHED):
    its values are that block's index."""
    c = ins[1]
    rank = max(len(l.grid) for l in k.fn.host.launches if l.kernel == k.index)
    finished = k.site(Kind.GRID_FINISHED, ip, span_of(ins),
                      lambda args, refs, c=c, r=rank: (c, tuple(int(x) for x in args[:r])))
    k.line("{", ins)
    k.depth += 1
    k.line(f"const cq_coll cl = {k.coll(ip)};", ins)
    n = wait_site(k, ins, ip, k.code.colls[c].text)
    k.line(f"cq_coll_sync(cl, {n});", ins)
    k.line(f"cq_grid_sync(cq_coll_rank(cl, lane) == 0, {n}, {finished});", ins)
    k.line(f"cq_coll_sync(cl, {n});", ins)
    k.depth -= 1
    k.line("}", ins)


# --------------------------------------------------------------------------- ONCE (§7.2.2)

def op_once(k, ins, ip):
    """The lane's n-th arrival at the site claims execution n of its instance unless
    another lane has; the IF on the result that follows is the effect block."""
    _, r, site, unit = ins[:4]
    k.line(f"r{r} = cq_once_claim((unsigned *)(smem + {k.off_once[site]}) + "
           f"2 * {k.unit_index(unit)}, ++on{site});", ins)
    k.pending_once = (r, site, unit)


def close_once(k, ins, once) -> None:
    """End of an effect block: the claiming lane publishes the execution count; the
    other lanes of the instance wait for it, so the effect is visible to them from the
    next instruction on."""
    _, site, unit = once
    flag = f"(unsigned *)(smem + {k.off_once[site]}) + 2 * {k.unit_index(unit)} + 1"
    k.line(f"cq_flag_publish({flag}, on{site});", ins)
    k.depth -= 1
    n = wait_site(k, ins, -1, "outer-level statement")
    k.line(f"}} else cq_flag_wait({flag}, on{site}, {n});", ins)


# --------------------------------------------------------------------------- events (§10)

def _slot(k, ins, ip, e: int, r: int) -> str:
    ev = k.code.events[e]
    k.line(f"const long long slot = (long long)r{r};", ins)
    k.fault(f"slot < 0 || slot >= {ev.slots}", Kind.EVENT_INDEX, ins, ip, ("slot",),
            lambda a, refs, e=e, n=ev.slots: (int(a[0]), e, n))
    return f"(unsigned *)(smem + {k.off_event[e]}) + slot"


def op_trigger(k, ins, ip):
    _, e, r = ins[:3]
    k.line("{", ins)
    k.depth += 1
    counter = _slot(k, ins, ip, e, r)
    if e in k.off_landings:     # the TMA copies the lane bound, published with its arrival
        k.line(f"if (cq_handed) {{ cq_landings_publish({_landings(k, e, 'slot')}, "
               f"cq_handed); cq_handed = 0; }}", ins)
    k.line(f"cq_event_trigger({counter});", ins)
    k.depth -= 1
    k.line("}", ins)


def _landings(k, e: int, slot: str) -> str:
    """The set of TMA barriers published at slot ``slot`` of event ``e`` (§10.7)."""
    return f"(unsigned long long *)(smem + {k.off_landings[e]}) + {slot}"


def _wait_landings(k, ins, e: int, slot: str, site: int) -> None:
    """After a wait of event ``e`` has passed: the copies published at the slot land."""
    if e in k.off_landings:
        k.line(f"cq_landings_wait({_landings(k, e, slot)}, {k.tma_bars()}, "
               f"{TMA_BAR_BYTES}, {site});", ins)


def op_trigger_cluster(k, ins, ip):
    """§10.8: one arrival at the slot in the shared memory of every block of the cluster
    (a thread block cluster, whose distributed shared memory sm_90a has)."""
    _, e, r = ins[:3]
    if k.arch != "sm_90a":
        raise k.needs_arch("sm_90a", "'trigger.cluster' (an arrival in every block of a "
                                     "thread block cluster)", ins)
    k.line("{", ins)
    k.depth += 1
    k.line(f"cq_event_trigger_cluster({_slot(k, ins, ip, e, r)});", ins)
    k.depth -= 1
    k.line("}", ins)


def op_wait_event(k, ins, ip):
    _, e, r = ins[:3]
    ev = k.code.events[e]
    k.line("{", ins)
    k.depth += 1
    counter = _slot(k, ins, ip, e, r)
    n = wait_site(k, ins, ip, k.spans.text(ins[-1]))
    # the lane's wait count of the slot, picked out by comparisons: an array indexed at
    # run time would live in local memory
    k.line(f"unsigned want = cq_pick(ew{e}, slot);", ins)
    k.line(f"cq_event_wait({counter}, en{e}, {int(ev.ready)}u, &want, {n});", ins)
    k.line(f"cq_put(ew{e}, slot, want);", ins)
    _wait_landings(k, ins, e, "slot", n)
    k.depth -= 1
    k.line("}", ins)


def op_wait_event_at(k, ins, ip):
    """§10.6: a parity wait on slot order % N for generation order / N; it passes while
    the slot's completed count has the parity of that generation + 1, as an mbarrier
    try_wait.parity of phase (order / N) % 2 does."""
    _, e, r = ins[:3]
    ev = k.code.events[e]
    k.line("{", ins)
    k.depth += 1
    k.line(f"const long long order = (long long)r{r};", ins)
    k.fault("order < 0", Kind.EVENT_INDEX, ins, ip, ("order",),
            lambda a, refs, e=e, n=ev.slots: (int(a[0]), e, n))
    counter = f"(unsigned *)(smem + {k.off_event[e]}) + order % {ev.slots}"
    n = wait_site(k, ins, ip, k.spans.text(ins[-1]))
    k.line(f"cq_event_wait_parity({counter}, en{e}, {int(ev.ready)}u, "
           f"(unsigned)(order / {ev.slots}), {n});", ins)
    _wait_landings(k, ins, e, f"order % {ev.slots}", n)
    k.depth -= 1
    k.line("}", ins)


def op_fut_bind(k, ins, ip):
    """§10.7: the lane hands its part of the transfer to the TRIGGER that follows, which
    publishes it with a release; the lane's future counts as waited, and a second
    completion faults. A TMA copy (on sm_90a, where the event has a set of published
    barriers) is handed over in flight: the trigger adds its barrier to the slot's set,
    and the event's waiters wait for it. Any other copy lands first: the lane's cp.async
    copies, a TMA copy elsewhere on its barrier; every other copy moved at issue."""
    f = f"f{ins[1]}"
    k.line("{", ins)
    k.depth += 1
    land = f"cq_future_land({f}, {wait_site(k, ins, ip, 'trigger')});"
    if k.bindings.get(ip) in k.off_landings:
        k.line(f"if ({f}.tma && !{f}.waited) cq_handed |= 1ull << (((unsigned char *)"
               f"{f}.tma - {k.tma_bars()}) / {TMA_BAR_BYTES}); else {land}", ins)
    else:
        k.line(land, ins)
    k.fault(f"{f}.has_data && {f}.is_async && {f}.waited", Kind.FUTURE_WAITED_TWICE, ins, ip,
            (), lambda a, refs, n=ins[1]: (n,))
    k.line(f"if ({f}.has_data && {f}.is_async) {f}.waited = 1;", ins)
    k.depth -= 1
    k.line("}", ins)


# --------------------------------------------------------------------------- views

def view(k, v: int, name: str, ins, ip) -> None:
    """Declares ``cq_view name``: view ``v`` of the code for this lane (§8.1)."""
    d = k.code.views[v]
    if d.base_kind == BaseKind.FUT:
        k.line(f"cq_view {name} = {future_view(k, d.base, ins, ip)};", ins)
    else:
        k.line(f"cq_view {name} = {buffer_instance(k, d.base, d.arr, ins, ip).view()};", ins)
    first = f"(long long)r{d.flat}"
    if d.flat >= 0 and d.base_kind == BaseKind.FUT:
        rank = len(k.code.futures[d.base].shape)
        k.line(f"long long {name}_start = 0;", ins)
        k.fault(f"!cq_view_window({name}, &{name}_start)", Kind.FUTURE_NOT_CONTIGUOUS, ins, ip,
                (f"{name}.slot", f"{name}.index",
                 *(f"{name}.origin[{j}]" for j in range(rank)),
                 *(f"{name}.ext[{j}]" for j in range(rank))),
                lambda a, refs, f=d.base, n=rank: (
                    f, refs(int(a[0]), int(a[1])), tuple(int(x) for x in a[2:2 + n]),
                    tuple(int(x) for x in a[2 + n:2 + 2 * n])))
        first = f"{name}_start + {first}"
    outside = (f"{name}.slot", f"{name}.index", f"{name}_at",
               f"cq_elements({name}.dims, {name}.rank)")
    if d.space:
        space = ", ".join(f"(long long)r{r}" for r in d.space)
        k.line(f"const long long {name}_space[{len(d.space)}] = {{{space}}};", ins)
        k.line(f"const long long {name}_at = {first};", ins)
        k.fault(f"!cq_view_reshape({name}, {name}_at, {name}_space, {len(d.space)})",
                Kind.TILE_OUTSIDE, ins, ip, outside, _outside_operands)
    exts = ["1" if d.shown and j not in d.shown else f"(long long)r{e}"   # .sqz(): 1 deep
            for j, e in enumerate(d.extents)]
    if d.strides:
        n = len(d.strides)
        k.line(f"const long long {name}_org[{n}] = {{{_regs(d.origin)}}}, "
               f"{name}_step[{n}] = {{{_regs(d.strides)}}}, "
               f"{name}_ext[{n}] = {{{', '.join(exts)}}};", ins)
        k.line(f"long long {name}_at = 0;", ins)
        k.fault(f"!cq_view_strided({name}, {first}, {name}_org, {name}_step, {name}_ext, {n}, "
                f"&{name}_at)", Kind.TILE_OUTSIDE, ins, ip, outside, _outside_operands)
        return
    for j, (o, ext) in enumerate(zip(d.origin, exts)):
        k.line(f"{name}.origin[{j}] += (long long)r{o}; {name}.ext[{j}] = {ext};", ins)


def _regs(regs) -> str:
    return ", ".join(f"(long long)r{r}" for r in regs)


def _outside_operands(a, refs):
    """TILE_OUTSIDE of a reshaped or strided view: the position, the buffer's size."""
    return (refs(int(a[0]), int(a[1])), (int(a[2]),), (int(a[3]),))


def squeeze(k, v: int, name: str, ins) -> None:
    """``name`` as the dimensions view ``v`` shows (.sqz(), §8.3.4), once the checks
    that read all of them are made."""
    d = k.code.views[v]
    if d.shown:
        k.line(f"{{ const int shown[{len(d.shown)}] = {{{', '.join(map(str, d.shown))}}}; "
               f"cq_view_squeeze({name}, {len(d.shown)}, shown); }}", ins)


def _tile_operands(kind, rank):
    """EMPTY_TILE / TILE_OUTSIDE from cq_check_tile's values."""
    def operands(args, refs):
        ref = refs(int(args[0]), int(args[1]))
        origin = tuple(int(x) for x in args[2:2 + rank])
        return (ref, origin, tuple(int(x) for x in args[2 + rank:2 + 2 * rank]))
    return operands


def check_tile(k, name: str, rank: int, ins, ip) -> None:
    n = k.site(Kind.EMPTY_TILE, ip, ins[-1], _tile_operands(Kind.EMPTY_TILE, rank))
    k.site(Kind.TILE_OUTSIDE, ip, ins[-1], _tile_operands(Kind.TILE_OUTSIDE, rank))
    k.line(f"if (!cq_check_tile({name}, {n})) cq_leave();", ins)


def view_rank(k, v: int) -> int:
    return len(k.code.views[v].origin)


def shown_rank(k, v: int) -> int:
    """The rank view ``v`` shows as an operand."""
    return len(k.code.views[v].shown_extents)


# --------------------------------------------------------------------------- DMA (§9)

def never_waited_checks(k, ip, ins=None) -> None:
    """§9.5.4: the lane ends (the kernel, or YIELD) with an async copy it never waited."""
    for n, decl in enumerate(k.code.futures):
        if not decl.is_async:
            continue
        site = k.site(Kind.NEVER_WAITED, -1, k.kernel.span,
                      lambda a, refs, f=n: (int(a[0]), f))
        k.line(f"if (cq_future_pending(f{n})) {{ cq_fault({site}, (long long)f{n}.issued); "
               f"cq_leave(); }}", ins)


def op_dma(k, ins, ip):
    _, d, c = ins[:3]
    desc = k.code.dmas[d]
    if desc.multicast and k.arch != "sm_90a":
        # each block loads its own copy of the tile (§9.7), but sm_80 has no TMA at all
        raise k.needs_arch("sm_90a", f"'{desc.text}.multicast' (a TMA load into every block "
                                     f"of a cluster)", ins)
    rank = shown_rank(k, desc.src)
    bulk_rows = bulk_load(k, desc) and c >= 0
    tensor = c >= 0 and emit_tma.plan(k, desc) in k.tmaps     # a tensor-map TMA box
    bulk = bulk_rows or tensor
    if bulk:
        k.line(f"cq_tma_bar *tb{ip} = 0;", ins)
    with collective(k, ins, ip, c >= 0) as (part, parts):
        if desc.future >= 0:
            n = k.site(Kind.NEVER_WAITED, ip, ins[-1], lambda a, refs, f=desc.future:
                       (int(a[0]), f))
            k.line(f"if (cq_future_pending(f{desc.future})) {{ cq_fault({n}, (long long)"
                   f"f{desc.future}.issued); cq_leave(); }}", ins)
        # a TMA load with a tensor map is written out (its box, else element copies);
        # other TMA loads keep the general path's bulk row copies
        fast = None if bulk_rows and not tensor else tile_copy(k, desc, ins, ip, part, parts)
        if fast != "done":
            _general_copy(k, d, ins, ip, part, parts, rank, tensor, bulk_rows)
        if fast == "guarded":
            k.depth -= 1
            k.line("}", ins)
    if bulk:
        _bulk_complete(k, ins, ip, desc)


def _general_copy(k, d, ins, ip, part, parts, rank, tensor, bulk_rows) -> None:
    """DMA ``d`` through the runtime's ``cq_dma`` record, for what emit_copy does not
    write out: any view, permutation, padding, swizzle and shape known at run time."""
    desc = k.code.dmas[d]
    k.line("cq_dma dm = {};", ins)
    view(k, desc.src, "src", ins, ip)
    check_tile(k, "src", view_rank(k, desc.src), ins, ip)
    squeeze(k, desc.src, "src", ins)
    k.line(f"dm.src = src; dm.op = {int(desc.op)}; dm.zfill = {int(desc.zfill)};", ins)
    swz_src, swz_dst = swizzled_sides(k.code, desc)
    if desc.swizzle:
        k.line(f"dm.swz_src = {swz_src}; dm.swz_dst = {swz_dst};", ins)
    layout = emit_tma.layout_of_destination(k, desc)
    if layout:      # a shared tile wgmma reads in place (emit_mma.swizzled_layouts)
        k.line(f"dm.swz_dst = {layout};", ins)
    for j, p in enumerate(desc.perm):
        k.line(f"dm.perm[{j}] = {p};", ins)
    hi = "0"
    if desc.op == DmaOp.PAD:
        t = dtypes.BY_CODE[k.code.views[desc.src].base_kind == BaseKind.FUT and
                           k.code.futures[k.code.views[desc.src].base].dtype or
                           k.code.buffers[k.code.views[desc.src].base].dtype]
        for j in range(rank):
            k.line(f"dm.pad_lo[{j}] = r{desc.pad_lo[j]}; dm.pad_mid[{j}] = "
                   f"r{desc.pad_mid[j]};", ins)
        hi = ", ".join(f"(long long)r{r}" for r in desc.pad_hi)
        k.line(f"{cnum.reg_c(t)} pv;", ins)
        k.convert_into("pv", f"r{desc.pad_value}", k.rt(desc.pad_value), t, ins, ip)
        k.line(f"{{ {cnum.store_c(t)} enc = {cnum.store_value('pv', t)}; "
               f"memcpy(dm.pad_value, &enc, sizeof enc); }}", ins)
    k.line(f"{{ const long long hi[{max(rank, 1)}] = {{{hi}}}; cq_dma_tile(dm, hi); }}", ins)
    _dma_destination(k, desc, rank, ins, ip)
    shape = k.site(Kind.DMA_SHAPE, ip, ins[-1], _shape_operands(d, rank))
    k.line(f"if (!cq_dma_fits(dm, {shape})) cq_leave();", ins)
    if tensor:
        emit_tma.issue(k, ins, ip, desc, part)
    if bulk_rows:
        _bulk_issue(k, ins, ip, desc, part)
    elif desc.is_async and desc.future >= 0 and tma_load(k, desc):
        # sm_80: 16-byte cp.async chunks where the tile allows, as cp.async.bulk would
        k.line(f"if (cq_dma_bulk_ok(dm)) {{ cq_dma_chunks_async(dm, {part}, {parts}); "
               f"cqg++; }} else", ins)
    size = _cp_async_size(k, desc)
    if size:      # cqg counts the lane's committed cp.async groups (op_wait)
        k.line(f"{{ cq_dma_move_async<{size}>(dm, {part}, {parts}); cqg++; }}", ins)
    else:
        k.line(f"cq_dma_move(dm, {part}, {parts});", ins)
    if layout:      # ordinary stores, before wgmma reads them by the async proxy
        k.line("cq_fence_proxy_async();", ins)
    if desc.future >= 0:
        fill_future(k, desc, "dm.dst", ins)


def _bulk_issue(k, ins, ip, desc, part) -> None:
    """§9.7 on sm_90a: a copy the runtime finds fit goes as TMA bulk copies, issued by the
    first participant, which publishes the parity of the barrier phase they complete;
    every other copy moves as any DMA does."""
    k.line(f"if (cq_dma_bulk_ok(dm)) {{ tb{ip} = {k.tma_bar('dm.dst')}; if ({part} == 0) {{ "
           f"{emit_tma.arm(k, ins, ip, desc, f'tb{ip}')} "
           f"cq_dma_bulk(dm, tb{ip}, {int(desc.l2_hint)}); }} }} else", ins)


def _bulk_complete(k, ins, ip, desc) -> None:
    """After the rendezvous that ends the issue, each participant reads the published
    parity: an async copy's future waits for it (op_wait), a synchronous copy at once."""
    k.line(f"if (tb{ip}) {{", ins)
    k.depth += 1
    k.line(f"const unsigned ph = cq_tma_published(tb{ip});", ins)
    if desc.is_async and desc.future >= 0:
        k.line(f"f{desc.future}.tma = tb{ip}; f{desc.future}.phase = ph;", ins)
    else:
        k.line(f"cq_tma_wait(tb{ip}, ph, {wait_site(k, ins, ip, desc.text)});", ins)
    k.depth -= 1
    k.line("}", ins)


def _cp_async_size(k, desc) -> int:
    """The element size when an async DMA can go by cp.async (a copy from a global
    buffer into shared memory of 4- or 8-byte elements), else 0."""
    from ..bytecode.module import Storage
    src = k.code.views[desc.src]
    if not desc.is_async or desc.future < 0 or desc.op != DmaOp.COPY or \
            src.base_kind != BaseKind.BUF or k.code.buffers[src.base].storage != Storage.GLOBAL:
        return 0
    if desc.dst_view >= 0:
        dst = k.code.views[desc.dst_view]
        shared = dst.base_kind == BaseKind.BUF and \
            k.code.buffers[dst.base].storage == Storage.SHARED
    else:
        shared = k.code.futures[desc.future].storage == Storage.SHARED
    size = cnum.elem_bytes(dtypes.BY_CODE[k.code.buffers[src.base].dtype])
    return size if shared and size in (4, 8) else 0


def _shape_operands(d: int, rank: int):
    def operands(args, refs):
        return (d, tuple(int(x) for x in args[:rank]),
                tuple(int(x) for x in args[rank:2 * rank]))
    return operands


def _dma_destination(k, desc, rank, ins, ip) -> None:
    """§9.4: an explicit view; else the buffer the future holds; else the statement's
    own buffer."""
    if desc.dst_view >= 0:
        view(k, desc.dst_view, "dst", ins, ip)
        check_tile(k, "dst", view_rank(k, desc.dst_view), ins, ip)
        squeeze(k, desc.dst_view, "dst", ins)
        k.line("dm.dst = dst;", ins)
        return
    if desc.future >= 0:
        k.line(f"if (f{desc.future}.has_data) dm.dst = f{desc.future}.v; else {{", ins)
    else:
        k.line("{", ins)
    k.depth += 1
    if desc.dst_buffer in k.dyn_shared or desc.dst_buffer in k.dyn_local:
        allocate(k, desc.dst_buffer, ins, ip)     # its own buffer, on first use (§9.4.1)
    k.line(f"dm.dst = {buffer_instance(k, desc.dst_buffer, -1, ins, ip).view()};", ins)
    k.depth -= 1
    k.line("}", ins)


def op_fut_any(k, ins, ip):
    k.line(f"f{ins[1]} = cq_future{{}};", ins)


def op_swap(k, ins, ip):
    a, b = ins[1], ins[2]
    k.line(f"{{ cq_future t = f{a}; f{a} = f{b}; f{b} = t; }}", ins)


def op_fut_dim(k, ins, ip):
    _, r, n, d = ins[:4]
    k.fault(f"!f{n}.has_data", Kind.FUTURE_NO_DATA, ins, ip, (), lambda a, refs, f=n: (f,))
    k.line(f"r{r} = ({cnum.reg_c(k.rt(r))})f{n}.v.ext[{d}];", ins)


def op_wait(k, ins, ip):
    """§9.5.3: the transfer completes: the lane's cp.async copies land, and a TMA bulk
    copy completes on its barrier (every other copy moved at issue); a second wait
    faults; for a collective copy the wait is also a barrier of its participants, after
    which all of them see all of the data."""
    _, n, c = ins[:3]
    k.line("{", ins)
    k.depth += 1
    if k.off_tma:     # TMA bulk copies complete on their barriers (§9.7)
        k.line(f"cq_future_land(f{n}, {wait_site(k, ins, ip, 'wait')});", ins)
    else:
        # the future's group and those before it: the groups committed after it (a
        # prefetch issued before this wait) stay in flight
        f = f"f{n}"
        k.line(f"cq_cp_async_wait_newer({f}.has_data && {f}.is_async ? cqg - {f}.group : "
               f"0u);", ins)
    if c >= 0:
        site = k.colls[ip][0]
        k.line(f"cq_coll_sync({k.coll(ip)}, {wait_site(k, ins, ip, site.text)});", ins)
    f = f"f{n}"
    k.fault(f"{f}.has_data && {f}.is_async && {f}.waited", Kind.FUTURE_WAITED_TWICE, ins, ip,
            (), lambda a, refs, f=n: (f,))
    k.line(f"if ({f}.has_data && {f}.is_async) {f}.waited = 1;", ins)
    k.depth -= 1
    k.line("}", ins)


# --------------------------------------------------------------------------- output

def op_print(k, ins, ip):
    fmt = k.code.prints[ins[1]]
    regs = print_registers(fmt)
    values = ", ".join(cnum.value_bits(f"r{r}", k.rt(r)) for r in regs) or "0ull"
    pid = k.print_id(ins[1])
    k.line(f"{{ const unsigned long long pv[{max(len(regs), 1)}] = {{{values}}}; "
           f"cq_print({pid}, {len(regs)}, pv); }}", ins)


def op_assert(k, ins, ip):
    _, r, s = ins[:3]
    k.fault(f"!r{r}", Kind.ASSERT, ins, ip, (), lambda a, refs, s=s: (s,))


def op_assert_fmt(k, ins, ip):
    _, r, p = ins[:3]
    regs = print_registers(k.code.prints[p])
    if len(regs) > 16:
        raise k.unsupported("a run-time check showing more than 16 values", ins)
    types = [k.rt(x) for x in regs]
    from .emit_kernel import bits_value
    k.fault(f"!r{r}", Kind.ASSERT_FMT, ins, ip,
            tuple(f"(long long){cnum.value_bits(f'r{x}', k.rt(x))}" for x in regs),
            lambda a, refs, p=p, ts=types: ((p, tuple(bits_value(int(v), t)
                                                      for v, t in zip(a, ts))),))


def _handlers():
    from .emit_mma import HANDLERS as MMA
    from .emit_mma_scale import HANDLERS as MMA_SCALE
    from .emit_mma_sparse import HANDLERS as MMA_SPARSE
    return {
        "BARRIER": op_barrier, "FENCE": op_fence, "ONCE": op_once, "TRIGGER": op_trigger,
        "WAIT_EVENT": op_wait_event, "DMA": op_dma, "FUT_ANY": op_fut_any, "WAIT": op_wait,
        "SWAP": op_swap, "FUT_DIM": op_fut_dim, "PRINT": op_print, "ASSERT": op_assert,
        "ASSERT_FMT": op_assert_fmt, "WAIT_EVENT_AT": op_wait_event_at,
        "FUT_BIND": op_fut_bind, "BAR_SYNC": op_named_barrier,
        "BAR_ARRIVE": op_named_barrier, "GRID_SYNC": op_grid_sync,
        "TRIGGER_CLUSTER": op_trigger_cluster, **MMA, **MMA_SCALE,
        **MMA_SPARSE,
    }


HANDLERS = _handlers()
