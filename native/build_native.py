"""Build the native engine, the extension ``croqvm._native`` (cffi API mode).

setup.py names this module in ``cffi_modules``, so ``pip install -e .`` and
``python setup.py build_ext --inplace`` compile it. Flags follow design-native-cuda.md
§2.7: C11, no floating-point contraction (the error-free MMA arithmetic needs every
operation rounded on its own) and never -ffast-math, which would also switch the whole
process to flush-to-zero. ``CROQVM_NATIVE_CFLAGS`` adds flags, e.g. the sanitizer build::

    CROQVM_NATIVE_CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer" python setup.py build_ext --inplace

The opcode numbers and operand kinds come from croqvm/bytecode/opcodes.py: they are
written into ``cq_opcodes.h`` in the build directory, never copied by hand.
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCES = ["engine.c", "call.c", "convert.c", "memory.c", "sync.c", "dma.c", "mma.c",
           "output.c", "load.c", "rng.c", "view.c"]
FLAGS = ["-O2", "-std=c11", "-D_GNU_SOURCE", "-ffp-contract=off", "-fno-strict-aliasing",
         "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter"]
FORBIDDEN = ("-ffast-math", "-Ofast", "-funsafe-math-optimizations")


def _opcode_table():
    """croqvm/bytecode/opcodes.py's TABLE, read on its own: a build may run where the
    package's dependencies (numpy) are not installed yet."""
    spec = importlib.util.spec_from_file_location(
        "_croqvm_opcodes", ROOT / "croqvm" / "bytecode" / "opcodes.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module       # dataclasses looks the module up while it loads
    spec.loader.exec_module(module)
    return module.TABLE


def opcodes_header() -> str:
    """``cq_opcodes.h``: CQ_OP_<NAME> per opcode, CQ_NOPS, and the operand kinds."""
    TABLE = _opcode_table()
    lines = ["/* Generated from croqvm/bytecode/opcodes.py by native/build_native.py: "
             "do not edit. */", "#ifndef CQ_OPCODES_H", "#define CQ_OPCODES_H", "",
             "enum cq_opcode {"]
    lines += [f"    CQ_OP_{op.name} = {op.code}," for op in TABLE]
    lines += ["    CQ_NOPS", "};", "",
              "/* operand kinds per opcode, one letter an operand (opcodes.OPERAND_KINDS) */",
              "#define CQ_OPERANDS_INIT { \\"]
    lines += [f'    [CQ_OP_{op.name}] = "{"".join(k[0] for k in op.operands)}", \\'
              for op in TABLE]
    lines += ["}", "", "#endif", ""]
    return "\n".join(lines)


def _generated_dir() -> Path:
    out = ROOT / "build" / "cq_generated"
    out.mkdir(parents=True, exist_ok=True)
    header = out / "cq_opcodes.h"
    text = opcodes_header()
    if not header.exists() or header.read_text() != text:
        header.write_text(text)
    return out


def _cdef() -> str:
    text = (HERE / "cq_api.h").read_text()
    return text.split("/* cdef begin */")[1].split("/* cdef end */")[0]


def _extra() -> list[str]:
    extra = shlex.split(os.environ.get("CROQVM_NATIVE_CFLAGS", ""))
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
    include_dirs=[str(HERE), str(_generated_dir())],
    extra_compile_args=FLAGS + _extra(),
    extra_link_args=[f for f in _extra() if f.startswith("-fsanitize")],   # their runtimes
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
