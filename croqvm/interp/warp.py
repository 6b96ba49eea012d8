"""Warp state (ARCHITECTURE.md "The machine model", LANGUAGE.md §7.1, §7.3).

Conventions: ``w`` a warp, ``blk`` its block, ``pc`` the index of the next instruction,
``ip`` the index of the instruction being executed, ``act`` the active mask (one bool per
lane of the warp), ``live`` the not-terminated mask (a view into the block's), a "lane
index" ``i`` is a position in the warp's arrays and ``w.base + i`` its block lane.

Registers are numpy arrays of one element per lane in the register's storage dtype; a
write touches active lanes only. Divergence state (the control stack) belongs to the warp
alone. The active mask changes only through ``set_active``, which also keeps its lane
count ``nact``: most instructions run with the whole warp active, and that test, like the
lane-instruction count, is then one comparison instead of a scan of the mask.
"""
from __future__ import annotations

from dataclasses import field

import numpy as np

from ..core.records import dataclass
from ..reports.blockview import BLOCKED, DONE, READY


@dataclass
class Frame:
    """One open IF or LOOP (docs/EXECUTION.md §4). ``entered``: the lanes that entered
    (those that left an enclosing loop or terminated are removed as it happens);
    ``other``: the IF's lanes set aside for the ELSE; ``out``: the LOOP's lanes that
    broke; ``jump``: where the warp goes when no lane is active (the ELSE or END)."""
    kind: str                 # "if" or "loop"
    opener: int
    entered: np.ndarray
    jump: int
    other: np.ndarray | None = None
    out: np.ndarray | None = None


@dataclass
class Warp:
    blk: object
    index: int
    base: int
    width: int
    regs: list
    live: np.ndarray
    act: np.ndarray = None    # set through set_active only
    stack: list = field(default_factory=list)
    pc: int = 0
    ip: int = 0
    state: str = READY
    blocker: object = None
    counts: dict = field(default_factory=dict)    # ip -> per-lane executions (§7.4.3)
    hold: int = -1        # run on without preemption until past this index (ONCE, §7.2.2)

    def __post_init__(self):
        self.lanes = np.arange(self.base, self.base + self.width)
        self.every = np.arange(self.width)           # the lane indices of a full warp
        self.set_active(self.live.copy() if self.act is None else self.act)

    def set_active(self, mask: np.ndarray) -> int:
        """Make ``mask`` the active mask and return how many lanes are active. A mask is
        never changed in place once set, so control frames may keep it (croqvm.interp.control)."""
        self.act = mask
        self.nact = int(np.count_nonzero(mask))
        self._indices = self.every if self.nact == self.width else None
        return self.nact

    @property
    def full(self) -> bool:
        """Whether every lane of the warp is active."""
        return self.nact == self.width

    def write(self, r: int, values) -> None:
        """R[r] := values on the active lanes (values already in R[r]'s storage dtype)."""
        if self.nact == self.width:
            self.regs[r][...] = values
        else:
            np.copyto(self.regs[r], values, where=self.act, casting="unsafe")

    def active_indices(self) -> np.ndarray:
        """The active lane indices in increasing order (do not modify the array)."""
        if self._indices is None:
            self._indices = np.flatnonzero(self.act)
        return self._indices

    def block_on(self, blocker) -> None:
        self.state = BLOCKED
        self.blocker = blocker

    def runnable(self) -> bool:
        """Ready, or blocked on something that has now happened (then it wakes, which
        completes the blocking instruction, and is done if that was its last)."""
        if self.state == BLOCKED and self.blocker.ready():
            self.blocker.wake()
            self.state, self.blocker = READY, None
            if self.pc >= len(self.blk.prog.ins):
                self.finish()
        return self.state == READY

    def finish(self) -> None:
        self.state = DONE
        self.set_active(np.zeros(self.width, bool))


def new_warp(blk, prog, index: int, base: int, width: int, live: np.ndarray) -> Warp:
    regs = [np.zeros(width, t.np) for t in prog.rtypes]
    return Warp(blk, index, base, width, regs, live)
