/* The debugger's fast-forward (cq_api.h cq_debug; croqvm/debug/forward.py drives it).
 *
 * croqvm debug runs a call on the reference engine with a hook on every instruction
 * (croqvm/debug/session.py). The blocks of a launch in which it can not stop run here
 * instead, at native speed. Which blocks those are is found by running the blocks here
 * on a copy of the memory with these hooks, which end the run (a CQ_DEBUG_STOP record)
 * in the first block where session.py's hook could stop: the block is then left to the
 * reference engine. The tests are conservative (a statement at a breakpoint's line stops
 * the block whatever the breakpoint's condition; a watched element compares by its
 * bytes), never the other way: the reference engine decides whether it really stops.
 *
 * A stop before an instruction in a block whose state the reference engine can hold
 * leaves the block as it is: cq_debug_image and the functions after it hand that state
 * over (forward.py _Image), and the reference engine goes on from the instruction. The
 * warps note their last statement instruction on the way (cq_warp.stmt), which decides
 * there whether the next one starts a statement.
 *
 * Recording (the history of a reverse command, session.py _history): the debugger
 * chooses among statement starts the last one of a warp (at most some depth), the last
 * one overall or the first one overall. Per block, the last statement start of each warp
 * at each depth and the block's first one are all those choices can need. */
#include <stdlib.h>
#include "cq_engine.h"

typedef struct cq_debug_state {
    cq_debug in;
    uint8_t *hook;              /* per kernel instruction: a stop or a statement recorded */
    cq_watch watch[16];
    /* recording, over the block running: per warp its last statement instruction and
     * that one's place (-1: none yet), per warp and depth the step of its last statement
     * start there (0: none; steps start at 1), the block's first statement start (step
     * 0: none) */
    int32_t nwarps, ndepth;
    int32_t *last_place, *last_pc;
    int64_t *at_depth;
    int64_t first_step, first_warp, first_depth;
    int64_t *events;            /* 4 words each: step, block number, warp, depth */
    int64_t nevents, capevents;
    /* cq_debug_saved: the last save, then the one before; ``area``: where it is */
    struct { int64_t block, steps, lane_steps, rng, output, area; } saved[2];
    int32_t before;             /* the run stopped before an instruction (cq_debug_image) */
} cq_debug_state;

void cq_debug_attach(cq_call *call, const cq_debug *dbg)
{
    cq_debug_state *d = cq_xcalloc(1, sizeof *d);
    d->in = *dbg;
    d->saved[0].block = d->saved[1].block = -1;
    if (d->in.nwatch > 16)        /* croqvm/debug/forward.py hands over at most 16 */
        abort();
    call->debug = d;
}

void cq_debug_free(cq_debug_state *d)
{
    if (!d)
        return;
    free(d->hook);
    free(d->last_place);
    free(d->last_pc);
    free(d->at_depth);
    free(d->events);
    free(d);
}

int cq_debug_stop(cq_block *blk)
{
    cq_fault_new(blk, NULL, CQ_DEBUG_STOP, -1);
    return CQ_ST_FAULT;
}

static void forget_block(cq_debug_state *d)
{
    for (int k = 0; k < d->nwarps; k++)
        d->last_place[k] = -1;
    memset(d->at_depth, 0, sizeof(int64_t) * (size_t)d->nwarps * (size_t)d->ndepth);
    d->first_step = 0;
}

/* croqvm/debug/frames.py Places.starts: a warp starts a new statement when it runs a
 * statement's instruction and its last statement instruction in the block was at a
 * place neither this one nor called from it, or not before this instruction. */
static int starts(const cq_debug *in, int place, int last, int ip, int last_pc)
{
    if (last < 0 || ip <= last_pc)
        return 1;
    for (; last >= 0; last = in->caller[last])
        if (last == place)
            return 0;
    return 1;
}

static void record(cq_debug_state *d, cq_block *blk, cq_warp *w, int ip)
{
    int place = d->in.place[ip];
    if (place < 0)
        return;
    if (!d->last_place) {         /* the launch's kernel: its warps and depth */
        int calls = 0;
        for (int k = 0; k < blk->code->n; k++)
            if (d->in.place[k] >= 0 && d->in.calls[d->in.place[k]] > calls)
                calls = d->in.calls[d->in.place[k]];
        d->nwarps = blk->nwarps;
        /* a stack holds depth + 1 frames; the calls add to the depth */
        d->ndepth = blk->code->depth + 2 + calls;
        d->last_place = cq_xcalloc((size_t)d->nwarps, sizeof(int32_t));
        d->last_pc = cq_xcalloc((size_t)d->nwarps, sizeof(int32_t));
        d->at_depth = cq_xcalloc((size_t)d->nwarps * (size_t)d->ndepth, sizeof(int64_t));
        forget_block(d);
    }
    int k = w->index;
    int fresh = starts(&d->in, place, d->last_place[k], ip, d->last_pc[k]);
    d->last_place[k] = place;
    d->last_pc[k] = ip;
    if (!fresh)
        return;
    int64_t step = blk->call->steps;
    int depth = w->nstack + d->in.calls[place];
    d->at_depth[(size_t)k * (size_t)d->ndepth + (size_t)depth] = step;
    if (!d->first_step) {
        d->first_step = step;
        d->first_warp = k;
        d->first_depth = depth;
    }
}

int cq_debug_before(cq_block *blk, cq_warp *w, int ip)
{
    cq_debug_state *d = blk->call->debug;
    if ((d->in.stop_pc && d->in.stop_pc[ip]) || blk->call->steps >= d->in.stop_step) {
        d->before = 1;
        return cq_debug_stop(blk);
    }
    if (d->in.place)
        record(d, blk, w, ip);
    return CQ_ST_OK;
}

static void add_event(cq_debug_state *d, int64_t step, int64_t number, int64_t warp,
                      int64_t depth)
{
    if (d->nevents + 4 > d->capevents) {
        d->capevents = d->capevents ? 2 * d->capevents : 1024;
        d->events = realloc(d->events, sizeof(int64_t) * (size_t)d->capevents);
        if (!d->events)
            abort();
    }
    int64_t *e = d->events + d->nevents;
    e[0] = step;
    e[1] = number;
    e[2] = warp;
    e[3] = depth;
    d->nevents += 4;
}

void cq_debug_block_start(cq_call *call)
{
    cq_debug_state *d = call->debug;
    if (d->saved[0].block >= 0 && call->lane_steps - d->saved[0].lane_steps < d->in.save_every)
        return;
    int into = d->saved[0].block < 0 ? 0 : 1 - (int)d->saved[0].area;  /* over the older */
    d->saved[1] = d->saved[0];
    for (int k = 0; k < d->in.nsave; k++) {
        const cq_buf *b = call->host->bufs[d->in.save_slot[k]][0];
        memcpy(d->in.save_to[into * d->in.nsave + k], b->data, (size_t)(b->count * b->esize));
    }
    d->saved[0].block = call->block_number;
    d->saved[0].steps = call->steps;
    d->saved[0].lane_steps = call->lane_steps;
    d->saved[0].rng = (int64_t)call->rng;
    d->saved[0].output = call->out_total;
    d->saved[0].area = into;
}

void cq_debug_saved(const cq_call *call, int which, int64_t *out)
{
    memcpy(out, &call->debug->saved[which], sizeof call->debug->saved[which]);
}

/* The block's recorded statement starts, added to the events. */
static void take_events(cq_debug_state *d, cq_block *blk)
{
    if (!d->in.place || !d->last_place)
        return;
    int64_t number = blk->call->block_number;
    if (d->first_step)
        add_event(d, d->first_step, number, d->first_warp, d->first_depth);
    for (int k = 0; k < d->nwarps; k++)
        for (int depth = 0; depth < d->ndepth; depth++) {
            int64_t step = d->at_depth[(size_t)k * (size_t)d->ndepth + (size_t)depth];
            if (step)
                add_event(d, step, number, k, depth);
        }
    forget_block(d);
}

void cq_debug_block_end(cq_block *blk)
{
    take_events(blk->call->debug, blk);
}

/* Once the launch is set up (cq_debug_launch): where the hooks run, and the watched
 * elements in the buffers the call binds. */
void cq_debug_resolve(cq_call *call)
{
    cq_debug_state *d = call->debug;
    const cq_code *code = &call->prog->kernels[call->launch->kernel].code;
    d->hook = cq_xcalloc((size_t)code->n + 1, 1);
    for (int ip = 0; ip < code->n; ip++)
        d->hook[ip] = (uint8_t)(
            ((d->in.stop_pc && d->in.stop_pc[ip]) || (d->in.place && d->in.place[ip] >= 0) ?
             CQ_HOOK_CALL : 0) | (d->in.statement && d->in.statement[ip] ? CQ_HOOK_STATEMENT : 0));
    call->debug_pc = d->hook;
    call->debug_step = d->in.stop_step;
    for (int k = 0; k < d->in.nwatch; k++) {
        cq_watch *wt = &d->watch[k];
        wt->at = (uint8_t *)call->host->bufs[d->in.watch_slot[k]][0]->data +
                 d->in.watch_offset[k];
        wt->size = d->in.watch_size[k];
        wt->old = 0;
        memcpy(&wt->old, d->in.watch_old + 16 * k, (size_t)wt->size);
    }
    call->debug_watch = d->watch;
    call->ndebug_watch = d->in.nwatch;
}

const int64_t *cq_debug_events(const cq_call *call, int64_t *n)
{
    const cq_debug_state *d = call->debug;
    *n = d ? d->nevents / 4 : 0;
    return d ? d->events : NULL;
}

uint64_t cq_rng_state(const cq_call *call)
{
    return call->rng;
}

/* ------------------------------------------------------------------ the image */

/* Where the buffer ``b`` a future's handle names is among the block's buffers: kind 1
 * a block-wide slot's (a shared or bound one), 2 a lane's local one; 0 none. */
static int locate(const cq_block *blk, const cq_buf *b, int64_t *slot, int64_t *lane,
                  int64_t *element)
{
    const cq_code *code = blk->code;
    for (int s = 0; s < code->nbuf; s++) {
        int count = code->buf[s].count;
        for (int l = 0; l < (code->buf[s].storage == 2 ? blk->size : 1); l++) {
            cq_insts insts = code->buf[s].storage == 2 ?
                (blk->locals[s] ? blk->locals[s][l] : NULL) : blk->bufs[s];
            for (int k = 0; insts && k < count; k++)
                if (insts[k] == b) {
                    *slot = s;
                    *lane = l;
                    *element = k;
                    return code->buf[s].storage == 2 ? 2 : 1;
                }
        }
    }
    return 0;
}

/* What a block holds that the image (cq_api.h cq_debug_image) does not carry. */
static int beyond_image(const cq_block *blk)
{
    const cq_code *code = blk->code;
    if (blk->call->opts.poison || blk->ntransfers)
        return 1;
    for (int k = 0; k < blk->nopen; k++)      /* an open one with an effect to come */
        if (code->ins[blk->rdvs[blk->open[k]].ip].op != CQ_OP_BARRIER)
            return 1;
    int64_t slot, lane, element;
    for (int s = 0; s < code->nfut; s++)
        for (int l = 0; l < blk->size; l++) {
            int32_t h = blk->fut[s][l];
            if (h >= 0 && blk->handles[h].buf &&
                !locate(blk, blk->handles[h].buf, &slot, &lane, &element))
                return 1;
        }
    for (int k = 0; k < blk->nwarps; k++) {
        const cq_warp *w = &blk->warps[k];
        if (w->state != CQ_BLOCKED)
            continue;
        if (w->blocker == 4)
            return 1;
    }
    return 0;
}

int cq_debug_image(cq_call *call, int64_t *head)
{
    cq_debug_state *d = call->debug;
    cq_block *blk = call->blk;
    if (!d || !d->before || !blk || blk->cur < 0 || beyond_image(blk))
        return 0;
    take_events(d, blk);
    head[0] = blk->cur;
    head[1] = call->block_start;
    head[2] = 16 + 5 * ((int64_t)blk->code->depth + 1) + 4 * CQ_WARP +
              (int64_t)blk->code->ncoll_ins * (1 + CQ_WARP);
    head[3] = blk->size;
    return 1;
}

int64_t cq_debug_warp(const cq_call *call, int32_t k, int64_t *words)
{
    const cq_block *blk = call->blk;
    const cq_warp *w = &blk->warps[k];
    int64_t n = 0;
    int blocked = w->state == CQ_BLOCKED;
    int64_t head[] = {w->state, w->pc, w->ip, w->hold, w->act, blk->live[k], w->stmt,
                      blocked ? w->blocker : 0, w->nstack};
    for (size_t j = 0; j < sizeof head / sizeof head[0]; j++)
        words[n++] = head[j];
    for (int j = 0; j < w->nstack; j++) {
        const cq_frame *f = &w->stack[j];
        words[n++] = f->kind;
        words[n++] = f->opener;
        words[n++] = f->jump;
        words[n++] = f->entered;
        words[n++] = f->other;
    }
    if (blocked && w->blocker == 1) {
        words[n++] = w->nrdv;
        for (int j = 0; j < w->nrdv; j++)
            words[n++] = blk->rdvs[w->rdv[j]].done ? -1 : w->rdv[j];
    } else if (blocked && w->blocker == 2) {
        words[n++] = w->ev;
        words[n++] = w->ev_parity;
        words[n++] = w->ev_n;
        for (int j = 0; j < w->ev_n; j++) {
            words[n++] = w->ev_lane[j];
            words[n++] = w->ev_slot[j];
            words[n++] = w->ev_gen[j];
        }
    } else if (blocked && w->blocker == 3) {
        words[n++] = w->bar;
        words[n++] = w->bar_phase;
    }
    const cq_code *code = blk->code;
    for (int ip = 0; ip < code->n; ip++) {
        if (code->coll_slot[ip] < 0)
            continue;
        const int64_t *counts = w->counts + (size_t)code->coll_slot[ip] * CQ_WARP;
        int64_t any = 0;
        for (int i = 0; i < CQ_WARP; i++)
            any |= counts[i];
        if (!any)
            continue;
        words[n++] = ip;
        for (int i = 0; i < CQ_WARP; i++)
            words[n++] = counts[i];
    }
    words[n++] = -1;
    return n;
}

void cq_debug_reg(const cq_call *call, int32_t k, int32_t r, void *out)
{
    const cq_warp *w = &call->blk->warps[k];
    const cq_code *code = call->blk->code;
    memcpy(out, w->regs + code->roff[r], (size_t)w->width * (size_t)cq_type_size[code->rtype[r]]);
}

const void *cq_debug_buffer(const cq_call *call, int32_t slot, int32_t lane, int32_t element,
                            int64_t *shape)
{
    cq_insts insts = cq_instances(call->blk, slot, lane);
    if (!insts)
        return NULL;
    const cq_buf *b = insts[element];
    memcpy(shape, b->shape, sizeof(int64_t) * (size_t)b->ndim);
    return b->data;
}

void cq_debug_block(const cq_call *call, int64_t *words)
{
    const cq_block *blk = call->blk;
    const cq_code *code = blk->code;
    int64_t n = 0;
    for (int e = 0; e < code->nevent; e++) {
        size_t slots = (size_t)code->event[e].slots;
        memcpy(words + n, blk->events[e].completed, slots * sizeof(int64_t));
        n += (int64_t)slots;
        memcpy(words + n, blk->events[e].arrivals, slots * sizeof(int64_t));
        n += (int64_t)slots;
        memcpy(words + n, blk->events[e].waits, slots * (size_t)blk->size * sizeof(int64_t));
        n += (int64_t)(slots * (size_t)blk->size);
    }
    for (int b = 0; b < CQ_NAMED_BARRIERS; b++) {
        words[n++] = blk->bar_count[b];
        words[n++] = blk->bar_arrived[b];
        words[n++] = blk->bar_phases[b];
    }
    size_t once = (size_t)code->once_sites * (size_t)blk->size;
    memcpy(words + n, blk->once_arrivals, once * sizeof(int64_t));
    memcpy(words + n + once, blk->once_claimed, once * sizeof(int64_t));
}

int32_t cq_debug_future(const cq_call *call, int32_t slot, int32_t lane, int64_t *words)
{
    const cq_block *blk = call->blk;
    int32_t h = blk->fut[slot][lane];
    if (h < 0)
        return h;
    const cq_handle *hd = &blk->handles[h];
    words[0] = hd->buf ? locate(blk, hd->buf, &words[1], &words[2], &words[3]) : 0;
    int64_t n = 4;
    words[n++] = hd->nd;
    for (int d = 0; d < hd->nd; d++)
        words[n++] = hd->o[d];
    for (int d = 0; d < hd->nd; d++)
        words[n++] = hd->e[d];
    words[n++] = hd->is_async;
    words[n++] = hd->issued;
    for (int k = 0; k < CQ_LANE_WORDS; k++)
        words[n++] = hd->waited.w[k];
    return h;
}

const void *cq_debug_fragment(const cq_call *call, int32_t m, int32_t u, int64_t *words)
{
    const cq_block *blk = call->blk;
    const cq_frag *f = blk->frags[m] ? blk->frags[m][u] : NULL;
    if (!f)
        return NULL;
    words[0] = f->rows;
    words[1] = f->cols;
    words[2] = f->pending;
    words[3] = f->has_data;
    words[4] = f->ifill;
    memcpy(&words[5], &f->ffill, sizeof f->ffill);
    return f->has_data ? f->data : (const void *)words;
}

int32_t cq_debug_rendezvous(const cq_call *call, int32_t k, int64_t *words)
{
    const cq_block *blk = call->blk;
    if (k >= blk->nopen)
        return -1;
    int32_t r = blk->open[k];
    const cq_rdv *rec = &blk->rdvs[r];
    int64_t head[] = {rec->ip, rec->unit_index, rec->count, rec->site, rec->whole_unit};
    memcpy(words, head, sizeof head);
    for (int j = 0; j < CQ_LANE_WORDS; j++) {
        words[5 + j] = rec->members.w[j];
        words[5 + CQ_LANE_WORDS + j] = rec->arrived.w[j];
    }
    return r;
}
