/* Buffer instances, future handles, views and bounds-checked element access, and the
 * memory opcodes ALLOC, FILL, LOAD, STORE, UPDATE, DIMOF (LANGUAGE.md §3.2-§3.3,
 * §8.5-§8.6, §14.4; docs/EXECUTION.md §6; croqvm/interp/memory.py and access.py).
 *
 * Fault precedence (§7.1.3): an instruction faults in its lowest active lane that has a
 * fault; for one lane, a base that cannot be resolved comes before an index out of range.
 * Element stores go lane by lane in increasing order, so when lanes collide the highest
 * one's value stays. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include "cq_engine.h"
#include "cq_types.h"

/* ------------------------------------------------------------------ allocation */

void *cq_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();   /* engine bookkeeping only; user-sized memory goes through the arena */
    return p;
}

void *cq_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        abort();
    return p;
}

/* Arena chunks: one allocation each, freed together with their owner (a block, or the
 * call for host and kernel-global buffers). The header keeps data 16-byte aligned. */
typedef struct cq_chunk { struct cq_chunk *next; size_t pad; } cq_chunk;

void *cq_arena_alloc(cq_chunk **arena, size_t n)
{
    if (n > SIZE_MAX - sizeof(cq_chunk))
        return NULL;
    cq_chunk *c = calloc(1, sizeof(cq_chunk) + n);
    if (!c)
        return NULL;
    c->next = *arena;
    *arena = c;
    return c + 1;
}

/* The chunks of ``list`` join ``into``'s, to be freed with them. */
void cq_arena_join(cq_chunk **into, cq_chunk *list)
{
    if (!list)
        return;
    cq_chunk *last = list;
    while (last->next)
        last = last->next;
    last->next = *into;
    *into = list;
}

void cq_arena_free(cq_chunk **arena)
{
    cq_chunk *c = *arena;
    while (c) {
        cq_chunk *next = c->next;
        free(c);
        c = next;
    }
    *arena = NULL;
}

/* A zero-filled instance; in poison mode (§14.4) a ``defined`` one, which a declaration
 * makes (§3.2.4), has every element written, and another, a DMA's own destination
 * (§9.4.1), holds NaN / bytes 0xA5 with nothing written (croqvm/interp/memory.py
 * new_buffer). NULL when no memory can hold it. */
cq_buf *cq_new_buffer(cq_chunk **arena, int type, int ndim, const int64_t *shape, int code,
                      int slot, int element, int poison, int defined)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0 || __builtin_mul_overflow(count, shape[d], &count))
            return NULL;
    int64_t bytes;
    if (__builtin_mul_overflow(count, (int64_t)cq_type_size[type], &bytes))
        return NULL;
    cq_buf *b = cq_arena_alloc(arena, sizeof *b);
    if (!b)
        return NULL;
    b->data = cq_arena_alloc(arena, (size_t)bytes);
    if (!b->data)
        return NULL;
    b->type = type;
    b->esize = cq_type_size[type];
    b->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        b->shape[d] = shape[d];
    b->count = count;
    b->code = code;
    b->slot = slot;
    b->element = element;
    if (poison) {
        b->written = cq_arena_alloc(arena, (size_t)count);
        if (!b->written)
            return NULL;
        if (defined)
            memset(b->written, 1, (size_t)count);
        else if (cq_is_float(type)) {
            int bad;
            double nan = NAN;
            cq_convert(CQ_DT_F64, type, &nan, b->data, 1, 1u, &bad);   /* numpy's quiet NaN */
            for (int64_t k = 1; k < count; k++)
                memcpy(b->data + k * b->esize, b->data, b->esize);
        } else {
            memset(b->data, 0xA5, (size_t)bytes);
        }
    }
    return b;
}

static int block_wide(const cq_bufdecl *decl) { return decl->storage != 2; }

/* The instances of ``slot`` that ``lane`` sees, or NULL before its ALLOC. */
cq_insts cq_instances(cq_block *blk, int slot, int lane)
{
    if (block_wide(&blk->code->buf[slot]))
        return blk->bufs[slot];
    return blk->locals[slot] ? blk->locals[slot][lane] : NULL;
}

/* Allocate the instances of ``slot`` for ``lane`` (§3.2.4: once per instance;
 * ``defined`` as cq_new_buffer takes it); NULL with *fault set when memory can not hold
 * them. */
cq_insts cq_allocate(cq_block *blk, int slot, int lane, int ndim, const int64_t *shape,
                     int defined, int *fault)
{
    cq_call *call = blk->call;
    const cq_bufdecl *decl = &blk->code->buf[slot];
    int kernel_global = decl->storage == 0 && blk->kernel >= 0;
    cq_chunk **arena = (blk->kernel < 0 || kernel_global) ? &call->arena : &blk->arena;
    *fault = 0;
    cq_buf **insts = cq_arena_alloc(arena, (size_t)decl->count * sizeof(cq_buf *));
    for (int k = 0; insts && k < decl->count; k++) {
        insts[k] = cq_new_buffer(arena, decl->type, ndim, shape, blk->kernel, slot,
                                 decl->is_array ? k : -1, call->opts.poison, defined);
        if (!insts[k])
            insts = NULL;
    }
    if (!insts) {
        *fault = 1;
        return NULL;
    }
    if (!block_wide(decl)) {
        if (!blk->locals[slot])
            blk->locals[slot] = cq_xcalloc((size_t)blk->size, sizeof(cq_insts));
        blk->locals[slot][lane] = insts;
    } else {
        blk->bufs[slot] = insts;
        if (kernel_global)
            call->kglobals[blk->kernel][slot] = insts;
    }
    return insts;
}

/* An allocation that failed: ALLOC_BUFFER (``what`` a slot), ALLOC_TILE (a DMA) or
 * ALLOC_FRAGMENT (a fragment), with the extents asked for. */
int cq_alloc_fault(cq_block *blk, const cq_ins *ins, int lane, int kind, int what, int ndim,
                   const int64_t *shape)
{
    cq_record *f = cq_fault_new(blk, ins, kind, lane);
    cq_put(f, what);
    cq_put(f, ndim);
    for (int d = 0; d < ndim; d++)   /* an extent read from a u64 register may be huge */
        cq_put_u64(f, shape[d], shape[d] < 0);
    return CQ_ST_FAULT;
}

cq_warp *cq_warp_of(cq_block *blk, int lane, int *i)
{
    cq_warp *w = &blk->warps[lane / CQ_WARP];
    *i = lane - w->base;
    return w;
}

static inline int64_t reg_int(cq_warp *w, int r, int i)
{
    const cq_code *code = w->blk->code;
    return cq_to_int64(code->rtype[r], w->regs + code->roff[r], i);
}

int64_t cq_lane_reg_int(cq_block *blk, int lane, int r)
{
    int i;
    cq_warp *w = cq_warp_of(blk, lane, &i);
    return reg_int(w, r, i);
}

/* ------------------------------------------------------------------ handles */

int32_t cq_handle_new(cq_block *blk)
{
    int32_t h = blk->freehandle;
    if (h >= 0) {
        blk->freehandle = blk->handles[h].next_free;
    } else {
        if (blk->nhandles == blk->caphandles) {
            blk->caphandles = blk->caphandles ? 2 * blk->caphandles : 16;
            blk->handles = realloc(blk->handles, (size_t)blk->caphandles * sizeof(cq_handle));
            if (!blk->handles)
                abort();
        }
        h = blk->nhandles++;
    }
    memset(&blk->handles[h], 0, sizeof(cq_handle));
    return h;
}

void cq_handle_unref(cq_block *blk, int32_t h)
{
    if (h < 0 || --blk->handles[h].refs > 0)
        return;
    cq_transfer_unref(blk->handles[h].transfer);
    blk->handles[h].transfer = NULL;
    blk->handles[h].next_free = blk->freehandle;
    blk->freehandle = h;
}

/* Lane ``lane`` of future ``slot`` := handle h (-1 none, CQ_PLACEHOLDER a dma.any). */
void cq_handle_set(cq_block *blk, int slot, int lane, int32_t h)
{
    int32_t old = blk->fut[slot][lane];
    if (h >= 0)
        blk->handles[h].refs++;
    blk->fut[slot][lane] = h;
    cq_handle_unref(blk, old);
}

/* ------------------------------------------------------------------ bases and views */

/* Lane i's instance of buffer slot ``slot`` (element R[arr] of an array). An array
 * index is reported as the register's value, except through an access to a block-wide
 * array (``as_int64``), which reads it as an s64, as the reference does. */
static int buffer_of(cq_warp *w, const cq_ins *ins, int slot, int arr, int i, int as_int64,
                     cq_buf **out)
{
    const cq_bufdecl *decl = &w->blk->code->buf[slot];
    cq_buf **insts = cq_instances(w->blk, slot, w->base + i);
    if (!insts) {
        cq_put(cq_fault_new(w->blk, ins, CQ_FAULT_BUFFER_BEFORE_DECLARATION, w->base + i), slot);
        return CQ_ST_FAULT;
    }
    int64_t a = 0;
    if (arr >= 0) {
        a = reg_int(w, arr, i);
        if (a < 0 || a >= decl->count) {   /* a u64 index >= 2^63 reads as negative */
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_BUFFER_ARRAY_INDEX, w->base + i);
            cq_put_u64(f, a, !as_int64 && w->blk->code->rtype[arr] == CQ_DT_U64);
            cq_put(f, slot);
            cq_put(f, decl->count);
            return CQ_ST_FAULT;
        }
    }
    *out = insts[a];
    return CQ_ST_OK;
}

int cq_buffer_of(cq_warp *w, const cq_ins *ins, int slot, int arr, int i, cq_buf **out)
{
    return buffer_of(w, ins, slot, arr, i, 0, out);
}

/* Lane i's handle of future ``slot``, which must hold waited data (§9.5.4). */
int cq_future_data(cq_warp *w, const cq_ins *ins, int slot, int i, cq_handle **out)
{
    cq_block *blk = w->blk;
    int lane = w->base + i;
    int32_t h = blk->fut[slot][lane];
    int kind = h < 0 || !blk->handles[h].buf ? CQ_FAULT_FUTURE_NO_DATA
             : blk->handles[h].is_async && !cq_lanes_get(&blk->handles[h].waited, lane)
             ? CQ_FAULT_FUTURE_NOT_WAITED : 0;
    if (kind) {
        cq_put(cq_fault_new(blk, ins, kind, lane), slot);
        return CQ_ST_FAULT;
    }
    *out = &blk->handles[h];
    return CQ_ST_OK;
}

/* (buffer, origin, extents) of a base for lane i, in root coordinates. */
static int base_view(cq_warp *w, const cq_ins *ins, int kind, int base, int arr, int i,
                     int as_int64, cq_buf **buf, int64_t *o, int64_t *e)
{
    if (kind == 1) {
        cq_handle *h;
        if (cq_future_data(w, ins, base, i, &h) != CQ_ST_OK)
            return CQ_ST_FAULT;
        *buf = h->buf;
        for (int d = 0; d < h->nd; d++) {
            o[d] = h->o[d];
            e[d] = h->e[d];
        }
        return CQ_ST_OK;
    }
    if (buffer_of(w, ins, base, arr, i, as_int64, buf) != CQ_ST_OK)
        return CQ_ST_FAULT;
    for (int d = 0; d < (*buf)->ndim; d++) {
        o[d] = 0;
        e[d] = (*buf)->shape[d];
    }
    return CQ_ST_OK;
}

/* A reshaped view's buffer (span_as, §8.3.3): ``*buf``'s elements from row-major
 * position ``first`` on as an array of the view's space, made in ``out`` (memory.py
 * Reshaped), which then stands for it; outside the buffer a fault (lowering checks that
 * first). */
static int reshaped(cq_warp *w, const cq_ins *ins, const cq_viewdecl *view, int i,
                    int64_t start, cq_buf *out, cq_buf **buf)
{
    const cq_buf *b = *buf;
    int64_t first = start + reg_int(w, view->flat, i), count = 1, end;
    int bad = first < 0;
    for (int d = 0; d < view->nspace; d++) {
        int64_t x = reg_int(w, view->space[d], i);
        bad |= x < 0 || __builtin_mul_overflow(count, x, &count);
        out->shape[d] = x;
    }
    if (bad || __builtin_add_overflow(first, count, &end) || end > b->count) {
        cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_TILE_OUTSIDE, w->base + i);
        cq_put_buffer(f, b);
        cq_put_list(f, 1, &first);
        cq_put_list(f, 1, &b->count);
        return CQ_ST_FAULT;
    }
    int64_t shape[CQ_MAX_RANK];
    memcpy(shape, out->shape, sizeof shape);
    *out = *b;
    memcpy(out->shape, shape, sizeof shape);
    out->root = b;
    out->data = b->data + first * b->esize;
    out->written = b->written ? b->written + first : NULL;
    out->ndim = view->nspace;
    out->count = count;
    *buf = out;
    return CQ_ST_OK;
}

/* Where a view's base starts in its buffer's memory order (memory.py window_start): a
 * buffer at 0; a future's data at its first element, when it lies contiguous there
 * (one extent other than 1 at most before whole dimensions), else a fault. */
static int window_start(cq_warp *w, const cq_ins *ins, const cq_viewdecl *view, int i,
                        const cq_buf *b, const int64_t *o, const int64_t *e, int64_t *start)
{
    *start = 0;
    if (view->kind != 1)
        return CQ_ST_OK;
    int ok = 1, partial = 0;
    for (int d = 0; d < b->ndim; d++) {
        ok &= o[d] >= 0 && o[d] + e[d] <= b->shape[d] && (!partial || e[d] == b->shape[d]);
        partial |= e[d] != 1;
        *start = *start * b->shape[d] + o[d];
    }
    if (ok)
        return CQ_ST_OK;
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_FUTURE_NOT_CONTIGUOUS, w->base + i);
    cq_put(f, view->base);
    cq_put_buffer(f, b);
    cq_put_list(f, b->ndim, o);
    cq_put_list(f, b->ndim, e);
    return CQ_ST_FAULT;
}

/* A view with element strides (§8.3.2; memory.py strided): a box of its extents, at
 * origin 0, whose element r lies at position start + R[flat] + sum((origin + r) *
 * stride) of ``*buf``, made in ``out``; an element outside the buffer is a fault
 * (lowering checks that first), the lowest in row-major order. */
static int strided(cq_warp *w, const cq_ins *ins, const cq_viewdecl *view, int i,
                   int64_t start, cq_buf *out, cq_buf **buf, int64_t *o, int64_t *e)
{
    const cq_buf *b = *buf;
    int n = view->n;
    *out = *b;
    out->strided = 1;
    out->root = b;
    out->ndim = n;
    uint64_t first = (uint64_t)start + (uint64_t)reg_int(w, view->flat, i);
    int empty = 0;
    for (int d = 0; d < n; d++) {
        out->step[d] = reg_int(w, view->strides[d], i);
        first += (uint64_t)reg_int(w, view->origin[d], i) * (uint64_t)out->step[d];
        o[d] = 0;
        out->shape[d] = e[d];
        empty |= e[d] < 1;
    }
    out->first = (int64_t)first;
    *buf = out;
    if (empty)                      /* no elements: the tile check's to report */
        return CQ_ST_OK;
    int64_t r[CQ_MAX_RANK] = {0};
    for (;;) {
        uint64_t p = first;
        for (int d = 0; d < n; d++)
            p += (uint64_t)r[d] * (uint64_t)out->step[d];
        if ((int64_t)p < 0 || (int64_t)p >= b->count) {
            int64_t at = (int64_t)p;
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_TILE_OUTSIDE, w->base + i);
            cq_put_buffer(f, b);
            cq_put_list(f, 1, &at);
            cq_put_list(f, 1, &b->count);
            return CQ_ST_FAULT;
        }
        int d = n - 1;
        while (d >= 0 && ++r[d] == e[d])
            r[d--] = 0;
        if (d < 0)
            return CQ_ST_OK;
    }
}

/* View v for lane i: (buffer, origin, extents), root coordinates; for a reshaped or
 * strided view the buffer is made in ``scratch``. */
int cq_view_of(cq_warp *w, const cq_ins *ins, int v, int i, cq_buf *scratch, cq_buf **buf,
               int64_t *o, int64_t *e)
{
    const cq_viewdecl *view = &w->blk->code->view[v];
    int64_t bo[CQ_MAX_RANK], be[CQ_MAX_RANK];
    int64_t start = 0;
    if (base_view(w, ins, view->kind, view->base, view->arr, i, 0, buf, bo, be) != CQ_ST_OK ||
        (view->flat >= 0 && window_start(w, ins, view, i, *buf, bo, be, &start) != CQ_ST_OK))
        return CQ_ST_FAULT;
    if (view->nspace) {
        if (reshaped(w, ins, view, i, start, scratch, buf) != CQ_ST_OK)
            return CQ_ST_FAULT;
        memset(bo, 0, sizeof bo);
    }
    for (int d = 0; d < view->n; d++) {   /* .sqz(): a dimension not shown is 1 deep */
        o[d] = bo[d] + reg_int(w, view->origin[d], i);
        e[d] = view->nshown ? 1 : reg_int(w, view->extents[d], i);
    }
    for (int k = 0; k < view->nshown; k++)
        e[view->shown[k]] = reg_int(w, view->extents[view->shown[k]], i);
    if (view->nstrides)
        return strided(w, ins, view, i, start, scratch, buf, o, e);
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ element access */

/* Where each active lane's element lies: its instance and flat offset, and for a
 * future's data the handle (views group lanes, see group_of). When every lane sees one
 * view, ``one`` is its instance, whose elements a 32-bit offset reaches: the offsets are
 * ``near`` then, and ``buf``, ``off`` and ``h`` are not filled in. */
typedef struct {
    uint32_t lanes;                 /* the located lanes (the active ones) */
    cq_buf *one;
    uint32_t near[CQ_WARP];
    cq_buf *buf[CQ_WARP];
    int64_t off[CQ_WARP];
    int32_t h[CQ_WARP];
} located;

static inline cq_buf *buf_at(const located *L, int i)
{
    return L->one ? L->one : L->buf[i];
}

static inline int64_t off_at(const located *L, int i)
{
    return L->one ? L->near[i] : L->off[i];
}

static int range_fault(cq_warp *w, const cq_ins *ins, int a, int i, int k, int64_t lo,
                       int64_t hi, const int64_t *idx, int n)
{
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_OUT_OF_RANGE, w->base + i);
    cq_put(f, a);
    cq_put_list(f, n, idx);
    cq_put(f, idx[k]);
    cq_put(f, k);
    cq_put(f, lo);
    cq_put(f, hi);
    return CQ_ST_FAULT;
}

/* Whether some lane among the first n of ``x`` lies outside [lo, lo + width), for a width
 * of at most 2^31: u = x - lo (unsigned) is inside when below width, which for such
 * widths is when u has no sign bit and u - width has one. Or-ing the first and and-ing
 * the second over the lanes leaves the loop without a compare, so that it vectorises. */
static inline __attribute__((always_inline)) int some_outside(const int32_t *x, uint32_t lo,
                                                              uint32_t width, int n)
{
    uint32_t any = 0, all = ~0u;
    for (int i = 0; i < n; i++) {
        uint32_t u = (uint32_t)x[i] - lo;
        any |= u;
        all &= u - width;
    }
    return (any | ~all) >> 31;
}

/* Whether some lane among the first n of ``held`` holds another handle than h. */
static inline __attribute__((always_inline)) int other_handle(const int32_t *held, int32_t h,
                                                              int n)
{
    uint32_t other = 0;
    for (int i = 0; i < n; i++)
        other |= (uint32_t)(held[i] ^ h);
    return other != 0;
}

/* The flat offsets of the lanes up to n into L->near, each index in range for the active
 * ones (``act``), or 0 when some active lane's is not or an index is not an s32. The flat
 * offset is the sum over the dimensions of (index + origin) times the dimension's
 * row-major stride; in range it is below the buffer's count, which the caller checked
 * fits 32 bits, so it is computed in 32 bits (lanes that are not active compute garbage,
 * unsigned, that nothing reads). Inlined with n a constant for a full warp, the lane
 * loops unroll. */
static inline __attribute__((always_inline)) int offsets(cq_warp *w, const cq_access *acc,
                                                         const cq_buf *buf, const int64_t *o,
                                                         const int64_t *e, uint32_t act,
                                                         int n, located *L)
{
    const cq_code *code = w->blk->code;
    uint32_t *restrict flat = L->near;
    uint32_t stride = 1;
    if (!acc->n)
        memset(flat, 0, sizeof L->near);
    for (int d = acc->n - 1; d >= 0; d--) {
        int r = acc->idx[d];
        if (code->rtype[r] != CQ_DT_S32)
            return 0;
        const int32_t *restrict x = (const int32_t *)(w->regs + code->roff[r]);
        int64_t od = o ? o[d] : 0, lo = od < 0 ? -od : 0;
        int64_t hi = buf->shape[d] - od < e[d] ? buf->shape[d] - od : e[d];
        if (hi <= lo || lo > INT32_MAX || hi > (int64_t)INT32_MAX + 1)
            return 0;
        uint32_t lo32 = (uint32_t)lo, width = (uint32_t)(hi - lo);   /* x in [lo, hi) */
        uint32_t shift = (uint32_t)od;
        if (some_outside(x, lo32, width, n))   /* some lane is out of range: an active one? */
            for (uint32_t m = act; m; m &= m - 1)
                if ((uint32_t)x[cq_low(m)] - lo32 >= width)
                    return 0;
        if (d == acc->n - 1)        /* the last dimension: stride 1 */
            for (int i = 0; i < n; i++)
                flat[i] = (uint32_t)x[i] + shift;
        else if (!(stride & (stride - 1)))   /* a power of two (1 too): a shift, which */
            for (int i = 0, k = cq_low(stride); i < n; i++)   /* vectorises cheaper */
                flat[i] += ((uint32_t)x[i] + shift) << k;
        else
            for (int i = 0; i < n; i++)
                flat[i] += ((uint32_t)x[i] + shift) * stride;
        stride *= (uint32_t)buf->shape[d];
    }
    return 1;
}

/* The usual case at once: every active lane sees one view (a block-wide buffer, or one
 * future's waited data, the common case after a collective DMA), its elements within
 * reach of 32-bit offsets, and its s32 indices are in range. Returns 0 when it does not
 * apply, or some lane faults: then ``locate`` goes lane by lane and finds the fault the
 * reference engine reports. The lane loops run over every lane up to the highest active
 * one, without a branch; only when one of them finds a lane that breaks the rule do the
 * active lanes go one by one. */
static int locate_uniform(cq_warp *w, const cq_access *acc, located *L)
{
    cq_block *blk = w->blk;
    const cq_code *code = blk->code;
    uint32_t act = w->act;
    const int n = cq_span(act);
    cq_buf *buf;
    const int64_t *o = NULL, *e;
    if (acc->kind == CQ_BASE_KIND_FUT) {
        const int32_t *held = blk->fut[acc->base] + w->base;
        int32_t h = held[cq_low(act)];
        if (h < 0)
            return 0;
        if (act == 0xffffffffu ? other_handle(held, h, CQ_WARP) : other_handle(held, h, n))
            /* some lane holds another handle: an active one? */
            for (uint32_t m = act; m; m &= m - 1)
                if (held[cq_low(m)] != h)
                    return 0;
        const cq_handle *hd = &blk->handles[h];
        if (!hd->buf || (hd->is_async && (hd->waited.w[w->index] & act) != act))
            return 0;
        buf = hd->buf;
        o = hd->o;
        e = hd->e;
    } else {
        if (!block_wide(&code->buf[acc->base]) || acc->arr >= 0 || !blk->bufs[acc->base])
            return 0;
        buf = blk->bufs[acc->base][0];
        e = buf->shape;
    }
    if ((uint64_t)buf->count > UINT32_MAX)
        return 0;
    if (act == 1) {             /* lane 0 alone (the host program): no lane loops */
        int64_t f = 0;
        for (int d = 0; d < acc->n; d++) {
            int r = acc->idx[d];
            if (code->rtype[r] != CQ_DT_S32)
                return 0;
            int64_t x = *(const int32_t *)(w->regs + code->roff[r]);
            int64_t od = o ? o[d] : 0, lo = od < 0 ? -od : 0;
            int64_t hi = buf->shape[d] - od < e[d] ? buf->shape[d] - od : e[d];
            if (x < lo || x >= hi)
                return 0;
            f = f * buf->shape[d] + x + od;
        }
        L->near[0] = (uint32_t)f;
    } else if (!(act == 0xffffffffu ? offsets(w, acc, buf, o, e, act, CQ_WARP, L)
                                    : offsets(w, acc, buf, o, e, act, n, L))) {
        return 0;
    }
    L->lanes = act;
    L->one = buf;
    return 1;
}

/* Access ``a`` for every active lane, every index checked (§8.6). */
static int locate(cq_warp *w, const cq_ins *ins, int a, located *L)
{
    const cq_code *code = w->blk->code;
    const cq_access *acc = &code->access[a];
    uint32_t act = w->act;
    L->one = NULL;
    if (locate_uniform(w, acc, L))
        return CQ_ST_OK;
    L->lanes = act;
    while (act) {
        int i = cq_low(act);
        act &= act - 1;
        cq_buf *buf;
        int64_t o[CQ_MAX_RANK], e[CQ_MAX_RANK], idx[CQ_MAX_RANK];
        int wide = acc->kind == 0 && block_wide(&code->buf[acc->base]);
        if (base_view(w, ins, acc->kind, acc->base, acc->arr, i, wide, &buf, o, e) != CQ_ST_OK)
            return CQ_ST_FAULT;
        int64_t flat = 0;
        for (int d = 0; d < acc->n; d++) {
            idx[d] = reg_int(w, acc->idx[d], i);
        }
        for (int d = 0; d < acc->n; d++) {
            int64_t lo = o[d] < 0 ? -o[d] : 0;
            int64_t hi = buf->shape[d] - o[d] < e[d] ? buf->shape[d] - o[d] : e[d];
            if (idx[d] < lo || idx[d] >= hi)
                return range_fault(w, ins, a, i, d, lo, hi, idx, acc->n);
            flat = flat * buf->shape[d] + idx[d] + o[d];
        }
        L->buf[i] = buf;
        L->off[i] = flat;
        L->h[i] = acc->kind == 1 ? w->blk->fut[acc->base][w->base + i] : -1;
    }
    return CQ_ST_OK;
}

/* Poison mode (§14.4): the lowest of ``lanes`` whose element was never written faults. */
static int unwritten(cq_warp *w, const cq_ins *ins, int a, const located *L, uint32_t lanes)
{
    while (lanes) {
        int i = cq_low(lanes);
        lanes &= lanes - 1;
        const cq_buf *b = buf_at(L, i);
        if (b->written && !b->written[off_at(L, i)]) {
            const cq_access *acc = &w->blk->code->access[a];
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_UNINITIALISED, w->base + i);
            cq_put(f, a);
            cq_put(f, acc->n);
            for (int d = 0; d < acc->n; d++)
                cq_put_u64(f, reg_int(w, acc->idx[d], i),
                           w->blk->code->rtype[acc->idx[d]] == CQ_DT_U64);
            cq_put_buffer(f, b);
            return CQ_ST_FAULT;
        }
    }
    return CQ_ST_OK;
}

/* The usual case, one view that poison mode does not follow, without a call. */
static inline int check_written(cq_warp *w, const cq_ins *ins, int a, const located *L,
                                uint32_t lanes)
{
    if (L->one && !L->one->written)
        return CQ_ST_OK;
    return unwritten(w, ins, a, L, lanes);
}

/* LOAD: the elements convert from the declared element type to R[a]'s. */
/* Element i of each lane of ``lanes`` (size bytes each) into vals, lane by lane. */
static void gather(const located *L, uint32_t lanes, int size, char *vals)
{
    switch (size) {
#define GATHER(T) \
        if (L->one) { \
            const T *src = (const T *)L->one->data; \
            if (lanes == 0xffffffffu) {     /* a full warp: unrolled */ \
                _Pragma("GCC unroll 8") \
                for (int i = 0; i < CQ_WARP; i++) \
                    ((T *)vals)[i] = src[L->near[i]]; \
                return; \
            } \
            if (!(lanes & (lanes + 1))) {   /* lanes 0 to n - 1 */ \
                for (int i = 0, n = cq_span(lanes); i < n; i++) \
                    ((T *)vals)[i] = src[L->near[i]]; \
                return; \
            } \
            for (uint32_t m = lanes; m; m &= m - 1) \
                ((T *)vals)[cq_low(m)] = src[L->near[cq_low(m)]]; \
            return; \
        } \
        for (uint32_t m = lanes; m; m &= m - 1) { \
            int i = cq_low(m); \
            ((T *)vals)[i] = ((const T *)L->buf[i]->data)[L->off[i]]; \
        } \
        return;
    case 1: GATHER(uint8_t)
    case 2: GATHER(uint16_t)
    case 4: GATHER(uint32_t)
    default: GATHER(uint64_t)
#undef GATHER
    }
}

/* vals of each lane of ``lanes`` into its element, in lane order. */
static void scatter(const located *L, uint32_t lanes, int size, const char *vals)
{
    switch (size) {
#define SCATTER(T) \
        if (L->one && !(lanes & (lanes + 1))) {   /* lanes 0 to n - 1, in order */ \
            T *dst = (T *)L->one->data; \
            if (lanes == 0xffffffffu) {           /* a full warp: unrolled */ \
                _Pragma("GCC unroll 8") \
                for (int i = 0; i < CQ_WARP; i++) \
                    dst[L->near[i]] = ((const T *)vals)[i]; \
                break; \
            } \
            for (int i = 0, n = cq_span(lanes); i < n; i++) \
                dst[L->near[i]] = ((const T *)vals)[i]; \
            break; \
        } \
        for (uint32_t m = lanes; m; m &= m - 1) { \
            int i = cq_low(m); \
            ((T *)buf_at(L, i)->data)[off_at(L, i)] = ((const T *)vals)[i]; \
        } \
        break;
    case 1: SCATTER(uint8_t)
    case 2: SCATTER(uint16_t)
    case 4: SCATTER(uint32_t)
    default: SCATTER(uint64_t)
#undef SCATTER
    }
    if (L->one && !L->one->written)
        return;
    for (uint32_t m = lanes; m; m &= m - 1) {
        int i = cq_low(m);
        if (buf_at(L, i)->written)
            buf_at(L, i)->written[off_at(L, i)] = 1;
    }
}

/* The located lanes' flat offsets as the race check takes them: 64-bit, whichever
 * form ``locate`` filled in. */
static void race_offsets(const located *L, int64_t *off)
{
    for (uint32_t m = L->lanes; m; m &= m - 1)
        off[cq_low(m)] = off_at(L, cq_low(m));
}

/* The race check of an element access that succeeded (race.c cq_race_elements). */
static int race_elements(cq_warp *w, const cq_ins *ins, const located *L, int write,
                         const char *olds, const char *news, const char *vals, int size)
{
    int64_t off[CQ_WARP];
    race_offsets(L, off);
    return cq_race_elements(w, ins, L->lanes, L->one, L->buf, off, write, olds, news, vals,
                            size);
}

int cq_op_load(cq_warp *w, const cq_ins *ins)
{
    located L;
    if (locate(w, ins, ins->b, &L) != CQ_ST_OK || check_written(w, ins, ins->b, &L, L.lanes))
        return CQ_ST_FAULT;
    char vals[CQ_WARP * 8];
    int size = cq_type_size[ins->te];
    if (ins->te == ins->ta) {   /* straight into the register */
        gather(&L, L.lanes, size, w->regs + ins->ra);
        return w->blk->race ? race_elements(w, ins, &L, 0, NULL, NULL, NULL, size) : CQ_ST_OK;
    }
    gather(&L, L.lanes, size, vals);
    int bad;
    cq_convert(ins->te, ins->ta, vals, w->regs + ins->ra, cq_span(L.lanes), L.lanes, &bad);
    if (bad >= 0)
        return cq_fault_convert(w, ins, bad, ins->te, vals, ins->ta);
    return w->blk->race ? race_elements(w, ins, &L, 0, NULL, NULL, NULL, size) : CQ_ST_OK;
}

/* STORE: R[b] converts to the element type; the lowest lane with a fault wins, an
 * access fault before a conversion fault of the same lane. */
int cq_op_store(cq_warp *w, const cq_ins *ins)
{
    located L;
    int located_ok = locate(w, ins, ins->a, &L) == CQ_ST_OK;
    char vals[CQ_WARP * 8];
    int bad;
    cq_convert(ins->tb, ins->te, w->regs + ins->rb, vals, cq_span(w->act), w->act, &bad);
    if (bad >= 0 && (located_ok || w->base + bad < w->blk->call->fault.lane))
        return cq_fault_convert(w, ins, bad, ins->tb, w->regs + ins->rb, ins->te);
    if (!located_ok)
        return CQ_ST_FAULT;
    int size = cq_type_size[ins->te];
    if (!w->blk->race) {
        scatter(&L, L.lanes, size, vals);
        return CQ_ST_OK;
    }
    char olds[CQ_WARP * 8], news[CQ_WARP * 8];
    gather(&L, L.lanes, size, olds);
    scatter(&L, L.lanes, size, vals);
    gather(&L, L.lanes, size, news);
    return race_elements(w, ins, &L, 1, olds, news, vals, size);
}

/* ------------------------------------------------------------------ UPDATE */

/* @a := @a <op> R[b], one lane after another (§7.1.3). The operation is the ALU's own:
 * the elements and the values, promoted to the arithmetic type (§12.2), go through the
 * dispatch loop's handler on a scratch warp, and the results convert back. */
typedef struct {
    cq_warp sw;
    cq_ins op;
    char regs[3 * CQ_WARP * 8];
} update_scratch;

int cq_step(cq_block *blk, cq_warp *w, const cq_ins *ins, int n);

/* A shift's count is R[b] as its own type reads it, checked against the width of the
 * promoted element type t (croqvm/core/numerics.py _shift) before any conversion. */
static int shift_counts(cq_warp *w, const cq_ins *ins, int t, uint32_t lanes)
{
    int bits = cq_type_size[t] == 8 ? 64 : 32;
    for (; lanes; lanes &= lanes - 1) {
        int i = cq_low(lanes);
        int64_t n = reg_int(w, ins->b, i);
        if (n < 0 || n >= bits)
            return cq_fault_shift(w, ins, i, n, ins->tb, t);
    }
    return CQ_ST_OK;
}

/* Lanes 0 to n - 1 of values of ``size`` bytes; a whole warp of 4-byte values, the
 * usual case, without a call. */
static inline void copy_first_lanes(char *dst, const char *src, int n, int size)
{
    if (n == CQ_WARP && size == 4)
        memcpy(dst, src, CQ_WARP * 4);
    else
        memcpy(dst, src, (size_t)n * size);
}

/* The new values of ``lanes``' elements (read now), into ``out`` (element type). */
static int updated(cq_warp *w, const cq_ins *ins, const located *L, uint32_t lanes, char *out,
                   update_scratch *s)
{
    int etype = ins->te, t = ins->tt, size = cq_type_size[etype];
    if ((ins->c == CQ_OP_SHL || ins->c == CQ_OP_SHR) &&
        shift_counts(w, ins, t, lanes) != CQ_ST_OK)
        return CQ_ST_FAULT;
    char x[CQ_WARP * 8];
    int bad;
    s->sw.act = lanes;
    int n = cq_span(lanes);
    /* operands of the arithmetic type already go as they are (the lanes up to n: a
     * register's storage holds every lane, and the lanes that do not count are left
     * alone by the step and the scatter) */
    if (etype == t) {
        gather(L, lanes, size, s->regs);
    } else {
        gather(L, lanes, size, x);
        cq_convert(etype, t, x, s->regs, n, lanes, &bad);
    }
    if (ins->tb == t)
        copy_first_lanes(s->regs + CQ_WARP * 8, w->regs + ins->rb, n, cq_type_size[t]);
    else
        cq_convert(ins->tb, t, w->regs + ins->rb, s->regs + CQ_WARP * 8, n, lanes, &bad);
    s->op.h = ins->hx;
    s->op.tc = (uint8_t)t;      /* a shift's count, checked above, converted exactly */
    s->op.span = ins->span;
    if (cq_step(w->blk, &s->sw, &s->op, n) != CQ_ST_OK) {
        w->blk->call->fault.ip = (int32_t)(ins - w->blk->code->ins);   /* at this UPDATE */
        return CQ_ST_FAULT;
    }
    if (etype == t && !(lanes & (lanes + 1))) {     /* lanes 0 to n - 1 */
        copy_first_lanes(out, s->regs + 2 * CQ_WARP * 8, n, size);
        return CQ_ST_OK;
    }
    cq_convert(t, etype, s->regs + 2 * CQ_WARP * 8, out, n, lanes, &bad);
    if (bad >= 0)
        return cq_fault_convert(w, ins, bad, t, s->regs + 2 * CQ_WARP * 8, etype);
    return CQ_ST_OK;
}


/* Whether two located lanes address one element. Offsets increasing with the lane in
 * one instance (the usual case) settle it at once. */
static int collide(const located *L)
{
    uint32_t m = L->lanes;
    if (L->one && m == 0xffffffffu && (uint64_t)L->one->count <= (uint64_t)1 << 31) {
        /* offsets below 2^31: a lane's offset is above the previous one's when their
         * difference less 1 has no sign bit (a loop without compares, which vectorises) */
        uint32_t down = 0;
        for (int i = 1; i < CQ_WARP; i++)
            down |= L->near[i] - L->near[i - 1] - 1;
        if (!(down >> 31))
            return 0;
    }
    int prev = -1, sorted = 1;
    for (uint32_t k = m; k; k &= k - 1) {
        int i = cq_low(k);
        if (prev >= 0 && (buf_at(L, i) != buf_at(L, prev) || off_at(L, i) <= off_at(L, prev)))
            sorted = 0;
        prev = i;
    }
    if (sorted)
        return 0;
    for (uint32_t a = m; a; a &= a - 1)
        for (uint32_t b = a & (a - 1); b; b &= b - 1) {
            int i = cq_low(a), j = cq_low(b);
            if (buf_at(L, i) == buf_at(L, j) && off_at(L, i) == off_at(L, j))
                return 1;
        }
    return 0;
}

/* The lanes of ``L`` that see the same view as lane i: one instance of a buffer, or
 * handles with one view (croqvm/interp/memory.py groups lanes so). */
static uint32_t group_of(const cq_block *blk, const located *L, uint32_t lanes, int i)
{
    uint32_t g = 0;
    for (uint32_t m = lanes; m; m &= m - 1) {
        int j = cq_low(m);
        if (L->buf[j] == L->buf[i] && cq_same_view(blk, L->h[j], L->h[i]))
            g |= 1u << j;
    }
    return g;
}

int cq_op_update(cq_warp *w, const cq_ins *ins)
{
    located L;
    if (locate(w, ins, ins->a, &L) != CQ_ST_OK)
        return CQ_ST_FAULT;
    update_scratch s;       /* only the fields the ALU handlers read */
    s.sw.blk = w->blk;
    s.sw.base = w->base;
    s.sw.width = CQ_WARP;
    s.sw.regs = s.regs;
    s.op.rb = 0;
    s.op.rc = CQ_WARP * 8;
    s.op.ra = 2 * CQ_WARP * 8;
    char out[CQ_WARP * 8], olds[CQ_WARP * 8], news[CQ_WARP * 8];
    int size = cq_type_size[ins->te];
    if (w->blk->race)
        gather(&L, L.lanes, size, olds);
    if (collide(&L)) {   /* lane by lane: a lane sees the element as earlier lanes left it */
        for (uint32_t m = L.lanes; m; m &= m - 1) {
            uint32_t one = m & -m;
            if (check_written(w, ins, ins->a, &L, one) || updated(w, ins, &L, one, out, &s))
                return CQ_ST_FAULT;
            scatter(&L, one, size, out);
        }
        if (!w->blk->race)
            return CQ_ST_OK;
        gather(&L, L.lanes, size, news);
        return race_elements(w, ins, &L, 1, olds, news, NULL, size);
    }
    /* No two lanes share an element: the order is invisible and the lanes go together,
     * checked in stages (docs/EXECUTION.md §14.2): addresses, uninitialised reads, then
     * the operation, a group (one view) at a time, the lowest faulting lane winning. */
    if (check_written(w, ins, ins->a, &L, L.lanes) != CQ_ST_OK)
        return CQ_ST_FAULT;
    cq_record best;
    int have = 0;
    uint32_t left = L.lanes;
    while (left) {
        uint32_t g = L.one ? left : group_of(w->blk, &L, left, cq_low(left));
        left &= ~g;
        if (updated(w, ins, &L, g, out, &s) == CQ_ST_OK)
            continue;
        if (!have || w->blk->call->fault.lane < best.lane)
            best = w->blk->call->fault;
        have = 1;
    }
    if (have) {
        w->blk->call->fault = best;
        return CQ_ST_FAULT;
    }
    scatter(&L, L.lanes, size, out);
    if (!w->blk->race)
        return CQ_ST_OK;
    gather(&L, L.lanes, size, news);
    return race_elements(w, ins, &L, 1, olds, news, NULL, size);
}

/* ------------------------------------------------------------------ ATOMIC */

/* The element after ATOMIC operation ``op`` (enum cq_atomic) of the element ``old``, the
 * value ``v`` and, for CAS, ``cmp``, all of element type T, which the operation takes
 * (the verifier's guarantee); integers as cq_numerics.h, floats rounded once. */
#define ATOMIC_INT(N) \
    case CQ_DT_##N: { \
        CT_##N o = LD_##N(*(const ST_##N *)old), x = LD_##N(*(const ST_##N *)v); \
        CT_##N r = op == CQ_ATOMIC_ADD ? NUM_OF(add, N)(o, x) \
            : op == CQ_ATOMIC_SUB ? NUM_OF(sub, N)(o, x) \
            : op == CQ_ATOMIC_MIN ? NUM_OF(min, N)(o, x) \
            : op == CQ_ATOMIC_MAX ? NUM_OF(max, N)(o, x) \
            : op == CQ_ATOMIC_AND ? (CT_##N)(o & x) : op == CQ_ATOMIC_OR ? (CT_##N)(o | x) \
            : op == CQ_ATOMIC_XOR ? (CT_##N)(o ^ x) : op == CQ_ATOMIC_EXCH ? x \
            : o == LD_##N(*(const ST_##N *)cmp) ? x : o; \
        *(ST_##N *)out = SV_##N(r); \
        break; }
#define ATOMIC_FLOAT(N) \
    case CQ_DT_##N: \
        *(ST_##N *)out = op == CQ_ATOMIC_ADD \
            ? SV_##N(LD_##N(*(const ST_##N *)old) + LD_##N(*(const ST_##N *)v)) \
            : *(const ST_##N *)v; \
        break;
#define NUM_OF2(OP, NT) cq_##OP##_##NT
#define NUM_OF1(OP, NT) NUM_OF2(OP, NT)
#define NUM_OF(OP, N) NUM_OF1(OP, NT_##N)

static void atomic_new(int op, int t, const void *old, const void *v, const void *cmp,
                       void *out)
{
    switch (t) {
    CQ_INT_TYPES(ATOMIC_INT)
    CQ_FLOAT_TYPES(ATOMIC_FLOAT)
    }
}

#undef ATOMIC_INT
#undef ATOMIC_FLOAT
#undef NUM_OF2
#undef NUM_OF1
#undef NUM_OF

/* R[a] := @b, @b := the new element, one lane after another in lane order (§4.5):
 * a lane reads the element as the lanes before it left it. */
int cq_op_atomic(cq_warp *w, const cq_ins *ins)
{
    located L;
    if (locate(w, ins, ins->b, &L) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int size = cq_type_size[ins->te];
    for (uint32_t m = L.lanes; m; m &= m - 1) {
        uint32_t one = m & -m;
        int i = cq_low(m);
        if (check_written(w, ins, ins->b, &L, one) != CQ_ST_OK)
            return CQ_ST_FAULT;
        char old[8], out[CQ_WARP * 8];
        char *cell = buf_at(&L, i)->data + (size_t)off_at(&L, i) * (size_t)size;
        memcpy(old, cell, (size_t)size);
        atomic_new(ins->e, ins->te, old, w->regs + ins->rc + (size_t)i * (size_t)size,
                   w->regs + ins->rd + (size_t)i * (size_t)size, out + (size_t)i * (size_t)size);
        scatter(&L, one, size, out);
        memcpy(w->regs + ins->ra + (size_t)i * (size_t)size, old, (size_t)size);
    }
    if (w->blk->race) {
        int64_t off[CQ_WARP];
        race_offsets(&L, off);
        return cq_race_atomic(w, ins, L.lanes, L.one, L.buf, off);
    }
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ ALLOC, FILL, DIMOF */

/* The shared memory a kernel block uses once slot ``slot`` holds instances of ``shape``,
 * as the limit counts it: its event slots and every shared slot allocated, a bool or a
 * narrower type taking a byte per element, bf16 two (croqvm.core.limits.buffer_bytes). */
static int64_t claim_shared(cq_block *blk, int slot, int ndim, const int64_t *shape)
{
    const cq_bufdecl *decl = &blk->code->buf[slot];
    int bits = CQ_DTYPE_BITS[decl->type];
    unsigned __int128 size = (unsigned __int128)decl->count * (bits < 8 ? 1 : bits / 8);
    for (int d = 0; d < ndim; d++)
        if ((size *= (unsigned __int128)shape[d]) > INT64_MAX)
            size = INT64_MAX;        /* beyond any limit; the report saturates */
    blk->shared[slot] = (int64_t)size;
    int64_t used = blk->code->event_bytes;
    for (int s = 0; s < blk->code->nbuf; s++)
        used = used > INT64_MAX - blk->shared[s] ? INT64_MAX : used + blk->shared[s];
    return used;
}

/* Allocate ``slot`` for lane i of w with the values of its shape registers (at its ALLOC,
 * or at the DMA owning it, §9.4.1, whose buffer is not zero-filled by a declaration):
 * every extent at least 1 and a kernel's shared memory within the limit, else a runtime
 * error of the lane (croqvm/interp/machine.py allocate_declared). */
cq_insts cq_allocate_declared(cq_warp *w, const cq_ins *ins, int slot, int i)
{
    cq_block *blk = w->blk;
    int defined = ins->op != CQ_OP_DMA;
    const cq_bufdecl *decl = &blk->code->buf[slot];
    int lane = w->base + i, fault;
    int64_t shape[CQ_MAX_RANK];
    for (int d = 0; d < decl->nshape; d++)
        shape[d] = reg_int(w, decl->shape[d], i);
    for (int d = 0; d < decl->nshape; d++)
        if (shape[d] < 1) {
            cq_put(cq_fault_new(blk, ins, CQ_FAULT_ALLOC_EXTENT, lane), shape[d]);
            return NULL;
        }
    if (decl->storage == CQ_STORAGE_GLOBAL && blk->kernel >= 0 && blk->call->kg_lock) {
        /* blocks running at once (pool.c): the first to allocate a kernel's global
         * buffer makes it, the others take it, as they would one after another */
        pthread_mutex_lock(blk->call->kg_lock);
        cq_insts made = blk->call->kglobals[blk->kernel][slot];
        cq_insts insts = made ? made
                              : cq_allocate(blk, slot, lane, decl->nshape, shape, defined, &fault);
        pthread_mutex_unlock(blk->call->kg_lock);
        if (made)
            blk->bufs[slot] = made;
        else if (!insts)
            cq_alloc_fault(blk, ins, lane, CQ_FAULT_ALLOC_BUFFER, slot, decl->nshape, shape);
        return insts;
    }
    if (decl->storage == CQ_STORAGE_SHARED && blk->kernel >= 0) {
        int64_t used = claim_shared(blk, slot, decl->nshape, shape);
        if (used > CQ_MAX_SHARED_BYTES) {   /* extents known only now (§3.2.4) */
            cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_SHARED_LIMIT, lane);
            cq_put(f, slot);
            cq_put(f, used);
            return NULL;
        }
    }
    cq_insts insts = cq_allocate(blk, slot, lane, decl->nshape, shape, defined, &fault);
    if (!insts)
        cq_alloc_fault(blk, ins, lane, CQ_FAULT_ALLOC_BUFFER, slot, decl->nshape, shape);
    return insts;
}

int cq_op_alloc(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    const cq_bufdecl *decl = &blk->code->buf[ins->a];
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        int lane = w->base + i;
        if (cq_instances(blk, ins->a, lane)) {
            if (block_wide(decl))
                return CQ_ST_OK;
            continue;
        }
        if (!cq_allocate_declared(w, ins, ins->a, i))
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

/* Every element of every instance of ``slot`` that ``lane`` sees := the value of R[r]
 * in lane ``vlane`` (§3.3.2); a value that does not fit the elements faults there. */
int cq_fill_lane(cq_block *blk, const cq_ins *ins, int slot, int lane, int vlane)
{
    cq_buf **insts = cq_instances(blk, slot, lane);
    const cq_bufdecl *decl = &blk->code->buf[slot];
    int vi;
    cq_warp *vw = cq_warp_of(blk, vlane, &vi);
    const char *src = vw->regs + blk->code->roff[ins->b] + (size_t)vi * cq_type_size[ins->tb];
    for (int k = 0; insts && k < decl->count; k++) {
        cq_buf *b = insts[k];
        char v[8];
        int bad;
        cq_convert(ins->tb, b->type, src, v, 1, 1u, &bad);
        if (bad >= 0)
            return cq_fault_convert(vw, ins, vi, ins->tb, vw->regs + blk->code->roff[ins->b],
                                    b->type);
        for (int64_t e = 0; e < b->count; e++)
            memcpy(b->data + e * b->esize, v, b->esize);
        if (b->written)
            memset(b->written, 1, (size_t)b->count);
        if (blk->race && cq_race_tile(blk, ins, b, NULL, NULL, 0, 0, 1, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

int cq_effect_fill(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n)
{
    if (cq_uniform_value(blk, rec, lanes, n, ins->b) != CQ_ST_OK)
        return CQ_ST_FAULT;
    return cq_fill_lane(blk, ins, ins->a, lanes[0], lanes[0]);
}

int cq_op_fill(cq_warp *w, const cq_ins *ins)
{
    if (ins->c >= 0)
        return cq_arrive(w, ins, ins->c, 0);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int lane = w->base + cq_low(m);
        if (cq_fill_lane(w->blk, ins, ins->a, lane, lane) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

int cq_op_dimof(cq_warp *w, const cq_ins *ins)
{
    int64_t out[CQ_WARP] = {0};
    int uniform = block_wide(&w->blk->code->buf[ins->b]);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        cq_buf *b;
        if (cq_buffer_of(w, ins, ins->b, -1, uniform ? cq_low(w->act) : i, &b) != CQ_ST_OK)
            return CQ_ST_FAULT;
        out[i] = b->shape[ins->c];
    }
    int bad;
    cq_convert(CQ_DT_S64, ins->ta, out, w->regs + ins->ra, cq_span(w->act), w->act, &bad);
    return CQ_ST_OK;
}
