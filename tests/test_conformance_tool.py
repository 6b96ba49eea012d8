"""bench/conformance.py, the runner over the Croqtile repository's own tests: how it reads
a program's expectations (negative or valid, CHECK lines, the sizes its host code calls a
function with). The runner itself reads a Croqtile checkout and is never run here."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import conformance  # noqa: E402


def checks(text):
    return conformance.check_lines(text)


@pytest.mark.parametrize("pattern, output, failure", [
    ("// CHECK: 11\n// CHECK: 33", "11\n22\n33\n", None),
    ("// CHECK: 33\n// CHECK: 11", "11\n22\n33\n", "CHECK: '11' not found"),
    ("// CHECK: a\n// CHECK-NEXT: b", "a\nb\n", None),
    ("// CHECK: a\n// CHECK-NEXT: c", "a\nb\nc\n", "CHECK-NEXT: 'c' not on output line 2"),
    ("// CHECK: a\n// CHECK-NOT: x\n// CHECK: b", "a\nx\nb\n",
     "CHECK-NOT: 'x' found on output line 2"),
    ("// CHECK: a\n// CHECK-NOT: x\n// CHECK: b", "a\nb\nx\n", None),
    ("// CHECK-DAG: val= 1\n// CHECK-DAG: val= 0", "val= 0\nval= 1\n", None),
    ("// CHECK-DAG: val= 2", "val= 0\nval= 1\n", "CHECK-DAG: 'val= 2' not found"),
    ("// CHECK: f[ 0 , 1 ] = 2", "f[ 0 , 1 ]   = 2\n", None),      # blanks: any run
    ("// CHECK: x = {{[0-9]+}}", "x = 42\n", None),
    ("// CHECK: x = {{[0-9]+}}", "x = y\n", "CHECK: 'x = {{[0-9]+}}' not found"),
    ("// CHECK: a\n// CHECK-SAME: c", "a b c\n", None),
    ("// CHECK: 1 2\n// CHECK: 2", "1 2\n", "CHECK: '2' not found"),   # no going back
])
def test_filecheck_matches_in_order_from_after_the_last_match(pattern, output, failure):
    assert conformance.filecheck(checks(pattern), output) == failure


@pytest.mark.parametrize("folder, text, kind", [
    ("cute", "// RUN: not choreo -es %s\n", "negative"),
    ("cute", "// RUN: choreo -gs %s\n// CHECK: error: swizzle value must be 128\n",
     "negative"),
    ("cute", "// RUN: choreo -es %s\n// CHECK: __global__\n", "valid"),
    ("co-mock", "// RUN: printf 's\\nc\\n' > %t.script && co-mock -s %t.script %s\n",
     "debugger"),
    ("co-mock", "// RUN: co-mock %s 2>&1 | FileCheck %s\n// CHECK: error\n", "valid"),
])
def test_negative_and_debugger_programs_are_told_from_their_run_and_check_lines(
        folder, text, kind):
    assert conformance.classify(folder, text) == kind


HOST = """
__co__ auto scale(f32 [M, N] a) { return a; }
int main() {
  unsigned long Md = 8, Nd = 256;
  {
    auto a = choreo::make_spandata<choreo::f32>(2, 3);
    auto r = scale(a.view());
  }
  {
    auto a = choreo::make_spanview<2, choreo::f32>(ptr, {Md, Nd});
    auto r = other(a.view());
  }
}
void second_test() {
  constexpr size_t Md = 64, Nd = 32;
  auto b = choreo::make_spanview<2, choreo::f32>(ptr, {Md, Nd});
  third(b.view());
}
"""


def test_symbolic_dimensions_take_the_sizes_of_the_host_codes_first_call():
    calls = conformance.host_shapes(HOST)
    assert calls["scale"] == [(2, 3)]
    assert calls["other"] == [(8, 256)]      # the latest array of that name before the call
    assert calls["third"] == [(64, 32)]      # sizes as set in the host test that calls it


def test_dimensions_nothing_binds_are_retried_larger_after_an_out_of_range_run():
    import croqvm
    fn = croqvm.compile("__co__ void f(s32 [M, 4] a, s32 [N] b) {}", "f.co").functions[0]
    assert conformance.dim_sizes(fn, [(2, 4)], 16, 128) == [
        {"M": 2, "N": 16}, {"M": 2, "N": 128}]
    assert conformance.dim_sizes(fn, [(2, 4), (5,)], 16, 128) == [{"M": 2, "N": 5}]
    assert conformance.range_fault("f.co:3:5: runtime error: out-of-range access "
                                   "a.at(16, 0): index 16 of dimension 0 is not in [0, 16).")
    assert conformance.range_fault("f.co:3:5: runtime error: tile of 'a' at origin (16, 0) "
                                   "lies outside [16, 4].")
    assert conformance.range_fault("f.co:3:5: runtime error: index 6 is out of range for "
                                   "fragment array 'mc' [0, 2).")
    assert not conformance.range_fault("f.co:3:5: runtime error: integer division by zero.")


def test_integer_inputs_are_made_non_negative_then_zero():
    import numpy as np
    x = np.array([-3, 2], np.int32)
    assert conformance._integers(x, False).tolist() == [3, 2]
    assert conformance._integers(x, True).tolist() == [0, 0]
    assert conformance._integers(-5, False) == 5 and conformance._integers(-5, True) == 0
    f = np.array([-1.5], np.float32)
    assert conformance._integers(f, True) is f and conformance._integers(True, True) is True


@pytest.mark.parametrize("run, script", [
    ("// RUN: printf 's\\ninfo mem\\nc\\n' > %t.script && co-mock -s %t.script %s",
     "s\ninfo mem\nc\n"),
    ('// RUN: echo "c" > %t.script && co-mock -s %t.script %s', "c\n"),
    ("// RUN: co-mock -s script.txt %s", None),
])
def test_a_debugger_tests_script_is_read_from_its_run_line(run, script):
    assert conformance.debugger_script(run) == script
