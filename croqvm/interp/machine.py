"""Engine state: one call, its decoded programs, and the block being run (LANGUAGE.md
§7.1, docs/EXECUTION.md §2-§3). The host program runs as a block of one lane.

Conventions: ``call`` the ``Call``, ``blk`` a ``Block``, ``prog`` a decoded ``Program``,
``ins`` an instruction tuple ``(op, a, b, c, d, e, span)``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core import dtypes
from ..bytecode.module import Storage
from ..bytecode.opcodes import SPAN, decode
from ..core.limits import EVENT_SLOT_BYTES, MAX_SHARED_BYTES, WARP_SIZE, buffer_bytes
from ..core.faults import Fault, Kind
from ..reports.messages import lanes_phrase
from ..core.position import PROGRESS_EVERY, RunPosition
from ..core.source import SpanTable
from .memory import allocating, block_wide, new_buffer
from .sync import new_named_barriers
from .warp import new_warp


class Program:
    """A ``Code`` ready to run: instruction tuples, register types, lane-set programs."""

    def __init__(self, code):
        self.code = code
        self.ins = decode(code.code)
        self.rtypes = [dtypes.BY_CODE[c] for c in code.regs]
        self.lanesets = [decode(ls.code) for ls in code.lanesets]
        self.steps = None          # (handler, operands) per instruction, see engine.prepare
        self.laneset_steps = None


class Call:
    """One ``run_function`` call: its options, output stream, step budget, progress hook,
    the buffers that live as long as the call (§3.2.1), and where it is (``position``)."""

    def __init__(self, module, fn, *, out, poison, scheduler, max_steps, progress, checker=None,
                 device=None):
        self.module, self.fn, self.out = module, fn, out
        self.device = device     # runs the kernels instead (croqvm.cuda.launch.Device)
        self.poison, self.scheduler, self.max_steps = poison, scheduler, max_steps
        self.progress = progress  # called with a RunPosition now and then (croqvm.core.position)
        self.checker = checker    # a croqvm.interp.checks.Checker, or None
        self.debugger = None      # croqvm.debug's hook: its ``instrument`` wraps step tables
        self.tracer = None        # croqvm.trace's hook, the same way
        self.steps = 0           # warp-instructions executed
        self.lane_steps = 0      # lane-instructions: the active lanes of each of those
        self.next_stop = 0       # the step count at which the engine next checks in
        self.plan_check_in()
        self.launches = 0        # kernel launches started
        self.blocks_run = 0      # kernel blocks started, over every launch
        self.block = None        # the Block running, and in it the warp
        self.warp = None
        self.block_number = 0    # row-major ordinal of a kernel block, of ``blocks``
        self.blocks = 0
        self.block_start = 0     # ``steps`` when the running block started
        self.spans = SpanTable(module.sources, module.spans, module.calls)
        self.kernel_globals: dict = {}    # (kernel index, slot) -> buffers
        self._programs: dict = {}

    def program(self, code) -> Program:
        prog = self._programs.get(id(code))
        if prog is None:
            prog = self._programs[id(code)] = Program(code)
        return prog

    def plan_check_in(self) -> None:
        """The next check-in: PROGRESS_EVERY steps on, or just past the step limit."""
        self.next_stop = self.steps + PROGRESS_EVERY
        if self.max_steps is not None:
            self.next_stop = min(self.next_stop, self.max_steps + 1)

    def position(self) -> RunPosition:
        """Where the call is, for a progress hook or an interrupt report."""
        blk, w = self.block, self.warp
        base = RunPosition(self.fn.name, self.steps, self.lane_steps, self.launches)
        if blk is None or w is None or w.blk is not blk:
            return base
        code = blk.prog.ins
        loops = [f.opener for f in w.stack if f.kind == "loop"]
        span = self.spans.span
        base = replace(base, span=span(code[w.ip][SPAN]) if w.ip < len(code) else None,
                       loop_span=span(code[loops[-1]][SPAN]) if loops else None)
        if blk.is_host:
            return base
        launch = self.fn.host.launches[blk.launch_index]
        lanes = lanes_phrase(w.lanes[w.act]) if w.nact else "no active lanes"
        return replace(base, kernel_span=span(launch.span), block=blk.index,
                       block_number=self.block_number, blocks=self.blocks,
                       block_steps=self.steps - self.block_start,
                       lanes=f"warp {w.index}, {lanes}")


class Block:
    """A block of ``size`` lanes running one kernel (or, with ``kernel`` None, the host
    program on one lane): its warps and every per-block and per-lane store."""

    def __init__(self, call: Call, prog: Program, size: int, *, kernel=None, kernel_index=-1,
                 launch_index=-1, index=()):
        self.call, self.prog, self.size = call, prog, size
        self.kernel, self.kernel_index, self.launch_index, self.index = \
            kernel, kernel_index, launch_index, index
        self.live = np.ones(size, bool)
        self.bufs: dict = {}          # slot -> [Buffer]: global and shared instances
        self.locals: dict = {}        # (slot, lane) -> [Buffer]
        self.futures = [[None] * size for _ in prog.code.futures]
        self.lanesets: list = []      # per LaneSet: bool array over the block's lanes
        self.events: list = []        # croqvm.interp.sync.EventSlots per EventDecl
        self.named = new_named_barriers()   # croqvm.interp.sync.NamedBarrier per id
        self.grid = None              # a cooperative launch's GridState (croqvm.interp.engine)
        self.cluster = [self]         # the blocks of its cluster, itself included, when a
                                      # TRIGGER_CLUSTER runs in them (croqvm.interp.engine)
        self.number = 0               # row-major number in its launch
        self.rendezvous: dict = {}    # open collectives, see croqvm.interp.sync
        self.once: dict = {}          # ONCE bookkeeping, see croqvm.interp.sync
        self.frags: dict = {}         # (fragment, unit instance) -> Fragment
        self.transfers: list = []     # async copies not landed yet (random schedule)
        self.released = False         # a collective or event generation completed
        self.shared = {}              # slot -> bytes of its shared buffers (the limit)
        self.check_state = None       # the call's checker's state of this block
        self.warps = [new_warp(self, prog, n, b, min(WARP_SIZE, size - b),
                               self.live[b:b + WARP_SIZE])
                      for n, b in enumerate(range(0, size, WARP_SIZE))]

    @property
    def is_host(self) -> bool:
        return self.kernel is None

    def uniform_slot(self, slot: int) -> bool:
        """Whether every lane of the block sees the same instance of the slot."""
        return block_wide(self.prog.code.buffers[slot])

    def instances(self, slot: int, lane: int):
        """The buffers of ``slot`` that lane ``lane`` sees, or None before its ALLOC."""
        if not block_wide(self.prog.code.buffers[slot]):
            return self.locals.get((slot, lane))
        return self.bufs.get(slot)

    def allocate(self, slot: int, lane: int, shape, defined: bool = True) -> list:
        """Allocate the instances of ``slot`` for ``lane`` (§3.2.4: once per instance);
        ``defined``: zero-filled by its declaration (croqvm.interp.memory.new_buffer)."""
        decl = self.prog.code.buffers[slot]
        elements = range(decl.count) if decl.array else [-1]
        with allocating(Kind.ALLOC_BUFFER, (slot,), shape, lane):
            insts = [new_buffer((self.kernel_index, slot, k), dtypes.BY_CODE[decl.dtype], shape,
                                self.call.poison, defined) for k in elements]
        if not block_wide(decl):
            self.locals[(slot, lane)] = insts
        else:
            self.bufs[slot] = insts
            if decl.storage == Storage.GLOBAL and not self.is_host:
                self.call.kernel_globals[(self.kernel_index, slot)] = insts
        return insts

    def claim_shared(self, slot: int, shape) -> int:
        """Count the shared buffers of ``slot`` with extents ``shape``; return the shared
        memory the block then uses, its event slots included (as the verifier counts)."""
        decl = self.prog.code.buffers[slot]
        self.shared[slot] = buffer_bytes(dtypes.BY_CODE[decl.dtype].bits, decl.count, shape)
        events = EVENT_SLOT_BYTES * sum(ev.slots for ev in self.prog.code.events)
        return events + sum(self.shared.values())

    def allocate_declared(self, slot: int, lane: int, shape, defined: bool = True) -> list:
        """Allocate ``slot`` for ``lane`` with ``shape``, the values of its shape registers
        (at its ALLOC, or at the DMA owning it, §9.4.1, which passes ``defined`` False):
        every extent at least 1 and a kernel's shared memory within the limit, else a
        runtime error of the lane."""
        for d in shape:
            if d < 1:
                raise Fault(Kind.ALLOC_EXTENT, (d,), lane)
        if self.prog.code.buffers[slot].storage == Storage.SHARED and not self.is_host:
            used = self.claim_shared(slot, shape)
            if used > MAX_SHARED_BYTES:   # extents known only now (§3.2.4, limits)
                raise Fault(Kind.SHARED_LIMIT, (slot, used), lane)
        return self.allocate(slot, lane, shape, defined)

    def warp_of(self, lane: int):
        """(warp, lane index in it) of block lane ``lane``."""
        w = self.warps[lane // WARP_SIZE]
        return w, lane - w.base

    def lane_reg(self, lane: int, r: int):
        """R[r] of block lane ``lane`` (collectives read their operands this way)."""
        w, i = self.warp_of(lane)
        return w.regs[r][i]

    def block_text(self) -> str:
        return "(" + ", ".join(str(i) for i in self.index) + ")"
