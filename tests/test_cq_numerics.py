"""native/cq_numerics.h gives the bits croqvm.core.numerics gives (docs/NUMERICS.md).

The header is compiled once per test session into a small cffi module (C11, -O2,
-ffp-contract=off, never -ffast-math) with loops over arrays, and compared with the Python
module on: every f16 and bf16 pattern, the halfway points between neighbours, fixed-seed
samples of f64 rounded to every float format, integer conversions at the edges, every
integer operation on edge values, MMA steps on random and adversarial values, MIN/MAX of
signed zeros and NaN, and %g formatting. NaNs compare equal whatever their sign and
payload (docs/NUMERICS.md "NaN"). Larger samples run behind --runslow.
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from croqvm.core import dtypes, numerics
from croqvm.core.faults import Kind, LaneFault

NATIVE = Path(__file__).resolve().parent.parent / "native"
FLAGS = ["-std=c11", "-O2", "-ffp-contract=off"]

CDEF = """
int cq_format_float(char *buf, size_t size, double x);
double cq_round_fmt(double x, int fmt);
void round_many(const double *x, double *y, int n, int fmt);
void f16_bits_many(const double *x, uint16_t *y, int n);
void f16_value_many(const uint16_t *x, double *y, int n);
void bf16_bits_many(const double *x, uint16_t *y, int n);
void bf16_value_many(const uint16_t *x, double *y, int n);
void s64_to_fmt_many(const int64_t *x, double *y, int n, int fmt);
void u64_to_fmt_many(const uint64_t *x, double *y, int n, int fmt);
void f64_to_int_many(const double *x, uint64_t *y, int *status, int n, int bits, int sgn);
void fma_many(const double *c, const double *a, const double *b, double *y, int n,
              int fmt, int exact);
void minmax_many(const double *x, const double *y, double *lo, double *hi, int n);
int int_op(int type, int op, uint64_t x, uint64_t y, uint64_t *out);
void math_many(int fn, const double *x, const double *y, const double *z, double *out, int n,
               int fmt);
int math_code(const char *name);
double mx_value(unsigned bits, int fmt);
unsigned mx_bits(double x, int fmt);
"""

# the wrappers: loops over arrays, and one entry point for the integer operations
SOURCE = r"""
#include "cq_numerics.h"
void round_many(const double *x, double *y, int n, int fmt)
{ for (int i = 0; i < n; i++) y[i] = cq_round_fmt(x[i], fmt); }
void f16_bits_many(const double *x, uint16_t *y, int n)
{ for (int i = 0; i < n; i++) y[i] = cq_f16_bits(x[i]); }
void f16_value_many(const uint16_t *x, double *y, int n)
{ for (int i = 0; i < n; i++) y[i] = cq_f16_value(x[i]); }
void bf16_bits_many(const double *x, uint16_t *y, int n)
{ for (int i = 0; i < n; i++) y[i] = cq_bf16_bits(x[i]); }
void bf16_value_many(const uint16_t *x, double *y, int n)
{ for (int i = 0; i < n; i++) y[i] = cq_bf16_value(x[i]); }
void s64_to_fmt_many(const int64_t *x, double *y, int n, int fmt)
{ for (int i = 0; i < n; i++) y[i] = cq_s64_to_fmt(x[i], fmt); }
void u64_to_fmt_many(const uint64_t *x, double *y, int n, int fmt)
{ for (int i = 0; i < n; i++) y[i] = cq_u64_to_fmt(x[i], fmt); }
void f64_to_int_many(const double *x, uint64_t *y, int *status, int n, int bits, int sgn)
{ for (int i = 0; i < n; i++) status[i] = cq_f64_to_int(x[i], bits, sgn, &y[i]); }
void fma_many(const double *c, const double *a, const double *b, double *y, int n,
              int fmt, int exact)
{ for (int i = 0; i < n; i++) y[i] = cq_fma_to(c[i], a[i], b[i], fmt, exact); }
void minmax_many(const double *x, const double *y, double *lo, double *hi, int n)
{ for (int i = 0; i < n; i++) { lo[i] = cq_min_f(x[i], y[i]); hi[i] = cq_max_f(x[i], y[i]); } }

void math_many(int fn, const double *x, const double *y, const double *z, double *out, int n,
               int fmt)
{ for (int i = 0; i < n; i++) out[i] = cq_math(fn, x[i], y[i], z[i], fmt); }
double mx_value(unsigned bits, int fmt) { return cq_mx_value(bits, fmt); }
unsigned mx_bits(double x, int fmt) { return cq_mx_bits(x, fmt); }
#define MATH_CODE(N) if (!strcmp(name, #N)) return CQ_MATH_##N;
int math_code(const char *name)
{
    MATH_CODE(SQRT) MATH_CODE(RSQRT) MATH_CODE(EXP) MATH_CODE(EXP2F) MATH_CODE(EXPM1)
    MATH_CODE(LOG) MATH_CODE(LOG1P) MATH_CODE(SIN) MATH_CODE(COS) MATH_CODE(TAN)
    MATH_CODE(ASIN) MATH_CODE(ACOS) MATH_CODE(ATAN) MATH_CODE(SINH) MATH_CODE(COSH)
    MATH_CODE(TANH) MATH_CODE(CEIL) MATH_CODE(FLOOR) MATH_CODE(ROUND) MATH_CODE(FABS)
    MATH_CODE(FRCP_RN) MATH_CODE(GELU) MATH_CODE(SIGMOID) MATH_CODE(SOFTPLUS)
    MATH_CODE(SIGN) MATH_CODE(ISFINITE) MATH_CODE(POW) MATH_CODE(ATAN2) MATH_CODE(FMAF)
    return strcmp(name, "COUNT") ? -1 : CQ_NUM_MATH;
}

#define BINARY(T, CT, NAME) \
    case NAME##_##T: { CT r = cq_##NAME##_##T((CT)x, (CT)y); *out = (uint64_t)r; return 0; }
#define FAULTING(T, CT, NAME) \
    case NAME##_##T: { CT r; int s = cq_##NAME##_##T((CT)x, (CT)y, &r); *out = (uint64_t)r; return s; }
#define SHIFT(T, CT, NAME) \
    case NAME##_##T: { CT r; int s = cq_##NAME##_##T((CT)x, (int64_t)y, &r); *out = (uint64_t)r; return s; }
#define OPS(T, CT) \
    BINARY(T, CT, add) BINARY(T, CT, sub) BINARY(T, CT, mul) BINARY(T, CT, min) \
    BINARY(T, CT, max) FAULTING(T, CT, div) FAULTING(T, CT, mod) SHIFT(T, CT, shl) \
    SHIFT(T, CT, shr) case neg_##T: *out = (uint64_t)cq_neg_##T((CT)x); return 0;
#define CODES(T) add_##T, sub_##T, mul_##T, min_##T, max_##T, div_##T, mod_##T, shl_##T, \
    shr_##T, neg_##T,
enum { CODES(s32) CODES(u32) CODES(s64) CODES(u64) };
int int_op(int type, int op, uint64_t x, uint64_t y, uint64_t *out)
{
    switch (type * 10 + op) { OPS(s32, int32_t) OPS(u32, uint32_t) OPS(s64, int64_t)
                              OPS(u64, uint64_t) }
    return -1;
}
"""

INT_TYPES = ["s32", "u32", "s64", "u64"]          # the order of CODES in SOURCE
INT_OPS = ["ADD", "SUB", "MUL", "MIN", "MAX", "DIV", "MOD", "SHL", "SHR", "NEG"]
FORMATS = {"f64": 0, "f32": 1, "f16": 2, "bf16": 3, "tf32": 4, "f8_e4m3": 5, "f8_e5m2": 6}
STATUS = {Kind.DIVISION_BY_ZERO: 1, Kind.SHIFT_COUNT: 2, Kind.FLOAT_TO_INT: 3}
T = dtypes.BY_NAME


@pytest.fixture(scope="session")
def cq(tmp_path_factory):
    """The header's functions, built once per session."""
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("_cq_numerics_test", SOURCE, include_dirs=[str(NATIVE)],
                   extra_compile_args=FLAGS)
    path = ffi.compile(tmpdir=str(tmp_path_factory.mktemp("cq_numerics")))
    spec = importlib.util.spec_from_file_location("_cq_numerics_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ptr(cq, ctype, arr):
    return cq.ffi.cast(ctype + " *", arr.ctypes.data)


def same_bits(a, b):
    """Equal f64 bits, any NaN matching any NaN."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nan = np.isnan(a)
    ok = (nan == np.isnan(b)) & (nan | (a.view(np.uint64) == b.view(np.uint64)))
    bad = np.flatnonzero(~ok)
    return None if not bad.size else (int(bad[0]), float(a[bad[0]]), float(b[bad[0]]))


def c_round(cq, x, fmt):
    x = np.ascontiguousarray(x, np.float64)
    y = np.empty_like(x)
    cq.lib.round_many(ptr(cq, "double", x), ptr(cq, "double", y), len(x), FORMATS[fmt])
    return y


def py_round(x, fmt):
    with np.errstate(all="ignore"):
        return numerics.round_to(np.asarray(x, np.float64), T[fmt]).astype(np.float64)


@pytest.mark.parametrize("flags, compiler, lang", [
    (["-std=c11", "-pedantic"], "gcc", "c"), (["-std=c++17"], "g++", "c++")])
def test_the_header_compiles_cleanly_as_c11_and_cpp(tmp_path, flags, compiler, lang):
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    src = tmp_path / "use.c"
    src.write_text('#include "cq_numerics.h"\nint main(void) { return cq_round_fmt(1.0, 3) != 1.0; }\n')
    done = subprocess.run([compiler, "-x", lang, *flags, "-Wall", "-Wextra", "-Werror",
                           "-ffp-contract=off", "-I", str(NATIVE), "-fsyntax-only", str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- 16-bit patterns

def test_every_f16_pattern(cq):
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float64)          # numpy: the IEEE reference
    got = np.empty(1 << 16)
    cq.lib.f16_value_many(ptr(cq, "uint16_t", bits), ptr(cq, "double", got), len(bits))
    assert same_bits(got, want) is None
    back = np.empty(1 << 16, np.uint16)
    cq.lib.f16_bits_many(ptr(cq, "double", want), ptr(cq, "uint16_t", back), len(bits))
    finite = ~np.isnan(want)
    assert np.array_equal(back[finite], bits[finite])
    assert np.all((back[~finite] & 0x7FFF) == 0x7E00)
    assert same_bits(c_round(cq, want, "f16"), want) is None


def test_every_bf16_pattern(cq):
    bits = np.arange(1 << 16, dtype=np.uint32)
    with np.errstate(invalid="ignore"):     # widening the signalling NaN patterns raises
        want = (bits << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    got = np.empty(1 << 16)
    b16 = bits.astype(np.uint16)
    cq.lib.bf16_value_many(ptr(cq, "uint16_t", b16), ptr(cq, "double", got), len(bits))
    assert same_bits(got, want) is None
    back = np.empty(1 << 16, np.uint16)
    cq.lib.bf16_bits_many(ptr(cq, "double", want), ptr(cq, "uint16_t", back), len(bits))
    finite = ~np.isnan(want)
    assert np.array_equal(back[finite], b16[finite])
    assert same_bits(c_round(cq, want, "bf16"), want) is None
    assert same_bits(py_round(want, "bf16"), want) is None


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_halfway_points_between_every_pair_of_neighbours(cq, fmt):
    """Ties round to even; a hair either side of each tie rounds away from it."""
    bits = np.arange(0, 0x7C00 if fmt == "f16" else 0x7F80, dtype=np.uint32)
    if fmt == "f16":
        v = bits.astype(np.uint16).view(np.float16).astype(np.float64)
    else:
        v = (bits << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    mid = (v[:-1] + v[1:]) / 2                                 # exact in f64
    for x in (mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf), -mid):
        assert same_bits(c_round(cq, x, fmt), py_round(x, fmt)) is None


# --------------------------------------------------------------------------- rounding samples

def samples(n, seed):
    """f64 values over the whole exponent range, with ties and near-ties of every narrow
    format, overflow boundaries and specials."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal(n) * np.exp2(rng.integers(-160, 140, n).astype(np.float64))
    raw = rng.integers(0, 1 << 64, n, dtype=np.uint64, endpoint=False).view(np.float64)
    ties = []
    for man, lo in ((23, -149), (10, -24), (7, -133), (3, -9), (2, -16)):
        k = rng.integers(1, 1 << (man + 1), n // 8).astype(np.float64) + 0.5
        e = rng.integers(lo, 20, n // 8).astype(np.float64)
        tie = np.ldexp(k, (e - man).astype(np.int64))
        ties += [tie, np.nextafter(tie, np.inf), np.nextafter(tie, -np.inf)]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0,
                        448.0, 464.0, 464.0001, 480.0, 57344.0, 61440.0, 3.4e38, 3.5e38,
                        3.3895313892515355e38, 3.3961775292304767e38, 2.0 ** -149,
                        2.0 ** -150, 2.0 ** -24, 2.0 ** -25, 5e-324, 1.7976931348623157e308])
    return np.concatenate([wide, raw, *ties, special, -special])


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_f64_rounded_to_every_format(cq, fmt):
    x = samples(100_000, 1)
    assert same_bits(c_round(cq, x, fmt), py_round(x, fmt)) is None


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_f64_rounded_to_every_format_long(cq, fmt):
    for seed in range(2, 22):
        x = samples(1_000_000, seed)
        assert same_bits(c_round(cq, x, fmt), py_round(x, fmt)) is None


# --------------------------------------------------------------------------- conversions

def int_edges(bits):
    out = set()
    for k in range(0, 65):
        for d in (-1, 0, 1):
            out.update({(1 << k) + d, -(1 << k) + d})
    out.update({(1 << 60) + (1 << 52) + 1, (1 << 63) - 1, -(1 << 63), (1 << 64) - 1,
                (1 << 53) + 1, (1 << 54) + 3, (1 << 63) - 1024, (1 << 63) - 513})
    rng = np.random.default_rng(bits)
    out.update(int(v) for v in rng.integers(-(1 << 63), (1 << 63) - 1, 2000, dtype=np.int64))
    return sorted(out)


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_64_bit_integers_to_every_format(cq, fmt, signed):
    src = dtypes.S64 if signed else dtypes.U64
    lo, hi = numerics.int_range(src)
    vals = np.array([v for v in int_edges(64) if lo <= v <= hi], src.np)
    got = np.empty(len(vals))
    fn = cq.lib.s64_to_fmt_many if signed else cq.lib.u64_to_fmt_many
    fn(ptr(cq, "int64_t" if signed else "uint64_t", vals), ptr(cq, "double", got), len(vals),
       FORMATS[fmt])
    with np.errstate(all="ignore"):         # as the engines call it: overflow gives inf
        want = numerics.convert(vals, src, T[fmt], np.ones(len(vals), bool)).astype(np.float64)
    assert same_bits(got, want) is None


@pytest.mark.parametrize("dst", [t for t in dtypes.BY_CODE.values() if t.is_int],
                         ids=lambda t: t.name)
def test_float_to_integer_at_the_edges(cq, dst):
    lo, hi = numerics.int_range(dst)
    base = [lo, hi, hi + 1, lo - 1, 0, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63]
    xs = [math.nan, math.inf, -math.inf, -0.0, 0.5, -0.5, 0.99999, -0.99999, 1e300, 5e-324]
    for b in base:
        f = float(b)
        xs += [f, f + 0.5, f - 0.5, math.nextafter(f, math.inf), math.nextafter(f, -math.inf),
               -f]
    x = np.array(xs)
    out = np.empty(len(x), np.uint64)
    status = np.empty(len(x), np.intc)
    cq.lib.f64_to_int_many(ptr(cq, "double", x), ptr(cq, "uint64_t", out),
                           ptr(cq, "int", status), len(x), dst.bits, int(dst.signed))
    for v, s, r in zip(xs, status, out):
        try:
            want = numerics.fold_convert(v, dtypes.F64, dst)
        except LaneFault:
            assert s == 3, v
            continue
        assert s == 0 and int(r) == want % (1 << 64), (v, int(r), want)


# --------------------------------------------------------------------------- integers

def edge_ints(t):
    lo, hi = numerics.int_range(t)
    vals = {lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 1 << 31,
            (1 << 31) - 1, 1 << 32, -1, -2, -7, -31, -32, -64, 0x5A5A5A5A, -0x12345678}
    return sorted(v for v in vals if lo <= v <= hi)


@pytest.mark.parametrize("tname", INT_TYPES)
def test_every_integer_operation_on_edge_values(cq, tname):
    t = T[tname]
    out = cq.ffi.new("uint64_t *")
    vals = edge_ints(t)
    for (k, op), x, y in itertools.product(enumerate(INT_OPS), vals, vals):
        s = cq.lib.int_op(INT_TYPES.index(tname), k, x % (1 << 64), y % (1 << 64), out)
        try:
            if op == "NEG":
                want, _ = numerics.fold_unary(op, x, t)
            else:
                want, _ = numerics.fold_binary(op, x, t, y, t)
        except LaneFault as f:
            assert s == STATUS[f.kind], (op, x, y, s, f.kind)
            continue
        assert s == 0 and out[0] == want % (1 << 64), (op, x, y, out[0], want)


@pytest.mark.parametrize("tname", ["s32", "u32", "s64", "u64"])
def test_shift_counts_in_a_wider_count_type(cq, tname):
    """The count is its value (a u64 count is passed as the int64_t of its bits)."""
    out = cq.ffi.new("uint64_t *")
    k = INT_OPS.index("SHL")
    for n in (2 ** 32 + 1, 2 ** 63, 2 ** 64 - 1, -2 ** 63):
        assert cq.lib.int_op(INT_TYPES.index(tname), k, 1, n % (1 << 64), out) == 2


# --------------------------------------------------------------------------- MIN, MAX

def test_min_max_sign_of_zero_and_nan(cq):
    vals = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1.0, -1.0, 5e-324]
    x, y = (np.array(v) for v in zip(*itertools.product(vals, vals)))
    lo, hi = np.empty(len(x)), np.empty(len(x))
    cq.lib.minmax_many(ptr(cq, "double", x), ptr(cq, "double", y), ptr(cq, "double", lo),
                       ptr(cq, "double", hi), len(x))
    act = np.ones(len(x), bool)
    want_lo, _ = numerics.binary("MIN", x, y, dtypes.F64, dtypes.F64, act)
    want_hi, _ = numerics.binary("MAX", x, y, dtypes.F64, dtypes.F64, act)
    assert same_bits(lo, want_lo) is None and same_bits(hi, want_hi) is None
    # the rule itself: the first operand when equal
    for i, (a, b) in enumerate(zip(x, y)):
        if a == b == 0 and math.copysign(1, a) != math.copysign(1, b):
            assert math.copysign(1, lo[i]) == math.copysign(1, hi[i]) == math.copysign(1, a)


# --------------------------------------------------------------------------- MMA steps

def mma_operands(n, seed, fmt, exact):
    """(c, a, b): c of the accumulator format; a and b f32 values when ``exact`` (every
    element type but f64), else any f64 values, up to the Dekker split's limit."""
    rng = np.random.default_rng(seed)

    def values(scale, fmt):
        v = rng.standard_normal(n) * np.exp2(rng.integers(-scale, scale, n).astype(np.float64))
        return py_round(v, fmt)
    a, b = values(60, "f32" if exact else "f64"), values(60, "f32" if exact else "f64")
    if not exact:
        a *= np.exp2(rng.integers(-400, 400, n).astype(np.float64))
        a[:50] = [1e300, -1e300, 2.0 ** 995, 2.0 ** 996, 5e-324] * 10
    c = values(120, fmt)
    # adversarial: c cancels a*b exactly or up to its last bits; products at every scale;
    # sums a hair off a tie of the format, the hair below f64 precision, so that rounding
    # the f64 sum to nearest first would round twice (c odd in the format, a*b just
    # under half its ulp)
    k = n // 5
    with np.errstate(over="ignore"):        # products beyond f64 give inf: cases too
        c[:k] = -(a[:k] * b[:k])
        c[k:2 * k] = np.nextafter(-(a[k:2 * k] * b[k:2 * k]), 0)
    a[2 * k:3 * k] = 1.0 + np.exp2(-12.0)
    b[2 * k:3 * k] = np.exp2(rng.integers(-30, 30, k).astype(np.float64))
    man = {"f64": 52, "f32": 23, "tf32": 10, "f16": 10, "bf16": 7, "f8_e4m3": 3,
           "f8_e5m2": 2}[fmt]
    e = rng.integers(-2, 3, n - 3 * k).astype(np.float64)
    sign = rng.choice([-1.0, 1.0], n - 3 * k)
    hair = 2.0 ** (-23 if exact else -52)
    c[3 * k:] = sign * np.exp2(e) * (1 + 2.0 ** -man)
    a[3 * k:] = 1 + hair
    b[3 * k:] = sign * rng.choice([-1.0, 1.0], n - 3 * k) * np.exp2(e - man - 1) * (1 - hair)
    return py_round(c, fmt), a, b


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("exact", [True, False])
def test_mma_steps(cq, fmt, exact):
    c, a, b = mma_operands(20_000, 7, fmt, exact)
    y = np.empty(len(c))
    cq.lib.fma_many(ptr(cq, "double", c), ptr(cq, "double", a), ptr(cq, "double", b),
                    ptr(cq, "double", y), len(c), FORMATS[fmt], int(exact))
    with np.errstate(all="ignore"):
        want = numerics.fma_to(c, a, b, T[fmt], exact)
    assert same_bits(y, want) is None


# --------------------------------------------------------------------------- print

def test_percent_g_on_100000_values(cq):
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.integers(0, 1 << 64, 60_000, dtype=np.uint64).view(np.float64),
        rng.standard_normal(30_000) * np.exp2(rng.integers(-30, 30, 30_000).astype(np.float64)),
        np.round(rng.standard_normal(9_970) * 1e6) / 1e3,
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 0.5, 2.5, 1e5, 999999.5, 9999995.0,
         1e-5, 0.0001, 123456.5, 1234567.0, 5e-324, 1e300, 0.1, 1 / 3, 2 / 3, 100000.0,
         999999.0, 1000000.0, 0.00001, 0.000099999995, 1.5, -1.5, 42.0, 3e10, -3e10]])
    buf = cq.ffi.new("char[64]")
    for v in x.tolist():
        cq.lib.cq_format_float(buf, 64, v)
        assert cq.ffi.string(buf).decode() == numerics.format_float(v), v


def test_math_enum_is_the_intrinsics_table(cq):
    """CQ_MATH_* in cq_numerics.h numbers the functions as croqvm/core/intrinsics.py does."""
    from croqvm.core.intrinsics import C_NAME, MATH
    for fn in MATH:
        name = C_NAME[fn.code][len("CQ_MATH_"):]
        assert cq.lib.math_code(name.encode()) == fn.code, name
    assert cq.lib.math_code(b"COUNT") == len(MATH)


def _math_samples(rng, n):
    """Ordinary values, edges (zeros, infinities, NaN, tiny and huge) and halfway cases
    of the narrow formats."""
    edges = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 1e-300, -1e-300,
             1e300, 88.7, 710.0, -745.0, 2.5, -2.5, 1.5, 3.0, 0.1]
    x = np.concatenate([edges, rng.normal(0, 3, n), rng.uniform(-1, 1, n) * 1e-3,
                        np.ldexp(rng.uniform(0.5, 1, n), rng.integers(-60, 60, n))])
    return x


@pytest.mark.parametrize("fmt", ["f64", "f32", "f16", "bf16"])
def test_every_math_function_gives_the_python_bits(cq, fmt):
    """cq_math and numerics.math_op agree bit for bit on the values of each float type
    (the arguments first rounded to it, as registers hold them)."""
    from croqvm.core.intrinsics import MATH
    rng = np.random.default_rng(7)
    t = T[fmt]
    args = [py_round(_math_samples(rng, 300), fmt) for _ in range(3)]
    for fn in MATH:
        c_out = np.empty_like(args[0])
        cq.lib.math_many(fn.code, *(ptr(cq, "double", a) for a in args),
                         ptr(cq, "double", c_out), len(c_out), FORMATS[fmt])
        with np.errstate(all="ignore"):
            py = numerics.math_op(fn.name, t)([a.astype(t.np) for a in args[:fn.arity]],
                                              None).astype(np.float64)
        assert same_bits(c_out, py) is None, (fn.name, same_bits(c_out, py))


MX = {"f6_e2m3": 7, "f6_e3m2": 8, "f4_e2m1": 9, "f8_ue8m0": 10, "f8_ue4m3": 11}


@pytest.mark.parametrize("fmt", list(MX))
def test_mx_formats_give_the_python_patterns(cq, fmt):
    """cq_mx_value decodes every byte as numerics.DECODE does, and cq_mx_bits encodes
    every value of the format, the halfway points between neighbours, values beyond the
    range, zeros, infinities, NaN and random values as numerics does."""
    values = numerics.DECODE[fmt]
    got = np.array([cq.lib.mx_value(b, MX[fmt]) for b in range(256)])
    assert same_bits(got, values) is None
    finite = np.unique(values[np.isfinite(values)])
    halves = (finite[1:] + finite[:-1]) / 2
    rng = np.random.default_rng(5)
    x = np.concatenate([finite, halves, np.nextafter(halves, np.inf),
                        np.nextafter(halves, -np.inf), -finite, -halves,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30],
                        rng.normal(0, 4, 2000), np.ldexp(1.0, rng.integers(-140, 140, 500))])
    c_bits = np.array([cq.lib.mx_bits(v, MX[fmt]) for v in x])
    with np.errstate(all="ignore"):
        py_bits = numerics.round_to(x, T[fmt])
    np.testing.assert_array_equal(c_bits, py_bits)
