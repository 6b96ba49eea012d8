"""The block view: what an engine exports about a block whose warps can no longer run, so
that one report (croqvm.reports.render.deadlock) explains any engine's deadlock or partial
collective in the same words (LANGUAGE.md §7.4.3, §10.5; docs/EXECUTION.md §18).

An engine that finds no runnable warp while some warp is blocked exports a ``BlockView``.
Every lane set is a tuple of block lanes in increasing order. Nothing in it is Python
engine state; a C engine fills the same records from its own.
"""
from __future__ import annotations

from ..core.records import dataclass

READY, BLOCKED, DONE = "ready", "blocked", "done"


@dataclass(frozen=True)
class FrameView:
    """An open IF or LOOP of a warp: the instruction that opened it and the lanes that
    entered it and have not left it (nor terminated)."""
    opener: int
    entered: tuple


@dataclass(frozen=True)
class RendezvousView:
    """One dynamic instance of a collective that some of a blocked warp's lanes wait at:
    the collective's instruction ``ip`` and site (``Code.colls``), the instance of the
    site's unit (``lane // unit``; 0 for the block), the live lanes that arrived, the live
    lanes it waits for (the unit's lanes in the site's lane set, not terminated), and
    whether it needs its whole unit (an MMA operation, §11.2)."""
    ip: int
    site: int
    unit_index: int
    arrived: tuple
    members: tuple
    whole_unit: bool


@dataclass(frozen=True)
class EventWaitView:
    """A warp blocked at ``WAIT_EVENT`` (instruction ``ip``) on event ``event``
    (``Code.events``): the first slot (in the order of the warp's active lanes) some lane
    still waits on, its completed generations and arrivals toward the next one, the
    arrivals a generation needs, and the generation those lanes wait for (the number of
    generations they have waited for already, or for a parity wait at ``WAIT_EVENT_AT``
    the generation its order names, §10.6)."""
    ip: int
    event: int
    slot: int
    completed: int
    arrivals: int
    need: int
    generation: int


@dataclass(frozen=True)
class NamedBarrierView:
    """A warp blocked at ``BAR_SYNC`` (instruction ``ip``) on named barrier ``barrier``:
    the threads arrived in its current phase and the count that phase began with."""
    ip: int
    barrier: int
    arrived: int
    need: int


@dataclass(frozen=True)
class GridWaitView:
    """A warp blocked at ``GRID_SYNC`` (instruction ``ip``), waiting for the other blocks
    of its cooperative launch."""
    ip: int


@dataclass(frozen=True)
class WarpView:
    """One warp: its state (READY, BLOCKED, DONE), the instruction it is at, its active
    and live (not terminated) lanes, its open frames (outermost first), and for a blocked
    warp what it waits for: the rendezvous its lanes wait at (those not complete, in the
    order its lanes joined them), or one event wait or named-barrier wait."""
    index: int
    state: str
    ip: int
    active: tuple
    live: tuple
    frames: tuple = ()
    waits: tuple = ()


@dataclass(frozen=True)
class BlockView:
    """A block of launch ``launch`` (index into the host program's launches) at block
    index ``block``, and its warps in order."""
    launch: int
    block: tuple
    warps: tuple
