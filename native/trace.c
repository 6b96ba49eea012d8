/* Tracing (croqvm trace, docs/TRACE.md): the cost model's timeline of a run, recorded
 * around each step of the dispatch loop (cq_trace_before / cq_trace_after, or for an
 * untimed step of a settled warp cq_trace_untimed in cq_trace.h, inline) while
 * call->trace is set; its state is in cq_trace.h. croqvm/trace/recorder.py is the reference this follows decision by
 * decision, and its docstring the model: every warp has its own clock, which each
 * instruction advances by its cost; a wait ends at its release on the releasing side's
 * clock (a collective's last arrival, the trigger that completed the generation, the
 * copy's landing, a named barrier's last arrival). Only the step's facts are read here:
 * the engine runs as it always does.
 *
 * Conventions: ``tr`` the call's trace, ``tk`` a block's track (one per block of a launch,
 * kept until the launch ends, as the reference keeps them), ``ln`` a warp's lane of it
 * (its clock, open slice and pending wait), ``p`` a step's facts (a ``wait``); times are
 * cycles (doubles, computed in the reference's order of operations, so they agree bit for
 * bit). Tracing runs one block at a time (croqvm/trace/native.py asks for jobs=1). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "cq_trace.h"

#define HOST_PID 0
#define COPY_TID 1000          /* a block's first copy track; warps are tids 0, 1, ... */
#define KIND_RUN 0
#define KIND_WAIT 1
#define KIND_COPY 2
#define KIND_LAUNCH 3
#define FLOW_TRIGGER 2

#define GROW(ptr, n, cap) do { \
        if ((n) == (cap)) { \
            (cap) = (cap) ? 2 * (cap) : 64; \
            (ptr) = realloc((ptr), (size_t)(cap) * sizeof *(ptr)); \
            if (!(ptr)) abort(); \
        } } while (0)

/* ------------------------------------------------------------------ the API */

void cq_trace_start(cq_call *call, const cq_trace_model *model)
{
    cq_trace *tr = cq_xcalloc(1, sizeof *tr);
    tr->m = *model;
    tr->stats = cq_xcalloc((size_t)model->nrows + 1, sizeof(cq_stat));
    GROW(tr->procs, tr->nprocs, tr->capprocs);
    memset(&tr->procs[0], 0, sizeof(cq_process));     /* the host, pid 0 */
    tr->procs[0].kernel = -1;
    tr->procs[0].nwarps = 1;
    tr->nprocs = 1;
    call->trace = tr;
    call->trace_timed = model->timed;
}

static void track_free(cq_track *tk)
{
    free(tk->lanes);
    for (int k = 0; k < tk->nslots; k++)
        free(tk->gens[k]);
    free(tk->ev_at);
    free(tk->gens);
    free(tk->ngens);
    free(tk->capgens);
    free(tk->made);
    free(tk->partial);
    free(tk->has_partial);
    for (int b = 0; b < CQ_NAMED_BARRIERS; b++)
        free(tk->released[b]);
    free(tk->copy_ends);
    free(tk);
}

void cq_trace_free(cq_trace *tr)
{
    if (!tr)
        return;
    for (int k = 0; k < tr->ntracks; k++)
        track_free(tr->tracks[k]);
    free(tr->tracks);
    free(tr->slices);
    free(tr->details);
    free(tr->flows);
    free(tr->procs);
    free(tr->origins);
    free(tr->stats);
    free(tr->opened);
    free(tr->tbefore);
    free(tr);
}

cq_slice *cq_trace_take_slices(cq_call *call, int64_t *n)
{
    cq_slice *out = call->trace->slices;
    *n = call->trace->nslices;
    call->trace->slices = NULL;
    call->trace->nslices = call->trace->capslices = 0;
    return out;
}

void cq_trace_release(void *slices)
{
    free(slices);
}

const cq_slice *cq_trace_slices(const cq_call *call, int64_t *n)
{
    *n = call->trace->nslices;
    return call->trace->slices;
}

void cq_trace_forget_slices(cq_call *call)
{
    call->trace->nslices = 0;
}

const cq_detail *cq_trace_details(const cq_call *call, int64_t *n)
{
    *n = call->trace->ndetails;
    return call->trace->details;
}

const cq_flow *cq_trace_flows(const cq_call *call, int64_t *n)
{
    *n = call->trace->nflows;
    return call->trace->flows;
}

const cq_process *cq_trace_processes(const cq_call *call, int64_t *n)
{
    *n = call->trace->nprocs;
    return call->trace->procs;
}

const cq_stat *cq_trace_stats(const cq_call *call)
{
    return call->trace->stats;
}

double cq_trace_end(const cq_call *call)
{
    return call->trace->end;
}

/* ------------------------------------------------------------------ slices */

/* The slices' pages made ahead, POPULATE slices (2 MB) at a time, in one call where the
 * system can: a trace may hold millions of slices (40 bytes each), and a page fault per
 * 4 KB of them costs more than the call (a trace of 4.3 million slices: 0.09 s of system
 * time in faults). Pages made once stay: a trace written as the run goes forgets its
 * slices (cq_trace_forget_slices) and fills the same pages again. */
#define POPULATE 52428

static void populate(cq_trace *tr)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    int64_t last = tr->nslices + POPULATE < tr->capslices ? tr->nslices + POPULATE
                                                          : tr->capslices;
    if (last <= tr->populated)
        return;
    uintptr_t from = (uintptr_t)(tr->slices + tr->nslices) & ~(page - 1);
    uintptr_t to = (uintptr_t)(tr->slices + last) & ~(page - 1);
    if (to > from)      /* an advice: where the system does not take it, faults do */
        madvise((void *)from, to - from, MADV_POPULATE_WRITE);
    tr->populated = last;
#endif
}

static cq_slice *new_slice(cq_trace *tr, int kind, int pid, int tid, double start, double end)
{
    GROW(tr->slices, tr->nslices, tr->capslices);
    if (tr->nslices % POPULATE == 0)
        populate(tr);
    if (end > tr->end)
        tr->end = end;
    cq_slice *s = &tr->slices[tr->nslices++];
    *s = (cq_slice){start, end, pid, tid, -1, 0, 0, (uint8_t)kind, 0, 0};
    return s;
}

/* A new detail record for slice ``s``. */
static cq_detail *new_detail(cq_trace *tr, cq_slice *s, int code)
{
    GROW(tr->details, tr->ndetails, tr->capdetails);
    s->mask = (uint32_t)tr->ndetails;
    cq_detail *d = &tr->details[tr->ndetails++];
    memset(d, 0, sizeof *d);
    d->code = code;
    d->row = s->row;
    return d;
}

void cq_trace_close(cq_trace *tr, cq_track *tk, lane_t *ln)
{
    ln->open = 0;
    cq_slice *s = new_slice(tr, KIND_RUN, tk->pid, ln->tid, ln->ostart, ln->oend);
    s->row = ln->orow;
    s->lanes = ln->onact;
    if (ln->onact != ln->width) {
        s->mask = ln->oact;
        s->masked = 1;
    }
}

/* A wait of statement ``row`` from ``start`` to ``end``: none when it takes no time, but
 * for a warp still waiting when the run stopped (recorder.py _wait). */
static void wait_slice(cq_trace *tr, cq_track *tk, lane_t *ln, int row, double start,
                       double end, int what, int index, int slot)
{
    if (end < start || (end == start && what != CQ_WAIT_STOPPED))
        return;
    if (ln->open)
        cq_trace_close(tr, tk, ln);
    cq_slice *s = new_slice(tr, KIND_WAIT, tk->pid, ln->tid, start, end);
    s->row = row;
    cq_detail *d = new_detail(tr, s, tk->c);
    d->what = what;
    d->index = index;
    d->slot = slot;
    tr->stats[row].wait += end - start;
    ln->clock = end;
}

static cq_flow *new_flow(cq_trace *tr, int kind)
{
    GROW(tr->flows, tr->nflows, tr->capflows);
    cq_flow *f = &tr->flows[tr->nflows++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    return f;
}

static void flow_point(cq_flow *f, int pid, int tid, double t)
{
    f->pid[f->n] = pid;
    f->tid[f->n] = tid;
    f->t[f->n++] = t;
}

/* ------------------------------------------------------------------ blocks */

static cq_track *enter(cq_trace *tr, cq_block *blk)
{
    cq_track *tk = cq_xcalloc(1, sizeof *tk);
    const cq_code *code = blk->code;
    int c = blk->kernel + 1, host = blk->kernel < 0;
    tk->c = c;
    tk->code = code;
    tk->cost = tr->m.cost + tr->m.code_at[c];
    tk->row = tr->m.row + tr->m.code_at[c];
    tk->tma = tr->m.tma + tr->m.dma_at[c];
    tk->start = host ? 0.0 : tr->launch_start;
    tk->engine = tk->start;
    if (host) {
        tk->pid = HOST_PID;
        tk->process = 0;
    } else {
        GROW(tr->procs, tr->nprocs, tr->capprocs);
        cq_process *p = &tr->procs[tr->nprocs];
        memset(p, 0, sizeof *p);
        tk->pid = p->pid = (int32_t)tr->nprocs;
        tk->process = (int32_t)tr->nprocs++;
        p->launch = tr->launches;
        p->kernel = blk->kernel;
        p->rank = blk->rank;
        for (int d = 0; d < blk->rank && d < 3; d++)
            p->index[d] = blk->index[d];
        p->nwarps = blk->nwarps;
    }
    tk->nlanes = blk->nwarps;
    tk->lanes = cq_xcalloc((size_t)blk->nwarps, sizeof(lane_t));
    for (int k = 0; k < blk->nwarps; k++) {
        tk->lanes[k].tid = k;
        tk->lanes[k].width = blk->warps[k].width;
        tk->lanes[k].clock = tk->start;
    }
    if (code->nevent) {
        int n = 0;
        tk->ev_at = cq_xcalloc((size_t)code->nevent, sizeof(int32_t));
        for (int e = 0; e < code->nevent; e++) {
            tk->ev_at[e] = n;
            n += code->event[e].slots;
        }
        tk->nslots = n;
        tk->gens = cq_xcalloc((size_t)n + 1, sizeof(gen_t *));
        tk->ngens = cq_xcalloc((size_t)n + 1, sizeof(int32_t));
        tk->capgens = cq_xcalloc((size_t)n + 1, sizeof(int32_t));
        tk->made = cq_xcalloc((size_t)n + 1, sizeof(int32_t));
        tk->partial = cq_xcalloc((size_t)n + 1, sizeof(gen_t));
        tk->has_partial = cq_xcalloc((size_t)n + 1, 1);
    }
    for (int b = 0; b < CQ_NAMED_BARRIERS; b++)
        tk->bar_phase[b] = -1;
    GROW(tr->tracks, tr->ntracks, tr->captracks);
    tr->tracks[tr->ntracks++] = tk;
    blk->track = tk;
    return tk;
}

/* The generations of slot ``s`` of event ``e`` completed so far (an event declared
 * ready has its first at the block's start). */
static int32_t gens_of(cq_track *tk, int e, int s)
{
    const cq_code *code = tk->code;
    int32_t k = tk->ev_at[e] + s;
    if (!tk->made[k]) {
        tk->made[k] = 1;
        if (code->event[e].ready) {
            GROW(tk->gens[k], tk->ngens[k], tk->capgens[k]);
            tk->gens[k][tk->ngens[k]++] = (gen_t){tk->start, 0.0, 0, 0, 0};
        }
    }
    return k;
}

static void settle(cq_trace *tr, cq_track *tk, lane_t *ln, const wait_t *p, double *start,
                   double *end);

static void resume(cq_trace *tr, cq_track *tk, lane_t *ln)
{
    double start, end;
    ln->pending = 0;
    settle(tr, tk, ln, &ln->wait, &start, &end);
}

/* Close a block's track: settle the waits its warps ended in; the block's end. */
static double end_block(cq_trace *tr, cq_track *tk)
{
    double end = tk->start;
    for (int k = 0; k < tk->nlanes; k++) {
        lane_t *ln = &tk->lanes[k];
        if (ln->pending)
            resume(tr, tk, ln);
        if (ln->open)
            cq_trace_close(tr, tk, ln);
        if (ln->clock > end)
            end = ln->clock;
    }
    return end;
}

/* The launch the host started is over (its next step, or the run's end): its blocks end,
 * and the host goes on when the last of them does. */
static void end_launch(cq_trace *tr)
{
    double end = tr->launch_start;
    for (int k = tr->launch_first; k < tr->ntracks; k++) {
        double e = end_block(tr, tr->tracks[k]);
        if (e > end)
            end = e;
    }
    cq_track *host = tr->tracks[0];
    lane_t *ln = &host->lanes[0];
    if (ln->open)
        cq_trace_close(tr, host, ln);
    cq_slice *s = new_slice(tr, KIND_LAUNCH, HOST_PID, 0, tr->launch_at, end);
    s->row = tr->launch_row;
    s->lanes = tr->ntracks - tr->launch_first;
    cq_stat *st = &tr->stats[tr->launch_row];   /* its blocks' time is theirs */
    st->steps++;
    st->lanes++;
    st->slots++;
    ln->clock = end;
    for (int k = tr->launch_first; k < tr->ntracks; k++)
        track_free(tr->tracks[k]);
    tr->ntracks = tr->launch_first;
    tr->launch_open = 0;
}

void cq_trace_finish(cq_call *call, int32_t stopped)
{
    cq_trace *tr = call->trace;
    if (tr->launch_open && !call->launching)
        end_launch(tr);
    for (int k = 0; k < tr->ntracks; k++) {
        cq_track *tk = tr->tracks[k];
        if (stopped) {
            double end = tk->lanes[0].clock;
            for (int j = 1; j < tk->nlanes; j++)
                if (tk->lanes[j].clock > end)
                    end = tk->lanes[j].clock;
            for (int j = 0; j < tk->nlanes; j++) {
                lane_t *ln = &tk->lanes[j];
                if (ln->pending) {
                    ln->pending = 0;
                    wait_slice(tr, tk, ln, ln->wait.row, ln->wait.t, end, CQ_WAIT_STOPPED,
                               0, 0);
                }
            }
        }
        end_block(tr, tk);
    }
}

/* ------------------------------------------------------------------ what steps cost */

static void frag_shape(const cq_block *blk, int m, int lane, int64_t *rows, int64_t *cols)
{
    const cq_fragdecl *d = &blk->code->frag[m];
    int u = d->unit > 0 ? lane / d->unit : 0;
    const cq_frag *f = blk->frags[m] ? blk->frags[m][u] : NULL;
    *rows = f ? f->rows : d->rows;
    *cols = f ? f->cols : d->cols;
}

static int64_t at_least_1(int64_t x) { return x > 1 ? x : 1; }

/* The bytes the copies of ``n`` lanes move: the first lane's source view, once per lane
 * (recorder.py _dma_bytes). The DMA ran, so the view resolves; the call's fault record
 * is kept as it was all the same. */
static double dma_bytes(cq_trace *tr, cq_block *blk, const cq_ins *ins, const int *lanes,
                        int n)
{
    if (!n)
        return 0.0;
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    int i;
    cq_warp *w = cq_warp_of(blk, lanes[0], &i);
    cq_buf scratch, *buf;
    int64_t o[CQ_MAX_RANK], e[CQ_MAX_RANK];
    cq_record saved = blk->call->fault;
    if (cq_view_of(w, ins, desc->src, i, &scratch, &buf, o, e) != CQ_ST_OK) {
        blk->call->fault = saved;
        return 0.0;
    }
    int64_t count = 1;
    for (int d = 0; d < blk->code->view[desc->src].n; d++)
        count *= e[d];
    return (double)count * tr->m.bits[buf->type] / 8 * n;
}

/* A copy of ``nbytes`` issued at ``release`` on the block's copy engine: its slice on a
 * copy track; an async one's landing goes with its future's handles and its issuer goes
 * on, a sync one's issuer waits for it. Returns when the issuer is done. */
static double issue(cq_trace *tr, cq_track *tk, cq_block *blk, const cq_ins *ins, int ip,
                    const int *lanes, int n, double release, double nbytes)
{
    const cq_dmadecl *desc = &blk->code->dma[ins->a];
    int tma = tk->tma[ins->a];
    double busy = nbytes / (tma ? tr->m.tma_rate : tr->m.dma_rate);
    double latency = tma ? tr->m.tma_latency : tr->m.dma_latency;
    double begin = release >= tk->engine ? release : tk->engine;
    tk->engine = begin + busy;
    double land = begin + busy + latency;
    int tid = 0;
    while (tid < tk->ncopies && !(tk->copy_ends[tid] <= release))
        tid++;
    if (tid == tk->ncopies) {
        tk->copy_ends = realloc(tk->copy_ends, (size_t)(tk->ncopies + 1) * sizeof(double));
        if (!tk->copy_ends)
            abort();
        tk->copy_ends[tk->ncopies++] = 0.0;
        tr->procs[tk->process].ncopies = tk->ncopies;
    }
    tk->copy_ends[tid] = land;
    cq_slice *s = new_slice(tr, KIND_COPY, tk->pid, COPY_TID + tid, release, land);
    s->lanes = n;
    cq_detail *d = new_detail(tr, s, tk->c);
    d->ip = ip;
    d->index = ins->a;
    d->bytes = nbytes;
    double barrier = tr->m.barrier;
    if (!(desc->is_async && desc->future >= 0))
        return land + barrier;
    GROW(tr->origins, tr->norigins, tr->caporigins);
    tr->origins[tr->norigins++] = (origin_t){tma, tk->pid, lanes[0] / CQ_WARP,
                                             COPY_TID + tid, release, land};
    for (int k = 0; k < n; k++) {
        int32_t h = blk->fut[desc->future][lanes[k]];
        if (h >= 0)
            blk->handles[h].trace_copy = (int32_t)tr->norigins;
    }
    return release + barrier;
}

/* A collective of block lanes ``lanes`` completed, its last participant arriving at
 * ``release`` (or an operation of one warp ran on them): when it is done, its rendezvous
 * and its operation's cost (recorder.py _complete). */
static double complete(cq_trace *tr, cq_track *tk, cq_block *blk, const cq_ins *ins, int ip,
                       const int *lanes, int n, double release)
{
    double barrier = tr->m.barrier;
    if (!n)
        return release + barrier;
    int lane = lanes[0];
    const cq_code *code = blk->code;
    int64_t r, c, ar, ac;
    switch (ins->op) {
    case CQ_OP_MMA_EXEC: {
        frag_shape(blk, ins->a, lane, &r, &c);
        frag_shape(blk, ins->b, lane, &ar, &ac);
        int64_t k = ins->d == 0 || ins->d == 1 ? ac : ar;
        int unit = code->frag[ins->a].unit;
        double rate = tr->m.macs[code->frag[ins->b].type];
        if (unit == 1 || unit == 32)
            rate /= 4;
        int64_t macs = at_least_1(r) * at_least_1(c) * at_least_1(k);
        return release + barrier + (tr->m.mma_latency + (double)macs / rate); }
    case CQ_OP_MMA_LOAD: case CQ_OP_MMA_STORE: case CQ_OP_MMA_STORE_MASK:
    case CQ_OP_MMA_FILL: case CQ_OP_MMA_GATHER: {
        frag_shape(blk, ins->a, lane, &r, &c);
        int64_t bits = at_least_1(r) * at_least_1(c) * tr->m.bits[code->frag[ins->a].type];
        return release + barrier + (tr->m.mma_latency + (double)bits / 8 / tr->m.mma_move); }
    case CQ_OP_DMA:      /* a collective's lanes issue one copy, others one each */
        return issue(tr, tk, blk, ins, ip, lanes, n, release,
                     dma_bytes(tr, blk, ins, lanes, ins->b >= 0 ? 1 : n));
    default:
        return release + barrier;
    }
}

/* Every blocked warp waiting on rendezvous ``r`` learns when it completed. */
static void tell_waiters(cq_track *tk, const cq_rdv *rec, int r)
{
    for (int k = 0; k < tk->nlanes; k++) {
        wait_t *p = &tk->lanes[k].wait;
        if (!tk->lanes[k].pending)
            continue;
        for (int j = 0; j < p->nmine; j++) {
            rec_ref *e = &p->mine[j];
            if (e->r == r && !e->done && e->ip == rec->ip && e->unit == rec->unit_index &&
                e->count == rec->count) {
                e->done = 1;
                e->release = rec->trace_release;
                e->end = rec->trace_done;
            }
        }
    }
}

static rec_ref ref_of(const cq_rdv *rec, int r)
{
    rec_ref e = {r, rec->ip, rec->unit_index, rec->count, rec->site, 0, 0.0, 0.0};
    if (rec->trace_flags & 2) {
        e.done = 1;
        e.release = rec->trace_release;
        e.end = rec->trace_done;
    }
    return e;
}

/* ------------------------------------------------------------------ waits */

/* A warp arrived at phase ``phase`` of named barrier ``b`` at ``when``; the phase is
 * released at its latest arrival once the engine completed it. */
static void arrived(cq_track *tk, const cq_block *blk, int b, int64_t phase, double when)
{
    if (tk->bar_phase[b] != phase || tk->bar_latest[b] < when)
        tk->bar_latest[b] = when;
    tk->bar_phase[b] = phase;
    if (blk->bar_phases[b] > phase) {
        if (phase >= tk->nreleased[b]) {
            int64_t n = 2 * phase + 8;
            tk->released[b] = realloc(tk->released[b], (size_t)n * sizeof(double));
            if (!tk->released[b])
                abort();
            for (int64_t k = tk->nreleased[b]; k < n; k++)
                tk->released[b][k] = -1.0;
            tk->nreleased[b] = n;
        }
        tk->released[b][phase] = tk->bar_latest[b];
        tk->bar_phase[b] = -1;
    }
}

/* The step's wait is over (the engine ran what released it): place the wait and the step
 * on the warp's clock (recorder.py _settle); the step ran from *start to *end. */
static void settle(cq_trace *tr, cq_track *tk, lane_t *ln, const wait_t *p, double *start,
                   double *end)
{
    double t = p->t, release = t, done = t + p->cost;
    int what = CQ_WAIT_NOTHING, index = 0, slot = 0, have = 0;
    double rmax = 0.0, dmax = 0.0;
    for (int k = 0; k < p->nmine; k++) {
        const rec_ref *e = &p->mine[k];
        if (!e->done)
            continue;
        if (!have || e->release > rmax)
            rmax = e->release;
        if (!have || e->end > dmax)
            dmax = e->end;
        have = 1;
    }
    if (!have && p->alone) {
        rmax = t;
        dmax = p->alone_done;
        have = 1;
    }
    if (have) {
        release = rmax;
        done = dmax;
        if (p->nmine) {
            what = CQ_WAIT_COLL;
            index = p->mine[0].site;
        }
    }
    const gen_t *source = NULL;     /* the trigger the wait's flow starts at */
    const origin_t *copy = NULL;    /* the copy it flows from */
    if (p->op == CQ_OP_WAIT_EVENT || p->op == CQ_OP_WAIT_EVENT_AT) {
        /* when the generations it needs completed: the latest */
        const gen_t *best = NULL;
        for (int k = 0; k < p->nneed; k++) {
            int32_t g = gens_of(tk, p->ev, p->need_slot[k]);
            int64_t n = tk->ngens[g];
            if (!n)
                continue;
            const gen_t *x = &tk->gens[g][(p->need_count[k] < n ? p->need_count[k] : n) - 1];
            if (x->time > (best ? best->time : -1.0))
                best = x;
        }
        if (best) {
            if (best->time > release) {
                release = best->time;
                done = best->time + p->cost;
            }
            if (best->src)
                source = best;
        }
        what = p->nneed == 1 ? CQ_WAIT_EVENT_SLOT : CQ_WAIT_EVENT;
        index = p->ev;
        slot = p->nneed == 1 ? p->need_slot[0] : 0;
    } else if (p->op == CQ_OP_WAIT || p->op == CQ_OP_FUT_BIND) {
        if (p->copy) {
            copy = &tr->origins[p->copy - 1];
            if (copy->land > release) {
                done += copy->land - release;
                release = copy->land;
            }
        }
        what = CQ_WAIT_FUTURE;
        index = p->fut;
    } else if ((p->op == CQ_OP_BAR_SYNC || p->op == CQ_OP_BAR_ARRIVE) && p->bar >= 0) {
        int b = p->bar;
        if (p->op == CQ_OP_BAR_SYNC && p->phase < tk->nreleased[b] &&
            tk->released[b][p->phase] >= 0.0) {
            double r = tk->released[b][p->phase];
            release = t >= r ? t : r;
            done = release + p->cost;
        }
        what = CQ_WAIT_BARRIER;
        index = b;
    }
    wait_slice(tr, tk, ln, p->row, t, release, what, index, slot);
    if (source) {
        cq_flow *f = new_flow(tr, FLOW_TRIGGER);
        flow_point(f, source->pid, source->tid, source->at);
        flow_point(f, tk->pid, ln->tid, release);
    } else if (copy) {
        cq_flow *f = new_flow(tr, copy->kind);
        flow_point(f, copy->pid, copy->issuer, copy->issued);
        flow_point(f, copy->pid, copy->copy_tid, copy->land);
        flow_point(f, tk->pid, ln->tid, release);
    }
    cq_trace_run(tr, tk, ln, p->row, release, done - release, p->nact, p->act);
    *start = release;
    *end = done;
}

/* The warp's lanes arrived at their slots at ``done`` (the step ran from ``start``): a
 * generation completes at the latest arrival that counts toward it (recorder.py
 * _triggered). */
static void triggered(cq_trace *tr, cq_track *tk, lane_t *ln, const cq_block *blk,
                      double start, double done)
{
    const cq_event *ev = &blk->events[tr->tev];
    int nslots = tk->code->event[tr->tev].slots;
    gen_t mine = {done, start, 1, tk->pid, ln->tid};
    for (int k = 0; k < tr->ntslots; k++) {
        int64_t s = tr->tslots[k];
        if (s < 0 || s >= nslots)
            continue;
        int32_t g = gens_of(tk, tr->tev, (int)s);
        gen_t latest = tk->has_partial[g] ? tk->partial[g] : mine;
        if (mine.time > latest.time)
            latest = mine;
        int64_t completed = ev->completed[s] - tr->tbefore[s];
        for (int64_t j = 0; j < completed; j++) {
            GROW(tk->gens[g], tk->ngens[g], tk->capgens[g]);
            tk->gens[g][tk->ngens[g]++] = latest;
        }
        if (ev->arrivals[s]) {
            tk->partial[g] = completed ? mine : latest;
            tk->has_partial[g] = 1;
        } else {
            tk->has_partial[g] = 0;
        }
    }
}

/* ------------------------------------------------------------------ the hooks */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What a timed step's time needs from the state before it runs (recorder.py _before and
 * the rendezvous open at its instruction). */
static void capture(cq_trace *tr, cq_track *tk, cq_block *blk, cq_warp *w, int ip)
{
    const cq_ins *ins = &blk->code->ins[ip];
    lane_t *ln = &tk->lanes[w->index];
    wait_t *p = &tr->pre;
    p->op = ins->op;
    p->row = tk->row[ip];
    p->cost = tk->cost[ip];
    p->t = ln->clock;
    p->act = w->act;
    p->nact = cq_popcount(w->act);
    p->nmine = p->alone = p->nneed = p->copy = 0;
    p->ev = p->fut = p->bar = -1;
    tr->nopened = 0;
    for (int k = 0; k < blk->nopen; k++)
        if (blk->rdvs[blk->open[k]].ip == ip) {
            GROW(tr->opened, tr->nopened, tr->capopened);
            tr->opened[tr->nopened++] = blk->open[k];
        }
    switch (ins->op) {
    case CQ_OP_TRIGGER: case CQ_OP_TRIGGER_CLUSTER: {
        int nslots = blk->code->event[ins->a].slots;
        if (nslots > tr->captbefore) {
            tr->captbefore = nslots;
            tr->tbefore = realloc(tr->tbefore, (size_t)nslots * sizeof(int64_t));
            if (!tr->tbefore)
                abort();
        }
        tr->tev = ins->a;
        memcpy(tr->tbefore, blk->events[ins->a].completed, (size_t)nslots * sizeof(int64_t));
        int n = 0;
        for (uint32_t m = w->act; m; m &= m - 1)
            tr->tslots[n++] = cq_lane_reg_int(blk, w->base + cq_low(m), ins->b);
        qsort(tr->tslots, (size_t)n, sizeof(int64_t), cmp_i64);
        tr->ntslots = 0;
        for (int k = 0; k < n; k++)
            if (!tr->ntslots || tr->tslots[tr->ntslots - 1] != tr->tslots[k])
                tr->tslots[tr->ntslots++] = tr->tslots[k];
        break; }
    case CQ_OP_WAIT_EVENT: case CQ_OP_WAIT_EVENT_AT: {
        int at = ins->op == CQ_OP_WAIT_EVENT_AT;
        int64_t nslots = blk->code->event[ins->a].slots, pairs[CQ_WARP];
        p->ev = ins->a;
        int n = 0, bad = !w->act;
        for (uint32_t m = w->act; m; m &= m - 1) {
            int lane = w->base + cq_low(m);
            int64_t v = cq_lane_reg_int(blk, lane, ins->b), s, need;
            if (v < 0 || (!at && v >= nslots)) {
                bad = 1;
                break;
            }
            if (at) {
                s = v % nslots;
                need = v / nslots + 1;
            } else {
                s = v;
                need = blk->events[ins->a].waits[(size_t)lane * nslots + s] + 1;
            }
            pairs[n++] = s << 32 | need;   /* slots and generations fit 32 bits */
        }
        if (bad)
            break;
        qsort(pairs, (size_t)n, sizeof(int64_t), cmp_i64);
        for (int k = 0; k < n; k++)
            if (!k || pairs[k] != pairs[k - 1]) {
                p->need_slot[p->nneed] = (int32_t)(pairs[k] >> 32);
                p->need_count[p->nneed++] = pairs[k] & 0xffffffff;
            }
        break; }
    case CQ_OP_WAIT: case CQ_OP_FUT_BIND: {
        p->fut = ins->a;
        double best = 0.0;
        for (uint32_t m = w->act; m; m &= m - 1) {
            int32_t h = blk->fut[ins->a][w->base + cq_low(m)];
            int32_t o = h >= 0 ? blk->handles[h].trace_copy : 0;
            if (o && (!p->copy || tr->origins[o - 1].land > best)) {
                p->copy = o;
                best = tr->origins[o - 1].land;
            }
        }
        break; }
    case CQ_OP_BAR_SYNC: case CQ_OP_BAR_ARRIVE: {
        if (!w->act)
            break;
        int64_t b = cq_lane_reg_int(blk, w->base + cq_low(w->act), ins->a);
        if (b >= 1 && b < CQ_NAMED_BARRIERS) {
            p->bar = (int32_t)b;
            p->phase = blk->bar_phases[b];
        }
        break; }
    default:
        break;
    }
}

void cq_trace_before(cq_block *blk, cq_warp *w, int ip)
{
    cq_trace *tr = blk->call->trace;
    cq_track *tk = blk->track ? blk->track : enter(tr, blk);
    if (blk->kernel < 0 && tr->launch_open)
        end_launch(tr);
    lane_t *ln = &tk->lanes[w->index];
    if (ln->pending)
        resume(tr, tk, ln);
    w->trace_settled = 1;
    if (tr->m.timed[blk->code->ins[ip].op])
        capture(tr, tk, blk, w, ip);
}

/* A timed step ran: the collectives it completed, the copy it issued, whether it waits
 * (recorder.py _sync). */
static void timed(cq_trace *tr, cq_track *tk, cq_block *blk, cq_warp *w, int ip)
{
    const cq_ins *ins = &blk->code->ins[ip];
    lane_t *ln = &tk->lanes[w->index];
    wait_t *p = &tr->pre;
    double t = p->t;
    int blocked = w->state == CQ_BLOCKED;
    int nmine = blocked && w->blocker == 1 ? w->nrdv : 0;
    for (int k = 0; k < nmine; k++) {
        cq_rdv *rec = &blk->rdvs[w->rdv[k]];
        if (!(rec->trace_flags & 1) || rec->trace_latest < t)
            rec->trace_latest = t;
        rec->trace_flags |= 1;
    }
    int ncompleted = 0;
    for (int k = 0; k < tr->nopened + nmine; k++) {
        int r = k < tr->nopened ? tr->opened[k] : w->rdv[k - tr->nopened];
        int seen = 0;
        for (int j = 0; j < k && !seen; j++)
            seen = (j < tr->nopened ? tr->opened[j] : w->rdv[j - tr->nopened]) == r;
        cq_rdv *rec = &blk->rdvs[r];
        if (seen || !rec->done || (rec->trace_flags & 2))
            continue;
        double release = (rec->trace_flags & 1) && rec->trace_latest > t ? rec->trace_latest : t;
        int lanes[CQ_MAX_BLOCK], n = 0;
        for (int l = 0; l < blk->size; l++)
            if (cq_lanes_get(&rec->arrived, l) && (blk->live[l >> 5] >> (l & 31) & 1))
                lanes[n++] = l;
        double end = complete(tr, tk, blk, ins, ip, lanes, n, release);
        rec = &blk->rdvs[r];
        rec->trace_flags = 2;
        rec->trace_release = release;
        rec->trace_done = end;
        tell_waiters(tk, rec, r);
        ncompleted++;
    }
    int op = ins->op;
    if (!blocked && !ncompleted && (op == CQ_OP_DMA || op == CQ_OP_MMA_EXEC ||
                                    op == CQ_OP_MMA_LOAD || op == CQ_OP_MMA_STORE ||
                                    op == CQ_OP_MMA_STORE_MASK || op == CQ_OP_MMA_FILL ||
                                    op == CQ_OP_MMA_GATHER)) {
        int lanes[CQ_WARP], n = 0;
        for (uint32_t m = p->act; m; m &= m - 1)
            lanes[n++] = w->base + cq_low(m);
        p->alone = 1;
        p->alone_done = complete(tr, tk, blk, ins, ip, lanes, n, t);
    }
    if ((op == CQ_OP_BAR_SYNC || op == CQ_OP_BAR_ARRIVE) && p->bar >= 0)
        arrived(tk, blk, p->bar, p->phase, t);
    if (blocked) {
        for (int k = 0; k < nmine; k++)
            p->mine[p->nmine++] = ref_of(&blk->rdvs[w->rdv[k]], w->rdv[k]);
        ln->wait = *p;
        ln->pending = 1;
        w->trace_settled = 0;
        return;
    }
    for (int k = 0; k < tr->nopened; k++)
        if (blk->rdvs[tr->opened[k]].done)
            p->mine[p->nmine++] = ref_of(&blk->rdvs[tr->opened[k]], tr->opened[k]);
    double start, end;
    settle(tr, tk, ln, p, &start, &end);
    if (op == CQ_OP_TRIGGER || op == CQ_OP_TRIGGER_CLUSTER)
        triggered(tr, tk, ln, blk, start, end);
}

void cq_trace_after(cq_block *blk, cq_warp *w, int ip)
{
    cq_trace *tr = blk->call->trace;
    cq_track *tk = blk->track;
    const cq_ins *ins = &blk->code->ins[ip];
    if (ins->op == CQ_OP_LAUNCH) {      /* its blocks start ``launch`` cycles on */
        lane_t *ln = &tk->lanes[0];
        tr->launches++;
        tr->launch_at = ln->clock;
        tr->launch_start = ln->clock + tr->m.launch;
        tr->launch_open = 1;
        tr->launch_row = tk->row[ip];
        tr->launch_first = tr->ntracks;
        w->trace_settled = 0;       /* the launch ends at the host's next step */
        return;
    }
    timed(tr, tk, blk, w, ip);
}
