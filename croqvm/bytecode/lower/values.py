"""What a lowered name or expression stands for, and the symbol environments.

A scalar lives in one register; a bounded int (§5) in a value register plus a register
holding its bound ``#x``; ituples and mdspans are lists of element values. Buffers,
futures, events and fragments are slots in the side tables of the current ``Code``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from croqvm.core import dtypes


@dataclass
class Val:
    """A value: ``reg`` of ``dtype``; ``bound`` >= 0 for bounded ints; ``elems`` for tuples."""
    dtype: dtypes.DType | None
    reg: int = -1
    bound: int = -1
    elems: list["Val"] | None = None

    @property
    def is_tuple(self) -> bool:
        return self.elems is not None


@dataclass
class BufRef:
    """A buffer slot (possibly an array of buffers, §8.5)."""
    slot: int
    dtype: dtypes.DType
    storage: str
    rank: int
    array: list[int] = field(default_factory=list)
    name: str = ""


@dataclass
class FutRef:
    slot: int
    name: str = ""


@dataclass
class ViewAlias:
    """A named view (§8.3.5): the view chain it stands for, lowered again at each use, in
    the environment of that use (the checker allows no value in it that can change)."""
    expr: object


@dataclass
class EventRef:
    index: int
    array: list[int]
    name: str = ""


@dataclass
class FragRef:
    """A fragment symbol: its FragDecl index per role it plays (an operand used both as
    A and as B has two, lowering/mma.py)."""
    indices: dict
    dtype: dtypes.DType | None
    unit: int

    @property
    def acc(self) -> int:
        return next(iter(self.indices.values()))


class Env:
    """Symbol -> value. A kernel's environment imports host values on first use through
    ``importer`` (which gives the kernel its own argument register or buffer slot)."""

    def __init__(self, parent: "Env | None" = None, importer=None):
        self.parent = parent
        self.importer = importer
        self.vals: dict = {}

    def bind(self, sym, value) -> None:
        self.vals[sym] = value

    def get(self, sym):
        v = self.vals.get(sym)
        if v is not None or self.parent is None:
            return v
        v = self.parent.get(sym)
        if v is not None and self.importer is not None:
            v = self.importer(sym, v)
            self.vals[sym] = v
        return v
