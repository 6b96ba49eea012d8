"""Loop-invariant code motion: a computation a loop repeats on the same operands moves in
front of the loop, where it runs once per entry (docs/EXECUTION.md §4).

An instruction at the top level of a loop's body (not inside an IF or an inner loop of it)
moves to just before the loop's LOOP when

- it computes on registers only and can not fault: ``Op.faults`` is empty, or the operand
  that could make it fault is a constant register whose value can not (a division by a
  nonzero constant, a shift by a constant count in range), or it is a CVT that is not
  from a float into an integer;
- no instruction of the loop writes its operands (one that moved out before it aside);
- its result is a temporary (an unnamed register) that no other instruction writes, and
  every instruction that reads it lies in the loop after it.

Moved, it runs with the lanes that enter the loop, a superset of those that reached it
inside: lanes that leave the loop earlier compute a value no instruction they run reads,
and it can not fault, so the only trace of the move is the step counts. Named registers
stay where they are: the debugger shows a variable from its first write on
(croqvm/debug/values.py). A moved instruction carries the loop's span, so that a
breakpoint on the loop body's line is not hit before the loop runs. Loops nest: what
leaves an inner loop may leave the outer one too, so passes repeat until nothing moves.
"""
from __future__ import annotations

from collections import Counter

from croqvm.bytecode import opcodes
from croqvm.bytecode.dataflow import registers_read, registers_written
from croqvm.core import dtypes

W = opcodes.WIDTH


def hoist_invariants(code, insns: list[int], known: dict[int, int]) -> None:
    """Move the loop-invariant instructions of ``insns`` (flat, ``code``'s tables; the
    prologue of constants not yet inserted) out of their loops, in place. ``known`` maps
    the integer constant registers to their values."""
    ins = [insns[k:k + W] for k in range(0, len(insns), W)]
    if opcodes.LOOP not in (x[0] for x in ins):
        return
    while moves := _moves(code, ins, known):
        ins = _apply(ins, moves)
    insns[:] = [w for x in ins for w in x]


def _moves(code, ins: list, known: dict[int, int]) -> dict[int, list[int]]:
    """LOOP index -> the instructions (indices, in order) that move in front of it."""
    reads = [registers_read(code, x) for x in ins]
    writes = [registers_written(code, x) for x in ins]
    written = Counter(r for ws in writes for r in ws)
    readers: dict[int, list[int]] = {}
    for k, rs in enumerate(reads):
        for r in rs:
            readers.setdefault(r, []).append(k)
    moves: dict[int, list[int]] = {}
    for loop, x in enumerate(ins):
        if x[0] != opcodes.LOOP:
            continue
        end = x[1]
        inside = Counter(r for ws in writes[loop + 1:end] for r in ws)
        k = loop + 1
        while k < end:
            if opcodes.TABLE[ins[k][0]].opens:
                k = _end_of(ins, k) + 1
                continue
            if _movable(code, ins[k], known) and \
                    not any(inside[r] for r in reads[k]):
                dst = writes[k][0]
                if not code.reg_names[dst] and written[dst] == 1 and \
                        all(k < q < end for q in readers.get(dst, ())):
                    moves.setdefault(loop, []).append(k)
                    inside[dst] -= 1
            k += 1
    return moves


def _end_of(ins: list, k: int) -> int:
    """The END of the IF or LOOP at ``k``."""
    t = ins[k][2] if ins[k][0] == opcodes.IF else ins[k][1]
    return ins[t][1] if ins[t][0] == opcodes.ELSE else t


def _movable(code, x: list[int], known: dict[int, int]) -> bool:
    """Whether instruction ``x`` computes on registers only and can not fault."""
    op = opcodes.TABLE[x[0]]
    if op.writes != 0 or op.effect_block or op.collective or op.blocks or \
            not all(kind in ("r", "i") for kind in op.operands):
        return False
    if not op.faults:
        return True
    if op.code in (opcodes.DIV, opcodes.MOD):
        return known.get(x[3], 0) != 0
    if op.code in (opcodes.SHL, opcodes.SHR):
        bits = dtypes.BY_CODE[code.regs[x[1]]].bits
        return 0 <= known.get(x[3], -1) < bits
    if op.code == opcodes.CVT:
        src, dst = dtypes.BY_CODE[code.regs[x[2]]], dtypes.BY_CODE[code.regs[x[1]]]
        return not (src.is_float and dst.is_int)
    return False


def _apply(ins: list, moves: dict[int, list[int]]) -> list:
    """``ins`` with each LOOP's moved instructions just before it, carrying its span, and
    every stored instruction index renumbered."""
    moved = {k for ks in moves.values() for k in ks}
    order = []
    for k, x in enumerate(ins):
        if k in moved:
            continue
        for m in moves.get(k, ()):
            order.append((m, ins[m][:opcodes.SPAN] + [x[opcodes.SPAN]]))
        order.append((k, list(x)))
    where = {k: n for n, (k, _) in enumerate(order)}
    out = []
    for _, x in order:
        for i, kind in enumerate(opcodes.TABLE[x[0]].operands):
            if kind == "t":
                x[1 + i] = where[x[1 + i]]
        out.append(x)
    return out
