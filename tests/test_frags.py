"""Register fragments (LANGUAGE.md §11.7): frag declarations, apply, copy, reduce_*,
all_reduce_*, accumulator elements held per lane by the PTX fragment layouts, and their
diagnostics. Expected values are numpy's or derived by hand from the PTX ISA's layouts."""
import io

import numpy as np
import pytest

import croqvm
import engines
from croqvm.core.errors import KernelFault
from croqvm.lang.frontend import front_end
from lane_order import row_sums_in_lane_order

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def printed(source: str, func: str) -> str:
    out = io.StringIO()
    engines.run(croqvm.compile(source, "t.co"), func, out=out)
    return out.getvalue()


THREAD_FRAGS = """
__co__ void ops() {
  parallel t by 1 : thread {
    frag s32[2, 3] src;
    frag s32[2, 3] dst {7};
    foreach i in 2
      foreach j in 3
        src.at(i, j) = i * 3 + j + 1;
    copy(dst, src);
    apply {x, y} in dst.span
      dst.at(x, y) = dst.at(x, y) * 2;
    frag s32[1, 2] rsum;
    frag s32[2] rmax;
    frag f32[2, 1] rmin;
    reduce_sum(rsum, dst, 1);
    reduce_max(rmax, dst, 1);
    reduce_min(rmin, dst, 1);
    all_reduce_sum(rmax);
    println(dst.at(0, 0), dst.at(1, 2), rsum.at(0, 0), rsum.at(0, 1), rmax.at(0),
            rmax.at(1), rmin.at(0, 0), rmin.at(1, 0));
  }
}
"""


def test_thread_fragments():
    # dst = 2 * [[1, 2, 3], [4, 5, 6]]; all_reduce of one lane's fragment changes nothing
    assert printed(THREAD_FRAGS, "ops") == "2 12 12 30 6 12 2 8\n"


HOST_OPS = """
__co__ void host() {
  s32[3, 4] mat;
  f32[3] rsum;
  s32[4] a, b;
  foreach i in 3
    foreach j in 4
      mat.at(i, j) = i * 4 + j + 1;
  foreach i in 4
    a.at(i) = (i + 1) * 100;
  copy(b, a);
  reduce_sum(rsum, mat, 1);
  all_reduce_sum(rsum);
  println(rsum.at(0), rsum.at(1), rsum.at(2), b.at(0), b.at(3));
}
"""


def test_host_level_operations():
    assert printed(HOST_OPS, "host") == "10 26 42 100 400\n"


HOST_ACC = """
__co__ void acc() {
  s32[2, 3] lhs;
  s32[3, 2] rhs;
  s32[2, 2] out;
  s32[2] rows;
  foreach i in 2
    foreach j in 3
      lhs.at(i, j) = i * 3 + j + 1;
  foreach i in 3
    foreach j in 2
      rhs.at(i, j) = i + j * 3 + 1;
  mc = mma.fill.s32 0;
  ma = mma.load lhs;
  mb = mma.load rhs;
  mma.row.col mc, ma, mb;
  apply {i, j} in mc.span
    mc.at(i, j) += 100 * i;
  reduce_max(rows, mc, 1);
  mma.store mc, out;
  println(out.at(0, 0), out.at(0, 1), out.at(1, 0), out.at(1, 1), rows.at(0), rows.at(1));
}
"""


def test_host_accumulator_elements():
    # [[1,2,3],[4,5,6]] x [[1,4],[2,5],[3,6]] = [[14, 32], [32, 77]], row 1 plus 100
    assert printed(HOST_ACC, "acc") == "14 32 132 177 32 177\n"


OWNERS = """
__co__ void owners(global s32 [M, 16] who) {
  parallel b by 1 : block {
    parallel g by 1 : UNIT {
      acc = mma.fill.s32 -1;
      mma.store acc, who;                   // gives acc its shape
      parallel t by LANES : thread {
        apply {i, j} in acc.span
          acc.at(i, j) = t;
      }
      mma.store acc, who;
    }
  }
}
"""


@pytest.mark.parametrize("unit, lanes, rows", [("group", 32, 16), ("group-4", 128, 64)])
def test_each_element_has_the_ptx_layouts_owner(unit, lanes, rows):
    """mma.sync.m16n8 C fragment per warp (groupID = lane / 4 holds rows groupID and
    groupID + 8, threadID_in_group the columns 2t, 2t + 1 of every 8); wgmma D: warp w
    of the warpgroup holds rows 16w .. 16w + 15 (PTX ISA, "Matrix fragments")."""
    src = OWNERS.replace("UNIT", unit).replace("LANES", str(lanes)).replace("M,", f"{rows},")
    who = np.zeros((rows, 16), np.int32)
    engines.run(croqvm.compile(src, "t.co"), "owners", who)
    i, j = np.indices((rows, 16))
    want = (i % 8) * 4 + (j % 8) // 2 + 32 * ((i // 16) % 4)
    np.testing.assert_array_equal(who, want)


EPILOGUE = """
__co__ void epi(f16 [16, 16] a, f16 [16, 16] b, f32 [16] bias, global f32 [16, 16] c,
                global f32 [16] rs, global f32 [16] rm, global f32 [16] rs2) {
  parallel blk by 1 : block {
    shared f16 [16, 16] sa, sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel w by 1 : group {
      acc = mma.fill.f32 0.0f;
      fa = mma.load sa;
      fb = mma.load sb;
      mma.row.row acc, fa, fb;
      apply {i, j} in acc.span
        acc.at(i, j) = acc.at(i, j) * 2.0f + bias.at(j);
      frag f32[16] row_sum;
      frag f32[16] row_max;
      reduce_sum(row_sum, acc, 1);
      reduce_max(row_max, acc, 1);
      frag f32[16] part {0.0f};
      apply {i, j} in acc.span
        part.at(i) = part.at(i) + acc.at(i, j);
      all_reduce_sum(part);
      parallel t by 32 : thread {
        foreach r in 16 {
          if (t == (r % 8) * 4 + 1) {
            rs.at(r) = row_sum.at(r);
            rm.at(r) = row_max.at(r);
            rs2.at(r) = part.at(r);
          }
        }
      }
      mma.store acc, c;
    }
  }
}
"""


def test_warp_epilogue_and_row_reductions():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    bias = rng.standard_normal(16).astype(np.float32)
    c, rs, rm, rs2 = (np.zeros(s, np.float32) for s in ((16, 16), 16, 16, 16))
    engines.run(croqvm.compile(EPILOGUE, "t.co"), "epi", a, b, bias, c, rs, rm, rs2)
    prod = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, prod * 2 + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(rs, row_sums_in_lane_order(c))
    np.testing.assert_array_equal(rs2, row_sums_in_lane_order(c))
    np.testing.assert_array_equal(rm, c.max(axis=1))


NOT_OWNED = """
__co__ void f(global f32 [16, 8] out) {
  parallel b by 1 : block {
    parallel g by 1 : group {
      acc = mma.fill.f32 1.0f;
      mma.store acc, out;
      parallel t by 32 : thread {
        if (t == 5) { out.at(0, 0) = acc.at(0, 0); }
      }
    }
  }
}
"""


def test_reading_an_element_another_lane_holds_is_a_fault():
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.compile(NOT_OWNED, "t.co"), "f", np.zeros((16, 8), np.float32))
    assert "element (0, 0) of accumulator 'acc' is held by lane 0 of the warp, not by " \
           "this lane" in str(e.value)
    assert "lane 5" in str(e.value)


def diagnose(text: str) -> list[str]:
    _, diags, _ = front_end("__co__ void f() {\n" + text + "\n}", "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == "error"]


@pytest.mark.parametrize("text, errors", [
    ("f32[4, 8] s; f32[4] r;\nreduce_sum(r, s, 0);",
     ["3:18: reduce_sum reduces dimension 1 (along each row), but got dimension 0."]),
    ("f32[4] s; f32[1] r;\nreduce_min(r, s, 1);",
     ["3:15: reduce_min reduces the rows of a 2-dimensional tile, but 's' is [4]."]),
    ("f32[4, 8] s; f32[8] r;\nreduce_max(r, s, 1);",
     ["3:12: reduce_max writes one value per row of 's' [4, 8], so 'r' must be [4] (or "
      "[4, 1], [1, 4]) but it is [8]."]),
    ("f32[4, 8] s; f32[4, 4] d;\ncopy(d, s);",
     ["3:1: copy: 'd' is [4, 4] but 's' is [4, 8]: the shapes must be equal."]),
    ("f32[4] s;\napply {i} in [4] { s.at(i) = 1; }",
     ["3:7: 'apply' iterates over the '.span' of one fragment, accumulator or buffer."]),
    ("f16 [16, 16] x;\nma = mma.load x;\nprintln(ma.at(0, 0));",
     ["4:9: 'ma' is an MMA operand fragment: only accumulators and frags have elements a "
      "program can use."]),
    ("parallel b by 1 : block { parallel g by 1 : group-4 {\n"
     "frag f32[64] v {1.0f};\nall_reduce_sum(v); } }",
     ["4:1: all_reduce_sum requires a replicated 1D fragment layout: 'v' is not known to "
      "hold one row of an MMA accumulator per element."]),
    ("f32[4] s;\nreduce_sum(s, s);", ["3:1: 'reduce_sum' takes 3 arguments but got 2."]),
    ("parallel b by 1 : block { shared f16 [64, 16] sa; frag f16[64, 16] fa;\n"
     "parallel g by 1 : group-4 { acc = mma.fill.f32 0.0f;\nmma.row.row acc, sa, fa; } }",
     ["4:22: wgmma takes its B operand from shared memory, but 'fa' is a frag."]),
    ("parallel b by 1 : block { shared f16 [16, 64] sa; frag f16[16, 64] fk;\n"
     "parallel g by 1 : group-4 { acc = mma.fill.f32 0.0f;\nmma.col.col acc, fk, sa; } }",
     ["4:18: wgmma takes A from registers K-major only, but 'mma.col.col' reads 'fk' as "
      "[K, M]."]),
    ("parallel b by 1 : block { shared f32 [16] r; shared f16 [16, 8] a;\n"
     "parallel g by 1 : group { acc = mma.fill.f32 0.0f; fa = mma.load a;\n"
     "mma.row.row acc, fa, fa; reduce_sum(r, acc, 1); } }",
     ["4:37: reduce_sum of accumulator 'acc' writes each lane's rows into its own frag, but "
      "'r' is a shared buffer."]),
    ("parallel t by 1 : thread { frag f32[4, 8] s; frag f32[4, 6] d;\n"
     "apply {i, j} in s.span d.at(i, j) = s.at(i, j); }",
     ["3:24: 'd' [4, 6] is indexed by 'j' of an apply over 's' [4, 8], which reaches 7: "
      "the shapes do not match."]),
    ("parallel b by 1 : block { parallel g by 1 : group {\n"
     "acc = mma.fill.f32 0.0f;\nprintln(acc.at(0, 0)); } }",
     ["3:1: can not infer the shape of accumulator 'acc'.",
      "4:9: the shape of accumulator 'acc' is not known here: it comes from its first "
      "'mma' or 'mma.store'."]),
])
def test_diagnostics(text, errors):
    assert diagnose(text) == errors


REGISTER_A = """
__co__ void rs(f16 [64, 16] a, f16 [32, 16] b, global f32 [64, 32] c,
               global f32 [64, 32] owners) {
  parallel blk by 1 : block {
    sa = dma.copy a => shared;
    sb = dma.copy b => shared;
    frag f16[64, 16] fa;
    frag f16[64, 16] tag;
    parallel g by 1 : group-4 {
      mma.load sa, fa;
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, fa, sb;
      mma.store acc, c;
      parallel t by 128 : thread {
        apply {i, k} in tag.span
          tag.at(i, k) = t;
      }
      who = mma.fill.f32 0.0f;
      mma.row.row who, tag, sb;
      mma.store who, owners;
    }
  }
}
"""


def test_wgmma_a_from_registers_takes_each_element_from_its_holder():
    """RS mode (PTX wgmma A in registers: the 16-bit A fragment of m16n8k16 per warp,
    warp w holding rows 16w .. 16w + 15): with B all ones, row i of the product sums the
    lane numbers holding A's elements (i, 0 .. 15)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    ones = np.ones((32, 16), np.float16)
    c, owners = np.zeros((64, 32), np.float32), np.zeros((64, 32), np.float32)
    engines.run(croqvm.compile(REGISTER_A, "t.co"), "rs", a, ones, c, owners)
    np.testing.assert_allclose(c, (a.astype(np.float64) @ ones.T.astype(np.float64)),
                               rtol=1e-6)
    i, k = np.indices((64, 16))
    held_by = (i % 8) * 4 + (k % 8) // 2 + 32 * (i // 16)
    np.testing.assert_array_equal(owners, np.repeat(held_by.sum(1)[:, None], 32, 1))


FRAG_ACC = """
__co__ void fc(f16 [16, 16] a, f16 [8, 16] b, global f32 [16, 8] seen) {
  parallel blk by 1 : block {
    sa = dma.copy a => shared;
    sb = dma.copy b => shared;
    parallel g by 1 : group {
      frag f32[16, 8] c {1.0f};
      mma.row.row c, sa, sb;
      parallel t by 32 : thread {
        if (t == 0) { copy(seen, c); }
      }
    }
  }
}
"""


def test_a_frag_accumulator_updates_the_elements_each_lane_holds():
    """Lane 0 holds (i, j) with i % 8 == 0 and j % 8 in {0, 1}: only those of its copy
    receive the product; the rest of its copy keeps the fill value."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((8, 16)).astype(np.float16)
    seen = np.zeros((16, 8), np.float32)
    engines.run(croqvm.compile(FRAG_ACC, "t.co"), "fc", a, b, seen)
    i, j = np.indices((16, 8))
    mine = (i % 8 == 0) & (j % 8 < 2)
    want = np.where(mine, 1 + a.astype(np.float64) @ b.T.astype(np.float64), 1.0)
    np.testing.assert_allclose(seen, want, rtol=1e-5)


SCALAR_UPDATE = """
__co__ auto fused(f16 [32, 32] lhs, f16 [32, 32] rhs, f16 bias) {
  f32 [32, 32] output;
  parallel {m, n} by [1, 1] : block {
    parallel {g0, g1} by [2, 2] : group {
      mc = mma.fill.f32 0.0f;
      foreach k in 2 {
        ma = mma.load lhs.chunkat(m#g0, k);
        mb = mma.load rhs.chunkat(k, n#g1);
        mma.row.col mc, ma, mb;
      }
      mc += bias;
      mc *= 2;
      mma.store mc, output.chunkat(m#g0, n#g1);
    }
  }
  return output;
}
"""


def test_a_scalar_update_of_an_accumulator_reaches_every_element():
    """``mc += bias`` (tests/gpu/end2end/ampere_mma.co): each lane its own elements."""
    rng = np.random.default_rng(11)
    a, b = (rng.uniform(-1, 1, (32, 32)).astype(np.float16) for _ in range(2))
    out = engines.run(croqvm.compile(SCALAR_UPDATE, "t.co"), "fused", a, b, np.float16(3.5))
    want = (a.astype(np.float64) @ b.astype(np.float64) + 3.5) * 2
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
