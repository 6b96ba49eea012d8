"""The examples of LANGUAGE.md Appendix A, compiled from source and run on the reference
engine; expected outputs are the ones the appendix states, arrays are checked with numpy."""
import io

import numpy as np
import pytest

from appendix import A8_REPORT, APPENDIX
import croqvm
from croqvm.core.errors import KernelFault

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

A1 = APPENDIX["A.1"]

A7 = APPENDIX["A.7"]

A8 = APPENDIX["A.8"]

A2_A4 = """\
__co__ auto matmul(s32 [M, K] a, s32 [K, N] b) {
  s32 [M, N] c;
  parallel {bm, bn} by [M / 8, N / 8] : block, {r, s} by [8, 8] : thread {
    foreach k in [K]
      c.at(bm # r, bn # s) += a.at(bm # r, k) * b.at(k, bn # s);
  }
  return c;
}

__co__ auto matmul_db(f32 [M, K] a, f32 [K, N] b) {
  f32 [M, N] c;
  parallel {bm, bn} by [M / 16, N / 16] : block, {tm, tn} by [16, 16] : thread {
    with kt in K / 16 {
      cur_a = dma.copy.async a.subspan(16, 16).at(bm, kt) => shared;
      cur_b = dma.copy.async b.subspan(16, 16).at(kt, bn) => shared;
      nxt_a = dma.any;
      nxt_b = dma.any;
      foreach kt(1:) {
        nxt_a = dma.copy.async a.subspan(16, 16).at(bm, kt) => shared;
        nxt_b = dma.copy.async b.subspan(16, 16).at(kt, bn) => shared;
        wait cur_a, cur_b;
        foreach k in [16]
          c.at(bm # tm, bn # tn) += cur_a.data.at(tm, k) * cur_b.data.at(k, tn);
        swap(cur_a, nxt_a);
        swap(cur_b, nxt_b);
      }
      WAIT_LAST
      foreach k in [16]
        c.at(bm # tm, bn # tn) += cur_a.data.at(tm, k) * cur_b.data.at(k, tn);
    }
  }
  return c;
}
"""


def printed(source, name, filename="t.co", **options):
    out = io.StringIO()
    engines.run(croqvm.compile(source, filename), name, out=out, **options)
    return out.getvalue()


def test_a1_elementwise_addition():
    assert printed(A1, "add_demo") == "10 11 12\n13 14 15\n"


def test_a7_divergence_inside_a_warp():
    want = ([f"even {t}" for t in (0, 2, 4, 6)] + [f"odd {t}" for t in (1, 3, 5, 7)]
            + [f"join {t}" for t in range(8)] + ["0 -1 20 -3 40 -5 60 -7"])
    assert printed(A7, "diverge").splitlines() == want


def test_a8_pipeline_without_credits():
    with pytest.raises(KernelFault) as e:
        printed(A8, "broken", "broken.co")
    assert str(e.value) == A8_REPORT


@pytest.mark.parametrize("fix", [
    ("// foreach s in [STAGES] trigger empty[s];      <- the missing initial credits",
     "foreach s in [STAGES] trigger empty[s];"),
    ("empty[STAGES];", "empty[STAGES] = ready;"),
])
def test_a8_pipeline_with_credits_prints_49(fix):
    assert printed(A8.replace(*fix), "broken", "broken.co") == "49\n"


def test_a2_scalar_matmul_against_numpy():
    rng = np.random.default_rng(2)
    a = rng.integers(-9, 10, (16, 5)).astype(np.int32)
    b = rng.integers(-9, 10, (5, 8)).astype(np.int32)
    mod = croqvm.compile(A2_A4.replace("WAIT_LAST", "wait cur_a, cur_b;"))
    assert np.array_equal(engines.run(mod, "matmul", a, b), a @ b)


@pytest.mark.parametrize("schedule, seed", [("rr", 0), ("random", 1), ("random", 2)])
def test_a4_double_buffering_under_every_schedule(schedule, seed):
    rng = np.random.default_rng(4)
    a = rng.integers(-4, 5, (16, 48)).astype(np.float32)
    b = rng.integers(-4, 5, (48, 16)).astype(np.float32)
    mod = croqvm.compile(A2_A4.replace("WAIT_LAST", "wait cur_a, cur_b;"))
    c = engines.run(mod, "matmul_db", a, b, schedule=schedule, seed=seed)
    assert np.array_equal(c, a @ b)


def test_a4_without_the_last_wait():
    a = np.ones((16, 32), np.float32)
    b = np.ones((32, 16), np.float32)
    mod = croqvm.compile(A2_A4.replace("WAIT_LAST", ""))
    with pytest.raises(KernelFault) as e:
        engines.run(mod, "matmul_db", a, b)
    assert "runtime error: future 'cur_a' is not waited before using." in str(e.value)
