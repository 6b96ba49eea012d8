"""Golden ``.cqb`` files (tests/golden, written by tests/golden/make.py): files of this
format version still decode, disassemble to their recorded listings and re-encode to the
same bytes; and the format cannot change without a new FORMAT_VERSION, because its
fingerprint (records, enums, opcode numbers and operand kinds, dtype codes) is recorded
per version."""
from pathlib import Path

import pytest

from croqvm.bytecode import cqb, schema
from croqvm.bytecode.disasm import disassemble
from croqvm.bytecode.module import FORMAT_VERSION

GOLDEN = Path(__file__).resolve().parent / "golden"
FILES = sorted(GOLDEN.glob("*.cqb"))


def recorded() -> dict[int, str]:
    lines = (GOLDEN / "fingerprints.txt").read_text().split("\n")
    return {int(v): f for v, f in (line.split() for line in lines if line.strip())}


def test_the_format_has_not_changed_without_a_new_version():
    fingerprints = recorded()
    assert FORMAT_VERSION in fingerprints, \
        "record this format version: python tests/golden/make.py"
    assert schema.fingerprint() == fingerprints[FORMAT_VERSION], (
        "the .cqb format changed (records, enums, opcode numbers or operand kinds, dtype "
        "codes): bump FORMAT_VERSION in croqvm/bytecode/module.py, then run python "
        "tests/golden/make.py")


def test_every_version_has_its_own_fingerprint():
    fingerprints = recorded()
    assert len(set(fingerprints.values())) == len(fingerprints)
    assert max(fingerprints) == FORMAT_VERSION


def test_there_are_golden_files():
    assert len(FILES) >= 5


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_golden_file_decodes_to_its_listing_and_back_to_its_bytes(path):
    data = path.read_bytes()
    module = cqb.decode(data, path.name)
    assert disassemble(module) + "\n" == path.with_suffix(".dis").read_text()
    assert cqb.encode(module) == data
