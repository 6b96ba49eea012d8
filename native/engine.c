/* The engine: the dispatch loop (cq_dispatch.inc, instantiated for 32-lane warps and
 * for the one-lane host program), structured control flow (docs/EXECUTION.md §3), the
 * scheduler (LANGUAGE.md §7.1.2) and the block loop. croqvm/interp/engine.py,
 * control.py and scheduler.py are the reference this follows decision by decision. */
#include "cq_engine.h"
#include "cq_trace.h"
#include "cq_types.h"

/* ------------------------------------------------------------------ small handlers */

static inline cq_frame *push(cq_warp *w, int kind, int jump)
{
    cq_frame *f = &w->stack[w->nstack++];
    f->kind = (uint8_t)kind;
    f->opener = w->ip;
    f->jump = jump;
    return f;
}

/* Take ``lanes`` out of the active mask and out of the IF frames above the innermost
 * loop, so no END re-enables them before the loop's own END; returns that loop's
 * position in the stack. */
static inline int leave(cq_warp *w, uint32_t lanes)
{
    int k = w->nstack - 1;
    while (w->stack[k].kind != 1) {
        w->stack[k].entered &= ~lanes;
        w->stack[k].other &= ~lanes;
        k--;
    }
    w->act &= ~lanes;
    return k;
}

void cq_finish(cq_warp *w)
{
    w->state = CQ_FINISHED;
    w->act = 0;
}

/* After lanes left the active mask: if none remain, go to the innermost frame's
 * ELSE/END; with no frame open every lane has terminated and the warp is done. */
int cq_settle(cq_warp *w)
{
    if (w->act)
        return CQ_ST_OK;
    if (!w->nstack)
        cq_finish(w);
    else
        w->pc = w->stack[w->nstack - 1].jump;
    return CQ_ST_OK;
}

/* Write ``n`` lanes of 8-byte values (bits of R[a]'s storage type, in the low bytes)
 * into R[a] on the active lanes. */
static void write_bits(char *reg, int type, const int64_t *bits, uint32_t act, int n)
{
    switch (cq_type_size[type]) {   /* the low bytes: a cast keeps them */
#define WRITE(T) \
        for (int i = 0; i < n; i++) \
            if (act >> i & 1) \
                ((T *)reg)[i] = (T)bits[i]; \
        break;
    case 1: WRITE(uint8_t)
    case 2: WRITE(uint16_t)
    case 4: WRITE(uint32_t)
    default: WRITE(uint64_t)
#undef WRITE
    }
}

/* CONST: the constant is of R[a]'s type (the verifier's guarantee). */
static void op_const(cq_warp *w, const cq_ins *ins, uint32_t act, int n)
{
    int64_t bits[CQ_WARP];
    for (int i = 0; i < n; i++)
        bits[i] = ins->k;
    write_bits(w->regs + ins->ra, ins->ta, bits, act, n);
}

/* R[a] := an s64 value per lane, converted (wrapping) to R[a]'s type. */
static void write_s64(cq_warp *w, const cq_ins *ins, const int64_t *v, uint32_t act, int n)
{
    int bad;
    cq_convert(CQ_DT_S64, ins->ta, v, w->regs + ins->ra, n, act, &bad);
}

static int op_lane(cq_warp *w, const cq_ins *ins, uint32_t act, int n)
{
    int64_t v[CQ_WARP];
    for (int i = 0; i < n; i++)
        v[i] = w->base + i;
    write_s64(w, ins, v, act, n);
    return CQ_ST_OK;
}

static int op_blockidx(cq_block *blk, cq_warp *w, const cq_ins *ins, uint32_t act, int n)
{
    int64_t v[CQ_WARP];
    int64_t index = ins->b < blk->rank ? blk->index[ins->b] : 0;
    for (int i = 0; i < n; i++)
        v[i] = index;
    write_s64(w, ins, v, act, n);
    return CQ_ST_OK;
}

/* SHFL_XOR: R[a] := R[b] of the lane at (own index xor c) of the warp, which must be
 * active; every value is read before any is written. */
static int op_shfl_xor(cq_warp *w, const cq_ins *ins, uint32_t act, int n)
{
    int size = cq_type_size[ins->ta];
    char got[CQ_WARP * 8];
    for (uint32_t m = act; m; m &= m - 1) {
        int i = cq_low(m), p = i ^ ins->c;
        if (p >= n || !(w->act >> p & 1)) {
            cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_SHUFFLE_INACTIVE, w->base + i);
            cq_put(f, p);
            return CQ_ST_FAULT;
        }
        memcpy(got + (size_t)i * size, w->regs + ins->rb + (size_t)p * size, size);
    }
    for (uint32_t m = act; m; m &= m - 1) {
        int i = cq_low(m);
        memcpy(w->regs + ins->ra + (size_t)i * size, got + (size_t)i * size, size);
    }
    return CQ_ST_OK;
}

/* §6.5: the active lanes terminate; collectives stop waiting for them. */
static int op_yield(cq_block *blk, cq_warp *w)
{
    blk->live[w->index] &= ~w->act;
    w->act = 0;
    if (cq_recheck_rendezvous(blk) != CQ_ST_OK)
        return CQ_ST_FAULT;
    return cq_settle(w);
}

static int step_limit(cq_warp *w, const cq_ins *ins)
{
    cq_record *f = cq_fault_new(w->blk, ins, CQ_FAULT_STEP_LIMIT,
                               w->act ? w->base + cq_low(w->act) : -1);
    cq_put(f, w->blk->call->opts.max_steps);
    return CQ_ST_FAULT;
}

/* The initialisation check (docs/EXECUTION.md §20), with w->written: before instruction
 * ip, every register it reads must have been written in every active lane, else
 * UNINITIALISED_REGISTER for the first such register and its lowest such lane ... */
static inline int init_reads(cq_warp *w, int ip)
{
    const cq_code *code = w->blk->code;
    const int32_t *u = code->uses + code->use_at[ip];
    for (int k = 1; k <= u[0]; k++) {
        uint32_t unset = w->act & ~w->written[u[k]];
        if (unset) {
            cq_record *f = cq_fault_new(w->blk, &code->ins[ip],
                                        CQ_FAULT_UNINITIALISED_REGISTER, w->base + cq_low(unset));
            cq_put(f, u[k]);
            return CQ_ST_FAULT;
        }
    }
    return CQ_ST_OK;
}

/* ... and after it, the registers it writes are written in the lanes then active. */
static inline void init_wrote(cq_warp *w, int ip)
{
    const cq_code *code = w->blk->code;
    const int32_t *u = code->uses + code->use_at[ip];
    u += 1 + u[0];
    for (int k = 1; k <= u[0]; k++)
        w->written[u[k]] |= w->act;
}

int cq_op_launch(cq_warp *w, const cq_ins *ins);
int cq_op_ret(cq_warp *w, const cq_ins *ins);

/* The opcodes without a case of their own in the dispatch switch. */
static int op_other(cq_block *blk, cq_warp *w, const cq_ins *ins)
{
    switch (ins->op) {
    case CQ_OP_ALLOC: return cq_op_alloc(w, ins);
    case CQ_OP_FILL: return cq_op_fill(w, ins);
    case CQ_OP_STORE: return cq_op_store(w, ins);
    case CQ_OP_DIMOF: return cq_op_dimof(w, ins);
    case CQ_OP_ATOMIC: return cq_op_atomic(w, ins);
    case CQ_OP_MATH: return cq_op_math(w, ins);
    case CQ_OP_DMA: return cq_op_dma(w, ins);
    case CQ_OP_FUT_ANY: return cq_op_fut_any(w, ins);
    case CQ_OP_WAIT: return cq_op_wait(w, ins);
    case CQ_OP_SWAP: return cq_op_swap(w, ins);
    case CQ_OP_FUT_DIM: return cq_op_fut_dim(w, ins);
    case CQ_OP_BARRIER: return cq_op_barrier(w, ins);
    case CQ_OP_ONCE: return cq_op_once(w, ins);
    case CQ_OP_TRIGGER: return cq_op_trigger(w, ins);
    case CQ_OP_TRIGGER_CLUSTER: return cq_op_trigger_cluster(w, ins);
    case CQ_OP_WAIT_EVENT: return cq_op_wait_event(w, ins);
    case CQ_OP_WAIT_EVENT_AT: return cq_op_wait_event_at(w, ins);
    case CQ_OP_FUT_BIND: return cq_op_fut_bind(w, ins);
    case CQ_OP_BAR_SYNC: case CQ_OP_BAR_ARRIVE: return cq_op_named_barrier(w, ins);
    case CQ_OP_GRID_SYNC: return cq_op_grid_sync(w, ins);
    case CQ_OP_MMA_FILL: case CQ_OP_MMA_LOAD: case CQ_OP_MMA_EXEC: case CQ_OP_MMA_STORE:
    case CQ_OP_MMA_STORE_MASK: case CQ_OP_MMA_ASYNC: case CQ_OP_MMA_WAIT:
    case CQ_OP_MMA_GATHER: case CQ_OP_MMA_SCALE: case CQ_OP_MMA_SPARSE:
        return cq_op_mma(w, ins);
    case CQ_OP_FRAG_GET: case CQ_OP_FRAG_SET: return cq_op_frag_elem(w, ins);
    case CQ_OP_SHFL_XOR: return op_shfl_xor(w, ins, w->act, w->width);
    case CQ_OP_PRINT: return cq_op_print(w, ins);
    case CQ_OP_ASSERT: case CQ_OP_ASSERT_FMT: return cq_op_assert(w, ins);
    case CQ_OP_ASM: return cq_op_asm(w, ins);
    case CQ_OP_CALL_CXX: return cq_op_call_cxx(w, ins);
    case CQ_OP_CALL_EXTERN: return cq_op_call_extern(w, ins);
    case CQ_OP_LAUNCH: return cq_op_launch(w, ins);
    case CQ_OP_RET: case CQ_OP_RET_VAL: case CQ_OP_RET_BUF: return cq_op_ret(w, ins);
    default: return CQ_INTERNAL_ERROR(blk);
    }
}

/* ------------------------------------------------------------------ the loop, twice */

#define W 32
#define STEP step32
#define RUN run32
#include "cq_dispatch.inc"
#undef W
#undef STEP
#undef RUN

#define W 1
#define STEP step1
#define RUN run1
#include "cq_dispatch.inc"
#undef W
#undef STEP
#undef RUN

/* One instruction for a whole warp outside the loop: lane-set code (docs/EXECUTION.md
 * §2), which is straight-line register arithmetic. */
int cq_step(cq_block *blk, cq_warp *w, const cq_ins *ins, int n)
{
    return n == 1 ? step1(blk, w, ins) : step32(blk, w, ins);
}

/* ------------------------------------------------------------------ scheduling */

void cq_land_pending(cq_block *blk, uint64_t *rng);

/* The lowest-numbered runnable warp (round-robin), or, under the random schedule, after
 * the pending async copies had their chance to land, one of the runnable warps drawn by
 * the project PRNG (croqvm/interp/scheduler.py gives the decisions exactly); NULL when
 * no warp is runnable. */
static cq_warp *pick(cq_block *blk)
{
    if (!blk->call->opts.schedule) {
        for (int k = 0; k < blk->nwarps; k++)
            if (cq_runnable(&blk->warps[k]))
                return &blk->warps[k];
        return NULL;
    }
    cq_land_pending(blk, &blk->call->rng);
    int ready[CQ_MAX_WARPS], n = 0;
    for (int k = 0; k < blk->nwarps; k++)
        if (cq_runnable(&blk->warps[k]))
            ready[n++] = k;
    if (n <= 1)
        return n ? &blk->warps[ready[0]] : NULL;
    return &blk->warps[ready[cq_rng_below(&blk->call->rng, (uint64_t)n)]];
}

/* Run the block's warps until every one finished (CQ_ST_DONE), the slice ends, a fault
 * happens, or (the host) a LAUNCH is reached. A block with no runnable warp and a live
 * blocked lane is a deadlock (§10.5), unless it is parked: every warp not done waits at
 * the grid barrier, or the block's cluster decides (call.c run_clusters). */
int cq_run_block(cq_block *blk)
{
    for (;;) {
        if (blk->cur < 0) {
            cq_warp *w = pick(blk);
            if (!w) {
                int left = 0, at_grid = 0;
                for (int k = 0; k < blk->nwarps; k++)
                    if (blk->warps[k].state != CQ_FINISHED) {
                        left++;
                        at_grid += blk->warps[k].state == CQ_BLOCKED &&
                                   blk->warps[k].blocker == 4;
                    }
                if (!left)
                    return CQ_ST_DONE;
                if (at_grid == left || blk->ncluster > 1)
                    return CQ_ST_PARKED;
                cq_fault_new(blk, NULL, CQ_DEADLOCK, -1);
                return CQ_ST_FAULT;
            }
            blk->released = 0;
            blk->cur = blk->last = w->index;
            blk->quantum_n = 0;
        }
        cq_warp *w = &blk->warps[blk->cur];
        int st = blk->kernel < 0 ? run1(blk, w) : run32(blk, w);
        if (st != CQ_ST_OK)
            return st;
    }
}
