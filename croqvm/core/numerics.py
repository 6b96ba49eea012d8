"""The numeric semantics of croqvm (LANGUAGE.md §12), on numpy arrays of lane values.

Every arithmetic operation, conversion and comparison of both engines is defined here,
once: numpy is storage, not the specification. Where numpy (or Python, or CUDA) differs
from §12 the function handling it says so.

Conventions: ``x``, ``y`` operand arrays (one element per lane, in the storage dtype of
their croqvm type), ``t`` a ``DType``, ``act`` the bool mask of the lanes whose faults
count. Inactive lanes compute garbage that the caller throws away; a fault is raised for
the lowest active lane only (§7.1.3), as ``LaneFault(kind, operands, index)``. IEEE
overflow, invalid operations and division by zero are results (inf, NaN), not errors:
callers run the array functions under ``np.errstate(all="ignore")``, as both engines do
for a whole call (the ``fold_*`` functions do it themselves).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import dtypes
from .dtypes import DType
from .faults import Kind, LaneFault

F64 = np.float64


def first_lane(bad: np.ndarray, act: np.ndarray) -> int | None:
    """The lowest active lane where ``bad`` holds, or None."""
    hit = np.flatnonzero(bad & act)
    return int(hit[0]) if hit.size else None


def _fault_if(bad, act, kind: Kind, operands_of):
    """Fault ``kind`` with ``operands_of(i)`` for the lowest active lane ``i`` where
    ``bad`` holds (croqvm.reports.messages has the message)."""
    i = first_lane(bad, act)
    if i is not None:
        raise LaneFault(kind, operands_of(i), i)


def format_float(x: float) -> str:
    """A float as ``print`` writes it (LANGUAGE.md §13.2, D19): converted to f64 and
    written as C++ ``std::ostream`` does by default, which is ``%g`` with 6 significant
    digits: ``42``, ``1.5``, ``0.333333``, ``1e+20``, ``-0``, ``inf``, ``-inf``. Python's
    ``%g`` is C's, except that C prints a NaN with its sign bit set as ``-nan`` (glibc);
    croqvm always prints ``nan``."""
    if math.isnan(x):
        return "nan"
    return "%g" % x


# --------------------------------------------------------------------------- rounding
# The binary float formats (§12.1): (mantissa bits, exponent bits).
FLOAT_FORMATS = {
    "f64": (52, 11), "f32": (23, 8), "tf32": (10, 8), "f16": (10, 5), "bf16": (7, 8),
    "f8_e4m3": (3, 4), "f8_e5m2": (2, 5),
}


def _narrow(fmt: str, top: float | None = None, beyond: float = np.inf):
    """(mantissa bits, minimum normal exponent, largest finite value, value beyond the
    range) of ``fmt``; the largest value is IEEE's unless ``top`` says otherwise."""
    man, exp = FLOAT_FORMATS[fmt]
    bias = 2 ** (exp - 1) - 1
    return man, 1 - bias, (2 - 2.0 ** -man) * 2.0 ** bias if top is None else top, beyond


# Formats numpy lacks. §12.3: round to nearest even, subnormals kept, overflow after
# rounding gives inf, except OCP E4M3, which has no infinity (its all-ones pattern is
# NaN, so its largest value is 448) and gives NaN.
_NARROW = {
    "bf16": _narrow("bf16"), "tf32": _narrow("tf32"),
    "f8_e4m3": _narrow("f8_e4m3", 448.0, np.nan), "f8_e5m2": _narrow("f8_e5m2"),
    "f16": _narrow("f16"),   # numpy does this one; kept to test the routine
}


def round_bits(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round f64 values to the binary format ``fmt`` (result still f64, exactly
    representable in it). Works on the value, not the bits: the quantum of ``|x|`` is
    2^(max(e, emin) - mantissa bits), and ``np.rint`` rounds half to even; dividing by
    a power of two is exact in f64 for every format here."""
    man, emin, top, beyond = _NARROW[fmt]
    ax = np.abs(x)
    _, e = np.frexp(ax)
    quantum = np.ldexp(1.0, np.maximum(e - 1, emin) - man)
    r = np.rint(ax / quantum) * quantum
    r = np.where(r > top, beyond, r)      # inf input lands here too
    return np.copysign(r, x)


# --------------------------------------------------------------------------- narrow formats
# stored as bits: the OCP MX formats (LANGUAGE.md §12.1) keep their bit pattern in a byte
# (dtypes.BIT_STORED); rounding gives the pattern, and every use of a value decodes it.
# (mantissa bits, exponent bits, exponent bias, signed, the pattern of NaN or None)
BIT_FORMATS = {
    "f6_e2m3": (3, 2, 1, True, None), "f6_e3m2": (2, 3, 3, True, None),
    "f4_e2m1": (1, 2, 1, True, None), "f8_ue8m0": (0, 8, 127, False, 0xFF),
    "f8_ue4m3": (3, 4, 7, False, 0x7F),
}
FLOAT_FORMATS.update({name: (m, e) for name, (m, e, *_) in BIT_FORMATS.items()})


def _decode_table(name: str) -> np.ndarray:
    """The f64 value of each byte (patterns beyond the format's width repeat the
    format's: only the low bits count)."""
    man, exp, bias, signed, nan = BIT_FORMATS[name]
    width = man + exp + signed
    bits = np.arange(256) & ((1 << width) - 1)
    m = bits & ((1 << man) - 1)
    e = (bits >> man) & ((1 << exp) - 1)
    if name == "f8_ue8m0":       # no mantissa, no subnormals: 2^(e - 127)
        mag = np.ldexp(1.0, e - bias)
    else:
        mag = np.where(e == 0, np.ldexp(m.astype(F64), 1 - bias - man),
                       np.ldexp((m + (1 << man)).astype(F64), e - bias - man))
    if nan is not None:
        mag = np.where(bits == nan, np.nan, mag)
    sign = (bits >> (man + exp)) & 1 if signed else np.zeros(256, int)
    return np.where(sign == 1, -mag, mag)


DECODE = {name: _decode_table(name) for name in BIT_FORMATS}


def decode(bits: np.ndarray, t: DType) -> np.ndarray:
    """The f64 values of the stored patterns ``bits`` of a bit-stored type ``t``."""
    return DECODE[t.name][bits]


def _encode(x: np.ndarray, name: str) -> np.ndarray:
    """The patterns of f64 values ``x`` rounded to nearest even into ``name``:
    - f6 and f4 (no infinity, no NaN) saturate: beyond the largest value, infinities
      included, gives the largest of the sign, and NaN the positive largest;
    - f8_ue4m3 is E4M3 without a sign: rounds as f8_e4m3 (beyond 448 NaN), and a
      negative value (not -0, which gives +0) is NaN;
    - f8_ue8m0 holds powers of two 2^-127 .. 2^127: x rounds to the nearer one, a tie
      (1.5 * 2^k) to the one of even pattern; below 2^-127, zero included, gives
      2^-127, and beyond 2^127, a negative value, infinity and NaN give NaN."""
    man, exp, bias, signed, nan = BIT_FORMATS[name]
    ax = np.abs(x)
    if name == "f8_ue8m0":
        with np.errstate(all="ignore"):
            m, e = np.frexp(ax)                   # ax = m * 2^e, 0.5 <= m < 1
        k = e - 1 + bias                          # the pattern of 2^floor(log2 ax)
        up = (m > 0.75) | ((m == 0.75) & (k % 2 == 1))
        k = np.where(up, k + 1, k)
        k = np.where(ax < 2.0 ** -bias, 0, k)
        bad = np.isnan(x) | np.isinf(x) | (x < 0) | (k > 254)
        return np.where(bad, nan, k).astype(np.uint8)
    emin = 1 - bias
    top = (2 - 2.0 ** -man) * 2.0 ** (2 ** exp - 1 - bias)
    if nan is not None:                           # ue4m3: the all-ones pattern is NaN
        top = (2 - 2.0 ** (1 - man)) * 2.0 ** (2 ** exp - 1 - bias)
    with np.errstate(all="ignore"):
        _, e = np.frexp(ax)
        q = np.maximum(e - 1, emin) - man
        r = np.rint(np.ldexp(ax, -q))             # the value in units of its quantum
        r = np.where(np.isfinite(ax), np.ldexp(r, q), ax)
    over = r > top
    r = np.where(over, top, r)
    _, e = np.frexp(r)
    sub = r < 2.0 ** emin
    field_e = np.where(sub, 0, e - 1 + bias)
    field_m = np.where(sub, np.ldexp(r, man - emin), np.ldexp(r, man - (e - 1)) - (1 << man))
    bits = (field_e.astype(np.int64) << man) | np.nan_to_num(field_m).astype(np.int64)
    if signed:
        neg = np.signbit(x) & ~np.isnan(x)
        bits = np.where(neg, bits | (1 << (man + exp)), bits)
        bits = np.where(np.isnan(x), ((2 ** exp - 1) << man) | ((1 << man) - 1), bits)
        return bits.astype(np.uint8)
    bad = np.isnan(x) | over | (np.signbit(x) & (x != 0))
    return np.where(bad, nan, bits).astype(np.uint8)


def rounder(t: DType):
    """``round_to`` for float type ``t``, as a function of the f64 values alone."""
    if t.name in BIT_FORMATS:
        return lambda x64: _encode(np.asarray(x64, F64), t.name)
    if t.name == "f64":
        return lambda x64: x64.astype(F64, copy=False)
    if t.name in ("f32", "f16"):
        # numpy's f64->f32 and f64->f16 casts round to nearest even in one step
        to = t.np
        return lambda x64: x64.astype(to)
    return lambda x64: round_bits(x64.astype(F64, copy=False), t.name).astype(np.float32)


_ROUNDERS = {t.code: rounder(t) for t in dtypes.BY_CODE.values() if t.is_float}


def round_to(x64: np.ndarray, t: DType) -> np.ndarray:
    """f64 values rounded once to float type ``t``, in ``t``'s storage dtype."""
    return _ROUNDERS[t.code](x64)


# --------------------------------------------------------------------------- conversions
# Register and element types are known before a program runs, so each operation is
# resolved once for its operand types (``converter``, ``binary_op``, ``unary_op``) into a
# function of the values alone; ``convert``, ``binary`` and ``unary`` resolve and apply.

def int_range(t: DType) -> tuple[int, int]:
    """The least and greatest values of integer type ``t``."""
    if t.signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def wrap_narrow(x: np.ndarray, t: DType) -> np.ndarray:
    """Integers as values of the sub-byte integer type ``t`` (§12.3.3): the low ``t.bits``
    bits, sign-extended for a signed type, in ``t``'s byte."""
    low = x.astype(np.int64) & ((1 << t.bits) - 1)
    if t.signed:
        sign = 1 << (t.bits - 1)
        low = (low ^ sign) - sign
    return low.astype(t.np)


def same(x, act):
    """The conversion between equal types."""
    return x


def _make_converter(src: DType, dst: DType):
    """§12.3.3: integers wrap, floats truncate toward zero into integers (NaN or out of
    range faults), conversions into floats round to nearest even, numbers become bool
    as ``x != 0``. A bit-stored type is decoded first."""
    if src is dst:
        return same
    if src.name in BIT_FORMATS:
        from_f64 = _make_converter(dtypes.F64, dst)
        return lambda x, act: from_f64(decode(x, src), act)
    if dst.kind == "bool":
        return lambda x, act: x != 0
    to = dst.np
    if dst.is_int:
        if src.is_float:
            return lambda x, act: _float_to_int(x, dst, act)
        if dst.bits < 8:
            return lambda x, act: wrap_narrow(x, dst)
        return lambda x, act: x.astype(to)   # numpy's integer casts are modular, as §12.3.3
    to_dst = rounder(dst)
    if src.is_int and src.bits == 64 and dst.name != "f64":
        return lambda x, act: to_dst(_f64_round_to_odd(x))
    return lambda x, act: to_dst(x.astype(F64))


def _f64_round_to_odd(x: np.ndarray) -> np.ndarray:
    """64-bit integers in f64, rounded to odd (see ``to_odd``): 2^60 + 2^52 + 1 then
    rounds to 2^60 + 2^53 in bf16, where rounding to nearest f64 first would give the
    tie 2^60 + 2^52 and then 2^60."""
    hi = (x >> 32).astype(F64) * 2.0 ** 32      # both halves are exact in f64
    return to_odd(*two_sum(hi, (x & 0xFFFFFFFF).astype(F64)))


class _PerPair(dict):
    """A table over pairs of type codes whose entry for ``(a, b)`` is ``make(A, B)`` of
    their types, made on first use: making every pair's would take longer than a small
    program's whole run, which uses a few."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, codes):
        entry = self[codes] = self.make(dtypes.BY_CODE[codes[0]], dtypes.BY_CODE[codes[1]])
        return entry


_CONVERTERS = _PerPair(_make_converter)


def converter(src: DType, dst: DType):
    """``convert`` from ``src`` to ``dst`` as a function ``(x, act) -> values``."""
    return _CONVERTERS[src.code, dst.code]


def convert(x: np.ndarray, src: DType, dst: DType, act: np.ndarray) -> np.ndarray:
    """``x`` of type ``src`` as values of type ``dst`` (§12.3.3, see ``_make_converter``);
    a fault names the lowest active lane whose value does not fit."""
    return _CONVERTERS[src.code, dst.code](x, act)


def _float_to_int(x, dst: DType, act):
    t = np.trunc(x.astype(F64))
    lo, hi = int_range(dst)
    # hi + 1 is a power of two, exact in f64, unlike hi itself for 64-bit types
    bad = np.isnan(t) | (t < lo) | (t >= float(hi + 1))
    _fault_if(bad, act, Kind.FLOAT_TO_INT, lambda i: (float(x[i]), dst.code))
    return np.where(bad, 0, t).astype(dst.np)


# --------------------------------------------------------------------------- binary ops
# Each entry takes the arithmetic type ``t`` and gives ``fn(x, y, act)`` over operands
# already in ``t``, returning values of ``t``.

def _int_div_parts(x, y, t, act):
    """Truncating quotient and dividend-signed remainder (§12.3.1). numpy's ``//`` and
    ``%`` floor instead, and MIN // -1 traps in C, so -1 is handled apart (it wraps to
    MIN, remainder 0)."""
    if not np.count_nonzero(y <= 0) and not (t.signed and np.count_nonzero(x < 0)):
        return x // y, x % y        # every lane: floor and truncation agree
    _fault_if(y == 0, act, Kind.DIVISION_BY_ZERO, lambda i: ())
    minus_one = (y == -1) if t.signed else np.zeros(y.shape, bool)
    safe = np.where((y == 0) | minus_one, 1, y).astype(t.np)
    q = x // safe
    r = x - q * safe
    if t.signed:
        fix = (r != 0) & ((x < 0) != (safe < 0))   # floor went one below
        q = np.where(fix, q + 1, q)
        r = np.where(fix, r - safe, r)
    q = np.where(minus_one, np.negative(x), q).astype(t.np)
    r = np.where(minus_one, 0, r).astype(t.np)
    return q, r


def _div(t):
    if t.is_float:
        to_t = rounder(t)
        return lambda x, y, act: to_t(x.astype(F64) / y.astype(F64))
    return lambda x, y, act: _int_div_parts(x, y, t, act)[0]


def _mod(t):
    if t.is_float:
        to_t = rounder(t)
        return lambda x, y, act: to_t(np.fmod(x.astype(F64), y.astype(F64)))
    return lambda x, y, act: _int_div_parts(x, y, t, act)[1]


def _arith(fn):
    """An operation that is exact-then-rounded on floats and modular on integers."""
    def resolve(t):
        if t.is_float:
            to_t = rounder(t)
            return lambda x, y, act: to_t(fn(x.astype(F64), y.astype(F64)))
        to = t.np
        return lambda x, y, act: fn(x, y).astype(to, copy=False)   # numpy integers wrap
    return resolve


def _bitwise(int_fn, bool_fn):
    def resolve(t):
        fn = bool_fn if t.kind == "bool" else int_fn
        return lambda x, y, act: fn(x, y)
    return resolve


def _float_min(x, y):
    return np.where(np.isnan(x), y, np.where(y < x, y, x))


def _float_max(x, y):
    return np.where(np.isnan(x), y, np.where(y > x, y, x))


def _minmax(int_fn, float_fn):
    """MIN and MAX. Floats: a NaN operand is ignored (IEEE minNum/maxNum), and operands
    that compare equal give the first: ``MIN(x, y) = isnan(x) ? y : isnan(y) ? x :
    (y < x ? y : x)``, so ``MIN(+0, -0)`` is +0 and ``MIN(-0, +0)`` is -0. Neither
    ``np.fmin`` nor C's ``fmin`` fixes the sign of zero (numpy's changes with the array
    length and the lane's position), so neither is used."""
    def resolve(t):
        fn, to = (float_fn if t.is_float else int_fn), t.np
        return lambda x, y, act: fn(x, y).astype(to, copy=False)
    return resolve


BINARY = {
    "ADD": _arith(np.add),
    "SUB": _arith(np.subtract),
    "MUL": _arith(np.multiply),
    "DIV": _div,
    "MOD": _mod,
    "MIN": _minmax(np.minimum, _float_min),
    "MAX": _minmax(np.maximum, _float_max),
    "AND": _bitwise(np.bitwise_and, np.logical_and),
    "OR": _bitwise(np.bitwise_or, np.logical_or),
    "XOR": _bitwise(np.bitwise_xor, np.logical_xor),
}

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _shift_count(y, t: DType, act):
    yy = y.astype(np.int64)      # a u64 count >= 2^63 turns negative: still out of range
    bad = (yy < 0) | (yy >= t.bits)
    _fault_if(bad, act, Kind.SHIFT_COUNT, lambda i: (int(y[i]), t.code))
    return np.where(bad, 0, yy)


def _shift(name: str, tx: DType):
    """``<<`` and ``>>`` (§12.3.1): the type is the promoted left operand's; the count
    must lie in [0, width). ``<<`` is done on the unsigned bits (C leaves signed
    overflow undefined); ``>>`` of signed values is arithmetic, as numpy's."""
    t = dtypes.promote(tx, tx)
    cx, u, to = converter(tx, t), _UNSIGNED[t.bits], t.np

    def shl(x, y, act):
        xv, n = cx(x, act), _shift_count(y, t, act)
        return (xv.view(u) << n.astype(u)).view(to)

    def shr(x, y, act):
        xv, n = cx(x, act), _shift_count(y, t, act)
        return xv >> n.astype(to)
    return (shl if name == "SHL" else shr), t


# Comparing in the arithmetic type is exact: every operand converts to it exactly
# (integers up to wraparound), and NaN compares false except under !=.
COMPARE = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less,
    "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
}


# §12.2 for every pair of types, computed once
_PROMOTE = _PerPair(dtypes.promote)


def binary_op(name: str, tx: DType, ty: DType):
    """``x <name> y`` for operands of types ``tx`` and ``ty``, in the arithmetic type of
    §12.2: (``fn(x, y, act)`` giving the values, their type)."""
    if name in ("SHL", "SHR"):
        return _shift(name, tx)
    if tx.kind == "bool" and ty.kind == "bool" and name in ("AND", "OR", "XOR"):
        return BINARY[name](dtypes.BOOL), dtypes.BOOL
    t = _PROMOTE[tx.code, ty.code]
    if name in COMPARE:
        core, result = COMPARE[name], dtypes.BOOL
        core2 = lambda x, y, act: core(x, y)   # noqa: E731
    else:
        core2, result = BINARY[name](t), t
    if tx is t and ty is t:
        return core2, result
    # never faults: the arithmetic type holds every operand (integers up to wraparound)
    cx, cy = converter(tx, t), converter(ty, t)
    return (lambda x, y, act: core2(cx(x, act), cy(y, act), act)), result


def binary(name: str, x, y, tx: DType, ty: DType, act):
    """``x <name> y`` in the arithmetic type of §12.2; returns (values, their type)."""
    fn, t = binary_op(name, tx, ty)
    return fn(x, y, act), t


# --------------------------------------------------------------------------- unary ops

def unary_op(name: str, tx: DType):
    """NEG (wraps on integers, flips the sign bit of floats), NOT (bool), BNOT (~ in
    the promoted integer type): (``fn(x, act)``, the result type)."""
    if name == "NOT":
        return (lambda x, act: ~(x != 0)), dtypes.BOOL
    if tx.is_float and tx.name not in BIT_FORMATS:
        return (lambda x, act: np.negative(x)), tx
    t = dtypes.promote(tx, tx)          # a bit-stored float negates in f32
    cx = converter(tx, t)
    fn = np.negative if name == "NEG" else np.invert
    return (lambda x, act: fn(cx(x, act))), t


def unary(name: str, x, tx: DType, act):
    """``<name> x``; returns (values, their type)."""
    fn, t = unary_op(name, tx)
    return fn(x, act), t


# --------------------------------------------------------------------------- exact sums
# Error-free transformations on f64 arrays, for results that §12 defines as one rounding
# of an exact value: a 64-bit integer converted to a float, an MMA step (§12.4).

def two_sum(x, y):
    """(s, e): s = x + y rounded to nearest, and s + e == x + y exactly (Knuth)."""
    s = x + y
    b = s - x
    return s, (x - (s - b)) + (y - b)


def two_product(x, y):
    """(p, e): p = x * y rounded to nearest, and p + e == x * y exactly (Dekker; e is 0
    where a factor is too large to split, beyond 2^995)."""
    p = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    return p, np.where(np.isfinite(e), e, 0.0)


def _split(x):
    """x = hi + lo with hi and lo of at most 26 significand bits (Veltkamp)."""
    t = 134217729.0 * x           # 2^27 + 1
    hi = t - (t - x)
    return hi, x - hi


def to_odd(s, e):
    """s + e rounded to odd, given s = s + e rounded to nearest: s when exact, else the
    one of s and its neighbour toward e whose last significand bit is 1. Rounding that
    once more to a format of at most 51 significand bits rounds s + e once (Boldo and
    Melquiond, 'Emulation of FMA and correctly rounded sums', 2008)."""
    inexact = (e != 0) & np.isfinite(e)
    even = (np.asarray(s, F64).view(np.uint64) & 1) == 0
    return np.where(inexact & even, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def fma_to(c, a, b, t: DType, exact_product: bool = False):
    """c + a * b rounded once to float type ``t`` (f64 arrays in, f64 values out). The
    exact value is s + e + pe; RO(e + pe) keeps what rounding it needs of e + pe. With
    ``exact_product`` (factors of at most 26 significand bits) pe is 0."""
    if exact_product:
        s, e = two_sum(c, a * b)
        return s if t.name == "f64" else round_to(to_odd(s, e), t).astype(F64)
    p, pe = two_product(a, b)
    s, e = two_sum(c, p)
    v = to_odd(*two_sum(e, pe))
    if t.name == "f64":
        return s + v              # Boldo and Melquiond's FMA emulation
    return round_to(to_odd(*two_sum(s, v)), t).astype(F64)


# --------------------------------------------------------------------------- single values
# The constant folder, lowering and the constant pool compute on single Python values
# (bool, int or float, each a value of its croqvm type) through the lane functions above,
# run on one lane: a folded value is then by construction the value the engine computes.
# A fault raises ``LaneFault`` (index 0); IEEE overflow, division by zero and NaN are
# results, not warnings.

_ONE_LANE = np.ones(1, bool)


def _lane(v, t: DType) -> np.ndarray:
    return storage_array([v], t)


def storage_array(values, t: DType) -> np.ndarray:
    """Values of type ``t`` (Python numbers) in its storage: a bit-stored type's
    patterns, else the numpy dtype holding the values."""
    if t.name in BIT_FORMATS:
        return _encode(np.asarray(values, F64), t.name)
    return np.array(values, t.np)


def _single(values: np.ndarray):
    return values[0].item()


def fold_binary(name: str, x, tx: DType, y, ty: DType):
    """``x <name> y`` as ``binary``: (the value, its type)."""
    fn, t = binary_op(name, tx, ty)
    with np.errstate(all="ignore"):
        return _single(fn(_lane(x, tx), _lane(y, ty), _ONE_LANE)), t


def fold_unary(name: str, x, tx: DType):
    """``<name> x`` as ``unary``: (the value, its type)."""
    fn, t = unary_op(name, tx)
    with np.errstate(all="ignore"):
        return _single(fn(_lane(x, tx), _ONE_LANE)), t


def fold_convert(x, src: DType, dst: DType):
    """``x`` of type ``src`` as a value of type ``dst`` (``convert``)."""
    with np.errstate(all="ignore"):
        out = converter(src, dst)(_lane(x, src), _ONE_LANE)
        return _single(decode(out, dst) if dst.name in BIT_FORMATS else out)


def value_of(v, t: DType):
    """The value in type ``t`` of the exact number ``v`` (a Python bool, int, float or
    ``Fraction``), as a conversion into ``t`` gives it (§12.3.3): integers wrap modulo
    2^width, other numbers truncate toward zero into integers (NaN or out of range:
    ``LaneFault``), every number rounds once to nearest even into a float type (an
    exact integer or fraction through its f64 rounded to odd, as 64-bit integers do),
    and ``v != 0`` gives bool. Used for constants: a literal in the type it is loaded
    in, the constant pool, a folded value converted to s32."""
    if t.kind == "bool":
        return bool(v != 0)
    if isinstance(v, bool):
        v = int(v)
    if t.is_int:
        if isinstance(v, int):
            lo, _ = int_range(t)
            return (v - lo) % (1 << t.bits) + lo
        if isinstance(v, float):
            return fold_convert(v, dtypes.F64, t)
        lo, hi = int_range(t)
        if not lo <= math.trunc(v) <= hi:
            raise LaneFault(Kind.FLOAT_TO_INT, (float(v), t.code), 0)
        return math.trunc(v)
    if isinstance(v, float):
        return fold_convert(v, dtypes.F64, t)
    if t.name == "f64":
        try:
            return float(v)            # correctly rounded, int and Fraction alike
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    return fold_convert(_exact_round_to_odd(v), dtypes.F64, t)


def _exact_round_to_odd(v) -> float:
    """The exact int or Fraction ``v`` rounded to odd in f64 (see ``to_odd``): beyond
    the largest finite f64 that is the largest finite f64."""
    try:
        f = float(v)
    except OverflowError:
        top = np.finfo(F64).max.item()
        return top if v > 0 else -top
    if f != v and not int(np.float64(f).view(np.uint64)) & 1:
        f = math.nextafter(f, math.inf if v > f else -math.inf)
    return f


def fits(v, t: DType) -> bool:
    """Whether the exact number ``v`` converts into type ``t`` unchanged (NaN into a
    float type does)."""
    try:
        r = value_of(v, t)
    except LaneFault:
        return False
    if isinstance(v, float) and math.isnan(v):
        return isinstance(r, float) and math.isnan(r)
    return r == v


# --------------------------------------------------------------------------- math functions
# MATH (croqvm.core.intrinsics, docs/NUMERICS.md "Math functions"): the arguments, of one float
# type t, are taken as f64, the function is computed in f64 by the C library's double
# function (or the f64 formula below, evaluated operation by operation), and the result
# rounds once to t. The C library is called through ctypes, not through Python's math
# module (which raises on a domain or range error where C gives NaN or infinity) nor
# numpy (whose vectorised sin, exp, ... are its own and differ from libm in the last
# bit): the native engine and generated CPU code call the same functions, so every
# engine gives the same bits on one machine.

@functools.cache
def _libm():
    """The C library's double functions, as functions of f64 arrays; found on first use
    (finding the library runs ``ldconfig``, which a run without MATH need not wait for)."""
    import ctypes
    import ctypes.util
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    fns = {}
    for name, arity in (("sqrt", 1), ("exp", 1), ("exp2", 1), ("expm1", 1), ("log", 1),
                        ("log1p", 1), ("sin", 1), ("cos", 1), ("tan", 1), ("asin", 1),
                        ("acos", 1), ("atan", 1), ("sinh", 1), ("cosh", 1), ("tanh", 1),
                        ("ceil", 1), ("floor", 1), ("round", 1), ("pow", 2), ("atan2", 2)):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_double
        fn.argtypes = (ctypes.c_double,) * arity
        lanes = np.frompyfunc(fn, arity, 1)
        fns[name] = lambda *xs, lanes=lanes: lanes(*xs).astype(F64)
    return fns


def _gelu(x):
    """The tanh form of the reference's GPU runtime, evaluated as C does (left to right)."""
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return x * 0.5 * (1.0 + _libm()["tanh"](inner))


@functools.cache
def _math_f64() -> dict:
    """f64 arrays -> f64 arrays per function; numpy's + - * / are IEEE's, as C's are."""
    c = _libm()
    return {
        "__sqrt": c["sqrt"], "__rsqrt": lambda x: 1.0 / c["sqrt"](x),
        "__exp": c["exp"], "__exp2f": c["exp2"], "__expm1": c["expm1"], "__log": c["log"],
        "__log1p": c["log1p"], "__sin": c["sin"], "__cos": c["cos"], "__tan": c["tan"],
        "__asin": c["asin"], "__acos": c["acos"], "__atan": c["atan"], "__sinh": c["sinh"],
        "__cosh": c["cosh"], "__tanh": c["tanh"], "__ceil": c["ceil"],
        "__floor": c["floor"], "__round": c["round"], "__fabs": np.abs,
        "__frcp_rn": lambda x: 1.0 / x,
        "__gelu": _gelu,
        "__sigmoid": lambda x: 1.0 / (1.0 + c["exp"](-x)),
        "__softplus": lambda x: c["log1p"](c["exp"](x)),
        "__sign": lambda x: (x > 0.0).astype(F64) - (x < 0.0).astype(F64),
        "__pow": c["pow"], "__atan2": c["atan2"],
    }


def _fma(x, y, z, t: DType):
    """x * y + z rounded once to t. Where the f64 result of x * y + z is not finite the
    exact one is not either (or overflows t), and the error-free transformations of
    ``fma_to`` would turn infinities into NaN: that result is taken as it is."""
    plain = x * y + z
    return round_to(np.where(np.isfinite(plain), fma_to(z, x, y, t), plain), t)


def math_op(name: str, t: DType):
    """MATH function ``name`` on values of float type ``t``: ``fn(args, act)`` with
    ``args`` a list of lane arrays of ``t`` (one per argument), giving values of ``t``
    (bool for ``__isfinite``)."""
    if name == "__isfinite":
        return lambda args, act: np.isfinite(args[0])
    if name == "__fmaf":
        return lambda args, act: _fma(*(a.astype(F64) for a in args), t)
    fn, to_t = _math_f64()[name], rounder(t)
    return lambda args, act: to_t(fn(*(a.astype(F64) for a in args)))
