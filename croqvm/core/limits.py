"""Hardware limits every stage enforces: the one place each number is written.

Also the lane counts of warps and warpgroups, and the parallel levels whose instances they
are. The checker reports the limits statically when sizes are known, the verifier rejects modules
that break them, and the engines check what is only known at launch.
"""
from __future__ import annotations

from .records import dataclass

MAX_BLOCK_SIZE = 1024              # lanes per block (LANGUAGE.md §6.3.6)
TOO_MANY_THREADS = ("Total physical threads per block (thread x group x group-4 dims) must "
                    f"not exceed {MAX_BLOCK_SIZE}.")
MAX_SHARED_BYTES = 228 * 1024      # shared memory per block: the largest configurable (sm_90)
LAUNCH_SHARED_BYTES = 227 * 1024   # what a launch can opt in to of it (an H100's or H200's
                                   # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN; 1 KiB stays reserved)
EVENT_SLOT_BYTES = 8               # shared memory of one event slot: one mbarrier
MAX_REGISTERS = 65536              # registers declared by one host program or kernel

WARP_SIZE = 32                     # lanes per warp: a block's lanes 0-31 are warp 0, ...
WARPGROUP_SIZE = 4 * WARP_SIZE     # lanes per warpgroup, one instance of 'group-4'
REG_BUDGET_MIN, REG_BUDGET_MAX = 24, 256   # setmaxnreg's registers per thread, multiples of 8
NAMED_BARRIERS = 16                # named barriers per block (bar.sync); 0 is the block barrier


@dataclass(frozen=True)
class Unit:
    """A parallel level one instance of which is a fixed group of consecutive lanes
    (§6.3.4), and how messages name that group."""
    level: str        # "group-4"
    lanes: int        # 128
    noun: str         # "warpgroup"
    plural: str       # "warpgroups"


UNITS = (Unit("group-4", WARPGROUP_SIZE, "warpgroup", "warpgroups"),   # outer to inner
         Unit("group", WARP_SIZE, "warp", "warps"))
UNIT_OF_LEVEL = {u.level: u for u in UNITS}
UNIT_OF_LANES = {u.lanes: u for u in UNITS}
LEVEL_LANES = {**{u.level: u.lanes for u in UNITS}, "thread": 1}   # lanes of one instance

# The device whose residency bounds a cooperative launch (§7.1.4): an H100 SXM, 132 SMs of
# at most 2048 threads and 32 blocks each.
SM_COUNT = 132
SM_THREADS = 2048
SM_BLOCKS = 32


def resident_blocks(block_size: int) -> int:
    """How many blocks of ``block_size`` lanes (whole warps) the device holds at once."""
    threads = -(-block_size // WARP_SIZE) * WARP_SIZE
    return SM_COUNT * min(SM_BLOCKS, SM_THREADS // threads)


MAX_CLUSTER = 8                    # blocks per thread block cluster (CUDA's portable size)
MAX_GRID = (2**31 - 1, 65535, 65535)   # blocks per grid dimension x, y, z (CUDA)
GRID_LIMIT_TAIL = (f"more than CUDA's limit of {{limit}} blocks (dimension 0, x, allows "
                   f"{MAX_GRID[0]}; dimensions 1 and 2, y and z, allow {MAX_GRID[1]}).")
MAX_INT = 2**31 - 1                # bounds and extents are 'int' (s32, LANGUAGE.md §3.1)


def buffer_bytes(bits: int, count: int, extents) -> int:
    """Memory of ``count`` buffers of ``extents`` elements of ``bits`` bits each (a bool or
    a sub-byte type takes a byte), as the shared-memory limit counts it."""
    size = count * max(1, bits // 8)
    for e in extents:
        size *= int(e)
    return size


def shared_limit_message(used: int) -> str:
    return (f"{used} bytes of shared memory per block, more than the limit of "
            f"{MAX_SHARED_BYTES} (228 KiB)")
