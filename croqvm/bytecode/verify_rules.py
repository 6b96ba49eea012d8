"""Per-opcode typing rules of the verifier, as data (STYLE.md house rule 2).

The opcode table (``opcodes.TABLE``) says which *tables* an instruction's operands index;
these tables add what it says about their *values*, keyed by opcode name:

- ``REGISTER_TYPES``: one rule per register operand, in operand order. A rule names a
  dtype class (``CLASSES``); a trailing ``=`` ties the register's dtype to every other
  ``=`` register of the instruction (LANGUAGE.md §12.2: operands are converted to the
  arithmetic type before an operation, so the operation itself never mixes dtypes).
- ``IMMEDIATES``: one rule per immediate operand (``verify.check_immediate`` knows them).
- ``ENTRIES``: what the side-table entry an operand names must be (``verify_code`` knows
  the rules): CONST a constant of its register's dtype, MMA ops 2-D views (§11.3),
  ASSERT_FMT a print format without the newline, as a fault message is one line (§15),
  SWAP two futures of one type (§9.6.1).
- ``RETURNS``: the ``Function.ret_kind`` a return opcode belongs to.

Every opcode with a register or immediate operand has an entry; a test keeps it so.
"""
from __future__ import annotations

from croqvm.dtypes import DType

from .module import RetKind

CLASSES = {
    "any": ("any dtype", lambda d: True),
    "bool": ("bool", lambda d: d.kind == "bool"),
    "int": ("an integer dtype", lambda d: d.is_int),
    "num": ("an integer or float dtype", lambda d: d.kind != "bool"),
    "bits": ("an integer dtype or bool", lambda d: not d.is_float),
}


def in_class(rule: str, dtype: DType) -> bool:
    return CLASSES[rule.rstrip("=")][1](dtype)


_ARITH = ("num=", "num=", "num=")
_BITWISE = ("bits=", "bits=", "bits=")
_SHIFT = ("int=", "int=", "int")         # the count keeps its own integer type
_COMPARE = ("bool", "any=", "any=")      # §12.3.4: compared in the common type, result bool

REGISTER_TYPES = {
    "CONST": ("any",), "MOV": ("any=", "any="), "CVT": ("any", "any"),
    "LANE": ("int",), "BLOCKIDX": ("int",),
    "ADD": _ARITH, "SUB": _ARITH, "MUL": _ARITH, "DIV": _ARITH, "MOD": _ARITH,
    "MIN": _ARITH, "MAX": _ARITH,
    "AND": _BITWISE, "OR": _BITWISE, "XOR": _BITWISE, "SHL": _SHIFT, "SHR": _SHIFT,
    "EQ": _COMPARE, "NE": _COMPARE, "LT": _COMPARE, "LE": _COMPARE, "GT": _COMPARE,
    "GE": _COMPARE,
    "NEG": ("num=", "num="), "NOT": ("bool", "bool"), "BNOT": ("int=", "int="),
    "SELECT": ("any=", "bool", "any=", "any="),
    "IF": ("bool",), "BREAK_IF": ("bool",), "CONTINUE_IF": ("bool",),
    "ONCE": ("bool",),
    "FILL": ("any",), "LOAD": ("any",), "STORE": ("any",), "UPDATE": ("any",),
    "DIMOF": ("int",), "FUT_DIM": ("int",),
    "TRIGGER": ("int",), "WAIT_EVENT": ("int",),
    "MMA_FILL": ("any",),
    "ASSERT": ("bool",), "ASSERT_FMT": ("bool",),
    "RET_VAL": ("any",),
}

IMMEDIATES = {
    "BLOCKIDX": ("grid_dim",),
    "ONCE": ("once_site", "unit"),
    "UPDATE": ("alu_op",),
    "DIMOF": ("buffer_dim",),
    "FUT_DIM": ("future_dim",),
    "MMA_EXEC": ("mma_layout",),
    "MMA_STORE": ("flag",),
}

ENTRIES = {"CONST": "typed_const", "MMA_LOAD": "matrix_view",
           "MMA_STORE": "matrix_view", "ASSERT_FMT": "message", "SWAP": "same_future"}

RETURNS = {"RET_VAL": RetKind.SCALAR, "RET_BUF": RetKind.BUFFER}
