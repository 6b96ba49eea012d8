"""Which warp of a block runs next (LANGUAGE.md §7.1.2).

``RoundRobin`` (the default, "rr") runs the lowest-numbered runnable warp until it blocks
or finishes, and after any release (a collective completing, an event generation
completing) starts again from the lowest runnable warp; async copies land at issue.
``Random`` ("random") picks a runnable warp uniformly at random for every instruction
from a generator seeded by the call's ``seed``, and lands each pending async copy at a
random step before its wait. Both are deterministic for a given seed.
"""
from __future__ import annotations

import random


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
    LAND_CHANCE = 0.25       # per step, for each async copy still in flight

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def pick(self, blk):
        for t in list(blk.transfers):
            if t.move is None or self.rng.random() < self.LAND_CHANCE:
                t.land()
                blk.transfers.remove(t)
        ready = [w for w in blk.warps if w.runnable()]
        return self.rng.choice(ready) if ready else None


SCHEDULERS = {"rr": lambda seed: RoundRobin(), "random": Random}


def make_scheduler(name: str, seed: int):
    """The scheduler called ``name`` (one of croqvm.program.SCHEDULES)."""
    return SCHEDULERS[name](seed)
