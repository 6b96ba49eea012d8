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
    /* recording, over the block running: per warp its last statement start (line -1:
     * none yet), per warp and depth the step of its last statement start there (0:
     * none; steps start at 1), the block's first statement start (step 0: none) */
    int32_t nwarps, ndepth;
    int32_t *last_line, *last_pc;
    int64_t *at_depth;
    int64_t first_step, first_warp, first_depth;
    int64_t *events;            /* 4 words each: step, block number, warp, depth */
    int64_t nevents, capevents;
    /* cq_debug_saved: the last save, then the one before; ``area``: where it is */
    struct { int64_t block, steps, lane_steps, rng, output, area; } saved[2];
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
    free(d->last_line);
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
        d->last_line[k] = -1;
    memset(d->at_depth, 0, sizeof(int64_t) * (size_t)d->nwarps * (size_t)d->ndepth);
    d->first_step = 0;
}

/* session.py _Run.before: a warp starts a new statement when it runs a statement's
 * instruction and its last statement start in the block was on another line or not
 * before this instruction. */
static void record(cq_debug_state *d, cq_block *blk, cq_warp *w, int ip)
{
    int line = d->in.line[ip];
    if (line < 0)
        return;
    if (!d->last_line) {          /* the launch's kernel: its warps and depth */
        d->nwarps = blk->nwarps;
        d->ndepth = blk->code->depth + 2;     /* a stack holds depth + 1 frames */
        d->last_line = cq_xcalloc((size_t)d->nwarps, sizeof(int32_t));
        d->last_pc = cq_xcalloc((size_t)d->nwarps, sizeof(int32_t));
        d->at_depth = cq_xcalloc((size_t)d->nwarps * (size_t)d->ndepth, sizeof(int64_t));
        forget_block(d);
    }
    int k = w->index;
    int fresh = d->last_line[k] != line || ip <= d->last_pc[k];
    d->last_line[k] = line;
    d->last_pc[k] = ip;
    if (!fresh)
        return;
    int64_t step = blk->call->steps;
    d->at_depth[(size_t)k * (size_t)d->ndepth + (size_t)w->nstack] = step;
    if (!d->first_step) {
        d->first_step = step;
        d->first_warp = k;
        d->first_depth = w->nstack;
    }
}

int cq_debug_before(cq_block *blk, cq_warp *w, int ip)
{
    cq_debug_state *d = blk->call->debug;
    if ((d->in.stop_pc && d->in.stop_pc[ip]) || blk->call->steps >= d->in.stop_step)
        return cq_debug_stop(blk);
    if (d->in.line)
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

void cq_debug_block_end(cq_block *blk)
{
    cq_debug_state *d = blk->call->debug;
    if (!d->in.line || !d->last_line)
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

/* Once the launch is set up (cq_debug_launch): where the hooks run, and the watched
 * elements in the buffers the call binds. */
void cq_debug_resolve(cq_call *call)
{
    cq_debug_state *d = call->debug;
    const cq_code *code = &call->prog->kernels[call->launch->kernel].code;
    d->hook = cq_xcalloc((size_t)code->n + 1, 1);
    for (int ip = 0; ip < code->n; ip++)
        d->hook[ip] = (d->in.stop_pc && d->in.stop_pc[ip]) || (d->in.line && d->in.line[ip] >= 0);
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
