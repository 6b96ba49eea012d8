"""The divergence analysis the wgmma regions rely on (croqvm/cuda/uniform.py): which
loop exits read a value the same in every lane that reads it, on kernels written for
each rule."""
import pytest

import croqvm
from croqvm.bytecode import opcodes
from croqvm.bytecode.opcodes import decode
from croqvm.cuda.uniform import Uniformity

KERNEL = """
__co__ void k(global s32 [128] out, int n) {
  parallel p by 1 : block {
    parallel t by 128 : thread {
      BODY
    }
  }
}
"""


def exits(body: str) -> list[bool]:
    """For each `break` of a loop in the kernel (a BREAK_IF), in order: whether it reads a
    value the same in every lane that reads it."""
    kernel = croqvm.compile(KERNEL.replace("BODY", body)).module.functions[0].kernels[0]
    ins = decode(kernel.code.code)
    u = Uniformity(kernel.code, ins)
    return [u.uniform(ip, x[1]) for ip, x in enumerate(ins) if x[0] == opcodes.BREAK_IF]


@pytest.mark.parametrize("body, uniform", [
    # parameters, constants and arithmetic of them
    ("foreach w in [n] out.at(t) = w;", [True]),
    ("foreach w in [n * 2 + 1] out.at(t) = w;", [True]),
    # the lane, and what is computed from it
    ("foreach w in [t] out.at(t) = w;", [False]),
    ("foreach w in [t / 128 + n] out.at(t) = w;", [False]),
    # a value loaded from memory may differ between lanes
    ("foreach w in [out.at(0)] out.at(t) = w;", [False]),
    # constants only, but written under a condition on the lane
    ("mutable int m = 2; if (t < 64) m = 3; foreach w in [m] out.at(t) = w;", [False]),
    # ... or on a parameter: every lane takes the same branch
    ("mutable int m = 2; if (n > 3) m = 3; foreach w in [m] out.at(t) = w;", [True]),
    # written in one branch of a lane's `if`, read in the other
    ("mutable int m = 2; foreach i in [n] { if (t < 64) m = 3; else { "
     "foreach w in [m] out.at(t) = w; } }", [True, False]),
])
def test_which_loop_exits_are_uniform(body, uniform):
    assert exits(body) == uniform


def test_a_loop_the_lanes_leave_apart_parts_them_after_it_not_in_it():
    """The lanes leave the `while` after t + 1 rounds: i agrees among the lanes still in
    it (the inner `foreach` over i), not after it."""
    body = ("mutable int i = 0; while (true) { foreach w in [i] out.at(t) = w; "
            "if (i == t) break; i = i + 1; } foreach w in [i] out.at(t) = w;")
    # the while's own exit, the inner foreach's, the `break` (true, under the lane's
    # `if`: that makes the loop part the lanes), the last foreach's
    assert exits(body) == [True, True, True, False]
