"""One generated kernel: its shared-memory layout, parameters, prologue and the
translation of its instructions (croqvm/cuda/emit.py says how the bytecode maps).

Conventions: ``self`` a ``KernelEmitter``; ``ins`` an instruction tuple; ``r`` a register
(C name ``r<r>``), ``rt(r)`` its DType; ``b<s>`` the pointer of buffer slot s bound at
launch and ``b<s>_d<k>`` its extents; ``lb<s>`` a local buffer; ``f<n>`` a future;
``cq_leave()`` ends the lane after a fault or YIELD. Instruction handlers live in
``emit_ops`` (registers, control, memory) and ``emit_sync`` (collectives, events, ONCE,
DMA, MMA, output); ``HANDLERS`` maps every opcode to one.
"""
from __future__ import annotations

import struct

from ..core import dtypes
from ..bytecode.module import BaseKind, DmaOp, Storage, dst_storage, swizzled_sides
from ..bytecode import opcodes
from ..bytecode.opcodes import BAR_ARRIVE, BAR_SYNC, SPAN, TRIGGER_CLUSTER, WIDTH, decode
from ..core.faults import Kind
from ..core.limits import EVENT_SLOT_BYTES, MAX_BLOCK_SIZE, MAX_SHARED_BYTES, buffer_bytes
from . import cnum, emit_regs, emit_tma, emit_wgmma
from .emit import (BoundBuffer, KernelInfo, Site, UnsupportedError, c_ident, max_block,
                   op_name, span_of)

RUNTIME_SITE = -1        # waits of the prologue, which never block for long
DYN_RECORD = 80          # bytes of a cq_dyn record (rt/cq_kernel.h)


def bits_value(bits: int, t: dtypes.DType):
    """A recorded 64-bit value of type ``t`` as a Python number."""
    bits %= 1 << 64
    if t.is_float:
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if t.kind == "bool":
        return bool(bits)
    if t.signed and bits >= 1 << 63:
        return bits - (1 << 64)
    return bits


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


# a TMA barrier's bytes: the cq_tma_bar, then the parity its issuer publishes (§9.7)
TMA_BAR_BYTES = 32


def bulk_load(k, desc) -> bool:
    """Whether DMA ``desc`` may go by TMA bulk copies: a TMA copy from global into shared
    memory, on sm_90a (§9.7; whether each execution does is decided when it runs)."""
    return k.arch == "sm_90a" and tma_load(k, desc)


def tma_load(k, desc) -> bool:
    """Whether DMA ``desc`` is a TMA copy from global into shared memory (§9.7)."""
    if not desc.tma or desc.op != DmaOp.COPY:
        return False
    src = k.code.views[desc.src]
    table = k.code.futures if src.base_kind == BaseKind.FUT else k.code.buffers
    return table[src.base].storage == Storage.GLOBAL and \
        dst_storage(k.code, desc) == Storage.SHARED


class Layout:
    """Offsets in the block's dynamic shared memory, assigned in order."""

    def __init__(self):
        self.size = 0

    def take(self, nbytes: int, align: int = 8) -> int:
        at = _align(self.size, align)
        self.size = at + nbytes
        return at


class KernelEmitter:
    def __init__(self, module, spans, fn, index, kernel, sites, prints, *, arch, checks):
        from .emit_ops import HANDLERS
        self.handlers = HANDLERS
        self.module, self.spans, self.fn, self.index, self.kernel = module, spans, fn, index, kernel
        self.code = kernel.code
        self.ins = decode(self.code.code)
        self.sites, self.prints, self.arch, self.checks = sites, prints, arch, checks
        self.pending_once = None        # (register, site, unit) of the last ONCE
        self.rtypes = [dtypes.BY_CODE[c] for c in self.code.regs]
        self.cname = c_ident(f"{fn.name}_k{index}")
        self.out: list[str] = []
        self.depth = 1
        self.in_laneset = False
        self.in_wgmma_region = 0    # emit_wgmma regions open (open_region, close_region)
        self.last_line = None
        self.frames: list = []          # open IF/LOOP: (kind, extra)
        self.consts = self._constant_registers()
        self.block = max_block(kernel)
        self.launches = [l for l in fn.host.launches if l.kernel == index]

    # ------------------------------------------------------------------ helpers

    def rt(self, r: int) -> dtypes.DType:
        return self.rtypes[r]

    @staticmethod
    def reg(r: int) -> str:
        return f"r{r}"

    def line(self, text: str, ins=None) -> None:
        if ins is not None:
            self._source_line(ins)
            span = self.spans.span(span_of(ins))
            text += f"  // {span.line}:{span.col}" if span else ""
        self.out.append("  " * self.depth + text)

    def _source_line(self, ins) -> None:
        span = self.spans.span(span_of(ins))
        if span is None or (span.file, span.line) == self.last_line:
            return
        self.last_line = (span.file, span.line)
        src = self.spans.files.get(span.file)
        text = src.line(span.line).strip() if src else ""
        self.out.append("  " * self.depth + f"// {span.file}:{span.line}: {text}")

    def unsupported(self, what: str, ins=None) -> UnsupportedError:
        where = self.spans.where(span_of(ins) if ins is not None else self.kernel.span)
        return UnsupportedError(f"{where}: error: the CUDA generator can not translate "
                                f"this program: {what}")

    def needs_arch(self, arch: str, what: str, ins) -> UnsupportedError:
        """A feature the target architecture lacks, naming the one that has it."""
        where = self.spans.where(span_of(ins))
        return UnsupportedError(f"{where}: error: {what} needs {arch}; the target is "
                                f"{self.arch} (emit-cuda --arch {arch})")

    def _constant_registers(self) -> dict:
        """Registers written only by CONST, each time with one value: their value."""
        written: dict = {}
        for ins in self.ins:
            op = op_name(ins)
            w = _written_register(ins)
            if w is None:
                continue
            value = self.code.consts[ins[2]].value if op == "CONST" else None
            written.setdefault(w, set()).add((op, value))
        args = {kr for l in self.fn.host.launches if l.kernel == self.index
                for kr, _ in l.scalars}
        return {r: next(iter(v))[1] for r, v in written.items()
                if len(v) == 1 and next(iter(v))[0] == "CONST" and r not in args}

    def static(self, r: int, what: str, ins=None) -> int:
        if r not in self.consts:
            raise self.unsupported(f"{what} is known only at run time", ins)
        return int(self.consts[r])

    # ------------------------------------------------------------------ faults and sites

    def wait_site_plain(self, ins, ip: int, text: str) -> int:
        """A wait site that is not a collective (reports name ``text``)."""
        return self.site(None, ip, span_of(ins), text=text)

    def wait_site_for(self, ins, ip: int) -> int:
        """A wait site for instruction ``ip`` (a lane waiting inside its effect)."""
        from .emit_sync import wait_site
        return wait_site(self, ins, ip, self.code.colls[_coll_operand(ins)].text)

    def print_id(self, fmt: int) -> int:
        """The module-wide number of this kernel's print format ``fmt``."""
        key = (self.fn.name, self.index, fmt)
        if key not in self.prints:
            self.prints.append(key)
        return self.prints.index(key)

    def site(self, kind, ip: int, span: int, operands=lambda args, refs: (), text="",
             coll=-1) -> int:
        self.sites.append(Site(kind, ip, span, operands, text, coll))
        return len(self.sites) - 1

    def fault(self, cond, kind: Kind, ins, ip: int, args=(), operands=None,
              first: str = "") -> None:
        """``if (cond)``: record fault ``kind`` of the instruction and leave, after
        ``first`` when given. ``cond`` may be a function of the fault's site number, for a
        condition that names it."""
        if operands is None:
            operands = lambda a, refs: ()      # noqa: E731
        n = self.site(kind, ip, span_of(ins), operands)
        if callable(cond):
            cond = cond(n)
        call = ", ".join([str(n), *args])
        leave = "cq_thread_exit()" if self.in_laneset else "cq_leave()"
        if self.in_wgmma_region:    # its wgmmas in flight land first (emit_wgmma)
            leave = "cq_wgmma_wait_all(); " + leave
        self.line(f"if ({cond}) {{ {first + ' ' if first else ''}cq_fault({call}); {leave}; }}",
                  ins)

    def checked(self, target: str, c: cnum.Checked, ins, ip: int) -> None:
        """``target = value`` of a Checked, with its fault."""
        for s in c.setup:
            self.line(s, ins)
        if c.faults:
            self.fault(c.bad, c.kind, ins, ip, c.args, _OPERANDS[c.kind])
        self.line(f"{target} = {c.value};", ins)

    def convert_into(self, target: str, x: str, src, dst, ins, ip: int) -> None:
        tmp = f"cv{ip}"
        c = cnum.convert(x, src, dst, tmp)
        if c.faults:
            self.line(f"uint64_t {tmp};", ins)
        self.checked(target, c, ins, ip)

    # ------------------------------------------------------------------ layout

    def _layout(self) -> None:
        code, L = self.code, Layout()
        self.off_live = L.take(128, 128)
        self.off_laneset = {k: L.take(128, 4) for k, ls in enumerate(code.lanesets)
                            if ls.result >= 0}
        # an event's slot counters, then its arrivals per generation (for reports)
        self.off_event = {e: L.take(4 * ev.slots + 4, 4) for e, ev in enumerate(code.events)}
        self.once_units = {}
        self.off_once = {}
        for ip, ins in enumerate(self.ins):
            if op_name(ins) == "ONCE":
                site, unit = ins[2], ins[3]
                units = self._instances(unit)
                self.once_units[site] = unit
                self.off_once[site] = L.take(8 * units, 4)
        self.colls = {}          # ip -> (site, mbarrier offset or None)
        for ip, ins in enumerate(self.ins):
            c = _coll_operand(ins)
            if c is None or c < 0 or ins[0] in (BAR_SYNC, BAR_ARRIVE):
                continue       # a named barrier is a hardware barrier, not an mbarrier
            site = code.colls[c]
            fast = site.unit == 0 and code.lanesets[site.laneset].result < 0
            self.colls[ip] = (site, None if fast else L.take(8 * self._instances(site.unit), 8))
        self.shared = {}         # slot -> (offset, elements, bytes per element, shape)
        self.local = {}          # slot -> (elements, shape)
        self.dyn_shared = {}     # slot -> offset of its cq_dyn record
        self.dyn_local = set()   # slots of local buffers with run-time extents
        accounted = EVENT_SLOT_BYTES * sum(ev.slots for ev in code.events)
        for s, decl in enumerate(code.buffers):
            if decl.storage == Storage.GLOBAL and decl.param < 0 and decl.shape:
                raise self.unsupported(f"global buffer '{decl.name}' is allocated inside a "
                                       f"kernel")
            if decl.storage == Storage.GLOBAL:
                continue
            t = dtypes.BY_CODE[decl.dtype]
            if not all(r in self.consts for r in decl.shape):
                if decl.storage == Storage.SHARED:
                    self.dyn_shared[s] = L.take(DYN_RECORD, 8)
                else:
                    self.dyn_local.add(s)
                continue
            shape = [int(self.consts[r]) for r in decl.shape]
            n = 1
            for d in shape:
                n *= max(d, 0)
            if decl.storage == Storage.SHARED:
                align = emit_tma.shared_alignment(self, s)     # TMA boxes land aligned
                self.shared[s] = (L.take(n * cnum.elem_bytes(t) * decl.count, align), n,
                                  cnum.elem_bytes(t), shape)
                accounted += buffer_bytes(t.bits, decl.count, shape)
            else:
                self.local[s] = (n, shape)
        self.off_frag = {}
        self.dyn_frag = {}       # fragment -> offset of its cq_dyn records, one per instance
        # accumulators of asynchronous MMAs: their uses check nothing is pending (§11.5)
        self.async_frags = {ins[1] for ins in self.ins if ins[0] == opcodes.MMA_ASYNC}
        # accumulators in registers, and operands that execs read from views (emit_mma)
        from .emit_mma import register_fragments, view_operands
        self.reg_frags = register_fragments(self)
        self.view_operands = view_operands(self)
        in_views = {m for ops in self.view_operands.values() for m in ops}
        for m, f in enumerate(code.frags):
            if f.rows < 0 or f.cols < 0:
                self.dyn_frag[m] = L.take(DYN_RECORD * self._instances(f.unit), 8)
            elif f.unit != 1 and m not in self.reg_frags and m not in in_views:
                vt = cnum.reg_c(dtypes.BY_CODE[f.dtype])
                size = f.rows * f.cols * (8 if vt in ("double", "int64_t", "uint64_t") else 4)
                self.off_frag[m] = L.take(size * self._instances(f.unit), 16)
        # a fragment's flag (emit_mma.frag_ref) is each lane's own where its tile is too:
        # in registers, or in the view an exec reads. A flag in shared memory is written
        # and read by every lane of the instance, which a wgmma chain's single meeting
        # does not order (compute-sanitizer's racecheck reports each such pair).
        self.lane_flags = {m for m, f in enumerate(code.frags) if f.unit != 1 and
                           m not in self.dyn_frag and (m in self.reg_frags or m in in_views)}
        self.off_fragflag = {m: L.take(4 * self._instances(f.unit), 4)
                             for m, f in enumerate(code.frags)
                             if f.unit != 1 and m not in self.lane_flags}
        from .emit_mma import swizzled_layouts
        self.layout_swizzle = swizzled_layouts(self)     # shared tiles wgmma reads in place
        self.chains = emit_wgmma.plan_chains(self)   # loads and execs that meet once (sm_90a)
        # each warpgroup's largest step count, where a slice loop's chains meet before it
        self.off_steps = L.take(8 * self._instances(128), 8) \
            if any(r.hoisted >= 0 for r in self.chains.ends.values()) else None
        # on sm_90a a TMA barrier (cq_tma_bar and the parity its issuer publishes) per
        # instance of every shared buffer, when a TMA load may fill one (§9.7)
        self.off_tma = {}
        if any(bulk_load(self, d) or emit_tma.plan(self, d) for d in code.dmas):
            self.off_tma = {s: L.take(TMA_BAR_BYTES * decl.count, 16)
                            for s, decl in enumerate(code.buffers)
                            if decl.storage == Storage.SHARED}
        # §10.7: each slot of an event a `trigger ... after` binds copies to, the set of
        # TMA barriers whose copies it published (bit i: the i-th barrier from the first
        # buffer's): a binding lane does not wait for them, the event's waiters do
        self.bindings = _bindings(self.ins)
        self.off_landings = {}
        if self.off_tma and self.tma_bar_count() <= 64:
            self.off_landings = {e: L.take(8 * code.events[e].slots, 8)
                                 for e in sorted(set(self.bindings.values()))}
        # each warpgroup's staging area for wgmma operands, as large as its largest exec
        from .emit_mma import wgmma_plan
        plans = [wgmma_plan(self, ins) for ins in self.ins if op_name(ins) == "MMA_EXEC"]
        self.wgmma_stage = _align(max((p.stage_bytes for p in plans if p), default=0), 128)
        self.off_wgmma = L.take(self.wgmma_stage * self._instances(128), 128) \
            if self.wgmma_stage else None
        # the pool for run-time extents: its next free byte, and the shared memory the
        # engines' limit counts (static buffers and events, then each allocation)
        self.pool = None
        if self.dyn_shared or self.dyn_frag:
            self.pool = (L.take(4, 4), L.take(4, 4), accounted)
        self.smem_bytes = _align(L.size, 16)
        self.static_bytes = self.smem_bytes
        if self.smem_bytes > MAX_SHARED_BYTES:
            raise self.unsupported(f"it needs {self.smem_bytes} bytes of shared memory, "
                                   f"more than {MAX_SHARED_BYTES}")
        if self.pool:
            self.smem_bytes += MAX_SHARED_BYTES      # the engines' limit, for the pool

    def _instances(self, unit: int) -> int:
        return 1 if unit <= 0 else (self.block + unit - 1) // unit

    # ------------------------------------------------------------------ parameters

    def _params(self):
        """Buffers bound by the kernel's launches (a pointer and extents each), then the
        argument registers, in slot and register order."""
        bound, scalars = {}, {}
        for l in self.launches:
            for ks, hs in l.buffers:
                hdecl = self.fn.host.buffers[hs]
                rank = len(self.fn.params[hdecl.param].shape) if hdecl.param >= 0 else \
                    len(hdecl.shape)
                bound[ks] = BoundBuffer(ks, rank, dtypes.BY_CODE[self.code.buffers[ks].dtype])
            for kr, _ in l.scalars:
                scalars[kr] = self.rt(kr)
        self.bound = [bound[s] for s in sorted(bound)]
        self.scalars = [(r, scalars[r]) for r in sorted(scalars)]
        params = []
        for b in self.bound:
            params.append(f"{cnum.store_c(b.dtype)} *b{b.slot}")
            params += [f"long long b{b.slot}_d{k}" for k in range(b.rank)]
        params += [f"{cnum.reg_c(t)} p{r}" for r, t in self.scalars]
        self.tmaps = emit_tma.tensor_maps(self, set(bound))
        params += [emit_tma.param(self, i) for i in range(len(self.tmaps))]
        return params

    # ------------------------------------------------------------------ the kernel

    def _bounds(self) -> str:
        """The kernel's register budget for nvcc: ``[[launch_bounds]]`` and
        ``[[maxnreg]]`` (LANGUAGE.md §6.2.5), else launch bounds of its block size, or of
        the largest block where the size is given at launch: without them nvcc may give
        a thread more registers than a large block can have, and the launch fails. nvcc
        takes only one of the two on a kernel, so launch bounds win."""
        k = self.kernel
        if k.maxnreg and not k.launch_bounds:
            return f"CQ_MAXNREG({k.maxnreg}) "
        if self.reg_budget is not None:
            return f"CQ_LAUNCH_BOUNDS({', '.join(map(str, emit_regs.bounds(self)))}) "
        bounds = list(k.launch_bounds or (0,))
        bounds[0] = bounds[0] or k.block_size or MAX_BLOCK_SIZE
        if len(bounds) == 1 and any(op_name(i) == "SET_MAXNREG" for i in self.ins):
            bounds.append(1)    # ptxas drops setmaxnreg without the blocks per multiprocessor
        return f"CQ_LAUNCH_BOUNDS({', '.join(map(str, bounds))}) "

    def _register_hints(self) -> list[str]:
        """Comments on the hints ``_bounds`` could not apply."""
        k = self.kernel
        if k.launch_bounds and k.maxnreg:
            return [f"// [[maxnreg({k.maxnreg})]] is not applied: nvcc does not take "
                    f"__maxnreg__ beside __launch_bounds__"]
        return []

    def emit(self) -> str:
        self._layout()
        self.reg_budget = emit_regs.plan(self)     # after the layout: it reads the sizes
        self.reg_lines: list[int] = []             # where its setmaxnreg lines are
        params = self._params()
        body_start = len(self.out)
        self._prologue()
        self._body(self.ins, 0)
        self._epilogue()
        emit_regs.settle(self)
        body = self.out[body_start:]
        k = self.kernel
        head = [f"// kernel {self.index} of '{self.fn.name}': "
                f"{self.spans.where(k.span)}; block size "
                f"{k.block_size or 'given at launch'}, {self.smem_bytes} bytes of shared memory",
                *self._register_hints(),
                f"CQ_KERNEL {self._bounds()}void {self.cname}({', '.join(params)}) {{"]
        self.info = KernelInfo(self.fn.name, self.index, self.cname, k.block_size,
                               self.smem_bytes, self.static_bytes, self.bound, self.scalars,
                               self._stack_bytes(),
                               {"events": self.off_event, "live": self.off_live,
                                "lanesets": self.off_laneset}, bool(self.dyn_local),
                               self.tmaps)
        return "\n".join(head + body + ["}", f"CQ_EXPORT({self.cname});", ""])

    def _stack_bytes(self) -> int:
        """The CPU runtime's stack per thread: room for local buffers and fragments."""
        local = sum(n * 8 * max(1, self.code.buffers[s].count) for s, (n, _) in self.local.items())
        local += sum(f.rows * f.cols * 8 for f in self.code.frags if f.unit == 1)
        local += sum(8 * n for n in self.reg_frags.values())
        return _align(64 * 1024 + 2 * local, 4096)

    def _prologue(self) -> None:
        code = self.code
        self.line("const int lane = cq_lane(), nlanes = cq_block_size();")
        self.line("const unsigned long long cq_limit = cq_step_limit;")
        self.line("unsigned long long cq_steps = 0;")
        self.line("unsigned char *const smem = cq_smem();")
        self.line(f"unsigned *const cq_live = (unsigned *)(smem + {self.off_live});")
        for r, t in enumerate(self.rtypes):
            init = f"p{r}" if any(r == sr for sr, _ in self.scalars) else "0"
            self.line(f"{cnum.reg_c(t)} r{r} = {init};")
        for s, (n, _) in self.local.items():
            t = dtypes.BY_CODE[code.buffers[s].dtype]
            self.line(f"{cnum.store_c(t)} lb{s}[{max(1, n * code.buffers[s].count)}] = {{}};")
        for m, f in enumerate(code.frags):
            if f.unit == 1:
                t = dtypes.BY_CODE[f.dtype]
                self.line(f"{cnum.reg_c(t)} lf{m}[{f.rows * f.cols}] = {{}};")
                self.line(f"int lf{m}_full = 0;")
            elif m in self.reg_frags:
                t = dtypes.BY_CODE[f.dtype]
                self.line(f"{cnum.reg_c(t)} rf{m}[{self.reg_frags[m]}] = {{}};")
            if m in self.lane_flags:
                self.line(f"int rf{m}_full = 0;")
            if m in self.chains.carried:
                self.line(f"unsigned {emit_wgmma.pending(m)} = 0;   // its asynchronous "
                          f"MMAs pending (emit_wgmma)")
        for n in range(len(code.futures)):
            self.line(f"cq_future f{n} = {{}};")
        self.line("unsigned cqg = 0;   // cp.async groups the lane has committed")
        self.line("(void)cqg;")
        if self.off_landings:
            self.line("unsigned long long cq_handed = 0;   // TMA barriers of the futures "
                      "the lane binds to the TRIGGER that follows (§10.7)")
        for sl in sorted(self.dyn_local):
            self.line(f"cq_local_dyn lbd{sl} = {{}};")
        for e, ev in enumerate(code.events):
            self.line(f"unsigned ew{e}[{ev.slots}] = {{}};")
        for site in self.off_once:
            self.line(f"unsigned on{site} = 0;")
        # the static part only: the pool may be cut to what the launch has, and
        # cq_dyn_alloc fills what it hands out
        self.line("for (int i = lane; i < " f"{self.static_bytes // 4}; i += nlanes) "
                  "((unsigned *)smem)[i] = 0u;")
        self.line(f"cq_sync_block({RUNTIME_SITE});")
        self.in_laneset = True
        for k, ls in enumerate(code.lanesets):
            if ls.result >= 0:
                self._laneset(k, ls)
        self.in_laneset = False
        self.line("cq_mask_add(cq_live, lane);")
        if self.pool:
            top, used, accounted = self.pool
            self.line(f"if (lane == 0) {{ *(unsigned *)(smem + {top}) = {self.static_bytes}; "
                      f"*(unsigned *)(smem + {used}) = {accounted}; }}")
        self.line(f"cq_sync_block({RUNTIME_SITE});")
        for e, ev in enumerate(code.events):
            self.line(f"const unsigned en{e} = {self._event_need(ev)};")
            self.line(f"if (lane == 0) ((unsigned *)(smem + {self.off_event[e]}))[{ev.slots}] = "
                      f"en{e};")
        if self._triggers_across_blocks():
            # no block of the cluster arrives at a slot of this one before it is zeroed
            self.line("cq_cluster_sync();")
        self._init_barriers()
        self._init_tma_barriers()
        self._leave_lambda()

    def _laneset(self, k: int, ls) -> None:
        """Lane set k for this lane: its code on fresh registers, the argument registers
        set (docs/EXECUTION.md §2)."""
        ins = decode(ls.code)
        regs = sorted({r for i in ins for r in _registers_of(i)})
        self.line("{")
        self.depth += 1
        for r in regs:
            if not any(r == sr for sr, _ in self.scalars):
                self.line(f"{cnum.reg_c(self.rt(r))} r{r} = 0;")
        self._body(ins, 0, laneset=True)
        self.line(f"if (r{ls.result}) cq_mask_add((unsigned *)(smem + "
                  f"{self.off_laneset[k]}), lane);")
        self.depth -= 1
        self.line("}")

    def mask(self, laneset: int) -> str:
        """C pointer to lane set ``laneset``'s mask, or 0 for every lane."""
        if self.code.lanesets[laneset].result < 0:
            return "(const unsigned *)0"
        return f"((const unsigned *)(smem + {self.off_laneset[laneset]}))"

    def _event_need(self, ev) -> str:
        """Arrivals per generation (§10.2): event<N>, else the union of the trigger
        statements' lane sets, times the blocks of a cluster for an event that
        trigger.cluster names (§10.8)."""
        if ev.count >= 0:
            return f"{ev.count}u"
        per_block = self._lanes_of(ev)
        return f"{per_block} * cq_cluster_blocks()" if ev.cluster else per_block

    def _lanes_of(self, ev) -> str:
        if any(self.code.lanesets[k].result < 0 for k in ev.lanesets):
            return "(unsigned)nlanes"
        if not ev.lanesets:
            return "0u"
        words = " | ".join(f"{self.mask(k)}[w]" for k in ev.lanesets)
        return f"[&] {{ unsigned n = 0; for (int w = 0; w < 32; w++) n += cq_popc({words}); " \
               f"return n; }}()"

    def _triggers_across_blocks(self) -> bool:
        return TRIGGER_CLUSTER in self.code.code[::WIDTH]

    def coll(self, ip: int) -> str:
        """A ``cq_coll`` for the collective instruction ``ip`` and this lane."""
        site, off = self.colls[ip]
        lo, hi = self.unit_range(site.unit)
        bar = "(cq_mbar *)0" if off is None else \
            f"(cq_mbar *)(smem + {off}) + {self.unit_index(site.unit)}"
        return f"cq_coll{{{bar}, {self.mask(site.laneset)}, cq_live, {lo}, {hi}}}"

    def unit_index(self, unit: int) -> str:
        return "0" if unit <= 0 else f"(lane / {unit})"

    def unit_range(self, unit: int):
        if unit <= 0:
            return "0", "nlanes"
        lo = f"(lane / {unit} * {unit})"
        return lo, f"({lo} + {unit} < nlanes ? {lo} + {unit} : nlanes)"

    def _init_barriers(self) -> None:
        bars = [(ip, site, off) for ip, (site, off) in self.colls.items() if off is not None]
        if not bars:
            return
        self.line("if (lane == 0) {")
        self.depth += 1
        for ip, site, off in bars:
            unit = max(site.unit, 0)
            members = "cq_live" if self.code.lanesets[site.laneset].result < 0 else \
                self.mask(site.laneset)
            count = f"(nlanes + {unit - 1}) / {unit}" if unit else "1"
            self.line(f"for (int u = 0; u < {count}; u++) {{  // instruction {ip}: {site.text}")
            hi = f"(u + 1) * {unit} < nlanes ? (u + 1) * {unit} : nlanes" if unit else "nlanes"
            lo = f"u * {unit}" if unit else "0"
            self.line(f"  unsigned n = cq_mask_count({members}, (const unsigned *)0, {lo}, "
                      f"{hi});")
            self.line(f"  if (n) cq_mbar_init((cq_mbar *)(smem + {off}) + u, n);")
            self.line("}")
        self.depth -= 1
        self.line("}")
        self.line(f"cq_sync_block({RUNTIME_SITE});")

    def _init_tma_barriers(self) -> None:
        if not self.off_tma:
            return
        self.line("if (lane == 0) {")
        for s, off in self.off_tma.items():
            self.line(f"  for (int i = 0; i < {self.code.buffers[s].count}; i++) "
                      f"cq_tma_init((cq_tma_bar *)(smem + {off} + i * {TMA_BAR_BYTES}));")
        self.line("}")
        self.line(f"cq_sync_block({RUNTIME_SITE});")

    def tma_bar(self, view: str) -> str:
        """The TMA barrier of the shared buffer instance ``view`` lies in (§9.7)."""
        return self.tma_bar_of(f"{view}.slot", f"{view}.index")

    def tma_bar_of(self, slot: str, index: str) -> str:
        """The TMA barrier of instance ``index`` of shared buffer ``slot`` (C values)."""
        pick = " : ".join(f"{slot} == {s} ? smem + {off}" for s, off in
                          self.off_tma.items())
        index = f"({index} > 0 ? {index} : 0)"     # -1: not a buffer array
        return f"(cq_tma_bar *)(({pick} : smem) + {index} * {TMA_BAR_BYTES})"

    def tma_bars(self) -> str:
        """The first TMA barrier: those of every shared buffer's instances follow it."""
        return f"(smem + {min(self.off_tma.values())})"

    def tma_bar_count(self) -> int:
        """The TMA barriers of the kernel, one per shared buffer instance."""
        return sum(self.code.buffers[s].count for s in self.off_tma)

    def _leave_lambda(self) -> None:
        """``cq_leave()``: the lane terminates (YIELD, or after a fault): it leaves the
        live mask, then every collective it takes part in, so that nobody waits for it.
        In that order: a drop can complete a rendezvous, and the lanes it releases share
        the collective's work among the live lanes, which must no longer count this one."""
        self.line("auto cq_leave = [&]() {")
        self.depth += 1
        self.line("cq_mask_remove(cq_live, lane);")
        self.line("cq_fence_block();")
        for ip, (site, off) in self.colls.items():
            if off is None:
                continue
            m = self.mask(site.laneset)
            member = "true" if self.code.lanesets[site.laneset].result < 0 else \
                f"cq_mask_has({m}, lane)"
            self.line(f"if ({member}) cq_mbar_arrive_drop((cq_mbar *)(smem + {off}) + "
                      f"{self.unit_index(site.unit)});")
        self.line("cq_cp_async_wait<0>();")
        for sl in sorted(self.dyn_local):
            self.line(f"cq_free(lbd{sl}.p);")
        self.line("cq_thread_exit();")
        self.depth -= 1
        self.line("};")
        self.line("(void)cq_leave;")

    def _body(self, ins_list, base: int, laneset: bool = False) -> None:
        for ip, ins in enumerate(ins_list):
            handler = self.handlers.get(op_name(ins))
            if handler is None:
                raise self.unsupported(f"opcode {op_name(ins)}", ins)
            if any(swizzle and self.code.views[v].shown
                   for v, swizzle in self._swizzled_views(ins)):
                raise self.unsupported("a view made by '.sqz()' read or written through a "
                                       "swizzle", ins)
            at = -1 if laneset else base + ip
            emit_wgmma.before(self, at, ins)
            handler(self, ins, at)
            emit_wgmma.after(self, at, ins)

    def _swizzled_views(self, ins) -> list[tuple[int, int]]:
        """(view, swizzle in bytes) of each view a DMA or an MMA load or store addresses:
        a squeezed view lies in its buffer with strides, which the swizzle (§9.7) of a
        whole buffer does not take."""
        op = op_name(ins)
        if op == "DMA":
            desc = self.code.dmas[ins[1]]
            sides = swizzled_sides(self.code, desc)
            return [(desc.src, sides[0])] + \
                ([(desc.dst_view, sides[1])] if desc.dst_view >= 0 else [])
        if op in ("MMA_LOAD", "MMA_STORE", "MMA_STORE_MASK"):
            return [(ins[2], self.code.views[ins[2]].swizzle)]
        return []

    def _epilogue(self) -> None:
        """The kernel ends: every async copy the lane issued must have been waited
        (§9.5.4)."""
        from .emit_sync import never_waited_checks
        end = (0,) * SPAN + (self.kernel.span,)     # the kernel's statement, for comments
        never_waited_checks(self, -1, end)
        self.line("cq_cp_async_wait<0>();", end)
        if self.off_landings:
            # published copies no waiter has waited for still land in this block's memory
            n = self.site(None, -1, end[-1], text="the end of the kernel")
            self.line(f"cq_tma_drain({self.tma_bars()}, {self.tma_bar_count()}, "
                      f"{TMA_BAR_BYTES}, {n});", end)
        for sl in sorted(self.dyn_local):
            self.line(f"cq_free(lbd{sl}.p);", end)
        if self._triggers_across_blocks():
            # the block's shared memory stays until no block of the cluster can arrive there
            self.line("cq_cluster_sync();", end)
        # a collective the lane did not arrive at still counts it (§7.4.4), on cuda-cpu
        self.line("cq_kernel_finished();", end)


def _bindings(ins) -> dict:
    """Each FUT_BIND's event (§10.7): that of the TRIGGER after it and the FUT_BINDs
    between, by the FUT_BIND's instruction index."""
    found, binds = {}, []
    for ip, x in enumerate(ins):
        if op_name(x) == "FUT_BIND":
            binds.append(ip)
            continue
        if op_name(x) == "TRIGGER":
            found.update((b, x[1]) for b in binds)
        binds = []
    return found


# --------------------------------------------------------------------------- operand facts

def _written_register(ins):
    from ..bytecode.opcodes import TABLE
    op = TABLE[ins[0]]
    if op.operands and op.operands[0] == "r" and op.name not in ("IF", "BREAK_IF",
                                                                  "CONTINUE_IF", "ASSERT",
                                                                  "ASSERT_FMT", "TRIGGER",
                                                                  "WAIT_EVENT", "RET_VAL"):
        return ins[1]
    return None


def _registers_of(ins):
    from ..bytecode.opcodes import TABLE
    op = TABLE[ins[0]]
    return [ins[1 + k] for k, kind in enumerate(op.operands) if kind == "r"]


def _coll_operand(ins):
    """The collective-site operand of an instruction, or None."""
    from ..bytecode.opcodes import TABLE
    op = TABLE[ins[0]]
    for k, kind in enumerate(op.operands):
        if kind in ("c", "c?"):
            return ins[1 + k]
    return None


# fault kind -> operands from the recorded values, for faults raised by cnum conversions
_OPERANDS = {
    Kind.FLOAT_TO_INT: lambda a, refs: (bits_value(a[0], dtypes.F64), int(a[1])),
    Kind.DIVISION_BY_ZERO: lambda a, refs: (),
    Kind.SHIFT_COUNT: lambda a, refs: (int(a[0]), int(a[1])),
}
