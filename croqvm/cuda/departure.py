"""Where a member of a warp or warpgroup collective may have terminated before it
(UNIT_TERMINATED, LANGUAGE.md §7.4.4), so that the generated code checks for it only
there.

A lane ends by YIELD, by a fault (whose report is then the run's) or at the kernel's end.
It can be at the end while another member of its warp or warpgroup is at collective C
only by having skipped C: an IF around C it did not enter while the other did, or a
loop around C it left earlier or whose rest it skipped (BREAK_IF, CONTINUE_IF of that
loop). In a kernel without YIELD where every such condition has the same value in all
lanes of a warpgroup, no member of C's unit can have terminated, and C needs no check.

A value is the same in a warpgroup's lanes when it comes from constants, block indices,
kernel parameters and such values by arithmetic, and is not written under a condition
that differs between them; the top-level ``inthreads`` role predicates that select whole
warpgroups (emit_regs) are such conditions too. Anything else (the lane index, memory,
ONCE, a future's extents) may differ.
"""
from __future__ import annotations

from .emit import op_name

# instructions whose result is the same in lanes whose operands are
_PURE = {"CONST", "MOV", "CVT", "BLOCKIDX", "ADD", "SUB", "MUL", "DIV", "MOD", "MIN", "MAX",
         "AND", "OR", "XOR", "SHL", "SHR", "EQ", "NE", "LT", "LE", "GT", "GE", "NEG", "NOT",
         "BNOT", "SELECT"}
WARPGROUP = 128


def may_depart(k, ip: int) -> bool:
    """Whether a member of the warp or warpgroup of collective instruction ``ip`` may
    have terminated when it gets there."""
    if not hasattr(k, "steady_sites"):
        k.steady_sites = _steady_sites(k)
    return ip not in k.steady_sites


def _steady_sites(k) -> set:
    """The instructions whose enclosing conditions are the same in a warpgroup's lanes,
    in a kernel without YIELD (empty when it has one)."""
    from .emit_kernel import _registers_of, _written_register
    if any(op_name(ins) == "YIELD" for ins in k.ins):
        return set()
    frames, stack = [], []          # per instruction: its enclosing IF/LOOP indices
    owner = {}                      # BREAK_IF / CONTINUE_IF -> its loop
    for ip, ins in enumerate(k.ins):
        op = op_name(ins)
        if op == "END":
            stack.pop()
        frames.append(tuple(stack))
        if op in ("BREAK_IF", "CONTINUE_IF"):
            owner[ip] = next(f for f in reversed(stack) if op_name(k.ins[f]) == "LOOP")
        if op in ("IF", "LOOP"):
            stack.append(ip)
    roles = _warpgroup_roles(k)
    varying: set = set()            # registers
    unsteady: set = set()           # IFs and LOOPs
    changed = True
    while changed:
        changed = False
        for ip, ins in enumerate(k.ins):
            op = op_name(ins)
            if op == "IF" and ip not in roles and ins[1] in varying:
                changed |= ip not in unsteady
                unsteady.add(ip)
            elif op in ("BREAK_IF", "CONTINUE_IF") and ins[1] in varying:
                changed |= owner[ip] not in unsteady
                unsteady.add(owner[ip])
            w = _written_register(ins)
            if w is None or w in varying:
                continue
            inputs = _registers_of(ins)[1:]         # the first is the one written
            if op not in _PURE or any(r in varying for r in inputs) or \
                    any(f in unsteady for f in frames[ip]):
                varying.add(w)
                changed = True
    return {ip for ip in range(len(k.ins)) if not any(f in unsteady for f in frames[ip])}


def _warpgroup_roles(k) -> set:
    """The top-level IFs whose predicate, known for every lane, is the same in all lanes
    of each warpgroup."""
    from .emit_regs import top_level_branches
    block = k.kernel.block_size
    if not block:
        return set()
    return {ip for ip, lanes in top_level_branches(k, block)
            if all(len(set(lanes[g:g + WARPGROUP])) == 1 for g in range(0, block, WARPGROUP))}
