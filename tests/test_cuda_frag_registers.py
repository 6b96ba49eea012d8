"""Accumulators in registers on the CUDA path (docs/CUDA.md "How bytecode maps", MMA):
each lane of a warp or warpgroup keeps the accumulator elements it holds (the PTX C/D
fragment maps, LANGUAGE.md §11.7), so the shared memory a kernel needs does not grow
with its accumulators, and an epilogue whose result depends on which lane holds which
element runs on cuda-cpu as on the engines. References: numpy, and the ownership
formula of the PTX ISA written out here."""
import numpy as np
import pytest

import croqvm
from croqvm.cuda.emit import emit
from croqvm.running.diff import assert_agree
from croqvm.core.errors import KernelFault
from lane_order import row_sums_in_lane_order

WIDE = """
__co__ void wide(global f16 [64, 32] a, global f16 [N, 32] b, global f32 [64, N] c) {
  parallel blk by 1 : block {
    shared f16 [64, 32] sa;
    shared f16 [N, 32] sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, sa, sb;
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_shared_memory_does_not_grow_with_the_accumulator(arch):
    """N 8 -> 256 makes each warpgroup's accumulator 62 KiB larger (two warpgroups);
    only the staged B operand grows (sb, and on sm_90a the wgmma staging area)."""
    def smem(n):
        program = croqvm.compile(WIDE.replace("N", str(n)), "t.co")
        return emit(program.module, arch=arch).kernels[("wide", 0)].smem_bytes
    b_growth = (256 - 8) * 32 * 4 * (2 if arch == "sm_90a" else 1)   # sb (+ staging)
    assert smem(256) - smem(8) <= b_growth + 1024
    assert smem(256) - smem(8) < 2 * 64 * (256 - 8) * 4


OWNERS = """
__co__ void owners(global s32 [M, 16] who) {
  parallel b by 1 : block {
    parallel g by 2 : UNIT {
      acc = mma.fill.s32 -1;
      mma.store acc, who;                   // gives acc its shape
      parallel t by LANES : thread {
        apply {i, j} in acc.span
          acc.at(i, j) = t + 1000 * g;
      }
      inthreads (g == 1) { mma.store acc, who; }
    }
  }
}
"""


@pytest.mark.parametrize("unit, lanes, rows", [("group", 32, 16), ("group-4", 128, 128)])
def test_each_lane_writes_the_elements_it_holds(unit, lanes, rows):
    """Lane l of a warp holds (i, j) with i % 8 == l / 4 and (j % 8) / 2 == l % 4; in a
    warpgroup, warp w the rows with (i / 16) % 4 == w (PTX ISA, "Matrix fragments")."""
    src = OWNERS.replace("UNIT", unit).replace("LANES", str(lanes)).replace("M,", f"{rows},")
    who = np.zeros((rows, 16), np.int32)
    croqvm.compile(src, "t.co").run("owners", who, device="cuda-cpu")
    i, j = np.indices((rows, 16))
    want = (i % 8) * 4 + (j % 8) // 2 + (32 * ((i // 16) % 4) if lanes == 128 else 0)
    np.testing.assert_array_equal(who, want + 1000)


EPILOGUE = """
__co__ void epi(global f16 [128, 32] a, global f16 [16, 32] b, global f32 [16] bias,
                global f32 [128, 16] c, global f32 [128] rs, global f32 [128] rm) {
  parallel blk by 1 : block {
    shared f16 [128, 32] sa;
    shared f16 [16, 32] sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.5f;
      mma.row.row acc, sa, sb;
      apply {i, j} in acc.span
        acc.at(i, j) = acc.at(i, j) * 2.0f + bias.at(j);
      frag f32[128] row_sum;
      frag f32[128] row_max {0.0f};
      reduce_sum(row_sum, acc, 1);
      apply {i, j} in acc.span
        row_max.at(i) = __max(row_max.at(i), acc.at(i, j));
      all_reduce_max(row_max);
      parallel t by 128 : thread {
        foreach r in 128 {
          if (t == (r % 8) * 4 + 32 * ((r / 16) % 4) + 3) {
            rs.at(r) = row_sum.at(r);
            rm.at(r) = row_max.at(r);
          }
        }
      }
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_warpgroup_epilogue_agrees_with_the_engines(arch, monkeypatch):
    """An epilogue over a [128, 16] warpgroup accumulator (two m64 tiles, so the warps'
    16-row bands repeat): wgmma on sm_90a, mma.sync per warp on sm_80; row sums in the
    lanes' order of additions, bit for bit with the engines."""
    monkeypatch.setenv("CROQVM_CUDA_ARCH", arch)
    rng = np.random.default_rng(17)
    a = rng.standard_normal((128, 32)).astype(np.float16)
    b = rng.standard_normal((16, 32)).astype(np.float16)
    bias = rng.standard_normal(16).astype(np.float32)
    args = [np.zeros(s, np.float32) for s in ((128, 16), 128, 128)]
    program = croqvm.compile(EPILOGUE, "t.co")
    assert_agree(program, "epi", a, b, bias, *args)
    c, rs, rm = (x.copy() for x in args)
    program.run("epi", a, b, bias, c, rs, rm, device="cuda-cpu")
    prod = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, (prod + 0.5) * 2 + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(rs, row_sums_in_lane_order(c))
    np.testing.assert_array_equal(rm, c.max(axis=1))


PART_OF_A_WARP = """
__co__ void part(global f32 [16, 8] out) {
  parallel b by 1 : block {
    parallel g by 1 : group {
      acc = mma.fill.f32 0.0f;
      mma.store acc, out;
      parallel t by 32 : thread {
        inthreads (t < 16) {
          mma.fill acc, 1.0f;
        }
      }
      mma.store acc, out;
    }
  }
}
"""


def test_an_operation_by_part_of_the_warp_is_refused_on_cuda_cpu():
    """The engines keep one copy per warp, which half of it can fill; in registers the
    other half's elements are out of reach, so the generated code reports those lanes
    (docs/CUDA.md) instead of computing something else."""
    program = croqvm.compile(PART_OF_A_WARP, "t.co")
    out = np.zeros((16, 8), np.float32)
    program.run("part", out)
    np.testing.assert_array_equal(out, np.ones((16, 8), np.float32))
    with pytest.raises(KernelFault, match="mma.fill needs all 32 lanes of warp 0, but "
                                          "lanes 16-31 are not active here"):
        program.run("part", np.zeros((16, 8), np.float32), device="cuda-cpu")


PART_OF_A_WARPGROUP = """
__co__ void f(f16 [2, 2] a, global f32 [2, 2] c) {
  parallel p by 2 : group-4, t by 128 : thread {
    mc = mma.fill.f32 0.0f;
    fa = mma.load a;
    if (p == 0 || t < 32 || t >= 48)
      mma.row.row mc, fa, fa;
    mma.store mc, c;
  }
}
"""


def test_an_mma_by_part_of_a_warpgroup_names_its_absent_lanes_on_cuda_cpu():
    """Lanes 160-175 (the first half of warpgroup 1's second warp) skip the exec: the
    generated code finds them a 32-lane word at a time, and reports what the engines
    report (tests/test_spec_data.py has the interpreter's text)."""
    program = croqvm.compile(PART_OF_A_WARPGROUP, "t.co")
    with pytest.raises(KernelFault, match="mma.row.row needs all 128 lanes of warpgroup 1, "
                                          "but lanes 160-175 are not active here"):
        program.run("f", np.ones((2, 2), np.float16), np.zeros((2, 2), np.float32),
                    device="cuda-cpu")
