"""The SASS of generated kernels, for tests that check what the hardware will execute:
the CUDA C++ the generator writes, compiled with nvcc to a cubin for one architecture and
disassembled with cuobjdump (the pip packages nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm of the test extras). Tests skip where nvcc or cuobjdump is missing.

`kernel(...)` gives one kernel's instructions in address order, its registers and stack
frame (`cuobjdump -res-usage`), and the loops (backward branches) to look for the
instructions of a main loop in.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from croqvm.cuda import compile as cc

# one instruction: /*0a30*/  @!P0 HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ ;
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_FUNCTION = re.compile(r"Function : (\S+)")
_BRANCH_TARGET = re.compile(r"\b0x([0-9a-f]+)\b")
_USAGE = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def cuobjdump() -> str:
    """cuobjdump from PATH or from the nvidia-cuda-cuobjdump wheel; skips the test when
    there is none."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in map(Path, sys.path):
        for candidate in root.glob("nvidia/cu*/bin/cuobjdump"):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    pytest.skip("cuobjdump is not installed (pip install nvidia-cuda-cuobjdump)")


@dataclasses.dataclass
class Instruction:
    address: int
    opcode: str          # with its modifiers: HGMMA.64x64x16.F32
    operands: str
    predicate: str = ""  # @P0, @!P1, ... or ""

    @property
    def name(self) -> str:
        """The opcode without modifiers: HGMMA."""
        return self.opcode.split(".", 1)[0]


@dataclasses.dataclass
class Kernel:
    name: str
    instructions: list[Instruction]
    registers: int
    stack: int           # bytes of local memory per thread

    def count(self, name: str) -> int:
        return sum(1 for i in self.instructions if i.name == name)

    def names(self) -> Counter:
        return Counter(i.name for i in self.instructions)

    def loops(self) -> list[list[Instruction]]:
        """Each backward branch's body: the instructions from its target to the branch."""
        bodies = []
        for branch in self.instructions:
            if branch.name != "BRA":
                continue
            target = _BRANCH_TARGET.search(branch.operands)
            if target and int(target.group(1), 16) < branch.address:
                start = int(target.group(1), 16)
                bodies.append([i for i in self.instructions
                               if start <= i.address <= branch.address])
        return bodies

    def in_a_loop(self, name: str) -> bool:
        """Whether some loop's body holds an instruction called ``name``."""
        return any(any(i.name == name for i in body) for body in self.loops())

    def loops_around(self, name: str) -> list[list[Instruction]]:
        """The loops holding an instruction called ``name``, innermost (shortest) first."""
        return sorted((b for b in self.loops() if any(i.name == name for i in b)), key=len)

    def slab_loop(self) -> list[Instruction]:
        """The innermost loop around HGMMA whose own path waits for wgmmas (a K loop:
        its slices' loop may hold the wgmmas without their wait), else the innermost."""
        loops = self.loops_around("HGMMA")
        waiting = [b for b in loops if any(i.opcode == "WARPGROUP.DEPBAR.LE"
                                           for i in self.staying(b))]
        return (waiting or loops)[0]

    def staying(self, body: list[Instruction]) -> list[Instruction]:
        """The instructions of ``body`` from which the thread does not go straight to an
        unconditional EXIT (a fault's exit path), with no branch or branch target between."""
        targets = {int(m.group(1), 16) for i in self.instructions if i.name == "BRA"
                   for m in [_BRANCH_TARGET.search(i.operands)] if m}
        at = {i.address: n for n, i in enumerate(self.instructions)}
        kept = []
        for i in body:
            for j in self.instructions[at[i.address]:]:
                if j.name == "EXIT" and not j.predicate:
                    break
                if j.name == "BRA" or (j is not i and j.address in targets):
                    kept.append(i)
                    break
        return kept


def _split_sass(text: str) -> dict[str, list[Instruction]]:
    functions: dict[str, list[Instruction]] = {}
    current = None
    for line in text.splitlines():
        header = _FUNCTION.search(line)
        if header:
            current = functions.setdefault(header.group(1), [])
            continue
        match = _INSTRUCTION.search(line)
        if match and current is not None:
            current.append(Instruction(int(match.group(1), 16), match.group(3),
                                       match.group(4).strip(), (match.group(2) or "").strip()))
    return functions


@functools.lru_cache(maxsize=None)
def _disassemble(source: str, arch: str) -> tuple[dict, dict, str]:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    tool = cuobjdump()
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = Path(tmp, "k.cu"), Path(tmp, "k.cubin")
        cu.write_text(source)
        built = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", *cc.NVCC_FLAGS,
                                *[f"-I{d}" for d in cc.INCLUDE_DIRS], "-o", str(cubin),
                                str(cu)], check=True, capture_output=True, text=True)
        sass = subprocess.run([tool, "-sass", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
        usage = subprocess.run([tool, "-res-usage", str(cubin)], check=True,
                               capture_output=True, text=True).stdout
    resources = {m.group(1): (int(m.group(2)), int(m.group(3)))
                 for m in _USAGE.finditer(usage)}
    return _split_sass(sass), resources, built.stdout + built.stderr


def ptxas_remarks(source: str, arch: str) -> list[str]:
    """The lines of ptxas's remarks on ``source`` (``ptxas info``, e.g. C7518: wgmmas
    serialized)."""
    return [line for line in _disassemble(source, arch)[2].splitlines()
            if line.startswith("ptxas")]


def kernels(source: str, arch: str) -> dict[str, Kernel]:
    """Every kernel (``__global__`` function) of the CUDA C++ ``source`` on ``arch``."""
    sass, resources, _ = _disassemble(source, arch)
    return {name: Kernel(name, body, *resources[name])
            for name, body in sass.items() if name in resources}
