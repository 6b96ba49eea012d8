"""MMA_SPARSE in generated CUDA (LANGUAGE.md §11.9): the dense A operand of a 2:4 sparse
MMA, built from the packed operand and its metadata as the engines build it
(croqvm/interp/mma.py op_mma_sparse); the MMA_EXEC that follows multiplies it as any
operand (emit_mma). Each participant of the unit's collective takes its share of the
groups of four. Fragments whose shape is known only at run time are refused.

Conventions as in ``emit_mma``.
"""
from __future__ import annotations

from ..core.faults import Kind
from .emit_mma import frag_ref
from .emit_sync import collective


def op_mma_sparse(k, ins, ip):
    _, md, mp, mm, c = ins[:5]
    if any(x in k.dyn_frag for x in (md, mp, mm)):
        raise k.unsupported("a sparse MMA on fragments whose shape is known only at run "
                            "time", ins)
    d, p, e = (k.code.frags[x] for x in (md, mp, mm))
    if (e.rows, 4 * e.cols) != (p.rows, p.cols) or (d.rows, d.cols) != (p.rows, 2 * p.cols):
        raise k.unsupported(f"the shapes of the packed operand '{p.name}' and its metadata "
                            f"'{e.name}' do not agree", ins)
    pd, flag_d, lo_hi = frag_ref(k, md)
    pp, flag_p, _ = frag_ref(k, mp)
    pe, flag_e, _ = frag_ref(k, mm)
    groups = p.cols // 2           # of four dense columns, per row
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, parts):
        for x, flag in ((mp, flag_p), (mm, flag_e)):
            k.fault(f"!{flag}", Kind.FRAGMENT_EMPTY, ins, ip, (), lambda a, refs, x=x: (x,))
        k.line(f"for (long long i = {part}; i < {p.rows * groups}; i += {parts}) {{", ins)
        k.depth += 1
        k.line(f"const long long row = i / {groups}, g = i % {groups}, "
               f"at = row * {d.cols} + 4 * g, kept = row * {p.cols} + 2 * g;", ins)
        k.line(f"const long long nib = ((long long){pe}[row * {e.cols} + g / 2] >> "
               f"(4 * (g % 2))) & 15;", ins)
        k.line(f"for (int j = 0; j < 4; j++) {pd}[at + j] = 0;", ins)
        k.line(f"{pd}[at + (nib & 3)] = {pp}[kept];", ins)
        k.line(f"{pd}[at + (nib >> 2)] = {pp}[kept + 1];     // it wins when both are one", ins)
        k.depth -= 1
        k.line("}", ins)
        k.line(f"{flag_d} = 1;", ins)


HANDLERS = {"MMA_SPARSE": op_mma_sparse}
