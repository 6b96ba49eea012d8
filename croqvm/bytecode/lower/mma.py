"""MMA fragments and operations (LANGUAGE.md §11; docs/EXECUTION.md §12).

Every fragment gets a ``FragDecl`` whose unit follows §11.2 (D9): the innermost enclosing
``group-4`` (128 lanes) or ``group`` (32) level; else the kind the fragment is used under
elsewhere in the kernel; else the innermost level (a lane at ``thread`` level, the block
at ``block`` level). Each operation is a collective of that unit. At host level the host
lane is the unit (§11.2 (c)): a fragment of the host program, operations without a site
that run like any host statement. A view operand of ``mma.row.col`` etc. is first loaded
into a hidden fragment.

A fragment's declaration states its role (§11.3: accumulator, A or B operand), element
type and tile shape as the checker fixed them. An operand fragment used both as A and
as B in the kernel is two fragments, each ``mma.load`` filling both: hardware holds the
two operand positions in different layouts.
"""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.bytecode.module import DYNAMIC, Access, FragDecl, FragRole
from croqvm.lang import ast
from croqvm.lang import types as T
from croqvm.lang.check.consteval import const_value
from croqvm.lang.check.walk import child_stmts
from croqvm.core.limits import UNIT_OF_LANES, UNIT_OF_LEVEL

from .dma import buffer_swizzle, set_swizzle, swizzled_view
from .exprs import lower_as
from .output import emit_check
from .state import Lowerer
from .owned import Owned
from .values import FragRef
from .views import k_view, reg_of, resolve_base, view_of

LAYOUTS = {"row.row": 0, "row.col": 1, "col.row": 2, "col.col": 3}
HOST_UNIT = 1         # a fragment of the host program: the host lane's own (§11.2 (c))
_OPERANDS = {ast.MmaFill: ("target",), ast.MmaLoad: ("target",), ast.MmaExec: ("c", "a", "b"),
             ast.MmaStore: ("frag",), ast.MmaScale: ("frag",)}


def _units(lw: Lowerer) -> dict:
    """Fragment symbol -> unit, computed once per kernel from every use (§11.2)."""
    st = lw.kernel
    if "frag_units" not in st.cache:
        uses: dict = {}
        _scan(st.par, None, None, uses)
        st.cache["frag_units"] = {sym: _unit_of(kinds) for sym, kinds in uses.items()}
    return st.cache["frag_units"]


def _roles(lw: Lowerer, sym) -> list:
    """The roles of fragment ``sym`` in the kernel (or host program): ACC, or the operand
    positions its MMA_EXECs use it in (A when none does)."""
    if sym.type.role == "acc":
        return [FragRole.ACC]
    st, root = (lw.kernel, lw.kernel.par) if lw.kernel is not None else (lw.fn, lw.fn.body)
    if "frag_roles" not in st.cache:
        st.cache["frag_roles"] = roles = {}
        _scan_roles(root, roles)
    return sorted(st.cache["frag_roles"].get(sym, {FragRole.A}))


def _scan_roles(s, roles: dict) -> None:
    if isinstance(s, ast.MmaExec):
        for e, role in ((s.a, FragRole.A), (s.b, FragRole.B)):
            sym = getattr(e, "sym", None)
            if isinstance(e, ast.Name) and sym is not None and sym.kind == "fragment":
                roles.setdefault(sym, set()).add(role)
    for c in child_stmts(s):
        _scan_roles(c, roles)


def _scan(s, group_kind, inner_kind, uses) -> None:
    if isinstance(s, ast.Parallel):
        for kind in s.kinds or []:
            inner_kind = kind
            if kind in UNIT_OF_LEVEL:
                group_kind = kind
    for attr in _OPERANDS.get(type(s), ()):
        e = getattr(s, attr)
        sym = getattr(s, "sym", None) if attr == "target" and getattr(s, "declares", False) \
            else getattr(e, "sym", None)
        if sym is not None and sym.kind == "fragment":
            uses.setdefault(sym, []).append(group_kind or inner_kind)
    for c in child_stmts(s):
        _scan(c, group_kind, inner_kind, uses)


def _unit_of(kinds: list) -> int:
    for u in UNIT_OF_LEVEL.values():        # outer first
        if u.level in kinds:
            return u.lanes
    return 1 if kinds and kinds[0] == "thread" else 0


def _extents(shape) -> tuple[int, int]:
    """A tile's (rows, cols) for a FragDecl: static extents, else DYNAMIC."""
    if shape is None:
        return DYNAMIC, DYNAMIC
    rows, cols = (d if isinstance(d, int) else DYNAMIC for d in shape)
    return rows, cols


def frag_ref(lw: Lowerer, sym, node, dtype=None) -> FragRef:
    ref = lw.env.get(sym)
    if isinstance(ref, FragRef):
        return ref
    if ref is not None:
        lw.unsupported(node, f"'{sym.name}' as an mma fragment here")
    ref = _declare(lw, sym, node, dtype, sym.name)
    lw.bind(sym, ref)
    return ref


def _declare(lw: Lowerer, sym, node, dtype, name: str) -> FragRef:
    """The FragDecls of fragment ``sym`` (one per role), named ``name``."""
    ty = sym.type
    dtype = (ty.dtype if isinstance(ty, T.Fragment) else None) or dtype or dtypes.F32
    if lw.kernel is None:
        unit = HOST_UNIT
    else:
        unit = _units(lw).get(sym, lw.ctx.mma_unit if lw.ctx.mma_unit is not None else 0)
    rows, cols = _extents(ty.shape if isinstance(ty, T.Fragment) else None)
    span = lw.spans.intern(node.span)
    return FragRef({role: lw.b.add("frags", FragDecl(name, role, dtype.code, rows, cols,
                                                     unit, span))
                    for role in _roles(lw, sym)}, dtype, unit)


def _elements(lw: Lowerer, sym, node, dtype, dims: tuple) -> tuple:
    """One accumulator per element of the array ``sym`` (§11.7), in row-major order."""
    refs = lw.env.get(sym)
    if refs is None:
        names = [""]
        for n in dims:
            names = [f"{x}[{i}]" for x in names for i in range(n)]
        refs = tuple(_declare(lw, sym, node, dtype, sym.name + x) for x in names)
        lw.bind(sym, refs)
    return refs


def each_accumulator(lw: Lowerer, name: ast.Name, subs: list, emit, dtype=None) -> None:
    """``emit(ref)`` for the accumulator ``name`` is, or for the element ``subs`` selects
    of an array of them (§11.7): a constant subscript names its element; subscripts known
    at run time are checked against the extents, and each element is compared with them
    in turn (the unit's lanes agree on them, so all take one branch)."""
    sym = name.sym
    dims = sym.info.get("array")
    if not dims:
        emit(frag_ref(lw, sym, name, dtype))
        return
    refs = _elements(lw, sym, name, dtype, dims)
    known = [const_value(x) for x in subs]
    if all(isinstance(i, int) for i in known):
        flat = 0
        for i, n in zip(known, dims):
            flat = flat * n + i
        emit(refs[flat])
        return
    b, flat = lw.b, lw.int_reg(0)
    for x, n in zip(subs, dims):
        i = lower_as(lw, x, dtypes.S32)
        ok = b.op("AND", dtypes.BOOL, b.op("GE", dtypes.BOOL, i, lw.int_reg(0)),
                  b.op("LT", dtypes.BOOL, i, lw.int_reg(n)))
        emit_check(b, ok, "index ", i, f" is out of range for fragment array "
                                       f"'{sym.name}' [0, {n}).")
        flat = b.op("ADD", dtypes.S32, b.op("MUL", dtypes.S32, flat, lw.int_reg(n)), i)
    for k, ref in enumerate(refs):
        pc = b.open_if(b.op("EQ", dtypes.BOOL, flat, lw.int_reg(k)))
        emit(ref)
        b.close_if(pc)


def _target(lw: Lowerer, s, dtype=None) -> FragRef:
    sym = s.sym if getattr(s, "declares", False) and s.sym is not None else s.target.sym
    return frag_ref(lw, sym, s.target, dtype)


def lower_fill(lw: Lowerer, s: ast.MmaFill) -> None:
    if getattr(s, "frag_fill", False):        # the lane's own frag (§11.7)
        base = resolve_base(lw, s.target)
        lw.b.emit("FILL", base.slot, lower_as(lw, s.value, base.dtype), -1)
        return
    dtype = dtypes.lookup(s.dtype) if s.dtype else None

    def fill(f: FragRef) -> None:
        v = lower_as(lw, s.value, f.dtype)
        lw.b.emit("MMA_FILL", f.acc, v, lw.coll_site("mma.fill", f.unit))
    sym = s.sym if getattr(s, "declares", False) and s.sym is not None else s.target.sym
    if sym.info.get("array") and s.declares:      # ``frag mc[2][3] {v};``: every element
        for f in _elements(lw, sym, s.target, dtype, sym.info["array"]):
            fill(f)
    else:
        each_accumulator(lw, s.target, s.elem, fill, dtype)


def lower_load(lw: Lowerer, s: ast.MmaLoad) -> None:
    view, base, _ = swizzled_view(lw, s.view, s.swizzle)
    f = _target(lw, s, base.dtype)
    for index in f.indices.values():
        lw.b.emit("MMA_LOAD", index, view, lw.coll_site("mma.load", f.unit))


def lower_exec(lw: Lowerer, s: ast.MmaExec) -> None:
    """One MMA_EXEC, or one per K tile in the order of a ``[[schedule(k_tiles(...))]]``
    (§11.6): each accumulates its tile's k ascending, so the whole is the MMA with its k
    visited tile by tile in the schedule's order. ``.async`` adds MMA_ASYNC (§11.5). A
    frag accumulator is gathered and written back (§11.7)."""
    text = f"mma.{s.layout}"
    if getattr(s, "c_frag", False):
        _exec_into_frag(lw, s, text)
        return
    if s.future is not None and s.c_elem and not all(
            isinstance(const_value(x), int) for x in s.c_elem):
        lw.unsupported(s.c, "an asynchronous mma on an element of a fragment array chosen "
                            "at run time")

    def execute(acc: FragRef) -> None:
        # a scaled MMA, or one a later mma.scale scales, accumulates into the partial sum
        c = _partial(lw, acc, s.c) if s.scale or s.into_partial else acc
        tiles = [None] if not s.k_tile or len(s.k_order) == 1 else s.k_order
        for t in tiles:
            a = _sparse_a(lw, s, c.unit, text) if s.sparse_meta is not None else \
                _operand(lw, s.a, FragRole.A, c.unit, text, _k_slice(s, "a", t))
            b = _operand(lw, s.b, FragRole.B, c.unit, text, _k_slice(s, "b", t))
            lw.b.emit("MMA_EXEC", c.acc, a, b, LAYOUTS[s.layout], lw.coll_site(text, c.unit))
        if s.future is not None:
            sym = s.sym if s.declares else s.future.sym
            if lw.env.get(sym) is None:
                lw.bind(sym, c)
            lw.b.emit("MMA_ASYNC", c.acc, lw.coll_site(f"{text}.async", c.unit))
        if s.scale:
            _emit_scale(lw, acc, c, *s.scale, f"{text}.scale")
    each_accumulator(lw, s.c, s.c_elem, execute)

def _sparse_a(lw: Lowerer, s: ast.MmaExec, unit: int, text: str) -> int:
    """The dense A of ``mma.M.sp`` (§11.9): a hidden fragment MMA_SPARSE fills from the
    packed operand and its metadata, each a fragment or a view loaded as any operand."""
    packed = _operand(lw, s.a, FragRole.A, unit, text)
    meta = _operand(lw, s.sparse_meta, FragRole.A, unit, text)
    p = lw.b.code.frags[packed]
    cols = 2 * p.cols if p.cols != DYNAMIC else DYNAMIC
    dense = _hidden(lw, FragDecl(f"{p.name} (dense)", FragRole.A, p.dtype, p.rows, cols, unit,
                                 lw.spans.intern(s.a.span)))
    lw.b.emit("MMA_SPARSE", dense, packed, meta, lw.coll_site(f"{text}.sp", unit))
    return dense


def _partial(lw: Lowerer, acc: FragRef, node: ast.Name) -> FragRef:
    """The partial sum of accumulator ``acc`` (§11.8): a hidden accumulator of its type,
    shape and unit, one per accumulator in a code, zero until MMAs add to it and again
    after each MMA_SCALE."""
    holder = lw.kernel.cache if lw.kernel is not None else lw.fn.cache
    pool = holder.setdefault("partial_sums", {})
    if acc.acc not in pool:
        decl = lw.b.code.frags[acc.acc]
        pool[acc.acc] = FragRef({FragRole.ACC: lw.b.add("frags", FragDecl(
            decl.name, FragRole.ACC, decl.dtype, decl.rows, decl.cols, decl.unit,
            lw.spans.intern(node.span)))}, acc.dtype, acc.unit)
    return pool[acc.acc]


def _emit_scale(lw: Lowerer, acc: FragRef, part: FragRef, rows, factor, text: str) -> None:
    view, _, _ = view_of(lw, rows, mma=True)
    lw.b.emit("MMA_SCALE", acc.acc, part.acc, view, lower_as(lw, factor, dtypes.F32),
              lw.coll_site(text, acc.unit))


def lower_scale(lw: Lowerer, s: ast.MmaScale) -> None:
    """``mma.scale mc, rows, factor``: the partial sum of the MMAs the checker found
    before it (§11.8) is scaled into ``mc``."""
    acc = frag_ref(lw, s.frag.sym, s.frag)
    _emit_scale(lw, acc, _partial(lw, acc, s.frag), s.rows, s.factor, "mma.scale")



def _k_slice(s: ast.MmaExec, which: str, tile):
    """(dimension, origin, extent) of K tile ``tile`` in operand ``which``, or None."""
    if tile is None:
        return None
    row_major = s.layout.split(".")[0 if which == "a" else 1] == "row"
    return (1 if row_major else 0), tile * s.k_tile, s.k_tile


def lower_op_future_wait(lw: Lowerer, ref: FragRef) -> None:
    """``wait f`` of an operation future: its accumulator's asynchronous MMAs complete."""
    lw.b.emit("MMA_WAIT", ref.acc, lw.coll_site("wait", ref.unit))


def _exec_unit(lw: Lowerer) -> int:
    """The unit of an MMA on frags only: the operation's own (§11.2 (a), (c))."""
    if lw.kernel is None:
        return HOST_UNIT
    if lw.ctx.mma_unit is not None:
        return lw.ctx.mma_unit
    return 1 if lw.ctx.unit == 1 else 0


def _exec_into_frag(lw: Lowerer, s: ast.MmaExec, text: str) -> None:
    """``mma.M f, A, B`` with a frag ``f`` (§11.7): a hidden accumulator gathered from the
    lanes' copies, the exec, and each lane's held elements written back to its copy."""
    unit = _exec_unit(lw)
    base = resolve_base(lw, s.c)
    rows, cols = s.c.ty.shape
    name = lw.snippet(s.c.span)
    acc = lw.b.add("frags", FragDecl(name, FragRole.ACC, base.dtype.code, rows, cols, unit,
                                     lw.spans.intern(s.c.span)))
    lw.b.emit("MMA_GATHER", acc, base.slot, 0, lw.coll_site(text, unit))
    a = _operand(lw, s.a, FragRole.A, unit, text)
    b = _operand(lw, s.b, FragRole.B, unit, text)
    lw.b.emit("MMA_EXEC", acc, a, b, LAYOUTS[s.layout], lw.coll_site(text, unit))
    owned = Owned(lw, FragRef({FragRole.ACC: acc}, base.dtype, unit), (rows, cols), name, s.c)

    def store(i: int, j: int) -> None:
        index = lw.b.add("accesses", Access(base.kind, base.slot, base.arr, [i, j], base.text))
        lw.b.emit("STORE", index, owned.get(i, j, base.dtype))
    owned.each(store)



def _operand(lw: Lowerer, e: ast.Expr, role: FragRole, unit: int, text: str,
             k_slice=None) -> int:
    """A fragment, or a view loaded into a hidden fragment of the same unit (§11.1),
    named by the operand's source text so that runtime messages quote what was written;
    a frag is gathered from the lanes that hold its elements (§11.7); ``k_slice``
    restricts a view to one K tile (§11.6)."""
    sym = getattr(e, "sym", None)
    if isinstance(e, ast.Name) and sym is not None and sym.kind == "fragment":
        return frag_ref(lw, sym, e).indices[role]
    if isinstance(e, ast.Name) and isinstance(e.ty, T.Buffer) and e.ty.storage == "local":
        base = resolve_base(lw, e)
        rows, cols = _extents(e.ty.shape)
        idx = lw.b.add("frags", FragDecl(lw.snippet(e.span), role, base.dtype.code, rows,
                                         cols, unit, lw.spans.intern(e.span)))
        stored_as = text.split(".")[1 if role == FragRole.A else 2]
        lw.b.emit("MMA_GATHER", idx, base.slot, int(stored_as == "col"),
                  lw.coll_site(text, unit))
        return idx
    if k_slice is None:
        view, base, ext = swizzled_view(lw, e)
    else:       # one K tile, addressed as its buffer is laid out (§9.7)
        view, base, ext = k_view(lw, e, *k_slice)
        set_swizzle(lw, e, view, buffer_swizzle(e))
    rows, cols = _extents(ext)
    decl = FragDecl(lw.snippet(e.span), role, base.dtype.code, rows, cols, unit,
                    lw.spans.intern(e.span))
    idx = _hidden(lw, decl)
    lw.b.emit("MMA_LOAD", idx, view, lw.coll_site("mma.load", unit))
    return idx


def _hidden(lw: Lowerer, decl: FragDecl) -> int:
    """The hidden fragment for ``decl``: one per operand text, role, type, static shape
    and unit in a code, shared by every MMA that loads it (the K tiles of a schedule,
    statements naming the same tile): it is loaded just before each exec that reads it,
    so no two of them hold it at once, and the CUDA generator gives it one place."""
    if DYNAMIC in (decl.rows, decl.cols):
        return lw.b.add("frags", decl)
    holder = lw.kernel.cache if lw.kernel is not None else lw.fn.cache
    pool = holder.setdefault("hidden_frags", {})
    key = (decl.name, decl.role, decl.dtype, decl.rows, decl.cols, decl.unit)
    if key not in pool:
        pool[key] = lw.b.add("frags", decl)
    return pool[key]


def lower_store(lw: Lowerer, s: ast.MmaStore) -> None:
    each_accumulator(lw, s.frag, s.elem, lambda f: _store(lw, s, f))


def _store(lw: Lowerer, s: ast.MmaStore, f: FragRef) -> None:
    view, _, ext = view_of(lw, s.view, mma=True)
    unit = _store_unit(lw, f)
    if s.guards:
        rows = lower_as(lw, s.guards[0], dtypes.S32)
        cols = lower_as(lw, s.guards[1], dtypes.S32) if len(s.guards) > 1 \
            else reg_of(lw, ext[1])
        lw.b.emit("MMA_STORE_MASK", f.acc, view, rows, cols,
                  lw.coll_site("mma.store.mask", unit))
        return
    lw.b.emit("MMA_STORE", f.acc, view, int(s.transp), lw.coll_site("mma.store", unit))


def _store_unit(lw: Lowerer, f: FragRef) -> int:
    """A store at block level of a fragment owned per warpgroup or warp (§11.2 (b)) is one
    collective of the block, so the engine sees every copy it would write to the same
    destination and reports two or more; elsewhere a store is a collective of its unit."""
    per_group = f.unit in UNIT_OF_LANES
    return 0 if per_group and lw.ctx.unit == 0 else f.unit


def lower_commit(lw: Lowerer, s: ast.MmaCommit) -> None:
    """``mma.commit`` does nothing in croqvm (D10)."""


TABLE = {ast.MmaFill: lower_fill, ast.MmaLoad: lower_load, ast.MmaExec: lower_exec,
         ast.MmaStore: lower_store, ast.MmaCommit: lower_commit, ast.MmaScale: lower_scale}
