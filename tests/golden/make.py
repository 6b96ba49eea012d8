"""Records the golden encodings that tests/test_golden.py checks, and the format's
fingerprint:

    python tests/golden/make.py

Run it when FORMAT_VERSION changes (after bumping it for a change of the records, enums,
opcode numbers or dtype codes): it compiles PROGRAMS and records each module's ``.cqb``
bytes by their sha256 (``<name>.sha256``, the bytes themselves being a build product)
with its listing ``<name>.dis`` beside them, and appends ``<version> <fingerprint>`` to
fingerprints.txt. It refuses to record a second fingerprint for a version: a format that
changed needs a new version number.
"""
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

import croqvm  # noqa: E402
from croqvm.bytecode import cqb, schema  # noqa: E402
from croqvm.bytecode.disasm import disassemble  # noqa: E402
from croqvm.bytecode.module import FORMAT_VERSION  # noqa: E402

# futures, async DMA and swap; MMA fragments; events, lane sets and ONCE; async launches
# and sync.global; prints and divergence
PROGRAMS = ("matmul_double_buffer", "matmul_mma_warp", "pipeline_events", "async_launch",
            "hello")
FINGERPRINTS = HERE / "fingerprints.txt"


def compile_program(name: str):
    """The module of programs/NAME.co, as the golden records were made from it."""
    source = f"programs/{name}.co"
    return croqvm.compile((ROOT / source).read_text(), source).module


def recorded() -> dict[int, str]:
    """Version -> fingerprint, as fingerprints.txt records them."""
    lines = FINGERPRINTS.read_text().split("\n") if FINGERPRINTS.exists() else []
    return {int(v): f for v, f in (line.split() for line in lines if line.strip())}


def main() -> int:
    known = recorded()
    now = schema.fingerprint()
    if known.get(FORMAT_VERSION, now) != now:
        print(f"format version {FORMAT_VERSION} was recorded with another fingerprint: "
              "bump FORMAT_VERSION in croqvm/bytecode/module.py", file=sys.stderr)
        return 1
    for old in HERE.glob("*.sha256"):
        old.unlink()
    for name in PROGRAMS:
        module = compile_program(name)
        data = cqb.encode(module)
        (HERE / f"{name}.sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")
        (HERE / f"{name}.dis").write_text(disassemble(module) + "\n")
    if FORMAT_VERSION not in known:
        with open(FINGERPRINTS, "a") as f:
            f.write(f"{FORMAT_VERSION} {now}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
