"""Which warp of a block runs next (LANGUAGE.md §7.1.2).

``RoundRobin`` (the default, "rr") runs the lowest-numbered runnable warp until it blocks
or finishes, and after any release (a collective completing, an event generation
completing) starts again from the lowest runnable warp; async copies land at issue.
``Random`` ("random") runs one instruction at a time and picks the warp at random, from
the project's SplitMix64 generator (croqvm.core.prng) seeded by the call's ``seed``, one stream
for the whole call; it lands each pending async copy at a random step before its wait.
Its decisions, exactly (docs/EXECUTION.md §16), before every warp-step that is
not inside a ONCE hold:

1. every async copy of the block not landed yet, in issue order: one draw
   ``below(4)``; 0 lands it now (copies a WAIT already landed are dropped, no draw);
2. the runnable warps, in increasing warp number (waking blocked warps whose blocker is
   satisfied): none is a deadlock (or the end of the block); one runs without a draw;
   ``n`` > 1 runs the ``below(n)``-th.
"""
from __future__ import annotations

from ..core.prng import SplitMix64


class RoundRobin:
    quantum = 0             # until the warp blocks, finishes, or releases others
    defers_copies = False

    def pick(self, blk):
        for w in blk.warps:
            if w.runnable():
                return w
        return None


class Random:
    quantum = 1
    defers_copies = True
    LAND_ONE_IN = 4          # per step, for each async copy still in flight

    def __init__(self, seed: int):
        self.rng = SplitMix64(seed)

    def pick(self, blk):
        pending = []
        for t in blk.transfers:
            if t.move is not None and self.rng.below(self.LAND_ONE_IN) != 0:
                pending.append(t)
            else:
                t.land()
        blk.transfers = pending
        ready = [w for w in blk.warps if w.runnable()]
        if len(ready) <= 1:
            return ready[0] if ready else None
        return ready[self.rng.below(len(ready))]


SCHEDULERS = {"rr": lambda seed: RoundRobin(), "random": Random}


def make_scheduler(name: str, seed: int):
    """The scheduler called ``name`` (one of croqvm.running.program.SCHEDULES)."""
    return SCHEDULERS[name](seed)
