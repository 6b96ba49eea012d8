/* DMA and futures: DMA, FUT_ANY, WAIT, SWAP, FUT_DIM, and the end-of-kernel check
 * (LANGUAGE.md §9; docs/EXECUTION.md §6; croqvm/interp/dma.py is the reference).
 *
 * A DMA is planned at issue for one lane (views resolved, shapes checked, futures
 * updated); its working tiles are allocated then, and its data moves when the transfer
 * lands: at once under the round-robin schedule, later (before its wait) under the
 * random one. A tile is three arrays of the source extents: values, which elements were
 * in range, which were written. */
#include <stdlib.h>
#include "cq_engine.h"
#include "cq_types.h"

typedef struct {
    cq_buf *src, *dst;
    cq_buf reshaped[2];             /* a reshaped source and destination (§8.3.3) */
    int nd, dnd, npad;
    int64_t so[CQ_MAX_RANK], se[CQ_MAX_RANK];
    int64_t dO[CQ_MAX_RANK], dD[CQ_MAX_RANK];
    int snd;                        /* the rank the source shows (.sqz(), §8.3.4) */
    int64_t sx[CQ_MAX_RANK];        /* the extents it shows */
    int dnshown;                    /* the destination view's shown dimensions, 0: all */
    const int32_t *dshown;
    int64_t lo[CQ_MAX_RANK], hi[CQ_MAX_RANK], mid[CQ_MAX_RANK];
    int64_t shape[CQ_MAX_RANK];     /* after the operation */
    int pad_type;
    char pad_value[8];
    int32_t swz_src, swz_dst;       /* the swizzle of each side (§9.7) */
} plan;

/* A DMA's data movement with its working tiles; ``refs``: the block's pending list and
 * the handle of the future it fills hold it. */
struct cq_transfer {
    plan p;
    int32_t d;                      /* the DMA descriptor */
    const cq_dmadecl *desc;
    char *tile[2];                  /* source tile; padded tile (pad only) */
    int64_t count[2];
    int32_t lane;                   /* the planning lane */
    int32_t landed, refs;
};

static void in_range(const int64_t *o, const int64_t *e, const int64_t *shape, int nd,
                     int64_t *lo, int64_t *hi)
{
    for (int d = 0; d < nd; d++) {
        lo[d] = o[d] < 0 ? -o[d] : 0;
        hi[d] = shape[d] - o[d] < e[d] ? shape[d] - o[d] : e[d];
    }
}

/* EMPTY_TILE (buffer, origin, extents) or TILE_OUTSIDE (buffer, origin, its shape). */
static int tile_fault(cq_block *blk, const cq_ins *ins, int kind, int lane, const cq_buf *b,
                      const int64_t *o, const int64_t *second, int nd)
{
    cq_record *f = cq_fault_new(blk, ins, kind, lane);
    cq_put_buffer(f, b);
    cq_put_list(f, nd, o);
    cq_put_list(f, nd, second);
    return CQ_ST_FAULT;
}

static int check_tile(cq_block *blk, const cq_ins *ins, const cq_buf *b, const int64_t *o,
                      const int64_t *e, int nd, int lane)
{
    for (int d = 0; d < nd; d++)
        if (e[d] < 1)
            return tile_fault(blk, ins, CQ_FAULT_EMPTY_TILE, lane, b, o, e, nd);
    int64_t lo[CQ_MAX_RANK], hi[CQ_MAX_RANK];
    in_range(o, e, b->shape, nd, lo, hi);
    for (int d = 0; d < nd; d++)
        if (hi[d] <= lo[d])
            return tile_fault(blk, ins, CQ_FAULT_TILE_OUTSIDE, lane, b, o, b->shape, nd);
    return CQ_ST_OK;
}

static int destination(cq_block *blk, const cq_ins *ins, const cq_dmadecl *desc, cq_warp *w,
                       int i, int lane, plan *p)
{
    if (desc->dst_view >= 0) {
        const cq_viewdecl *v = &blk->code->view[desc->dst_view];
        p->dnd = v->n;
        p->dnshown = v->nshown;
        p->dshown = v->shown;
        return cq_view_of(w, ins, desc->dst_view, i, &p->reshaped[1], &p->dst, p->dO, p->dD);
    }
    if (desc->future >= 0) {
        int32_t h = blk->fut[desc->future][lane];
        if (h >= 0 && blk->handles[h].buf) {
            const cq_handle *hd = &blk->handles[h];
            p->dst = hd->buf;
            p->dnd = hd->nd;
            memcpy(p->dO, hd->o, sizeof p->dO);
            memcpy(p->dD, hd->e, sizeof p->dD);
            return CQ_ST_OK;
        }
    }
    cq_buf **insts = cq_instances(blk, desc->dst_buffer, lane);
    if (!insts && !(insts = cq_allocate_declared(w, ins, desc->dst_buffer, i)))
        return CQ_ST_FAULT;     /* the statement's own buffer, its own extents (§9.4.1) */
    p->dst = insts[0];
    p->dnd = p->dst->ndim;
    for (int d = 0; d < p->dnd; d++) {
        p->dO[d] = 0;
        p->dD[d] = p->dst->shape[d];
    }
    return CQ_ST_OK;
}

/* The extents of ``e`` (all of view ``v``'s dimensions) that it shows, into ``out``;
 * returns their number (memory.py shown). */
static int shown(const cq_viewdecl *v, const int64_t *e, int64_t *out)
{
    if (!v->nshown) {
        memcpy(out, e, sizeof(int64_t) * v->n);
        return v->n;
    }
    for (int k = 0; k < v->nshown; k++)
        out[k] = e[v->shown[k]];
    return v->nshown;
}

/* DMA ``ins->a`` resolved for one lane (dma.py Plan). */
static int plan_for(cq_block *blk, const cq_ins *ins, int lane, plan *p)
{
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    int i;
    cq_warp *w = cq_warp_of(blk, lane, &i);
    memset(p, 0, sizeof *p);
    const cq_viewdecl *sv = &blk->code->view[desc->src];
    p->nd = sv->n;
    if (cq_view_of(w, ins, desc->src, i, &p->reshaped[0], &p->src, p->so, p->se) != CQ_ST_OK ||
        check_tile(blk, ins, p->src, p->so, p->se, p->nd, lane) != CQ_ST_OK)
        return CQ_ST_FAULT;
    p->snd = shown(sv, p->se, p->sx);
    p->npad = desc->npad;
    p->swz_src = desc->swz_src;
    p->swz_dst = desc->swz_dst;
    for (int d = 0; d < desc->npad; d++) {
        p->lo[d] = cq_lane_reg_int(blk, lane, desc->pad_lo[d]);
        p->hi[d] = cq_lane_reg_int(blk, lane, desc->pad_hi[d]);
        p->mid[d] = cq_lane_reg_int(blk, lane, desc->pad_mid[d]);
    }
    if (desc->op == 2) {
        p->pad_type = blk->code->rtype[desc->pad_value];
        int size = cq_type_size[p->pad_type];
        memcpy(p->pad_value, w->regs + blk->code->roff[desc->pad_value] + (size_t)i * size, size);
    }
    for (int d = 0; d < p->snd; d++) {
        int64_t x = p->sx[d];
        p->shape[d] = desc->op == 1 ? p->sx[desc->perm[d]]
                    : desc->op == 2 ? p->lo[d] + x + (x - 1) * p->mid[d] + p->hi[d] : x;
    }
    if (destination(blk, ins, desc, w, i, lane, p) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int64_t D[CQ_MAX_RANK];
    int dn = p->dnd;
    int cut = sv->nshown == 0;    /* a larger source is cut (§9.5.1), not through a .sqz() */
    memcpy(D, p->dD, sizeof D);
    if (desc->dst_view >= 0) {
        const cq_viewdecl *dv = &blk->code->view[desc->dst_view];
        if (check_tile(blk, ins, p->dst, p->dO, p->dD, p->dnd, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
        dn = shown(dv, p->dD, D);
        cut = cut && dv->nshown == 0;
    }
    int bad = p->snd != dn;
    for (int d = 0; d < p->snd && !bad; d++)
        bad = (!desc->zfill && p->shape[d] < D[d]) || (!cut && p->shape[d] > D[d]);
    if (bad) {
        cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_DMA_SHAPE, lane);
        cq_put(f, ins->a);
        cq_put_list(f, p->snd, p->shape);
        cq_put_list(f, dn, D);
        return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ moving data */

static int64_t box_count(const int64_t *e, int nd)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        if (__builtin_mul_overflow(n, e[d], &n))
            return -1;
    return n;
}

/* Row-major flat index of ``t`` in a box of extents ``e``. */
static int64_t flat_of(const int64_t *t, const int64_t *e, int nd)
{
    int64_t f = 0;
    for (int d = 0; d < nd; d++)
        f = f * e[d] + t[d];
    return f;
}

/* Where element ``r`` of a tile's buffer lies in its data: row-major, or at element
 * strides (§8.3.2; wrapping as memory.py's int64 positions do, and checked in range by
 * cq_view_of). */
static int64_t position(const cq_buf *b, const int64_t *r, int nd)
{
    if (!b->strided)
        return flat_of(r, b->shape, nd);
    uint64_t f = (uint64_t)b->first;
    for (int d = 0; d < nd; d++)
        f += (uint64_t)r[d] * (uint64_t)b->step[d];
    return (int64_t)f;
}

/* Advance the odometer ``t`` over [lo, hi); 0 when done. */
static int next(int64_t *t, const int64_t *lo, const int64_t *hi, int nd)
{
    for (int d = nd - 1; d >= 0; d--) {
        if (++t[d] < hi[d])
            return 1;
        t[d] = lo[d];
    }
    return 0;
}

/* A tile's three arrays in one allocation: values, then valid, then written. */
static char *tile_alloc(int64_t count, int esize)
{
    if (count < 0 || count > INT64_MAX / (esize + 2))
        return NULL;
    return calloc(1, (size_t)count * (esize + 2) + 1);
}

/* Allocate the working tiles at issue, so that a tile no memory can hold is a fault
 * of the DMA whenever its data would move. */
static int reserve(cq_block *blk, const cq_ins *ins, cq_transfer *t)
{
    const plan *p = &t->p;
    int esize = p->src->esize;
    int ntiles = t->desc->op == 2 ? 2 : 1;
    for (int k = 0; k < ntiles; k++) {
        const int64_t *shape = k ? p->shape : p->se;
        int nd = k ? p->snd : p->nd;
        t->count[k] = box_count(shape, nd);
        t->tile[k] = tile_alloc(t->count[k], esize);
        if (!t->tile[k])
            return cq_alloc_fault(blk, ins, t->lane, CQ_FAULT_ALLOC_TILE, t->d, nd, shape);
    }
    return CQ_ST_OK;
}

static void transfer_free(cq_transfer *t)
{
    free(t->tile[0]);
    free(t->tile[1]);
    free(t);
}

void cq_transfer_unref(cq_transfer *t)
{
    if (t && --t->refs == 0)
        transfer_free(t);
}

/* §9.5.1: in-range elements copied; source out of range leaves the destination
 * unchanged (zero with .zfill); destination out of range skipped; .zfill also clears the
 * destination beyond the tile. */
static void write_tile(const plan *p, const char *tile, const int64_t *shown_T, int zfill)
{
    cq_buf *b = p->dst;
    int nd = p->dnd, esize = p->src->esize;
    int64_t lo[CQ_MAX_RANK], hi[CQ_MAX_RANK], t[CQ_MAX_RANK], r[CQ_MAX_RANK];
    int64_t T[CQ_MAX_RANK];         /* the tile's extents in every destination dimension */
    if (p->dnshown) {
        for (int d = 0; d < nd; d++)
            T[d] = 1;
        for (int k = 0; k < p->dnshown; k++)
            T[p->dshown[k]] = shown_T[k];
    } else {
        memcpy(T, shown_T, sizeof(int64_t) * nd);
    }
    in_range(p->dO, p->dD, b->shape, nd, lo, hi);
    for (int d = 0; d < nd; d++)
        if (hi[d] <= lo[d])
            return;
    if (zfill) {
        memcpy(t, lo, sizeof(int64_t) * nd);
        do {
            for (int d = 0; d < nd; d++)
                r[d] = p->dO[d] + t[d];
            int64_t f = cq_swizzled(b, position(b, r, nd), p->swz_dst);
            memset(b->data + f * b->esize, 0, b->esize);
            if (b->written)
                b->written[f] = 1;
        } while (next(t, lo, hi, nd));
    }
    for (int d = 0; d < nd; d++) {
        if (T[d] < hi[d])
            hi[d] = T[d];
        if (hi[d] <= lo[d])
            return;
    }
    int64_t count = box_count(T, nd);
    const uint8_t *valid = (const uint8_t *)tile + count * esize, *wr = valid + count;
    memcpy(t, lo, sizeof(int64_t) * nd);
    if (nd > 0 && !b->strided && !p->swz_dst) {
        /* row-major and unswizzled: a row of the tile lies together in the destination;
         * a row with elements out of the source's range goes element by element */
        int64_t len = hi[nd - 1] - lo[nd - 1];
        do {
            int64_t s = flat_of(t, T, nd);
            for (int d = 0; d < nd; d++)
                r[d] = p->dO[d] + t[d];
            int64_t f = flat_of(r, b->shape, nd);
            if (!memchr(valid + s, 0, (size_t)len)) {
                memcpy(b->data + f * esize, tile + s * esize, (size_t)(len * esize));
                if (b->written)
                    memcpy(b->written + f, wr + s, (size_t)len);
                continue;
            }
            for (int64_t j = 0; j < len; j++) {
                if (!valid[s + j])
                    continue;
                memcpy(b->data + (f + j) * esize, tile + (s + j) * esize, esize);
                if (b->written)
                    b->written[f + j] = wr[s + j];
            }
        } while (next(t, lo, hi, nd - 1));
        return;
    }
    do {
        int64_t s = flat_of(t, T, nd);
        if (!valid[s])
            continue;
        for (int d = 0; d < nd; d++)
            r[d] = p->dO[d] + t[d];
        int64_t f = cq_swizzled(b, position(b, r, nd), p->swz_dst);
        memcpy(b->data + f * esize, tile + s * esize, esize);   /* one element type (§9.2) */
        if (b->written)
            b->written[f] = wr[s];
    } while (next(t, lo, hi, nd));
}

/* Land a transfer (once): read the source tile, transpose or pad it, write it. */
static void land(cq_transfer *t)
{
    if (t->landed)
        return;
    t->landed = 1;
    const plan *p = &t->p;
    const cq_buf *sb = p->src;
    int nd = p->nd, esize = sb->esize;
    char *tile = t->tile[0];
    int64_t n0 = t->count[0];
    uint8_t *valid = (uint8_t *)tile + n0 * esize, *wr = valid + n0;
    int64_t lo[CQ_MAX_RANK], hi[CQ_MAX_RANK], k[CQ_MAX_RANK], r[CQ_MAX_RANK];
    in_range(p->so, p->se, sb->shape, nd, lo, hi);
    memcpy(k, lo, sizeof(int64_t) * nd);
    if (nd > 0 && !sb->strided && !p->swz_src) {
        /* row-major and unswizzled: the elements along the last dimension lie together
         * in the source as in the tile, a row at a time */
        int64_t len = hi[nd - 1] - lo[nd - 1];
        do {
            for (int d = 0; d < nd; d++)
                r[d] = p->so[d] + k[d];
            int64_t s = flat_of(r, sb->shape, nd), f = flat_of(k, p->se, nd);
            memcpy(tile + f * esize, sb->data + s * esize, (size_t)(len * esize));
            memset(valid + f, 1, (size_t)len);
            if (sb->written)
                memcpy(wr + f, sb->written + s, (size_t)len);
            else
                memset(wr + f, 1, (size_t)len);
        } while (next(k, lo, hi, nd - 1));
    } else {
        do {
            for (int d = 0; d < nd; d++)
                r[d] = p->so[d] + k[d];
            int64_t s = cq_swizzled(sb, position(sb, r, nd), p->swz_src);
            int64_t f = flat_of(k, p->se, nd);
            memcpy(tile + f * esize, sb->data + s * esize, esize);
            valid[f] = 1;
            wr[f] = sb->written ? sb->written[s] : 1;
        } while (next(k, lo, hi, nd));
    }
    const int64_t *T = p->sx;       /* the same elements in the order the source shows */
    int sn = p->snd;
    if (t->desc->op == 1) {   /* transp: out[j] = in[i] where i[perm[d]] = j[d] */
        char *out = tile_alloc(n0, esize);
        if (!out)
            abort();
        uint8_t *ov = (uint8_t *)out + n0 * esize, *ow = ov + n0;
        int64_t zero[CQ_MAX_RANK] = {0};
        memset(k, 0, sizeof k);
        do {
            for (int d = 0; d < sn; d++)
                r[t->desc->perm[d]] = k[d];
            int64_t src = flat_of(r, p->sx, sn), dst = flat_of(k, p->shape, sn);
            memcpy(out + dst * esize, tile + src * esize, esize);
            ov[dst] = valid[src];
            ow[dst] = wr[src];
        } while (next(k, zero, p->shape, sn));
        free(t->tile[0]);
        t->tile[0] = tile = out;
        T = p->shape;
    } else if (t->desc->op == 2) {   /* pad (§9.6.3): element i lands at lo + i*(mid+1) */
        char *out = t->tile[1];
        int64_t n1 = t->count[1];
        uint8_t *ov = (uint8_t *)out + n1 * esize, *ow = ov + n1;
        for (int64_t e = 0; e < n1; e++)   /* the value has the element type (§9.6.3) */
            memcpy(out + e * esize, p->pad_value, esize);
        memset(ov, 1, (size_t)n1 * 2);
        int64_t zero[CQ_MAX_RANK] = {0};
        memset(k, 0, sizeof k);
        do {
            for (int d = 0; d < sn; d++)
                r[d] = p->lo[d] + k[d] * (p->mid[d] + 1);
            int64_t src = flat_of(k, p->sx, sn), dst = flat_of(r, p->shape, sn);
            memcpy(out + dst * esize, tile + src * esize, esize);
            ov[dst] = valid[src];
            ow[dst] = wr[src];
        } while (next(k, zero, p->sx, sn));
        tile = out;
        T = p->shape;
    }
    write_tile(p, tile, T, t->desc->zfill);
    free(t->tile[0]);
    free(t->tile[1]);
    t->tile[0] = t->tile[1] = NULL;
}

/* The random schedule's first decision (croqvm/interp/scheduler.py): each pending async
 * copy, in issue order, lands with one chance in four; one landed by a WAIT meanwhile
 * leaves the list without a draw. */
void cq_land_pending(cq_block *blk, uint64_t *rng)
{
    int keep = 0;
    for (int k = 0; k < blk->ntransfers; k++) {
        cq_transfer *t = blk->transfers[k];
        if (!t->landed && cq_rng_below(rng, 4) != 0) {
            blk->transfers[keep++] = t;
            continue;
        }
        land(t);
        cq_transfer_unref(t);
    }
    blk->ntransfers = keep;
}

static void defer(cq_block *blk, cq_transfer *t)
{
    if (blk->ntransfers == blk->captransfers) {
        blk->captransfers = blk->captransfers ? 2 * blk->captransfers : 8;
        blk->transfers = realloc(blk->transfers,
                                 (size_t)blk->captransfers * sizeof(cq_transfer *));
        if (!blk->transfers)
            abort();
    }
    blk->transfers[blk->ntransfers++] = t;
    t->refs++;
}

/* ------------------------------------------------------------------ issuing */

/* The race check of a copy (race.py ``dma_issue``): a synchronous one reads its source
 * and writes its destination now, an async one (into handle ``h``, else -1) from now
 * until its first wait; the copies the lanes of a warp make on their own are checked
 * against each other. */
static int race_copy(cq_block *blk, const cq_ins *ins, const plan *p, int lane, int32_t h)
{
    if (!cq_race_in_collective(blk) &&
        cq_race_lane_copy(blk, p->dst, p->dO, p->dD, p->dnd, p->swz_dst, lane) != CQ_ST_OK)
        return CQ_ST_FAULT;
    /* dma.py read_extents: a copy or a transposition reads no element beyond the
     * destination's extents, in the dimensions both sides have */
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    int64_t se[CQ_MAX_RANK];
    int n = p->nd;
    memcpy(se, p->se, sizeof se);
    if (desc->op != 2) {
        n = p->nd < p->dnd ? p->nd : p->dnd;
        for (int d = 0; d < n; d++) {
            int64_t x = p->dD[d];
            if (desc->op == 1)
                for (int k = 0; k < desc->nperm; k++)
                    if (desc->perm[k] == d)
                        x = p->dD[k];
            se[d] = se[d] < x ? se[d] : x;
        }
    }
    if (h >= 0)
        return cq_race_copy_issue(blk, ins, h, p->src, p->so, se, n, p->swz_src, p->dst, p->dO,
                                  p->dD, p->dnd, p->swz_dst, lane);
    if (cq_race_tile(blk, ins, p->src, p->so, se, n, p->swz_src, 0, lane) != CQ_ST_OK)
        return CQ_ST_FAULT;
    return cq_race_tile(blk, ins, p->dst, p->dO, p->dD, p->dnd, p->swz_dst, 1, lane);
}

static int issue(cq_block *blk, const cq_ins *ins, const plan *p, const int *lanes, int n)
{
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    cq_transfer *t = cq_xcalloc(1, sizeof *t);
    t->p = *p;
    for (int k = 0; k < 2; k++) {   /* a reshaped side stands in the plan itself */
        cq_buf **side = k ? &t->p.dst : &t->p.src;
        if (*side == &p->reshaped[k])
            *side = &t->p.reshaped[k];
    }
    t->d = ins->a;
    t->desc = desc;
    t->lane = lanes[0];
    t->refs = 1;                /* this function's, until the end */
    if (reserve(blk, ins, t) != CQ_ST_OK) {
        cq_transfer_unref(t);
        return CQ_ST_FAULT;
    }
    int is_async = desc->is_async && desc->future >= 0;
    if (is_async && blk->call->opts.schedule)   /* it lands some time before its wait */
        defer(blk, t);
    else
        land(t);
    int32_t h = -1;
    if (desc->future >= 0) {
        h = cq_handle_new(blk);
        cq_handle *hd = &blk->handles[h];
        /* a reshaped or strided destination's data is not addressed as the future's
         * (lowering refuses that), but the handle must name a buffer that lasts */
        hd->buf = p->dst->root ? (cq_buf *)p->dst->root : p->dst;
        hd->nd = p->dnd;
        memcpy(hd->o, p->dO, sizeof hd->o);
        memcpy(hd->e, p->dD, sizeof hd->e);
        hd->is_async = is_async;
        hd->issued = ins->span;
        if (!t->landed) {
            hd->transfer = t;
            t->refs++;
        }
        /* each lane's future := h; the handles they held before, a run of lanes
         * holding one at a time, lose their references */
        int32_t *held = blk->fut[desc->future];
        hd->refs += n;
        for (int k = 0; k < n;) {
            int32_t old = held[lanes[k]], run = 0;
            for (; k < n && held[lanes[k]] == old; k++, run++)
                held[lanes[k]] = h;
            if (old >= 0)
                blk->handles[old].refs -= run - 1;
            cq_handle_unref(blk, old);
        }
    }
    cq_transfer_unref(t);
    return blk->race ? race_copy(blk, ins, p, lanes[0], is_async ? h : -1) : CQ_ST_OK;
}

/* §9.5.4: issuing into a future whose async transfer a lane never waited. */
static int first_pending(const cq_block *blk, int slot, const int *lanes, int n)
{
    for (int k = 0; k < n; k++) {
        int32_t h = blk->fut[slot][lanes[k]];
        if (h >= 0 && blk->handles[h].is_async &&
            !cq_lanes_get(&blk->handles[h].waited, lanes[k]))
            return lanes[k];
    }
    return -1;
}

static int unwaited_fault(cq_block *blk, const cq_ins *ins, int slot, int lane, int span)
{
    cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_NEVER_WAITED, lane);
    cq_put(f, blk->handles[blk->fut[slot][lane]].issued);
    cq_put(f, slot);
    if (span >= 0)
        f->span = span;
    return CQ_ST_FAULT;
}

static int check_unwaited(cq_block *blk, const cq_ins *ins, const cq_dmadecl *desc,
                          const int *lanes, int n)
{
    if (desc->future < 0)
        return CQ_ST_OK;
    int lane = first_pending(blk, desc->future, lanes, n);
    return lane < 0 ? CQ_ST_OK : unwaited_fault(blk, ins, desc->future, lane, -1);
}

/* The registers that settle a collective DMA's operands (dma.py _registers): views
 * with block-wide bases, and a destination future every lane holds alike. */
static int operand_registers(cq_block *blk, const cq_dmadecl *desc, const int *lanes, int n,
                             int32_t *regs)
{
    const cq_code *code = blk->code;
    int nr = 0;
    int views[2] = {desc->src, desc->dst_view};
    for (int k = 0; k < 2; k++) {
        if (views[k] < 0)
            continue;
        const cq_viewdecl *v = &code->view[views[k]];
        if (v->kind != 0 || code->buf[v->base].storage == 2)
            return -1;
        for (int d = 0; d < v->n; d++) {
            regs[nr++] = v->origin[d];
            regs[nr++] = v->extents[d];
        }
        for (int d = 0; d < v->nspace; d++)
            regs[nr++] = v->space[d];
        for (int d = 0; d < v->nstrides; d++)
            regs[nr++] = v->strides[d];
        if (v->nspace || v->nstrides)
            regs[nr++] = v->flat;
        if (v->arr >= 0)
            regs[nr++] = v->arr;
    }
    if (desc->dst_view < 0 && desc->future >= 0) {
        const int32_t *held = blk->fut[desc->future];
        int32_t h0 = held[lanes[0]];
        for (int k = 1; k < n; k++)
            if (held[lanes[k]] != h0 && !cq_same_view(blk, held[lanes[k]], h0))
                return -1;
    }
    for (int d = 0; d < desc->npad; d++) {
        regs[nr++] = desc->pad_lo[d];
        regs[nr++] = desc->pad_hi[d];
        regs[nr++] = desc->pad_mid[d];
    }
    if (desc->op == 2)
        regs[nr++] = desc->pad_value;
    return nr;
}

int cq_uniform_regs(cq_block *blk, const int *lanes, int n, const int32_t *regs, int nregs);

static int pack_tuple(int64_t *out, const int64_t *v, int n)
{
    out[0] = n;
    for (int d = 0; d < n; d++)
        out[1 + d] = v[d];
    return n + 1;
}

static int pack_buffer(int64_t *out, const cq_buf *b)
{
    out[0] = b->code;
    out[1] = b->slot;
    out[2] = b->element;
    return 3;
}

/* The first operand in which plan b differs from plan a (the lowest lane's, dma.py
 * Plan.operands), as a fault of lane ``lane``; CQ_ST_OK when they agree. */
static int compare_plans(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, int first,
                         int lane, const plan *a, const plan *b)
{
    static const int label[10] = {
        CQ_LABEL_SOURCE, CQ_LABEL_ORIGIN, CQ_LABEL_EXTENTS, CQ_LABEL_DESTINATION,
        CQ_LABEL_DESTINATION_ORIGIN, CQ_LABEL_DESTINATION_EXTENTS, CQ_LABEL_LOW_PADDING,
        CQ_LABEL_HIGH_PADDING, CQ_LABEL_INTERIOR_PADDING, CQ_LABEL_PADDING_VALUE};
    static const int tag[10] = {
        CQ_TAG_BUFFER, CQ_TAG_TUPLE, CQ_TAG_SHAPE, CQ_TAG_BUFFER, CQ_TAG_TUPLE, CQ_TAG_SHAPE,
        CQ_TAG_TUPLE, CQ_TAG_TUPLE, CQ_TAG_TUPLE, CQ_TAG_VALUE};
    int nops = blk->code->dma[ins->a].op == 2 ? 10 : 9;
    for (int k = 0; k < nops; k++) {
        int64_t x[CQ_MAX_RANK + 1], y[CQ_MAX_RANK + 1];
        int n;
        switch (k) {
        case 0: n = pack_buffer(x, a->src); pack_buffer(y, b->src); break;
        case 1: n = pack_tuple(x, a->so, a->nd); pack_tuple(y, b->so, b->nd); break;
        case 2: n = pack_tuple(x, a->se, a->nd); pack_tuple(y, b->se, b->nd); break;
        case 3: n = pack_buffer(x, a->dst); pack_buffer(y, b->dst); break;
        case 4: n = pack_tuple(x, a->dO, a->dnd); pack_tuple(y, b->dO, b->dnd); break;
        case 5: n = pack_tuple(x, a->dD, a->dnd); pack_tuple(y, b->dD, b->dnd); break;
        case 6: n = pack_tuple(x, a->lo, a->npad); pack_tuple(y, b->lo, b->npad); break;
        case 7: n = pack_tuple(x, a->hi, a->npad); pack_tuple(y, b->hi, b->npad); break;
        case 8: n = pack_tuple(x, a->mid, a->npad); pack_tuple(y, b->mid, b->npad); break;
        default:
            n = 2;
            x[0] = y[0] = a->pad_type;
            x[1] = y[1] = 0;
            memcpy(&x[1], a->pad_value, cq_type_size[a->pad_type]);
            memcpy(&y[1], b->pad_value, cq_type_size[b->pad_type]);
        }
        if (memcmp(x, y, sizeof(int64_t) * n))
            return cq_operands_differ(blk, rec, first, lane, label[k], tag[k], n, x, y);
    }
    return CQ_ST_OK;
}

int cq_effect_dma(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n)
{
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    if (check_unwaited(blk, ins, desc, lanes, n) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int32_t regs[9 * CQ_MAX_RANK + 6];
    int nr = operand_registers(blk, desc, lanes, n, regs);
    plan first;
    if (plan_for(blk, ins, lanes[0], &first) != CQ_ST_OK)
        return CQ_ST_FAULT;
    if (nr < 0 || !cq_uniform_regs(blk, lanes, n, regs, nr))
        for (int k = 1; k < n; k++) {
            plan other;
            if (plan_for(blk, ins, lanes[k], &other) != CQ_ST_OK ||
                compare_plans(blk, ins, rec, lanes[0], lanes[k], &first, &other) != CQ_ST_OK)
                return CQ_ST_FAULT;
        }
    return issue(blk, ins, &first, lanes, n);
}

/* DMA: a collective of site b when it names one (§9.3), else one copy per active lane,
 * in lane order. */
int cq_op_dma(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    if (ins->b >= 0)
        return cq_arrive(w, ins, ins->b, 0);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int lane = w->base + cq_low(m);
        plan p;
        if (check_unwaited(blk, ins, desc, &lane, 1) != CQ_ST_OK ||
            plan_for(blk, ins, lane, &p) != CQ_ST_OK || issue(blk, ins, &p, &lane, 1) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ futures */

int cq_op_fut_any(cq_warp *w, const cq_ins *ins)
{
    for (uint32_t m = w->act; m; m &= m - 1)
        cq_handle_set(w->blk, ins->a, w->base + cq_low(m), CQ_PLACEHOLDER);
    return CQ_ST_OK;
}

/* §9.5.3-4: complete the lane's transfer; a second wait of it faults; waiting a
 * placeholder without data, or a sync transfer, does nothing. ``bind``: FUT_BIND's
 * completion (§10.7), which the race check hands to the warp's next trigger. */
static int wait_lane(cq_block *blk, const cq_ins *ins, int slot, int lane, int bind)
{
    int32_t h = blk->fut[slot][lane];
    if (h < 0 || !blk->handles[h].buf || !blk->handles[h].is_async)
        return CQ_ST_OK;
    if (cq_lanes_get(&blk->handles[h].waited, lane)) {
        cq_put(cq_fault_new(blk, ins, CQ_FAULT_FUTURE_WAITED_TWICE, lane), slot);
        return CQ_ST_FAULT;
    }
    cq_lanes_set(&blk->handles[h].waited, lane);
    if (blk->handles[h].transfer)
        land(blk->handles[h].transfer);
    if (blk->race)
        (bind ? cq_race_copy_bound : cq_race_copy_waited)(blk, h, lane);
    return CQ_ST_OK;
}

int cq_effect_wait(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n)
{
    (void)rec;
    for (int k = 0; k < n; k++)
        if (wait_lane(blk, ins, ins->a, lanes[k], 0) != CQ_ST_OK)
            return CQ_ST_FAULT;
    return CQ_ST_OK;
}

int cq_op_wait(cq_warp *w, const cq_ins *ins)
{
    if (ins->b >= 0)
        return cq_arrive(w, ins, ins->b, 0);
    for (uint32_t m = w->act; m; m &= m - 1)
        if (wait_lane(w->blk, ins, ins->a, w->base + cq_low(m), 0) != CQ_ST_OK)
            return CQ_ST_FAULT;
    return CQ_ST_OK;
}

/* §10.7: each active lane hands its transfer to the TRIGGER that follows: the copy lands
 * now, before the arrival that publishes it, and counts as the lane's wait; nothing
 * blocks. */
int cq_op_fut_bind(cq_warp *w, const cq_ins *ins)
{
    for (uint32_t m = w->act; m; m &= m - 1)
        if (wait_lane(w->blk, ins, ins->a, w->base + cq_low(m), 1) != CQ_ST_OK)
            return CQ_ST_FAULT;
    return CQ_ST_OK;
}

int cq_op_swap(cq_warp *w, const cq_ins *ins)
{
    int32_t *a = w->blk->fut[ins->a], *b = w->blk->fut[ins->b];
    for (uint32_t m = w->act; m; m &= m - 1) {
        int lane = w->base + cq_low(m);
        int32_t t = a[lane];
        a[lane] = b[lane];
        b[lane] = t;
    }
    return CQ_ST_OK;
}

int cq_op_fut_dim(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    int64_t out[CQ_WARP] = {0};
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m), lane = w->base + i;
        int32_t h = blk->fut[ins->b][lane];
        if (h < 0 || !blk->handles[h].buf) {
            cq_put(cq_fault_new(blk, ins, CQ_FAULT_FUTURE_NO_DATA, lane), ins->b);
            return CQ_ST_FAULT;
        }
        out[i] = blk->handles[h].e[ins->c];
    }
    int bad;
    cq_convert(CQ_DT_S64, ins->ta, out, w->regs + ins->ra, CQ_WARP, w->act, &bad);
    return CQ_ST_OK;
}

/* §9.5.4: a kernel (or the host program, at the function) ending with an async transfer
 * some lane never waited. */
int cq_check_kernel_end(cq_block *blk)
{
    const cq_prog *prog = blk->call->prog;
    int span = blk->kernel < 0 ? prog->fn_span : prog->kernels[blk->kernel].span;
    int lanes[CQ_MAX_BLOCK];
    for (int l = 0; l < blk->size; l++)
        lanes[l] = l;
    for (int s = 0; s < blk->code->nfut; s++) {
        int lane = first_pending(blk, s, lanes, blk->size);
        if (lane >= 0)
            return unwaited_fault(blk, NULL, s, lane, span);
    }
    return CQ_ST_OK;
}
