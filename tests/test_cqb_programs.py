"""Every program in programs/ survives the .cqb round trip, and damaged real files are
rejected with BytecodeError and nothing else (ARCHITECTURE.md "The bytecode")."""
import hashlib
import random
import sys
from pathlib import Path

import pytest

import croqvm
from croqvm.bytecode import cqb
from croqvm.core.errors import BytecodeError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "programs"))
from catalog import PROGRAMS  # noqa: E402

VALID = {e.id: e for e in PROGRAMS if e.stage is None}


def compiled(entry):
    return croqvm.compile_file(entry.path, defines=entry.defines).module


@pytest.mark.parametrize("entry", VALID.values(), ids=list(VALID))
def test_round_trip_is_identity_and_encoding_is_deterministic(entry):
    module = compiled(entry)
    data = cqb.encode(module)
    back = cqb.decode(data)
    assert back.functions == module.functions
    assert back.spans == module.spans and back.sources == module.sources
    assert cqb.encode(back) == data
    assert cqb.encode(compiled(entry)) == data   # a fresh compile gives the same bytes


def test_save_and_load_through_files(tmp_path):
    entry = VALID["matmul_1p1c.co"]
    module = compiled(entry)
    path = tmp_path / "gemm.cqb"
    cqb.save(module, path)
    assert croqvm.load(path).module.functions == module.functions
    assert [p.name for p in tmp_path.iterdir()] == ["gemm.cqb"]   # no temporary left behind


def _mutations(data: bytes, rng: random.Random, count: int):
    """Byte flips, truncations, insertions and deletions of ``data``."""
    for _ in range(count):
        kind = rng.randrange(4)
        at = rng.randrange(len(data))
        if kind == 0:
            yield data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
        elif kind == 1:
            yield data[:at]
        elif kind == 2:
            yield data[:at] + bytes([rng.randrange(256)]) + data[at:]
        else:
            yield data[:at] + data[at + rng.randrange(1, 9):]


def _payload_mutations(data: bytes, rng: random.Random, count: int):
    """Mutations behind a recomputed checksum, so the verifier, not the hash, must catch them."""
    header = 40
    for bad in _mutations(data[header:], rng, count):
        yield _rehash(data[:header], bad)


def _rehash(header: bytes, payload: bytes) -> bytes:
    return header[:8] + hashlib.sha256(payload).digest() + payload


def _decode_or_reject(blob: bytes) -> str:
    try:
        cqb.decode(blob)
        return "ok"
    except BytecodeError as err:
        assert str(err), "a rejection must say why"
        return "rejected"


@pytest.mark.filterwarnings("error::RuntimeWarning")   # one would precede the error
@pytest.mark.parametrize("name", ["matmul_1p1c.co", "matmul_double_buffer.co", "divergence.co"])
def test_random_damage_to_real_files_only_raises_bytecode_error(name):
    data = cqb.encode(compiled(VALID[name]))
    rng = random.Random(name)
    outcomes = [_decode_or_reject(b) for b in _mutations(data, rng, 1000)]
    assert outcomes.count("rejected") >= 990    # the checksum catches nearly all of them
    outcomes = [_decode_or_reject(b) for b in _payload_mutations(data, rng, 1000)]
    assert "rejected" in outcomes


@pytest.mark.filterwarnings("error::RuntimeWarning")   # one would precede the error
@pytest.mark.slow
def test_many_payload_mutations_of_every_program():
    rng = random.Random(7)
    for entry in VALID.values():
        data = cqb.encode(compiled(entry))
        for blob in _payload_mutations(data, rng, 3000):
            _decode_or_reject(blob)
