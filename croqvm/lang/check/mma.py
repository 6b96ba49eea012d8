"""MMA fragments and operations (LANGUAGE.md §11.1-§11.3, D9-D11).

A fragment symbol's type is refined as facts arrive in source order: the accumulator type
(D11) and shape come from the first ``mma.row.*`` using it, else its first ``mma.store``.
An element use (``acc.span``, ``acc.at``) may come before that statement in the text, as
in a loop whose MMA follows the use (§11.3.3): the first pass over the function notes it
(``Symbol.info["shape_early"]``) and ``later_shapes`` hands the types it learned to a
second pass, in which the accumulator has its type from its declaration on
(``expect_later_shapes``; see ``functions.check_function``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from croqvm.core import dtypes
from croqvm.core.dtypes import DType
from croqvm.core.limits import UNIT_OF_LEVEL
from croqvm.lang import ast
from croqvm.lang.types import Buffer, Fragment, OpFuture, shape_str

from .consteval import const_value
from .decls import note_param_write
from .dma import facts as future_facts
from .dma import swizzle_of_load
from .typerules import convert, is_integer, is_number, is_unknown, tname
from .views import root_name, view_source
from .walk import child_stmts, thread_dependence

MMA_TYPES = {"f16", "f32", "f64", "s32"}       # the accumulator types (§11.3.3)
ACC_HINT = "an accumulator is created by 'mc = mma.fill v' (mma.load makes operand tiles)"


@dataclass
class AccFacts:
    declared: list = field(default_factory=list)  # (Symbol, declaring statement)
    later: dict = field(default_factory=dict)     # id(declaring statement) -> Fragment


def _acc_facts(ck) -> AccFacts:
    return ck.fact("accumulators", AccFacts)


def later_shapes(ck) -> dict:
    """After a pass: the accumulators used element-wise before the statement that gave
    them their shape, each with the type it ended with."""
    return {id(stmt): sym.type for sym, stmt in _acc_facts(ck).declared
            if sym.info.get("shape_early") and not sym.info.get("bad")
            and sym.type.shape is not None and sym.type.dtype is not None}


def expect_later_shapes(ck, later: dict):
    """Before a pass: the accumulator types ``later_shapes`` found in the previous one."""
    _acc_facts(ck).later = later


def _unit_kind(ck):
    """§11.2 (a): the innermost enclosing 'group-4' or 'group' level, if any."""
    for kind, _ in reversed(ck.levels):
        if kind in UNIT_OF_LEVEL:
            return kind
    return None


def _use(ck, sym, span):
    """All operations on a fragment agree on the unit kind (§11.2)."""
    kind = _unit_kind(ck)
    if kind is None:
        return
    kinds = sym.info.setdefault("units", set())
    kinds.add(kind)
    if len(kinds) > 1 and not sym.info.get("units_reported"):
        sym.info["units_reported"] = True
        ck.error(span, f"fragment '{sym.name}' is used by both 'group' and 'group-4' "
                       f"levels.")


def _uniform(ck, what, expr):
    """Operands of a warp or warpgroup operation are uniform: no thread index (§11.2)."""
    kind = _unit_kind(ck)
    dep = thread_dependence(expr) if kind else None
    if dep:
        ck.error(expr.span, f"{what} is executed once per '{kind}' instance, but its operand "
                            f"depends on thread index '{dep}'.")


def _target(ck, s, fty: Fragment | None, role: str):
    """Declare or re-bind the fragment named by ``s.target``. ``mc = mma.fill v`` re-fills
    a fragment of the same parallel-by, and declares a new one hiding a fragment of an
    enclosing parallel-by (lib/earlysema.cpp: DeclaredInSameParallelContext)."""
    t = s.target
    sym = None if getattr(s, "frag_form", False) else ck.lookup(t.id)
    if (sym is not None and isinstance(s, ast.MmaFill) and s.assign_form
            and sym.kind == "fragment" and ck.outside_current_parallel(sym)):
        sym.info["hidden"] = True
        sym = None
    if sym is None:
        later = _acc_facts(ck).later.get(id(s)) if role == "acc" else None
        if later is not None and fty is not None:
            fty = later
        sym = ck.declare(t.id, "fragment", fty or Fragment(None, None, role), s, t.span,
                         mutable=True)
        s.declares = True
        if role == "acc":
            _acc_facts(ck).declared.append((sym, s))
        if fty is None:  # the operation itself is wrong (reported): keep uses quiet
            sym.info["bad"] = True
            return None
    elif sym.info.get("bad"):
        return None
    elif not (sym.kind == "fragment" and (sym.type.role == role or (
            role == "operand" and sym.info.get("loaded_acc")))):
        what = "an MMA accumulator" if role == "acc" else "an MMA operand fragment"
        ck.error(t.span, f"'{t.id}' of type \"{tname(sym.type)}\" is not {what}.")
        return None
    elif fty is not None and sym.type.dtype is not None and fty.dtype is not None and (
            fty.dtype is not sym.type.dtype
            or (fty.shape is not None and sym.type.shape is not None
                and fty.shape != sym.type.shape)):
        ck.error(s.span, f"'{t.id}' is declared as \"{_frag_str(sym.type)}\" but assigned "
                         f"\"{_frag_str(fty)}\".")
    elif fty is not None and sym.type.dtype is None:
        sym.type = fty
    s.sym = sym
    ck.bind_name(t, sym)
    return sym


def _frag_str(f: Fragment) -> str:
    shape = "" if f.shape is None else " " + shape_str(f.shape)
    return f"{f}{shape}"


def _array_extents(ck, s: ast.MmaFill) -> tuple | None:
    """The extents of ``frag mc[d0][d1] {v};`` (§11.7): positive integer constants."""
    dims = []
    for d in s.dims:
        ty = ck.expr(d)
        n = const_value(d)
        if is_unknown(ty):
            return None
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            ck.error(d.span, f"the extents of fragment array '{s.target.id}' must be positive "
                             f"integer constants.")
            return None
        dims.append(n)
    return tuple(dims)


def _element(ck, e: ast.Name, subs: list, what: str) -> bool:
    """``mc[i][j]``: one accumulator of an array of them (§11.7), with one integer
    subscript per extent, the same for the whole unit; a constant one in range. False
    when reported (the array is then left alone: no second error about its shape)."""
    ok = _subscripts(ck, e, subs, what)
    if not ok and getattr(e, "sym", None) is not None:
        e.sym.info["bad"] = True
    return ok


def _subscripts(ck, e: ast.Name, subs: list, what: str) -> bool:
    sym = getattr(e, "sym", None)
    if sym is None or sym.info.get("bad"):
        return True
    dims = sym.info.get("array")
    if not dims:
        if subs:
            ck.error(subs[0].span, f"'{e.id}' is not an array of accumulators.")
            return False
        return True
    if not subs:        # the reference's message (lib/earlysema.cpp)
        ck.error(e.span, f"Cannot use the whole fragment array in {what} operation.",
                 hint=f"name one of its accumulators, as in '{e.id}{'[0]' * len(dims)}'")
        return False
    if len(subs) != len(dims):
        ck.error(e.span, f"fragment array '{e.id}' needs {len(dims)} subscript"
                         f"{'s' if len(dims) > 1 else ''}, as in "
                         f"'{e.id}{'[0]' * len(dims)}'.")
        return False
    for sub, n in zip(subs, dims):
        ty = ck.expr(sub)
        if is_unknown(ty):
            return False
        if not is_integer(ty):
            ck.error(sub.span, f"an array subscript must be an integer but got "
                               f"'{tname(ty)}'.")
            return False
        i = const_value(sub)
        if isinstance(i, int) and not 0 <= i < n:
            ck.error(sub.span, f"index {i} is out of range for fragment array '{e.id}' "
                               f"[0, {n}).")
            return False
        kind = _unit_kind(ck)
        dep = thread_dependence(sub) if kind and ck.in_parallel else None
        if dep:
            ck.error(sub.span, f"a subscript of fragment array '{e.id}' is the same for the "
                               f"whole '{kind}' instance, but this one depends on thread "
                               f"index '{dep}'.")
            return False
    return True


def check_fill(ck, s: ast.MmaFill):
    """``mc = mma.fill[.T] v`` / ``mma.fill mc, v`` (§11.1) / ``frag[.T] mc[d]... {v}``
    (§11.7)."""
    inside = ck.in_parallel   # else the host lane is the unit (§11.2 (c))
    value_ty = ck.expr(s.value)
    dt = None
    if s.dtype is not None:
        dt = dtypes.lookup(s.dtype)
        if dt is None:
            ck.error(s.span, f"element type '{s.dtype}' is not supported by croqvm.")
    if not s.assign_form and ck.lookup(s.target.id) is None:
        ck.expr(s.target)  # reports the undeclared name
        return
    if not s.assign_form and _frag_buffer(ck.expr(s.target)):
        s.frag_fill = True          # every element of the lane's frag (§11.7)
        convert(ck, value_ty, s.target.ty.dtype, s.value)
        return
    dims = _array_extents(ck, s) if s.dims else ()
    sym = _target(ck, s, Fragment(dt, None, "acc"), "acc")
    if sym is None:
        return
    if s.declares and s.dims:
        if dims is None:
            sym.info["bad"] = True
            return
        sym.info["array"] = dims
    elif not _element(ck, s.target, s.elem, "mma fill"):
        return
    if sym.type.dtype is not None:
        convert(ck, value_ty, sym.type.dtype, s.value)
    elif not is_unknown(value_ty) and not is_number(value_ty):
        ck.error(s.value.span, f"mma.fill needs a number but got '{tname(value_ty)}'.")
    if inside:
        _use(ck, sym, s.span)


class Tile(NamedTuple):
    name: str
    dtype: DType
    shape: tuple


def _tile(ck, expr, what) -> Tile | None:
    """A 2-D operand of an MMA operation, or None."""
    ty = ck.expr(expr)
    if is_unknown(ty):
        return None
    if isinstance(ty, Fragment):
        if ty.dtype is None or ty.shape is None:
            return None
        return Tile(expr.id, ty.dtype, ty.shape)
    src = view_source(ck, ty, expr, what)
    if src is None:
        return None
    if len(src.shape) != 2:
        ck.error(expr.span, f"{what} needs a 2-dimensional tile but '{root_name(expr)}' has "
                            f"rank {len(src.shape)}.")
        return None
    return Tile(root_name(expr), src.dtype, tuple(src.shape))


def check_load(ck, s: ast.MmaLoad):
    inside = ck.in_parallel   # else the host lane is the unit (§11.2 (c))
    tile = _tile(ck, s.view, "mma.load")
    if isinstance(s.view.ty, Fragment):
        ck.error(s.view.span, "mma.load needs a buffer or a view.")
        return
    if inside:
        _uniform(ck, "mma.load", s.view)
    swizzle_of_load(ck, s)
    fty = Fragment(tile.dtype, tile.shape, "operand") if tile else None
    sym = _target(ck, s, fty, "operand")
    if sym is not None and inside:
        _use(ck, sym, s.span)


def _mismatch(ck, span, a: Tile, b: Tile):
    ck.error(span, f"MMA: matrix shapes do not match: `{a.name}'({shape_str(a.shape)}) v.s. "
                   f"`{b.name}'({shape_str(b.shape)}).")


def _differ(x, y) -> bool:
    return isinstance(x, int) and isinstance(y, int) and x != y


def _frag_buffer(ty) -> bool:
    """Whether ``ty`` is a 2-D frag (a local buffer, §11.7) an MMA may use in registers."""
    return isinstance(ty, Buffer) and ty.storage == "local" and not ty.array \
        and len(ty.shape) == 2


def _register_operands(ck, s, a, b) -> bool:
    """§11.7: frags as operands; wgmma (a 'group-4' unit) takes only A from registers, and
    only K-major (mma.row.*)."""
    if _unit_kind(ck) != "group-4":
        return True
    a_layout = s.layout.split(".")[0]
    if _frag_buffer(s.b.ty):
        ck.error(s.b.span, f"wgmma takes its B operand from shared memory, but "
                           f"'{root_name(s.b)}' is a frag.",
                 hint="copy B into shared memory and pass that buffer")
        return False
    if _frag_buffer(s.a.ty) and a_layout != "row":
        ck.error(s.a.span, f"wgmma takes A from registers K-major only, but "
                           f"'mma.{s.layout}' reads '{root_name(s.a)}' as [K, M].",
                 hint="store A as [M, K] and write 'mma.row.*'")
        return False
    return True


def _check_frag_acc(ck, s, cty, a, b):
    """``mma.<a>.<b> f, A, B`` with ``f`` a frag as the accumulator (§11.7)."""
    s.c_frag = True
    if a is None or b is None or not _register_operands(ck, s, a, b):
        return
    a_layout, b_layout = s.layout.split(".")
    m, ka = a.shape if a_layout == "row" else a.shape[::-1]
    n, kb = b.shape if b_layout == "row" else b.shape[::-1]
    shape = tuple(cty.shape)
    name = root_name(s.c)
    if _differ(shape[0], m) or _differ(shape[1], n):
        _mismatch(ck, s.span, Tile(name, cty.dtype, shape), a if _differ(shape[0], m) else b)
    elif _differ(ka, kb):
        _mismatch(ck, s.span, a, b)
    elif a.dtype is not b.dtype and not (a.dtype.is_int and b.dtype.is_int
                                         and a.dtype.bits == b.dtype.bits == 8):
        ck.error(s.span, f"MMA: operand types do not match: '{a.name}' is {a.dtype.name} but "
                         f"'{b.name}' is {b.dtype.name}.")
    elif cty.dtype.is_int != a.dtype.is_int or cty.dtype.name not in MMA_TYPES:
        ck.error(s.span, f"MMA: frag '{name}' of {cty.dtype.name} can not accumulate "
                         f"{a.dtype.name} products.")


def _loaded_accumulator(ck, s, e, ty):
    """§11.3.2: a fragment made by ``mma.load`` and not used as an operand becomes an
    accumulator holding the loaded tile where an ``mma`` or ``mma.store`` first uses it
    as one (tests/gpu/end2end/ampere_mma.co: ``mc = mma.load output.chunkat(...)``).
    Returns the type ``e`` has from here on; None when reported."""
    sym = getattr(e, "sym", None)
    if not (isinstance(ty, Fragment) and ty.role == "operand" and sym is not None
            and isinstance(sym.decl, ast.MmaLoad) and not sym.info.get("operand_use")
            and ty.dtype is not None and ty.shape is not None):
        return ty
    if isinstance(s, ast.MmaExec) and any(isinstance(x, ast.Name) and x.id == e.id
                                          for x in (s.a, s.b)):
        return ty
    if ty.dtype.name not in MMA_TYPES:
        ck.error(e.span, f"'{e.id}' holds {ty.dtype.name} elements, but an accumulator is "
                         f"f16, f32, f64 or s32.",
                 hint="load a tile of the accumulator's type, or start from 'mma.fill'")
        sym.info["bad"] = True
        return None
    sym.type = e.ty = Fragment(ty.dtype, ty.shape, "acc")
    sym.info["loaded_acc"] = True
    return sym.type


def check_exec(ck, s: ast.MmaExec):
    """``mma.<a>.<b> c, a, b`` (§11.3): C[M, N] += A * B over K."""
    inside = ck.in_parallel   # else the host lane is the unit (§11.2 (c))
    cty = _loaded_accumulator(ck, s, s.c, ck.expr(s.c))
    if cty is None or not _element(ck, s.c, s.c_elem, "mma exec"):
        return
    if s.future is not None:
        _bind_op_future(ck, s)
    a, b = _tile(ck, s.a, f"mma.{s.layout}"), _tile(ck, s.b, f"mma.{s.layout}")
    if s.sparse_meta is not None:
        a = _sparse_operand(ck, s, a)
    for x in (s.c, s.a, s.b):
        if isinstance(x, ast.Name) and x.sym is not None and x.sym.kind == "fragment":
            x.sym.info["executed"] = True
    if _frag_buffer(cty):
        if s.sparse_meta is not None or s.scale:
            ck.error(s.span, f"a frag accumulator takes plain MMAs only, not "
                             f"'mma.{s.layout}.{'scale' if s.scale else 'sp'}'.")
            return
        _check_frag_acc(ck, s, cty, a, b)
        return
    if inside:
        for x in (s.a, s.b):
            if not isinstance(x.ty, Fragment):
                _uniform(ck, f"mma.{s.layout}", x)
    if is_unknown(cty):
        return
    if not (isinstance(cty, Fragment) and cty.role == "acc"):
        ck.error(s.c.span, f"'{s.c.id}' of type \"{tname(cty)}\" is not an MMA accumulator.",
                 hint=ACC_HINT)
        return
    for x in (s.a, s.b):
        if isinstance(x.ty, Fragment) and x.ty.role != "operand":
            ck.error(x.span, f"'{root_name(x)}' is an accumulator, not an MMA operand.")
            return
        if isinstance(x, ast.Name) and isinstance(x.ty, Fragment):
            x.sym.info["operand_use"] = True
    sym = s.c.sym
    if inside:
        _use(ck, sym, s.span)
        for x in (s.a, s.b):
            if isinstance(x, ast.Name) and isinstance(x.ty, Fragment):
                _use(ck, x.sym, s.span)
    if a is None or b is None:
        return
    if not _register_operands(ck, s, a, b):
        sym.info["bad"] = True      # reported: no second error about its shape
        return
    a_layout, b_layout = s.layout.split(".")
    m, ka = a.shape if a_layout == "row" else a.shape[::-1]
    n, kb = b.shape if b_layout == "row" else b.shape[::-1]
    frag = sym.type
    if frag.shape is None:  # D11: the first exec gives the accumulator its shape
        sym.type = frag = Fragment(frag.dtype, (m, n), "acc")
    elif _differ(frag.shape[0], m) or _differ(frag.shape[1], n):
        other = a if _differ(frag.shape[0], m) else b
        _mismatch(ck, s.span, Tile(s.c.id, frag.dtype, frag.shape), other)
        return
    if _differ(ka, kb):
        _mismatch(ck, s.span, a, b)
        return
    if s.k_order is not None and s.sparse_meta is not None:
        ck.error(s.k_order_span or s.span, "Sparse MMA k_tiles schedules are not supported.")
    elif s.k_order is not None:
        _schedule(ck, s, a, b, ka)
    if a.dtype is not b.dtype and not (a.dtype.is_int and b.dtype.is_int
                                       and a.dtype.bits == b.dtype.bits == 8):
        ck.error(s.span, f"MMA: operand types do not match: '{a.name}' is {a.dtype.name} but "
                         f"'{b.name}' is {b.dtype.name}.")
        return
    acc = dtypes.MMA_ACCUMULATOR.get(a.dtype.name)
    if acc is None:
        ck.error(s.span, f"MMA: operand element type '{a.dtype.name}' is not supported.")
        return
    if frag.dtype is None:  # D11: the accumulator type follows the operands
        sym.type = Fragment(dtypes.lookup(acc), frag.shape, "acc")
    elif frag.dtype.is_int != a.dtype.is_int:
        kind = "an integer" if a.dtype.is_int else "a float"
        ck.error(s.span, f"MMA: accumulator '{s.c.id}' is {frag.dtype.name}, but {a.dtype.name} "
                         f"operands accumulate in {kind} type.")
        return
    s.c.ty = sym.type
    if s.scale:
        check_scale_operands(ck, f"mma.{s.layout}.scale", s.c, *s.scale)


def _sparse_operand(ck, s: ast.MmaExec, a: Tile | None) -> Tile | None:
    """§11.9: A [M, K/2] holds the two kept values of each group of four along K, and the
    metadata [M, K/8] of 8-bit integers their two 2-bit positions per group, a group in
    each half byte (runtime/choreo.h, Sparse2to4HostPolicyWGMMA::encode). The tile the
    rest of the checks see is the dense A [M, K]."""
    what = f"mma.{s.layout}.sp"
    meta = _tile(ck, s.sparse_meta, what)
    if ck.in_parallel and not isinstance(s.sparse_meta.ty, Fragment):
        _uniform(ck, what, s.sparse_meta)
    if isinstance(s.sparse_meta, ast.Name) and isinstance(s.sparse_meta.ty, Fragment) \
            and ck.in_parallel:
        _use(ck, s.sparse_meta.sym, s.span)
    if s.layout.startswith("col"):
        ck.error(s.span, f"'{what}' needs A stored [M, K/2] along K, as 'mma.row.*.sp'.",
                 hint="store the packed A row-major and write 'mma.row.row.sp' or "
                      "'mma.row.col.sp'")
        return None
    if a is None or meta is None:
        return None
    if meta.dtype.name not in ("u8", "s8"):
        ck.error(s.sparse_meta.span, f"the metadata of '{what}' is 8-bit integers, but "
                                     f"'{meta.name}' is {meta.dtype.name}.")
        return None
    m, half = a.shape
    if isinstance(half, int) and half % 4:
        ck.error(s.a.span, f"the packed A of '{what}' holds two values per group of four "
                           f"along K, in groups of 8 bytes of metadata: its {half} columns "
                           f"are not a multiple of 4.")
        return None
    want = (m, half // 4 if isinstance(half, int) else None)
    if any(_differ(x, y) for x, y in zip(meta.shape, want)):
        ck.error(s.sparse_meta.span, f"the metadata of '{what}' for the packed A "
                                     f"'{a.name}' {shape_str(a.shape)} is [{m}, "
                                     f"{want[1]}], but '{meta.name}' is "
                                     f"{shape_str(meta.shape)}.")
        return None
    return Tile(a.name, a.dtype, (m, 2 * half if isinstance(half, int) else half))


SCALED_TYPES = ("f16", "f32")       # runtime/choreo_cute.h scale_accumulator: AccT


def check_scale_operands(ck, what: str, c: ast.Name, rows: ast.Expr, factor: ast.Expr):
    """§11.8: an f16 or f32 accumulator [M, N], f32 row scales of M elements ([M, 1],
    [1, M] or [M], as runtime/choreo_cute.h reads them) and one factor, uniform in the
    unit."""
    rty, fty = ck.expr(rows), ck.expr(factor)
    if ck.in_parallel:
        _uniform(ck, what, rows)
        _uniform(ck, what, factor)
    convert(ck, fty, dtypes.F32, factor)
    src = None if isinstance(rty, Fragment) else view_source(ck, rty, rows, what)
    if isinstance(rty, Fragment):
        ck.error(rows.span, f"the row scales of '{what}' are a buffer or a view, but "
                            f"'{root_name(rows)}' is a fragment.")
    elif src is not None and src.dtype is not dtypes.F32:
        ck.error(rows.span, f"the row scales of '{what}' are f32, but '{root_name(rows)}' "
                            f"is {src.dtype.name}.")
        src = None
    cty = c.ty
    if not isinstance(cty, Fragment) or cty.dtype is None:
        return
    if cty.dtype.name not in SCALED_TYPES:
        ck.error(c.span, f"'{what}' scales an f16 or f32 accumulator, but '{c.id}' is "
                         f"{cty.dtype.name}.")
        return
    if src is None or cty.shape is None:
        return
    m = cty.shape[0]
    shape = tuple(src.shape)
    if not any(all(not _differ(x, y) for x, y in zip(shape, want)) and len(shape) == len(want)
               for want in ((m, 1), (1, m), (m,))):
        ck.error(rows.span, f"the row scales of '{what}' are one per row of '{c.id}' "
                            f"{shape_str(cty.shape)}: a [{m}, 1], [1, {m}] or [{m}] tile, but "
                            f"'{root_name(rows)}' is {shape_str(shape)}.")


def check_scale(ck, s: ast.MmaScale):
    """``mma.scale mc, rows, factor`` (§11.8); which MMAs it scales is settled by
    ``finish`` once the whole function is known."""
    cty = ck.expr(s.frag)
    if is_unknown(cty):
        return
    if not (isinstance(cty, Fragment) and cty.role == "acc"):
        ck.error(s.frag.span, f"'{s.frag.id}' of type \"{tname(cty)}\" is not an MMA "
                              f"accumulator.", hint=ACC_HINT)
        return
    if ck.in_parallel:
        _use(ck, s.frag.sym, s.span)
    check_scale_operands(ck, "mma.scale", s.frag, s.rows, s.factor)


def _scaled_partials(ck, stmts: list) -> None:
    """Each ``mma.scale mc`` of a block scales the plain MMAs on ``mc`` written before it
    in that block, at any depth (lib/Target/GPU/cute_codegen.cpp,
    AnalyzeExplicitScaleAccumScope): they accumulate into ``mc``'s partial sum."""
    for i, s in enumerate(stmts):
        sym = getattr(s.frag, "sym", None) if isinstance(s, ast.MmaScale) else None
        if sym is None or sym.kind != "fragment":
            continue
        execs = [x for before in stmts[:i] for x in _stmts_under(before)
                 if isinstance(x, ast.MmaExec) and not x.scale
                 and getattr(x.c, "sym", None) is sym]
        if not execs:
            ck.error(s.span, f"mma.scale requires a preceding plain MMA on '{s.frag.id}' in "
                             f"the same scope.",
                     hint="write the MMAs it scales before it, in the same block")
        for x in execs:
            x.into_partial = True


def _stmts_under(s):
    yield s
    for c in child_stmts(s):
        yield from _stmts_under(c)


def _bind_op_future(ck, s: ast.MmaExec):
    """``f = mma.<a>.<b>.async c, a, b`` (§11.5): ``f`` names the completion of MMAs on
    ``c``, and only on ``c``: every assignment to one future names the same accumulator."""
    t = s.future
    sym = ck.lookup(t.id)
    if sym is None:
        sym = ck.declare(t.id, "future", OpFuture(s.c.id), s, t.span, mutable=True)
        s.declares = True
    elif sym.info.get("bad"):
        pass
    elif not isinstance(sym.type, OpFuture):
        ck.error(t.span, f"'{t.id}' of type \"{tname(sym.type)}\" can not be re-assigned as "
                         f"\"mma future\".")
        return
    elif ck.check_modifiable(sym, t.span) and sym.type.acc != s.c.id:
        ck.error(s.span, f"'{t.id}' is the future of asynchronous MMAs on '{sym.type.acc}', "
                         f"not on '{s.c.id}'.",
                 hint="use one operation future per accumulator")
    s.sym = sym
    ck.bind_name(t, sym)
    future_facts(ck).async_at.setdefault(sym, s.span)


def k_tile(dtype: DType) -> int:
    """The K extent of one auto-split MMA tile: 32 bytes of each operand row, as the
    hardware atoms take it (16 for 16-bit types, 8 for tf32, 32 for 8-bit types;
    lib/Target/GPU/wgmma_pattern.cpp)."""
    return max(1, 256 // dtype.bits)


def _schedule(ck, s: ast.MmaExec, a: Tile, b: Tile, k) -> None:
    """``[[schedule(k_tiles(...))]]`` (§11.6): a permutation of the K tiles of the MMA.
    Fragment operands are one tile; shared views are split into K tiles of ``k_tile``."""
    span = s.k_order_span or s.span
    if not isinstance(k, int):
        ck.error(span, "MMA k_tiles schedule needs a K extent known at compile time.")
        return
    direct = not (isinstance(s.a.ty, Fragment) or isinstance(s.b.ty, Fragment))
    tk = k_tile(a.dtype)
    tiles = k // tk if direct and k % tk == 0 else 1
    order = s.k_order
    if len(order) != tiles:
        ck.error(span, f"MMA k_tiles schedule must contain exactly one entry for each "
                       f"auto-split K tile (expected {tiles}, got {len(order)}).",
                 hint=f"K = {k} is split into tiles of {tk}" if tiles > 1 else
                 "an MMA with an operand fragment is one K tile")
    elif sorted(order) != list(range(tiles)):
        ck.error(span, f"MMA k_tiles schedule must be a permutation of [0, {tiles}).")
    else:
        s.k_tile = k // tiles


def check_store(ck, s: ast.MmaStore):
    """``mma.store[.transp] mc, V`` (§11.3.4)."""
    inside = ck.in_parallel   # else the host lane is the unit (§11.2 (c))
    fty = _loaded_accumulator(ck, s, s.frag, ck.expr(s.frag))
    if fty is None or not _element(ck, s.frag, s.elem, "mma store"):
        return
    tile = _tile(ck, s.view, "mma.store")
    if inside:
        _uniform(ck, "mma.store", s.view)
    for g in s.guards:
        gty = ck.expr(g)
        if not is_unknown(gty) and not is_integer(gty):
            ck.error(g.span, f"mma.store.mask needs an integer count but got "
                             f"'{tname(gty)}'.")
        elif inside:
            _uniform(ck, "mma.store.mask", g)
    note_param_write(ck, s.view)
    if is_unknown(fty):
        return
    if not (isinstance(fty, Fragment) and fty.role == "acc"):
        ck.error(s.frag.span, f"'{s.frag.id}' of type \"{tname(fty)}\" is not an MMA "
                              f"accumulator.", hint=ACC_HINT)
        return
    sym = s.frag.sym
    if inside:
        _use(ck, sym, s.span)
    if tile is None:
        return
    want = tile.shape[::-1] if s.transp else tile.shape
    if fty.shape is not None:
        if any(_differ(x, y) for x, y in zip(fty.shape, want)):
            _mismatch(ck, s.span, Tile(s.frag.id, fty.dtype, fty.shape), tile)
        return
    sym.type = Fragment(fty.dtype or tile.dtype, tuple(want), "acc")
    s.frag.ty = sym.type


def finish(ck):
    """D11: every accumulator needs a shape. An undeclared name (a macro not defined, say)
    already explains a shape that could not be inferred: no second error then. §11.8:
    the MMAs each ``mma.scale`` scales.
    A fragment hidden by one of its name in a nested parallel-by, and used by no MMA, is
    an error: the reference compiler takes a fragment's MMA kind from the MMA that uses
    it and rejects the operations of one that no MMA uses
    (lib/Target/GPU/cute_codegen.cpp, Visit(AST::MMA): FragHasMMAType; its
    tests/gpu/codegen/cute/mma_error.co)."""
    if ck.fn is not None:
        for s in _stmts_under(ck.fn.body):
            if isinstance(s, ast.Block):
                _scaled_partials(ck, s.stmts)
                continue
            for c in child_stmts(s):     # a body of one statement is a block of its own
                if not isinstance(c, ast.Block):
                    _scaled_partials(ck, [c])
    if ck.unknown_names:
        return
    for sym in ck.symbols:
        if sym.kind != "fragment" or sym.info.get("bad"):
            continue
        if sym.info.get("hidden") and not sym.info.get("executed"):
            ck.error(sym.decl.span, f"the MMA operations of fragment '{sym.name}' can not be "
                                    f"executed: no MMA ('mma.<a>.<b>') uses it.",
                     hint=f"'{sym.name} = mma.fill' inside a nested parallel-by declares a "
                          f"new accumulator, which hides this one there")
        elif sym.type.role == "acc" and sym.type.shape is None:
            ck.error(sym.decl.span, f"can not infer the shape of accumulator '{sym.name}'.")


RULES = {
    ast.MmaFill: check_fill,
    ast.MmaLoad: check_load,
    ast.MmaExec: check_exec,
    ast.MmaStore: check_store,
    ast.MmaCommit: lambda ck, s: None,   # does nothing (D10)
    ast.MmaScale: check_scale,
}
