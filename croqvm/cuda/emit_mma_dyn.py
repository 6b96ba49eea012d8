"""MMA on fragments whose shape is known only at run time (FragDecl extents DYNAMIC,
LANGUAGE.md §11.3.3): each copy is a cq_dyn record, allocated from the block's pool by
the first operation that gives it a shape -- a load (the view's extents), an exec (M x N
of its operands) or a store (the destination's) -- and holding its fill value until
then; later operations must agree with that shape (MMA_SHAPES, MMA_TILE_SHAPE), as in the
engines (croqvm/interp/mma.py). Static fragments taking part are read in place.

Conventions as in ``emit_mma``; a fragment *access* is (pointer, rows, cols, holds a
tile) as C expressions.
"""
from __future__ import annotations

from ..core.faults import Kind
from ..core.limits import MAX_SHARED_BYTES
from . import cnum
from .emit_kernel import DYN_RECORD
from .emit_mma import frag_dtype, frag_ref
from .emit_sync import collective, squeeze, view


def record(k, m: int) -> str:
    f = k.code.frags[m]
    return f"((cq_dyn *)(smem + {k.dyn_frag[m]} + {k.unit_index(f.unit)} * {DYN_RECORD}))"


def access(k, m: int):
    """(pointer, rows, cols, holds a tile) of the lane's copy of fragment m."""
    vt = cnum.reg_c(frag_dtype(k, m))
    if m not in k.dyn_frag:
        ptr, flag, _ = frag_ref(k, m)
        f = k.code.frags[m]
        return ptr, str(f.rows), str(f.cols), flag
    rec = record(k, m)
    return (f"(({vt} *)(smem + {rec}->off))", f"{rec}->dims[0]", f"{rec}->dims[1]",
            f"({rec}->state == CQ_DYN_READY)")


def lanes_of(k, m: int):
    f = k.code.frags[m]
    return ("lane", "lane + 1") if f.unit == 1 else k.unit_range(f.unit)


def _value_bytes(k, m: int) -> int:
    vt = cnum.reg_c(frag_dtype(k, m))
    return 8 if vt in ("double", "int64_t", "uint64_t") else 4


def shape_fragment(k, m: int, rows: str, cols: str, ins, ip) -> None:
    """Allocate the copy of fragment m as rows x cols, filled with its fill value, unless
    it has its shape; a shape it has must be this one (MMA_TILE_SHAPE is the caller's)."""
    top, used, _ = k.pool
    rec = record(k, m)
    n = k.wait_site_plain(ins, ip, f"fragment '{k.code.frags[m].name}'")
    k.line(f"{{ const long long want[2] = {{{rows}, {cols}}};", ins)
    k.line(f"  const unsigned st = cq_dyn_alloc({rec}, want, 2, {_value_bytes(k, m)}, 1, 0, "
           f"smem, (unsigned *)(smem + {top}), cq_smem_bytes(), (unsigned *)(smem + {used}), "
           f"{MAX_SHARED_BYTES}u, {n});", ins)
    k.fault("st != CQ_DYN_READY", Kind.ALLOC_FRAGMENT, ins, ip, ("want[0]", "want[1]"),
            lambda a, refs, m=m: (m, (int(a[0]), int(a[1]))))
    k.line("}", ins)


def op_fill(k, ins, ip):
    _, m, r, c = ins[:4]
    ptr, rows, cols, ready = access(k, m)
    t = frag_dtype(k, m)
    with collective(k, ins, ip, c >= 0, lanes_of(k, m), whole_unit=True) as (part, parts):
        k.line(f"{cnum.reg_c(t)} val;", ins)
        k.convert_into("val", f"r{r}", k.rt(r), t, ins, ip)
        k.line(f"if ({ready}) {{ for (long long i = {part}; i < {rows} * {cols}; i += {parts}) "
               f"{ptr}[i] = val; }} else memcpy({record(k, m)}->fill, &val, sizeof val);", ins)


def op_load(k, ins, ip):
    from .emit_mma import empty_check, load_cells, read_outside_check
    _, m, v, c = ins[:4]
    with collective(k, ins, ip, c >= 0, lanes_of(k, m), whole_unit=True) as (part, parts):
        view(k, v, "src", ins, ip)
        empty_check(k, ins, ip, v)
        read_outside_check(k, ins, ip, c, v)
        squeeze(k, v, "src", ins)
        _agree(k, m, ins, ip, "src.ext[0]", "src.ext[1]", "src")
        shape_fragment(k, m, "src.ext[0]", "src.ext[1]", ins, ip)
        ptr, rows, cols, _ = access(k, m)
        load_cells(k, ins, ip, m, v, ptr, rows, cols, part, parts)


def _agree(k, m, ins, ip, rows, cols, v) -> None:
    """A copy that has its shape must have this one (MMA_TILE_SHAPE against view v)."""
    _, have_r, have_c, ready = access(k, m)
    k.fault(f"{ready} && ({have_r} != {rows} || {have_c} != {cols})", Kind.MMA_TILE_SHAPE,
            ins, ip, (have_r, have_c, f"{v}.slot", f"{v}.index", f"{v}.ext[0]", f"{v}.ext[1]"),
            lambda a, refs, m=m: (m, (int(a[0]), int(a[1])), refs(int(a[2]), int(a[3])),
                                  (int(a[4]), int(a[5]))))


def op_exec(k, ins, ip):
    """§11.3: M, N, K from the operands' shapes by layout; the accumulator takes M x N
    (its fill value) on first use, else must have it."""
    from .emit_mma import FMT_OF
    _, mc, ma, mb, layout, c = ins[:6]
    pc, rc, cc, ready_c = access(k, mc)
    pa, ra, ca, ready_a = access(k, ma)
    pb, rb, cb, ready_b = access(k, mb)
    with collective(k, ins, ip, c >= 0, lanes_of(k, mc), whole_unit=True) as (part, parts):
        for x, ready in ((ma, ready_a), (mb, ready_b)):
            k.fault(f"!{ready}", Kind.FRAGMENT_EMPTY, ins, ip, (), lambda a, refs, x=x: (x,))
        m_, ka = (ra, ca) if layout in (0, 1) else (ca, ra)
        n_, kb = (rb, cb) if layout in (0, 2) else (cb, rb)
        k.line(f"const long long M = {m_}, N = {n_}, K = {ka};", ins)
        shapes = lambda a, refs, x=ma, y=mb: (x, (int(a[0]), int(a[1])), y,   # noqa: E731
                                              (int(a[2]), int(a[3])))
        k.fault(f"K != {kb}", Kind.MMA_SHAPES, ins, ip, (ra, ca, rb, cb), shapes)
        # as the checker words it: A when M disagrees, else B
        k.fault(f"{ready_c} && ({rc} != M || {cc} != N)", Kind.MMA_SHAPES, ins, ip,
                (rc, cc, f"({rc} != M)", ra, ca, rb, cb),
                lambda a, refs, mc=mc, x=ma, y=mb: (
                    mc, (int(a[0]), int(a[1])), x if a[2] else y,
                    (int(a[3]), int(a[4])) if a[2] else (int(a[5]), int(a[6]))))
        if mc in k.dyn_frag:
            shape_fragment(k, mc, "M", "N", ins, ip)
            pc = access(k, mc)[0]
        exact = int("f64" not in (frag_dtype(k, ma).name, frag_dtype(k, mb).name))
        k.line(f"cq_mma_cells({pc}, {pa}, {pb}, (int)M, (int)N, (int)K, {layout}, "
               f"{FMT_OF(frag_dtype(k, mc))}, {exact}, {part}, {parts});", ins)
        if mc not in k.dyn_frag:
            k.line(f"{frag_ref(k, mc)[1]} = 1;", ins)


def op_store(k, ins, ip):
    """§11.3.4 with the shape taken from the destination when the copy has none."""
    from .emit_mma import owners_check, store_cells
    _, m, v, transp, c = ins[:5]
    with collective(k, ins, ip, c >= 0, lanes_of(k, m), whole_unit=True) as (part, parts):
        owners_check(k, ins, ip, m, c)
        view(k, v, "dst", ins, ip)
        squeeze(k, v, "dst", ins)
        rows, cols = ("dst.ext[1]", "dst.ext[0]") if transp else ("dst.ext[0]", "dst.ext[1]")
        _agree(k, m, ins, ip, rows, cols, "dst")
        shape_fragment(k, m, rows, cols, ins, ip)
        ptr, r, cl, _ = access(k, m)
        store_cells(k, ins, ip, m, v, transp, ptr, r, cl, part, parts)
