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
                 uint32_t *entered)
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
    for (int f = 0; f < w->nstack; f++) {
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
        memcpy(out[j].members, r->members.w, sizeof out[j].members);
        memcpy(out[j].arrived, r->arrived.w, sizeof out[j].arrived);
    }
    return n;
}

int cq_view_event_wait(const cq_call *call, int32_t k, int32_t *event, int32_t *span,
                       int32_t *lanes, int32_t *slots, int32_t cap)
{
    const cq_warp *w = &call->fault_blk->warps[k];
    *event = w->ev;
    *span = w->ev_span;
    for (int j = 0; j < w->ev_n && j < cap; j++) {
        lanes[j] = w->ev_lane[j];
        slots[j] = w->ev_slot[j];
    }
    return w->ev_n;
}

int cq_view_event(const cq_call *call, int32_t e, int64_t *completed, int64_t *arrivals,
                  int64_t *waits, int32_t slots_cap, int32_t lanes_cap, int64_t *need)
{
    const cq_block *blk = call->fault_blk;
    const cq_event *ev = &blk->events[e];
    int slots = blk->code->event[e].slots;
    if (slots > slots_cap || blk->size > lanes_cap)
        return -1;
    memcpy(completed, ev->completed, sizeof(int64_t) * slots);
    memcpy(arrivals, ev->arrivals, sizeof(int64_t) * slots);
    memcpy(waits, ev->waits, sizeof(int64_t) * slots * blk->size);
    *need = ev->need;
    return slots;
}
