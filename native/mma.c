/* MMA: MMA_FILL, MMA_LOAD, MMA_EXEC, MMA_STORE (LANGUAGE.md §11, §12.4;
 * docs/EXECUTION.md §8; croqvm/interp/mma.py is the reference).
 *
 * Each op is a collective of its unit; its effect runs once per fragment instance among
 * the participants. A fragment instance holds int64 values (integer types) or doubles,
 * each already rounded to the fragment's type; until an exec or a store gives it a
 * shape it holds only a fill value (§11.3.3). */
#include <math.h>
#include <stdlib.h>
#include "cq_engine.h"

static int is_int_type(int t) { return t != CQ_F32 && t != CQ_F64 && t != CQ_BOOL; }

static cq_frag *fragment(cq_block *blk, int m, int u)
{
    if (!blk->frags[m])
        blk->frags[m] = cq_xcalloc((size_t)blk->size, sizeof(cq_frag *));
    cq_frag *f = blk->frags[m][u];
    if (!f) {
        f = blk->frags[m][u] = cq_xcalloc(1, sizeof(cq_frag));
        f->type = blk->code->frag[m].type;
    }
    return f;
}

static int unit_of(const cq_block *blk, int m, int lane)
{
    int unit = blk->code->frag[m].unit;
    return unit > 0 ? lane / unit : 0;
}

/* The participants grouped by the copy of fragment m they own, by increasing unit
 * instance: for each group its first lane. */
static int groups(const cq_block *blk, int m, const int *lanes, int n, int *first)
{
    int ng = 0, last = -1;
    for (int k = 0; k < n; k++) {       /* lanes increase, so unit instances do too */
        int u = unit_of(blk, m, lanes[k]);
        if (u != last) {
            first[ng++] = lanes[k];
            last = u;
        }
    }
    return ng;
}

/* The fragment's values, allocated with its fill value at ``rows`` x ``cols``. */
static int shaped(cq_block *blk, const cq_ins *ins, cq_frag *f, int m, int64_t rows,
                  int64_t cols, int lane)
{
    if (f->has_data)
        return CQ_ST_OK;
    int64_t n;
    int64_t shape[2] = {rows, cols};
    if (rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &n) ||
        !(f->data = calloc((size_t)n + 1, 8)))
        return cq_alloc_fault(blk, ins, lane, 2, blk->code->frag[m].name, 2, shape);
    for (int64_t k = 0; k < n; k++) {
        if (is_int_type(f->type))
            ((int64_t *)f->data)[k] = f->ifill;
        else
            ((double *)f->data)[k] = f->ffill;
    }
    f->rows = rows;
    f->cols = cols;
    f->has_data = 1;
    return CQ_ST_OK;
}

/* A value of ``type`` (an element, or a register lane) in a fragment of ``ftype``. */
static void hold(int ftype, int vtype, const void *p, int64_t i, int64_t *iv, double *fv)
{
    if (is_int_type(ftype))
        *iv = cq_to_int64(vtype, p, i);
    else
        *fv = cq_to_double(vtype, p, i);
}

/* ------------------------------------------------------------------ operands */

enum { L_BUFFER = 1, L_ORIGIN = 2, L_EXTENTS_TUPLE = 3 };   /* faults.py OPERAND_LABELS */

typedef struct { cq_buf *buf; int64_t o[2], e[2]; } view2;

static int view_for(cq_block *blk, const cq_ins *ins, int v, int lane, view2 *out)
{
    int i;
    cq_warp *w = cq_warp_of(blk, lane, &i);
    return cq_view_of(w, ins, v, i, &out->buf, out->o, out->e);
}

/* §7.4.5 for a view (buffer, origin, extents), settled by its registers when its base is
 * one instance for the block. */
static int uniform_view(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                        int n, int v)
{
    const cq_viewdecl *vd = &blk->code->view[v];
    if (vd->kind == 0 && blk->code->buf[vd->base].storage != 2) {
        int32_t regs[5] = {vd->origin[0], vd->origin[1], vd->extents[0], vd->extents[1], vd->arr};
        if (cq_uniform_regs(blk, lanes, n, regs, vd->arr >= 0 ? 5 : 4))
            return CQ_ST_OK;
    }
    view2 a, b;
    if (view_for(blk, ins, v, lanes[0], &a) != CQ_ST_OK)
        return CQ_ST_FAULT;
    for (int k = 1; k < n; k++) {
        if (view_for(blk, ins, v, lanes[k], &b) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t x[3] = {2, 0, 0}, y[3] = {2, 0, 0};
        if (a.buf->name != b.buf->name) {
            x[0] = a.buf->name;
            y[0] = b.buf->name;
            return cq_operands_differ(blk, rec, lanes[0], lanes[k], L_BUFFER, 1, x, y);
        }
        for (int label = L_ORIGIN; label <= L_EXTENTS_TUPLE; label++) {
            const int64_t *p = label == L_ORIGIN ? a.o : a.e, *q = label == L_ORIGIN ? b.o : b.e;
            if (p[0] != q[0] || p[1] != q[1]) {
                x[1] = p[0], x[2] = p[1], y[1] = q[0], y[2] = q[1];
                return cq_operands_differ(blk, rec, lanes[0], lanes[k], label, 3, x, y);
            }
        }
    }
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ the ops */

static int effect_fill(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                       int n)
{
    if (cq_uniform_value(blk, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ins->a, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        cq_frag *f = fragment(blk, ins->a, unit_of(blk, ins->a, first[g]));
        int i, bad;
        cq_warp *w = cq_warp_of(blk, first[g], &i);
        char v[8];
        const char *reg = w->regs + blk->code->roff[ins->b];
        cq_convert(ins->tb, f->type, reg + (size_t)i * cq_type_size[ins->tb], v, 1, 1u, &bad);
        if (bad >= 0)
            return cq_fault_convert(w, ins, i, ins->tb, reg, f->type);
        hold(f->type, f->type, v, 0, &f->ifill, &f->ffill);
        for (int64_t k = 0; f->has_data && k < f->rows * f->cols; k++) {
            if (is_int_type(f->type))
                ((int64_t *)f->data)[k] = f->ifill;
            else
                ((double *)f->data)[k] = f->ffill;
        }
    }
    return CQ_ST_OK;
}

/* The first element in row-major order of the tile at o with extents e that lies outside
 * shape (mma.py _first_outside); 0 when none. */
static int first_outside(const int64_t *o, const int64_t *e, const int64_t *shape, int64_t *at)
{
    if (e[0] < 1 || e[1] < 1)
        return 0;
    if (o[0] < 0 || o[0] >= shape[0] || o[1] < 0 || o[1] >= shape[1]) {
        at[0] = o[0], at[1] = o[1];
        return 1;
    }
    int k = o[1] + e[1] > shape[1] ? 1 : o[0] + e[0] > shape[0] ? 0 : -1;
    if (k < 0)
        return 0;
    at[0] = o[0], at[1] = o[1];
    at[k] = shape[k];
    return 1;
}

static int effect_load(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                       int n)
{
    if (uniform_view(blk, ins, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ins->a, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        view2 v;
        int64_t at[2];
        if (view_for(blk, ins, ins->b, first[g], &v) != CQ_ST_OK)
            return CQ_ST_FAULT;
        const cq_buf *b = v.buf;
        if (first_outside(v.o, v.e, b->shape, at)) {
            cq_fault *f = cq_fault_new(blk, ins, CQ_F_MMA_OUTSIDE, first[g]);
            f->i[0] = ins->c;
            f->i[1] = b->name;
            f->i[2] = 2;
            f->i[3] = at[0];
            f->i[4] = at[1];
            return CQ_ST_FAULT;
        }
        int64_t rows = v.e[0] > 0 ? v.e[0] : 0, cols = v.e[1] > 0 ? v.e[1] : 0;
        if (b->written)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < cols; c++)
                    if (!b->written[(v.o[0] + r) * b->shape[1] + v.o[1] + c]) {
                        cq_fault *f = cq_fault_new(blk, ins, CQ_F_UNINIT, first[g]);
                        f->i[0] = -1;
                        f->i[1] = b->name;
                        f->i[2] = b->decl_span;
                        f->i[3] = 2;
                        f->i[4] = v.o[0] + r;
                        f->i[5] = v.o[1] + c;
                        return CQ_ST_FAULT;
                    }
        cq_frag *f = fragment(blk, ins->a, unit_of(blk, ins->a, first[g]));
        free(f->data);
        f->data = cq_xcalloc((size_t)(rows * cols) + 1, 8);
        f->type = b->type;
        f->rows = rows;
        f->cols = cols;
        f->has_data = 1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                hold(f->type, b->type, b->data, (v.o[0] + r) * b->shape[1] + v.o[1] + c,
                     &((int64_t *)f->data)[r * cols + c], &((double *)f->data)[r * cols + c]);
    }
    return CQ_ST_OK;
}

static int shapes_fault(cq_block *blk, const cq_ins *ins, int lane, int x, int64_t x0,
                        int64_t x1, int y, int64_t y0, int64_t y1)
{
    cq_fault *f = cq_fault_new(blk, ins, CQ_F_MMA_SHAPES, lane);
    f->i[0] = x;
    f->i[1] = y;
    f->i[2] = x0, f->i[3] = x1, f->i[4] = y0, f->i[5] = y1;
    return CQ_ST_FAULT;
}

static cq_frag *operand(cq_block *blk, const cq_ins *ins, int m, int lane, int *st)
{
    cq_frag *f = fragment(blk, m, unit_of(blk, m, lane));
    *st = CQ_ST_OK;
    if (!f->has_data) {
        cq_fault *fl = cq_fault_new(blk, ins, CQ_F_FRAG_EMPTY, lane);
        fl->i[0] = m;
        *st = CQ_ST_FAULT;
    }
    return f;
}

/* §12.4: c + a * b computed exactly and rounded once to the accumulator's type, with
 * error-free sums and products in f64 (croqvm/numerics.py fma_to, f32 and f64). */
static double two_sum(double x, double y, double *e)
{
    double s = x + y, b = s - x;
    *e = (x - (s - b)) + (y - b);
    return s;
}

static double to_odd(double s, double e)
{
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (e != 0.0 && isfinite(e) && !(u & 1))
        return nextafter(s, e > 0.0 ? INFINITY : -INFINITY);
    return s;
}

static double two_product(double x, double y, double *e)
{
    double p = x * y, t, xh, xl, yh, yl;
    t = 134217729.0 * x;
    xh = t - (t - x);
    xl = x - xh;
    t = 134217729.0 * y;
    yh = t - (t - y);
    yl = y - yh;
    double err = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl;
    *e = isfinite(err) ? err : 0.0;
    return p;
}

static double fma_to(double c, double a, double b, int type, int exact)
{
    double e, pe, v;
    if (exact) {
        double s = two_sum(c, a * b, &e);
        return type == CQ_F64 ? s : (double)(float)to_odd(s, e);
    }
    double p = two_product(a, b, &pe);
    double s = two_sum(c, p, &e);
    double t = two_sum(e, pe, &v);
    v = to_odd(t, v);
    if (type == CQ_F64)
        return s + v;
    t = two_sum(s, v, &e);
    return (double)(float)to_odd(t, e);
}

/* The integer accumulator c + a * b wrapped into ``type`` (§12.4: integers wrap). */
static int64_t int_step(int64_t c, int64_t a, int64_t b, int type)
{
    int64_t v = (int64_t)((uint64_t)c + (uint64_t)a * (uint64_t)b), out = 0;
    int bad;
    cq_convert(CQ_S64, type, &v, &out, 1, 1u, &bad);
    return cq_to_int64(type, &out, 0);
}

static int effect_exec(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    int mc = ins->a, ma = ins->b, mb = ins->c, layout = ins->d;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, mc, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        int lane = first[g], st;
        cq_frag *A = operand(blk, ins, ma, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        cq_frag *B = operand(blk, ins, mb, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        int at = layout >= 2, bt = layout == 0 || layout == 2;   /* which are transposed */
        int64_t M = at ? A->cols : A->rows, K = at ? A->rows : A->cols;
        int64_t KB = bt ? B->cols : B->rows, N = bt ? B->rows : B->cols;
        const cq_fragdecl *fd = blk->code->frag;
        if (K != KB)
            return shapes_fault(blk, ins, lane, fd[ma].name, A->rows, A->cols, fd[mb].name,
                                B->rows, B->cols);
        cq_frag *C = fragment(blk, mc, unit_of(blk, mc, lane));
        if (C->has_data && (C->rows != M || C->cols != N)) {
            int byA = C->rows != M;   /* as the checker does: A when M disagrees, else B */
            return shapes_fault(blk, ins, lane, fd[mc].name, C->rows, C->cols,
                                byA ? fd[ma].name : fd[mb].name, byA ? A->rows : B->rows,
                                byA ? A->cols : B->cols);
        }
        if (shaped(blk, ins, C, mc, M, N, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int exact = A->type != CQ_F64 && B->type != CQ_F64;
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t ai = at ? k * A->cols + i : i * A->cols + k;
                    int64_t bi = bt ? j * B->cols + k : k * B->cols + j;
                    if (is_int_type(C->type)) {
                        /* operands are held as int64 or double: an int accumulator of
                         * float tiles takes their values (as numpy's astype does) */
                        int64_t a = is_int_type(A->type) ? ((int64_t *)A->data)[ai]
                                                         : (int64_t)((double *)A->data)[ai];
                        int64_t b = is_int_type(B->type) ? ((int64_t *)B->data)[bi]
                                                         : (int64_t)((double *)B->data)[bi];
                        int64_t *c = &((int64_t *)C->data)[i * N + j];
                        *c = int_step(*c, a, b, C->type);
                    } else {
                        double a = is_int_type(A->type) ? (double)((int64_t *)A->data)[ai]
                                                        : ((double *)A->data)[ai];
                        double b = is_int_type(B->type) ? (double)((int64_t *)B->data)[bi]
                                                        : ((double *)B->data)[bi];
                        double *c = &((double *)C->data)[i * N + j];
                        *c = fma_to(*c, a, b, C->type, exact);
                    }
                }
    }
    return CQ_ST_OK;
}

static int effect_store(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                        int n)
{
    int m = ins->a, transp = ins->c;
    if (uniform_view(blk, ins, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, m, lanes, n, first);
    const cq_fragdecl *decl = &blk->code->frag[m];
    if (blk->code->coll[ins->d].unit == 0 && ng > 1 && (decl->unit == 32 || decl->unit == 128)) {
        cq_fault *f = cq_fault_new(blk, ins, CQ_F_MMA_STORE_UNITS, lanes[0]);
        f->i[0] = m;
        f->i[1] = ng;
        return CQ_ST_FAULT;
    }
    for (int g = 0; g < ng; g++) {
        view2 v;
        if (view_for(blk, ins, ins->b, first[g], &v) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t rows = transp ? v.e[1] : v.e[0], cols = transp ? v.e[0] : v.e[1];
        cq_frag *f = fragment(blk, m, unit_of(blk, m, first[g]));
        if (shaped(blk, ins, f, m, rows, cols, first[g]) != CQ_ST_OK)
            return CQ_ST_FAULT;
        if (f->rows != rows || f->cols != cols)   /* §11.3.4: V is [M, N] ([N, M] .transp) */
            return shapes_fault(blk, ins, first[g], decl->name, f->rows, f->cols, v.buf->name,
                                v.e[0], v.e[1]);
        cq_buf *b = v.buf;
        for (int64_t r = 0; r < v.e[0]; r++)
            for (int64_t c = 0; c < v.e[1]; c++) {
                int64_t y = v.o[0] + r, x = v.o[1] + c;
                if (y < 0 || y >= b->shape[0] || x < 0 || x >= b->shape[1])
                    continue;
                int64_t k = transp ? c * f->cols + r : r * f->cols + c;
                char val[8];
                int bad;
                if (is_int_type(f->type)) {   /* wrapped into the fragment's type first */
                    char t[8];
                    cq_convert(CQ_S64, f->type, &((int64_t *)f->data)[k], t, 1, 1u, &bad);
                    cq_convert(f->type, b->type, t, val, 1, 1u, &bad);
                } else {
                    double d = ((double *)f->data)[k];
                    float s = (float)d;
                    cq_convert(f->type == CQ_F32 ? CQ_F32 : CQ_F64, b->type,
                               f->type == CQ_F32 ? (void *)&s : (void *)&d, val, 1, 1u, &bad);
                }
                if (bad >= 0) {
                    cq_fault *fl = cq_fault_new(blk, ins, CQ_F_CONVERT, first[g]);
                    fl->f[0] = is_int_type(f->type) ? (double)((int64_t *)f->data)[k]
                                                    : ((double *)f->data)[k];
                    fl->i[0] = b->type;
                    return CQ_ST_FAULT;
                }
                int64_t e = y * b->shape[1] + x;
                memcpy(b->data + e * b->esize, val, b->esize);
                if (b->written)
                    b->written[e] = 1;
            }
    }
    return CQ_ST_OK;
}

int cq_effect_mma(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n)
{
    switch (ins->op) {
    case CQ_OP_MMA_FILL: return effect_fill(blk, ins, rec, lanes, n);
    case CQ_OP_MMA_LOAD: return effect_load(blk, ins, rec, lanes, n);
    case CQ_OP_MMA_EXEC: return effect_exec(blk, ins, lanes, n);
    default: return effect_store(blk, ins, rec, lanes, n);
    }
}

/* The site operand of each MMA opcode. */
int cq_op_mma(cq_warp *w, const cq_ins *ins)
{
    int coll = ins->op == CQ_OP_MMA_EXEC ? ins->e : ins->op == CQ_OP_MMA_STORE ? ins->d : ins->c;
    return cq_arrive(w, ins, coll, 1);
}
