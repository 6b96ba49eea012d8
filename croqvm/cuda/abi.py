"""The ctypes mirror of ``rt/cq_abi.h``: the records a device (a GPU or the CPU runtime)
and the host exchange, kernel parameter kinds, and the check that a loaded CPU library
agrees with this mirror (its ``cq_abi_table``).
"""
from __future__ import annotations

import ctypes
import dataclasses
import enum

from ..core.errors import InternalError

MAX_BLOCK = 1024
NO_FAULT = 0xFFFFFFFFFFFFFFFF


class FaultKind(enum.IntEnum):
    CHECK = 1        # a check of the generated code failed; ``site`` names it
    TIMEOUT = 2      # GPU watchdog: the wait at ``site`` made no progress
    MISUSE = 3       # CPU runtime: the generated code broke a CUDA rule (args[0]: Misuse)


class Misuse(enum.IntEnum):
    BARRIER_ID = 1
    BARRIER_COUNT = 2
    BARRIER_MIXED = 3
    BARRIER_OVERFLOW = 4
    MBAR_COUNT = 5
    MBAR_EMPTY = 6
    CP_ASYNC_SIZE = 7
    CP_ASYNC_ALIGN = 8
    CP_ASYNC_DST = 9
    CP_ASYNC_PENDING = 10
    WARP_PARTIAL = 11
    WARP_DIVERGED = 12
    SMEM_CARVE = 13
    WGMMA_FENCE = 14
    WGMMA_DESC = 15
    WGMMA_PENDING = 16
    SMEM_OVERRUN = 17
    TMA_MAP = 18
    TMA_TX = 19


class WaitKind(enum.IntEnum):
    NONE = 0
    EXITED = 1
    BLOCK_BARRIER = 2
    NAMED_BARRIER = 3
    MBARRIER = 4
    EVENT = 5
    WARP = 6
    FLAG = 7
    GRID = 8


class Status(enum.IntEnum):
    OK = 0
    FAULTED = 1
    DEADLOCKED = 2
    ERR_CONFIG = -1
    ERR_NOMEM = -2


class FaultRec(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("lock", ctypes.c_int32), ("kind", ctypes.c_int32),
                ("site", ctypes.c_int32), ("pad", ctypes.c_int32),
                ("args", ctypes.c_int64 * 16)]


class ThreadWait(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("site", ctypes.c_int32), ("a0", ctypes.c_int64),
                ("a1", ctypes.c_int64)]


class DeadlockRec(ctypes.Structure):
    _fields_ = [("block", ctypes.c_int64), ("nthreads", ctypes.c_int32),
                ("pad", ctypes.c_int32), ("thread", ThreadWait * MAX_BLOCK)]


class PrintBuf(ctypes.Structure):
    _fields_ = [("used", ctypes.c_uint64), ("cap", ctypes.c_uint64), ("data", ctypes.c_void_p)]


class LaunchCfg(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32),
                ("smem_bytes", ctypes.c_uint64), ("stack_bytes", ctypes.c_uint64),
                ("cooperative", ctypes.c_uint32), ("cluster", ctypes.c_uint32 * 3)]


class PositionRec(ctypes.Structure):
    _fields_ = [("steps", ctypes.c_uint64), ("block_start", ctypes.c_uint64),
                ("block", ctypes.c_int64), ("lane", ctypes.c_int32), ("site", ctypes.c_int32)]


class TensorMapRec(ctypes.Structure):
    """cq_tensor_map: a tensor map as the CPU runtime reads it."""
    _fields_ = [("base", ctypes.c_uint64), ("dims", ctypes.c_int64 * 2),
                ("row_bytes", ctypes.c_int64), ("box", ctypes.c_uint32 * 2),
                ("elem", ctypes.c_uint32), ("swizzle", ctypes.c_uint32),
                ("ok", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


@dataclasses.dataclass(frozen=True)
class TensorMapArg:
    """A tensor map kernel parameter before encoding (kind "tmap"): the rank-2 buffer
    passed as parameter ``buffer`` (an index into the launch's parameters), the box
    (rows, columns) and the shared layout's swizzle in bytes (croqvm/cuda/emit_tma.py)."""
    buffer: int
    box: tuple
    swizzle: int


TMAP_BYTES = 192      # the GPU's cq_tmap: a 128-byte CUtensorMap, the `ok` word, 64-aligned


def tensor_map_usable(shape, itemsize: int, address: int, box, swizzle: int) -> bool:
    """Whether cuTensorMapEncodeTiled accepts a map of this rank-2 row-major tensor:
    a 16-byte aligned base, rows a multiple of 16 bytes, every extent from 1 to 2^32, a
    box inside the limits (at most 256 per dimension, rows of whole 16-byte chunks, no
    wider than the swizzle). The CPU runtime refuses the same maps, so both devices take
    the same path."""
    rows, cols = shape
    row_bytes = cols * itemsize
    return (len(shape) == 2 and address % 16 == 0 and row_bytes % 16 == 0 and
            row_bytes < 1 << 40 and 1 <= rows <= 1 << 32 and 1 <= cols <= 1 << 32 and
            all(1 <= b <= 256 for b in box) and box[1] * itemsize % 16 == 0 and
            (not swizzle or box[1] * itemsize <= swizzle))


def cpu_tensor_map(array, box, swizzle: int) -> bytes:
    """The cq_tensor_map the CPU runtime reads for ``array`` (host memory)."""
    rows, cols = array.shape
    ok = array.flags.c_contiguous and \
        tensor_map_usable(array.shape, array.itemsize, array.ctypes.data, box, swizzle)
    rec = TensorMapRec(array.ctypes.data, (ctypes.c_int64 * 2)(cols, rows),
                       cols * array.itemsize, (ctypes.c_uint32 * 2)(box[1], box[0]),
                       array.itemsize, swizzle, int(ok), 0)
    return bytes(rec)


# Kernel parameter kinds (generated kernels take pointers, then extents and scalars with
# exact C types) and their ctypes.
PARAM_TYPES = {
    "ptr": ctypes.c_void_p, "bool": ctypes.c_bool, "i8": ctypes.c_int8, "u8": ctypes.c_uint8, "i16": ctypes.c_int16,
    "u16": ctypes.c_uint16, "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


class AbiEntry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int64)]


def expected_table() -> dict:
    """What ``cq_abi_table`` must contain, from the mirror above."""
    out = {}
    for prefix, cls in (("CQ_FAULT_", FaultKind), ("CQ_MISUSE_", Misuse),
                        ("CQ_WAIT_", WaitKind), ("CQ_", Status)):
        out.update({prefix + m.name: int(m) for m in cls})
    for cname, st in (("cq_fault_rec", FaultRec), ("cq_thread_wait", ThreadWait),
                      ("cq_deadlock_rec", DeadlockRec), ("cq_print_buf", PrintBuf),
                      ("cq_launch_cfg", LaunchCfg), ("cq_position_rec", PositionRec),
                      ("cq_tensor_map", TensorMapRec)):
        out[f"sizeof {cname}"] = ctypes.sizeof(st)
        for field, _ in st._fields_:
            if field not in ("lock", "pad"):
                out[f"{cname}.{field}"] = getattr(st, field).offset
    out["CQ_NO_FAULT"] = NO_FAULT - (1 << 64)       # as the table's signed 64-bit value
    out["CQ_MAX_BLOCK"] = MAX_BLOCK
    return out


def read_table(lib: ctypes.CDLL, symbol: str) -> dict:
    """A null-terminated ``cq_abi_entry`` array exported by ``lib``, as a dict."""
    entries = (AbiEntry * 4096).in_dll(lib, symbol)
    out = {}
    for e in entries:
        if e.name is None:
            return out
        out[e.name.decode()] = int(e.value)
    raise InternalError(f"{symbol} in the CPU runtime library is not terminated")


def check_library(lib: ctypes.CDLL, path: str) -> None:
    """Refuse a CPU runtime library whose records differ from this mirror."""
    got, want = read_table(lib, "cq_abi_table"), expected_table()
    if got != want:
        diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
        raise InternalError(f"the CUDA runtime library {path} does not match "
                            f"croqvm/cuda/abi.py: {', '.join(diff[:8])}")


@dataclasses.dataclass(frozen=True)
class DeviceFault:
    """A decoded ``cq_fault_rec``: the first fault in (block, lane) order."""
    kind: FaultKind
    site: int
    block: int          # linear, row-major in the block indices
    lane: int
    args: tuple


@dataclasses.dataclass(frozen=True)
class Deadlock:
    """A decoded ``cq_deadlock_rec`` plus the block's shared memory when it stopped
    (event counters and mbarriers live there)."""
    block: int
    threads: tuple      # (WaitKind, site, a0, a1) per thread, by lane
    smem: bytes


@dataclasses.dataclass(frozen=True)
class Position:
    """A decoded ``cq_position_rec``: where a CPU launch is."""
    steps: int          # loop iterations run by the launch's threads
    block_steps: int    # ... since the running block began its turn
    block: int          # linear; -1 before the first block
    lane: int           # the thread that ran the last loop step
    site: int           # that loop's fault site; -1: no loop step yet


def decode_position(rec: PositionRec) -> Position:
    steps = int(rec.steps)
    return Position(steps, steps - int(rec.block_start), int(rec.block), int(rec.lane),
                    int(rec.site))


MBAR_BITS = 21     # the CPU runtime's mbarrier word: pending, expected arrivals, phase


def mbarrier_arrivals(word: bytes) -> tuple[int, int]:
    """(arrivals, arrivals awaited) of the current phase of a CPU runtime mbarrier
    (cq_cpu.h: bits 0-20 pending, 21-41 expected; a lane that dropped out is in
    neither)."""
    v = int.from_bytes(word, "little")
    mask = (1 << MBAR_BITS) - 1
    pending, expected = v & mask, (v >> MBAR_BITS) & mask
    return expected - pending, expected


def decode_fault(rec: FaultRec) -> "DeviceFault | None":
    if rec.key == NO_FAULT:
        return None
    return DeviceFault(FaultKind(rec.kind), rec.site, rec.key >> 32, rec.key & 0xFFFFFFFF,
                       tuple(rec.args))


def decode_deadlock(rec: DeadlockRec, smem: bytes) -> Deadlock:
    threads = tuple((WaitKind(t.kind), t.site, t.a0, t.a1)
                    for t in rec.thread[:rec.nthreads])
    return Deadlock(rec.block, threads, smem)
