"""Register budgets of warp-specialised kernels on sm_90a (croqvm/cuda/emit_regs.py,
docs/CUDA.md "Register budgets of warp-specialised kernels"): the setmaxnreg each
warpgroup role enters with and the launch bounds that make ptxas honour it, read from
the generated code (the SASS is checked in test_cuda_sass_sm90.py; cuda-cpu, where they
do nothing, runs these kernels in test_cuda_tma.py)."""
import re
from pathlib import Path

import croqvm
from croqvm.cuda.emit import emit

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
SOURCE = (PROGRAMS / "matmul_1p1c.co").read_text()


def generated(source: str, arch: str = "sm_90a") -> str:
    return emit(croqvm.compile(source).module, arch=arch).text


def budget(text: str) -> tuple:
    """(launch bounds, [(branch's source line, "dec"/"inc", count)]) of a one-kernel text."""
    bounds = re.search(r"CQ_LAUNCH_BOUNDS\(([^)]*)\)", text).group(1)
    roles = re.findall(r"// .*?:(\d+): inthreads.*\n(?:.*\n){2} *#ifndef CQ_CPU.*\n *asm volatile"
                       r"\(\"setmaxnreg\.(dec|inc)\.sync\.aligned\.u32 (\d+);", text)
    return bounds, [(int(line), word, int(n)) for line, word, n in roles]


def line_of(text: str) -> int:
    return SOURCE[:SOURCE.index(text)].count("\n") + 1


def test_producer_gives_registers_back_and_the_consumer_takes_them():
    """matmul_1p1c: 256 lanes, shared memory for 3 blocks a multiprocessor: launch bounds
    (256, 3) start a warp at 65536 / 768 = 85, so 80 registers; the producer warpgroup
    keeps 40, the consumer takes what the two warpgroups' 160 leave."""
    text = generated(SOURCE)
    assert budget(text) == ("256, 3", [(line_of("inthreads.async (role == 0)"), "dec", 40),
                                       (line_of("inthreads.async (role == 1)"), "inc", 120)])
    assert text.index("#define CQ_INLINE_RECORDS") < text.index('#include "cq_kernel.h"')


def test_no_budget_without_whole_warpgroup_roles_or_off_sm90a():
    # sm_80 has no setmaxnreg
    assert "setmaxnreg" not in generated(SOURCE, "sm_80")
    # roles of 64 lanes are not warpgroups
    half = SOURCE.replace("(role == 0)", "(tid < 64)").replace("(role == 1)", "(tid >= 64)")
    half = half.replace("parallel role by 2 : group-4 {", "parallel tid by 256 : thread {")
    text = generated(half)
    assert "setmaxnreg" not in text and "CQ_INLINE_RECORDS" not in text
    # not warp-specialised: one warpgroup does everything
    for name in ("matmul_tma", "matmul_wgmma_async"):
        text = generated((PROGRAMS / f"{name}.co").read_text())
        assert "setmaxnreg" not in text and re.search(r"CQ_LAUNCH_BOUNDS\(\d+\)", text)


def test_no_budget_when_a_consumer_branch_comes_before_a_producer():
    """Its .inc could wait for registers a producer gives back only after passing
    something the consumer holds up."""
    head, rest = SOURCE.split("      inthreads.async (role == 0)")
    producer, rest = rest.split("      inthreads.async (role == 1)")
    consumer, tail = rest.rsplit("    }\n  }\n}", 1)
    swapped = (head + "      inthreads.async (role == 1)" + consumer +
               "      inthreads.async (role == 0)" + producer + "    }\n  }\n}" + tail)
    text = generated(swapped)
    assert "setmaxnreg" not in text and "CQ_LAUNCH_BOUNDS(256) " in text


def test_a_kernel_calling_an_outlined_helper_keeps_no_budget():
    """A producer copy of a tile sized at run time goes through the runtime's cq_dma_move,
    a call, for which ptxas cannot allocate registers after setmaxnreg."""
    sized = SOURCE.replace("a.subspan(BM, BK)", "a.subspan(BM, BK * (K / K))")
    text = generated(sized)
    assert "cq_dma_move(" in text
    assert "setmaxnreg" not in text and "CQ_LAUNCH_BOUNDS(256) " in text


def test_a_programs_own_register_budget_gets_the_blocks_per_multiprocessor():
    """ptxas drops setmaxnreg from a kernel whose launch bounds lack the blocks per
    multiprocessor (§6.10.6's setreg_inc/setreg_dec)."""
    text = generated("""
        __co__ void f(global s32 [4] y) {
          parallel p by 4 : block {
            call croq::cuda::setreg_dec(40);
            y.at(p) = p + 1;
          }
        }""")
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in text and "CQ_LAUNCH_BOUNDS(1, 1) " in text
