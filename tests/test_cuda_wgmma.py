"""wgmma.mma_async in the croqvm CUDA runtime (rt/cq_wgmma.h; LANGUAGE.md §11.4
`group-4` on sm_90a): the hand-written kernels of tests/cuda/rt_wgmma.cu run on the CPU
runtime, which emulates wgmma by decoding the matrix descriptors as the PTX ISA defines
them, and compile with nvcc for sm_90a. No GPU ran them here; where one is present the
same kernels run on it.

References, independent of the runtime: the PTX ISA's worked example of the canonical
K-major layout without swizzling ("K-Major, no-swizzling and tf32 type": layout
((8,2),(4,4)):((4,32),(1,64)) in elements, LBO 256 and SBO 128 bytes, encoded 16 and 8),
CUTLASS's accumulator layout of the SM90 GMMA atoms (CLayout_64xN, NVIDIA/cutlass
include/cute/atom/mma_traits_sm90_gmma.hpp), numpy, and the interpreter's MMA arithmetic
(croqvm.core.numerics) for rounding.
"""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.core import dtypes
from croqvm.core.errors import KernelFault
from croqvm.cuda import abi
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import UnsupportedError, emit
from croqvm.core.numerics import round_to
from croqvm.running.diff import assert_agree

from cuda_helpers import cpu_libraries, cpu_module, device_module, nvcc_build
from test_cuda_runtime import cute_index, operand, stepwise

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"

# name: (A, B, accumulator types, K) -- every type cq_wgmma.h provides, at N 8 .. 64
TYPES = {
    "f16_f32": ("f16", "f16", "f32", 16), "bf16_f32": ("bf16", "bf16", "f32", 16),
    "tf32_f32": ("tf32", "tf32", "f32", 8), "e4m3_f32": ("e4m3", "e4m3", "f32", 32),
    "e5m2_f32": ("e5m2", "e5m2", "f32", 32),
    **{f"{a}_{b}_s32": (a, b, "s32", 32) for a in ("s8", "u8") for b in ("s8", "u8")},
}
SHAPES = {f"n{n}_{name}": (n, *t) for n in (8, 16, 32, 64) for name, t in TYPES.items()}
BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
FP8 = {"e4m3": np.float32, "e5m2": np.float32}


@pytest.fixture(params=["cpu", "gpu"])
def device(request):
    return request.param


@pytest.fixture
def wg(device):
    return device_module("rt_wgmma.cu", device)


def test_the_runtime_provides_every_type_listed_here():
    text = (cc.RT_DIR / "cq_wgmma.h").read_text()
    listed = re.findall(r"X\(n, (\w+), cq_(\w+), cq_(\w+), cq_(\w+), (\d+),", text)
    assert {n: (a, b, c, int(k)) for n, a, b, c, k in listed} == TYPES


def layout(wg, rows, bytes_, addr):
    ks = 64 // bytes_
    off = np.zeros(rows * ks, np.int32)
    desc = np.zeros(1, np.uint64)
    dmap = np.zeros(2 * 128 * 32, np.int32)
    assert wg.launch("layout", (1,), 128, 0, [("i32", rows), ("i32", bytes_), ("ptr", off),
                                              ("u32", addr), ("ptr", desc),
                                              ("ptr", dmap)]) is None
    return off.reshape(rows, ks), int(desc[0]), dmap.reshape(128, 32, 2)


def test_staging_layout_is_the_ptx_isa_example():
    """tf32, 16 rows, 16 columns of K: ((8,2),(4,4)):((4,32),(1,64)) in elements."""
    off, desc, _ = layout(cpu_module("rt_wgmma.cu"), 16, 4, 0)
    want = np.zeros((16, 16), np.int64)
    for r in range(16):
        for k in range(16):
            want[r, k] = 4 * ((r % 8) * 4 + (r // 8) * 32 + (k % 4) * 1 + (k // 4) * 64)
    assert (off == want).all()
    assert desc == 16 << 16 | 8 << 32                    # LBO 256 >> 4, SBO 128 >> 4


def test_descriptor_fields():
    _, desc, _ = layout(cpu_module("rt_wgmma.cu"), 64, 2, 0x12340)
    assert desc & 0x3FFF == 0x12340 >> 4
    assert (desc >> 16) & 0x3FFF == 64 * 16 >> 4 and (desc >> 32) & 0x3FFF == 128 >> 4
    assert desc >> 46 == 0                               # base offset 0, no swizzling


def test_accumulator_map_is_cutlass_clayout_64xn():
    """CLayout_64xN = ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)), column-major (M, N)."""
    _, _, dmap = layout(cpu_module("rt_wgmma.cu"), 64, 2, 0)
    clayout = (((4, 8, 4), (128, 1, 16)), ((2, 2, 8), (64, 8, 512)))
    for t in range(128):
        for i in range(32):
            idx = cute_index(clayout, t, i)
            assert tuple(dmap[t, i]) == (idx % 64, idx // 64)


def values(rng, t, shape, small):
    if t in FP8:
        # values of the type: small integers, or signed powers of two and their 1.5x
        if small:
            return rng.integers(-4, 5, shape).astype(np.float32)
        mant = rng.choice([1.0, 1.5], shape) * rng.choice([-1.0, 1.0], shape)
        return (mant * 2.0 ** rng.integers(-6, 7, shape)).astype(np.float32)
    return operand(rng, t, shape, small)


def run_wgmma(wg, name, small, seed):
    n, ta, tb, tc, k = SHAPES[name]
    rng = np.random.default_rng(seed)
    a, b = values(rng, ta, (64, 2 * k), small), values(rng, tb, (n, 2 * k), small)
    c = operand(rng, tc, (64, n), small)
    d = np.zeros((64, n), c.dtype)
    smem = 2 * (64 + n) * k * BYTES[ta]
    assert wg.launch(f"wgmma_{name}", (1,), 128, smem,
                     [("ptr", a), ("ptr", b), ("ptr", c), ("ptr", d)]) is None
    return a, b, c, d


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_wgmma_small_integers_equal_numpy(wg, name):
    """Exact on every device: on a GPU this checks layout, descriptors and maps against
    the tensor cores themselves."""
    a, b, c, d = run_wgmma(wg, name, small=True, seed=1)
    want = a.astype(np.int64) @ b.astype(np.int64).T + c.astype(np.int64)
    assert (d.astype(np.int64) == want).all()


@pytest.mark.parametrize("name", [s for s in sorted(SHAPES) if s.startswith("n32_")])
def test_wgmma_rounds_like_the_interpreter(name):
    """The CPU runtime reproduces the engines' rounding bit for bit, over both chained
    instructions (k ascending)."""
    a, b, c, d = run_wgmma(cpu_module("rt_wgmma.cu"), name, small=False, seed=2)
    assert (d == stepwise(a, b.T, c, SHAPES[name][3]).astype(d.dtype)).all()


# the thread that finds it: the first to issue; the last to arrive, which decodes the
# descriptors; the first to exit, which that last one is
@pytest.mark.parametrize("which, code, lane", [(0, abi.Misuse.WGMMA_FENCE, 0),
                                               (1, abi.Misuse.WGMMA_DESC, 127),
                                               (2, abi.Misuse.WGMMA_PENDING, 127),
                                               (3, abi.Misuse.WGMMA_DESC, 127)])
def test_wgmma_rules_the_hardware_leaves_undefined_are_reported(which, code, lane):
    wg = cpu_module("rt_wgmma.cu")
    got = wg.launch("misuse", (1,), 128, (64 + 8) * 16 * 2, [("i32", which)])
    assert (got.kind, got.args[0], got.lane) == (abi.FaultKind.MISUSE, code, lane)
    assert wg.misuse_text(got)


def test_wait_group_lands_the_older_groups_only():
    """wgmma.wait_group 1 leaves the newest commit group in flight: the CPU runtime lands
    groups in order, and registers in flight read NaN until a wait covers them, so
    generated code that reads an accumulator before its wait (a wait_group depth too
    large) disagrees with the interpreter instead of passing by chance."""
    landed = np.zeros(256, np.int32)
    assert cpu_module("rt_wgmma.cu").launch("depth", (1,), 128, (64 + 8) * 16 * 2,
                                            [("ptr", landed)]) is None
    assert (landed[:128] == 1).all() and (landed[128:] == 3).all()


def test_wgmma_in_a_partial_warpgroup_is_reported():
    """A launch of fewer than 128 threads cannot run a warpgroup instruction."""
    wg = cpu_module("rt_wgmma.cu")
    a, b, c = (np.zeros(s, np.float32) for s in ((64, 32), (8, 32), (64, 8)))
    got = wg.launch("wgmma_n8_f16_f32", (1,), 96, 2 * (64 + 8) * 16 * 2,
                    [("ptr", a), ("ptr", b), ("ptr", c), ("ptr", c.copy())])
    assert (got.kind, got.args[0]) == (abi.FaultKind.MISUSE, abi.Misuse.WARP_PARTIAL)


def test_runtime_kernels_compile_with_nvcc_for_sm_90a():
    assert nvcc_build("rt_wgmma.cu", "sm_90a").read_bytes()[:4] == b"\x7fELF"


# --------------------------------------------------------------------------- generated code

# (A, B, C types, layout, M, N, K): every wgmma operand type; several m, n and k tiles
# (n tiles of 64, 32 and 8 columns); all four layouts; one case per line
GEMMS = [
    ("f16", "f16", "f32", "row.row", 64, 128, 32),
    ("f16", "f16", "f32", "row.col", 64, 256, 16),     # one m64n256 instruction
    ("bf16", "bf16", "f32", "row.col", 128, 64, 16),
    ("tf32", "tf32", "f32", "col.row", 64, 40, 16),
    ("f8_e4m3", "f8_e4m3", "f32", "col.col", 64, 16, 64),
    ("f8_e5m2", "f8_e5m2", "f32", "row.row", 64, 24, 32),
    ("s8", "u8", "s32", "row.row", 64, 32, 64),
    ("u8", "s8", "s32", "col.row", 128, 8, 32),
]
FILL = {"f32": "0.5f", "s32": "3"}


def gemm_source(ta, tb, tc, layout, m, n, k):
    """One warpgroup multiplies operands staged in shared memory; C starts at a
    constant, so the accumulator's initial value matters."""
    sa = f"[{m}, {k}]" if layout.startswith("row") else f"[{k}, {m}]"
    sb = f"[{n}, {k}]" if layout.endswith("row") else f"[{k}, {n}]"
    return f"""__co__ void mm(global {ta} {sa} a, global {tb} {sb} b, global {tc} [{m}, {n}] c) {{
  parallel p by 1 : block {{
    shared {ta} {sa} sa;
    shared {tb} {sb} sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 1 : group-4 {{
      acc = mma.fill.{tc} {FILL[tc]};
      fa = mma.load sa;
      fb = mma.load sb;
      mma.{layout} acc, fa, fb;
      mma.store acc, c;
    }}
  }}
}}
"""


def operand_values(rng, t, shape):
    """Random values of type ``t`` (croqvm.core.dtypes): integers over their whole range,
    floats of many magnitudes rounded to the type, so that rounding shows."""
    if t.is_int:
        info = np.iinfo(t.np)
        return rng.integers(info.min, info.max + 1, shape).astype(t.np)
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 5, shape)
    return round_to(x, t).astype(t.np)


def run_gemm(prog, device, a, b, c_shape, tc):
    c = np.zeros(c_shape, dtypes.BY_NAME[tc].np)
    prog.run("mm", a.copy(), b.copy(), c, device=device)
    return c


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("case", GEMMS, ids=["-".join(map(str, g[:4])) for g in GEMMS])
def test_generated_mma_matches_the_interpreter(case, arch, monkeypatch):
    """Bit for bit: the CPU runtime takes the engines' steps on every path (wgmma on
    sm_90a, mma.sync per warp on sm_80)."""
    prog = croqvm.compile(gemm_source(*case))
    if arch == "sm_80" and case[0].startswith("f8"):
        with pytest.raises(UnsupportedError, match="needs sm_90a"):
            emit(prog.module, arch=arch)
        return
    text = emit(prog.module, arch=arch).text
    assert ("cq_wgmma<W>" in text) == (arch == "sm_90a")
    monkeypatch.setenv("CROQVM_CUDA_ARCH", arch)
    ta, tb, tc, layout, m, n, k = case
    rng = np.random.default_rng(3)
    a = operand_values(rng, dtypes.BY_NAME[ta], (m, k) if layout.startswith("row") else (k, m))
    b = operand_values(rng, dtypes.BY_NAME[tb], (n, k) if layout.endswith("row") else (k, n))
    want, got = (run_gemm(prog, dev, a, b, (m, n), tc) for dev in ("cpu", "cuda-cpu"))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_fp8_mma_on_sm_80_is_an_error_naming_sm_90a(tmp_path):
    """emit-cuda: a source error with its position, no traceback, exit status 1."""
    src = tmp_path / "fp8.co"
    src.write_text(gemm_source("f8_e4m3", "f8_e4m3", "f32", "row.row", 64, 8, 32))
    done = subprocess.run([sys.executable, "-m", "croqvm", "emit-cuda", str(src), "--arch",
                           "sm_80", "-o", str(tmp_path / "out.cu")],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == (f"{src}:11:7: error: MMA on f8_e4m3 operands (sm_80 tensor cores "
                           f"take no 8-bit floats) needs sm_90a; the target is sm_80 "
                           f"(emit-cuda --arch sm_90a)\n")
    assert not (tmp_path / "out.cu").exists()


def test_generated_wgmma_of_every_type_compiles_with_nvcc():
    """ptxas accepts the wgmma code generated for every operand type (one module with a
    function per case, one build)."""
    if cc.shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    source = "".join(gemm_source(*case).replace("void mm(", f"void mm{i}(")
                     for i, case in enumerate(GEMMS))
    text = emit(croqvm.compile(source).module, arch="sm_90a").text
    assert text.count("cq_wgmma<W>") == len(GEMMS)
    assert cc.build(text, "sm_90a").read_bytes()[:4] == b"\x7fELF"


# --------------------------------------------------------------- wgmma chains (emit_wgmma)

SLICES = """
__co__ void slices(global f16 [64, 64] a, global f16 [64, 64] b, global f32 [64, 64] c,
                   int n) {
  parallel blk by 1 : block {
    shared f16 [64, 64] sa;
    shared f16 [64, 64] sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      foreach w in [n] {
        fa = mma.load sa.subspan(64, 16).at(0, w);
        fb = mma.load sb.subspan(64, 16).at(0, w);
        mma.row.row acc, fa, fb;
      }
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.parametrize("n", [0, 2])
def test_a_lane_terminated_before_the_loop_of_slices_is_reported_as_the_interpreter_does(n):
    """The slices meet before their loop; a lane that ended before it is UNIT_TERMINATED
    at the first slice's mma.load, as where each slice met, and nowhere when the loop
    has no slice (no mma.store after it here: nothing else needs the lane)."""
    source = SLICES.replace("group-4 {", "group-4, t by 128 : thread {").replace(
        "acc = mma.fill.f32 0.0f;", "acc = mma.fill.f32 0.0f; if (t == 5) yield;").replace(
        "mma.store acc, c;", "")
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    assert_agree(croqvm.compile(source), "slices", a, b, np.zeros((64, 64), np.float32), n)


def region_text(text: str) -> tuple[str, str]:
    """(the wgmma region of the kernel, the rest of the kernel) in generated code."""
    kernel = text[text.index("// kernel 0 of"):]
    start = kernel.index("a wgmma region")
    end = kernel.index("\n", kernel.index("no lane goes on", start))
    return kernel[start:end], kernel[:start] + kernel[end:]


@pytest.mark.parametrize("n", [0, 3, 4])
def test_a_loop_of_slices_agrees_with_the_interpreter_whatever_its_trip_count(n):
    """The loop of mma.loads and in-place execs is one wgmma region: its n wgmmas stay
    in flight until the loop ends (none when n is 0)."""
    prog = croqvm.compile(SLICES)
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    assert_agree(prog, "slices", a, b, np.zeros((64, 64), np.float32), n)


def test_a_wgmma_region_meets_before_its_slices_and_its_faults_wait_before_leaving():
    """What ptxas's remarks and the SASS show only together (tests/test_cuda_sass_sm90.py):
    the region meets before its slice loop (twice: the lanes note which have terminated,
    then go on) and where it ends, the slices do not; every fault's exit waits for the
    wgmmas in flight, and no exit outside the region does."""
    region, rest = region_text(emit(croqvm.compile(SLICES).module, arch="sm_90a").text)
    loop = region.index("while (true)")
    assert region[:loop].count("cq_coll_sync(") == 2
    assert region[loop:].count("cq_coll_sync(") == 1
    exits = re.findall(r"cq_fault\(.*", region)
    assert exits and all("cq_wgmma_wait_all(); cq_leave();" in e for e in exits)
    assert "cq_wgmma_wait_all" not in rest
    assert region.count("cq_wgmma_wait<0") == 2     # the region's end, the cell-by-cell exec


# A K loop of slabs, each SLICES's loop of four slices, as matmul_1p1c's consumer:
# nothing in the K loop but the slice loop, so its lanes end only together and the
# slices meet in the first slab only; each slab then has one rendezvous, the region's
# end. BEFORE is what the warpgroup does before the K loop, EXTRA what the K loop does
# before its slab.
SLABS = SLICES.replace("void slices(", "void slabs(").replace(
    "group-4 {", "group-4, t by 128 : thread {").replace(
    "foreach w in [n] {",
    "BEFORE\n      foreach kt in [n] {\n        EXTRA\n        foreach w in [4] {").replace(
    "      }\n      mma.store", "        }\n      }\n      mma.store")


def slabs(before: str = "", extra: str = ""):
    return croqvm.compile(SLABS.replace("BEFORE", before).replace("EXTRA", extra))


def slab_inputs():
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    return a, b, np.zeros((64, 64), np.float32)


def rendezvous() -> int:
    """Lanes' arrivals at the mbarrier of a collective on cuda-cpu so far."""
    return sum(lib.mbar_arrivals() for lib in cpu_libraries())


def test_each_slab_of_a_k_loop_is_one_rendezvous():
    """n slabs: the warpgroup's 128 lanes meet twice before the first slab's slices and
    once where each slab's wgmmas have landed; every later slab adds one rendezvous,
    where it met three times before."""
    prog = slabs()
    assert_agree(prog, "slabs", *slab_inputs(), 1)     # builds and loads the library
    arrivals = []
    for n in (1, 5):
        before = rendezvous()
        assert_agree(prog, "slabs", *slab_inputs(), n)
        arrivals.append(rendezvous() - before)
    # each run: the reference interpreter, then cuda-cpu, which alone counts
    assert (arrivals[1] - arrivals[0]) / 4 == 128
    text = emit(prog.module, arch="sm_90a").text
    assert text.count("meets in its first slab only") == 1


def test_the_result_of_n_slabs_is_n_products():
    """Each slab adds a @ b^T again: the accumulator stays in registers across them."""
    a, b, _ = slab_inputs()
    for n in (0, 3):
        c = np.full((64, 64), np.nan, np.float32)
        slabs().run("slabs", a, b, c, n, device="cuda-cpu")
        want = n * (a.astype(np.float32) @ b.astype(np.float32).T)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_1p1c_consumer_meets_once_a_slab():
    """programs/matmul_1p1c.co, one tile, K slabs of 64: each slab adds 640 arrivals at
    a rendezvous: the producer's two copies meet twice each (4 x 128 lanes), the
    consumer's warpgroup once (128 lanes), where it met three times."""
    prog = croqvm.compile_file(str(PROGRAMS / "matmul_1p1c.co"))
    rng = np.random.default_rng(1)

    def run(k: int) -> int:
        a, b = (rng.standard_normal((64, k)).astype(np.float16) for _ in range(2))
        before = rendezvous()
        assert_agree(prog, "gemm_ws", a, b, np.zeros((64, 64), np.float32))
        return rendezvous() - before

    run(64)                                             # builds and loads the library
    assert (run(384) - run(128)) / 4 == 4 * 128 + 128


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_lane_terminated_before_the_k_loop_is_reported_in_its_first_slab(n):
    """What the first slab's meeting found (lane 5 gone) is UNIT_TERMINATED at its first
    mma.load, as the interpreter reports it; with no slab, at the mma.store after the
    loop, naming lane 5 alone (the lanes that find it gone meet again before leaving)."""
    assert_agree(slabs(before="if (t == 5) yield;"), "slabs", *slab_inputs(), n)


@pytest.mark.parametrize("n", [2, 4])
def test_a_fault_every_lane_takes_in_a_later_slab_is_that_fault(n):
    """A division by zero in slab 2, the same in every lane: the lanes end together, as
    the interpreter's do, and no lane sees another gone (no UNIT_TERMINATED)."""
    prog = slabs(extra="x = 4 / (2 - kt);")
    assert "meets in its first slab only" in emit(prog.module, arch="sm_90a").text
    assert_agree(prog, "slabs", *slab_inputs(), n)


@pytest.mark.parametrize("extra", ["if (t == 5 && kt == 1) yield;",
                                   "if (t < 32 && kt == 2) yield;"])
def test_a_lane_ending_alone_in_the_k_loop_makes_each_slab_meet(extra):
    """Lanes may end without the others in the K loop (a lane, or the first warp, by
    `yield`): each slab meets again and reports the lanes gone since, as the
    interpreter does. (Lanes of several warps ending would be reported as the
    interpreter's schedule finds them, one warp's at a time: EXECUTION.md §7.)"""
    prog = slabs(extra=extra)
    text = emit(prog.module, arch="sm_90a").text
    assert "the slices below meet no more" in text
    assert "meets in its first slab only" not in text
    assert_agree(prog, "slabs", *slab_inputs(), 3)


def test_slices_whose_count_differs_between_lanes_meet_each_slice():
    """A trip count set under a condition on the lane is not the same in every lane,
    though every write of it is a constant: the slices may not skip their meetings."""
    prog = croqvm.compile(SLICES.replace("foreach w in [n]", "mutable int m = 2; "
                                         "if (t < 64) m = 3; foreach w in [m]")
                          .replace("group-4 {", "group-4, t by 128 : thread {"))
    assert "the slices below meet no more" not in emit(prog.module, arch="sm_90a").text


# two operation futures in flight (LANGUAGE.md §11.5 point 5): `wait qk` leaves pv's
# group in flight, wgmma.wait_group 1; `wait pv` waits for it, wgmma.wait_group 0
TWO_FUTURES = """
__co__ void two(global f16 [64, 64] a, global f16 [128, 64] b, global f32 [64, 128] c,
                global f32 [64, 128] d) {
  parallel blk by 1 : block {
    shared f16 [64, 64] lhs;
    shared f16 [128, 64] rhs;
    dma.copy a => lhs;
    dma.copy b => rhs;
    parallel g by 1 : group-4 {
      qk_acc = mma.fill.f32 0.0f;
      qk = mma.row.row.async qk_acc, lhs, rhs;
      pv_acc = mma.fill.f32 1.0f;
      pv = mma.row.row.async pv_acc, lhs, rhs;
      WAITS
    }
  }
}
"""
IN_ORDER = "wait qk; mma.store qk_acc, c; wait pv; mma.store pv_acc, d;"


def two_futures(waits: str = IN_ORDER):
    return croqvm.compile(TWO_FUTURES.replace("WAITS", waits))


@pytest.mark.parametrize("waits", [
    IN_ORDER,
    "wait pv; mma.store pv_acc, d; wait qk; mma.store qk_acc, c;",
    "mma.store qk_acc, c; wait qk; wait pv;",          # MMA_PENDING: used before its wait
    # a loop before `wait pv`: its group is waited for where it was issued
    "wait qk; foreach i in [2] { mma.store qk_acc, c; } wait pv; mma.store pv_acc, d;",
])
def test_futures_waited_in_any_order_agree_with_the_interpreter(waits):
    """The CPU runtime lands commit groups in order and reads registers in flight as NaN,
    so a wait_group depth too large for the groups issued after a future shows here."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    assert_agree(two_futures(waits), "two", a, b, *(np.zeros((64, 128), np.float32),) * 2)


def test_a_wait_leaves_the_groups_issued_after_its_future_in_flight():
    """Only `wait qk` has a group after its own (pv's) to leave in flight."""
    text = emit(two_futures().module, arch="sm_90a").text
    depths = re.findall(r"cq_wgmma_wait<(\d), \w+>\((wq\d+)_", text)
    assert [d for d in depths if d[0] != "0"] == [("1", "wq0")]
    assert ("0", "wq3") in depths


def test_a_future_issued_after_a_wait_leaves_nothing_of_it_in_flight():
    """`wait qk` comes before pv's issue: no group of pv's is committed after qk's by
    then, so the wait has depth 0 (one of depth 1 would leave qk's group in flight and its
    results read NaN on cuda-cpu)."""
    source = TWO_FUTURES.replace(
        "pv_acc = mma.fill.f32 1.0f;\n      pv = mma.row.row.async pv_acc, lhs, rhs;",
        "mutable int n = 1;\n      wait qk;\n      pv_acc = mma.fill.f32 1.0f;\n"
        "      pv = mma.row.row.async pv_acc, lhs, rhs;\n      n = 2;")
    prog = croqvm.compile(source.replace("WAITS", "wait pv; mma.store qk_acc, c; "
                                                  "mma.store pv_acc, d;"))
    depths = re.findall(r"cq_wgmma_wait<(\d), \w+>\((wq\d+)_",
                        emit(prog.module, arch="sm_90a").text)
    assert depths and all(d == "0" for d, _ in depths)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    assert_agree(prog, "two", a, b, *(np.zeros((64, 128), np.float32),) * 2)


# a future carried across a loop's iterations (emit_wgmma "carried"): programs/
# matmul_overlap.co waits for the even slab issued before the loop or in the iteration
# before, while the odd slab the body has just issued stays in flight
OVERLAP = PROGRAMS / "matmul_overlap.co"


def overlap_inputs():
    rng = np.random.default_rng(11)
    return (rng.uniform(-1, 1, (64, 512)).astype(np.float16),
            rng.uniform(-1, 1, (64, 512)).astype(np.float16), np.zeros((64, 64), np.float32))


def test_a_carried_future_leaves_the_group_issued_after_it_in_flight():
    """The loop's `wait fe` leaves `fo`'s group in flight (wait_group 1), `wait fo`
    nothing; the lanes count the carried accumulator's pending group in a register."""
    text = emit(croqvm.compile_file(str(OVERLAP)).module, arch="sm_90a").text
    depths = re.findall(r"cq_wgmma_wait<(\d), \w+>\((wq\d+)_\d+\[", text)
    assert ("1", "wq0") in depths and ("0", "wq1") in depths
    assert ("1", "wq1") not in depths
    assert "wp0 = 1;" in text and "wp1" not in text


@pytest.mark.parametrize("deeper", [0, 1])
def test_a_carried_wait_one_deeper_reads_a_group_in_flight(deeper, monkeypatch):
    """The CPU runtime lands groups in order and reads registers in flight as NaN: the
    carried wait agrees with the interpreter at its depth, and one group deeper (the even
    slab left in flight with the odd one) it does not."""
    from croqvm.cuda import emit_wgmma
    depth = emit_wgmma._depth
    monkeypatch.setattr(emit_wgmma, "_depth", lambda k, r, regions: depth(k, r, regions)
                        + (deeper if r.carried else 0))
    prog = croqvm.compile_file(str(OVERLAP))
    if deeper:
        with pytest.raises(AssertionError, match="differs from the interpreter"):
            assert_agree(prog, "gemm_overlap", *overlap_inputs())
    else:
        assert_agree(prog, "gemm_overlap", *overlap_inputs())


# a carried future's wait or the accumulator's use finding the count the lanes keep
CARRIED = """
__co__ void carried(global f16 [64, 64] a, global f16 [64, 64] b, global f32 [64, 64] c,
                    global s32 [N] n) {
  parallel blk by 1 : block {
    shared f16 [64, 64] lhs;
    shared f16 [64, 64] rhs;
    dma.copy a => lhs;
    dma.copy b => rhs;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      f = mma.row.row.async acc, lhs, rhs;
      foreach i in [N] {
        wait f;
        BODY
      }
      mma.store acc, c;
    }
  }
}
"""


@pytest.mark.parametrize("body, n, error", [
    ("", 1, None),
    ("", 2, "no asynchronous mma on accumulator 'acc' is pending here"),   # MMA_NOT_PENDING
    ("f = mma.row.row.async acc, lhs, rhs;", 2, "is used before the wait"),   # MMA_PENDING
])
def test_a_carried_future_reports_its_misuse_as_the_interpreter(body, n, error):
    """A wait that finds nothing pending and a use while a carried group is pending read
    the same on cuda-cpu (the lanes' registers say so) as on the interpreter."""
    prog = croqvm.compile(CARRIED.replace("BODY", body))
    assert "wp0 = 0;" in emit(prog.module, arch="sm_90a").text
    rng = np.random.default_rng(3)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype(np.float16) for _ in range(2))
    args = (a, b, np.zeros((64, 64), np.float32), np.zeros(n, np.int32))
    assert_agree(prog, "carried", *args)
    if error:
        with pytest.raises(KernelFault, match=error):
            prog.run("carried", *args)
