"""The Croqtile abstract syntax tree (LANGUAGE.md §3-§11, grammar summary §6.1).

Every node carries ``span`` (its whole source range). The parser builds the tree; the
checker (``croqvm.lang.check``) annotates it in place and later stages read those
annotations, never the source:

- every ``Expr`` gets ``ty`` (a ``croqvm.lang.types`` type);
- every ``Name`` (and every declaring node, through ``sym`` / ``syms``) gets the
  ``Symbol`` it refers to;
- every ``Parallel`` gets ``kinds`` (the normalised level of each ``PLevel``: "block",
  "group-4", "group" or "thread", §6.3) and ``is_kernel``.

Conventions: lists are never None (empty instead); optional children are None.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..source import Span


class Node:
    span: Span


# --------------------------------------------------------------------------- expressions


class Expr(Node):
    ty = None  # set by the checker


@dataclass
class IntLit(Expr):
    value: int
    dtype: str  # s32, s64, u32, u64 (§2.2.1)
    span: Span


@dataclass
class FloatLit(Expr):
    value: float
    dtype: str  # f32 or f64; ``inf`` is FloatLit(inf, "f32")
    span: Span


@dataclass
class BoolLit(Expr):
    value: bool
    span: Span


@dataclass
class StringLit(Expr):
    value: str
    span: Span


@dataclass
class Name(Expr):
    id: str
    span: Span
    sym = None  # Symbol, set by the checker


@dataclass
class Wildcard(Expr):
    """``_``: a whole dimension in chunkat/subspan arguments (§2.1.2)."""
    span: Span


@dataclass
class Unary(Expr):
    op: str  # "-", "!", "~", "++", "--" (prefix)
    operand: Expr
    span: Span


@dataclass
class Postfix(Expr):
    op: str  # "++" or "--"
    operand: Expr
    span: Span


@dataclass
class Binary(Expr):
    op: str  # + - * / % << >> & ^ | == != < <= > >= && || # #+ #- #* #/ #%
    lhs: Expr
    rhs: Expr
    span: Span


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr
    span: Span


@dataclass
class Extent(Expr):
    """``#x``: the bound of a bounded name (§5.2)."""
    name: Name
    span: Span


@dataclass
class ElemCount(Expr):
    """``|a.span|``: element count (§4.4)."""
    operand: Expr
    span: Span


@dataclass
class SpanOf(Expr):
    """``a.span`` (dim None) or ``a.span(i)`` (§4.4)."""
    base: Expr
    dim: Expr | None
    span: Span


@dataclass
class DataOf(Expr):
    """``f.data``: the destination of a future (§9.4.5)."""
    base: Expr
    span: Span


@dataclass
class Call(Expr):
    """``cdiv(a, b)``, ``__min``, ``__max``, an ituple element ``t(i)``, ``x(-n)`` (§4.4);
    ``e(i)`` on an expression other than a name is an ``Element``."""
    func: str
    args: list[Expr]
    span: Span
    func_span: Span | None = None


@dataclass
class Element(Expr):
    """``e(i)`` on any postfix expression ``e`` but a name (``t(i)`` is a ``Call``): element
    ``i`` of an ituple or bounded ituple, or ``x(-n)`` of a bounded int (§4.1 level 15,
    §4.4), as in ``idx(1)(-1)``. ``args`` are as written; the checker wants one."""
    base: Expr
    args: list[Expr]
    span: Span


@dataclass
class Convert(Expr):
    """``__to<T>(e)``."""
    dtype: str
    operand: Expr
    span: Span


@dataclass
class ITupleLit(Expr):
    elems: list[Expr]
    span: Span


@dataclass
class MdspanLit(Expr):
    elems: list[Expr]
    span: Span


@dataclass
class Index(Expr):
    """``buf[i]`` (buffer array, §8.5) or ``ev[i]`` (event slot, §10)."""
    base: Expr
    index: Expr
    span: Span


@dataclass
class ElemAccess(Expr):
    """``b.at(i, ...)``: element access, an lvalue (§8.6)."""
    base: Expr
    indices: list[Expr]
    span: Span


@dataclass
class ChunkAt(Expr):
    """``v.chunkat(a, ...)`` (§8.2); arguments may be ``Wildcard``."""
    base: Expr
    args: list[Expr]
    span: Span


@dataclass
class Subspan(Expr):
    """``v.subspan(s...)[.step(t...)][.at(i...)]`` (§8.3.1); sizes may be ``Wildcard``."""
    base: Expr
    sizes: list[Expr]
    steps: list[Expr] | None
    at: list[Expr] | None
    span: Span


@dataclass
class ViewFrom(Expr):
    """``v.view(s...).from(f...)`` (§8.3.2)."""
    base: Expr
    sizes: list[Expr]
    origin: list[Expr]
    span: Span


# --------------------------------------------------------------------------- types in source


@dataclass
class TypeRef(Node):
    """A written type: ``int``, ``bool``, an element type, ``void``, ``auto``, ``stream``,
    ``ituple``, ``mdspan`` (``name`` is the spelling as written)."""
    name: str
    span: Span


@dataclass
class Dim(Node):
    """One dimension of a parameter shape: an expression or ``?`` (expr None)."""
    expr: Expr | None
    span: Span


@dataclass
class Param(Node):
    storage: str | None      # "global" or None (also for written shared/local: checker rejects)
    type: TypeRef
    shape: list[Dim] | None  # None for scalar and stream parameters
    name: str | None
    span: Span
    sym = None


# --------------------------------------------------------------------------- statements


class Stmt(Node):
    pass


@dataclass
class Block(Stmt):
    stmts: list[Stmt]
    span: Span


@dataclass
class Empty(Stmt):
    span: Span


@dataclass
class BufferItem(Node):
    name: str
    array: list[Expr]      # ``name[N][M]``: buffer-array dimensions, else []
    init: Expr | None      # ``{v}``
    span: Span
    sym = None


@dataclass
class BufferDecl(Stmt):
    storage: str | None    # "global", "shared", "local" or None
    dtype: TypeRef
    shape: list[Expr]      # items; an mdspan item is spliced by the checker
    items: list[BufferItem]
    span: Span


@dataclass
class ScalarItem(Node):
    name: str
    init: Expr | None
    span: Span
    sym = None


@dataclass
class ScalarDecl(Stmt):
    """``[mutable] (int|bool|T|ituple|mdspan) x = e, ...;`` or ``mutable x = e;``."""
    mutable: bool
    type: TypeRef | None   # None: inferred (``mutable x = e``)
    items: list[ScalarItem]
    span: Span


@dataclass
class EventItem(Node):
    name: str
    array: list[Expr]
    ready: bool            # ``e[2] = ready``: every slot starts with one completed generation
    span: Span
    sym = None


@dataclass
class EventDecl(Stmt):
    """``shared event e[2], f = ready;`` / ``shared event<128> e;`` (§10.1); ``= ready``
    belongs to the declarator it follows (here ``f``), as in the reference grammar."""
    storage: str | None
    count: Expr | None     # ``event<N>``
    items: list[EventItem]
    span: Span


@dataclass
class Assign(Stmt):
    """``x = e`` (may declare, D13), ``x op= e``, ``b.at(...) op= e`` (§6.6)."""
    target: Expr           # Name or ElemAccess
    op: str                # "=", "+=", "-=", "*=", "/=", "%="
    value: Expr
    span: Span
    declares = False       # set by the checker when ``x = e`` declares x (D13)
    sym = None             # the declared symbol in that case


@dataclass
class IncDec(Stmt):
    """``++x`` / ``x++`` / ``--x`` / ``x--`` as a statement."""
    op: str
    target: Name
    prefix: bool
    span: Span


@dataclass
class PLevel(Node):
    """One level of a ``parallel``: ``p by 4 : block`` / ``{x, y} by [2, 3]`` /
    ``t = {x, y} by [...]``. ``names`` holds the sub-indices (empty if unnamed)."""
    names: list[str]
    tuple_name: str | None
    bounds: list[Expr]       # one expr per written bound (a list ``[a, b]`` or one expr)
    bound_is_list: bool
    level: str | None        # written level or None
    span: Span
    syms = None              # Symbols of names (and tuple name last, if any)


@dataclass
class Parallel(Stmt):
    is_async: bool
    stream: str | None
    levels: list[PLevel]
    body: Stmt
    span: Span
    kinds = None             # normalised levels, one per PLevel
    is_kernel = False


@dataclass
class Within(Node):
    """``t in B`` / ``{a, b} in B`` / ``t = {a, b} in B`` (§6.1 within)."""
    names: list[str]
    tuple_name: str | None
    bound: list[Expr]
    bound_is_list: bool
    span: Span
    syms = None


@dataclass
class With(Stmt):
    withins: list[Within]
    body: Stmt
    span: Span


@dataclass
class Range(Node):
    """``[u =] t[(lo:hi:step)]`` in ``foreach`` (§5.5)."""
    new_name: str | None
    name: str
    lo: Expr | None
    hi: Expr | None
    step: int | None
    span: Span
    sym = None      # the iterated symbol (new one if new_name)
    var_sym = None  # the symbol of ``name``


@dataclass
class Foreach(Stmt):
    """Either ``withins`` (``foreach i in [8]``) or ``ranges`` (``foreach kt(1:)``)."""
    withins: list[Within]
    ranges: list[Range]
    body: Stmt
    span: Span


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None
    span: Span


@dataclass
class While(Stmt):
    cond: Expr
    body: Stmt
    span: Span


@dataclass
class Inthreads(Stmt):
    is_async: bool
    cond: Expr
    body: Stmt
    span: Span


@dataclass
class Wait(Stmt):
    refs: list[Expr]   # Name or Index (futures or event slots)
    span: Span


@dataclass
class Trigger(Stmt):
    refs: list[Expr]
    span: Span


@dataclass
class Swap(Stmt):
    """``swap(a, b)`` and ``rotate(f0, ...)`` (§9.6)."""
    rotate: bool
    names: list[Name]
    span: Span


@dataclass
class Sync(Stmt):
    kind: str            # "shared", "barrier", "fence", "global"
    level: str | None    # for barrier/fence
    span: Span


@dataclass
class Break(Stmt):
    span: Span


@dataclass
class Continue(Stmt):
    span: Span


@dataclass
class Yield(Stmt):
    span: Span


@dataclass
class Return(Stmt):
    value: Expr | None
    span: Span


@dataclass
class Print(Stmt):
    newline: bool
    args: list[Expr]
    span: Span


@dataclass
class Assert(Stmt):
    cond: Expr
    message: str
    span: Span


@dataclass
class Dma(Stmt):
    """``[f =] dma.copy|transp|pad ... SRC => DST;``, ``[f =] tma.copy|load ...`` (§9.1).

    ``dst`` is an expression, or a storage keyword as a ``str`` ("shared", "local",
    "global"). ``perm`` holds ``transp<...>``; ``pad_lo/hi/mid/value`` hold ``pad<...>``.
    """
    target: Name | None
    op: str                       # "copy", "transp", "pad", "load" (tma.load)
    is_async: bool
    zfill: bool
    swizzle: int | None
    tma: bool
    src: Expr
    dst: Expr | str
    span: Span
    perm: list[int] = field(default_factory=list)
    pad_lo: list[Expr] = field(default_factory=list)
    pad_hi: list[Expr] = field(default_factory=list)
    pad_mid: list[Expr] = field(default_factory=list)
    pad_value: Expr | None = None
    l2_hint: str | None = None    # "evict_first", "evict_last" (tma.load only)
    declares = False              # set by the checker when ``target`` is new
    tma_transfer = False          # set by the checker: a TMA copy between global and shared
    tma_unit = 0                  # set by the checker: lanes per issuing instance, 0: block
    sym = None


@dataclass
class DmaAny(Stmt):
    """``f = dma.any;`` or ``f = tma.any;`` (§9.4.2)."""
    target: Name
    span: Span
    tma: bool = False
    declares = False
    sym = None


@dataclass
class MmaFill(Stmt):
    """``mc = mma.fill[.T] v;`` (target new or existing) / ``mma.fill mc, v;``."""
    target: Name
    dtype: str | None
    value: Expr
    assign_form: bool             # True for ``mc = mma.fill v``
    span: Span
    declares = False
    sym = None


@dataclass
class MmaLoad(Stmt):
    """``ma = mma.load[.swiz<N>] VIEW;``."""
    target: Name
    view: Expr
    swizzle: int | None
    span: Span
    declares = False
    sym = None


@dataclass
class MmaExec(Stmt):
    """``mma.row.col c, a, b;`` (§11.1); ``a``/``b`` fragments or views."""
    layout: str                   # "row.row", "row.col", "col.row", "col.col"
    c: Name
    a: Expr
    b: Expr
    span: Span


@dataclass
class MmaStore(Stmt):
    transp: bool
    frag: Name
    view: Expr
    span: Span


@dataclass
class MmaCommit(Stmt):
    span: Span


# --------------------------------------------------------------------------- top level


@dataclass
class Function(Node):
    ret: TypeRef                  # ``void``, ``auto`` or a type
    ret_shape: list[Expr] | None  # ``s32 [4, 8] f(...)``: a written return buffer shape
    name: str
    params: list[Param]
    body: Block
    span: Span                    # the whole function
    name_span: Span | None = None
    sym_table = None              # set by the checker: every Symbol declared in it


@dataclass
class Program(Node):
    functions: list[Function]
    span: Span | None = None
