"""The GPU device: load a cubin, move buffers and launch kernels through the CUDA driver.

Two backends behind one small interface (``Backend``), imported lazily:
- PyCUDA (the optional extra ``croqvm[gpu]``), on the device's primary context (shared
  with CuPy, PyTorch, cuda.core), never ``pycuda.autoinit``, which makes a private one;
- the CUDA driver library itself through ctypes (``libcuda.so.1``), where PyCUDA is not
  installed: the driver's C API is stable, and it needs nothing beyond the driver every
  GPU machine has. (cuda-python's Python layers have renamed and reordered their calls
  from release to release; nothing here depends on them.)
``CROQVM_GPU_BACKEND=pycuda|driver`` forces one.

Whether a GPU can be used at all is found out once per process by ``gpu_status()``,
in a subprocess, so that a missing or broken driver can neither crash nor poison the
test process. Launch failures (an illegal address, ...) poison the CUDA context until
the process ends; generated kernels therefore record faults (``cq_fault_record``)
instead of trapping.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import struct
import subprocess
import sys
from typing import Sequence, Tuple

import numpy as np

from ..core import errors
from . import abi
from .cpu import Param, decode_prints, pack_params

WATCHDOG_ENV = "CROQVM_GPU_WATCHDOG_S"     # seconds a spin wait may stall; 0: forever
DEFAULT_WATCHDOG_S = 60

# CUDA driver API constants used below (cuda.h)
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
CU_FUNC_ATTRIBUTES = {"MAX_THREADS_PER_BLOCK": 0, "NUM_REGS": 4}
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_LIMIT_MALLOC_HEAP_SIZE = 2
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, then a 64-byte value (here the cluster's x, y, z)."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4),
                ("value", ctypes.c_uint * 16)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig of cuLaunchKernelEx."""
    _fields_ = [("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint), ("grid_z", ctypes.c_uint),
                ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint), ("block_z", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("nattrs", ctypes.c_uint)]
STATIC_SMEM_LIMIT = 48 * 1024      # above this a kernel must opt in to dynamic shared memory


class GpuError(errors.DeviceError):
    """A CUDA driver call failed."""


# cuTensorMapEncodeTiled's enums (cuda.h): element types by size, swizzle by bytes
CU_TENSOR_MAP_DATA_TYPE = {1: 0, 2: 1, 4: 2, 8: 4}       # UINT8, UINT16, UINT32, UINT64
CU_TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
CU_TENSOR_MAP_L2_PROMOTION_128B = 2


@functools.lru_cache(maxsize=None)
def _libcuda():
    return ctypes.CDLL("libcuda.so.1")


def encode_tensor_map(address: int, shape, itemsize: int, box, swizzle: int) -> bytes:
    """The GPU's cq_tmap for a row-major rank-2 tensor at device ``address``: the
    CUtensorMap cuTensorMapEncodeTiled makes (zeros for out-of-bounds elements), then
    the `ok` word; a map TMA can not take (abi.tensor_map_usable) is all zeros, so the
    kernel's copies go the general way. Elements are moved as unsigned integers of
    their size: a copy changes no bits."""
    out = bytearray(abi.TMAP_BYTES)
    if not abi.tensor_map_usable(shape, itemsize, address, box, swizzle):
        return bytes(out)
    rows, cols = shape
    tmap = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * itemsize)
    boxes = (ctypes.c_uint32 * 2)(box[1], box[0])
    steps = (ctypes.c_uint32 * 2)(1, 1)
    status = _libcuda().cuTensorMapEncodeTiled(
        ctypes.byref(tmap), CU_TENSOR_MAP_DATA_TYPE[itemsize], 2, ctypes.c_void_p(address),
        dims, strides, boxes, steps, 0, CU_TENSOR_MAP_SWIZZLE[swizzle],
        CU_TENSOR_MAP_L2_PROMOTION_128B, 0)
    if status != 0:
        raise errors.InternalError(f"cuTensorMapEncodeTiled refused a map croqvm found "
                                   f"usable (error {status}): shape {tuple(shape)}, "
                                   f"{itemsize}-byte elements, box {tuple(box)}, "
                                   f"swizzle {swizzle}")
    out[:128] = bytes(tmap)
    out[128:132] = (1).to_bytes(4, "little")
    return bytes(out)


# --------------------------------------------------------------------------- backends

class DriverBackend:
    """The CUDA driver API through ctypes."""

    name = "driver"

    def __init__(self):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise GpuError(f"no CUDA driver (libcuda.so.1): {exc}") from None
        self._call("cuInit", 0)
        count = ctypes.c_int()
        self._call("cuDeviceGetCount", ctypes.byref(count))
        if count.value < 1:
            raise GpuError("the CUDA driver sees no GPU")
        self.dev = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(self.dev), 0)
        self.ctx = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), self.dev)
        self._call("cuCtxSetCurrent", self.ctx)

    def _call(self, fn: str, *args) -> None:
        status = getattr(self.cu, fn)(*args)
        if status != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(status, ctypes.byref(name))
            what = name.value.decode() if name.value else f"error {status}"
            raise GpuError(f"CUDA driver call {fn} failed: {what}")

    def capability(self) -> Tuple[int, int]:
        out = []
        for attr in (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR):
            v = ctypes.c_int()
            self._call("cuDeviceGetAttribute", ctypes.byref(v), attr, self.dev)
            out.append(v.value)
        return out[0], out[1]

    def max_smem(self) -> int:
        """Shared memory a block may have (opting in beyond 48 KiB)."""
        v = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(v),
                   CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self.dev)
        return v.value

    def load(self, image: bytes):
        self._image = ctypes.create_string_buffer(image)     # NUL-terminated for PTX
        module = ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), self._image)
        return module

    def function(self, module, name: str):
        fn = ctypes.c_void_p()
        self._call("cuModuleGetFunction", ctypes.byref(fn), module, name.encode())
        return fn

    def global_ptr(self, module, name: str) -> int:
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        self._call("cuModuleGetGlobal_v2", ctypes.byref(ptr), ctypes.byref(size), module,
                   name.encode())
        return ptr.value

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(max(1, nbytes)))
        return ptr.value

    def free(self, ptr: int) -> None:
        self._call("cuMemFree_v2", ctypes.c_uint64(ptr))

    def h2d(self, ptr: int, host: np.ndarray) -> None:
        self._call("cuMemcpyHtoD_v2", ctypes.c_uint64(ptr), ctypes.c_void_p(host.ctypes.data),
                   ctypes.c_size_t(host.nbytes))

    def d2h(self, host: np.ndarray, ptr: int) -> None:
        self._call("cuMemcpyDtoH_v2", ctypes.c_void_p(host.ctypes.data), ctypes.c_uint64(ptr),
                   ctypes.c_size_t(host.nbytes))

    def set_max_smem(self, fn, nbytes: int) -> None:
        self._call("cuFuncSetAttribute", fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   ctypes.c_int(nbytes))

    def function_attribute(self, fn, name: str) -> int:
        v = ctypes.c_int()
        self._call("cuFuncGetAttribute", ctypes.byref(v), CU_FUNC_ATTRIBUTES[name], fn)
        return v.value

    def total_memory(self) -> int:
        v = ctypes.c_size_t()
        self._call("cuDeviceTotalMem_v2", ctypes.byref(v), self.dev)
        return v.value

    def set_heap(self, nbytes: int) -> None:
        self._call("cuCtxSetLimit", CU_LIMIT_MALLOC_HEAP_SIZE, ctypes.c_size_t(nbytes))

    def launch(self, fn, grid, block: int, smem: int, params: Sequence[Param],
               cooperative: bool = False, cluster: Sequence[int] = ()) -> None:
        args, _values = pack_params(params)
        if cluster:
            attr = LaunchAttribute(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            attr.value[:3] = cluster
            config = LaunchConfig(*grid, block, 1, 1, smem, None, ctypes.pointer(attr), 1)
            self._call("cuLaunchKernelEx", ctypes.byref(config), fn, args, None)
            return
        dims = (*map(ctypes.c_uint, grid), ctypes.c_uint(block), ctypes.c_uint(1),
                ctypes.c_uint(1), ctypes.c_uint(smem), None, args)
        if cooperative:
            self._call("cuLaunchCooperativeKernel", fn, *dims)
        else:
            self._call("cuLaunchKernel", fn, *dims, None)

    def resident_blocks(self, fn, block: int, smem: int) -> int:
        """How many blocks of ``fn`` the GPU holds at once (a cooperative launch's
        limit): blocks per multiprocessor times multiprocessors."""
        per_sm, sms = ctypes.c_int(), ctypes.c_int()
        self._call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(per_sm), fn,
                   ctypes.c_int(block), ctypes.c_size_t(smem))
        self._call("cuDeviceGetAttribute", ctypes.byref(sms),
                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.dev)
        return per_sm.value * sms.value

    def synchronize(self) -> None:
        self._call("cuCtxSynchronize")


# PyCUDA's prepared-call format characters for the kernel parameter kinds
PYCUDA_FORMAT = {"ptr": "P", "bool": "?", "i8": "b", "u8": "B", "i16": "h", "u16": "H", "i32": "i",
                 "u32": "I", "i64": "q", "u64": "Q", "f32": "f", "f64": "d"}


# Where a kernel's parameters start in its constant bank on sm_90 (the only target with
# tensor maps): the offsets ptxas gives them (cuobjdump -elf, EIATTR_KPARAM_INFO) count
# from here, and a parameter's alignment holds for its address in the bank, so a 64-byte
# aligned cq_tmap lies at an offset that is a multiple of 64 only counted from this base
# (tests/test_cuda_params.py compares with ptxas).
PARAM_BASE_SM90 = 0x210


def param_format(params: Sequence[Param]) -> str:
    """The struct format of a kernel's parameter buffer, as PyCUDA passes it (the bytes
    the kernel reads its parameters from): each parameter at ptxas's offset."""
    fmt = ""
    for k, v in params:
        fmt += f"{-(PARAM_BASE_SM90 + struct.calcsize(fmt)) % 64}x{len(v)}s" if k == "tmap" \
            else PYCUDA_FORMAT[k]
    return fmt


class PyCudaBackend:
    """PyCUDA on the primary context."""

    name = "pycuda"

    def __init__(self):
        import pycuda.driver as drv      # ImportError when PyCUDA or libcuda is missing
        self.drv = drv
        try:
            drv.init()
            if drv.Device.count() < 1:
                raise GpuError("the CUDA driver sees no GPU")
            self.dev = drv.Device(0)
            self.ctx = self.dev.retain_primary_context()
            self.ctx.push()
        except drv.Error as exc:
            raise GpuError(f"PyCUDA could not open the GPU: {exc}") from None
        atexit.register(self._close)

    def _close(self) -> None:
        """Pops the context pushed at opening, as ``pycuda.autoprimaryctx`` does: PyCUDA
        aborts the process at exit while its context stack is not empty."""
        self.ctx.pop()
        from pycuda.tools import clear_context_caches
        clear_context_caches()

    def capability(self) -> Tuple[int, int]:
        return self.dev.compute_capability()

    def max_smem(self) -> int:
        return self.dev.get_attribute(
            self.drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)

    def load(self, image: bytes):
        return self.drv.module_from_buffer(image)

    def function(self, module, name: str):
        return module.get_function(name)

    def global_ptr(self, module, name: str) -> int:
        return int(module.get_global(name)[0])

    def alloc(self, nbytes: int) -> int:
        buf = self.drv.mem_alloc(max(1, nbytes))
        self._keep = getattr(self, "_keep", {})
        self._keep[int(buf)] = buf
        return int(buf)

    def free(self, ptr: int) -> None:
        self._keep.pop(ptr).free()

    def h2d(self, ptr: int, host: np.ndarray) -> None:
        self.drv.memcpy_htod(ptr, host)

    def d2h(self, host: np.ndarray, ptr: int) -> None:
        self.drv.memcpy_dtoh(host, ptr)

    def set_max_smem(self, fn, nbytes: int) -> None:
        fn.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def function_attribute(self, fn, name: str) -> int:
        return fn.get_attribute(getattr(self.drv.function_attribute, name))

    def total_memory(self) -> int:
        return self.dev.total_memory()

    def set_heap(self, nbytes: int) -> None:
        self.drv.Context.set_limit(self.drv.limit.MALLOC_HEAP_SIZE, nbytes)

    def launch(self, fn, grid, block: int, smem: int, params: Sequence[Param],
               cooperative: bool = False, cluster: Sequence[int] = ()) -> None:
        if cooperative:
            raise GpuError("PyCUDA has no cooperative launch, which a grid barrier needs "
                           "(LANGUAGE.md §7.1.4): run with CROQVM_GPU_BACKEND=driver")
        if cluster:
            raise GpuError("PyCUDA has no cluster launch, which a cluster-scope trigger "
                           "needs (LANGUAGE.md §10.8): run with CROQVM_GPU_BACKEND=driver")
        fn.prepare(param_format(params))
        values = [int(v) if k == "ptr" else v for k, v in params]
        try:
            fn.prepared_call(tuple(grid), (block, 1, 1), *values, shared_size=smem)
        except self.drv.Error as exc:
            raise GpuError(f"kernel launch failed: {exc}") from None

    def resident_blocks(self, fn, block: int, smem: int) -> int:
        """PyCUDA launches no cooperative kernel (``launch`` says so): no limit here."""
        return 1 << 62

    def synchronize(self) -> None:
        try:
            self.drv.Context.synchronize()
        except self.drv.Error as exc:
            raise GpuError(f"the kernel failed on the GPU: {exc}") from None


BACKENDS = {"pycuda": PyCudaBackend, "driver": DriverBackend}


def open_backend():
    """The first backend that opens: ``CROQVM_GPU_BACKEND``, else PyCUDA, else the
    driver library."""
    forced = os.environ.get("CROQVM_GPU_BACKEND")
    if forced and forced not in BACKENDS:
        raise errors.ArgumentError(f"CROQVM_GPU_BACKEND={forced}: expected "
                                   f"{' or '.join(BACKENDS)}")
    reasons = []
    for name in [forced] if forced else list(BACKENDS):
        try:
            return BACKENDS[name]()
        except ImportError as exc:
            reasons.append(f"{name}: not installed ({exc})")
        except GpuError as exc:
            reasons.append(f"{name}: {exc}")
    raise GpuError("no usable GPU: " + "; ".join(reasons))


# --------------------------------------------------------------------------- probing

def _probe_main() -> None:
    """Run in a subprocess by ``gpu_status``: prints one JSON line."""
    try:
        backend = open_backend()
        print(json.dumps({"ok": True, "backend": backend.name,
                          "capability": list(backend.capability())}))
    except errors.CroqvmError as exc:
        print(json.dumps({"ok": False, "reason": str(exc)}))


@functools.lru_cache(maxsize=None)
def gpu_status() -> dict:
    """``{"ok": True, "backend": ..., "capability": [major, minor]}`` or ``{"ok": False,
    "reason": ...}``, found in a subprocess once per process."""
    code = "from croqvm.cuda.driver import _probe_main; _probe_main()"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return {"ok": False, "reason": "probing the GPU took more than 120 s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return {"ok": False, "reason": f"probing the GPU failed: {tail[0]}"}
    return json.loads(lines[-1])


def require_gpu() -> dict:
    """The probe's result, or the one-line DeviceError of ``--device gpu`` without one."""
    status = gpu_status()
    if not status["ok"]:
        raise errors.DeviceError(f"device 'gpu' needs a CUDA GPU and driver: "
                                 f"{status['reason']}")
    return status


def arch_for(capability: Sequence[int]) -> str:
    """The compile target for a GPU: its own cubin where croqvm builds one (8.x runs
    sm_80 code; sm_90a code runs only on 9.0), else compute_80 PTX, which the driver
    compiles for any later GPU."""
    major, minor = capability
    if major == 8:
        return "sm_80"
    if (major, minor) == (9, 0):
        return "sm_90a"
    if major < 8:
        raise errors.DeviceError(f"croqvm's CUDA code needs compute capability 8.0 or "
                                 f"newer; this GPU has {major}.{minor}")
    return "compute_80"


# --------------------------------------------------------------------------- modules

_heap_reserved = False       # the device heap is one per context: sized once per process
_failed = ""                 # what made the context unusable: later launches say so

class GpuModule:
    """A loaded cubin (or PTX) and its fault record; the same ``launch`` as the
    cuda-cpu device, with parameters of kind "ptr" holding device addresses."""

    def __init__(self, backend, image: bytes):
        self.backend = backend
        self.module = backend.load(image)
        self.fault_ptr = backend.global_ptr(self.module, "cq_fault_record")
        seconds = float(os.environ.get(WATCHDOG_ENV, DEFAULT_WATCHDOG_S))
        backend.h2d(backend.global_ptr(self.module, "cq_watchdog_ns"),
                    np.array([int(seconds * 1e9)], np.uint64))
        self.functions = {}
        self.smem_opt_in = {}
        self.print_buf = None       # (device address, capacity in words)

    def _function(self, kernel: str, block: int, smem: int):
        fn = self.functions.get(kernel)
        if fn is None:
            fn = self.functions[kernel] = self.backend.function(self.module, kernel)
        most = self.backend.function_attribute(fn, "MAX_THREADS_PER_BLOCK")
        if block > most:
            regs = self.backend.function_attribute(fn, "NUM_REGS")
            raise errors.DeviceError(
                f"kernel '{kernel}' can not launch {block} threads per block: it uses "
                f"{regs} registers per thread, so this GPU runs at most {most} threads of "
                f"it per block (a smaller block, or [[launch_bounds({block})]] to make nvcc "
                f"use fewer registers)")
        if smem > max(STATIC_SMEM_LIMIT, self.smem_opt_in.get(kernel, 0)):
            self.backend.set_max_smem(fn, smem)
            self.smem_opt_in[kernel] = smem
        return fn

    def reserve_heap(self) -> None:
        """Sizes the device heap behind the lanes' run-time-sized local buffers before
        the first launch that allocates from it (CUDA refuses to resize it later): a
        quarter of the GPU's memory, not the driver's default of 8 MiB, which a realistic
        grid outgrows. What the lanes need is only known inside the kernel; an
        allocation beyond the heap faults with the buffer named."""
        global _heap_reserved
        if not _heap_reserved:
            self.backend.set_heap(self.backend.total_memory() // 4)
            _heap_reserved = True

    def resident_blocks(self, kernel: str, block: int, smem: int) -> int:
        """How many blocks of ``kernel`` this GPU holds at once."""
        return self.backend.resident_blocks(self._function(kernel, block, smem), block, smem)

    def launch(self, kernel: str, grid: Sequence[int], block: int, smem: int = 0,
               params: Sequence[Param] = (), step_limit: int = (1 << 64) - 1,
               cooperative: bool = False, cluster: Sequence[int] = ()):
        """Runs ``kernel`` to completion; returns None or the first fault. A "ptr"
        parameter given as a numpy array is copied to the device for the launch and
        back after it (unless the array is read-only); an int is a device address.
        ``cooperative``: a cooperative launch (every block resident, §7.1.4), with the
        grid barrier's counters zeroed first; ``cluster``: a launch of thread block
        clusters of these extents (a cluster-scope trigger, §10.8)."""
        global _failed
        if _failed:
            raise GpuError(f"kernel '{kernel}' can not run: {_failed}, and a GPU context "
                           f"stays unusable after a failed kernel until the process ends")
        grid = tuple(grid) + (1,) * (3 - len(grid))
        fn = self._function(kernel, block, smem)
        if any(isinstance(v, np.ndarray) and not v.flags.c_contiguous for _, v in params):
            raise errors.InternalError(f"launch of '{kernel}': buffers must be C-contiguous")
        copies, device_params = [], []
        try:
            for kind, value in params:
                if kind == "ptr" and isinstance(value, np.ndarray):
                    ptr = self.backend.alloc(value.nbytes)
                    copies.append((value, ptr))
                    self.backend.h2d(ptr, value)
                    value = ptr
                device_params.append((kind, value))
            for i, (kind, value) in enumerate(device_params):
                if kind == "tmap":
                    host = params[value.buffer][1]
                    device_params[i] = (kind, encode_tensor_map(
                        device_params[value.buffer][1], host.shape, host.itemsize,
                        value.box, value.swizzle))
            self.backend.h2d(self.backend.global_ptr(self.module, "cq_step_limit"),
                             np.array([step_limit], np.uint64))
            record = abi.FaultRec(key=abi.NO_FAULT)
            raw = np.frombuffer(record, np.uint8)      # a view the copies fill in place
            self.backend.h2d(self.fault_ptr, raw)
            if cooperative:
                self.backend.h2d(self.backend.global_ptr(self.module, "cq_grid_state"),
                                 np.zeros(2, np.uint32))
            try:
                self.backend.launch(fn, grid, block, smem, device_params, cooperative,
                                    tuple(cluster) + (1,) * (3 - len(cluster)) if cluster
                                    else ())
                self.backend.synchronize()
            except GpuError as exc:
                _failed = f"kernel '{kernel}' failed on the GPU before it ({exc})"
                raise GpuError(f"kernel '{kernel}' failed on the GPU: {exc}") from None
            self.backend.d2h(raw, self.fault_ptr)
            for host, ptr in copies:
                if host.flags.writeable:
                    self.backend.d2h(host, ptr)
        finally:
            for _, ptr in copies:
                try:
                    self.backend.free(ptr)
                except GpuError:
                    pass     # a failed launch poisons the context; its error is the report
        return abi.decode_fault(record)

    def launch_printing(self, kernel: str, grid: Sequence[int], block: int, smem: int,
                        params: Sequence[Param], words: int, step_limit: int,
                        cooperative: bool = False, cluster: Sequence[int] = ()):
        """``launch`` with a print buffer of ``words`` 64-bit words: (outcome, printed
        records). Records that did not fit are reported on stderr."""
        if self.print_buf is None:
            self.print_buf = (self.backend.alloc(8 * words), words)
        ptr, cap = self.print_buf
        state_ptr = self.backend.global_ptr(self.module, "cq_print_state")
        state = abi.PrintBuf(0, cap, ptr)
        raw = np.frombuffer(state, np.uint8)
        self.backend.h2d(state_ptr, raw)
        outcome = self.launch(kernel, grid, block, smem, params, step_limit, cooperative,
                              cluster)
        self.backend.d2h(raw, state_ptr)
        if not state.used:
            return outcome, []
        kept = np.zeros(min(state.used, cap), np.uint64)
        self.backend.d2h(kept, ptr)
        if state.used > cap:
            print(f"croqvm: the kernel printed {state.used} words of records; the last "
                  f"{state.used - cap} did not fit the GPU's print buffer", file=sys.stderr)
        return outcome, decode_prints(kept)
