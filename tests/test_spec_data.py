"""LANGUAGE.md §9 and §11-§15.3 rule by rule: DMA and futures, MMA, numerics, output, the
host side and the runtime error format. Each test is a short program (or one API call)
whose expected output, result or message is worked out by hand from the rule it cites;
arrays are compared with numpy expressions written from the spec's formulas.
"""
from __future__ import annotations

import io
import math
import textwrap
import warnings

import ml_dtypes
import numpy as np
import pytest

import croqvm
from croqvm.core import dtypes
from croqvm.cli.main import main as croqvm_main
from croqvm.core.numerics import binary, convert

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def main(argv) -> int:
    """The croqvm command, a ``run`` on the test's engine (tests/engines.py)."""
    return croqvm_main(engines.cli_options(argv))


FILE = "spec.co"


def compile_src(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), FILE)


def run(source: str, *args, func: str = "f", **options):
    """Run ``func``; return (what it printed, what it returned)."""
    out = io.StringIO()
    result = engines.run(compile_src(source), func, *args, out=out, **options)
    return out.getvalue(), result


def printed(source: str, *args, **options) -> str:
    return run(source, *args, **options)[0]


def fault(source: str, *args, func: str = "f", **options) -> str:
    """Run a program that must stop with a runtime error; return the rendered report."""
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(source), func, *args, out=io.StringIO(), **options)
    return str(info.value)


def argument_error(source: str, *args, func: str = "f", **dims) -> str:
    with pytest.raises(croqvm.ArgumentError) as info:
        engines.run(compile_src(source), func, *args, out=io.StringIO(), **dims)
    return str(info.value)


def lines(*items: str) -> str:
    return "".join(item + "\n" for item in items)


def s32(*values) -> np.ndarray:
    return np.array(values, np.int32)


# =========================================================================== §9 DMA

def test_tma_copy_and_a_swizzled_round_trip_move_the_same_values_as_dma_copy():
    # §9.7: tma.copy between global buffers copies as dma.copy; a tile copied into shared
    # memory and back with one swizzle arrives unchanged (8 rows of 128 bytes: every row
    # but the first has its 16-byte chunks permuted in shared memory)
    src = """
        __co__ void f(s32 [8, 32] m) {
          s32 [8, 32] a;
          s32 [8, 32] b;
          tma.copy m => a;
          parallel p by 1 : block {
            shared s32 [8, 32] s;
            dma.copy.swiz<128> m => s;
            dma.copy.swiz<128> s => b;
          }
          println(a.at(0, 0), a.at(7, 31), b.at(1, 0), b.at(5, 9), b.at(7, 31));
        }
    """
    m = np.arange(256, dtype=np.int32).reshape(8, 32)
    assert printed(src, m) == "0 255 32 169 255\n"


def test_a_future_alone_or_its_data_is_a_source_and_its_span_is_the_shape():
    # §9.4.5: f.data is the destination, f.span its shape, f alone as a source is f.data
    src = """
        __co__ void f(s32 [6] m) {
          t = dma.copy m.subspan(2).at(1) => global;
          u = dma.copy t => global;
          v = dma.copy t.data => global;
          println(t.span, t.data.at(0), u.data.at(1), v.data.at(0));
        }
    """
    assert printed(src, np.arange(10, 16, dtype=np.int32)) == "[2] 12 13 12\n"


def test_a_future_its_data_view_and_a_buffer_array_element_as_destinations():
    # §9.1: DST is a buffer, f, f.data, buf[i] or a view chain on these
    src = """
        __co__ void f(s32 [4] m) {
          g = dma.copy m => global;
          s32 [4] z {9};
          dma.copy z => g;
          println(g.data.at(0));
          dma.copy m.subspan(2) => g.data.subspan(2).at(1);
          println(g.data.at(0), g.data.at(2), g.data.at(3));
          s32 [4] arr[2];
          dma.copy m => arr[1];
          h = dma.copy arr[1].subspan(2) => global;
          println(h.data.at(1));
        }
    """
    assert printed(src, s32(10, 11, 12, 13)) == lines("9", "9 10 11", "11")


def test_a_new_future_owns_one_buffer_that_every_execution_reuses():
    # §9.4.1: the same buffer on every execution; §9.5.1: a source element out of range
    # leaves the destination element unchanged, so the second tile keeps the first's 12
    src = """
        __co__ void f(s32 [5] m) {
          foreach i in [2] {
            t = dma.copy m.subspan(3).at(i) => global;
            println(t.data.at(0), t.data.at(1), t.data.at(2));
          }
        }
    """
    assert printed(src, np.arange(10, 15, dtype=np.int32)) == lines("10 11 12", "13 14 12")


def test_a_future_with_an_explicit_destination_refers_to_that_view():
    # §9.4.3; §8.6: its indices are relative to the view and checked against its extents
    src = """
        __co__ void f(s32 [4] m) {
          s32 [8] b;
          g = dma.copy m.subspan(2) => b.subspan(2).at(2);
          println(g.data.at(0), g.data.at(1), b.at(4), b.at(5), g.span);
          foreach i in [3]
            println(g.data.at(i));
        }
    """
    text = fault(src, s32(10, 11, 12, 13))
    assert text.startswith("spec.co:6:5: runtime error: out-of-range access ")
    assert "index 2 of dimension 0 is not in [0, 2)." in text.splitlines()[0]


def test_the_data_before_the_fault_of_a_future_with_an_explicit_destination():
    src = """
        __co__ void f(s32 [4] m) {
          s32 [8] b;
          g = dma.copy m.subspan(2) => b.subspan(2).at(2);
          println(g.data.at(0), g.data.at(1), b.at(4), b.at(5), g.span);
        }
    """
    assert printed(src, s32(10, 11, 12, 13)) == "10 11 10 11 [2]\n"


def test_a_placeholder_takes_the_buffer_of_the_first_dma_into_it():
    # §9.4.2; §9.5.4: waiting an unused placeholder does nothing; §9.6.1: swap exchanges
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block, t by 2 : thread {
            a = dma.copy.async m.subspan(2) => shared;
            b = dma.any;
            wait b;
            b = dma.copy.async m.subspan(2).at(1) => shared;
            wait a, b;
            println(t, a.data.at(t), b.data.at(t));
            swap(a, b);
            println(t, a.data.at(t));
          }
        }
    """
    assert printed(src, s32(10, 11, 12, 13)) == lines("0 10 12", "1 11 13", "0 12", "1 13")


def test_the_data_of_a_placeholder_without_data():
    # §9.5.4
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block, t by 2 : thread {
            b = dma.any;
            println(b.data.at(t));
            b = dma.copy m => shared;
          }
        }
    """
    assert fault(src, s32(1, 2, 3, 4)) == "\n".join([
        "spec.co:4:5: runtime error: future 'b' has no data.",
        "    4 |     println(b.data.at(t));",
        "      |     ^~~~~~~~~~~~~~~~~~~~~",
        "  in kernel launched at spec.co:2:3, block (0), lane 0 (warp 0, lane 0)"])


def test_the_span_of_a_placeholder_is_the_shape_its_first_dma_fixes():
    # §9.4.4: the type (shape included) is fixed by the first DMA; §9.4.5: f.span is the
    # shape; §13.2: mdspans print as [4, 8]
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block {
            b = dma.any;
            println(b.span);
            b = dma.copy m => shared;
            println(b.span);
          }
        }
    """
    assert printed(src, s32(1, 2, 3, 4)) == lines("[4]", "[4]")


def test_the_shape_a_later_dma_or_swap_fixes_sizes_buffers_before_it():
    # §9.4.4: b's first DMA copies [2, 3]; c takes a's type at the swap (§9.6.1)
    src = """
        __co__ void f(s32 [2, 3] m) {
          parallel p by 1 : block {
            a = dma.copy.async m.subspan(1, 3) => shared;
            b = dma.any;
            c = dma.any;
            shared s32 [b.span(1) * 2, c.span] h;
            println(h.span, |b.span|);
            b = dma.copy m => shared;
            swap(a, c);
            wait c;
          }
        }
    """
    assert printed(src, np.zeros((2, 3), np.int32)) == lines("[6, 1, 3] 6")


def test_wait_on_a_collective_copy_is_a_barrier_of_its_participants():
    # §9.5.3: warp 0 waits at 'wait g' until warp 1 gets there, so both 'mid' lines come
    # before both 'end' lines (§7.1.2: after the release warp 0 runs first)
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block, t by 64 : thread {
            g = dma.copy.async m => shared;
            if (t % 32 == 0) println("mid", t);
            wait g;
            if (t % 32 == 0) println("end", t, g.data.at(3));
          }
        }
    """
    assert printed(src, s32(0, 1, 2, 3)) == lines("mid 0", "mid 32", "end 0 3", "end 32 3")


def test_wait_on_a_per_lane_copy_is_not_a_barrier():
    # §9.3.1: a copy into local memory is per lane, so its wait blocks nobody: warp 0
    # runs to the end before warp 1 starts
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block, t by 64 : thread {
            g = dma.copy m => shared;
            if (t % 32 == 0) println("mid", t);
            h = dma.copy.async m => local;
            wait h;
            if (t % 32 == 0) println("end", t, h.data.at(3));
          }
        }
    """
    assert printed(src, s32(0, 1, 2, 3)) == lines("mid 0", "end 0 3", "mid 32", "end 32 3")


def test_wait_with_parentheses_waits_each_future_of_its_list():
    # §9.5.3: wait(f1, f2) is wait f1, f2
    src = """
        __co__ void f(s32 [4] m) {
          a = dma.copy.async m.subspan(2) => global;
          b = dma.copy.async m.subspan(2).at(1) => global;
          wait(a, b);
          println(a.data.at(1), b.data.at(0));
        }
    """
    assert printed(src, s32(10, 11, 12, 13)) == "11 12\n"


def test_host_code_ending_with_an_unwaited_async_copy():
    # §9.5.4: the host lane's copy is never waited on this path (n is 0)
    src = """
        __co__ void f(s32 [4] m, int n) {
          a = dma.copy.async m => global;
          if (n > 0) wait a;
        }
    """
    m = s32(1, 2, 3, 4)
    assert run(src, m, 1) == ("", None)
    assert fault(src, m, 0) == "\n".join([
        "spec.co:1:13: runtime error: async copy issued at spec.co:2:3 into 'a' was never "
        "waited.",
        "    1 | __co__ void f(s32 [4] m, int n) {",
        "      |             ^",
        "  in host code of 'f'"])


def test_a_copy_into_local_memory_is_made_by_each_lane_for_itself():
    # §9.3.1: a thread-dependent source is fine when the destination is local
    src = """
        __co__ void f(s32 [8, 2] m) {
          parallel p by 1 : block, t by 8 : thread {
            r = dma.copy m.chunkat(t, _) => local;
            println(t, r.data.at(0, 0), r.data.at(0, 1));
          }
        }
    """
    want = lines(*(f"{t} {2 * t} {2 * t + 1}" for t in range(8)))
    assert printed(src, np.arange(16, dtype=np.int32).reshape(8, 2)) == want


def test_a_copy_out_of_local_memory_is_made_by_each_lane_for_itself():
    # §9.3.1: either side local makes the DMA per lane; lane t puts 10 t at s[t]
    src = """
        __co__ void f(global s32 [8] out) {
          parallel p by 1 : block, t by 8 : thread {
            shared s32 [8] s;
            local s32 [1] l;
            l.at(0) = t * 10;
            dma.copy l => s.subspan(1).at(t);
            sync.shared;
            out.at(t) = s.at(7 - t);
          }
        }
    """
    out = np.zeros(8, np.int32)
    run(src, out)
    np.testing.assert_array_equal(out, 10 * (7 - np.arange(8)))


def test_inthreads_restricts_the_lanes_of_a_collective_copy():
    # §9.3.2: the copy is a collective of lanes 32-63 only; warp 0 waits at the barrier
    # that ends the inthreads (§6.7.2) and then sees the copied data
    src = """
        __co__ void f(s32 [4] m) {
          parallel p by 1 : block, t by 64 : thread {
            shared s32 [4] s;
            inthreads (t >= 32) {
              dma.copy m => s;
              if (t == 32) println("copied");
            }
            if (t % 32 == 0) println(t, s.at(3));
          }
        }
    """
    assert printed(src, s32(0, 1, 2, 3)) == lines("copied", "0 3", "32 3")


def test_each_block_owns_the_buffer_of_a_new_shared_future():
    # §9.4.1: one buffer per block; block p copies row p
    src = """
        __co__ void f(s32 [2, 2] m) {
          parallel p by 2 : block, t by 2 : thread {
            r = dma.copy m.chunkat(p, _) => shared;
            println(p, t, r.data.at(0, t));
          }
        }
    """
    m = np.array([[0, 1], [2, 3]], np.int32)
    assert printed(src, m) == lines("0 0 0", "0 1 1", "1 0 2", "1 1 3")


def test_transp_permutes_three_dimensions():
    # §9.6.2: destination extents e_{p_k}; dst[i] = src[j] with j_{p_k} = i_k, that is
    # dst[i0, i1, i2] = src[i1, i2, i0]
    src = """
        __co__ auto f(s32 [2, 3, 4] m) {
          s32 [4, 2, 3] out;
          dma.transp<2, 0, 1> m => out;
          return out;
        }
    """
    m = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    want = np.empty((4, 2, 3), np.int32)
    for i0, i1, i2 in np.ndindex(4, 2, 3):
        want[i0, i1, i2] = m[i1, i2, i0]
    np.testing.assert_array_equal(run(src, m)[1], want)


def test_an_async_transp_into_a_new_future():
    # §9.1: dma.transp<p>.async; §9.4.1: the new buffer has the permuted shape [3, 2]
    src = """
        __co__ void f(s32 [2, 3] m) {
          g = dma.transp<1, 0>.async m => global;
          wait g;
          println(g.span, g.data.at(2, 1));
        }
    """
    assert printed(src, np.arange(6, dtype=np.int32).reshape(2, 3)) == "[3, 2] 5\n"


def test_pad_places_source_elements_apart_and_fills_the_rest():
    # §9.6.3: extents 1 + 2 + 1*1 + 0 = 4 and 0 + 3 + 2*1 + 1 = 6; source (i, j) lands
    # at (1 + 2 i, 2 j); every other element is V = -1
    src = """
        __co__ auto f(s32 [2, 3] m) {
          s32 [4, 6] b;
          dma.pad<{1, 0}, {0, 1}, {1, 1}, -1> m => b;
          return b;
        }
    """
    want = np.array([[-1, -1, -1, -1, -1, -1],
                     [0, -1, 1, -1, 2, -1],
                     [-1, -1, -1, -1, -1, -1],
                     [3, -1, 4, -1, 5, -1]], np.int32)
    np.testing.assert_array_equal(run(src, np.arange(6, dtype=np.int32).reshape(2, 3))[1], want)


def test_an_async_pad_into_a_new_future_with_a_float_value():
    # §9.6.3: extents 1 + 2 + 1 = 4 in both dimensions, V converted to the element type
    src = """
        __co__ void f(f32 [2, 2] m) {
          g = dma.pad<{1, 1}, {1, 1}, {0, 0}, 0.5f>.async m => global;
          wait g;
          println(g.span);
          foreach i in [4]
            println(g.data.at(i, 0), g.data.at(i, 1), g.data.at(i, 2), g.data.at(i, 3));
        }
    """
    m = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert printed(src, m) == lines("[4, 4]", "0.5 0.5 0.5 0.5", "0.5 1 2 0.5",
                                    "0.5 3 4 0.5", "0.5 0.5 0.5 0.5")


def test_the_interpreter_accepts_an_async_copy_from_shared_to_global():
    # §9.6.5: only the CUDA generator rejects this direction
    src = """
        __co__ void f(global s32 [4] out) {
          parallel p by 1 : block, t by 4 : thread {
            shared s32 [4] s;
            s.at(t) = t * t;
            g = dma.copy.async s => out;
            wait g;
          }
        }
    """
    out = np.zeros(4, np.int32)
    run(src, out)
    np.testing.assert_array_equal(out, s32(0, 1, 4, 9))


def test_the_spec_example_of_a_tile_outside_its_buffer():
    # §9.5.1: tile 2 of 64 rows starts at row 128 of a 100-row buffer
    src = """
        __co__ void f(f16 [100, 256] lhs) {
          foreach i in [3] {
            t = dma.copy lhs.subspan(64, 256).at(i, 0) => global;
          }
        }
    """
    text = fault(src, np.zeros((100, 256), np.float16))
    assert text.splitlines()[0] == ("spec.co:3:5: runtime error: tile of 'lhs' at origin "
                                    "(128, 0) lies outside [100, 256].")


ZFILL = """
    __co__ auto f(s32 [N] m) {
      s32 [4] b {7};
      dma.copy{zfill} m => b;
      return b;
    }
"""


def test_a_smaller_source_with_zfill_clears_the_rest_of_the_destination():
    # §9.2, §9.5.1: .zfill zeroes destination elements beyond SRC's extents
    src = ZFILL.replace("{zfill}", ".zfill")
    np.testing.assert_array_equal(run(src, s32(1, 2, 3))[1], s32(1, 2, 3, 0))


def test_a_smaller_source_between_global_buffers_needs_zfill_at_run_time():
    # §9.2: smaller needs .zfill; static when known, else at run time
    text = fault(ZFILL.replace("{zfill}", ""), s32(1, 2, 3))
    assert text.startswith("spec.co:3:3: runtime error: 'dma.copy' copies a [3] tile into "
                           "a [4] destination; a tile smaller than its destination needs "
                           "'.zfill'.")
    assert "  in host code of 'f'" in text.splitlines()


@pytest.mark.parametrize("zfill", ["", ".zfill"])
def test_a_source_larger_at_run_time_is_cut_to_the_destination(zfill):
    # §9.5.1: the overlap of the extents is copied
    src = ZFILL.replace("{zfill}", zfill)
    np.testing.assert_array_equal(run(src, s32(1, 2, 3, 4, 5))[1], s32(1, 2, 3, 4))


# =========================================================================== §11 MMA

MMA_LAYOUT = """
    __co__ void f(f16 [{a}] a, f16 [{b}] b, global f32 [2, 3] c) {{
      parallel p by 1 : group {{
        mc = mma.fill.f32 0.0f;
        mma.{layout} mc, a, b;
        mma.store mc, c;
      }}
    }}
"""
RNG = np.random.default_rng(11)
A_MK = RNG.integers(-4, 5, (2, 4)).astype(np.float16)      # M = 2, K = 4: exact products
B_NK = RNG.integers(-4, 5, (3, 4)).astype(np.float16)      # N = 3


@pytest.mark.parametrize("layout, a, b", [
    ("row.row", A_MK, B_NK),                  # A [M, K], B [N, K]
    ("row.col", A_MK, B_NK.T.copy()),         # A [M, K], B [K, N]
    ("col.row", A_MK.T.copy(), B_NK),         # A [K, M], B [N, K]
    ("col.col", A_MK.T.copy(), B_NK.T.copy()),
])
def test_mma_layouts_add_a_times_b_transposed_as_the_table_says(layout, a, b):
    # §11.3: every row of the table adds A[m][k] * B[n][k] in terms of A [M, K], B [N, K]
    src = MMA_LAYOUT.format(a=", ".join(map(str, a.shape)), b=", ".join(map(str, b.shape)),
                            layout=layout)
    c = np.zeros((2, 3), np.float32)
    run(src, a, b, c)
    np.testing.assert_array_equal(c, A_MK.astype(np.float64) @ B_NK.astype(np.float64).T)


ACCUMULATE = """
    __co__ void f({t} [1, 3] a, {t} [1, 3] b, global {c} [1, 1] c) {{
      parallel p by 1 : group {{
        mc = mma.fill{suffix} {fill};
        fa = mma.load a;
        fb = mma.load b;
        mma.row.row mc, fa, fb;
        mma.store mc, c;
      }}
    }}
"""


@pytest.mark.parametrize("t, arr, suffix, fill, c, want", [
    # f16 accumulator: 2048 + 1 is a tie and rounds back to 2048 at every step (§12.4)
    ("f16", np.float16, "", "2048.0f", "f32", 2048),
    ("f16", np.float16, ".f32", "2048.0f", "f32", 2051),
    ("bf16", np.float32, "", "256.0f", "f32", 259),         # bf16 would stay at 256
    ("tf32", np.float32, "", "2048.0f", "f32", 2051),
    ("f8_e4m3", np.float32, "", "2048.0f", "f32", 2051),
    ("f32", np.float32, "", "16777216.0f", "f32", 16777216),   # 2^24 + 1 ties to 2^24
    ("f64", np.float64, "", "16777216.0", "f64", 16777219),
], ids=["f16", "f16-to-f32", "bf16", "tf32", "f8", "f32", "f64"])
def test_the_accumulator_type_follows_the_operand_type(t, arr, suffix, fill, c, want):
    # §11.3.3 (D11): f16 for f16, f32 for bf16, tf32, f8 and f32, f64 for f64, unless .T
    src = ACCUMULATE.format(t=t, suffix=suffix, fill=fill, c=c)
    out = np.zeros((1, 1), np.float64 if c == "f64" else np.float32)
    run(src, np.ones((1, 3), arr), np.ones((1, 3), arr), out)
    assert out[0, 0] == want


FMA = """
    __co__ void f({t} [1, 1] a, {t} [1, 1] b, global {t} [1, 1] c, {t} init) {{
      parallel p by 1 : group {{
        mc = mma.fill init;
        mma.row.row mc, a, b;
        mma.store mc, c;
      }}
    }}
"""


def test_an_f64_step_rounds_the_exact_sum_once():
    # §12.4: a * b = 1 + 2^-29 + 2^-60 exactly; c = -(1 + 2^-29) leaves 2^-60, which a
    # product rounded to f64 first (1 + 2^-29) would lose
    a = np.array([[1 + 2.0 ** -30]])
    c = np.zeros((1, 1))
    run(FMA.format(t="f64"), a, a, c, -(1 + 2.0 ** -29))
    assert c[0, 0] == 2.0 ** -60


def test_an_f32_step_rounds_the_exact_sum_once():
    # §12.4: a * b = 2^-24 + d with 0 < d < 2^-53, so 1 + a * b lies just above the
    # midpoint of 1 and 1 + 2^-23 and rounds up; 1 + a * b rounded to f64 first is the
    # midpoint itself, which ties to even, 1
    a = np.array([[float.fromhex("0x1.9f9d06p+0")]], np.float32)
    b = np.array([[float.fromhex("0x1.3b5ebap-25")]], np.float32)
    c = np.zeros((1, 1), np.float32)
    run(FMA.format(t="f32"), a, b, c, 1.0)
    assert c[0, 0] == 1 + 2.0 ** -23


def test_8_bit_integer_operands_accumulate_in_s32_and_wrap():
    # §11.3.3, §12.4: 2^31 - 100 + 127 + 1 wraps to -2^31 + 28
    src = ACCUMULATE.format(t="s8", suffix="", fill="2147483548", c="s32")
    out = np.zeros((1, 1), np.int32)
    run(src, np.array([[127, 1, 0]], np.int8), np.array([[1, 1, 0]], np.int8), out)
    assert out[0, 0] == -2 ** 31 + 28


def test_signed_and_unsigned_8_bit_operands_mix():
    # §11.3.1: A and B may be two different 8-bit integer types; -200 + 6
    src = """
        __co__ void f(s8 [1, 2] a, u8 [1, 2] b, global s32 [1, 1] c) {
          parallel p by 1 : group {
            mc = mma.fill 0;
            mma.row.row mc, a, b;
            mma.store mc, c;
          }
        }
    """
    out = np.zeros((1, 1), np.int32)
    run(src, np.array([[-1, 2]], np.int8), np.array([[200, 3]], np.uint8), out)
    assert out[0, 0] == -194


def test_the_fill_value_converts_to_the_accumulator_type():
    # §11.3.3: 0.1 rounded to f16, then stored into f32 (§11.3.4)
    src = """
        __co__ void f(global f32 [2, 2] c) {
          parallel p by 1 : group {
            mc = mma.fill.f16 0.1f;
            mma.store mc, c;
          }
        }
    """
    c = np.zeros((2, 2), np.float32)
    run(src, c)
    assert np.all(c == float(np.float16(0.1)))


def test_an_accumulator_without_exec_takes_the_shape_of_its_store():
    # §11.3.3; §11.1: the 'mma.fill mc, v' form refills, mma.commit does nothing (D10)
    src = """
        __co__ void f(global f32 [3, 2] c) {
          parallel p by 1 : group {
            mc = mma.fill.f32 0.0f;
            mma.fill mc, 2.5f;
            mma.commit;
            mma.store mc, c;
          }
        }
    """
    c = np.zeros((3, 2), np.float32)
    run(src, c)
    np.testing.assert_array_equal(c, np.full((3, 2), 2.5))


def test_a_swizzled_load_gives_the_same_operand():
    # §11.1 mma.load.swiz<N>; col.col adds A[k][m] * B[k][n]: a^T a here
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
          parallel p by 1 : group {
            mc = mma.fill.f32 0.0f;
            fa = mma.load.swiz<128> a;
            mma.col.col mc, fa, fa;
            mma.store mc, c;
          }
        }
    """
    a = np.array([[0, 1], [2, 3]], np.float16)
    c = np.zeros((2, 2), np.float32)
    run(src, a, c)
    np.testing.assert_array_equal(c, [[4, 6], [6, 10]])


def test_a_transposed_store():
    # §11.3.4: V is [N, M] and V[n][m] = mc[m][n]
    src = """
        __co__ void f(f16 [2, 3] a, f16 [4, 3] b, global f32 [4, 2] c) {
          parallel p by 1 : group {
            mc = mma.fill.f32 0.0f;
            mma.row.row mc, a, b;
            mma.store.transp mc, c;
          }
        }
    """
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    b = np.arange(12, dtype=np.float16).reshape(4, 3)
    c = np.zeros((4, 2), np.float32)
    run(src, a, b, c)
    np.testing.assert_array_equal(c, (a.astype(np.float64) @ b.astype(np.float64).T).T)


def test_a_store_skips_elements_outside_its_destination():
    # §11.3.4, §8.4: the [4, 4] tile at (4, 4) of a [6, 6] buffer keeps its [2, 2] corner
    src = """
        __co__ void f(f16 [4, 1] a, global f32 [6, 6] c) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            mma.row.row mc, a, a;
            mma.store mc, c.subspan(4, 4).at(1, 1);
          }
        }
    """
    a = np.arange(4, dtype=np.float16).reshape(4, 1)
    c = np.full((6, 6), -1, np.float32)
    run(src, a, c)
    want = np.full((6, 6), -1.0)
    want[4:, 4:] = (1 + a.astype(np.float64) @ a.astype(np.float64).T)[:2, :2]
    np.testing.assert_array_equal(c, want)


def test_a_block_level_fill_gives_each_warpgroup_its_own_accumulator():
    # §11.2 (b): mc is used under 'group-4', so each warpgroup owns a copy; warpgroup g
    # adds ones @ ones^T (all 2) g + 1 times
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 4] c) {
          parallel p by 1 : block {
            mc = mma.fill.f32 0.0f;
            parallel g by 2 : group-4 {
              foreach i in [g + 1]
                mma.row.row mc, a, a;
              mma.store mc, c.subspan(2, 2).at(0, g);
            }
          }
        }
    """
    c = np.zeros((2, 4), np.float32)
    run(src, np.ones((2, 2), np.float16), c)
    np.testing.assert_array_equal(c, [[2, 2, 4, 4], [2, 2, 4, 4]])


def test_a_block_level_store_of_a_fragment_two_warpgroups_own():
    # §11.2: the store is at block level, mc has one copy per warpgroup
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
          parallel p by 1 : block {
            mc = mma.fill.f32 0.0f;
            parallel g by 2 : group-4 {
              mma.row.row mc, a, a;
            }
            mma.store mc, c;
          }
        }
    """
    text = fault(src, np.ones((2, 2), np.float16), np.zeros((2, 2), np.float32))
    assert text.splitlines()[0] == (
        "spec.co:7:5: runtime error: mma.store of 'mc' at block level would write the same "
        "destination from 2 warpgroups; store inside the 'group-4' level.")


def test_a_block_level_store_of_a_fragment_three_warps_own():
    # §11.2, the 'group' kind of the rule above
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
          parallel p by 1 : block {
            mc = mma.fill.f32 0.0f;
            parallel g by 3 : group {
              mma.row.row mc, a, a;
            }
            mma.store mc, c;
          }
        }
    """
    text = fault(src, np.ones((2, 2), np.float16), np.zeros((2, 2), np.float32))
    assert text.splitlines()[0] == (
        "spec.co:7:5: runtime error: mma.store of 'mc' at block level would write the same "
        "destination from 3 warps; store inside the 'group' level.")


def test_a_block_level_store_of_the_only_warpgroups_fragment():
    # §11.2: one unit runs the store, so it writes its copy: ones @ ones^T is all 2
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
          parallel p by 1 : block {
            mc = mma.fill.f32 0.0f;
            parallel g by 1 : group-4 {
              mma.row.row mc, a, a;
            }
            mma.store mc, c;
          }
        }
    """
    c = np.zeros((2, 2), np.float32)
    run(src, np.ones((2, 2), np.float16), c)
    np.testing.assert_array_equal(c, [[2, 2], [2, 2]])


def test_mma_load_from_shared_memory_in_a_warpgroup():
    # D10: mma.load from shared memory is accepted at group-4; row.col adds A @ B
    src = """
        __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
          parallel p by 1 : block {
            shared f16 [2, 2] s;
            dma.copy a => s;
            parallel g by 1 : group-4 {
              mc = mma.fill.f32 0.0f;
              fa = mma.load s;
              mma.row.col mc, fa, fa;
              mma.store mc, c;
            }
          }
        }
    """
    a = np.array([[1, 2], [3, 4]], np.float16)
    c = np.zeros((2, 2), np.float32)
    run(src, a, c)
    np.testing.assert_array_equal(c, [[7, 10], [15, 22]])


def test_a_thread_level_fragment_belongs_to_one_lane():
    # §11.2 (c): lane t accumulates 1 + a[t] * a[t] on its own
    src = """
        __co__ void f(f16 [4, 1] a, global f32 [4, 1] c) {
          parallel p by 1 : block, t by 4 : thread {
            mc = mma.fill.f32 1.0f;
            fa = mma.load a.subspan(1, 1).at(t, 0);
            mma.row.row mc, fa, fa;
            mma.store mc, c.subspan(1, 1).at(t, 0);
          }
        }
    """
    c = np.zeros((4, 1), np.float32)
    run(src, np.arange(4, dtype=np.float16).reshape(4, 1), c)
    np.testing.assert_array_equal(c[:, 0], [1, 2, 5, 10])


UNIT = """
    __co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
      parallel p by 2 : group-4, t by 128 : thread {
        mc = mma.fill.f32 0.0f;
        fa = mma.load a;
        {line}
        mma.store mc, c;
      }
    }
"""


def test_an_mma_whose_unit_lost_lanes_to_yield():
    # §11.2: lanes 32-63 of warpgroup 1 are lanes 160-191 of the block
    src = UNIT.replace("{line}", "if (p == 1 && t >= 32 && t < 64) yield;\n"
                                 "        mma.row.row mc, fa, fa;")
    first = fault(src, np.ones((2, 2), np.float16), np.zeros((2, 2), np.float32))
    assert first.splitlines()[0] == (
        "spec.co:6:5: runtime error: mma.row.row needs all 128 lanes of warpgroup 1, but "
        "lanes 160-191 have terminated.")


def test_an_mma_reached_by_part_of_a_warp_of_its_unit():
    # §11.2, §7.4.4: lanes 160-175 (warp 5, lanes 0-15) skip it
    src = UNIT.replace("{line}", "if (p == 0 || t < 32 || t >= 48)\n"
                                 "          mma.row.row mc, fa, fa;")
    text = fault(src, np.ones((2, 2), np.float16), np.zeros((2, 2), np.float32))
    assert text.splitlines()[0] == (
        "spec.co:6:7: runtime error: mma.row.row needs all 128 lanes of warpgroup 1, but "
        "lanes 160-175 are not active here.")


def test_mma_load_names_the_first_element_outside_its_buffer():
    # §11.3.2: the [32, 4] tile at (48, 3) of a [64, 8] buffer first leaves it at (64, 3)
    src = """
        __co__ void f(f16 [64, 8] lhs) {
          parallel p by 1 : group {
            fa = mma.load lhs.view(32, 4).from(48, 3);
          }
        }
    """
    assert fault(src, np.zeros((64, 8), np.float16)).splitlines()[0] == (
        "spec.co:3:5: runtime error: mma.load reads element (64, 3) outside 'lhs'.")


# =========================================================================== §12 numerics

T = dtypes.BY_NAME


@pytest.mark.parametrize("tx, ty, want", [
    ("s16", "u16", "s32"),          # narrower than 32 bits: both promote to s32
    ("u8", "s8", "s32"),
    ("s32", "u32", "u32"),          # same width: unsigned
    ("u32", "s64", "s64"),          # rank s32 < u32 < s64 < u64
    ("s64", "u64", "u64"),
    ("s8", "f64", "f64"),           # any f64 -> f64
    ("tf32", "tf32", "f32"),        # any f32, tf32 or f8 -> f32
    ("f8_e4m3", "f8_e5m2", "f32"),
    ("f8_e4m3", "f16", "f32"),
    ("tf32", "bf16", "f32"),
    ("f16", "f16", "f16"),
    ("bf16", "bf16", "bf16"),
    ("f16", "bf16", "f32"),
    ("bf16", "s32", "bf16"),        # a float with an integer -> that float type
    ("u64", "f16", "f16"),
])
def test_the_arithmetic_type_of_a_binary_operation(tx, ty, want):
    # §12.2
    x, y = np.zeros(1, T[tx].np), np.zeros(1, T[ty].np)
    assert binary("ADD", x, y, T[tx], T[ty], np.ones(1, bool))[1].name == want


@pytest.mark.parametrize("decls, expr, want", [
    ("", "-7 / 2, -7 % 3, 7 / -2, 7 % -3", "-3 -1 -3 1"),        # §12.3.1
    ("s32 m = -2147483647 - 1;", "m / -1, m % -1", "-2147483648 0"),
    ("s32 m = 2147483647;", "m + 1", "-2147483648"),
    ("u32 u = 0;", "u - 1", "4294967295"),
    ("s8 c = 127;\nc += 1;", "c", "-128"),                     # the store wraps
    ("", "-8 >> 1, 1 << 31", "-4 -2147483648"),                # >> of signed is arithmetic
    ("u32 u = 2147483648;", "u >> 31", "1"),
    ("bf16 a = 256.0f;\nbf16 b = 1.0f;", "a + b", "256"),       # §12.3.2: rounded in bf16
    ("f16 h = 2048.0f;\nf16 one = 1.0f;", "h + one, h + 1.0f", "2048 2049"),
    ("f16 h = 65504.0f;", "h + h", "inf"),                     # overflow gives inf
    ("tf32 [1] t;\nt.at(0) = 1.00146484375f;", "t.at(0)", "1.00195"),   # tie to even
    ("f8_e4m3 e = 500.0f;\nf8_e5m2 g = 70000.0f;", "e, g", "nan inf"),   # §12.3.3
    ("f8_e4m3 s = 0.3f;", "s, s + s", "0.3125 0.625"),
    ("f32 big = 100000.0f;\nf16 h = big;", "h", "inf"),
    ("f32 z = 0.0f;", "1.0f / z, -1.0f / z, z / z", "inf -inf nan"),
    ("", "0.1f + 0.2f == 0.3f, 0.1 + 0.2 == 0.3", "true false"),
    ("f32 n = 0.0f;\nf32 nan = n / n;", "nan < 1.0f, nan >= 1.0f, nan == nan, nan != nan",
     "false false false true"),                                   # §12.3.4
    ("s32 a = -1;\nu32 b = 1;", "a < b", "false"),              # in the common type, u32
    ("f32 x = -2.75f;", "__to<s32>(x), __to<u8>(2.9f)", "-2 2"),  # truncation toward zero
])
def test_integer_and_float_operations(decls, expr, want):
    src = "__co__ void f() {\n" + decls + f"\nprintln({expr});\n}}\n"
    assert printed(src) == want + "\n"


def test_a_64_bit_integer_is_rounded_once_into_bf16():
    # §12.3.3: 2^60 + 2^52 + 1 lies just above the midpoint of 2^60 and 2^60 + 2^53, the
    # bf16 neighbours; rounding it to f64 first would land on the midpoint (2^60 + 2^52)
    # and tie to even, 2^60
    src = """
        __co__ auto f(s64 x) {
          bf16 b = x;
          return b;
        }
    """
    assert run(src, 2 ** 60 + 2 ** 52 + 1)[1] == 2.0 ** 60 + 2.0 ** 53


@pytest.mark.parametrize("target, x, want", [
    ("bf16", 2 ** 60 + 2 ** 52 + 1, 2.0 ** 60 + 2.0 ** 53),
    ("bf16", -(2 ** 60 + 2 ** 52 + 1), -(2.0 ** 60 + 2.0 ** 53)),
    ("bf16", 2 ** 60 + 2 ** 52, 2.0 ** 60),                       # a true tie: to even
    ("tf32", 2 ** 62 + 2 ** 51 + 1, 2.0 ** 62 + 2.0 ** 52),
    ("f32", 2 ** 60 + 2 ** 36 + 1, 2.0 ** 60 + 2.0 ** 37),
])
def test_64_bit_integers_convert_to_narrow_floats_with_one_rounding(target, x, want):
    # §12.3.3, through the numerics module itself
    got = convert(np.array([x], np.int64), T["s64"], T[target], np.ones(1, bool))
    assert float(got[0]) == want


def test_unsigned_64_bit_integers_round_once_into_bf16():
    x = np.array([2 ** 63 + 2 ** 55 + 1], np.uint64)
    assert float(convert(x, T["u64"], T["bf16"], np.ones(1, bool))[0]) == 2.0 ** 63 + 2.0 ** 56


def test_a_64_bit_integer_plus_a_bf16_value_is_computed_in_bf16():
    # §12.2: a float with an integer -> that float type; the integer converts once
    got, t = binary("ADD", np.array([2 ** 60 + 2 ** 52 + 1], np.int64), np.zeros(1, np.float32),
                    T["s64"], T["bf16"], np.ones(1, bool))
    assert (t.name, float(got[0])) == ("bf16", 2.0 ** 60 + 2.0 ** 53)


@pytest.mark.parametrize("params, body, args, message", [
    ("s32 x", "println(1 << x);", [40], "shift count 40 out of range for 's32'."),
    ("s32 x", "println(-1 >> x);", [-1], "shift count -1 out of range for 's32'."),
    ("s32 x", "println(7 / x);", [0], "integer division by zero."),
    ("s32 x", "println(7 % x);", [0], "integer division by zero."),
    ("f32 x", "s32 y = x;", [3e10], "value 3e+10 out of range for 's32'."),
    ("f32 x", "u8 y = x;", [-1.0], "value -1 out of range for 'u8'."),
    ("f32 x", "s32 y = x / x;", [0.0], "value nan out of range for 's32'."),
])
def test_integer_faults(params, body, args, message):
    # §12.3.1, §12.3.3; §15.3: at the statement, in host code
    src = f"__co__ void f({params}) {{\n  {body}\n}}\n"
    text = fault(src, *args)
    assert text.splitlines()[0] == f"spec.co:2:3: runtime error: {message}"
    assert text.splitlines()[-1] == "  in host code of 'f'"


# =========================================================================== §13 output

def test_print_separates_arguments_by_one_space_and_println_ends_the_line():
    # §13.1
    src = """
        __co__ void f() {
          print(1, 2);
          print("x");
          println();
          println("a", 3);
        }
    """
    assert printed(src) == "1 2x\na 3\n"


@pytest.mark.parametrize("decls, expr, want", [
    ("", "true, false", "true false"),
    ("", "42.0f, 1.5f, 1.0f / 3.0f, 100000000000000000000.0f", "42 1.5 0.333333 1e+20"),
    ("", "inf, 0.0f - inf, -0.0f", "inf -inf -0"),
    ("f32 z = 0.0f;", "z / z", "nan"),
    ("", "100000.0, 1000000.0, 0.0001, 0.00001", "100000 1e+06 0.0001 1e-05"),
    ("f16 h = 0.1f;", "h", "0.0999756"),                      # converted to f64 first
    ("u64 u = 0;", "u - 1", "18446744073709551615"),
    ("", '"a\\tb\\\\c"', "a\tb\\c"),                           # strings raw
    ("ituple t = {1, 2};", "t", "{1, 2}"),
    ("mdspan sp : [4, 8];\ns32 [2, 3] a;", "sp, a.span", "[4, 8] [2, 3]"),
])
def test_print_formats(decls, expr, want):
    # §13.2 (D19)
    src = "__co__ void f() {\n" + decls + f"\nprintln({expr});\n}}\n"
    assert printed(src) == want + "\n"


def test_bounded_values_print_in_decimal():
    src = """
        __co__ void f() {
          foreach i in [3]
            println(i, #i, i # i);
        }
    """
    assert printed(src) == lines("0 3 0", "1 3 4", "2 3 8")


def test_output_order_is_blocks_row_major_then_warps_then_lanes():
    # §13.3 (D20), §7.1
    src = """
        __co__ void f() {
          parallel {bi, bj} by [2, 2] : block, t by 64 : thread {
            if (t % 32 < 2) println(bi, bj, t);
          }
        }
    """
    want = [f"{i} {j} {t}" for i in range(2) for j in range(2) for t in (0, 1, 32, 33)]
    assert printed(src) == lines(*want)


# =========================================================================== §14 host side

def test_an_async_launch_runs_to_completion_where_it_is_launched():
    # §14.2: host statements in order; parallel.async runs at the launch point; sync.global
    # waits for pending launches (none are left); global->global DMA on the host lane
    src = """
        __co__ void f() {
          s32 [4] a;
          println("before");
          parallel.async p by 4 : block
            a.at(p) = p + 1;
          println("launched", a.at(3));
          sync.global;
          s32 [4] b;
          dma.copy a => b;
          println("copied", b.at(0), b.at(3));
        }
    """
    assert printed(src) == lines("before", "launched 4", "copied 1 4")


@pytest.mark.parametrize("stream", [None, "anything", 3])
def test_a_stream_parameter_takes_anything(stream):
    # §14.3.1
    src = """
        __co__ void f(stream s, global s32 [4] a) {
          parallel.async<s> p by 4 : block
            a.at(p) = p * 2;
          sync.global;
        }
    """
    a = np.zeros(4, np.int32)
    run(src, stream, a)
    np.testing.assert_array_equal(a, s32(0, 2, 4, 6))


def test_scalar_arguments_convert_to_their_parameter_types():
    # §14.3.1, §3.4.6: binding converts as §12.3 does: 300 wraps to 44 in s8, -1 to
    # 2^32 - 1 in u32, 0.1 rounds to the nearest f16
    src = """
        __co__ void f(s8 x, u32 u, f16 h, bool b) {
          println(x, u, h, b);
        }
    """
    assert printed(src, 300, -1, 0.1, True) == "44 4294967295 0.0999756 true\n"


def test_a_python_int_rounds_once_into_a_float_parameter():
    # §12.3.3: 2^60 + 2^36 + 1 rounds up to 2^60 + 2^37 in f32; through f64 it would
    # first become 2^60 + 2^36, a tie that rounds to even, 2^60
    src = """
        __co__ auto f(f32 x) {
          return x;
        }
    """
    assert run(src, 2 ** 60 + 2 ** 36 + 1)[1] == 2.0 ** 60 + 2.0 ** 37


@pytest.mark.parametrize("t, want", [("f32", 2.0 ** 100 + 2.0 ** 77),
                                     ("bf16", 2.0 ** 100 + 2.0 ** 93)])
def test_a_python_int_wider_than_64_bits_rounds_once_into_a_float_parameter(t, want):
    # §12.3.3: 2^100 + 2^(99-m) + 1, with m the mantissa bits of t, is just above the tie
    # between 2^100 and its next value in t, so it rounds up; through f64 it would first
    # become the tie itself, which rounds to even, 2^100
    m = {"f32": 23, "bf16": 7}[t]
    src = f"__co__ auto f({t} x) {{\n  return x;\n}}\n"
    assert run(src, 2 ** 100 + 2 ** (99 - m) + 1)[1] == want


@pytest.mark.parametrize("t, value", [("f32", 10 ** 400), ("s64", 2 ** 64)],
                         ids=["f32", "s64"])
def test_an_integer_argument_no_type_can_hold(t, value):
    src = f"__co__ auto f({t} x) {{\n  return x;\n}}\n"
    assert argument_error(src, value) == (f"the 1st parameter ('x') is {value}, out of "
                                          f"range for '{t}'.")


def test_an_argument_overflowing_f16_is_infinity():
    # §12.3.3: beyond range after rounding gives inf (and no numpy warning escapes)
    src = "__co__ auto f(f16 x) {\n  return x;\n}\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(src, 1e300)[1] == math.inf


@pytest.mark.parametrize("ret, arg, want", [
    ("s8 x", 300, 44),
    ("bool x", True, True),
    ("f16 x", 0.1, float(np.float16(0.1))),
])
def test_a_returned_scalar_is_a_python_scalar(ret, arg, want):
    # §14.3.4
    src = f"__co__ auto f({ret}) {{\n  return x;\n}}\n"
    got = run(src, arg)[1]
    assert type(got) is type(want) and got == want


@pytest.mark.parametrize("ret, param, arg, want", [
    ("s32", "f32 x", -2.75, -2),              # truncated toward zero (§12.3.3)
    ("u8", "s32 x", 300, 44),                 # wraps modulo 2^8
    ("f16", "f64 x", 0.1, float(np.float16(0.1))),
    ("f32", "s32 x", 16777217, 16777216.0),   # 2^24 + 1 rounds to even
])
def test_a_returned_scalar_converts_to_the_written_result_type(ret, param, arg, want):
    # §14.3.4 with §3.4.6: the returned value initialises a result of the written type
    src = f"__co__ {ret} f({param}) {{\n  return x;\n}}\n"
    got = run(src, arg)[1]
    assert type(got) is type(want) and got == want


def test_a_void_function_returns_none():
    assert run("__co__ void f() {\n  println(1);\n}\n") == ("1\n", None)


def test_a_returned_bf16_buffer_is_a_bfloat16_array_of_rounded_values():
    # §14.3.1: bf16 results come back as ml_dtypes.bfloat16; 1 + 2^-8 + 2^-10 rounds up
    # to 1 + 2^-7
    src = """
        __co__ auto f(f32 x) {
          bf16 [2] r;
          r.at(0) = x;
          r.at(1) = 3;
          return r;
        }
    """
    got = run(src, 1 + 2 ** -8 + 2 ** -10)[1]
    assert got.dtype == ml_dtypes.bfloat16
    assert got.astype(np.float32).tolist() == [1 + 2 ** -7, 3.0]


def test_a_returned_buffer_is_a_new_array():
    # §14.3.4; §14.3.3: the global parameter is also copied back
    src = """
        __co__ auto f(global s32 [2] a) {
          a.at(0) = 9;
          return a;
        }
    """
    a = s32(1, 2)
    got = run(src, a)[1]
    got[1] = 7
    assert a.tolist() == [9, 2] and got.tolist() == [9, 7]


def test_writes_to_a_parameter_that_is_not_global_stay_invisible():
    # §14.3.3
    src = """
        __co__ auto f(s32 [2] a) {
          a.at(0) = 9;
          return a.at(0);
        }
    """
    a = s32(1, 2)
    assert run(src, a)[1] == 9 and a.tolist() == [1, 2]


MATMUL = "__co__ void matmul(f16 [M, K] lhs, f16 [K, N] rhs) { }\n"


def f16(*shape):
    return np.zeros(shape, np.float16)


@pytest.mark.parametrize("source, args, message", [
    (MATMUL, [f16(64, 256), f16(128, 32)],
     "the 2nd parameter ('rhs', dim: 0) is 128 but symbolic dimension 'K' is 256 (bound by "
     "the 1st parameter ('lhs', dim: 1))."),
    ("__co__ void matmul(f16 [64, K] lhs, f16 [K, N] rhs) { }\n", [f16(32, 256), f16(256, 8)],
     "shape inconsistent on the 1st parameter ('lhs', dim: 0): expect: 64, but got 32."),
    (MATMUL, [f16(64, 256, 1), f16(256, 8)],
     "the 1st parameter ('lhs') expects rank 2 but got rank 3."),
    (MATMUL, [np.zeros((64, 256), np.float32), f16(256, 8)],
     "the 1st parameter ('lhs') expects dtype float16 but got float32."),
    (MATMUL, [f16(64, 256), f16(256, 8), f16(1)], "'matmul' takes 2 arguments but got 3."),
], ids=["symbolic", "shape", "rank", "dtype", "count"])
def test_argument_errors_of_the_spec(source, args, message):
    # §14.3.2, verbatim
    assert argument_error(source, *args, func="matmul") == message


def test_an_anonymous_dimension_binds_nothing():
    # §14.3.2
    src = """
        __co__ void f(global s32 [?] a, global s32 [?] b) {
          println(a.span, b.span);
        }
    """
    assert printed(src, np.zeros(3, np.int32), np.zeros(5, np.int32)) == "[3] [5]\n"


DIMS = "__co__ auto f(s32 [N] a) {\n  return N;\n}\n"


def test_a_dimension_given_to_run_must_agree_with_the_arguments():
    assert run(DIMS, np.zeros(3, np.int32), N=3)[1] == 3
    assert argument_error(DIMS, np.zeros(3, np.int32), N=4) == (
        "symbolic dimension 'N' is 3 (bound by the 1st parameter ('a', dim: 0)) but 4 was "
        "given.")


@pytest.mark.parametrize("dims, message", [
    ({"N": "3"}, "symbolic dimension 'N' must be an integer, not '3'."),
    ({"N": 3.0}, "symbolic dimension 'N' must be an integer, not 3.0."),
    ({"M": 3}, "'f' has no symbolic dimension 'M' (its symbolic dimensions: N)."),
    ({"sedd": 1}, "'f' has no symbolic dimension 'sedd' (its symbolic dimensions: N)."),
], ids=["string", "float", "unknown", "misspelt-option"])
def test_dimensions_given_to_run_are_integers_of_the_functions_dimensions(dims, message):
    assert argument_error(DIMS, np.zeros(3, np.int32), **dims) == message


# §14.4: a copy of a tile that reaches past the end of its buffer into the DMA's own
# buffer writes element 0 (a.at(2)) only; element 1 is never written.
PARTIAL = "g = dma.copy a.subspan(2).at(1) => global;"


@pytest.mark.parametrize("t, want", [
    ("s8", -91), ("u8", 0xA5), ("s16", -23131), ("u16", 0xA5A5),
    ("s32", int.from_bytes(b"\xa5" * 4, "little", signed=True)), ("u32", 0xA5A5A5A5),
    ("s64", int.from_bytes(b"\xa5" * 8, "little", signed=True)), ("u64", 0xA5A5A5A5A5A5A5A5),
    ("f16", math.nan), ("bf16", math.nan), ("f32", math.nan), ("f64", math.nan),
])
def test_poison_mode_fills_integers_with_a5_bytes_and_floats_with_nan(t, want):
    # §14.4 (D12): a DMA's own buffer, not a declared one, which starts zeroed; the copy
    # into the declared buffer carries the poison
    src = f"__co__ auto f() {{\n  {t} [3] a;\n  a.at(2) = 1;\n  {PARTIAL}\n" \
          f"  {t} [2] out;\n  dma.copy g.data => out;\n  return out;\n}}\n"
    got = run(src, poison=True)[1]
    assert got[0] == 1
    assert (math.isnan(got[1]) and math.isnan(want)) or int(got[1]) == want


@pytest.mark.parametrize("use", [
    "println(g.data.at(1));",
    "s32 x = g.data.at(1) + 1;",
    "if (g.data.at(1) > 1) println(1);",
], ids=["print", "expression", "comparison"])
def test_poison_mode_reports_reading_a_never_written_element(use):
    # §14.4: the spec's message, at the reading statement
    src = f"__co__ void f() {{\n  s32 [3] a;\n  {PARTIAL}\n  {use}\n}}\n"
    assert fault(src, poison=True).splitlines()[0] == (
        "spec.co:4:3: runtime error: read of uninitialised element g.data.at(1) (buffer "
        "declared at spec.co:3:3).")


def test_poison_mode_reads_declared_buffers_as_their_zeros():
    # §3.2.4, §14.4: a declaration zero-fills its buffer, so reading it is no error
    src = "__co__ void f() {\n  s32 [4, 5] out;\n  println(out.at(3, 4));\n}\n"
    assert run(src, poison=True)[0] == "0\n"


def test_poison_mode_reports_an_mma_operand_never_written():
    # the tile's row 1 lies past b's end: the copy into shared memory leaves it unwritten
    src = """
        __co__ void f(f16 [3, 2] b, global f32 [2, 2] c) {
          parallel p by 1 : block {
            s = dma.copy b.subspan(2, 2).at(1, 0) => shared;
            parallel q by 1 : group {
              fa = mma.load s;
              mc = mma.fill.f32 0.0f;
              mma.row.row mc, fa, fa;
              mma.store mc, c;
            }
          }
        }
    """
    assert fault(src, np.ones((3, 2), np.float16), np.zeros((2, 2), np.float32),
                 poison=True).splitlines()[0] == (
        "spec.co:5:7: runtime error: read of uninitialised element s.at(1, 0) (buffer "
        "declared at spec.co:3:5).")


def test_poison_mode_dma_carries_the_written_state():
    # §14.4: b.at(0) was copied from a written element, b.at(1) from an unwritten one
    src = f"""
        __co__ void f() {{
          s32 [3] a;
          s32 [2] b;
          a.at(2) = 5;
          {PARTIAL}
          dma.copy g.data => b;
          println(b.at(0));
          println(b.at(1));
        }}
    """
    out = io.StringIO()
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(src), "f", out=out, poison=True)
    assert out.getvalue() == "5\n"
    assert str(info.value).splitlines()[0] == (
        "spec.co:8:3: runtime error: read of uninitialised element b.at(1) (buffer declared "
        "at spec.co:3:11).")


# ------------------------------------------------------------------ the croqvm command

@pytest.fixture
def write(tmp_path):
    def _write(name, text):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return str(path)
    return _write


@pytest.mark.parametrize("define, want", [
    (["-D", "X"], "1"), (["-D", "X=7"], "7"), (["--define", "X=2 + 3"], "5"),
], ids=["name", "value", "expression"])
def test_cli_defines(write, capsys, define, want):
    # §14.1, §1.2.4: -D NAME is 1, -D NAME=VALUE is VALUE
    path = write("d.co", "__co__ void f() {\n  println(X);\n}\n")
    assert main(["run", path] + define) == 0
    assert capsys.readouterr().out == want + "\n"


def test_cli_define_with_an_empty_value(write, capsys):
    # §1.2.4: -D NAME=VALUE with VALUE empty defines NAME as nothing
    path = write("d.co", "__co__ void f() {\n  println(X 5);\n}\n")
    assert main(["run", path, "-D", "X="]) == 0
    assert capsys.readouterr().out == "5\n"


def test_cli_runs_every_parameterless_function_in_file_order(write, capsys):
    # §14.1: with the note for the others, word for word
    path = write("m.co", """
        __co__ void b() { println("b"); }
        __co__ auto g(s32 [4] x) { return x; }
        __co__ void a() { println("a"); }
    """)
    assert main(["run", path]) == 0
    out, err = capsys.readouterr()
    assert out == "b\na\n"
    assert err == ("note: skipping 'g': it has parameters; run it with --func g and "
                   "--input/--random-inputs.\n==> b <==\n==> a <==\n")


def test_cli_poison_mode_stops_with_status_3(write, capsys):
    # §14.4, §15.1
    path = write("p.co", f"__co__ void f() {{\n  s32 [3] a;\n  {PARTIAL}\n"
                         f"  println(g.data.at(1));\n}}\n")
    assert main(["run", path]) == 0
    assert capsys.readouterr().out == "0\n"
    for option in ("--poison", "--check=init"):
        assert main(["run", path, option]) == 3
        assert capsys.readouterr().err.startswith(
            f"{path}:4:3: runtime error: read of uninitialised element g.data.at(1) (buffer "
            f"declared at {path}:3:3).")


def test_cli_saves_the_result_and_global_parameters(write, tmp_path, capsys):
    # §14.1: returned arrays and 'global' parameters go to --output, with the inputs
    path = write("g.co", """
        __co__ auto g(global s32 [N] x, s32 [N] y) {
          s32 [N] r;
          foreach i in [N] {
            r.at(i) = x.at(i) + y.at(i);
            x.at(i) = i;
          }
          return r;
        }
    """)
    np.save(tmp_path / "x.npy", s32(10, 20, 30))
    np.save(tmp_path / "y.npy", s32(1, 2, 3))
    out = tmp_path / "out.npz"
    assert main(["run", path, "--func", "g", "--input", f"x={tmp_path / 'x.npy'}",
                 "--input", f"y={tmp_path / 'y.npy'}", "--output", str(out)]) == 0
    saved = np.load(out)
    assert sorted(saved.files) == ["input.x", "input.y", "result", "x"]
    assert saved["result"].tolist() == [11, 22, 33] and saved["x"].tolist() == [0, 1, 2]
    assert saved["input.x"].tolist() == [10, 20, 30] and saved["input.y"].tolist() == [1, 2, 3]


def test_cli_binds_a_scalar_parameter_from_a_file_holding_a_number(write, tmp_path, capsys):
    # §14.1: every parameter comes from --input PARAM=file.npy
    path = write("k.co", """
        __co__ auto g(s32 [N] x, s32 k) {
          s32 [N] r;
          foreach i in [N] r.at(i) = x.at(i) * k;
          return r;
        }
    """)
    np.save(tmp_path / "k.npy", np.int32(3))
    np.save(tmp_path / "x.npy", s32(0, 1, 2, 3))
    out = tmp_path / "out.npz"
    assert main(["run", path, "--func", "g", "--input", f"k={tmp_path / 'k.npy'}",
                 "--input", f"x={tmp_path / 'x.npy'}", "--output", str(out)]) == 0
    assert np.load(out)["result"].tolist() == [0, 3, 6, 9]


def test_cli_an_array_for_a_scalar_parameter_is_a_usage_error(write, tmp_path, capsys):
    path = write("k.co", "__co__ auto g(s32 k) {\n  return k;\n}\n")
    np.save(tmp_path / "k.npy", s32(1, 2))
    assert main(["run", path, "--func", "g", "--input", f"k={tmp_path / 'k.npy'}"]) == 2
    assert ("--input k: 'k' is a scalar parameter, but the file holds an array of shape (2,)"
            in capsys.readouterr().err)


def test_cli_random_inputs_with_a_dimension(write, tmp_path, capsys):
    # §14.1: --random-inputs with --seed, symbolic dimensions from --dim
    path = write("s.co", "__co__ auto s(s32 [N] x) {\n  return N;\n}\n")
    argv = ["run", path, "--func", "s", "--random-inputs", "--seed", "4", "--dim", "N=6",
            "--output", str(tmp_path / "o.npz")]
    assert main(argv) == 0
    assert int(np.load(tmp_path / "o.npz")["result"]) == 6


def test_cli_a_dimension_the_function_lacks_is_a_usage_error(write, capsys):
    path = write("s.co", "__co__ auto s(s32 [N] x) {\n  return N;\n}\n")
    assert main(["run", path, "--func", "s", "--random-inputs", "--dim", "N=6",
                 "--dim", "M=2"]) == 2
    assert "'s' has no symbolic dimension 'M' (its symbolic dimensions: N)." in \
        capsys.readouterr().err


def test_cli_a_static_error_in_run_exits_1(write, capsys):
    # §15.1
    path = write("e.co", "__co__ void f() {\n  int x = 1;\n  x = 2;\n}\n")
    assert main(["run", path]) == 1
    assert f"{path}:3:3: error: only mutables can be re-assigned (x)." in capsys.readouterr().err


# =========================================================================== §15.3

def test_a_runtime_error_in_a_kernel_names_launch_block_and_lane():
    # §15.3: lane 37 is lane 5 of warp 1; blocks are numbered (bi, bj)
    src = """
        __co__ void f(s32 [64] z) {
          parallel {bi, bj} by [2, 2] : block, t by 64 : thread {
            if (bi == 1 && bj == 0)
              println(t / z.at(t));
          }
        }
    """
    z = np.where(np.arange(64) == 37, 0, 1).astype(np.int32)
    text = fault(src, z)
    assert text == "\n".join([
        "spec.co:4:7: runtime error: integer division by zero.",
        "    4 |       println(t / z.at(t));",
        "      |       ^~~~~~~~~~~~~~~~~~~~",
        "  in kernel launched at spec.co:2:3, block (1, 0), lane 37 (warp 1, lane 5)"])


def test_the_first_runtime_error_stops_the_call():
    # §15.3: lanes 0-31 of block (1, 0) printed; warp 1 stopped at lane 37 before printing
    src = """
        __co__ void f(s32 [64] z) {
          parallel {bi, bj} by [2, 2] : block, t by 64 : thread {
            if (bi == 1 && bj == 0)
              println(t / z.at(t));
          }
          println("never");
        }
    """
    z = np.where(np.arange(64) == 37, 0, 1).astype(np.int32)
    out = io.StringIO()
    with pytest.raises(croqvm.KernelFault):
        engines.run(compile_src(src), "f", z, out=out)
    assert out.getvalue() == lines(*(str(t) for t in range(32)))


def test_a_runtime_error_in_host_code_names_the_function():
    src = """
        __co__ void g(s32 x) {
          s32 [2] a;
          a.at(x) = 1;
        }
    """
    assert fault(src, 2, func="g") == "\n".join([
        "spec.co:3:3: runtime error: out-of-range access a.at(2): index 2 of dimension 0 is "
        "not in [0, 2).",
        "    3 |   a.at(x) = 1;",
        "      |   ^~~~~~~~~~~",
        "  in host code of 'g'"])


# ------------------------------------------------- MMA shapes known only at run time

def test_a_store_into_a_view_of_another_shape_than_the_accumulator():
    # §11.3.4: V is [M, N]; the [4, 4] accumulator does not fit the [2, 2] view (the
    # checker reports the same words when the shapes are known statically)
    src = """
        __co__ void f(f16 [4, 1] a, global f32 [6, 6] c, s32 n) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            mma.row.row mc, a, a;
            mma.store mc, c.view(n, n).from(0, 0);
          }
        }
    """
    c = np.zeros((6, 6), np.float32)
    text = fault(src, np.ones((4, 1), np.float16), c, 2)
    assert text.splitlines()[0] == ("spec.co:5:5: runtime error: MMA: matrix shapes do not "
                                    "match: `mc'([4, 4]) v.s. `c'([2, 2]).")
    assert not c.any()


def test_an_accumulator_stored_into_a_larger_destination():
    # §11.3.4: M = N = 2 from the arguments, but c is [4, 4]
    src = """
        __co__ void f(f16 [M, K] a, f16 [N, K] b, global f32 [4, 4] c) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            mma.row.row mc, a, b;
            mma.store mc, c;
          }
        }
    """
    ones = np.ones((2, 2), np.float16)
    assert fault(src, ones, ones, np.zeros((4, 4), np.float32)).splitlines()[0] == (
        "spec.co:5:5: runtime error: MMA: matrix shapes do not match: `mc'([2, 2]) v.s. "
        "`c'([4, 4]).")


def test_an_exec_whose_operands_disagree_with_the_accumulator():
    # §11.3.1: mc is [4, 4] after the first exec; b [2, 1] gives M = 2 (the checker's
    # choice of operand: A when M disagrees)
    src = """
        __co__ void f(f16 [M, 1] a, f16 [2, 1] b) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            fa = mma.load a;
            fb = mma.load b;
            mma.row.row mc, fa, fa;
            mma.row.row mc, fb, fb;
          }
        }
    """
    assert fault(src, np.ones((4, 1), np.float16), np.ones((2, 1), np.float16)).splitlines()[0] \
        == ("spec.co:7:5: runtime error: MMA: matrix shapes do not match: `mc'([4, 4]) v.s. "
            "`fb'([2, 1]).")


def test_an_exec_whose_operands_disagree_with_each_other():
    # §11.3.1: K is 2 in A and 3 in B
    src = """
        __co__ void f(f16 [M, K] a, f16 [N, L] b) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            fa = mma.load a;
            fb = mma.load b;
            mma.row.row mc, fa, fb;
          }
        }
    """
    assert fault(src, np.ones((4, 2), np.float16), np.ones((4, 3), np.float16)).splitlines()[0] \
        == ("spec.co:6:5: runtime error: MMA: matrix shapes do not match: `fa'([4, 2]) v.s. "
            "`fb'([4, 3]).")


def test_a_shape_error_quotes_operands_loaded_implicitly_as_written():
    # §11.1: view operands are loaded implicitly; §11.3.1: K is 2 in A and 3 in B
    src = """
        __co__ void f(f16 [M, K] a, f16 [N, L] b) {
          parallel p by 1 : group {
            mc = mma.fill.f32 1.0f;
            mma.row.row mc, a, b.subspan(4, L);
          }
        }
    """
    assert fault(src, np.ones((4, 2), np.float16), np.ones((4, 3), np.float16)).splitlines()[0] \
        == ("spec.co:4:5: runtime error: MMA: matrix shapes do not match: `a'([4, 2]) v.s. "
            "`b.subspan(4, L)'([4, 3]).")
