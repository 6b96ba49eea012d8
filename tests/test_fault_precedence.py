"""Which fault an instruction reports when several lanes fail in different ways
(docs/EXECUTION.md §14.2): the checks run in stages, and the first stage
that fails reports its lowest lane."""
import copy
import io
import textwrap
from pathlib import Path

import numpy as np

import pytest

import croqvm
import engines
from croqvm.bytecode import opcodes as O
from croqvm.core.errors import KernelFault

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def first_line(source: str, **options) -> str:
    prog = croqvm.compile(textwrap.dedent(source).lstrip("\n"), "p.co")
    with pytest.raises(KernelFault) as e:
        engines.run(prog, "f", out=io.StringIO(), **options)
    text = str(e.value).splitlines()
    return f"{text[0]} | {text[-1]}"


# A copy of a tile that reaches past its buffer's end into the DMA's own buffer: element
# 0 is a.at(2), element 1 is never written (LANGUAGE.md §14.4).
PARTIAL = "g = dma.copy a.subspan(2).at(1) => shared;"


def test_an_update_reports_uninitialised_reads_before_its_operation():
    """Lane 0 divides by zero, lane 1 reads an element never written: the read stage
    comes first, though its lane is higher."""
    src = f"""
        __co__ void f() {{
          s32 [3] a {{5}};
          parallel p by 1 : block {{
            {PARTIAL}
            parallel t by 2 : thread
              g.data.at(t) /= t;
          }}
        }}"""
    assert first_line(src, check="init") == (
        "p.co:6:7: runtime error: read of uninitialised element g.data.at(1) (buffer "
        "declared at p.co:4:5). |   in kernel launched at p.co:3:3, block (0), lane 1 "
        "(warp 0, lane 1)")


def test_a_load_reports_addresses_before_uninitialised_reads():
    src = f"""
        __co__ void f() {{
          s32 [3] a {{5}};
          s32 [2] c;
          parallel p by 1 : block {{
            {PARTIAL}
            parallel t by 2 : thread
              c.at(t) = g.data.at(1 - 3 * t);
          }}
        }}"""
    assert first_line(src, check="init") == (
        "p.co:7:7: runtime error: out-of-range access g.data.at(-2): index -2 of dimension "
        "0 is not in [0, 2). |   in kernel launched at p.co:4:3, block (0), lane 1 (warp 0, "
        "lane 1)")


def test_a_store_reports_the_lowest_lane_of_address_and_conversion_faults():
    """Lane 0 stores a value no s32 holds, lane 1 out of range: lane 0 is lower."""
    src = """
        __co__ void f() {
          s32 [2] b;
          parallel t by 2 {
            f32 v = 30000000000.0f - t;
            b.at(3 * t) = v;
          }
        }"""
    assert first_line(src) == (
        "p.co:5:5: runtime error: value 3e+10 out of range for 's32'. |   in kernel "
        "launched at p.co:3:3, block (0), lane 0 (warp 0, lane 0)")


def test_a_collective_names_the_lane_its_effect_acts_for():
    """A DMA of four warps into a buffer whose ALLOC a hand-made module dropped: the effect
    acts for lane 0, whichever warp arrives last (one engine named lane 96)."""
    prog = croqvm.compile_file(Path(__file__).parents[1] / "programs" / "matmul_mma_warp.co")
    module = copy.deepcopy(prog.module)
    code = module.functions[0].kernels[0].code
    alloc = next(i for i in range(0, len(code.code), O.WIDTH) if code.code[i] == O.ALLOC)
    code.code[alloc:alloc + O.WIDTH] = code.code[:O.WIDTH]       # a CONST instead
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    with pytest.raises(KernelFault) as e:
        engines.run(croqvm.Program(module), "gemm_warps", a, b, np.zeros((32, 32), np.float32))
    lines = str(e.value).splitlines()
    assert lines[0].endswith("runtime error: buffer 'sa' is used before its declaration "
                             "executed.")
    assert lines[-1].endswith("block (0, 0), lane 0 (warp 0, lane 0)")
