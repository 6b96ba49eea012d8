"""Files the command line reads and writes: programs, and outputs written safely.

``read_program`` tells a ``.cqb`` from source by its magic number (or its name: a damaged
``.cqb`` gets the decoder's diagnosis) and refuses data files
(a ``.npy`` array, an archive, binary data) before reading them whole. Outputs are checked
before a run (``check_output``: a long run must not end in an unwritable path) and written
atomically (``write_atomic``: a temporary file beside the target, then a rename) with the
permissions an ordinary ``open`` would give under the user's umask (a device or a pipe,
such as ``/dev/null``, is written in place, never replaced). Every problem is an
``ArgumentError`` (usage, exit status 2) naming the path.
"""
from __future__ import annotations

import io
import os
import stat
import tempfile
from contextlib import contextmanager

from .errors import ArgumentError
from .records import dataclass

CQB_MAGIC = b"CQB\x00"                 # croqvm.bytecode.cqb writes it first
MAX_SOURCE_BYTES = 64 * 1024 * 1024    # a larger "program" is data passed by mistake
_SNIFF_BYTES = 4096
_DATA_MAGICS = ((b"\x93NUMPY", "a numpy .npy array"), (b"PK\x03\x04", "a zip or .npz archive"),
                (b"PK\x05\x06", "a zip or .npz archive"), (b"\x7fELF", "an executable"))


@dataclass
class ProgramFile:
    path: str
    bytecode: bytes | None    # the whole file, when it is a .cqb
    text: str | None          # the source, when it is not


def read_program(path: str) -> ProgramFile:
    """The program at ``path``: bytecode (by its magic number or its name) or UTF-8
    source."""
    with reading(path), open(path, "rb") as f:
        head = f.read(_SNIFF_BYTES)
        if head.startswith(CQB_MAGIC) or path.endswith(".cqb"):
            return ProgramFile(path, head + f.read(), None)
        _refuse_data(path, head)
        size = os.fstat(f.fileno()).st_size
        if size > MAX_SOURCE_BYTES:
            raise ArgumentError(f"{path}: {size} bytes is too large for a Croqtile source "
                                f"file (croqvm reads up to {MAX_SOURCE_BYTES} bytes)")
        # by pieces: read(n) would first take n bytes of memory, 64 MiB for any file
        pieces, total = [head], len(head)
        while total <= MAX_SOURCE_BYTES:
            piece = f.read(min(1 << 20, MAX_SOURCE_BYTES + 1 - total))
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
    data = b"".join(pieces)
    if len(data) > MAX_SOURCE_BYTES:   # a file whose size the system does not tell
        raise ArgumentError(f"{path}: too large for a Croqtile source file (croqvm reads up "
                            f"to {MAX_SOURCE_BYTES} bytes)")
    # a byte-order mark is no part of the text (editors on Windows write one)
    return ProgramFile(path, None, data.decode("utf-8-sig", errors="replace"))


def _refuse_data(path: str, head: bytes) -> None:
    for magic, what in _DATA_MAGICS:
        if head.startswith(magic):
            raise ArgumentError(f"{path}: this is {what}, not a Croqtile program (give the "
                                f"program first: croqvm run FILE.co --input NAME={path})")
    # a stray NUL or byte that is not UTF-8 in a text is the scanner's to report, at its
    # line and column; a file with many of them is data
    text = head.decode("utf-8", errors="replace")
    odd = sum(c == "\ufffd" or (c < " " and c not in "\t\n\r\f\v") for c in text)
    if odd > len(text) // 10:
        raise ArgumentError(f"{path}: binary data, not a Croqtile source file or .cqb")


def load_numpy(path: str, where: str):
    """The array of a ``.npy`` file, or the arrays of a ``.npz`` file as a dict by name,
    never pickled objects. Every size is checked from the headers before anything is read:
    an array whose header claims more bytes than the file holds, or an archive that would
    expand beyond ``max_array_bytes()``, is refused. Problems name ``where`` (``--input
    a=x.npy``) and the file."""
    import zipfile
    with reading(path, where), open(path, "rb") as f:
        if f.read(4) in (b"PK\x03\x04", b"PK\x05\x06"):
            f.seek(0)
            try:
                with zipfile.ZipFile(f) as archive:
                    return _read_npz(archive, path, where)
            except (zipfile.BadZipFile, EOFError, OSError, ValueError, zlib_error()):
                raise ArgumentError(f"{where}: '{path}' is a damaged .npz file") from None
        f.seek(0)
        return _read_npy(f, os.fstat(f.fileno()).st_size, path, where)


def zlib_error():
    import zlib
    return zlib.error


def max_array_bytes() -> int:
    """The most bytes of arrays one input file may expand to: half the memory this
    machine has free, or half what the process's address-space limit leaves, so that
    reading an input never exhausts it."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        free = 1 << 33
    return min(free, _address_space_left()) // 2


def _address_space_left() -> int:
    """What RLIMIT_AS (``ulimit -v``) leaves of the address space; unlimited: a lot."""
    import resource
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return 1 << 62
    try:
        with open("/proc/self/status") as f:
            used = next(int(line.split()[1]) * 1024 for line in f
                        if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        used = 0
    return max(0, limit - used)


def _read_npz(archive, path: str, where: str) -> dict:
    members = [i for i in archive.infolist() if i.filename.endswith(".npy")]
    expands = sum(i.file_size for i in members)
    if expands > max_array_bytes():
        raise ArgumentError(f"{where}: '{path}' would expand to {expands} bytes, more than "
                            f"the {max_array_bytes()} this machine can spare")
    arrays = {}
    for info in members:
        with archive.open(info) as member:
            arrays[info.filename[:-len(".npy")]] = _read_npy(member, info.file_size, path,
                                                             where)
    return arrays


def _read_npy(stream, size: int, path: str, where: str):
    """One ``.npy`` array from ``stream`` (``size`` bytes), its header checked first."""
    import numpy as np
    fmt = np.lib.format
    bad = f"{where}: '{path}' is not a .npy or .npz file of numbers"
    try:
        version = fmt.read_magic(stream)
        header = fmt.read_array_header_1_0 if version == (1, 0) else \
            fmt.read_array_header_2_0        # 2.0 and 3.0 differ in the text's encoding only
        shape, fortran, dtype = header(stream)
    except (ValueError, EOFError, OSError):
        raise ArgumentError(bad) from None
    if dtype.hasobject:
        raise ArgumentError(bad + " (object arrays are not read)")
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if claimed > size - stream.tell():
        raise ArgumentError(f"{where}: '{path}' is damaged: its header claims an array of "
                            f"{claimed} bytes ({dtype} {list(shape)}), more than the file "
                            f"holds")
    try:
        array = np.empty(int(np.prod(shape, dtype=object)), dtype)   # read into: no copy
    except MemoryError:
        raise ArgumentError(f"{where}: '{path}' holds an array of {claimed} bytes ({dtype} "
                            f"{list(shape)}), more than the memory left to croqvm") from None
    raw = memoryview(array.view(np.uint8).reshape(-1))
    got = 0
    while got < claimed:
        piece = stream.read(min(claimed - got, 1 << 24))
        if not piece:
            raise ArgumentError(f"{where}: '{path}' is damaged: the array data ends early")
        raw[got:got + len(piece)] = piece
        got += len(piece)
    return array.reshape(shape, order="F" if fortran else "C")


@contextmanager
def reading(path: str, where: str = ""):
    """Turn the OSError of reading ``path`` into an ArgumentError, after ``where``."""
    prefix = f"{where}: " if where else ""
    try:
        yield
    except FileNotFoundError:
        raise ArgumentError(f"{prefix}no such file: '{path}'") from None
    except IsADirectoryError:
        raise ArgumentError(f"{prefix}'{path}' is a directory") from None
    except OSError as exc:
        raise ArgumentError(f"{prefix}can not read '{path}': {exc.strerror or exc}") from None


def check_output(path: str, option: str, inputs: dict[str, str]) -> None:
    """Refuse, before any work, an output path that can not be written or that is one of
    ``inputs`` (``{path: what it is}``, e.g. ``{"k.co": "the source file"}``)."""
    if path == "":
        raise ArgumentError(f"{option}: the file name is empty")
    if os.path.isdir(path):
        raise ArgumentError(f"{option} {path}: is a directory")
    for other, what in inputs.items():
        if os.path.exists(path) and os.path.exists(other) and os.path.samefile(path, other):
            raise ArgumentError(f"{option} {path}: this is {what}; writing there would "
                                f"overwrite it")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ArgumentError(f"{option} {path}: can not write: no directory "
                            f"'{os.path.dirname(path) or directory}'")
    if _special(path):    # written in place (write_atomic): it must take writes itself
        if not os.access(path, os.W_OK):
            raise ArgumentError(f"{option} {path}: can not write: permission denied")
        return
    try:   # the only sure test: create a file there (a read-only mount, an ACL, a quota)
        fd, probe = tempfile.mkstemp(prefix=".croqvm-", dir=directory)
    except OSError as exc:
        raise ArgumentError(f"{option} {path}: can not write: {exc.strerror}") from None
    os.close(fd)
    os.unlink(probe)


def cache_dir(layout: str) -> str:
    """The directory of one of croqvm's caches (``layout`` names it and its version):
    ``CROQVM_CACHE_DIR``, else ``$XDG_CACHE_HOME/croqvm/LAYOUT`` (``~/.cache/...``)."""
    explicit = os.environ.get("CROQVM_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "croqvm", layout)


def caching() -> bool:
    """Whether croqvm keeps what it builds (``CROQVM_DISABLE_CACHE=1`` says no)."""
    return os.environ.get("CROQVM_DISABLE_CACHE", "") in ("", "0")


def write_atomic(path: str, write) -> None:
    """Create ``path`` through ``write(binary file)``: all of it or, on any failure,
    nothing (the previous file, if any, stays). Permissions follow the umask."""
    path = os.fspath(path)
    if _special(path):    # a device or a pipe (/dev/null, a FIFO): written, never replaced
        data = io.BytesIO()   # made whole first: writers such as zipfile seek and tell
        write(data)
        out = AtomicFile(path)
        out.write(data.getvalue())
        out.commit()
        return
    out = AtomicFile(path)
    try:
        write(out.file)
    except OSError as exc:
        out.fail(exc)
    except BaseException:
        out.discard()
        raise
    out.commit()


class AtomicFile:
    """A file written under a temporary name beside ``path`` (``file``, binary) and put
    in place by ``commit``: all of it or, after ``discard``, nothing (the previous file,
    if any, stays). Permissions follow the umask. A device or a pipe is written as it
    is, never replaced. A system error (a full disk, say) is the user's
    ``ArgumentError``, ``PATH: can not write: REASON``, and leaves nothing."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self._tmp = None
        try:
            if _special(self.path):
                self.file = open(self.path, "wb")
                return
            fd, self._tmp = tempfile.mkstemp(
                prefix=".croqvm-", dir=os.path.dirname(os.path.abspath(self.path)))
            self.file = os.fdopen(fd, "wb")
            os.fchmod(fd, 0o666 & ~_umask())   # mkstemp makes 0600
        except OSError as exc:
            self.fail(exc)

    def write(self, data) -> None:
        try:
            self.file.write(data)
        except OSError as exc:
            self.fail(exc)

    def commit(self) -> None:
        try:
            self.file.close()
            if self._tmp is not None:
                os.replace(self._tmp, self.path)
        except OSError as exc:
            self.fail(exc)

    def discard(self) -> None:
        try:
            self.file.close()
        except (OSError, AttributeError):
            pass        # what could not be written goes with the file
        if self._tmp is not None:
            _remove_quietly(self._tmp)

    def fail(self, exc: OSError):
        """Discard the file and raise ``exc`` as the user's one-line error."""
        self.discard()
        raise ArgumentError(f"{self.path}: can not write: {exc.strerror or exc}") from None


def _special(path: str) -> bool:
    """Whether ``path`` is something other than a file or a directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _umask() -> int:
    mask = os.umask(0o022)   # the only way to read it is to set it
    os.umask(mask)
    return mask


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
