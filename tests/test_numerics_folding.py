"""Constant folding computes what execution computes (LANGUAGE.md §12, docs/NUMERICS.md).

Each example is one operation on values of given types, written twice in one program:
from literals, a constant expression the checker folds, and from parameters, which only
the engine computes. The folded value, the run-time value of the literal expression and
that of the parameter expression must be the same bits (any NaN matching any NaN), or
else folding must refuse and both runs fault with the same message. Values lean to the
edges: extremes, ±0, ±inf, NaN, rounding ties, counts around the width.
"""
from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import croqvm
import engines
from croqvm.core import dtypes
from croqvm.core.errors import KernelFault
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang.frontend import front_end

pytestmark = pytest.mark.usefixtures("engine")

INTS = [t for t in dtypes.BY_CODE.values() if t.is_int]
FLOATS = [t for t in dtypes.BY_CODE.values() if t.is_float]
NUMBERS = INTS + FLOATS

# (mantissa bits, least normal exponent, greatest finite value) of each float type, from
# LANGUAGE.md §12.1, for choosing values exactly representable in it
FORMAT = {
    "f64": (52, -1022, 1.7976931348623157e308), "f32": (23, -126, 3.4028234663852886e38),
    "tf32": (10, -126, 3.4011621342146535e38), "bf16": (7, -126, 3.3895313892515355e38),
    "f16": (10, -14, 65504.0), "f8_e5m2": (2, -14, 57344.0), "f8_e4m3": (3, -6, 448.0),
}


def int_values(t):
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
    edges = sorted({lo, lo + 1, -1 if t.signed else 2, 0, 1, 2, 31, 32, hi - 1, hi})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def float_values(t):
    """Values of float type ``t``: significand and exponent drawn separately, so ties,
    subnormals and the largest values all come up."""
    man, emin, top = FORMAT[t.name]
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, top, -top, 2.0 ** (emin - man),
               1.0, -1.0, 0.5, 3.0]
    if t.name == "f8_e4m3":
        special = [x for x in special if not math.isinf(x)]     # E4M3 has no infinity
    emax = math.frexp(top)[1] - 1

    @st.composite
    def finite(draw):
        e = draw(st.integers(emin - man, emax))
        m = draw(st.integers(0, (1 << man) - 1))
        exp = max(e, emin)
        v = math.ldexp((1 << man) + m if e >= emin else m, exp - man)
        v = min(v, top)
        return -v if draw(st.booleans()) else v
    return st.one_of(st.sampled_from(special), finite())


def mx_values(t):
    """Every value of an OCP MX type (a few dozen at most): its decoded patterns."""
    from croqvm.core.numerics import DECODE
    return st.sampled_from(sorted({float(v) for v in DECODE[t.name]}, key=repr))


def values(t):
    if t.kind == "bool":
        return st.booleans()
    if t.name in dtypes.BIT_STORED:
        return mx_values(t)
    return int_values(t) if t.is_int else float_values(t)


def literal(v, t) -> str:
    """Source text of a constant expression of type ``t`` and value ``v``."""
    if t.kind == "bool":
        return "true" if v else "false"
    if t.is_int:
        return f"__to<{t.name}>({v % (1 << 64)}ull)"
    if math.isnan(v):
        text = "0.0 / 0.0"
    elif math.isinf(v):
        text = "inf" if v > 0 else "-inf"
    else:
        text = format(Decimal(v), "f")       # exact: every f64 is a finite decimal
        text = text if "." in text else text + ".0"
        text = "-0.0" if v == 0 and math.copysign(1, v) < 0 else text
    return f"__to<{t.name}>({text})"


# operator -> the operand types it takes (§4.2): "num" numbers, "int" integers,
# "bool" bool, "eq" numbers or two bools
BINARY = {"+": "num", "-": "num", "*": "num", "/": "num", "%": "int", "&": "int",
          "|": "int", "^": "int", "<<": "int", ">>": "int", "==": "eq", "!=": "eq",
          "<": "num", "<=": "num", ">": "num", ">=": "num", "&&": "bool", "||": "bool",
          "__min": "num", "__max": "num", "cdiv": "int"}
UNARY = {"-": "num", "~": "int", "!": "bool"}
KINDS = {"num": NUMBERS, "int": INTS, "bool": [dtypes.BOOL], "eq": NUMBERS}


@st.composite
def binary_cases(draw):
    op = draw(st.sampled_from(sorted(BINARY)))
    kind = BINARY[op]
    if kind == "eq" and draw(st.booleans()):
        kind = "bool"
    tx, ty = draw(st.sampled_from(KINDS[kind])), draw(st.sampled_from(KINDS[kind]))
    form = (lambda a, b: f"{op}({a}, {b})") if op.isalnum() or op.startswith("_") else \
        (lambda a, b: f"({a}) {op} ({b})")
    return form, [(draw(values(tx)), tx), (draw(values(ty)), ty)]


SHIFT_COUNTS = (-1, 0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 2 ** 32 + 1, 2 ** 32 + 31, 2 ** 63)


@st.composite
def shift_cases(draw):
    """Shifts again, with counts around every width, also in wider count types."""
    op = draw(st.sampled_from(["<<", ">>"]))
    tx, ty = draw(st.sampled_from(INTS)), draw(st.sampled_from(INTS))
    y = draw(st.sampled_from([v for v in SHIFT_COUNTS if _holds(v, ty)]))
    return (lambda a, b: f"({a}) {op} ({b})"), [(draw(values(tx)), tx), (y, ty)]


def _holds(v, t) -> bool:
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
    return lo <= v <= hi


@st.composite
def unary_cases(draw):
    op = draw(st.sampled_from(sorted(UNARY)))
    t = draw(st.sampled_from(KINDS[UNARY[op]]))
    return (lambda a: f"{op}({a})"), [(draw(values(t)), t)]


@st.composite
def conversion_cases(draw):
    src = draw(st.sampled_from(NUMBERS + [dtypes.BOOL]))
    dst = draw(st.sampled_from(NUMBERS + [dtypes.BOOL]))
    return (lambda a: f"__to<{dst.name}>({a})"), [(draw(values(src)), src)]


def outcome(thunk):
    """("value", v) or ("fault", the runtime error's message)."""
    try:
        return "value", thunk()
    except KernelFault as e:
        return "fault", str(e).splitlines()[0].split("runtime error: ", 1)[1]


def same(a, b) -> bool:
    """Equal bits for numbers (both exactly f64 values), any NaN equal to any NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def check_case(form, operands):
    lit = form(*(literal(v, t) for v, t in operands))
    names = ["x", "y"][:len(operands)]
    par = form(*names)
    params = ", ".join(f"{t.name} {n}" for n, (_, t) in zip(names, operands))
    src = (f"__co__ auto lit() {{ return {lit}; }}\n"
           f"__co__ auto par({params}) {{ return {par}; }}\n")
    program, diags, _ = front_end(src, "t.co")
    assert not [d for d in diags if d.is_error], (src, [d.message for d in diags])
    ret = program.functions[0].body.stmts[0]
    assert isinstance(ret, ast.Return)
    folded = const_value(ret.value)
    module = croqvm.compile(src, "t.co")
    from_literals = outcome(lambda: engines.run(module, "lit"))
    from_params = outcome(lambda: engines.run(module, "par", *(v for v, _ in operands)))
    assert from_literals[0] == from_params[0] and same(from_literals[1], from_params[1]), \
        (src, from_literals, from_params)
    if folded is None:
        assert from_literals[0] == "fault", (src, from_literals)
    else:
        assert from_literals[0] == "value" and same(folded, from_literals[1]), \
            (src, folded, from_literals)


CASES = st.one_of(binary_cases(), shift_cases(), unary_cases(), conversion_cases())
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=600, deadline=None, suppress_health_check=QUIET)
@given(CASES)
def test_folding_agrees_with_execution(case):
    check_case(*case)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None, suppress_health_check=QUIET)
@given(CASES)
def test_folding_agrees_with_execution_long(case):
    check_case(*case)


@pytest.mark.parametrize("text", [
    "__to<bf16>(257.0f)", "__to<tf32>(2049.0f)",
    "__to<bf16>(1157425104234217473ll)",        # 2^60 + 2^52 + 1: rounded to odd first
    "(-2147483647 - 1) / -1", "(-2147483647 - 1) % -1",
    "1 / 0", "7 % 0", "1 << 32", "__to<s8>(1) << 31", "__to<u64>(1) << 64", "1 >> -1",
    "1 << __to<u64>(4294967297ull)",
    "__to<s32>(2147483648.0)", "__to<u8>(-1.0)", "__to<s32>(0.0 / 0.0)",
    "__to<f8_e4m3>(464.0)", "__to<f8_e4m3>(inf)", "__to<f16>(65520.0)",
    "__min(0.0f, -0.0f)", "__min(-0.0f, 0.0f)", "__max(0.0 / 0.0, -0.0)",
])
def test_edges_agree(text):
    """The edges of §12.3 spelled out, one program each (the property test finds them by
    chance only)."""
    check_case(lambda: text, [])
