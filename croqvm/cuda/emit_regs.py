"""Register budgets of warp-specialised kernels on sm_90a (docs/CUDA.md "Register budgets
of warp-specialised kernels").

A kernel is warp-specialised by warpgroup when the block's top level splits its lanes
with ``inthreads`` branches (an IF without ELSE at the kernel's top level) whose
predicates, known when generating from the lane index and constants alone, each select
whole warpgroups: a *producer* branch copies (DMA) and never touches an MMA fragment, a
*consumer* branch runs the MMAs. Each warpgroup of such a branch then sets its registers
per thread as it enters: producers give theirs back (``setmaxnreg.dec.sync.aligned.u32
PRODUCER``), consumers take them (``setmaxnreg.inc``), as CUTLASS's warp-specialised
GEMMs do.

The counts must be legal and the registers there: ptxas honours setmaxnreg only when
launch bounds give the block size and the blocks per multiprocessor (without the second
count it drops the instruction), and then starts every warp with at most the registers
those bounds allow, ``entry`` (at most 255, a multiple of 8); a consumer's ``inc`` waits
for registers the producers' ``dec`` gave back to the block's pool, so the counts satisfy
producers * PRODUCER + consumers * consumer <= (producers + consumers) * entry, and the
producers' branches come first, so that no producer waits, on its way to its ``dec``,
behind a consumer waiting in its ``inc`` (at a barrier closing a consumer's plain
``inthreads``). The blocks per multiprocessor are those the block's shared memory lets
reside anyway, so the budget does not lower the occupancy. A program that sets
registers itself (``setreg_inc``, §6.10.6) or asks for ``[[maxnreg]]`` keeps its own
budget.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core import numerics
from ..core.faults import LaneFault
from ..core.limits import MAX_SHARED_BYTES
from .emit import op_name

WARPGROUP = 128
REGISTER_FILE = 65536        # 32-bit registers per multiprocessor and per block (sm_90)
SHARED_PER_SM = MAX_SHARED_BYTES    # shared memory of a multiprocessor for blocks (sm_90)
SHARED_RESERVED = 1024       # shared memory the system reserves per block (sm_90)
THREADS_PER_SM = 2048        # resident threads of a multiprocessor (sm_90)
MAX_REGS = 255               # registers per thread
PRODUCER = 40                # a copying warpgroup's registers (CUTLASS's load warps)
CONSUMER = 232               # the most an MMA warpgroup takes (CUTLASS's MMA warps)
MIN_COUNT = 24               # setmaxnreg's least count (PTX ISA: multiples of 8 to 256)

# the lane-index arithmetic a role predicate is made of, evaluated when generating as the
# engines evaluate it (croqvm.core.numerics)
_ARITH = {"ADD", "SUB", "MUL", "DIV", "MOD", "MIN", "MAX", "EQ", "NE", "LT", "LE", "GT", "GE",
          "AND", "OR"}


@dataclass(frozen=True)
class Budget:
    """The kernel's launch bounds (threads per block, blocks per multiprocessor), the registers
    every warp starts with, and per role branch (its IF's instruction index) the
    setmaxnreg it enters with: ("dec" or "inc", registers per thread)."""
    threads: int
    min_blocks: int
    entry: int
    roles: dict


def plan(k) -> Budget | None:
    """The register budget of kernel emitter ``k``, or None where it has none."""
    kern = k.kernel
    block = kern.block_size
    if k.arch != "sm_90a" or not block or block % WARPGROUP or kern.maxnreg or \
            any(op_name(ins) == "SET_MAXNREG" for ins in k.ins):
        return None
    groups = block // WARPGROUP
    roles = {}          # IF index -> (producer?, warpgroups)
    for ip, lanes in top_level_branches(k, block):
        sets = {g for g in range(groups) if lanes[g * WARPGROUP]}
        whole = all(lanes[g * WARPGROUP + t] == (g in sets) for g in range(groups)
                    for t in range(WARPGROUP))
        role = _role(k, ip)
        if not whole or role is None or not sets:
            continue
        roles[ip] = (role, frozenset(sets))
    producers = [g for p, gs in roles.values() if p for g in gs]
    consumers = [g for p, gs in roles.values() if not p for g in gs]
    if not producers or not consumers or \
            len(set(producers + consumers)) != len(producers) + len(consumers):
        return None       # a warpgroup in two roles, or not warp-specialised
    if max(ip for ip, (p, _) in roles.items() if p) > \
            min(ip for ip, (p, _) in roles.items() if not p):
        return None       # a consumer's .inc could wait for a producer held up behind it
    if len(kern.launch_bounds) > 1:
        min_blocks = kern.launch_bounds[1]
    elif k.smem_bytes > k.static_bytes:
        min_blocks = 1    # a pool sized at run time
    else:
        min_blocks = max(1, min(SHARED_PER_SM // (k.smem_bytes + SHARED_RESERVED),
                                THREADS_PER_SM // block))
    threads = kern.launch_bounds[0] if kern.launch_bounds else block
    entry = min(MAX_REGS, REGISTER_FILE // (threads * min_blocks)) // 8 * 8
    pool = (len(producers) + len(consumers)) * entry - len(producers) * PRODUCER
    consumer = min(CONSUMER, pool // len(consumers) // 8 * 8)
    if entry < PRODUCER or consumer <= entry or consumer < MIN_COUNT:
        return None       # nothing to gain
    return Budget(threads, min_blocks, entry,
                  {ip: ("dec", PRODUCER) if p else ("inc", consumer)
                   for ip, (p, _) in roles.items()})


def bounds(k) -> list[int]:
    """The launch bounds a kernel with a budget needs: its threads per block and blocks
    per multiprocessor, after which any others it was given."""
    b = k.reg_budget
    return [b.threads, b.min_blocks, *k.kernel.launch_bounds[2:]]


def enter(k, ins, ip) -> None:
    """At the top of role branch ``ip``: the warp's registers become its role's count
    (nothing on the CPU, which has no register file to share)."""
    if k.reg_budget is None or ip not in k.reg_budget.roles:
        return
    word, count = k.reg_budget.roles[ip]
    k.reg_lines += [len(k.out), len(k.out) + 1, len(k.out) + 2]
    k.line("#ifndef CQ_CPU", ins)
    k.line(f'asm volatile("setmaxnreg.{word}.sync.aligned.u32 {count};");', ins)
    k.line("#endif")


def settle(k) -> None:
    """Once the body is written: a kernel that calls one of the runtime's outlined
    helpers (the general paths) keeps no budget, since ptxas cannot allocate registers
    for a call where a warp's count has changed; its setmaxnreg lines go."""
    if k.reg_budget is None:
        return
    body = "\n".join(k.out)
    if not any(re.search(rf"\b{name}\s*[<(]", body) for name in _outlined()):
        return
    for at in reversed(k.reg_lines):
        del k.out[at]
    k.reg_budget = None


@functools.cache
def _outlined() -> tuple:
    """The runtime's CQ_OUTLINED helpers, which generated code calls directly."""
    rt = Path(__file__).parent / "rt"
    return tuple(m.group(1) for p in sorted(rt.iterdir())
                 for m in re.finditer(r"^(?:template <[^>\n]*> )?CQ_OUTLINED [^(;\n]*?\b(\w+)\(",
                                      p.read_text(), re.MULTILINE))


def top_level_branches(k, block: int):
    """(IF index, per lane whether it enters) of each IF without ELSE at the kernel's top
    level whose predicate is known from the lane index and constants."""
    from .emit_kernel import _written_register
    every = np.ones(block, bool)
    known: dict = {}        # register -> its values per lane (in its type's storage)
    depth = 0
    for ip, ins in enumerate(k.ins):
        op = op_name(ins)
        if depth == 0 and op == "IF":
            cond = known.get(ins[1])
            if cond is not None and op_name(k.ins[ins[2]]) == "END":
                yield ip, [bool(v) for v in cond]
        if op in ("IF", "LOOP"):
            depth += 1
        elif op == "END":
            depth -= 1
        w = _written_register(ins)
        if w is None:
            continue
        value = None
        if depth == 0:
            if op == "LANE":
                value = numerics.storage_array(range(block), k.rt(w))
            elif op == "CONST" and type(k.code.consts[ins[2]].value) is int:
                value = numerics.storage_array([k.code.consts[ins[2]].value] * block, k.rt(w))
            elif op == "MOV":
                value = known.get(ins[2])
            elif op == "NOT" and ins[2] in known:
                value = numerics.unary_op(op, k.rt(ins[2]))[0](known[ins[2]], every)
            elif op in _ARITH and ins[2] in known and ins[3] in known:
                fn, _ = numerics.binary_op(op, k.rt(ins[2]), k.rt(ins[3]))
                try:
                    with np.errstate(all="ignore"):
                        value = fn(known[ins[2]], known[ins[3]], every)
                except LaneFault:       # a division by zero: not known here
                    value = None
        if value is None:
            known.pop(w, None)
        else:
            known[w] = value


def _role(k, ip) -> bool | None:
    """True: branch ``ip`` is a producer (copies, no MMA); False: a consumer (MMAs);
    None: neither."""
    names = {op_name(ins) for ins in k.ins[ip + 1:k.ins[ip][2]]}
    if any(n.startswith("MMA") for n in names):
        return False
    return True if "DMA" in names else None
