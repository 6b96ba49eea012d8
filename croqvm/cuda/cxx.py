"""C++ device functions on the CPU (LANGUAGE.md §6.10.4): ``Module.cxx_source`` compiled
by the host C++ compiler of the cuda-cpu device (``croqvm.cuda.compile``, with its cache)
into a shared library that both engines call through cffi, so that they run the same
machine code on the same bits.

Every function gets one entry point of a single shape, ``cq_cxx_<k>(args, result)``:
``args[i]`` points to the i-th argument, of the parameter's C type (for a pointer
parameter it is the pointer: the first element of the buffer), and ``result`` to where the
result goes (NULL for a void function). An engine calls it once per active lane, in
increasing lane order, with pointers to that lane's registers and buffer instances. What
the C++ code does through a pointer is not checked: it is trusted as the GPU trusts it.
"""
from __future__ import annotations

from ..core.dtypes import BY_CODE

# croqvm dtypes -> the C types of the entry points
C_TYPE = {"bool": "bool", "s8": "int8_t", "u8": "uint8_t", "s16": "int16_t",
          "u16": "uint16_t", "s32": "int32_t", "u32": "uint32_t", "s64": "int64_t",
          "u64": "uint64_t", "f32": "float", "f64": "double"}

# The CUDA words of a device function's header mean nothing to the host compiler.
PRELUDE = """#include <cmath>
#include <cstdint>
#define __device__
#define __host__
#define __co_device__
#define __forceinline__ inline
#define __noinline__
"""

ENTRY = "void cq_cxx_{k}(void *const *args, void *result)"


def source(module) -> str:
    """The translation unit: the functions as written, then one entry point each."""
    out = [PRELUDE, "#line 1 \"croqvm-cxx\"", module.cxx_source, ""]
    for k, fn in enumerate(module.cxx):
        args = ", ".join(f"({C_TYPE[BY_CODE[p].name]} *)args[{i}]" if pointer else
                         f"*(const {C_TYPE[BY_CODE[p].name]} *)args[{i}]"
                         for i, (p, pointer) in enumerate(zip(fn.params, fn.pointers)))
        call = f"{fn.name}({args})"
        if fn.ret >= 0:
            call = f"*({C_TYPE[BY_CODE[fn.ret].name]} *)result = {call}"
        out.append(f'extern "C" {ENTRY.format(k=k)} {{ (void)args; (void)result; {call}; }}')
    return "\n".join(out) + "\n"


class Library:
    """The compiled functions of one module, loaded with cffi."""

    def __init__(self, module):
        import cffi

        from ..core.errors import CompileError, InternalError
        from . import compile as cc
        self.ffi = cffi.FFI()
        self.ffi.cdef("".join(ENTRY.format(k=k) + ";\n" for k in range(len(module.cxx))))
        try:
            self.path = cc.build(source(module), cc.CPU, generator="cxx")
        except InternalError as err:
            names = ", ".join(f"'{fn.name}'" for fn in module.cxx)
            raise CompileError(f"the C++ device functions called ({names}) do not compile "
                               f"for the CPU; the compiler said:\n{err}") from None
        self.lib = self.ffi.dlopen(str(self.path))
        self.entries = [getattr(self.lib, f"cq_cxx_{k}") for k in range(len(module.cxx))]

    def address(self, k: int) -> int:
        """The address of entry point ``k``, for the native engine."""
        return int(self.ffi.cast("uintptr_t", self.entries[k]))


def library(module) -> Library:
    """The module's library, built (or found in the cache) on first use."""
    lib = module.__dict__.get("_cxx_library")
    if lib is None:
        lib = module.__dict__["_cxx_library"] = Library(module)
    return lib
