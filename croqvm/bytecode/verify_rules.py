"""The dtype classes of the verifier's register rules (STYLE.md house rule 2).

The opcode table (``opcodes.TABLE``) gives every register operand a rule naming one of
these classes (``Op.types``); side tables name them for their registers too (index and
extent registers are ``index``). A trailing ``=`` on a rule ties the register's dtype to
every other ``=`` register of the instruction.

The *computation types* are those an operation computes in after §12.2's promotion:
narrower integers and bool promote to s32, tf32 and fp8 to f32, so no arithmetic, logic or
comparison takes them (lowering converts with CVT first), and every operation's result has
its operation's type (bool for comparisons).
"""
from __future__ import annotations

from croqvm.core.dtypes import DType

ARITH = ("s32", "u32", "s64", "u64", "f16", "bf16", "f32", "f64")
WIDE_INTS = ("s32", "u32", "s64", "u64")
MATH = ("f16", "bf16", "f32", "f64")

CLASSES = {
    "any": ("any dtype", lambda d: True),
    "bool": ("bool", lambda d: d.kind == "bool"),
    "index": ("s32", lambda d: d.name == "s32"),
    "arith": ("an arithmetic type (" + ", ".join(ARITH) + ")", lambda d: d.name in ARITH),
    "logic": ("a 32- or 64-bit integer or bool", lambda d: d.name in WIDE_INTS + ("bool",)),
    "shift": ("a 32- or 64-bit integer", lambda d: d.name in WIDE_INTS),
    "compare": ("an arithmetic type or bool", lambda d: d.name in ARITH + ("bool",)),
    "order": ("s64", lambda d: d.name == "s64"),
    "math": ("a float computation type (" + ", ".join(MATH) + ")", lambda d: d.name in MATH),
    "scale": ("f32", lambda d: d.name == "f32"),
}


def in_class(rule: str, dtype: DType) -> bool:
    return CLASSES[rule.rstrip("=")][1](dtype)
