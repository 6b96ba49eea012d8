"""The race check's C detector (native/race.c) where it leaves checks out: a shadow's
bounds (the latest clock each warp wrote and read at, the segments) that order a whole
access or tile before it, and a warp's repeat of its last access that the bounds did not
order (the same lanes and elements at the same clock, nothing recorded since). Each kernel
runs on both engines under the default and random schedules (``test_race.both``): the
detector must stop exactly the runs the reference engine reports races in; each case
also states the verdict the reference engine gives, so that it covers what it names."""
from __future__ import annotations

import numpy as np
import pytest

from test_race import both

SCHEDULES = [{}, {"schedule": "random", "seed": 1}, {"schedule": "random", "seed": 7}]


def verdict(source: str, func: str, *args, **options) -> bool:
    """Whether the reference engine reports a data race (the native engine agreeing)."""
    ref = both(source, func, *args, **options)
    return ref[3] is not None and "data race" in ref[3][1]


# A warp updates the same elements four times in one epoch: from the second time the
# bounds of g no longer order it once the other warp wrote too, and a repeat with nothing
# recorded in between is left out; with random schedules the other warp's accesses come
# between the repeats. Partial warps, divergent lanes and lanes that change from one
# repeat to the next, race-free; warps updating one element, racy.
REPEATS = """
__co__ void f(global s32 [128] g) {
  parallel b by 1 : block, t by LANES : thread {
    foreach k in [4]
      if (COND) g.at(INDEX) += k + 1;
  }
}
"""


@pytest.mark.parametrize("options", SCHEDULES)
@pytest.mark.parametrize("lanes, cond, index, racy", [
    (64, "t >= 0", "t", False),
    (40, "t % 3 != 0", "t", False),                 # a partial warp, divergent lanes
    (64, "t < 8 + k * 16", "t", False),             # more lanes each time
    (64, "t >= 0", "t % 32", True),                 # the warps update one element
    (64, "k > 0", "t % 32", True),
    (64, "t >= 0", "(t + k * 16) % 64", True),      # new elements each time
])
def test_a_warps_repeated_access_is_checked_against_the_others(lanes, cond, index, racy,
                                                               options):
    source = REPEATS.replace("LANES", str(lanes)).replace("COND", cond).replace("INDEX", index)
    assert verdict(source, "f", np.zeros(128, np.int32), **options) == racy


# Warp 1 reads what warp 0 wrote after a barrier; warp 0 then writes the same elements
# again, at a later clock: without the second barrier that write races with the read,
# which nothing orders before it, though the read was ordered after warp 0's first write.
EPOCHS = """
__co__ void f(global s32 [64] g, global s32 [64] out) {
  parallel b by 1 : block, t by 64 : thread {
    foreach k in [4] {
      if (t < 32) g.at(t) += k + 1;
      sync.shared;
      if (t >= 32) out.at(t) = g.at(t - 32);
      END
    }
  }
}
"""


@pytest.mark.parametrize("options", SCHEDULES)
@pytest.mark.parametrize("end, racy", [("", True), ("sync.shared;", False)])
def test_a_write_after_a_read_the_barrier_ordered_after_the_last_write(end, racy, options):
    args = (np.zeros(64, np.int32), np.zeros(64, np.int32))
    assert verdict(EPOCHS.replace("END", end), "f", *args, **options) == racy


# Lanes' own copies of rows into one shared tile: the warps' boxes apart, or meeting in
# rows (32 from the second warp's first lane on, or a single row).
LANE_TILES = """
__co__ void f(s32 [64, 8] src, global s32 [64, 8] out) {
  parallel b by 1 : block, t by 64 : thread {
    shared s32 [96, 8] dst;
    mine = dma.copy src.subspan(1, 8).at(t, 0) => local;
    dma.copy mine.data => dst.subspan(1, 8).at(ROW, 0);
    sync.shared;
    out.at(t, 0) = dst.at(t, 0);
  }
}
"""


@pytest.mark.parametrize("options", SCHEDULES[:2])
@pytest.mark.parametrize("row, racy", [
    ("t", False), ("t + t / 32 * 31", False),
    ("t % 32 + t / 32 * 16", True), ("t - t / 32", True)])
def test_lane_copies_whose_boxes_overlap_between_warps_race(row, racy, options):
    args = (np.arange(512, dtype=np.int32).reshape(64, 8), np.zeros((64, 8), np.int32))
    assert verdict(LANE_TILES.replace("ROW", row), "f", *args, **options) == racy


# Each warp copies a row of a into one shared tile, synchronously or asynchronously, and
# reads a row of it: its own, or the row of another warp, which nothing orders.
GROUP_TILES = """
__co__ void f(s32 [4, 8] a, global s32 [4, 8] out) {
  parallel b by 1 : block {
    shared s32 [4, 8] dst;
    parallel g by 4 : group, t by 32 : thread {
      COPY
      if (t < 8) out.at(g, t) = dst.at(READ, t);
    }
  }
}
"""
SYNC_COPY = "dma.copy a.subspan(1, 8).at(g, 0) => dst.subspan(1, 8).at(ROW, 0);"
ASYNC_COPY = ("h = dma.copy.async a.subspan(1, 8).at(g, 0) => dst.subspan(1, 8).at(ROW, 0);"
              "\n      wait h;")


@pytest.mark.parametrize("options", SCHEDULES[:2])
@pytest.mark.parametrize("copy", [SYNC_COPY, ASYNC_COPY])
@pytest.mark.parametrize("row, read, racy", [
    ("g", "g", False), ("3 - g", "3 - g", False),
    ("g / 2", "g / 2", True),           # two warps copy into one row
    ("g", "(g + 1) % 4", True)])        # a warp reads another's row
def test_warps_copying_into_one_tile(copy, row, read, racy, options):
    source = GROUP_TILES.replace("COPY", copy).replace("ROW", row).replace("READ", read)
    args = (np.arange(32, dtype=np.int32).reshape(4, 8), np.zeros((4, 8), np.int32))
    assert verdict(source, "f", *args, **options) == racy


# Blocks read tiles of a global buffer (blocks p and p + 2 the same one: the later read
# keeps the earlier apart, race.py _keep_foreign) and one writes a tile of it: one no
# block read, or one two blocks read; then the host, after the launch, writes all of it.
BLOCK_TILES = """
__co__ void f(s32 [64, 64] a, global s32 [64, 64] out) {
  parallel p by 4 : block {
    ta = dma.copy a.subspan(16, 16).at(p % 2, 0) => shared;
    parallel t by 16 : thread
      out.at(p # t, 0) = ta.data.at(t, 0);
    WRITE
  }
  foreach i in [64]
    a.at(i, 0) = i;
}
"""


@pytest.mark.parametrize("write, racy", [
    ("", False),
    ("if (p == 3) dma.copy ta.data => a.subspan(16, 16).at(3, 0);", False),
    ("if (p == 3) dma.copy ta.data => a.subspan(16, 16).at(1, 0);", True),
    ("if (p == 2) dma.copy ta.data => a.subspan(16, 16).at(0, 0);", True)])
def test_blocks_reading_and_writing_tiles_of_a_global_buffer(write, racy):
    args = (np.arange(64 * 64, dtype=np.int32).reshape(64, 64), np.zeros((64, 64), np.int32))
    assert verdict(BLOCK_TILES.replace("WRITE", write), "f", *args) == racy
