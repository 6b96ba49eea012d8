/* Conversions between element types (LANGUAGE.md §12.3.3; croqvm/interp/scalar.py
 * _make_converter): integers wrap, floats truncate toward zero into integers (NaN or
 * out of range faults), conversions into floats round to nearest even once, numbers
 * become bool as x != 0.
 *
 * A value travels through one of two carriers: int64_t bits for bool and integers (u64
 * keeps its bits) or double for floats. C's integer-to-float conversions round once to
 * nearest even on the platforms croqvm supports (x86-64, aarch64), which is what the
 * reference's round-to-odd detour computes for 64-bit integers. */
#include <math.h>
#include "cq_engine.h"
#include "cq_types.h"

#define SIZE_OF(N) [CQ_##N] = sizeof(ST_##N),
const int cq_type_size[CQ_NTYPES] = { CQ_ALL_TYPES(SIZE_OF) };
#undef SIZE_OF

static inline int is_float(int t) { return t == CQ_F32 || t == CQ_F64; }

int64_t cq_to_int64(int t, const void *p, int64_t i)
{
    switch (t) {
#define LOAD(N) case CQ_##N: return (int64_t)LD_##N(((const ST_##N *)p)[i]);
    CQ_ALL_TYPES(LOAD)
#undef LOAD
    }
    return 0;
}

double cq_to_double(int t, const void *p, int64_t i)
{
    switch (t) {
    case CQ_F32: return ((const float *)p)[i];
    case CQ_F64: return ((const double *)p)[i];
    case CQ_U64: return (double)((const uint64_t *)p)[i];
    }
    return (double)cq_to_int64(t, p, i);
}

static inline void store_int(int t, void *p, int i, int64_t v)
{
    switch (t) {
#define STORE(N) case CQ_##N: ((ST_##N *)p)[i] = (ST_##N)v; break;
    CQ_ALL_TYPES(STORE)
#undef STORE
    }
}

static inline void store_double(int t, void *p, int i, double v)
{
    if (t == CQ_F32)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* [lo, hi + 1) of an integer type, as doubles (both powers of two, exact). */
static void int_range(int t, double *lo, double *top)
{
    static const double bits[CQ_NTYPES] = {
        [CQ_S8] = 8, [CQ_S16] = 16, [CQ_S32] = 32, [CQ_S64] = 64,
        [CQ_U8] = 8, [CQ_U16] = 16, [CQ_U32] = 32, [CQ_U64] = 64,
    };
    int sgn = t == CQ_S8 || t == CQ_S16 || t == CQ_S32 || t == CQ_S64;
    *lo = sgn ? -ldexp(1.0, (int)bits[t] - 1) : 0.0;
    *top = ldexp(1.0, (int)bits[t] - sgn);
}

void cq_convert(int src, int dst, const void *x, void *y, int n, uint32_t act, int *bad)
{
    *bad = -1;
    int size = cq_type_size[dst];
    if (src == dst) {
        for (int i = 0; i < n; i++)
            if (act >> i & 1)
                memcpy((char *)y + (size_t)i * size, (const char *)x + (size_t)i * size, size);
        return;
    }
    if (dst == CQ_BOOL) {
        for (int i = 0; i < n; i++)
            if (act >> i & 1)
                ((uint8_t *)y)[i] = is_float(src) ? cq_to_double(src, x, i) != 0
                                                  : cq_to_int64(src, x, i) != 0;
        return;
    }
    if (!is_float(dst)) {
        if (!is_float(src)) {
            for (int i = 0; i < n; i++)
                if (act >> i & 1)
                    store_int(dst, y, i, cq_to_int64(src, x, i));
            return;
        }
        double lo, top;
        int_range(dst, &lo, &top);
        for (int i = 0; i < n; i++) {
            if (!(act >> i & 1))
                continue;
            double t = trunc(cq_to_double(src, x, i));
            if (isnan(t) || t < lo || t >= top) {
                if (*bad < 0)
                    *bad = i;
                continue;
            }
            if (dst == CQ_U64)
                ((uint64_t *)y)[i] = (uint64_t)t;
            else
                store_int(dst, y, i, (int64_t)t);
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!(act >> i & 1))
            continue;
        if (is_float(src)) {
            store_double(dst, y, i, cq_to_double(src, x, i));
        } else if (src == CQ_U64) {   /* one rounding from the exact integer */
            uint64_t v = ((const uint64_t *)x)[i];
            if (dst == CQ_F32)
                ((float *)y)[i] = (float)v;
            else
                ((double *)y)[i] = (double)v;
        } else {
            int64_t v = cq_to_int64(src, x, i);
            if (dst == CQ_F32)
                ((float *)y)[i] = (float)v;
            else
                ((double *)y)[i] = (double)v;
        }
    }
}
