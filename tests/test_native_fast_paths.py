"""The native engine's fast paths against the reference engine, on the cases where they
must step aside: a DMA's tile moved a row at a time (rows partly outside the source or
the destination, strided views, three dimensions, the init check's written marks), an
element access checked for the whole warp at once (inactive lanes out of range, the
first active lane out of range, indices at the edges of their range, row strides that are
powers of two and that are not, narrow element types, lanes sharing an element) or for
the one lane of the host program. Every
case runs on both engines and must show the same results, output, error report and
statistics (tests/parity.py). A collective's operands, compared warp by warp, are
tests/test_interp_dma.py's test_collective_operands_must_be_uniform."""
from __future__ import annotations

import numpy as np
import pytest

import croqvm
from croqvm.native import extension
from parity import assert_alike, outcome

pytestmark = pytest.mark.skipif(extension() is None, reason="the native extension is not built")


def _alike(source: str, func: str, args: list, **options) -> tuple:
    module = croqvm.compile(source, "fast.co").module
    ref = outcome(module, func, args, {}, "python", **options)
    got = outcome(module, func, args, {}, "native", **options)
    assert_alike(got, ref, func)
    return ref


# --------------------------------------------------------------------------- DMA rows

EDGES = """
__co__ s32 [16, 8] edges(s32 [7, 6] a) {
  s32 [16, 8] out {-1};
  parallel p by 2 : block {
    shared s32 [4, 8] t {-9};
    dma.copy%(zfill)s a.view(4, 8).from(4 * p + %(dr)s, %(dc)s) => t;
    dma.copy t => out.view(4, 8).from(8 * p + 2 + %(er)s, %(ec)s);
  }
  return out;
}
"""


@pytest.mark.parametrize("zfill", ["", ".zfill"])
@pytest.mark.parametrize("dr, dc, er, ec", [(0, 0, 0, 0), (-1, 0, 0, 0), (0, -3, 0, 0),
                                            (1, 2, 2, -5), (-2, -1, 3, 3)])
def test_tiles_partly_outside_their_source_or_destination(zfill, dr, dc, er, ec):
    """Rows cut at either end, rows with holes where the source ends, rows cut by the
    destination's edge."""
    a = np.arange(7 * 6, dtype=np.int32).reshape(7, 6) * 3 - 40
    source = EDGES % {"zfill": zfill, "dr": dr, "dc": dc, "er": er, "ec": ec}
    result = _alike(source, "edges", [a])
    assert result[3] is None
    if (dr, dc, er, ec) == (0, 0, 0, 0):   # the elements in range of both, independently
        out = result[0]
        np.testing.assert_array_equal(out[2:6, :6], a[0:4])
        np.testing.assert_array_equal(out[10:13, :6], a[4:7])
        assert (out[[0, 1, 6, 7, 8, 9, 14, 15]] == -1).all()


def test_strided_views_and_three_dimensional_tiles_move_alike():
    """A source with element strides goes element by element; a 3-D tile row by row."""
    a = np.arange(4 * 5 * 6, dtype=np.int32).reshape(4, 5, 6) - 50
    b = np.arange(8 * 6, dtype=np.int32).reshape(8, 6) * 7
    source = """
__co__ s32 [3, 4, 5] cube(s32 [4, 5, 6] a, s32 [8, 6] b, global s32 [4, 3] c) {
  s32 [3, 4, 5] out {-1};
  parallel p by 1 : block {
    shared s32 [3, 4, 5] t {-2};
    shared s32 [4, 3] u {-3};
    dma.copy a.view(3, 4, 5).from(2, 2, 3) => t;
    dma.copy b.view(4, 3 : 2, 2).from(0, 0) => u;
    dma.copy t => out;
    dma.copy u => c;
  }
  return out;
}
"""
    result = _alike(source, "cube", [a, b, np.zeros((4, 3), np.int32)])
    assert result[3] is None
    np.testing.assert_array_equal(result[0][:2, :3, :3], a[2:4, 2:5, 3:6])
    i, j = np.indices((4, 3))       # element (i, j) lies 2i + 2j elements into b
    np.testing.assert_array_equal(result[1][2], b.reshape(-1)[2 * i + 2 * j])


def test_the_init_check_follows_the_written_marks_a_copy_leaves():
    """The tile's last two rows lie past its source: the copy into shared memory leaves
    them unwritten, and the first lane reading one is the same fault on both engines."""
    source = """
__co__ s32 [32] f(s32 [6, 8] a) {
  s32 [32] out;
  parallel p by 1 : block {
    s = dma.copy a.subspan(4, 8).at(1, 0) => shared;
    parallel t by 32 : thread {
      out.at(t) = s.data.at(t / 8, t % 8);
    }
  }
  return out;
}
"""
    a = np.arange(6 * 8, dtype=np.int32).reshape(6, 8) + 1
    result = _alike(source, "f", [a], check="init")
    assert result[3] is not None and "uninitialised element s.data.at(2, 0)" in result[3][1]
    assert _alike(source, "f", [a])[0][:16].tolist() == a[4:6].reshape(-1).tolist()


# --------------------------------------------------------------------------- element access

ACCESS = """
__co__ void access(global s32 [5] x, global s16 [4] y, global s32 [4] z, s32 bad) {
  parallel p by 1 : block, t by 64 : thread {
    if (t < 5)
      x.at(t) += t;
    y.at(t % 4) += t * 1000;
    z.at(3 - t / 16) += t;
    if (t == bad)
      x.at(t) = 1;
  }
}
"""


@pytest.mark.parametrize("bad", [-1, 0, 4, 17, 40])
def test_an_access_of_the_whole_warp_and_its_first_lane_out_of_range(bad):
    """Inactive lanes' indices out of range do not fault; the first active one that is
    does, lane by lane as the reference reports it; narrow elements updated with wider
    values, and lanes sharing an element, give the reference's results."""
    x = np.arange(5, dtype=np.int32)
    y = np.array([1, -2, 3, -4], np.int16)
    z = np.zeros(4, np.int32)
    result = _alike(ACCESS, "access", [x, y, z, bad])
    if bad in (-1, 0, 4):
        assert result[3] is None
        want = 2 * x
        if bad >= 0:
            want[bad] = 1
        np.testing.assert_array_equal(result[1][0], want)
        sums = [sum(t * 1000 for t in range(64) if t % 4 == k) for k in range(4)]
        np.testing.assert_array_equal(result[1][1], ((y.astype(np.int64) + sums + 2 ** 15)
                                                     % 2 ** 16 - 2 ** 15).astype(np.int16))
        np.testing.assert_array_equal(result[1][2], [sum(range(48, 64)), sum(range(32, 48)),
                                                     sum(range(16, 32)), sum(range(16))])
    else:
        assert result[3] is not None and f"lane {bad}" in result[3][1]


TWO_D = """
__co__ s32 [%(lanes)d] two_d(s32 [6, 8] a, s32 [6, 12] b, s32 di, s32 dj) {
  s32 [%(lanes)d] out {0};
  parallel p by 1 : block, t by %(lanes)d : thread {
    out.at(t) = a.at(t / 8 + di, t %% 8 + dj) + b.at(t / 12 + di, t %% 12 + dj);
  }
  return out;
}
"""


@pytest.mark.parametrize("lanes", [32, 48])
@pytest.mark.parametrize("di, dj", [(0, 0), (2, 0), (3, 0), (0, -1), (0, 1), (2 ** 31 - 1, 0),
                                    (-2 ** 31, 0), (0, 2 ** 31 - 1), (0, -2 ** 31)])
def test_two_dimensional_indices_at_the_edges_of_their_range(lanes, di, dj):
    """The whole warp's range check at the edges (an index at -1 or the extent, s32's
    least and greatest values, sums that wrap), a row stride of 8 (a power of two) and
    of 12; a full warp, and one of 16 lanes."""
    a = np.arange(48, dtype=np.int32).reshape(6, 8) * 3 - 70
    b = np.arange(72, dtype=np.int32).reshape(6, 12) * -5 + 11
    result = _alike(TWO_D % {"lanes": lanes}, "two_d", [a, b, di, dj])
    wrap = lambda v: (v + 2 ** 31) % 2 ** 32 - 2 ** 31
    cells = [((wrap(t // 8 + di), wrap(t % 8 + dj)), (wrap(t // 12 + di), wrap(t % 12 + dj)))
             for t in range(lanes)]
    inside = [0 <= i < 6 and 0 <= j < 8 and 0 <= k < 6 and 0 <= m < 12
              for (i, j), (k, m) in cells]
    if all(inside):
        assert result[3] is None
        np.testing.assert_array_equal(result[0], [a[i, j] + b[k, m]
                                                  for (i, j), (k, m) in cells])
    else:
        assert result[3] is not None and f"lane {inside.index(False)}" in result[3][1]


@pytest.mark.parametrize("i, j", [(1, 2), (4, 0), (0, -1), (3, 3), (-1, 5)])
def test_the_host_program_s_one_lane_reads_in_range_and_faults_alike(i, j):
    a = np.arange(12, dtype=np.int32).reshape(4, 3) * 5
    source = """
__co__ s32 host(s32 [4, 3] a, s32 i, s32 j) {
  s32 [2] b;
  b.at(1) += a.at(i, j);
  return b.at(1);
}
"""
    result = _alike(source, "host", [a, i, j])
    if (i, j) == (1, 2):
        assert result[0] == 25
    else:
        assert result[3] is not None and f"out-of-range access a.at({i}, {j})" in result[3][1]
