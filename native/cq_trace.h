/* Tracing's state (trace.c, croqvm trace): a run's trace, its blocks' tracks, their
 * warps' clocks, open slices and pending waits. The dispatch loop (cq_dispatch.inc) times
 * an untimed step here, at once (cq_trace_untimed); trace.c does the rest (its
 * conventions: ``tr`` the trace, ``tk`` a block's track, ``ln`` a warp's lane of it). */
#ifndef CQ_TRACE_H
#define CQ_TRACE_H

#include "cq_engine.h"

/* A completed generation of an event slot: when, and the trigger point it flows from
 * (``src`` 0: none, the ready generation). */
typedef struct {
    double time, at;
    int32_t src, pid, tid;
} gen_t;

/* A rendezvous a step joined, and once complete its release and when its participants
 * are done; (ip, unit, count) tells it from a later one in the same pool record. */
typedef struct {
    int32_t r, ip, unit, count, site, done;
    double release, end;
} rec_ref;

/* A step's facts (recorder.py's ``wait`` tuple and ``pre``), settled at once or, when the
 * warp blocked, at its next step. */
typedef struct {
    int32_t op, row;
    double cost, t;
    int32_t nact;
    uint32_t act;
    int32_t nmine;
    rec_ref mine[CQ_WARP];
    int32_t alone;              /* an operation of this warp alone, done at alone_done */
    double alone_done;
    int32_t ev, nneed;          /* WAIT_EVENT(_AT): (slot, generation) each lane needs */
    int32_t need_slot[CQ_WARP];
    int64_t need_count[CQ_WARP];
    int32_t fut, copy;          /* WAIT, FUT_BIND: 1 + the latest-landing copy, 0 none */
    int32_t bar;                /* BAR_SYNC, BAR_ARRIVE: the barrier and its phase, or -1 */
    int64_t phase;
} wait_t;

typedef struct {
    int32_t tid, width;
    double clock;
    int32_t open, orow, onact, pending;
    uint32_t oact;
    double ostart, oend;
    wait_t wait;
} lane_t;

/* An async copy in flight: its flow's first two points and its landing. */
typedef struct {
    int32_t kind, pid, issuer, copy_tid;
    double issued, land;
} origin_t;

typedef struct cq_track {
    int32_t pid, process, c;    /* c: its code, 0 the host program, 1 + k kernel k */
    const cq_code *code;
    const double *cost;         /* per instruction of its code */
    const int32_t *row;
    const uint8_t *tma;         /* per DMA descriptor */
    double start, engine;       /* engine: when its copy engine is free */
    int32_t nlanes;
    lane_t *lanes;
    int32_t nslots;             /* the slots of every event of its code */
    int32_t *ev_at;             /* per event: its first slot's index in gens */
    gen_t **gens;
    int32_t *ngens, *capgens, *made;
    gen_t *partial;             /* per slot: the arrivals toward the next generation */
    uint8_t *has_partial;
    int64_t bar_phase[CQ_NAMED_BARRIERS];   /* the phase bar_latest is of, or -1 */
    double bar_latest[CQ_NAMED_BARRIERS];
    double *released[CQ_NAMED_BARRIERS];    /* per phase: its release, NaN unknown */
    int64_t nreleased[CQ_NAMED_BARRIERS];
    double *copy_ends;          /* per copy track: its last copy's landing */
    int32_t ncopies;
} cq_track;

typedef struct cq_trace {
    cq_trace_model m;
    cq_slice *slices;
    int64_t nslices, capslices;
    int64_t populated;          /* the slices whose pages are made (populate) */
    double end;                 /* when the latest slice ends */
    cq_detail *details;
    int64_t ndetails, capdetails;
    cq_flow *flows;
    int64_t nflows, capflows;
    cq_process *procs;
    int64_t nprocs, capprocs;
    origin_t *origins;
    int64_t norigins, caporigins;
    cq_stat *stats;
    cq_track **tracks;          /* the host's, then the running launch's blocks' */
    int32_t ntracks, captracks;
    int32_t launches;           /* launches started */
    double launch_start;        /* when the running launch's blocks start */
    int32_t launch_open, launch_row, launch_first;
    double launch_at;           /* when the host reached it */
    /* the step in progress, from cq_trace_before to cq_trace_after */
    wait_t pre;
    int32_t nopened, capopened;
    int32_t *opened;            /* the rendezvous open at its instruction before it ran */
    int32_t tev, ntslots;       /* TRIGGER: the event, its lanes' slots (increasing) ... */
    int64_t tslots[CQ_WARP];
    int64_t *tbefore;           /* ... and the slots' completed generations before it */
    int32_t captbefore;
} cq_trace;

void cq_trace_close(cq_trace *tr, cq_track *tk, lane_t *ln);

/* The instruction of statement ``row`` ran from ``start`` for ``cost`` cycles on ``nact``
 * lanes ``act``: the warp's open slice grows when it is the same statement on the same
 * lanes right before, else a new one opens (recorder.py _run). Inline: the dispatch loop
 * runs it for every untimed step. */
static inline void cq_trace_run(cq_trace *tr, cq_track *tk, lane_t *ln, int row,
                                double start, double cost, int nact, uint32_t act)
{
    cq_stat *st = &tr->stats[row];
    st->steps++;
    st->lanes += nact;
    st->slots += ln->width;
    st->cycles += cost;
    double end = start + cost;
    if (ln->open && ln->orow == row && ln->oend == start && ln->onact == nact &&
        ln->oact == act) {
        ln->oend = end;
    } else {
        if (ln->open)
            cq_trace_close(tr, tk, ln);
        ln->open = 1;
        ln->orow = row;
        ln->ostart = start;
        ln->oend = end;
        ln->oact = act;
        ln->onact = nact;
    }
    ln->clock = end;
}

/* An untimed step of warp ``w`` (trace_settled) ran instruction ``ip`` on its ``nact``
 * lanes ``act``. */
static inline void cq_trace_untimed(cq_block *blk, cq_warp *w, int ip, uint32_t act, int nact)
{
    cq_track *tk = blk->track;
    lane_t *ln = &tk->lanes[w->index];
    cq_trace_run(blk->call->trace, tk, ln, tk->row[ip], ln->clock, tk->cost[ip], nact, act);
}

#endif
