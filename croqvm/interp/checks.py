"""Run-time checks beyond the engine's own: ``check="race"`` (croqvm.interp.race) and
``check="init"`` (croqvm.interp.initcheck); docs/EXECUTION.md §20.

A checker observes the run through a few hook points and never changes what it computes.
With no check the engine calls none of them: ``Call.checker`` is None, the step table is
the engine's own, and each hook site is one ``is None`` test on a path that is not per
element (a rendezvous, a DMA, a wait, a tile). The hooks:

- ``instrument(prog, steps)``: the step table to run ``prog`` with; a checker wraps the
  handlers of the instructions it follows (element accesses, triggers, waits, ONCE,
  launches, register reads), so that no other instruction pays for it;
- ``collective(rec, lanes)`` before a rendezvous's effect, ``collective_done`` after it;
- ``dma_issue(blk, desc, plan, lanes, handle)`` when a DMA is issued (its ``Plan``; the
  future's handle or None), ``dma_wait(blk, handle, lane)`` when a lane waits a transfer;
- ``tile(blk, buf, origin, extents, kind, lane, text)`` for the tiles an MMA operation or
  a fill reads or writes;
- ``finish(fault)`` when the function returns (``fault`` None) or stops with the
  KernelFault ``fault``: the KernelFault to raise instead, or None.
"""
from __future__ import annotations


class Access:
    """What an access does: an element access, a copy's source or destination, the tile
    of an mma.load or mma.store, or a buffer's initializer."""
    READ, WRITE, UPDATE = "read", "write", "update"
    COPY_READ, COPY_WRITE = "copy read", "copy write"
    TILE_READ, TILE_WRITE = "tile read", "tile write"
    FILL = "fill"
    ATOMIC = "atomic"

    WRITES = frozenset({WRITE, UPDATE, COPY_WRITE, TILE_WRITE, FILL, ATOMIC})


class Checker:
    """A check that observes nothing: the hooks every checker may override."""

    def instrument(self, prog, steps: list) -> list:
        return steps

    def collective(self, rec, lanes) -> None:
        pass

    def collective_done(self, rec, lanes) -> None:
        pass

    def dma_issue(self, blk, desc, plan, lanes, handle) -> None:
        pass

    def dma_wait(self, blk, handle, lane: int) -> None:
        pass

    def dma_bind(self, blk, handle, lane: int) -> None:
        """Lane ``lane`` bound ``handle``'s transfer to the trigger that follows (§10.7)."""

    def tile(self, blk, buf, origin, extents, kind: str, lane: int, text: str = "",
             swizzle: int = 0) -> None:
        pass

    def mma_async(self, blk, m: int, lane: int, text: str) -> None:
        pass

    def mma_wait(self, blk, m: int, lane: int) -> None:
        pass

    def finish(self, fault=None):
        return None


def make_checker(check: str | None, call):
    """The checker of ``check`` (None, "race" or "init") for ``call``, or None."""
    if check is None:
        return None
    if check == "race":
        from .race import RaceChecker
        return RaceChecker(call)
    from .initcheck import InitChecker
    return InitChecker(call)
