"""Tensor-map TMA (LANGUAGE.md §9.7; croqvm/cuda/emit_tma.py) on sm_90a.

The CPU runtime's emulation of cp.async.bulk.tensor (cq_tma_tile) against hand-computed
layouts: the 128- and 64-byte swizzles (the PTX ISA's tensor copy swizzling modes, as
CUTLASS writes them: Swizzle<3,4,3> and Swizzle<2,4,3>), a box at a tensor's edge filled
with zeros, and the misuses a GPU would not report (transaction bytes beyond what
expect_tx announced, an unusable map). The same kernels run on a GPU where there is one.

Then the generated programs: where the copies go as tensor-map boxes (the emulation
counts them) and where they fall back (a row that is not a multiple of 16 bytes), with
wgmma reading the 128B-swizzled tiles in place (counted too), the results agree with
the interpreter.
"""
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cuda import abi, driver
from croqvm.running.diff import assert_agree

from cuda_helpers import cpu_libraries, cpu_module, device_module, nvcc_build

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
AT = 1024            # where the box lands in shared memory (the barrier lies below)

# Where the 16-byte chunk c of box row r lands within its row, worked out by hand from
# the swizzle's definition (address bits 4-6 XOR bits 7-9 for 128 bytes, 4-5 XOR 7-8 for
# 64 bytes) for rows of one swizzle span.
SWIZZLE_128 = [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5],
               [3, 2, 1, 0, 7, 6, 5, 4], [4, 5, 6, 7, 0, 1, 2, 3], [5, 4, 7, 6, 1, 0, 3, 2],
               [6, 7, 4, 5, 2, 3, 0, 1], [7, 6, 5, 4, 3, 2, 1, 0]]
SWIZZLE_64 = [[0, 1, 2, 3], [0, 1, 2, 3], [1, 0, 3, 2], [1, 0, 3, 2], [2, 3, 0, 1],
              [2, 3, 0, 1], [3, 2, 1, 0], [3, 2, 1, 0]]


@pytest.fixture(params=["cpu", "gpu"])
def tma(request):
    if request.param == "gpu":
        status = driver.gpu_status()
        if status["ok"] and driver.arch_for(status["capability"]) != "sm_90a":
            pytest.skip("tensor-map TMA needs sm_90a")
    return device_module("rt_tma.cu", request.param)


def test_tma_kernel_compiles_for_sm_90a():
    assert nvcc_build("rt_tma.cu", "sm_90a").read_bytes()[:4] == b"\x7fELF"


def tensor(rows, cols):
    """A u16 tensor whose every element says where it is."""
    return (np.arange(rows)[:, None] * 256 + np.arange(cols)[None, :]).astype(np.uint16)


def run_box(mod, src, box, swizzle, c0, c1, expect=None, at=AT):
    nbytes = box[0] * box[1] * src.itemsize
    out = np.zeros(nbytes, np.uint8)
    fault = mod.launch("box", (1,), 128, at + nbytes,
                       [("ptr", src), ("ptr", out), ("tmap", abi.TensorMapArg(0, box, swizzle)),
                        ("i32", c0), ("i32", c1), ("i32", nbytes if expect is None else expect),
                        ("i32", at), ("i32", nbytes)])
    return fault, out.view(src.dtype).reshape(box)


@pytest.mark.parametrize("swizzle, table", [(128, SWIZZLE_128), (64, SWIZZLE_64)])
def test_swizzled_box_places_each_chunk_as_the_table_says(tma, swizzle, table):
    src = tensor(20, 80)
    cols = swizzle // 2                       # one swizzle span of u16 per row
    fault, got = run_box(tma, src, (8, cols), swizzle, 8, 4)
    assert fault is None
    want = np.zeros_like(got)
    box = src[4:12, 8:8 + cols]
    for r in range(8):
        for c in range(cols // 8):             # 8 elements per 16-byte chunk
            at = table[r][c]
            want[r, at * 8:(at + 1) * 8] = box[r, c * 8:(c + 1) * 8]
    np.testing.assert_array_equal(got, want)


def test_box_at_the_tensors_edge_is_zero_filled(tma):
    src = tensor(20, 80)
    fault, got = run_box(tma, src, (8, 64), 0, 48, -3)    # rows -3..4, columns 48..111
    assert fault is None
    want = np.zeros((8, 64), np.uint16)
    want[3:, :32] = src[0:5, 48:80]
    np.testing.assert_array_equal(got, want)


def test_more_bytes_than_expect_tx_announced_is_a_misuse():
    fault, _ = run_box(cpu_module("rt_tma.cu"), tensor(16, 64), (8, 64), 0, 0, 0, expect=512)
    assert (fault.kind, fault.args[0]) == (abi.FaultKind.MISUSE, abi.Misuse.TMA_TX)


@pytest.mark.parametrize("cols, at", [(81, AT), (64, AT + 16)])
def test_unusable_map_or_unaligned_box_is_a_misuse(cols, at):
    """Rows of 162 bytes (not a multiple of 16) make the host mark the map unusable;
    a swizzled box must land 1024-byte aligned."""
    fault, _ = run_box(cpu_module("rt_tma.cu"), tensor(16, cols), (8, 64), 128, 0, 0, at=at)
    assert (fault.kind, fault.args[0]) == (abi.FaultKind.MISUSE, abi.Misuse.TMA_MAP)


def test_usable_maps_follow_the_drivers_rules():
    assert abi.tensor_map_usable((100, 304), 2, 4096, (64, 64), 128)
    assert not abi.tensor_map_usable((100, 300), 2, 4096, (64, 64), 0)     # 600-byte rows
    assert not abi.tensor_map_usable((100, 304), 2, 4104, (64, 64), 0)     # base % 16
    assert not abi.tensor_map_usable((100, 304), 2, 4096, (64, 257), 0)    # box > 256
    assert not abi.tensor_map_usable((100, 304), 2, 4096, (64, 128), 128)  # wider than swizzle


# --------------------------------------------------------------------------- programs

def counted() -> tuple:
    """(TMA boxes moved, wgmmas reading swizzled tiles in place) on cuda-cpu so far."""
    loaded = cpu_libraries()
    return (sum(lib.tma_boxes() for lib in loaded),
            sum(lib.wgmma_swizzled() for lib in loaded))


def gemm_inputs(m, n, k, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((n, k)).astype(np.float16), np.zeros((m, n), np.float32))


# (program, function, defines, M, N, K, boxes the copies take: 2 per K slab of a tile)
CASES = [
    ("matmul_1p1c", "gemm_ws", {}, 100, 72, 304, 2 * 2 * 5 * 2),
    ("matmul_1p1c", "gemm_ws", {"STAGES": "1"}, 64, 130, 128, 1 * 3 * 2 * 2),
    ("matmul_1p1c", "gemm_ws", {"STAGES": "4"}, 100, 72, 300, 0),     # 600-byte rows
    ("matmul_1p1c", "gemm_ws", {"BN": "256", "STAGES": "3"}, 64, 200, 128, 1 * 1 * 2 * 2),
    ("matmul_tma", "gemm_tma", {}, 64, 128, 192, 1 * 2 * 3 * 2),
    ("matmul_wgmma_async", "gemm_async", {}, 100, 72, 128, 1 * 2 * 2 * 2),
    ("matmul_1p1c_async", "gemm_async", {}, 100, 72, 256, 2 * 2 * 4 * 2),
]


@pytest.mark.parametrize("name, func, defines, m, n, k, boxes", CASES,
                         ids=[f"{c[0]}-{c[3]}x{c[4]}x{c[5]}-{c[2]}" for c in CASES])
def test_programs_agree_with_the_interpreter_by_tma_and_without(name, func, defines, m, n, k,
                                                                boxes):
    prog = croqvm.compile_file(PROGRAMS / f"{name}.co", defines=defines)
    # the counters live in the library, which another test of this process may have run
    # already: count from after the first run has loaded it
    assert_agree(prog, func, *gemm_inputs(m, n, k))
    boxes0, direct0 = counted()
    assert_agree(prog, func, *gemm_inputs(m, n, k, seed=4))
    boxes1, direct1 = counted()
    assert boxes1 - boxes0 == boxes
    assert direct1 > direct0          # wgmma read the tiles where they lie


# A `tma.load` into a future whose box is known when generating goes written out
# (emit_copy.py): the tensor-map box where it fits, else the element copy, with the
# general path's fault reports.
TILE_LOAD = """
__co__ void tile_load(global f16 [M, K] a, global f16 [M, K] y, s32 r) {
  parallel b by 1 : block {
    parallel g by 1 : group-4 {
      f = tma.load.async a.subspan(8, 16).at(r, 0) => shared;
      wait f;
      dma.copy f.data => y.subspan(8, 16).at(r, 0);
    }
  }
}
"""


@pytest.mark.parametrize("m, k, r, boxes", [
    (16, 16, 1, 1),        # the box
    (10, 16, 1, 0),        # partly outside the tensor: the element copy
    (16, 12, 0, 0),        # 24-byte rows: the map is unusable
    (16, 16, 2, 0),        # wholly outside: TILE_OUTSIDE, as the interpreter reports it
])
def test_tma_load_of_a_known_box_agrees_by_tma_and_without(tmp_path, m, k, r, boxes):
    path = tmp_path / "tile_load.co"
    path.write_text(TILE_LOAD)
    prog = croqvm.compile_file(path)
    a = np.arange(m * k, dtype=np.float16).reshape(m, k)
    assert_agree(prog, "tile_load", a, np.zeros((m, k), np.float16), 0)    # loads the library
    boxes0, _ = counted()
    assert_agree(prog, "tile_load", a, np.zeros((m, k), np.float16), r)
    assert counted()[0] - boxes0 == boxes


# `trigger full[1] after f` (§10.7) with a copy that goes by TMA: the binding lanes go on
# while it is in flight, the event's waiters wait for it (docs/CUDA.md, "Copies published
# by an event"). cuda-cpu lands a TMA copy only when a thread waits on its barrier, so
# what the binding warp reads right after the trigger (a race, §7.5, kept here to see
# where the copy is) is the tile before the copy, and what the waiting warp reads is the
# copy's.
PUBLISHED = """
__co__ void published(global f16 [8, 16] a, global f16 [2] seen) {
  parallel b by 1 : block {
    shared f16 [8, 16] s;
    shared event full[2];
    parallel g by 2 : group, t by 32 : thread {
      inthreads.async (g == 0) {
        f = tma.load.async a.subspan(8, 16).at(0, 0) => s;
        trigger full[1] after f;
        if (t == 0) seen.at(0) = s.at(1, 2);
      }
      inthreads.async (g == 1) {
        WAIT;
        if (t == 0) seen.at(1) = s.at(1, 2);
      }
    }
  }
}
"""


@pytest.mark.parametrize("wait", ["wait full[1]", "wait full.at(1)"])
def test_a_published_tma_copy_lands_for_the_events_waiters_not_its_binders(tmp_path, wait):
    path = tmp_path / "published.co"
    path.write_text(PUBLISHED.replace("WAIT", wait))
    prog = croqvm.compile_file(path)
    a = np.arange(1, 129, dtype=np.float16).reshape(8, 16)
    seen = np.zeros(2, np.float16)
    prog.run("published", a, seen, device="cuda-cpu")
    assert seen.tolist() == [0.0, a[1, 2]]     # shared memory starts zeroed (§8.2)
