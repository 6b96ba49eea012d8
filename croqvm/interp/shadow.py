"""Shadow memory for race checking (docs/EXECUTION.md §20): per buffer
instance, who last wrote each element and who read it since, with the epochs that order
them; checked and updated for a whole warp's access, or a whole tile, at once.

Conventions: an *epoch* is (segment, warp, clock): ``segment`` numbers the block (or
host stretch) that made the access, ``warp`` its warp in that block, ``clock`` that
warp's own entry of its vector clock then. An ``Actor`` is the current access's
segment, warp, vector clock (``vc``, ``MAX_WARPS`` entries) and the segments it runs
concurrently with (``concurrent``). A previous access (s, w, c) is ordered before the
actor's when it is of the same segment and ``c <= vc[w]``, or of an earlier segment that
is not concurrent. A *key* selects elements of a buffer: flat offsets (an element access,
one per lane) or a box (a tile). ``info`` identifies the access for reports: a site and
lane, or a collective's record (croqvm.interp.race).

Only ``global`` buffers, which outlive a block, keep segments; a shared buffer belongs to
one block. Clocks start at 1, so 0 means "never".
"""
from __future__ import annotations

import numpy as np

from ..core.limits import WARP_SIZE, MAX_BLOCK_SIZE

MAX_WARPS = MAX_BLOCK_SIZE // WARP_SIZE


class Actor:
    """Who is accessing: segment, warp, vector clock, concurrent segment ranges."""

    __slots__ = ("seq", "warp", "vc", "ranges")

    def __init__(self, seq: int, warp: int, vc: np.ndarray, ranges: list):
        self.seq, self.warp, self.vc, self.ranges = seq, warp, vc, ranges

    def concurrent(self, seqs: np.ndarray) -> np.ndarray:
        """Which of ``seqs`` (other segments) run concurrently with this one."""
        out = np.zeros(seqs.shape, bool)
        for lo, hi in self.ranges:
            out |= (seqs >= lo) & (seqs <= hi)
        return out


class Flat:
    """Elements by flat offset (an element access: one offset per lane)."""

    __slots__ = ("off",)

    def __init__(self, off: np.ndarray):
        self.off = off

    @property
    def size(self) -> int:
        return len(self.off)

    def get(self, arr, shape):
        return arr[self.off]

    def put(self, arr, shape, values):
        arr[self.off] = values

    def rows(self, arr, shape):
        return arr[:, self.off]

    def put_rows(self, arr, shape, row, values):
        arr[row, self.off] = values

    def coords(self, shape, pos: int) -> tuple:
        return tuple(int(x) for x in np.unravel_index(int(self.off[pos]), shape))

    def offsets(self, shape, pos: np.ndarray) -> np.ndarray:
        return self.off[pos]

    def inside(self, shape, lo, hi) -> np.ndarray:
        """Which selected elements lie in the box [lo, hi)."""
        idx = np.unravel_index(self.off, shape)
        out = np.ones(len(self.off), bool)
        for x, a, b in zip(idx, lo, hi):
            out &= (x >= a) & (x < b)
        return out


class Box:
    """The elements of a box [lo, hi) (a tile), in row-major order."""

    __slots__ = ("lo", "hi", "sl")

    def __init__(self, lo, hi):
        self.lo, self.hi = tuple(lo), tuple(hi)
        self.sl = tuple(slice(a, b) for a, b in zip(lo, hi))

    @property
    def size(self) -> int:
        n = 1
        for a, b in zip(self.lo, self.hi):
            n *= b - a
        return n

    def get(self, arr, shape):
        return arr.reshape(shape)[self.sl].reshape(-1)

    def put(self, arr, shape, values):
        arr.reshape(shape)[self.sl] = values

    def rows(self, arr, shape):
        return arr.reshape((arr.shape[0],) + shape)[(slice(None),) + self.sl] \
            .reshape(arr.shape[0], -1)

    def put_rows(self, arr, shape, row, values):
        arr[row].reshape(shape)[self.sl] = values

    def coords(self, shape, pos: int) -> tuple:
        ext = [b - a for a, b in zip(self.lo, self.hi)]
        return tuple(int(a + x) for a, x in zip(self.lo, np.unravel_index(pos, ext)))

    def offsets(self, shape, pos: np.ndarray) -> np.ndarray:
        ext = [b - a for a, b in zip(self.lo, self.hi)]
        idx = [a + x for a, x in zip(self.lo, np.unravel_index(pos, ext))]
        return np.ravel_multi_index(idx, shape)

    def inside(self, shape, lo, hi) -> np.ndarray:
        """Whether the whole box meets the box [lo, hi) (one answer for every element:
        a tile's overlap is reported at its first shared element)."""
        meet = all(a < d and c < b for a, b, c, d in zip(self.lo, self.hi, lo, hi))
        if not meet:
            return np.zeros(self.size, bool)
        ext = [b - a for a, b in zip(self.lo, self.hi)]
        grids = np.meshgrid(*[np.arange(a, b) for a, b in zip(self.lo, self.hi)],
                            indexing="ij")
        out = np.ones(ext, bool)
        for g, a, b in zip(grids, lo, hi):
            out &= (g >= a) & (g < b)
        return out.reshape(-1)


class Prior:
    """Earlier accesses that conflict with the current one: ``pos`` their positions in the
    current key's selection, and per position the earlier access's info, warp, clock and
    segment; ``write`` whether they are writes."""

    __slots__ = ("pos", "info", "warp", "clock", "seq", "write")

    def __init__(self, pos, info, warp, clock, seq, write):
        self.pos, self.info, self.warp, self.clock, self.seq, self.write = \
            pos, info, warp, clock, seq, write


class Shadow:
    """The race-checking state of one buffer instance of ``shape``; ``glob``: a global
    buffer (accesses carry segments). ``inflight`` lists the async copies that read or
    write it now (croqvm.interp.race.Copy, 'r' or 'w', the box)."""

    def __init__(self, shape, glob: bool):
        n = int(np.prod(shape, dtype=np.int64))
        self.shape, self.glob = tuple(int(d) for d in shape), glob
        self.w_clock = np.zeros(n, np.int64)
        self.w_warp = np.zeros(n, np.int64)
        self.w_info = np.zeros(n, np.int64)
        self.w_seq = np.full(n, -1, np.int64) if glob else None
        self.writes = False               # whether anything was written yet
        self.r_warps = np.zeros(0, np.int64)      # the warp of each row of reads
        self.row_of = np.full(MAX_WARPS, -1, np.int64)
        self.r_clock = np.zeros((0, n), np.int64)
        self.r_info = np.zeros((0, n), np.int64)
        self.r_seq = np.zeros((0, n), np.int64) if glob else None
        # global buffers: a read by another segment that a later read of the same warp
        # number replaced, kept while it may still be concurrent with a write
        self.f_clock = self.f_warp = self.f_info = self.f_seq = None
        self.inflight: list = []
        # the atomic accesses (§4.5), apart: kept as reads, one row per warp, so that
        # atomics never conflict with each other and every other access is checked
        # against each warp's last one
        self.atomics: Shadow | None = None

    # ------------------------------------------------------------------ checks

    def _ordered(self, seqs, warps, clocks, actor: Actor):
        ok = clocks <= actor.vc[warps]
        if self.glob:
            same = seqs == actor.seq
            if not same.all():
                ok = np.where(same, ok, ~actor.concurrent(seqs))
        return ok

    def after_writes(self, key, actor: Actor):
        """The earlier writes of the selected elements not ordered before the actor, or
        None."""
        if not self.writes:
            return None
        shape = self.shape
        clocks = key.get(self.w_clock, shape)
        warps = key.get(self.w_warp, shape)
        seqs = key.get(self.w_seq, shape) if self.glob else None
        ok = self._ordered(seqs, warps, clocks, actor)
        if ok.all():
            return None
        pos = np.flatnonzero(~ok)
        return Prior(pos, key.get(self.w_info, shape)[pos], warps[pos], clocks[pos],
                     None if seqs is None else seqs[pos], True)

    def after_reads(self, key, actor: Actor):
        """The earlier reads of the selected elements not ordered before the actor (a
        write), or None: per conflicting element, the first such row."""
        found = []
        shape = self.shape
        if len(self.r_warps):
            clocks = key.rows(self.r_clock, shape)
            warps = self.r_warps[:, None]
            seqs = key.rows(self.r_seq, shape) if self.glob else None
            ok = self._ordered(seqs, warps, clocks, actor)
            if not ok.all():
                bad = ~ok
                row = bad.argmax(axis=0)
                pos = np.flatnonzero(bad.any(axis=0))
                row = row[pos]
                found.append(Prior(pos, key.rows(self.r_info, shape)[row, pos],
                                   self.r_warps[row], clocks[row, pos],
                                   None if seqs is None else seqs[row, pos], False))
        if self.f_seq is not None:
            seqs = key.get(self.f_seq, shape)
            ok = (seqs < 0) | ~actor.concurrent(seqs) | (seqs == actor.seq)
            if not ok.all():
                pos = np.flatnonzero(~ok)
                found.append(Prior(pos, key.get(self.f_info, shape)[pos],
                                   key.get(self.f_warp, shape)[pos],
                                   key.get(self.f_clock, shape)[pos], seqs[pos], False))
        return found[0] if len(found) == 1 else _merge(found) if found else None

    # ------------------------------------------------------------------ records

    def wrote(self, key, actor: Actor, info) -> None:
        shape = self.shape
        key.put(self.w_clock, shape, actor.vc[actor.warp])
        key.put(self.w_warp, shape, actor.warp)
        key.put(self.w_info, shape, info)
        if self.glob:
            key.put(self.w_seq, shape, actor.seq)
        self.writes = True

    def read(self, key, actor: Actor, info) -> None:
        shape = self.shape
        row = self.row_of[actor.warp]
        if row < 0:
            row = self._add_row(actor.warp)
        elif self.glob:
            self._keep_foreign(key, row, actor)
        key.put_rows(self.r_clock, shape, row, actor.vc[actor.warp])
        key.put_rows(self.r_info, shape, row, info)
        if self.glob:
            key.put_rows(self.r_seq, shape, row, actor.seq)

    def _add_row(self, warp: int) -> int:
        n = self.w_clock.size
        row = len(self.r_warps)
        self.r_warps = np.append(self.r_warps, warp)
        self.row_of[warp] = row
        self.r_clock = np.vstack([self.r_clock, np.zeros((1, n), np.int64)])
        self.r_info = np.vstack([self.r_info, np.zeros((1, n), np.int64)])
        if self.glob:
            self.r_seq = np.vstack([self.r_seq, np.full((1, n), -1, np.int64)])
        return row

    def _keep_foreign(self, key, row: int, actor: Actor) -> None:
        """Before a read replaces the same warp number's read from another segment that
        may be concurrent with later writes, keep that one in the foreign slot."""
        shape = self.shape
        seqs = key.rows(self.r_seq[row:row + 1], shape)[0]
        other = (seqs >= 0) & (seqs != actor.seq)
        if not other.any():
            return
        if self.f_seq is None:
            n = self.w_clock.size
            self.f_seq = np.full(n, -1, np.int64)
            self.f_clock, self.f_warp, self.f_info = (np.zeros(n, np.int64) for _ in range(3))
        pos = np.flatnonzero(other)
        flat = key.offsets(shape, pos)
        self.f_seq[flat] = seqs[pos]
        self.f_clock[flat] = key.rows(self.r_clock[row:row + 1], shape)[0][pos]
        self.f_info[flat] = key.rows(self.r_info[row:row + 1], shape)[0][pos]
        self.f_warp[flat] = self.r_warps[row]


def _merge(found: list) -> Prior:
    """Several ``Prior`` into one, the first for each position."""
    pos = np.concatenate([p.pos for p in found])
    keep = np.unique(pos, return_index=True)[1]
    cat = lambda name: np.concatenate([getattr(p, name) for p in found])[keep]  # noqa: E731
    seq = None if found[0].seq is None else cat("seq")
    return Prior(pos[keep], cat("info"), cat("warp"), cat("clock"), seq, False)
