"""Writes the files derived from the opcode table and the module model (STYLE.md §1)::

    python -m croqvm.bytecode.generate            # rewrite them
    python -m croqvm.bytecode.generate --check    # exit 1 when one is out of date

``native/cq_opcodes.h`` (gen_header), ``docs/OPCODES.md`` and ``docs/CQB.md`` (gen_docs).
Each starts with a line naming what it is generated from; tests/test_generated.py
regenerates them and fails on any difference.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .gen_docs import cqb_md, opcodes_md
from .gen_header import header

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = {"native/cq_opcodes.h": header, "docs/OPCODES.md": opcodes_md,
           "docs/CQB.md": cqb_md}


def stale() -> list[str]:
    """The outputs whose file differs from what the sources give now."""
    return [name for name, make in OUTPUTS.items()
            if not (ROOT / name).is_file()
            or (ROOT / name).read_text(encoding="utf-8") != make()]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        out_of_date = stale()
        for name in out_of_date:
            print(f"{name} is out of date: run python -m croqvm.bytecode.generate")
        return 1 if out_of_date else 0
    if argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name, make in OUTPUTS.items():
        (ROOT / name).write_text(make(), encoding="utf-8")
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
