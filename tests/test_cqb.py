"""The .cqb file format: exact round trips, a documented header, and hostile input that only
ever produces BytecodeError (ARCHITECTURE.md "The bytecode")."""
import copy
import hashlib
import math
import os
import random
import stat
import struct

import msgpack
import pytest
from hypothesis import given, settings, strategies as st

import bytecode_builders as B
from croqvm.core import dtypes as D
from croqvm.bytecode import cqb, schema
from croqvm.bytecode.module import FORMAT_VERSION, Const, Module
from croqvm.bytecode.verify import verify
from croqvm.core.errors import ArgumentError, BytecodeError

HEADER = 40     # magic 4 + version 4 + sha256 32


def file_with_payload(payload: bytes, version=FORMAT_VERSION, magic=b"CQB\x00") -> bytes:
    """A .cqb file built by hand from the documented layout."""
    return magic + struct.pack("<I", version) + hashlib.sha256(payload).digest() + payload


# --- round trips -------------------------------------------------------------------------

@pytest.mark.parametrize("build", B.ALL.values(), ids=list(B.ALL))
def test_round_trip_is_identity_and_bytes_are_stable(build):
    data = cqb.encode(build())
    back = cqb.decode(data)
    assert back == build()
    assert cqb.encode(back) == data
    assert cqb.encode(build()) == data


def test_header_layout():
    data = cqb.encode(B.squares())
    assert data[:4] == b"CQB\x00"
    assert struct.unpack("<I", data[4:8]) == (FORMAT_VERSION,)
    assert data[8:40] == hashlib.sha256(data[40:]).digest()
    payload = msgpack.unpackb(data[40:])
    assert payload[0] == [["squares.co", B.SQUARES_CO]]      # Module.sources first


CONSTANTS = [
    Const(D.F64.code, 0.1), Const(D.F64.code, -0.0), Const(D.F64.code, math.inf),
    Const(D.F32.code, 1.5), Const(D.S64.code, -2**63), Const(D.U64.code, 2**64 - 1),
    Const(D.BOOL.code, 1), Const(D.BOOL.code, 0), Const(D.BF16.code, -3.0),
]
STRINGS = ["ünïcode \n 'quoted'", ""]


def test_constants_and_strings_keep_dtype_value_and_python_type():
    m = B.squares()
    m.functions[0].host.consts += CONSTANTS
    m.functions[0].host.strings += STRINGS
    back = cqb.decode(cqb.encode(m)).functions[0].host
    assert back.consts[3:] == CONSTANTS and back.strings == STRINGS
    assert [type(k.value) for k in back.consts[3:]] == [type(k.value) for k in CONSTANTS]
    assert math.copysign(1.0, back.consts[4].value) == -1.0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.builds(Const, st.just(D.BOOL.code), st.integers(0, 1)),
                          st.builds(Const, st.just(D.S64.code), st.integers(-2**63, 2**63 - 1)),
                          st.builds(Const, st.just(D.U64.code), st.integers(0, 2**64 - 1)),
                          st.builds(Const, st.just(D.F64.code), st.floats(allow_nan=False))),
                max_size=12),
       st.lists(st.text(), max_size=4))
def test_any_constant_round_trips_exactly(consts, strings):
    m = B.squares()
    m.functions[0].host.consts += consts
    m.functions[0].host.strings += strings
    back = cqb.decode(cqb.encode(m)).functions[0].host
    assert back.consts[3:] == consts and back.strings == strings
    assert [type(k.value) for k in back.consts[3:]] == [type(k.value) for k in consts]
    assert [math.copysign(1, k.value) for k in back.consts[3:] if type(k.value) is float] == \
        [math.copysign(1, k.value) for k in consts if type(k.value) is float]


def test_nan_constant_gives_identical_bytes():
    m = B.squares()
    m.functions[0].host.consts.append(Const(D.F32.code, math.nan))
    data = cqb.encode(m)
    back = cqb.decode(data)
    assert math.isnan(back.functions[0].host.consts[-1].value)
    assert cqb.encode(back) == data


def test_tuples_written_as_lists_decode_as_tuples():
    m = B.squares()
    m.spans = [list(s) for s in m.spans]
    assert cqb.decode(cqb.encode(m)) == B.squares()


def test_encode_verifies_first():
    m = B.squares()
    m.functions[0].host.code[0] = 200
    with pytest.raises(BytecodeError, match="unknown opcode 200"):
        cqb.encode(m)


# --- rejected files ----------------------------------------------------------------------

GOOD = cqb.encode(B.squares())
PAYLOAD = GOOD[HEADER:]

BAD_FILES = [
    ("empty", b"", "truncated header (0 bytes, a .cqb file starts with 40)"),
    ("short", GOOD[:39], "truncated header (39 bytes"),
    ("magic", b"PK\x03\x04" + GOOD[4:], "not a .cqb file (bad magic number)"),
    ("version", file_with_payload(PAYLOAD, version=7),
     f"format version 7, but this croqvm reads version {FORMAT_VERSION}; compile the .co "
     "file again"),
    ("format 1", file_with_payload(PAYLOAD, version=1),
     f"format version 1, but this croqvm reads version {FORMAT_VERSION}; compile the .co "
     "file again"),
    ("checksum", GOOD[:8] + bytes(32) + PAYLOAD, "checksum mismatch"),
    ("truncated payload", GOOD[:-5], "checksum mismatch"),
    ("garbage payload", file_with_payload(b"\xc1\xc1\xc1"), "the payload is not valid msgpack"),
    ("extra data", file_with_payload(PAYLOAD + b"\x00"), "the payload is not valid msgpack"),
    ("huge length field", file_with_payload(b"\xdd\xff\xff\xff\xff"),
     "the payload is not valid msgpack"),
    ("deep nesting", file_with_payload(b"\x91" * 100_000 + b"\xc0"),
     "the payload is not valid msgpack"),
    ("extension type", file_with_payload(b"\xd4\x05\x00"), "extension type 5 is not allowed"),
    ("a map", file_with_payload(msgpack.packb({"sources": []})),
     "module: expected a record of 7 fields (Module), got dict"),
    ("short record", file_with_payload(msgpack.packb([[], [], []])),
     "module: expected a record of 7 fields (Module), got a list of 3"),
    ("bad utf-8", file_with_payload(b"\xa2\xff\xfe"), "the payload is not valid msgpack"),
]


@pytest.mark.parametrize("name, data, message", BAD_FILES, ids=[r[0] for r in BAD_FILES])
def test_bad_file_is_rejected_with_its_name(name, data, message):
    with pytest.raises(BytecodeError) as err:
        cqb.decode(data, "prog.cqb")
    assert str(err.value).startswith("prog.cqb: malformed .cqb: ")
    assert message in str(err.value)


def test_wrong_type_deep_inside_names_the_path():
    plain = schema.to_plain(B.scale())
    plain[2][0][6][0][1][1][3] = "s32"     # functions[0].kernels[0].code.regs[3]
    with pytest.raises(BytecodeError, match=r"module\.functions\[0\]\.kernels\[0\]\.code\."
                                            r"regs\[3\]: expected an integer, got str"):
        cqb.decode(cqb.pack(plain))


def test_non_bytes_input():
    with pytest.raises(BytecodeError, match="expected bytes, got str"):
        cqb.decode("CQB")


def test_constant_beyond_64_bits_is_rejected():
    m = B.squares()
    m.functions[0].host.consts.append(Const(D.U64.code, 2**64))
    with pytest.raises(BytecodeError, match=r"host\.consts\[3\]\.value: integer constant "
                                            r"18446744073709551616 does not fit in 64 bits"):
        cqb.encode(m)


def test_constant_value_of_another_type_is_rejected():
    plain = schema.to_plain(B.squares())
    plain[2][0][5][3][0][1] = "4"      # host.consts[0].value
    with pytest.raises(BytecodeError, match=r"host\.consts\[0\]\.value: expected an integer "
                                            r"or a float, got str"):
        cqb.decode(cqb.pack(plain))


def test_enum_value_out_of_range_is_rejected():
    plain = schema.to_plain(B.squares())
    plain[2][0][5][5][0][1] = 3      # host.buffers[0].storage
    with pytest.raises(BytecodeError, match=r"host\.buffers\[0\]\.storage: 3 is not a Storage "
                                            r"\(expected one of 0 GLOBAL, 1 SHARED, 2 LOCAL\)"):
        cqb.decode(cqb.pack(plain))


# --- save and load -----------------------------------------------------------------------

def test_save_then_load(tmp_path):
    path = tmp_path / "squares.cqb"
    cqb.save(B.squares(), path)
    assert cqb.load(path) == B.squares()
    assert os.listdir(tmp_path) == ["squares.cqb"]


def test_save_replaces_atomically_and_cleans_up_on_failure(tmp_path):
    target = tmp_path / "dir.cqb"
    target.mkdir()                              # os.replace onto a directory fails
    with pytest.raises(ArgumentError, match="dir.cqb: can not write"):
        cqb.save(B.squares(), target)
    assert os.listdir(tmp_path) == ["dir.cqb"]


def test_save_into_missing_directory(tmp_path):
    with pytest.raises(ArgumentError, match="can not write"):
        cqb.save(B.squares(), tmp_path / "no" / "such.cqb")


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_saved_file_permissions_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        cqb.save(B.squares(), tmp_path / "m.cqb")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "m.cqb").st_mode) == 0o666 & ~umask


def test_load_missing_and_corrupt_files(tmp_path):
    with pytest.raises(BytecodeError, match="missing.cqb: can not read"):
        cqb.load(tmp_path / "missing.cqb")
    bad = tmp_path / "bad.cqb"
    bad.write_bytes(GOOD[:-1] + bytes([GOOD[-1] ^ 1]))
    with pytest.raises(BytecodeError, match="bad.cqb: malformed .cqb: checksum mismatch"):
        cqb.load(bad)


# --- fuzzing: only BytecodeError escapes; anything accepted is a verified module ------------

def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    how = rng.randrange(4)
    pos = rng.randrange(len(data) + 1)
    if how == 0 and data:
        data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
    elif how == 1:
        del data[pos:]
    elif how == 2:
        data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
    else:
        del data[pos:pos + rng.randrange(1, 6)]
    return bytes(data)


def _leaves(plain, path=()):
    """Paths to every value in the plain payload (lists included)."""
    yield path
    if isinstance(plain, list):
        for i, item in enumerate(plain):
            yield from _leaves(item, path + (i,))


_REPLACEMENTS = [-2, -1, 0, 1, 2, 3, 7, 31, 64, 1025, 2**31, -2**40, 2**64 - 1, "x", "", True,
                 False, None, 1.5, [], [0], [[]]]


def _mutate_plain(rng: random.Random, plain):
    plain = copy.deepcopy(plain)
    paths = list(_leaves(plain))
    for _ in range(rng.randrange(1, 3)):
        path = rng.choice(paths[1:])
        parent = plain
        for i in path[:-1]:       # an earlier mutation may have changed the way down
            parent = parent[i] if isinstance(parent, list) and i < len(parent) else None
        if not isinstance(parent, list) or path[-1] >= len(parent):
            continue
        if rng.random() < 0.2 and parent:
            del parent[path[-1]]          # a record or list one item short
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(_REPLACEMENTS))
    return plain


def _decode_or_reject(data: bytes) -> bool:
    try:
        module = cqb.decode(data)
    except BytecodeError:
        return False
    assert isinstance(module, Module)
    verify(module)
    cqb.encode(module)
    return True


def _fuzz(seed: int, rounds: int) -> tuple[int, int]:
    """(files accepted, files tried): every file is rejected with a ``BytecodeError`` or
    decodes to a module that verifies and encodes again."""
    rng = random.Random(seed)
    accepted = tried = 0
    for build in B.ALL.values():
        data = cqb.encode(build())
        payload = data[HEADER:]
        plain = schema.to_plain(build())
        for _ in range(rounds):
            accepted += _decode_or_reject(_mutate_bytes(rng, data))
            accepted += _decode_or_reject(file_with_payload(_mutate_bytes(rng, payload)))
            accepted += _decode_or_reject(cqb.pack(_mutate_plain(rng, plain)))
            tried += 3
    return accepted, tried


@pytest.mark.filterwarnings("error::RuntimeWarning")   # one would precede the error
def test_fuzz_only_bytecode_errors():
    accepted, tried = _fuzz(seed=1, rounds=800)
    # both outcomes happen, so the mutations reach the verifier and the rejections alike
    assert tried == 3 * 800 * len(B.ALL) and 0 < accepted < tried


@pytest.mark.filterwarnings("error::RuntimeWarning")   # one would precede the error
@pytest.mark.slow
def test_fuzz_only_bytecode_errors_long():
    for seed in range(2, 12):
        _fuzz(seed, rounds=2000)
