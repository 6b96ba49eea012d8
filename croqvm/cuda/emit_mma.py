"""MMA in generated CUDA: MMA_FILL, MMA_LOAD, MMA_EXEC, MMA_STORE, MMA_STORE_MASK,
MMA_ASYNC, MMA_WAIT (LANGUAGE.md §11, §12.4; docs/EXECUTION.md §8).

Each unit instance owns its copy of a fragment (§11.2). An accumulator of a warp or
warpgroup lives in registers: each lane keeps the elements it holds (§11.7's ownership,
the PTX C/D fragment maps; rt/cq_mma.h's cq_frag_slot) in its array ``rf<m>``, and every
operation on it does the lane's own elements. An operand that an ``mma.load`` of a view
fills just before the exec reading it is read from the view by the exec and has no copy.
Other fragments are in shared memory at a fixed offset (one per instance), or in the
lane's own array for per-lane fragments; the participants of one copy share its cells
out by rank. Every operation is a collective of its site. MMA_EXEC runs the engines'
step, k ascending, each step rounded once (cq_mma_dot over cq_numerics.h's cq_fma_to),
so results equal the interpreter's bit for bit, whatever the shape.

An exec runs on tensor cores where the hardware has an instruction for it (§11.4):
on sm_90a, a warpgroup's exec runs on ``wgmma.mma_async`` with both operands staged in
shared memory (rt/cq_wgmma.h), or read where they lie when both are views of
128B-swizzled tiles (``swizzled_layouts``, ``_wgmma_direct``); else a warp's or warpgroup's exec runs on ``mma.sync``
per warp (rt/cq_mma.h); else cell by cell. All three take the steps in the same order.

A fragment copy's flag holds 1 when it holds a tile, plus 2 for each asynchronous MMA
on it not yet waited (§11.5): the wgmma of an exec commits and waits for its own group
(or, in a wgmma chain, where the chain's region ends: emit_wgmma), so what MMA_ASYNC and
MMA_WAIT keep is the rule of the engines that the accumulator is not used before the
wait, with the same faults.

Conventions as in ``emit_ops``; ``m`` a fragment index; ``VT`` the C value type of a
fragment's dtype (its register type).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..bytecode import opcodes
from ..bytecode.module import BaseKind, FragRole
from ..core import dtypes
from ..core.faults import Kind
from ..core.limits import UNIT_OF_LANES, WARP_SIZE
from . import cnum, emit_wgmma
from .emit_sync import collective, squeeze, view, view_rank
from .uniform import register_only

# loops over at most this many MMA tiles or fragment slots are unrolled
UNROLL_TILES = 64


def frag_dtype(k, m: int) -> dtypes.DType:
    return dtypes.BY_CODE[k.code.frags[m].dtype]


def frag_ref(k, m: int):
    """(pointer to the lane's copy of fragment m -- for a register fragment, to the
    array of the elements it holds --, its 'holds a tile' flag, the lanes [lo, hi) of its
    instance)."""
    f = k.code.frags[m]
    vt = cnum.reg_c(frag_dtype(k, m))
    if f.unit == 1:
        return f"lf{m}", f"lf{m}_full", ("lane", "lane + 1")
    inst = k.unit_index(f.unit)
    if m in k.lane_flags:
        ptr = f"rf{m}" if m in k.reg_frags else "0"     # an operand read from its view
        return ptr, f"rf{m}_full", k.unit_range(f.unit)
    if m not in k.off_frag:                             # a fragment of run-time shape
        return "0", f"((unsigned *)(smem + {k.off_fragflag[m]}))[{inst}]", \
            k.unit_range(f.unit)
    size = f.rows * f.cols * (8 if vt in ("double", "int64_t", "uint64_t") else 4)
    ptr = f"(({vt} *)(smem + {k.off_frag[m]} + {inst} * {size}))"
    flag = f"((unsigned *)(smem + {k.off_fragflag[m]}))[{inst}]"
    return ptr, flag, k.unit_range(f.unit)


def register_fragments(k) -> dict:
    """Fragment -> the slots of its per-lane array: the accumulators of a warp or
    warpgroup whose shape is known when generating and that no exec shares with a
    fragment of run-time shape (those read their operands as arrays)."""
    code = k.code
    dyn = {m for m, f in enumerate(code.frags) if f.rows < 0 or f.cols < 0}
    mixed = {ins[1] for ins in k.ins
             if ins[0] == opcodes.MMA_EXEC and dyn & set(ins[1:4])}
    mixed |= {ins[1] for ins in k.ins if ins[0] == opcodes.MMA_GATHER and ins[3]}
    return {m: frag_slots(f.unit, f.rows, f.cols) for m, f in enumerate(code.frags)
            if f.role == FragRole.ACC and f.unit in UNIT_OF_LANES and m not in dyn
            and m not in mixed}


def frag_slots(unit: int, rows: int, cols: int) -> int:
    """The length of a lane's array for a [rows, cols] accumulator (cq_frag_slots)."""
    bands = -(-rows // 8) if unit == WARP_SIZE else 2 * -(-rows // 64)
    return bands * -(-cols // 8) * 2


def view_operands(k) -> dict:
    """MMA_EXEC's ip -> {operand fragment: the view its mma.load read}, for operands
    that need no copy: every load of the fragment is followed, past other loads only, by
    an exec reading it, and every exec reading it is preceded so, so the view holds
    what the load read when the exec reads it (no statement runs between them). The
    fragment's type is the view's, and it has no other use."""
    code = k.code
    uses: dict = {}
    for ip, ins in enumerate(k.ins):
        for x in _fragments_of(ins):
            uses.setdefault(x, []).append(ip)
    dyn = {m for m, f in enumerate(code.frags) if f.rows < 0 or f.cols < 0}
    fused: dict = {}
    for m, f in enumerate(code.frags):
        if f.role == FragRole.ACC or m in dyn or f.unit == 1:
            continue
        plan = {}
        for ip in uses.get(m, []):
            ins = k.ins[ip]
            if ins[0] == opcodes.MMA_LOAD and _reads(k, _exec_after(k, ip), m):
                continue
            if not _reads(k, ip, m) or _load_before(k, ip, m) is None or \
                    dyn & set(ins[1:4]):      # emit_mma_dyn reads operands as arrays
                break
            plan[ip] = _load_before(k, ip, m)
        else:
            if plan and all(_elem_type(k, v) is frag_dtype(k, m) for v in plan.values()):
                for ip, v in plan.items():
                    fused.setdefault(ip, {})[m] = v
    return fused


# ------------------------------------------------------------- wgmma reading shared tiles

SWIZZLE_ROW = 128    # bytes: a row of the 128B-swizzled layout, one swizzle span
_LAYOUT_NEUTRAL = {"ALLOC", "DIMOF", "FILL"}      # buffer uses the layout does not change


def swizzled_layouts(k) -> dict:
    """Shared buffer slot -> 128 for each buffer laid out 128B-swizzled (§9.7's swizzle
    function, which TMA's 128-byte mode writes and wgmma reads) although the program
    does not ask for it: on sm_90a, a static [R, C] buffer of rows of 128 bytes, R a
    multiple of 8, whose views are only the destinations of copies that go as
    tensor-map TMA and the sources of mma.loads, one of which feeds a wgmma K-major
    directly (view_operands), and no element access or other use reads it. Every one of
    those uses then addresses it through the swizzle, so the layout changes no value;
    it lets wgmma read the tile where it lies (_wgmma_direct)."""
    if k.arch != "sm_90a":
        return {}
    code = k.code
    direct = set()                 # (fragment, view) pairs an exec can read directly
    for ip, ops in view_operands(k).items():
        ins = k.ins[ip]
        if wgmma_plan(k, ins) is not None:
            direct |= {(m, v) for m, v in ops.items() if _k_major(ins, m)}
    out = {}
    for s, decl in enumerate(code.buffers):
        if decl.storage.name != "SHARED" or len(decl.shape) != 2 or \
                not all(r in k.consts for r in decl.shape):
            continue
        rows, cols = (int(k.consts[r]) for r in decl.shape)
        if cols * cnum.elem_bytes(dtypes.BY_CODE[decl.dtype]) != SWIZZLE_ROW or rows % 8:
            continue
        if _swizzle_safe(k, s, direct):
            out[s] = SWIZZLE_ROW
    return out


def _k_major(ins, m: int) -> bool:
    """Whether exec ``ins`` reads operand ``m`` with K contiguous (A [M, K], B [N, K])."""
    layout = ins[4]
    return layout < 2 if m == ins[2] else not layout & 1


def _swizzle_safe(k, s: int, direct: set) -> bool:
    from . import emit_tma
    from ..bytecode.opcodes import TABLE
    code = k.code
    mine = {v for v, d in enumerate(code.views) if d.base_kind == BaseKind.BUF and d.base == s}
    if any(a.base_kind == BaseKind.BUF and a.base == s for a in code.accesses):
        return False
    tma_write = direct_read = False
    for ins in k.ins:
        op = TABLE[ins[0]]
        for j, kind in enumerate(op.operands):
            x = ins[1 + j]
            if kind == "b" and x == s and op.name not in _LAYOUT_NEUTRAL:
                return False
            if kind == "v" and x in mine:
                if op.name != "MMA_LOAD":
                    return False
                direct_read |= (ins[1], x) in direct
            if kind == "d":
                desc = code.dmas[x]
                if desc.src in mine:
                    return False
                if desc.dst_view in mine:
                    if desc.swizzle or desc.is_async or \
                            emit_tma.plan(k, desc, layout=False) is None:
                        return False
                    tma_write = True
    return tma_write and direct_read


def layout_swizzle(k, v: int) -> int:
    """The swizzle view ``v`` is addressed through: the program's (§9.7), or that of the
    buffer's swizzled layout."""
    d = k.code.views[v]
    if d.swizzle or d.base_kind != BaseKind.BUF:
        return d.swizzle
    return k.layout_swizzle.get(d.base, 0)


def _fragments_of(ins) -> list:
    from ..bytecode.opcodes import TABLE
    op = TABLE[ins[0]]
    return [ins[1 + j] for j, kind in enumerate(op.operands) if kind == "m"]


def _exec_after(k, ip: int):
    """The ip of the MMA_EXEC that ends the run of MMA_LOADs at ``ip`` (with register
    arithmetic between them that leaves the load's view as it was), or None."""
    regs = _view_registers(k, k.ins[ip][2])
    while ip < len(k.ins) and (k.ins[ip][0] == opcodes.MMA_LOAD or
                               _register_only(k.ins[ip], regs)):
        ip += 1
    return ip if ip < len(k.ins) and k.ins[ip][0] == opcodes.MMA_EXEC else None


def _register_only(ins, keep: set) -> bool:
    """Whether ``ins`` only computes a register, not one of ``keep`` (a fault there ends
    the lane before any exec)."""
    return register_only(ins) and ins[1] not in keep


def _view_registers(k, v: int) -> set:
    d = k.code.views[v]
    return {r for r in (d.arr, d.flat, *d.origin, *d.extents, *d.space, *d.strides)
            if r >= 0}


def _reads(k, ip, m: int) -> bool:
    """Whether the instruction at ``ip`` is an MMA_EXEC with operand ``m``."""
    return ip is not None and k.ins[ip][0] == opcodes.MMA_EXEC and m in k.ins[ip][2:4] \
        and m != k.ins[ip][1]


def _load_before(k, ip: int, m: int):
    """The view of the MMA_LOAD of ``m`` in the run of loads just before ``ip``, when the
    register arithmetic between leaves that view as it was."""
    at, written = ip - 1, set()
    while at >= 0:
        ins = k.ins[at]
        if ins[0] == opcodes.MMA_LOAD:
            if ins[1] == m:
                return ins[2] if not written & _view_registers(k, ins[2]) else None
        elif _register_only(ins, set()):
            written.add(ins[1])
        else:
            return None
        at -= 1
    return None


def own_cells(k, ins, m: int) -> str:
    """Opens a loop over the elements of register fragment ``m`` the lane holds, with
    ``fi``, ``fj`` their position; returns the C cell. The caller closes it."""
    f = k.code.frags[m]
    # unrolled, so the slots are constants and the fragment stays in registers
    k.line(f"CQ_UNROLL for (int s = 0; s < {k.reg_frags[m]}; s++) {{", ins)
    k.depth += 1
    k.line(f"const int fi = cq_frag_row({f.unit}, lane % {f.unit}, s, {f.cols}), "
           f"fj = cq_frag_col(lane % {f.unit}, s, {f.cols});", ins)
    k.line(f"if (fi >= {f.rows} || fj >= {f.cols}) continue;", ins)
    return f"rf{m}[s]"


def whole_instance(k, ins, ip, m: int, c: int) -> None:
    """A register fragment's operation needs every lane of its instance: the others
    hold elements it reads or writes. UNIT_INACTIVE names those not taking part."""
    if m not in k.reg_frags or c < 0:
        return
    f = k.code.frags[m]
    lo = k.unit_range(f.unit)[0]
    # four words of bits, each computed whole: no array indexed at run time
    k.line(", ".join(f"const unsigned absent{w} = cq_coll_absent(cl, {lo}, {f.unit}, nlanes, "
                     f"{w})" if w == 0 else f"absent{w} = cq_coll_absent(cl, {lo}, {f.unit}, "
                     f"nlanes, {w})" for w in range(4)) + ";", ins)
    k.fault("(absent0 | absent1 | absent2 | absent3) != 0", Kind.UNIT_INACTIVE, ins, ip,
            (lo, "absent0", "absent1", "absent2", "absent3"),
            lambda a, refs, c=c, u=f.unit: (c, u, int(a[0]) // u, tuple(
                int(a[0]) + 32 * w + b for w in range(4) for b in range(32)
                if (int(a[1 + w]) >> b) & 1)))


def _elem_type(k, v: int) -> dtypes.DType:
    d = k.code.views[v]
    table = k.code.futures if d.base_kind == BaseKind.FUT else k.code.buffers
    return dtypes.BY_CODE[table[d.base].dtype]


def _tile_shape_fault(k, ins, ip, m, shape, want):
    f = k.code.frags[m]
    k.fault(f"{shape}.ext[0] != {want[0]} || {shape}.ext[1] != {want[1]}",
            Kind.MMA_TILE_SHAPE, ins, ip,
            (f"{shape}.slot", f"{shape}.index", f"{shape}.ext[0]", f"{shape}.ext[1]"),
            lambda a, refs, m=m, s=(f.rows, f.cols): (m, s, refs(int(a[0]), int(a[1])),
                                                       (int(a[2]), int(a[3]))))


def FMT_OF(t) -> str:
    """The cq_numerics.h format an accumulator rounds to (0 for integers: they wrap)."""
    return cnum.FMT.get(t.name, "0")


def _dynamic(k, *frags) -> bool:
    return any(m in k.dyn_frag for m in frags)


def pending_check(k, ins, ip, m: int, collective: bool) -> None:
    """MMA_PENDING: the copy of accumulator m has an asynchronous MMA not yet waited.
    Every participant has passed the collective's check for terminated lanes first (the
    rendezvous), so that the lanes leaving here are not reported as terminated. When no
    asynchronous MMA on m emits a count (emit_wgmma), its copy's count stays zero: only
    a carried accumulator's register can say pending, the same in every lane of the
    unit, so that the lanes meet only on their way out."""
    if m in k.chains.uncounted:
        if m in k.chains.carried:
            pending = emit_wgmma.pending(m)
            k.line(f"if ({pending}) {{", ins)
            k.depth += 1
            if collective:
                k.line(f"cq_coll_sync(cl, {k.wait_site_for(ins, ip)});", ins)
            k.in_wgmma_region += 1    # its group in flight lands before the lane leaves
            k.fault(pending, Kind.MMA_PENDING, ins, ip, (), lambda a, refs, m=m: (m,))
            k.in_wgmma_region -= 1
            k.depth -= 1
            k.line("}", ins)
        return
    if collective:
        k.line(f"cq_coll_sync(cl, {k.wait_site_for(ins, ip)});", ins)
    k.fault(f"({frag_ref(k, m)[1]}) >> 1", Kind.MMA_PENDING, ins, ip, (),
            lambda a, refs, m=m: (m,))


def op_mma_fill(k, ins, ip):
    _, m, r, c = ins[:4]
    if _dynamic(k, m):
        return emit_mma_dyn.op_fill(k, ins, ip)
    ptr, flag, lo_hi = frag_ref(k, m)
    f = k.code.frags[m]
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, parts):
        if m in k.async_frags:
            pending_check(k, ins, ip, m, c >= 0)
        whole_instance(k, ins, ip, m, c)
        t = frag_dtype(k, m)
        k.line(f"{cnum.reg_c(t)} val;", ins)
        k.convert_into("val", f"r{r}", k.rt(r), t, ins, ip)
        if m in k.reg_frags:
            k.line(f"for (int s = 0; s < {k.reg_frags[m]}; s++) rf{m}[s] = val;", ins)
        else:
            k.line(f"for (int i = {part}; i < {f.rows * f.cols}; i += {parts}) {ptr}[i] = val;",
                   ins)
        k.line(f"{flag} = 1;", ins)


def op_mma_load(k, ins, ip):
    """§11.3.2: the tile of the view; an element outside its buffer faults."""
    _, m, v, c = ins[:4]
    if _dynamic(k, m):
        return emit_mma_dyn.op_load(k, ins, ip)
    ptr, flag, lo_hi = frag_ref(k, m)
    f = k.code.frags[m]
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True, meet=_meet(k, ip)) as \
            (part, parts):
        if k.chains.role.get(ip) == "hoisted":     # its unit met before the slice loop
            emit_wgmma.terminated_check(k, ins, ip)
        view(k, v, "src", ins, ip)
        empty_check(k, ins, ip, v)
        read_outside_check(k, ins, ip, c, v)
        squeeze(k, v, "src", ins)
        if m in k.async_frags:      # an accumulator loaded anew (§11.3.2, §11.5)
            pending_check(k, ins, ip, m, c >= 0)
        _tile_shape_fault(k, ins, ip, m, "src", (f.rows, f.cols))
        whole_instance(k, ins, ip, m, c)
        if not any(m in ops for ops in k.view_operands.values()):   # else the exec reads src
            load_cells(k, ins, ip, m, v, ptr, str(f.rows), str(f.cols), part, parts)
        k.line(f"{flag} = 1;", ins)


def empty_check(k, ins, ip, v: int) -> None:
    """An extent of the view ``src`` below 1 is EMPTY_TILE, as a DMA's tile (§9.5.1)."""
    rank = view_rank(k, v)
    k.fault(" || ".join(f"src.ext[{j}] < 1" for j in range(rank)), Kind.EMPTY_TILE, ins, ip,
            ("src.slot", "src.index") + tuple(f"src.origin[{j}]" for j in range(rank))
            + tuple(f"src.ext[{j}]" for j in range(rank)),
            lambda a, refs: (refs(int(a[0]), int(a[1])), tuple(int(x) for x in a[2:2 + rank]),
                             tuple(int(x) for x in a[2 + rank:2 + 2 * rank])))


def read_outside_check(k, ins, ip, c: int, v: int) -> None:
    """§11.3.2: an element of the view ``src`` (view ``v``, all its dimensions) outside
    its buffer faults."""
    rank = view_rank(k, v)
    k.line(f"long long at[{rank}];", ins)
    k.fault("cq_first_outside_r(src, at)", Kind.MMA_READ_OUTSIDE, ins, ip,
            ("src.slot", "src.index") + tuple(f"at[{j}]" for j in range(rank)),
            lambda a, refs, s=c: (s, tuple(int(x) for x in a[2:]),
                                  refs(int(a[0]), int(a[1]))))


def load_cells(k, ins, ip, m, v, ptr, rows, cols, part, parts) -> None:
    """The lane's share of the cells of fragment m [rows, cols] from view ``src``,
    converted to the fragment's type."""
    et, ft = _elem_type(k, v), frag_dtype(k, m)
    if m in k.reg_frags:
        cell = own_cells(k, ins, m)
        k.line("const long long ix[2] = {fi, fj};", ins)
    else:
        cell = f"{ptr}[i]"
        k.line(f"for (long long i = {part}; i < {rows} * {cols}; i += {parts}) {{", ins)
        k.depth += 1
        k.line(f"const long long ix[2] = {{i / {cols}, i % {cols}}};", ins)
    k.convert_into(cell, view_value(k, v, "src"), et, ft, ins, ip)
    k.depth -= 1
    k.line("}", ins)


def view_value(k, v: int, name: str) -> str:
    """Element ``ix`` of view ``name`` (view ``v``), as a value of its type."""
    et = _elem_type(k, v)
    d = k.code.views[v]
    swizzle = layout_swizzle(k, v)      # §9.7: the layout a swizzled copy gave it
    rank = len(d.shown) if d.shown else len(d.origin)     # after .sqz()
    return cnum.load_value(f"({cnum.store_c(et)} *)({name}.base + cq_swizzle_r<{rank}>("
                           f"{name}, cq_offset_r({name}, ix), {swizzle}))", et)


def _exec_shapes(k, ins, mc, ma, mb, layout):
    """(M, N, K) of an exec, from the fragments' static shapes (§11.3)."""
    fa, fb, fc = (k.code.frags[x] for x in (ma, mb, mc))
    m, ka = (fa.rows, fa.cols) if layout in (0, 1) else (fa.cols, fa.rows)
    n, kb = (fb.rows, fb.cols) if layout in (0, 2) else (fb.cols, fb.rows)
    if ka != kb or (fc.rows, fc.cols) != (m, n):
        raise k.unsupported(f"the shapes of fragments '{fc.name}', '{fa.name}' and "
                            f"'{fb.name}' do not agree", ins)
    return m, n, ka


# mma.sync atoms of the runtime (rt/cq_mma.h), preferred first: (A, B, C, m, n, k)
ATOMS = [(a, a, "f32", 16, 8, kk) for a in ("f16", "bf16") for kk in (16, 8)] + \
    [("tf32", "tf32", "f32", 16, 8, kk) for kk in (8, 4)] + \
    [(a, b, "s32", m, 8, kk) for m, kk in ((16, 32), (16, 16), (8, 16))
     for a in ("s8", "u8") for b in ("s8", "u8")] + [("f64", "f64", "f64", 8, 8, 4)]


def atom_name(atom) -> str:
    a, b, c, m, n, kk = atom
    types = f"{a}_{c}" if a in ("f16", "bf16", "tf32", "f64") else f"{a}_{b}_{c}"
    return f"cq_mma_m{m}n{n}k{kk}_{types}"


def tensor_atom(k, mc, ma, mb, site, M, N, K):
    """The mma.sync atom an exec runs on, or None for the generic path: a warp or a
    warpgroup (each warp the 16-row bands it holds) owning its fragments, every lane of
    it taking part, and M, N, K multiples of a hardware shape of these types (§11.4)."""
    f = k.code.frags[mc]
    if f.unit not in (32, 128) or k.code.frags[ma].unit != f.unit or \
            k.code.frags[mb].unit != f.unit or site.unit != f.unit:
        return None
    types = (frag_dtype(k, ma).name, frag_dtype(k, mb).name, frag_dtype(k, mc).name)
    for atom in ATOMS:
        if atom[:3] == types and M % atom[3] == 0 and N % atom[4] == 0 and \
                K % atom[5] == 0:
            return atom
    return None


# wgmma operand types of the runtime (rt/cq_wgmma.h): (A, B, C) -> (its name, K per
# instruction); N per instruction, largest first (every type takes these)
WGMMA_TYPES = {("f16", "f16", "f32"): ("f16_f32", 16), ("bf16", "bf16", "f32"): ("bf16_f32", 16),
               ("tf32", "tf32", "f32"): ("tf32_f32", 8),
               ("f8_e4m3", "f8_e4m3", "f32"): ("e4m3_f32", 32),
               ("f8_e5m2", "f8_e5m2", "f32"): ("e5m2_f32", 32),
               **{(a, b, "s32"): (f"{a}_{b}_s32", 32) for a in ("s8", "u8") for b in ("s8", "u8")}}
WGMMA_N = (256, 128, 64, 32, 16, 8)
WGMMA_M = 64
# operand types no tensor-core instruction of an architecture takes, and the one that has
FP8 = ("f8_e4m3", "f8_e5m2")


# bytes of K a warpgroup stages at once (two instructions), and the columns of B: the
# staging area of each warpgroup stays at most (64 + 64) x 64 bytes, whatever K and N,
# leaving the block's shared memory to its buffers
WGMMA_STAGE_K_BYTES = 64
WGMMA_STAGE_N = 64


@dataclass(frozen=True)
class WgmmaPlan:
    """How an exec runs on wgmma: the runtime shape, its K and N per instruction, the
    element size, the K columns staged at once (a divisor of K), and the bytes of shared
    memory one warpgroup stages A and B in. Staged operands go by a shape of at most
    64 columns (``staged``, ``staged_n``), so that the staging area stays small; tiles
    read where they lie by the widest (``shape``, ``n``)."""
    shape: str
    k: int
    n: int
    elem_bytes: int
    kc: int
    a_bytes: int
    stage_bytes: int
    staged: str
    staged_n: int


def wgmma_plan(k, ins):
    """The wgmma plan of MMA_EXEC ``ins``, or None: on sm_90a, a warpgroup owning its
    fragments, M a multiple of 64, N of 8, K of the instruction's K, and operand types
    of a wgmma (§11.4). Whether every lane takes part is decided at run time."""
    _, mc, ma, mb, layout, c = ins[:6]
    if k.arch != "sm_90a" or c < 0 or _dynamic(k, mc, ma, mb):
        return None
    frags = [k.code.frags[x] for x in (mc, ma, mb)]
    if any(f.unit != 128 for f in frags) or k.code.colls[c].unit != 128:
        return None
    M, N, K = _exec_shapes(k, ins, mc, ma, mb, layout)
    types = tuple(frag_dtype(k, x).name for x in (ma, mb, mc))
    if types not in WGMMA_TYPES or M % WGMMA_M or N % WGMMA_N[-1]:
        return None
    name, kk = WGMMA_TYPES[types]
    if K % kk:
        return None
    n = next(x for x in WGMMA_N if N % x == 0)
    staged_n = next(x for x in WGMMA_N if x <= WGMMA_STAGE_N and N % x == 0)
    size = 32 // kk
    kc = math.gcd(K, WGMMA_STAGE_K_BYTES // size)      # a multiple of kk, as K is
    return WgmmaPlan(f"cq_wgmma_n{n}_{name}", kk, n, size, kc, WGMMA_M * kc * size,
                     (WGMMA_M + staged_n) * kc * size, f"cq_wgmma_n{staged_n}_{name}",
                     staged_n)


def check_arch(k, ins) -> None:
    """An exec the target has no tensor-core instruction for is an error naming the
    architecture that has one: 8-bit floats on sm_80."""
    _, _, ma, mb = ins[:4]
    types = {frag_dtype(k, ma).name, frag_dtype(k, mb).name}
    if k.arch == "sm_80" and types & set(FP8):
        t = sorted(types & set(FP8))[0]
        raise k.needs_arch("sm_90a", f"MMA on {t} operands (sm_80 tensor cores take no "
                           f"8-bit floats)", ins)


def op_mma_exec(k, ins, ip):
    """C += A B, k ascending, each step rounded once (§12.4): on tensor cores for a
    hardware shape, else cell by cell."""
    _, mc, ma, mb, layout, c = ins[:6]
    check_arch(k, ins)
    if _dynamic(k, mc, ma, mb):
        return emit_mma_dyn.op_exec(k, ins, ip)
    M, N, K = _exec_shapes(k, ins, mc, ma, mb, layout)
    pc, flag_c, lo_hi = frag_ref(k, mc)
    tc = frag_dtype(k, mc)
    exact = int(dtypes.F64 not in (frag_dtype(k, ma), frag_dtype(k, mb)))
    fmt = FMT_OF(tc)
    plan = wgmma_plan(k, ins)
    atom = tensor_atom(k, mc, ma, mb, k.code.colls[c], M, N, K) if c >= 0 and not plan \
        else None
    meet = _meet(k, ip)
    region = k.chains.region_of.get(ip)
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True, meet=meet) as (part, parts):
        if mc in k.async_frags:
            pending_check(k, ins, ip, mc, c >= 0 and meet != "none")
        for x in (ma, mb):
            px, flag_x, _ = frag_ref(k, x)
            k.fault(f"!{flag_x}", Kind.FRAGMENT_EMPTY, ins, ip, (), lambda a, refs, x=x: (x,))
        whole_instance(k, ins, ip, mc, c)
        _operand_readers(k, ins, ip, ma, mb, layout)
        unit = k.code.frags[mc].unit

        direct = plan and _direct_views(k, ins, ip)

        def tensor():
            if direct:      # read in place where the tiles lie as wgmma needs, else staged
                e = plan.elem_bytes
                k.line(f"if ({_direct_ok('vA', e)} && {_direct_ok('vB', e)}) {{", ins)
                k.depth += 1
                _wgmma_direct(k, ins, ip, plan, mc, (M, N, K), region)
                k.depth -= 1
                k.line("} else {", ins)
                k.depth += 1
                if region:        # the region's wgmmas land, and this exec goes cell by cell
                    emit_wgmma.land(k, region, ins)
                    cell = own_cells(k, ins, mc)
                    k.line(f"{cell} = cq_mma_dot({cell}, A_at, B_at, fi, fj, {K}, {fmt}, "
                           f"{exact});", ins)
                    k.depth -= 1
                    k.line("}", ins)
                    emit_wgmma.take(k, region, ins)
                else:
                    _wgmma_exec(k, ins, ip, plan, mc, (M, N, K))
                k.depth -= 1
                k.line("}", ins)
            elif plan:
                _wgmma_exec(k, ins, ip, plan, mc, (M, N, K))
            else:
                _tensor_exec(k, ins, ip, atom, mc, (M, N, K), unit)
        if mc in k.reg_frags and (atom or plan):
            tensor()         # whole_instance: every lane of the unit takes part
        elif mc in k.reg_frags:
            cell = own_cells(k, ins, mc)
            k.line(f"{cell} = cq_mma_dot({cell}, A_at, B_at, fi, fj, {K}, {fmt}, {exact});",
                   ins)
            k.depth -= 1
            k.line("}", ins)
        else:
            cells = (f"cq_mma_cells_at({pc}, A_at, B_at, {M}, {N}, {K}, {fmt}, {exact}, "
                     f"{part}, {parts});")
            if atom is None and plan is None:
                k.line(cells, ins)
            else:
                # every lane of the unit takes part (decided alike by all of them), so
                # each warp can run mma.sync or wgmma converged; else cell by cell
                k.line(f"if (cl.hi - cl.lo == {unit} && cq_mask_count(cl.live, cl.members, "
                       f"cl.lo, cl.hi) == {unit}) {{", ins)
                k.depth += 1
                tensor()
                k.depth -= 1
                k.line("} else {", ins)
                k.line("  " + cells, ins)
                k.line("}", ins)
        k.line(f"{flag_c} = 1;", ins)


def wgmma_cell(k, mc: int) -> str:
    """The C cell of accumulator register ``i`` of the wgmma tile (mt, nt): for an
    accumulator in registers, its slot without the lane (the wgmma D map and the
    fragment's slots agree on it: the band is (i / 2) % 2 within the 64 rows, the column
    block i / 4), so that the unrolled loops index constants and the accumulator stays in
    registers; else by the element's row and column."""
    f = k.code.frags[mc]
    if mc in k.reg_frags:
        return (f"rf{mc}[((2 * (mt / 64) + (i / 2) % 2) * {(f.cols + 7) // 8} + nt / 8 + "
                f"i / 4) * 2 + i % 2]")
    return acc_cell(k, mc, "mt + cq_wgmma_d_row(wt, i)", "nt + cq_wgmma_d_col(wt, i)")


def acc_cell(k, mc: int, row: str, col: str) -> str:
    """The C cell of element (row, col) of accumulator ``mc`` that this lane holds."""
    f = k.code.frags[mc]
    if mc in k.reg_frags:
        return f"rf{mc}[cq_frag_slot({f.unit}, {row}, {col}, {f.cols})]"
    return f"{frag_ref(k, mc)[0]}[({row}) * {f.cols} + ({col})]"


def _operand_readers(k, ins, ip, ma: int, mb: int, layout: int) -> None:
    """``A_at(m, kk)`` and ``B_at(kk, n)``: the operands' elements by layout (A stored
    [M, K] for row, [K, M] for col; B [N, K] for row, [K, N] for col), from their
    copies or, for operands of view_operands, from the views their loads read."""
    views = k.view_operands.get(ip, {})
    for name, x, (r, col) in (("A", ma, ("m", "kk") if layout < 2 else ("kk", "m")),
                              ("B", mb, ("kk", "n") if layout & 1 else ("n", "kk"))):
        vt = cnum.reg_c(frag_dtype(k, x))
        args = "int m, int kk" if name == "A" else "int kk, int n"
        if x in views:
            view(k, views[x], f"v{name}", ins, ip)
            body = (f"const long long ix[2] = {{{r}, {col}}}; "
                    f"return ({vt}){view_value(k, views[x], 'v' + name)};")
        else:
            body = f"return {frag_ref(k, x)[0]}[({r}) * {k.code.frags[x].cols} + ({col})];"
        k.line(f"auto {name}_at = [&]({args}) -> {vt} {{ {body} }};", ins)


def _direct_views(k, ins, ip) -> tuple | None:
    """(A's view, B's view) when the exec can read both operands where they lie in
    shared memory (the views its loads read, K-major, in a 128B-swizzled layout with
    rows of 128 bytes: the program's swizzle or the buffer's swizzled layout), else
    None. Where each view lies is checked when the exec runs (_direct_ok)."""
    _, mc, ma, mb = ins[:4]
    views = k.view_operands.get(ip, {})
    if ma not in views or mb not in views or not (_k_major(ins, ma) and _k_major(ins, mb)):
        return None
    for v in (views[ma], views[mb]):
        d = k.code.views[v]
        if layout_swizzle(k, v) != SWIZZLE_ROW or d.space or d.flat >= 0 or d.strides or \
                d.shown or len(d.origin) != 2:
            return None
    return views[ma], views[mb]


def _direct_ok(name: str, elem: int) -> str:
    """That view ``name`` lies in a whole 1024-byte aligned swizzle atom grid: rows of
    128 bytes, starting at a row of an atom's first and a 16-byte chunk."""
    return (f"!{name}.strided && {name}.dims[1] * {elem} == {SWIZZLE_ROW} && "
            f"{name}.dims[0] % 8 == 0 && {name}.origin[0] % 8 == 0 && "
            f"{name}.origin[1] * {elem} % 16 == 0 && (cq_smem_addr({name}.base) & 1023) == 0")


def _wgmma_direct(k, ins, ip, plan: WgmmaPlan, mc: int, mnk, region=None) -> None:
    """The warpgroup multiplies C in [64, n] tiles reading A and B where they lie: the
    descriptors of 128B-swizzled K-major tiles (cq_wgmma_desc_sw128) start at the tile's
    row and K column and advance 32 bytes of K per instruction; the K / k wgmmas of a
    tile run in one commit group, k ascending as the engines step. In a wgmma region
    (emit_wgmma) they chain on the region's accumulator copy, committed here and waited
    for where the region ends."""
    M, N, K = mnk
    n = k.wait_site_for(ins, ip)
    e = plan.elem_bytes
    cell = wgmma_cell(k, mc)
    start = ("cq_smem_addr({v}.base) + ({v}.origin[0] + {t}) * " + str(SWIZZLE_ROW) +
             " + ({v}.origin[1] + kt * " + str(plan.k) + ") * " + str(e))
    if region:
        d = emit_wgmma.copy(region)
        for line in (
            f"typedef {plan.shape} W;",
            "cq_fence_proxy_async();",
            f"CQ_UNROLL for (int mt = 0; mt < {M}; mt += 64)",
            f"  CQ_UNROLL for (int nt = 0; nt < {N}; nt += {plan.n}) {{",
            f"    cq_wgmma_fence<W>({d});",
            f"    for (int kt = 0; kt < {K // plan.k}; kt++)",
            f"      cq_wgmma<W>({d}, cq_wgmma_desc_sw128({start.format(v='vA', t='mt')}), "
            f"cq_wgmma_desc_sw128({start.format(v='vB', t='nt')}), {n});",
            "  }",
            "cq_wgmma_commit();",
        ):
            k.line(line, ins)
        return
    lines = ["const int wt = lane % 128;"] if "wt" in cell else []
    for line in (
        *lines,
        f"typedef {plan.shape} W;",
        "cq_fence_proxy_async();",
        f"CQ_UNROLL for (int mt = 0; mt < {M}; mt += 64)",
        f"  CQ_UNROLL for (int nt = 0; nt < {N}; nt += {plan.n}) {{",
        "    W::c_value d[W::ND];",
        f"    CQ_UNROLL for (int i = 0; i < W::ND; i++) d[i] = {cell};",
        "    cq_wgmma_fence<W>(d);",
        f"    for (int kt = 0; kt < {K // plan.k}; kt++)",
        f"      cq_wgmma<W>(d, cq_wgmma_desc_sw128({start.format(v='vA', t='mt')}), "
        f"cq_wgmma_desc_sw128({start.format(v='vB', t='nt')}), {n});",
        "    cq_wgmma_commit();",
        "    cq_wgmma_wait<0, W>(d);",
        f"    CQ_UNROLL for (int i = 0; i < W::ND; i++) {cell} = d[i];",
        "  }",
    ):
        k.line(line, ins)


def _wgmma_exec(k, ins, ip, plan: WgmmaPlan, mc: int, mnk) -> None:
    """The warpgroup multiplies C in [64, n] tiles (n the staged shape's, at most 64):
    each lane loads its accumulator registers; then for each slice of kc columns of K,
    ascending, its lanes stage A [64, kc] and B [n, kc] K-major in the warpgroup's
    shared staging area (rt/cq_wgmma.h's layout, elements in their PTX encoding), fence
    it for the async proxy and meet, and kc / k wgmmas, the descriptors advancing 32
    bytes of K each, run in one commit group, waited for before the slice's staging is
    reused: k ascending as the engines step."""
    M, N, K = mnk
    n = k.wait_site_for(ins, ip)
    stage = f"(smem + {k.off_wgmma} + {k.unit_index(128)} * {k.wgmma_stage})"
    desc = ("cq_wgmma_desc(cq_smem_addr(st) + {off} + kt * CQ_WGMMA_STEP_SLABS * "
            "cq_wgmma_lbo({rows}), cq_wgmma_lbo({rows}), CQ_WGMMA_SBO)")
    cell = wgmma_cell(k, mc)
    for line in (
        "const int wt = lane % 128;",
        f"unsigned char *const st = {stage};",
        f"typedef {plan.staged} W;",
        f"CQ_UNROLL for (int mt = 0; mt < {M}; mt += 64)",
        f"  CQ_UNROLL for (int nt = 0; nt < {N}; nt += {plan.staged_n}) {{",
        "    W::c_value d[W::ND];",
        f"    CQ_UNROLL for (int i = 0; i < W::ND; i++) d[i] = {cell};",
        f"    for (int k0 = 0; k0 < {K}; k0 += {plan.kc}) {{",
        f"      for (int i = wt; i < 64 * {plan.kc}; i += 128) {{ const int m = mt + i / "
        f"{plan.kc}, kk = i % {plan.kc}; cq_wgmma_elem<W::ta>::put(st + cq_wgmma_offset(i / "
        f"{plan.kc}, kk, 64, W::BYTES), A_at(m, k0 + kk)); }}",
        f"      for (int i = wt; i < {plan.staged_n * plan.kc}; i += 128) {{ const int n = nt + "
        f"i / {plan.kc}, kk = i % {plan.kc}; cq_wgmma_elem<W::tb>::put(st + {plan.a_bytes} + "
        f"cq_wgmma_offset(i / {plan.kc}, kk, {plan.staged_n}, W::BYTES), B_at(k0 + kk, n)); }}",
        "      cq_fence_proxy_async();",
        f"      cq_coll_sync(cl, {n});",
        "      cq_wgmma_fence<W>(d);",
        f"      for (int kt = 0; kt < {plan.kc // plan.k}; kt++)",
        f"        cq_wgmma<W>(d, {desc.format(off=0, rows=64)}, "
        f"{desc.format(off=plan.a_bytes, rows=plan.staged_n)}, {n});",
        "      cq_wgmma_commit();",
        "      cq_wgmma_wait<0, W>(d);",
        f"      cq_coll_sync(cl, {n});     // the staging area is reused by the next slice",
        "    }",
        f"    CQ_UNROLL for (int i = 0; i < W::ND; i++) {cell} = d[i];",
        "  }",
    ):
        k.line(line, ins)


def _tensor_exec(k, ins, ip, atom, mc: int, mnk, unit) -> None:
    """Each warp of the unit multiplies its rows of C in atoms (a warpgroup's warp w the
    16-row bands with (row / 16) % 4 == w, the rows it holds, §11.7): per (m, n) tile the
    lanes gather their fragment elements (the PTX layouts of cq_mma.h) and run mma.sync
    for k ascending, so every cell sees the engines' order of steps."""
    M, N, K = mnk
    am, an, ak = atom[3:]
    name = atom_name(atom)
    n = k.wait_site_for(ins, ip)
    f = k.code.frags[mc]
    # unrolled, every tile's accumulator slots are constants: the fragment stays in
    # registers (an index known only at run time puts it in local memory)
    if unit == WARP_SIZE:
        slot = f"cq_frag_tile_slot({f.unit}, mt, nt, i, {f.cols})"
        tiles = -(-M // am) * -(-N // an)
        rows = [f"for (int mt = 0; mt < {M}; mt += {am}) {{"]
    else:      # a warpgroup's warp w: the 16-row bands 64 mj + 16 w, 8 rows at a time
        slot = f"cq_frag_wg_slot(mj, mq * {am} / 8, nt, i, {f.cols})"
        tiles = -(-M // 64) * (16 // am) * -(-N // an)
        rows = [f"for (int mj = 0; mj < {-(-M // 64)}; mj++)",
                f"for (int mq = 0; mq < {16 // am}; mq++) {{",
                f"const int mt = 64 * mj + 16 * ((lane % 128) / 32) + mq * {am};",
                f"if (mt >= {M}) continue;"]
    cell = f"rf{mc}[{slot}]" if mc in k.reg_frags else \
        acc_cell(k, mc, "mt + cq_mma_c_row(wl, i)", "nt + cq_mma_c_col(wl, i)")
    unroll = "#pragma unroll" if tiles <= UNROLL_TILES else ""
    for line in ("const int wl = lane % 32;", f"typedef {name} S;"):
        k.line(line, ins)
    for line in rows:
        if line.startswith("for") and unroll:
            k.line(unroll, ins)
        k.line(line, ins)
    for line in (
        unroll,
        f"  for (int nt = 0; nt < {N}; nt += {an}) {{",
        "    S::c_value cf[S::NC], df[S::NC];",
        f"    for (int i = 0; i < S::NC; i++) cf[i] = {cell};",
        f"    for (int kt = 0; kt < {K}; kt += {ak}) {{",
        "      S::a_value af[S::NA]; S::b_value bf[S::NB];",
        "      for (int i = 0; i < S::NA; i++) { const int m = mt + cq_mma_a_row(S::ta::W, "
        "wl, i), kk = kt + cq_mma_a_col(S::ta::W, wl, i); af[i] = (S::a_value)A_at(m, kk); }",
        "      for (int i = 0; i < S::NB; i++) { const int kk = kt + cq_mma_b_row(S::tb::W, "
        "wl, i), n = nt + cq_mma_b_col(wl); bf[i] = (S::b_value)B_at(kk, n); }",
        f"      cq_mma_sync<S>(df, af, bf, cf, {n});",
        "      for (int i = 0; i < S::NC; i++) cf[i] = df[i];",
        "    }",
        f"    for (int i = 0; i < S::NC; i++) {cell} = cf[i];",
        "  }",
        "}",
    ):
        if line:
            k.line(line, ins)


def op_mma_store(k, ins, ip):
    """§11.3.4: the fragment converted to the view's type; .transp writes V[n][m];
    elements outside the buffer are skipped. MMA_STORE_MASK writes the rows below R[c]
    and the columns below R[d] only."""
    masked = ins[0] == opcodes.MMA_STORE_MASK
    if masked:
        _, m, v, rows, cols, c = ins[:6]
        transp, guard = 0, (f"r{rows}", f"r{cols}")
    else:
        _, m, v, transp, c = ins[:5]
        guard = None
    if _dynamic(k, m):
        if masked:
            raise k.unsupported("mma.store.mask of a fragment whose shape is known only at "
                                "run time", ins)
        return emit_mma_dyn.op_store(k, ins, ip)
    f = k.code.frags[m]
    ptr, flag, lo_hi = frag_ref(k, m)
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, parts):
        owners_check(k, ins, ip, m, c)
        if m in k.async_frags:
            pending_check(k, ins, ip, m, c >= 0)
        k.fault(f"!{flag}", Kind.FRAGMENT_EMPTY, ins, ip, (), lambda a, refs, m=m: (m,))
        view(k, v, "dst", ins, ip)
        squeeze(k, v, "dst", ins)
        want = (f.cols, f.rows) if transp else (f.rows, f.cols)
        _tile_shape_fault(k, ins, ip, m, "dst", want)
        whole_instance(k, ins, ip, m, c)
        store_cells(k, ins, ip, m, v, transp, ptr, str(f.rows), str(f.cols), part, parts,
                    guard)


def _pending_flag(k, ins, m):
    """(flag, lanes) of accumulator ``m``'s copy, whose pending count async MMAs keep."""
    if _dynamic(k, m):
        raise k.unsupported("an asynchronous MMA on a fragment whose shape is known only "
                            "at run time", ins)
    _, flag, lo_hi = frag_ref(k, m)
    return flag, lo_hi


def _meet(k, ip: int) -> str:
    """How the collective at ``ip`` meets: "both" outside a wgmma chain (emit_wgmma)."""
    return {"first": "entry", "inner": "none", "hoisted": "none"}.get(k.chains.role.get(ip),
                                                                   "both")


def _silent(k, ins, ip) -> bool:
    """An MMA_ASYNC/MMA_WAIT pair that ends a wgmma chain emits nothing (emit_wgmma)."""
    if ip not in k.chains.silent:
        return False
    k.line("// the pending count of a chain's asynchronous exec waited at once: "
           "unchanged", ins)
    return True


def op_mma_async(k, ins, ip):
    """One more asynchronous MMA pending on the accumulator copy (§11.5)."""
    _, m, c = ins[:3]
    if _silent(k, ins, ip):
        if m in k.chains.carried:     # waited in a later iteration (emit_wgmma)
            k.line(f"{emit_wgmma.pending(m)} = 1;", ins)
        return
    flag, lo_hi = _pending_flag(k, ins, m)
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, _):
        k.line(f"{_by_one(k, m, part)}{flag} += 2;", ins)


def op_mma_wait(k, ins, ip):
    """The wait of an operation future: its accumulator copy has nothing pending after
    it; MMA_NOT_PENDING when it had nothing before. Every participant decides before the
    lane of rank 0 updates (a rendezvous between), as for MMA_PENDING."""
    _, m, c = ins[:3]
    if _silent(k, ins, ip):
        return
    flag, lo_hi = _pending_flag(k, ins, m)
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, _):
        n = k.wait_site_for(ins, ip) if c >= 0 else None
        if n is not None:
            k.line(f"cq_coll_sync(cl, {n});", ins)
        k.fault(f"!(({flag}) >> 1)", Kind.MMA_NOT_PENDING, ins, ip, (),
                lambda a, refs, m=m: (m,))
        if n is not None:
            k.line(f"cq_coll_sync(cl, {n});", ins)
        k.line(f"{_by_one(k, m, part)}{flag} &= 1;", ins)


def _by_one(k, m: int, part: str) -> str:
    """The guard of an update of fragment m's flag: the lane of rank 0 updates a flag the
    instance shares; every lane its own."""
    return "" if m in k.lane_flags else f"if ({part} == 0) "


def owners_check(k, ins, ip, m: int, c: int) -> None:
    """§11.2: at block level, a fragment owned per warp or warpgroup may be stored by
    one unit only."""
    f = k.code.frags[m]
    if c < 0 or k.code.colls[c].unit != 0 or f.unit not in (32, 128):
        return
    k.line("int owners = 0;", ins)
    k.line(f"for (int u = 0; u * {f.unit} < nlanes; u++) owners += cq_mask_count("
           f"cl.live, cl.members, u * {f.unit}, (u + 1) * {f.unit} < nlanes ? "
           f"(u + 1) * {f.unit} : nlanes) > 0;", ins)
    k.fault("owners > 1", Kind.MMA_STORE_OWNERS, ins, ip, ("owners",),
            lambda a, refs, m=m, u=f.unit: (m, int(a[0]), u))


def store_cells(k, ins, ip, m, v, transp, ptr, rows, cols, part, parts, guard=None) -> None:
    """The lane's share of the cells of fragment m [rows, cols] into view ``dst``,
    converted, elements outside the buffer skipped; with ``guard`` (C expressions of a
    row and a column count) only the cells below both."""
    et, ft = _elem_type(k, v), frag_dtype(k, m)
    if m in k.reg_frags:
        cell = own_cells(k, ins, m)
        row, col = "fi", "fj"
    else:
        cell = f"{ptr}[i]"
        k.line(f"for (long long i = {part}; i < {rows} * {cols}; i += {parts}) {{", ins)
        k.depth += 1
        row, col = f"i / {cols}", f"i % {cols}"
    first, second = (col, row) if transp else (row, col)
    k.line(f"const long long ix[2] = {{{first}, {second}}};", ins)
    if guard is not None:
        k.line(f"if ({row} >= {guard[0]} || {col} >= {guard[1]}) continue;", ins)
    k.line("if (ix[0] < cq_lo(dst, 0) || ix[0] >= cq_hi(dst, 0) || ix[1] < cq_lo(dst, 1) "
           "|| ix[1] >= cq_hi(dst, 1)) continue;", ins)
    k.line(f"{cnum.reg_c(et)} val;", ins)
    k.convert_into("val", cell, ft, et, ins, ip)
    k.line(f"*({cnum.store_c(et)} *)(dst.base + cq_offset_r(dst, ix)) = "
           f"{cnum.store_value('val', et)};", ins)
    k.depth -= 1
    k.line("}", ins)


# --------------------------------------------------------------------------- elements (§11.7)

def _holder(unit: int, i: str, j: str) -> str:
    """The rank in its unit of the lane holding element (i, j) (croqvm.interp.mma.owner)."""
    band = f" + 32 * (int)(({i} / 16) % 4)" if unit > 32 else ""
    return f"((int)({i} % 8) * 4 + (int)({j} % 8) / 2{band})"


def _element(k, ins, ip, m: int, ri: int, rj: int) -> str:
    """Checks of FRAG_GET / FRAG_SET; the cell of element (R[ri], R[rj])."""
    f = k.code.frags[m]
    k.line(f"const long long fi = (long long)r{ri}, fj = (long long)r{rj};", ins)
    k.fault(f"fi < 0 || fi >= {f.rows} || fj < 0 || fj >= {f.cols}", Kind.FRAGMENT_INDEX,
            ins, ip, ("fi", "fj"),
            lambda a, refs, m=m, s=(f.rows, f.cols): (m, (int(a[0]), int(a[1])), s))
    if f.unit in (32, 128):
        k.line(f"const int holder = {_holder(f.unit, 'fi', 'fj')};", ins)
        k.fault(f"holder != lane % {f.unit}", Kind.FRAGMENT_NOT_OWNED, ins, ip,
                ("fi", "fj", "holder"), lambda a, refs, m=m, u=f.unit: (
                    m, (int(a[0]), int(a[1])), u, int(a[2])))
    return acc_cell(k, m, "fi", "fj")


def op_frag_get(k, ins, ip):
    _, r, m, ri, rj = ins[:5]
    k.line("{", ins)
    k.depth += 1
    cell = _element(k, ins, ip, m, ri, rj)
    k.convert_into(f"r{r}", cell, frag_dtype(k, m), k.rt(r), ins, ip)
    k.depth -= 1
    k.line("}", ins)


def op_frag_set(k, ins, ip):
    _, m, ri, rj, r = ins[:5]
    k.line("{", ins)
    k.depth += 1
    cell = _element(k, ins, ip, m, ri, rj)
    k.convert_into(cell, f"r{r}", k.rt(r), frag_dtype(k, m), ins, ip)
    k.depth -= 1
    k.line("}", ins)


def op_mma_gather(k, ins, ip):
    """Each lane writes the cells it holds from its own copy of the frag (every cell for
    a one-lane unit, the first participant for a block-level one); the collective's
    closing rendezvous publishes them (§11.7)."""
    _, m, b, transposed, c = ins[:5]
    f = k.code.frags[m]
    ptr, flag, lo_hi = frag_ref(k, m)
    t = frag_dtype(k, m)
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, parts):
        whole_instance(k, ins, ip, m, c)
        if m in k.reg_frags:       # the lane's own elements, from its own frag
            cell, i = own_cells(k, ins, m), f"fi * {f.cols} + fj"
        else:
            cell, i = f"{ptr}[i]", "i"
            k.line(f"for (int i = 0; i < {f.rows * f.cols}; i++) {{", ins)
            k.depth += 1
            if f.unit in (32, 128):
                r, col = f"(i / {f.cols})", f"(i % {f.cols})"
                first, second = (col, r) if transposed else (r, col)
                k.line(f"if ({_holder(f.unit, first, second)} != lane - {lo_hi[0]}) "
                       f"continue;", ins)
            elif f.unit != 1:
                k.line(f"if ({part} != 0) continue;", ins)
        value = cnum.load_value(f"({cnum.store_c(t)} *)lb{b} + {i}", t)
        k.line(f"{cell} = ({cnum.reg_c(t)}){value};", ins)
        k.depth -= 1
        k.line("}", ins)
        k.line(f"{flag} = 1;", ins)


# the dynamic variants build on the helpers above
from . import emit_mma_dyn  # noqa: E402

HANDLERS = {"MMA_FILL": op_mma_fill, "MMA_LOAD": op_mma_load, "MMA_EXEC": op_mma_exec,
            "MMA_STORE": op_mma_store, "MMA_STORE_MASK": op_mma_store,
            "MMA_ASYNC": op_mma_async, "MMA_WAIT": op_mma_wait, "FRAG_GET": op_frag_get,
            "FRAG_SET": op_frag_set, "MMA_GATHER": op_mma_gather}
