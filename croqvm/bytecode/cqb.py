"""The ``.cqb`` file format: encode, decode (always verified), save, load.

ARCHITECTURE.md "The bytecode": ".cqb files are msgpack with a magic, a format version and
a checksum": a header of ``HEADER_FIELDS`` (little-endian), then the payload, the Module as
msgpack plain data (croqvm.bytecode.schema); docs/CQB.md draws it, generated from here.

The payload holds only lists, ints, floats (always float64), bools and strings -- no maps,
no extension types -- so encoding is deterministic: the same module gives the same bytes.
Decoding trusts nothing: msgpack's own limits tie every length field to the input size,
the schema walk checks every value's type, and the verifier checks everything else; any
failure is a ``BytecodeError`` naming the file and the place.
"""
from __future__ import annotations

import os
import struct

import msgpack

from croqvm.core.collector import paused
from croqvm.core.digest import sha256
from croqvm.core.errors import BytecodeError
from croqvm.core.files import CQB_MAGIC, write_atomic

from . import schema
from .module import FORMAT_VERSION, Module
from .verify import check_semantics

MAGIC = CQB_MAGIC
HEADER_FIELDS = (("4s", f"magic {MAGIC!r}"),
                 ("I", "format version, unsigned (module.FORMAT_VERSION)"),
                 ("32s", "SHA-256 of the payload"))
_HEADER = struct.Struct("<" + "".join(code for code, _ in HEADER_FIELDS))
HEADER_SIZE = _HEADER.size


def encode(module: Module) -> bytes:
    """The ``.cqb`` bytes of ``module``, which must pass the verifier."""
    chunks: list[bytes] = []
    digest = _pack_payload(module, chunks.append)
    return b"".join([_HEADER.pack(MAGIC, module.version, digest), *chunks])


def _pack_payload(module: Module, out) -> bytes:
    """Pack ``module``'s payload, handing each piece to ``out`` as it is packed; the
    SHA-256 of the payload once the module has passed the verifier."""
    with paused():
        # The verifier's type check, a function at a time, each piece packed as it comes:
        # the module is never copied whole as plain data.
        packer = msgpack.Packer(use_bin_type=True)
        digest, unpackable = sha256(), None
        for header, piece in schema.plain_pieces(module):
            if unpackable is not None:
                continue
            try:
                chunk = packer.pack_array_header(piece) if header else packer.pack(piece)
            except (TypeError, ValueError, OverflowError) as exc:
                unpackable = exc
                continue
            digest.update(chunk)
            out(chunk)
        check_semantics(module)
        if unpackable is not None:
            raise _unpackable(unpackable)
        return digest.digest()


def decode(data: bytes, filename: str = "<cqb>") -> Module:
    """The verified Module in ``data``; BytecodeError (naming ``filename``) if malformed."""
    try:
        with paused():
            module = schema.from_plain(unpack(data))
            check_semantics(module)
    except BytecodeError as err:
        raise BytecodeError(f"{filename}: {err}") from None
    return module


def pack(plain, version: int = FORMAT_VERSION) -> bytes:
    """Header + payload for plain data, unchecked (tests use it to build hostile files)."""
    try:
        payload = msgpack.packb(plain, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _unpackable(exc) from None
    return _HEADER.pack(MAGIC, version, sha256(payload).digest()) + payload


def _unpackable(exc: Exception) -> BytecodeError:
    """What a value msgpack can not pack (e.g. a lone surrogate in a str) raises."""
    return BytecodeError(f"malformed .cqb: can not encode the module: {exc}")


def unpack(data: bytes):
    """The plain payload of ``data`` after checking magic, version and checksum."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise BytecodeError(f"malformed .cqb: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise BytecodeError(f"malformed .cqb: truncated header ({len(data)} bytes, "
                            f"a .cqb file starts with {_HEADER.size})")
    magic, version, digest = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BytecodeError("malformed .cqb: not a .cqb file (bad magic number)")
    if version != FORMAT_VERSION:
        raise BytecodeError(f"malformed .cqb: format version {version}, but this croqvm "
                            f"reads version {FORMAT_VERSION}; compile the .co file again")
    payload = data[_HEADER.size:]
    if sha256(payload).digest() != digest:
        raise BytecodeError("malformed .cqb: checksum mismatch (the file is corrupt or "
                            "truncated)")
    try:
        return msgpack.unpackb(payload, raw=False, use_list=True, strict_map_key=True,
                               ext_hook=_no_extensions)
    # msgpack signals bad input with several exception types (ValueError subclasses for
    # format, depth, size and UTF-8 errors, TypeError for unhashable map keys); all of them
    # mean the same thing here.
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise BytecodeError(f"malformed .cqb: the payload is not valid msgpack ({exc})") from None


def _no_extensions(code, data):
    raise ValueError(f"extension type {code} is not allowed in a .cqb payload")


def save(module: Module, path) -> None:
    """Write ``module`` to ``path`` atomically (croqvm.core.files.write_atomic), each piece
    as it is packed: a large module's bytes are never held whole. The header, which holds
    the payload's digest, is written last, in the place kept for it."""
    def write(f):
        f.write(bytes(HEADER_SIZE))
        digest = _pack_payload(module, f.write)
        f.seek(0)
        f.write(_HEADER.pack(MAGIC, module.version, digest))
    write_atomic(os.fspath(path), write)


def load(path) -> Module:
    """The verified Module stored at ``path``; BytecodeError if unreadable or malformed."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise BytecodeError(f"{path}: can not read: {exc.strerror}") from None
    return decode(data, path)
