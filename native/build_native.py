"""Build the native engine, the extension ``croqvm._native`` (cffi API mode).

setup.py names this module in ``cffi_modules``, so ``pip install -e .`` and
``python setup.py build_ext --inplace`` compile it. Flags follow design-native-cuda.md
§2.7: C11, no floating-point contraction (the error-free MMA arithmetic needs every
operation rounded on its own) and never -ffast-math, which would also switch the whole
process to flush-to-zero. ``CROQVM_NATIVE_CFLAGS`` adds flags; ``CROQVM_NATIVE_SANITIZE=1``
builds with AddressSanitizer and UndefinedBehaviorSanitizer (``SANITIZE``; any report
aborts). Python itself is not instrumented, so the ASan runtime must be loaded first::

    CROQVM_NATIVE_SANITIZE=1 python setup.py build_ext --inplace --force
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 pytest ...

(tests/test_sanitize.py does exactly this on a copy of the checkout: ``pytest --sanitize``.)

Opcodes, dtypes, fault kinds and limits come from the generated native/cq_opcodes.h,
numbers from native/cq_numerics.h; nothing is copied by hand.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
SOURCES = ["engine.c", "call.c", "convert.c", "memory.c", "sync.c", "dma.c", "mma.c",
           "output.c", "load.c", "rng.c", "view.c", "pool.c", "trace.c", "trace_text.c",
           "race.c", "debug.c"]
# -O3: the lane loops vectorise (about 15% on bench/run.py's DMA matmul against -O2)
FLAGS = ["-O3", "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-fno-strict-aliasing",
         "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter"]
FORBIDDEN = ("-ffast-math", "-Ofast", "-funsafe-math-optimizations")
# -O0: instrumented at -O1, engine.c's dispatch takes gcc a quarter of an hour
SANITIZE = ["-O0", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all"]


def _cdef() -> str:
    text = (HERE / "cq_api.h").read_text()
    return text.split("/* cdef begin */")[1].split("/* cdef end */")[0]


def _extra() -> list[str]:
    extra = shlex.split(os.environ.get("CROQVM_NATIVE_CFLAGS", ""))
    if os.environ.get("CROQVM_NATIVE_SANITIZE", "") not in ("", "0"):
        extra = SANITIZE + extra
    bad = [f for f in extra if f in FORBIDDEN]
    if bad:
        raise SystemExit(f"CROQVM_NATIVE_CFLAGS: {' '.join(bad)} would break croqvm's "
                         f"numerics (design-native-cuda.md §2.5)")
    return extra


ffibuilder = FFI()
ffibuilder.cdef(_cdef())
ffibuilder.set_source(
    "croqvm._native",
    '#include "cq_api.h"',
    sources=[os.path.relpath(HERE / s, os.getcwd()) for s in SOURCES],
    include_dirs=[str(HERE)],
    extra_compile_args=FLAGS + _extra(),
    extra_link_args=[f for f in _extra() if f.startswith("-fsanitize")],   # their runtimes
    libraries=["m", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
