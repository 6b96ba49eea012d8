"""Golden encodings (tests/golden, recorded by tests/golden/make.py): the programs
recorded for this format version still encode to the same bytes (their sha256), which
decode, disassemble to their recorded listings and re-encode to those bytes; and the
format cannot change without a new FORMAT_VERSION, because its fingerprint (records,
enums, opcode numbers and operand kinds, dtype codes) is recorded per version."""
import hashlib
import importlib.util
from pathlib import Path

import pytest

from croqvm.bytecode import cqb, schema
from croqvm.bytecode.disasm import disassemble
from croqvm.bytecode.module import FORMAT_VERSION

GOLDEN = Path(__file__).resolve().parent / "golden"
FILES = sorted(GOLDEN.glob("*.sha256"))


def _make():
    spec = importlib.util.spec_from_file_location("golden_make", GOLDEN / "make.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


make = _make()


def test_the_format_has_not_changed_without_a_new_version():
    fingerprints = make.recorded()
    assert FORMAT_VERSION in fingerprints, \
        "record this format version: python tests/golden/make.py"
    assert schema.fingerprint() == fingerprints[FORMAT_VERSION], (
        "the .cqb format changed (records, enums, opcode numbers or operand kinds, dtype "
        "codes): bump FORMAT_VERSION in croqvm/bytecode/module.py, then run python "
        "tests/golden/make.py")


def test_every_version_has_its_own_fingerprint():
    fingerprints = make.recorded()
    assert len(set(fingerprints.values())) == len(fingerprints)
    assert max(fingerprints) == FORMAT_VERSION


def test_there_are_golden_files():
    assert len(FILES) >= 5


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_golden_program_encodes_to_its_bytes_which_decode_to_its_listing(path):
    data = cqb.encode(make.compile_program(path.stem))
    assert hashlib.sha256(data).hexdigest() == path.read_text().strip()
    module = cqb.decode(data, path.stem + ".cqb")
    assert disassemble(module) + "\n" == path.with_suffix(".dis").read_text()
    assert cqb.encode(module) == data
