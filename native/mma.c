/* MMA: MMA_FILL, MMA_LOAD, MMA_EXEC, MMA_STORE, MMA_STORE_MASK, MMA_ASYNC, MMA_WAIT,
 * MMA_SCALE, MMA_SPARSE (LANGUAGE.md §11, §12.4; docs/EXECUTION.md §8; croqvm/interp/mma.py is the reference).
 *
 * Each op is a collective of its unit; its effect runs once per fragment instance among
 * the participants. A fragment instance holds int64 values (integer types) or doubles,
 * each already rounded to the fragment's type; until an exec or a store gives it a
 * shape it holds only a fill value (§11.3.3). */
#include <math.h>
#include <stdlib.h>
#include "cq_engine.h"
#include "cq_types.h"

static int is_int_type(int t) { return !cq_is_float(t); }

static cq_frag *fragment(cq_block *blk, int m, int u)
{
    if (!blk->frags[m])
        blk->frags[m] = cq_xcalloc((size_t)blk->size, sizeof(cq_frag *));
    cq_frag *f = blk->frags[m][u];
    if (!f) {
        f = blk->frags[m][u] = cq_xcalloc(1, sizeof(cq_frag));
        f->rows = blk->code->frag[m].rows;     /* -1 (dynamic) until the first use */
        f->cols = blk->code->frag[m].cols;
    }
    return f;
}

/* MMA_PENDING when an asynchronous MMA on the copy is not yet waited (§11.5). */
static int ready(cq_block *blk, const cq_ins *ins, const cq_frag *f, int m, int lane)
{
    if (!f->pending)
        return CQ_ST_OK;
    cq_put(cq_fault_new(blk, ins, CQ_FAULT_MMA_PENDING, lane), m);
    return CQ_ST_FAULT;
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

/* Whether a tile of rows x cols agrees with the copy's shape; fixes its dynamic extents
 * if so (mma.py Fragment.fits). */
static int fits(cq_frag *f, int64_t rows, int64_t cols)
{
    if ((f->rows != -1 && f->rows != rows) || (f->cols != -1 && f->cols != cols))
        return 0;
    f->rows = (int32_t)rows;
    f->cols = (int32_t)cols;
    return 1;
}

/* The copy's values, made of its fill value at the first use (its shape is fixed). */
static int shaped(cq_block *blk, const cq_ins *ins, cq_frag *f, int m, int lane)
{
    if (f->has_data)
        return CQ_ST_OK;
    int64_t n, shape[2] = {f->rows, f->cols};
    if (__builtin_mul_overflow(shape[0], shape[1], &n) || !(f->data = calloc((size_t)n + 1, 8)))
        return cq_alloc_fault(blk, ins, lane, CQ_FAULT_ALLOC_FRAGMENT, m, 2, shape);
    for (int64_t k = 0; k < n; k++) {
        if (is_int_type(blk->code->frag[m].type))
            ((int64_t *)f->data)[k] = f->ifill;
        else
            ((double *)f->data)[k] = f->ffill;
    }
    f->has_data = 1;
    return CQ_ST_OK;
}

/* A value of ``vtype`` (element i at p) held as a fragment of ``ftype`` holds it:
 * int64 for integer fragments (numpy's astype: a float truncates, NaN and values beyond
 * int64 give INT64_MIN as x86 does), double for float ones. */
static void hold(int ftype, int vtype, const void *p, int64_t i, int64_t *iv, double *fv)
{
    if (!is_int_type(ftype)) {
        *fv = cq_to_double(vtype, p, i);
    } else if (!cq_is_float(vtype)) {
        *iv = cq_to_int64(vtype, p, i);
    } else {
        double x = trunc(cq_to_double(vtype, p, i));
        *iv = x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
    }
}

static void put_fragshape(cq_record *f, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    cq_put_list(f, 2, shape);
}

/* ------------------------------------------------------------------ operands */

/* A 2-D tile: a view of ``n`` dimensions that shows two, ``r`` (rows) and ``c``
 * (columns), the others of extent 1 (.sqz(), §8.3.4). */
typedef struct {
    cq_buf *buf;
    cq_buf reshaped;        /* the buffer of a reshaped view (§8.3.3) */
    int n, r, c;
    int64_t o[CQ_MAX_RANK], e[CQ_MAX_RANK];
} view2;

static int view_for(cq_block *blk, const cq_ins *ins, int v, int lane, view2 *out)
{
    int i;
    cq_warp *w = cq_warp_of(blk, lane, &i);
    const cq_viewdecl *vd = &blk->code->view[v];
    out->n = vd->n;
    out->r = vd->nshown ? vd->shown[0] : 0;
    out->c = vd->nshown ? vd->shown[1] : 1;
    return cq_view_of(w, ins, v, i, &out->reshaped, &out->buf, out->o, out->e);
}

/* The coordinates in its buffer of element (r, c) of tile v. */
static void tile_coords(const view2 *v, int64_t r, int64_t c, int64_t *at)
{
    memcpy(at, v->o, sizeof(int64_t) * v->n);
    at[v->r] += r;
    at[v->c] += c;
}

static int64_t flat_in(const cq_buf *b, const int64_t *at)
{
    int64_t f = 0;
    for (int d = 0; d < b->ndim; d++)
        f = f * b->shape[d] + at[d];
    return f;
}

/* §7.4.5 for a view (buffer, origin, extents) of any rank, settled by its registers when
 * its base is one instance for the block. */
static int uniform_view(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                        int n, int v)
{
    const cq_viewdecl *vd = &blk->code->view[v];
    if (vd->kind == 0 && blk->code->buf[vd->base].storage != 2) {
        int32_t regs[3 * CQ_MAX_RANK + 2];      /* memory.py view_registers */
        int nr = 0;
        for (int d = 0; d < vd->n; d++)
            regs[nr++] = vd->origin[d];
        for (int d = 0; d < vd->n; d++)
            regs[nr++] = vd->extents[d];
        for (int d = 0; d < vd->nspace; d++)
            regs[nr++] = vd->space[d];
        if (vd->nspace)
            regs[nr++] = vd->flat;
        if (vd->arr >= 0)
            regs[nr++] = vd->arr;
        if (cq_uniform_regs(blk, lanes, n, regs, nr))
            return CQ_ST_OK;
    }
    view2 a, b;
    if (view_for(blk, ins, v, lanes[0], &a) != CQ_ST_OK)
        return CQ_ST_FAULT;
    for (int k = 1; k < n; k++) {
        if (view_for(blk, ins, v, lanes[k], &b) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t x[3] = {a.buf->code, a.buf->slot, a.buf->element};
        int64_t y[3] = {b.buf->code, b.buf->slot, b.buf->element};
        if (memcmp(x, y, sizeof x))
            return cq_operands_differ(blk, rec, lanes[0], lanes[k], CQ_LABEL_BUFFER,
                                      CQ_TAG_BUFFER, 3, x, y);
        for (int label = CQ_LABEL_ORIGIN; label <= CQ_LABEL_EXTENTS; label++) {
            const int64_t *p = label == CQ_LABEL_ORIGIN ? a.o : a.e;
            const int64_t *q = label == CQ_LABEL_ORIGIN ? b.o : b.e;
            if (memcmp(p, q, sizeof(int64_t) * a.n)) {
                int64_t s[CQ_MAX_RANK + 1] = {a.n}, t[CQ_MAX_RANK + 1] = {a.n};
                memcpy(s + 1, p, sizeof(int64_t) * a.n);
                memcpy(t + 1, q, sizeof(int64_t) * a.n);
                return cq_operands_differ(blk, rec, lanes[0], lanes[k], label, CQ_TAG_TUPLE,
                                          a.n + 1, s, t);
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
    int type = blk->code->frag[ins->a].type;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ins->a, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        cq_frag *f = fragment(blk, ins->a, unit_of(blk, ins->a, first[g]));
        if (ready(blk, ins, f, ins->a, first[g]) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int i, bad;
        cq_warp *w = cq_warp_of(blk, first[g], &i);
        char v[8];
        const char *reg = w->regs + blk->code->roff[ins->b];
        cq_convert(ins->tb, type, reg + (size_t)i * cq_type_size[ins->tb], v, 1, 1u, &bad);
        if (bad >= 0)
            return cq_fault_convert(w, ins, i, ins->tb, reg, type);
        hold(type, type, v, 0, &f->ifill, &f->ffill);
        for (int64_t k = 0; f->has_data && k < (int64_t)f->rows * f->cols; k++) {
            if (is_int_type(type))
                ((int64_t *)f->data)[k] = f->ifill;
            else
                ((double *)f->data)[k] = f->ffill;
        }
    }
    return CQ_ST_OK;
}

/* The first element in row-major order of the tile at o with extents e that lies outside
 * shape (mma.py _first_outside); 0 when none. */
static int first_outside(const int64_t *o, const int64_t *e, const int64_t *shape, int n,
                         int64_t *at)
{
    int k = -1;
    for (int d = 0; d < n; d++)
        if (e[d] < 1)
            return 0;
    memcpy(at, o, sizeof(int64_t) * n);
    for (int d = 0; d < n; d++)
        if (o[d] < 0 || o[d] >= shape[d])
            return 1;
    for (int d = 0; d < n; d++)
        if (o[d] + e[d] > shape[d])
            k = d;
    if (k < 0)
        return 0;
    at[k] = shape[k];
    return 1;
}

static int tile_shape_fault(cq_block *blk, const cq_ins *ins, int lane, int m, const cq_frag *f,
                            const cq_buf *b, int64_t r, int64_t c)
{
    cq_record *fl = cq_fault_new(blk, ins, CQ_FAULT_MMA_TILE_SHAPE, lane);
    int64_t ys[2] = {r, c};
    cq_put(fl, m);
    put_fragshape(fl, f->rows, f->cols);
    cq_put_buffer(fl, b);
    cq_put_list(fl, 2, ys);
    return CQ_ST_FAULT;
}

/* The position in its buffer of element (r, c) of view v, read through the view's
 * swizzle (§9.7). */
static int64_t tile_at(const view2 *v, int64_t r, int64_t c, int32_t swizzle)
{
    int64_t at[CQ_MAX_RANK];
    tile_coords(v, r, c, at);
    return cq_swizzled(v->buf, flat_in(v->buf, at), swizzle);
}

static int effect_load(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                       int n)
{
    if (uniform_view(blk, ins, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int type = blk->code->frag[ins->a].type;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ins->a, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        view2 v;
        int64_t at[CQ_MAX_RANK];
        if (view_for(blk, ins, ins->b, first[g], &v) != CQ_ST_OK)
            return CQ_ST_FAULT;
        const cq_buf *b = v.buf;
        for (int d = 0; d < v.n; d++)
            if (v.e[d] < 1) {   /* as a DMA's tile (§9.5.1): no K = 0 or sliced-off MMA */
                cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_EMPTY_TILE, first[g]);
                cq_put_buffer(f, b);
                cq_put_list(f, v.n, v.o);
                cq_put_list(f, v.n, v.e);
                return CQ_ST_FAULT;
            }
        if (first_outside(v.o, v.e, b->shape, v.n, at)) {
            cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_MMA_READ_OUTSIDE, first[g]);
            cq_put(f, ins->c);
            cq_put_list(f, v.n, at);
            cq_put_buffer(f, b);
            return CQ_ST_FAULT;
        }
        int64_t rows = v.e[v.r] > 0 ? v.e[v.r] : 0, cols = v.e[v.c] > 0 ? v.e[v.c] : 0;
        int32_t swz = blk->code->view[ins->b].swizzle;
        for (int64_t r = 0; b->written && r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                if (!b->written[tile_at(&v, r, c, swz)]) {
                    cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_MMA_UNINITIALISED, first[g]);
                    tile_coords(&v, r, c, at);
                    cq_put_buffer(f, b);
                    cq_put_list(f, v.n, at);
                    return CQ_ST_FAULT;
                }
        cq_frag *f = fragment(blk, ins->a, unit_of(blk, ins->a, first[g]));
        if (ready(blk, ins, f, ins->a, first[g]) != CQ_ST_OK)   /* an accumulator (§11.3.2) */
            return CQ_ST_FAULT;
        if (!fits(f, rows, cols))
            return tile_shape_fault(blk, ins, first[g], ins->a, f, b, rows, cols);
        free(f->data);
        f->data = cq_xcalloc((size_t)(rows * cols) + 1, 8);
        f->has_data = 1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                hold(type, b->type, b->data, tile_at(&v, r, c, swz),
                     &((int64_t *)f->data)[r * cols + c], &((double *)f->data)[r * cols + c]);
        if (blk->race) {
            if (cq_race_tile(blk, ins, b, v.o, v.e, v.n, swz, 0, first[g]) != CQ_ST_OK)
                return CQ_ST_FAULT;
            cq_race_mma_loaded(blk, ins, b, v.o, v.e, v.n, swz, first[g]);
        }
    }
    return CQ_ST_OK;
}

/* MMA_SHAPES (§11.3.1): fragment x with its shape (a fragshape), fragment y's tile. */
static int shapes_fault(cq_block *blk, const cq_ins *ins, int lane, int x, int64_t x0,
                        int64_t x1, int y, int64_t y0, int64_t y1)
{
    cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_MMA_SHAPES, lane);
    int64_t ys[2] = {y0, y1};
    cq_put(f, x);
    put_fragshape(f, x0, x1);
    cq_put(f, y);
    cq_put_list(f, 2, ys);
    return CQ_ST_FAULT;
}

static cq_frag *operand(cq_block *blk, const cq_ins *ins, int m, int lane, int *st)
{
    cq_frag *f = fragment(blk, m, unit_of(blk, m, lane));
    *st = CQ_ST_OK;
    if (!f->has_data) {
        cq_put(cq_fault_new(blk, ins, CQ_FAULT_FRAGMENT_EMPTY, lane), m);
        *st = CQ_ST_FAULT;
    }
    return f;
}

/* The integer accumulator c + a * b wrapped into ``type`` (§12.4: integers wrap). */
static int64_t int_step(int64_t c, int64_t a, int64_t b, int type)
{
    int64_t v = cq_add_s64(c, cq_mul_s64(a, b)), out = 0;
    int bad;
    cq_convert(CQ_DT_S64, type, &v, &out, 1, 1u, &bad);
    return cq_to_int64(type, &out, 0);
}

/* C[m][n] += A[m][k] * B[k][n] for k ascending, rounding after each step (§11.3, §12.4);
 * ``layout`` (0 row.row, 1 row.col, 2 col.row, 3 col.col) says how A and B are stored:
 * A row [M, K] / col [K, M]; B row [N, K] / col [K, N]. */
static int effect_exec(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    int mc = ins->a, ma = ins->b, mb = ins->c, layout = ins->d;
    const cq_fragdecl *fd = blk->code->frag;
    int ctype = fd[mc].type, fmt = cq_fmt_of(ctype);
    int exact = fd[ma].type != CQ_DT_F64 && fd[mb].type != CQ_DT_F64;   /* products exact in f64 */
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, mc, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        int lane = first[g], st;
        if (ready(blk, ins, fragment(blk, mc, unit_of(blk, mc, lane)), mc, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        cq_frag *A = operand(blk, ins, ma, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        cq_frag *B = operand(blk, ins, mb, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        int at = layout >= 2, bt = layout == 0 || layout == 2;   /* which are transposed */
        int64_t M = at ? A->cols : A->rows, K = at ? A->rows : A->cols;
        int64_t KB = bt ? B->cols : B->rows, N = bt ? B->rows : B->cols;
        if (K != KB)
            return shapes_fault(blk, ins, lane, ma, A->rows, A->cols, mb, B->rows, B->cols);
        cq_frag *C = fragment(blk, mc, unit_of(blk, mc, lane));
        int64_t d0 = C->rows, d1 = C->cols;
        if (!fits(C, M, N)) {   /* as the checker does: A when M disagrees, else B */
            int byA = d0 != M && d0 != -1;
            return shapes_fault(blk, ins, lane, mc, d0, d1, byA ? ma : mb,
                                byA ? A->rows : B->rows, byA ? A->cols : B->cols);
        }
        if (shaped(blk, ins, C, mc, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int aint = is_int_type(fd[ma].type), bint = is_int_type(fd[mb].type);
        /* each element on its own, k ascending (§12.4): the same steps in any element
         * order, and the accumulator stays in a register */
        int64_t as = at ? 1 : A->cols, ak = at ? A->cols : 1;   /* A[i][k] = a[i*as + k*ak] */
        int64_t bs = bt ? B->cols : 1, bk = bt ? 1 : B->cols;   /* B[k][j] = b[j*bs + k*bk] */
        if (!is_int_type(ctype) && !aint && !bint) {             /* the common case */
            const double *a = A->data, *b = B->data;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double c = ((double *)C->data)[i * N + j];
                    const double *ap = a + i * as, *bp = b + j * bs;
                    for (int64_t k = 0; k < K; k++)
                        c = cq_fma_to(c, ap[k * ak], bp[k * bk], fmt, exact);
                    ((double *)C->data)[i * N + j] = c;
                }
            continue;
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                for (int64_t k = 0; k < K; k++) {
                    int64_t ai = i * as + k * ak, bi = j * bs + k * bk;
                    if (is_int_type(ctype)) {
                        /* operands are held as int64 or double: an int accumulator of
                         * float tiles takes their values (as numpy's astype does) */
                        int64_t *c = &((int64_t *)C->data)[i * N + j];
                        int64_t a, b;
                        hold(CQ_DT_S64, aint ? CQ_DT_S64 : CQ_DT_F64, A->data, ai, &a, NULL);
                        hold(CQ_DT_S64, bint ? CQ_DT_S64 : CQ_DT_F64, B->data, bi, &b, NULL);
                        *c = int_step(*c, a, b, ctype);
                    } else {
                        double a = aint ? (double)((int64_t *)A->data)[ai] : ((double *)A->data)[ai];
                        double b = bint ? (double)((int64_t *)B->data)[bi] : ((double *)B->data)[bi];
                        double *c = &((double *)C->data)[i * N + j];
                        *c = cq_fma_to(*c, a, b, fmt, exact);
                    }
                }
    }
    return CQ_ST_OK;
}

/* §11.3.4: the tile converted to the destination's type (first to the fragment's
 * storage); out-of-range elements skipped. A value the destination type can not hold
 * faults, in the first such element in row-major order of the tile as stored. */
static int store_tile(cq_block *blk, const cq_ins *ins, int lane, int ftype, const cq_frag *f,
                      const view2 *v, int transp)
{
    cq_buf *b = v->buf;
    int64_t rows = v->e[v->r], cols = v->e[v->c], at[CQ_MAX_RANK];
    char *vals = cq_xcalloc((size_t)(rows * cols) + 1, 8);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t k = transp ? c * f->cols + r : r * f->cols + c;
            char t[8];
            int bad;
            if (is_int_type(ftype))
                cq_convert(CQ_DT_S64, ftype, &((int64_t *)f->data)[k], t, 1, 1u, &bad);
            else
                cq_convert(CQ_DT_F64, ftype, &((double *)f->data)[k], t, 1, 1u, &bad);
            cq_convert(ftype, b->type, t, vals + (r * cols + c) * b->esize, 1, 1u, &bad);
            if (bad >= 0) {
                cq_record *fl = cq_fault_new(blk, ins, CQ_FAULT_FLOAT_TO_INT, lane);
                cq_put_double(fl, cq_to_double(ftype, t, 0));
                cq_put(fl, b->type);
                free(vals);
                return CQ_ST_FAULT;
            }
        }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int inside = 1;
            tile_coords(v, r, c, at);
            for (int d = 0; d < v->n; d++)
                inside &= at[d] >= 0 && at[d] < b->shape[d];
            if (!inside)
                continue;
            int64_t e = flat_in(b, at);
            memcpy(b->data + e * b->esize, vals + (r * cols + c) * b->esize, b->esize);
            if (b->written)
                b->written[e] = 1;
        }
    free(vals);
    return CQ_ST_OK;
}

/* MMA_STORE, and MMA_STORE_MASK: only rows below R[c] and columns below R[d] of the tile
 * are written (§11.3.4). */
static int effect_store(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                        int n)
{
    int m = ins->a, masked = ins->op == CQ_OP_MMA_STORE_MASK;
    int transp = masked ? 0 : ins->c, coll = masked ? ins->e : ins->d;
    if (uniform_view(blk, ins, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, m, lanes, n, first);
    const cq_fragdecl *decl = &blk->code->frag[m];
    if (coll >= 0 && blk->code->coll[coll].unit == 0 && ng > 1 &&
        (decl->unit == 32 || decl->unit == 128)) {
        cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_MMA_STORE_OWNERS, lanes[0]);
        cq_put(f, m);
        cq_put(f, ng);
        cq_put(f, decl->unit);
        return CQ_ST_FAULT;
    }
    for (int g = 0; g < ng; g++) {
        view2 v;
        if (view_for(blk, ins, ins->b, first[g], &v) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t *e0 = &v.e[v.r], *e1 = &v.e[v.c];
        int64_t rows = transp ? *e1 : *e0, cols = transp ? *e0 : *e1;
        cq_frag *f = fragment(blk, m, unit_of(blk, m, first[g]));
        if (ready(blk, ins, f, m, first[g]) != CQ_ST_OK)
            return CQ_ST_FAULT;
        if (!fits(f, rows, cols))   /* §11.3.4: V is [M, N] ([N, M] with .transp) */
            return tile_shape_fault(blk, ins, first[g], m, f, v.buf, *e0, *e1);
        if (masked) {
            int i;
            cq_warp *w = cq_warp_of(blk, first[g], &i);
            for (int k = 0; k < 2; k++) {
                int32_t r = k ? ins->d : ins->c;
                int64_t *x = k ? e1 : e0;
                int64_t keep = cq_to_int64(CQ_DT_S32, w->regs + blk->code->roff[r], i);
                *x = keep < 0 ? 0 : keep < *x ? keep : *x;
            }
            if (*e0 == 0 || *e1 == 0)
                continue;
        }
        if (shaped(blk, ins, f, m, first[g]) != CQ_ST_OK ||
            store_tile(blk, ins, first[g], decl->type, f, &v, transp) != CQ_ST_OK)
            return CQ_ST_FAULT;
        if (blk->race && cq_race_tile(blk, ins, v.buf, v.o, v.e, v.n, 0, 1, first[g]) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

/* The f32 scale of each of the ``rows`` rows (§11.8; mma.py _row_scales): the view's
 * elements in row-major order, 0 where it leaves its buffer, times ``factor``. */
static int row_scales(cq_block *blk, const cq_ins *ins, int lane, int ma, const cq_frag *C,
                      double factor, double *s)
{
    int v = ins->c, nd = blk->code->view[v].n;
    view2 vw;
    if (view_for(blk, ins, v, lane, &vw) != CQ_ST_OK)
        return CQ_ST_FAULT;
    const cq_buf *b = vw.buf;
    int64_t count = 1, neg = 0;
    for (int d = 0; d < nd; d++)
        count *= vw.e[d], neg |= vw.e[d] < 0;
    if (neg || count != C->rows) {
        cq_record *fl = cq_fault_new(blk, ins, CQ_FAULT_MMA_TILE_SHAPE, lane);
        cq_put(fl, ma);
        put_fragshape(fl, C->rows, C->cols);
        cq_put_buffer(fl, b);
        cq_put_list(fl, nd, vw.e);
        return CQ_ST_FAULT;
    }
    for (int pass = 0; pass < 2; pass++)      /* an uninitialised element first, then values */
        for (int64_t k = 0; k < count; k++) {
            int64_t rest = k, at[CQ_MAX_RANK], e = 0;
            int inside = 1;
            for (int d = nd - 1; d >= 0; d--) {
                at[d] = vw.o[d] + rest % vw.e[d];
                rest /= vw.e[d];
                inside &= at[d] >= 0 && at[d] < b->shape[d];
            }
            for (int d = 0; inside && d < nd; d++)
                e = e * b->shape[d] + at[d];
            if (pass == 0 && inside && b->written && !b->written[e]) {
                cq_record *fl = cq_fault_new(blk, ins, CQ_FAULT_MMA_UNINITIALISED, lane);
                cq_put_buffer(fl, b);
                cq_put_list(fl, nd, at);
                return CQ_ST_FAULT;
            }
            if (pass == 1)
                s[k] = cq_round_f32((inside ? cq_to_double(b->type, b->data, e) : 0.0) * factor);
        }
    if (blk->race)      /* the scales' tile is read as an mma.load's is */
        return cq_race_tile(blk, ins, b, vw.o, vw.e, nd, 0, 0, lane);
    return CQ_ST_OK;
}

/* MMA_SCALE (§11.8): accumulator a += partial sum b scaled per row, then b := 0; one
 * rounding for f32 (choreo's fmaf), for f16 the product rounded to f32, then to f16, then
 * added. */
static int effect_scale(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes,
                        int n)
{
    int ma = ins->a, mp = ins->b;
    if (uniform_view(blk, ins, rec, lanes, n, ins->c) != CQ_ST_OK ||
        cq_uniform_value(blk, rec, lanes, n, ins->d) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int type = blk->code->frag[ma].type, fmt = cq_fmt_of(type);
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ma, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        int lane = first[g], i;
        cq_frag *C = fragment(blk, ma, unit_of(blk, ma, lane));
        cq_frag *P = fragment(blk, mp, unit_of(blk, mp, lane));
        if (ready(blk, ins, C, ma, lane) != CQ_ST_OK || ready(blk, ins, P, mp, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int dyn = C->rows == -1 || C->cols == -1;
        int64_t rows = dyn ? P->rows : C->rows, cols = dyn ? P->cols : C->cols;
        if (rows == -1 || cols == -1 || !fits(C, rows, cols) || !fits(P, rows, cols)) {
            cq_put(cq_fault_new(blk, ins, CQ_FAULT_FRAGMENT_EMPTY, lane), mp);
            return CQ_ST_FAULT;
        }
        cq_warp *w = cq_warp_of(blk, lane, &i);
        double factor = cq_to_double(CQ_DT_F32, w->regs + blk->code->roff[ins->d], i);
        double *s = cq_xcalloc((size_t)rows + 1, sizeof *s);
        if (row_scales(blk, ins, lane, ma, C, factor, s) != CQ_ST_OK ||
            shaped(blk, ins, C, ma, lane) != CQ_ST_OK || shaped(blk, ins, P, mp, lane) != CQ_ST_OK) {
            free(s);
            return CQ_ST_FAULT;
        }
        double *c = C->data, *p = P->data;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = r * cols; k < (r + 1) * cols; k++) {
                if (type == CQ_DT_F32)
                    c[k] = cq_fma_to(c[k], p[k], s[r], fmt, 1);
                else
                    c[k] = cq_round_f16(c[k] + cq_round_f16(cq_round_f32(p[k] * s[r])));
                p[k] = 0.0;
            }
        free(s);
    }
    return CQ_ST_OK;
}

/* MMA_SPARSE (§11.9; mma.py op_mma_sparse): the dense A [M, 2K] of packed fragment b
 * [M, K] and metadata c [M, K/4]: group g of row i puts b[i][2g] at column 4g + p and
 * b[i][2g + 1] at 4g + q (q's value when p = q), p | q << 2 being half-byte g % 2 of
 * c[i][g / 2]; the rest is 0. */
static int effect_sparse(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    int md = ins->a, mp = ins->b, mm = ins->c;
    int dint = is_int_type(blk->code->frag[md].type);
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, md, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        int lane = first[g], st;
        cq_frag *P = operand(blk, ins, mp, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        cq_frag *E = operand(blk, ins, mm, lane, &st);
        if (st != CQ_ST_OK)
            return st;
        int64_t rows = P->rows, half = P->cols;
        if (E->rows != rows || 4 * (int64_t)E->cols != half)
            return shapes_fault(blk, ins, lane, mm, E->rows, E->cols, mp, P->rows, P->cols);
        cq_frag *D = fragment(blk, md, unit_of(blk, md, lane));
        int64_t d0 = D->rows, d1 = D->cols;
        if (!fits(D, rows, 2 * half))
            return shapes_fault(blk, ins, lane, md, d0, d1, mp, P->rows, P->cols);
        free(D->data);
        D->data = cq_xcalloc((size_t)(rows * 2 * half) + 1, 8);
        D->has_data = 1;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t k = 0; k < half / 2; k++) {
                int64_t byte = ((int64_t *)E->data)[i * E->cols + k / 2];
                int64_t nib = (byte >> (4 * (k % 2))) & 0xF;
                int64_t at[2] = {i * 2 * half + 4 * k + (nib & 3), i * 2 * half + 4 * k + (nib >> 2)};
                for (int j = 0; j < 2; j++) {     /* q last: it wins when p = q */
                    if (dint)
                        ((int64_t *)D->data)[at[j]] = ((int64_t *)P->data)[i * half + 2 * k + j];
                    else
                        ((double *)D->data)[at[j]] = ((double *)P->data)[i * half + 2 * k + j];
                }
            }
    }
    return CQ_ST_OK;
}

/* MMA_ASYNC: one more pending completion on each copy of accumulator a; MMA_WAIT:
 * none left, MMA_NOT_PENDING when there was none (§11.5). */
static int effect_async(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, ins->a, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        cq_frag *f = fragment(blk, ins->a, unit_of(blk, ins->a, first[g]));
        if (ins->op == CQ_OP_MMA_ASYNC) {
            f->pending++;
            if (blk->race)
                cq_race_mma_async(blk, ins, ins->a, first[g]);
        } else if (!f->pending) {
            cq_put(cq_fault_new(blk, ins, CQ_FAULT_MMA_NOT_PENDING, first[g]), ins->a);
            return CQ_ST_FAULT;
        } else {
            f->pending = 0;
            if (blk->race)
                cq_race_mma_wait(blk, ins->a, first[g]);
        }
    }
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ elements (§11.5) */

/* The rank in its unit of the lane holding element (i, j) (mma.py owner): the C fragment
 * of mma.sync.m16n8 per warp, the warps of a warpgroup taking 16-row bands in turn; -1
 * for a unit of another size, which holds every element itself. */
static int owner(int unit, int64_t i, int64_t j)
{
    if (unit != 32 && unit != 128)
        return -1;
    int lane = (int)(i % 8) * 4 + (int)(j % 8) / 2;
    return unit > 32 ? lane + 32 * (int)((i / 16) % 4) : lane;
}

/* FRAG_GET r, m, i, j and FRAG_SET m, i, j, r: each active lane in order, after the range
 * and the ownership checks. */
int cq_op_frag_elem(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    int get = ins->op == CQ_OP_FRAG_GET, m = get ? ins->b : ins->a;
    const cq_fragdecl *decl = &blk->code->frag[m];
    const char *ri = w->regs + (get ? ins->rc : ins->rb), *rj = w->regs + (get ? ins->rd : ins->rc);
    int ti = get ? ins->tc : ins->tb, tj = get ? ins->td : ins->tc;
    for (uint32_t act = w->act; act; act &= act - 1) {
        int k = cq_low(act), lane = w->base + k;
        int64_t at[2] = {cq_to_int64(ti, ri, k), cq_to_int64(tj, rj, k)};
        if (at[0] < 0 || at[0] >= decl->rows || at[1] < 0 || at[1] >= decl->cols) {
            cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_FRAGMENT_INDEX, lane);
            cq_put(f, m);
            cq_put_list(f, 2, at);
            put_fragshape(f, decl->rows, decl->cols);
            return CQ_ST_FAULT;
        }
        int who = owner(decl->unit, at[0], at[1]);
        if (who >= 0 && who != lane % decl->unit) {
            cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_FRAGMENT_NOT_OWNED, lane);
            cq_put(f, m);
            cq_put_list(f, 2, at);
            cq_put(f, decl->unit);
            cq_put(f, who);
            return CQ_ST_FAULT;
        }
        cq_frag *fr = fragment(blk, m, unit_of(blk, m, lane));
        if (shaped(blk, ins, fr, m, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t e = at[0] * fr->cols + at[1];
        int type = decl->type, bad;
        char held[8];
        if (get) {      /* the held value in the fragment's type, then to R[a]'s */
            if (is_int_type(type))
                cq_convert(CQ_DT_S64, type, &((int64_t *)fr->data)[e], held, 1, 1u, &bad);
            else
                cq_convert(CQ_DT_F64, type, &((double *)fr->data)[e], held, 1, 1u, &bad);
            char *out = w->regs + ins->ra + (size_t)k * cq_type_size[ins->ta];
            cq_convert(type, ins->ta, held, out, 1, 1u, &bad);
            if (bad >= 0)
                return cq_fault_convert(w, ins, k, type, held, ins->ta);
        } else {
            const char *src = w->regs + ins->rd;
            cq_convert(ins->td, type, src + (size_t)k * cq_type_size[ins->td], held, 1, 1u,
                       &bad);
            if (bad >= 0)
                return cq_fault_convert(w, ins, k, ins->td, src, type);
            hold(type, type, held, 0, &((int64_t *)fr->data)[e], &((double *)fr->data)[e]);
        }
    }
    return CQ_ST_OK;
}

/* MMA_GATHER: each element from the copy of the local buffer that its holder has (mma.py
 * op_mma_gather). */
static int effect_gather(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    int m = ins->a, slot = ins->b, transposed = ins->c;
    const cq_fragdecl *decl = &blk->code->frag[m];
    int per_lane = decl->unit == 32 || decl->unit == 128;
    int first[CQ_MAX_BLOCK];
    int ng = groups(blk, m, lanes, n, first);
    for (int g = 0; g < ng; g++) {
        int lead = first[g], base = per_lane ? lead - lead % decl->unit : lead;
        cq_insts mine = cq_instances(blk, slot, lead);
        if (!mine) {
            cq_put(cq_fault_new(blk, ins, CQ_FAULT_BUFFER_BEFORE_DECLARATION, lead), slot);
            return CQ_ST_FAULT;
        }
        int64_t rows = mine[0]->shape[0], cols = mine[0]->shape[1];
        cq_frag *f = fragment(blk, m, unit_of(blk, m, lead));
        if (!fits(f, rows, cols))
            return tile_shape_fault(blk, ins, lead, m, f, mine[0], rows, cols);
        if (shaped(blk, ins, f, m, lead) != CQ_ST_OK)
            return CQ_ST_FAULT;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                int who = transposed ? owner(decl->unit, c, r) : owner(decl->unit, r, c);
                int lane = who >= 0 ? base + who : lead;
                cq_insts theirs = cq_instances(blk, slot, lane);
                if (!theirs) {
                    cq_put(cq_fault_new(blk, ins, CQ_FAULT_BUFFER_BEFORE_DECLARATION, lane),
                           slot);
                    return CQ_ST_FAULT;
                }
                int64_t e = r * cols + c;
                hold(decl->type, theirs[0]->type, theirs[0]->data, e,
                     &((int64_t *)f->data)[e], &((double *)f->data)[e]);
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
    case CQ_OP_MMA_GATHER: return effect_gather(blk, ins, lanes, n);
    case CQ_OP_MMA_SCALE: return effect_scale(blk, ins, rec, lanes, n);
    case CQ_OP_MMA_SPARSE: return effect_sparse(blk, ins, lanes, n);
    case CQ_OP_MMA_ASYNC: case CQ_OP_MMA_WAIT: return effect_async(blk, ins, lanes, n);
    default: return effect_store(blk, ins, rec, lanes, n);
    }
}

/* A collective of its unit at the op's site; without one (the host, §11.2 (c)) each
 * active lane runs it alone, in lane order, as DMA and FILL without a site do. */
int cq_op_mma(cq_warp *w, const cq_ins *ins)
{
    int coll = ins->op == CQ_OP_MMA_EXEC || ins->op == CQ_OP_MMA_STORE_MASK ||
               ins->op == CQ_OP_MMA_SCALE ? ins->e
             : ins->op == CQ_OP_MMA_STORE || ins->op == CQ_OP_MMA_GATHER ||
               ins->op == CQ_OP_MMA_SPARSE ? ins->d
             : ins->op == CQ_OP_MMA_ASYNC || ins->op == CQ_OP_MMA_WAIT ? ins->b : ins->c;
    if (coll >= 0)
        return cq_arrive(w, ins, coll, 1);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int lane = w->base + cq_low(m);
        if (cq_effect_mma(w->blk, ins, NULL, &lane, 1) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}
