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

import dataclasses
import operator
from dataclasses import dataclass, field

from ..core.source import Span


class Node:
    __slots__ = ()
    span: Span


def node(cls):
    """``@dataclass`` with ``__slots__``: a program of a few megabytes has millions of
    nodes, and a dict each more than doubled their memory. What later stages attach to a
    node is written as a class attribute without an annotation, holding its default
    (``sym = None``); each such annotation is a slot too, set to its default when the
    node is made, and a node has no attribute but its fields and annotations."""
    notes: dict = {}
    for klass in reversed(cls.__mro__[:-1]):    # Node, Expr or Stmt, then the class
        written = vars(klass).get("__annotations__", {})
        notes.update((k, v) for k, v in vars(klass).items()
                     if not k.startswith("__") and k not in written)
    for name in notes:
        if name in vars(cls):
            delattr(cls, name)
    if notes:
        defaults = tuple(notes.items())

        def __post_init__(self):
            for name, value in defaults:
                setattr(self, name, value)
        cls.__post_init__ = __post_init__
    cls = dataclass(cls)
    slots = tuple(f.name for f in dataclasses.fields(cls)) + tuple(notes)
    body = {k: v for k, v in vars(cls).items()
            if k not in slots and k not in ("__dict__", "__weakref__")}
    places = [f.name for f in dataclasses.fields(cls) if f.type in _SPAN_TYPES]
    body.update((name, _span_slot(_PACKED + name)) for name in places)
    slots = tuple(_PACKED + name if name in places else name for name in slots)
    return type(cls)(cls.__name__, cls.__bases__, dict(body, __slots__=slots))


# A node keeps each of its spans as the plain int a ``Span`` packs into: an int the cycle
# collector does not track, 32 bytes where a ``Span`` object takes 48. Reading the field
# gives the ``Span`` back.
_SPAN_TYPES = ("Span", "Span | None")
_PACKED = "_packed_"


def _span_slot(slot: str) -> property:
    get, put = operator.attrgetter(slot), object.__setattr__
    make = int.__new__

    def read(self):
        packed = get(self)
        return None if packed is None else make(Span, packed)

    def write(self, span):
        put(self, slot, None if span is None else int(span))
    return property(read, write)


def field_values(n: Node) -> list:
    """The values of a node's fields: its children and what the parser read, without the
    annotations."""
    return [getattr(n, f.name) for f in dataclasses.fields(n)]


# --------------------------------------------------------------------------- expressions


class Expr(Node):
    __slots__ = ()
    ty = None  # set by the checker


@node
class IntLit(Expr):
    value: int
    dtype: str  # s32, s64, u32, u64 (§2.2.1)
    span: Span


@node
class FloatLit(Expr):
    value: float
    dtype: str  # f32 or f64; ``inf`` is FloatLit(inf, "f32")
    span: Span


@node
class BoolLit(Expr):
    value: bool
    span: Span


@node
class StringLit(Expr):
    value: str
    span: Span


@node
class Name(Expr):
    id: str
    span: Span
    sym = None  # Symbol, set by the checker


@node
class Wildcard(Expr):
    """``_``: a whole dimension in chunkat/subspan arguments (§2.1.2)."""
    span: Span


@node
class Unary(Expr):
    op: str  # "-", "!", "~", "++", "--" (prefix)
    operand: Expr
    span: Span


@node
class Postfix(Expr):
    op: str  # "++" or "--"
    operand: Expr
    span: Span


@node
class Binary(Expr):
    op: str  # + - * / % << >> & ^ | == != < <= > >= && || # #+ #- #* #/ #%
    lhs: Expr
    rhs: Expr
    span: Span


@node
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr
    span: Span


@node
class DeviceCall(Expr):
    """``call f<targs>(args)``: a call of a ``__co_device__`` function (LANGUAGE.md §6.10).
    ``func`` is the name as written, namespaces included (``lib::f``)."""
    func: str
    targs: list[Expr]
    args: list[Expr]
    span: Span
    func_span: Span
    callee = None  # set by the checker: the called ``Function`` or ``cxx.CxxFunction``


@node
class Extent(Expr):
    """``#x``: the bound of a bounded name (§5.2)."""
    name: Name
    span: Span


@node
class ElemCount(Expr):
    """``|a.span|``: element count (§4.4)."""
    operand: Expr
    span: Span


@node
class SpanOf(Expr):
    """``a.span`` (dim None) or ``a.span(i)`` (§4.4)."""
    base: Expr
    dim: Expr | None
    span: Span


@node
class DataOf(Expr):
    """``f.data``: the destination of a future (§9.4.5)."""
    base: Expr
    span: Span


@node
class Call(Expr):
    """``cdiv(a, b)``, ``__min``, ``__max``, an ituple element ``t(i)``, ``x(-n)`` (§4.4);
    ``e(i)`` on an expression other than a name is an ``Element``."""
    func: str
    args: list[Expr]
    span: Span
    func_span: Span | None = None


@node
class Element(Expr):
    """``e(i)`` on any postfix expression ``e`` but a name (``t(i)`` is a ``Call``): element
    ``i`` of an ituple or bounded ituple, or ``x(-n)`` of a bounded int (§4.1 level 15,
    §4.4), as in ``idx(1)(-1)``. ``args`` are as written; the checker wants one."""
    base: Expr
    args: list[Expr]
    span: Span


@node
class Convert(Expr):
    """``__to<T>(e)``."""
    dtype: str
    operand: Expr
    span: Span


@node
class ITupleLit(Expr):
    elems: list[Expr]
    span: Span


@node
class MdspanLit(Expr):
    elems: list[Expr]
    span: Span


@node
class Index(Expr):
    """``buf[i]`` (buffer array, §8.5) or ``ev[i]`` (event slot, §10)."""
    base: Expr
    index: Expr
    span: Span


@node
class EventAt(Expr):
    """``e.at(order)`` in ``trigger`` and ``wait`` (§10.6): the cyclic generation ``order``
    of the one-dimensional event array ``e``."""
    base: Expr
    order: Expr
    span: Span


@node
class ElemAccess(Expr):
    """``b.at(i, ...)``: element access, an lvalue (§8.6)."""
    base: Expr
    indices: list[Expr]
    span: Span


@node
class ChunkAt(Expr):
    """``v.chunkat(a, ...)`` (§8.2); arguments may be ``Wildcard``."""
    base: Expr
    args: list[Expr]
    span: Span


@node
class Subspan(Expr):
    """``v.subspan(s...)[.step(t...)][.at(i...)]`` (§8.3.1); sizes may be ``Wildcard``."""
    base: Expr
    sizes: list[Expr]
    steps: list[Expr] | None
    at: list[Expr] | None
    span: Span


@node
class ViewFrom(Expr):
    """``v.view(s... [: t...]).from(f...)`` (§8.3.2); ``strides`` the ``t`` as written."""
    base: Expr
    sizes: list[Expr]
    origin: list[Expr]
    span: Span
    strides: list[Expr] | None = None


@node
class SpanAs(Expr):
    """``v.span_as([s...])`` or ``v.span_as(s...)``: the elements of the contiguous ``v``
    in row-major order under the shape ``s`` (§8.3.3)."""
    base: Expr
    sizes: list[Expr]
    span: Span


@node
class Squeeze(Expr):
    """``v.sqz()``: ``v`` without its dimensions of extent 1 (§8.3.4)."""
    base: Expr
    span: Span


# --------------------------------------------------------------------------- types in source


@node
class TypeRef(Node):
    """A written type: ``int``, ``bool``, an element type, ``void``, ``auto``, ``stream``,
    ``ituple``, ``mdspan`` (``name`` is the spelling as written; ``rank`` the N of
    ``mdspan<N>`` and ``ituple<N>``)."""
    name: str
    span: Span
    rank: int | None = None


@node
class Dim(Node):
    """One dimension of a parameter shape: an expression or ``?`` (expr None)."""
    expr: Expr | None
    span: Span


@node
class Param(Node):
    storage: str | None      # "global" or None (also for written shared/local: checker rejects)
    type: TypeRef
    shape: list[Dim] | None  # None for scalar and stream parameters
    name: str | None
    span: Span
    by_ref: bool = False     # ``T [dims] &name``: the caller's array is updated (§14.3.3)
    sym = None


# --------------------------------------------------------------------------- statements


class Stmt(Node):
    __slots__ = ()


@node
class Block(Stmt):
    stmts: list[Stmt]
    span: Span


@node
class Empty(Stmt):
    span: Span


@node
class BufferItem(Node):
    name: str
    array: list[Expr]      # ``name[N][M]``: buffer-array dimensions, else []
    init: Expr | None      # ``{v}``
    span: Span
    sym = None


@node
class BufferDecl(Stmt):
    storage: str | None    # "global", "shared", "local" or None
    dtype: TypeRef
    shape: list[Expr]      # items; an mdspan item is spliced by the checker
    items: list[BufferItem]
    span: Span
    frag: bool = False     # written ``frag T[shape] f;``: a lane's register fragment
    hoisted = False        # set by lowering: a global buffer made before its kernel


@node
class ScalarItem(Node):
    name: str
    init: Expr | None
    span: Span
    sym = None


@node
class ScalarDecl(Stmt):
    """``[mutable] (int|bool|T|ituple|mdspan) x = e, ...;`` or ``mutable x = e;``."""
    mutable: bool
    type: TypeRef | None   # None: inferred (``mutable x = e``)
    items: list[ScalarItem]
    span: Span


@node
class EventItem(Node):
    name: str
    array: list[Expr]
    ready: bool            # ``e[2] = ready``: every slot starts with one completed generation
    span: Span
    sym = None


@node
class EventDecl(Stmt):
    """``shared event e[2], f = ready;`` / ``shared event<128> e;`` (§10.1); ``= ready``
    belongs to the declarator it follows (here ``f``), as in the reference grammar."""
    storage: str | None
    count: Expr | None     # ``event<N>``
    items: list[EventItem]
    span: Span


@node
class Assign(Stmt):
    """``x = e`` (may declare, D13), ``x op= e``, ``b.at(...) op= e`` (§6.6)."""
    target: Expr           # Name or ElemAccess
    op: str                # "=", "+=", "-=", "*=", "/=", "%="
    value: Expr
    span: Span
    declares = False       # set by the checker when ``x = e`` declares x (D13)
    sym = None             # the declared symbol in that case
    alias = False          # set by the checker: ``c = select(...)`` names an operand (D28)
    frag_update = False    # set by the checker: ``acc op= v`` on a fragment (§11.7)


@node
class IncDec(Stmt):
    """``++x`` / ``x++`` / ``--x`` / ``x--`` as a statement."""
    op: str
    target: Name
    prefix: bool
    span: Span


@node
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
    cooperative = False      # written ``: block<cooperative>`` (any level parses)


@node
class Attribute(Node):
    """``[[name(args)]]`` before a statement (§6.2.5, §11.6)."""
    name: str
    args: list[Expr]
    span: Span


@node
class Parallel(Stmt):
    is_async: bool
    stream: str | None
    levels: list[PLevel]
    body: Stmt
    span: Span
    attrs: list[Attribute] = field(default_factory=list)  # ``[[launch_bounds(...)]]`` etc.
    kinds = None             # normalised levels, one per PLevel
    launch_bounds = None     # set by the checker: the values of ``[[launch_bounds]]``
    maxnreg = None           # set by the checker: the value of ``[[maxnreg]]``
    is_kernel = False
    stream_param = -1        # the parameter index of ``stream``, once checked
    cooperative = False      # a kernel whose block level is ``block<cooperative>``
    named_counts = ()        # a kernel's named barriers with a constant count: (stmt, count)


@node
class DeviceRegion(Stmt):
    """``parallel[.async] by 1 : device(cpu|gpu) { ... }``: the part of a heterogeneous
    program one device runs (§14.2.1)."""
    is_async: bool
    device: str
    level: PLevel
    body: Stmt
    span: Span


@node
class Within(Node):
    """``t in B`` / ``{a, b} in B`` / ``t = {a, b} in B`` (§6.1 within). ``braced``: the
    names were written in braces."""
    names: list[str]
    tuple_name: str | None
    bound: list[Expr]
    bound_is_list: bool
    span: Span
    braced: bool = True
    syms = None


@node
class With(Stmt):
    withins: list[Within]
    body: Stmt
    span: Span


@node
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


@node
class Foreach(Stmt):
    """Either ``withins`` (``foreach i in [8]``) or ``ranges`` (``foreach kt(1:)``).
    ``unroll``: the factor of ``: unroll(k)``, 0 for ``: unroll``, None without a hint."""
    withins: list[Within]
    ranges: list[Range]
    body: Stmt
    span: Span
    unroll: int | None = None


@node
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None
    span: Span


@node
class While(Stmt):
    cond: Expr
    body: Stmt
    span: Span


@node
class Inthreads(Stmt):
    is_async: bool
    cond: Expr
    body: Stmt
    span: Span


@node
class Wait(Stmt):
    refs: list[Expr]   # Name, Index or EventAt (futures, event slots, cyclic generations)
    span: Span


@node
class Trigger(Stmt):
    refs: list[Expr]
    span: Span
    after: list[Expr] = field(default_factory=list)   # ``trigger e after f0, f1`` (§10.7)
    cluster: bool = False     # ``trigger.cluster e``: in every block of the cluster (§10.8)


@node
class Swap(Stmt):
    """``swap(a, b)`` and ``rotate(f0, ...)`` (§9.6)."""
    rotate: bool
    names: list[Name]
    span: Span


@node
class Sync(Stmt):
    kind: str            # "shared", "barrier", "fence", "global"
    level: str | None    # for barrier/fence
    span: Span
    grid = False         # ``sync.barrier : block`` in a cooperative kernel: all its blocks


@node
class NamedBarrier(Stmt):
    """``__bar_sync(id, count)`` and ``__bar_arrive(id, count)`` (§6.8); the checker
    wants exactly those two arguments."""
    arrive: bool
    args: list[Expr]
    span: Span


@node
class Break(Stmt):
    span: Span


@node
class Continue(Stmt):
    span: Span


@node
class Yield(Stmt):
    span: Span


@node
class Return(Stmt):
    value: Expr | None
    span: Span


@node
class Print(Stmt):
    newline: bool
    args: list[Expr]
    span: Span


@node
class CallStmt(Stmt):
    """``call f(args);``: a call whose result, if any, is dropped (§6.10)."""
    call: DeviceCall
    span: Span


@node
class AsmOperand(Node):
    """``[name] "constraint" (expr)`` of inline assembly (§6.11)."""
    name: str | None
    constraint: str
    expr: Expr
    span: Span


@node
class Asm(Stmt):
    """``__asm__ [volatile] ("text" : outputs : inputs : clobbers);`` (§6.11)."""
    volatile: bool
    template: str
    outputs: list[AsmOperand]
    inputs: list[AsmOperand]
    clobbers: list[str]
    span: Span


@node
class Assert(Stmt):
    cond: Expr
    message: str
    span: Span


@node
class BuiltinStmt(Stmt):
    """A builtin call whose value is discarded: ``__atomic_add(b.at(i), 1);`` (§4.5)."""
    call: Call
    span: Span


@node
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
    multicast: bool = False       # ``.multicast``: into every block of the cluster (§9.7)
    declares = False              # set by the checker when ``target`` is new
    tma_transfer = False          # set by the checker: a TMA copy between global and shared
    tma_unit = 0                  # set by the checker: lanes per copy-issuing instance, 0: block
    fits_smaller = False          # set by the checker: a smaller SRC writes part of DST (§9.2)
    sym = None


@node
class DmaAny(Stmt):
    """``f = dma.any;`` or ``f = tma.any;`` (§9.4.2)."""
    target: Name
    span: Span
    tma: bool = False
    declares = False
    sym = None


@node
class MmaFill(Stmt):
    """``mc = mma.fill[.T] v;`` (target new or existing) / ``mma.fill mc, v;`` /
    ``frag[.T] mc[d0][d1] {v};`` (a new accumulator, or an array of them, §11.7)."""
    target: Name
    dtype: str | None
    value: Expr
    assign_form: bool             # True for ``mc = mma.fill v`` and the ``frag`` form
    span: Span
    dims: list[Expr] = field(default_factory=list)   # the ``frag`` form's array extents
    elem: list[Expr] = field(default_factory=list)   # ``mma.fill mc[i][j], v``
    frag_form: bool = False       # ``frag[.T] mc ... {v};``: always a new declaration
    frag_fill = False             # set by the checker: fills every element of a lane's frag
    declares = False
    sym = None


@node
class MmaLoad(Stmt):
    """``ma = mma.load[.swiz<N>] VIEW;``."""
    target: Name
    view: Expr
    swizzle: int | None
    span: Span
    declares = False
    sym = None


@node
class MmaExec(Stmt):
    """``mma.row.col c, a, b;`` (§11.1); ``a``/``b`` fragments or views; ``f =
    mma.row.col.async c, a, b;`` makes the operation future ``f`` (§11.5), and a
    ``[[schedule(k_tiles(...))]]`` before it gives ``k_order`` (§11.6)."""
    layout: str                   # "row.row", "row.col", "col.row", "col.col"
    c: Name
    a: Expr
    b: Expr
    span: Span
    future: Name | None = None    # the target of the ``.async`` form
    k_order: list[int] | None = None
    k_order_span: Span | None = None
    c_elem: list[Expr] = field(default_factory=list)  # ``mc[i][j]``: an array element
    declares = False              # set by the checker when ``future`` is new
    sym = None                    # the future's symbol
    k_tile = 0                    # set by the checker: the K extent of one scheduled tile
    scale: list[Expr] = field(default_factory=list)   # ``.scale``: row scales, factor (§11.8)
    into_partial = False          # set by the checker: a plain MMA an ``mma.scale`` scales
    c_frag = False                # set by the checker: ``c`` is a frag accumulator (§11.7)
    sparse_meta: Expr | None = None   # ``.sp``: the 2:4 metadata of the packed A (§11.9)


@node
class MmaStore(Stmt):
    transp: bool
    frag: Name
    view: Expr
    span: Span
    guards: list[Expr] = field(default_factory=list)  # ``mma.store.mask``: rows[, columns]
    elem: list[Expr] = field(default_factory=list)    # ``mma.store mc[i][j], V``


@node
class MmaCommit(Stmt):
    span: Span


@node
class MmaScale(Stmt):
    """``mma.scale c, rows, factor;`` (§11.8): the plain MMAs on ``c`` before it in its
    block, scaled per row by ``rows`` and by ``factor``, are added to ``c``."""
    frag: Name
    rows: Expr
    factor: Expr
    span: Span


@node
class Apply(Stmt):
    """``apply {i, j} in x.span body``: ``body`` for every element of ``x`` the lane holds
    (§11.7). The checker sets ``frag`` to the accumulator symbol when ``x`` is one."""
    within: Within
    body: Stmt
    span: Span
    frag = None
    loop = None     # the equivalent ``foreach`` (set by the checker)


@node
class FragOp(Stmt):
    """``copy(dst, src)``, ``reduce_sum|max|min(dst, src, axis)`` and
    ``all_reduce_sum|max|min(x)`` (§11.7)."""
    op: str
    args: list[Expr]
    span: Span
    acc = None      # set by the checker (§11.7): the accumulator whose rows are reduced
    dst_map = None  # reduce_*: (position of the row index, rank) of dst


# --------------------------------------------------------------------------- top level


@node
class Function(Node):
    ret: TypeRef                  # ``void``, ``auto`` or a type
    ret_shape: list[Expr] | None  # ``s32 [4, 8] f(...)``: a written return buffer shape
    name: str
    params: list[Param]
    body: Block
    span: Span                    # the whole function
    name_span: Span | None = None
    device: bool = False          # ``__co_device__``: inlined where it is called (§6.10)
    sym_table = None              # set by the checker: every Symbol declared in it


@node
class Program(Node):
    functions: list[Function]
    span: Span | None = None
    cxx: list = field(default_factory=list)   # C++ device functions (lang.cxx, §6.10.4)
