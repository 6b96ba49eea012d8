"""The parameter buffer PyCUDA launches a kernel with (croqvm/cuda/driver.py,
param_format) against where the kernel reads its parameters: the offsets and sizes ptxas
gives them in the cubin (cuobjdump -elf, EIATTR_KPARAM_INFO), for a kernel with a
64-byte aligned tensor map parameter (cq_tmap) after pointers, extents and 32-bit
scalars. Skipped where nvcc or cuobjdump is missing; nothing runs on a GPU."""
import re
import shutil
import struct
import subprocess

import pytest

import croqvm
from croqvm.cuda import abi
from croqvm.cuda import compile as cc
from croqvm.cuda.driver import param_format
from croqvm.cuda.emit import emit
from croqvm.cuda.launch import _param_kind

import cuda_sass
from test_cuda_tma import TILE_LOAD

# a tensor map after 2 pointers, 4 extents and a 32-bit scalar: 52 bytes of parameters, which
# ptxas follows with the tensor map at 112 (0x210 + 112 = 640, a multiple of 64), not at 64
SOURCE = TILE_LOAD
_KPARAM = re.compile(r"EIATTR_KPARAM_INFO\s+Format:\s+\S+\s+Value:\s+Index\s*:\s*0x[0-9a-f]+"
                     r"\s+Ordinal\s*:\s*0x([0-9a-f]+)\s+Offset\s*:\s*0x([0-9a-f]+)\s+"
                     r"Size\s*:\s*0x([0-9a-f]+)")


def kernel_params(source: str, tmp_path) -> dict:
    """ordinal -> (offset, size) of the one kernel's parameters in ``source`` (sm_90a)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    cu, cubin = tmp_path / "k.cu", tmp_path / "k.cubin"
    cu.write_text(source)
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", *cc.NVCC_FLAGS,
                    *[f"-I{d}" for d in cc.INCLUDE_DIRS], "-o", str(cubin), str(cu)],
                   check=True, capture_output=True, text=True)
    elf = subprocess.run([cuda_sass.cuobjdump(), "-elf", str(cubin)], check=True,
                         capture_output=True, text=True).stdout
    return {int(o, 16): (int(at, 16), int(n, 16)) for o, at, n in _KPARAM.findall(elf)}


def test_the_parameter_buffer_puts_each_parameter_where_the_kernel_reads_it(tmp_path):
    gen = emit(croqvm.compile(SOURCE).module, arch="sm_90a")
    (info,) = gen.kernels.values()
    assert len(info.tmaps) == 1
    params = []
    for b in info.buffers:
        params += [("ptr", 0)] + [("i64", 0)] * b.rank
    params += [(_param_kind(t), 0) for _, t in info.scalars]
    params += [("tmap", bytes(abi.TMAP_BYTES)) for _ in info.tmaps]
    fmt = param_format(params)
    # the offset of each parameter: the size of the buffer before it, with its own padding
    ours = {}
    for n, (kind, value) in enumerate(params):
        upto = param_format(params[:n + 1])
        size = abi.TMAP_BYTES if kind == "tmap" else struct.calcsize(upto[-1])
        ours[n] = (struct.calcsize(upto) - size, size)
    assert ours == kernel_params(gen.text, tmp_path)
    assert struct.calcsize(fmt) == max(at + n for at, n in ours.values())
