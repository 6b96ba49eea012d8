"""C++ spellings of croqvm's numerics (LANGUAGE.md §12; docs/NUMERICS.md) for generated
CUDA: the C type of a register and of a stored element, literals, conversions, and the
arithmetic of each opcode, all through ``native/cq_numerics.h`` so that generated code
computes the bits the engines compute.

Conventions: ``t`` a ``DType``; an *expression* is C++ text of the value of ``t`` in its
register type; operations that can fault return ``Checked``: statements computing the
value into a temporary plus the condition and fault arguments the caller turns into a
fault of the given ``Kind``. Registers of the narrow float types (f16, bf16, tf32, fp8)
are ``float`` holding a value of the type, as the engines keep them (§12.3).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from ..core import dtypes
from ..core.dtypes import DType
from ..core.faults import Kind

# croqvm type -> C type of a register
REG_C = {"bool": "bool", "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t",
         "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
         "f16": "float", "bf16": "float", "f32": "float", "f64": "double", "tf32": "float",
         "f8_e4m3": "float", "f8_e5m2": "float", "f6_e2m3": "float", "f6_e3m2": "float",
         "f4_e2m1": "float", "f8_ue8m0": "float", "f8_ue4m3": "float",
         **{name: "int8_t" if name[0] == "s" else "uint8_t"
            for name in ("s2", "u2", "s4", "u4", "s6", "u6", "u1")}}
# croqvm type -> C type of an element in memory: the type's own width, holding its bit
# pattern (f16, bf16, fp8, the MX types), so a shared tile takes the bytes it takes on a
# GPU. The engines keep bf16 and fp8 elements as float32 values; the host converts such
# buffers to and from their patterns around a launch (DEVICE_NP).
STORE_C = {**REG_C, "bool": "uint8_t", "f16": "uint16_t", "bf16": "uint16_t",
           "f8_e4m3": "uint8_t", "f8_e5m2": "uint8_t",
           **{name: "uint8_t" for name in dtypes.BIT_STORED}}
_C_BYTES = {"bool": 1, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4,
            "uint32_t": 4, "float": 4, "int64_t": 8, "uint64_t": 8, "double": 8}
# element types whose device storage differs from the engines' (float32 values): the
# numpy type of the device's pattern (ml_dtypes)
DEVICE_NP = {name: dtypes.ml_dtype(dtypes.BY_NAME[name])
             for name in ("bf16", "f8_e4m3", "f8_e5m2")}
# float type -> cq_numerics.h format
FMT = {"f64": "CQ_FMT_F64", "f32": "CQ_FMT_F32", "f16": "CQ_FMT_F16", "bf16": "CQ_FMT_BF16",
       "tf32": "CQ_FMT_TF32", "f8_e4m3": "CQ_FMT_E4M3", "f8_e5m2": "CQ_FMT_E5M2",
       "f6_e2m3": "CQ_FMT_F6_E2M3", "f6_e3m2": "CQ_FMT_F6_E3M2", "f4_e2m1": "CQ_FMT_F4_E2M1",
       "f8_ue8m0": "CQ_FMT_UE8M0", "f8_ue4m3": "CQ_FMT_UE4M3"}
FP8 = ("f8_e4m3", "f8_e5m2")
# integer computation types -> cq_numerics.h suffix
INT_OPS = {"s32": "s32", "u32": "u32", "s64": "s64", "u64": "u64"}


def reg_c(t: DType) -> str:
    return REG_C[t.name]


def store_c(t: DType) -> str:
    return STORE_C[t.name]


def elem_bytes(t: DType) -> int:
    """Bytes of an element of ``t`` in device memory (STORE_C)."""
    return _C_BYTES[STORE_C[t.name]]


@dataclass
class Checked:
    """A value that may fault: ``setup`` statements, then ``value``; when ``bad`` (a C
    condition) holds, the fault ``kind`` with ``args`` (C expressions)."""
    setup: list = field(default_factory=list)
    value: str = ""
    bad: str = ""
    kind: Kind | None = None
    args: tuple = ()

    @property
    def faults(self) -> bool:
        return bool(self.bad)


def _bits_f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def literal(value, t: DType) -> str:
    """A C++ literal of ``value`` in ``t``'s register type (exact)."""
    if t.kind == "bool":
        return "true" if value else "false"
    if t.is_int:
        v = int(value) % (1 << t.bits)
        if t.signed and v >= 1 << (t.bits - 1):
            v -= 1 << t.bits
        if -(1 << 31) < v < (1 << 31):
            return f"({reg_c(t)}){v}"
        return f"({reg_c(t)})0x{v % (1 << 64):x}ull"
    x = float(value)
    if math.isfinite(x):
        text = x.hex()
    else:
        text = f"cq_f64_from_bits(0x{_bits_f64(x):x}ull)"
    return text if t.name == "f64" else f"(float){text}"


def convert(x: str, src: DType, dst: DType, tmp: str) -> Checked:
    """``x`` (of ``src``) as a value of ``dst`` (§12.3.3): integers wrap, floats
    truncate into integers (NaN and out of range fault), conversions into floats round
    once, numbers become bool as x != 0. ``tmp`` names a temporary the caller
    declares as ``uint64_t`` when the conversion faults."""
    if src is dst:
        return Checked(value=x)
    if dst.kind == "bool":
        return Checked(value=f"(({x}) != 0)")
    if dst.is_int:
        if not src.is_float and dst.bits < 8:      # a sub-byte integer: wrap to its width
            return Checked(value=f"({reg_c(dst)})cq_wrap_bits((int64_t)({x}), {dst.bits}, "
                                 f"{int(dst.signed)})")
        if not src.is_float:
            return Checked(value=f"({reg_c(dst)})({x})")
        status = f"cq_f64_to_int((double)({x}), {dst.bits}, {int(dst.signed)}, &{tmp})"
        return Checked([], f"({reg_c(dst)}){tmp}", status, Kind.FLOAT_TO_INT,
                       (f"cq_f64_bits((double)({x}))", str(dst.code)))
    if dst.name == "f64":
        return Checked(value=f"(double)({x})")
    fmt = FMT[dst.name]
    if src.is_int and src.bits == 64:
        fn = "cq_s64_to_fmt" if src.signed else "cq_u64_to_fmt"
        cast = "int64_t" if src.signed else "uint64_t"
        return Checked(value=f"(float){fn}(({cast})({x}), {fmt})")
    if src.is_float and src.name != "f64" and _subset(src, dst):
        return Checked(value=f"({x})")      # every value of src is one of dst
    return Checked(value=f"(float)cq_round_fmt((double)({x}), {fmt})")


# float types whose values all belong to a wider one (no rounding on the way)
_WIDER = {"f16": {"f32"}, "bf16": {"f32"}, "tf32": {"f32"}, "f8_e4m3": {"f16", "bf16", "f32"},
          "f8_e5m2": {"f16", "f32"}}


def _subset(src: DType, dst: DType) -> bool:
    return dst.name in _WIDER.get(src.name, ())


# --------------------------------------------------------------------------- operations

def _float_op(t: DType, expr: str) -> str:
    """A float result computed in double, rounded once to ``t`` (f64: as is)."""
    if t.name == "f64":
        return expr
    if t.name == "f32":
        return f"(float)({expr})"
    return f"(float)cq_round_fmt({expr}, {FMT[t.name]})"


def _d(x: str) -> str:
    return f"(double)({x})"


# operator spellings for integers and native float types
_C_OPS = {"ADD": "+", "SUB": "-", "MUL": "*", "DIV": "/", "AND": "&", "OR": "|", "XOR": "^",
          "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_BOOL_OPS = {"AND": "&&", "OR": "||", "XOR": "!="}
COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE")


def binary(name: str, x: str, y: str, t: DType, ty: DType, tmp: str) -> Checked:
    """``x <name> y`` with both operands already of the arithmetic type ``t`` (for shifts
    ``y`` is the count, of type ``ty``); the result is of ``t`` (bool for comparisons)."""
    if name in COMPARE:
        return Checked(value=f"(({x}) {_C_OPS[name]} ({y}))")
    if t.kind == "bool":
        return Checked(value=f"(({x}) {_BOOL_OPS[name]} ({y}))")
    if t.is_float:
        return Checked(value=_float_arith(name, x, y, t))
    s = INT_OPS[t.name]
    if name in ("ADD", "SUB", "MUL"):
        return Checked(value=f"cq_{name.lower()}_{s}({x}, {y})")
    if name in ("MIN", "MAX"):
        return Checked(value=f"cq_{name.lower()}_{s}({x}, {y})")
    if name in ("AND", "OR", "XOR"):
        return Checked(value=f"({reg_c(t)})(({x}) {_C_OPS[name]} ({y}))")
    if name in ("DIV", "MOD"):
        return Checked([f"{reg_c(t)} {tmp}_q;"], f"{tmp}_q",
                       f"cq_{name.lower()}_{s}({x}, {y}, &{tmp}_q)", Kind.DIVISION_BY_ZERO, ())
    # SHL, SHR: the count in its own type, as a signed 64-bit value (a u64 count beyond
    # 2^63 - 1 turns negative: out of range either way)
    fn = "shl" if name == "SHL" else "shr"
    return Checked([f"{reg_c(t)} {tmp}_q;"], f"{tmp}_q",
                   f"cq_{fn}_{s}({x}, (int64_t)({y}), &{tmp}_q)", Kind.SHIFT_COUNT,
                   (f"(long long)({y})", str(t.code)))


def _float_arith(name: str, x: str, y: str, t: DType) -> str:
    if name in ("MIN", "MAX"):
        return _float_op(t, f"cq_{name.lower()}_f({_d(x)}, {_d(y)})")
    if name == "MOD":
        return _float_op(t, f"fmod({_d(x)}, {_d(y)})")
    if t.name in ("f32", "f64"):      # IEEE float and double operations round once
        return f"(({x}) {_C_OPS[name]} ({y}))"
    return _float_op(t, f"{_d(x)} {_C_OPS[name]} {_d(y)}")


def unary(name: str, x: str, t: DType) -> str:
    """``<name> x`` with ``x`` of ``t`` (already promoted for integers)."""
    if name == "NOT":
        return f"(!(({x}) != 0))"
    if t.is_float:
        return f"(-({x}))"
    if name == "NEG":
        return f"cq_neg_{INT_OPS[t.name]}({x})"
    return f"({reg_c(t)})(~({x}))"


def arith_type(name: str, tx: DType, ty: DType) -> DType:
    """The type ``name`` computes in for operands of ``tx`` and ``ty`` (croqvm.core.numerics
    ``binary_op``): the promoted left operand for shifts, bool for logic on bools, else
    §12.2's arithmetic type."""
    if name in ("SHL", "SHR"):
        return dtypes.promote(tx, tx)
    if tx.kind == "bool" and ty.kind == "bool" and name in ("AND", "OR", "XOR"):
        return dtypes.BOOL
    return dtypes.promote(tx, ty)


def unary_type(name: str, tx: DType) -> DType:
    if name == "NOT":
        return dtypes.BOOL
    return tx if tx.is_float else dtypes.promote(tx, tx)


def load_value(ptr: str, t: DType) -> str:
    """The value of the element ``*ptr`` of type ``t`` (``ptr`` typed as its storage)."""
    if t.name == "f16":
        return f"(float)cq_f16_value(*({ptr}))"
    if t.name == "bf16":
        return f"(float)cq_bf16_value(*({ptr}))"
    if t.name in FP8:
        return f"(float)cq_fp8_value(*({ptr}), {FMT[t.name]})"
    if t.name in dtypes.BIT_STORED:
        return f"(float)cq_mx_value(*({ptr}), {FMT[t.name]})"
    if t.kind == "bool":
        return f"(*({ptr}) != 0)"
    return f"*({ptr})"


def store_value(x: str, t: DType) -> str:
    """The storage encoding of value ``x`` of type ``t``."""
    if t.name == "f16":
        return f"cq_f16_bits((double)({x}))"
    if t.name == "bf16":
        return f"cq_bf16_bits((double)({x}))"
    if t.name in FP8:
        return f"cq_fp8_bits((double)({x}), {FMT[t.name]})"
    if t.name in dtypes.BIT_STORED:
        return f"(uint8_t)cq_mx_bits((double)({x}), {FMT[t.name]})"
    if t.kind == "bool":
        return f"(uint8_t)(({x}) != 0)"
    return x


def value_bits(x: str, t: DType) -> str:
    """A register value as the 64 bits a printed record or a fault argument carries:
    integers extended to 64 bits, floats as the bits of their double."""
    if t.is_float:
        return f"cq_f64_bits((double)({x}))"
    return f"(unsigned long long)(long long)({x})" if t.signed or t.kind == "bool" else \
        f"(unsigned long long)({x})"
