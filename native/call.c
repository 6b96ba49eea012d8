/* A call: the host program, launches and blocks (docs/EXECUTION.md §1-§2; LANGUAGE.md
 * §7.1.1, §14.2), faults, and the functions of cq_api.h that the driver calls.
 * croqvm/interp/engine.py (run_launch, _start_block) and host.py are the reference.
 *
 * cq_run is a state machine so that it can stop after any instruction (a slice) and
 * continue: the host block runs until it reaches a LAUNCH; the launch's blocks then
 * run one after another in row-major order; then the host block continues. */
#include <math.h>
#include <stdlib.h>
#include "cq_engine.h"

int cq_run_block(cq_block *blk);
static void coop_end(cq_call *call);
static void cluster_end(cq_call *call);
int cq_step(cq_block *blk, cq_warp *w, const cq_ins *ins, int n);

/* ------------------------------------------------------------------ faults */

cq_record *cq_fault_new(cq_block *blk, const cq_ins *ins, int kind, int lane)
{
    cq_call *call = blk->call;
    cq_record *f = &call->fault;
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->launch = blk->launch ? (int32_t)(blk->launch - call->prog->host.launch) : -1;
    f->ip = -1;
    if (ins && ins >= blk->code->ins && ins < blk->code->ins + blk->code->n)
        f->ip = (int32_t)(ins - blk->code->ins);
    f->span = ins ? ins->span : -1;
    f->lane = lane;
    for (int d = 0; d < 3; d++)
        f->block[d] = (int32_t)blk->index[d];
    call->fault_blk = blk;
    return f;
}

int cq_fault_lane(cq_warp *w, const cq_ins *ins, int kind, int i)
{
    cq_fault_new(w->blk, ins, kind, w->base + i);
    return CQ_ST_FAULT;
}

/* The count as its own type reads it (a u64 count stays unsigned), the promoted type. */
int cq_fault_shift(cq_warp *w, const cq_ins *ins, int i, int64_t count, int count_type,
                   int shift_type)
{
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_SHIFT_COUNT, w->base + i);
    cq_put_u64(f, count, count_type == CQ_DT_U64);
    cq_put(f, shift_type);
    return CQ_ST_FAULT;
}

int cq_fault_convert(cq_warp *w, const cq_ins *ins, int i, int src, const void *x, int dst)
{
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_FLOAT_TO_INT, w->base + i);
    cq_put_double(f, cq_to_double(src, x, i));
    cq_put(f, dst);
    return CQ_ST_FAULT;
}

int cq_internal(cq_block *blk, const char *file, int line)
{
    cq_record *f = cq_fault_new(blk, NULL, CQ_DEADLOCK, -1);
    f->c_file = file;
    f->c_line = line;
    blk->call->internal = 1;
    return CQ_ST_FAULT;
}

void cq_put(cq_record *f, int64_t v)
{
    if (f->n < (int)(sizeof f->i / sizeof f->i[0]))
        f->i[f->n++] = v;
}

void cq_put_u64(cq_record *f, int64_t v, int is_u64)
{
    if (is_u64 && v < 0 && f->n < 64)
        f->unsigned_words |= 1ull << f->n;
    cq_put(f, v);
}

void cq_put_list(cq_record *f, int n, const int64_t *v)
{
    cq_put(f, n);
    for (int k = 0; k < n; k++)
        cq_put(f, v[k]);
}

void cq_put_double(cq_record *f, double x)
{
    int64_t bits;
    memcpy(&bits, &x, sizeof bits);
    cq_put(f, bits);
}

void cq_put_buffer(cq_record *f, const cq_buf *b)
{
    cq_put(f, b->code);
    cq_put(f, b->slot);
    cq_put(f, b->element);
}

/* A value of ``type`` (its storage bits at p) as a "value" argument. */
void cq_put_value(cq_record *f, int type, const void *p)
{
    int64_t bits = 0;
    memcpy(&bits, p, cq_type_size[type]);
    cq_put(f, type);
    cq_put(f, bits);
}

/* ------------------------------------------------------------------ blocks */

static void warp_init(cq_block *blk, cq_warp *w, int index, int base, int width)
{
    const cq_code *code = blk->code;
    memset(w, 0, sizeof *w);
    w->blk = blk;
    w->index = index;
    w->base = base;
    w->width = width;
    w->regs = cq_xcalloc(1, code->warp_bytes ? code->warp_bytes : 1);
    w->stack = cq_xcalloc((size_t)code->depth + 1, sizeof(cq_frame));
    w->counts = cq_xcalloc((size_t)code->ncoll_ins * CQ_WARP + 1, sizeof(int64_t));
    if (blk->call->opts.poison)
        w->written = cq_xcalloc((size_t)code->nregs + 1, sizeof(uint32_t));
    w->act = width == 32 ? 0xffffffffu : (1u << width) - 1;
    w->hold = -1;
    w->stmt = -1;
    w->state = CQ_READY;
}

static void warp_free(cq_warp *w)
{
    free(w->regs);
    free(w->stack);
    free(w->counts);
    free(w->written);
}

static cq_block *block_new(cq_call *call, const cq_code *code, int kernel, int size)
{
    cq_block *blk = cq_xcalloc(1, sizeof *blk);
    blk->call = call;
    blk->code = code;
    blk->kernel = kernel;
    blk->size = size;
    blk->nwarps = (size + CQ_WARP - 1) / CQ_WARP;
    blk->warps = cq_xcalloc((size_t)blk->nwarps, sizeof(cq_warp));
    for (int k = 0; k < blk->nwarps; k++) {
        int width = size - k * CQ_WARP < CQ_WARP ? size - k * CQ_WARP : CQ_WARP;
        warp_init(blk, &blk->warps[k], k, k * CQ_WARP, width);
        blk->live[k] = blk->warps[k].act;
    }
    blk->bufs = cq_xcalloc((size_t)code->nbuf + 1, sizeof(cq_insts));
    blk->locals = cq_xcalloc((size_t)code->nbuf + 1, sizeof(cq_insts *));
    blk->fut = cq_xcalloc((size_t)code->nfut + 1, sizeof(int32_t *));
    for (int s = 0; s < code->nfut; s++) {
        blk->fut[s] = cq_xmalloc((size_t)size * sizeof(int32_t));
        for (int l = 0; l < size; l++)
            blk->fut[s][l] = -1;
    }
    blk->freehandle = -1;
    blk->lanesets = cq_xcalloc((size_t)code->nlaneset + 1, sizeof(cq_lanes));
    blk->once_arrivals = cq_xcalloc((size_t)code->once_sites * size + 1, sizeof(int64_t));
    blk->once_claimed = cq_xcalloc((size_t)code->once_sites * size + 1, sizeof(int64_t));
    blk->frags = cq_xcalloc((size_t)code->nfrag + 1, sizeof(cq_frag **));
    blk->shared = cq_xcalloc((size_t)code->nbuf + 1, sizeof(int64_t));
    blk->cur = blk->last = -1;
    return blk;
}

void cq_free_block_extras(cq_block *blk);

void cq_block_free(cq_block *blk)
{
    if (!blk)
        return;
    const cq_code *code = blk->code;
    for (int k = 0; k < blk->nwarps; k++)
        warp_free(&blk->warps[k]);
    free(blk->warps);
    cq_free_block_extras(blk);
    for (int s = 0; s < code->nbuf; s++)
        free(blk->locals[s]);      /* the instances themselves are in the arena */
    free(blk->locals);
    free(blk->bufs);
    for (int s = 0; s < code->nfut; s++)
        free(blk->fut[s]);
    free(blk->fut);
    free(blk->lanesets);
    cq_arena_free(&blk->arena);
    free(blk->once_arrivals);
    free(blk->once_claimed);
    free(blk->shared);
    cq_race_block_free(blk);
    free(blk);
}

/* Registers of the launch's scalar arguments, in every lane of ``w``: written from the
 * start (docs/EXECUTION.md §20). */
static void set_args(cq_call *call, cq_warp *w)
{
    const cq_launch *L = call->launch;
    const cq_code *code = &call->prog->kernels[L->kernel].code;
    for (int j = 0; j < L->nscalar; j++) {
        int r = L->scalar[2 * j];
        int size = cq_type_size[code->rtype[r]];
        for (int i = 0; i < CQ_WARP; i++)
            memcpy(w->regs + code->roff[r] + (size_t)i * size, &call->hval[j], size);
        if (w->written)
            w->written[r] = 0xffffffffu;
    }
}

/* Evaluate every lane set for every lane (docs/EXECUTION.md §2): scratch warps covering
 * the block run the straight-line lane-set code one instruction at a time across the
 * block, so a fault names the lowest lane of the first faulting instruction. */
static int eval_lanesets(cq_call *call, cq_block *blk)
{
    const cq_code *code = blk->code;
    for (int k = 0; k < code->nlaneset; k++) {
        const cq_laneset *ls = &code->laneset[k];
        cq_lanes *out = &blk->lanesets[k];
        if (ls->result < 0) {
            for (int l = 0; l < blk->size; l++)
                cq_lanes_set(out, l);
            continue;
        }
        cq_warp *sw = cq_xcalloc((size_t)blk->nwarps, sizeof(cq_warp));
        for (int q = 0; q < blk->nwarps; q++) {
            warp_init(blk, &sw[q], q, blk->warps[q].base, blk->warps[q].width);
            set_args(call, &sw[q]);
        }
        int st = CQ_ST_OK;
        for (int n = 0; n < ls->n && st == CQ_ST_OK; n++)
            for (int q = 0; q < blk->nwarps && st == CQ_ST_OK; q++) {
                sw[q].ip = 0;
                st = cq_step(blk, &sw[q], &ls->ins[n], CQ_WARP);
            }
        for (int q = 0; q < blk->nwarps; q++) {
            const uint8_t *res = (const uint8_t *)sw[q].regs + code->roff[ls->result];
            for (int i = 0; i < sw[q].width; i++)
                if (res[i])
                    cq_lanes_set(out, sw[q].base + i);
            warp_free(&sw[q]);
        }
        free(sw);
        if (st != CQ_ST_OK)
            return st;
    }
    cq_init_events(blk);
    return CQ_ST_OK;
}

/* Block ``index`` of the launch running, its buffers bound (the kernel's own global
 * buffers, then the host's instances by reference), its arguments set and its lane sets
 * evaluated; NULL with the fault recorded when a lane set faults. */
cq_block *cq_block_begin(cq_call *call, const int64_t *index)
{
    const cq_launch *L = call->launch;
    const cq_kernel *K = &call->prog->kernels[L->kernel];
    cq_block *blk = block_new(call, &K->code, L->kernel, call->block_size);
    blk->launch = L;
    blk->rank = L->ngrid;
    for (int d = 0; d < L->ngrid; d++)
        blk->index[d] = index[d];
    for (int s = 0; s < K->code.nbuf; s++)
        if (call->kglobals[L->kernel][s])
            blk->bufs[s] = call->kglobals[L->kernel][s];
    for (int j = 0; j < L->nbuf; j++) {
        cq_insts insts = call->host->bufs[L->buf[2 * j + 1]];
        if (insts)
            blk->bufs[L->buf[2 * j]] = insts;
    }
    for (int q = 0; q < blk->nwarps; q++)
        set_args(call, &blk->warps[q]);
    if (call->race) {
        int64_t number = 0;
        for (int d = 0; d < L->ngrid; d++)
            number = number * call->grid[d] + index[d];
        cq_race_block_new(blk, call->race_first, number, call->blocks);
    }
    if (eval_lanesets(call, blk) != CQ_ST_OK) {
        call->blk = blk;      /* the fault's block, kept for its view */
        return NULL;
    }
    return blk;
}

/* The launch's next block in row-major order (§7.1.1). */
static int start_block(cq_call *call)
{
    call->blocks_run++;
    call->block_start = call->steps;
    cq_block *blk = cq_block_begin(call, call->cursor);
    if (!blk)
        return CQ_ST_FAULT;
    call->blk = blk;
    return CQ_ST_OK;
}

/* Move to the next block index (the last dimension fastest); 0 when the grid is done. */
static int next_index(cq_call *call)
{
    for (int d = call->launch->ngrid - 1; d >= 0; d--) {
        if (++call->cursor[d] < call->grid[d])
            return 1;
        call->cursor[d] = 0;
    }
    return 0;
}

static int64_t host_int(cq_block *hb, int r)
{
    const cq_code *code = hb->code;
    int t = code->rtype[r];
    const char *p = hb->warps[0].regs + code->roff[r];
    if (t == CQ_DT_F32 || t == CQ_DT_F64)
        return (int64_t)trunc(cq_to_double(t, p, 0));
    return cq_to_int64(t, p, 0);
}

/* LAUNCH (§14.2, docs/EXECUTION.md §1): check the grid and the block size, convert the
 * scalar arguments, and hand over to cq_run, which runs the blocks. */
int cq_op_launch(cq_warp *w, const cq_ins *ins)
{
    cq_block *hb = w->blk;
    cq_call *call = hb->call;
    const cq_launch *L = &hb->code->launch[ins->a];
    const cq_kernel *K = &call->prog->kernels[L->kernel];
    for (int d = 0; d < L->ngrid; d++) {
        call->grid[d] = host_int(hb, L->grid[d]);
        call->cursor[d] = 0;
    }
    for (int d = 0; d < L->ngrid; d++) {
        int64_t g = call->grid[d], limit = call->opts.max_grid[d];
        if (g < 1 || g > limit) {
            cq_record *f = cq_fault_new(hb, ins, g < 1 ? CQ_FAULT_GRID_BOUND : CQ_FAULT_GRID_LIMIT, -1);
            cq_put(f, d);
            cq_put(f, g);
            if (g > limit)
                cq_put(f, limit);
            return CQ_ST_FAULT;
        }
    }
    int64_t size = K->block_size;
    if (size <= 0) {
        size = host_int(hb, L->block);
        if (size > CQ_MAX_BLOCK) {
            cq_fault_new(hb, ins, CQ_FAULT_TOO_MANY_THREADS, -1);
            return CQ_ST_FAULT;
        }
        if (size < 1) {
            cq_put(cq_fault_new(hb, ins, CQ_FAULT_BLOCK_SIZE, -1), size);
            return CQ_ST_FAULT;
        }
    }
    call->block_size = (int32_t)size;
    free(call->hval);
    call->hval = cq_xcalloc((size_t)L->nscalar + 1, sizeof(int64_t));
    for (int j = 0; j < L->nscalar; j++) {
        int kr = L->scalar[2 * j], hr = L->scalar[2 * j + 1];
        int bad;
        const char *src = w->regs + hb->code->roff[hr];
        cq_convert(hb->code->rtype[hr], K->code.rtype[kr], src, &call->hval[j], 1, 1u, &bad);
        if (bad >= 0)
            return cq_fault_convert(w, ins, 0, hb->code->rtype[hr], src, K->code.rtype[kr]);
    }
    call->launch = L;
    call->launching = 1;
    call->serial = 0;
    call->coop = L->cooperative && K->code.grid_sync;
    if (call->coop) {
        int64_t threads = (size + CQ_WARP - 1) / CQ_WARP * CQ_WARP;
        int64_t per_sm = CQ_SM_THREADS / threads < CQ_SM_BLOCKS ? CQ_SM_THREADS / threads
                                                                : CQ_SM_BLOCKS;
        call->coop_max = CQ_SM_COUNT * per_sm;
        call->coop_started = call->coop_i = 0;
        call->finished_number = -1;
    }
    call->cluster_blocks = 1;
    for (int d = 0; d < 3; d++)
        call->cluster[d] = d < L->ncluster ? host_int(hb, L->cluster[d]) : 1;
    if (K->code.trigger_cluster)
        for (int d = 0; d < L->ncluster; d++)
            call->cluster_blocks *= call->cluster[d];
    call->clustered = call->cluster_blocks > 1;
    call->cluster_next = 0;
    call->launches++;
    call->block_number = 0;
    call->blocks = 1;
    for (int d = 0; d < L->ngrid; d++)
        call->blocks *= call->grid[d];
    if (call->race)
        cq_race_launch(call, L, call->blocks);
    return CQ_ST_LAUNCH;
}

int cq_op_ret(cq_warp *w, const cq_ins *ins)
{
    cq_call *call = w->blk->call;
    const cq_code *code = w->blk->code;
    if (ins->op == CQ_OP_RET_VAL) {
        call->result_kind = 1;
        call->result_type = code->rtype[ins->a];
        call->result_bits = 0;
        memcpy(&call->result_bits, w->regs + code->roff[ins->a], cq_type_size[call->result_type]);
    } else if (ins->op == CQ_OP_RET_BUF) {
        cq_buf **insts = cq_instances(w->blk, ins->a, 0);
        if (!insts) {   /* a jump over its ALLOC (engine.py _buffer) */
            cq_put(cq_fault_new(w->blk, ins, CQ_FAULT_BUFFER_BEFORE_DECLARATION, 0), ins->a);
            return CQ_ST_FAULT;
        }
        call->result_kind = 2;
        call->result_buf = insts[0];
    }
    w->nstack = 0;
    cq_finish(w);
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ the API */

cq_call *cq_call_new(const cq_prog *prog, const cq_opts *opts)
{
    cq_call *call = cq_xcalloc(1, sizeof *call);
    call->prog = prog;
    call->opts = *opts;
    call->rng = opts->seed;
    call->kglobals = cq_xcalloc((size_t)prog->nkernels + 1, sizeof(cq_insts *));
    for (int k = 0; k < prog->nkernels; k++)
        call->kglobals[k] = cq_xcalloc((size_t)prog->kernels[k].code.nbuf + 1, sizeof(cq_insts));
    call->host = block_new(call, &prog->host, -1, 1);
    if (opts->race) {
        cq_race_new(call);
        cq_race_block_new(call->host, 0, 0, 0);
    }
    return call;
}

void cq_call_free(cq_call *call)
{
    if (!call)
        return;
    if (call->pool)
        cq_pool_abandon(call);
    if (call->clustered)
        cluster_end(call);
    coop_end(call);
    cq_block_free(call->blk);
    cq_block_free(call->host);
    cq_trace_free(call->trace);
    cq_debug_free(call->debug);
    for (int k = 0; k < call->prog->nkernels; k++)
        free(call->kglobals[k]);
    free(call->kglobals);
    cq_arena_free(&call->arena);
    cq_race_free(call);
    free(call->hval);
    free(call->out);
    free(call);
}

/* A scalar parameter or symbolic dimension of the host program: written from the start
 * (docs/EXECUTION.md §20). */
void cq_set_reg(cq_call *call, int32_t r, const void *value)
{
    const cq_code *code = &call->prog->host;
    cq_warp *w = &call->host->warps[0];
    memcpy(w->regs + code->roff[r], value, cq_type_size[code->rtype[r]]);
    if (w->written)
        w->written[r] = 1u;
}

int cq_bind(cq_call *call, int32_t slot, void *data, int32_t ndim, const int64_t *shape,
            uint8_t *written)
{
    const cq_bufdecl *decl = &call->prog->host.buf[slot];
    cq_buf *b = cq_arena_alloc(&call->arena, sizeof *b);    /* the data is the caller's */
    cq_buf **insts = cq_arena_alloc(&call->arena, sizeof(cq_buf *));
    if (!b || !insts)
        return -1;
    b->data = data;
    b->written = written;
    b->type = decl->type;
    b->esize = cq_type_size[b->type];
    b->ndim = ndim;
    b->count = 1;
    for (int d = 0; d < ndim; d++) {
        b->shape[d] = shape[d];
        b->count *= shape[d];
    }
    b->code = -1;
    b->slot = slot;
    b->element = -1;
    insts[0] = b;
    call->host->bufs[slot] = insts;
    return 0;
}

void cq_debug_resolve(cq_call *call);

/* cq_api.h: blocks first..last-1 of a launch, for the debugger. The host registers hold
 * what the reference engine's do at the LAUNCH, so the launch converts its arguments
 * and checks its grid as the LAUNCH instruction does; it runs serially. */
int cq_debug_launch(cq_call *call, int32_t launch, int64_t first, int64_t last,
                    int64_t steps, int64_t lane_steps)
{
    const cq_code *host = &call->prog->host;
    const cq_ins *ins = NULL;
    for (int k = 0; k < host->n && !ins; k++)
        if (host->ins[k].op == CQ_OP_LAUNCH && host->ins[k].a == launch)
            ins = &host->ins[k];
    if (!ins)
        return CQ_INTERNAL_ERROR(call->host);
    call->steps = steps;
    call->lane_steps = lane_steps;
    call->opts.jobs = 1;
    call->blk = NULL;
    call->host->warps[0].ip = (int32_t)(ins - host->ins);
    if (cq_op_launch(&call->host->warps[0], ins) != CQ_ST_LAUNCH)
        return CQ_ST_FAULT;
    if (call->debug)
        cq_debug_resolve(call);
    call->block_number = first;
    for (int d = call->launch->ngrid - 1; d >= 0; d--) {
        call->cursor[d] = first % call->grid[d];
        first /= call->grid[d];
    }
    call->ranged = 1;
    call->range_end = last;
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ cooperative launches */

/* The next block in row-major order becomes resident (croqvm/interp/engine.py
 * _run_cooperative decides the same). */
static int coop_admit(cq_call *call)
{
    call->blocks_run++;
    call->block_start = call->steps;
    cq_block *blk = cq_block_begin(call, call->cursor);
    if (!blk)
        return CQ_ST_FAULT;
    blk->number = call->coop_started++;
    next_index(call);
    call->resident = realloc(call->resident, sizeof(cq_block *) * (size_t)(call->nresident + 1));
    if (!call->resident)
        abort();
    call->resident[call->nresident++] = blk;
    return CQ_ST_OK;
}

static void coop_end(cq_call *call)
{
    for (int k = 0; k < call->nresident; k++)
        if (call->resident[k] != call->blk)
            cq_block_free(call->resident[k]);
    free(call->resident);
    call->resident = NULL;
    call->nresident = 0;
    call->coop = 0;
}

/* A cooperative launch with a grid barrier (§7.1.4): as many blocks as the device holds
 * are resident; each in turn runs until done (the next block starts in its place) or
 * parked at the grid barrier; when all are parked, the barrier releases them if the
 * whole grid is resident and no block finished, else it is a deadlock reported at the
 * grid barrier of the first parked block. CQ_ST_SLICE, CQ_ST_FAULT or CQ_ST_DONE. */
static int run_cooperative(cq_call *call)
{
    if (call->coop_started == 0)       /* the launch begins: its first wave */
        while (call->coop_started < call->blocks && call->coop_started < call->coop_max)
            if (coop_admit(call) != CQ_ST_OK)
                return CQ_ST_FAULT;
    for (;;) {
        if (call->coop_i < call->nresident) {
            cq_block *blk = call->resident[call->coop_i];
            call->blk = blk;
            call->block_number = blk->number;
            int st = cq_run_block(blk);
            if (st == CQ_ST_SLICE)
                return st;
            if (st == CQ_ST_PARKED) {
                call->coop_i++;
                continue;
            }
            if (st != CQ_ST_DONE || cq_check_kernel_end(blk) != CQ_ST_OK)
                return CQ_ST_FAULT;
            if (call->finished_number < 0 || blk->number < call->finished_number) {
                call->finished_number = blk->number;
                for (int d = 0; d < 3; d++)
                    call->finished_index[d] = blk->index[d];
            }
            call->blk = NULL;
            cq_block_free(blk);
            call->nresident--;
            memmove(&call->resident[call->coop_i], &call->resident[call->coop_i + 1],
                    sizeof(cq_block *) * (size_t)(call->nresident - call->coop_i));
            if (call->coop_started < call->blocks && coop_admit(call) != CQ_ST_OK)
                return CQ_ST_FAULT;
            continue;
        }
        call->blk = NULL;
        if (!call->nresident)
            return CQ_ST_DONE;
        cq_block *first = call->resident[0];
        cq_warp *w = first->warps;
        while (w->state != CQ_BLOCKED)
            w++;
        const cq_ins *ins = &first->code->ins[w->ip];
        int lane = w->base + cq_low(w->act);
        if (call->coop_started < call->blocks) {
            cq_record *f = cq_fault_new(first, ins, CQ_FAULT_GRID_RESIDENT, lane);
            cq_put(f, ins->a);
            cq_put(f, call->blocks);
            cq_put(f, call->coop_max);
            cq_put(f, (first->size + CQ_WARP - 1) / CQ_WARP * CQ_WARP);
            return CQ_ST_FAULT;
        }
        if (call->finished_number >= 0) {
            cq_record *f = cq_fault_new(first, ins, CQ_FAULT_GRID_FINISHED, lane);
            int64_t index[3];
            for (int d = 0; d < call->launch->ngrid; d++)
                index[d] = call->finished_index[d];
            cq_put(f, ins->a);
            cq_put_list(f, call->launch->ngrid, index);
            return CQ_ST_FAULT;
        }
        call->grid_gen++;
        call->coop_i = 0;
        if (call->race)
            cq_race_grid_released(call);
    }
}

/* ------------------------------------------------------------------ cluster launches */

static void cluster_end(cq_call *call)
{
    for (int k = 0; k < call->nresident; k++)
        cq_block_free(call->resident[k]);
    call->nresident = 0;
    call->blk = NULL;
}

/* The blocks of the next cluster, started together in row-major order (the last
 * dimension fastest), each knowing them all. */
static int cluster_admit(cq_call *call)
{
    const cq_launch *L = call->launch;
    int64_t origin[3] = {0, 0, 0}, offset[3] = {0, 0, 0}, index[3];
    int64_t rest = call->cluster_next++;
    for (int d = L->ngrid - 1; d >= 0; d--) {
        int64_t across = call->grid[d] / call->cluster[d];
        origin[d] = rest % across;
        rest /= across;
    }
    call->resident = realloc(call->resident,
                             sizeof(cq_block *) * (size_t)call->cluster_blocks);
    if (!call->resident)
        abort();
    for (int64_t k = 0; k < call->cluster_blocks; k++) {
        int64_t number = 0;
        for (int d = 0; d < L->ngrid; d++) {
            index[d] = origin[d] * call->cluster[d] + offset[d];
            number = number * call->grid[d] + index[d];
        }
        call->blocks_run++;
        call->block_start = call->steps;
        cq_block *blk = cq_block_begin(call, index);
        if (!blk) {
            call->resident[call->nresident++] = call->blk;   /* freed with the others */
            return CQ_ST_FAULT;
        }
        blk->number = number;
        blk->cluster = call->resident;
        blk->ncluster = (int32_t)call->cluster_blocks;
        call->resident[call->nresident++] = blk;
        for (int d = L->ngrid - 1; d >= 0 && ++offset[d] == call->cluster[d]; d--)
            offset[d] = 0;
    }
    call->coop_i = 0;
    call->round_start = call->steps;
    return CQ_ST_OK;
}

/* A launch whose kernel triggers across the blocks of a cluster (§10.8;
 * croqvm/interp/engine.py _run_clusters decides the same): the clusters one after
 * another in row-major order; the blocks of one take turns in their order, each running
 * until done or parked; a round of turns in which no block ran a step is a deadlock,
 * reported for the first block not done. CQ_ST_SLICE, CQ_ST_FAULT or CQ_ST_DONE. */
static int run_clusters(cq_call *call)
{
    for (;;) {
        if (!call->nresident) {
            if (call->cluster_next * call->cluster_blocks == call->blocks)
                return CQ_ST_DONE;
            if (cluster_admit(call) != CQ_ST_OK)
                return CQ_ST_FAULT;
        }
        if (call->coop_i < call->nresident) {
            cq_block *blk = call->resident[call->coop_i++];
            if (blk->done)
                continue;
            call->blk = blk;
            call->block_number = blk->number;
            int st = cq_run_block(blk);
            if (st == CQ_ST_SLICE) {
                call->coop_i--;
                return st;
            }
            if (st == CQ_ST_PARKED)
                continue;
            if (st != CQ_ST_DONE || cq_check_kernel_end(blk) != CQ_ST_OK)
                return CQ_ST_FAULT;
            blk->done = 1;
            continue;
        }
        cq_block *first = NULL;
        for (int k = 0; k < call->nresident && !first; k++)
            if (!call->resident[k]->done)
                first = call->resident[k];
        if (!first) {
            cluster_end(call);
            continue;
        }
        if (call->steps == call->round_start) {
            call->blk = first;
            cq_fault_new(first, NULL, CQ_DEADLOCK, -1);
            return CQ_ST_FAULT;
        }
        call->coop_i = 0;
        call->round_start = call->steps;
    }
}

static int fault_status(cq_call *call)
{
    return call->internal ? CQ_RUN_INTERNAL : CQ_RUN_FAULT;
}

int cq_run(cq_call *call, int64_t slice_steps)
{
    call->slice_end = call->steps + slice_steps;
    for (;;) {
        if (call->clustered) {
            int st = run_clusters(call);
            if (st == CQ_ST_SLICE)
                return CQ_RUN_SLICE;
            if (st != CQ_ST_DONE)
                return fault_status(call);
            call->clustered = 0;
            call->launching = 0;
            continue;
        }
        if (call->coop) {
            int st = run_cooperative(call);
            if (st == CQ_ST_SLICE)
                return CQ_RUN_SLICE;
            if (st != CQ_ST_DONE)
                return fault_status(call);
            coop_end(call);
            call->launching = 0;
            continue;
        }
        if (call->blk) {
            int st = cq_run_block(call->blk);
            if (st == CQ_ST_SLICE)
                return CQ_RUN_SLICE;
            if (st != CQ_ST_DONE || cq_check_kernel_end(call->blk) != CQ_ST_OK)
                return fault_status(call);
            if (call->debug)
                cq_debug_block_end(call->blk);
            cq_block_free(call->blk);
            call->blk = NULL;
            call->block_number++;
            if (!next_index(call))
                call->launching = 0;
            if (call->ranged && (!call->launching || call->block_number == call->range_end))
                return CQ_RUN_DONE;      /* the range of cq_debug_launch: no host after it */
            continue;
        }
        if (call->pool) {
            int st = cq_pool_wait(call, 20);   /* return now and then: Ctrl-C, progress */
            if (st == CQ_ST_SLICE)
                return CQ_RUN_SLICE;
            if (st == CQ_ST_DONE)
                call->launching = 0;
            else {
                call->serial = 1;   /* again, one block after another, for the report */
                if (call->race)
                    cq_race_relaunch(call);
            }
            continue;
        }
        if (call->launching) {
            /* a kernel that prints runs on threads only when asked for: its output
             * then comes when the launch ends (the blocks' outputs join in row-major
             * order); serially, it streams while the launch runs. One whose atomics
             * may reach global memory runs serially: its blocks communicate through
             * them (the old values they receive follow the blocks' order) */
            const cq_code *kcode = &call->prog->kernels[call->launch->kernel].code;
            if (!call->serial && call->block_number == 0 && call->opts.jobs > 1 &&
                !call->opts.schedule && call->blocks > 1 && !kcode->global_atomics &&
                (call->opts.jobs_printing || !kcode->prints)) {
                cq_pool_start(call);
                continue;
            }
            if (call->debug)
                cq_debug_block_start(call);
            if (start_block(call) != CQ_ST_OK)
                return fault_status(call);
            continue;
        }
        int st = cq_run_block(call->host);
        if (st == CQ_ST_SLICE)
            return CQ_RUN_SLICE;
        if (st == CQ_ST_LAUNCH)
            continue;
        if (st != CQ_ST_DONE || cq_check_kernel_end(call->host) != CQ_ST_OK)
            return fault_status(call);
        return CQ_RUN_DONE;
    }
}

const cq_record *cq_get_fault(const cq_call *call)
{
    return &call->fault;
}

void cq_out_write(cq_call *call, const char *s, size_t n)
{
    if (!n)             /* an empty string: nothing to copy, maybe nowhere yet */
        return;
    if (call->nout + n > call->capout) {
        size_t cap = call->capout ? call->capout : 4096;
        while (cap < call->nout + n)
            cap *= 2;
        call->out = realloc(call->out, cap);
        if (!call->out)
            abort();
        call->capout = cap;
    }
    memcpy(call->out + call->nout, s, n);
    call->nout += n;
    call->out_total += (int64_t)n;
}

size_t cq_output_size(const cq_call *call)
{
    return call->nout;
}

size_t cq_take_output(cq_call *call, char *dst, size_t cap)
{
    size_t n = call->nout < cap ? call->nout : cap;
    memcpy(dst, call->out, n);
    memmove(call->out, call->out + n, call->nout - n);
    call->nout -= n;
    return n;
}

void cq_where(const cq_call *call, cq_position *out)
{
    memset(out, 0, sizeof *out);
    out->steps = call->steps;
    out->lane_steps = call->lane_steps;
    out->launches = call->launches;
    out->blocks_run = call->blocks_run;
    out->launch = -1;
    out->warp = out->ip = out->loop_ip = -1;
    if (call->pool) {
        out->launch = (int32_t)(call->launch - call->prog->host.launch);
        out->blocks = call->blocks;
        cq_pool_where(call, out);
        return;
    }
    const cq_block *blk = call->blk ? call->blk : call->host;
    if (call->blk) {
        out->launch = (int32_t)(call->launch - call->prog->host.launch);
        for (int d = 0; d < 3; d++)
            out->block[d] = (int32_t)blk->index[d];
        out->block_number = call->block_number;
        out->blocks = call->blocks;
        out->block_steps = call->steps - call->block_start;
    }
    int k = blk->cur >= 0 ? blk->cur : blk->last;
    if (k < 0)
        return;
    const cq_warp *w = &blk->warps[k];
    out->warp = k;
    out->ip = w->ip;
    out->act = w->act;
    out->base = w->base;
    for (int f = w->nstack - 1; f >= 0 && out->loop_ip < 0; f--)
        if (w->stack[f].kind == 1)
            out->loop_ip = w->stack[f].opener;
}

int cq_result(const cq_call *call, void *value, cq_buffer_info *info)
{
    if (call->result_kind == 1) {
        memcpy(value, &call->result_bits, sizeof call->result_bits);
        info->type = call->result_type;
    }
    if (call->result_kind == 2) {
        const cq_buf *b = call->result_buf;
        info->data = b->data;
        info->type = b->type;
        info->ndim = b->ndim;
        for (int d = 0; d < b->ndim; d++)
            info->shape[d] = b->shape[d];
    }
    return call->result_kind;
}
