"""MMA_SCALE in generated CUDA (LANGUAGE.md §11.8): accumulator a += partial sum b times
the f32 scale of each row, then b := 0, with the engines' roundings (croqvm/interp/mma.py
op_mma_scale): an f32 accumulator by one cq_fma_to, an f16 one through f32 and f16 before
the add. Each participant of the unit's collective takes its share of the cells, as the
other MMA operations do (emit_mma): its own cells of an accumulator in registers. Fragments whose shape is known only at run time are
refused.

Conventions as in ``emit_mma``.
"""
from __future__ import annotations

from ..core import dtypes
from ..core.faults import Kind
from . import cnum
from .emit_mma import frag_dtype, frag_ref, own_cells, pending_check, whole_instance
from .emit_sync import collective, view


def op_mma_scale(k, ins, ip):
    _, ma, mp, v, r, c = ins[:6]
    if ma in k.dyn_frag or mp in k.dyn_frag:
        raise k.unsupported("mma.scale of an accumulator whose shape is known only at run "
                            "time", ins)
    f = k.code.frags[ma]
    rows, cols, nd = f.rows, f.cols, len(k.code.views[v].extents)
    pc, flag_c, lo_hi = frag_ref(k, ma)
    pp, flag_p, _ = frag_ref(k, mp)
    vt = cnum.reg_c(frag_dtype(k, ma))
    f32 = dtypes.F32
    with collective(k, ins, ip, c >= 0, lo_hi, whole_unit=True) as (part, parts):
        for x in (ma, mp):
            if x in k.async_frags:
                pending_check(k, ins, ip, x, c >= 0)
        view(k, v, "sc", ins, ip)
        exts = [f"sc.ext[{d}]" for d in range(nd)]
        k.fault(f"{' || '.join(f'{e} < 0' for e in exts)} || {' * '.join(exts)} != {rows}",
                Kind.MMA_TILE_SHAPE, ins, ip, ("sc.slot", "sc.index", *exts),
                lambda a, refs, m=ma, s=(rows, cols), n=nd: (
                    m, s, refs(int(a[0]), int(a[1])), tuple(int(x) for x in a[2:2 + n])))
        held = next((x for x in (ma, mp) if x in k.reg_frags), None)
        if held is None:
            k.line(f"for (long long i = {part}; i < {rows * cols}; i += {parts}) {{", ins)
            k.depth += 1
            row, c_cell, p_cell = f"i / {cols}", f"{pc}[i]", f"{pp}[i]"
        else:
            # a fragment in registers: each lane its own cells, which needs every lane of
            # the instance; the other fragment (if not in registers too) at the same cells
            whole_instance(k, ins, ip, held, c)
            own_cells(k, ins, held)
            row = "fi"
            c_cell, p_cell = (f"rf{x}[s]" if x in k.reg_frags else f"{ref}[fi * {cols} + fj]"
                              for x, ref in ((ma, pc), (mp, pp)))
        # the row's scale: the view's element number `row` in row-major order
        k.line(f"long long rest = {row}, ix[{nd}]; bool inside = true;", ins)
        k.line(f"for (int d = {nd - 1}; d >= 0; d--) {{ ix[d] = rest % sc.ext[d]; "
               "rest /= sc.ext[d]; inside = inside && ix[d] >= cq_lo(sc, d) && "
               "ix[d] < cq_hi(sc, d); }", ins)
        value = cnum.load_value(f"({cnum.store_c(f32)} *)(sc.base + cq_offset(sc, ix))", f32)
        k.line(f"const double scale = cq_round_f32((inside ? (double){value} : 0.0) * "
               f"(double)r{r});", ins)
        if frag_dtype(k, ma).name == "f32":
            k.line(f"{c_cell} = ({vt})cq_fma_to((double){c_cell}, (double){p_cell}, scale, "
                   f"CQ_FMT_F32, 1);", ins)
        else:
            k.line(f"{c_cell} = ({vt})cq_round_f16((double){c_cell} + cq_round_f16("
                   f"cq_round_f32((double){p_cell} * scale)));", ins)
        k.line(f"{p_cell} = 0;", ins)
        k.depth -= 1
        k.line("}", ins)
        k.line(f"{flag_c} = 1; {flag_p} = 1;", ins)


HANDLERS = {"MMA_SCALE": op_mma_scale}
