"""The reference engine: the handler table, the step loop, launches and returns
(ARCHITECTURE.md "The machine model"; LANGUAGE.md §7.1, §14.2; docs/EXECUTION.md §2-§3).

Conventions: ``HANDLERS[op](w, ins)`` performs one instruction for warp ``w``'s active
lanes; the loop sets ``w.ip`` to the instruction and ``w.pc`` past it before the call, so a
handler jumps by setting ``w.pc`` and retries (a blocked WAIT) by setting it back to
``w.ip``. Every fault leaves through ``_run_warp``'s handlers, which know the warp and the
instruction: the one place a runtime error gets its span, block and lane.

Before a program first runs, ``prepare`` pairs each instruction with its handler and the
operands that handler receives: for the opcodes a handler module lists in its ``PREPARE``
table, what ``PREPARE[op](prog, ins)`` resolves from the program alone (register types,
the arithmetic for them, the access an instruction names), else the instruction tuple
itself. The step loop then only fetches and calls.
"""
from __future__ import annotations

import math

import numpy as np

from ..bytecode.opcodes import GRID_SYNC, SPAN, TABLE, TRIGGER_CLUSTER
from ..core.errors import CroqvmError
from ..core.faults import Fault, Kind, LaneFault
from ..core.limits import MAX_BLOCK_SIZE, MAX_GRID, WARP_SIZE, resident_blocks
from ..core.numerics import convert
from . import access, alu, control, cxxcall, diagnose, dma, mma, output, sync
from .machine import Block
from .values import returned_copy, scalar_result
from .warp import BLOCKED, DONE, READY, Warp


def op_launch(w, ins):
    run_launch(w.blk, ins[1])


def _ret(value_of):
    def op(w, ins):
        w.blk.call.result = value_of(w, ins)
        w.stack.clear()
        w.finish()
    return op


def _scalar(w, ins):
    return scalar_result(w.regs[ins[1]][:1], w.blk.prog.rtypes[ins[1]])


def _buffer(w, ins):
    insts = w.blk.instances(ins[1], 0)
    if insts is None:    # a jump over its ALLOC (the verifier rejects a buffer never allocated)
        raise Fault(Kind.BUFFER_BEFORE_DECLARATION, (ins[1],), 0)
    buf = insts[0]
    return returned_copy(buf.data, buf.dtype, w.blk.call.fn.name)


_BY_NAME = {
    **alu.HANDLERS, **control.HANDLERS, **access.HANDLERS, **dma.HANDLERS,
    **sync.HANDLERS, **mma.HANDLERS, **output.HANDLERS, **cxxcall.HANDLERS,
    "LAUNCH": op_launch,
    "RET": _ret(lambda w, ins: None), "RET_VAL": _ret(_scalar), "RET_BUF": _ret(_buffer),
}
HANDLERS = tuple(_BY_NAME[op.name] for op in TABLE)   # every opcode has exactly one
_PREPARE_BY_NAME = {**alu.PREPARE, **access.PREPARE}
PREPARE = tuple(_PREPARE_BY_NAME.get(op.name) for op in TABLE)


def _steps(blk, code) -> list:
    out = []
    for ins in code:
        prep = PREPARE[ins[0]]
        try:
            out.append((HANDLERS[ins[0]], prep(blk.prog, ins) if prep else ins))
        except Exception as e:   # what the verifier let through: an engine or verifier bug
            raise diagnose.internal(blk, ins[SPAN], e) from e
    return out


def prepare(blk) -> None:
    """Give the block's program its (handler, operands) pairs, once."""
    prog = blk.prog
    if prog.steps is None:
        steps = _steps(blk, prog.ins)
        prog.laneset_steps = [_steps(blk, ls) for ls in prog.lanesets]
        checker = blk.call.checker
        prog.steps = steps if checker is None else checker.instrument(prog, steps)
        tracer = blk.call.tracer       # croqvm.trace: it times each step the checker sees
        if tracer is not None:
            prog.steps = tracer.instrument(prog, prog.steps)
        debugger = blk.call.debugger   # outermost: it sees each step before any checker
        if debugger is not None:
            prog.steps = debugger.instrument(prog, prog.steps)


def run_block(blk) -> bool:
    """Run every warp of ``blk`` to completion under the call's scheduler (§7.1.2): True;
    or, in a cooperative launch, until every warp not done waits at the grid barrier,
    and in a cluster that triggers across its blocks, until no warp can run: False (the
    block is parked, §7.1.4, §10.8)."""
    prepare(blk)
    sched = blk.call.scheduler
    blk.call.block = blk
    while True:
        w = sched.pick(blk)
        if w is None:
            waiting = [x for x in blk.warps if x.state != DONE]
            if not waiting:
                return True
            if len(blk.cluster) > 1 or all(
                    x.state == BLOCKED and isinstance(x.blocker, sync.GridWait)
                    for x in waiting):
                return False
            raise diagnose.deadlock(blk)
        blk.released = False
        _run_warp(w, sched.quantum)


def resume_block(blk, w) -> bool:
    """``run_block`` from a state in which warp ``w``, picked, has counted the step of
    instruction ``w.ip`` and not run it yet (croqvm.debug.forward hands blocks over so)."""
    prepare(blk)
    blk.call.block = blk
    blk.released = False
    _run_warp(w, blk.call.scheduler.quantum, resumed=True)
    return run_block(blk)


def _run_warp(w, quantum: int, resumed: bool = False) -> None:
    blk, call = w.blk, w.blk.call
    call.warp = w
    code, steps = blk.prog.ins, blk.prog.steps
    end = len(steps)
    n = 0
    try:
        while w.state == READY:
            if resumed:
                pc, resumed = w.ip, False
            else:
                pc = w.pc
                if pc >= end:
                    w.finish()
                    break
                w.ip, w.pc = pc, pc + 1
                call.steps += 1
                call.lane_steps += w.nact
                if call.steps >= call.next_stop:
                    _check_in(call, w)
            handler, operands = steps[pc]
            handler(w, operands)
            n += 1
            if w.state == READY and w.pc >= end:
                w.finish()            # past its last instruction: done at once
                break
            if w.hold >= 0:
                if w.pc <= w.hold:
                    continue      # inside a claimed outer-level effect: not preempted
                w.hold = -1
            if n >= quantum > 0 or blk.released:
                break
    except LaneFault as f:
        raise diagnose.fault(blk, f.kind, f.operands, w.base + f.index, w.ip) from None
    except Fault as f:
        raise diagnose.fault(blk, f.kind, f.operands, f.lane, w.ip, f.span) from None
    except CroqvmError:
        raise
    except Exception as e:   # an engine bug: reported, with its place, not hidden
        raise diagnose.internal(blk, code[w.ip][SPAN] if code else 0, e) from e


def _check_in(call, w) -> None:
    """Every PROGRESS_EVERY steps (croqvm.core.position), and past the step limit: report
    progress or stop."""
    if call.max_steps is not None and call.steps > call.max_steps:
        raise Fault(Kind.STEP_LIMIT, (call.max_steps,), _lowest_lane(w))
    call.plan_check_in()
    if call.progress is not None:
        call.progress(call.position())


def _lowest_lane(w):
    lanes = w.lanes[w.act]
    return int(lanes[0]) if lanes.size else None


# --------------------------------------------------------------------------- launches

def run_launch(hblk, index: int) -> None:
    """§14.2, docs/EXECUTION.md §2-§3: bind buffers by reference and scalars by value, then
    run the blocks of launch ``index`` of the host program one after another in
    row-major order (§7.1.1). An async launch (``launch.is_async``) runs to completion
    here too, one legal schedule of it, so SYNC_GLOBAL finds nothing to wait for."""
    call = hblk.call
    launch = hblk.prog.code.launches[index]
    kernel = call.fn.kernels[launch.kernel]
    prog = call.program(kernel.code)
    grid = [int(hblk.lane_reg(0, r)) for r in launch.grid]
    for d, g in enumerate(grid):
        if g < 1:
            raise Fault(Kind.GRID_BOUND, (d, g))
        if g > MAX_GRID[d]:
            raise Fault(Kind.GRID_LIMIT, (d, g, MAX_GRID[d]))
    size = _block_size(hblk, kernel, launch)
    hregs = [(kr, hblk.lane_reg(0, hr), hblk.prog.rtypes[hr]) for kr, hr in launch.scalars]
    bound = {ks: hblk.bufs.get(hs) for ks, hs in launch.buffers}
    call.launches += 1
    if call.device is not None:         # the kernel runs as generated CUDA (croqvm.cuda)
        call.device.launch(call, hblk, index, grid, size, hregs, bound)
        return
    call.blocks = math.prod(grid)
    host_warp = call.warp
    cluster = [int(hblk.lane_reg(0, r)) for r in launch.cluster]
    cluster_blocks = math.prod(cluster) if TRIGGER_CLUSTER in (i[0] for i in prog.ins) else 1

    def start(number: int, block: tuple):
        call.block_number, call.block_start = number, call.steps
        call.blocks_run += 1
        blk = Block(call, prog, size, kernel=kernel, kernel_index=launch.kernel,
                    launch_index=index, index=block)
        blk.bufs.update({s: b for (k, s), b in call.kernel_globals.items()
                         if k == launch.kernel})
        blk.bufs.update({s: b for s, b in bound.items() if b is not None})
        for w in blk.warps:
            _set_args(w, hregs)
        _start_block(blk, hregs, cluster_blocks)
        blk.number = number
        return blk

    if launch.cooperative and GRID_SYNC in (ins[0] for ins in prog.ins):
        _run_cooperative(call, start, grid, size)
    elif cluster_blocks > 1:
        _run_clusters(call, start, grid, cluster)
    else:
        # a debugger (croqvm.debug) runs the blocks it can not stop in natively and
        # names the others, each with None or what takes a started block to the state
        # in which it stopped natively and returns the warp about to run
        blocks = ((number, block, None) for number, block in enumerate(_row_major(grid))) \
            if call.debugger is None else call.debugger.blocks(call, hblk, index, grid)
        for number, block, image in blocks:
            blk = start(number, block)
            if image is None:
                run_block(blk)
            else:
                resume_block(blk, image(blk))
            _end_block(blk)
    call.block, call.warp = hblk, host_warp


def _end_block(blk) -> None:
    try:
        dma.check_kernel_end(blk)
    except Fault as f:
        raise diagnose.fault(blk, f.kind, f.operands, f.lane, -1, f.span) from None


class GridState:
    """The grid barrier of a cooperative launch: the generations it released."""

    def __init__(self):
        self.gen = 0


def _run_cooperative(call, start, grid, size: int) -> None:
    """A cooperative launch with a grid barrier (§7.1.4): as many blocks as the device
    holds are resident, started in row-major order. Each resident block in turn runs
    until it is done, when the next block starts in its place, or parked at the grid
    barrier. When every resident block is parked, the barrier releases them if the whole
    grid is resident and no block finished without reaching it; otherwise nothing can
    move again: a deadlock, reported at the grid barrier of the first parked block."""
    state = GridState()
    order = enumerate(_row_major(grid))
    total, resident_max = math.prod(grid), resident_blocks(size)
    started, finished, resident = 0, None, []

    def admit():
        nonlocal started
        number, block = next(order)
        blk = start(number, block)
        blk.grid = state
        resident.append(blk)
        started += 1

    while started < min(total, resident_max):
        admit()
    while resident:
        i = 0
        while i < len(resident):
            blk = resident[i]
            call.block_number = blk.number
            if run_block(blk):
                _end_block(blk)
                if finished is None or blk.number < finished.number:
                    finished = blk
                del resident[i]
                if started < total:
                    admit()
                continue
            i += 1
        if not resident:
            return
        first = resident[0]
        w = next(x for x in first.warps if x.state == BLOCKED)
        lane, ip = int(w.lanes[w.act][0]), w.blocker.ip
        site = first.prog.ins[ip][1]
        if started < total:
            raise diagnose.fault(first, Kind.GRID_RESIDENT,
                                 (site, total, resident_max, -(-size // WARP_SIZE) * WARP_SIZE),
                                 lane, ip)
        if finished is not None:
            raise diagnose.fault(first, Kind.GRID_FINISHED, (site, finished.index), lane, ip)
        state.gen += 1
        if call.checker is not None:
            call.checker.grid_released(resident)


def _run_clusters(call, start, grid: list[int], cluster: list[int]) -> None:
    """A launch whose kernel triggers across the blocks of a cluster (§10.8): the
    clusters run one after another in row-major order of their indices. The blocks of
    a cluster start together, in row-major order, then take turns in that order: each
    runs until it is done or none of its warps can run. A round of turns in which no
    block ran a step is a deadlock, reported for the first block not done."""
    cluster = cluster + [1] * (len(grid) - len(cluster))
    for origin in _row_major([g // c for g, c in zip(grid, cluster)]):
        blocks = []
        for offset in _row_major(cluster):
            index = tuple(o * c + r for o, c, r in zip(origin, cluster, offset))
            blocks.append(start(block_number(index, grid), index))
        for blk in blocks:
            blk.cluster = blocks
        left = blocks
        while left:
            before = call.steps
            for blk in left:
                call.block_number = blk.number
                if run_block(blk):
                    _end_block(blk)
            left = [blk for blk in left if any(w.state != DONE for w in blk.warps)]
            if left and call.steps == before:
                raise diagnose.deadlock(left[0])


def block_number(index: tuple, grid: list[int]) -> int:
    """The row-major number of block ``index`` in ``grid``."""
    number = 0
    for i, extent in zip(index, grid):
        number = number * extent + i
    return number


def block_index(number: int, grid: list[int]) -> tuple:
    """The index of the block numbered ``number`` in row-major order in ``grid``."""
    index = []
    for extent in reversed(grid):
        number, i = divmod(number, extent)
        index.append(i)
    return tuple(reversed(index))


def _row_major(grid: list[int]):
    """The block indices of ``grid`` in row-major order (§7.1.1), one at a time: a grid
    may hold 2^31 blocks, which must not be listed before the first one runs."""
    for linear in range(math.prod(grid)):
        yield block_index(linear, grid)


def _block_size(hblk, kernel, launch) -> int:
    """The kernel's static block size, or the one this launch computed (§6.3.4, §6.3.6)."""
    if kernel.block_size > 0:
        return kernel.block_size
    size = int(hblk.lane_reg(0, launch.block))
    if size > MAX_BLOCK_SIZE:
        raise Fault(Kind.TOO_MANY_THREADS)
    if size < 1:
        raise Fault(Kind.BLOCK_SIZE, (size,))
    return size


def _set_args(w, hregs) -> None:
    one = np.ones(1, bool)
    for kr, value, htype in hregs:
        v = convert(np.asarray([value]), htype, w.blk.prog.rtypes[kr], one)
        w.regs[kr][:] = v[0]


def _start_block(blk, hregs, cluster_blocks: int) -> None:
    """Evaluate every lane set for every lane at once (docs/EXECUTION.md §3): a scratch
    warp as wide as the block runs the straight-line lane-set code."""
    prepare(blk)
    prog = blk.prog
    for k, ls in enumerate(prog.code.lanesets):
        if ls.result < 0:
            blk.lanesets.append(np.ones(blk.size, bool))
            continue
        regs = [np.zeros(blk.size, t.np) for t in prog.rtypes]
        w = Warp(blk, 0, 0, blk.size, regs, np.ones(blk.size, bool))
        _set_args(w, hregs)
        for ins, (handler, operands) in zip(prog.lanesets[k], prog.laneset_steps[k]):
            w.ip = 0
            try:
                handler(w, operands)
            except LaneFault as f:
                raise diagnose.fault(blk, f.kind, f.operands, f.index, -1, ins[SPAN]) from None
        blk.lanesets.append(w.regs[ls.result].astype(bool))
    sync.init_events(blk, cluster_blocks)
