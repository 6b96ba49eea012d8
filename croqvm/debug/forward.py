"""The debugger's fast-forward: the blocks of a launch where the session can not stop run
on the native engine (native/debug.c), the others on the reference engine under the
session's hook.

The blocks of an ordinary launch run one after another (croqvm.interp.engine
run_launch), so a block starts from the host program's state and the global memory the
blocks before it left, and both engines compute the same from the same state, step
counts and random schedule draws included. Before the blocks of a launch that are left,
the blocks run natively on the real memory with native/debug.c's tests, which end the
run in the first block where the session's hook (``_Run.before`` and ``after``) could
stop: one that reaches a statement at a breakpoint's line, changes the bytes of a
watched element, faults, holds the step a re-run goes to, or that a Ctrl-C finds
running. The memory the launch binds is saved before blocks, about as often as a save
costs what the blocks between cost; after a stop it goes back to the last save before
that block and the blocks from there up to it run natively again, and the block runs on
the reference engine, which decides whether it really stops there (a breakpoint's
condition may not hold); the next block starts the question again. So a stop costs
about one native run of the blocks before it, and its own block on the reference engine.

A stop before an instruction (a breakpoint's line, the step a re-run goes to) needs
neither: the stopped block's state is handed to the reference engine as it is
(``_Image``, native/debug.c cq_debug_image) and the block goes on there from that very
instruction (croqvm.interp.engine resume_block), the memory where the native run left
it, so a stop late inside a big block costs about the native run up to it. What the
image does not carry sends the block down the first way: an open collective other
than a block barrier (lanes arrived at a DMA, say, whose effect is still to come), an
async copy in flight (random schedule), a future naming a buffer not the block's, the initialisation check's
marks; and a watchpoint's stop, which comes after the instruction.

A re-run that goes to a step (a reverse command's last) begins, in a launch, at the
last save an earlier run of the session made before a stop there (``_checkpoint``,
``_resume_at``), its memory put back, rather than at the launch's first block.

Where the hook needs every instruction or blocks depend on each other, every block
runs on the reference engine (``_launch_ok``, ``_mode_ok``): a check (race, init), a
read watchpoint, a step that stops at the next statement or instruction of any warp,
cooperative, clustered, asynchronous and stream launches, a kernel that allocates
global memory (it outlives the block), a launch's buffers that alias each other.
"""
from __future__ import annotations

import math

import numpy as np

from ..bytecode.module import Storage
from ..core import dtypes
from ..core.limits import MAX_BLOCK_SIZE, MAX_GRID, NAMED_BARRIERS, WARP_SIZE
from ..interp.engine import block_index, block_number
from ..interp.memory import Handle, Transfer
from ..interp.mma import Fragment
from ..interp.scheduler import Random
from ..interp.sync import BarrierWait, EventWait, Rendezvous, Waiting
from ..interp.warp import BLOCKED, DONE, READY, Frame
from ..native import extension
from ..native.driver import NO_LIMIT, SCHEDULES, SLICE_STEPS, program

MAX_WATCHES = 16            # native/debug.c holds at most this many watched elements
# a lane-step under the hook costs about as much as saving 75 times 4 bytes: saving more
# than SAVE_RATIO times 4 bytes a lane-step of a block costs more than a tenth of it
SAVE_RATIO = 8
MAX_PAUSE = 64
MAX_CHECKPOINTS = 4         # tries of launches whose last save a re-run may begin at


def _number_of(index: tuple, grid) -> int | None:
    """The row-major number of block ``index``, or None when it is not in ``grid``."""
    if len(index) != len(grid) or not all(0 <= i < g for i, g in zip(index, grid)):
        return None
    return block_number(index, grid)


class FastForward:
    """The native side of one session's function, loaded once; ``enabled`` False, or
    no native engine built, runs every block on the reference engine."""

    def __init__(self, session, module, func: str, enabled: bool):
        ext = extension() if enabled else None
        self.s = session
        self.ok = ext is not None
        if self.ok:
            self.lib, self.ffi = ext.lib, ext.ffi
            self.fn = module.function(func)
            self.prog = program(self.lib, self.ffi, module, self.fn)
            self._tables: dict = {}
            # the last save before a stop, per try of a launch (_checkpoint)
            self._checkpoints: dict = {}

    # ------------------------------------------------------------------ which blocks

    def blocks(self, run, call, hblk, index: int, grid):
        """(number, index) of each block of launch ``index`` that the reference engine
        runs, in row-major order; those left out ran here."""
        total = math.prod(grid)
        launch = hblk.prog.code.launches[index]
        ok = self.ok and self._launch_ok(call, hblk, launch)
        saved = sum(hblk.bufs[hs][0].data.nbytes for hs in {hs for _, hs in launch.buffers}
                    if hblk.bufs.get(hs)) if ok else 0
        number, pause, wait = 0, 0, 1
        while number < total:
            tried = ok and pause == 0 and self._mode_ok(run)
            image = None
            if tried:
                first = number
                number, image = self._forward(run, call, hblk, index, grid, number, total)
                if number == total:
                    break
            pause = max(0, pause - 1)
            lanes = call.lane_steps
            yield number, block_index(number, grid), image
            # blocks stopping at once (a condition every block's warps meet, say) while
            # saving the memory costs more than a tenth of the block under the hook:
            # the next try after 1, 2, 4, ... up to MAX_PAUSE blocks
            if tried and number == first and saved // 4 > SAVE_RATIO * (call.lane_steps - lanes):
                pause, wait = wait, min(2 * wait, MAX_PAUSE)
            elif tried:
                wait = 1
            number += 1

    def _launch_ok(self, call, hblk, launch) -> bool:
        if call.checker is not None or call.tracer is not None or launch.cooperative or \
                launch.cluster or launch.is_async or launch.stream >= 0:
            return False
        kernel = self.fn.kernels[launch.kernel].code
        bound = dict(launch.buffers)
        if any(decl.storage == Storage.GLOBAL and slot not in bound
               for slot, decl in enumerate(kernel.buffers)):
            return False
        arrays = []
        for hs in set(bound.values()):
            insts = hblk.bufs.get(hs)
            if insts is None:
                continue
            if len(insts) != 1:
                return False
            arrays.append(insts[0].data)
        return not any(np.may_share_memory(a, b) for k, a in enumerate(arrays)
                       for b in arrays[k + 1:])

    def _mode_ok(self, run) -> bool:
        if run.interrupt or any(w.read for w in self.s.watches) or \
                len(self.s.watches) > MAX_WATCHES:
            return False
        return run.stops_only_at_marks()

    # ------------------------------------------------------------------ running

    def _forward(self, run, call, hblk, index, grid, number: int, total: int):
        """Run blocks from ``number`` on natively up to the first where the run may
        stop; returns that block's number (``total``: none) and, when the run stopped in
        it before an instruction with a state the reference engine can take over, the
        ``_Image`` of that state (else None: the block runs from its start there)."""
        end = total
        for watch in self.s.watches:         # a block's own buffer: watched in that block
            block = watch.buffer[0]
            if block is not None:
                watched = _number_of(block, grid)
                if watched is not None and watched >= number:
                    end = min(end, watched)
        to = run.replaying
        # a re-run that records what it passes stops where a watched element changes too
        # (reverse-continue may go back to there)
        watches = [] if to and run.record is None else \
            [w for w in self.s.watches if w.buffer[0] is None]
        launch = hblk.prog.code.launches[index]
        real = {hs: hblk.bufs[hs][0].data for _, hs in launch.buffers if hblk.bufs.get(hs)}
        if end == number or any(w.buffer[1] in real and
                                real[w.buffer[1]].itemsize not in (1, 2, 4, 8)
                                for w in watches):
            return number, None
        saves = [{hs: np.empty_like(data) for hs, data in real.items() if data.size}
                 for _ in range(2)]
        stop_pc, place, statement, caller, calls = self._table(hblk, launch)
        ffi, keep = self.ffi, [saves]
        dbg = ffi.new("cq_debug *")
        if not to or run.record is not None:
            dbg.stop_pc = _array(keep, ffi, "uint8_t[]", stop_pc)
        dbg.stop_step = run.target if to else NO_LIMIT
        if to and run.record is not None:
            dbg.place = _array(keep, ffi, "int32_t[]", place)
            dbg.caller = _array(keep, ffi, "int32_t[]", caller)
            dbg.calls = _array(keep, ffi, "int32_t[]", calls)
        dbg.statement = _array(keep, ffi, "uint8_t[]", statement)
        self._watches(dbg, keep, watches, real)
        dbg.nsave = len(saves[0])
        dbg.save_slot = _array(keep, ffi, "int32_t[]", list(saves[0]) or [0])
        dbg.save_to = _array(keep, ffi, "void *[]", [ffi.from_buffer(a) for area in saves
                                                       for a in area.values()] or [ffi.NULL])
        # a save costs about what this many lane-steps do: between two, the run that
        # goes back after a stop costs little more than the save
        dbg.save_every = sum(a.nbytes for a in saves[0].values()) // 4
        start = (call.steps, call.lane_steps, self._rng(call))
        key = (call.launches, index, number, *start)
        stop, state = self._run(run, call, hblk, index, real, end, dbg,
                                self._resume_at(key, run, real, number, start, end))
        self._checkpoint(key, number, stop, state, saves)
        if stop is not None and state["image"] is not None:
            # the stopped block goes on on the reference engine from the native state
            self._adopt(run, call, grid, number, stop, state)
            return stop, state["image"]
        if stop is not None:
            if state["early"] and stop > number:
                # it faults before its first instruction runs under the hook: the stop
                # shows the warp that ran last, so the block before runs there too
                stop -= 1
            save = next((at for at in state["saved"] if 0 <= at[0] <= stop), None)
            if save is None:             # it stopped before a block began
                return number, None
            at, steps, lanes, rng, printed, area = save
            for hs, data in saves[area].items():
                real[hs][...] = data
            rng %= 1 << 64                # saved as a signed word
            state.update(steps=steps, lane_steps=lanes, rng=rng,
                         output=state["output"][:printed],
                         events=[e for e in state["events"] if e[1] < stop])
            if stop > at:
                _, again = self._run(run, call, hblk, index, real, stop, None,
                                     (at, steps, lanes, rng, b""))
                state.update(steps=again["steps"], lane_steps=again["lane_steps"],
                             rng=again["rng"], output=state["output"] + again["output"])
        if stop != number:
            self._adopt(run, call, grid, number, stop if stop is not None else end, state)
        return (end if stop is None else stop), None

    def _resume_at(self, key, run, real, number, start, end):
        """Where the try ``key`` of a launch, on memory ``real``, begins: (block, steps,
        lane-steps, random schedule's state, output before). A re-run that goes to a
        step and records nothing begins at the checkpoint an earlier try kept, when it
        lies before that step (runs are deterministic: the blocks before it did there
        what they would do again), its memory put back."""
        cp = self._checkpoints.get(key)
        if cp is None or not run.replaying or run.record is not None or \
                not number < cp["block"] < end or cp["start"][0] >= run.target:
            return (number, *start, b"")
        for hs, data in cp["memory"].items():
            real[hs][...] = data
        return (cp["block"], *cp["start"], cp["output"])

    def _checkpoint(self, key, number, stop, state, saves) -> None:
        """After try ``key`` stopped: keep its last save before the stop's block
        (native/debug.c cq_debug_saved) for a later re-run (``_resume_at``); the last
        few tries' only."""
        save = next((at for at in state["saved"] if 0 <= at[0] <= stop), None) \
            if stop is not None else None
        if save is None or save[0] <= number:
            return
        at, steps, lanes, rng, printed, area = save
        self._checkpoints.pop(key, None)
        self._checkpoints[key] = {"block": at, "start": (steps, lanes, rng % (1 << 64)),
                                  "output": state["output"][:printed],
                                  "memory": saves[area]}
        while len(self._checkpoints) > MAX_CHECKPOINTS:
            del self._checkpoints[next(iter(self._checkpoints))]

    @staticmethod
    def _rng(call) -> int:
        return call.scheduler.rng.state if isinstance(call.scheduler, Random) else 0

    def _table(self, hblk, launch):
        """(stop_pc, place, statement, caller, calls) of the launch's kernel: its
        statements at breakpoint lines, each instruction's place (croqvm.debug.frames;
        -1: none), whether it is a statement's, and per place its caller and the calls
        it lies in."""
        code = self.fn.kernels[launch.kernel].code
        prog = hblk.call.program(code)
        key = (id(code), tuple((b.file, b.line) for b in self.s.breakpoints))
        if key not in self._tables:
            lines = self.s.statement_lines(prog)
            places = self.s.places(prog)
            place = np.array(places.of or [-1], np.int32)
            marked = {(b.file, b.line) for b in self.s.breakpoints}
            stop = np.array([at in marked for at in lines] or [0], np.uint8)
            self._tables[key] = (stop, place, (place >= 0).astype(np.uint8),
                                 np.array(places.caller or [-1], np.int32),
                                 np.array(places.calls or [0], np.int32))
        return self._tables[key]

    def _watches(self, dbg, keep, watches, buffers):
        """The watched elements of ``buffers``: each stops the run when its bytes differ
        from what they are now (the value the hook saw last: _Run.after, _History.after)."""
        ffi = self.ffi
        slots, offsets, sizes = [], [], []
        old = np.zeros(16 * max(1, len(watches)), np.uint8)
        for w in watches:
            _, slot, _ = w.buffer
            data = buffers.get(slot)
            if data is None:          # not a buffer of this launch: it can not change
                continue
            raw = np.ascontiguousarray(data[w.index]).view(np.uint8).reshape(-1)
            old[16 * len(slots):16 * len(slots) + raw.size] = raw
            slots.append(slot)
            offsets.append(int(np.ravel_multi_index(w.index, data.shape)) * data.itemsize)
            sizes.append(data.itemsize)
        dbg.nwatch = len(slots)
        dbg.watch_slot = _array(keep, ffi, "int32_t[]", slots or [0])
        dbg.watch_offset = _array(keep, ffi, "int64_t[]", offsets or [0])
        dbg.watch_size = _array(keep, ffi, "int32_t[]", sizes or [0])
        dbg.watch_old = _array(keep, ffi, "uint8_t[]", old)

    def _run(self, run, call, hblk, index, buffers, last, dbg, begin):
        """Blocks ``first``..``last`` - 1 on ``buffers`` (host slot -> array), natively,
        from ``begin`` (``first``, steps, lane-steps, the random schedule's state, the
        output before); with ``dbg``, until the first block it stops. Returns (the block
        that stopped or None, the state after: steps, lane_steps, rng, output (bytes),
        events (step, block number, warp, depth) of the blocks before the stop, the last
        two saves (cq_debug_saved, their output counted from the output before), whether
        it stopped with a fault before the block's second step, the ``_Image`` of the
        block it stopped in or None)."""
        lib, ffi = self.lib, self.ffi
        first, steps, lanes, rng, before = begin
        opts = ffi.new("cq_opts *", {
            "max_steps": NO_LIMIT if call.max_steps is None else call.max_steps,
            "schedule": SCHEDULES["random" if isinstance(call.scheduler, Random) else "rr"],
            "seed": rng, "max_grid": list(MAX_GRID), "jobs": 1})
        c = lib.cq_call_new(self.prog.prog, opts)
        keep = []
        try:
            hw = hblk.warps[0]
            for r in range(len(hblk.prog.code.regs)):
                lib.cq_set_reg(c, r, _array(keep, ffi, "char[]", hw.regs[r][:1].tobytes()))
            for hs, data in buffers.items():
                shape = ffi.new("int64_t[]", list(data.shape) or [0])
                ptr = ffi.from_buffer("char[]", data, require_writable=True) \
                    if data.size else ffi.NULL
                keep += [shape, ptr]
                lib.cq_bind(c, hs, ptr, data.ndim, shape, ffi.NULL)
            if dbg is not None:
                lib.cq_debug_attach(c, dbg)
            out = []
            stop, early = (first, False) if lib.cq_debug_launch(c, index, first, last, steps,
                                                                lanes) else \
                self._slices(run, c, out, dbg is not None)
            at = ffi.new("cq_position *")
            lib.cq_where(c, at)
            n = ffi.new("int64_t *")
            raw = lib.cq_debug_events(c, n)
            cut = stop if stop is not None else last
            saved = [ffi.new("int64_t[6]") for _ in range(2)]
            if dbg is not None:
                for which in range(2):
                    lib.cq_debug_saved(c, which, saved[which])
            image = _Image.take(self, c, run, hblk, index) \
                if dbg is not None and stop is not None else None
            if image is not None:    # the stopped block's statement starts so far count
                cut = stop + 1
                n = ffi.new("int64_t *")
                raw = lib.cq_debug_events(c, n)
            events = (tuple(raw[4 * k:4 * k + 4]) for k in range(n[0]))
            state = {"steps": at.steps, "lane_steps": at.lane_steps,
                     "rng": lib.cq_rng_state(c), "output": before + b"".join(out),
                     "saved": [[*list(x)[:4], x[4] + len(before), x[5]] for x in saved],
                     "early": early, "image": image,
                     "events": [e for e in events if e[1] < cut]}
            return stop, state
        finally:
            lib.cq_call_free(c)

    def _slices(self, run, c, out: list, stoppable: bool):
        """Run ``c`` to its end: (the block it stopped in or None, whether it stopped
        with a fault before that block's second step). A Ctrl-C stops a ``stoppable``
        run; the run that goes back to a stop's block is not one."""
        lib, ffi = self.lib, self.ffi
        chunk = ffi.new("char[]", 1 << 16)
        while True:
            status = lib.cq_run(c, SLICE_STEPS)
            while lib.cq_output_size(c):
                k = lib.cq_take_output(c, chunk, len(chunk))
                out.append(ffi.buffer(chunk, k)[:])
            if status == lib.CQ_RUN_DONE:
                return None, False
            at = ffi.new("cq_position *")
            lib.cq_where(c, at)
            if status != lib.CQ_RUN_SLICE:
                fault = lib.cq_get_fault(c).kind != lib.CQ_DEBUG_STOP
                return at.block_number, fault and at.block_steps <= 1
            if stoppable and run.interrupt:
                return at.block_number, False

    def _adopt(self, run, call, grid, first, end, state):
        """The call's state after blocks ``first``..``end`` - 1 ran natively."""
        call.steps, call.lane_steps = state["steps"], state["lane_steps"]
        call.blocks_run += end - first
        if isinstance(call.scheduler, Random):
            call.scheduler.rng.state = state["rng"]
        call.out.write(state["output"].decode("utf-8", "replace"))
        if run.record is not None:
            for step, number, warp, depth in sorted(set(state["events"])):
                run.record.add(step, block_index(number, grid), warp, depth)
        run.blk, run.last = None, {}      # the host's next statement starts anew


class _Image:
    """The state of the block a native run stopped in, before a warp's instruction
    whose step it counted (cq_api.h cq_debug_image): every warp's pc, masks, control
    stack, blocker, registers, collective counts and last statement instruction, the
    block's shared and local buffers, futures, MMA fragments, open block barriers,
    events, named barriers and ONCE claims. Called with the block the
    reference engine started in its place, it gives that block this state and returns
    the warp about to run (croqvm.interp.engine resume_block); the global memory is the
    call's own, where the native run left it. A block holding what the image does not
    carry (cq_debug_image) has none."""

    @classmethod
    def take(cls, ff, c, run, hblk, index):
        lib, ffi = ff.lib, ff.ffi
        head = ffi.new("int64_t[4]")
        if not lib.cq_debug_image(c, head):
            return None
        self = cls()
        code = ff.fn.kernels[hblk.prog.code.launches[index].kernel].code
        prog = hblk.call.program(code)
        self.run = run
        self.cur, self.block_start, size = int(head[0]), int(head[1]), int(head[3])
        words = ffi.new("int64_t[]", int(head[2]))
        self.warps = []
        for k, base in enumerate(range(0, size, WARP_SIZE)):
            n = lib.cq_debug_warp(c, k, words)
            regs = [np.empty(min(WARP_SIZE, size - base), t.np) for t in prog.rtypes]
            for r, reg in enumerate(regs):
                lib.cq_debug_reg(c, k, r, ffi.from_buffer(reg, require_writable=True))
            self.warps.append((list(ffi.unpack(words, n)), regs))
        self.buffers = {}             # (slot, lane) -> instances; lane 0 for a shared one
        shape = ffi.new("int64_t[8]")
        for slot, decl in enumerate(code.buffers):
            if decl.storage == Storage.GLOBAL:
                continue
            dtype = dtypes.BY_CODE[decl.dtype].np
            for lane in range(size if decl.storage == Storage.LOCAL else 1):
                insts = []
                for k in range(decl.count if decl.array else 1):
                    data = lib.cq_debug_buffer(c, slot, lane, k, shape)
                    if data == ffi.NULL:
                        break
                    dims = tuple(ffi.unpack(shape, len(decl.shape)))
                    raw = ffi.buffer(data, math.prod(dims) * np.dtype(dtype).itemsize)
                    insts.append(np.frombuffer(raw, dtype).reshape(dims).copy())
                if insts:
                    self.buffers[(slot, lane)] = insts
        self.futures = {}             # (slot, lane) -> handle number
        self.handles = {}             # handle number -> its words (cq_debug_future)
        # where its buffer is, rank, origin and extents of rank 8 at most, async, issuing
        # span, waited lanes
        held = ffi.new("int64_t[]", 5 + 2 * 8 + 2 + MAX_BLOCK_SIZE // 32)
        for slot in range(len(code.futures)):
            for lane in range(size):
                h = lib.cq_debug_future(c, slot, lane, held)
                if h >= 0:
                    self.futures[(slot, lane)] = h
                    if h not in self.handles:
                        self.handles[h] = list(ffi.unpack(held, len(held)))
        self.open = []                # open rendezvous: (number, words), in creation order
        rec = ffi.new("int64_t[]", 5 + 2 * (MAX_BLOCK_SIZE // 32))
        while (r := lib.cq_debug_rendezvous(c, len(self.open), rec)) >= 0:
            self.open.append((r, list(ffi.unpack(rec, len(rec)))))
        self.frags = {}               # (fragment, unit instance) -> its words, data
        frag = ffi.new("int64_t[6]")
        for m, decl in enumerate(code.frags):
            holder = np.int64 if dtypes.BY_CODE[decl.dtype].is_int else np.float64
            for u in range(size):
                data = lib.cq_debug_fragment(c, m, u, frag)
                if data == ffi.NULL:
                    continue
                words = list(ffi.unpack(frag, 6))
                tile = np.frombuffer(ffi.buffer(data, 8 * words[0] * words[1]), holder) \
                    .reshape(words[0], words[1]).copy() if words[3] else None
                fill = np.int64(words[4]) if holder is np.int64 else \
                    np.array(words[5], np.int64).view(np.float64)[()]
                self.frags[(m, u)] = (words[0], words[1], words[2], tile, fill)
        n = sum(ev.slots * (2 + size) for ev in code.events) + 3 * NAMED_BARRIERS + \
            2 * code.once_sites * size
        block = ffi.new("int64_t[]", max(1, n))
        lib.cq_debug_block(c, block)
        self.block = np.frombuffer(ffi.buffer(block, 8 * n), np.int64).copy()
        return self

    def __call__(self, blk):
        call = blk.call
        call.block_start = self.block_start
        recs = {}
        for r, words in self.open:
            ip, unit, count, site, whole = words[:5]
            rec = Rendezvous(blk, ip, blk.prog.ins[ip], site, _lanes(words[5:37], blk.size),
                             None, unit, bool(whole))
            rec.arrived = _lanes(words[37:69], blk.size)
            recs[r] = blk.rendezvous[(ip, unit, count)] = rec
        for w, (words, regs) in zip(blk.warps, self.warps):
            self._warp(blk, w, iter(words), regs, recs)
        for (slot, lane), insts in self.buffers.items():
            shape = insts[0].shape
            if blk.prog.code.buffers[slot].storage == Storage.SHARED:
                blk.claim_shared(slot, shape)
            for buf, data in zip(blk.allocate(slot, lane, shape), insts):
                buf.data[...] = data
        self._block(blk, iter(self.block.tolist()))
        handles = {h: self._handle(blk, words) for h, words in self.handles.items()}
        for (slot, lane), h in self.futures.items():
            blk.futures[slot][lane] = handles[h]
        for (m, u), (rows, cols, pending, tile, fill) in self.frags.items():
            frag = blk.frags[(m, u)] = Fragment(m, blk.prog.code.frags[m])
            frag.shape, frag.pending, frag.data, frag.fill = (rows, cols), pending, tile, fill
        run = self.run
        run.blk = blk                 # the hook's last statement start of each warp
        run.last = {id(w): words[6] for w, (words, _) in zip(blk.warps, self.warps)
                    if words[6] >= 0}
        return blk.warps[self.cur]

    @staticmethod
    def _warp(blk, w, words, regs, recs):
        def lanes(bits):
            return ((bits >> np.arange(w.width)) & 1).astype(bool)

        state, w.pc, w.ip, w.hold, act, live, _, blocker, depth = \
            (next(words) for _ in range(9))
        w.live[...] = lanes(live)
        w.set_active(lanes(act))
        w.state = (READY, BLOCKED, DONE)[state]
        for reg, values in zip(w.regs, regs):
            reg[...] = values
        w.stack = []
        for _ in range(depth):
            kind, opener, jump, entered, other = (next(words) for _ in range(5))
            if kind == 0:
                w.stack.append(Frame("if", opener, lanes(entered), jump, other=lanes(other)))
            else:
                w.stack.append(Frame("loop", opener, lanes(entered), jump, out=lanes(other)))
        if blocker == 1:              # the block barriers not complete yet
            waits = [next(words) for _ in range(next(words))]
            w.blocker = Waiting([recs[r] for r in waits if r >= 0])
        elif blocker == 2:
            ev, parity, n = next(words), next(words), next(words)
            waits = np.array([[next(words) for _ in range(3)] for _ in range(n)],
                             np.int64).reshape(n, 3)
            w.blocker = EventWait(blk.events[ev], w.ip, waits[:, 0], waits[:, 1],
                                  waits[:, 2] if parity else None)
        elif blocker == 3:
            bar, phase = next(words), next(words)
            w.blocker = BarrierWait(blk.named[bar], bar, phase, w.ip)
        w.counts = {}
        for ip in iter(words.__next__, -1):
            w.counts[ip] = np.array([next(words) for _ in range(WARP_SIZE)][:w.width], np.int64)

    @staticmethod
    def _handle(blk, words) -> Handle:
        """A future's handle: a placeholder, or a view of a buffer of the block whose
        copy has landed (an image has none in flight)."""
        kind, slot, lane, element, nd = words[:5]
        if kind == 0:
            return Handle()
        origin, extents = tuple(words[5:5 + nd]), tuple(words[5 + nd:5 + 2 * nd])
        is_async, issued = bool(words[5 + 2 * nd]), words[6 + 2 * nd]
        waited = _lanes(words[7 + 2 * nd:], blk.size) if is_async else None
        buf = blk.instances(slot, lane)[element]
        return Handle(buf, origin, extents, is_async, waited, issued, Transfer())

    @staticmethod
    def _block(blk, words):
        def take(n):
            return np.array([next(words) for _ in range(n)], np.int64)

        for ev in blk.events:
            slots = ev.decl.slots
            ev.completed[...] = take(slots)
            ev.arrivals[...] = take(slots)
            ev.waits[...] = take(slots * blk.size).reshape(blk.size, slots)
        for bar in blk.named:
            bar.count, bar.arrived, bar.phases = next(words), next(words), next(words)
        sites = blk.prog.code.once_sites
        arrivals, claims = take(sites * blk.size), take(sites * blk.size)
        for site in range(sites):
            mine = arrivals[site * blk.size:(site + 1) * blk.size]
            if mine.any():
                blk.once[("arrivals", site)] = mine
            for u in np.flatnonzero(claims[site * blk.size:(site + 1) * blk.size]):
                blk.once[(site, int(u))] = int(claims[site * blk.size + u])


def _lanes(words, size: int) -> np.ndarray:
    """The lanes of a block lane set, 32 a word (cq_lanes), as a mask of ``size``."""
    bits = np.array(words[:MAX_BLOCK_SIZE // 32], np.int64).astype(np.uint32)
    return np.unpackbits(bits.view(np.uint8), bitorder="little")[:size] == 1


def _array(keep: list, ffi, kind: str, values):
    """A C array of ``values`` that lives as long as ``keep``."""
    if isinstance(values, np.ndarray):
        ptr = ffi.from_buffer(kind, values)
        keep.append(values)
    else:
        ptr = ffi.new(kind, values)
    keep.append(ptr)
    return ptr
