"""The CUDA generator: verified bytecode to CUDA C++ (ARCHITECTURE.md "The CUDA path";
LANGUAGE.md §6-§11; docs/EXECUTION.md). One ``CQ_KERNEL`` per kernel of the module; host
programs stay on the CPU engine, whose launches call the kernels (croqvm/cuda/launch.py).

The same text compiles with nvcc (sm_80, sm_90a) and, with -DCQ_CPU, for the CPU
runtime, so CI runs what a GPU would. Generated code calls only the cq_* runtime
(rt/croqvm_rt.cuh), rt/cq_kernel.h and cq_numerics.h; every statement ends with a
comment giving its source line and column, and each source line starts with its text.

How the bytecode maps (details in the handlers, croqvm/cuda/emit_ops.py):
- registers are function-scoped C locals of their type, zero at start (§3.1, EXECUTION §2);
- structured control flow maps 1:1 (IF/ELSE/END -> if/else, LOOP -> while (true),
  BREAK_IF/CONTINUE_IF -> if (...) break/continue);
- a collective (§7.4) is a rendezvous of its participants: __syncthreads when its lane
  set is the whole block, else an mbarrier per unit instance whose count is the lane
  set's members there; lanes that YIELD or fault leave every such barrier
  (arrive_drop), so nobody waits for them;
- shared state (lane-set masks, live lanes, event counters, ONCE counters, barriers,
  fragment flags, shared buffers, fragments) lives at fixed offsets of the dynamic
  shared memory, zeroed when the block starts, which is when every ALLOC takes effect;
- faults are recorded with a site number (``Site``), from which the host rebuilds the
  engines' fault record; the faulting lane then leaves, as the engines stop.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from .. import __version__
from ..bytecode.opcodes import SPAN, TABLE
from ..core import dtypes
from ..core.errors import CompileError
from ..core.faults import Kind
from ..core.limits import MAX_BLOCK_SIZE
from ..core.source import SpanTable

GENERATOR_VERSION = "1"
ARCHES = ("sm_80", "sm_90a")


class UnsupportedError(CompileError):
    """A program the CUDA generator can not translate (exit status 1), with the reason
    and the source position."""


@dataclass
class Site:
    """What a fault or wait number in generated code stands for. ``operands(args)``
    turns the recorded values into the engines' fault operands."""
    kind: Kind | None           # None: a wait, reported in deadlocks
    ip: int                     # instruction index in the kernel's code, -1: none
    span: int
    operands: Callable = lambda args, refs: ()
    text: str = ""              # waits: what the lane waits at
    coll: int = -1              # waits at a collective: its site in the kernel's code


@dataclass
class BoundBuffer:
    """A kernel buffer slot bound at launch: a pointer and its extents."""
    slot: int
    rank: int
    dtype: dtypes.DType


@dataclass
class KernelInfo:
    """How the host launches one generated kernel."""
    fn: str
    index: int
    cname: str
    block_size: int               # 0: each launch gives it
    smem_bytes: int               # what a launch asks for: the layout, and a pool if any
    static_bytes: int             # the layout alone
    buffers: list                 # BoundBuffer, in parameter order
    scalars: list                 # (kernel register, DType), in parameter order
    stack_bytes: int
    layout: dict = field(default_factory=dict)   # event -> smem byte offset (reports)
    heap: bool = False            # lanes allocate run-time-sized local buffers (cq_malloc)
    tmaps: list = field(default_factory=list)    # emit_tma.TensorMap, parameters after scalars


@dataclass
class CudaModule:
    """Generated CUDA for a module: the text and what the host needs to run it."""
    text: str
    arch: str
    checks: bool
    kernels: dict                 # (function name, kernel index) -> KernelInfo
    sites: list                   # Site by number
    prints: list                  # print record number -> (function name, kernel, format)


def module_hash(module) -> str:
    """A digest of the module (its dataclasses' text, which holds every field)."""
    return hashlib.sha256(repr(module).encode()).hexdigest()


def emit(module, *, arch: str = "sm_80", checks: bool = True) -> CudaModule:
    """CUDA C++ for every kernel of ``module``."""
    from .emit_kernel import KernelEmitter
    if arch not in ARCHES:
        raise UnsupportedError(f"unknown CUDA architecture '{arch}': use "
                               f"{' or '.join(ARCHES)}")
    spans = SpanTable(module.sources, module.spans, module.calls)
    sites: list[Site] = []
    prints: list = []
    parts, kernels, budgets = [], {}, False
    for fn in module.functions:
        for k, kernel in enumerate(fn.kernels):
            ke = KernelEmitter(module, spans, fn, k, kernel, sites, prints, arch=arch,
                               checks=checks)
            parts.append(ke.emit())
            kernels[(fn.name, k)] = ke.info
            budgets = budgets or ke.reg_budget is not None
    header = [
        f"// Generated by croqvm {__version__} (CUDA generator {GENERATOR_VERSION}) from "
        f"{', '.join(name for name, _ in module.sources)} -- do not edit.",
        f"// module sha256 {module_hash(module)}; {arch}; "
        f"device checks {'on' if checks else 'off'}",
        *(["#define CQ_INLINE_RECORDS   // no calls after setmaxnreg (cuda/emit_regs.py)"]
          if budgets else []),
        '#include "cq_kernel.h"', "",
    ] + _cxx_functions(module)
    return CudaModule("\n".join(header + parts) + "\n", arch, checks, kernels, sites, prints)


def _cxx_functions(module) -> list[str]:
    """The C++ device functions kernels call (LANGUAGE.md §6.10.4), as written; the CPU
    runtime's compiler reads their CUDA words as croqvm/cuda/cxx.py does, nvcc reads
    '__co_device__' as '__device__'."""
    if not module.cxx:
        return []
    from .cxx import PRELUDE
    cpu = [line for line in PRELUDE.splitlines() if line.startswith("#define")]
    undo = ["#undef " + line.split()[1] for line in cpu]
    return (["#ifdef CQ_CPU", *cpu, "#else", "#define __co_device__ __device__", "#endif",
             module.cxx_source,
             "#ifdef CQ_CPU", *undo, "#else", "#undef __co_device__", "#endif", ""])


def op_name(ins) -> str:
    return TABLE[ins[0]].name


def span_of(ins) -> int:
    return ins[SPAN]


def max_block(kernel) -> int:
    return kernel.block_size if kernel.block_size > 0 else MAX_BLOCK_SIZE


def c_ident(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)

