"""Fragments under the race checker and in generated CUDA (LANGUAGE.md §11.7): copies
between frags and shared buffers are element accesses the checker orders; the CUDA code of
apply, reduce_*, all_reduce_* and MMA on frags builds with nvcc for sm_90a and sm_80."""
import shutil

import numpy as np
import pytest

import croqvm
import engines
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import emit
from croqvm.core.errors import KernelFault
from test_frags import EPILOGUE, REGISTER_A

COPIES = """
__co__ void f(global f32 [4] out) {
  parallel b by 1 : block {
    shared f32 [4] s;
    parallel t by 4 : thread {
      frag f32[4] v {1.0f};
      v.at(t) = t;
      if (WHO) { copy(s, v); }
    }
    dma.copy s => out;
  }
}
"""


def test_every_lane_copying_its_frag_to_one_shared_tile_races():
    prog = croqvm.compile(COPIES.replace("WHO", "true"), "t.co")
    with pytest.raises(KernelFault) as e:
        prog.run("f", np.zeros(4, np.float32), engine="python", check="race")
    assert "data race on shared 's' element (0)" in str(e.value)


def test_one_lane_copying_its_frag_does_not_race():
    prog = croqvm.compile(COPIES.replace("WHO", "t == 2"), "t.co")
    out = np.zeros(4, np.float32)
    prog.run("f", out, engine="python", check="race")
    np.testing.assert_array_equal(out, [1, 1, 2, 1])


@pytest.mark.parametrize("source, arch", [(EPILOGUE, "sm_80"), (REGISTER_A, "sm_90a")])
def test_generated_fragment_code_builds_with_nvcc(source, arch):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text = emit(croqvm.compile(source, "t.co").module, arch=arch).text
    assert cc.build(text, arch).read_bytes()[:4] == b"\x7fELF"


UNWRITTEN = """
__co__ void f(f16 [16, 16] b, global f32 [16, 16] out) {
  parallel blk by 1 : block {
    sb = dma.copy b => shared;
    parallel g by 1 : group {
      frag f16[16, 16] fa;
      parallel t by 32 : thread {
        if (t != 4) { apply {i, k} in fa.span fa.at(i, k) = 1.0f; }
      }
      acc = mma.fill.f32 0.0f;
      mma.row.row acc, fa, sb;
      mma.store acc, out;
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
def test_the_init_check_reads_the_zeros_of_elements_a_frags_holder_left():
    """A frag starts zeroed (LANGUAGE.md §3.2.4, §11): the elements lane 4 holds, (i, k)
    with i % 8 == 1 and k % 8 < 2 ((i % 8) * 4 + (k % 8) / 2 == 4), stay 0 and reading
    them is no error; B is ones, so each row of the product sums the row of fa."""
    prog = croqvm.compile(UNWRITTEN, "t.co")
    out = np.zeros((16, 16), np.float32)
    engines.run(prog, "f", np.ones((16, 16), np.float16), out, check="init")
    fa = np.ones((16, 16), np.float32)
    fa[1::8][:, [0, 1, 8, 9]] = 0
    np.testing.assert_array_equal(out, fa @ np.ones((16, 16), np.float32))


def test_break_out_of_an_apply_over_an_accumulator_is_an_error():
    src = """
__co__ void f(global f32 [16, 8] out) {
  parallel b by 1 : block {
    parallel g by 1 : group {
      acc = mma.fill.f32 0.0f;
      mma.store acc, out;
      apply {i, j} in acc.span {
        if (j > 2) { break; }
        acc.at(i, j) = 1.0f;
      }
    }
  }
}
"""
    with pytest.raises(croqvm.CompileError) as e:
        croqvm.compile(src, "t.co")
    assert "t.co:8:22: error: 'break' and 'continue' can not leave an 'apply' over an " \
           "accumulator" in str(e.value)
