"""The SASS figures of the generated GEMM kernels, per program and architecture: local
memory (STL/LDL instructions, stack bytes per thread), registers, cp.async (LDGSTS, and
how many move 16 bytes), tensor-map TMA loads (UTMALDG), tensor-core instructions (HMMA,
HGMMA) and global compare-and-swaps (CAS); and in the K loop around the HGMMAs (the
innermost loop around them that waits for wgmmas, cuda_sass.Kernel.slab_loop), on its
own path rather than a fault's exit: its HGMMAs (kHGMMA), its wgmma waits with their
depths (kWAIT: "2x0" is two wait_group 0), its lanes' arrivals at mbarrier rendezvous
(kMEET, on the path: a slice loop's meeting that only the first slab takes counts too,
as in matmul_1p1c, which meets once in every later slab -- tests/test_cuda_wgmma.py
counts the arrivals on cuda-cpu) and its block or named barriers (kBAR). Needs nvcc and cuobjdump
(tests/cuda_sass.py finds them); runs nothing on a GPU.

    python bench/cuda_sass.py [--arch sm_80 --arch sm_90a] [--no-checks] [PROGRAM ...]
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import cuda_sass

import croqvm
from croqvm.cuda.emit import emit

GEMMS = ("matmul_1p1c", "matmul_mma_warp", "matmul_double_buffer", "matmul_triple_buffer",
         "matmul_dma", "matmul_wgmma_async", "matmul_tma", "matmul_overlap",
         "matmul_1p1c_async")


def figures(name: str, arch: str, checks: bool) -> list[dict]:
    module = croqvm.compile_file(str(ROOT / "programs" / f"{name}.co")).module
    rows = []
    for kernel in cuda_sass.kernels(emit(module, arch=arch, checks=checks).text, arch).values():
        names = kernel.names()
        rows.append({
            "program": name, "arch": arch, "kernel": kernel.name, "STL": names["STL"],
            "LDL": names["LDL"], "stack": kernel.stack, "regs": kernel.registers,
            "LDGSTS": names["LDGSTS"],
            "LDGSTS128": sum(1 for i in kernel.instructions
                             if i.name == "LDGSTS" and ".128" in i.opcode),
            "HMMA": names["HMMA"], "HGMMA": names["HGMMA"], "UTMALDG": names["UTMALDG"],
            # global compare-and-swaps: UPDATE loops, and the fault record's lock
            "CAS": sum(1 for i in kernel.instructions
                       if i.name in ("ATOM", "ATOMG") and "CAS" in i.opcode),
            **k_loop(kernel)})
    return rows


def k_loop(kernel) -> dict:
    if not kernel.loops_around("HGMMA"):
        return dict.fromkeys(("kHGMMA", "kWAIT", "kMEET", "kBAR"), "-")
    path = kernel.staying(kernel.slab_loop())
    depths = Counter(i.operands.rsplit(" ", 1)[-1].replace("0x", "") for i in path
                     if i.opcode == "WARPGROUP.DEPBAR.LE")
    return {"kHGMMA": sum(1 for i in path if i.name == "HGMMA"),
            "kWAIT": "+".join(f"{n}x{d}" for d, n in sorted(depths.items())) or "0",
            "kMEET": sum(1 for i in path if i.opcode == "SYNCS.ARRIVE.TRANS64.A1T0"),
            "kBAR": sum(1 for i in path if i.name == "BAR")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("programs", nargs="*", default=GEMMS)
    parser.add_argument("--arch", action="append", choices=("sm_80", "sm_90a"))
    parser.add_argument("--no-checks", action="store_true")
    args = parser.parse_args()
    columns = ("STL", "LDL", "stack", "regs", "LDGSTS", "LDGSTS128", "UTMALDG", "HMMA", "HGMMA",
               "CAS", "kHGMMA", "kWAIT", "kMEET", "kBAR")
    print(f"{'program':22} {'arch':7} " + " ".join(f"{c:>9}" for c in columns))
    for arch in args.arch or ("sm_80", "sm_90a"):
        for name in args.programs:
            for row in figures(name, arch, not args.no_checks):
                print(f"{name:22} {arch:7} " + " ".join(f"{row[c]:>9}" for c in columns),
                      flush=True)


if __name__ == "__main__":
    main()
