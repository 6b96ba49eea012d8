"""What the hardware executes of the programs/ GEMMs built for sm_80 (and the sm_90a
kernels the general code generates alike), read from their SASS (tests/cuda_sass.py;
nvcc and cuobjdump, else skipped): tensor-core MMAs (HMMA) in the main loop, tile loads
as 16-byte cp.async (LDGSTS.128), no local memory (STL/LDL), registers within the launch
bounds, cp.async waits that leave the prefetch in flight, and the one-owner accumulation
without a compare-and-swap loop (docs/CUDA.md, "Specialised code"). Each program is
compiled once per architecture, with the default device checks, as ``--device gpu``
builds it.
"""
from __future__ import annotations

import functools
from pathlib import Path

import cuda_sass
import pytest

import croqvm
from croqvm.cuda.emit import emit

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
REGISTER_FILE = 65536        # 32-bit registers of an SM, shared by a block's threads

SM80 = ("matmul_1p1c", "matmul_mma_warp", "matmul_double_buffer", "matmul_triple_buffer",
        "matmul_dma", "matmul_tma")
# the sm_90a kernels without wgmma (tests/test_cuda_sass_sm90.py has those)
SM90 = ("matmul_mma_warp", "matmul_double_buffer", "matmul_triple_buffer", "matmul_dma")


@functools.cache
def built(name: str, arch: str):
    """(the kernel's SASS, its block size) of the program's one kernel."""
    module = croqvm.compile_file(str(PROGRAMS / f"{name}.co")).module
    (kernel,) = cuda_sass.kernels(emit(module, arch=arch).text, arch).values()
    (fn,) = module.functions
    (code,) = fn.kernels
    return kernel, code.block_size


# matmul_mma_warp on sm_90a keeps an 8-byte frame: ptxas spills a predicate (P2R, STL)
# once its copies also test for a TMA box (docs/CUDA.md, "Specialised code")
@pytest.mark.parametrize("arch, name", [("sm_80", n) for n in SM80] +
                         [("sm_90a", n) for n in SM90 if n != "matmul_mma_warp"])
def test_no_local_memory(arch, name):
    kernel, _ = built(name, arch)
    assert (kernel.count("STL"), kernel.count("LDL"), kernel.stack) == (0, 0, 0)


@pytest.mark.parametrize("name", SM80)
def test_registers_within_the_launch_bounds(name):
    kernel, block = built(name, "sm_80")
    assert 0 < block and kernel.registers * block <= REGISTER_FILE


@pytest.mark.parametrize("name", ["matmul_1p1c", "matmul_mma_warp", "matmul_tma"])
def test_tensor_core_mma_in_the_main_loop(name):
    kernel, _ = built(name, "sm_80")
    assert kernel.in_a_loop("HMMA")


@pytest.mark.parametrize("name", SM80)
def test_tile_loads_are_16_byte_cp_async(name):
    kernel, _ = built(name, "sm_80")
    loads = [i.opcode for i in kernel.instructions if i.name == "LDGSTS"]
    assert loads and all(".128" in op for op in loads), loads


@pytest.mark.parametrize("name", ["matmul_double_buffer", "matmul_triple_buffer"])
def test_waits_leave_the_prefetch_in_flight(name):
    """cp.async.wait_group N (DEPBAR.LE SB0, N) with N > 0: a wait for the current
    tiles does not wait for the next ones, issued just before it."""
    kernel, _ = built(name, "sm_80")
    depths = {i.operands.split(",")[-1].strip() for i in kernel.instructions
              if i.opcode == "DEPBAR.LE" and i.operands.startswith("SB0")}
    assert depths - {"0x0"}, depths


@pytest.mark.parametrize("name", ["matmul_double_buffer", "matmul_triple_buffer",
                                  "matmul_dma"])
def test_one_owner_accumulation_has_no_compare_and_swap(name):
    """c.at(bm # tm, bn # tn) += ...: each element is one lane's, so no compare-and-swap
    loop (ATOM.CAS on its generic address); the one global CAS left is the fault
    record's lock (ATOMG)."""
    kernel, _ = built(name, "sm_80")
    cas = [i.opcode for i in kernel.instructions if "CAS" in i.opcode]
    assert cas == ["ATOMG.E.CAS.STRONG.GPU"], cas
