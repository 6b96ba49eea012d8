/* The race detector of ``check="race"`` (docs/EXECUTION.md §20): the happens-before
 * model of croqvm/interp/race.py and the shadow of croqvm/interp/shadow.py, kept in C
 * for every construct that checker follows. The detector only decides whether a run
 * races: at the first conflict the reference checker would report, it stops the run
 * (CQ_RACE_STOP), and the driver runs the call again on the reference engine, which
 * writes the report. Up to that first conflict the shadow holds what the reference
 * checker's holds, so it stops exactly the runs that report races.
 *
 * Conventions: ``rc`` the call's race state, ``rb`` a block's, ``x`` a warp of the
 * block, ``sh`` a buffer's shadow; an actor is (segment, warp, its vector clock, the
 * segments concurrent with it: its launch's, and the async launches' still running). ``info`` names an access for the reference
 * checker's one exemption (race.py ``_own_effect``): ((code + 1) << 32) | ip << 1 |
 * whether it is an element read. Clocks start at 1; 0 is "never". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "cq_engine.h"

typedef struct cq_shadow {
    int64_t n;
    int glob;                   /* a global buffer: accesses carry their segment */
    int writes;                 /* anything written yet */
    int64_t *w_clock, *w_info, *w_seq;
    int32_t *w_warp;
    int nrows;                  /* reads: one row per warp number */
    int8_t row_of[CQ_MAX_WARPS];
    int32_t r_warp[CQ_MAX_WARPS];
    int64_t *r_clock[CQ_MAX_WARPS], *r_info[CQ_MAX_WARPS], *r_seq[CQ_MAX_WARPS];
    /* global buffers: a read of another segment a read of the same warp number
     * replaced (shadow.py _keep_foreign) */
    int64_t *f_info, *f_seq;
    /* Bounds of every entry recorded so far, however overwritten since (``note``): the
     * warps that wrote, each one's latest clock, and each row's latest clock; for a
     * global buffer the lowest and highest segment of the writes, of each row and of the
     * foreign reads ([0] > [1]: none). An access all of them order (``bounded``) is
     * ordered after every entry, and checking element by element is left out. */
    uint32_t w_warps;
    int64_t w_top[CQ_MAX_WARPS], r_top[CQ_MAX_WARPS];
    int64_t w_seg[2], r_seg[CQ_MAX_WARPS][2], f_seg[2];
    int64_t stamp;              /* how many times accesses were recorded in it */
    int local;                  /* a lane's own buffer: only the async copies in flight */
    int ninflight, capinflight; /* the async copies reading (side 0) or writing (side 1) it */
    struct inflight { struct cq_race_copy *copy; int side; } *inflight;
    /* the atomics (§4.5) on it, apart, kept as reads (shadow.py ``atomics``): an atomic is
     * checked against the plain accesses, any other access against them too */
    struct cq_shadow *atomics;
    struct cq_shadow *next;
} cq_shadow;

/* An async copy (race.py ``Copy``): per side (its source read, its destination write)
 * the shadow and the sorted positions of its elements; once the first wait completed it,
 * the warp and clock it was recorded at. */
typedef struct cq_race_copy {
    int64_t info;
    cq_shadow *sh[2];
    int64_t n[2], *pos[2];
    int done;
    int32_t done_warp;
    int64_t done_clock;
    struct cq_race_copy *next;  /* the block's */
} cq_race_copy;

/* A warp's last element access of one kind (read, write) that the bounds did not order
 * (race.py ``elements``): the same access again (the same lanes, elements and
 * instruction) at the same clock, nothing recorded in the shadow since (its stamp), is
 * ordered after what the first met, as the clocks only grow, and would record what the
 * first did: it is left out. */
struct repeat {
    const cq_shadow *sh;
    int64_t stamp, clock, seq, info;
    uint32_t lanes;
    int64_t off[CQ_WARP];       /* by lane */
};

typedef struct { int64_t cap; int64_t *vc; } cq_gens;     /* vc: cap x CQ_MAX_WARPS */
typedef struct { int64_t cap; int32_t *warp; int64_t *vc; } cq_pubs;   /* warp -1: none */
typedef struct { const cq_buf *buf; int64_t pos; int32_t lane; } lane_copy;

struct cq_race_block {
    int64_t seq, lo, hi;        /* its segment; segments in [lo, hi) run concurrently */
    int64_t *vc;                /* the block's warps x CQ_MAX_WARPS */
    int coll;                   /* the collective whose effect runs: its actor's warp, or -1 */
    int32_t coll_ip;
    int ncoll;
    int32_t coll_warps[CQ_MAX_WARPS];
    cq_gens **gens;             /* per event, per slot: the join of each generation's triggers */
    cq_gens bars[CQ_NAMED_BARRIERS];   /* per named barrier: the join of each phase's arrivals */
    /* FUT_BIND (race.py bound, Gen.copies): per warp, the copies bound since its last
     * trigger; the copies each trigger handed to a generation, in the order handed */
    int nbound[CQ_MAX_WARPS], capbound[CQ_MAX_WARPS];
    cq_race_copy **bound[CQ_MAX_WARPS];
    int nhanded, caphanded;
    struct handed { int32_t e, slot; int64_t gen; cq_race_copy *copy; } *handed;
    cq_pubs **pubs;             /* per ONCE site, per unit instance: per execution */
    int nunits;
    cq_shadow *shadows;         /* of the block's own (shared) buffers */
    int64_t lc_step, lc_warp, lc_n, lc_cap;   /* the lanes' own copies (cq_race_lane_copy) */
    lane_copy *lc;
    cq_race_copy *copies;       /* its async copies */
    struct repeat *repeats[CQ_MAX_WARPS];     /* per warp, a read and a write; NULL: none yet */
    /* asynchronous MMA (race.py mma_loads, mma_flights): the tiles mma.load read, by
     * (lane, instruction), and the MMAs' reads in flight, by (accumulator, lane) */
    int nloads, caploads, nflights, capflights;
    struct mma_load { int32_t lane, ip; cq_shadow *sh; int64_t n, *pos; } *loads;
    struct mma_flight { int32_t m, lane; cq_race_copy *copy; } *flights;
};

static void copies_free(cq_block *blk, cq_race_copy *c);
static void add_inflight(cq_shadow *sh, struct cq_race_copy *c, int side);
static void complete(cq_block *blk, cq_race_copy *c, int lane);

/* A launch still running after the host went on (race.py ``pending``): its segments
 * [lo, hi), on stream parameter ``stream`` (-1: the default stream). */
typedef struct { int64_t lo, hi; int32_t stream; } pending;

struct cq_race {
    int64_t nseq;               /* segments so far */
    int64_t host_seq;
    /* the async launches running: the first ``nbefore`` began before the running launch
     * (its blocks are concurrent with them), all ``npending`` run beside the host */
    int npending, nbefore, cappending;
    pending *pending;
    pthread_mutex_t mu;         /* global shadows while a launch's blocks run on threads */
    atomic_int stop;
    int ncodes;
    int32_t **once_of;          /* per code (host first), per instruction: race.py statement_once */
    uint8_t *mma_async;         /* per code: it has MMA_ASYNC (its mma.loads are kept) */
    cq_shadow *shadows;         /* of global buffers */
};

/* ------------------------------------------------------------------ setup */

static int32_t *statement_once(const cq_code *code)
{
    int32_t *out = cq_xmalloc(sizeof(int32_t) * ((size_t)code->n + 1));
    for (int ip = 0; ip < code->n; ip++) {
        int span = code->ins[ip].span, found = -1, k;
        for (k = ip; k < code->n && code->ins[k].span == span && found < 0; k++)
            if (code->ins[k].op == CQ_OP_ONCE)
                found = code->ins[k].b;
        for (k = ip; found < 0 && k >= 0 && code->ins[k].span == span; k--)
            if (code->ins[k].op == CQ_OP_ONCE) {
                found = ip <= code->ins[k + 1].b ? code->ins[k].b : -2;
                break;
            }
        out[ip] = found < 0 ? -1 : found;
    }
    return out;
}

void cq_race_new(cq_call *call)
{
    const cq_prog *prog = call->prog;
    struct cq_race *rc = cq_xcalloc(1, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
    rc->ncodes = prog->nkernels + 1;
    rc->once_of = cq_xcalloc((size_t)rc->ncodes, sizeof(int32_t *));
    rc->once_of[0] = statement_once(&prog->host);
    rc->mma_async = cq_xcalloc((size_t)rc->ncodes, 1);
    for (int k = 0; k < prog->nkernels; k++) {
        const cq_code *code = &prog->kernels[k].code;
        rc->once_of[k + 1] = statement_once(code);
        for (int ip = 0; ip < code->n; ip++)
            rc->mma_async[k + 1] |= code->ins[ip].op == CQ_OP_MMA_ASYNC;
    }
    rc->nseq = 1;               /* the host's first segment is 0 */
    call->race = rc;
}

static void shadows_free(cq_shadow *sh)
{
    while (sh) {
        cq_shadow *next = sh->next;
        free(sh->w_clock);
        free(sh->w_info);
        free(sh->w_seq);
        free(sh->w_warp);
        for (int r = 0; r < sh->nrows; r++) {
            free(sh->r_clock[r]);
            free(sh->r_info[r]);
            free(sh->r_seq[r]);
        }
        free(sh->f_info);
        free(sh->f_seq);
        free(sh->inflight);
        shadows_free(sh->atomics);
        free(sh);
        sh = next;
    }
}

void cq_race_free(cq_call *call)
{
    struct cq_race *rc = call->race;
    if (!rc)
        return;
    shadows_free(rc->shadows);
    for (int k = 0; k < rc->ncodes; k++)
        free(rc->once_of[k]);
    free(rc->once_of);
    free(rc->mma_async);
    free(rc->pending);
    pthread_mutex_destroy(&rc->mu);
    free(rc);
    call->race = NULL;
}

/* A block's state: each warp's clock starts at 1; its segment is given by its launch
 * (block ``number`` of it), the host's by the call. */
void cq_race_block_new(cq_block *blk, int64_t first, int64_t number, int64_t blocks)
{
    struct cq_race_block *rb = cq_xcalloc(1, sizeof *rb);
    const cq_code *code = blk->code;
    rb->vc = cq_xcalloc((size_t)blk->nwarps * CQ_MAX_WARPS, sizeof(int64_t));
    for (int x = 0; x < blk->nwarps; x++)
        rb->vc[x * CQ_MAX_WARPS + x] = 1;
    rb->coll = -1;
    rb->lc_step = -1;
    if (blk->kernel < 0) {
        rb->seq = blk->call->race->host_seq;
        rb->lo = rb->hi = 0;
    } else {
        rb->seq = first + number;
        rb->lo = first;
        rb->hi = first + blocks;
    }
    rb->gens = cq_xcalloc((size_t)code->nevent + 1, sizeof(cq_gens *));
    for (int e = 0; e < code->nevent; e++)
        rb->gens[e] = cq_xcalloc((size_t)code->event[e].slots, sizeof(cq_gens));
    rb->nunits = blk->size;
    rb->pubs = cq_xcalloc((size_t)code->once_sites + 1, sizeof(cq_pubs *));
    blk->race = rb;
}

void cq_race_block_free(cq_block *blk)
{
    struct cq_race_block *rb = blk->race;
    if (!rb)
        return;
    const cq_code *code = blk->code;
    for (int e = 0; e < code->nevent; e++) {
        for (int s = 0; s < code->event[e].slots; s++)
            free(rb->gens[e][s].vc);
        free(rb->gens[e]);
    }
    free(rb->gens);
    for (int id = 0; id < CQ_NAMED_BARRIERS; id++)
        free(rb->bars[id].vc);
    for (int x = 0; x < CQ_MAX_WARPS; x++)
        free(rb->bound[x]);
    free(rb->handed);
    for (int s = 0; s < code->once_sites; s++) {
        for (int u = 0; rb->pubs[s] && u < rb->nunits; u++) {
            free(rb->pubs[s][u].warp);
            free(rb->pubs[s][u].vc);
        }
        free(rb->pubs[s]);
    }
    free(rb->pubs);
    free(rb->lc);
    for (int x = 0; x < CQ_MAX_WARPS; x++)
        free(rb->repeats[x]);
    for (int k = 0; k < rb->nloads; k++)
        free(rb->loads[k].pos);
    free(rb->loads);
    free(rb->flights);
    copies_free(blk, rb->copies);
    shadows_free(rb->shadows);
    free(rb->vc);
    free(rb);
    blk->race = NULL;
}

/* Launch ``L`` of ``blocks`` blocks (race.py ``launch_begin``, ``launch_end``): a
 * synchronous launch on the default stream waits for every earlier launch, one on stream
 * s for the earlier ones on s; its blocks are the ``blocks`` segments from
 * ``call->race_first``, concurrent with the async launches still running. The host goes
 * on after it in a segment of its own, concurrent with those and, when ``L`` is
 * asynchronous, with ``L``. */
void cq_race_launch(cq_call *call, const cq_launch *L, int64_t blocks)
{
    struct cq_race *rc = call->race;
    int n = 0;
    for (int k = 0; k < rc->npending && (L->is_async || L->stream >= 0); k++)
        if (L->stream < 0 || rc->pending[k].stream != L->stream)
            rc->pending[n++] = rc->pending[k];
    rc->npending = rc->nbefore = n;
    call->race_first = rc->nseq;
    rc->nseq += blocks;
    if (L->is_async) {
        if (rc->npending == rc->cappending) {
            rc->cappending = rc->cappending ? 2 * rc->cappending : 8;
            rc->pending = realloc(rc->pending, (size_t)rc->cappending * sizeof *rc->pending);
            if (!rc->pending)
                abort();
        }
        rc->pending[rc->npending++] = (pending){call->race_first, rc->nseq, L->stream};
    }
    rc->host_seq = rc->nseq++;
    call->host->race->seq = rc->host_seq;
}

/* The grid barrier of a cooperative launch released its blocks, all resident (race.py
 * ``grid_released``): each goes on in a new segment, concurrent only with the others'
 * new ones (and the async launches still running), so that what any block did before
 * the barrier is ordered before what any does after it. */
void cq_race_grid_released(cq_call *call)
{
    struct cq_race *rc = call->race;
    int64_t first = rc->nseq;
    for (int k = 0; k < call->nresident; k++) {
        struct cq_race_block *rb = call->resident[k]->race;
        rb->seq = rc->nseq++;
        rb->lo = first;
        rb->hi = first + call->nresident;
    }
}

/* SYNC_GLOBAL: every launch is done; the host goes on in a segment of its own. */
void cq_race_sync_global(cq_call *call)
{
    struct cq_race *rc = call->race;
    rc->npending = rc->nbefore = 0;
    rc->host_seq = rc->nseq++;
    call->host->race->seq = rc->host_seq;
}

/* The launch runs again serially after its blocks on threads stopped (pool.c): in new
 * segments, so that what the stopped blocks recorded counts as done before it, as the
 * buffers they wrote are put back. */
void cq_race_relaunch(cq_call *call)
{
    struct cq_race *rc = call->race;
    if (call->launch->is_async)     /* the host runs beside these blocks now */
        rc->pending[rc->npending - 1] = (pending){rc->nseq, rc->nseq + call->blocks,
                                                  call->launch->stream};
    call->race_first = rc->nseq;
    rc->nseq += call->blocks;
}

/* ------------------------------------------------------------------ stopping */

/* The run races (or does what only the reference engine checks): stop it here. */
static int stop(cq_block *blk)
{
    atomic_store(&blk->call->race->stop, 1);
    cq_fault_new(blk, NULL, CQ_RACE_STOP, -1);
    return CQ_ST_FAULT;
}

static int stopped(const cq_block *blk) { return atomic_load(&blk->call->race->stop); }

/* ------------------------------------------------------------------ clocks */

static inline int64_t *vc_of(struct cq_race_block *rb, int x) { return rb->vc + x * CQ_MAX_WARPS; }

static inline void tick(struct cq_race_block *rb, int x) { vc_of(rb, x)[x]++; }

static inline void acquire(int64_t *vc, const int64_t *from)
{
    for (int k = 0; k < CQ_MAX_WARPS; k++)
        vc[k] = from[k] > vc[k] ? from[k] : vc[k];
}

/* A rendezvous of the warps of ``lanes`` completes: they join their clocks, and its
 * effect's accesses are the lowest one's. */
void cq_race_collective(cq_block *blk, const cq_ins *ins, const int *lanes, int n)
{
    struct cq_race_block *rb = blk->race;
    int64_t joined[CQ_MAX_WARPS] = {0};
    rb->ncoll = 0;
    for (int k = 0; k < n;) {
        int x = lanes[k] / CQ_WARP;
        rb->coll_warps[rb->ncoll++] = x;
        acquire(joined, vc_of(rb, x));
        while (k < n && lanes[k] < (x + 1) * CQ_WARP)   /* lanes come in order */
            k++;
    }
    for (int k = 0; k < rb->ncoll; k++)
        memcpy(vc_of(rb, rb->coll_warps[k]), joined, sizeof joined);
    rb->coll = rb->coll_warps[0];
    rb->coll_ip = (int32_t)(ins - blk->code->ins);
}

void cq_race_collective_done(cq_block *blk)
{
    struct cq_race_block *rb = blk->race;
    for (int k = 0; k < rb->ncoll; k++)
        tick(rb, rb->coll_warps[k]);
    rb->coll = -1;
}

/* The clock of generation ``k`` of ``g`` (zeros until something joins it), grown to hold it. */
static int64_t *gen_vc(cq_gens *g, int64_t k)
{
    if (k >= g->cap) {
        int64_t cap = g->cap ? g->cap : 8;
        while (cap <= k)
            cap *= 2;
        g->vc = realloc(g->vc, (size_t)cap * CQ_MAX_WARPS * sizeof(int64_t));
        if (!g->vc)
            abort();
        memset(g->vc + g->cap * CQ_MAX_WARPS, 0,
               (size_t)(cap - g->cap) * CQ_MAX_WARPS * sizeof(int64_t));
        g->cap = cap;
    }
    return g->vc + k * CQ_MAX_WARPS;
}

/* Generation ``gen`` of ``slot`` of event ``e`` lands copy ``c`` for the warps that
 * acquire it (once each). */
static void hand(struct cq_race_block *rb, int e, int slot, int64_t gen, cq_race_copy *c)
{
    for (int k = 0; k < rb->nhanded; k++)
        if (rb->handed[k].copy == c && rb->handed[k].e == e && rb->handed[k].slot == slot &&
            rb->handed[k].gen == gen)
            return;
    if (rb->nhanded == rb->caphanded) {
        rb->caphanded = rb->caphanded ? 2 * rb->caphanded : 8;
        rb->handed = realloc(rb->handed, (size_t)rb->caphanded * sizeof *rb->handed);
        if (!rb->handed)
            abort();
    }
    rb->handed[rb->nhanded++] = (struct handed){e, slot, gen, c};
}

/* TRIGGER by the active lanes of ``w`` at ``slots``; ``completed`` and ``arrivals``
 * the event's counts before it: each arrival belongs to generation completed +
 * arrivals / need, in lane order (race.py ``trigger``). */
void cq_race_trigger(cq_warp *w, int e, const int64_t *slots, const int64_t *completed,
                     const int64_t *arrivals, int64_t need)
{
    if (need <= 0)
        return;
    struct cq_race_block *rb = w->blk->race;
    int x = w->index;
    const int64_t *vc = vc_of(rb, x);
    int nslots = w->blk->code->event[e].slots;
    for (int s = 0; s < nslots; s++) {
        int64_t n = 0;
        for (uint32_t m = w->act; m; m &= m - 1)
            n += slots[cq_low(m)] == s;
        if (!n)
            continue;
        cq_gens *g = &rb->gens[e][s];
        int64_t first = completed[s] + arrivals[s] / need;
        int64_t last = completed[s] + (arrivals[s] + n - 1) / need;
        for (int64_t k = first; k <= last; k++) {
            acquire(gen_vc(g, k), vc);
            for (int b = 0; b < rb->nbound[x]; b++)
                hand(rb, e, s, k, rb->bound[x][b]);
        }
    }
    rb->nbound[x] = 0;
    tick(rb, x);
}

/* A lane of ``w`` passed a wait having consumed generation ``gen`` of ``slot``: what its
 * triggers did before them is ordered before what the warp does next (a generation no
 * trigger made, ``= ready``, orders nothing). */
void cq_race_waited(cq_warp *w, int e, int slot, int64_t gen)
{
    struct cq_race_block *rb = w->blk->race;
    cq_gens *g = &rb->gens[e][slot];
    if (gen < 0 || gen >= g->cap)
        return;
    acquire(vc_of(rb, w->index), g->vc + gen * CQ_MAX_WARPS);
    for (int k = 0; k < rb->nhanded; k++)     /* the bound copies land for this warp */
        if (rb->handed[k].e == e && rb->handed[k].slot == slot && rb->handed[k].gen == gen)
            complete(w->blk, rb->handed[k].copy, w->base);
}

/* ``w`` arrived at phase ``phase`` of named barrier ``id`` (BAR_SYNC or BAR_ARRIVE): its
 * clock joins the phase's, which every BAR_SYNC of the phase acquires as it passes
 * (race.py ``bar_arrived``). */
void cq_race_bar_arrived(cq_warp *w, int id, int64_t phase)
{
    struct cq_race_block *rb = w->blk->race;
    acquire(gen_vc(&rb->bars[id], phase), vc_of(rb, w->index));
    tick(rb, w->index);
}

/* ``w`` passed BAR_SYNC: what every arrival of its phase did before arriving is ordered
 * before what it does next (race.py ``bar_passed``). */
void cq_race_bar_passed(cq_warp *w, int id, int64_t phase)
{
    struct cq_race_block *rb = w->blk->race;
    acquire(vc_of(rb, w->index), gen_vc(&rb->bars[id], phase));
}

/* ONCE (§7.2.2): the claiming lanes publish their warp's clock for their execution (the
 * warp ticks when its effect block ends, cq_race_effect_end); the other lanes acquire
 * what the claimer of their execution published. */
void cq_race_once(cq_warp *w, const cq_ins *ins, const uint8_t *claimed, const int64_t *nth)
{
    cq_block *blk = w->blk;
    struct cq_race_block *rb = blk->race;
    int site = ins->b, unit = ins->c, x = w->index;
    if (!rb->pubs[site])
        rb->pubs[site] = cq_xcalloc((size_t)rb->nunits, sizeof(cq_pubs));
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t m = w->act; m; m &= m - 1) {
            int i = cq_low(m), lane = w->base + i;
            if ((claimed[i] == 0) != pass)
                continue;
            cq_pubs *p = &rb->pubs[site][unit > 0 ? lane / unit : 0];
            int64_t k = nth[i];
            if (pass == 0) {
                if (k >= p->cap) {
                    int64_t cap = p->cap ? p->cap : 8;
                    while (cap <= k)
                        cap *= 2;
                    p->warp = realloc(p->warp, (size_t)cap * sizeof(int32_t));
                    p->vc = realloc(p->vc, (size_t)cap * CQ_MAX_WARPS * sizeof(int64_t));
                    if (!p->warp || !p->vc)
                        abort();
                    for (int64_t j = p->cap; j < cap; j++)
                        p->warp[j] = -1;
                    p->cap = cap;
                }
                p->warp[k] = x;
                memcpy(p->vc + k * CQ_MAX_WARPS, vc_of(rb, x), CQ_MAX_WARPS * sizeof(int64_t));
            } else if (k < p->cap && p->warp[k] >= 0 && p->warp[k] != x) {
                acquire(vc_of(rb, x), p->vc + k * CQ_MAX_WARPS);
            }
        }
}

void cq_race_effect_end(cq_warp *w) { tick(w->blk->race, w->index); }

/* ------------------------------------------------------------------ shadows */

/* A row of a shadow: one entry per element of a buffer, so as large as the user's data.
 * Its allocation failing deep inside a hook can not unwind the run, so the process ends
 * with a usage error's status and a message (docs/EXECUTION.md §20), not an abort. */
static void *shadow_row(int64_t n, size_t size)
{
    void *p = calloc((size_t)n + 1, size);
    if (!p) {
        fflush(stdout);
        fprintf(stderr, "the race check's shadow of a buffer of %lld elements (%llu bytes) "
                "does not fit in the memory left to croqvm; --check none runs without it\n",
                (long long)n, (unsigned long long)(((size_t)n + 1) * size));
        exit(2);
    }
    return p;
}

static int64_t *zeros(int64_t n) { return shadow_row(n, sizeof(int64_t)); }

static int64_t *minus_ones(int64_t n)
{
    int64_t *p = shadow_row(n, sizeof(int64_t));
    for (int64_t k = 0; k <= n; k++)
        p[k] = -1;
    return p;
}

static int storage_of(const cq_block *blk, const cq_buf *b)
{
    if (b->code < 0)
        return CQ_STORAGE_GLOBAL;
    return blk->call->prog->kernels[b->code].code.buf[b->slot].storage;
}

/* The buffer's shadow, made at its first checked access; NULL for a lane's own buffer,
 * which nothing else can reach. Global ones are made under the call's lock. */
static cq_shadow *shadow_new(cq_block *blk, cq_buf *b, int local)
{
    if (b->shadow)
        return b->shadow;
    int storage = storage_of(blk, b);
    if (storage == CQ_STORAGE_LOCAL && !local)
        return NULL;
    cq_shadow *sh = cq_xcalloc(1, sizeof *sh);
    sh->local = storage == CQ_STORAGE_LOCAL;
    sh->n = b->count;
    sh->glob = storage == CQ_STORAGE_GLOBAL;
    sh->w_clock = zeros(sh->n);
    sh->w_info = zeros(sh->n);
    sh->w_warp = shadow_row(sh->n, sizeof(int32_t));
    if (sh->glob)
        sh->w_seq = minus_ones(sh->n);
    memset(sh->row_of, -1, sizeof sh->row_of);
    sh->w_seg[0] = sh->f_seg[0] = INT64_MAX;
    sh->w_seg[1] = sh->f_seg[1] = -1;
    if (sh->glob) {
        sh->next = blk->call->race->shadows;
        blk->call->race->shadows = sh;
    } else {
        sh->next = blk->race->shadows;
        blk->race->shadows = sh;
    }
    b->shadow = sh;
    return sh;
}

static cq_shadow *shadow_of(cq_block *blk, cq_buf *b) { return shadow_new(blk, b, 0); }

typedef struct {
    int64_t seq, lo, hi;
    int warp;
    const int64_t *vc;
    int nasync;                 /* the async launches it runs beside */
    const pending *async;
} actor;

/* Whether segment ``s`` (not the actor's) runs concurrently with the actor's. */
static inline int concurrent(const actor *a, int64_t s)
{
    int in = s >= a->lo && s < a->hi;
    for (int k = 0; k < a->nasync; k++)
        in |= s >= a->async[k].lo && s < a->async[k].hi;
    return in;
}

static inline int ordered(const cq_shadow *sh, int64_t seq, int warp, int64_t clock,
                          const actor *a)
{
    if (!sh->glob || seq == a->seq)
        return clock <= a->vc[warp];
    return !concurrent(a, seq);
}

/* race.py _own_effect: a read of an outer-level statement and the write of that
 * statement's own effect are no race. */
static int own_effect(const struct cq_race *rc, int64_t a, int64_t b)
{
    if (!(a & 1)) {
        int64_t t = a;
        a = b;
        b = t;
    }
    if (!(a & 1) || (b & 1))
        return 0;
    int64_t ca = a >> 32, cb = b >> 32, ia = (a >> 1) & 0x7fffffff, ib = (b >> 1) & 0x7fffffff;
    int32_t wonce = rc->once_of[cb][ib];
    return wonce >= 0 && ca == cb && rc->once_of[ca][ia] == wonce && ia < ib;
}

static inline int conflict(cq_block *blk, int64_t prior, int64_t info)
{
    return !own_effect(blk->call->race, prior, info);
}

/* The row of ``warp``'s reads, made at its first. */
static void add_row(cq_shadow *sh, int warp);

static inline int read_row(cq_shadow *sh, int warp)
{
    if (sh->row_of[warp] < 0)
        add_row(sh, warp);
    return sh->row_of[warp];
}

static void add_row(cq_shadow *sh, int warp)
{
    int r = sh->nrows++;
    sh->row_of[warp] = (int8_t)r;
    sh->r_warp[r] = warp;
    sh->r_clock[r] = zeros(sh->n);
    sh->r_info[r] = zeros(sh->n);
    if (sh->glob)
        sh->r_seq[r] = minus_ones(sh->n);
    sh->r_seg[r][0] = INT64_MAX;
    sh->r_seg[r][1] = -1;
}

static inline void widen(int64_t *seg, int64_t seq)
{
    seg[0] = seq < seg[0] ? seq : seg[0];
    seg[1] = seq > seg[1] ? seq : seg[1];
}

/* Row ``r``'s read of element ``e``, of another segment, kept apart. */
static inline void keep_foreign(cq_shadow *sh, int r, int64_t e)
{
    if (!sh->f_seq) {
        sh->f_seq = minus_ones(sh->n);
        sh->f_info = zeros(sh->n);
    }
    sh->f_seq[e] = sh->r_seq[r][e];
    sh->f_info[e] = sh->r_info[r][e];
    widen(sh->f_seg, sh->f_seq[e]);
}

/* A read of element ``e`` recorded in its warp's row (shadow.py ``read``): a read of
 * another segment it replaces is kept apart (``_keep_foreign``). */
static void record_read(cq_shadow *sh, int64_t e, const actor *a, int64_t info)
{
    int r = read_row(sh, a->warp);
    if (sh->glob && sh->r_seq[r][e] >= 0 && sh->r_seq[r][e] != a->seq)
        keep_foreign(sh, r, e);
    sh->r_clock[r][e] = a->vc[a->warp];
    sh->r_info[r][e] = info;
    if (sh->glob)
        sh->r_seq[r][e] = a->seq;
}

/* Actor ``a``'s writes (``write``) or reads of ``sh`` are recorded: the bounds take
 * them in. */
static inline void note(cq_shadow *sh, const actor *a, int write)
{
    int64_t clock = a->vc[a->warp], *top, *seg;
    if (write) {
        sh->w_warps |= 1u << a->warp;
        top = &sh->w_top[a->warp];
        seg = sh->w_seg;
    } else {
        int r = read_row(sh, a->warp);
        top = &sh->r_top[r];
        seg = sh->r_seg[r];
    }
    *top = clock > *top ? clock : *top;
    widen(seg, a->seq);
    sh->stamp++;
}

/* Whether no segment of seg[0]..seg[1] is ``concurrent`` with ``a``: none in its own
 * launch's range nor in that of an async launch still running. */
static inline int apart(const actor *a, const int64_t *seg)
{
    int out = seg[1] < a->lo || seg[0] >= a->hi;
    for (int k = 0; out && k < a->nasync; k++)
        out = seg[1] < a->async[k].lo || seg[0] >= a->async[k].hi;
    return out;
}

/* Whether the entries of segments seg[0]..seg[1] (a global buffer's) whose clocks for
 * ``warp`` are at most ``top`` are all ordered before ``a`` (``ordered`` for each): all
 * of its segment and below its vector clock, or none of its segment nor of one
 * concurrent with it. */
static inline int below(const cq_shadow *sh, const int64_t *seg, int warp, int64_t top,
                        const actor *a)
{
    if (sh->glob && (seg[0] != a->seq || seg[1] != a->seq))
        return (a->seq < seg[0] || a->seq > seg[1]) && apart(a, seg);
    return top <= a->vc[warp];
}

/* Whether the bounds order every entry an access by ``a`` (``write``: of any kind) is
 * checked against before it: then ``unordered`` finds nothing at any element. */
static int bounded(const cq_shadow *sh, const actor *a, int write)
{
    for (uint32_t m = sh->w_warps; m; m &= m - 1)
        if (!below(sh, sh->w_seg, cq_low(m), sh->w_top[cq_low(m)], a))
            return 0;
    if (!write)
        return 1;
    for (int r = 0; r < sh->nrows; r++)
        if (!below(sh, sh->r_seg[r], sh->r_warp[r], sh->r_top[r], a))
            return 0;
    return !sh->f_seq || below(sh, sh->f_seg, 0, 0, a);
}

/* Element ``e`` of ``sh`` accessed by actor ``a`` (``write``: any kind of write): a
 * conflict with an earlier access not ordered before it stops the run (returns 1);
 * else the access is recorded. */
static int unordered(cq_block *blk, const cq_shadow *sh, int64_t e, const actor *a,
                     int write, int64_t info)
{
    if (sh->writes && !ordered(sh, sh->glob ? sh->w_seq[e] : a->seq, sh->w_warp[e],
                               sh->w_clock[e], a) && conflict(blk, sh->w_info[e], info))
        return 1;
    if (!write)
        return 0;
    for (int r = 0; r < sh->nrows; r++)
        if (!ordered(sh, sh->glob ? sh->r_seq[r][e] : a->seq, sh->r_warp[r],
                     sh->r_clock[r][e], a) && conflict(blk, sh->r_info[r][e], info))
            return 1;
    return sh->f_seq && sh->f_seq[e] >= 0 && sh->f_seq[e] != a->seq &&
           concurrent(a, sh->f_seq[e]) && conflict(blk, sh->f_info[e], info);
}

static void record(cq_shadow *sh, int64_t e, const actor *a, int write, int64_t info)
{
    if (!write) {
        record_read(sh, e, a, info);
        return;
    }
    sh->w_clock[e] = a->vc[a->warp];
    sh->w_warp[e] = a->warp;
    sh->w_info[e] = info;
    if (sh->glob)
        sh->w_seq[e] = a->seq;
    sh->writes = 1;
}

static int access(cq_block *blk, cq_shadow *sh, int64_t e, const actor *a, int write,
                  int64_t info)
{
    if (unordered(blk, sh, e, a, write, info))
        return 1;
    record(sh, e, a, write, info);
    return 0;
}

/* The atomics' shadow of ``sh``, made at its first atomic: reads only. */
static cq_shadow *atomics_of(cq_shadow *sh)
{
    if (!sh->atomics) {
        cq_shadow *at = cq_xcalloc(1, sizeof *at);
        at->n = sh->n;
        at->glob = sh->glob;
        memset(at->row_of, -1, sizeof at->row_of);
        sh->atomics = at;
    }
    return sh->atomics;
}

/* Whether an access of element ``e`` of ``sh`` other than an atomic meets an atomic not
 * ordered before it (race.py ``_atomic``). */
static inline int meets_atomic(cq_block *blk, const cq_shadow *sh, int64_t e, const actor *a,
                               int64_t info)
{
    return sh->atomics && unordered(blk, sh->atomics, e, a, 1, info);
}

static void actor_of(cq_block *blk, int x, actor *a)
{
    struct cq_race_block *rb = blk->race;
    a->seq = rb->seq;
    a->lo = rb->lo;
    a->hi = rb->hi;
    a->warp = x;
    a->vc = vc_of(rb, x);
    a->async = blk->call->race->pending;
    a->nasync = blk->kernel < 0 ? blk->call->race->npending : blk->call->race->nbefore;
}

static inline int64_t info_of(const cq_block *blk, int ip, int element_read)
{
    return ((int64_t)(blk->kernel + 1) << 32) | (int64_t)ip << 1 | element_read;
}

static void lock(cq_block *blk, const cq_shadow *sh)
{
    if (blk->call->kg_lock && (!sh || sh->glob))
        pthread_mutex_lock(&blk->call->race->mu);
}

static void unlock(cq_block *blk, const cq_shadow *sh)
{
    if (blk->call->kg_lock && (!sh || sh->glob))
        pthread_mutex_unlock(&blk->call->race->mu);
}

static cq_shadow *shadow_locked(cq_block *blk, cq_buf *b)
{
    if (b->shadow)
        return b->shadow;
    lock(blk, NULL);
    cq_shadow *sh = shadow_of(blk, b);
    unlock(blk, NULL);
    return sh;
}

/* Whether value i of ``a`` and value j of ``b`` (``size`` bytes each) are the same bits. */
static inline int same_bits(const char *a, const char *b, int i, int j, int size)
{
    switch (size) {
    case 1: return ((const uint8_t *)a)[i] == ((const uint8_t *)b)[j];
    case 2: return ((const uint16_t *)a)[i] == ((const uint16_t *)b)[j];
    case 4: return ((const uint32_t *)a)[i] == ((const uint32_t *)b)[j];
    default: return ((const uint64_t *)a)[i] == ((const uint64_t *)b)[j];
    }
}

/* The lanes of ``lanes`` whose values in ``a`` and ``b`` (``size`` bytes each) differ; the
 * other lanes up to the highest are read and not counted. */
static uint32_t changed(uint32_t lanes, const char *a, const char *b, int size)
{
    uint8_t differ[CQ_WARP] = {0};
    int n = cq_span(lanes);
    if (n <= 8) {               /* a few lanes (the host's one): the bytes' stores would */
        uint32_t out = 0;       /* stall the word's load */
        for (uint32_t m = lanes; m; m &= m - 1)
            out |= (uint32_t)!same_bits(a, b, cq_low(m), cq_low(m), size) << cq_low(m);
        return out;
    }
    switch (size) {
#define CHANGED(T) \
        for (int i = 0; i < n; i++) \
            differ[i] = ((const T *)a)[i] != ((const T *)b)[i]; \
        break;
    case 1: CHANGED(uint8_t)
    case 2: CHANGED(uint16_t)
    case 4: CHANGED(uint32_t)
    default: CHANGED(uint64_t)
#undef CHANGED
    }
    return cq_lane_bits((const char *)differ, CQ_WARP) & lanes;
}

/* Offsets increasing with the lane in one buffer (the usual case): no two lanes share
 * an element. */
static int increasing(uint32_t lanes, const cq_buf *one, const int64_t *off)
{
    if (!one)
        return 0;
    if (!(lanes & (lanes + 1))) {   /* lanes 0 to n - 1: each difference negative (the */
        uint64_t down = ~0ull;      /* positions are far below 2^63), without a compare */
        for (int i = 1, n = cq_span(lanes); i < n; i++)
            down &= (uint64_t)(off[i - 1] - off[i]);
        return (int)(down >> 63);
    }
    int prev = -1;
    for (uint32_t m = lanes; m; m &= m - 1) {
        int i = cq_low(m);
        if (prev >= 0 && off[i] <= off[prev])
            return 0;
        prev = i;
    }
    return 1;
}

/* race.py _same_instruction: lanes of one warp that write one element of a buffer that
 * is not a lane's own, storing different values (``vals``) or, updating it, changing it. */
static int same_element(cq_block *blk, uint32_t lanes, cq_buf *one, cq_buf *const *bufs,
                        const int64_t *off, const char *olds, const char *news,
                        const char *vals, int size)
{
    for (uint32_t m = lanes; m; m &= m - 1) {
        int i = cq_low(m);
        cq_buf *bi = one ? one : bufs[i];
        for (uint32_t k = m & (m - 1); k; k &= k - 1) {
            int j = cq_low(k);
            if ((one ? one : bufs[j]) != bi || off[j] != off[i])
                continue;
            int differ = vals ? !same_bits(vals, vals, i, j, size)
                              : !same_bits(olds, news, i, i, size);
            if (differ && storage_of(blk, bi) != CQ_STORAGE_LOCAL)
                return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ async copies in flight */

static int has(const int64_t *pos, int64_t n, int64_t e)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (pos[mid] < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && pos[lo] == e;
}

/* Whether an access (``write``: of any kind) of the elements ``pos`` (``sorted`` or not)
 * meets an async copy in flight on ``sh``: anything meeting a destination, a write
 * meeting a source (race.py ``_inflight``). */
static int meets_inflight(const cq_shadow *sh, const int64_t *pos, int64_t n, int sorted,
                          int write)
{
    for (int k = 0; k < sh->ninflight; k++) {
        const cq_race_copy *c = sh->inflight[k].copy;
        int side = sh->inflight[k].side;
        if (side == 0 && !write)
            continue;
        const int64_t *cp = c->pos[side];
        int64_t cn = c->n[side];
        if (!sorted) {
            for (int64_t j = 0; j < n; j++)
                if (has(cp, cn, pos[j]))
                    return 1;
            continue;
        }
        for (int64_t i = 0, j = 0; i < n && j < cn;) {
            if (pos[i] == cp[j])
                return 1;
            if (pos[i] < cp[j])
                i++;
            else
                j++;
        }
    }
    return 0;
}

typedef struct { int64_t n, cap, *pos; } positions;

static void add_position(positions *p, int64_t e)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 256;
        p->pos = realloc(p->pos, (size_t)p->cap * sizeof(int64_t));
        if (!p->pos)
            abort();
    }
    p->pos[p->n++] = e;
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A warp's access to one buffer at once: whether every earlier access of its lanes'
 * elements is ordered before it (``access``'s checks, without a branch per lane) ... */
static int ordered_all(const cq_shadow *sh, uint32_t lanes, const int64_t *off,
                       const actor *a, int write)
{
    int ok = 1;
    const int64_t *vc = a->vc;
    if (sh->writes) {
        if (sh->glob) {
            for (uint32_t m = lanes; m; m &= m - 1) {
                int64_t e = off[cq_low(m)], s = sh->w_seq[e];
                ok &= s == a->seq ? sh->w_clock[e] <= vc[sh->w_warp[e]] : !concurrent(a, s);
            }
        } else {
            for (uint32_t m = lanes; m; m &= m - 1) {
                int64_t e = off[cq_low(m)];
                ok &= sh->w_clock[e] <= vc[sh->w_warp[e]];
            }
        }
    }
    if (!write)
        return ok;
    for (int r = 0; r < sh->nrows; r++) {
        const int64_t *clock = sh->r_clock[r], *seq = sh->r_seq[r];
        int64_t limit = vc[sh->r_warp[r]];
        for (uint32_t m = lanes; m; m &= m - 1) {
            int64_t e = off[cq_low(m)];
            ok &= !sh->glob || seq[e] == a->seq ? clock[e] <= limit : !concurrent(a, seq[e]);
        }
    }
    for (uint32_t m = lanes; sh->f_seq && m; m &= m - 1) {
        int64_t s = sh->f_seq[off[cq_low(m)]];
        ok &= s < 0 || s == a->seq || !concurrent(a, s);
    }
    return ok;
}

/* ... then recorded, as ``access`` records each ... */
static void record_all(cq_shadow *sh, uint32_t lanes, const int64_t *off, const actor *a,
                       int write, int64_t info)
{
    int64_t clock = a->vc[a->warp], seq = a->seq;
    if (write) {
        int64_t *clocks = sh->w_clock, *infos = sh->w_info, *seqs = sh->w_seq;
        int32_t *warps = sh->w_warp, warp = a->warp;
        for (uint32_t m = lanes; m; m &= m - 1) {
            int64_t e = off[cq_low(m)];
            clocks[e] = clock;
            warps[e] = warp;
            infos[e] = info;
        }
        for (uint32_t m = lanes; sh->glob && m; m &= m - 1)
            seqs[off[cq_low(m)]] = seq;
        sh->writes = 1;
        return;
    }
    int r = read_row(sh, a->warp);
    int64_t *clocks = sh->r_clock[r], *infos = sh->r_info[r], *seqs = sh->r_seq[r];
    for (uint32_t m = lanes; sh->glob && m; m &= m - 1) {   /* reads of other segments kept */
        int64_t e = off[cq_low(m)];
        if (seqs[e] >= 0 && seqs[e] != seq)
            keep_foreign(sh, r, e);
        seqs[e] = seq;
    }
    if (!(lanes & (lanes + 1))) {   /* lanes 0 to n - 1 */
        for (int i = 0, n = cq_span(lanes); i < n; i++) {
            int64_t e = off[i];
            clocks[e] = clock;
            infos[e] = info;
        }
        return;
    }
    for (uint32_t m = lanes; m; m &= m - 1) {
        int64_t e = off[cq_low(m)];
        clocks[e] = clock;
        infos[e] = info;
    }
}

/* ... or, when one is not, lane by lane, for the conflict ``access`` finds. */
static int each_access(cq_block *blk, cq_shadow *sh, uint32_t lanes, const int64_t *off,
                       const actor *a, int write, int64_t info)
{
    for (uint32_t m = lanes; m; m &= m - 1)
        if (access(blk, sh, off[cq_low(m)], a, write, info))
            return 1;
    return 0;
}

/* Whether the access of ``lanes`` of ``w`` to the elements ``off`` of ``sh`` by ``a`` repeats
 * the warp's last one of its kind (``struct repeat``). */
static int repeats(const struct cq_race_block *rb, const cq_warp *w, const cq_shadow *sh,
                   uint32_t lanes, const int64_t *off, const actor *a, int write, int64_t info)
{
    const struct repeat *rp = rb->repeats[w->index];
    if (!rp)
        return 0;
    rp += write;
    if (rp->sh != sh || rp->stamp != sh->stamp || rp->lanes != lanes || rp->info != info ||
        rp->clock != a->vc[a->warp] || rp->seq != a->seq)
        return 0;
    if (!(lanes & (lanes + 1)))     /* lanes 0 to n - 1 */
        return !memcmp(rp->off, off, sizeof(int64_t) * (size_t)cq_span(lanes));
    for (uint32_t m = lanes; m; m &= m - 1)
        if (rp->off[cq_low(m)] != off[cq_low(m)])
            return 0;
    return 1;
}

static void remember(struct cq_race_block *rb, const cq_warp *w, const cq_shadow *sh,
                     uint32_t lanes, const int64_t *off, const actor *a, int write, int64_t info)
{
    if (!rb->repeats[w->index])
        rb->repeats[w->index] = cq_xcalloc(2, sizeof(struct repeat));
    struct repeat *rp = rb->repeats[w->index] + write;
    rp->sh = sh;
    rp->stamp = sh->stamp;
    rp->clock = a->vc[a->warp];
    rp->seq = a->seq;
    rp->info = info;
    rp->lanes = lanes;
    memcpy(rp->off, off, sizeof(int64_t) * (size_t)cq_span(lanes));
}

/* An element access of the lanes ``lanes`` of ``w`` (LOAD, STORE, UPDATE) that
 * succeeded: lane i's element is ``off[i]`` of ``one`` or of ``bufs[i]``. For a write,
 * ``olds`` and ``news`` hold each lane's element before and after (``size`` bytes), and
 * ``vals`` what a STORE stored (NULL for an UPDATE): lanes that leave their element as it
 * was make no write, and lanes that write one element race when they store different
 * values, or, updating it, change it (race.py ``elements``). */
int cq_race_elements(cq_warp *w, const cq_ins *ins, uint32_t lanes, cq_buf *one,
                     cq_buf *const *bufs, const int64_t *off, int write, const char *olds,
                     const char *news, const char *vals, int size)
{
    cq_block *blk = w->blk;
    if (stopped(blk))
        return stop(blk);
    int64_t info = info_of(blk, w->ip, !write);
    if (write) {
        if (!increasing(lanes, one, off) && same_element(blk, lanes, one, bufs, off, olds, news,
                                                         vals, size))
            return stop(blk);
        lanes &= changed(lanes, olds, news, size);
    }
    actor a;
    actor_of(blk, w->index, &a);
    if (one) {
        cq_shadow *sh = shadow_locked(blk, one);
        if (!sh || !lanes)
            return CQ_ST_OK;
        lock(blk, sh);
        if (sh->ninflight || sh->local) {
            int64_t pos[CQ_WARP], n = 0;
            for (uint32_t m = lanes; m; m &= m - 1)
                pos[n++] = off[cq_low(m)];
            int hit = meets_inflight(sh, pos, n, 0, write);
            if (hit || sh->local) {
                unlock(blk, sh);
                return hit ? stop(blk) : CQ_ST_OK;
            }
        }
        int bad = 0;
        for (uint32_t m = lanes; sh->atomics && m && !bad; m &= m - 1)
            bad = meets_atomic(blk, sh, off[cq_low(m)], &a, info);
        if (bad) {
            unlock(blk, sh);
            return stop(blk);
        }
        int many = (lanes & (lanes - 1)) != 0;     /* one lane: as quick element by element */
        if (many && repeats(blk->race, w, sh, lanes, off, &a, write, info)) {
            unlock(blk, sh);
            return CQ_ST_OK;
        }
        int quick = many && bounded(sh, &a, write);
        bad = quick || ordered_all(sh, lanes, off, &a, write)
              ? (record_all(sh, lanes, off, &a, write, info), 0)
              : each_access(blk, sh, lanes, off, &a, write, info);
        note(sh, &a, write);
        if (many && !quick && !bad)
            remember(blk->race, w, sh, lanes, off, &a, write, info);
        unlock(blk, sh);
        return bad ? stop(blk) : CQ_ST_OK;
    }
    for (uint32_t m = lanes; m; m &= m - 1) {
        int i = cq_low(m);
        cq_shadow *sh = shadow_locked(blk, bufs[i]);
        if (!sh)
            continue;
        lock(blk, sh);
        int bad = meets_inflight(sh, &off[i], 1, 1, write);
        if (!bad && !sh->local) {
            bad = meets_atomic(blk, sh, off[i], &a, info) ||
                  access(blk, sh, off[i], &a, write, info);
            note(sh, &a, write);
        }
        unlock(blk, sh);
        if (bad)
            return stop(blk);
    }
    return CQ_ST_OK;
}

/* ATOMIC by the lanes ``lanes`` of ``w`` (lane i's element ``off[i]`` of ``one`` or of
 * ``bufs[i]``): an atomic meets the async copies in flight as a write does and is checked
 * against the plain writes and reads, then recorded with the atomics, never checked
 * against them (race.py ``elements``, ``_atomic``). */
int cq_race_atomic(cq_warp *w, const cq_ins *ins, uint32_t lanes, cq_buf *one,
                   cq_buf *const *bufs, const int64_t *off)
{
    cq_block *blk = w->blk;
    if (stopped(blk))
        return stop(blk);
    int64_t info = info_of(blk, w->ip, 0);
    actor a;
    actor_of(blk, w->index, &a);
    for (uint32_t m = lanes; m; m &= m - 1) {
        int i = cq_low(m);
        cq_shadow *sh = shadow_locked(blk, one ? one : bufs[i]);
        if (!sh)
            continue;
        lock(blk, sh);
        int bad = meets_inflight(sh, &off[i], 1, 1, 1);
        if (!bad && !sh->local) {
            bad = unordered(blk, sh, off[i], &a, 1, info);
            if (!bad)
                record_read(atomics_of(sh), off[i], &a, info);
        }
        unlock(blk, sh);
        if (bad)
            return stop(blk);
    }
    return CQ_ST_OK;
}

/* The elements of the tile of ``b`` at origin ``o`` with extents ``e`` (race.py
 * ``_footprint``), as positions in the buffer ``b`` views (``real``): the part inside
 * ``b``, in its first ``nd`` dimensions (the others whole); under a swizzle of
 * ``swizzle`` bytes grown to whole swizzle blocks of the last dimension, or to the whole
 * buffer when its rows hold no whole blocks; through a reshaped or strided view, the
 * elements of its buffer the box's elements are. ``visit`` sees them a row of the last
 * dimension at a time, ``count`` positions ``step`` apart from ``first``; a nonzero
 * answer stops the walk and is returned. */
typedef struct {
    cq_block *blk;
    cq_shadow *sh;
    const cq_buf *real;
    actor a;
    int write, lane;
    int64_t info;
    void *extra;                /* visit_collect's positions */
    int ordered;                /* visit_access: the bounds order the tile (``bounded``) */
} visit;

static int each_element(const cq_buf *b, const int64_t *o, const int64_t *e, int nd,
                        int swizzle, int (*fn)(visit *, int64_t, int64_t, int64_t), visit *v)
{
    int64_t lo[CQ_MAX_RANK], hi[CQ_MAX_RANK];
    int n = b->ndim;
    for (int d = 0; d < n; d++) {
        lo[d] = 0;
        hi[d] = b->shape[d];
        if (d < nd) {
            lo[d] = o[d] > 0 ? o[d] : 0;
            hi[d] = o[d] + e[d] < b->shape[d] ? o[d] + e[d] : b->shape[d];
        }
        if (hi[d] <= lo[d])
            return 0;
    }
    int64_t block = swizzle && !b->root ? swizzle / cq_width_bytes(b->type) : 0;
    if (block && n && b->shape[n - 1] % block == 0) {
        lo[n - 1] = lo[n - 1] / block * block;
        hi[n - 1] = (hi[n - 1] + block - 1) / block * block;
    } else if (block) {
        for (int d = 0; d < n; d++)
            lo[d] = 0, hi[d] = b->shape[d];
    }
    const cq_buf *real = b->root ? b->root : b;
    int64_t base = b->root && !b->strided ? (int64_t)(b->data - real->data) / real->esize : 0;
    int64_t t[CQ_MAX_RANK];
    memcpy(t, lo, sizeof t);
    int64_t count = n ? hi[n - 1] - lo[n - 1] : 1, step = n && b->strided ? b->step[n - 1] : 1;
    for (;;) {
        int64_t at = b->strided ? b->first : 0;
        for (int d = 0; d < n; d++)
            at = b->strided ? at + t[d] * b->step[d] : at * b->shape[d] + t[d];
        int r = fn(v, base + at, count, step);
        if (r)
            return r;
        int d = n - 2;
        for (; d >= 0; d--) {
            if (++t[d] < hi[d])
                break;
            t[d] = lo[d];
        }
        if (d < 0)
            return 0;
    }
}

/* ``record`` of the elements of a row of a tile whose checks the bounds pass: the
 * loops without a branch per element. */
static void record_row(cq_shadow *sh, int64_t first, int64_t count, int64_t step,
                       const actor *a, int write, int64_t info)
{
    int64_t clock = a->vc[a->warp], seq = a->seq;
    if (write) {
        int64_t *clocks = sh->w_clock, *infos = sh->w_info, *seqs = sh->w_seq;
        int32_t *warps = sh->w_warp, warp = a->warp;
        for (int64_t k = 0, e = first; k < count; k++, e += step) {
            clocks[e] = clock;
            warps[e] = warp;
            infos[e] = info;
        }
        for (int64_t k = 0, e = first; sh->glob && k < count; k++, e += step)
            seqs[e] = seq;
        sh->writes = 1;
        return;
    }
    int r = read_row(sh, a->warp);
    int64_t *clocks = sh->r_clock[r], *infos = sh->r_info[r], *seqs = sh->r_seq[r];
    if (sh->glob) {             /* keep_foreign, its bounds widened once */
        int64_t *fseq = sh->f_seq, *finfo = sh->f_info, lo = sh->f_seg[0], hi = sh->f_seg[1];
        for (int64_t k = 0, e = first; k < count; k++, e += step) {
            int64_t s = seqs[e];
            if (s >= 0 && s != seq) {
                if (!fseq) {
                    keep_foreign(sh, r, e);
                    fseq = sh->f_seq;
                    finfo = sh->f_info;
                }
                fseq[e] = s;
                finfo[e] = infos[e];
                lo = s < lo ? s : lo;
                hi = s > hi ? s : hi;
            }
            seqs[e] = seq;
        }
        sh->f_seg[0] = lo;
        sh->f_seg[1] = hi;
    }
    for (int64_t k = 0, e = first; k < count; k++, e += step) {
        clocks[e] = clock;
        infos[e] = info;
    }
}

static int visit_access(visit *v, int64_t first, int64_t count, int64_t step)
{
    for (int64_t k = 0; v->sh->atomics && k < count; k++)
        if (meets_atomic(v->blk, v->sh, first + k * step, &v->a, v->info))
            return 1;
    if (v->ordered) {
        record_row(v->sh, first, count, step, &v->a, v->write, v->info);
        return 0;
    }
    for (int64_t k = 0; k < count; k++)
        if (access(v->blk, v->sh, first + k * step, &v->a, v->write, v->info))
            return 1;
    return 0;
}

static int tile_meets_inflight(visit *v, const cq_buf *b, const int64_t *o, const int64_t *e,
                               int nd, int swizzle);

/* A tile (``each_element``) that a collective's effect, or lane ``lane``, reads or
 * writes (race.py ``tile``). */
int cq_race_tile(cq_block *blk, const cq_ins *ins, const cq_buf *b, const int64_t *o,
                 const int64_t *e, int nd, int swizzle, int write, int lane)
{
    if (stopped(blk))
        return stop(blk);
    struct cq_race_block *rb = blk->race;
    visit v = {blk, NULL, b->root ? b->root : b, {0}, write, lane, 0, NULL, 0};
    v.sh = shadow_locked(blk, (cq_buf *)v.real);
    if (!v.sh)
        return CQ_ST_OK;
    int x = rb->coll >= 0 ? rb->coll : lane / CQ_WARP;
    int ip = rb->coll >= 0 ? rb->coll_ip : (int)(ins - blk->code->ins);
    actor_of(blk, x, &v.a);
    v.info = info_of(blk, ip, 0);
    lock(blk, v.sh);
    int bad = v.sh->ninflight && tile_meets_inflight(&v, b, o, e, nd, swizzle);
    if (!bad && !v.sh->local) {
        v.ordered = bounded(v.sh, &v.a, write);
        bad = each_element(b, o, e, nd, swizzle, visit_access, &v);
        note(v.sh, &v.a, write);
    }
    unlock(blk, v.sh);
    return bad ? stop(blk) : CQ_ST_OK;
}

/* ------------------------------------------------------------------ async copies */

static int visit_collect(visit *v, int64_t first, int64_t count, int64_t step)
{
    for (int64_t k = 0; k < count; k++)
        add_position((positions *)v->extra, first + k * step);
    return 0;
}

/* The sorted positions of a tile (``each_element``). */
static positions tile_positions(const cq_buf *b, const int64_t *o, const int64_t *e, int nd,
                                int swizzle)
{
    positions p = {0, 0, NULL};
    visit v = {0};
    v.extra = &p;
    each_element(b, o, e, nd, swizzle, visit_collect, &v);
    qsort(p.pos, (size_t)p.n, sizeof(int64_t), by_value);
    return p;
}

static int tile_meets_inflight(visit *v, const cq_buf *b, const int64_t *o, const int64_t *e,
                               int nd, int swizzle)
{
    positions p = tile_positions(b, o, e, nd, swizzle);
    int hit = meets_inflight(v->sh, p.pos, p.n, 1, v->write);
    free(p.pos);
    return hit;
}

/* An async copy issued into handle ``h`` (race.py ``dma_issue``): each side meets the
 * copies in flight on its buffer and is checked against the earlier accesses, then stays
 * in flight there until the copy's first wait records it (``cq_race_copy_waited``). The
 * source's extents are the part the copy reads. */
int cq_race_copy_issue(cq_block *blk, const cq_ins *ins, int32_t h, const cq_buf *src,
                       const int64_t *so, const int64_t *se, int snd, int swz_src,
                       const cq_buf *dst, const int64_t *dO, const int64_t *dD, int dnd,
                       int swz_dst, int lane)
{
    if (stopped(blk))
        return stop(blk);
    struct cq_race_block *rb = blk->race;
    cq_race_copy *c = cq_xcalloc(1, sizeof *c);
    c->next = rb->copies;
    rb->copies = c;
    blk->handles[h].race = c;
    int x = rb->coll >= 0 ? rb->coll : lane / CQ_WARP;
    int ip = rb->coll >= 0 ? rb->coll_ip : (int)(ins - blk->code->ins);
    c->info = info_of(blk, ip, 0);
    for (int side = 0; side < 2; side++) {
        const cq_buf *b = side ? dst : src;
        positions p = side ? tile_positions(dst, dO, dD, dnd, swz_dst)
                           : tile_positions(src, so, se, snd, swz_src);
        if (!p.n)
            continue;
        cq_buf *real = (cq_buf *)(b->root ? b->root : b);
        lock(blk, NULL);
        cq_shadow *sh = shadow_new(blk, real, 1);
        int bad = meets_inflight(sh, p.pos, p.n, 1, side);
        if (!bad && !sh->local) {
            actor a;
            actor_of(blk, x, &a);
            int quick = bounded(sh, &a, side);
            for (int64_t k = 0; k < p.n && !bad && !quick; k++)
                bad = unordered(blk, sh, p.pos[k], &a, side, c->info);
        }
        if (!bad)
            add_inflight(sh, c, side);
        unlock(blk, NULL);
        c->sh[side] = sh;
        c->n[side] = p.n;
        c->pos[side] = p.pos;
        if (bad)
            return stop(blk);
    }
    return CQ_ST_OK;
}

static void land_off(cq_race_copy *c, int side)
{
    cq_shadow *sh = c->sh[side];
    for (int k = 0; k < sh->ninflight; k++)
        if (sh->inflight[k].copy == c && sh->inflight[k].side == side) {
            sh->inflight[k] = sh->inflight[--sh->ninflight];
            return;
        }
}

/* Lane ``lane`` waited the async copy of handle ``h`` (race.py ``dma_wait``): its first
 * wait records its accesses, a collective's at the joined clock of its representative, a
 * lane's own at a clock of its warp only the copy has (the warp ticks before and after);
 * a lane of another warp waiting it later acquires just that. */
void cq_race_copy_waited(cq_block *blk, int32_t h, int lane)
{
    if (blk->handles[h].race)
        complete(blk, blk->handles[h].race, lane);
}

/* ``trigger e after f`` (§10.7): the copy stays in flight for the binding warp until its
 * next trigger hands it to the generation the trigger arrives at (race.py ``dma_bind``). */
void cq_race_copy_bound(cq_block *blk, int32_t h, int lane)
{
    struct cq_race_block *rb = blk->race;
    cq_race_copy *c = blk->handles[h].race;
    int x = lane / CQ_WARP;
    if (!c)
        return;
    for (int k = 0; k < rb->nbound[x]; k++)
        if (rb->bound[x][k] == c)
            return;
    if (rb->nbound[x] == rb->capbound[x]) {
        rb->capbound[x] = rb->capbound[x] ? 2 * rb->capbound[x] : 4;
        rb->bound[x] = realloc(rb->bound[x], (size_t)rb->capbound[x] * sizeof(cq_race_copy *));
        if (!rb->bound[x])
            abort();
    }
    rb->bound[x][rb->nbound[x]++] = c;
}

static void complete(cq_block *blk, cq_race_copy *c, int lane)
{
    struct cq_race_block *rb = blk->race;
    int x = lane / CQ_WARP;
    if (c->done) {
        int64_t *vc = vc_of(rb, x);
        if (rb->coll < 0 && c->done_warp != x && vc[c->done_warp] < c->done_clock)
            vc[c->done_warp] = c->done_clock;
        return;
    }
    if (rb->coll < 0)
        tick(rb, x);
    actor a;
    actor_of(blk, rb->coll >= 0 ? rb->coll : x, &a);
    c->done = 1;
    c->done_warp = a.warp;
    c->done_clock = a.vc[a.warp];
    lock(blk, NULL);
    for (int side = 0; side < 2; side++) {
        if (!c->sh[side])
            continue;
        land_off(c, side);
        if (!c->sh[side]->local) {
            for (int64_t k = 0; k < c->n[side]; k++)
                record(c->sh[side], c->pos[side][k], &a, side, c->info);
            note(c->sh[side], &a, side);
        }
    }
    unlock(blk, NULL);
    if (rb->coll < 0)
        tick(rb, x);
}

static void add_inflight(cq_shadow *sh, cq_race_copy *c, int side)
{
    if (sh->ninflight == sh->capinflight) {
        sh->capinflight = sh->capinflight ? 2 * sh->capinflight : 4;
        sh->inflight = realloc(sh->inflight, (size_t)sh->capinflight * sizeof *sh->inflight);
        if (!sh->inflight)
            abort();
    }
    sh->inflight[sh->ninflight++] = (struct inflight){c, side};
}

/* An mma.load of lane ``lane``'s unit instance read this tile (``each_element``) at the
 * instruction ``ins``: an asynchronous MMA of its statement keeps it in flight. */
void cq_race_mma_loaded(cq_block *blk, const cq_ins *ins, const cq_buf *b, const int64_t *o,
                        const int64_t *e, int nd, int swizzle, int lane)
{
    struct cq_race_block *rb = blk->race;
    cq_buf *real = (cq_buf *)(b->root ? b->root : b);
    if (!blk->call->race->mma_async[blk->kernel + 1] ||
        storage_of(blk, real) == CQ_STORAGE_LOCAL)
        return;
    positions p = tile_positions(b, o, e, nd, swizzle);
    if (!p.n)
        return;
    int ip = rb->coll >= 0 ? rb->coll_ip : (int)(ins - blk->code->ins);
    struct mma_load *l = NULL;
    for (int k = 0; k < rb->nloads && !l; k++)
        if (rb->loads[k].lane == lane && rb->loads[k].ip == ip)
            l = &rb->loads[k];
    if (!l) {
        if (rb->nloads == rb->caploads) {
            rb->caploads = rb->caploads ? 2 * rb->caploads : 8;
            rb->loads = realloc(rb->loads, (size_t)rb->caploads * sizeof *rb->loads);
            if (!rb->loads)
                abort();
        }
        l = &rb->loads[rb->nloads++];
        l->pos = NULL;
    }
    free(l->pos);
    lock(blk, NULL);
    *l = (struct mma_load){lane, ip, shadow_new(blk, real, 1), p.n, p.pos};
    unlock(blk, NULL);
}

/* MMA_ASYNC by lane ``lane``'s unit instance on accumulator ``m`` (race.py
 * ``mma_async``): the tiles its statement's mma.loads read stay in flight as reads until
 * the MMA_WAIT. */
void cq_race_mma_async(cq_block *blk, const cq_ins *ins, int m, int lane)
{
    struct cq_race_block *rb = blk->race;
    const cq_code *code = blk->code;
    int ip = rb->coll >= 0 ? rb->coll_ip : (int)(ins - code->ins);
    for (int k = ip - 1; k >= 0 && code->ins[k].span == code->ins[ip].span; k--) {
        if (code->ins[k].op != CQ_OP_MMA_LOAD)
            continue;
        for (int j = 0; j < rb->nloads; j++) {
            struct mma_load *l = &rb->loads[j];
            if (l->lane != lane || l->ip != k)
                continue;
            {
                cq_race_copy *c = cq_xcalloc(1, sizeof *c);
                c->next = rb->copies;
                rb->copies = c;
                c->info = info_of(blk, ip, 0);
                c->sh[0] = l->sh;
                c->n[0] = l->n;
                c->pos[0] = l->pos;
                lock(blk, NULL);
                add_inflight(l->sh, c, 0);
                unlock(blk, NULL);
                if (rb->nflights == rb->capflights) {
                    rb->capflights = rb->capflights ? 2 * rb->capflights : 8;
                    rb->flights = realloc(rb->flights, (size_t)rb->capflights *
                                          sizeof *rb->flights);
                    if (!rb->flights)
                        abort();
                }
                rb->flights[rb->nflights++] = (struct mma_flight){m, lane, c};
            }
            rb->loads[j] = rb->loads[--rb->nloads];
            break;
        }
    }
}

/* MMA_WAIT of lane ``lane``'s unit instance on accumulator ``m``: the reads of its MMAs
 * count from here, in the order they were issued. */
void cq_race_mma_wait(cq_block *blk, int m, int lane)
{
    struct cq_race_block *rb = blk->race;
    int k = 0;
    for (int j = 0; j < rb->nflights; j++) {
        if (rb->flights[j].m == m && rb->flights[j].lane == lane)
            complete(blk, rb->flights[j].copy, lane);
        else
            rb->flights[k++] = rb->flights[j];
    }
    rb->nflights = k;
}

/* The block's copies, and what of them is still in flight, go with it. */
static void copies_free(cq_block *blk, cq_race_copy *c)
{
    while (c) {
        cq_race_copy *next = c->next;
        if (!c->done) {
            lock(blk, NULL);
            for (int side = 0; side < 2; side++)
                if (c->sh[side])
                    land_off(c, side);
            unlock(blk, NULL);
        }
        free(c->pos[0]);
        free(c->pos[1]);
        free(c);
        c = next;
    }
}

/* The elements the lanes' own copies of one instruction of a warp wrote so far
 * (race.py ``_lane_copy``): (buffer, position) -> lane, open addressing. */
static int lane_copy_at(visit *v, int64_t pos)
{
    struct cq_race_block *rb = v->blk->race;
    if (2 * (rb->lc_n + 1) > rb->lc_cap) {
        int64_t cap = rb->lc_cap ? 2 * rb->lc_cap : 1024;
        lane_copy *old = rb->lc;
        int64_t ncap = rb->lc_cap;
        rb->lc = cq_xcalloc((size_t)cap, sizeof(lane_copy));
        rb->lc_cap = cap;
        rb->lc_n = 0;
        for (int64_t k = 0; k < ncap; k++)
            if (old[k].buf) {
                visit w = *v;
                w.real = old[k].buf;
                w.lane = old[k].lane;
                lane_copy_at(&w, old[k].pos);
            }
        free(old);
    }
    uint64_t h = ((uint64_t)pos * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(uintptr_t)v->real;
    for (int64_t k = (int64_t)(h & (uint64_t)(rb->lc_cap - 1));; k = (k + 1) & (rb->lc_cap - 1)) {
        lane_copy *c = &rb->lc[k];
        if (!c->buf) {
            *c = (lane_copy){v->real, pos, v->lane};
            rb->lc_n++;
            return 0;
        }
        if (c->buf == v->real && c->pos == pos)
            return c->lane != v->lane;
    }
}

static int visit_lane_copy(visit *v, int64_t first, int64_t count, int64_t step)
{
    for (int64_t k = 0; k < count; k++)
        if (lane_copy_at(v, first + k * step))
            return 1;
    return 0;
}

/* A DMA lane ``lane`` makes on its own writes the tile of ``b`` (``each_element``): lanes
 * of one warp whose copies of one instruction write one element race. */
int cq_race_lane_copy(cq_block *blk, const cq_buf *b, const int64_t *o, const int64_t *e,
                      int nd, int swizzle, int lane)
{
    if (stopped(blk))
        return stop(blk);
    struct cq_race_block *rb = blk->race;
    const cq_buf *real = b->root ? b->root : b;
    if (storage_of(blk, real) == CQ_STORAGE_LOCAL)
        return CQ_ST_OK;
    int64_t step = blk->call->steps, warp = lane / CQ_WARP;
    if (rb->lc_step != step || rb->lc_warp != warp) {
        if (rb->lc_n)
            memset(rb->lc, 0, sizeof(lane_copy) * (size_t)rb->lc_cap);
        rb->lc_n = 0;
        rb->lc_step = step;
        rb->lc_warp = warp;
    }
    visit v = {blk, NULL, real, {0}, 1, lane, 0, NULL, 0};
    return each_element(b, o, e, nd, swizzle, visit_lane_copy, &v) ? stop(blk) : CQ_ST_OK;
}

int cq_race_stopped(const cq_call *call)
{
    return call->race && atomic_load(&call->race->stop);
}

int cq_race_in_collective(const cq_block *blk) { return blk->race->coll >= 0; }
