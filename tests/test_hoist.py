"""Loop-invariant instructions moved in front of their loop (croqvm/bytecode/lower/hoist.py,
docs/EXECUTION.md §4): what moves and what must stay, where it lands in the bytecode, and
the results, derived by hand, on every engine; the divergent cases show both engines the
same statistics (tests/parity.py)."""
from __future__ import annotations

import math
import textwrap

import engines
import numpy as np
import pytest
from parity import assert_alike, outcome

import croqvm
from croqvm.bytecode import opcodes
from croqvm.native import extension

GRID = """
__co__ s32 [4, 8] grid(int m) {
  s32 [4, 8] out {0};
  foreach {i, j} in [4, 8]
    out.at(i, j) = i * m + j + m / 4;
  return out;
}
"""

WRITTEN = """
__co__ s32 [4] written(int m) {
  s32 [4] out {0};
  mutable int x = 0;
  foreach i in [4] {
    x = x + m;
    out.at(i) = x * 3;
  }
  return out;
}
"""

DIVIDE = """
__co__ s32 [2] divide(int n, int d) {
  s32 [2] out {7};
  foreach i in [n]
    out.at(i) = 100 / d + i;
  return out;
}
"""

CONVERT = """
__co__ s32 [2] convert(int n, float f) {
  s32 [2] out {7};
  foreach i in [n]
    out.at(i) = __to<s32>(f) + i;
  return out;
}
"""

# lane t runs the body t % 3 times: a third of the lanes never reach it
LANES = """
__co__ s32 [64] lanes(int m) {
  s32 [64] out {0};
  parallel t by 64 : thread {
    mutable int k = 0;
    while (k < t % 3) {
      out.at(t) += t * m + k;
      k++;
    }
  }
  return out;
}
"""


def compiled(source: str):
    return croqvm.compile(textwrap.dedent(source), "hoist.co")


def line_of(source: str, text: str) -> int:
    """The line of ``source`` (as ``compiled`` numbers them) holding ``text``."""
    return next(n for n, line in enumerate(textwrap.dedent(source).split("\n"), 1)
                if text in line)


def placed(program, code, name: str) -> list[tuple[int, int]]:
    """(loop depth, source line) of every instruction ``name`` of ``code``."""
    W = opcodes.WIDTH
    out, depth = [], 0
    for k in range(0, len(code.code), W):
        op = opcodes.TABLE[code.code[k]].name
        if op == "END" and code.code[code.code[k + 1] * W] == opcodes.LOOP:
            depth -= 1
        if op == name:
            out.append((depth, program.module.spans[code.code[k + opcodes.SPAN]][1]))
        if op == "LOOP":
            depth += 1
    return out


def test_invariant_arithmetic_runs_before_its_loop_on_the_loop_line():
    """``i * m`` leaves the loop over ``j`` and ``m / 4`` (a division by a nonzero
    constant) both loops; each carries the line of the loop it left."""
    prog = compiled(GRID)
    host = prog.module.functions[0].host
    assert placed(prog, host, "MUL") == [(1, line_of(GRID, "foreach"))]
    assert placed(prog, host, "DIV") == [(0, line_of(GRID, "foreach"))]
    assert placed(prog, host, "ADD")[-2:] == [(2, line_of(GRID, "out.at(i, j)"))] * 2


@pytest.mark.usefixtures("engine")
def test_invariant_arithmetic_computes_what_it_did_in_the_loop():
    got = engines.run(compiled(GRID), "grid", 9)
    want = np.arange(4)[:, None] * 9 + np.arange(8)[None, :] + 9 // 4
    np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("engine")
def test_arithmetic_on_a_variable_the_loop_writes_stays_in_the_loop():
    prog = compiled(WRITTEN)
    assert placed(prog, prog.module.functions[0].host, "MUL") == \
        [(1, line_of(WRITTEN, "x * 3"))]
    np.testing.assert_array_equal(engines.run(prog, "written", 2), [6, 12, 18, 24])


@pytest.mark.usefixtures("engine")
def test_a_division_that_may_fault_stays_in_its_loop():
    """A division by a parameter runs only where the body does: a loop that runs no
    iteration does not fault, one that does faults on the body's line."""
    prog = compiled(DIVIDE)
    line = line_of(DIVIDE, "100 / d")
    assert placed(prog, prog.module.functions[0].host, "DIV") == [(1, line)]
    np.testing.assert_array_equal(engines.run(prog, "divide", 0, 0), [7, 7])
    np.testing.assert_array_equal(engines.run(prog, "divide", 2, 5), [20, 21])
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(prog, "divide", 2, 0)
    assert "division by zero" in str(info.value) and f"hoist.co:{line}:" in str(info.value)


@pytest.mark.usefixtures("engine")
def test_a_conversion_that_may_fault_stays_in_its_loop():
    """A float into an integer faults on a NaN: only once the body runs."""
    prog = compiled(CONVERT)
    line = line_of(CONVERT, "__to<s32>")
    assert placed(prog, prog.module.functions[0].host, "CVT") == [(1, line)]
    np.testing.assert_array_equal(engines.run(prog, "convert", 0, math.nan), [7, 7])
    np.testing.assert_array_equal(engines.run(prog, "convert", 2, 3.5), [3, 4])
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(prog, "convert", 1, math.nan)
    assert f"hoist.co:{line}:" in str(info.value)


@pytest.mark.usefixtures("engine")
def test_lanes_that_never_reach_the_body_leave_no_trace():
    """``t % 3`` and ``t * m`` leave the while loop and run for every lane, also for the
    lanes whose loop ends at once; a value out of s32's range wraps as in the loop."""
    prog = compiled(LANES)
    kernel = prog.module.functions[0].kernels[0].code
    assert placed(prog, kernel, "MUL") == [(0, line_of(LANES, "while"))]
    assert placed(prog, kernel, "MOD")[-1] == (0, line_of(LANES, "while"))
    m = 50_000_000
    t = np.arange(64, dtype=np.int64)
    want = np.zeros(64, np.int64)
    for k in range(2):
        want += np.where(k < t % 3, t * m + k, 0)
    want = ((want + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    np.testing.assert_array_equal(engines.run(prog, "lanes", m), want)


@pytest.mark.skipif(extension() is None, reason="the native extension is not built")
@pytest.mark.parametrize("source, func, args", [(LANES, "lanes", [7]), (DIVIDE, "divide", [0, 0]),
                                                (DIVIDE, "divide", [2, 0])])
def test_both_engines_count_the_moved_instructions_alike(source, func, args):
    module = compiled(source).module
    ref = outcome(module, func, args, {}, "python")
    assert_alike(outcome(module, func, args, {}, "native"), ref, func)
    assert ref[4]["warp_steps"] > 0
