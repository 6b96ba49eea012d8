"""MMA fragments and operations (LANGUAGE.md §11.1-§11.3, D9-D11).

A fragment symbol's type is refined as facts arrive in source order: the accumulator type
(D11) and shape come from the first ``mma.row.*`` using it, else its first ``mma.store``.
"""
from __future__ import annotations

from typing import NamedTuple

from croqvm import dtypes
from croqvm.dtypes import DType
from croqvm.lang import ast
from croqvm.lang.types import Buffer, Fragment, OpFuture, shape_str
from croqvm.limits import UNIT_OF_LEVEL

from .decls import note_param_write
from .dma import facts as future_facts
from .dma import swizzle_of_load
from .typerules import convert, is_integer, is_number, is_unknown, tname
from .views import root_name, view_source
from .walk import thread_dependence

MMA_TYPES = {"f16", "f32", "f64", "s32"}       # the accumulator types (§11.3.3)
ACC_HINT = "an accumulator is created by 'mc = mma.fill v' (mma.load makes operand tiles)"


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
    sym = ck.lookup(t.id)
    if (sym is not None and isinstance(s, ast.MmaFill) and s.assign_form
            and sym.kind == "fragment" and ck.outside_current_parallel(sym)):
        sym.info["hidden"] = True
        sym = None
    if sym is None:
        sym = ck.declare(t.id, "fragment", fty or Fragment(None, None, role), s, t.span,
                         mutable=True)
        s.declares = True
        if fty is None:  # the operation itself is wrong (reported): keep uses quiet
            sym.info["bad"] = True
            return None
    elif sym.info.get("bad"):
        return None
    elif not (sym.kind == "fragment" and sym.type.role == role):
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


def check_fill(ck, s: ast.MmaFill):
    """``mc = mma.fill[.T] v`` / ``mma.fill mc, v`` (§11.1)."""
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
    sym = _target(ck, s, Fragment(dt, None, "acc"), "acc")
    if sym is None:
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


def check_exec(ck, s: ast.MmaExec):
    """``mma.<a>.<b> c, a, b`` (§11.3): C[M, N] += A * B over K."""
    inside = ck.in_parallel   # else the host lane is the unit (§11.2 (c))
    cty = ck.expr(s.c)
    if s.future is not None:
        _bind_op_future(ck, s)
    a, b = _tile(ck, s.a, f"mma.{s.layout}"), _tile(ck, s.b, f"mma.{s.layout}")
    for x in (s.c, s.a, s.b):
        if isinstance(x, ast.Name) and x.sym is not None and x.sym.kind == "fragment":
            x.sym.info["executed"] = True
    if _frag_buffer(cty):
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
    if s.k_order is not None:
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
    fty = ck.expr(s.frag)
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
    already explains a shape that could not be inferred: no second error then.
    A fragment hidden by one of its name in a nested parallel-by, and used by no MMA, is
    an error: the reference compiler takes a fragment's MMA kind from the MMA that uses
    it and rejects the operations of one that no MMA uses
    (lib/Target/GPU/cute_codegen.cpp, Visit(AST::MMA): FragHasMMAType; its
    tests/gpu/codegen/cute/mma_error.co)."""
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
}
