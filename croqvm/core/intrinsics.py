"""The builtin functions of Croqtile that become one opcode each (LANGUAGE.md §4.4, §4.5):
the math functions, MATH's immediate, and the atomic operations, ATOMIC's immediate.

This is their one definition: the checker takes the names and arities from here, lowering
the codes, the verifier the typing rules, the engines and ``native/cq_numerics.h`` the
codes (a test checks the C enum against ``MATH`` and ``ATOMIC``), the CUDA generator the
spellings, docs/OPCODES.md the list. How each function computes is croqvm.core.numerics'
(docs/NUMERICS.md, "Math functions").
"""
from __future__ import annotations

from .records import dataclass


@dataclass(frozen=True)
class MathFn:
    code: int          # MATH's immediate
    name: str          # source spelling
    arity: int
    meaning: str
    gpu_ulp: int       # CUDA's documented bound, in ulps of f64, for the f64 function used
    predicate: bool = False   # the result is bool, not the operation type


# Every function takes and gives values of one float type F (f16, bf16, f32 or f64;
# §4.4 says which), computes in f64 with the C library's double function (or the f64
# formula given) and rounds once to F. gpu_ulp: the CUDA Math API's bound for the double
# function on the device (CUDA C++ Programming Guide, "Mathematical Functions",
# double precision); 0 where the result is correctly rounded.
_ROWS = (
    ("__sqrt", 1, "sqrt(x)", 0),
    ("__rsqrt", 1, "1 / sqrt(x)", 1),
    ("__exp", 1, "exp(x)", 1),
    ("__exp2f", 1, "exp2(x)", 1),
    ("__expm1", 1, "expm1(x)", 1),
    ("__log", 1, "log(x)", 1),
    ("__log1p", 1, "log1p(x)", 1),
    ("__sin", 1, "sin(x)", 2),
    ("__cos", 1, "cos(x)", 2),
    ("__tan", 1, "tan(x)", 2),
    ("__asin", 1, "asin(x)", 2),
    ("__acos", 1, "acos(x)", 2),
    ("__atan", 1, "atan(x)", 2),
    ("__sinh", 1, "sinh(x)", 2),
    ("__cosh", 1, "cosh(x)", 1),
    ("__tanh", 1, "tanh(x)", 1),
    ("__ceil", 1, "ceil(x)", 0),
    ("__floor", 1, "floor(x)", 0),
    ("__round", 1, "round(x): halfway cases away from zero", 0),
    ("__fabs", 1, "fabs(x)", 0),
    ("__frcp_rn", 1, "1 / x", 0),
    ("__gelu", 1, "x * 0.5 * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
     4),
    ("__sigmoid", 1, "1 / (1 + exp(-x))", 2),
    ("__softplus", 1, "log1p(exp(x))", 2),
    ("__sign", 1, "1 if x > 0, -1 if x < 0, else 0 (NaN and -0 included)", 0),
    ("__isfinite", 1, "x is neither infinite nor NaN", 0),
    ("__pow", 2, "pow(x, y)", 2),
    ("__atan2", 2, "atan2(x, y)", 2),
    ("__fmaf", 3, "x * y + z, rounded once", 0),
)

MATH = tuple(MathFn(code, name, arity, meaning, ulp, predicate=(name == "__isfinite"))
             for code, (name, arity, meaning, ulp) in enumerate(_ROWS))
MATH_BY_NAME = {f.name: f for f in MATH}
# The spelling of a math function in croqvm's C (cq_numerics.h: CQ_MATH_SQRT, ...).
C_NAME = {f.code: "CQ_MATH_" + f.name.lstrip("_").upper() for f in MATH}


@dataclass(frozen=True)
class AtomicOp:
    code: int          # ATOMIC's immediate
    name: str          # source spelling
    meaning: str       # the new element, from the old one ``old`` and the value ``v``
    types: tuple       # element types it takes (atomic-operations.md)
    cuda: str          # the CUDA function
    alu: str = ""      # the ALU opcode computing the new element, "" for exch and cas


ATOMIC = (
    AtomicOp(0, "__atomic_add", "old + v", ("s32", "u32", "u64", "f16", "f32", "f64"),
             "atomicAdd", "ADD"),
    AtomicOp(1, "__atomic_sub", "old - v", ("s32", "u32"), "atomicSub", "SUB"),
    AtomicOp(2, "__atomic_exch", "v", ("s32", "u32", "u64", "f32"), "atomicExch"),
    AtomicOp(3, "__atomic_min", "min(old, v)", ("s32", "u32", "s64", "u64"), "atomicMin",
             "MIN"),
    AtomicOp(4, "__atomic_max", "max(old, v)", ("s32", "u32", "s64", "u64"), "atomicMax",
             "MAX"),
    AtomicOp(5, "__atomic_and", "old & v", ("s32", "u32", "s64", "u64"), "atomicAnd", "AND"),
    AtomicOp(6, "__atomic_or", "old | v", ("s32", "u32", "s64", "u64"), "atomicOr", "OR"),
    AtomicOp(7, "__atomic_xor", "old ^ v", ("s32", "u32", "s64", "u64"), "atomicXor", "XOR"),
    AtomicOp(8, "__atomic_cas", "v if old == cmp, else old", ("s32", "u32", "u64", "u16"),
             "atomicCAS"),
)
ATOMIC_BY_NAME = {a.name: a for a in ATOMIC}
CAS = ATOMIC_BY_NAME["__atomic_cas"].code
EXCH = ATOMIC_BY_NAME["__atomic_exch"].code
