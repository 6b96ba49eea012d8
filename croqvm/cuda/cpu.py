"""The cuda-cpu device: CUDA C++ built by the host C++ compiler against the CPU runtime
(``rt/cq_cpu.h``), whose kernels run with every CUDA thread a fiber. Buffers are host
memory, so kernels read and write numpy arrays in place.
"""
from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Sequence, Tuple, Union

import numpy as np

from ..core import errors
from . import abi

Param = Tuple[str, object]     # (kind in abi.PARAM_TYPES, value; "ptr": address or array)
Outcome = Union[None, abi.DeviceFault, abi.Deadlock]
POLL_SECONDS = 0.25            # how often a running launch's position goes to its watcher


class Stopped(KeyboardInterrupt):
    """Ctrl-C stopped a launch; ``position`` (an ``abi.Position``) is where it was."""

    def __init__(self, kernel: str, position: abi.Position):
        super().__init__(f"kernel '{kernel}' on cuda-cpu")
        self.position = position


def pack_params(params: Sequence[Param]):
    """``void *args[]`` as cuLaunchKernel takes them, and the values it points at (the
    caller keeps both alive during the launch)."""
    values, pointers = [], []
    for kind, value in params:
        if kind == "tmap":          # encoded bytes, at a 64-byte aligned copy (cq_tmap)
            room = (ctypes.c_char * (len(value) + 64))()
            at = ctypes.addressof(room) + (-ctypes.addressof(room)) % 64
            ctypes.memmove(at, bytes(value), len(value))
            values.append(room)
            pointers.append(at)
            continue
        if kind == "ptr" and isinstance(value, np.ndarray):
            value = value.ctypes.data
        values.append(abi.PARAM_TYPES[kind](value))
        pointers.append(ctypes.cast(ctypes.pointer(values[-1]), ctypes.c_void_p))
    args = (ctypes.c_void_p * max(1, len(values)))(*pointers)
    return args, values


def cpu_tensor_maps(params: Sequence[Param]) -> list:
    """``params`` with each "tmap" parameter (an ``abi.TensorMapArg``) encoded as the CPU
    runtime's cq_tensor_map of the host array it names."""
    return [(k, abi.cpu_tensor_map(params[v.buffer][1], v.box, v.swizzle)) if k == "tmap"
            else (k, v) for k, v in params]


class CpuModule:
    """A loaded cuda-cpu library. One launch at a time: the runtime keeps the launch's
    state in the library."""

    def __init__(self, path: Path):
        self.path = str(path)
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise errors.InternalError(f"can not load the cuda-cpu library {path}: {exc}") \
                from None
        abi.check_library(self.lib, self.path)
        self.lib.cq_cpu_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.POINTER(abi.LaunchCfg)]
        self.lib.cq_cpu_launch.restype = ctypes.c_int
        self.lib.cq_cpu_deadlock_smem.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
        self.lib.cq_cpu_deadlock_smem.restype = ctypes.c_void_p
        self.fault = abi.FaultRec.in_dll(self.lib, "cq_fault_record")
        self.deadlock = abi.DeadlockRec.in_dll(self.lib, "cq_deadlock_record")
        self.misuse_texts = {v: k for k, v in abi.read_table(self.lib, "cq_misuse_texts").items()}
        self._position = abi.PositionRec.in_dll(self.lib, "cq_position")
        self._lock = threading.Lock()

    def position(self) -> abi.Position:
        """Where the launch running (or the last one) is."""
        return abi.decode_position(self._position)

    def _run(self, kernel: str, args, cfg, watch) -> int:
        """``cq_cpu_launch`` on a thread of its own, so that this one can pass the launch's
        position to ``watch`` every POLL_SECONDS, and Ctrl-C reaches it: it asks the
        runtime to stop (each thread's next loop step faults), waits for the launch to
        end, and raises ``Stopped`` with the position the launch had. An error of
        ``watch`` stops the launch the same way before it leaves."""
        stop = ctypes.c_int.in_dll(self.lib, "cq_stop_request")
        stop.value = 0
        status = []
        worker = threading.Thread(target=lambda: status.append(
            self.lib.cq_cpu_launch(self.entry(kernel), args, ctypes.byref(cfg))), daemon=True)
        worker.start()
        try:
            worker.join(POLL_SECONDS)
            while worker.is_alive():
                if watch is not None:
                    watch(self.position())
                worker.join(POLL_SECONDS)
        except BaseException as exc:     # the launch never outlives this call
            stop.value = 1
            worker.join()
            if isinstance(exc, KeyboardInterrupt):
                raise Stopped(kernel, self.position()) from None
            raise
        return status[0]

    def entry(self, kernel: str) -> int:
        try:
            return ctypes.cast(getattr(self.lib, f"cq_entry_{kernel}"), ctypes.c_void_p).value
        except AttributeError:
            raise errors.InternalError(f"the cuda-cpu library {self.path} has no kernel "
                                       f"'{kernel}' (no CQ_EXPORT({kernel}))") from None

    def launch(self, kernel: str, grid: Sequence[int], block: int, smem: int = 0,
               params: Sequence[Param] = (), stack: int = 0,
               step_limit: int = (1 << 64) - 1, cooperative: bool = False,
               cluster: Sequence[int] = (), watch=None) -> Outcome:
        """Runs ``kernel`` on a grid of up to three dimensions; returns None, the
        first fault, or the deadlock that stopped it. ``step_limit``: loop iterations
        a thread may run (generated code counts them); ``cooperative``: every block
        resident at once, as a grid barrier needs; ``cluster``: the extents of the
        clusters whose blocks run together, as a cluster-scope trigger needs;
        ``watch``: called with the launch's ``abi.Position`` while it runs. Ctrl-C
        stops the launch with ``Stopped``."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        cluster = tuple(cluster) + (1,) * (3 - len(cluster))
        ctypes.c_uint64.in_dll(self.lib, "cq_step_limit").value = step_limit
        cfg = abi.LaunchCfg((ctypes.c_uint32 * 3)(*grid), block, smem, stack, int(cooperative),
                            (ctypes.c_uint32 * 3)(*cluster))
        args, keep = pack_params(cpu_tensor_maps(params))
        with self._lock:
            status = self._run(kernel, args, cfg, watch)
            del keep
            if status == abi.Status.OK:
                return None
            if status == abi.Status.FAULTED:
                return abi.decode_fault(self.fault)
            if status == abi.Status.DEADLOCKED and self.fault.key != abi.NO_FAULT:
                return abi.decode_fault(self.fault)    # the fault left lanes waiting
            if status == abi.Status.DEADLOCKED:
                n = ctypes.c_uint64()
                ptr = self.lib.cq_cpu_deadlock_smem(ctypes.byref(n))
                smem_bytes = ctypes.string_at(ptr, n.value) if n.value else b""
                return abi.decode_deadlock(self.deadlock, smem_bytes)
        what = {abi.Status.ERR_CONFIG: f"grid {grid} or block size {block} out of range",
                abi.Status.ERR_NOMEM: f"no memory for the thread stacks of {block} threads "
                                      f"per block{' in every block' if cooperative else ''} "
                                      f"or {smem} bytes of shared memory"}
        raise errors.DeviceError(f"cuda-cpu launch of '{kernel}' failed: "
                                 f"{what.get(status, f'status {status}')}")

    def printed(self) -> list:
        """The records the last launch printed: (print number, values as 64 bits)."""
        buf = abi.PrintBuf.in_dll(self.lib, "cq_print_state")
        if not buf.used:
            return []
        words = np.ctypeslib.as_array((ctypes.c_uint64 * buf.used).from_address(buf.data))
        return decode_prints(words)

    def tma_boxes(self) -> int:
        """Tensor-map TMA boxes the library's launches have moved (cq_tma_tile)."""
        return ctypes.c_uint64.in_dll(self.lib, "cq_tma_boxes").value

    def wgmma_swizzled(self) -> int:
        """wgmmas of the library's launches that read an operand through a swizzled
        descriptor (in place, without staging)."""
        return ctypes.c_uint64.in_dll(self.lib, "cq_wgmma_swizzled").value

    def mbar_arrivals(self) -> int:
        """Lanes' arrivals at an mbarrier in the library's launches: the rendezvous of
        collectives that are not the whole block's (drops not counted)."""
        return ctypes.c_uint64.in_dll(self.lib, "cq_mbar_arrivals").value

    def misuse_text(self, fault: abi.DeviceFault) -> str:
        return self.misuse_texts.get(fault.args[0], f"misuse {fault.args[0]}")


def decode_prints(words) -> list:
    """Printed records (cq_abi.h): a header word (format << 32 | 1 << 31 | count), the
    values; a zero header is where the records that did not fit begin."""
    out, at = [], 0
    while at < len(words) and int(words[at]):
        head = int(words[at])
        n = head & 0x7FFFFFFF
        out.append((head >> 32, [int(x) for x in words[at + 1:at + 1 + n]]))
        at += 1 + n
    return out
