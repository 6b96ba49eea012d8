"""DMA statements and futures (LANGUAGE.md §9, D7).

Bookkeeping kept per function in ``FutureFacts``: the first async DMA into each future,
which futures are waited, the groups that ``swap``/``rotate`` link (one waited member
suffices, §9.5.5) and the ``dma.any`` placeholders.

A placeholder's type is fixed by its first DMA (§9.4.4), which may come after a use of
``f.span``. The checker then runs twice over the function (``functions.check_function``):
the first pass notes such uses (``Symbol.info["span_early"]``) and learns the types
(``later_types``); the second gives each placeholder its later type
(``Symbol.info["later"]``) from the start, for ``views.check_span``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.lang import ast
from croqvm.lang.types import Future, View

from .consteval import const_value
from .decls import note_param_write
from .typerules import convert, is_integer, is_unknown, mdspan_str, tname
from .views import view_source
from .walk import thread_dependence, value_names


@dataclass
class FutureFacts:
    async_at: dict = field(default_factory=dict)     # Symbol -> span of its first async DMA
    waited: set = field(default_factory=set)
    parent: dict = field(default_factory=dict)       # swap/rotate groups (union-find)
    placeholders: list = field(default_factory=list)  # (Symbol, DmaAny)
    later: dict = field(default_factory=dict)  # id(DmaAny) -> (Future, span typing it)
    # The latest async copy into each future, in source order: (source storage or None
    # where the statement does not say, destination storage), and what consumed it since
    # ("wait" or "bind"), for trigger-after (§10.7)
    producer: dict = field(default_factory=dict)
    consumed: dict = field(default_factory=dict)

    def root(self, sym):
        while self.parent.get(sym, sym) is not sym:
            sym = self.parent[sym]
        return sym

    def link(self, a, b):
        self.parent[self.root(a)] = self.root(b)


def facts(ck) -> FutureFacts:
    return ck.fact("futures", FutureFacts)


def _op_name(s: ast.Dma) -> str:
    return f"tma.{s.op}" if s.tma else f"dma.{s.op}"


def root_symbol(e):
    """The symbol of the buffer or future at the root of a view chain, or None."""
    while not isinstance(e, ast.Name):
        e = getattr(e, "base", None)
        if e is None:
            return None
    return getattr(e, "sym", None)


def _check_tma(ck, s: ast.Dma, src: View, dst_storage: str):
    """A TMA transfer moves a tile between global and shared memory (Croqtile: tma.md);
    'tma.load' only from global into shared. 'tma.copy' in any other direction is the
    copy 'dma.copy' makes (§9.7)."""
    direction = (src.storage, dst_storage)
    if s.op == "load" and direction != ("global", "shared"):
        ck.error(s.span, f"'tma.load' copies global memory into shared memory, but this "
                         f"one copies {src.storage} memory into {dst_storage} memory.",
                 hint="use 'tma.copy' for a store from shared to global memory, or "
                      "'dma.copy' for other directions")
    elif direction not in (("global", "shared"), ("shared", "global")):
        ck.warning(s.span, f"'tma.copy' from {src.storage} to {dst_storage} memory is not "
                           f"a TMA transfer, which moves tiles between global and shared "
                           f"memory; it copies as 'dma.copy' does.")
    else:
        s.tma_transfer = True
    if s.multicast:
        _check_multicast(ck, s, direction)


def _check_multicast(ck, s: ast.Dma, direction: tuple):
    """A multicast load writes one tile into the shared memory of every block of the
    cluster (lib/Target/GPU/cute_codegen.cpp); it has no store form, and the reference
    has no L2 policy for it (lib/Target/GPU/gpu_adapt.hpp)."""
    if direction != ("global", "shared"):
        ck.error(s.span, f"'.multicast' loads global memory into the shared memory of every "
                         f"block of a cluster, but this copy goes from {direction[0]} memory "
                         f"into {direction[1]} memory.",
                 hint="drop '.multicast', or copy a global tile into a shared buffer")
    if s.l2_hint is not None:
        ck.error(s.span, "L2 eviction hints are not yet supported for multicast TMA.",
                 hint=f"drop '.{s.l2_hint}'")


_UNITS = {"group-4": 128, "group": 32}     # lanes per instance of a level (§11.2)


def _issuing_unit(s: ast.Dma) -> int:
    """Who issues a collective DMA or TMA copy (§9.3.2; Croqtile: tma.md, "follows operand
    dependence"): when its operands use a 'group-4' or 'group' index, each instance of
    the innermost such level makes its own copy (lanes per instance); otherwise the block
    makes one (0)."""
    exprs = [s.src] + ([] if isinstance(s.dst, str) else [s.dst])
    return min((_UNITS[n.sym.level] for e in exprs for n in value_names(e)
                if n.sym is not None and n.sym.plevel is not None
                and n.sym.level in _UNITS), default=0)


def _check_swizzle(ck, s: ast.Dma, src: View, dst_storage: str):
    """§9.7: '.swiz<N>' lays out the shared side of the copy (the destination when it is
    in shared memory, else the source); an 'mma.load' of that buffer without its own
    '.swiz' reads through the same swizzle (lib/semacheck.cpp)."""
    if dst_storage == "shared":
        side = s.target if isinstance(s.dst, str) else s.dst
    elif src.storage == "shared":
        side = s.src
    else:
        ck.error(s.span, f"'.swiz<{s.swizzle}>' lays out a tile in shared memory, but this "
                         f"copy moves {src.storage} memory into {dst_storage} memory.",
                 hint="remove '.swiz<N>', or copy into a shared buffer")
        return
    sym = root_symbol(side) if side is not None else None
    if sym is not None:
        sym.info["swizzle"] = (s.swizzle, s.span)


def swizzle_of_load(ck, s) -> None:
    """``mma.load[.swiz<N>] VIEW`` (§9.7): without '.swiz' it reads through the swizzle the
    buffer was laid out with; with a different one it reads other elements than the
    copy wrote there, as on the GPU, and gets a warning (lib/semacheck.cpp)."""
    sym = root_symbol(s.view)
    laid = sym.info.get("swizzle") if sym is not None else None
    if laid is None:
        return
    n, span = laid
    if s.swizzle is None:
        s.swizzle = n
    elif s.swizzle != n:
        ck.warning(s.span, f"'mma.load.swiz<{s.swizzle}>' reads '{sym.name}' through a "
                           f"{s.swizzle}-byte swizzle, but the copy at line {span.line} "
                           f"laid it out with '.swiz<{n}>': the fragment gets other "
                           f"elements than the copy placed there.",
                   hint=f"write 'mma.load.swiz<{n}>' or leave the swizzle out")


# --------------------------------------------------------------------------- shapes


def _transposed(ck, s, src: View):
    """§9.6.2: destination extents ``e_{p_k}``."""
    rank = len(src.shape)
    if sorted(s.perm) != list(range(rank)):
        ck.error(s.span, f"dma.transp<{', '.join(map(str, s.perm))}> is not a permutation "
                         f"of the {rank} dimensions of the source.")
        return None
    return tuple(src.shape[p] for p in s.perm)


def _padded(ck, s, src: View):
    """§9.6.3: extents ``lo + e + (e - 1) * mid + hi``."""
    rank = len(src.shape)
    lists = (s.pad_lo, s.pad_hi, s.pad_mid)
    for values in lists:
        for v in values:
            ty = ck.expr(v)
            if not is_unknown(ty) and not is_integer(ty):
                ck.error(v.span, f"dma.pad amounts must be integers but got '{tname(ty)}'.")
    if s.pad_value is not None:
        convert(ck, ck.expr(s.pad_value), src.dtype, s.pad_value)
    if any(len(values) != rank for values in lists):
        ck.error(s.span, f"dma.pad needs {rank} values in each of its low, high and middle "
                         f"paddings (the rank of the source).")
        return None
    shape = []
    for e, lo, hi, mid in zip(src.shape, *lists):
        lo, hi, mid = (const_value(x) for x in (lo, hi, mid))
        known = all(isinstance(v, int) for v in (e, lo, hi, mid))
        shape.append(lo + e + (e - 1) * mid + hi if known else None)
    return tuple(shape)


def _moved_shape(ck, s: ast.Dma, src: View):
    if s.op == "transp":
        return _transposed(ck, s, src)
    if s.op == "pad":
        return _padded(ck, s, src)
    return src.shape


def _check_types(ck, s: ast.Dma, src: View, dst: View):
    """§9.2: same element type and rank; SRC's extents fit DST's (smaller needs .zfill)."""
    def inconsistent(hint=None):
        ck.error(s.span, f"Type inconsistent between DMA 'from'({mdspan_str(src)}) and "
                         f"'to'({mdspan_str(dst)}).", hint=hint)
    if src.dtype is not dst.dtype:
        inconsistent()
    elif len(src.shape) != len(dst.shape):
        ck.error(s.span, f"DMA statement has a rank mismatch between 'from' and 'to': "
                         f"{len(src.shape)} != {len(dst.shape)}.")
    else:
        pairs = [(a, b) for a, b in zip(src.shape, dst.shape)
                 if isinstance(a, int) and isinstance(b, int)]
        if any(a > b for a, b in pairs):
            inconsistent()
        elif any(a < b for a, b in pairs) and not s.zfill:
            if not _fits_smaller(s, src, dst):
                inconsistent(hint="add '.zfill' to zero the destination elements the source "
                                  "does not cover")
            elif dst.storage == "shared":
                s.zfill = True
            else:
                s.fits_smaller = True
        elif _zero_fills(s, src, dst):
            s.zfill = True


def _zero_fills(s: ast.Dma, src: View, dst: View) -> bool:
    """§9.5.1: a copy or transposition into shared memory whose extents are not the same
    at compile time zero-fills what the source does not cover, as the reference compiler
    turns '.zfill' on for it (lib/Target/GPU/dma_plan.cpp, ResolvePrediction)."""
    if s.op == "pad" or dst.storage != "shared":
        return False
    return any(not (isinstance(a, int) and a == b) for a, b in zip(src.shape, dst.shape))


def _fits_smaller(s: ast.Dma, src: View, dst: View) -> bool:
    """A copy of a smaller source that leaves the rest of the destination as it is, which
    lib/semacheck.cpp accepts without '.zfill' for a rank-2 copy between global and shared
    memory whose rows have one known length and whose extents are all known."""
    if s.op != "copy" or len(src.shape) != 2:
        return False
    if not all(isinstance(d, int) for d in src.shape + dst.shape):
        return False
    if src.shape[1] != dst.shape[1]:
        return False
    return {src.storage, dst.storage} == {"global", "shared"}


def _check_collective(ck, s: ast.Dma, src: View, dst_storage: str):
    """§9.3.3 (D7): a DMA not touching local memory runs once per block (or warp, or
    warpgroup: §9.3.2), so its operands must not depend on a 'thread'-level index."""
    if not ck.in_parallel or "local" in (src.storage, dst_storage):
        return
    sides = [("source", s.src)] + ([] if isinstance(s.dst, str) else [("destination", s.dst)])
    for side, expr in sides:
        dep = thread_dependence(expr)
        if dep:
            ck.error(s.span,
                     f"{_op_name(s)} into {dst_storage} memory is executed once per block, "
                     f"but its {side} depends on thread index '{dep}': every thread would "
                     f"overwrite the same {dst_storage} buffer.",
                     hint="copy into 'local' memory (=> local) to give each thread its own "
                          "tile, or index the tile with block-level variables.")
            return


# --------------------------------------------------------------------------- futures


def same_future(a: Future, b: Future, exact: bool = False) -> bool:
    """Whether ``a`` and ``b`` are one future type. A re-assignment may bring a tile whose
    extent is only known at run time where the declaration's is a constant (the engines
    check the tile when it lands); ``exact`` also requires such extents to be equal, as
    ``swap`` and ``rotate`` do, since they exchange handles of the one declared type."""
    if (a.is_async, a.dtype, a.storage) != (b.is_async, b.dtype, b.storage):
        return False
    if len(a.shape) != len(b.shape):
        return False
    return all(x == y or not (exact or isinstance(x, int) and isinstance(y, int))
               for x, y in zip(a.shape, b.shape))


def _bind_future(ck, s, fty: Future | None):
    """``f = dma...``: declares ``f`` or re-targets it (§9.4.1-§9.4.4)."""
    t = s.target
    sym = ck.lookup(t.id)
    if sym is None:
        sym = ck.declare(t.id, "future", fty or Future(s.is_async), s, t.span, mutable=True)
        s.declares = True
        if fty is None:  # the DMA itself is wrong (reported): keep uses of 'f' quiet
            sym.info["bad"] = True
    elif sym.info.get("bad"):
        pass
    elif sym.kind != "future":
        ck.error(t.span, f"'{t.id}' of type \"{tname(sym.type)}\" can not be re-assigned as "
                         f"\"{fty or 'future'}\".")
        return
    elif ck.check_modifiable(sym, t.span) and fty is not None:
        if sym.type.dtype is None:
            sym.type = fty  # a placeholder takes the type of its first DMA (§9.4.4)
            sym.info["typed_at"] = s.span
        elif not same_future(sym.type, fty):
            ck.error(s.span, f"'{t.id}' is declared as \"{sym.type}\" but assigned "
                             f"\"{fty}\".")
    s.sym = sym
    ck.bind_name(t, sym)
    if s.is_async:
        facts(ck).async_at.setdefault(sym, s.span)
        if fty is not None:       # a new transfer to bind (§10.7); check_dma adds its source
            facts(ck).producer[sym] = (None, fty.storage)
            facts(ck).consumed.pop(sym, None)


def check_dma(ck, s: ast.Dma):
    src = view_source(ck, ck.expr(s.src), s.src, "the DMA source")
    dst = None
    if isinstance(s.dst, str):
        dst_storage = s.dst
        if ck.in_parallel and s.dst == "global":
            ck.error(s.span, "`global' can not be DMA destination inside parallel-by.")
        elif not ck.in_parallel and s.dst != "global":
            ck.error(s.span, f"`{s.dst}' can not be DMA destination outside parallel-by.")
    else:
        dst = view_source(ck, ck.expr(s.dst), s.dst, "the DMA destination")
        dst_storage = dst.storage if dst is not None else None
        note_param_write(ck, s.dst)
    if s.is_async and s.target is None:
        ck.error(s.span, "forbid to associated async dma without a named future or a "
                         "named event.")
    fty = None
    if src is not None:
        shape = _moved_shape(ck, s, src)
        moved = View(src.dtype, shape, src.storage) if shape is not None else None
        if moved is not None and dst is not None:
            _check_types(ck, s, moved, dst)
        if dst_storage is not None:
            _check_collective(ck, s, src, dst_storage)
            s.tma_unit = _issuing_unit(s)
            if s.tma:
                _check_tma(ck, s, src, dst_storage)
        if dst is not None:
            # the data of a copy that fits a smaller source is the part it covers
            shape = moved.shape if getattr(s, "fits_smaller", False) else dst.shape
            fty = Future(s.is_async, dst.dtype, tuple(shape), dst.storage)
        elif moved is not None:
            fty = Future(s.is_async, src.dtype, tuple(moved.shape), dst_storage)
    if s.target is not None:
        _bind_future(ck, s, fty)
        _note_shared(ck, s)
        if s.is_async and src is not None and s.sym in facts(ck).producer:
            facts(ck).producer[s.sym] = (src.storage, facts(ck).producer[s.sym][1])
    if s.swizzle is not None and src is not None and dst_storage is not None:
        _check_swizzle(ck, s, src, dst_storage)


def _note_shared(ck, s: ast.Dma):
    """§9.5.6: the 'inthreads' branch (not enclosing the placeholder's declaration) of an
    async copy into a placeholder, for ``finish`` to tell a shared future."""
    sym = getattr(s, "sym", None)
    if sym is None or not s.is_async or not sym.info.get("placeholder"):
        return
    outside = set(map(id, sym.info["inthreads"]))
    branch = tuple(i for i in ck.inthreads if id(i) not in outside)
    if branch:
        sym.info.setdefault("filled_in", branch)


def check_dma_any(ck, s: ast.DmaAny):
    """``f = dma.any;`` (§9.4.2): a placeholder typed by its first DMA."""
    t = s.target
    sym = ck.declare(t.id, "future", Future(False), s, t.span, mutable=True)
    sym.info["placeholder"] = True
    sym.info["inthreads"] = tuple(ck.inthreads)
    if id(s) in facts(ck).later:
        sym.info["later"] = facts(ck).later[id(s)]
    s.declares, s.sym = True, sym
    ck.bind_name(t, sym)
    facts(ck).placeholders.append((sym, s))


def check_swap(ck, s: ast.Swap):
    """§9.6.1: exchange (or rotate left) the handles of futures of one type and scope."""
    word = "rotate" if s.rotate else "swap"
    types = [ck.expr(n) for n in s.names]
    if s.rotate and len(s.names) < 2:
        ck.error(s.span, "Builtin function 'rotate' accept two or more parameters.")
        return
    if not s.rotate and len(s.names) != 2:
        ck.error(s.span, "Builtin function 'swap' accept exact two parameters.")
        return
    if any(is_unknown(t) for t in types):
        return
    for n, ty in zip(s.names, types):
        if not isinstance(ty, Future):
            ck.error(n.span, "only support swapping of 'future'.")
            return
    syms = [n.sym for n in s.names]
    for sym in syms:  # linked even when wrong, so waits are not reported twice
        facts(ck).link(sym, syms[0])
    if not all(ck.check_modifiable(sym, n.span) for sym, n in zip(syms, s.names)):
        return
    if any(ck.scope_of[sym] is not ck.scope_of[syms[0]] for sym in syms):
        ck.error(s.span, f"{'swapping' if word == 'swap' else 'rotating'} values defined in "
                         f"different scopes is forbidden")
        return
    typed = [sym.type for sym in syms if sym.type.dtype is not None]
    for a, b in zip(typed, typed[1:]):
        if not same_future(a, b, exact=True):
            ck.error(s.span, f"rotate/swap data of different types ({a} vs. {b})")
            return
    for sym in syms:
        if typed and sym.type.dtype is None:
            sym.type = typed[0]
            sym.info["typed_at"] = s.span


def note_wait(ck, ref, sym):
    """``wait f`` on a future (§9.5.2-§9.5.3)."""
    if sym.type.dtype is not None and not sym.type.is_async:
        ck.error(ref.span, f"non-async future '{sym.name}' can not be waited.")
    facts(ck).waited.add(sym)
    facts(ck).consumed[sym] = "wait"
    sym.info.setdefault("waited_in", []).append(set(map(id, ck.inthreads)))


def note_bind(ck, ref, sym):
    """``trigger e after f`` (§10.7): ``f`` must hold a live async global-to-shared copy of
    an earlier statement; binding consumes it as a wait would (lib/semacheck.cpp)."""
    f = facts(ck)
    if sym.info.get("bad"):
        return
    if not sym.type.is_async and sym.type.dtype is not None:
        ck.error(ref.span, "trigger-after dependency must be asynchronous.",
                 hint=f"make the copy 'dma.copy.async', or trigger the event directly after "
                      f"the synchronous copy")
        return
    if f.consumed.get(sym) == "wait":
        ck.error(ref.span, f"trigger-after cannot bind future '{sym.name}' after it was "
                           f"explicitly waited; trigger the event directly after the wait.")
        return
    if f.consumed.get(sym) == "bind":
        ck.error(ref.span, f"trigger-after consumes future '{sym.name}' more than once; "
                           f"publish an event for multiple consumers.")
        return
    producer = f.producer.get(sym)
    if producer is None:
        ck.error(ref.span, "trigger-after requires a source-visible async DMA future "
                           "producer.", hint=f"bind '{sym.name}' after the async copy into it")
        return
    src, dst = producer
    if dst == "global":
        ck.error(ref.span, "trigger-after cannot bind a TMA store future because "
                           "shared-to-global TMA has no mbarrier completion; use a "
                           "synchronous tma.copy followed by a direct trigger.")
    elif dst != "shared" or src not in ("global", None):
        ck.error(ref.span, "trigger-after requires native completion-event binding; use an "
                           "explicit wait followed by a direct trigger for this DMA future.",
                 hint="only an async copy from global to shared memory can be bound")
    f.consumed[sym] = "bind"
    f.waited.add(sym)


def finish(ck):
    """Function-wide rules of §9.5.5."""
    f = facts(ck)
    waited_groups = {f.root(sym) for sym in f.waited}
    missing = [sym for sym in f.async_at
               if f.root(sym) not in waited_groups and not sym.info.get("bad")]
    if missing:
        ck.error(f.async_at[missing[0]], "some asyncs are not explicitly waited: "
                                         f"{', '.join(sym.name for sym in missing)}.")
    for sym, stmt in f.placeholders:
        if sym.type.dtype is None and not sym.info.get("bad"):
            word = "tma" if stmt.tma else "dma"
            ck.error(stmt.span, f"{word}.any '{sym.name}' is defined but never used!")
        # §9.5.6: filled inside a branch and waited outside it, the placeholder is shared
        branch = set(map(id, sym.info.get("filled_in", ())))
        if branch and any(not branch <= waits for waits in sym.info.get("waited_in", ())):
            sym.info["shared_future"] = True


def later_types(ck) -> dict:
    """After a pass: the placeholders whose ``.span`` was used before the statement that
    typed them, each with that type and statement's span (``FutureFacts.later``)."""
    return {id(stmt): (sym.type, sym.info["typed_at"])
            for sym, stmt in facts(ck).placeholders
            if sym.info.get("span_early") and "typed_at" in sym.info}


def expect_later_types(ck, later: dict):
    """Before a pass: the types ``later_types`` found in the previous one."""
    facts(ck).later = later


RULES = {
    ast.Dma: check_dma,
    ast.DmaAny: check_dma_any,
    ast.Swap: check_swap,
}
