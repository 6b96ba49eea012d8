"""Scopes (LANGUAGE.md §3.4.4, D13) and the view forms of §8, run on every engine; the
expected values are computed by hand or with numpy slicing."""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def compile_src(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "views.co")


def run(source: str, *args, func: str = "f"):
    """Run ``func``; return (what it printed, what it returned)."""
    out = io.StringIO()
    result = engines.run(compile_src(source), func, *args, out=out)
    return out.getvalue(), result


# =========================================================================== §3.4 scopes


def test_an_inner_declaration_shadows_and_its_initializer_reads_the_outer_name():
    text, _ = run("""
        __co__ void f(int x) {
          parallel p by 2 {
            println(x);
            parallel q by 1 {
              int x = x + 10;
              println(x);
            }
            println(x);
          }
          println(x);
        }
    """, 5)
    assert text == "5\n15\n5\n5\n15\n5\n5\n"


def test_buffers_and_events_of_the_same_name_in_nested_parallels_are_distinct():
    text, _ = run("""
        __co__ void f() {
          parallel b by 1 : block {
            shared s32 [2] buf;
            shared event e;
            parallel t by 2 : thread {
              local s32 [2] buf;
              buf.at(t) = 7;
              println(buf.at(0) + buf.at(1));
            }
            println(buf.at(0), buf.at(1));
          }
        }
    """)
    assert text == "7\n7\n0 0\n"


def test_an_outer_scalar_changed_in_a_parallel_is_each_instance_s_own_copy():
    text, _ = run("""
        __co__ void f() {
          mutable int n = 100;
          s32 [2, 4] seen;
          parallel b by 2 : block {
            mutable int m = b;
            parallel t by 4 : thread {
              n = n + t;
              m += 10 * t;
              n++;
              seen.at(b, t) = n * 1000 + m;
            }
          }
          println(n);
          foreach {i, j} in [2, 4] print(seen.at(i, j), "");
        }
    """)
    expected = [(100 + t + 1) * 1000 + b + 10 * t for b in range(2) for t in range(4)]
    assert text == "100\n" + "".join(f"{x} " for x in expected)


def test_assigning_an_outer_immutable_in_a_block_declares_a_new_name():
    program = compile_src("""
        __co__ void f() {
          int k = 2;
          if (true) {
            k = 5;
            println(k);
          }
          println(k);
        }
    """)
    assert ("4:5: warning: 'k = ...' declares a new 'k' that shadows the immutable one of "
            "an enclosing scope; it is not an assignment.") in program.warnings
    out = io.StringIO()
    engines.run(program, "f", out=out)
    assert out.getvalue() == "5\n2\n"


def test_an_unroll_hint_changes_nothing_a_loop_does():
    text, _ = run("""
        __co__ void f() {
          with idx = {x, y} in [2, 3] {
            foreach idx : unroll(2) print(x # y, "");
          }
          foreach i in [3] : unroll print(i, "");
          println();
        }
    """)
    assert text == "0 1 2 3 4 5 0 1 2 \n"


# =========================================================================== shapes


def test_mdspan_and_ituple_declarations_elements_and_a_single_name_over_several_bounds():
    text, _ = run("""
        __co__ void f(s32 x) {
          a : [7, 8, 9];
          mdspan<2> b : [a(2), 4];
          ituple<3> t = {1, x, 3};
          println(a, b, t, a(0) + b(1), |a|);
          with idx in [t] {
            foreach idx print(idx, "");
          }
          println();
        }
    """, np.int32(2))
    assert text == ("[7, 8, 9] [9, 4] {1, 2, 3} 11 504\n"
                    "{0, 0, 0} {0, 0, 1} {0, 0, 2} {0, 1, 0} {0, 1, 1} {0, 1, 2} \n")


def test_mdspan_arithmetic_works_dimension_by_dimension():
    text, _ = run("""
        __co__ void f(s32 k) {
          shape : [12, 18, 7];
          halved : shape / 2;
          tiled : shape / {4, 3, k};
          grown : [shape + 1, 5];
          s32 [tiled - {1, 1, 0}] b;
          rest : shape % 5;
          println(halved, tiled, grown, b.span, |rest|);
          derived : shape [(0) / 2, (2) + (1), 1];
          mdspan<2> both : tiled [(1) * 10, k];
          println(derived, both);
        }
    """, np.int32(7))
    assert text == ("[6, 9, 3] [3, 6, 1] [13, 19, 8, 5] [2, 5, 1] 12\n"
                    "[6, 25, 1] [60, 7]\n")


# =========================================================================== §8 views


def test_a_wildcard_in_view_keeps_the_whole_extent():
    a = np.arange(2 * 5 * 4, dtype=np.int32).reshape(2, 5, 4)
    _, out = run("""
        __co__ s32 [2, 5, 4] f(s32 [2, 5, 4] a) {
          s32 [2, 5, 4] out;
          parallel p by 2 : block {
            foreach x in 2 {
              rows = (x == 1) ? 2 : 3;
              shared s32 [1, 3, 4] t;
              dma.copy a.view(1, rows, _).from(p, 3 * x, 0) => t.subspan(1, rows, _);
              dma.copy t.subspan(1, rows, _) => out.view(1, rows, _).from(p, 3 * x, 0);
            }
          }
          return out;
        }
    """, a)
    np.testing.assert_array_equal(out, a)


def test_a_smaller_source_zero_fills_the_rest_of_a_shared_destination_without_zfill():
    a = (np.arange(5 * 4, dtype=np.int32).reshape(5, 4) + 1)
    _, out = run("""
        __co__ s32 [8, 4] f(s32 [5, 4] a) {
          s32 [8, 4] out;
          parallel p by 1 : block {
            shared s32 [8, 4] buf {-1};
            fut = dma.copy.async a.subspan(5, 4) => buf.subspan(8, 4);
            wait fut;
            println(fut.span);
            dma.copy buf => out;
          }
          return out;
        }
    """, a)
    expected = np.zeros((8, 4), np.int32)
    expected[:5] = a
    np.testing.assert_array_equal(out, expected)


def test_tiles_cut_at_a_runtime_edge_zero_fill_into_shared_and_are_cut_into_global():
    # §9.5.1: the last row tile has 3 rows; the shared tile reads 0 below them (its row 3,
    # copied into row 0), and the 4-row shared tile is cut to the 3-row global view
    a = np.arange(7 * 8, dtype=np.int32).reshape(7, 8) - 20
    _, out = run("""
        __co__ s32 [8, 8] f(s32 [M, 8] a) {
          s32 [8, 8] out {-1};
          parallel p by 2 : block {
            rows = (p == 1) ? M - 4 : 4;
            shared s32 [4, 8] t;
            dma.copy a.view(rows, 8).from(4 * p, 0) => t;
            t.at(0, 1) = t.at(3, 1);
            dma.copy t => out.view(rows, 8).from(4 * p, 0);
          }
          return out;
        }
    """, a)
    expected = np.full((8, 8), -1, np.int32)
    expected[:7] = a
    expected[0, 1], expected[4, 1] = a[3, 1], 0
    np.testing.assert_array_equal(out, expected)


def test_placeholders_declared_outside_a_parallel_by_are_each_instances_own():
    # §3.4.5: 'f0' and 'f1' are given data only inside, so each block has its own pair
    a = np.arange(2 * 8, dtype=np.int32).reshape(2, 8) * 3 - 5
    _, out = run("""
        __co__ s32 [2, 8] f(s32 [2, 8] a) {
          s32 [2, 8] out;
          f0 = dma.any;
          f1 = dma.any;
          parallel p by 2 : block {
            f1 = dma.copy.async a.subspan(1, 8).at(p, 0) => shared;
            rotate(f0, f1);
            wait f0;
            dma.copy f0.data => out.subspan(1, 8).at(p, 0);
          }
          return out;
        }
    """, a)
    np.testing.assert_array_equal(out, a)


def test_span_as_and_sqz_name_views_whose_elements_are_those_of_numpy_reshapes():
    a = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4) * 3 - 7
    text, _ = run("""
        __co__ void f(s32 [2, 3, 4] a) {
          l = a.span_as(6, 4);
          m = a.span_as([6, 4]).subspan(2, 4).at(1, 0);
          n = a.subspan(1, 3, 4).at(1, 0, 0).sqz();
          c = n.subspan(2, 4).at(0, 0).span_as([8]);
          r = a.span_as(4, 6).subspan(1, 6).at(2, 0).sqz().span_as(2, 3);
          println(l.span, m.span, n.span, c.span, r.span);
          println(l.at(5, 3), m.at(1, 2), n.at(2, 3), c.at(6));
          foreach {i, j} in r.span print(r.at(i, j), "");
        }
    """, a)
    flat = a.reshape(6, 4)
    r = a.reshape(4, 6)[2].reshape(2, 3)
    assert text.splitlines() == [
        "[6, 4] [2, 4] [3, 4] [8] [2, 3]",
        f"{flat[5, 3]} {flat[2:4][1, 2]} {a[1][2, 3]} {a[1][:2].reshape(-1)[6]}",
        " ".join(str(x) for x in r.reshape(-1)) + " "]


def test_a_view_with_element_strides_reads_and_writes_numpy_s_strided_elements():
    """``view(e : t).from(f)``: element x lies sum((f + x) * t) elements after the
    source's first element in memory (Croqtile: view-operations.md; span_assign.co
    places 'a.view(16, 8 : 12, 3).from(17, 18)' at a + 258); a chunkat of it scales its
    offsets by the strides too, in a kernel as on the host."""
    a = (np.arange(8 * 6, dtype=np.int32) * 7 - 20).reshape(8, 6)
    flat = a.reshape(-1)
    text, out = run("""
        __co__ s32 [2, 4, 3] f(global s32 [8, 6] a) {
          b = a.view(4, 3 : 8, 3).from(1, 2);
          c = a.subspan(4, 6).at(1, 0).view(_, 2 : 1, 6).from(0, 1);
          s32 [2, 4, 3] out;
          parallel p by 2 : block, t by 12 : thread {
            d = b.chunkat(p, _);
            out.at(p, t / 3, t % 3) = d.at(t / 3 / 2, t % 3) + b.at(t / 3, t % 3);
          }
          println(b.span, c.span, b.at(3, 2), c.at(0, 1), c.at(2, 0));
          c.at(1, 1) = 5;
          return out;
        }
    """, a)
    b = np.lib.stride_tricks.as_strided(flat[8 * 1 + 3 * 2:], (4, 3), (8 * 4, 3 * 4))
    c = np.lib.stride_tricks.as_strided(flat[24 + 6:], (4, 2), (4, 24))
    assert text == f"[4, 3] [4, 2] {b[3, 2]} {c[0, 1]} {c[2, 0]}\n"
    want = np.stack([b[2 * p:2 * p + 2][np.arange(4) // 2] + b for p in range(2)])
    np.testing.assert_array_equal(out, want)
    assert a.reshape(-1)[24 + 6 + 1 + 6] == 5


def test_a_view_with_element_strides_past_its_source_is_a_runtime_error():
    with pytest.raises(croqvm.KernelFault) as info:
        run("""
            __co__ void f(s32 [8, 6] a, int r) {
              b = a.view(4, 3 : 10, 3).from(r, 2);
              foreach {i, j} in [4, 3]
                println(b.at(i, j));
            }
        """, np.zeros((8, 6), np.int32), 1)
    assert str(info.value).splitlines()[0] == (
        "views.co:4:5: runtime error: a view with element strides reaches element 49 of "
        "'a' in memory order, which has 48 elements.")


def test_a_dma_gathers_and_scatters_the_elements_of_a_view_with_element_strides():
    """A strided view as a DMA source and destination is numpy's as_strided of the
    buffer's memory (span_assign.co: 'a.view(16, 8 : 12, 3).from(17, 18)' lies at
    a + 258, and its chunkat(p, p) at 96p + 12p more)."""
    a = (np.arange(64 * 32, dtype=np.float32) * 0.5 - 100).reshape(64, 32)
    out = np.zeros((2, 8, 4), np.float32)
    scattered = np.zeros((64, 32), np.float32)
    run("""
        __co__ void f(f32 [64, 32] a, global f32 [2, 8, 4] out, global f32 [64, 32] s) {
          parallel p by 2 : block {
            b = a.view(16, 8 : 12, 3).from(17, 18);
            d = dma.copy b.chunkat(p, p) => shared;
            dma.copy d => out.subspan(1, 8, 4).at(p, 0, 0).sqz();
            dma.copy d => s.view(8, 4 : 5, 7).from(p * 8, 0);
          }
        }
    """, a, out, scattered)
    b = np.lib.stride_tricks.as_strided(a.reshape(-1)[258:], (16, 8), (12 * 4, 3 * 4))
    want = np.zeros(64 * 32, np.float32)
    for p in range(2):
        np.testing.assert_array_equal(out[p], b[8 * p:8 * p + 8, 4 * p:4 * p + 4])
        spots = 5 * (8 * p + np.arange(8))[:, None] + 7 * np.arange(4)[None, :]
        want[spots] = b[8 * p:8 * p + 8, 4 * p:4 * p + 4]
    np.testing.assert_array_equal(scattered.reshape(-1), want)


def test_a_strided_dma_past_its_source_is_a_runtime_error_and_a_static_one_when_known():
    source = """
        __co__ void f(f32 [64, 32] a, int r) {
          parallel p by 2 : block
            d = dma.copy a.view(16, 8 : 12, 3).from(r, 0) => shared;
        }
    """
    with pytest.raises(croqvm.KernelFault) as info:
        run(source, np.zeros((64, 32), np.float32), 156)
    assert str(info.value).splitlines()[0] == (
        "views.co:3:5: runtime error: a view with element strides reaches element 2073 of "
        "'a' in memory order, which has 2048 elements.")
    with pytest.raises(croqvm.CompileError, match="reaches element 2073 of 'a' in memory "
                       "order, which has 2048 elements"):
        compile_src(source.replace("from(r, 0)", "from(156, 0)"))


def test_a_view_with_element_strides_is_no_mma_operand_yet():
    with pytest.raises(croqvm.CompileError, match="a view with element strides or a "
                       "'span_as' of a future's data as an MMA operand"):
        compile_src("""
            __co__ void f(f16 [64, 64] a) {
              parallel p by 1 : block {
                s = dma.copy a => shared;
                parallel w by 1 : group-4 {
                  mc = mma.fill.f32 0.0f;
                  ma = mma.load s.data.view(16, 16 : 64, 2).from(0, 0);
                  mb = mma.load s.data.subspan(16, 16).at(0, 0);
                  mma.row.col mc, ma, mb;
                }
              }
            }
        """)


def test_named_views_are_read_and_written_inside_parallel_regions():
    a = np.arange(2 * 3 * 8, dtype=np.int32).reshape(2, 3, 8)
    _, out = run("""
        __co__ s32 [6, 8] f(s32 [2, 3, 8] a) {
          l = a.span_as(6, 8);
          s32 [l.span] out;
          parallel p by 6, q by 8 {
            row = out.subspan(1, 8).at(p, 0).sqz();
            row.at(q) = l.at(p, q) * 2 + 1;
          }
          return out;
        }
    """, a)
    np.testing.assert_array_equal(out, a.reshape(6, 8) * 2 + 1)


def test_a_buffer_of_an_array_named_again_is_that_buffer():
    text, _ = run("""
        __co__ void f() {
          parallel p by 1 : block {
            shared s32 [8] s[3][2];
            s0 = s[2][1];
            t = s[2][1].span_as(2, 4);
            parallel q by 8 : thread
              s0.at(q) = q * q;
            local s32 [8] mine;
            dma.copy s0 => mine;
            println(s[2][1].at(5), t.at(1, 1), mine.at(6), s0.span);
          }
        }
    """)
    assert text == "25 25 36 [8]\n"


def test_an_element_outside_what_a_view_shows_is_a_runtime_error():
    program = compile_src("""
        __co__ void f(s32 [4, 4] a) {
          v = a.subspan(2, 4).at(1, 0);
          mutable int i = 0;
          while (i < 3) {
            println(v.at(i, 1));
            i += 1;
          }
        }
    """)
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(program, "f", np.zeros((4, 4), np.int32), out=io.StringIO())
    assert ("views.co:5:5: runtime error: out-of-range access v.at(i, 1): index 2 of "
            "dimension 0 is not in [0, 2).") in str(info.value)


def test_a_dma_copies_a_span_as_of_a_futures_data_as_numpy_reshapes_it():
    """span_ops.co's 'dma.copy f.span_as([12, 9]) => output.chunkat(x, y)' and its
    'f.data.span_as' twin: the future's elements in row-major order, reshaped. Blocks 0
    and 2 write the same tiles: the blocks run in order, on one thread, block 2 last."""
    a = np.arange(32 * 18 * 9, dtype=np.float32).reshape(32, 18, 9) - 500
    out = np.zeros((48, 36), np.float32)
    engines.run(compile_src("""
        __co__ void f(f32 [32, 18, 9] a, global f32 [48, 36] output) {
          parallel p by 3 : block {
            foreach {x, y} in [4, 4] {
              f = dma.copy a.span_as([16, 9, 36]).chunkat(x, p, y) => local;
              if (p == 0) dma.copy f.span_as([12, 9]) => output.chunkat(x, y);
              if (p == 2) dma.copy f.data.span_as([12, 9]) => output.chunkat(x, y);
            }
          }
        }
    """), "f", a, out, out=io.StringIO(), jobs=1)
    v = a.reshape(16, 9, 36)
    want = np.zeros((48, 36), np.float32)
    for x in range(4):
        for y in range(4):
            want[12 * x:12 * x + 12, 9 * y:9 * y + 9] = \
                v[4 * x:4 * x + 4, 6:9, 9 * y:9 * y + 9].reshape(12, 9)
    np.testing.assert_array_equal(out, want)


def test_a_dma_gathers_a_strided_view_of_a_futures_data_from_its_first_element():
    a = np.arange(6 * 8, dtype=np.int32).reshape(6, 8) * 3 - 50
    out = np.zeros((2, 3), np.int32)
    run("""
        __co__ void f(s32 [6, 8] a, global s32 [2, 3] out) {
          parallel p by 1 : block {
            t = dma.copy a.subspan(4, 8).at(0, 0) => shared;
            dma.copy t.data.view(2, 3 : 5, 2).from(1, 0) => out;
          }
        }
    """, a, out)
    flat = a[:4].reshape(-1)
    np.testing.assert_array_equal(
        out, np.lib.stride_tricks.as_strided(flat[5:], (2, 3), (5 * 4, 2 * 4)))


def test_a_span_as_of_a_futures_data_not_contiguous_in_its_buffer_is_a_runtime_error():
    with pytest.raises(croqvm.KernelFault) as info:
        run("""
            __co__ void f(s32 [4, 4] a, global s32 [4, 8] b) {
              parallel p by 1 : block {
                t = dma.copy a => b.subspan(4, 4).at(0, 1);
                dma.copy t.data.span_as([16]) => shared;
              }
            }
        """, np.zeros((4, 4), np.int32), np.zeros((4, 8), np.int32))
    assert str(info.value).splitlines()[0] == (
        "views.co:4:5: runtime error: the data of future 't', a [4, 4] tile of 'b' at "
        "origin (0, 4), does not lie contiguous in memory, which a 'span_as' or element "
        "strides of it address.")


def test_span_as_of_a_view_contiguous_only_for_some_extents_is_checked_at_run_time():
    """future_rotate.co's 'o.span_as([B * T, H, V]).view(T, _, _)...chunkat(i, _, c)':
    the checker warns; the reshape runs where the tile is contiguous (H = 1)."""
    source = """
        __co__ void f(global s32 [T, H, V] o) {
          parallel c by 2 : block {
            local s32 [H * (V / 2)] l;
            foreach i in T {
              foreach k in H * (V / 2) l.at(k) = i * 100 + c * 10 + k;
              dma.copy l => o.view(T, _, _).from(0, 0, 0).chunkat(i, _, c)
                             .span_as([H * (V / 2)]);
            }
          }
        }
    """
    program = compile_src(source)
    assert "span_as may be applied to a view that is not contiguous" in program.warnings
    o = np.zeros((3, 1, 8), np.int32)
    engines.run(program, "f", o)
    want = np.arange(3)[:, None, None] * 100 + np.array([0, 10])[None, None, :].repeat(4, 2) \
        + np.tile(np.arange(4), 2)[None, None, :]
    np.testing.assert_array_equal(o, want)
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(program, "f", np.zeros((3, 2, 8), np.int32))
    assert str(info.value).splitlines()[0] == (
        "views.co:6:7: runtime error: span_as needs a contiguous view, but dimension 2 of "
        "'o' spans [0, 4) of [0, 8) after a dimension of extent other than 1.")


def test_a_future_filled_through_a_reshape_is_waited_but_its_data_is_not_used():
    source = """
        __co__ void f(s32 [8] a, global s32 [2, 4] b) {
          parallel p by 1 : block {
            g = dma.any;
            g = dma.copy.async a => b.span_as([8]);
            wait g;
            USE
          }
        }
    """
    b = np.zeros((2, 4), np.int32)
    run(source.replace("USE", ""), np.arange(8, dtype=np.int32), b)
    np.testing.assert_array_equal(b.reshape(-1), np.arange(8))
    with pytest.raises(croqvm.CompileError, match="the data of a future filled through a "
                       r"view made by 'span_as', '.sqz\(\)' or element strides \(a view "
                       r"of its data\)"):
        compile_src(source.replace("USE", "dma.copy g.data => shared;"))


def test_a_global_buffer_declared_in_a_parallel_is_one_buffer_for_the_call():
    _, out = run("""
        __co__ s32 [2, 3] f() {
          s32 [2, 3] out;
          foreach round in [2] {
            parallel b by 2 : block {
              s32 [2, 3] acc;                 // global: one buffer, kept across launches
              parallel t by 3 : thread {
                acc.at(b, t) += b * 10 + t;
                out.at(b, t) = acc.at(b, t);
              }
            }
          }
          return out;
        }
    """)
    b, t = np.meshgrid(np.arange(2), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(out, 2 * (b * 10 + t))


# =========================================================================== §8.3 as operands


def test_span_as_and_sqz_views_are_dma_operands_as_numpy_reshapes_them():
    src = """
        __co__ void f(f32 [4, 6] a, global f32 [1, 2, 12] b, global f32 [12, 2] c,
                      global f32 [24] d) {
          parallel j by 3 : block {
            dma.copy a.span_as([2, 12]).chunkat(_, j)
                => b.subspan(1, 2, 12).at(0, 0, 0).sqz().chunkat(_, j);
            dma.transp<1, 0> a.span_as([2, 12]).chunkat(_, j)
                => c.chunkat(j, _);
            dma.copy a.span_as([24]).subspan(8).at(2 - j)
                => d.span_as([3, 8]).subspan(1, 8).at(j, 0).sqz();
          }
        }
    """
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b, c = np.zeros((1, 2, 12), np.float32), np.zeros((12, 2), np.float32)
    d = np.zeros(24, np.float32)
    run(src, a, b, c, d)
    np.testing.assert_array_equal(b[0], a.reshape(2, 12))
    np.testing.assert_array_equal(c, a.reshape(2, 12).T)
    np.testing.assert_array_equal(d.reshape(3, 8), a.reshape(3, 8)[::-1])


def test_a_span_as_of_a_view_outside_its_buffer_faults_where_it_is_used():
    src = """
        __co__ void f(f32 [4, 6] a, global f32 [2, 3] b, int k) {
          parallel p by 1 : block {
            dma.copy a.subspan(1, 6).at(k, 0).span_as([2, 3]) => b;
          }
        }
    """
    b = np.zeros((2, 3), np.float32)
    run(src, np.ones((4, 6), np.float32), b, 3)
    np.testing.assert_array_equal(b, np.ones((2, 3)))
    with pytest.raises(croqvm.CroqvmError, match=r"views.co:3:.*span_as of a view outside a: "
                                                 r"dimension 0 spans \[4, 5\) of \[0, 4\)"):
        run(src, np.ones((4, 6), np.float32), b, 4)


def test_span_as_and_sqz_views_are_mma_operands():
    src = """
        __co__ void f(f16 [2, 16, 16] a, f16 [16, 2, 16] b, global f32 [3, 16, 16] out) {
          parallel p by 1 : block {
            parallel w by 1 : group {
              mc = mma.fill.f32 0.0f;
              ma = mma.load a.span_as([32, 16]).subspan(16, 16).at(1, 0);
              mb = mma.load b.subspan(16, 1, 16).at(0, 1, 0).sqz();
              mma.row.col mc, ma, mb;
              mma.store mc, out.subspan(1, 16, 16).at(2, 0, 0).sqz();
            }
          }
        }
    """
    rng = np.random.default_rng(0)      # small integers: every sum is exact
    a = rng.integers(-4, 4, (2, 16, 16)).astype(np.float16)
    b = rng.integers(-4, 4, (16, 2, 16)).astype(np.float16)
    out = np.zeros((3, 16, 16), np.float32)
    run(src, a, b, out)
    np.testing.assert_array_equal(out[2], a[1].astype(np.float64) @ b[:, 1, :])
    np.testing.assert_array_equal(out[:2], 0)


def test_a_sqz_view_outside_its_buffer_faults_as_a_tile_outside_it():
    src = """
        __co__ void f(f32 [2, 3] a, global f32 [2, 2, 3] b, int k) {
          parallel p by 1 : block {
            dma.copy a => b.subspan(1, 2, 3).at(k, 0, 0).sqz();
          }
        }
    """
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((2, 2, 3), np.float32)
    run(src, a, b, 1)
    np.testing.assert_array_equal(b, [np.zeros((2, 3)), a])
    with pytest.raises(croqvm.KernelFault, match=r"views.co:3:5: runtime error: tile of 'b' "
                                                 r"at origin \(2, 0, 0\) lies outside "
                                                 r"\[2, 2, 3\]\."):
        run(src, a, b, 2)
