"""The element-type table (LANGUAGE.md §3.1, §12): the one place a dtype is defined.

Every stage reads this table: the checker for promotions, the bytecode for register and
buffer types (by ``code``), the engines for storage and rounding, the CUDA generator for
C++ spellings. ``storage`` is the numpy dtype that holds values of the type; types numpy
lacks (bf16, tf32, fp8) are stored as float32 and rounded on every store (§12.3).
"""
from __future__ import annotations

import numpy as np

from .records import dataclass


@dataclass(frozen=True)
class DType:
    code: int          # number used in bytecode
    name: str          # croqvm spelling: s32, f16, bool, ...
    kind: str          # "int", "float" or "bool"
    bits: int
    signed: bool
    storage: str       # numpy dtype name that stores it
    numpy_param: str   # numpy dtype a parameter array must have (§14.3.1)
    cuda: str          # C++ spelling in generated CUDA

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.storage)


_TABLE = [
    DType(0, "bool", "bool", 8, False, "bool", "bool", "bool"),
    DType(1, "s8", "int", 8, True, "int8", "int8", "int8_t"),
    DType(2, "s16", "int", 16, True, "int16", "int16", "int16_t"),
    DType(3, "s32", "int", 32, True, "int32", "int32", "int32_t"),
    DType(4, "s64", "int", 64, True, "int64", "int64", "int64_t"),
    DType(5, "u8", "int", 8, False, "uint8", "uint8", "uint8_t"),
    DType(6, "u16", "int", 16, False, "uint16", "uint16", "uint16_t"),
    DType(7, "u32", "int", 32, False, "uint32", "uint32", "uint32_t"),
    DType(8, "u64", "int", 64, False, "uint64", "uint64", "uint64_t"),
    DType(9, "f16", "float", 16, True, "float16", "float16", "__half"),
    DType(10, "bf16", "float", 16, True, "float32", "float32", "__nv_bfloat16"),
    DType(11, "f32", "float", 32, True, "float32", "float32", "float"),
    DType(12, "f64", "float", 64, True, "float64", "float64", "double"),
    DType(13, "tf32", "float", 32, True, "float32", "float32", "float"),
    DType(14, "f8_e4m3", "float", 8, True, "float32", "float32", "__nv_fp8_e4m3"),
    DType(15, "f8_e5m2", "float", 8, True, "float32", "float32", "__nv_fp8_e5m2"),
    # the OCP MX formats, stored as their bit pattern, one byte each (croqvm.core.numerics,
    # "narrow formats stored as bits"); parameters are float32 values or ml_dtypes arrays
    # (ML_DTYPES; f8_ue4m3 has none)
    DType(16, "f6_e2m3", "float", 6, True, "uint8", "float32", "__nv_fp6_e2m3"),
    DType(17, "f6_e3m2", "float", 6, True, "uint8", "float32", "__nv_fp6_e3m2"),
    DType(18, "f4_e2m1", "float", 4, True, "uint8", "float32", "__nv_fp4_e2m1"),
    DType(19, "f8_ue8m0", "float", 8, False, "uint8", "float32", "__nv_fp8_e8m0"),
    DType(20, "f8_ue4m3", "float", 8, False, "uint8", "float32", "__nv_fp8_e4m3"),
    # the sub-byte integers (cute's int2b_t ... uint1b_t): a byte each, holding a value of
    # the type; conversions into them wrap to their width (croqvm.core.numerics)
    DType(21, "s2", "int", 2, True, "int8", "int8", "cute::int2b_t"),
    DType(22, "u2", "int", 2, False, "uint8", "uint8", "cute::uint2b_t"),
    DType(23, "s4", "int", 4, True, "int8", "int8", "cute::int4b_t"),
    DType(24, "u4", "int", 4, False, "uint8", "uint8", "cute::uint4b_t"),
    DType(25, "s6", "int", 6, True, "int8", "int8", "cute::int6b_t"),
    DType(26, "u6", "int", 6, False, "uint8", "uint8", "cute::uint6b_t"),
    DType(27, "u1", "int", 1, False, "uint8", "uint8", "cute::uint1b_t"),
]

BY_CODE: dict[int, DType] = {d.code: d for d in _TABLE}
BY_NAME: dict[str, DType] = {d.name: d for d in _TABLE}

# Source spellings that name a table entry (LANGUAGE.md §3.1).
ALIASES: dict[str, str] = {
    "int": "s32", "half": "f16", "bfp16": "bf16", "float": "f32", "double": "f64",
    "f8": "f8_e4m3", "bin1": "bool",      # cute's bin1_t is bool
}

BOOL, S8, S16, S32, S64 = (BY_NAME[n] for n in ("bool", "s8", "s16", "s32", "s64"))
U8, U16, U32, U64 = (BY_NAME[n] for n in ("u8", "u16", "u32", "u64"))
F16, BF16, F32, F64, TF32 = (BY_NAME[n] for n in ("f16", "bf16", "f32", "f64", "tf32"))
F8_E4M3, F8_E5M2 = BY_NAME["f8_e4m3"], BY_NAME["f8_e5m2"]
# float types whose storage is their bit pattern (uint8), not a numpy float holding the value
BIT_STORED = frozenset(d.name for d in _TABLE if d.is_float and d.storage == "uint8")


# MMA operand element types and the accumulator type each gives without a '.T' suffix
# (LANGUAGE.md §11.3, D11). s32 operands are the CPU engines' own (co-mock's tests): no
# tensor core multiplies them.
MMA_ACCUMULATOR: dict[str, str] = {
    "f16": "f16", "bf16": "f32", "tf32": "f32", "f8_e4m3": "f32", "f8_e5m2": "f32",
    "f32": "f32", "f64": "f64", "s8": "s32", "u8": "s32", "s32": "s32",
}


# the ml_dtypes array types of the narrow float types, which parameters also accept (§14.3.1)
ML_DTYPES = {"bf16": "bfloat16", "f8_e4m3": "float8_e4m3fn", "f8_e5m2": "float8_e5m2",
             "f6_e2m3": "float6_e2m3fn", "f6_e3m2": "float6_e3m2fn",
             "f4_e2m1": "float4_e2m1fn", "f8_ue8m0": "float8_e8m0fnu"}


def ml_dtype(t: DType) -> np.dtype | None:
    """The ml_dtypes numpy type of ``t``, or None."""
    name = ML_DTYPES.get(t.name)
    if name is None:
        return None
    import ml_dtypes    # here: a run that never meets such an array starts without it
    return np.dtype(getattr(ml_dtypes, name))


def width_bytes(t: DType) -> int:
    """The bytes an element of ``t`` takes on a GPU (its bits, at least one byte), which
    a swizzle's byte offsets count (LANGUAGE.md §9.7): 2 for bf16 and 1 for fp8, whose
    engine storage is a float32."""
    return max(1, t.bits // 8)


def param_dtype(t: DType) -> np.dtype:
    """The numpy dtype a buffer parameter of element type ``t`` is given as (§14.3.1)."""
    return ml_dtype(t) if t.name in BIT_STORED and ml_dtype(t) is not None else \
        np.dtype(t.numpy_param)


# C++ scalar types a foreign cast ``__to<"type">`` may name, and the element type each is
# (LANGUAGE.md §4.4): the CUDA spellings of the table, and C's own names
FOREIGN: dict[str, str] = {
    **{d.cuda: d.name for d in _TABLE if d.name not in ("tf32", "f8_ue4m3")},
    "int": "s32", "unsigned": "u32", "unsigned int": "u32", "short": "s16",
    "unsigned short": "u16", "long long": "s64", "unsigned long long": "u64",
    "signed char": "s8", "unsigned char": "u8", "half": "f16", "__fp16": "f16",
}


def lookup(spelling: str) -> DType | None:
    """The dtype a source spelling names (aliases included), or None."""
    return BY_NAME.get(ALIASES.get(spelling, spelling))


_INT_RANK = {"s32": 0, "u32": 1, "s64": 2, "u64": 3}


def promote(a: DType, b: DType) -> DType:
    """Arithmetic type of a binary operation (LANGUAGE.md §12.2)."""
    if a.is_float or b.is_float:
        names = {a.name, b.name}
        if "f64" in names:
            return F64
        if names & ({"f32", "tf32", "f8_e4m3", "f8_e5m2"} | BIT_STORED):
            return F32
        fl = [d for d in (a, b) if d.is_float]
        if len(fl) == 1:
            return fl[0]
        if a is b:
            return a  # f16+f16, bf16+bf16
        return F32  # f16 with bf16
    a, b = _int_promote(a), _int_promote(b)
    return a if _INT_RANK[a.name] >= _INT_RANK[b.name] else b


def _int_promote(d: DType) -> DType:
    """Integers (and bool) narrower than 32 bits promote to s32."""
    if d.kind == "bool" or d.bits < 32:
        return S32
    return d
