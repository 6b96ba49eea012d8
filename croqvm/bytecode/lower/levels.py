"""The lane layout of a kernel's parallel nests (LANGUAGE.md §6.2-§6.3, D16).

A kernel's ``block`` level is the grid; every other level is a range of lanes of one
block. A level of kind k with sub-index bounds B has ``prod(B) * unit(k)`` lanes (unit:
group-4 128, group 32, thread 1, §6.3.4). Inside its enclosing instance a lane's local
index is ``lt = tid % parent_unit`` (``tid`` itself directly under the block), its
instance is ``lt / unit`` split row-major into sub-indices (§6.2.4), and lanes with
``lt >= lanes`` are idle for the nest (D16). ``block_size`` is the largest nest.

Bounds are compile-time constants where possible. A bound computable on the host (from
parameters, symbolic dimensions, host scalars) is evaluated there when the kernel is
launched and passed as an argument register. The block size is then computed on the host
too: the kernel's ``block_size`` is 0 and ``Launch.block`` names the host register holding
the largest nest's lane count, which the engine checks against §6.3.6 at launch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from croqvm.core import dtypes, numerics
from croqvm.core.limits import LEVEL_LANES, MAX_BLOCK_SIZE, MAX_INT, TOO_MANY_THREADS
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang.check.walk import child_stmts, nested_parallels
from croqvm.lang import types as T

from .output import emit_check
from .exprs import scalar_value
from .state import Lowerer
from .values import Val
from .views import Reg, int_operands, o_div, o_mul, o_op, reg_of

@dataclass(eq=False)
class LevelInfo:
    """One ``PLevel`` of a kernel: ``bounds`` are ints or ``Reg``s of kernel argument
    registers (``host`` holds the same bounds as host operands)."""
    plevel: ast.PLevel
    kind: str
    bounds: list
    parent: int | None            # lanes per instance of the enclosing level; None: the block
    host: list = field(default_factory=list)
    writes: bool = False          # its body writes shared/global data outside nested regions

    @property
    def unit(self) -> int:
        return LEVEL_LANES.get(self.kind, 0)

    @property
    def static_lanes(self) -> int | None:
        if any(isinstance(x, Reg) for x in self.bounds):
            return None
        return prod(self.bounds) * self.unit


# --------------------------------------------------------------------------- statement walks

def regions(s):
    """The ``parallel`` statements nested in ``s`` (not inside another one): ``s`` itself
    when it is one."""
    return iter([s]) if isinstance(s, ast.Parallel) else nested_parallels(s)


def has_regions(s) -> bool:
    return next(regions(s), None) is not None


def _writes(s) -> bool:
    """§7.2.3: an element write to shared/global, a DMA or an mma.store outside regions."""
    if isinstance(s, (ast.Dma, ast.MmaStore)):
        return True
    if isinstance(s, ast.Assign) and isinstance(s.target, ast.ElemAccess):
        base = s.target.base
        ty = base.base.ty if isinstance(base, ast.DataOf) else base.ty
        return getattr(ty, "storage", None) in ("shared", "global")
    if isinstance(s, ast.Parallel):
        return False
    return any(_writes(c) for c in child_stmts(s))


# --------------------------------------------------------------------------- planning

def plan(lw: Lowerer, st) -> None:
    """Fill ``st.levels``, ``st.nests`` and the block size (``st.block_size``, or 0 and the
    host register ``st.block_reg``); runs while ``lw`` emits host code, so that runtime
    bounds are computed on the host before the launch."""
    par = st.par
    start = 0          # the grid levels: a cluster (§6.3.7), then the block level
    while par.kinds and start < len(par.kinds) and par.kinds[start] in ("cluster", "block"):
        st.levels[id(par.levels[start])] = LevelInfo(par.levels[start], par.kinds[start],
                                                     [], None)
        start += 1
    _plan(lw, st, par, start, None)
    top = [i for i in st.levels.values()
           if i.kind not in ("cluster", "block") and i.parent is None]
    st.nests = len(top)
    sizes = [i.static_lanes for i in top if i.static_lanes is not None]
    if max(sizes, default=1) > MAX_BLOCK_SIZE:
        lw.error(par.span, TOO_MANY_THREADS,
                 f"this kernel needs {max(sizes)} threads per block")
    if len(sizes) == len(top):
        st.block_size = max(sizes, default=1)
        return
    st.block_size = 0
    lanes = None
    for info in top:
        n = _lanes_on_host(lw, info)
        lanes = n if lanes is None else o_op(lw, "MAX", lanes, n)
    st.block_reg = reg_of(lw, lanes)


def _plan(lw: Lowerer, st, par: ast.Parallel, start: int, parent: int | None):
    info = None
    for lv, kind in list(zip(par.levels, par.kinds))[start:]:
        info = LevelInfo(lv, kind, [], parent)
        _bounds(lw, st, info)
        lanes = info.static_lanes
        if parent is not None and (lanes is None or lanes > parent):
            lw.unsupported(lv, f"a '{kind}' level inside an instance of {parent} lanes that "
                           f"does not have exactly {parent // info.unit} instances")
        st.levels[id(lv)] = info
        parent = info.unit
    innermost = info or st.levels.get(id(par.levels[0]))
    if innermost is not None:
        innermost.writes = _writes(par.body)
    for sub in regions(par.body):
        _plan(lw, st, sub, 0, parent)


def _bounds(lw: Lowerer, st, info: LevelInfo) -> None:
    names = info.plevel.names
    for e in info.plevel.bounds:
        c = const_value(e)
        if isinstance(c, int) and not isinstance(c, bool):
            c = numerics.value_of(c, dtypes.S32)     # as int_operands would hold it
            info.bounds.append(c)
            info.host.append(c)
        elif isinstance(e.ty, T.Mdspan) and all(isinstance(x, int) for x in e.ty.shape):
            info.bounds.extend(e.ty.shape)
            info.host.extend(e.ty.shape)
        elif _on_host(e):
            for x in bound_operands(lw, e, names[len(info.bounds)] if
                                    len(info.bounds) < len(names) else ""):
                k = len(info.bounds)
                name = names[k] if k < len(names) else ""
                info.host.append(x)
                info.bounds.append(x if not isinstance(x, Reg) else
                                   Reg(_pass_bound(lw, st, x.r, name)))
        else:
            lw.error(e.span, "croqvm needs the bounds of block-internal parallel levels when "
                     f"the kernel starts; '{lw.snippet(e.span)}' is computed inside it.",
                     "compute the bound before the parallel-by, or use a macro")


def _on_host(e) -> bool:
    """Does ``e`` use only host-level names (parameters, dimensions, host scalars)?"""
    if isinstance(e, ast.Name):
        return e.sym is not None and e.sym.parallel is None
    kids = [v for v in ast.field_values(e) if isinstance(v, ast.Expr)]
    kids += [x for v in ast.field_values(e) if isinstance(v, list) for x in v
             if isinstance(x, ast.Expr)]
    return all(_on_host(k) for k in kids)


def bound_operands(lw: Lowerer, e: ast.Expr, name: str) -> list:
    """The operands of parallel bound ``e`` (an ituple or mdspan gives several) as 'int's.
    A value of a wider type (s64, u32, u64) is checked to be from 1 to MAX_INT first, where
    the conversion to 'int' would wrap it: 2^32 + 1 blocks must not run as 1."""
    ty = e.ty
    if not (isinstance(ty, T.Scalar) and ty.dtype.is_int
            and numerics.int_range(ty.dtype)[1] > MAX_INT):
        return int_operands(lw, [e])
    b = lw.b
    wide = scalar_value(lw, e).reg
    what = f" of '{name}'" if name else ""
    ok = b.op("GE", dtypes.BOOL, wide, b.load_const(ty.dtype, 1))
    emit_check(b, ok, f"the parallel bound{what} is ", wide, ": it should be greater than 0.")
    ok = b.op("LE", dtypes.BOOL, wide, b.load_const(ty.dtype, MAX_INT))
    emit_check(b, ok, f"the parallel bound{what} is ", wide, f": it does not fit in an 'int' "
                                                           f"(at most {MAX_INT}).")
    return [Reg(b.convert(wide, dtypes.S32))]


def check_positive(lw: Lowerer, host_reg: int, name: str) -> None:
    """A parallel bound known only at run time is checked on the host (§6.2.2)."""
    b = lw.b
    if host_reg in b.known:
        return
    ok = b.op("GE", dtypes.BOOL, host_reg, lw.int_reg(1))
    what = f" of '{name}'" if name else ""
    emit_check(b, ok, f"the parallel bound{what} is ", host_reg,
               ": it should be greater than 0.")


def _pass_bound(lw: Lowerer, st, host_reg: int, name: str) -> int:
    """A bound computed on the host, passed to the kernel as an argument register."""
    check_positive(lw, host_reg, name)
    kreg = st.b.reg(dtypes.S32, f"#{name}" if name else "")
    st.scalars.append((kreg, host_reg))
    return kreg


def _lanes_on_host(lw: Lowerer, info: LevelInfo):
    """The nest's lane count (§6.3.4) as a host operand, capped at MAX_BLOCK_SIZE + 1 after
    every product so that no intermediate overflows: a count over the limit stays over it,
    and one within it is exact."""
    over = MAX_BLOCK_SIZE + 1
    total = 1
    for x in info.host + [info.unit]:
        if x == 1:
            continue
        x = o_op(lw, "MIN", x, over)
        total = x if total == 1 else o_op(lw, "MIN", o_mul(lw, total, x), over)
    return total


def _product(lw: Lowerer, xs: list):
    total = 1
    for x in xs:
        total = o_mul(lw, total, x)
    return total


# --------------------------------------------------------------------------- indices

def trivial(st, info: LevelInfo) -> bool:
    """No lane is idle for this level: its lanes fill the enclosing instance, or the block,
    which is as large as the largest nest (the only one, when there is one)."""
    if info.parent is not None:
        return info.static_lanes == info.parent
    return st.nests == 1 or info.static_lanes == st.block_size


def emit_level(lw: Lowerer, st, info: LevelInfo, tid: int) -> int | None:
    """Bind the level's sub-indices from ``tid``; return the non-idle condition register."""
    b = lw.b
    lt = tid if info.parent is None else b.op("MOD", dtypes.S32, tid, lw.int_reg(info.parent))
    lin = o_div(lw, Reg(lt), info.unit)
    names = info.plevel.names
    vals = []
    for k, bound in enumerate(info.bounds):
        x = o_div(lw, lin, _product(lw, info.bounds[k + 1:]))
        if k > 0:
            x = Reg(b.op("MOD", dtypes.S32, reg_of(lw, x), reg_of(lw, bound)))
        name = names[k] if k < len(names) else ""
        if isinstance(x, Reg):
            r = b.variable(x.r, name, mutable=False)        # §6.2: parallel variables
        else:
            r = b.load_const(dtypes.S32, x, name)
        vals.append(Val(dtypes.S32, r, reg_of(lw, bound)))
    bind_level(lw, info.plevel, vals)
    if trivial(st, info):
        return None
    lanes = o_mul(lw, _product(lw, info.bounds), info.unit)
    return b.op("LT", dtypes.BOOL, lt, reg_of(lw, lanes))


def bind_level(lw: Lowerer, lv: ast.PLevel, vals: list) -> None:
    """Sub-index symbols, then the tuple name (``t = {x, y} by ...``) if any."""
    syms = list(lv.syms or [])
    for sym, v in zip(syms[:len(lv.names)], vals):
        lw.bind(sym, v)
    if len(syms) > len(lv.names):
        lw.bind(syms[-1], Val(None, elems=vals))
