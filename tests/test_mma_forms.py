"""The accumulator forms real kernels use (LANGUAGE.md §11.3, §11.7): an accumulator whose
elements are used before the MMA that shapes it (flash attention's rescale of the output
inside its key loop), a fragment made by 'mma.load' used as an accumulator, and arrays of
accumulators ('frag mc[2][3] {v}', 'mc[0][i]'). Expected values are numpy's."""
import numpy as np
import pytest

import croqvm
import engines
from croqvm.core.errors import KernelFault
from croqvm.lang.frontend import front_end

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

# tests/gpu/end2end/flash_atten.co of the Croqtile repository for one head (its '.sqz()'
# views of the [B, H, S, D] inputs are the 2-D ones here), on a warp's 16-row tiles where
# it has a warpgroup's 64-row ones, to keep the test short
FLASH = """
#define DIM 16
#define BLOCK_M 16
#define BLOCK_N 16

__co__ auto flash_atten(f16[Q_SEQ, DIM] Q, f16[KV_SEQ, DIM] K, f16[KV_SEQ, DIM] V,
                        bool is_causal) {
  f16[Q_SEQ, DIM] O;
  float scale = 0.18033688f;
  int past_len = KV_SEQ - Q_SEQ;
  parallel bm by cdiv(Q_SEQ, BLOCK_M) : block {
    q_s = dma.copy.swiz<32> Q.subspan(BLOCK_M, DIM).at(bm, 0) => shared;
    parallel pw by 1 : group {
      frag f16[BLOCK_M, BLOCK_N] acc_s_cast;
      frag f32[BLOCK_M] scores_max {-inf};
      frag f32[BLOCK_M] scores_max_prev;
      frag f32[BLOCK_M] scores_scale;
      frag f32[BLOCK_M] scores_sum;
      frag f32[BLOCK_M] logsum {0.0f};
      acc_o = mma.fill.f32 0.0f;
      kv_tiles = cdiv(KV_SEQ, BLOCK_N);
      kv_bound = is_causal
        ? (cdiv((bm + 1) * BLOCK_M + past_len, BLOCK_N) < kv_tiles
           ? cdiv((bm + 1) * BLOCK_M + past_len, BLOCK_N) : kv_tiles)
        : kv_tiles;
      foreach {bn} in [kv_bound] {
        acc_s = mma.fill.f32 0.0f;
        k_s = dma.copy.swiz<32> K.subspan(BLOCK_N, DIM).at(bn, 0) => shared;
        mma.row.row acc_s, q_s, k_s;
        if (is_causal) {
          apply {i, j} in acc_s.span {
            if ((bn * BLOCK_N + j) > (bm * BLOCK_M + i + past_len))
              acc_s.at(i, j) = -inf;
          }
        }
        copy(scores_max_prev, scores_max);
        reduce_max(scores_max, acc_s, 1);
        apply {i} in scores_max.span {
          scores_max.at(i) = __max(scores_max.at(i), scores_max_prev.at(i));
          scores_scale.at(i) = __exp2f(scores_max_prev.at(i) * scale - scores_max.at(i) * scale);
        }
        apply {i, j} in acc_s.span
          acc_s.at(i, j) = __exp2f(acc_s.at(i, j) * scale - scores_max.at(i) * scale);
        reduce_sum(scores_sum, acc_s, 1);
        apply {i} in logsum.span
          logsum.at(i) = logsum.at(i) * scores_scale.at(i) + scores_sum.at(i);
        apply {i, j} in acc_o.span                    // before the mma that shapes acc_o
          acc_o.at(i, j) = acc_o.at(i, j) * scores_scale.at(i);
        apply {i, j} in acc_s.span
          acc_s_cast.at(i, j) = __to<f16>(acc_s.at(i, j));
        v_s = dma.copy.swiz<32> V.subspan(BLOCK_N, DIM).at(bn, 0) => shared;
        mma.row.col acc_o, acc_s_cast, v_s;
      }
      apply {i, j} in acc_o.span
        acc_o.at(i, j) /= logsum.at(i);
      mma.store acc_o, O.subspan(BLOCK_M, DIM).at(bm, 0);
    }
  }
  return O;
}
"""


def _attention(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """Softmax in base 2 of the scaled scores, the probabilities rounded to f16 before
    they multiply V, as the kernel does."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    if causal:
        past = k.shape[0] - q.shape[0]
        i, j = np.indices(s.shape)
        s = np.where(j > i + past, -np.inf, s)
    p = np.exp2(s * scale - s.max(axis=1, keepdims=True) * scale)
    return (p.astype(np.float16).astype(np.float64) @ v.astype(np.float64)) \
        / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(causal):
    """Two query blocks, up to three key tiles: each tile rescales the output the
    earlier ones accumulated."""
    rng = np.random.default_rng(4)
    q = rng.uniform(-0.5, 0.5, (32, 16)).astype(np.float16)
    k = rng.uniform(-0.5, 0.5, (48, 16)).astype(np.float16)
    v = rng.uniform(-1, 1, (48, 16)).astype(np.float16)
    out = engines.run(croqvm.compile(FLASH, "t.co"), "flash_atten", q, k, v, causal)
    np.testing.assert_allclose(out, _attention(q, k, v, causal, 0.18033688), rtol=1e-2,
                               atol=2e-3)


SCALED = """
__co__ void scaled(s8 [48, 16] a, s8 [24, 16] b, global s32 [16, 8] c) {
  parallel blk by 1 : block {
    parallel w by 1 : group {
      acc = mma.fill.s32 1;
      foreach k in 3 {
        apply {i, j} in acc.span                // acc's shape comes from the mma below
          acc.at(i, j) = acc.at(i, j) * 2 + j;
        sa = dma.copy a.subspan(16, 16).at(k, 0) => shared;
        sb = dma.copy b.subspan(8, 16).at(k, 0) => shared;
        fa = mma.load sa;
        mma.row.row acc, fa, sb;
      }
      mma.store acc, c;
    }
  }
}
"""


def test_elements_used_before_the_mma_that_shapes_the_accumulator():
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (48, 16)).astype(np.int8)
    b = rng.integers(-128, 128, (24, 16)).astype(np.int8)
    c = np.zeros((16, 8), np.int32)
    engines.run(croqvm.compile(SCALED, "t.co"), "scaled", a, b, c)
    want = np.ones((16, 8), np.int64)
    for k in range(3):
        want = want * 2 + np.arange(8) \
            + a[16 * k:16 * k + 16].astype(np.int64) @ b[8 * k:8 * k + 8].astype(np.int64).T
    np.testing.assert_array_equal(c, want)


FORMS = """
__co__ void loaded(f16 [16, 16] a, f16 [8, 16] b, global f16 [16, 8] c) {
  parallel blk by 1 : block {
    parallel w by 1 : group {
      mc = mma.load c;                       // the accumulator starts from c
      fa = mma.load a;
      fb = mma.load b;
      mma.row.row mc, fa, fb;
      mma.store mc, c;
    }
  }
}

__co__ void arrays(s8 [16, 16] a, s8 [8, 16] b, global s32 [32, 8] c, int i) {
  parallel blk by 1 : block {
    frag.s32 mc[1][2] {5};
    parallel w by 1 : group {
      mma.fill mc[0][1], 7;
      fa = mma.load a;
      fb = mma.load b;
      mma.row.row mc[0][i], fa, fb;
      mma.store mc[0][0], c.subspan(16, 8).at(0, 0);
      mma.store mc[0][1], c.subspan(16, 8).at(1, 0);
    }
  }
}
"""


def test_a_loaded_fragment_as_the_accumulator():
    """tests/gpu/end2end/ampere_mma.co's 'mc = mma.load output.chunkat(...)': small
    integers, so that every f16 sum is exact."""
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (8, 16)).astype(np.float16)
    c = rng.integers(-50, 50, (16, 8)).astype(np.float16)
    want = c + a.astype(np.float64) @ b.astype(np.float64).T
    engines.run(croqvm.compile(FORMS, "t.co"), "loaded", a, b, c)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("i", [0, 1])
def test_an_element_of_an_accumulator_array_chosen_at_run_time(i):
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (16, 16)).astype(np.int8)
    b = rng.integers(-128, 128, (8, 16)).astype(np.int8)
    prod = a.astype(np.int64) @ b.astype(np.int64).T
    c = np.zeros((32, 8), np.int32)
    engines.run(croqvm.compile(FORMS, "t.co"), "arrays", a, b, c, i)
    np.testing.assert_array_equal(c, np.concatenate([5 + prod * (i == 0), 7 + prod * (i == 1)]))


def test_a_subscript_outside_the_array_is_a_fault():
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.compile(FORMS, "t.co"), "arrays", np.zeros((16, 16), np.int8),
                    np.zeros((8, 16), np.int8), np.zeros((32, 8), np.int32), 2)
    assert "t.co:21:7: runtime error: index 2 is out of range for fragment array 'mc' " \
           "[0, 2)." in str(e.value)


# a view of E columns as an MMA operand: E = -1 sliced 15 columns on one engine and none on
# the other; E = 0 ran an MMA of K = 0 where a DMA reports an empty tile
EMPTY_VIEW = """
__co__ auto f(s32 e) {
  f32 [16, 16] c;
  parallel p by 1 : block {
    shared f16 [64, 16] s;
    parallel w by 1 : group {
      acc = mma.fill.f32 0.0f;
      fa = mma.load s.view(16, e).from(0, 0);
      fb = mma.load s.view(e, 16).from(0, 0);
      mma.row.col acc, fa, fb;
      mma.store acc, c;
    }
  }
  return c;
}
"""


@pytest.mark.parametrize("e", [-1, 0])
def test_an_mma_operand_view_without_elements_is_a_fault(e):
    with pytest.raises(KernelFault) as err:
        engines.run(croqvm.compile(EMPTY_VIEW, "p.co"), "f", e)
    assert str(err.value).splitlines()[0] == (
        f"p.co:8:7: runtime error: tile of 's' at origin (0, 0) has no elements (extents "
        f"[16, {e}]).")


def diagnose(text: str) -> list[str]:
    _, diags, _ = front_end("__co__ void f(int n) {\n" + text + "\n}", "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == "error"]


GROUP = "parallel b by 1 : block { shared f16 [16, 16] s; shared bf16 [16, 16] h;\n" \
        "parallel g by 1 : group {\n"


@pytest.mark.parametrize("text, errors", [
    (GROUP + "frag mc[2] {0.0f};\nmma.store mc[2], s; } }",
     ["5:14: index 2 is out of range for fragment array 'mc' [0, 2)."]),
    (GROUP + "frag mc[2][2] {0.0f};\nmma.store mc[1], s; } }",
     ["5:11: fragment array 'mc' needs 2 subscripts, as in 'mc[0][0]'."]),
    (GROUP + "frag mc[2] {0.0f};\nmma.row.row mc, s, s; } }",
     ["5:13: Cannot use the whole fragment array in mma exec operation."]),
    (GROUP + "frag mc[n] {0.0f};\nmma.store mc[0], s; } }",
     ["4:9: the extents of fragment array 'mc' must be positive integer constants."]),
    (GROUP + "mc = mma.fill 0.0f;\nmma.store mc[0], s; } }",
     ["5:14: 'mc' is not an array of accumulators."]),
    (GROUP + "frag mc[2] {0.0f};\nmma.store mc[0], s;\nprintln(mc.at(0, 0)); } }",
     ["6:9: not supported by croqvm yet: the elements of 'mc', an array of accumulators."]),
    (GROUP + "parallel t by 32 : thread { frag mc[2] {0.0f};\nmma.store mc[t], s; } } }",
     ["5:14: a subscript of fragment array 'mc' is the same for the whole 'group' "
      "instance, but this one depends on thread index 't'."]),
    (GROUP + "mc = mma.load h;\nmma.store mc, s; } }",
     ["5:11: 'mc' holds bf16 elements, but an accumulator is f16, f32, f64 or s32."]),
    (GROUP + "fa = mma.load s;\nmc = mma.fill.f32 0.0f;\nmma.row.row mc, fa, fa;\n"
             "mma.store fa, s; } }",
     ["7:11: 'fa' of type \"fragment f16\" is not an MMA accumulator."]),
])
def test_diagnostics(text, errors):
    assert diagnose(text) == errors


RELOAD = """
__co__ void f(f16 [16, 16] a, global f16 [16, 8] c) {
  parallel blk by 1 : block {
    parallel w by 1 : group {
      mc = mma.load c;
      fa = mma.load a;
      m = mma.row.row.async mc, fa, a.subspan(8, 16).at(0, 0);
      mc = mma.load c;
      wait m;
      mma.store mc, c;
    }
  }
}
"""


def test_loading_an_accumulator_anew_before_the_wait_is_a_fault():
    """§11.5: the load is a use of the accumulator an asynchronous mma still writes."""
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.compile(RELOAD, "t.co"), "f", np.zeros((16, 16), np.float16),
                    np.zeros((16, 8), np.float16))
    assert "t.co:8:7: runtime error: accumulator 'mc' is used before the wait of its " \
           "asynchronous mma." in str(e.value)


ONE = """
__co__ void f(f16 [16, 16] a, global f32 [16, 8] c) {
  parallel blk by 1 : block {
    parallel w by 1 : group {
      frag.f32 mc {1.5f};                    // as 'mc = mma.fill.f32 1.5f;'
      fa = mma.load a;
      mma.row.row mc, fa, a.subspan(8, 16).at(0, 0);
      mma.store mc, c;
    }
  }
}
"""


def test_frag_declares_one_accumulator():
    rng = np.random.default_rng(6)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float16)
    c = np.zeros((16, 8), np.float32)
    engines.run(croqvm.compile(ONE, "t.co"), "f", a, c)
    np.testing.assert_array_equal(c, 1.5 + a.astype(np.float64) @ a[:8].astype(np.float64).T)
