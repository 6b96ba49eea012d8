"""PRINT, ASSERT and ASSERT_FMT (LANGUAGE.md §6.9, §13): one lane after another, in lane
order; a failed check faults in its lowest failing lane (§7.1.3). ASM (§6.11) and
CALL_EXTERN (§6.10.6) fault; SET_MAXNREG does nothing.

Conventions: handlers take (``w``, ``ins``); text goes to the call's output stream; ``i``
indexes the warp's lanes.
"""
from __future__ import annotations

from ..core.faults import Kind, LaneFault
from ..reports.messages import print_registers, print_text


def _values(w, fmt, i: int) -> tuple:
    """Lane ``i``'s values of the registers print format ``fmt`` shows."""
    return tuple(w.regs[r][i] for r in print_registers(fmt))


def op_print(w, ins):
    blk = w.blk
    code = blk.prog.code
    fmt = code.prints[ins[1]]
    for i in w.active_indices():
        blk.call.out.write(print_text(code, fmt, _values(w, fmt, i)) +
                           ("\n" if fmt.newline else ""))


def _first_failure(w, r: int) -> int | None:
    failed = ~w.regs[r].astype(bool) & w.act
    return int(failed.nonzero()[0][0]) if failed.any() else None


def op_assert(w, ins):
    """§6.9: message S[b] as lowering worded it (``assertion failed: msg``), verbatim."""
    _, r, s = ins[:3]
    i = _first_failure(w, r)
    if i is not None:
        raise LaneFault(Kind.ASSERT, (s,), i)


def op_assert_fmt(w, ins):
    """A check whose message shows the failing lane's values, as print writes them:
    `the parallel bound of 'q' is 0: ...` (§6.2.2), `(lo 3, hi 1)` (§5.5.2)."""
    _, r, p = ins[:3]
    i = _first_failure(w, r)
    if i is not None:
        raise LaneFault(Kind.ASSERT_FMT, ((p, _values(w, w.blk.prog.code.prints[p], i)),), i)


def op_asm(w, ins):
    """Inline assembly (§6.11) is for a GPU's assembler: on the CPU the lowest active
    lane faults before it runs."""
    raise LaneFault(Kind.ASM_ON_CPU, (), int(w.active_indices()[0]))


def op_call_extern(w, ins):
    """A function defined in no file of the program (§6.10.6) has no code on the CPU: the
    lowest active lane faults before it would call it."""
    raise LaneFault(Kind.EXTERN_CALL, (ins[1],), int(w.active_indices()[0]))


def op_set_maxnreg(w, ins):
    """The register budget (§6.10.6) is the GPU's allocation; a lane here has no limit."""


HANDLERS = {"PRINT": op_print, "ASSERT": op_assert, "ASSERT_FMT": op_assert_fmt,
            "ASM": op_asm, "CALL_EXTERN": op_call_extern, "SET_MAXNREG": op_set_maxnreg}
