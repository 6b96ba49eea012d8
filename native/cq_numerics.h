/* cq_numerics.h -- croqvm's numeric semantics in C (docs/NUMERICS.md).
 *
 * The bit-exact port of croqvm/core/numerics.py for the native engine and for generated CPU
 * and CUDA code: every function gives the bits the Python engine gives (any NaN counting
 * as any NaN), which tests/test_cq_numerics.py checks against croqvm.core.numerics.
 *
 * Header-only C11 (also valid C++): `static inline` functions, prefix `cq_`. Build with
 * -ffp-contract=off (nvcc: -fmad=false) and never with -ffast-math, -Ofast or
 * -funsafe-math-optimizations: the error-free transformations below need every +, -
 * and * rounded separately, and subnormals kept. The default rounding mode (to nearest
 * even) is assumed. Supported targets are x86-64 and aarch64 (no x87 excess precision);
 * integer casts to a narrower signed type wrap modulo 2^n, as gcc, clang and nvcc define.
 *
 * Carriers: a float of any croqvm type is passed as a double holding its value (every
 * bf16/tf32/fp8/f16/f32 value is exact in f64); bf16, tf32 and fp8 are stored as a
 * float holding the value (LANGUAGE.md §12.3), f16 as its 16-bit pattern. Integer
 * arithmetic happens in the promoted types s32, u32, s64, u64 (§12.2).
 *
 * Faults are status codes (CQ_NUM_*), never undefined behaviour or traps; the message
 * texts belong to the caller (croqvm's message catalogue).
 */
#ifndef CQ_NUMERICS_H
#define CQ_NUMERICS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__CUDACC__)
#define CQ_NUM_FN static inline __host__ __device__
#else
#define CQ_NUM_FN static inline
#endif

/* Status codes of the operations that can fault. */
enum {
    CQ_NUM_OK = 0,
    CQ_NUM_DIV_ZERO = 1,      /* "integer division by zero." */
    CQ_NUM_SHIFT_RANGE = 2,   /* "shift count N out of range for 'T'." */
    CQ_NUM_OUT_OF_RANGE = 3   /* "value X out of range for 'T'." (NaN included) */
};

/* Float formats a value can be rounded to. */
enum {
    CQ_FMT_F64 = 0,
    CQ_FMT_F32 = 1,
    CQ_FMT_F16 = 2,
    CQ_FMT_BF16 = 3,
    CQ_FMT_TF32 = 4,
    CQ_FMT_E4M3 = 5,
    CQ_FMT_E5M2 = 6,
    CQ_FMT_F6_E2M3 = 7,       /* the OCP MX formats, stored as their bit patterns */
    CQ_FMT_F6_E3M2 = 8,
    CQ_FMT_F4_E2M1 = 9,
    CQ_FMT_UE8M0 = 10,
    CQ_FMT_UE4M3 = 11
};

/* ------------------------------------------------------------------ bits */

CQ_NUM_FN uint64_t cq_f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

CQ_NUM_FN double cq_f64_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

CQ_NUM_FN uint32_t cq_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

CQ_NUM_FN float cq_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ------------------------------------------------------------------ rounding */

/* numerics.round_bits: round x to the binary format with `man` significand bits after
 * the point, least normal exponent `emin` and greatest finite value `top`; a result
 * beyond `top` becomes `beyond` (inf, or NaN for E4M3). Works on the value: the quantum
 * of |x| is 2^(max(e, emin) - man), rint rounds half to even, and dividing or
 * multiplying by a power of two is exact here. */
CQ_NUM_FN double cq_round_bits(double x, int man, int emin, double top, double beyond)
{
    double ax = fabs(x);
    if (isnan(ax))
        return x;
    if (isinf(ax))
        return copysign(beyond, x);
    int e = 0;
    (void)frexp(ax, &e);
    int q = (e - 1 > emin ? e - 1 : emin) - man;
    double quantum = ldexp(1.0, q);
    double r = rint(ax / quantum) * quantum;
    if (r > top)
        r = beyond;
    return copysign(r, x);
}

CQ_NUM_FN double cq_round_f16(double x)
{
    return cq_round_bits(x, 10, -14, 65504.0, INFINITY);
}

CQ_NUM_FN double cq_round_bf16(double x)
{
    return cq_round_bits(x, 7, -126, 3.3895313892515355e38, INFINITY);
}

CQ_NUM_FN double cq_round_tf32(double x)
{
    return cq_round_bits(x, 10, -126, 3.4011621342146535e38, INFINITY);
}

CQ_NUM_FN double cq_round_e4m3(double x)
{
    return cq_round_bits(x, 3, -6, 448.0, NAN);
}

CQ_NUM_FN double cq_round_e5m2(double x)
{
    return cq_round_bits(x, 2, -14, 57344.0, INFINITY);
}

/* ------------------------------------------------------------------ OCP MX formats */

/* numerics.BIT_FORMATS: mantissa bits, exponent bits, bias, signed, the NaN pattern (-1:
 * none) of an MX format. */
CQ_NUM_FN void cq_mx_format(int fmt, int *man, int *exp, int *bias, int *sgn, int *nan)
{
    switch (fmt) {
    case CQ_FMT_F6_E2M3: *man = 3; *exp = 2; *bias = 1; *sgn = 1; *nan = -1; break;
    case CQ_FMT_F6_E3M2: *man = 2; *exp = 3; *bias = 3; *sgn = 1; *nan = -1; break;
    case CQ_FMT_F4_E2M1: *man = 1; *exp = 2; *bias = 1; *sgn = 1; *nan = -1; break;
    case CQ_FMT_UE8M0: *man = 0; *exp = 8; *bias = 127; *sgn = 0; *nan = 0xFF; break;
    default: *man = 3; *exp = 4; *bias = 7; *sgn = 0; *nan = 0x7F; break;   /* UE4M3 */
    }
}

/* numerics.DECODE: the value of a pattern (only the format's low bits count). */
CQ_NUM_FN double cq_mx_value(unsigned bits, int fmt)
{
    int man, exp, bias, sgn, nan;
    cq_mx_format(fmt, &man, &exp, &bias, &sgn, &nan);
    bits &= (1u << (man + exp + sgn)) - 1u;
    if (nan >= 0 && bits == (unsigned)nan)
        return NAN;
    int m = (int)(bits & ((1u << man) - 1u)), e = (int)((bits >> man) & ((1u << exp) - 1u));
    double mag = fmt == CQ_FMT_UE8M0 ? ldexp(1.0, e - bias)
        : e == 0 ? ldexp((double)m, 1 - bias - man) : ldexp((double)(m | 1 << man), e - bias - man);
    return sgn && (bits >> (man + exp) & 1u) ? -mag : mag;
}

/* numerics._encode: the pattern of x rounded to nearest even into an MX format; f6 and
 * f4 saturate (NaN gives the positive largest), ue4m3 rounds as E4M3 and a negative
 * value is NaN, ue8m0 holds 2^-127 .. 2^127 (a tie to the even pattern, below the range
 * the least, beyond it, negative, infinite or NaN: NaN). */
CQ_NUM_FN unsigned cq_mx_bits(double x, int fmt)
{
    int man, exp, bias, sgn, nan, e;
    cq_mx_format(fmt, &man, &exp, &bias, &sgn, &nan);
    double ax = fabs(x);
    if (fmt == CQ_FMT_UE8M0) {
        if (isnan(x) || isinf(x) || x < 0.0)
            return (unsigned)nan;
        if (ax < ldexp(1.0, -bias))
            return 0;
        double m = frexp(ax, &e);
        int k = e - 1 + bias;
        if (m > 0.75 || (m == 0.75 && (k & 1)))
            k++;
        return k > 254 ? (unsigned)nan : (unsigned)k;
    }
    int emin = 1 - bias, top_e = (1 << exp) - 1 - bias;
    double top = (2.0 - ldexp(1.0, nan >= 0 ? 1 - man : -man)) * ldexp(1.0, top_e);
    if (isnan(x))
        return sgn ? (((1u << exp) - 1u) << man) | ((1u << man) - 1u) : (unsigned)nan;
    double r = ax;
    if (!isinf(ax)) {
        (void)frexp(ax, &e);
        int q = (e - 1 > emin ? e - 1 : emin) - man;
        r = ldexp(rint(ldexp(ax, -q)), q);
    }
    int over = r > top;
    if (over)
        r = top;
    unsigned bits;
    if (r < ldexp(1.0, emin)) {
        bits = (unsigned)ldexp(r, man - emin);
    } else {
        (void)frexp(r, &e);
        bits = (unsigned)(e - 1 + bias) << man | (unsigned)(ldexp(r, man - (e - 1)) - (1 << man));
    }
    if (sgn)
        return signbit(x) ? bits | 1u << (man + exp) : bits;
    return over || (signbit(x) && x != 0.0) ? (unsigned)nan : bits;
}

/* f64 -> f32 is one rounding to nearest even in C (round_to for f32). */
CQ_NUM_FN double cq_round_f32(double x)
{
    return (double)(float)x;
}

/* numerics.round_to: x rounded once to format `fmt`, as a double. */
CQ_NUM_FN double cq_round_fmt(double x, int fmt)
{
    switch (fmt) {
    case CQ_FMT_F32: return cq_round_f32(x);
    case CQ_FMT_F16: return cq_round_f16(x);
    case CQ_FMT_BF16: return cq_round_bf16(x);
    case CQ_FMT_TF32: return cq_round_tf32(x);
    case CQ_FMT_E4M3: return cq_round_e4m3(x);
    case CQ_FMT_E5M2: return cq_round_e5m2(x);
    case CQ_FMT_F6_E2M3: case CQ_FMT_F6_E3M2: case CQ_FMT_F4_E2M1: case CQ_FMT_UE8M0:
    case CQ_FMT_UE4M3: return cq_mx_value(cq_mx_bits(x, fmt), fmt);
    default: return x;
    }
}

/* The IEEE binary16 pattern of x rounded to f16 (any NaN gives 0x7E00 with x's sign). */
CQ_NUM_FN uint16_t cq_f16_bits(double x)
{
    double v = cq_round_f16(x);
    uint16_t sign = signbit(v) ? 0x8000u : 0u;
    double a = fabs(v);
    if (isnan(a))
        return (uint16_t)(sign | 0x7E00u);
    if (isinf(a))
        return (uint16_t)(sign | 0x7C00u);
    if (a < 0x1p-14)                               /* subnormal or zero: a = m * 2^-24 */
        return (uint16_t)(sign | (uint16_t)ldexp(a, 24));
    int e = 0;
    double f = frexp(a, &e);                       /* a = f * 2^e, 0.5 <= f < 1 */
    return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | (uint16_t)(ldexp(f, 11) - 1024.0));
}

/* The value of an IEEE binary16 pattern. */
CQ_NUM_FN double cq_f16_value(uint16_t bits)
{
    int ex = (bits >> 10) & 0x1F;
    int m = bits & 0x3FF;
    double a;
    if (ex == 0x1F)
        a = m ? NAN : INFINITY;
    else if (ex == 0)
        a = ldexp((double)m, -24);
    else
        a = ldexp((double)(m | 0x400), ex - 25);
    return (bits & 0x8000u) ? -a : a;
}

/* bfloat16 patterns: the upper half of the f32 pattern of a bf16 value. */
CQ_NUM_FN uint16_t cq_bf16_bits(double x)
{
    return (uint16_t)(cq_f32_bits((float)cq_round_bf16(x)) >> 16);
}

CQ_NUM_FN double cq_bf16_value(uint16_t bits)
{
    return (double)cq_f32_from_bits((uint32_t)bits << 16);
}

/* OCP fp8 patterns: E4M3 (bias 7, no infinity, S.1111.111 is NaN) and E5M2 (bias 15,
 * IEEE infinities and NaNs), of x rounded to the format (any NaN gives S.1111.111 with
 * x's sign). */
CQ_NUM_FN uint8_t cq_fp8_bits(double x, int fmt)
{
    int man = fmt == CQ_FMT_E4M3 ? 3 : 2, bias = fmt == CQ_FMT_E4M3 ? 7 : 15;
    double v = fmt == CQ_FMT_E4M3 ? cq_round_e4m3(x) : cq_round_e5m2(x);
    unsigned sign = signbit(v) ? 0x80u : 0u;
    double a = fabs(v);
    if (isnan(a))
        return (uint8_t)(sign | 0x7Fu);
    if (isinf(a))
        return (uint8_t)(sign | 0x7Cu);
    if (a < ldexp(1.0, 1 - bias))                  /* subnormal or zero: m * 2^(1-bias-man) */
        return (uint8_t)(sign | (unsigned)ldexp(a, bias - 1 + man));
    int e = 0;
    double f = frexp(a, &e);                       /* a = f * 2^e, 0.5 <= f < 1 */
    return (uint8_t)(sign | (unsigned)(e - 1 + bias) << man |
                     (unsigned)(ldexp(f, man + 1) - ldexp(1.0, man)));
}

CQ_NUM_FN double cq_fp8_value(unsigned bits, int fmt)
{
    int man = fmt == CQ_FMT_E4M3 ? 3 : 2, bias = fmt == CQ_FMT_E4M3 ? 7 : 15;
    int ex = (int)((bits & 0x7Fu) >> man), m = (int)(bits & ((1u << man) - 1u));
    double a;
    if (fmt == CQ_FMT_E4M3 && (bits & 0x7Fu) == 0x7Fu)
        a = NAN;
    else if (fmt == CQ_FMT_E5M2 && ex == 0x1F)
        a = m ? NAN : INFINITY;
    else if (ex == 0)
        a = ldexp((double)m, 1 - bias - man);
    else
        a = ldexp((double)(m | 1 << man), ex - bias - man);
    return (bits & 0x80u) ? -a : a;
}

/* ------------------------------------------------------------------ error-free sums */

/* numerics.two_sum: s = x + y rounded, *e = the exact error (Knuth). */
CQ_NUM_FN double cq_two_sum(double x, double y, double *e)
{
    double s = x + y;
    double b = s - x;
    *e = (x - (s - b)) + (y - b);
    return s;
}

/* Veltkamp's split: x = *hi + *lo, each of at most 26 significand bits. */
CQ_NUM_FN void cq_split(double x, double *hi, double *lo)
{
    double t = 134217729.0 * x;                    /* 2^27 + 1 */
    *hi = t - (t - x);
    *lo = x - *hi;
}

/* numerics.two_product: p = x * y rounded, *e = the exact error (Dekker), 0 where it is
 * not finite (a factor beyond 2^995). Never fma(): the reference does not use it. */
CQ_NUM_FN double cq_two_product(double x, double y, double *e)
{
    double p = x * y;
    double xh, xl, yh, yl;
    cq_split(x, &xh, &xl);
    cq_split(y, &yh, &yl);
    double err = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl;
    *e = isfinite(err) ? err : 0.0;
    return p;
}

/* numerics.to_odd: s + e rounded to odd, given s = s + e rounded to nearest. The
 * infinity is a double, so that nvcc calls CUDA's nextafter(double, double), not the C++
 * library's host-only template for mixed argument types. */
CQ_NUM_FN double cq_to_odd(double s, double e)
{
    const double inf = INFINITY;
    if (e != 0.0 && isfinite(e) && !(cq_f64_bits(s) & 1u))
        return nextafter(s, e > 0.0 ? inf : -inf);
    return s;
}

/* A 64-bit integer rounded to odd in f64 (numerics._f64_round_to_odd): rounding that
 * once more to a narrower format rounds the integer once. */
CQ_NUM_FN double cq_s64_to_odd(int64_t x)
{
    uint64_t u = (uint64_t)x;
    double hi = (double)(int64_t)(u & ~(uint64_t)0xFFFFFFFFu);   /* both halves exact */
    double lo = (double)(u & 0xFFFFFFFFu);
    double e;
    double s = cq_two_sum(hi, lo, &e);
    return cq_to_odd(s, e);
}

CQ_NUM_FN double cq_u64_to_odd(uint64_t x)
{
    double hi = (double)(x & ~(uint64_t)0xFFFFFFFFu);
    double lo = (double)(x & 0xFFFFFFFFu);
    double e;
    double s = cq_two_sum(hi, lo, &e);
    return cq_to_odd(s, e);
}

/* numerics.fma_to: c + a * b rounded once to `fmt` (an MMA step, LANGUAGE.md §12.4).
 * With `exact_product` (factors of at most 26 significand bits: every element type but
 * f64) the product a * b is exact and only the sum is corrected. */
CQ_NUM_FN double cq_fma_to(double c, double a, double b, int fmt, int exact_product)
{
    double e, pe, v;
    if (exact_product) {
        double s = cq_two_sum(c, a * b, &e);
        return fmt == CQ_FMT_F64 ? s : cq_round_fmt(cq_to_odd(s, e), fmt);
    }
    double p = cq_two_product(a, b, &pe);
    double s = cq_two_sum(c, p, &e);
    double t = cq_two_sum(e, pe, &v);
    v = cq_to_odd(t, v);
    if (fmt == CQ_FMT_F64)
        return s + v;                              /* Boldo and Melquiond's FMA */
    t = cq_two_sum(s, v, &e);
    return cq_round_fmt(cq_to_odd(t, e), fmt);
}

/* ------------------------------------------------------------------ conversions */

/* An integer into float format `fmt`, rounded once (LANGUAGE.md §12.3.3). */
CQ_NUM_FN double cq_s64_to_fmt(int64_t x, int fmt)
{
    return fmt == CQ_FMT_F64 ? (double)x : cq_round_fmt(cq_s64_to_odd(x), fmt);
}

CQ_NUM_FN double cq_u64_to_fmt(uint64_t x, int fmt)
{
    return fmt == CQ_FMT_F64 ? (double)x : cq_round_fmt(cq_u64_to_odd(x), fmt);
}

/* A float truncated toward zero into an integer type of `bits` bits (signed or not):
 * CQ_NUM_OUT_OF_RANGE for NaN and values outside the type (numerics._float_to_int),
 * else the value's two's complement bits in *out (cast them to the type). */
CQ_NUM_FN int cq_f64_to_int(double x, int bits, int is_signed, uint64_t *out)
{
    double t = trunc(x);
    double lo = is_signed ? -ldexp(1.0, bits - 1) : 0.0;
    double top = ldexp(1.0, is_signed ? bits - 1 : bits);   /* hi + 1, exact */
    if (isnan(t) || t < lo || t >= top) {
        *out = 0;
        return CQ_NUM_OUT_OF_RANGE;
    }
    *out = t < 0.0 ? (uint64_t)(int64_t)t : (uint64_t)t;
    return CQ_NUM_OK;
}

/* ------------------------------------------------------------------ integers */

/* A value as one of a sub-byte integer type of ``bits`` bits (croqvm/core/numerics.py
 * wrap_narrow): its low bits, sign-extended when ``is_signed``. */
CQ_NUM_FN int32_t cq_wrap_bits(int64_t v, int bits, int is_signed)
{
    int32_t low = (int32_t)((uint64_t)v & ((1u << bits) - 1u));
    int32_t sign = is_signed ? (int32_t)(1u << (bits - 1)) : 0;
    return (low ^ sign) - sign;
}

/* Wrapping + - * NEG in the promoted types, on unsigned bits (C leaves signed overflow
 * undefined); BNOT is ~. Division and remainder truncate (C99 / and %), the remainder
 * takes the dividend's sign, division by zero faults, MIN / -1 wraps to MIN with
 * remainder 0 (x86 traps on it, so -1 never reaches / or %). Shifts fault unless
 * 0 <= n < width; the count is the value of the count operand in its own type (a u64
 * count above 2^63 - 1 is passed as a negative int64_t: out of range either way); >>
 * of a signed value is arithmetic. */
#define CQ_NUM_INT_OPS(T, CT, UT, BITS, SIGNED)                                         \
    CQ_NUM_FN CT cq_add_##T(CT x, CT y) { return (CT)((UT)x + (UT)y); }                  \
    CQ_NUM_FN CT cq_sub_##T(CT x, CT y) { return (CT)((UT)x - (UT)y); }                  \
    CQ_NUM_FN CT cq_mul_##T(CT x, CT y) { return (CT)((UT)x * (UT)y); }                  \
    CQ_NUM_FN CT cq_neg_##T(CT x) { return (CT)((UT)0 - (UT)x); }                        \
    CQ_NUM_FN CT cq_min_##T(CT x, CT y) { return y < x ? y : x; }                        \
    CQ_NUM_FN CT cq_max_##T(CT x, CT y) { return y > x ? y : x; }                        \
    CQ_NUM_FN int cq_div_##T(CT x, CT y, CT *q)                                          \
    {                                                                                     \
        if (y == 0) { *q = 0; return CQ_NUM_DIV_ZERO; }                                  \
        *q = (SIGNED && y == (CT)-1) ? cq_neg_##T(x) : (CT)(x / y);                      \
        return CQ_NUM_OK;                                                                 \
    }                                                                                     \
    CQ_NUM_FN int cq_mod_##T(CT x, CT y, CT *r)                                          \
    {                                                                                     \
        if (y == 0) { *r = 0; return CQ_NUM_DIV_ZERO; }                                  \
        *r = (SIGNED && y == (CT)-1) ? (CT)0 : (CT)(x % y);                              \
        return CQ_NUM_OK;                                                                 \
    }                                                                                     \
    CQ_NUM_FN int cq_shl_##T(CT x, int64_t n, CT *out)                                   \
    {                                                                                     \
        if (n < 0 || n >= BITS) { *out = 0; return CQ_NUM_SHIFT_RANGE; }                 \
        *out = (CT)((UT)x << n);                                                          \
        return CQ_NUM_OK;                                                                 \
    }                                                                                     \
    CQ_NUM_FN int cq_shr_##T(CT x, int64_t n, CT *out)                                   \
    {                                                                                     \
        if (n < 0 || n >= BITS) { *out = 0; return CQ_NUM_SHIFT_RANGE; }                 \
        *out = (SIGNED && (UT)x >> (BITS - 1)) ? (CT) ~(~(UT)x >> n) : (CT)((UT)x >> n);   \
        return CQ_NUM_OK;                                                                 \
    }

CQ_NUM_INT_OPS(s32, int32_t, uint32_t, 32, 1)
CQ_NUM_INT_OPS(u32, uint32_t, uint32_t, 32, 0)
CQ_NUM_INT_OPS(s64, int64_t, uint64_t, 64, 1)
CQ_NUM_INT_OPS(u64, uint64_t, uint64_t, 64, 0)

/* ------------------------------------------------------------------ MIN and MAX */

/* A NaN operand is ignored (IEEE minNum/maxNum); operands that compare equal (+0 and -0
 * included) give the first. Never fmin/fmax: they leave the sign of zero open. The same
 * rule for every float type, compared as doubles (exact). */
CQ_NUM_FN double cq_min_f(double x, double y)
{
    return isnan(x) ? y : isnan(y) ? x : (y < x ? y : x);
}

CQ_NUM_FN double cq_max_f(double x, double y)
{
    return isnan(x) ? y : isnan(y) ? x : (y > x ? y : x);
}

/* ------------------------------------------------------------------ math functions */

/* MATH's functions (croqvm/core/intrinsics.py, in its order; a test checks the numbers). */
enum {
    CQ_MATH_SQRT, CQ_MATH_RSQRT, CQ_MATH_EXP, CQ_MATH_EXP2F, CQ_MATH_EXPM1, CQ_MATH_LOG,
    CQ_MATH_LOG1P, CQ_MATH_SIN, CQ_MATH_COS, CQ_MATH_TAN, CQ_MATH_ASIN, CQ_MATH_ACOS,
    CQ_MATH_ATAN, CQ_MATH_SINH, CQ_MATH_COSH, CQ_MATH_TANH, CQ_MATH_CEIL, CQ_MATH_FLOOR,
    CQ_MATH_ROUND, CQ_MATH_FABS, CQ_MATH_FRCP_RN, CQ_MATH_GELU, CQ_MATH_SIGMOID,
    CQ_MATH_SOFTPLUS, CQ_MATH_SIGN, CQ_MATH_ISFINITE, CQ_MATH_POW, CQ_MATH_ATAN2,
    CQ_MATH_FMAF,
    CQ_NUM_MATH
};

/* numerics.math_op: function `fn` of the values x, y, z (those it takes) of a float type
 * of format `fmt`, computed in double by the C library's function or the formula of
 * croqvm/core/intrinsics.py, evaluated in this order, and rounded once to `fmt`
 * (__isfinite gives 1 or 0). __fmaf rounds x * y + z once (cq_fma_to), except where
 * x * y + z in double is not finite, which it gives as it is. */
CQ_NUM_FN double cq_math(int fn, double x, double y, double z, int fmt)
{
    double r;
    switch (fn) {
    case CQ_MATH_SQRT: r = sqrt(x); break;
    case CQ_MATH_RSQRT: r = 1.0 / sqrt(x); break;
    case CQ_MATH_EXP: r = exp(x); break;
    case CQ_MATH_EXP2F: r = exp2(x); break;
    case CQ_MATH_EXPM1: r = expm1(x); break;
    case CQ_MATH_LOG: r = log(x); break;
    case CQ_MATH_LOG1P: r = log1p(x); break;
    case CQ_MATH_SIN: r = sin(x); break;
    case CQ_MATH_COS: r = cos(x); break;
    case CQ_MATH_TAN: r = tan(x); break;
    case CQ_MATH_ASIN: r = asin(x); break;
    case CQ_MATH_ACOS: r = acos(x); break;
    case CQ_MATH_ATAN: r = atan(x); break;
    case CQ_MATH_SINH: r = sinh(x); break;
    case CQ_MATH_COSH: r = cosh(x); break;
    case CQ_MATH_TANH: r = tanh(x); break;
    case CQ_MATH_CEIL: r = ceil(x); break;
    case CQ_MATH_FLOOR: r = floor(x); break;
    case CQ_MATH_ROUND: r = round(x); break;
    case CQ_MATH_FABS: r = fabs(x); break;
    case CQ_MATH_FRCP_RN: r = 1.0 / x; break;
    case CQ_MATH_GELU: r = x * 0.5 * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        break;
    case CQ_MATH_SIGMOID: r = 1.0 / (1.0 + exp(-x)); break;
    case CQ_MATH_SOFTPLUS: r = log1p(exp(x)); break;
    case CQ_MATH_SIGN: r = (double)((x > 0.0) - (x < 0.0)); break;
    case CQ_MATH_ISFINITE: return isfinite(x) ? 1.0 : 0.0;
    case CQ_MATH_POW: r = pow(x, y); break;
    case CQ_MATH_ATAN2: r = atan2(x, y); break;
    case CQ_MATH_FMAF:
        r = x * y + z;
        if (isfinite(r))
            return cq_fma_to(z, x, y, fmt, 0);
        break;
    default: r = NAN; break;
    }
    return cq_round_fmt(r, fmt);
}

/* ------------------------------------------------------------------ print */

/* How print writes a float (numerics.format_float): %g of its value as a double, and
 * "nan" for every NaN (glibc writes "-nan" when the sign bit is set). Returns what
 * snprintf returns. */
CQ_NUM_FN int cq_format_float(char *buf, size_t size, double x)
{
    if (isnan(x))
        return snprintf(buf, size, "nan");
    return snprintf(buf, size, "%g", x);
}

#endif /* CQ_NUMERICS_H */
