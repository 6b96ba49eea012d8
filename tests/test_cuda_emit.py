"""The CUDA generator's own rules (croqvm/cuda/emit*.py); what its output computes is
tested by running it (test_cuda_programs.py and, on request, --engine cuda-cpu)."""
from pathlib import Path

import pytest

import croqvm
from croqvm.bytecode.opcodes import TABLE
from croqvm.cuda.emit import UnsupportedError, emit
from croqvm.cuda.emit_ops import HANDLERS


def test_every_opcode_a_kernel_may_hold_has_a_handler():
    assert {op.name for op in TABLE if not op.host_only} <= set(HANDLERS)


def test_an_unknown_architecture_is_refused():
    prog = croqvm.compile("__co__ void f() { parallel p by 2 { println(p); } }")
    with pytest.raises(UnsupportedError, match="unknown CUDA architecture 'sm_75': use "
                                               "sm_80 or sm_90a"):
        emit(prog.module, arch="sm_75")


def test_sync_fence_is_a_block_fence():
    prog = croqvm.compile("__co__ void f() { parallel p by 2 { sync.fence : block; } }")
    assert "cq_fence_block();" in emit(prog.module).text


def test_generation_is_deterministic():
    prog = croqvm.compile_file(Path(__file__).resolve().parent.parent / "programs" /
                               "matmul_1p1c.co")
    assert emit(prog.module).text == emit(prog.module).text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_math_atomics_and_mx_types_for_both_architectures(arch):
    """MATH goes through cq_math, ATOMIC through the compare-and-swap step cq_update, and
    MX elements are bytes read and written through cq_mx_value and cq_mx_bits."""
    prog = croqvm.compile(
        "__co__ void f(global s32 [4] g, global f4_e2m1 [4] h) {\n"
        "  parallel p by 4 : thread {\n"
        "    __atomic_max(g.at(p), 3);\n"
        "    h.at(p) = __sin(__to<f32>(h.at(p)));\n"
        "  }\n}")
    text = emit(prog.module, arch=arch).text
    assert "cq_math(CQ_MATH_SIN, " in text and "cq_update(" in text
    assert "cq_mx_value(" in text and "cq_mx_bits(" in text


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_per_warp_copy_meets_on_its_warps_barrier(arch):
    """§9.3.2: the copy of one warp is a rendezvous of that warp (a barrier per warp
    instance), never __syncthreads, which would wait for the other warps."""
    prog = croqvm.compile(
        "__co__ void f(s32 [4, 8] a) {\n  parallel b by 1 : block {\n"
        "    shared s32 [1, 8] rows[4];\n    parallel g by 4 : group {\n"
        "      dma.copy a.subspan(1, 8).at(g, 0) => rows[g];\n    }\n  }\n}")
    copy = [line for line in emit(prog.module, arch=arch).text.splitlines()
            if line.endswith("// 5:7")]
    rendezvous = [line for line in copy if "const cq_coll cl = " in line]
    assert len(rendezvous) == 1 and "(lane / 32)" in rendezvous[0], rendezvous
    assert not any("cq_sync_block" in line for line in copy)
