"""Static types and symbols: what the checker attaches to the AST (LANGUAGE.md §3.1, §5).

Shapes are tuples of ``Dim`` values: a dimension is an ``int`` when known at compile time,
else a ``str`` naming a symbolic dimension (``"M"``), else ``None`` (computed at run time).
``str(t)`` gives the spelling diagnostics use (``s32 [4, 8]``, ``ituple<2>``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from croqvm.core.dtypes import S32, DType

Dim = Union[int, str, None]


def shape_str(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


_SCALARS: dict = {}
_BOUNDED: dict = {}
_BOUNDED_KEPT = 1024    # bounds a process keeps a shared Bounded for


class Type:
    __slots__ = ()   # and slots in each type: the checker gives every expression one


@dataclass(frozen=True, slots=True)
class Scalar(Type):
    """A number or bool. ``int`` is Scalar(s32); ``control`` marks ``int``/``bool`` (immutable
    unless mutable) as opposed to element-type scalars (§3.4.2)."""
    dtype: DType
    control: bool = False

    def __new__(cls, dtype=None, control=False):
        # A value: the checker gives every expression a type, so equal scalars share one
        # object (a program of megabytes makes them by the hundred thousand). Without
        # arguments (unpickling), a fresh one.
        if cls is not Scalar or dtype is None:
            return object.__new__(cls)
        key = (id(dtype), control)     # the cached Scalar keeps ``dtype`` alive
        known = _SCALARS.get(key)
        if known is None:
            known = _SCALARS[key] = object.__new__(cls)
        return known

    def __str__(self):
        return "int" if self.control and self.dtype.name == "s32" else self.dtype.name


@dataclass(frozen=True, slots=True)
class Bounded(Type):
    """A bounded int (§5): value s32 plus bound ``#x``. ``bound`` is an int when static."""
    bound: Dim = None

    def __new__(cls, *args, **kwargs):
        # A value, shared as ``Scalar``'s are, for the bounds programs repeat most.
        # Without arguments (unpickling), a fresh one.
        if cls is not Bounded or not (args or kwargs):
            return object.__new__(cls)
        bound = args[0] if args else kwargs["bound"]
        key = (type(bound), bound)
        known = _BOUNDED.get(key)
        if known is None:
            known = object.__new__(cls)
            if len(_BOUNDED) < _BOUNDED_KEPT:
                _BOUNDED[key] = known
        return known

    def __str__(self):
        return f"int->[0,{'?' if self.bound is None else self.bound}]"


def value_dtype(ty) -> DType | None:
    """The dtype of a scalar value; a bounded int converts to its s32 value (§3.4.6)."""
    if isinstance(ty, Bounded):
        return S32
    if isinstance(ty, Scalar):
        return ty.dtype
    return None


@dataclass(frozen=True, slots=True)
class ITuple(Type):
    """``{a, b}``; ``bounded`` when every element is a bounded int (§5.1)."""
    rank: int
    bounded: bool = False

    def __str__(self):
        return f"ituple<{self.rank}>"


@dataclass(frozen=True, slots=True)
class Mdspan(Type):
    shape: tuple

    def __str__(self):
        return f"mdspan<{len(self.shape)}> {shape_str(self.shape)}"


@dataclass(frozen=True, slots=True)
class Buffer(Type):
    dtype: DType
    shape: tuple
    storage: str          # "global", "shared", "local"
    array: tuple = ()     # buffer-array dimensions (§8.5)

    @property
    def rank(self):
        return len(self.shape)

    def __str__(self):
        return f"{self.dtype.name} {shape_str(self.shape)}"


@dataclass(frozen=True, slots=True)
class View(Type):
    """A view chain (§8.1). ``shape`` is what the view shows; ``full`` its extents in the
    index space ``space`` of its root (the buffer's shape, or the shape of the last
    ``span_as``), and ``keep`` which dimensions of ``full`` it shows (None: all; ``sqz``
    hides some). ``space`` and ``full`` are None where not known."""
    dtype: DType
    shape: tuple
    storage: str
    space: tuple | None = None
    full: tuple | None = None
    keep: tuple | None = None

    @property
    def rank(self):
        return len(self.shape)

    def __str__(self):
        return f"{self.storage} {self.dtype.name} mdspan<{len(self.shape)}> {shape_str(self.shape)}"


@dataclass(frozen=True, slots=True)
class Future(Type):
    """The result of a DMA (§9.4). ``dtype``/``shape``/``storage`` describe its data; None
    while only ``dma.any`` has been assigned."""
    is_async: bool
    dtype: DType | None = None
    shape: tuple | None = None
    storage: str | None = None

    def __str__(self):
        if self.dtype is None:
            return "future"
        kind = "async future" if self.is_async else "future"
        return f"{kind} {self.storage} {self.dtype.name} {shape_str(self.shape)}"


@dataclass(frozen=True, slots=True)
class OpFuture(Type):
    """The operation future of an asynchronous MMA (§11.5): it names completion only; the
    result is the accumulator ``acc``."""
    acc: str

    def __str__(self):
        return "mma future"


@dataclass(frozen=True, slots=True)
class Event(Type):
    array: tuple = ()

    def __str__(self):
        return "event"


@dataclass(frozen=True, slots=True)
class Fragment(Type):
    """An MMA fragment (§11): an accumulator or an operand tile."""
    dtype: DType | None
    shape: tuple | None
    role: str             # "acc" or "operand"

    def __str__(self):
        return f"fragment {self.dtype.name if self.dtype else '?'}"


@dataclass(frozen=True, slots=True)
class String(Type):
    def __str__(self):
        return "string"


@dataclass(frozen=True, slots=True)
class Stream(Type):
    def __str__(self):
        return "stream"


@dataclass(slots=True)
class Symbol:
    """A declared name. One Symbol per declaration; ``Name.sym`` points at it.

    kind: "scalar", "bounded", "ituple", "mdspan", "buffer", "future", "event",
          "fragment", "param", "dim" (symbolic dimension), "stream".
    level: for parallel variables, the normalised level of their ``PLevel``; else None.
    parallel: the ``Parallel`` node whose body the symbol is declared in (None at host level).
    """
    name: str
    kind: str
    type: Type
    decl: object                   # the declaring AST node
    mutable: bool = False
    level: str | None = None
    parallel: object = None
    plevel: object = None          # the PLevel binding it (parallel variables)
    sub_index: int = 0             # position among the PLevel's names
    bound_expr: object = None      # Expr of the bound for bounded vars (with/foreach/parallel)
    param_index: int | None = None
    info: dict = field(default_factory=dict)   # stage-private extra facts

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other
