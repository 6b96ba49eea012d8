"""The check for terminated members of a warp or warpgroup collective (UNIT_TERMINATED,
LANGUAGE.md §7.4.4) is generated only where one may have terminated
(croqvm/cuda/departure.py): after a YIELD, or under a condition that may differ between
a warpgroup's lanes. Where it stays, cuda-cpu reports what the interpreter does."""
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cuda.emit import emit
from croqvm.running.diff import assert_agree

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
CHECK = "cq_coll_gone(cl, 0)"

FILL = """
__co__ void fill(global f32 [64, 64] c, s32 n) {
  parallel b by 1 : block {
    parallel g by 1 : group-4, t by 128 : thread {
      %s
      acc = mma.fill.f32 0.0f;
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.parametrize("name, arch", [("matmul_1p1c", "sm_90a"), ("matmul_tma", "sm_90a"),
                                        ("matmul_wgmma_async", "sm_90a"),
                                        ("matmul_mma_warp", "sm_80")])
def test_no_check_where_every_condition_is_the_same_in_a_warpgroup(name, arch):
    """Role branches of whole warpgroups, loops over constants and kernel scalars."""
    assert CHECK not in emit(croqvm.compile_file(PROGRAMS / f"{name}.co").module,
                             arch=arch).text


@pytest.mark.parametrize("before", [
    "if (t < n) yield;",                          # a lane may have ended
    "if (t >= n) { z = mma.fill.f32 0.0f; mma.store z, c; }",   # under the lane's own test
])
def test_the_check_stays_where_a_member_may_have_terminated(before):
    prog = croqvm.compile(FILL % before)
    assert CHECK in emit(prog.module, arch="sm_90a").text


@pytest.mark.parametrize("n", [0, 32])
def test_terminated_members_are_reported_as_the_interpreter_does(n):
    """n = 32: warp 0 yields, and the fill reports lanes 0-31 terminated."""
    prog = croqvm.compile(FILL % "if (t < n) yield;")
    assert_agree(prog, "fill", np.zeros((64, 64), np.float32), n)
