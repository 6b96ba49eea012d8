"""Runtime errors as structured records (LANGUAGE.md §15.3; docs/EXECUTION.md "Faults").

Inside an engine a handler reports a runtime error by raising one of two exceptions, each
holding a kind of ``croqvm.messages.Kind`` and its operands (never text):

- ``LaneFault`` comes from per-lane array code (croqvm.numerics, memory access): its
  ``index`` is the lane's position in the arrays the warp computed on;
- ``Fault`` names a lane of the block directly; collectives use it, since the faulting
  lane may belong to another warp than the one completing the rendezvous.

The engine's step loop is the one place that turns either into a ``FaultRecord`` with
instruction, span, launch, block and lane (Lua's pc discipline, STYLE.md §1). A record is
what every engine produces; ``croqvm.interp.diagnose`` renders it with the catalogue of
``croqvm.messages``, so the text is the same whichever engine ran.
"""
from __future__ import annotations

from dataclasses import dataclass

from .limits import WARP_SIZE
from .messages import Kind


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
