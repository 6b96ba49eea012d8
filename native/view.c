/* The block a fault left behind, as data: what deadlock and partial-group reports need
 * (croqvm/interp/diagnose.py deadlock), read by croqvm/native/blockview.py. */
#include "cq_engine.h"

int cq_view_size(const cq_call *call, int32_t *nwarps, int32_t *size, uint32_t *live)
{
    const cq_block *blk = call->fault_blk;
    if (!blk)
        return -1;
    *nwarps = blk->nwarps;
    *size = blk->size;
    memcpy(live, blk->live, sizeof(uint32_t) * CQ_MAX_WARPS);
    return 0;
}

int cq_view_warp(const cq_call *call, int32_t k, cq_warp_view *out, int32_t *openers,
                 uint32_t *entered, int32_t cap)
{
    const cq_block *blk = call->fault_blk;
    const cq_warp *w = &blk->warps[k];
    out->state = w->state;
    out->ip = w->ip;
    out->act = w->act;
    out->live = blk->live[k];
    out->base = w->base;
    out->width = w->width;
    out->nframes = w->nstack;
    out->blocker = w->state == CQ_BLOCKED ? w->blocker : 0;
    for (int f = 0; f < w->nstack && f < cap; f++) {
        openers[f] = w->stack[f].opener;
        entered[f] = w->stack[f].entered;
    }
    return 0;
}

int cq_view_rdvs(const cq_call *call, int32_t k, cq_rdv_view *out, int32_t cap)
{
    const cq_block *blk = call->fault_blk;
    const cq_warp *w = &blk->warps[k];
    int n = w->blocker == 1 ? w->nrdv : 0;
    for (int j = 0; j < n && j < cap; j++) {
        const cq_rdv *r = &blk->rdvs[w->rdv[j]];
        out[j].ip = r->ip;
        out[j].site = r->site;
        out[j].unit_index = r->unit_index;
        out[j].whole_unit = r->whole_unit;
        out[j].done = r->done;
        for (int q = 0; q < CQ_LANE_WORDS; q++) {   /* the live ones */
            uint32_t live = q < blk->nwarps ? blk->live[q] : 0;
            out[j].members[q] = r->members.w[q] & live;
            out[j].arrived[q] = r->arrived.w[q] & live;
        }
    }
    return n;
}

void cq_view_event_wait(const cq_call *call, int32_t k, int64_t *out)
{
    const cq_block *blk = call->fault_blk;
    const cq_warp *w = &blk->warps[k];
    const cq_event *ev = &blk->events[w->ev];
    for (int j = 0; j < w->ev_n; j++) {
        int s = w->ev_slot[j];
        int64_t gen;
        if (cq_event_pending(blk, w, j, &gen)) {
            int64_t v[6] = {w->ev, s, ev->completed[s], ev->arrivals[s], ev->need, gen};
            memcpy(out, v, sizeof v);
            return;
        }
    }
}

void cq_view_named_barrier(const cq_call *call, int32_t k, int64_t *out)
{
    const cq_block *blk = call->fault_blk;
    const cq_warp *w = &blk->warps[k];
    int64_t v[3] = {w->bar, blk->bar_arrived[w->bar], blk->bar_count[w->bar]};
    memcpy(out, v, sizeof v);
}
