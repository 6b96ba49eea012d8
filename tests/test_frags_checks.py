"""Fragments under the race checker and in generated CUDA (LANGUAGE.md §11.5): copies
between frags and shared buffers are element accesses the checker orders; the CUDA code of
apply, reduce_*, all_reduce_* and MMA on frags builds with nvcc for sm_90a and sm_80."""
import shutil

import numpy as np
import pytest

import croqvm
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import emit
from croqvm.errors import KernelFault
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
