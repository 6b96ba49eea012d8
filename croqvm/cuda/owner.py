"""Which global elements a kernel's UPDATEs (``x.at(i) += v``, LANGUAGE.md §7.1.3) reach
from one lane only, so that the generated code may read and write them plainly instead
of by a compare-and-swap loop. Decided from the bytecode, conservatively: every index of
the access must be, per dimension, ``block coordinate * s + lane part`` (or one of the
two alone), each register written once in the kernel, with

- each block coordinate of the grid used by exactly one dimension, so different blocks
  reach different elements (whatever the grid's extents);
- the lane parts ``lane / C`` and ``lane % C`` (or ``lane``) together naming the lane, each
  below the stride ``s`` of its dimension, so different lanes of a block reach
  different elements;
- every other UPDATE or ATOMIC on a global buffer in the kernel (another slot may be
  the same memory) is on this buffer with the same index terms, and nothing but element
  accesses touches the buffer (no view, DMA or MMA of it).

Anything else keeps the compare-and-swap loop.
"""
from __future__ import annotations

from ..bytecode.module import BaseKind, Storage
from .emit import op_name

_SHARED_WRITES = ("UPDATE", "ATOMIC")


def _definitions(k) -> dict:
    """register -> its only writing instruction (registers written more than once: absent)."""
    from .emit_kernel import _written_register
    seen: dict = {}
    for ins in k.ins:
        w = _written_register(ins)
        if w is not None:
            seen.setdefault(w, []).append(ins)
    return {r: v[0] for r, v in seen.items() if len(v) == 1}


def _form(k, defs, r, depth=0):
    """What register ``r`` holds as a sum of coordinate terms: a list of
    ("block", dim, scale) and ("lane", divisor, modulus or 0, scale); None when unknown."""
    if depth > 8:
        return None
    if r in k.consts:
        return [("const", int(k.consts[r]))]
    ins = defs.get(r)
    if ins is None:
        return None
    op = op_name(ins)
    if op == "BLOCKIDX":
        return [("block", ins[2], 1)]
    if op == "LANE":
        return [("lane", 1, 0, 1)]
    if op in ("DIV", "MOD") and ins[3] in k.consts and int(k.consts[ins[3]]) > 0:
        inner = _form(k, defs, ins[2], depth + 1)
        if inner == [("lane", 1, 0, 1)]:
            c = int(k.consts[ins[3]])
            return [("lane", c, 0, 1)] if op == "DIV" else [("lane", 1, c, 1)]
        return None
    if op == "MUL":
        for x, y in ((ins[2], ins[3]), (ins[3], ins[2])):
            if y in k.consts and int(k.consts[y]) > 0:
                inner = _form(k, defs, x, depth + 1)
                if inner and len(inner) == 1 and inner[0][0] != "const":
                    term = inner[0]
                    return [term[:-1] + (term[-1] * int(k.consts[y]),)]
        return None
    if op == "ADD":
        a, b = _form(k, defs, ins[2], depth + 1), _form(k, defs, ins[3], depth + 1)
        return a + b if a is not None and b is not None else None
    return None


def _lane_range(k, term) -> int:
    """How many values lane part ``term`` takes in a block of k.block lanes."""
    _, div, mod, _ = term
    values = -(-k.block // div)
    return min(values, mod) if mod else values


def one_owner(k, a: int) -> bool:
    """Whether access ``a`` of an UPDATE reaches each element from one lane only."""
    acc = k.code.accesses[a]
    if acc.base_kind != BaseKind.BUF or \
            k.code.buffers[acc.base].storage != Storage.GLOBAL or acc.arr >= 0:
        return False
    if any(v.base_kind == BaseKind.BUF and v.base == acc.base for v in k.code.views):
        return False
    defs = _definitions(k)
    forms = [_form(k, defs, r) for r in acc.indices]
    for ins in k.ins:       # every UPDATE/ATOMIC on global memory reaches the same element
        if op_name(ins) in _SHARED_WRITES:
            other = k.code.accesses[ins[1] if op_name(ins) == "UPDATE" else ins[2]]
            if other.base_kind == BaseKind.BUF and \
                    k.code.buffers[other.base].storage != Storage.GLOBAL:
                continue
            if other.base_kind != acc.base_kind or other.base != acc.base or \
                    other.arr != acc.arr or \
                    [_form(k, defs, r) for r in other.indices] != forms:
                return False
    blocks, lanes = [], []
    for form in forms:
        if form is None:
            return False
        bs = [t for t in form if t[0] == "block"]
        ls = [t for t in form if t[0] == "lane"]
        if len(bs) + len(ls) != len(form) or len(bs) > 1 or len(ls) > 1:
            return False      # constants or repeated kinds: leave it to the general rule
        if bs and ls and _lane_range(k, ls[0]) * ls[0][3] > bs[0][2]:
            return False      # the lane part reaches into the next block's elements
        if ls and ls[0][3] != 1:
            return False
        blocks += [t[1] for t in bs]
        lanes += [t[1:3] for t in ls]
    if sorted(blocks) != list(range(k.kernel.grid_rank)):
        return False
    if lanes == [(1, 0)]:
        return True
    divs = {d for d, m in lanes if m == 0 and d > 1}
    mods = {m for d, m in lanes if d == 1 and m}
    return len(lanes) == 2 and len(divs) == 1 and divs == mods
