"""Running kernels on a CUDA device while the host program stays on the CPU engine
(ARCHITECTURE.md "The CUDA path"; LANGUAGE.md §14.2; docs/EXECUTION.md §1).

A ``Device`` is what the engine's LAUNCH calls instead of running the blocks itself:
it generates the module's CUDA once, builds it for the device (the host C++ compiler
for ``cuda-cpu``, nvcc for ``gpu``; both cached on disk), passes the launch's buffers
and scalars, and turns what the device reports -- printed records, the fault record,
a deadlock -- into the output and the ``KernelFault`` the engines would give: the same
fault record (croqvm.core.faults), so the same text.

Differences from the engines, by design of the devices: the first fault kept is the
lowest (block, lane) rather than the first in time; print lines of one launch come in
the device's order (the CPU runtime runs lane after lane, a GPU in any order); and
floating-point accumulation in UPDATEs racing on one element, and tensor-core MMA on a
GPU, round in the device's order.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from ..bytecode.opcodes import BARRIER, GRID_SYNC, SPAN, TRIGGER_CLUSTER, WIDTH
from ..core import dtypes
from ..core.errors import ArgumentError, DeviceError, InternalError, KernelFault
from ..core.faults import FaultRecord
from ..core.limits import LAUNCH_SHARED_BYTES, WARP_SIZE, resident_blocks
from ..core.numerics import convert
from ..core.position import Interrupted, RunPosition
from ..reports import messages
from ..reports import render as report
from ..reports.messages import print_text
from . import abi, cnum
from . import compile as cc
from .emit import ARCHES, GENERATOR_VERSION, emit

KINDS = ("cuda-cpu", "gpu")
CHECKS_ENV = "CROQVM_CUDA_CHECKS"      # 0: generated code without bounds checks
VERBOSE_ENV = "CROQVM_CUDA_VERBOSE"    # 1: builds report cache hits, misses and commands
ARCH_ENV = "CROQVM_CUDA_ARCH"          # cuda-cpu: the flavour of generated code it runs
CPU_ARCH = "sm_90a"                    # ... by default: every feature (wgmma, fp8 MMA)
PRINT_WORDS = 1 << 22                  # GPU print buffer, 64-bit words

# register type -> kernel parameter kind (abi.PARAM_TYPES)
PARAM_KIND = {"bool": "bool", "s8": "i8", "s16": "i16", "s32": "i32", "s64": "i64",
              "u8": "u8", "u16": "u16", "u32": "u32", "u64": "u64", "f64": "f64"}


def _param_kind(t: dtypes.DType) -> str:
    return PARAM_KIND.get(t.name, "f32")       # the other floats are float registers


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def checks_enabled() -> bool:
    return os.environ.get(CHECKS_ENV, "1") not in ("0", "")


def cpu_arch() -> str:
    """The architecture whose generated code cuda-cpu runs (CROQVM_CUDA_ARCH)."""
    arch = os.environ.get(ARCH_ENV) or CPU_ARCH
    if arch not in ARCHES:
        raise ArgumentError(f"{ARCH_ENV} is '{arch}': use {' or '.join(ARCHES)}")
    return arch


class Device:
    """``cuda-cpu`` or ``gpu`` for the calls of one process; ``log`` receives the
    build cache's hits, misses and commands."""

    def __init__(self, kind: str, *, checks: bool | None = None, log=None):
        if kind not in KINDS:
            raise ArgumentError(f"unknown CUDA device '{kind}'")
        if log is None and os.environ.get(VERBOSE_ENV):
            log = _to_stderr
        self.kind, self.log = kind, log
        self.checks = checks_enabled() if checks is None else checks
        self._loaded: dict = {}
        if kind == "gpu":
            from .driver import arch_for, require_gpu
            status = require_gpu()
            self.arch = arch_for(status["capability"])
            self.flavour = "sm_90a" if self.arch == "sm_90a" else "sm_80"
        else:
            self.arch = cc.CPU
            self.flavour = None               # cpu_arch() when a module is prepared

    # ------------------------------------------------------------------ building

    def prepare(self, module):
        """(generated module, loaded binary) for ``module``, built once per process."""
        flavour = self.flavour or cpu_arch()
        key = (id(module), flavour)
        if key not in self._loaded:
            gen = emit(module, arch=flavour, checks=self.checks)
            binary = cc.build(gen.text, self.arch, generator=GENERATOR_VERSION, log=self.log)
            self._loaded[key] = (module, gen, self._load(binary))
        _, gen, loaded = self._loaded[key]
        return gen, loaded

    def _load(self, binary):
        if self.kind == "cuda-cpu":
            from .cpu import CpuModule
            return CpuModule(binary)
        from .driver import GpuModule, open_backend
        return GpuModule(open_backend(), binary.read_bytes())

    # ------------------------------------------------------------------ launching

    def launch(self, call, hblk, index: int, grid, size: int, hregs, bound) -> None:
        """LAUNCH ``index`` of the host program, its grid, block size, scalar values
        ((kernel register, value, host type)) and bound buffers (kernel slot -> host
        buffer instances) already checked by the engine (§14.2)."""
        launch = hblk.prog.code.launches[index]
        gen, loaded = self.prepare(call.module)
        call.blocks_run += int(np.prod(grid))      # for the call's stats, as the engines
        info = gen.kernels[(call.fn.name, launch.kernel)]
        code = call.fn.kernels[launch.kernel].code
        params = []
        patterns = {}       # id of an engine array -> (it, its device patterns)
        for b in info.buffers:
            data = bound[b.slot][0].data
            device = cnum.DEVICE_NP.get(b.dtype.name)
            if device is not None:
                if id(data) not in patterns:
                    patterns[id(data)] = (data, np.ascontiguousarray(data.astype(device)))
                params.append(("ptr", patterns[id(data)][1]))
            else:
                params.append(("ptr", data))
            params += [("i64", d) for d in data.shape]
        values = {kr: (v, t) for kr, v, t in hregs}
        for r, t in info.scalars:
            v, ht = values[r]
            x = convert(np.asarray([v]), ht, t, np.ones(1, bool))[0]
            params.append((_param_kind(t), x.item()))
        at = {}                  # kernel slot -> index of its pointer among the parameters
        for k, b in enumerate(info.buffers):
            at[b.slot] = k + sum(c.rank for c in info.buffers[:k])
        params += [("tmap", abi.TensorMapArg(at[m.slot], m.box, m.swizzle))
                   for m in info.tmaps]
        barrier = _grid_barrier(code) if launch.cooperative else None
        cluster = _cluster(hblk, launch, code)
        if self.kind == "cuda-cpu":
            if barrier is not None:
                _check_resident(call, index, grid, size, barrier, resident_blocks(size))
            from .cpu import Stopped
            watch = None if call.progress is None else \
                lambda at: call.progress(cpu_position(call, index, grid, gen, at))
            try:
                outcome = loaded.launch(info.cname, grid, size,
                                        _launch_smem(info, LAUNCH_SHARED_BYTES), params,
                                        info.stack_bytes, _step_limit(call),
                                        cooperative=barrier is not None, cluster=cluster,
                                        watch=watch)
            except Stopped as stop:
                raise Interrupted(cpu_position(call, index, grid, gen, stop.position)) \
                    from None
            records = loaded.printed()
        else:
            smem = _launch_smem(info, loaded.backend.max_smem())
            if barrier is not None:
                _check_resident(call, index, grid, size, barrier,
                                loaded.resident_blocks(info.cname, size, smem))
            if info.heap:
                loaded.reserve_heap()
            outcome, records = loaded.launch_printing(info.cname, grid, size, smem, params,
                                                      PRINT_WORDS, _step_limit(call),
                                                      cooperative=barrier is not None,
                                                      cluster=cluster)
        for data, device in patterns.values():   # bf16 and fp8 come back as float32 values
            if data.flags.writeable:
                data[...] = device.astype(data.dtype)
        self._print(call, gen, records)
        if outcome is None:
            return
        if isinstance(outcome, abi.Deadlock):
            rec = divergent_collective(gen, info, code, outcome, index, grid)
            if rec is not None:
                raise report.fault(call.spans, call.fn, rec)
            raise deadlock_report(call, index, grid, gen, info, code, outcome,
                                  stuck_collective(call, gen, info, code, outcome))
        raise self._fault(call, index, grid, gen, outcome, _refs(call, launch, bound))

    def _fault(self, call, index, grid, gen, f: abi.DeviceFault, refs) -> Exception:
        block = tuple(int(x) for x in np.unravel_index(f.block, tuple(grid)))
        if f.kind == abi.FaultKind.MISUSE:
            return InternalError(f"internal error: the generated CUDA broke a CUDA rule in "
                                 f"block {block}, lane {f.lane}: {_misuse_text(f)}")
        site = gen.sites[f.site]
        if f.kind == abi.FaultKind.TIMEOUT:
            text = (f"deadlock: a wait made no progress on the GPU for "
                    f"{os.environ.get('CROQVM_GPU_WATCHDOG_S', 60)} s")
            return report.kernel_fault(call.spans, call.fn, site.span, text,
                                       [report.context(call.spans, call.fn, index, block,
                                                       f.lane)])
        try:
            operands = site.operands(f.args, refs)
        except (IndexError, ValueError, KeyError) as exc:
            return InternalError(f"internal error: fault site {f.site} of the generated "
                                 f"CUDA has unreadable values: {exc}")
        rec = FaultRecord(site.kind, tuple(operands), index, block, f.lane, site.ip, site.span)
        return report.fault(call.spans, call.fn, rec)

    def _print(self, call, gen, records) -> None:
        for pid, values in records:
            fn_name, k, p = gen.prints[pid]
            code = call.fn.kernels[k].code
            fmt = code.prints[p]
            types = [dtypes.BY_CODE[code.regs[r]] for kind, r in fmt.pieces if kind == 1]
            from .emit_kernel import bits_value
            vals = [bits_value(v, t) for v, t in zip(values, types)]
            call.out.write(print_text(code, fmt, vals) + ("\n" if fmt.newline else ""))


def cpu_position(call, index: int, grid, gen, at: abi.Position) -> RunPosition:
    """The engines' record of where a run is (croqvm.core.position) for launch ``index``
    on cuda-cpu at ``at``: the block running and the loop its thread that stepped last
    is in. Its steps are the launch's loop iterations, which the CPU runtime counts
    (lane by lane) where the engines count warp-instructions."""
    span = call.spans.span
    linear = max(at.block, 0)
    loop = span(gen.sites[at.site].span) if at.site >= 0 else None
    lanes = f"warp {at.lane // WARP_SIZE}, lane {at.lane}" if at.site >= 0 else ""
    return RunPosition(call.fn.name, at.steps, at.steps, call.launches,
                       kernel_span=span(call.fn.host.launches[index].span),
                       block=tuple(int(x) for x in np.unravel_index(linear, tuple(grid))),
                       block_number=linear, blocks=int(np.prod(grid)),
                       block_steps=max(at.block_steps, 0), span=loop, loop_span=loop,
                       lanes=lanes, unit="loop iterations")


def _launch_smem(info, most: int) -> int:
    """The shared memory a launch gets where a block can have at most ``most`` bytes:
    what the kernel lays out, its pool for run-time extents cut to ``most`` (allocations
    beyond it fault). cuda-cpu takes an H100's figure, so it gives what a GPU gives."""
    if info.static_bytes > most:
        raise DeviceError(f"kernel '{info.cname}' needs {info.static_bytes} bytes of "
                          f"shared memory; a block has at most {most}")
    return min(info.smem_bytes, most)


def _grid_barrier(code):
    """The first grid barrier of a kernel (its instruction index), or None: a
    cooperative launch of a kernel without one runs as any other (§7.1.4)."""
    return next((ip for ip, op in enumerate(code.code[::WIDTH]) if op == GRID_SYNC), None)


def _cluster(hblk, launch, code) -> tuple:
    """The cluster's extents when the kernel triggers across its blocks (§10.8): its
    blocks must then run together; else () (a multicast load needs no cluster launch,
    §9.7.6)."""
    if TRIGGER_CLUSTER not in code.code[::WIDTH]:
        return ()
    return tuple(int(hblk.lane_reg(0, r)) for r in launch.cluster)


def _check_resident(call, index: int, grid, size: int, ip: int, resident: int) -> None:
    """A cooperative launch needs its whole grid resident at once. One the device can
    not hold would wait at the grid barrier for blocks that never start: it is the
    engines' GRID_RESIDENT deadlock, reported before the launch, at the kernel's first
    grid barrier, for block 0 (the device's limit: ``resident`` blocks)."""
    total = int(np.prod(grid))
    if total <= resident:
        return
    from ..core.faults import Kind
    code = call.fn.kernels[call.fn.host.launches[index].kernel].code
    ins = code.code[WIDTH * ip:WIDTH * (ip + 1)]
    threads = -(-size // WARP_SIZE) * WARP_SIZE
    rec = FaultRecord(Kind.GRID_RESIDENT, (ins[1], total, resident, threads), index,
                      (0,) * len(grid), 0, ip, ins[SPAN])
    raise report.fault(call.spans, call.fn, rec)


def _step_limit(call) -> int:
    """Loop iterations a lane may run: the call's step limit, or no limit."""
    return (1 << 64) - 1 if call.max_steps is None else call.max_steps


def _misuse_text(f) -> str:
    return {m.value: m.name.lower().replace("_", " ") for m in abi.Misuse}.get(
        int(f.args[0]), f"rule {f.args[0]}")


def _refs(call, launch, bound):
    """How messages name a buffer the kernel reached by (slot, array element): a bound
    slot is the host's buffer; the others are the kernel's."""
    def ref(slot: int, index: int):
        if slot in bound and bound[slot] is not None:
            return bound[slot][max(index, 0)].ref
        return (launch.kernel, slot, index)
    return ref


def _mask(d: abi.Deadlock, offset: int) -> set:
    words = np.frombuffer(d.smem[offset:offset + 128], np.uint32)
    return {32 * w + b for w in range(32) for b in range(32) if (int(words[w]) >> b) & 1}


def divergent_collective(gen, info, code, d: abi.Deadlock, index: int, grid):
    """What the engines report instead of this deadlock when a warp reached a collective
    with some of its participant lanes elsewhere (§7.4.4, §11.2): the fault of the
    lowest such warp, else None."""
    from ..bytecode.opcodes import TABLE
    from ..core.faults import Kind
    live = _mask(d, info.layout["live"])
    at: dict = {}
    for lane, (kind, site, _, _) in enumerate(d.threads):
        if site >= 0 and gen.sites[site].coll >= 0:
            at.setdefault(site, set()).add(lane)
    block = tuple(int(x) for x in np.unravel_index(d.block, tuple(grid)))
    found = []
    for site, lanes in at.items():
        s = gen.sites[site]
        cs = code.colls[s.coll]
        ls = code.lanesets[cs.laneset]
        members = set(range(len(d.threads))) if ls.result < 0 else \
            _mask(d, info.layout["lanesets"][cs.laneset])
        members &= live
        unit = cs.unit if cs.unit > 0 else len(d.threads)
        whole = TABLE[code.code[s.ip * 7]].name.startswith("MMA_") and cs.unit in (32, 128)
        for w in range(0, len(d.threads), WARP_SIZE):
            here = {l for l in lanes if w <= l < w + WARP_SIZE}
            if not here:
                continue
            u = min(here) // unit
            mine = {l for l in members if l // unit == u}
            idle = sorted(l for l in mine - lanes if w <= l < w + WARP_SIZE)
            if not idle:
                continue
            if whole:
                kind, ops = Kind.UNIT_INACTIVE, (s.coll, cs.unit, u, tuple(idle))
            else:
                kind, ops = Kind.DIVERGENT_COLLECTIVE, (s.coll, len(mine),
                                                        tuple(l - w for l in idle), w // 32)
            found.append((w, FaultRecord(kind, ops, index, block, min(here), s.ip, s.span)))
    return min(found, key=lambda x: x[0])[1] if found else None


def _members(d, info, code, cs, live) -> set:
    ls = code.lanesets[cs.laneset]
    every = set(range(len(d.threads)))
    return (every if ls.result < 0 else _mask(d, info.layout["lanesets"][cs.laneset])) & live


def stuck_collective(call, gen, info, code, d: abi.Deadlock):
    """The headline the engines give a deadlock at a collective that can no longer
    complete (§7.4.3, §11.2): an mma operation whose unit is not all there, or a group
    some of whose lanes finished the kernel without arriving; (text, span) or None."""
    from ..bytecode.opcodes import TABLE
    from ..core.faults import Kind
    cx = messages.Context(call.spans, call.fn, code)
    live = _mask(d, info.layout["live"])
    finished = {l for l, t in enumerate(d.threads) if t[0] == abi.WaitKind.EXITED} & live
    at: dict = {}
    for lane, (kind, site, _, _) in enumerate(d.threads):
        if site >= 0 and gen.sites[site].coll >= 0:
            at.setdefault(site, set()).add(lane)
    for lane, (kind, site, _, _) in enumerate(d.threads):
        # a named barrier counts threads, not a group's members: its deadlock is plain
        if site < 0 or gen.sites[site].coll < 0 or kind == abi.WaitKind.NAMED_BARRIER:
            continue
        s = gen.sites[site]
        cs = code.colls[s.coll]
        unit = cs.unit if cs.unit > 0 else len(d.threads)
        u = lane // unit
        missing = sorted(l for l in _members(d, info, code, cs, live) - at[site]
                         if l // unit == u)
        if TABLE[code.code[s.ip * 7]].name.startswith("MMA_") and cs.unit in (32, 128) \
                and missing:
            return messages.message(Kind.UNIT_INACTIVE, (s.coll, cs.unit, u, tuple(missing)), cx), s.span
        gone = [l for l in missing if l in finished]
        if gone:
            return messages.report("partial_group", (s.coll, gone), cx), s.span
    return None


def deadlock_report(call, index, grid, gen, info, code, d: abi.Deadlock,
                    stuck=None) -> KernelFault:
    """The §10.5 report from the CPU runtime's deadlock record: one line per run of
    warps that wait at the same place, as the engines group them, in the catalogue's
    words (croqvm.reports.messages)."""
    cx = messages.Context(call.spans, call.fn, code)
    block = tuple(int(x) for x in np.unravel_index(d.block, tuple(grid)))
    lines, run = [], None
    for lane in range(0, len(d.threads), WARP_SIZE):
        waits = [t for t in d.threads[lane:lane + WARP_SIZE] if t[0] != abi.WaitKind.EXITED]
        if not waits:
            continue
        text = _wait_text(cx, gen, info, waits[0], d)
        w = lane // WARP_SIZE
        if run and run[2] == text and run[1] == w - 1:
            run[1] = w
        else:
            run = [w, w, text]
            lines.append(run)
    out = []
    hint = next((h for h in (_event_hint(cx, info, t, d) or _named_barrier_hint(cx, t)
                             for t in d.threads) if h), None)
    for first, last, text in lines:
        lanes = range(first * WARP_SIZE, (last + 1) * WARP_SIZE)
        out.append(messages.report("warp", (first, lanes, text), cx) if first == last
                   else messages.report("warps", (first, last, lanes, text), cx))
    site = next((gen.sites[t[1]] for t in d.threads if t[1] >= 0), None)
    span = site.span if site else call.fn.kernels[call.fn.host.launches[index].kernel].span
    out.append(report.context(call.spans, call.fn, index, block, None))
    text = messages.report("deadlock", (block,), cx)
    if stuck is not None:
        text, span = stuck
    return report.kernel_fault(call.spans, call.fn, span, text, out, hint)


def _wait_text(cx, gen, info, wait, d) -> str:
    """What a thread waits for, as the engines' report line says (an event wait with its
    slot's state, a barrier with its arrivals)."""
    kind, site, a0, a1 = wait
    if site < 0:
        return "the kernel's start"
    s = gen.sites[site]
    slot = _slot(info, cx.code, a0, d) if kind == abi.WaitKind.EVENT else None
    if slot is not None:
        return messages.report("at_event", (s.span, s.span, *slot, a1), cx)
    if s.ip >= 0 and cx.code.code[s.ip * WIDTH] == GRID_SYNC:
        return messages.report("at_grid", (s.coll, s.span), cx)
    if kind in (abi.WaitKind.BLOCK_BARRIER, abi.WaitKind.MBARRIER) and s.coll >= 0:
        if kind == abi.WaitKind.MBARRIER:      # a collective of part of the block
            a0, a1 = abi.mbarrier_arrivals(d.smem[a0:a0 + 8])
        barrier = s.ip >= 0 and cx.code.code[s.ip * WIDTH] == BARRIER
        return messages.report("at_barrier" if barrier else "at_collective",
                               (s.coll, s.span, a0, a1), cx)
    if kind == abi.WaitKind.NAMED_BARRIER:
        return messages.report("at_named_barrier", (s.span, s.span, a0, a1 & 0xFFFFFFFF,
                                                    a1 >> 32), cx)
    return f"{s.text} ({cx.spans.where(s.span)})"


def _slot(info, code, offset, d):
    """((event, slot), completed generations, arrivals toward the next, arrivals per
    generation) of the event counter at ``offset``: an event's counters are followed by
    its arrivals per generation."""
    for e, at in info.layout["events"].items():
        ev = code.events[e]
        if not at <= offset < at + 4 * ev.slots:
            continue
        word = lambda o: int.from_bytes(d.smem[o:o + 4], "little")   # noqa: E731
        arrivals, need = word(offset), word(at + 4 * ev.slots)
        done = int(ev.ready) + (arrivals // need if need else 0)
        return (e, (offset - at) // 4), done, arrivals % need if need else arrivals, need
    return None


def _event_hint(cx, info, wait, d):
    """The engines' hint for a parity wait two generations behind (§10.6), a cluster-scope
    event some of whose arrivals came (§10.8), or a slot nobody has triggered yet
    (§10.5)."""
    kind, _, offset, generation = wait
    slot = _slot(info, cx.code, offset, d) if kind == abi.WaitKind.EVENT else None
    if slot is not None and slot[1] > generation:
        return messages.report("stale_phase", (slot[0], generation, slot[1]), cx)
    if slot is not None and slot[2] and cx.code.events[slot[0][0]].cluster:
        return messages.report("cluster_short", (slot[0], slot[3], slot[2]), cx)
    if slot is None or slot[1] or slot[2]:
        return None
    return messages.report("needs_credits", (slot[0],), cx)

def _named_barrier_hint(cx, wait):
    """The engines' hint for a named barrier whose count is not made up (§6.8)."""
    kind, _, index, counts = wait
    if kind != abi.WaitKind.NAMED_BARRIER:
        return None
    return messages.report("named_barrier_short", (index, counts >> 32, counts & 0xFFFFFFFF),
                           cx)
