/* Conversions between element types (LANGUAGE.md §12.3.3; docs/NUMERICS.md): integers
 * wrap, floats truncate toward zero into integers (NaN or out of range faults), an
 * integer or float becomes a float rounded once to nearest even, numbers become bool as
 * x != 0. The numbers are cq_numerics.h's.
 *
 * A value travels through one of two carriers: int64_t bits for bool and integers (u64
 * keeps its bits) or double for floats (every float type's values are exact in f64). */
#include "cq_engine.h"
#include "cq_types.h"

#define SIZE_OF(N) [CQ_DT_##N] = sizeof(ST_##N),
const int cq_type_size[CQ_NUM_DTYPES] = { CQ_ALL_TYPES(SIZE_OF) };
#undef SIZE_OF

/* bits and signedness of the integer types (bool counts as unsigned, 8 bits) */
static const struct { int8_t bits, sgn; } int_shape[CQ_NUM_DTYPES] = {
    [CQ_DT_BOOL] = {8, 0}, [CQ_DT_S8] = {8, 1}, [CQ_DT_S16] = {16, 1}, [CQ_DT_S32] = {32, 1},
    [CQ_DT_S64] = {64, 1}, [CQ_DT_U8] = {8, 0}, [CQ_DT_U16] = {16, 0}, [CQ_DT_U32] = {32, 0},
    [CQ_DT_U64] = {64, 0}, [CQ_DT_S2] = {2, 1}, [CQ_DT_U2] = {2, 0}, [CQ_DT_S4] = {4, 1},
    [CQ_DT_U4] = {4, 0}, [CQ_DT_S6] = {6, 1}, [CQ_DT_U6] = {6, 0}, [CQ_DT_U1] = {1, 0},
};

int64_t cq_to_int64(int t, const void *p, int64_t i)
{
    switch (t) {
#define LOAD(N) case CQ_DT_##N: return (int64_t)LD_##N(((const ST_##N *)p)[i]);
    LOAD(BOOL)
    CQ_INT_TYPES(LOAD)
#undef LOAD
    }
    return 0;
}

double cq_to_double(int t, const void *p, int64_t i)
{
    switch (t) {
#define LOAD(N) case CQ_DT_##N: return (double)LD_##N(((const ST_##N *)p)[i]);
    CQ_FLOAT_TYPES(LOAD)
#undef LOAD
    case CQ_DT_U64: return (double)((const uint64_t *)p)[i];
    }
    return (double)cq_to_int64(t, p, i);
}

/* A double holding a value of float type t (already rounded to it) into its storage. */
static void store_float(int t, void *p, int i, double v)
{
    switch (t) {
#define STORE(N) case CQ_DT_##N: ((ST_##N *)p)[i] = SV_##N(v); break;
    CQ_FLOAT_TYPES(STORE)
#undef STORE
    }
}

static void store_int(int t, void *p, int i, int64_t v)
{
    switch (t) {
#define STORE(N) case CQ_DT_##N: ((ST_##N *)p)[i] = SV_##N(v); break;
    CQ_INT_TYPES(STORE)
#undef STORE
    }
}

/* One value of type src (lane i of x) as type dst into lane i of y; CQ_NUM_OK or
 * CQ_NUM_OUT_OF_RANGE (a float that no value of the integer type dst holds). */
static int convert_one(int src, int dst, const void *x, void *y, int i)
{
    if (dst == CQ_DT_BOOL) {
        ((uint8_t *)y)[i] = cq_is_float(src) ? cq_to_double(src, x, i) != 0
                                             : cq_to_int64(src, x, i) != 0;
        return CQ_NUM_OK;
    }
    if (!cq_is_float(dst)) {
        if (!cq_is_float(src)) {
            store_int(dst, y, i, cq_to_int64(src, x, i));
            return CQ_NUM_OK;
        }
        uint64_t bits;
        int st = cq_f64_to_int(cq_to_double(src, x, i), int_shape[dst].bits,
                               int_shape[dst].sgn, &bits);
        if (st == CQ_NUM_OK)
            store_int(dst, y, i, (int64_t)bits);
        return st;
    }
    double v;
    if (cq_is_float(src))
        v = cq_round_fmt(cq_to_double(src, x, i), cq_fmt_of(dst));
    else if (src == CQ_DT_U64)
        v = cq_u64_to_fmt(((const uint64_t *)x)[i], cq_fmt_of(dst));
    else
        v = cq_s64_to_fmt(cq_to_int64(src, x, i), cq_fmt_of(dst));
    store_float(dst, y, i, v);
    return CQ_NUM_OK;
}

/* The active lanes of x copied into y, values of ``size`` bytes. */
static void copy_lanes(int size, const void *x, void *y, int n, uint32_t act)
{
    switch (size) {
#define COPY(T) \
        for (int i = 0; i < n; i++) \
            ((T *)y)[i] = (act >> i & 1) ? ((const T *)x)[i] : ((T *)y)[i]; \
        return;
    case 1: COPY(uint8_t)
    case 2: COPY(uint16_t)
    case 4: COPY(uint32_t)
    default: COPY(uint64_t)
#undef COPY
    }
}

void cq_convert(int src, int dst, const void *x, void *y, int n, uint32_t act, int *bad)
{
    *bad = -1;
    if (src == dst) {
        copy_lanes(cq_type_size[dst], x, y, n, act);
        return;
    }
    for (int i = 0; i < n; i++)
        if ((act >> i & 1) && convert_one(src, dst, x, y, i) != CQ_NUM_OK && *bad < 0)
            *bad = i;
}

/* MATH: cq_math of each active lane's arguments, R[b]'s float type (docs/NUMERICS.md). */
int cq_op_math(cq_warp *w, const cq_ins *ins)
{
    int t = ins->tb, fmt = cq_fmt_of(t);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        double r = cq_math(ins->e, cq_to_double(t, w->regs + ins->rb, i),
                           cq_to_double(t, w->regs + ins->rc, i),
                           cq_to_double(t, w->regs + ins->rd, i), fmt);
        if (ins->ta == CQ_DT_BOOL)
            ((uint8_t *)(w->regs + ins->ra))[i] = r != 0.0;
        else
            store_float(ins->ta, w->regs + ins->ra, i, r);
    }
    return CQ_ST_OK;
}
