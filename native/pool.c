/* A launch's blocks on several threads (``jobs``; design-native-cuda.md §2.4).
 *
 * Blocks do not communicate (LANGUAGE.md §7.1.1), so a race-free program gives the same
 * results however its blocks interleave. Workers take block indices from an atomic
 * counter, each running its blocks on its own copy of the call (steps, output, fault);
 * the buffers the kernel may write are copied first. When every block has run, the
 * steps add up and the outputs join in row-major order, as the serial engine prints
 * them. A fault, or the step limit, in any block stops the workers: the buffers and the
 * counts are put back and the launch runs again serially, so that the report is the
 * serial engine's (the lowest faulting block in row-major order, its step, its output).
 *
 * Conventions: ``p`` the pool of one launch, ``wc`` a worker's call. Only the round-robin
 * schedule runs in parallel: the random one draws from one stream, block after block. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "cq_engine.h"

#define CHUNK_STEPS (1 << 16)   /* a worker reports its steps and checks for a stop this often */

typedef struct {
    int64_t block;              /* linear index */
    char *text;
    size_t n;
} block_output;

typedef struct {
    struct cq_pool *p;
    cq_call wc;
    block_output *outs;
    int32_t nouts, capouts;
    pthread_t thread;
    cq_position stopped_at;     /* where its block was when the launch was stopped */
    int32_t stopped;
} worker;

/* One saved buffer: where its data lives, and the copy. */
typedef struct {
    cq_buf *buf;
    char *data;
    uint8_t *written;
} saved;

struct cq_pool {
    cq_call *call;
    int32_t nworkers;
    worker *workers;
    atomic_llong next;          /* the next block to start */
    atomic_llong steps, lane_steps;
    atomic_int stop;            /* a fault or the step limit: take no more blocks */
    atomic_int running;
    int64_t budget;             /* steps the launch may take before the limit */
    pthread_mutex_t mu;
    pthread_cond_t done;
    pthread_mutex_t kg;         /* allocating the kernel's global buffers */
    saved *saves;
    int32_t nsaves;
    cq_insts *kglobals;         /* the kernel's global buffers when the launch started */
};

void cq_block_free(cq_block *blk);
cq_block *cq_block_begin(cq_call *call, const int64_t *index);
int cq_run_block(cq_block *blk);

static void index_of(const cq_call *call, int64_t b, int64_t *index)
{
    for (int d = call->launch->ngrid - 1; d >= 0; d--) {
        index[d] = b % call->grid[d];
        b /= call->grid[d];
    }
}

static void keep_output(worker *wk, int64_t b)
{
    cq_call *wc = &wk->wc;
    if (!wc->nout)
        return;
    if (wk->nouts == wk->capouts) {
        wk->capouts = wk->capouts ? 2 * wk->capouts : 16;
        wk->outs = realloc(wk->outs, (size_t)wk->capouts * sizeof(block_output));
        if (!wk->outs)
            abort();
    }
    wk->outs[wk->nouts++] = (block_output){b, wc->out, wc->nout};
    wc->out = NULL;
    wc->nout = wc->capout = 0;
}

/* Where block b (begun at step ``first``) was when the launch was stopped: what the
 * serial engine tells of its running block. */
static void note_stop(worker *wk, cq_block *blk, int64_t b, int64_t first)
{
    cq_call *wc = &wk->wc;
    cq_block *was = wc->blk;
    wc->blk = blk;
    cq_where(wc, &wk->stopped_at);
    wc->blk = was;
    wk->stopped_at.block_number = b;
    wk->stopped_at.block_steps = wc->steps - first;
    wk->stopped = 1;
}

/* Run block b to its end on the worker's call; 0 when it faulted or the launch ran out
 * of steps. */
static int run_one(worker *wk, int64_t b)
{
    struct cq_pool *p = wk->p;
    cq_call *wc = &wk->wc;
    int64_t index[3];
    index_of(wc, b, index);
    int64_t first = wc->steps, start = wc->steps, lanes0 = wc->lane_steps;
    cq_block *blk = cq_block_begin(wc, index);
    int ok = blk != NULL;
    while (ok) {
        wc->slice_end = wc->steps + CHUNK_STEPS;
        int st = cq_run_block(blk);
        int64_t total = atomic_fetch_add(&p->steps, wc->steps - start) + (wc->steps - start);
        atomic_fetch_add(&p->lane_steps, wc->lane_steps - lanes0);
        start = wc->steps;
        lanes0 = wc->lane_steps;
        if (total > p->budget || atomic_load(&p->stop)) {
            if (st == CQ_ST_SLICE)
                note_stop(wk, blk, b, first);
            ok = 0;
        } else if (st == CQ_ST_DONE) {
            ok = cq_check_kernel_end(blk) == CQ_ST_OK;
            break;
        } else if (st != CQ_ST_SLICE)
            ok = 0;
    }
    cq_block_free(blk ? blk : wc->blk);
    wc->blk = NULL;
    if (ok)
        keep_output(wk, b);
    return ok;
}

static void *work(void *arg)
{
    worker *wk = arg;
    struct cq_pool *p = wk->p;
    while (!atomic_load(&p->stop)) {
        int64_t b = atomic_fetch_add(&p->next, 1);
        if (b >= wk->wc.blocks)
            break;
        if (!run_one(wk, b))
            atomic_store(&p->stop, 1);
    }
    pthread_mutex_lock(&p->mu);
    if (atomic_fetch_sub(&p->running, 1) == 1)
        pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Copy every buffer the kernel may write: the host's instances it binds, and the
 * kernel's own global buffers allocated so far. The copies are as large as the program's
 * buffers: 0 where the memory left can not hold them (the launch then runs serially,
 * which needs none, as the reference engine runs it). */
static int save_buffers(struct cq_pool *p)
{
    cq_call *call = p->call;
    const cq_launch *L = call->launch;
    const cq_code *kcode = &call->prog->kernels[L->kernel].code;
    int cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        int n = 0;
        for (int j = 0; j < L->nbuf + kcode->nbuf; j++) {
            cq_insts insts = j < L->nbuf ? call->host->bufs[L->buf[2 * j + 1]]
                                         : call->kglobals[L->kernel][j - L->nbuf];
            int count = j < L->nbuf ? call->prog->host.buf[L->buf[2 * j + 1]].count
                                    : kcode->buf[j - L->nbuf].count;
            for (int k = 0; insts && k < count; k++) {
                cq_buf *b = insts[k];
                int seen = 0;
                for (int q = 0; q < n && pass; q++)
                    seen |= p->saves[q].buf == b;
                if (seen)
                    continue;
                if (pass) {
                    size_t bytes = (size_t)b->count * b->esize;
                    saved *s = &p->saves[n];
                    s->buf = b;
                    s->data = malloc(bytes ? bytes : 1);
                    s->written = b->written ? malloc(b->count ? (size_t)b->count : 1) : NULL;
                    p->nsaves = n + 1;          /* pool_free frees what it holds */
                    if (!s->data || (b->written && !s->written))
                        return 0;
                    memcpy(s->data, b->data, bytes);
                    if (b->written)
                        memcpy(s->written, b->written, (size_t)b->count);
                }
                n++;
            }
        }
        if (!pass) {
            cap = n;
            p->saves = cq_xcalloc((size_t)cap + 1, sizeof(saved));
        }
    }
    p->kglobals = cq_xcalloc((size_t)kcode->nbuf + 1, sizeof(cq_insts));
    memcpy(p->kglobals, call->kglobals[L->kernel], sizeof(cq_insts) * kcode->nbuf);
    return 1;
}

static void restore_buffers(struct cq_pool *p)
{
    cq_call *call = p->call;
    for (int k = 0; k < p->nsaves; k++) {
        cq_buf *b = p->saves[k].buf;
        memcpy(b->data, p->saves[k].data, (size_t)b->count * b->esize);
        if (b->written)
            memcpy(b->written, p->saves[k].written, (size_t)b->count);
    }
    const cq_launch *L = call->launch;
    memcpy(call->kglobals[L->kernel], p->kglobals,
           sizeof(cq_insts) * call->prog->kernels[L->kernel].code.nbuf);
}

static void pool_free(struct cq_pool *p);

/* Start the launch's blocks on ``call->opts.jobs`` threads, but no more threads than
 * blocks. Where the system refuses a thread, the threads already started share the
 * blocks; where it refuses the first, or the memory left can not hold the copies of the
 * buffers, the launch runs serially (``call->serial``). */
void cq_pool_start(cq_call *call)
{
    struct cq_pool *p = cq_xcalloc(1, sizeof *p);
    p->call = call;
    p->nworkers = call->opts.jobs < call->blocks ? call->opts.jobs : (int)call->blocks;
    p->budget = call->opts.max_steps - call->steps;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->done, NULL);
    pthread_mutex_init(&p->kg, NULL);
    if (!save_buffers(p)) {
        pool_free(p);
        call->serial = 1;
        return;
    }
    p->workers = cq_xcalloc((size_t)p->nworkers, sizeof(worker));
    atomic_store(&p->running, p->nworkers);
    for (int k = 0; k < p->nworkers; k++) {
        worker *wk = &p->workers[k];
        wk->p = p;
        wk->wc = *call;             /* the same program, host and buffers; its own counts */
        wk->wc.out = NULL;
        wk->wc.nout = wk->wc.capout = 0;
        wk->wc.steps = wk->wc.lane_steps = 0;
        wk->wc.opts.max_steps = INT64_MAX;   /* the pool counts the launch's steps */
        wk->wc.arena = NULL;
        wk->wc.blk = NULL;
        wk->wc.kg_lock = &p->kg;
        if (pthread_create(&wk->thread, NULL, work, wk)) {
            atomic_fetch_sub(&p->running, p->nworkers - k);
            p->nworkers = k;
            break;
        }
    }
    if (p->nworkers == 0) {
        pool_free(p);
        call->serial = 1;
        return;
    }
    call->pool = p;
}

/* Wait for the workers at most ``ms`` milliseconds: 1 while they still run. */
static int wait_done(struct cq_pool *p, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->running) > 0)
        if (pthread_cond_timedwait(&p->done, &p->mu, &until))
            break;
    int running = atomic_load(&p->running) > 0;
    pthread_mutex_unlock(&p->mu);
    return running;
}

static int by_block(const void *a, const void *b)
{
    int64_t x = ((const block_output *)a)->block, y = ((const block_output *)b)->block;
    return (x > y) - (x < y);
}

/* Join the workers and put their work into the call: arenas (kernel globals live
 * there), and, unless ``failed``, steps and the outputs in row-major order. */
static void finish(struct cq_pool *p, int failed)
{
    cq_call *call = p->call;
    block_output *all = NULL;
    int64_t n = 0, cap = 0;
    for (int k = 0; k < p->nworkers; k++) {
        worker *wk = &p->workers[k];
        pthread_join(wk->thread, NULL);
        for (int j = 0; j < wk->nouts; j++) {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                all = realloc(all, (size_t)cap * sizeof *all);
                if (!all)
                    abort();
            }
            all[n++] = wk->outs[j];
        }
        free(wk->outs);
        free(wk->wc.out);
        cq_arena_join(&call->arena, wk->wc.arena);   /* kernel globals may live there */
    }
    if (n)                      /* no block printed: ``all`` is NULL, which qsort may not take */
        qsort(all, (size_t)n, sizeof *all, by_block);
    for (int64_t j = 0; j < n; j++) {
        if (!failed)
            cq_out_write(call, all[j].text, all[j].n);
        free(all[j].text);
    }
    free(all);
    if (!failed) {
        call->steps += atomic_load(&p->steps);
        call->lane_steps += atomic_load(&p->lane_steps);
        call->blocks_run += call->blocks;
        call->block_number = call->blocks;
    }
}

static void pool_free(struct cq_pool *p)
{
    for (int k = 0; k < p->nsaves; k++) {
        free(p->saves[k].data);
        free(p->saves[k].written);
    }
    free(p->saves);
    free(p->kglobals);
    free(p->workers);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->kg);
    p->call->pool = NULL;
    free(p);
}

/* Wait for the launch on the pool: CQ_ST_SLICE while it runs (``ms`` at most), CQ_ST_DONE
 * when every block ran, or CQ_ST_FAULT when some block faulted or the steps ran out: the
 * buffers are then as they were, for the serial run that follows. */
int cq_pool_wait(cq_call *call, int ms)
{
    struct cq_pool *p = call->pool;
    if (wait_done(p, ms))
        return CQ_ST_SLICE;
    int failed = atomic_load(&p->stop);
    finish(p, failed);
    if (failed)
        restore_buffers(p);
    pool_free(p);
    return failed ? CQ_ST_FAULT : CQ_ST_DONE;
}

/* Stop and join the workers of an abandoned call (an interrupt). */
void cq_pool_abandon(cq_call *call)
{
    struct cq_pool *p = call->pool;
    atomic_store(&p->stop, 1);
    finish(p, 1);
    pool_free(p);
}

static int by_block_number(const void *a, const void *b)
{
    int64_t x = ((const cq_position *)a)->block_number;
    int64_t y = ((const cq_position *)b)->block_number;
    return (x > y) - (x < y);
}

int cq_pool_interrupt(cq_call *call, cq_position *out, int max)
{
    struct cq_pool *p = call->pool;
    if (!p)
        return 0;
    atomic_store(&p->stop, 1);
    finish(p, 1);
    int n = 0;
    for (int k = 0; k < p->nworkers && n < max; k++)
        if (p->workers[k].stopped)
            out[n++] = p->workers[k].stopped_at;
    qsort(out, (size_t)n, sizeof *out, by_block_number);
    pool_free(p);
    return n;
}

/* Progress while the pool runs: the blocks started, and the steps counted so far. */
void cq_pool_where(const cq_call *call, cq_position *out)
{
    struct cq_pool *p = call->pool;
    int64_t started = atomic_load(&p->next);
    out->block_number = started < call->blocks ? started : call->blocks;
    out->steps += atomic_load(&p->steps);
    out->lane_steps += atomic_load(&p->lane_steps);
}
