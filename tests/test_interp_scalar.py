"""LANGUAGE.md §12 numerics, one table row per case, with hand-computed expectations."""
import math
import zlib
from fractions import Fraction

import numpy as np
import pytest

from asm import Asm, P, function, run
from croqvm.core import dtypes
from croqvm.core.errors import BytecodeError
from croqvm.core.faults import LaneFault
from croqvm.reports.messages import format_lanes, format_value, message
from croqvm.core.numerics import binary, convert, round_bits, unary

# every test runs on each engine; IEEE overflow and division by zero are the defined
# results here, not accidents
pytestmark = [pytest.mark.usefixtures("engine"),
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]

T = dtypes.BY_NAME
S32_MIN, S64_MIN = -2 ** 31, -2 ** 63


def arr(v, t):
    return np.array([v], T[t].np)


def op(name, x, tx, y, ty):
    vals, t = binary(name, arr(x, tx), arr(y, ty), T[tx], T[ty], np.ones(1, bool))
    return vals[0].item(), t.name


@pytest.mark.parametrize("name, x, tx, y, ty, want, wtype", [
    ("ADD", 2 ** 31 - 1, "s32", 1, "s32", S32_MIN, "s32"),            # wraps
    ("SUB", 0, "u32", 1, "u32", 2 ** 32 - 1, "u32"),
    ("MUL", 65536, "s32", 65536, "s32", 0, "s32"),
    ("ADD", 200, "u8", 100, "u8", 300, "s32"),                        # u8 promotes to s32
    ("LT", -1, "s32", 1, "u32", False, "bool"),                       # -1 becomes 2^32-1
    ("DIV", 7, "s32", 2, "s32", 3, "s32"),
    ("MOD", 7, "s32", 3, "s32", 1, "s32"),
    ("DIV", -7, "s32", 2, "s32", -3, "s32"),                          # truncates
    ("DIV", 7, "s32", -2, "s32", -3, "s32"),
    ("MOD", -7, "s32", 3, "s32", -1, "s32"),                          # dividend's sign
    ("MOD", 7, "s32", -3, "s32", 1, "s32"),
    ("DIV", S32_MIN, "s32", -1, "s32", S32_MIN, "s32"),               # MIN / -1 wraps
    ("MOD", S32_MIN, "s32", -1, "s32", 0, "s32"),
    ("DIV", S64_MIN, "s64", -1, "s64", S64_MIN, "s64"),
    ("DIV", 2 ** 32 - 1, "u32", 2, "u32", 2 ** 31 - 1, "u32"),
    ("SHL", 1, "s32", 31, "s32", S32_MIN, "s32"),
    ("SHL", 1, "s8", 20, "s32", 1 << 20, "s32"),                      # s8 promotes first
    ("SHR", -8, "s32", 1, "s32", -4, "s32"),                          # arithmetic
    ("SHR", 2 ** 31, "u32", 31, "s32", 1, "u32"),                     # logical
    ("AND", 12, "s32", 10, "s32", 8, "s32"),
    ("XOR", 12, "s32", 10, "s32", 6, "s32"),
    ("MIN", -3, "s32", 2, "u32", 2, "u32"),                           # -3 is huge as u32
    ("MAX", math.nan, "f32", 1.0, "f32", 1.0, "f32"),                 # NaN ignored
    ("ADD", 2048.0, "f16", 1.0, "f16", 2048.0, "f16"),                # tie to even
    ("ADD", 2048.0, "f16", 3.0, "f16", 2052.0, "f16"),
    ("ADD", 65504.0, "f16", 16.0, "f16", math.inf, "f16"),            # overflow
    ("ADD", 256.0, "bf16", 1.0, "bf16", 256.0, "bf16"),
    ("ADD", 1.0, "f16", 1.0, "bf16", 2.0, "f32"),                     # mixed: f32
    ("ADD", 1.5, "f16", 2, "s32", 3.5, "f16"),                        # float with int
    ("DIV", 1.0, "f32", 0.0, "f32", math.inf, "f32"),
    ("MUL", 0.1, "f32", 3.0, "f32", float(np.float32(np.float32(0.1) * np.float32(3))), "f32"),
    ("EQ", math.nan, "f32", math.nan, "f32", False, "bool"),
    ("NE", math.nan, "f32", math.nan, "f32", True, "bool"),
    ("LT", math.nan, "f32", 1.0, "f32", False, "bool"),
    ("GE", 1.0, "f16", 1.0, "f64", True, "bool"),
    ("AND", True, "bool", False, "bool", False, "bool"),
    ("OR", True, "bool", False, "bool", True, "bool"),
])
def test_binary(name, x, tx, y, ty, want, wtype):
    got, t = op(name, x, tx, y, ty)
    assert t == wtype
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want


@pytest.mark.parametrize("name, x, tx, y, ty, text", [
    ("DIV", 1, "s32", 0, "s32", "integer division by zero."),
    ("MOD", 1, "u64", 0, "u64", "integer division by zero."),
    ("SHL", 1, "s32", 40, "s32", "shift count 40 out of range for 's32'."),
    ("SHR", 1, "s8", 32, "s32", "shift count 32 out of range for 's32'."),
    ("SHL", 1, "s64", -1, "s32", "shift count -1 out of range for 's64'."),
])
def test_binary_faults(name, x, tx, y, ty, text):
    with pytest.raises(LaneFault) as e:
        op(name, x, tx, y, ty)
    assert message(e.value.kind, e.value.operands, None) == text


def test_faults_only_for_active_lanes_lowest_first():
    x = np.array([1, 2, 3, 4], np.int32)
    y = np.array([0, 1, 0, 0], np.int32)
    act = np.array([False, True, False, True])
    with pytest.raises(LaneFault) as e:
        binary("DIV", x, y, T["s32"], T["s32"], act)
    assert e.value.index == 3
    vals, _ = binary("DIV", x, y, T["s32"], T["s32"], np.array([False, True, False, False]))
    assert vals[1] == 2


@pytest.mark.parametrize("name, x, tx, want, wtype", [
    ("NEG", S32_MIN, "s32", S32_MIN, "s32"),
    ("NEG", 1, "u32", 2 ** 32 - 1, "u32"),
    ("NEG", 0.0, "f32", -0.0, "f32"),
    ("BNOT", 0, "u8", -1, "s32"),
    ("NOT", True, "bool", False, "bool"),
])
def test_unary(name, x, tx, want, wtype):
    vals, t = unary(name, arr(x, tx), T[tx], np.ones(1, bool))
    assert (vals[0].item(), t.name) == (want, wtype)
    assert math.copysign(1, vals[0]) == math.copysign(1, want)


def bits16(x, fmt):
    """Bit pattern of a value rounded to f16 (numpy) or bf16 (upper half of f32)."""
    v = convert(np.array([x], np.float64), T["f64"], T[fmt], np.ones(1, bool))
    return int(v.view(np.uint16)[0]) if fmt == "f16" else int(v.view(np.uint32)[0]) >> 16


@pytest.mark.parametrize("x, fmt, want", [
    (1 + 2 ** -11, "f16", 0x3C00),        # halfway: to even
    (1 + 3 * 2 ** -11, "f16", 0x3C02),
    (65519.0, "f16", 0x7BFF),
    (65520.0, "f16", 0x7C00),             # rounds past the top: inf
    (2 ** -25, "f16", 0x0000),            # half the smallest subnormal: to even (0)
    (3 * 2 ** -25, "f16", 0x0002),
    (-0.0, "f16", 0x8000),
    (1 + 2 ** -8, "bf16", 0x3F80),
    (1 + 3 * 2 ** -8, "bf16", 0x3F82),
    (1 + 2 ** -8 + 2 ** -20, "bf16", 0x3F81),   # just above halfway
    (3.3895313892515355e38, "bf16", 0x7F7F),  # largest finite bf16
    ((2 - 2 ** -8) * 2.0 ** 127, "bf16", 0x7F80),   # halfway to 2^128: inf
    (2 ** -133, "bf16", 0x0001),          # smallest subnormal
    (-1.0, "bf16", 0xBF80),
])
def test_rounding_bits(x, fmt, want):
    assert bits16(x, fmt) == want


@pytest.mark.parametrize("x, fmt, want", [
    (1 + 2 ** -11, "tf32", 1.0),
    (1 + 3 * 2 ** -11, "tf32", 1 + 2 ** -9),
    (464.0, "f8_e4m3", 448.0),            # halfway between 448 and 480: even (448)
    (465.0, "f8_e4m3", math.nan),         # beyond 448 after rounding: NaN
    (math.inf, "f8_e4m3", math.nan),      # no infinity in E4M3
    (2 ** -9, "f8_e4m3", 2 ** -9),        # smallest subnormal
    (2 ** -10, "f8_e4m3", 0.0),
    (3 * 2 ** -10, "f8_e4m3", 2 ** -8),
    (57344.0, "f8_e5m2", 57344.0),
    (61440.0, "f8_e5m2", math.inf),       # halfway to 65536, odd mantissa: up, inf
    (0.3, "f8_e5m2", 0.3125),
])
def test_narrow_formats(x, fmt, want):
    got = convert(np.array([x]), T["f64"], T[fmt], np.ones(1, bool))[0]
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_f16_routine_agrees_with_numpy():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 1000, 5000), rng.normal(0, 1e-5, 5000),
                        [65504, 65519.99, 65520, -0.0, np.inf, -np.inf]])
    assert np.array_equal(round_bits(x, "f16"), x.astype(np.float16).astype(np.float64))


@pytest.mark.parametrize("x, src, dst, want", [
    (300, "s32", "s8", 44),
    (-1, "s32", "u16", 65535),
    (-1.5, "f32", "s32", -1),
    (2.9, "f64", "s32", 2),
    (-0.5, "f32", "u32", 0),
    (2147483647.9, "f64", "s32", 2147483647),
    (2 ** 53 + 1, "s64", "f32", 2.0 ** 53),
    (0.5, "f32", "bool", True),
    (math.nan, "f32", "bool", True),
    (True, "bool", "f32", 1.0),
    (0.1, "f64", "f16", float(np.float16(0.1))),
])
def test_conversions(x, src, dst, want):
    assert convert(arr(x, src), T[src], T[dst], np.ones(1, bool))[0].item() == want


@pytest.mark.parametrize("x, src, dst, text", [
    (3e10, "f32", "s32", "value 3e+10 out of range for 's32'."),
    (math.nan, "f64", "s64", "value nan out of range for 's64'."),
    (-1.0, "f32", "u32", "value -1 out of range for 'u32'."),
    (2.0 ** 31, "f64", "s32", "value 2.14748e+09 out of range for 's32'."),
    (2.0 ** 63, "f64", "s64", "value 9.22337e+18 out of range for 's64'."),
])
def test_conversion_faults(x, src, dst, text):
    with pytest.raises(LaneFault) as e:
        convert(arr(x, src), T[src], T[dst], np.ones(1, bool))
    assert message(e.value.kind, e.value.operands, None) == text


@pytest.mark.parametrize("v, t, text", [
    (42.0, "f32", "42"), (1.5, "f32", "1.5"), (1 / 3, "f64", "0.333333"),
    (1e20, "f64", "1e+20"), (math.inf, "f32", "inf"), (-math.inf, "f32", "-inf"),
    (math.nan, "f32", "nan"), (-math.nan, "f64", "nan"), (-0.0, "f32", "-0"),
    (123456789.0, "f64", "1.23457e+08"), (0.0001, "f64", "0.0001"), (1e-5, "f64", "1e-05"),
    (100000.0, "f64", "100000"), (1e6, "f64", "1e+06"),
    (np.float16(0.1), "f16", "0.0999756"),
    (True, "bool", "true"), (False, "bool", "false"), (-5, "s32", "-5"),
    (2 ** 64 - 1, "u64", "18446744073709551615"),
])
def test_print_format(v, t, text):
    assert format_value(np.array([v], T[t].np)[0], T[t]) == text


def test_lane_ranges():
    assert format_lanes([16, 17, 18, 3, 5, 6, 7]) == "3, 5-7, 16-18"


# ---------------------------------------------------------------- against Python integers

def c_wrap(v, t):
    """Two's complement wraparound of a Python int to dtype ``t``."""
    bits, lo = T[t].bits, (-(1 << (T[t].bits - 1)) if T[t].signed else 0)
    return (v - lo) % (1 << bits) + lo


def c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


PY_OPS = {
    "ADD": lambda x, y: x + y, "SUB": lambda x, y: x - y, "MUL": lambda x, y: x * y,
    "DIV": c_div, "MOD": lambda x, y: x - c_div(x, y) * y,
    "MIN": min, "MAX": max, "AND": lambda x, y: x & y, "OR": lambda x, y: x | y,
    "XOR": lambda x, y: x ^ y,
}


@pytest.mark.parametrize("t", ["s32", "u32", "s64", "u64"])
@pytest.mark.parametrize("name", sorted(PY_OPS))
def test_integer_ops_match_c_semantics_on_random_values(t, name):
    rng = np.random.default_rng(zlib.crc32(f"{t} {name}".encode()))
    info = np.iinfo(T[t].np)
    edges = [info.min, info.max, 0, 1, -1 if info.min else 2, 7, -7 if info.min else 9]
    xs = [int(v) for v in rng.integers(info.min, info.max, 200, dtype=T[t].np, endpoint=True)]
    ys = [int(v) for v in rng.integers(info.min, info.max, 200, dtype=T[t].np, endpoint=True)]
    pairs = [(a, b) for a in edges for b in edges] + list(zip(xs, ys))
    pairs = [(a, b) for a, b in pairs if not (name in ("DIV", "MOD") and b == 0)]
    x = np.array([a for a, _ in pairs], T[t].np)
    y = np.array([b for _, b in pairs], T[t].np)
    got, _ = binary(name, x, y, T[t], T[t], np.ones(len(pairs), bool))
    want = [c_wrap(PY_OPS[name](a, b), t) for a, b in pairs]
    assert [int(v) for v in got] == want


# ---------------------------------------------------------------- rounding, exactly

FORMATS = {   # mantissa bits, exponent bias: the formats' definitions (§12.1)
    "bf16": (7, 127, "inf"), "tf32": (10, 127, "inf"),
    "f8_e4m3": (3, 7, "nan"), "f8_e5m2": (2, 15, "inf"),
}
LARGEST = {"bf16": (2 - Fraction(1, 2 ** 7)) * 2 ** 127, "tf32": (2 - Fraction(1, 2 ** 10)) * 2 ** 127,
           "f8_e4m3": Fraction(448), "f8_e5m2": Fraction(57344)}


def exact_round(x: float, fmt: str) -> float:
    """Round to nearest even with exact rational arithmetic."""
    man, bias, beyond = FORMATS[fmt]
    if x == 0 or math.isnan(x):
        return x
    f = Fraction(abs(x))
    e = max(math.frexp(abs(x))[1] - 1, 1 - bias)
    q = Fraction(2) ** (e - man)
    n, rest = divmod(f, q)
    if rest > q / 2 or (rest == q / 2 and n % 2 == 1):
        n += 1
    r = n * q
    if r > LARGEST[fmt]:
        return math.copysign(math.inf if beyond == "inf" else math.nan, x)
    return math.copysign(float(r), x)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_narrow_rounding_matches_exact_arithmetic(fmt):
    rng = np.random.default_rng(zlib.crc32(fmt.encode()))
    scale = {"bf16": 60, "tf32": 60, "f8_e4m3": 10, "f8_e5m2": 17}[fmt]
    x = rng.normal(size=3000) * np.exp2(rng.integers(-scale, scale, 3000))
    got = convert(x, T["f64"], T[fmt], np.ones(len(x), bool))
    want = [exact_round(float(v), fmt) for v in x]
    assert all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want))


def test_f16_arithmetic_matches_numpy_float16():
    """numpy computes float16 + - * / in float32 and rounds once: correctly rounded."""
    rng = np.random.default_rng(16)
    x = (rng.normal(size=2000) * 100).astype(np.float16)
    y = (rng.normal(size=2000) * 100).astype(np.float16)
    act = np.ones(len(x), bool)
    for name, fn in [("ADD", np.add), ("SUB", np.subtract), ("MUL", np.multiply),
                     ("DIV", np.divide)]:
        got, t = binary(name, x, y, T["f16"], T["f16"], act)
        assert t.name == "f16" and np.array_equal(got, fn(x, y), equal_nan=True)


@pytest.mark.parametrize("line, regs, want", [
    ("ADD r2 r0 r1", "u8 u8 u8", "44"),          # 300 in s32, then wrapped into u8
    ("ADD r2 r0 r1", "u8 u8 f16", "300"),
    ("LT r2 r1 r0", "u8 u8 s32", "1"),           # a bool result into an integer register
    ("NEG r2 r0", "u8 u8 s8", "56"),             # -200 in s32, then wrapped into s8
    ("BNOT r2 r1", "u8 u8 u16", "65435"),        # ~100 in s32 is -101
])
def test_an_instruction_converts_its_result_to_the_destination_type(line, regs, want,
                                                                    engine):
    """§12.3: R[a] := the result in the arithmetic type, converted to R[a]'s type. The
    verifier now rejects these modules (operations compute in s32, u32, s64, u64 or a
    float type, on operands of one type); the native engine runs verified modules only,
    so it refuses them."""
    a = Asm()
    host = a.code(f"CONST r0 k0\nCONST r1 k1\n{line}\nPRINT p0", regs=regs,
                  consts=[("u8", 200), ("u8", 100)], prints=[P("r2")])
    mod = a.module(function("f", host))
    if engine == "native":
        with pytest.raises(BytecodeError):
            run(mod)
        return
    assert run(mod)[1] == want + "\n"
