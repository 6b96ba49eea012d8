"""Builds the hand-written kernels of tests/cuda for the CUDA runtime tests: with the
host C++ compiler for the CPU runtime, with nvcc for the GPU architectures (skipped
where nvcc is absent), and loads them on the cuda-cpu device or a GPU (skipped where
there is none)."""
import functools
import shutil
from pathlib import Path

import pytest

from croqvm.cuda import compile as cc
from croqvm.cuda import driver
from croqvm.cuda.cpu import CpuModule
from croqvm.running import program

CUDA_DIR = Path(__file__).resolve().parent / "cuda"


def _source(name: str) -> str:
    return (CUDA_DIR / name).read_text()


@functools.lru_cache(maxsize=None)
def cpu_module(name: str) -> CpuModule:
    return CpuModule(cc.build(_source(name), cc.CPU))


def nvcc_build(name: str, arch: str) -> Path:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    return cc.build(_source(name), arch)


@functools.lru_cache(maxsize=None)
def _gpu_module(name: str, arch: str) -> driver.GpuModule:
    return driver.GpuModule(_backend(), cc.build(_source(name), arch).read_bytes())


@functools.lru_cache(maxsize=None)
def _backend():
    return driver.open_backend()


def device_module(name: str, device: str):
    """``name`` loaded on ``device`` ("cpu": the cuda-cpu runtime, "gpu": a GPU)."""
    if device == "cpu":
        return cpu_module(name)
    status = driver.gpu_status()
    if not status["ok"]:
        pytest.skip(status["reason"])
    return _gpu_module(name, driver.arch_for(status["capability"]))


def cpu_libraries() -> list[CpuModule]:
    """The libraries the cuda-cpu device of this process has loaded for programs: their
    counters (``CpuModule.tma_boxes`` ...) tell the paths the generated code took."""
    device = program._CUDA_DEVICES.get("cuda-cpu")
    # one library per handle: modules built from the same code share the loaded library
    # (and so its counters) under two keys
    return list({lib.lib._handle: lib for _, _, lib in device._loaded.values()}.values()) \
        if device else []
