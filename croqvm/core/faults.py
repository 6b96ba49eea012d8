"""Runtime errors as structured records (LANGUAGE.md §15.3; docs/EXECUTION.md §14).

``Kind`` names every kind of runtime error (its message template is in
``croqvm.reports.messages``). Inside an engine a handler reports a runtime error by raising one of
two exceptions, each holding a kind and its operands (never text):

- ``LaneFault`` comes from per-lane array code (croqvm.core.numerics, memory access): its
  ``index`` is the lane's position in the arrays the warp computed on;
- ``Fault`` names a lane of the block directly; collectives use it, since the faulting
  lane may belong to another warp than the one completing the rendezvous.

The engine's step loop is the one place that turns either into a ``FaultRecord`` with
instruction, span, launch, block and lane (Lua's pc discipline, STYLE.md §1). A record is
what every engine produces; ``croqvm.interp.diagnose`` renders it with the catalogue of
``croqvm.reports.messages``, so the text is the same whichever engine ran.
"""
from __future__ import annotations

from enum import IntEnum

from .limits import WARP_SIZE
from .records import dataclass


class Kind(IntEnum):
    """The kinds of runtime error. The numbers are stable: a C engine returns them."""
    STEP_LIMIT = 1
    GRID_BOUND = 2
    TOO_MANY_THREADS = 3
    BLOCK_SIZE = 4
    FLOAT_TO_INT = 5
    DIVISION_BY_ZERO = 6
    SHIFT_COUNT = 7
    ALLOC_EXTENT = 8
    ALLOC_BUFFER = 9
    ALLOC_TILE = 10
    ALLOC_FRAGMENT = 11
    BUFFER_ARRAY_INDEX = 12
    BUFFER_BEFORE_DECLARATION = 13
    OUT_OF_RANGE = 14
    UNINITIALISED = 15
    FUTURE_NO_DATA = 16
    FUTURE_NOT_WAITED = 17
    FUTURE_WAITED_TWICE = 18
    NEVER_WAITED = 19
    EMPTY_TILE = 20
    TILE_OUTSIDE = 21
    DMA_SHAPE = 22
    # 23: a larger tile than a .zfill destination, which is now cut to it (D29)
    EVENT_INDEX = 24
    NOT_A_PARTICIPANT = 25
    DIVERGENT_COLLECTIVE = 26
    UNIT_INACTIVE = 27
    UNIT_TERMINATED = 28
    OPERANDS_DIFFER = 29
    MMA_READ_OUTSIDE = 30
    MMA_UNINITIALISED = 31
    FRAGMENT_EMPTY = 32
    MMA_SHAPES = 33
    MMA_TILE_SHAPE = 34
    MMA_STORE_OWNERS = 35
    ASSERT = 36
    ASSERT_FMT = 37
    GRID_LIMIT = 38
    SHARED_LIMIT = 39
    UNINITIALISED_REGISTER = 40
    MMA_PENDING = 41
    MMA_NOT_PENDING = 42
    FRAGMENT_INDEX = 43
    FRAGMENT_NOT_OWNED = 44
    SHUFFLE_INACTIVE = 45
    ASM_ON_CPU = 46
    BAR_ID = 47
    BAR_COUNT = 48
    BAR_COUNT_DIFFERS = 49
    GRID_FINISHED = 50
    GRID_RESIDENT = 51
    EXTERN_CALL = 52
    FUTURE_NOT_CONTIGUOUS = 53


class LaneFault(Exception):
    """A runtime error of the lane at array index ``index`` of the executing warp."""

    def __init__(self, kind: Kind, operands: tuple, index: int):
        super().__init__(kind.name)
        self.kind, self.operands, self.index = kind, tuple(operands), index

    def at(self, index: int) -> LaneFault:
        """The same error, of the lane at array index ``index`` of another array."""
        return LaneFault(self.kind, self.operands, index)


class Fault(Exception):
    """A runtime error of block lane ``lane`` (None: no lane is at fault), at the
    executing instruction unless ``span`` (a span index) says otherwise."""

    def __init__(self, kind: Kind, operands: tuple = (), lane: int | None = None, *,
                 span: int | None = None):
        super().__init__(kind.name)
        self.kind, self.operands, self.lane, self.span = kind, tuple(operands), lane, span


@dataclass(frozen=True)
class FaultRecord:
    """A runtime error as an engine reports it.

    ``launch`` is the index of the host program's launch (``Code.launches``) whose kernel
    faulted, -1 for the host program; ``block`` the block index (``()`` for the host
    program); ``lane`` the block lane at fault, None when no single lane is; ``ip`` the
    faulting instruction of that code, -1 when the error belongs to no instruction (a
    kernel ending with an unwaited copy); ``span`` the span the message points at."""
    kind: Kind
    operands: tuple
    launch: int
    block: tuple
    lane: int | None
    ip: int
    span: int

    @property
    def warp(self) -> int | None:
        return None if self.lane is None else self.lane // WARP_SIZE
