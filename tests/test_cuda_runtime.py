"""The croqvm CUDA runtime (croqvm/cuda/rt): hand-written kernels in tests/cuda/ run on
the CPU runtime (and on a GPU where there is one) with checked results, and compile
with nvcc for sm_80 and sm_90a. Deadlock reports, CUDA-rule checks and the moment a
cp.async lands are the CPU runtime's own and tested there only.

Expected values come from independent references: Python simulations of what each
kernel computes, numpy, NVIDIA's CuTe layout tables for the mma fragments, and the
interpreter's MMA arithmetic (croqvm.core.numerics) for rounding.
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from croqvm.core import dtypes, errors
from croqvm.cuda import abi
from croqvm.cuda import compile as cc
from croqvm.core.numerics import fma_to

from cuda_helpers import CUDA_DIR, cpu_module, device_module, nvcc_build

# --------------------------------------------------------------------------- barriers


def ring(values, rounds):
    """What the ring kernels compute: each round every thread takes its successor's
    value plus one."""
    v = list(values)
    for _ in range(rounds):
        v = [v[(i + 1) % len(v)] + 1 for i in range(len(v))]
    return v


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    return request.param


@pytest.fixture
def barriers(device):
    return device_module("rt_barriers.cu", device)


@pytest.fixture
def events(device):
    return device_module("rt_events.cu", device)


@pytest.fixture
def cpu_events():
    return cpu_module("rt_events.cu")


def test_block_barrier_waits_only_for_threads_that_have_not_exited(barriers):
    out = np.full(2 * 96, -7, np.int32)
    assert barriers.launch("block_ring", (2,), 96, 96 * 4,
                           [("ptr", out), ("i32", 5), ("i32", 40)]) is None
    for b in range(2):
        assert list(out[96 * b:96 * b + 40]) == ring(range(96 * b, 96 * b + 40), 5)
        assert (out[96 * b + 40:96 * b + 96] == -7).all()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc (Linux)")
def test_a_launch_gives_back_its_threads_stacks():
    # each kernel's library keeps a runtime of its own: stacks kept after its launches
    # (a stack and its guard page: two memory maps a thread) add up over the kernels a
    # process loads, to the system's limit on maps
    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    module = cpu_module("rt_barriers.cu")
    out = np.full(2 * 1024, -7, np.int32)
    before = maps()
    assert module.launch("block_ring", (2,), 1024, 1024 * 4,
                         [("ptr", out), ("i32", 5), ("i32", 40)]) is None
    assert maps() - before < 100     # kept, 1024 threads' stacks: 2048 maps


def test_named_barriers_synchronise_disjoint_groups(barriers):
    out = np.zeros(128, np.int32)
    assert barriers.launch("named_groups", (1,), 128, 128 * 4,
                           [("ptr", out), ("i32", 3), ("i32", 7)]) is None
    assert list(out[:64]) == ring(range(64), 3)
    assert list(out[64:]) == ring(range(1000, 1064), 7)


def test_named_barrier_counts_a_warp_once_its_live_threads_arrive(barriers):
    out = np.full(64, -1, np.int32)
    assert barriers.launch("named_after_exit", (1,), 64, 64 * 4, [("ptr", out)]) is None
    live = [t for t in range(64) if t < 32 or t % 2 == 0]
    assert [int(out[t]) for t in live] == [10 * ((2 * t + 2) % 64) for t in live]


def test_mbarrier_phases_and_arrive_drop(barriers):
    out = np.zeros(96, np.int32)
    assert barriers.launch("mbar_ring", (1,), 96, 8 + 96 * 4,
                           [("ptr", out), ("i32", 5), ("i32", 2), ("i32", 64)]) is None
    before = ring(range(96), 2)
    assert list(out[64:]) == [-v for v in before[64:]]
    assert list(out[:64]) == ring(before[:64], 3)


def test_fiber_switch_preserves_floating_point_registers(barriers):
    out = np.zeros(64, np.float64)
    assert barriers.launch("double_ring", (1,), 64, 64 * 8, [("ptr", out), ("i32", 6)]) is None
    v = np.arange(64) * 0.5
    w = 1.0 / (np.arange(64) + 1)
    for _ in range(6):
        v = np.roll(v, -1) * 0.75 + w
        w = w * 1.25
    assert (out == v + w).all()


# --------------------------------------------------------------------------- events


@pytest.mark.parametrize("stages", [1, 2, 3])
@pytest.mark.parametrize("ready", [0, 1])
def test_event_pipeline_with_credits_or_ready(events, stages, ready):
    out = np.zeros(10, np.int32)
    assert events.launch("pipeline", (1,), 64, 3 * 4 * stages,
                         [("ptr", out), ("i32", 10), ("i32", stages), ("i32", ready)]) is None
    assert list(out) == [k * k + 1 for k in range(10)]


def run_ahead(events, triggers, per_lane, need, ready, waits):
    seen = np.zeros(32 * waits, np.int64)
    got = events.launch("run_ahead", (1,), 64, 4,
                        [("ptr", seen), ("i32", triggers), ("i32", per_lane), ("i32", need),
                         ("i32", ready), ("i32", waits)])
    return got, seen.reshape(32, waits)


def test_event_slot_runs_several_generations_ahead(events):
    # 30 arrivals of 8 complete 3 generations on top of the ready one: 4 waits pass
    got, seen = run_ahead(events, triggers=10, per_lane=3, need=8, ready=1, waits=4)
    assert got is None
    arrivals, waited = seen // 1000, seen % 1000
    assert (waited == np.arange(1, 5)).all()
    assert (1 + arrivals // 8 >= waited).all()       # each wait saw its generation done


def test_event_surplus_arrivals_count_toward_the_next_generation(events, cpu_events):
    # 10 arrivals of 8: one generation and 2 toward the next; a second wait blocks
    got, _ = run_ahead(events, triggers=10, per_lane=1, need=8, ready=0, waits=1)
    assert got is None
    got, _ = run_ahead(cpu_events, triggers=10, per_lane=1, need=8, ready=0, waits=2)
    assert isinstance(got, abi.Deadlock)
    assert int.from_bytes(got.smem[:4], "little") == 10
    waiting = got.threads[32:]
    assert all(t == (abi.WaitKind.EVENT, 5, 0, 1) for t in waiting)   # generation 1
    assert all(t[0] == abi.WaitKind.EXITED for t in got.threads[:32])


# --------------------------------------------------------------------------- cp.async


def test_cp_async_zero_fills(events, device):
    src = np.arange(1, 101, dtype=np.int32)
    early = np.zeros(64, np.int32)
    out = np.zeros(128, np.int32)
    assert events.launch("copy_async", (1,), 32, 512,
                         [("ptr", src), ("i32", 100), ("ptr", early), ("ptr", out)]) is None
    tile = np.concatenate([src, np.zeros(28, np.int32)])
    assert (out == np.roll(tile, -4)).all()
    if device == "cpu":
        assert (early == -1).all()    # group 1 lands at its wait; until then 0xFF bytes


def test_once_claims_each_execution_exactly_once(events):
    by, claims = np.full(5, -1, np.int32), np.zeros(64, np.int32)
    assert events.launch("once", (1,), 64, 4, [("ptr", by), ("ptr", claims), ("i32", 5)]) is None
    assert claims.sum() == 5 and all(claims[t] >= 1 for t in by)


# --------------------------------------------------------------------------- faults


def test_fault_record_keeps_the_first_in_block_then_lane_order(events, device):
    where = np.array([1, 40, 2, 0, 1, 7, -1], np.int32)
    ran = np.zeros((3, 64), np.int32)
    got = events.launch("faults", (3,), 64, 0, [("ptr", where), ("ptr", ran)])
    assert got == abi.DeviceFault(abi.FaultKind.CHECK, 102, 1, 7, (1, 7, -5, 1 << 40) + (0,) * 12)
    # the CPU runtime stops after the block of the first fault; a GPU runs them all
    assert ran.sum(axis=1).tolist() == ([64, 64, 0] if device == "cpu" else [64] * 3)


def test_fault_record_orders_blocks_row_major(events):
    # grid (2, 3): block (1, 0) is linear 3, block (0, 2) linear 2 and so first
    where = np.array([3, 5, 2, 9, -1], np.int32)
    ran = np.zeros((6, 32), np.int32)
    got = events.launch("faults", (2, 3), 32, 0, [("ptr", where), ("ptr", ran)])
    assert (got.block, got.lane, got.site) == (2, 9, 101)


def test_deadlock_reports_every_threads_wait(cpu_events):
    got = cpu_events.launch("deadlock", (1,), 64, 8, [("ptr", np.zeros(64, np.int32))])
    assert isinstance(got, abi.Deadlock) and got.block == 0
    # a named barrier's wait: the barrier, then its count (64) and the threads arrived
    assert got.threads[:32] == ((abi.WaitKind.NAMED_BARRIER, 8, 3, 64 << 32 | 32),) * 32
    assert got.threads[32:] == ((abi.WaitKind.EVENT, 9, 4, 0),) * 32
    assert got.smem == (32).to_bytes(4, "little") + bytes(4)


def test_deadlock_at_a_partly_reached_block_barrier(cpu_events):
    got = cpu_events.launch("deadlock_barrier", (1,), 32, 8, [("ptr", np.zeros(32, np.int32))])
    assert got.threads[:10] == ((abi.WaitKind.BLOCK_BARRIER, 11, 10, 32),) * 10
    assert got.threads[10:] == ((abi.WaitKind.EVENT, 12, 0, 0),) * 22


@pytest.mark.parametrize("which, block, code, site", [
    (0, 32, abi.Misuse.BARRIER_COUNT, 13),
    (1, 32, abi.Misuse.BARRIER_ID, 14),
    (2, 32, abi.Misuse.CP_ASYNC_ALIGN, -1),
    (3, 32, abi.Misuse.CP_ASYNC_PENDING, -1),
    (4, 16, abi.Misuse.WARP_PARTIAL, 15),
    (5, 32, abi.Misuse.MBAR_EMPTY, -1),
])
def test_cuda_rules_broken_by_generated_code_are_reported(cpu_events, which, block, code,
                                                          site):
    src = np.zeros(16, np.int32)
    got = cpu_events.launch("misuse", (1,), block, 64, [("ptr", src), ("i32", which)])
    assert (got.kind, got.args[0], got.site, got.lane) == (abi.FaultKind.MISUSE, code, site, 0)
    assert cpu_events.misuse_text(got)


# --------------------------------------------------------------------------- mma.sync

# name: (M, N, K, A, B, C) -- the shapes the runtime must provide (§11.4 `group` atoms)
SHAPES = {
    "m16n8k16_f16_f32": (16, 8, 16, "f16", "f16", "f32"),
    "m16n8k8_f16_f32": (16, 8, 8, "f16", "f16", "f32"),
    "m16n8k16_bf16_f32": (16, 8, 16, "bf16", "bf16", "f32"),
    "m16n8k8_bf16_f32": (16, 8, 8, "bf16", "bf16", "f32"),
    "m16n8k8_tf32_f32": (16, 8, 8, "tf32", "tf32", "f32"),
    "m16n8k4_tf32_f32": (16, 8, 4, "tf32", "tf32", "f32"),
    "m8n8k4_f64_f64": (8, 8, 4, "f64", "f64", "f64"),
    **{f"m{m}n8k{k}_{a}_{b}_s32": (m, 8, k, a, b, "s32")
       for m, k in ((16, 32), (16, 16), (8, 16)) for a in ("s8", "u8") for b in ("s8", "u8")},
}

# CuTe's (thread, value) -> index layouts of the SM80 mma atoms (NVIDIA/cutlass,
# include/cute/atom/mma_traits_sm80.hpp) as ((thread shape, stride), (value shape,
# stride)); the index is column-major in the (M, K) tile for A, (N, K) for B, (M, N) for C.
T4x8 = (4, 8)
SM80_8x4 = ((T4x8, (8, 1)), ((1,), (0,)))
SM80_8x8_ROW = ((T4x8, (16, 1)), ((2,), (8,)))
SM80_8x16_ROW = ((T4x8, (32, 1)), ((4,), (8,)))
SM80_16x8_ROW = ((T4x8, (32, 1)), ((2, 2), (16, 8)))
CUTE = {   # (M, N, K, operand class): (A, B, C)
    (16, 8, 16, "16"): (((T4x8, (32, 1)), ((2, 2, 2), (16, 8, 128))),
                        ((T4x8, (16, 1)), ((2, 2), (8, 64))), SM80_16x8_ROW),
    (16, 8, 8, "16"): (SM80_16x8_ROW, SM80_8x8_ROW, SM80_16x8_ROW),
    (16, 8, 8, "tf32"): (((T4x8, (16, 1)), ((2, 2), (8, 64))),
                         ((T4x8, (8, 1)), ((2,), (32,))), SM80_16x8_ROW),
    (16, 8, 4, "tf32"): (((T4x8, (16, 1)), ((2,), (8,))), SM80_8x4, SM80_16x8_ROW),
    (8, 8, 4, "f64"): (SM80_8x4, SM80_8x4, SM80_8x8_ROW),
    (16, 8, 32, "8"): (((T4x8, (64, 1)), ((4, 2, 2), (16, 8, 256))),
                       ((T4x8, (32, 1)), ((4, 2), (8, 128))), SM80_16x8_ROW),
    (16, 8, 16, "8"): (((T4x8, (64, 1)), ((4, 2), (16, 8))), SM80_8x16_ROW, SM80_16x8_ROW),
    (8, 8, 16, "8"): (SM80_8x16_ROW, SM80_8x16_ROW, SM80_8x8_ROW),
}
OPERAND_CLASS = {"f16": "16", "bf16": "16", "tf32": "tf32", "f64": "f64", "s8": "8", "u8": "8"}


def cute_index(layout, thread, value):
    """CuTe evaluates coordinates colexicographically: the first mode varies fastest."""
    (tshape, tstride), (vshape, vstride) = layout
    idx = 0
    for coord, shape, stride in ((thread, tshape, tstride), (value, vshape, vstride)):
        for s, d in zip(shape, stride):
            idx += (coord % s) * d
            coord //= s
    return idx


def cute_maps(name):
    m, n, k, a, _, _ = SHAPES[name]
    la, lb, lc = CUTE[(m, n, k, OPERAND_CLASS[a])]
    na, nb, nc = m * k // 32, k * n // 32, m * n // 32
    amap = [(cute_index(la, t, i) % m, cute_index(la, t, i) // m) for t in range(32) for i in range(na)]
    # B is indexed (N, K); the runtime's map gives (k, n)
    bmap = [(cute_index(lb, t, i) // n, cute_index(lb, t, i) % n) for t in range(32) for i in range(nb)]
    cmap = [(cute_index(lc, t, i) % m, cute_index(lc, t, i) // m) for t in range(32) for i in range(nc)]
    return amap, bmap, cmap


@pytest.fixture
def mma(device):
    return device_module("rt_mma.cu", device)


def test_the_runtime_provides_every_shape_listed_here():
    text = (cc.RT_DIR / "cq_mma.h").read_text()
    listed = re.findall(r"X\((\w+), (\d+), (\d+), (\d+), cq_(\w+), cq_(\w+), cq_(\w+)\)", text)
    assert {n: (int(m), int(nn), int(k), a, b, c) for n, m, nn, k, a, b, c in listed} == SHAPES


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_fragment_maps_match_cute(mma, name):
    m, n, k = SHAPES[name][:3]
    sizes = (m * k, k * n, m * n)
    bufs = [np.zeros(2 * s, np.int32) for s in sizes]
    assert mma.launch(f"maps_{name}", (1,), 32, 0, [("ptr", b) for b in bufs]) is None
    got = [list(map(tuple, b.reshape(-1, 2).tolist())) for b in bufs]
    assert got == [list(x) for x in cute_maps(name)]


NP_VALUE = {"f16": np.float32, "bf16": np.float32, "tf32": np.float32, "f32": np.float32,
            "f64": np.float64, "s8": np.int32, "u8": np.int32, "s32": np.int32}
RANGE = {"s8": (-128, 128), "u8": (0, 256)}


def operand(rng, t, shape, small):
    """Random values of croqvm type ``t`` in the runtime's value type; ``small``: small
    integers, which every product and sum below represents exactly."""
    if t in RANGE:
        lo, hi = (-4, 5) if small and t == "s8" else (0, 5) if small else RANGE[t]
        return rng.integers(lo, hi, shape).astype(np.int32)
    if t == "s32":
        lo, hi = (-50, 50) if small else (-2 ** 31, 2 ** 31)
        return rng.integers(lo, hi, shape).astype(np.int32)
    if small:
        return rng.integers(-4, 5, shape).astype(NP_VALUE[t])
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-8, 9, shape)
    if t == "f16":
        return x.astype(np.float16).astype(np.float32)
    drop = {"bf16": 16, "tf32": 13, "f32": 0}.get(t)
    if drop is None:
        return x
    bits = x.astype(np.float32).view(np.uint32) & np.uint32((0xFFFFFFFF >> drop) << drop)
    return bits.view(np.float32)


def run_mma(mma, name, small, seed):
    m, n, k, ta, tb, tc = SHAPES[name]
    rng = np.random.default_rng(seed)
    a, b, c = operand(rng, ta, (m, k), small), operand(rng, tb, (k, n), small), \
        operand(rng, tc, (m, n), small)
    d = np.zeros((m, n), NP_VALUE[tc])
    assert mma.launch(f"mma_{name}", (1,), 32, 0,
                      [("ptr", a), ("ptr", b), ("ptr", c), ("ptr", d)]) is None
    return a, b, c, d


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_mma_small_integers_equal_numpy(mma, name):
    """Exact on every device: on a GPU this checks the fragment layouts against the
    tensor cores themselves."""
    a, b, c, d = run_mma(mma, name, small=True, seed=1)
    want = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
    assert (d.astype(np.int64) == want).all()


def stepwise(a, b, c, tc):
    """The engines' MMA (LANGUAGE.md §12.4): k ascending, each step c + a b rounded once
    to the accumulator type; integers wrap."""
    if tc == "s32":
        return (a.astype(np.int64) @ b.astype(np.int64) + c).astype(np.int32)
    acc = dtypes.F64 if tc == "f64" else dtypes.F32
    want = c.astype(np.float64)
    for k in range(a.shape[1]):
        col, row = np.broadcast_arrays(a[:, k, None].astype(np.float64),
                                       b[None, k, :].astype(np.float64))
        want = fma_to(want, col, row, acc, tc != "f64")
    return want


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_mma_rounds_like_the_interpreter(name):
    """The CPU runtime reproduces the engines' rounding bit for bit."""
    a, b, c, d = run_mma(cpu_module("rt_mma.cu"), name, small=False, seed=2)
    assert (d == stepwise(a, b, c, SHAPES[name][5]).astype(d.dtype)).all()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_mma_on_a_gpu_is_within_the_accumulation_bound(name):
    """Tensor cores add the K products in their own order and precision: each result
    is within K roundings of the accumulator type of the exact sum, relative to
    |c| + sum |a b| (the textbook bound for a K-term sum); integers are exact."""
    a, b, c, d = run_mma(device_module("rt_mma.cu", "gpu"), name, small=False, seed=2)
    tc, k = SHAPES[name][5], SHAPES[name][2]
    if tc == "s32":
        assert (d == stepwise(a, b, c, tc)).all()
        return
    wide = a.astype(np.float64), b.astype(np.float64)
    scale = np.abs(c).astype(np.float64) + np.abs(wide[0]) @ np.abs(wide[1])
    eps = np.finfo(np.float64 if tc == "f64" else np.float32).eps
    # for f64 the float64 reference itself carries up to the same error
    slack = 2 if tc == "f64" else 1
    assert (np.abs(d - (wide[0] @ wide[1] + c)) <= slack * (k + 1) * eps * scale).all()


# --------------------------------------------------------------------------- builds

SOURCES = ["rt_barriers.cu", "rt_events.cu", "rt_mma.cu"]


@pytest.mark.parametrize("arch", cc.GPU_ARCHES)
@pytest.mark.parametrize("source", SOURCES)
def test_runtime_kernels_compile_with_nvcc(source, arch):
    cubin = nvcc_build(source, arch)
    assert cubin.read_bytes()[:4] == b"\x7fELF"


SELFTEST_EXPECTED = [
    "block_ring 0 " + " ".join(map(str, ring(range(40), 5))),
    "pipeline 0 " + " ".join(str(k * k + 1) for k in range(10)),
    "deadlock 2 8 9",
]


@pytest.mark.parametrize("variant", ["ucontext", "aarch64"])
def test_other_fiber_switches_run_the_same_kernels(tmp_path, variant):
    """The ucontext fallback, and the aarch64 switch under qemu where a cross compiler
    and qemu-aarch64 are installed."""
    if variant == "aarch64":
        cxx, flags, runner = "aarch64-linux-gnu-g++", ["-static"], ["qemu-aarch64"]
        if not (shutil.which(cxx) and shutil.which(runner[0])):
            pytest.skip("needs aarch64-linux-gnu-g++ and qemu-aarch64")
    else:
        cxx, flags, runner = shutil.which("g++") or "c++", ["-DCQ_FIBER_UCONTEXT"], []
    exe = tmp_path / "selftest"
    includes = [f"-I{d}" for d in (*cc.INCLUDE_DIRS, CUDA_DIR)]
    subprocess.run([cxx, "-std=c++17", "-O1", "-ffp-contract=off", "-DCQ_CPU", *flags,
                    *includes, str(CUDA_DIR / "rt_selftest.cpp"), "-o", str(exe)], check=True)
    out = subprocess.run([*runner, str(exe)], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == SELFTEST_EXPECTED


def test_abi_mirror_is_checked(cpu_events, monkeypatch):
    # the CPU runtime's library carries the table (a cubin has no host symbols to read)
    real = abi.expected_table()
    monkeypatch.setattr(abi, "expected_table", lambda: {**real, "cq_fault_rec.site": 99})
    with pytest.raises(errors.InternalError, match="cq_fault_rec.site"):
        abi.check_library(cpu_events.lib, cpu_events.path)
