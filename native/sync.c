/* Collectives, barriers, ONCE and events (LANGUAGE.md §7.2, §7.4, §10; docs/EXECUTION.md
 * §4, §5, §7; croqvm/interp/sync.py is the reference).
 *
 * A collective's dynamic instance is a rendezvous keyed by (instruction, unit instance,
 * the lane's execution count of the instruction). Its effect runs once, when the last
 * live participant arrives, and every participant is then released. Records live in a
 * per-block pool; ``open`` lists the incomplete ones in creation order; a record is
 * reused once it is complete and no blocked warp refers to it. */
#include <stdlib.h>
#include "cq_engine.h"

static void wake_event(cq_warp *w);

static int is_unit_kind(int unit) { return unit == 32 || unit == 128; }

static void lanes_and_not(cq_lanes *out, const cq_lanes *a, const uint32_t *live,
                          const cq_lanes *b, int nwords)
{
    for (int k = 0; k < nwords; k++)
        out->w[k] = a->w[k] & live[k] & ~(b ? b->w[k] : 0);
}

static int nwords(const cq_block *blk) { return blk->nwarps; }

/* The lanes of ``lanes`` whose value in ``v`` is the least, which goes to ``*least``:
 * lanes that differ in a per-lane count or slot are served one value at a time, lowest
 * first, as the reference engine groups them. */
static uint32_t lanes_of_least(const int64_t *v, uint32_t lanes, int64_t *least)
{
    int64_t x = v[cq_low(lanes)];
    if (lanes == 0xffffffffu) {     /* a whole warp, usually all alike */
        uint64_t diff = 0;
        for (int i = 0; i < CQ_WARP; i++)
            diff |= (uint64_t)(v[i] ^ x);
        if (!diff) {
            *least = x;
            return lanes;
        }
    }
    for (uint32_t m = lanes; m; m &= m - 1)
        if (v[cq_low(m)] < x)
            x = v[cq_low(m)];
    uint32_t same = 0;
    for (uint32_t m = lanes; m; m &= m - 1)
        if (v[cq_low(m)] == x)
            same |= 1u << cq_low(m);
    *least = x;
    return same;
}

static int any(const cq_lanes *s, int n)
{
    for (int k = 0; k < n; k++)
        if (s->w[k])
            return 1;
    return 0;
}

/* members & live & ~arrived */
static int missing(const cq_block *blk, const cq_rdv *r, cq_lanes *out)
{
    cq_lanes tmp;
    lanes_and_not(out ? out : &tmp, &r->members, blk->live, &r->arrived, nwords(blk));
    return any(out ? out : &tmp, nwords(blk));
}

static int32_t rdv_new(cq_block *blk)
{
    for (int k = 0; k < blk->nrdvs; k++)
        if (blk->rdvs[k].done && !blk->rdvs[k].refs && !blk->rdvs[k].open)
            return k;
    if (blk->nrdvs == blk->caprdvs) {
        blk->caprdvs = blk->caprdvs ? 2 * blk->caprdvs : 8;
        blk->rdvs = realloc(blk->rdvs, (size_t)blk->caprdvs * sizeof(cq_rdv));
        if (!blk->rdvs)
            abort();
    }
    return blk->nrdvs++;
}

static void open_push(cq_block *blk, int32_t r)
{
    if (blk->nopen == blk->capopen) {
        blk->capopen = blk->capopen ? 2 * blk->capopen : 8;
        blk->open = realloc(blk->open, (size_t)blk->capopen * sizeof(int32_t));
        if (!blk->open)
            abort();
    }
    blk->open[blk->nopen++] = r;
    blk->rdvs[r].open = 1;
}

static void open_remove(cq_block *blk, int32_t r)
{
    for (int k = 0; k < blk->nopen; k++)
        if (blk->open[k] == r) {
            memmove(&blk->open[k], &blk->open[k + 1], (size_t)(blk->nopen - k - 1) * sizeof(int32_t));
            blk->nopen--;
            break;
        }
    blk->rdvs[r].open = 0;
}

/* Run the effect once for the live participants, then release them all. */
static int complete(cq_block *blk, int32_t r)
{
    cq_rdv *rec = &blk->rdvs[r];
    int lanes[CQ_MAX_BLOCK], n = 0;
    for (int k = 0; k < nwords(blk); k++)      /* a warp's word at a time, in lane order */
        for (uint32_t m = rec->arrived.w[k] & blk->live[k]; m; m &= m - 1)
            lanes[n++] = 32 * k + cq_low(m);
    if (n) {
        cq_rdv copy = *rec;      /* the pool may move while the effect runs */
        if (blk->race)
            cq_race_collective(blk, &blk->code->ins[copy.ip], lanes, n);
        if (cq_rdv_effect(blk, &blk->code->ins[copy.ip], &copy, lanes, n) != CQ_ST_OK)
            return CQ_ST_FAULT;
        if (blk->race)
            cq_race_collective_done(blk);
    }
    blk->rdvs[r].done = 1;
    blk->released = 1;
    return CQ_ST_OK;
}

int cq_rdv_effect(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n)
{
    switch (ins->op) {
    case CQ_OP_FILL: return cq_effect_fill(blk, ins, rec, lanes, n);
    case CQ_OP_DMA: return cq_effect_dma(blk, ins, rec, lanes, n);
    case CQ_OP_WAIT: return cq_effect_wait(blk, ins, rec, lanes, n);
    case CQ_OP_MMA_FILL: case CQ_OP_MMA_LOAD: case CQ_OP_MMA_EXEC: case CQ_OP_MMA_STORE:
    case CQ_OP_MMA_STORE_MASK: case CQ_OP_MMA_ASYNC: case CQ_OP_MMA_WAIT:
    case CQ_OP_MMA_GATHER: case CQ_OP_MMA_SCALE: case CQ_OP_MMA_SPARSE:
        return cq_effect_mma(blk, ins, rec, lanes, n);
    default: return CQ_ST_OK;   /* BARRIER: the rendezvous is the effect */
    }
}

/* UNIT_TERMINATED and UNIT_INACTIVE: (site, unit, unit index, the lanes). */
static int unit_fault(cq_block *blk, const cq_ins *ins, int kind, int lane, int site,
                      int unit, int u, const cq_lanes *lanes)
{
    cq_record *f = cq_fault_new(blk, ins, kind, lane);
    cq_put(f, site);
    cq_put(f, unit);
    cq_put(f, u);
    memcpy(f->lanes, lanes->w, sizeof f->lanes);
    return CQ_ST_FAULT;
}

/* §7.4.4: every live participant lane of this warp must be active here. */
static int check_converged(cq_warp *w, const cq_ins *ins, int coll, const cq_lanes *members,
                           int unit, int u, int whole_unit)
{
    cq_block *blk = w->blk;
    int lane = w->base + cq_low(w->act);
    int unit_kind = whole_unit && is_unit_kind(unit);
    if (unit_kind) {
        cq_lanes gone;
        for (int k = 0; k < nwords(blk); k++)
            gone.w[k] = members->w[k] & ~blk->live[k];
        for (int k = nwords(blk); k < CQ_LANE_WORDS; k++)
            gone.w[k] = 0;
        if (any(&gone, nwords(blk)))
            return unit_fault(blk, ins, CQ_FAULT_UNIT_TERMINATED, lane, coll, unit, u, &gone);
    }
    uint32_t full = w->width == 32 ? 0xffffffffu : (1u << w->width) - 1;
    if (w->act == full)
        return CQ_ST_OK;
    uint32_t idle = members->w[w->index] & blk->live[w->index] & ~w->act;
    if (!idle)
        return CQ_ST_OK;
    cq_lanes out;
    memset(&out, 0, sizeof out);
    if (unit_kind) {
        out.w[w->index] = idle;
        return unit_fault(blk, ins, CQ_FAULT_UNIT_INACTIVE, lane, coll, unit, u, &out);
    }
    int n = 0;
    for (int k = 0; k < nwords(blk); k++)
        n += cq_popcount(members->w[k] & blk->live[k]);
    cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_DIVERGENT_COLLECTIVE, lane);
    cq_put(f, coll);
    cq_put(f, n);
    f->lanes[0] = idle;   /* lanes of the warp, as the message counts them */
    cq_put(f, w->index);
    return CQ_ST_FAULT;
}

/* NOT_A_PARTICIPANT for the lowest active lane of ``w`` outside ``inset``, the lanes of
 * collective site ``coll``. */
static int outsiders(cq_warp *w, const cq_ins *ins, int coll, const cq_lanes *inset)
{
    uint32_t outside = w->act & ~inset->w[w->index];
    if (!outside)
        return CQ_ST_OK;
    int lane = w->base + cq_low(outside);
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_NOT_A_PARTICIPANT, lane);
    cq_put(f, lane);
    cq_put(f, coll);
    return CQ_ST_FAULT;
}

/* The active lanes of ``w`` reach collective site ``coll``; the warp blocks until every
 * rendezvous its lanes joined is complete. */
int cq_arrive(cq_warp *w, const cq_ins *ins, int coll, int whole_unit)
{
    cq_block *blk = w->blk;
    const cq_coll *site = &blk->code->coll[coll];
    const cq_lanes *inset = &blk->lanesets[site->laneset];
    if (outsiders(w, ins, coll, inset) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int64_t *counts = w->counts + (size_t)blk->code->coll_slot[w->ip] * CQ_WARP;
    if (w->act == 0xffffffffu)
        for (int i = 0; i < CQ_WARP; i++)
            counts[i]++;
    else
        for (uint32_t m = w->act; m; m &= m - 1)
            counts[cq_low(m)]++;
    int recs[CQ_WARP], nrecs = 0, all_done = 1;
    uint32_t left_units = w->act;
    while (left_units) {
        /* the lanes of the lowest unit instance still to do */
        int i0 = cq_low(left_units);
        int u = site->unit > 0 ? (w->base + i0) / site->unit : 0;
        uint32_t in_unit = left_units;     /* a site without units: every lane */
        if (site->unit > 0) {
            in_unit = 0;
            for (uint32_t m = left_units; m; m &= m - 1) {
                int i = cq_low(m);
                if ((w->base + i) / site->unit == u)
                    in_unit |= 1u << i;
            }
        }
        left_units &= ~in_unit;
        cq_lanes members = *inset;      /* the lane set's lanes of unit instance u */
        if (site->unit > 0)
            for (int l = 0; l < nwords(blk) * 32; l++)
                if (l / site->unit != u)
                    members.w[l >> 5] &= ~(1u << (l & 31));
        if (check_converged(w, ins, coll, &members, site->unit, u, whole_unit) != CQ_ST_OK)
            return CQ_ST_FAULT;
        while (in_unit) {
            int64_t c;
            uint32_t same = lanes_of_least(counts, in_unit, &c);
            in_unit &= ~same;
            int32_t r = -1;
            for (int k = 0; k < blk->nopen; k++) {
                const cq_rdv *o = &blk->rdvs[blk->open[k]];
                if (o->ip == w->ip && o->unit_index == u && o->count == c) {
                    r = blk->open[k];
                    break;
                }
            }
            if (r < 0) {
                r = rdv_new(blk);
                cq_rdv *rec = &blk->rdvs[r];
                memset(rec, 0, sizeof *rec);
                rec->ip = w->ip;
                rec->unit_index = u;
                rec->count = (int32_t)c;
                rec->site = coll;
                rec->whole_unit = whole_unit;
                rec->members = members;
                open_push(blk, r);
            }
            blk->rdvs[r].arrived.w[w->index] |= same;
            if (!missing(blk, &blk->rdvs[r], NULL)) {
                open_remove(blk, r);
                if (complete(blk, r) != CQ_ST_OK)
                    return CQ_ST_FAULT;
            }
            recs[nrecs++] = r;
            all_done &= blk->rdvs[r].done;
        }
    }
    if (!all_done) {
        w->state = CQ_BLOCKED;
        w->blocker = 1;
        w->nrdv = nrecs;
        for (int k = 0; k < nrecs; k++) {
            w->rdv[k] = recs[k];
            blk->rdvs[recs[k]].refs++;
        }
    }
    return CQ_ST_OK;
}

/* Lanes terminated (§6.5): collectives stop waiting for them. */
int cq_recheck_rendezvous(cq_block *blk)
{
    for (int k = 0; k < blk->nopen;) {
        int32_t r = blk->open[k];
        if (missing(blk, &blk->rdvs[r], NULL)) {
            k++;
            continue;
        }
        open_remove(blk, r);
        if (complete(blk, r) != CQ_ST_OK)
            return CQ_ST_FAULT;
    }
    return CQ_ST_OK;
}

int cq_op_barrier(cq_warp *w, const cq_ins *ins)
{
    return cq_arrive(w, ins, ins->a, 0);
}

/* Whether every lane of ``lanes`` (ascending, as complete() lists them) holds the lowest
 * one's value in each register of ``regs``, bit for bit (so NaN matches NaN, and -0.0
 * does not match 0.0). */
int cq_uniform_regs(cq_block *blk, const int *lanes, int n, const int32_t *regs, int nregs)
{
    const cq_code *code = blk->code;
    for (int j = 0; j < nregs; j++) {
        int r = regs[j], size = cq_type_size[code->rtype[r]], i0;
        cq_warp *w0 = cq_warp_of(blk, lanes[0], &i0);
        const char *want = w0->regs + code->roff[r] + (size_t)i0 * size;
        if (size == 4 && code->rtype[r] != CQ_DT_BOOL) {   /* the usual s32: bits compared */
            uint32_t x, diff = 0;
            memcpy(&x, want, 4);
            if (lanes[n - 1] - lanes[0] == n - 1) {   /* ascending, so every lane between */
                for (int l = lanes[0]; l <= lanes[n - 1];) {
                    const cq_warp *w = &blk->warps[l / CQ_WARP];
                    const uint32_t *v = (const uint32_t *)(w->regs + code->roff[r]);
                    int i = l - w->base, end = lanes[n - 1] - w->base + 1;
                    if (end > CQ_WARP)
                        end = CQ_WARP;
                    for (; i < end; i++)
                        diff |= v[i] ^ x;
                    l = w->base + CQ_WARP;
                }
            } else {
                for (int k = 0; k < n; k++) {
                    const cq_warp *w = &blk->warps[lanes[k] / CQ_WARP];
                    diff |= ((const uint32_t *)(w->regs + code->roff[r]))[lanes[k] - w->base] ^ x;
                }
            }
            if (diff)
                return 0;
            continue;
        }
        for (int k = 0; k < n; k++) {
            int i;
            cq_warp *w = cq_warp_of(blk, lanes[k], &i);
            if (!cq_same_bits(code->rtype[r], want, w->regs + code->roff[r] + (size_t)i * size))
                return 0;
        }
    }
    return 1;
}

/* §7.4.5 for a value register: the first lane whose value differs from the lowest's. */
int cq_uniform_value(cq_block *blk, const cq_rdv *rec, const int *lanes, int n, int r)
{
    int32_t reg = r;
    if (cq_uniform_regs(blk, lanes, n, &reg, 1))
        return CQ_ST_OK;
    int t = blk->code->rtype[r], size = cq_type_size[t], i0;
    cq_warp *w0 = cq_warp_of(blk, lanes[0], &i0);
    const char *p0 = w0->regs + blk->code->roff[r] + (size_t)i0 * size;
    for (int k = 1; k < n; k++) {
        int i;
        cq_warp *w = cq_warp_of(blk, lanes[k], &i);
        const char *p = w->regs + blk->code->roff[r] + (size_t)i * size;
        if (!cq_same_bits(t, p0, p)) {
            int64_t a[2] = {t, 0}, b[2] = {t, 0};
            memcpy(&a[1], p0, size);
            memcpy(&b[1], p, size);
            return cq_operands_differ(blk, rec, lanes[0], lanes[k], CQ_LABEL_VALUE,
                                      CQ_TAG_VALUE, 2, a, b);
        }
    }
    return CQ_ST_OK;
}

int cq_same_bits(int type, const void *a, const void *b)
{
    if (type == CQ_DT_BOOL)
        return !*(const uint8_t *)a == !*(const uint8_t *)b;
    return !memcmp(a, b, cq_type_size[type]);
}

int cq_same_view(const cq_block *blk, int32_t h, int32_t g)
{
    if (h == g)
        return 1;
    if (h < 0 || g < 0)
        return 0;
    const cq_handle *a = &blk->handles[h], *b = &blk->handles[g];
    if (a->buf != b->buf || a->nd != b->nd)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (a->o[d] != b->o[d] || a->e[d] != b->e[d])
            return 0;
    return 1;
}

/* §7.4.5: the operands of lane ``lane`` differ from the lowest lane's, first in the one
 * labelled ``label``: both values, of the typed type ``tag``, ``words`` words each as
 * croqvm/native/faults.py reads that type. */
int cq_operands_differ(cq_block *blk, const cq_rdv *rec, int first, int lane, int label,
                       int tag, int words, const int64_t *a, const int64_t *b)
{
    cq_record *f = cq_fault_new(blk, &blk->code->ins[rec->ip], CQ_FAULT_OPERANDS_DIFFER, lane);
    cq_put(f, rec->site);
    cq_put(f, first);
    cq_put(f, lane);
    cq_put(f, label);
    for (int side = 0; side < 2; side++) {
        cq_put(f, tag);
        for (int k = 0; k < words; k++)
            cq_put(f, (side ? b : a)[k]);
    }
    return CQ_ST_FAULT;
}

/* ------------------------------------------------------------------ blocking */

/* Whether the k-th waiting lane of w's event wait still waits, and for which generation:
 * its next one (§10.3), or for a parity wait the generation it names, which passes when
 * the slot's completed count has the parity of that generation + 1 (§10.6). */
int cq_event_pending(const cq_block *blk, const cq_warp *w, int k, int64_t *gen)
{
    const cq_event *ev = &blk->events[w->ev];
    int s = w->ev_slot[k];
    if (w->ev_parity) {
        *gen = w->ev_gen[k];
        return ev->completed[s] % 2 == *gen % 2;
    }
    *gen = ev->waits[(size_t)w->ev_lane[k] * blk->code->event[w->ev].slots + s];
    return ev->completed[s] <= *gen;
}

static int event_ready(const cq_block *blk, const cq_warp *w)
{
    int64_t gen;
    for (int k = 0; k < w->ev_n; k++)
        if (cq_event_pending(blk, w, k, &gen))
            return 0;
    return 1;
}

void cq_release_blocker(cq_warp *w)
{
    cq_block *blk = w->blk;
    if (w->blocker == 1)
        for (int k = 0; k < w->nrdv; k++)
            blk->rdvs[w->rdv[k]].refs--;
    w->blocker = 0;
    w->nrdv = 0;
}

/* Ready, or blocked on something that has now happened (then it wakes). */
int cq_runnable(cq_warp *w)
{
    if (w->state == CQ_BLOCKED) {
        int ready = 1;
        if (w->blocker == 1) {
            for (int k = 0; k < w->nrdv; k++)
                ready &= w->blk->rdvs[w->rdv[k]].done;
        } else if (w->blocker == 3) {
            ready = w->blk->bar_phases[w->bar] > w->bar_phase;
        } else if (w->blocker == 4) {
            ready = w->blk->call->grid_gen > w->bar_phase;
        } else {
            ready = event_ready(w->blk, w);
        }
        if (ready) {
            if (w->blocker == 2)
                wake_event(w);    /* completes the WAIT_EVENT it blocked at */
            else if (w->blocker == 3 && w->blk->race)
                cq_race_bar_passed(w, w->bar, w->bar_phase);   /* its BAR_SYNC passes */
            cq_release_blocker(w);
            w->state = CQ_READY;
            if (w->pc >= w->blk->code->n)
                cq_finish(w);     /* that was its last instruction */
        }
    }
    return w->state == CQ_READY;
}

/* ------------------------------------------------------------------ ONCE (§7.2.2) */

/* A lane's n-th arrival at the site claims execution n of its instance unless another
 * lane already has; in lane order. A warp that claims runs its guarded IF ... END
 * without being preempted, so no schedule slips another warp between claim and effect. */
int cq_op_once(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    int site = ins->b, unit = ins->c;
    int64_t *arrivals = blk->once_arrivals + (size_t)site * blk->size;
    int64_t *claimed = blk->once_claimed + (size_t)site * blk->size;
    uint8_t res[CQ_WARP] = {0};
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m), lane = w->base + i;
        int64_t nth = ++arrivals[lane];
        int64_t *c = &claimed[unit > 0 ? lane / unit : 0];
        if (nth > *c) {       /* lanes go in order: beyond every claim so far */
            res[i] = 1;
            *c = nth;
        }
    }
    if (blk->race) {
        int64_t nth[CQ_WARP];
        for (uint32_t m = w->act; m; m &= m - 1)
            nth[cq_low(m)] = arrivals[w->base + cq_low(m)];
        cq_race_once(w, ins, res, nth);
    }
    uint8_t *r = (uint8_t *)w->regs + blk->code->roff[ins->a];
    int claimed_any = 0;
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        r[i] = res[i];
        claimed_any |= res[i];
    }
    if (claimed_any)   /* the IF that follows is the effect block (the verifier's word) */
        w->hold = blk->code->ins[w->pc].b;
    return CQ_ST_OK;
}

/* ------------------------------------------------------------------ events (§10) */

void cq_init_events(cq_block *blk)
{
    const cq_code *code = blk->code;
    blk->events = cq_xcalloc((size_t)code->nevent + 1, sizeof(cq_event));
    for (int k = 0; k < code->nevent; k++) {
        const cq_eventdecl *d = &code->event[k];
        cq_event *ev = &blk->events[k];
        ev->need = d->count;
        if (ev->need < 0) {
            cq_lanes u;
            memset(&u, 0, sizeof u);
            for (int j = 0; j < d->nls; j++)
                for (int q = 0; q < CQ_LANE_WORDS; q++)
                    u.w[q] |= blk->lanesets[d->ls[j]].w[q];
            ev->need = 0;
            for (int q = 0; q < CQ_LANE_WORDS; q++)
                ev->need += cq_popcount(u.w[q]);
            if (d->cluster)
                ev->need *= blk->call->cluster_blocks;
        }
        ev->completed = cq_xcalloc((size_t)d->slots, sizeof(int64_t));
        ev->arrivals = cq_xcalloc((size_t)d->slots, sizeof(int64_t));
        ev->waits = cq_xcalloc((size_t)d->slots * blk->size, sizeof(int64_t));
        for (int s = 0; s < d->slots; s++)
            ev->completed[s] = d->ready ? 1 : 0;
    }
}

/* The slot each active lane names; a slot out of range faults in the lowest lane. */
static int event_slots(cq_warp *w, const cq_ins *ins, int64_t *slots)
{
    const cq_eventdecl *d = &w->blk->code->event[ins->a];
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        int64_t s = cq_lane_reg_int(w->blk, w->base + i, ins->b);
        if (s < 0 || s >= d->slots) {
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_EVENT_INDEX, w->base + i);
            cq_put(f, s);
            cq_put(f, ins->a);
            cq_put(f, d->slots);
            return CQ_ST_FAULT;
        }
        slots[i] = s;
    }
    return CQ_ST_OK;
}

/* Each active lane arrives at its slot; every ``need``-th arrival completes a
 * generation, and the surplus counts toward the next one. */
/* One arrival of each lane of ``act`` at its slot of event ``e`` of ``blk``; every
 * need-th arrival completes a generation, and the surplus counts toward the next one. */
static void arrive(cq_block *blk, int e, const int64_t *slots, uint32_t act)
{
    cq_event *ev = &blk->events[e];
    uint32_t left = act;
    while (left) {
        int64_t s;
        uint32_t same = lanes_of_least(slots, left, &s);
        left &= ~same;
        int64_t total = ev->arrivals[s] + cq_popcount(same);
        if (ev->need > 0 && total >= ev->need) {
            ev->completed[s] += total / ev->need;
            blk->released = 1;
            total %= ev->need;
        }
        ev->arrivals[s] = total;
    }
}

/* The arrivals of TRIGGER or TRIGGER_CLUSTER (``cluster``: in every block of the
 * cluster, in the order of its blocks, sync.py op_trigger_cluster); the race check is
 * told of those in the warp's own block, with the event's counts before them (a
 * cluster-scope trigger releases into its own block's generation only). */
static int trigger(cq_warp *w, const cq_ins *ins, int cluster)
{
    int64_t slots[CQ_WARP];
    if (event_slots(w, ins, slots) != CQ_ST_OK)
        return CQ_ST_FAULT;
    cq_block *blk = w->blk;
    const cq_event *ev = &blk->events[ins->a];
    size_t bytes = sizeof(int64_t) * (size_t)blk->code->event[ins->a].slots;
    int64_t *before = NULL;
    if (blk->race) {
        before = cq_xmalloc(2 * bytes);
        memcpy(before, ev->completed, bytes);
        memcpy((char *)before + bytes, ev->arrivals, bytes);
    }
    if (!cluster || !blk->ncluster)
        arrive(blk, ins->a, slots, w->act);
    for (int k = 0; cluster && k < blk->ncluster; k++)
        arrive(blk->cluster[k], ins->a, slots, w->act);
    if (before) {
        cq_race_trigger(w, ins->a, slots, before, (const int64_t *)((char *)before + bytes),
                        ev->need);
        free(before);
    }
    return CQ_ST_OK;
}

int cq_op_trigger(cq_warp *w, const cq_ins *ins) { return trigger(w, ins, 0); }

/* TRIGGER_CLUSTER (§10.8). */
int cq_op_trigger_cluster(cq_warp *w, const cq_ins *ins) { return trigger(w, ins, 1); }

/* Each lane of the warp's event wait has waited for one more generation of its slot; a
 * parity wait counts nothing, and observes the slot's last completed generation,
 * whichever it is: the race check acquires that one (race.py ``_wait_event_at``). */
static void wake_event(cq_warp *w)
{
    cq_event *ev = &w->blk->events[w->ev];
    int nslots = w->blk->code->event[w->ev].slots;
    if (w->ev_parity) {
        for (int k = 0; w->blk->race && k < w->ev_n; k++)
            cq_race_waited(w, w->ev, w->ev_slot[k], ev->completed[w->ev_slot[k]] - 1);
        return;
    }
    for (int k = 0; k < w->ev_n; k++) {
        int64_t *consumed = &ev->waits[(size_t)w->ev_lane[k] * nslots + w->ev_slot[k]];
        if (w->blk->race)
            cq_race_waited(w, w->ev, w->ev_slot[k], *consumed);
        (*consumed)++;
    }
}

static int block_or_pass(cq_warp *w)
{
    if (event_ready(w->blk, w)) {
        wake_event(w);
        return CQ_ST_OK;
    }
    w->state = CQ_BLOCKED;   /* one step: waking completes the wait, nothing runs again */
    w->blocker = 2;
    return CQ_ST_OK;
}

/* Block until, for every active lane, its slot has completed the lane's next generation;
 * then each lane has waited once more. */
int cq_op_wait_event(cq_warp *w, const cq_ins *ins)
{
    int64_t slots[CQ_WARP];
    if (event_slots(w, ins, slots) != CQ_ST_OK)
        return CQ_ST_FAULT;
    w->ev = ins->a;
    w->ev_span = ins->span;
    w->ev_n = 0;
    w->ev_parity = 0;
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        w->ev_lane[w->ev_n] = w->base + i;
        w->ev_slot[w->ev_n++] = (int32_t)slots[i];
    }
    return block_or_pass(w);
}

/* §10.6: each active lane waits for generation order / N of slot order % N, by parity; a
 * negative order faults in the lowest such lane as the slot it names. */
int cq_op_wait_event_at(cq_warp *w, const cq_ins *ins)
{
    int64_t nslots = w->blk->code->event[ins->a].slots;
    w->ev = ins->a;
    w->ev_span = ins->span;
    w->ev_n = 0;
    w->ev_parity = 1;
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        int64_t order = cq_lane_reg_int(w->blk, w->base + i, ins->b);
        if (order < 0) {
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_EVENT_INDEX, w->base + i);
            cq_put(f, order);
            cq_put(f, ins->a);
            cq_put(f, nslots);
            return CQ_ST_FAULT;
        }
        w->ev_lane[w->ev_n] = w->base + i;
        w->ev_slot[w->ev_n] = (int32_t)(order % nslots);
        w->ev_gen[w->ev_n++] = order / nslots;
    }
    return block_or_pass(w);
}

/* ------------------------------------------------------------------ named barriers (§6.8) */

/* The value every active lane of ``w`` gives in s32 register ``r`` (the lowest lane's);
 * a lane giving another is OPERANDS_DIFFER: a warp arrives as one. */
static int warp_uniform(cq_warp *w, const cq_ins *ins, int r, int label, int32_t *out)
{
    cq_block *blk = w->blk;
    const int32_t *v = (const int32_t *)cq_reg(w, blk->code->roff[r]);
    int i0 = cq_low(w->act);
    for (uint32_t m = w->act; m; m &= m - 1) {
        int i = cq_low(m);
        if (v[i] != v[i0]) {
            cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_OPERANDS_DIFFER, w->base + i);
            cq_put(f, ins->c);
            cq_put(f, w->base + i0);
            cq_put(f, w->base + i);
            cq_put(f, label);
            for (int side = 0; side < 2; side++) {
                uint32_t bits = (uint32_t)v[side ? i : i0];
                cq_put(f, CQ_TAG_VALUE);
                cq_put(f, blk->code->rtype[r]);
                cq_put(f, (int64_t)bits);
            }
            return CQ_ST_FAULT;
        }
    }
    *out = v[i0];
    return CQ_ST_OK;
}

/* The active lanes of ``w`` arrive at a statement of site ``coll`` as a whole warp: each
 * a participant, no live participant of the warp missing (§7.4.4). */
static int arrive_converged(cq_warp *w, const cq_ins *ins, int coll)
{
    const cq_lanes *inset = &w->blk->lanesets[w->blk->code->coll[coll].laneset];
    if (outsiders(w, ins, coll, inset) != CQ_ST_OK)
        return CQ_ST_FAULT;
    return check_converged(w, ins, coll, inset, 0, 0, 0);
}

/* BAR_SYNC and BAR_ARRIVE: the warp, with every live lane of its collective set active,
 * arrives for its 32 threads at barrier R[a] with count R[b]; the arrival that reaches
 * the count completes the phase; BAR_SYNC then waits for its phase. */
int cq_op_named_barrier(cq_warp *w, const cq_ins *ins)
{
    cq_block *blk = w->blk;
    int coll = ins->c;
    if (arrive_converged(w, ins, coll) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int32_t id, count;
    if (warp_uniform(w, ins, ins->a, CQ_LABEL_BARRIER, &id) != CQ_ST_OK ||
        warp_uniform(w, ins, ins->b, CQ_LABEL_THREAD_COUNT, &count) != CQ_ST_OK)
        return CQ_ST_FAULT;
    int lane = w->base + cq_low(w->act);
    if (id < 1 || id >= CQ_NAMED_BARRIERS) {     /* 0: the block barrier of sync.shared */
        cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_BAR_ID, lane);
        cq_put(f, coll);
        cq_put(f, id);
        return CQ_ST_FAULT;
    }
    int limit = CQ_WARP * blk->nwarps;
    if (count <= 0 || count % CQ_WARP || count > limit) {
        cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_BAR_COUNT, lane);
        cq_put(f, coll);
        cq_put(f, count);
        cq_put(f, limit);
        return CQ_ST_FAULT;
    }
    if (blk->bar_count[id] && blk->bar_count[id] != count) {
        cq_record *f = cq_fault_new(blk, ins, CQ_FAULT_BAR_COUNT_DIFFERS, lane);
        cq_put(f, coll);
        cq_put(f, id);
        cq_put(f, count);
        cq_put(f, blk->bar_count[id]);
        return CQ_ST_FAULT;
    }
    int64_t phase = blk->bar_phases[id];
    if (blk->race)
        cq_race_bar_arrived(w, id, phase);
    blk->bar_count[id] = count;
    blk->bar_arrived[id] += CQ_WARP;
    if (blk->bar_arrived[id] == count) {
        blk->bar_phases[id]++;
        blk->bar_count[id] = blk->bar_arrived[id] = 0;
        blk->released = 1;
        if (blk->race && ins->op == CQ_OP_BAR_SYNC)
            cq_race_bar_passed(w, id, phase);
    } else if (ins->op == CQ_OP_BAR_SYNC) {
        w->state = CQ_BLOCKED;
        w->blocker = 3;
        w->bar = id;
        w->bar_phase = phase;
    }
    return CQ_ST_OK;
}

/* GRID_SYNC (§7.1.4): the warp's participant lanes wait until the launch releases the
 * grid barrier's current generation (call.c runs cooperative launches). */
int cq_op_grid_sync(cq_warp *w, const cq_ins *ins)
{
    if (arrive_converged(w, ins, ins->a) != CQ_ST_OK)
        return CQ_ST_FAULT;
    w->state = CQ_BLOCKED;
    w->blocker = 4;
    w->bar_phase = w->blk->call->grid_gen;
    return CQ_ST_OK;
}

void cq_free_block_extras(cq_block *blk)
{
    if (blk->events)
        for (int k = 0; k < blk->code->nevent; k++) {
            free(blk->events[k].completed);
            free(blk->events[k].arrivals);
            free(blk->events[k].waits);
        }
    free(blk->events);
    free(blk->rdvs);
    free(blk->open);
    for (int k = 0; k < blk->nhandles; k++)
        cq_transfer_unref(blk->handles[k].transfer);
    free(blk->handles);
    for (int k = 0; k < blk->ntransfers; k++)
        cq_transfer_unref(blk->transfers[k]);
    free(blk->transfers);
    for (int m = 0; m < blk->code->nfrag; m++) {
        if (blk->frags[m])
            for (int u = 0; u < blk->size; u++)
                if (blk->frags[m][u]) {
                    free(blk->frags[m][u]->data);
                    free(blk->frags[m][u]);
                }
        free(blk->frags[m]);
    }
    free(blk->frags);
}
