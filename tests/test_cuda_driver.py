"""The GPU device adapter (croqvm/cuda/driver.py). Without a GPU only its decisions and
its error path can run here; test_cuda_runtime.py runs kernels where a GPU exists."""
import ctypes

import numpy as np
import pytest

from croqvm.core import errors
from croqvm.cuda import abi, driver


def test_probe_answers_without_crashing():
    status = driver.gpu_status()
    if status["ok"]:
        assert status["backend"] in driver.BACKENDS and len(status["capability"]) == 2
    else:
        assert status["reason"]


def test_no_gpu_is_one_line_device_error(monkeypatch):
    monkeypatch.setattr(driver, "gpu_status", lambda: {"ok": False, "reason": "no usable GPU"})
    with pytest.raises(errors.DeviceError) as exc:
        driver.require_gpu()
    assert str(exc.value) == "device 'gpu' needs a CUDA GPU and driver: no usable GPU"


@pytest.mark.parametrize("capability, arch", [
    ((8, 0), "sm_80"), ((8, 6), "sm_80"), ((8, 9), "sm_80"), ((9, 0), "sm_90a"),
    ((10, 0), "compute_80"), ((12, 0), "compute_80"),
])
def test_arch_for_capability(capability, arch):
    assert driver.arch_for(capability) == arch


def test_gpus_before_ampere_are_refused():
    with pytest.raises(errors.DeviceError, match="compute capability 8.0 or newer; this GPU has 7.5"):
        driver.arch_for((7, 5))


def test_every_parameter_kind_has_a_pycuda_format():
    assert driver.PYCUDA_FORMAT.keys() == abi.PARAM_TYPES.keys()


def test_unknown_forced_backend_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("CROQVM_GPU_BACKEND", "opencl")
    with pytest.raises(errors.ArgumentError, match="CROQVM_GPU_BACKEND=opencl"):
        driver.open_backend()


class FakeBackend:
    """Device memory as a dict of byte arrays; ``launch`` runs ``kernel(memory, params)``."""

    def __init__(self, kernel):
        self.kernel, self.mem, self.next, self.freed = kernel, {}, 4096, []
        self.globals = {"cq_fault_record": self.alloc(ctypes.sizeof(abi.FaultRec)),
                        "cq_watchdog_ns": self.alloc(8), "cq_step_limit": self.alloc(8),
                        "cq_grid_state": self.alloc(8)}
        self.cooperative = None

    def load(self, image):
        return image

    def function(self, module, name):
        return name

    def global_ptr(self, module, name):
        return self.globals[name]

    def alloc(self, nbytes):
        self.next += 4096
        self.mem[self.next] = np.zeros(nbytes, np.uint8)
        return self.next

    def free(self, ptr):
        self.freed.append(ptr)

    def h2d(self, ptr, host):
        self.mem[ptr][:host.nbytes] = np.frombuffer(host.tobytes(), np.uint8)

    def d2h(self, host, ptr):
        host.view(np.uint8).reshape(-1)[:] = self.mem[ptr][:host.nbytes]

    def set_max_smem(self, fn, nbytes):
        self.smem = nbytes

    regs = 32                  # registers per thread nvcc gave every kernel

    def function_attribute(self, fn, name):
        return {"NUM_REGS": self.regs,
                "MAX_THREADS_PER_BLOCK": min(1024, 65536 // self.regs // 32 * 32)}[name]

    def total_memory(self):
        return 80 << 30

    def set_heap(self, nbytes):
        self.heap = nbytes

    def launch(self, fn, grid, block, smem, params, cooperative=False, cluster=()):
        self.cooperative = cooperative
        self.kernel(self, params)

    def synchronize(self):
        pass


def test_launch_copies_buffers_in_and_written_ones_back():
    def kernel(dev, params):
        (_, src), (_, dst), (_, n) = params
        dev.mem[dst][:4 * n] = (dev.mem[src][:4 * n].view(np.int32) * 2).view(np.uint8)
    backend = FakeBackend(kernel)
    module = driver.GpuModule(backend, b"image")
    src = np.arange(5, dtype=np.int32)
    src.flags.writeable = False
    dst = np.zeros(5, np.int32)
    assert module.launch("twice", (1,), 32, 0, [("ptr", src), ("ptr", dst), ("i32", 5)]) is None
    assert dst.tolist() == [0, 2, 4, 6, 8]
    assert len(backend.freed) == 2


def test_a_cooperative_launch_reopens_the_grid_barrier_first():
    """A launch the watchdog ended may leave blocks counted at the grid barrier."""
    seen = []
    backend = FakeBackend(lambda dev, params: seen.append(
        dev.mem[dev.globals["cq_grid_state"]].view(np.uint32).tolist()))
    backend.mem[backend.globals["cq_grid_state"]][:] = 7
    driver.GpuModule(backend, b"image").launch("k", (4,), 64, cooperative=True)
    assert seen == [[0, 0]] and backend.cooperative is True


def test_launch_reads_the_fault_record_and_opts_in_to_large_shared_memory():
    def kernel(dev, params):
        rec = abi.FaultRec(key=(3 << 32) | 17, kind=abi.FaultKind.CHECK, site=4)
        rec.args[0] = 99
        dev.mem[dev.globals["cq_fault_record"]][:] = np.frombuffer(rec, np.uint8)
    backend = FakeBackend(kernel)
    got = driver.GpuModule(backend, b"image").launch("k", (4,), 64, 64 * 1024)
    assert got == abi.DeviceFault(abi.FaultKind.CHECK, 4, 3, 17, (99,) + (0,) * 15)
    assert backend.smem == 64 * 1024


def test_a_block_too_large_for_the_kernels_registers_is_refused_before_launch():
    backend = FakeBackend(lambda dev, params: pytest.fail("launched"))
    backend.regs = 214
    with pytest.raises(errors.DeviceError, match=r"kernel 'k' can not launch 512 threads per "
                                                 r"block: it uses 214 registers per thread, "
                                                 r"so this GPU runs at most 288 threads"):
        driver.GpuModule(backend, b"image").launch("k", (1,), 512)


def test_the_device_heap_is_sized_once_before_the_first_allocating_launch(monkeypatch):
    monkeypatch.setattr(driver, "_heap_reserved", False)
    backend = FakeBackend(lambda dev, params: None)
    module = driver.GpuModule(backend, b"image")
    module.reserve_heap()
    assert backend.heap == 20 << 30          # a quarter of the GPU, not CUDA's 8 MiB
    backend.heap = None
    module.reserve_heap()                    # CUDA refuses a later change
    assert backend.heap is None


def test_pycuda_pops_its_context_at_exit(monkeypatch):
    """PyCUDA aborts the process at exit while its context stack is not empty, and the
    GPU probe would then report no GPU."""
    import sys
    import types
    calls, exits = [], []

    class Context:
        def push(self):
            calls.append("push")

        def pop(self):
            calls.append("pop")

    class Device:
        def __init__(self, n):
            pass

        count = staticmethod(lambda: 1)
        retain_primary_context = lambda self: Context()      # noqa: E731

    drv = types.SimpleNamespace(init=lambda: None, Device=Device, Error=RuntimeError)
    tools = types.SimpleNamespace(clear_context_caches=lambda: calls.append("clear"))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=drv, tools=tools))
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    monkeypatch.setitem(sys.modules, "pycuda.tools", tools)
    monkeypatch.setattr(driver.atexit, "register", exits.append)
    driver.PyCudaBackend()
    assert calls == ["push"] and len(exits) == 1
    exits[0]()
    assert calls == ["push", "pop", "clear"]


def test_a_failed_kernel_is_named_and_so_is_it_when_later_launches_are_refused(monkeypatch):
    monkeypatch.setattr(driver, "_failed", "")

    def illegal_address(dev, params):
        raise driver.GpuError("CUDA_ERROR_ILLEGAL_ADDRESS")
    module = driver.GpuModule(FakeBackend(illegal_address), b"image")
    with pytest.raises(errors.DeviceError,
                       match="kernel 'first' failed on the GPU: CUDA_ERROR_ILLEGAL_ADDRESS"):
        module.launch("first", (1,), 32)
    with pytest.raises(errors.DeviceError, match="kernel 'second' can not run: kernel 'first' "
                                                 "failed on the GPU before it"):
        module.launch("second", (1,), 32)
