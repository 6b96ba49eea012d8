/* Internal structures of the native engine: the loaded program (cq_code and its side
 * tables, as croqvm/bytecode/module.py defines them) and the state of a call (blocks,
 * warps, buffers, futures, events, collectives). docs/EXECUTION.md is the machine model;
 * croqvm/interp/ is the reference engine whose decisions these mirror.
 *
 * Conventions: ``w`` a warp, ``blk`` its block, ``call`` the call, ``ins`` a decoded
 * instruction, ``lane`` a block lane, ``i`` a lane index in a warp, ``act`` the active
 * mask (bit i = lane i of the warp), a "lane set" is a cq_lanes (1024 bits). Registers
 * of a warp are one arena: register r's 32 lanes sit together at ``roff[r]`` in the
 * register's storage type (SoA). Every runtime error leaves through cq_fault_at (or a
 * helper calling it), which records it on the call; handlers then return CQ_ST_FAULT.
 */
#ifndef CQ_ENGINE_H
#define CQ_ENGINE_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "cq_api.h"
#include "cq_opcodes.h"
#include "cq_record.h"

#define CQ_WARP CQ_WARP_SIZE
#define CQ_MAX_BLOCK CQ_MAX_BLOCK_SIZE
#define CQ_MAX_WARPS (CQ_MAX_BLOCK / CQ_WARP)
#define CQ_MAX_RANK 8
#define CQ_LANE_WORDS (CQ_MAX_BLOCK / 32)

typedef struct { uint32_t w[CQ_LANE_WORDS]; } cq_lanes;

static inline int cq_lanes_get(const cq_lanes *s, int lane) { return (s->w[lane >> 5] >> (lane & 31)) & 1; }
static inline void cq_lanes_set(cq_lanes *s, int lane) { s->w[lane >> 5] |= 1u << (lane & 31); }

/* Specialised handlers (cq_dispatch.inc): an ALU family has one handler per operand
 * type, HB_<OP> + type; the other opcodes with a case of their own come after. */
#define CQ_ALU_FAMILIES(X) X(ADD) X(SUB) X(MUL) X(DIV) X(MOD) X(MIN) X(MAX) X(AND) X(OR) \
    X(XOR) X(SHL) X(SHR) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(NEG) X(NOT) X(BNOT) X(MOV) \
    X(SELECT)
#define CQ_OWN_CASES(X) X(CONST) X(CVT) X(LANE) X(BLOCKIDX) X(IF) X(ELSE) X(LOOP) \
    X(BREAK_IF) X(CONTINUE_IF) X(END) X(YIELD) X(NOP) X(FENCE) X(SYNC_GLOBAL) X(SET_MAXNREG) \
    X(LOAD) X(UPDATE)
enum {
    H_OTHER,
#define CQ_H_FAMILY(OP) HB_##OP, HL_##OP = HB_##OP + CQ_NUM_DTYPES - 1,
    CQ_ALU_FAMILIES(CQ_H_FAMILY)
#undef CQ_H_FAMILY
#define CQ_H_OWN(OP) H_##OP,
    CQ_OWN_CASES(CQ_H_OWN)
#undef CQ_H_OWN
    H_COUNT
};

/* Status of a handler or of a run. */
enum { CQ_ST_OK = 0, CQ_ST_FAULT = 1, CQ_ST_LAUNCH = 2, CQ_ST_SLICE = 3, CQ_ST_DONE = 4,
       CQ_ST_PARKED = 5 };   /* PARKED: every warp not done waits at the grid barrier,
                              * or, in a launch run cluster by cluster, can not run */

/* Warp states (croqvm/interp/warp.py). */
enum { CQ_READY = 0, CQ_BLOCKED = 1, CQ_FINISHED = 2 };

/* ------------------------------------------------------------------ the program */

typedef struct {
    uint16_t op;            /* opcode (cq_opcodes.h) */
    uint16_t h;             /* specialised handler: see engine.c */
    int32_t a, b, c, d, e;  /* operand words */
    int32_t span;
    uint32_t ra, rb, rc, rd;/* byte offsets of the register operands in the warp arena */
    uint8_t ta, tb, tc, td; /* their types */
    uint8_t te;             /* LOAD, STORE, UPDATE, ATOMIC: the element type the module declares */
    uint8_t tt;             /* UPDATE: the arithmetic type of element and value (§12.2) */
    uint16_t hx;            /* UPDATE: the ALU handler of its operation in that type */
    int64_t k;              /* CONST: the value's bits in R[a]'s storage type */
} cq_ins;

typedef struct {
    int32_t storage;        /* 0 global, 1 shared, 2 local (module.Storage) */
    int32_t type, nshape, count, is_array;   /* count: instances (§8.5 buffer arrays) */
    int32_t *shape;         /* registers */
} cq_bufdecl;

/* cluster: TRIGGER_CLUSTER names it, its count is per block of the cluster (§10.8) */
typedef struct { int32_t slots, ready, count, cluster, nls; int32_t *ls; } cq_eventdecl;
typedef struct { int32_t type, unit, rows, cols; } cq_fragdecl;   /* rows, cols -1: dynamic */
typedef struct { int32_t kind, base, arr, n; int32_t *idx; } cq_access;   /* kind 0 buf, 1 fut */
typedef struct {
    int32_t kind, base, arr, n;
    int32_t *origin, *extents;
    int32_t swizzle;        /* bytes of the swizzle mma.load reads through (§9.7), 0: none */
    int32_t nspace, flat;   /* span_as: a reshape of the base from element R[flat] (§8.3.3) */
    int32_t *space;         /* its extent registers; nspace 0: none */
    int32_t nshown;         /* .sqz(): the dimensions shown (§8.3.4); 0: all */
    int32_t *shown;
    int32_t nstrides;       /* element strides (§8.3.2): from element R[flat]; 0: none */
    int32_t *strides;
} cq_viewdecl;
typedef struct {
    int32_t op;             /* 0 copy, 1 transp, 2 pad (module.DmaOp) */
    int32_t src, dst_view, dst_buffer, future, is_async, zfill;
    int32_t nperm, npad, pad_value;
    int32_t *perm, *pad_lo, *pad_hi, *pad_mid;
    int32_t swz_src, swz_dst;   /* swizzle bytes of each side (§9.7), 0: none */
} cq_dmadecl;
typedef struct { int32_t laneset, unit; } cq_coll;
typedef struct { int32_t result, n; cq_ins *ins; } cq_laneset;
typedef struct { int32_t n, newline; int32_t *kind, *x; } cq_print;  /* kind 0 string, 1 register */
/* A C++ call: args[k] a register, or a buffer slot where pointer[k] (result -1: void). */
typedef struct { int32_t func, result, nargs, npointer; int32_t *args, *pointer; } cq_cxxcall;
typedef struct {
    int32_t kernel, ngrid, nbuf, nscalar, is_async, span, block, cooperative, ncluster;
    int32_t stream;                 /* parallel<s>: stream parameter s; -1 the default */
    int32_t *grid, *buf, *scalar;   /* buf, scalar: (kernel, host) pairs */
    int32_t *cluster;               /* registers: the cluster's extents (§6.3.7) */
} cq_launch;

typedef struct {
    int32_t n;
    cq_ins *ins;
    int32_t nregs;
    uint8_t *rtype;
    uint32_t *roff;
    size_t warp_bytes;
    int32_t nbuf, nfut, nevent, nfrag, naccess, nview, ndma, ncoll, nlaneset, nprint, nlaunch;
    cq_bufdecl *buf;
    int32_t *fut_type;      /* the element type of each future's data (§9.4.4) */
    cq_eventdecl *event;
    cq_fragdecl *frag;
    cq_access *access;
    cq_viewdecl *view;
    cq_dmadecl *dma;
    cq_coll *coll;
    cq_laneset *laneset;
    cq_print *print;
    cq_launch *launch;
    int32_t ncxxcall;
    cq_cxxcall *cxxcall;
    int32_t once_sites;
    int64_t event_bytes;    /* shared memory of the event slots (the shared limit counts it) */
    int32_t *coll_slot;     /* per instruction: its index among collective instructions, or -1 */
    int32_t ncoll_ins;
    int32_t depth;          /* deepest IF/LOOP nesting */
    int32_t grid_sync;      /* 1 when a GRID_SYNC instruction is in the code */
    int32_t trigger_cluster;/* 1 when a TRIGGER_CLUSTER instruction is in the code */
    int32_t prints;         /* 1 when a PRINT instruction is in the code */
    int32_t global_atomics; /* 1 when an ATOMIC may reach memory other than shared */
    /* per instruction k, from uses[use_at[k]] on: the count of registers it reads, those
     * registers, the count it writes, those (the initialisation check, §14.4) */
    int32_t *use_at, *uses;
} cq_code;

typedef struct { int32_t block_size, grid_rank, span; cq_code code; } cq_kernel;

struct cq_prog {
    cq_code host;
    int32_t nkernels;
    cq_kernel *kernels;
    int32_t fn_span;
    char *strings;          /* the string table: string k is str_len[k] bytes at str_off[k] */
    int32_t ncxx;           /* the module's C++ functions (cq_prog_set_cxx) */
    cq_cxx_fn *cxx;
    int32_t nstrings;
    int64_t *str_off, *str_len;
};

/* ------------------------------------------------------------------ the machine */

typedef struct cq_chunk cq_chunk;    /* arena chunks (memory.c) */

typedef struct cq_buf {
    char *data;
    uint8_t *written;       /* poison mode: 1 where written; NULL otherwise */
    int32_t type, ndim, esize;
    int32_t code, slot, element;   /* the declaration (messages' "buffer" argument) */
    int64_t shape[CQ_MAX_RANK];
    int64_t count;
    /* a view with element strides (§8.3.2): element r of a box of extents ``shape`` lies
     * at position first + sum(r[d] * step[d]) of ``data``; strided 0: row-major */
    int32_t strided;
    int64_t first, step[CQ_MAX_RANK];
    const struct cq_buf *root;   /* a reshaped or strided view's buffer; NULL: itself */
    struct cq_shadow *shadow;    /* the race check's (race.c), made at its first access */
} cq_buf;

extern const int cq_type_size[CQ_NUM_DTYPES];

/* The bytes an element of a type takes on a GPU (croqvm.core.dtypes.width_bytes): its
 * storage, except bf16 and fp8, which are f32 values here. */
static inline int64_t cq_width_bytes(int32_t type)
{
    if (type == CQ_DT_BF16)
        return 2;
    if (type == CQ_DT_F8_E4M3 || type == CQ_DT_F8_E5M2)
        return 1;
    return cq_type_size[type];
}

/* §9.7 (croqvm/interp/memory.py swizzled_positions): the position in buffer ``b`` that
 * holds its logical element ``k`` under a swizzle of ``swizzle`` bytes (0: none). Byte
 * offset x goes to x ^ ((x & M) >> 3), M the log2(swizzle / 16) bits from bit 7 up;
 * elements after the last whole swizzle-sized block stay put. */
static inline int64_t cq_swizzled(const cq_buf *b, int64_t k, int32_t swizzle)
{
    int64_t w = cq_width_bytes(b->type);
    if (!swizzle || (k + 1) * w > b->count * w / swizzle * swizzle)
        return k;
    int64_t x = k * w, mask = (int64_t)((swizzle >> 4) - 1) << 7;
    return (x ^ ((x & mask) >> 3)) / w;
}

/* The instances of a buffer slot a lane sees: one, or one per element of a buffer
 * array (§8.5). */
typedef cq_buf **cq_insts;

typedef struct cq_transfer cq_transfer;   /* a DMA's data movement (dma.c) */

/* What a lane's future holds (croqvm/interp/memory.py Handle). */
typedef struct {
    cq_buf *buf;            /* NULL: a placeholder without data */
    int32_t nd, is_async, issued, refs, next_free;
    int64_t o[CQ_MAX_RANK], e[CQ_MAX_RANK];
    cq_lanes waited;
    cq_transfer *transfer;  /* its copy while it may still land (random schedule) */
    int32_t trace_copy;     /* tracing (trace.c): its async copy's landing, 1 + index; 0 none */
    struct cq_race_copy *race;   /* the race check's record of its async copy (race.c) */
} cq_handle;

typedef struct {
    uint8_t kind;           /* 0 if, 1 loop */
    int32_t opener, jump;
    uint32_t entered, other;/* other: the IF's else-lanes, or the LOOP's lanes that broke */
} cq_frame;

typedef struct cq_warp {
    struct cq_block *blk;
    char *regs;
    int32_t index, base, width;
    uint32_t act;
    int32_t pc, ip, state, hold;
    int32_t nstack;
    cq_frame *stack;
    int32_t blocker;        /* 0 none, 1 collectives (rdv), 2 event wait, 3 named barrier,
                             * 4 grid barrier */
    int32_t nrdv;
    int32_t rdv[CQ_WARP];
    int32_t ev, ev_span, ev_n;
    int32_t ev_lane[CQ_WARP], ev_slot[CQ_WARP];
    int32_t ev_parity;      /* a parity wait (WAIT_EVENT_AT, §10.6): ev_gen holds the ... */
    int64_t ev_gen[CQ_WARP];     /* ... generation each waiting lane waits for */
    int64_t *counts;        /* per collective instruction, per lane: executions (§7.4.3) */
    int32_t bar;            /* BAR_SYNC: the named barrier it waits at ... */
    int64_t bar_phase;      /* ... and the phase it arrived in; GRID_SYNC: the grid
                             * barrier's generation it waits to see released */
    uint32_t *written;      /* poison mode: per register, the lanes that have written it
                             * (croqvm/interp/initcheck.py Written); NULL otherwise */
    int32_t stmt;           /* the debugger's fast-forward (debug.c): the last statement
                             * instruction it ran in the block, -1 none */
    int32_t trace_settled;  /* tracing (trace.c): its block's track exists and nothing is
                             * left to settle before its next step (no wait of its own
                             * pending, no launch of the host's open) */
} cq_warp;

typedef struct {
    int32_t ip, unit_index, count, site, whole_unit, done, open, refs;
    cq_lanes members, arrived;
    /* tracing (trace.c): the latest arrival so far, and once complete the release and
     * when the participants are done; trace_flags 1: latest set, 2: complete */
    int32_t trace_flags;
    double trace_latest, trace_release, trace_done;
} cq_rdv;

typedef struct {
    int64_t need;
    int64_t *completed, *arrivals;
    int64_t *waits;         /* size x slots */
} cq_event;

typedef struct {
    int32_t rows, cols;     /* -1 until the first operation fixes a dynamic extent */
    int32_t has_data;
    int32_t pending;        /* asynchronous MMAs on it not yet waited (MMA_ASYNC) */
    int64_t ifill;
    double ffill;
    void *data;             /* rows x cols, int64_t (integer types) or double */
} cq_frag;

typedef struct cq_block {
    struct cq_call *call;
    const cq_code *code;
    int32_t kernel;         /* -1: the host program */
    const cq_launch *launch;
    int32_t size, nwarps;
    int32_t index[3], rank;
    uint32_t live[CQ_MAX_WARPS];
    cq_warp *warps;
    cq_insts *bufs;         /* per slot: its instances, or NULL before ALLOC (block-wide) */
    cq_insts **locals;      /* per slot, per lane (local storage) */
    int32_t **fut;          /* per future slot: per lane a handle, -1 none */
    cq_handle *handles;
    int32_t nhandles, caphandles, freehandle;
    cq_lanes *lanesets;
    cq_event *events;
    cq_rdv *rdvs;
    int32_t nrdvs, caprdvs;
    int32_t *open;          /* open rendezvous, in creation order */
    int32_t nopen, capopen;
    int64_t *once_arrivals; /* once_sites x size */
    int64_t *once_claimed;  /* once_sites x size (unit instances) */
    cq_frag ***frags;       /* per fragment: per unit instance */
    cq_transfer **transfers;/* async copies in issue order that may not have landed */
    int32_t ntransfers, captransfers;
    int32_t released;
    int32_t cur;            /* the warp running its quantum, or -1 */
    int32_t last;           /* the warp that ran last (where the block is), or -1 */
    int64_t quantum_n;
    cq_chunk *arena;        /* shared and local buffers, freed with the block */
    int64_t *shared;        /* per slot: bytes of its shared instances (the limit) */
    /* named barriers (§6.8): the count the current phase began with (0 before its first
     * arrival), the threads arrived in it, the phases completed */
    int32_t bar_count[CQ_NAMED_BARRIERS], bar_arrived[CQ_NAMED_BARRIERS];
    int64_t bar_phases[CQ_NAMED_BARRIERS];
    int64_t number;         /* row-major number in its launch */
    /* a launch run cluster by cluster (§10.8): the blocks of its cluster, itself
     * included (none: only itself), and whether it is done */
    struct cq_block **cluster;
    int32_t ncluster, done;
    struct cq_track *track; /* tracing (trace.c): the block's timeline, NULL until its first step */
    struct cq_race_block *race; /* the race check's clocks (race.c); NULL: no check */
} cq_block;

typedef struct cq_call {
    const cq_prog *prog;
    cq_opts opts;
    int64_t steps, lane_steps, slice_end;
    cq_block *host;
    cq_block *blk;          /* the kernel block running, or NULL */
    /* the launch in progress */
    int32_t launching;
    const cq_launch *launch;
    int64_t grid[3];
    int64_t cursor[3];      /* the next block's index */
    int64_t launches, blocks_run, block_number, blocks, block_start;   /* cq_position */
    int32_t block_size;
    int64_t *hval;          /* scalar arguments of the launch, bits of the kernel types */
    cq_insts **kglobals;    /* per kernel, per slot: global buffers declared in kernels */
    cq_chunk *arena;        /* host and kernel-global buffers, bound parameters */
    struct cq_pool *pool;   /* the launch's blocks running on threads (pool.c), or NULL */
    void *kg_lock;          /* a pthread mutex while blocks run at once, else NULL */
    int32_t serial;         /* the launch runs serially: again, after its pool failed */
    /* a cooperative launch with a grid barrier (§7.1.4): its resident blocks in start
     * order, the one running, how many started, the lowest-numbered finished one */
    int32_t coop;
    cq_block **resident;
    int32_t nresident, coop_i;
    int64_t coop_started, coop_max, grid_gen;
    int64_t finished_number;
    int32_t finished_index[3];
    /* a launch whose kernel triggers across the blocks of a cluster (§10.8): it runs
     * cluster by cluster, the blocks of the running one in ``resident``; the cluster's
     * extents (1 past its rank), its blocks, the next cluster's row-major number, and the
     * steps when the current round of turns began */
    int32_t clustered;
    int64_t cluster[3], cluster_blocks, cluster_next, round_start;
    /* output */
    char *out;
    size_t nout, capout;
    /* result */
    int32_t result_kind, result_type;
    int64_t result_bits;
    cq_buf *result_buf;
    /* faults */
    cq_record fault;
    int32_t internal;       /* the fault is an engine inconsistency */
    cq_block *fault_blk;    /* the block a deadlock or fault happened in (kept for views) */
    uint64_t rng;
    struct cq_trace *trace; /* tracing (trace.c, croqvm trace), or NULL */
    const uint8_t *trace_timed; /* tracing: per opcode, whether its step is timed (its
                             * time needs the state before it), or NULL */
    struct cq_race *race;   /* the race check (race.c), shared by a pool's workers; NULL: none */
    int64_t race_first;     /* the race check's segment of the launch's first block */
    /* the debugger's fast-forward (debug.c, cq_debug_launch): what stops a block, or
     * NULL; a launch that runs a range of its blocks only ends at block ``range_end`` */
    struct cq_debug_state *debug;
    const uint8_t *debug_pc;    /* per instruction: its hook runs before it */
    int64_t debug_step;         /* ... and before this step */
    const struct cq_watch *debug_watch;  /* ... and after each step, these elements */
    int32_t ndebug_watch;
    int32_t ranged;
    int64_t range_end;
    int64_t out_total;      /* bytes of output written, taken or not (debug.c's saves) */
} cq_call;

/* ------------------------------------------------------------------ shared helpers */

static inline void *cq_reg(cq_warp *w, uint32_t off) { return w->regs + off; }

/* The lanes of a mask, without the library call baseline x86-64 compiles
 * __builtin_popcount into. */
static inline int cq_popcount(uint32_t m)
{
    m = m - ((m >> 1) & 0x55555555u);
    m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
    return (int)((((m + (m >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}

/* The lanes a per-lane loop over ``m`` must cover: up to its highest lane (1 for the
 * one-lane host program). */
static inline int cq_span(uint32_t m)
{
    return m ? 32 - __builtin_clz(m) : 0;
}

/* The lowest lane of a mask (it must not be empty). */
static inline int cq_low(uint32_t m) { return __builtin_ctz(m); }

/* The lanes of a bool register (or of any array of one byte a lane, 0 or 1) that hold
 * true. */
static inline uint32_t cq_lane_bits(const char *reg, int width)
{
    const uint8_t *b = (const uint8_t *)reg;
    uint32_t m = 0;
    if (width == 32) {      /* eight lanes a word: each byte made 0 or 1 (no bit of a */
        for (int k = 0; k < 4; k++) {   /* byte reaches another's lowest), then one */
            uint64_t x;                 /* multiply gathers byte i's bit into bit i */
            memcpy(&x, b + 8 * k, 8);
            x |= x >> 4;
            x |= x >> 2;
            x |= x >> 1;
            x &= 0x0101010101010101ull;
            m |= (uint32_t)((x * 0x0102040810204080ull) >> 56) << (8 * k);
        }
        return m;
    }
    for (int i = 0; i < width; i++)
        m |= (uint32_t)(b[i] != 0) << i;
    return m;
}

/* Faults (call.c): cq_fault_new records one (``ins`` the faulting instruction or NULL,
 * ``lane`` a block lane or -1) and returns it for the caller to fill in; the handler
 * then returns CQ_ST_FAULT. The others are the common shapes. */
cq_record *cq_fault_new(cq_block *blk, const cq_ins *ins, int kind, int lane);
int cq_fault_lane(cq_warp *w, const cq_ins *ins, int kind, int i);   /* i: lane of w */
int cq_fault_shift(cq_warp *w, const cq_ins *ins, int i, int64_t count, int count_type,
                   int shift_type);
int cq_fault_convert(cq_warp *w, const cq_ins *ins, int i, int src, const void *x, int dst);
int cq_internal(cq_block *blk, const char *file, int line);
/* Arguments, in the order of the kind's template (croqvm/native/faults.py). */
void cq_put(cq_record *f, int64_t v);
void cq_put_u64(cq_record *f, int64_t v, int is_u64);
void cq_put_list(cq_record *f, int n, const int64_t *v);
void cq_put_double(cq_record *f, double x);
void cq_put_buffer(cq_record *f, const struct cq_buf *b);
void cq_put_value(cq_record *f, int type, const void *p);
#define CQ_INTERNAL_ERROR(blk) cq_internal((blk), __FILE__, __LINE__)

/* Conversions (alu.c): n lanes of type src at x into type dst at y; faults (float to
 * integer out of range) are reported for the lowest lane of act (bad lane index in
 * *bad, else -1). */
void cq_convert(int src, int dst, const void *x, void *y, int n, uint32_t act, int *bad);
double cq_to_double(int type, const void *p, int64_t i);
int64_t cq_to_int64(int type, const void *p, int64_t i);   /* integers and bool */

/* Allocation (memory.c): engine bookkeeping aborts when memory runs out; memory a
 * program asks for comes from an arena and fails softly (NULL). */
void *cq_xmalloc(size_t n);
void *cq_xcalloc(size_t n, size_t m);
void *cq_arena_alloc(cq_chunk **arena, size_t n);
void cq_arena_free(cq_chunk **arena);
void cq_arena_join(cq_chunk **into, cq_chunk *list);
cq_buf *cq_new_buffer(cq_chunk **arena, int type, int ndim, const int64_t *shape, int code,
                      int slot, int element, int poison, int defined);

/* Handlers outside engine.c return CQ_ST_OK / CQ_ST_FAULT. */
int cq_op_alloc(cq_warp *w, const cq_ins *ins);
int cq_op_fill(cq_warp *w, const cq_ins *ins);
int cq_op_load(cq_warp *w, const cq_ins *ins);
int cq_op_store(cq_warp *w, const cq_ins *ins);
int cq_op_update(cq_warp *w, const cq_ins *ins);
int cq_op_dimof(cq_warp *w, const cq_ins *ins);
int cq_op_atomic(cq_warp *w, const cq_ins *ins);
int cq_op_math(cq_warp *w, const cq_ins *ins);
int cq_op_dma(cq_warp *w, const cq_ins *ins);
int cq_op_fut_any(cq_warp *w, const cq_ins *ins);
int cq_op_wait(cq_warp *w, const cq_ins *ins);
int cq_op_swap(cq_warp *w, const cq_ins *ins);
int cq_op_fut_dim(cq_warp *w, const cq_ins *ins);
int cq_op_barrier(cq_warp *w, const cq_ins *ins);
int cq_op_once(cq_warp *w, const cq_ins *ins);
int cq_op_trigger(cq_warp *w, const cq_ins *ins);
int cq_op_trigger_cluster(cq_warp *w, const cq_ins *ins);
int cq_op_wait_event(cq_warp *w, const cq_ins *ins);
int cq_op_wait_event_at(cq_warp *w, const cq_ins *ins);
int cq_event_pending(const cq_block *blk, const cq_warp *w, int k, int64_t *gen);
int cq_op_fut_bind(cq_warp *w, const cq_ins *ins);
int cq_op_named_barrier(cq_warp *w, const cq_ins *ins);
int cq_op_grid_sync(cq_warp *w, const cq_ins *ins);
int cq_op_mma(cq_warp *w, const cq_ins *ins);
int cq_op_frag_elem(cq_warp *w, const cq_ins *ins);
int cq_op_print(cq_warp *w, const cq_ins *ins);
int cq_op_assert(cq_warp *w, const cq_ins *ins);
int cq_op_asm(cq_warp *w, const cq_ins *ins);
int cq_op_call_cxx(cq_warp *w, const cq_ins *ins);
int cq_op_call_extern(cq_warp *w, const cq_ins *ins);

/* Collectives (sync.c). */
typedef int (*cq_effect)(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);
int cq_arrive(cq_warp *w, const cq_ins *ins, int coll, int whole_unit);
int cq_recheck_rendezvous(cq_block *blk);
int cq_runnable(cq_warp *w);
void cq_release_blocker(cq_warp *w);
void cq_init_events(cq_block *blk);
int cq_rdv_effect(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);
int cq_uniform_regs(cq_block *blk, const int *lanes, int n, const int32_t *regs, int nregs);
int cq_uniform_value(cq_block *blk, const cq_rdv *rec, const int *lanes, int n, int r);
int cq_operands_differ(cq_block *blk, const cq_rdv *rec, int first, int lane, int label,
                       int tag, int words, const int64_t *a, const int64_t *b);

/* Effects of collectives, by opcode (dma.c, memory.c, mma.c). */
int cq_effect_fill(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);
int cq_effect_dma(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);
int cq_effect_wait(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);
int cq_effect_mma(cq_block *blk, const cq_ins *ins, const cq_rdv *rec, const int *lanes, int n);

/* Memory (memory.c). Lane-level lookups fault with the instruction ``ins``. */
#define CQ_PLACEHOLDER (-2)     /* a future holding dma.any: a handle without data */
cq_insts cq_instances(cq_block *blk, int slot, int lane);
cq_insts cq_allocate(cq_block *blk, int slot, int lane, int ndim, const int64_t *shape,
                     int defined, int *fault);
int cq_alloc_fault(cq_block *blk, const cq_ins *ins, int lane, int kind, int what, int ndim,
                   const int64_t *shape);
int cq_buffer_of(cq_warp *w, const cq_ins *ins, int slot, int arr, int i, cq_buf **out);
int cq_future_data(cq_warp *w, const cq_ins *ins, int slot, int i, cq_handle **out);
int cq_view_of(cq_warp *w, const cq_ins *ins, int v, int i, cq_buf *scratch, cq_buf **buf,
               int64_t *o, int64_t *e);
int64_t cq_lane_reg_int(cq_block *blk, int lane, int r);
cq_warp *cq_warp_of(cq_block *blk, int lane, int *i);
int32_t cq_handle_new(cq_block *blk);
void cq_transfer_unref(cq_transfer *t);
void cq_handle_set(cq_block *blk, int slot, int lane, int32_t h);
void cq_handle_unref(cq_block *blk, int32_t h);
int cq_same_view(const cq_block *blk, int32_t h, int32_t g);
int cq_same_bits(int type, const void *a, const void *b);
int cq_fill_lane(cq_block *blk, const cq_ins *ins, int slot, int lane, int vlane);
cq_insts cq_allocate_declared(cq_warp *w, const cq_ins *ins, int slot, int i);
int cq_check_kernel_end(cq_block *blk);

/* Output (output.c). */
void cq_out_write(struct cq_call *call, const char *s, size_t n);

/* The block and its warps (engine.c). */
void cq_finish(cq_warp *w);
int cq_settle(cq_warp *w);

/* Blocks on threads (pool.c). */
void cq_pool_start(cq_call *call);
int cq_pool_wait(cq_call *call, int ms);
void cq_pool_abandon(cq_call *call);
void cq_pool_where(const cq_call *call, cq_position *out);

/* Tracing (trace.c), while call->trace is set: cq_trace_before before a step that is
 * timed or of a warp not trace_settled, cq_trace_after after a timed step (an untimed
 * one: cq_trace_untimed, cq_trace.h). cold, so that the loop without tracing keeps its
 * registers. */
__attribute__((cold)) void cq_trace_before(cq_block *blk, cq_warp *w, int ip);
__attribute__((cold)) void cq_trace_after(cq_block *blk, cq_warp *w, int ip);
void cq_trace_free(struct cq_trace *trace);
/* The debugger's fast-forward (debug.c): call->debug_pc's bits per instruction: its
 * hook runs before it (CQ_HOOK_CALL); it is a statement's, so a warp running it notes it
 * (cq_warp.stmt, CQ_HOOK_STATEMENT). The hook stops before a step where CQ_HOOK_CALL or
 * debug_step say, after each step when a watched element changed (CQ_ST_FAULT with a
 * CQ_DEBUG_STOP record: the block stops), and when a block starts and ends. A watched
 * element: where its bytes are, how many (1, 2, 4 or 8), and the value the debugger last
 * saw in the low bytes of ``old``. */
enum { CQ_HOOK_CALL = 1, CQ_HOOK_STATEMENT = 2 };

typedef struct cq_watch {
    const uint8_t *at;
    uint64_t old;
    int32_t size;
} cq_watch;

static inline int cq_watch_changed(const cq_watch *wt, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t v = 0;
        switch (wt[k].size) {
        case 1: { uint8_t x; memcpy(&x, wt[k].at, 1); v = x; break; }
        case 2: { uint16_t x; memcpy(&x, wt[k].at, 2); v = x; break; }
        case 4: { uint32_t x; memcpy(&x, wt[k].at, 4); v = x; break; }
        default: memcpy(&v, wt[k].at, 8);
        }
        if (v != wt[k].old)
            return 1;
    }
    return 0;
}

__attribute__((cold)) int cq_debug_before(cq_block *blk, cq_warp *w, int ip);
__attribute__((cold)) int cq_debug_stop(cq_block *blk);
void cq_debug_block_start(cq_call *call);
void cq_debug_block_end(cq_block *blk);
void cq_debug_free(struct cq_debug_state *d);
/* The race check (race.c): state of the call and of each block, the synchronisation
 * it follows and the accesses it checks; an access hook returns CQ_ST_FAULT (a
 * CQ_RACE_STOP record) when the run races or does what only the reference engine
 * checks. */
void cq_race_new(cq_call *call);
void cq_race_free(cq_call *call);
void cq_race_block_new(cq_block *blk, int64_t first, int64_t number, int64_t blocks);
void cq_race_block_free(cq_block *blk);
void cq_race_launch(cq_call *call, const cq_launch *L, int64_t blocks);
void cq_race_sync_global(cq_call *call);
void cq_race_grid_released(cq_call *call);
void cq_race_relaunch(cq_call *call);
int cq_race_in_collective(const cq_block *blk);
void cq_race_collective(cq_block *blk, const cq_ins *ins, const int *lanes, int n);
void cq_race_collective_done(cq_block *blk);
void cq_race_trigger(cq_warp *w, int e, const int64_t *slots, const int64_t *completed,
                     const int64_t *arrivals, int64_t need);
void cq_race_waited(cq_warp *w, int e, int slot, int64_t gen);
void cq_race_bar_arrived(cq_warp *w, int id, int64_t phase);
void cq_race_bar_passed(cq_warp *w, int id, int64_t phase);
void cq_race_once(cq_warp *w, const cq_ins *ins, const uint8_t *claimed, const int64_t *nth);
void cq_race_effect_end(cq_warp *w);
int cq_race_elements(cq_warp *w, const cq_ins *ins, uint32_t lanes, cq_buf *one,
                     cq_buf *const *bufs, const int64_t *off, int write, const char *olds,
                     const char *news, const char *vals, int size);
int cq_race_atomic(cq_warp *w, const cq_ins *ins, uint32_t lanes, cq_buf *one,
                   cq_buf *const *bufs, const int64_t *off);
int cq_race_tile(cq_block *blk, const cq_ins *ins, const cq_buf *b, const int64_t *o,
                 const int64_t *e, int nd, int swizzle, int write, int lane);
int cq_race_copy_issue(cq_block *blk, const cq_ins *ins, int32_t h, const cq_buf *src,
                       const int64_t *so, const int64_t *se, int snd, int swz_src,
                       const cq_buf *dst, const int64_t *dO, const int64_t *dD, int dnd,
                       int swz_dst, int lane);
void cq_race_copy_waited(cq_block *blk, int32_t h, int lane);
void cq_race_copy_bound(cq_block *blk, int32_t h, int lane);
void cq_race_mma_loaded(cq_block *blk, const cq_ins *ins, const cq_buf *b, const int64_t *o,
                        const int64_t *e, int nd, int swizzle, int lane);
void cq_race_mma_async(cq_block *blk, const cq_ins *ins, int m, int lane);
void cq_race_mma_wait(cq_block *blk, int m, int lane);
int cq_race_lane_copy(cq_block *blk, const cq_buf *b, const int64_t *o, const int64_t *e,
                      int nd, int swizzle, int lane);

/* The project PRNG (SplitMix64). */
uint64_t cq_rng_next(uint64_t *state);
uint64_t cq_rng_below(uint64_t *state, uint64_t n);

#endif
