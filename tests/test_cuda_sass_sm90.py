"""What the hardware executes for the warpgroup GEMMs on sm_90a (LANGUAGE.md §9.7, §11;
docs/CUDA.md "Fast paths on sm_90a"): the SASS of the generated kernels, from nvcc and
cuobjdump (tests/cuda_sass.py; skipped where either is missing).

For programs/matmul_1p1c.co, matmul_1p1c_async.co, matmul_tma.co and
matmul_wgmma_async.co: the tensor-core instruction (HGMMA) runs in a loop, the copies
from global memory are tensor-map TMA loads (UTMALDG), the registers a block needs fit
the register file, and no loop uses local memory (STL/LDL); and, their copies
(`dma.copy` and `tma.load` alike) written out with scalars around the TMA box
(croqvm/cuda/emit_copy.py), that the kernel uses none at all (matmul_1p1c_async's
futures leave one value spilled for the paths by which a lane leaves). For
programs/matmul_overlap.co, that its carried wait keeps a slab in flight (depth 1).
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

import croqvm
from croqvm.cuda.emit import emit

import cuda_sass
from test_cuda_wgmma import two_futures

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
GEMMS = ["matmul_1p1c", "matmul_1p1c_async", "matmul_tma", "matmul_wgmma_async"]
REGISTER_FILE = 65536        # 32-bit registers per multiprocessor (and per block) on sm_90


@functools.lru_cache(maxsize=None)
def generated(name: str):
    return emit(croqvm.compile_file(PROGRAMS / f"{name}.co").module, arch="sm_90a")


@functools.lru_cache(maxsize=None)
def gemm(name: str):
    """(the kernel's SASS, its block size) of a GEMM's one kernel on sm_90a."""
    gen = generated(name)
    (info,) = gen.kernels.values()
    return cuda_sass.kernels(gen.text, "sm_90a")[info.cname], info.block_size


@pytest.mark.parametrize("name", GEMMS)
def test_hgmma_runs_in_the_main_loop(name):
    kernel, _ = gemm(name)
    assert kernel.in_a_loop("HGMMA")


@pytest.mark.parametrize("name", GEMMS)
def test_global_to_shared_copies_are_tensor_map_loads(name):
    """Each of the two operands' copies (A and B) is a UTMALDG, in the K loop."""
    kernel, _ = gemm(name)
    assert kernel.count("UTMALDG") >= 2
    assert kernel.in_a_loop("UTMALDG")


@pytest.mark.parametrize("name", GEMMS)
def test_registers_of_a_block_fit_the_register_file(name):
    kernel, block = gemm(name)
    assert kernel.registers * block <= REGISTER_FILE


def test_the_carried_wait_keeps_the_slab_issued_after_it_in_flight():
    """programs/matmul_overlap.co, whose even slab's future is waited one iteration after
    its issue: in the K loop, on its own path, the HGMMAs of both slabs, chained four to a
    group, the carried wait with depth 1 and the odd slab's with depth 0,
    and no local memory (the `apply` after the loop, which reaches the accumulators'
    registers by run-time index, has some); the tensor-map loads in a loop as in the other
    GEMMs; the block's registers within the register file."""
    kernel, block = gemm("matmul_overlap")
    body = kernel.slab_loop()
    path = kernel.staying(body)
    assert sum(1 for i in path if i.name == "HGMMA") == 8
    assert sorted(on_path(kernel, body, "WARPGROUP.DEPBAR.LE")) == ["gsb0, 0x0", "gsb0, 0x1"]
    assert not any(i.name in ("STL", "LDL") for i in body)
    assert kernel.in_a_loop("UTMALDG") and kernel.count("UTMALDG") >= 2
    assert kernel.registers * block <= REGISTER_FILE


@pytest.mark.parametrize("name", GEMMS)
def test_no_local_memory_in_a_loop(name):
    kernel, _ = gemm(name)
    assert not kernel.in_a_loop("STL") and not kernel.in_a_loop("LDL")


@pytest.mark.parametrize("name", ["matmul_1p1c", "matmul_tma", "matmul_wgmma_async"])
def test_no_local_memory(name):
    kernel, _ = gemm(name)
    assert (kernel.count("STL"), kernel.count("LDL"), kernel.stack) == (0, 0, 0)


# --------------------------------------------------------------- wgmma chains (emit_wgmma)

def on_path(kernel, body, opcode: str) -> list[str]:
    """The operands of each ``opcode`` instruction on the loop's own path (not a fault's
    way out)."""
    return [i.operands for i in kernel.staying(body) if i.opcode == opcode]


ARRIVE = "SYNCS.ARRIVE.TRANS64.A1T0"      # a lane's arrival at a collective's mbarrier


@pytest.mark.parametrize("name", ["matmul_1p1c", "matmul_wgmma_async", "matmul_overlap"])
def test_ptxas_keeps_the_wgmmas_of_a_slab_in_flight(name):
    """A wait ptxas must insert on a divergent path (a fault's exit inside a wgmma region)
    makes it serialize every wgmma of the kernel (remark C7518/C7520): the generated
    code waits there itself."""
    remarks = cuda_sass.ptxas_remarks(generated(name).text, "sm_90a")
    assert not [r for r in remarks if "serialized" in r]


def test_1p1c_waits_for_the_wgmmas_of_a_slab_once():
    """matmul_1p1c multiplies a K slab in four slices (`foreach w`), each an mma.load of
    A, of B and an exec: the slice loop issues its HGMMA without waiting or meeting (6
    mbarrier rendezvous per slice before chains); the K loop meets before the slices
    (twice: the warpgroup notes its terminated lanes, then goes on; in the first slab
    only, which the arrivals counted on cuda-cpu show: tests/test_cuda_wgmma.py) and once
    where they end, after the one wait of the slab, wait_group 0 before `trigger
    empty[st]` hands the stage back."""
    kernel, _ = gemm("matmul_1p1c")
    slices, slab = kernel.loops_around("HGMMA")[:2]
    assert on_path(kernel, slices, "WARPGROUP.DEPBAR.LE") == []
    assert on_path(kernel, slices, ARRIVE) == []
    assert kernel.slab_loop() == slab
    assert on_path(kernel, slab, "WARPGROUP.DEPBAR.LE") == ["gsb0, 0x0"]
    assert len(on_path(kernel, slab, ARRIVE)) == 3


def test_a_64x256_tile_is_one_wgmma_per_k_step():
    """matmul_1p1c with BN=256: each slice's [64, 256] tile of C is one m64n256k16 HGMMA,
    which reads the slice of A once, not four m64n64k16 (docs/CUDA.md)."""
    module = croqvm.compile_file(PROGRAMS / "matmul_1p1c.co",
                                 defines={"BN": "256", "STAGES": "3"}).module
    gen = emit(module, arch="sm_90a")
    (info,) = gen.kernels.values()
    kernel = cuda_sass.kernels(gen.text, "sm_90a")[info.cname]
    slices = kernel.loops_around("HGMMA")[0]
    # cuobjdump writes the shape with a space: HGMMA.64 x256x16.F32 R24, gdesc[UR4], ...
    assert [i.opcode + i.operands.split()[0] for i in slices if i.name == "HGMMA"] == \
        ["HGMMA.64x256x16.F32"]


def test_wgmma_async_issues_its_four_k_tiles_before_one_wait():
    """The four K tiles of `mma.row.row.async` and its `wait f` (34 mbarrier rendezvous
    and a wait per tile before chains): one rendezvous before the chain, one after its
    wait."""
    kernel, _ = gemm("matmul_wgmma_async")
    slab = kernel.slab_loop()
    assert [i.name for i in slab].count("HGMMA") == 4
    assert on_path(kernel, slab, "WARPGROUP.DEPBAR.LE") == ["gsb0, 0x0"]
    assert len(on_path(kernel, slab, ARRIVE)) == 2


def test_warp_specialised_roles_set_their_registers():
    """matmul_1p1c's producer warpgroup gives registers back (setmaxnreg.dec) and its
    consumer takes them (.inc, croqvm/cuda/emit_regs.py): both are in the SASS
    (USETMAXREG), and what the two warpgroups hold after them fits what the block starts
    with, so the consumer's .inc never waits for registers no one gives back."""
    import re
    kernel, block = gemm("matmul_1p1c")
    text = emit(croqvm.compile_file(PROGRAMS / "matmul_1p1c.co").module, arch="sm_90a").text
    counts = dict(re.findall(r"setmaxnreg\.(dec|inc)\.sync\.aligned\.u32 (\d+);", text))
    assert kernel.count("USETMAXREG") == 2
    assert int(counts["dec"]) + int(counts["inc"]) <= block // 128 * kernel.registers
    assert kernel.registers < int(counts["inc"])
    for name in ("matmul_tma", "matmul_wgmma_async"):      # not warp-specialised
        assert gemm(name)[0].count("USETMAXREG") == 0


def test_a_wait_of_two_futures_in_flight_leaves_the_newer_one_in_flight():
    """`wait qk` with pv's group issued after qk's: WARPGROUP.DEPBAR.LE gsb0, 0x1 (the
    wait the generated code issues itself, without serializing the wgmmas)."""
    source = emit(two_futures().module, arch="sm_90a").text
    (kernel,) = cuda_sass.kernels(source, "sm_90a").values()
    depbars = [i.operands for i in kernel.instructions if i.opcode == "WARPGROUP.DEPBAR.LE"]
    assert "gsb0, 0x1" in depbars
    assert not [r for r in cuda_sass.ptxas_remarks(source, "sm_90a") if "serialized" in r]
