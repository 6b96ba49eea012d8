"""Kernels, regions, ``inthreads``, ``sync`` and lanesets (LANGUAGE.md §6.2, §6.7-§6.8,
§7.2, §7.4; docs/EXECUTION.md §3, §5, §7).

A kernel is lowered where its ``parallel`` stands: grid extents are computed on the host,
the body becomes the SPMD code of a ``Kernel`` (lane layout: levels.py), and the host emits
``LAUNCH`` with the host values the body used bound to kernel slots and registers.
A region is fork/join: an optional begin barrier, one ``IF`` per level with idle lanes,
the body, and the join barrier of the enclosing instance.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.core import dtypes
from croqvm.bytecode.module import (END_OF_PARALLEL, BufferDecl, Code, CollSite, Kernel, LaneSet,
                                    Launch, Storage)
from croqvm.lang import ast
from croqvm.core.limits import LEVEL_LANES, UNIT_OF_LEVEL

from .builder import CodeBuilder
from .dma import refuse_unaddressed
from .exprs import lower_as
from .levels import (LevelInfo, bound_operands, check_positive, emit_level, has_regions, plan,
                     trivial)
from .output import emit_check
from .state import Ctx, Lowerer
from .values import BufRef, Env, Val, ViewAlias
from .views import reg_of


@dataclass(eq=False)
class KernelState:
    par: ast.Parallel
    code: Code
    b: CodeBuilder
    args_env: Env
    block_size: int = 1                            # 0: given by the launch, ``block_reg``
    block_reg: int = -1                            # host register: lanes per block
    nests: int = 0                                 # parallel nests directly in the block
    levels: dict = field(default_factory=dict)     # id(PLevel) -> LevelInfo
    block_syms: list = field(default_factory=list) # (symbol, grid dim, bound register)
    cluster_syms: list = field(default_factory=list)  # (symbol, grid dim, cluster extent)
    block_tuple: object = None
    buffers: list = field(default_factory=list)    # Launch.buffers
    scalars: list = field(default_factory=list)    # Launch.scalars
    lanesets: dict = field(default_factory=dict)
    tid: int = -1
    cache: dict = field(default_factory=dict)      # per-concern facts (mma units, futures)

    # -------------------------------------------------------------- host values (§14.2)
    def import_value(self, sym, v):
        """A host value used in the kernel: an argument register / buffer slot bound at launch."""
        if isinstance(v, Val):
            return self._import_val(v, sym.name if sym is not None else "")
        if isinstance(v, ViewAlias):    # its chain imports what it reads when lowered
            return v
        if isinstance(v, BufRef):
            slot = self.b.add("buffers", BufferDecl(v.name, Storage.GLOBAL, v.dtype.code, [],
                                                    list(v.array)))
            self.buffers.append((slot, v.slot))
            return BufRef(slot, v.dtype, v.storage, v.rank, list(v.array), v.name)
        return None  # host futures are not visible in kernels: reported at the use

    def _import_val(self, v: Val, name: str) -> Val:
        if v.is_tuple:
            return Val(None, elems=[self._import_val(x, "") for x in v.elems])
        r = self.b.reg(v.dtype, name)
        self.scalars.append((r, v.reg))
        bound = -1
        if v.bound >= 0:
            bound = self.b.reg(dtypes.S32, f"#{name}" if name else "")
            self.scalars.append((bound, v.bound))
        return Val(v.dtype, r, bound)


# --------------------------------------------------------------------------- indices

def emit_block_vars(lw: Lowerer, st: KernelState) -> None:
    for sym, d, bound in st.block_syms:
        r = lw.b.reg(dtypes.S32, sym.name)
        lw.b.emit("BLOCKIDX", r, d)
        lw.bind(sym, Val(dtypes.S32, r, bound))
    for sym, d, extent in st.cluster_syms:        # the block's place in its cluster
        index = lw.b.reg(dtypes.S32)
        lw.b.emit("BLOCKIDX", index, d)
        r = lw.b.op("MOD", dtypes.S32, index, extent)
        lw.bind(sym, Val(dtypes.S32, lw.b.variable(r, sym.name, mutable=False), extent))
    if st.block_tuple is not None:
        lw.bind(st.block_tuple, Val(None, elems=[lw.env.get(s) for s, _, _ in st.block_syms]))


# --------------------------------------------------------------------------- lanesets

def laneset(lw: Lowerer, st: KernelState, guards: tuple) -> int:
    """The straight-line membership code of a collective context (§7.4.1), one per context."""
    live = tuple(g for g in guards if not (isinstance(g, LevelInfo) and trivial(st, g)))
    key = tuple(id(g) for g in live)
    if key in st.lanesets:
        return st.lanesets[key]
    ls = LaneSet()
    if live:
        lb = st.b.fork(ls.code)
        with lw.using(lb, Env(parent=st.args_env), straight=True):
            tid = lb.reg(dtypes.S32)
            lb.emit("LANE", tid)
            emit_block_vars(lw, st)
            result = None
            for g in guards:
                if isinstance(g, LevelInfo):
                    c = emit_level(lw, st, g, tid)
                else:
                    c = lower_as(lw, g.cond, dtypes.BOOL)
                if c is not None:
                    result = c if result is None else lb.op("AND", dtypes.BOOL, result, c)
            ls.result = result
            lb.finish(st.par.span)
    idx = st.lanesets[key] = st.b.add("lanesets", ls)
    return idx


def coll_site(lw: Lowerer, text: str, unit: int = 0) -> int:
    """A collective site of the current statement's collective set (§7.4.1)."""
    ls = laneset(lw, lw.kernel, lw.ctx.guards)
    return lw.b.add("colls", CollSite(ls, unit, text))


# --------------------------------------------------------------------------- statements

def lower_parallel(lw: Lowerer, s: ast.Parallel) -> None:
    if lw.kernel is None:
        _lower_kernel(lw, s)
    else:
        _lower_region(lw, s)


def _lower_levels(lw: Lowerer, st: KernelState, levels, body, ctx: Ctx) -> None:
    """Open one IF per level with idle lanes, bind indices, lower the body, close."""
    b = lw.b
    opened = []
    guards = ctx.guards
    info = ctx.level
    mma_unit = ctx.mma_unit
    for lv in levels:
        info = st.levels[id(lv)]
        cond = emit_level(lw, st, info, st.tid)
        if cond is not None:
            opened.append(b.open_if(cond))
        guards = guards + (info,)
        if info.kind in UNIT_OF_LEVEL:
            mma_unit = info.unit
    outer = has_regions(body)
    inner = Ctx(unit=info.unit, outer=outer, guards=guards, mma_unit=mma_unit, level=info)
    with lw.in_ctx(inner):
        lw.body(body)
    for pc in reversed(opened):
        b.close_if(pc)


def _lower_region(lw: Lowerer, s: ast.Parallel) -> None:
    """A nested ``parallel``: fork/join (§7.2.3, docs/EXECUTION.md §5)."""
    st, ctx = lw.kernel, lw.ctx
    if ctx.level is not None and ctx.level.writes:
        lw.b.emit("BARRIER", coll_site(lw, "barrier at start of parallel", ctx.unit))
    lw.names.append({})
    _lower_levels(lw, st, s.levels, s.body, ctx)
    lw.names.pop()
    lw.b.emit("BARRIER", coll_site(lw, END_OF_PARALLEL, ctx.unit))


def _lower_kernel(lw: Lowerer, s: ast.Parallel) -> None:
    """A kernel: grid extents on the host, the body as SPMD code, then ``LAUNCH`` (§14.2)."""
    from .stmts import hoist_globals
    hoist_globals(lw, s)
    host_b, host_env = lw.b, lw.env
    clustered = bool(s.kinds) and s.kinds[0] == "cluster"   # the block level follows it
    has_block = bool(s.kinds) and s.kinds[clustered] == "block"
    if has_block:
        grid = _host_extents(lw, s.levels[clustered])
    else:
        grid = [lw.int_reg(1)]
    cluster = _cluster_extents(lw, s.levels[0], grid) if clustered else []
    if len(grid) > 3:
        lw.unsupported(s.levels[0], "a block level with more than 3 dimensions")
    code = Code()
    kb = CodeBuilder(code, lw.spans)
    kb.span = s.span
    st = KernelState(s, code, kb, None)
    st.args_env = Env(parent=host_env, importer=st.import_value)
    plan(lw, st)
    fs = lw.fn
    kernel = Kernel(f"{fs.name}.k{len(fs.kernels)}", code, st.block_size, len(grid),
                    lw.spans.intern(s.span), _launch_bounds(lw, s, st.block_size),
                    s.maxnreg or 0)
    lw.names.append({})
    with lw.using(kb, Env(parent=st.args_env)):
        lw.kernel = st
        try:
            st.tid = kb.reg(dtypes.S32, "tid")
            kb.emit("LANE", st.tid)
            if clustered:
                _bind_cluster_level(lw, st, s.levels[0], cluster)
            if has_block:
                _bind_block_level(lw, st, s.levels[clustered], grid)
            info = st.levels.get(id(s.levels[clustered])) if has_block else None
            _lower_levels(lw, st, s.levels[clustered + has_block:], s.body,
                          Ctx(0, level=info))
            refuse_unaddressed(lw)
            kb.finish(s.span)
        finally:
            lw.kernel = None
            lw.names.pop()
    fs.kernels.append(kernel)
    launch = Launch(len(fs.kernels) - 1, grid, st.buffers, st.scalars, s.is_async,
                    lw.spans.intern(s.span), st.block_reg, s.stream_param, s.cooperative,
                    cluster)
    host_b.emit("LAUNCH", host_b.add("launches", launch))


def _launch_bounds(lw: Lowerer, s: ast.Parallel, block_size: int) -> list[int]:
    """``[[launch_bounds(...)]]`` with ``_`` (0) standing for the block size where it is
    known statically (§6.2.5); a bound below the block size would make every launch fail
    on a GPU."""
    bounds = list(s.launch_bounds or [])
    if bounds and bounds[0] == 0:
        bounds[0] = block_size
    if bounds and block_size and bounds[0] < block_size:
        lw.error(next(a.span for a in s.attrs if a.name == "launch_bounds"),
                 f"[[launch_bounds]] allows {bounds[0]} threads per block, but the kernel "
                 f"has {block_size}.")
    return bounds


def _host_extents(lw: Lowerer, lv: ast.PLevel) -> list[int]:
    """The extents of a grid level as host registers, each checked to be positive."""
    names, out = lv.names, []
    for e in lv.bounds:
        name = names[len(out)] if len(out) < len(names) else ""
        out += [reg_of(lw, x) for x in bound_operands(lw, e, name)]
    for d, r in enumerate(out):
        check_positive(lw, r, names[d] if d < len(names) else "")
    return out


def _cluster_extents(lw: Lowerer, lv: ast.PLevel, grid: list[int]) -> list[int]:
    """A cluster's extents (LANGUAGE.md §6.3.7), each dividing the grid's in its
    dimension: checked on the host before the launch."""
    cluster = _host_extents(lw, lv)
    if len(cluster) > len(grid):
        lw.unsupported(lv, "a cluster with more dimensions than its block level")
    b = lw.b
    for d, c in enumerate(cluster):
        rest = b.op("MOD", dtypes.S32, grid[d], c)
        ok = b.op("EQ", dtypes.BOOL, rest, lw.int_reg(0))
        emit_check(b, ok, f"the grid's dimension {d} has ", grid[d], " blocks, which is not a "
                   "multiple of the cluster's ", c, ".")
    return cluster


def _bind_extents(lw: Lowerer, st: KernelState, lv: ast.PLevel, host_regs: list[int],
                  named: list) -> list:
    """Each extent of a grid level (its host register) as a kernel scalar; the named
    dimensions' (symbol, dimension, register) go to ``named``. Returns the level's
    symbols."""
    syms = list(lv.syms or [])
    for d, host_reg in enumerate(host_regs):
        name = lv.names[d] if d < len(lv.names) else ""
        extent = lw.b.reg(dtypes.S32, f"#{name}" if name else "")
        st.scalars.append((extent, host_reg))
        if d < len(lv.names):
            named.append((syms[d], d, extent))
    return syms


def _bind_cluster_level(lw: Lowerer, st: KernelState, lv: ast.PLevel,
                        cluster: list[int]) -> None:
    _bind_extents(lw, st, lv, cluster, st.cluster_syms)


def _bind_block_level(lw: Lowerer, st: KernelState, lv: ast.PLevel, grid: list[int]) -> None:
    syms = _bind_extents(lw, st, lv, grid, st.block_syms)
    if len(syms) > len(lv.names):
        st.block_tuple = syms[-1]
    emit_block_vars(lw, st)


def lower_inthreads(lw: Lowerer, s: ast.Inthreads) -> None:
    """Lanes where the predicate holds run the body; a plain one ends with a barrier over
    the statement's collective set (§6.7, D17)."""
    ctx = lw.ctx
    cond = lower_as(lw, s.cond, dtypes.BOOL)
    pc = lw.b.open_if(cond)
    with lw.in_ctx(Ctx(ctx.unit, ctx.outer, ctx.guards + (s,), ctx.mma_unit, ctx.level)):
        lw.body(s.body)
    lw.b.close_if(pc)
    if not s.is_async:
        lw.b.emit("BARRIER", coll_site(lw, "barrier at end of inthreads", 0))


_SYNC_UNITS = {None: 0, "block": 0, **{u.level: u.lanes for u in UNIT_OF_LEVEL.values()}}


def lower_sync(lw: Lowerer, s: ast.Sync) -> None:
    """``sync.shared`` / ``sync.barrier : level`` (§6.8) are barriers; ``sync.fence : level``
    is a FENCE among the lanes of the level's instance and ``sync.global`` a SYNC_GLOBAL,
    both kept for the GPU though the interpreters need neither."""
    if s.kind == "global":
        lw.b.emit("SYNC_GLOBAL")
        return
    if not lw.ctx.in_kernel:
        return
    unit = _SYNC_UNITS.get(s.level)
    if s.kind == "fence":
        lw.b.emit("FENCE", LEVEL_LANES["thread"] if unit is None else unit)
        return
    if unit is None:                        # ": thread": nothing to wait for
        return
    text = "sync.shared" if s.kind == "shared" else f"sync.barrier : {s.level or 'block'}"
    lw.b.emit("GRID_SYNC" if s.grid else "BARRIER", coll_site(lw, text, unit))


def lower_named_barrier(lw: Lowerer, s: ast.NamedBarrier) -> None:
    """``__bar_sync`` / ``__bar_arrive`` (§6.8): the id and the count as s32, and the
    statement's collective set, whose lanes of a warp must all arrive together."""
    text = "__bar_arrive" if s.arrive else "__bar_sync"
    bar, count = (lower_as(lw, a, dtypes.S32) for a in s.args)
    lw.b.emit("BAR_ARRIVE" if s.arrive else "BAR_SYNC", bar, count, coll_site(lw, text))


TABLE = {ast.Parallel: lower_parallel, ast.Inthreads: lower_inthreads, ast.Sync: lower_sync,
         ast.NamedBarrier: lower_named_barrier}
