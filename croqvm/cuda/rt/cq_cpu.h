/* The CPU implementation of the croqvm CUDA runtime (compiled with -DCQ_CPU by the host
 * C++ compiler): the generated .cu runs unchanged, each CUDA thread a fiber.
 *
 * Conventions: `rt` is the one launch in progress (a library runs one launch at a time;
 * the host serialises them), `blk` its current block, `self` the running thread. Blocks
 * run one after another in row-major order of their indices (LANGUAGE.md §7.1.1); the
 * threads of a block run round-robin in lane order, each until it waits or finishes.
 * A cooperative launch (cfg.cooperative, a kernel with a grid barrier, §7.1.4) holds
 * every block at once instead: the blocks take turns in row-major order, each running
 * until none of its threads can move, and the grid barrier completes when every block
 * waits there and nothing else moves, as in the engines. A launch whose kernel triggers
 * across the blocks of a cluster (cfg.cluster, §10.8) holds the blocks of one cluster at
 * once in the same way, the clusters one after another.
 *
 * Every wait is `wait_until`, so the scheduler knows which threads are blocked and on
 * what: a full pass over the live threads in which none did anything but re-check an
 * unmet condition is a deadlock, reported (cq_deadlock_record) rather than hung.
 * The runtime also checks the rules of CUDA that real hardware does not check (named
 * barrier counts, mbarrier counts, cp.async sizes and alignment, full warps for mma):
 * a violation is a bug of the generated code, recorded as a CQ_FAULT_MISUSE fault, and
 * the launch stops there.
 *
 * Semantics reproduced from the PTX ISA and the CUDA programming guide:
 * - __syncthreads (barrier 0) waits for all non-exited threads of the block, except that
 *   a thread of generated code that reached the end of its kernel (cq_kernel_finished)
 *   is still waited for: only one that left early (a yield or a fault) is not. A block
 *   collective that some of its lanes pass by to the end of the kernel is then the
 *   engines' deadlock (LANGUAGE.md §7.4.4), where a GPU would let the others through.
 * - barrier.sync id, count: a warp arrives once all its non-exited threads have arrived
 *   (not necessarily from the same statement) and counts as 32 threads; the barrier
 *   completes when `count` threads have arrived this way.
 * - mbarrier: pending and expected counts and a phase; arrive_drop also lowers the
 *   expected count of later phases. A token is the phase the thread arrived in.
 * - cp.async.bulk.tensor (TMA with a tensor map): the box lands when issued, zeros for
 *   the elements outside the tensor, at the addresses the map's swizzle gives; its bytes
 *   complete on the mbarrier that expect_tx armed (more than announced is a misuse).
 * - cp.async: the copy lands when the issuing thread waits for its group (never
 *   earlier), and the destination reads as 0xFF bytes until then, so a read before the
 *   wait shows up as wrong data.
 * - mma.sync: a warp rendezvous; the last lane to arrive computes the product from the
 *   PTX fragment layouts (cq_mma.h) with the engines' MMA arithmetic (§12.4), so the
 *   results equal the interpreter's bit for bit.
 * - wgmma.mma_async (sm_90a): a warpgroup rendezvous; the last thread to arrive reads A
 *   and B from shared memory by decoding the matrix descriptors as the PTX ISA defines
 *   them (start address, leading and stride byte offsets, swizzle mode) and computes
 *   as for mma.sync. The results land in the accumulator registers at the thread's
 *   wgmma.wait_group for their commit group, never earlier (the registers read NaN or
 *   INT_MIN until then); consecutive wgmmas on one accumulator chain as on hardware. A
 *   wgmma without a wgmma.fence since the thread last waited is a misuse.
 * Fibers never preempt each other, so this mode cannot expose missing fences or data
 * races (the interpreter's race detection covers those).
 */
#ifndef CQ_CPU_H
#define CQ_CPU_H

#include <stdlib.h>
#include <string.h>

#include <stddef.h>

#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "cq_fiber.h"
#include "cq_numerics.h"

#define CQ_KERNEL static
#define CQ_LAUNCH_BOUNDS(...)       /* hints to nvcc (LANGUAGE.md §6.2.5) */
#define CQ_MAXNREG(n)
#define CQ_DEV static inline
#define CQ_HD static inline
#define CQ_OUTLINED static
#define CQ_UNROLL

typedef unsigned long long cq_mbar;
typedef unsigned long long cq_mbar_token;

#include "cq_mma.h"
#include "cq_wgmma.h"

extern "C" {
cq_fault_rec cq_fault_record = {CQ_NO_FAULT, 0, 0, 0, 0, {0}};
cq_deadlock_rec cq_deadlock_record;
cq_print_buf cq_print_state = {0, 0, 0};
unsigned long long cq_step_limit = ~0ull;
volatile int cq_stop_request = 0;  /* set by the host (Ctrl-C): the next loop step faults */
volatile cq_position_rec cq_position;
unsigned long long cq_tma_boxes = 0;     /* tensor-map TMA boxes moved, and wgmmas that */
unsigned long long cq_wgmma_swizzled = 0; /* read a swizzled operand, and arrivals at */
unsigned long long cq_mbar_arrivals = 0;  /* mbarriers (rendezvous): tests see the paths */
}

namespace cq {

enum { WARP = 32, MAX_WARPS = CQ_MAX_BLOCK / WARP, NAMED_BARRIERS = 16,
       DEFAULT_STACK = 64 * 1024, POISON = 0xFF, SMEM_FILL = 0xA5, SMEM_GUARD = 4096,
       WARPGROUP = 128, MAX_WARPGROUPS = CQ_MAX_BLOCK / WARPGROUP, MAX_WGMMA_ND = 128 };

/* A wgmma a thread issued whose results have not landed: its accumulator registers,
   the values they will hold, and the commit group (the thread's count of commits when
   it issued). */
struct pending_wgmma {
  void *d;
  double v[MAX_WGMMA_ND];
  int n;
  bool is_int;
  unsigned group;
};

struct pending_copy {
  unsigned char *dst;
  const unsigned char *src;
  int bytes, src_bytes;
  unsigned group;
};

struct block_state;

struct thread_state {
  cq_fiber_ctx ctx;
  block_state *blk;                /* the block it belongs to */
  unsigned tid;
  bool done;
  bool finished;                   /* reached the end of its kernel (cq_kernel_finished) */
  bool progressed;                 /* did more than re-check an unmet wait since resumed */
  cq_thread_wait wait;
  std::vector<pending_copy> copies; /* cp.async issued and not yet waited */
  unsigned committed;              /* cp.async groups committed so far */
  std::vector<pending_wgmma> wgmmas; /* issued, results not yet landed */
  unsigned wg_committed;           /* wgmma groups committed so far */
  bool wg_fenced;                  /* wgmma.fence since the last wgmma.wait_group */
};

struct named_barrier {
  unsigned count;                  /* 0 while no generation is open */
  unsigned total;                  /* threads arrived: 32 per warp arrived */
  unsigned long long gen;
  unsigned short in_warp[MAX_WARPS]; /* threads of each warp arrived */
  unsigned long long warp_arrivals[MAX_WARPS]; /* arrivals of each warp so far */
};

/* One warp's mma.sync rendezvous; the operands travel in `mma_operands`. */
struct warp_rendezvous {
  unsigned arrived;
  unsigned long long gen;
  const void *shape;               /* the operation the first lane arrived at */
};

/* Every lane's fragments, by fragment position; the last lane to arrive fills d. Kept
   apart from the block state, which is reset for every block, because it is large
   and needs no reset. */
struct mma_operands {
  double a[WARP][16], b[WARP][8], c[WARP][4], d[WARP][4];
  long long ia[WARP][16], ib[WARP][8], ic[WARP][4], id[WARP][4];
};

/* One warpgroup's wgmma rendezvous: the descriptors the first thread gave (every
   thread must give the same), and each thread's accumulator in and out. */
struct wgmma_operands {
  unsigned long long da, db;
  double c[WARPGROUP][MAX_WGMMA_ND], d[WARPGROUP][MAX_WGMMA_ND];
};

struct block_state {
  unsigned idx[3];
  long long linear;
  thread_state *threads;           /* its `size` threads, by lane */
  mma_operands *operands;          /* per warp; the launch's own unless cooperative */
  wgmma_operands *wg_operands;     /* per warpgroup; likewise */
  unsigned size, live;
  unsigned awaited;                /* threads the block barrier waits for: those that have
                                      not exited, and those that finished the kernel */
  unsigned short warp_live[MAX_WARPS];
  unsigned char *smem;
  size_t smem_bytes;
  unsigned bar0_arrived;
  int bar0_site;                   /* the statement the arrived threads wait at */
  unsigned long long bar0_gen;
  named_barrier named[NAMED_BARRIERS];
  warp_rendezvous warps[MAX_WARPS];
  warp_rendezvous groups[MAX_WARPGROUPS];
};

struct launch_state {
  cq_fiber_ctx sched;
  cq_launch_cfg cfg;
  void (*entry)(void **);
  void **args;
  thread_state *threads;           /* cfg.block of them, or cfg.block for every block of a
                                      cooperative launch; stacks kept between launches */
  unsigned nthreads;               /* room in `threads` */
  unsigned nstacks;
  size_t stack_size;
  block_state *blk;
  mma_operands operands[MAX_WARPS];
  wgmma_operands wg_operands[MAX_WARPGROUPS];
  thread_state *self;
  block_state *blocks;             /* a cooperative launch: every block, all resident; a
                                      cluster launch: the blocks of the running cluster */
  unsigned nblocks;
  unsigned grid_arrived;           /* blocks arrived at the grid barrier's open generation */
  unsigned long long grid_gen;     /* generations of the grid barrier completed */
  bool abort;                      /* a misuse was recorded: stop the launch */
  unsigned char *kept_smem;        /* the deadlocked block's shared memory, until the next
                                      launch */
  size_t kept_bytes;
};

static launch_state rt;

static inline unsigned warp_size_of(unsigned w) {
  unsigned left = rt.blk->size - w * WARP;
  return left < (unsigned)WARP ? left : (unsigned)WARP;
}

static inline void yield(bool progressed) {
  rt.self->progressed = progressed;
  cq_fiber_switch_to(&rt.self->ctx, &rt.sched, 0);
}

/* The thread that completes a barrier lets the others go first: the scheduler then
   resumes the released threads in lane order, as the engines run warps (§7.1.2). */
static inline void let_others_run() { yield(true); }

template <class Ready>
static inline void wait_until(int kind, int site, long long a0, long long a1, Ready ready) {
  if (ready()) return;
  thread_state *t = rt.self;
  t->wait.kind = kind;
  t->wait.site = site;
  t->wait.a0 = a0;
  t->wait.a1 = a1;
  yield(true);
  while (!ready()) yield(false);
  t->wait.kind = CQ_WAIT_NONE;
  t->wait.site = -1;
}

static inline void record(int kind, int site, const long long *args, int n) {
  unsigned long long key = ((unsigned long long)rt.blk->linear << 32) | rt.self->tid;
  if (key >= cq_fault_record.key) return;
  cq_fault_record.key = key;
  cq_fault_record.kind = kind;
  cq_fault_record.site = site;
  for (int i = 0; i < 16; i++) cq_fault_record.args[i] = i < n ? args[i] : 0;
}

/* A CUDA rule broken by the generated code: recorded, and this thread never runs
   again; the scheduler ends the launch. */
static inline void misuse(int code, int site, long long a0 = 0, long long a1 = 0) {
  const long long args[3] = {code, a0, a1};
  record(CQ_FAULT_MISUSE, site, args, 3);
  rt.abort = true;
  for (;;) yield(true);
}

static inline long long smem_offset(const void *p) {
  const unsigned char *c = (const unsigned char *)p;
  if (c < rt.blk->smem || c >= rt.blk->smem + rt.blk->smem_bytes) return -1;
  return (long long)(c - rt.blk->smem);
}

static inline void check_smem_object(const void *p, size_t bytes, int site) {
  long long off = smem_offset(p);
  if (off < 0 || (size_t)off + bytes > rt.blk->smem_bytes)
    misuse(CQ_MISUSE_SMEM_CARVE, site, off);
}

/* ------------------------------------------------------------------ barriers */

static inline bool release_block_barrier() {
  block_state *b = rt.blk;
  if (b->bar0_arrived && b->bar0_arrived == b->awaited) {
    b->bar0_arrived = 0;
    b->bar0_gen++;
    return true;
  }
  return false;
}

/* Warp `w` arrives at named barrier `nb` once all its live threads have. */
static inline void named_warp_check(named_barrier *nb, unsigned w, int site) {
  if (!nb->in_warp[w] || nb->in_warp[w] != rt.blk->warp_live[w]) return;
  nb->in_warp[w] = 0;
  nb->warp_arrivals[w]++;
  nb->total += WARP;
  if (nb->total > nb->count) misuse(CQ_MISUSE_BARRIER_OVERFLOW, site, nb->total, nb->count);
  if (nb->total == nb->count) {
    nb->total = 0;
    nb->count = 0;
    nb->gen++;
  }
}

static inline void thread_exit() {
  thread_state *t = rt.self;
  if (!t->copies.empty())
    misuse(CQ_MISUSE_CP_ASYNC_PENDING, -1, (long long)t->copies.size());
  block_state *b = rt.blk;
  unsigned w = t->tid / WARP;
  if (b->warps[w].arrived) misuse(CQ_MISUSE_WARP_PARTIAL, -1, w);
  if (b->groups[t->tid / WARPGROUP].arrived) misuse(CQ_MISUSE_WARP_PARTIAL, -1, w);
  if (!t->wgmmas.empty()) misuse(CQ_MISUSE_WGMMA_PENDING, -1, (long long)t->wgmmas.size());
  t->done = true;
  t->wait.kind = CQ_WAIT_EXITED;
  b->live--;
  b->awaited -= !t->finished;
  b->warp_live[w]--;
  release_block_barrier();
  for (unsigned i = 1; i < NAMED_BARRIERS; i++)
    if (b->named[i].count) named_warp_check(&b->named[i], w, -1);
}

static void fiber_main() {
  cq_fiber_entered(&rt.sched);
  rt.entry(rt.args);
  thread_exit();
  rt.self->progressed = true;
  cq_fiber_switch_to(&rt.self->ctx, &rt.sched, 1);
}

/* ------------------------------------------------------------------ scheduler */

static inline void fill_deadlock_record(block_state *b) {
  cq_deadlock_record.block = b->linear;
  cq_deadlock_record.nthreads = (int)b->size;
  for (unsigned i = 0; i < b->size; i++) {
    cq_thread_wait w = b->threads[i].wait;
    /* counts that change while waiting are read now, when nothing moves any more */
    if (w.kind == CQ_WAIT_BLOCK_BARRIER) {   /* the threads waiting at its statement */
      w.a0 = 0;
      for (unsigned j = 0; j < b->size; j++)
        w.a0 += b->threads[j].wait.kind == CQ_WAIT_BLOCK_BARRIER &&
                b->threads[j].wait.site == w.site;
      w.a1 = b->awaited;
    } else if (w.kind == CQ_WAIT_NAMED_BARRIER) {   /* the count, then the threads arrived */
      w.a1 = (long long)b->named[w.a0].count << 32 | b->named[w.a0].total;
    } else if (w.kind == CQ_WAIT_WARP) {
      w.a0 = w.a1 == WARPGROUP ? b->groups[i / WARPGROUP].arrived : b->warps[i / WARP].arrived;
    }
    cq_deadlock_record.thread[i] = w;
  }
}

static void start_threads(block_state *b) {
  for (unsigned i = 0; i < b->size; i++) {
    thread_state *t = &b->threads[i];
    t->blk = b;
    t->tid = i;
    t->done = false;
    t->finished = false;
    t->progressed = false;
    t->wait.kind = CQ_WAIT_NONE;
    t->wait.site = -1;
    t->wait.a0 = t->wait.a1 = 0;
    t->copies.clear();
    t->committed = 0;
    t->wgmmas.clear();
    t->wg_committed = 0;
    t->wg_fenced = false;
    cq_fiber_prepare(&t->ctx, fiber_main);
  }
}

/* One pass over the block's live threads: whether any did more than re-check a wait. */
static bool run_pass(block_state *b) {
  bool moved = false;
  rt.blk = b;
  if (cq_position.block != b->linear) {
    cq_position.block = b->linear;
    cq_position.block_start = cq_position.steps;
  }
  for (unsigned i = 0; i < b->size && !rt.abort; i++) {
    thread_state *t = &b->threads[i];
    if (t->done) continue;
    rt.self = t;
    cq_fiber_switch_to(&rt.sched, &t->ctx, 0);
    moved |= t->progressed;
  }
  return moved;
}

static int run_block(block_state *b) {
  start_threads(b);
  while (b->live) {
    bool moved = run_pass(b);
    if (rt.abort) return CQ_FAULTED;
    if (!moved) {
      fill_deadlock_record(b);
      return CQ_DEADLOCKED;
    }
  }
  return cq_fault_record.key == CQ_NO_FAULT ? CQ_OK : CQ_FAULTED;
}

static bool overran(const unsigned char *guard, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (guard[i] != SMEM_FILL) return true;
  return false;
}

/* Whether block b wrote into the guard after its shared memory (a misuse of its first
   thread: recorded, and the launch ends). */
static bool smem_overrun(const block_state *b, size_t stride) {
  if (!overran(b->smem + b->smem_bytes, stride - b->smem_bytes)) return false;
  const long long args[3] = {CQ_MISUSE_SMEM_OVERRUN, (long long)b->smem_bytes, 0};
  unsigned long long key = (unsigned long long)b->linear << 32;
  if (key < cq_fault_record.key) {
    cq_fault_record.key = key;
    cq_fault_record.kind = CQ_FAULT_MISUSE;
    cq_fault_record.site = -1;
    for (int i = 0; i < 16; i++) cq_fault_record.args[i] = i < 3 ? args[i] : 0;
  }
  return true;
}

static inline const thread_state *grid_waiter(const block_state *b) {
  for (unsigned i = 0; i < b->size; i++)
    if (b->threads[i].wait.kind == CQ_WAIT_GRID) return &b->threads[i];
  return NULL;
}

/* A cooperative launch: every block resident, taking turns in row-major order, each
   running until none of its threads moves (the engines' order: croqvm/interp/engine.py
   _run_cooperative, _run_clusters). When nothing moves and every block waits at the grid
   barrier, the barrier completes. Otherwise the first block (row-major) with live
   threads none of which waits at the grid barrier is deadlocked by itself and reported
   as such; if every live block waits there, a block finished without reaching the
   barrier, which can then never complete:
   the engines' GRID_FINISHED fault, recorded for the first waiting block's lowest live
   thread at the fault site the barrier's wait names (a1), with the lowest finished
   block's index. */
static int run_grid() {
  for (unsigned i = 0; i < rt.nblocks; i++) start_threads(&rt.blocks[i]);
  /* the first round runs one pass of each block: its prologue, up to the block barrier
     that follows the zeroing of its shared memory (launch_clusters) */
  for (bool first = true;; first = false) {
    bool moved = false, live = false;
    for (unsigned i = 0; i < rt.nblocks && !rt.abort; i++)
      if (rt.blocks[i].live) {
        live = true;
        while (run_pass(&rt.blocks[i]) && !rt.abort) {
          moved = true;
          if (first) break;
        }
      }
    if (rt.abort) return CQ_FAULTED;
    if (!live) return cq_fault_record.key == CQ_NO_FAULT ? CQ_OK : CQ_FAULTED;
    if (moved) continue;
    if (rt.cfg.cooperative && rt.grid_arrived == rt.nblocks) {
      rt.grid_arrived = 0;
      rt.grid_gen++;
      continue;
    }
    block_state *parked = NULL;
    const block_state *finished = NULL;
    for (unsigned i = 0; i < rt.nblocks; i++) {
      block_state *b = &rt.blocks[i];
      if (!b->live) {
        if (!finished) finished = b;
      } else if (!grid_waiter(b)) {
        fill_deadlock_record(b);
        rt.blk = b;
        return CQ_DEADLOCKED;
      } else if (!parked) {
        parked = b;
      }
    }
    if (!finished) {             /* every block waits, none released it: a runtime bug */
      fill_deadlock_record(parked);
      rt.blk = parked;
      return CQ_DEADLOCKED;
    }
    const thread_state *t = parked->threads;
    while (t->done) t++;
    unsigned long long key = ((unsigned long long)parked->linear << 32) | t->tid;
    if (key < cq_fault_record.key) {
      cq_fault_record.key = key;
      cq_fault_record.kind = CQ_FAULT_CHECK;
      cq_fault_record.site = (int)grid_waiter(parked)->wait.a1;
      memset(cq_fault_record.args, 0, sizeof cq_fault_record.args);
      for (int d = 0; d < 3; d++) cq_fault_record.args[d] = finished->idx[d];
    }
    return CQ_FAULTED;
  }
}

static void release_stacks() {
  for (unsigned i = 0; i < rt.nstacks; i++) cq_fiber_stack_free(&rt.threads[i].ctx);
  rt.nstacks = 0;
}

static int reserve_stacks(unsigned n, size_t size) {
  if (size != rt.stack_size || n > rt.nthreads) {
    release_stacks();
    rt.stack_size = size;
  }
  if (n > rt.nthreads) {
    delete[] rt.threads;
    rt.nthreads = n > CQ_MAX_BLOCK ? n : CQ_MAX_BLOCK;
    rt.threads = new (std::nothrow) thread_state[rt.nthreads]();
    if (!rt.threads) {
      rt.nthreads = 0;
      return -1;
    }
  }
  for (; rt.nstacks < n; rt.nstacks++)
    if (cq_fiber_stack_alloc(&rt.threads[rt.nstacks].ctx, size) != 0) return -1;
  return 0;
}

}  // namespace cq

namespace cq {
static void tma_forget(const unsigned char *smem, size_t bytes);

/* Block `linear` of the launch: its index, threads and shared memory (filled as CUDA
   leaves it undefined), with no TMA copy in flight there. */
static void init_block(block_state *b, unsigned long long linear, thread_state *threads,
                       unsigned char *smem, size_t smem_alloc) {
  const cq_launch_cfg *cfg = &rt.cfg;
  memset(b, 0, sizeof *b);
  b->idx[0] = (unsigned)(linear / ((unsigned long long)cfg->grid[1] * cfg->grid[2]));
  b->idx[1] = (unsigned)(linear / cfg->grid[2] % cfg->grid[1]);
  b->idx[2] = (unsigned)(linear % cfg->grid[2]);
  b->linear = (long long)linear;
  b->threads = threads;
  b->operands = rt.operands;
  b->wg_operands = rt.wg_operands;
  b->size = b->live = b->awaited = cfg->block;
  for (unsigned w = 0; w * WARP < cfg->block; w++)
    b->warp_live[w] = cfg->block - w * WARP < (unsigned)WARP ? cfg->block - w * WARP : WARP;
  b->smem = smem;
  b->smem_bytes = (size_t)cfg->smem_bytes;
  memset(smem, SMEM_FILL, smem_alloc);
  tma_forget(smem, smem_alloc);
}

/* The blocks a cooperative or cluster launch keeps resident together, each with threads,
   shared memory and mma operands of its own. */
struct resident_set {
  unsigned char *smem;
  mma_operands *ops;
  wgmma_operands *wg;
};

/* The warpgroups of a block of the launch: each resident block keeps the wgmma operands
   of as many (256 KiB each at the widest N). */
static unsigned block_warpgroups() { return (rt.cfg.block + WARPGROUP - 1) / WARPGROUP; }

static int resident_alloc(resident_set *r, unsigned n, size_t smem_alloc) {
  rt.nblocks = n;
  rt.blocks = (block_state *)calloc(n, sizeof(block_state));
  r->smem = (unsigned char *)aligned_alloc(128, (size_t)n * smem_alloc);
  r->ops = (mma_operands *)calloc((size_t)n * MAX_WARPS, sizeof(mma_operands));
  r->wg = (wgmma_operands *)calloc((size_t)n * block_warpgroups(), sizeof(wgmma_operands));
  return rt.blocks && r->smem && r->ops && r->wg ? CQ_OK : CQ_ERR_NOMEM;
}

/* Resident block i is the grid's block `linear`. */
static void resident_place(const resident_set *r, unsigned i, unsigned long long linear,
                           size_t smem_alloc) {
  init_block(&rt.blocks[i], linear, rt.threads + (size_t)i * rt.cfg.block,
             r->smem + (size_t)i * smem_alloc, smem_alloc);
  rt.blocks[i].operands = r->ops + (size_t)i * MAX_WARPS;
  rt.blocks[i].wg_operands = r->wg + (size_t)i * block_warpgroups();
}

/* Runs the placed blocks together (run_grid), then checks each one's shared memory. */
static int resident_run(size_t smem_alloc) {
  int status = run_grid();
  for (unsigned i = 0; i < rt.nblocks && status == CQ_OK; i++)
    if (smem_overrun(&rt.blocks[i], smem_alloc)) status = CQ_FAULTED;
  return status;
}

/* Frees the set, keeping the deadlocked block's shared memory for the report. */
static int resident_free(resident_set *r, int status, size_t smem_alloc) {
  if (status == CQ_DEADLOCKED) {     /* run_grid left rt.blk at the deadlocked block */
    rt.kept_bytes = (size_t)rt.cfg.smem_bytes;
    rt.kept_smem = (unsigned char *)malloc(smem_alloc ? smem_alloc : 1);
    if (rt.kept_smem) memcpy(rt.kept_smem, rt.blk->smem, smem_alloc);
  }
  free(rt.blocks);
  free(r->smem);
  free(r->ops);
  free(r->wg);
  rt.blocks = NULL;
  rt.nblocks = 0;
  return status;
}

/* A cooperative launch: every block of the grid resident, run together. */
static int launch_grid(size_t smem_alloc) {
  unsigned n = rt.cfg.grid[0] * rt.cfg.grid[1] * rt.cfg.grid[2];
  rt.grid_arrived = 0;
  rt.grid_gen = 0;
  resident_set r;
  int status = resident_alloc(&r, n, smem_alloc);
  if (status == CQ_OK) {
    for (unsigned i = 0; i < n; i++) resident_place(&r, i, i, smem_alloc);
    status = resident_run(smem_alloc);
  }
  return resident_free(&r, status, smem_alloc);
}

/* A launch whose kernel triggers across the blocks of a cluster (LANGUAGE.md §10.8): the
   clusters one after another in row-major order of their indices, the blocks of each
   resident together, in row-major order, and run as run_grid runs a cooperative
   launch's: a round in which no thread of the cluster moved is a deadlock of its first
   live block, as in the engines (croqvm/interp/engine.py _run_clusters). A block's
   prologue zeroes its shared memory before its first block barrier, which every thread
   of the block reaches in the first round's one pass of each block, and no thread
   triggers before passing it: so no arrival from another block lands before the
   zeroing. */
static int launch_clusters(size_t smem_alloc) {
  const unsigned *cl = rt.cfg.cluster, *grid = rt.cfg.grid;
  unsigned n = cl[0] * cl[1] * cl[2], across[3];
  for (int d = 0; d < 3; d++) across[d] = grid[d] / cl[d];
  unsigned long long clusters = (unsigned long long)across[0] * across[1] * across[2];
  resident_set r;
  int status = resident_alloc(&r, n, smem_alloc);
  for (unsigned long long c = 0; c < clusters && status == CQ_OK; c++) {
    unsigned long long origin[3] = {c / ((unsigned long long)across[1] * across[2]),
                                    c / across[2] % across[1], c % across[2]};
    for (unsigned i = 0; i < n; i++) {
      unsigned offset[3] = {i / (cl[1] * cl[2]), i / cl[2] % cl[1], i % cl[2]};
      unsigned long long linear = 0;
      for (int d = 0; d < 3; d++) linear = linear * grid[d] + origin[d] * cl[d] + offset[d];
      resident_place(&r, i, linear, smem_alloc);
    }
    status = resident_run(smem_alloc);
  }
  return resident_free(&r, status, smem_alloc);
}
}  // namespace cq

namespace cq {
static int launch(void (*entry)(void **), void **args, const cq_launch_cfg *cfg);
}

/* Runs `entry(args)` on every thread of every block. Not reentrant. The threads' stacks
   go when the launch ends: each kernel's library has a runtime of its own, and a process
   that keeps many loaded (a test generating hundreds of kernels) would otherwise keep two
   memory maps per thread of each (a stack and its guard page) until it reached the
   system's limit (vm.max_map_count, 65,530) and failed. */
extern "C" int cq_cpu_launch(void (*entry)(void **), void **args, const cq_launch_cfg *cfg) {
  int status = cq::launch(entry, args, cfg);
  cq::release_stacks();
  return status;
}

int cq::launch(void (*entry)(void **), void **args, const cq_launch_cfg *cfg) {
  using namespace cq;
  free(rt.kept_smem);
  rt.kept_smem = NULL;
  rt.kept_bytes = 0;
  cq_fault_record.key = CQ_NO_FAULT;
  cq_fault_record.lock = 0;
  cq_print_state.used = 0;
  cq_position.steps = 0;
  cq_position.block_start = 0;
  cq_position.block = -1;
  cq_position.lane = 0;
  cq_position.site = -1;
  if (cfg->block < 1 || cfg->block > CQ_MAX_BLOCK || !cfg->grid[0] || !cfg->grid[1] ||
      !cfg->grid[2])
    return CQ_ERR_CONFIG;
  unsigned long long blocks = (unsigned long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  if (cfg->cooperative && blocks * cfg->block > 0xFFFFFFFFull) return CQ_ERR_CONFIG;
  unsigned cl[3], cluster = 1;           /* an extent of 0 counts as 1 */
  for (int d = 0; d < 3; d++) {
    cl[d] = cfg->cluster[d] ? cfg->cluster[d] : 1;
    if (cfg->grid[d] % cl[d]) return CQ_ERR_CONFIG;
    cluster *= cl[d];
  }
  if (cluster > 1 && cfg->cooperative) return CQ_ERR_CONFIG;
  size_t stack = cfg->stack_bytes ? (size_t)cfg->stack_bytes : (size_t)DEFAULT_STACK;
  unsigned threads = cfg->cooperative ? (unsigned)(blocks * cfg->block) : cluster * cfg->block;
  if (reserve_stacks(threads, stack) != 0) return CQ_ERR_NOMEM;
  rt.cfg = *cfg;
  for (int d = 0; d < 3; d++) rt.cfg.cluster[d] = cl[d];
  rt.entry = entry;
  rt.args = args;
  rt.abort = false;
  size_t smem_alloc = ((size_t)cfg->smem_bytes + 127) / 128 * 128;
  /* Each block's shared memory is followed by a guard: on a GPU a write past the
     launch's shared memory is an illegal address, here it would go unseen. */
  smem_alloc += SMEM_GUARD;
  if (cfg->cooperative || cluster > 1) {
    int status = cfg->cooperative ? launch_grid(smem_alloc) : launch_clusters(smem_alloc);
    rt.blk = NULL;
    return status;
  }
  block_state *b = (block_state *)calloc(1, sizeof(block_state));
  unsigned char *smem = (unsigned char *)aligned_alloc(128, smem_alloc);
  if (!b || !smem) {
    free(b);
    free(smem);
    return CQ_ERR_NOMEM;
  }
  int status = CQ_OK;
  for (unsigned long long i = 0; i < blocks && status == CQ_OK; i++) {
    init_block(b, i, rt.threads, smem, smem_alloc);
    status = run_block(b);
    if (status != CQ_DEADLOCKED && smem_overrun(b, smem_alloc)) status = CQ_FAULTED;
  }
  rt.blk = NULL;
  if (status == CQ_DEADLOCKED) {
    rt.kept_smem = smem;
    rt.kept_bytes = (size_t)cfg->smem_bytes;
  } else {
    free(smem);
  }
  free(b);
  return status;
}

/* The shared memory of the block the last launch found deadlocked. */
extern "C" const unsigned char *cq_cpu_deadlock_smem(unsigned long long *bytes) {
  *bytes = cq::rt.kept_bytes;
  return cq::rt.kept_smem;
}

namespace cq {
/* cq_entry_<kernel>(args): args[i] points at parameter i, as cuLaunchKernel takes them. */
template <class... P, size_t... I>
static inline void call_unpacked(void (*f)(P...), void **args, std::index_sequence<I...>) {
  f(*static_cast<std::decay_t<P> *>(args[I])...);
}
template <class... P> static inline void call_with_args(void (*f)(P...), void **args) {
  call_unpacked(f, args, std::index_sequence_for<P...>{});
}
}  // namespace cq

/* Names and values of every enum constant, and the sizes and field offsets of the
   records, for the host's check of its ctypes mirror (croqvm/cuda/abi.py). */
struct cq_abi_entry {
  const char *name;
  long long value;
};
#define CQ_ABI_ENUM(name, value, ...) {#name, name},
#define CQ_ABI_SIZE(type) {"sizeof " #type, (long long)sizeof(type)},
#define CQ_ABI_FIELD(type, field) {#type "." #field, (long long)offsetof(type, field)},
extern "C" const cq_abi_entry cq_abi_table[] = {
    CQ_FAULT_KINDS(CQ_ABI_ENUM) CQ_MISUSES(CQ_ABI_ENUM) CQ_WAIT_KINDS(CQ_ABI_ENUM)
    CQ_STATUSES(CQ_ABI_ENUM)
    CQ_ABI_SIZE(cq_fault_rec) CQ_ABI_FIELD(cq_fault_rec, key) CQ_ABI_FIELD(cq_fault_rec, kind)
    CQ_ABI_FIELD(cq_fault_rec, site) CQ_ABI_FIELD(cq_fault_rec, args)
    CQ_ABI_SIZE(cq_thread_wait) CQ_ABI_FIELD(cq_thread_wait, kind)
    CQ_ABI_FIELD(cq_thread_wait, site) CQ_ABI_FIELD(cq_thread_wait, a0)
    CQ_ABI_FIELD(cq_thread_wait, a1)
    CQ_ABI_SIZE(cq_deadlock_rec) CQ_ABI_FIELD(cq_deadlock_rec, block)
    CQ_ABI_FIELD(cq_deadlock_rec, nthreads) CQ_ABI_FIELD(cq_deadlock_rec, thread)
    CQ_ABI_SIZE(cq_print_buf) CQ_ABI_FIELD(cq_print_buf, used) CQ_ABI_FIELD(cq_print_buf, cap)
    CQ_ABI_FIELD(cq_print_buf, data)
    CQ_ABI_SIZE(cq_launch_cfg) CQ_ABI_FIELD(cq_launch_cfg, grid) CQ_ABI_FIELD(cq_launch_cfg, block)
    CQ_ABI_FIELD(cq_launch_cfg, smem_bytes) CQ_ABI_FIELD(cq_launch_cfg, stack_bytes)
    CQ_ABI_FIELD(cq_launch_cfg, cooperative) CQ_ABI_FIELD(cq_launch_cfg, cluster)
    CQ_ABI_SIZE(cq_position_rec) CQ_ABI_FIELD(cq_position_rec, steps)
    CQ_ABI_FIELD(cq_position_rec, block_start) CQ_ABI_FIELD(cq_position_rec, block)
    CQ_ABI_FIELD(cq_position_rec, lane) CQ_ABI_FIELD(cq_position_rec, site)
    CQ_ABI_SIZE(cq_tensor_map) CQ_ABI_FIELD(cq_tensor_map, base) CQ_ABI_FIELD(cq_tensor_map, dims)
    CQ_ABI_FIELD(cq_tensor_map, row_bytes) CQ_ABI_FIELD(cq_tensor_map, box)
    CQ_ABI_FIELD(cq_tensor_map, elem) CQ_ABI_FIELD(cq_tensor_map, swizzle)
    CQ_ABI_FIELD(cq_tensor_map, ok)
    {"CQ_NO_FAULT", (long long)CQ_NO_FAULT}, {"CQ_MAX_BLOCK", CQ_MAX_BLOCK},
    {0, 0}};
#undef CQ_ABI_ENUM
#undef CQ_ABI_SIZE
#undef CQ_ABI_FIELD

/* The text of each misuse code, for the host's internal-error message. */
#define CQ_MISUSE_TEXT(name, value, text) {text, name},
extern "C" const cq_abi_entry cq_misuse_texts[] = {CQ_MISUSES(CQ_MISUSE_TEXT){0, 0}};
#undef CQ_MISUSE_TEXT

/* ====================================================================== the cq_* API */

CQ_DEV int cq_lane() { return (int)cq::rt.self->tid; }
CQ_DEV int cq_block_size() { return (int)cq::rt.cfg.block; }
CQ_DEV int cq_block_idx(int d) { return (int)cq::rt.blk->idx[d]; }
CQ_DEV int cq_grid_dim(int d) { return (int)cq::rt.cfg.grid[d]; }
CQ_DEV unsigned char *cq_smem() { return cq::rt.blk->smem; }
/* the shared window address: the offset in the block's shared memory */
CQ_DEV unsigned cq_smem_addr(const void *p) { return (unsigned)cq::smem_offset(p); }
CQ_DEV unsigned cq_smem_bytes() { return (unsigned)cq::rt.blk->smem_bytes; }

CQ_DEV void cq_fence_block() {}
CQ_DEV void cq_fence_global() {}

/* A loop's next iteration (of the loop whose step-limit fault is `site`) is past the
   step limit, or the host asked the run to stop; the step is where the launch is. */
CQ_DEV bool cq_steps_over(unsigned long long steps, unsigned long long limit, int site) {
  if (cq_stop_request) return true;
  cq_position.steps++;
  cq_position.lane = (int)cq::rt.self->tid;
  cq_position.site = site;
  return steps > limit;
}

CQ_DEV void cq_fault_n(int site, const long long *args, int n) {
  cq::record(CQ_FAULT_CHECK, site, args, n);
}

/* cq_fault_n of N - 1 values (the last element is a placeholder), as on the GPU. */
template <int N> CQ_DEV void cq_fault_values(int site, const long long (&args)[N]) {
  cq_fault_n(site, args, N - 1);
}

CQ_DEV unsigned cq_atomic_or(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old | v;
  return old;
}
CQ_DEV unsigned cq_atomic_and(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old & v;
  return old;
}
CQ_DEV unsigned cq_popc(unsigned v) { return (unsigned)__builtin_popcount(v); }
CQ_DEV unsigned cq_atomic_cas(unsigned *p, unsigned expect, unsigned v) {
  unsigned old = *p;
  if (old == expect) *p = v;
  return old;
}
CQ_DEV unsigned cq_atomic_add(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}

/* A lane's own memory of a size known at run time. */
CQ_DEV void *cq_malloc(unsigned long long bytes) { return malloc(bytes); }
CQ_DEV void cq_free(void *p) { free(p); }

/* The thread reached the end of its kernel: a block barrier it has not arrived at goes
   on waiting for it, as the engines' collectives do (§7.4.4). */
CQ_DEV void cq_kernel_finished() { cq::rt.self->finished = true; }

/* The thread ends here, as when it returns from the kernel. */
CQ_DEV void cq_thread_exit() {
  cq::thread_exit();
  cq::rt.self->progressed = true;
  cq_fiber_switch_to(&cq::rt.self->ctx, &cq::rt.sched, 1);
}

/* Appends one printed record (cq_abi.h); the buffer grows as needed. Nothing is
   printed once a fault is recorded: the engines stop at the first one. */
CQ_DEV void cq_print(int fmt, int n, const unsigned long long *values) {
  cq_print_buf *pb = &cq_print_state;
  if (cq_fault_record.key != CQ_NO_FAULT) return;
  if (pb->used + n + 1 > pb->cap) {
    unsigned long long cap = pb->cap ? pb->cap : 4096;
    while (cap < pb->used + n + 1) cap *= 2;
    unsigned long long *grown =
        (unsigned long long *)realloc(pb->data, cap * sizeof(unsigned long long));
    if (!grown) {
      pb->used += n + 1;
      return;
    }
    pb->data = grown;
    pb->cap = cap;
  }
  pb->data[pb->used] = (unsigned long long)fmt << 32 | 0x80000000u | (unsigned)n;
  for (int i = 0; i < n; i++) pb->data[pb->used + 1 + i] = values[i];
  pb->used += n + 1;
}

CQ_DEV void cq_sync_block(int site) {
  using namespace cq;
  block_state *b = rt.blk;
  /* A collective is a rendezvous of one statement (LANGUAGE.md §7.4): threads at the
     block barrier of another wait for their own, which never completes, and the engines'
     deadlock is reported. (A GPU pairs them on barrier 0; docs/CUDA.md.) */
  if (b->bar0_arrived && b->bar0_site != site)
    wait_until(CQ_WAIT_BLOCK_BARRIER, site, 0, 0, [] { return false; });
  unsigned long long gen = b->bar0_gen;
  b->bar0_site = site;
  b->bar0_arrived++;
  if (release_block_barrier()) let_others_run();
  wait_until(CQ_WAIT_BLOCK_BARRIER, site, 0, 0, [=] { return b->bar0_gen != gen; });
}

namespace cq {
/* The thread arrives at named barrier `id` (barrier{.cta}: its warp's arrival, 32
   threads, is marked once every live thread of the warp has arrived); returns the
   generation it arrived in. */
static inline unsigned long long named_arrive(int id, int count, int site) {
  block_state *b = rt.blk;
  if (id < 1 || id >= NAMED_BARRIERS) misuse(CQ_MISUSE_BARRIER_ID, site, id);
  if (count <= 0 || count % WARP || (unsigned)count > (b->size + WARP - 1) / WARP * WARP)
    misuse(CQ_MISUSE_BARRIER_COUNT, site, count);
  named_barrier *nb = &b->named[id];
  if (!nb->count) nb->count = (unsigned)count;
  else if (nb->count != (unsigned)count) misuse(CQ_MISUSE_BARRIER_MIXED, site, nb->count, count);
  unsigned long long gen = nb->gen;
  nb->in_warp[rt.self->tid / WARP]++;
  named_warp_check(nb, rt.self->tid / WARP, site);
  return gen;
}
}  // namespace cq

CQ_DEV void cq_sync_named(int id, int count, int site) {
  using namespace cq;
  unsigned long long gen = named_arrive(id, count, site);
  named_barrier *nb = &rt.blk->named[id];
  wait_until(CQ_WAIT_NAMED_BARRIER, site, id, 0, [=] { return nb->gen != gen; });
}

/* barrier.arrive: like barrier.sync, the thread waits for the live threads of its warp,
   but not for the other warps. */
CQ_DEV void cq_arrive_named(int id, int count, int site) {
  using namespace cq;
  unsigned w = rt.self->tid / WARP;
  named_barrier *nb = &rt.blk->named[id < 1 || id >= NAMED_BARRIERS ? 0 : id];
  unsigned long long mine = nb->warp_arrivals[w];
  named_arrive(id, count, site);
  wait_until(CQ_WAIT_NAMED_BARRIER, site, id, 0, [=] { return nb->warp_arrivals[w] != mine; });
}

/* The engines' named barriers (LANGUAGE.md §6.8) as generated code uses them: a count
   other than the one the barrier's current phase began with is recorded as the fault of
   `fault_site` (the thread then leaves: false), where hardware would misbehave. */
namespace cq {
static inline bool named_count_ok(int id, int count, int fault_site) {
  const named_barrier *nb = &rt.blk->named[id];
  if (!nb->count || nb->count == (unsigned)count) return true;
  const long long args[3] = {id, count, (long long)nb->count};
  cq_fault_n(fault_site, args, 3);
  return false;
}
}  // namespace cq

CQ_DEV bool cq_bar_sync(int id, int count, int site, int fault_site) {
  if (!cq::named_count_ok(id, count, fault_site)) return false;
  cq_sync_named(id, count, site);
  return true;
}

CQ_DEV bool cq_bar_arrive(int id, int count, int site, int fault_site) {
  if (!cq::named_count_ok(id, count, fault_site)) return false;
  cq_arrive_named(id, count, site);
  return true;
}

/* mbarrier: bits 0-20 pending arrivals, 21-41 expected arrivals, 42-63 phase. */
namespace cq {
enum { MBAR_BITS = 21 };
static const unsigned long long MBAR_MASK = (1ull << MBAR_BITS) - 1;
static const unsigned MBAR_MAX = (1u << 20) - 1;   /* PTX: expected count 1 .. 2^20 - 1 */
static inline unsigned long long mbar_pack(unsigned long long pending,
                                           unsigned long long expected,
                                           unsigned long long phase) {
  return pending | expected << MBAR_BITS | phase << (2 * MBAR_BITS);
}
static inline unsigned long long mbar_phase(cq_mbar v) { return v >> (2 * MBAR_BITS); }

/* One arrival; `drop` also leaves every later phase. Returns the phase arrived in. */
static inline cq_mbar_token mbar_arrive(cq_mbar *bar, bool drop) {
  check_smem_object(bar, sizeof *bar, -1);
  cq_mbar v = *bar;
  unsigned long long pending = v & MBAR_MASK, expected = (v >> MBAR_BITS) & MBAR_MASK;
  unsigned long long phase = mbar_phase(v);
  if (!pending || !expected) misuse(CQ_MISUSE_MBAR_EMPTY, -1, smem_offset(bar));
  pending--;
  if (drop) expected--;
  if (!pending) {
    pending = expected;
    *bar = mbar_pack(pending, expected, phase + 1);
    if (!drop) let_others_run();
  } else {
    *bar = mbar_pack(pending, expected, phase);
  }
  return phase;
}
}  // namespace cq

CQ_DEV void cq_mbar_init(cq_mbar *bar, unsigned count) {
  using namespace cq;
  check_smem_object(bar, sizeof *bar, -1);
  if (count < 1 || count > MBAR_MAX) misuse(CQ_MISUSE_MBAR_COUNT, -1, count);
  *bar = mbar_pack(count, count, 0);
}

CQ_DEV cq_mbar_token cq_mbar_arrive(cq_mbar *bar) {
  cq_mbar_arrivals++;
  return cq::mbar_arrive(bar, false);
}
CQ_DEV void cq_mbar_arrive_drop(cq_mbar *bar) { cq::mbar_arrive(bar, true); }

CQ_DEV void cq_mbar_wait(cq_mbar *bar, cq_mbar_token token, int site) {
  using namespace cq;
  wait_until(CQ_WAIT_MBARRIER, site, smem_offset(bar), (long long)token,
             [=] { return mbar_phase(*bar) != token; });
}

/* Counter events (LANGUAGE.md §10.3): `*arrivals` counts every trigger of the slot;
   generation g has completed once ready + arrivals / need > g. A lane's `*waits` is
   the number of generations it has waited for. */
CQ_DEV void cq_event_trigger(unsigned *arrivals) { (*arrivals)++; }

/* A lane binding TMA copies to an event slot adds their barriers to the slot's set
   (§10.7), before its arrival; the set only grows. */
CQ_DEV void cq_landings_publish(unsigned long long *landings, unsigned long long bars) {
  cq::check_smem_object(landings, sizeof *landings, -1);
  *landings |= bars;
}

CQ_DEV void cq_event_wait(const unsigned *arrivals, unsigned need, unsigned ready,
                          unsigned *waits, int site) {
  using namespace cq;
  unsigned want = *waits;
  wait_until(CQ_WAIT_EVENT, site, smem_offset(arrivals), want,
             [=] { return ready + (need ? *arrivals / need : 0) > want; });
  *waits = want + 1;
}

/* A parity wait (LANGUAGE.md §10.6) for generation `gen`: it passes while the slot's
   completed count has the parity of gen + 1, as an mbarrier parity wait does. */
CQ_DEV void cq_event_wait_parity(const unsigned *arrivals, unsigned need, unsigned ready,
                                 unsigned gen, int site) {
  using namespace cq;
  wait_until(CQ_WAIT_EVENT, site, smem_offset(arrivals), gen,
             [=] { return ((ready + (need ? *arrivals / need : 0)) & 1u) != (gen & 1u); });
}

/* trigger.cluster (LANGUAGE.md §10.8): one arrival at the slot at the same place in the
   shared memory of every block of the cluster, in the order of its blocks. */
CQ_DEV unsigned cq_cluster_blocks() {   /* 1 unless the launch runs cluster by cluster */
  return cq::rt.cfg.cluster[0] * cq::rt.cfg.cluster[1] * cq::rt.cfg.cluster[2];
}

CQ_DEV void cq_event_trigger_cluster(unsigned *arrivals) {
  using namespace cq;
  if (cq_cluster_blocks() == 1) {
    (*arrivals)++;
    return;
  }
  size_t at = (size_t)((unsigned char *)arrivals - rt.blk->smem);
  for (unsigned i = 0; i < rt.nblocks; i++) (*(unsigned *)(rt.blocks[i].smem + at))++;
}

/* The blocks of a cluster meet (the GPU's barrier.cluster): nothing to do here, where a
   cluster's blocks start and end together (launch_clusters). */
CQ_DEV void cq_cluster_sync() {}

/* A count one thread publishes and others wait to reach (a store, then a wait that
   yields, on the CPU). */
CQ_DEV void cq_flag_publish(unsigned *flag, unsigned value) { *flag = value; }
CQ_DEV void cq_flag_wait(const unsigned *flag, unsigned value, int site) {
  using namespace cq;
  wait_until(CQ_WAIT_FLAG, site, smem_offset(flag), value, [=] { return *flag >= value; });
}

/* The grid barrier of a cooperative launch: the block's leader arrives once the block's
   participants have met; the block whose arrival completes the generation releases the
   others. A block that finished without arriving leaves them waiting: run_grid reports it
   as the fault of `finished_site`. */
CQ_DEV void cq_grid_sync(bool leader, int site, int finished_site) {
  using namespace cq;
  if (!leader) return;
  unsigned long long gen = rt.grid_gen;
  rt.grid_arrived++;      /* run_grid completes the barrier once every block waits here */
  wait_until(CQ_WAIT_GRID, site, (long long)gen, finished_site,
             [=] { return rt.grid_gen != gen; });
}

CQ_DEV bool cq_once_claim(unsigned *claimed, unsigned nth) {
  if (*claimed >= nth) return false;
  *claimed = nth;
  return true;
}

/* ------------------------------------------------------------------ TMA bulk copies */

typedef cq_tensor_map cq_tmap;   /* a tensor map kernel parameter (cq_abi.h) */
#define CQ_GRID_CONSTANT

/* The shared address a TMA copy with a swizzle of `swizzle` bytes (0, 32, 64, 128) puts
   the byte of address `at` at: the 16-byte chunk bits 4.. XOR the bits 7.. above them,
   log2(swizzle / 16) of them (PTX ISA, tensor copy swizzling modes). */
CQ_DEV long long cq_tma_swizzled(long long at, unsigned swizzle) {
  if (swizzle < 32) return at;
  long long mask = (long long)(swizzle / 16 - 1) << 7;
  return at ^ ((at & mask) >> 3);
}

/* The mbarrier's one arrival counts once the expected bytes have all been transferred. */
struct cq_tma_bar {
  cq_mbar bar;
  long long tx;   /* bytes expected and not yet transferred, + 2^40 while the arrival waits */
};

namespace cq {
static const long long TMA_ARMED = 1ll << 40;
static inline void tma_settle(cq_tma_bar *b) {
  if (b->tx == TMA_ARMED) {
    b->tx = 0;
    mbar_arrive(&b->bar, false);
  }
}
/* `bytes` landed: an armed barrier that receives more than it expects never completes
   on a GPU, so it is a misuse here. */
static inline void tma_landed(cq_tma_bar *b, unsigned bytes) {
  b->tx -= bytes;
  if (b->tx < TMA_ARMED && b->tx > TMA_ARMED / 2)
    misuse(CQ_MISUSE_TMA_TX, -1, smem_offset(b), TMA_ARMED - b->tx);
  tma_settle(b);
}
}  // namespace cq

namespace cq {
/* A TMA copy issued whose bytes have not landed. On a GPU they land at some time before
   a thread observes the barrier phase they complete; here they land when a thread waits
   for that phase (cq_tma_wait), the latest a correct kernel allows: one that reads the
   destination without having waited reads what was there before, as it may on a GPU. */
struct tma_copy {
  cq_tma_bar *bar;
  unsigned char *smem;        /* the block's shared memory */
  long long off;              /* the destination's offset in it */
  const unsigned char *src;   /* a bulk copy's source; null for a tensor-map box */
  unsigned bytes;
  cq_tmap map;                /* a box's tensor map and coordinates */
  int c0, c1;
};
static std::vector<tma_copy> tma_in_flight;

static void tma_move(const tma_copy &c) {
  if (c.src) {
    memcpy(c.smem + c.off, c.src, c.bytes);
    return;
  }
  const cq_tmap &m = c.map;
  const unsigned char *base = (const unsigned char *)(uintptr_t)m.base;
  for (long long r = 0; r < m.box[1]; r++)
    for (long long col = 0; col < m.box[0]; col++) {
      long long g0 = c.c0 + col, g1 = c.c1 + r;
      long long at = c.off + (r * m.box[0] + col) * m.elem;
      unsigned char *to = c.smem + cq_tma_swizzled(at, m.swizzle);
      if (g0 >= 0 && g0 < m.dims[0] && g1 >= 0 && g1 < m.dims[1])
        memcpy(to, base + g1 * m.row_bytes + g0 * m.elem, m.elem);
      else
        memset(to, 0, m.elem);
    }
}

/* The copies in flight on barrier b land, in the order they were issued. */
static void tma_land(cq_tma_bar *b) {
  for (size_t i = 0; i < tma_in_flight.size();) {
    if (tma_in_flight[i].bar != b) {
      i++;
      continue;
    }
    const tma_copy c = tma_in_flight[i];
    tma_in_flight.erase(tma_in_flight.begin() + (long)i);
    tma_move(c);
    tma_landed(c.bar, c.bytes);
  }
}

/* A block placed in shared memory [smem, smem + bytes) starts with no copy in flight
   there: those of the block before it are dropped with its shared memory. */
static void tma_forget(const unsigned char *smem, size_t bytes) {
  for (size_t i = 0; i < tma_in_flight.size();) {
    const unsigned char *at = (const unsigned char *)tma_in_flight[i].bar;
    if (at >= smem && at < smem + bytes)
      tma_in_flight.erase(tma_in_flight.begin() + (long)i);
    else
      i++;
  }
}
}  // namespace cq

CQ_DEV void cq_tma_init(cq_tma_bar *b) {
  cq::check_smem_object(b, sizeof *b, -1);
  cq_mbar_init(&b->bar, 1);
  b->tx = 0;
}

CQ_DEV unsigned cq_tma_phase(cq_tma_bar *b) { return (unsigned)(cq::mbar_phase(b->bar) & 1); }

CQ_DEV void cq_tma_expect(cq_tma_bar *b, unsigned bytes) {
  b->tx += cq::TMA_ARMED + bytes;
  cq::tma_settle(b);
}

CQ_DEV void cq_tma_load(void *dst, const void *src, unsigned bytes, cq_tma_bar *b, int hint) {
  using namespace cq;
  (void)hint;
  if (!bytes || bytes % 16) misuse(CQ_MISUSE_CP_ASYNC_SIZE, -1, bytes);
  if ((uintptr_t)dst % 16 || (uintptr_t)src % 16)
    misuse(CQ_MISUSE_CP_ASYNC_ALIGN, -1, (long long)(uintptr_t)dst, (long long)(uintptr_t)src);
  long long off = smem_offset(dst);
  if (off < 0 || (size_t)off + bytes > rt.blk->smem_bytes)
    misuse(CQ_MISUSE_CP_ASYNC_DST, -1, off);
  tma_in_flight.push_back(tma_copy{b, rt.blk->smem, off, (const unsigned char *)src, bytes,
                                   cq_tmap(), 0, 0});
}

/* cp.async.bulk.tensor.2d with a tensor map (cq_tmap, the host's cq_tensor_map): the box
   at coordinates (c0, c1) of the map's tensor (c0 innermost), elements outside the tensor
   zero (the map's out-of-bounds fill), written row after row from dst, each byte at the
   shared address the map's swizzle gives: for a swizzle of S bytes, bits 4.. of the
   16-byte chunk index XOR bits 7.. of the address (log2(S / 16) of them), so in a
   1024-byte atom of the 128-byte swizzle chunk c of row r lands at chunk c ^ (r % 8).
   The bytes land when a thread waits on the barrier (tma_copy). */
CQ_DEV void cq_tma_tile(void *dst, const cq_tmap *m, int c0, int c1, cq_tma_bar *b, int hint) {
  using namespace cq;
  (void)hint;
  long long off = smem_offset(dst);
  long long bytes = (long long)m->box[0] * m->box[1] * m->elem;
  unsigned align = m->swizzle ? 1024 : 128;
  if (!m->ok || off < 0 || off % align || (size_t)(off + bytes) > rt.blk->smem_bytes)
    misuse(CQ_MISUSE_TMA_MAP, -1, off, m->ok);
  cq_tma_boxes++;
  tma_in_flight.push_back(tma_copy{b, rt.blk->smem, off, NULL, (unsigned)bytes, *m, c0, c1});
}

CQ_DEV void cq_tma_wait(cq_tma_bar *b, unsigned parity, int site) {
  using namespace cq;
  wait_until(CQ_WAIT_MBARRIER, site, smem_offset(b), (long long)parity, [=] {
    tma_land(b);
    return (mbar_phase(b->bar) & 1) != parity;
  });
}

/* ------------------------------------------------------------------ cp.async */

template <int BYTES> CQ_DEV void cq_cp_async(void *dst, const void *src, int src_bytes) {
  using namespace cq;
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  thread_state *t = rt.self;
  if (src_bytes < 0 || src_bytes > BYTES) misuse(CQ_MISUSE_CP_ASYNC_SIZE, -1, src_bytes);
  if ((uintptr_t)dst % BYTES || (src_bytes && (uintptr_t)src % BYTES))
    misuse(CQ_MISUSE_CP_ASYNC_ALIGN, -1, (long long)(uintptr_t)dst, (long long)(uintptr_t)src);
  long long off = smem_offset(dst);
  if (off < 0 || (size_t)off + BYTES > rt.blk->smem_bytes)
    misuse(CQ_MISUSE_CP_ASYNC_DST, -1, off);
  memset(dst, POISON, BYTES);
  t->copies.push_back(pending_copy{(unsigned char *)dst, (const unsigned char *)src, BYTES,
                                   src_bytes, t->committed});
}

CQ_DEV void cq_cp_async_commit() { cq::rt.self->committed++; }

/* cp.async.wait_group N: every committed group but the newest N has landed. */
template <int N> CQ_DEV void cq_cp_async_wait() {
  using namespace cq;
  thread_state *t = rt.self;
  unsigned upto = t->committed > (unsigned)N ? t->committed - N : 0;
  size_t keep = 0;
  for (size_t i = 0; i < t->copies.size(); i++) {
    pending_copy &c = t->copies[i];
    if (c.group < upto) {
      memcpy(c.dst, c.src, (size_t)c.src_bytes);
      memset(c.dst + c.src_bytes, 0, (size_t)(c.bytes - c.src_bytes));
    } else {
      t->copies[keep++] = c;
    }
  }
  t->copies.resize(keep);
}

/* As on the GPU: wait_group with an immediate, at most 3 newer groups left in flight. */
CQ_DEV void cq_cp_async_wait_newer(unsigned newer) {
  if (newer >= 3) cq_cp_async_wait<3>();
  else if (newer == 2) cq_cp_async_wait<2>();
  else if (newer == 1) cq_cp_async_wait<1>();
  else cq_cp_async_wait<0>();
}

/* ------------------------------------------------------------------ mma.sync */

namespace cq {
/* One MMA step, c + a * b rounded once to the accumulator type (LANGUAGE.md §12.4),
   with the engines' arithmetic (cq_numerics.h); the product of two f16, bf16 or tf32
   values is exact in double, of two f64 values it is not. Integers wrap. */
template <class T> struct mma_step;
template <> struct mma_step<cq_f32> {
  static double run(double c, double a, double b) { return cq_fma_to(c, a, b, CQ_FMT_F32, 1); }
};
template <> struct mma_step<cq_f64> {
  static double run(double c, double a, double b) { return cq_fma_to(c, a, b, CQ_FMT_F64, 0); }
};
template <> struct mma_step<cq_s32> {
  static long long run(long long c, long long a, long long b) {
    return cq_add_s32((int32_t)c, (int32_t)(a * b));
  }
};

/* D = C + A B with k ascending, every entry gathered from and scattered to the lanes
   through the fragment maps. Integer operands use the i* arrays, floats the others. */
template <class S, class V>
static void mma_compute(V (*a)[16], V (*b)[8], V (*c)[4], V (*d)[4]) {
  V A[S::M][S::K], B[S::K][S::N], C[S::M][S::N];
  for (int l = 0; l < WARP; l++) {
    for (int i = 0; i < S::NA; i++)
      A[cq_mma_a_row(S::ta::W, l, i)][cq_mma_a_col(S::ta::W, l, i)] = a[l][i];
    for (int i = 0; i < S::NB; i++) B[cq_mma_b_row(S::tb::W, l, i)][cq_mma_b_col(l)] = b[l][i];
    for (int i = 0; i < S::NC; i++) C[cq_mma_c_row(l, i)][cq_mma_c_col(l, i)] = c[l][i];
  }
  for (int m = 0; m < S::M; m++)
    for (int n = 0; n < S::N; n++)
      for (int k = 0; k < S::K; k++) C[m][n] = mma_step<typename S::tc>::run(C[m][n], A[m][k], B[k][n]);
  for (int l = 0; l < WARP; l++)
    for (int i = 0; i < S::NC; i++) d[l][i] = C[cq_mma_c_row(l, i)][cq_mma_c_col(l, i)];
}

template <class S> struct mma_tag { static const char id; };
template <class S> const char mma_tag<S>::id = 0;
}  // namespace cq

template <class S>
CQ_DEV void cq_mma_sync(typename S::c_value *d, const typename S::a_value *a,
                        const typename S::b_value *b, const typename S::c_value *c, int site) {
  using namespace cq;
  block_state *bs = rt.blk;
  unsigned lane = rt.self->tid % WARP, w = rt.self->tid / WARP;
  if (warp_size_of(w) != WARP || bs->warp_live[w] != WARP) misuse(CQ_MISUSE_WARP_PARTIAL, site, w);
  warp_rendezvous *rv = &bs->warps[w];
  mma_operands *op = &bs->operands[w];
  const void *tag = &mma_tag<S>::id;
  if (!rv->arrived) rv->shape = tag;
  else if (rv->shape != tag) misuse(CQ_MISUSE_WARP_DIVERGED, site, w);
  if constexpr (S::tc::INT) {
    for (int i = 0; i < S::NA; i++) op->ia[lane][i] = a[i];
    for (int i = 0; i < S::NB; i++) op->ib[lane][i] = b[i];
    for (int i = 0; i < S::NC; i++) op->ic[lane][i] = c[i];
  } else {
    for (int i = 0; i < S::NA; i++) op->a[lane][i] = a[i];
    for (int i = 0; i < S::NB; i++) op->b[lane][i] = b[i];
    for (int i = 0; i < S::NC; i++) op->c[lane][i] = c[i];
  }
  unsigned long long gen = rv->gen;
  if (++rv->arrived == WARP) {
    if constexpr (S::tc::INT) mma_compute<S>(op->ia, op->ib, op->ic, op->id);
    else mma_compute<S>(op->a, op->b, op->c, op->d);
    rv->arrived = 0;
    rv->gen++;
  } else {
    wait_until(CQ_WAIT_WARP, site, 0, 0, [=] { return rv->gen != gen; });
  }
  for (int i = 0; i < S::NC; i++) {
    if constexpr (S::tc::INT) d[i] = (typename S::c_value)op->id[lane][i];
    else d[i] = (typename S::c_value)op->d[lane][i];
  }
}

/* ------------------------------------------------------------------ warp shuffles */

/* The lanes of the caller's warp whose threads have not exited: fibers never diverge,
   so these are the active ones. */
CQ_DEV unsigned cq_active_lanes() {
  using namespace cq;
  unsigned w = rt.self->tid / WARP, mask = 0;
  for (unsigned l = 0; l < warp_size_of(w); l++)
    if (!rt.blk->threads[w * WARP + l].done) mask |= 1u << l;
  return mask;
}

namespace cq {
static const char shfl_tag = 0;
}

/* __shfl_xor_sync: a rendezvous of the warp's live threads, as mma.sync's; values travel
   in the warp's mma_operands, in a slot per generation parity, so that a lane arriving
   at the next shuffle does not overwrite a value its partner has yet to read. */
template <class T> CQ_DEV T cq_shfl_xor(T v, int mask, int site) {
  using namespace cq;
  static_assert(sizeof(T) <= sizeof(long long), "a register of at most 8 bytes");
  block_state *bs = rt.blk;
  unsigned lane = rt.self->tid % WARP, w = rt.self->tid / WARP;
  warp_rendezvous *rv = &bs->warps[w];
  mma_operands *op = &bs->operands[w];
  if (!rv->arrived) rv->shape = &shfl_tag;
  else if (rv->shape != &shfl_tag) misuse(CQ_MISUSE_WARP_DIVERGED, site, w);
  unsigned long long gen = rv->gen;
  memcpy(&op->ia[lane][gen & 1], &v, sizeof v);
  if (++rv->arrived == bs->warp_live[w]) {
    rv->arrived = 0;
    rv->gen++;
  } else {
    wait_until(CQ_WAIT_WARP, site, 0, 0, [=] { return rv->gen != gen; });
  }
  T out;
  memcpy(&out, &op->ia[lane ^ (unsigned)mask][gen & 1], sizeof out);
  return out;
}

/* ------------------------------------------------------------------ wgmma (sm_90a) */

namespace cq {
/* Decoded matrix descriptor (PTX ISA "Matrix Descriptor Format"): each field is the byte
   value >> 4; the swizzle mode (bits 62-63: 0 none, 1 128 bytes, 2 64, 3 32) as bytes.
   The base offset (bits 49-51) must be 0, and a swizzled operand's start must lie in
   the first row of an atom (8 rows of the swizzle's bytes, aligned to its size), K
   advancing the start within the row: else the layout the descriptor describes is not
   the one the swizzle pattern repeats on, a misuse. */
struct wgmma_desc {
  size_t start, lbo, sbo;
  unsigned swizzle;
  bool ok;
};

static inline wgmma_desc decode_desc(unsigned long long desc) {
  static const unsigned SWIZZLE_BYTES[4] = {0, 128, 64, 32};
  wgmma_desc d;
  d.start = (size_t)(desc & 0x3FFF) << 4;
  d.lbo = (size_t)(desc >> 16 & 0x3FFF) << 4;
  d.sbo = (size_t)(desc >> 32 & 0x3FFF) << 4;
  d.swizzle = SWIZZLE_BYTES[desc >> 62];
  d.ok = (desc >> 49 & 7) == 0 &&
         (!d.swizzle || (d.start - d.start % d.swizzle) % (8 * d.swizzle) == 0);
  return d;
}

/* Byte offset of element (row, k) of a K-major operand. Without swizzling: the
   canonical layout ((8, m), (T, 2k)) : ((1T, SBO), (1, LBO)) in elements, T elements
   per 16 bytes (PTX ISA "Canonical Layouts"). Swizzled by S bytes: ((8, m), (T, 2k)) :
   ((S / bytes, SBO), (1, T)), rows S bytes apart and K contiguous within them, then the
   swizzle of the shared address (cq_tma_swizzled, the pattern TMA writes). */
static inline size_t desc_offset(const wgmma_desc &d, int row, int k, int bytes) {
  if (d.swizzle)
    return (size_t)cq_tma_swizzled((long long)(d.start + (size_t)(row % 8) * d.swizzle +
                                               (size_t)(row / 8) * d.sbo + (size_t)k * bytes),
                                   d.swizzle);
  return d.start + (size_t)(row % 8) * 16 + (size_t)(row / 8) * d.sbo +
         (size_t)(k * bytes / 16) * d.lbo + (size_t)(k * bytes % 16);
}

static inline void check_desc(const wgmma_desc &d, int rows, int bytes, int site) {
  size_t last = desc_offset(d, rows - 1, 32 / bytes - 1, bytes) + (size_t)bytes;
  if (!d.ok || last > rt.blk->smem_bytes) misuse(CQ_MISUSE_WGMMA_DESC, site, (long long)d.start);
}

/* D = C + A B with k ascending (§12.4), C and D through the accumulator map, A [64, K]
   and B [N, K] read from shared memory through the descriptors. One launch runs at a
   time and this never yields, so the tiles can be static. */
template <class S> static void wgmma_compute(wgmma_operands *op, int site) {
  static double A[64][32], B[2 * MAX_WGMMA_ND][32], C[64][2 * MAX_WGMMA_ND];
  wgmma_desc da = decode_desc(op->da), db = decode_desc(op->db);
  check_desc(da, S::M, S::BYTES, site);
  check_desc(db, S::N, S::BYTES, site);
  if (da.swizzle || db.swizzle) cq_wgmma_swizzled++;
  for (int t = 0; t < WARPGROUP; t++)
    for (int i = 0; i < S::ND; i++) C[cq_wgmma_d_row(t, i)][cq_wgmma_d_col(t, i)] = op->c[t][i];
  for (int k = 0; k < S::K; k++) {
    for (int m = 0; m < S::M; m++)
      A[m][k] = cq_wgmma_elem<typename S::ta>::get(rt.blk->smem + desc_offset(da, m, k, S::BYTES));
    for (int n = 0; n < S::N; n++)
      B[n][k] = cq_wgmma_elem<typename S::tb>::get(rt.blk->smem + desc_offset(db, n, k, S::BYTES));
  }
  for (int m = 0; m < S::M; m++)
    for (int n = 0; n < S::N; n++)
      for (int k = 0; k < S::K; k++) {
        if constexpr (S::tc::INT)
          C[m][n] = (double)mma_step<cq_s32>::run((long long)C[m][n], (long long)A[m][k],
                                                  (long long)B[n][k]);
        else
          C[m][n] = mma_step<cq_f32>::run(C[m][n], A[m][k], B[n][k]);
      }
  for (int t = 0; t < WARPGROUP; t++)
    for (int i = 0; i < S::ND; i++) op->d[t][i] = C[cq_wgmma_d_row(t, i)][cq_wgmma_d_col(t, i)];
}
}  // namespace cq

template <class S> CQ_DEV void cq_wgmma_fence(typename S::c_value *d) {
  (void)d;
  cq::rt.self->wg_fenced = true;
}

CQ_DEV void cq_fence_proxy_async() {}

template <class S>
CQ_DEV void cq_wgmma(typename S::c_value *d, unsigned long long da, unsigned long long db,
                     int site) {
  using namespace cq;
  static_assert(S::ND <= MAX_WGMMA_ND, "wgmma N above the runtime's operand store");
  block_state *bs = rt.blk;
  thread_state *self = rt.self;
  unsigned g = self->tid / WARPGROUP, t = self->tid % WARPGROUP;
  for (unsigned w = 4 * g; w < 4 * g + 4; w++)
    if (w * WARP >= bs->size || warp_size_of(w) != WARP || bs->warp_live[w] != WARP)
      misuse(CQ_MISUSE_WARP_PARTIAL, site, w);
  if (!self->wg_fenced) misuse(CQ_MISUSE_WGMMA_FENCE, site);
  warp_rendezvous *rv = &bs->groups[g];
  wgmma_operands *op = &bs->wg_operands[g];
  const void *tag = &mma_tag<S>::id;
  if (!rv->arrived) {
    rv->shape = tag;
    op->da = da;
    op->db = db;
  } else if (rv->shape != tag || op->da != da || op->db != db) {
    misuse(CQ_MISUSE_WARP_DIVERGED, site, 4 * g);
  }
  /* the accumulator in: the newest result still in flight for it, else the registers */
  const pending_wgmma *chained = NULL;
  for (const pending_wgmma &p : self->wgmmas)
    if (p.d == (void *)d) chained = &p;
  for (int i = 0; i < S::ND; i++) op->c[t][i] = chained ? chained->v[i] : (double)d[i];
  unsigned long long gen = rv->gen;
  if (++rv->arrived == WARPGROUP) {
    wgmma_compute<S>(op, site);
    rv->arrived = 0;
    rv->gen++;
  } else {
    wait_until(CQ_WAIT_WARP, site, 0, WARPGROUP, [=] { return rv->gen != gen; });
  }
  pending_wgmma p;
  p.d = d;
  p.n = S::ND;
  p.is_int = S::tc::INT;
  p.group = self->wg_committed;
  for (int i = 0; i < S::ND; i++) p.v[i] = op->d[t][i];
  self->wgmmas.push_back(p);
  for (int i = 0; i < S::ND; i++) {
    if constexpr (S::tc::INT) d[i] = INT32_MIN;
    else d[i] = NAN;
  }
}

CQ_DEV void cq_wgmma_commit() { cq::rt.self->wg_committed++; }

/* wgmma.wait_group N: every committed group but the newest N has landed. */
template <int N, class S> CQ_DEV void cq_wgmma_wait(typename S::c_value *d) {
  using namespace cq;
  (void)d;
  thread_state *self = rt.self;
  unsigned upto = self->wg_committed > (unsigned)N ? self->wg_committed - N : 0;
  size_t keep = 0;
  for (size_t i = 0; i < self->wgmmas.size(); i++) {
    pending_wgmma &p = self->wgmmas[i];
    if (p.group < upto) {
      for (int j = 0; j < p.n; j++) {
        if (p.is_int) ((int *)p.d)[j] = (int)p.v[j];
        else ((float *)p.d)[j] = (float)p.v[j];
      }
    } else {
      self->wgmmas[keep++] = p;
    }
  }
  self->wgmmas.resize(keep);
  self->wg_fenced = false;
}

/* wgmma.wait_group 0 of a lane leaving after a fault: its results land where they were
   to land (the region's accumulator copy), which nothing reads any more. */
CQ_DEV void cq_wgmma_wait_all() { cq_wgmma_wait<0, cq_wgmma_n8_f16_f32>(NULL); }

/* The step counts of a warpgroup's lanes made equal before a wgmma slice loop, as on
   the GPU (cq_gpu.cuh). */
CQ_DEV void cq_steps_offer(unsigned long long *slot, unsigned long long steps) {
  if (steps > *slot) *slot = steps;
}
CQ_DEV unsigned long long cq_steps_largest(unsigned long long *slot) { return *slot; }

#endif /* CQ_CPU_H */
