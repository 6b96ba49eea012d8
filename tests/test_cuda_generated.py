"""Generated kernels (tests/kernelgen.py) on the CUDA path: the generated CUDA, run on the
CPU runtime (``device="cuda-cpu"``, the sm_90a flavour), gives what the Python engine
gives (issue: the CUDA path, item 5).

Agreement (docs/CUDA.md "Agreement with the interpreter"): results and arguments bit for
bit, integers and floats alike (a NaN equals any NaN, as between the engines), because
generated code rounds every operation as croqvm.core.numerics does and runs MMA steps in the
engines' order; printed lines of a launch as multisets (the runtime prints lane after
lane, the interpreter statement after statement); and errors text for text. Where the
schedule decides, the device may differ, and the test asks less:
- several lanes fault: the device reports the lowest (block, lane), the interpreter the
  first in time, so both are runtime errors in a kernel, the device's at a lower (block,
  lane); and what was printed or stored before the fault depends on how far each lane
  ran, so after a runtime error only the errors are compared;
- a kernel in which the interpreter's race check (``check="race"``) finds a data race
  computes what its schedule gives: only that the device runs it without an internal
  error.
Statistics count only the host program's steps on a device and are not compared.

The default run draws a few kernels of each family (every one is a C++ build); the
``slow`` marker (``--runslow``) draws hundreds.
"""
from __future__ import annotations

import io
import re

import numpy as np
import pytest

import croqvm
from kernelgen import Case, family_test
from parity import same

EXAMPLES = {"lanes": 10, "events": 5, "copies": 5, "mma": 10, "views": 4, "pipelines": 4}
MANY = {"lanes": 300, "events": 100, "copies": 100, "mma": 200, "views": 200,
        "pipelines": 200}


def outcome(module, case, device):
    """(result, arguments after the call, printed lines sorted, error) of one run."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args]
    out = io.StringIO()
    try:
        result = croqvm.Program(module).run(case.func, *args, device=device, engine="python",
                                            out=out, max_steps=case.max_steps)
        error = None
    except croqvm.CroqvmError as e:
        result, error = None, (type(e).__name__, str(e))
    return result, args, sorted(out.getvalue().splitlines()), error


def check_alike(case) -> None:
    module = croqvm.compile(case.source, "gen.co").module
    ref, got = outcome(module, case, "cpu"), outcome(module, case, "cuda-cpu")
    where = f"\n{case.source}"
    assert got[3] is None or got[3][0] != "InternalError", f"{got[3]}{where}"
    if racy(module, case):
        return
    if ref[3] is None or ref[3][0] != "KernelFault":
        assert same(got[0], ref[0]), f"result{where}"
        assert all(same(g, r) for g, r in zip(got[1], ref[1])), f"arguments{where}"
        assert got[2] == ref[2], f"printed output{where}"
    if got[3] != ref[3]:
        # several lanes fault: the device keeps the lowest (block, lane), the
        # interpreter the first in time, which that lane's fault did not precede
        at_got, at_ref = (_fault_place(e) for e in (got[3], ref[3]))
        assert at_got is not None and at_ref is not None and at_got < at_ref, \
            f"error: {got[3]} instead of {ref[3]}{where}"


def racy(module, case) -> bool:
    """Whether the interpreter's race check reports a data race in the call."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args]
    try:
        croqvm.Program(module).run(case.func, *args, engine="python", check="race",
                                   out=io.StringIO(), max_steps=case.max_steps)
    except croqvm.KernelFault as e:
        return "data race" in str(e)
    except croqvm.CroqvmError:
        return False
    return False


def _fault_place(error):
    """(block, lane) of a runtime error in a kernel, else None."""
    found = error and error[0] == "KernelFault" and \
        re.search(r"in kernel launched at .*, block \(([\d, ]+)\), lane (\d+)", error[1])
    if not found:
        return None
    return tuple(int(x) for x in found.group(1).split(",")), int(found.group(2))


test_lanes = family_test("lanes", EXAMPLES["lanes"], check_alike)
test_events = family_test("events", EXAMPLES["events"], check_alike)
test_copies = family_test("copies", EXAMPLES["copies"], check_alike)
test_mma = family_test("mma", EXAMPLES["mma"], check_alike)
test_views = family_test("views", EXAMPLES["views"], check_alike)
test_pipelines = family_test("pipelines", EXAMPLES["pipelines"], check_alike)

test_lanes_many = pytest.mark.slow(family_test("lanes", MANY["lanes"], check_alike))
test_events_many = pytest.mark.slow(family_test("events", MANY["events"], check_alike))
test_copies_many = pytest.mark.slow(family_test("copies", MANY["copies"], check_alike))
test_mma_many = pytest.mark.slow(family_test("mma", MANY["mma"], check_alike))
test_views_many = pytest.mark.slow(family_test("views", MANY["views"], check_alike))
test_pipelines_many = pytest.mark.slow(family_test("pipelines", MANY["pipelines"],
                                                   check_alike))


SEVERAL_FAULTS = """
__co__ void f(global s32 [2] x) {
  parallel b by 1 : block {
    parallel t by 2 : thread {
      if (t == 1) x.at(t + 4) = 1;
      if (t == 0) x.at(t + 7) = 1;
    }
  }
}
"""


def test_with_several_faults_the_device_reports_the_lowest_lane():
    """The one difference the comparison allows, on a case where it shows: lane 1 faults
    first in the interpreter's order, lane 0 later; the device reports lane 0."""
    module = croqvm.compile(SEVERAL_FAULTS, "gen.co").module
    case = type("Case", (), {"func": "f", "args": [np.zeros(2, np.int32)],
                             "max_steps": 1000})
    ref, got = outcome(module, case, "cpu")[3], outcome(module, case, "cuda-cpu")[3]
    assert "x.at(t + 4)" in ref[1] and _fault_place(ref) == ((0,), 1)
    assert "x.at(t + 7)" in got[1] and _fault_place(got) == ((0,), 0)


# Kernels the draws found where the devices differ by design (the rules above), kept:
# lane 0 prints and faults before lanes 1 and 2 print; lanes of a warp race on a1.
PRINT_THEN_FAULT = """
__co__ void lanes(global s8 [3] a0, global s8 [3] a1) {
  parallel b by [1] : block {
    shared f64 [3] xch;
    parallel t by [3] : thread {
      s8 v0 = a0.at(b # t);
      s8 v1 = a1.at(b # t);
      xch.at(t) = __to<f64>(v0);
      sync.shared;
      v0 = __to<s8>(__min(__max(xch.at((t + 1) % 3), -128.0), 127.0));
      sync.shared;
      println("at", t, v0);
      assert((t < 0), "a1");
      a0.at(b # t) = v0;
      a1.at(b # t) = v1;
    }
  }
}
"""
LANES_RACE = """
__co__ void lanes(global s8 [64] a0, global s8 [64] a1) {
  parallel b by [2] : block {
    shared f64 [32] xch;
    parallel t by [32] : thread {
      s8 v0 = a0.at(b # t);
      s8 v1 = a1.at(b # t);
      xch.at(t) = __to<f64>(v1);
      sync.shared;
      v0 = __to<s8>(__min(__max(xch.at((t + 28) % 32), -128.0), 127.0));
      sync.shared;
      a1.at(t + __to<s32>(__to<u8>(v1)) % 3) = v1;
      a0.at(b # t) = v0;
      a1.at(b # t) = v1;
    }
  }
}
"""
def test_found_print_then_fault():
    """Both report lane 0's assertion; the interpreter printed three lines first, the
    device one (lane 0 ran ahead), which the comparison allows after a fault."""
    case = Case(PRINT_THEN_FAULT, "lanes", [np.array([14, -50, -118], np.int8)] * 2)
    module = croqvm.compile(case.source, "gen.co").module
    ref, got = outcome(module, case, "cpu"), outcome(module, case, "cuda-cpu")
    assert got[3] == ref[3] and "assertion failed: a1" in ref[3][1]
    assert len(ref[2]) == 3 and got[2] == ["at 0 -50"]
    check_alike(case)


def test_found_lanes_race():
    """The interpreter's race check names the race, so the results are not compared."""
    case = Case(LANES_RACE, "lanes", [np.arange(64, dtype=np.int8)] * 2)
    assert racy(croqvm.compile(case.source, "gen.co").module, case)
    check_alike(case)
