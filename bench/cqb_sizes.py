"""Size in bytes of each program's .cqb, and the opcode set with how often programs use it.

    python bench/cqb_sizes.py
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

import croqvm
from croqvm.bytecode import cqb
from croqvm.bytecode.opcodes import TABLE, WIDTH

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "programs"))
from catalog import PROGRAMS  # noqa: E402


def codes(module):
    for fn in module.functions:
        yield fn.host
        yield from (k.code for k in fn.kernels)


def main() -> None:
    used = collections.Counter()
    for entry in PROGRAMS:
        if entry.stage == "static":
            continue
        module = croqvm.compile_file(entry.path, defines=entry.defines).module
        n = 0
        for code in codes(module):
            ops = code.code[::WIDTH]
            n += len(ops)
            used.update(TABLE[op].name for op in ops)
        print(f"{entry.id:40s} {len(cqb.encode(module)):7d} bytes  {n:5d} instructions")
    print(f"\n{len(TABLE)} opcodes:")
    print(", ".join(f"{op.name} ({used[op.name]})" for op in TABLE))


if __name__ == "__main__":
    main()
