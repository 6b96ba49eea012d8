"""What a GPU does to generated code that an unconstrained CPU run would hide: each case
is a bug of the CUDA path that only hardware shows, made visible on cuda-cpu (which now
launches and leaves as a GPU does) or, where the CPU cannot show it, checked on the
emitted code. bench/gpu_check.sh runs the same programs on a GPU."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cuda.emit import emit
from croqvm.core import dtypes
from croqvm.cuda.tolerance import gpu_tolerance, result_types
from croqvm.running.diff import Outcome, compare, comparison, gpu_tolerances
from croqvm.core.limits import LAUNCH_SHARED_BYTES

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "programs"

# A block-local buffer of a run-time size lives in the kernel's pool: the launch gets what
# the GPU has (LAUNCH_SHARED_BYTES), not the pool the engines' limit would allow.
SIZED_SHARED = """
__co__ void sized(global f32 [N] x) {
  parallel b by 2 : block, t by 32 : thread {
    shared f32 [N] s;
    s.at(t) = 1.0f;
    x.at(t) = s.at(t);
  }
}
"""


def test_a_pooled_launch_gets_the_shared_memory_a_gpu_gives_and_stays_inside_it():
    prog = croqvm.compile(SIZED_SHARED)
    (kernel,) = emit(prog.module).kernels.values()
    assert kernel.smem_bytes > LAUNCH_SHARED_BYTES    # layout plus the engines' pool
    x = np.zeros(32, np.float32)
    prog.run("sized", x, device="cuda-cpu")           # a write past the launch's end faults
    np.testing.assert_array_equal(x, np.ones(32, np.float32))


def test_the_prologue_clears_only_the_static_shared_memory():
    generated = emit(croqvm.compile(SIZED_SHARED).module)
    (kernel,) = generated.kernels.values()
    text = generated.text
    assert f"i < {kernel.static_bytes // 4}; i += nlanes" in text
    assert f"i < {kernel.smem_bytes // 4};" not in text


@pytest.mark.parametrize("src, bounds", [
    ("parallel p by 2 : block { parallel t by 512 : thread { x.at(t) = 1.0f; } }", "512"),
    ("parallel p by 2 : block { parallel t by N : thread { x.at(t) = 1.0f; } }", "1024"),
])
def test_every_kernel_caps_its_registers_for_its_block(src, bounds):
    """Without launch bounds nvcc gave the double-buffer matmul 214 registers per thread:
    a block of 512 lanes then needs more than an SM's 65,536 and cannot launch."""
    prog = croqvm.compile(f"__co__ void f(global f32 [N] x) {{ {src} }}")
    assert f"CQ_KERNEL CQ_LAUNCH_BOUNDS({bounds}) void" in emit(prog.module).text


def test_a_leaving_lane_is_out_of_the_live_mask_before_it_drops_out_of_collectives():
    """Its drop can complete a rendezvous; the lanes released then share the work among
    the live lanes (cuda-cpu runs a leave at once and cannot show the difference)."""
    prog = croqvm.compile("""
__co__ void yc(global f32 [N] x, global f32 [N] y) {
  parallel b by 1 : block, t by 256 : thread {
    shared f32 [N] s;
    inthreads.async (t < 128) {
      if (t >= 96)
        yield;
      dma.copy x => s;
      y.at(t) = s.at(t) + s.at(t + 128);
    }
  }
}""")
    text = emit(prog.module).text
    leave = text[text.index("auto cq_leave = [&]() {"):]
    leave = leave[:leave.index("};")]
    assert "cq_mbar_arrive_drop" in leave
    assert leave.index("cq_mask_remove(cq_live, lane);") < \
        leave.index("cq_fence_block();") < leave.index("cq_mbar_arrive_drop")


def test_gpu_tolerances_derive_from_the_result_type_the_accumulation_and_k():
    f32_u, f16_u = 2.0 ** -24, 2.0 ** -11
    plain = croqvm.compile("__co__ void f(global f32 [N] x) {\n"
                           "  parallel t by 32 : thread { x.at(t) = __sin(x.at(t)); } }")
    x = np.zeros(300, np.float32)
    assert gpu_tolerance(plain.module, [x], np.ones(2, np.float32)) == (4 * f32_u, 0.0)
    assert gpu_tolerance(plain.module, [x], np.ones(2, np.float16)) == (4 * f16_u, 0.0)
    mma = croqvm.compile_file(PROGRAMS / "matmul_mma_warp.co")
    a, b = np.zeros((64, 256), np.float16), np.zeros((256, 32), np.float16)
    c = np.array([[0.5, -4.0]], np.float32)
    # K = 256 products truncated into f32: 256 ulps of the accumulator, of max|c| = 4
    assert gpu_tolerance(mma.module, [a, b, c], c) == (4 * f32_u + 256 * 2.0 ** -23,
                                                       256 * 2.0 ** -23 * 4.0)


def test_a_bf16_result_held_in_float32_gets_the_tolerance_of_bf16():
    """A GPU's sum one f32 ulp away from the engines' rounds to a bf16 one unit of bf16
    away (Croqtile's gdn_recurrence.co differed so on an H200): a bf16 result, held in a
    float32 array (LANGUAGE.md §14.3.1), is compared in units of bf16."""
    bf16_u = 2.0 ** -8
    prog = croqvm.compile("__co__ void f(global bf16 [N] x, global f32 [N] y) {\n"
                          "  parallel t by 32 : thread { x.at(t) = __sin(y.at(t)); } }")
    assert result_types(prog.module, "f") == {"x": dtypes.BY_NAME["bf16"],
                                              "y": dtypes.BY_NAME["f32"]}
    streamed = croqvm.compile("__co__ s32 f(s32 a, stream s) { return a; }")
    assert result_types(streamed.module, "f") == {"a": dtypes.BY_NAME["s32"],
                                                  "return": dtypes.BY_NAME["s32"]}
    held = np.ones(2, np.float32)
    assert gpu_tolerance(prog.module, [held], held, dtypes.BY_NAME["bf16"]) == (4 * bf16_u, 0.0)
    want = {"x": np.array([1.0, 1.0], np.float32)}
    off_by_a_bf16_unit = {"x": np.array([1.0, 1.0 + 2.0 ** -7], np.float32)}
    derived = gpu_tolerances(prog, "f", [held])
    assert compare(Outcome(want, "", None), Outcome(off_by_a_bf16_unit, "", None),
                   tolerance=derived) == []
    assert compare(Outcome(want, "", None), Outcome(off_by_a_bf16_unit, "", None),
                   tolerance=lambda name, w: gpu_tolerance(prog.module, [held], w)) != []


def test_a_gpu_comparison_applies_each_results_derived_tolerance():
    ref = Outcome({"c": np.array([1.0, 1.0], np.float32)}, "", None)
    gpu = Outcome({"c": np.array([1.0 + 2.0 ** -20, 1.01], np.float32)}, "", None)
    found = compare(ref, gpu, tolerance=lambda name, want: (2.0 ** -15, 0.0))
    assert [m.index for m in found] == [(1,)]
    assert compare(ref, gpu) != [] and len(compare(ref, gpu)) == 2    # exact without it


def test_the_prepared_gpu_check_runs_without_a_gpu_and_says_what_it_skipped(tmp_path):
    from croqvm.cuda import driver
    if driver.gpu_status()["ok"]:
        pytest.skip("a GPU is present: bench/gpu_check.sh runs the whole check")
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "results.md").read_text()
    for step in ("tests", "programs", "repros", "sanitizer", "gemm"):
        assert f"| {step} | skipped: no GPU: " in table
    assert json.loads((tmp_path / "results.json").read_text())["facts"]["gpu"]["ok"] is False


def test_block_collectives_of_different_statements_do_not_pair_on_cuda_cpu():
    """Each collective is a rendezvous of its own statement (LANGUAGE.md §7.4): two warps
    at the copies of the two branches deadlock on the engines, and now on cuda-cpu too,
    where both used to pass barrier 0 together and the run ended without an error."""
    prog = croqvm.compile("""
__co__ void f(global s32 [64] x) {
  parallel b by 1 : block, t by 64 : thread {
    shared s32 [64] s;
    if (t < 32) {
      dma.copy x => s;
    } else {
      dma.copy x => s;
    }
    x.at(t) = s.at(t) + 1;
  }
}""", "div.co")
    found = comparison(prog, "f", np.zeros(64, np.int32))
    assert found.both_fault and found.mismatches == []
    assert "warp 1 (lanes 32-63): collective 'dma.copy' (div.co:8:7): arrived 32/64" in \
        found.other.error


PARTIAL_BARRIERS = """
__co__ void halving(global s32 [64] x) {
  parallel b by 1 : block, t by 64 : thread {
    shared s32 [64] s;
    s.at(t) = x.at(t);
    mutable int stride = 32;
    while (stride > 0) {
      if (t < stride) {
        s.at(t) += s.at(t + stride);
        sync.shared;
      }
      stride = stride / 2;
    }
    x.at(t) = s.at(0);
  }
}

__co__ void sub_warp(global s32 [16] x) {
  parallel t by 16 : thread {
    if (t < 8)
      sync.shared;
    x.at(t) = t;
  }
}

__co__ void half_group(global s32 [128] x) {
  parallel t by 128 : thread {
    if (t < 64)
      sync.barrier : group-4;
    x.at(t) = t;
  }
}

__co__ void half_named(global s32 [64] x) {
  parallel t by 64 : thread {
    if (t < 32)
      __bar_sync(1, 64);
    x.at(t) = t;
  }
}
"""


@pytest.mark.parametrize("func, size, error", [
    ("halving", 64, ("bar.co:10:9: runtime error: 'sync.shared' was reached by only part "
                     "of its group: lanes 32-63 finished the kernel without arriving.")),
    ("sub_warp", 16, ("bar.co:21:7: runtime error: 'sync.shared' is a collective of 16 "
                      "lanes but lanes 8-15 of warp 0 are not active here (divergent "
                      "control flow).")),
    ("half_group", 128, ("bar.co:29:7: runtime error: 'sync.barrier : group-4' was "
                         "reached by only part of its group: lanes 64-127 finished the "
                         "kernel")),
    ("half_named", 64, ("bar.co:37:7: runtime error: deadlock: every live lane of block "
                        "(0) is blocked")),
])
def test_a_barrier_some_lanes_pass_by_is_the_engines_fault_on_cuda_cpu(func, size, error):
    """A GPU lets the lanes at __syncthreads through once the others have exited; cuda-cpu
    still waits for a lane that finished the kernel, so the barrier in 'if (t < stride)'
    and the one of half a 16-lane block are the engines' reports (both ran with exit 0);
    a warpgroup's barrier (an mbarrier) shows its arrivals as the engines do, and a named
    barrier, which counts threads rather than members, is a plain deadlock."""
    prog = croqvm.compile(PARTIAL_BARRIERS, "bar.co")
    found = comparison(prog, func, np.arange(size, dtype=np.int32))
    assert found.both_fault and found.mismatches == []
    assert found.other.error.startswith(error)
