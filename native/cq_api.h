/* The C interface of croqvm's native engine (the extension croqvm._native).
 *
 * Everything between the "cdef" markers is what cffi's cdef sees (build_native.py), so it
 * holds plain declarations only. The Python driver (croqvm/native/) flattens a verified
 * bytecode function into an image (flatten.py documents the layout), loads it once,
 * binds the arguments, runs the call in slices with the GIL released and reads back
 * output, statistics, the result and, on a runtime error, a fault record that Python
 * renders (C never formats a message).
 *
 * Conventions: "slot" a buffer slot of the host program; "lane" a lane of a block;
 * lane sets are 1024-bit masks, lane l is bit l%32 of word l/32.
 */
#ifndef CQ_API_H
#define CQ_API_H
#include <stddef.h>
#include <stdint.h>
/* cdef begin */

/* What cq_run returns. */
enum cq_status { CQ_RUN_DONE, CQ_RUN_SLICE, CQ_RUN_FAULT, CQ_RUN_INTERNAL };

/* A runtime error: ``kind`` is a croqvm.core.faults.Kind (CQ_FAULT_* of cq_opcodes.h), or
 * CQ_DEADLOCK, whose report reads the block views below. Its arguments are ``n`` words
 * in ``i`` (croqvm/native/faults.py says how each argument type is written; a word whose
 * bit is set in ``unsigned_words`` holds a u64 value), plus the lane set ``lanes`` for a
 * lane-set argument. ``launch`` is the host's launch running the faulting block (-1: the
 * host program); ``span`` the span the message points at; ``lane`` the block lane at
 * fault (-1: none). CQ_RUN_INTERNAL's origin is ``c_file``:``c_line``. CQ_RACE_STOP is no
 * error: the race check's detector stopped the run (cq_race_stopped), whose report the
 * reference engine gives. CQ_DEBUG_STOP is none either: a block the debugger's
 * fast-forward leaves to the reference engine (cq_debug_launch). */
enum { CQ_DEADLOCK = 0, CQ_RACE_STOP = -1, CQ_DEBUG_STOP = -2 };

typedef struct {
    int32_t kind;
    int32_t launch;
    int32_t ip;
    int32_t span;
    int32_t lane;
    int32_t block[3];
    int32_t n;
    uint64_t unsigned_words;
    int64_t i[48];
    uint32_t lanes[32];
    const char *c_file;
    int32_t c_line;
} cq_record;

typedef struct cq_prog cq_prog;
typedef struct cq_call cq_call;

typedef struct {
    int64_t max_steps;      /* warp-steps allowed (INT64_MAX: no limit) */
    int32_t poison;
    int32_t schedule;       /* 0 round-robin, 1 random */
    uint64_t seed;
    int64_t max_grid[3];    /* blocks per grid dimension (croqvm.core.limits.MAX_GRID) */
    int32_t jobs;           /* threads a launch's blocks may run on */
    int32_t jobs_printing;  /* 1: a kernel that prints runs on them too (else on one) */
    int32_t race;           /* 1: the race check's detector (docs/EXECUTION.md §20) */
} cq_opts;

/* Where a call is (croqvm.core.position.RunPosition): counts, and the running block and warp
 * when there is one (``warp`` -1 otherwise). */
typedef struct {
    int64_t steps, lane_steps, launches, blocks_run;
    int32_t launch;         /* the running launch, -1 in host code */
    int32_t block[3];
    int64_t block_number, blocks, block_steps;
    int32_t warp, ip, loop_ip;   /* loop_ip: the innermost LOOP's, or -1 */
    uint32_t act;
    int32_t base;
} cq_position;

/* A buffer as Python sees it (result buffers, bound parameters). */
typedef struct {
    void *data;
    int32_t type;
    int32_t ndim;
    int64_t shape[8];
} cq_buffer_info;

/* A snapshot of one warp of the faulting block, for deadlock reports. */
typedef struct {
    int32_t state;          /* 0 ready, 1 blocked, 2 done */
    int32_t ip;
    uint32_t act;
    uint32_t live;
    int32_t base;
    int32_t width;
    int32_t nframes;
    int32_t blocker;        /* 0 none, 1 collectives, 2 event wait */
} cq_warp_view;

typedef struct {
    int32_t ip;             /* the collective's instruction */
    int32_t site;
    int32_t unit_index;
    int32_t whole_unit;
    int32_t done;
    uint32_t members[32];
    uint32_t arrived[32];
} cq_rdv_view;

cq_prog *cq_load(const int64_t *image, size_t nwords, const char *strings, size_t nbytes);
void cq_prog_free(cq_prog *prog);
/* The entry points of the module's C++ functions (croqvm/cuda/cxx.py), in Module.cxx order:
 * fn(args, result), args[i] pointing to argument i, result to the result (NULL: void). */
typedef void (*cq_cxx_fn)(void *const *args, void *result);
void cq_prog_set_cxx(cq_prog *prog, int32_t n, cq_cxx_fn *fns);
const char *cq_load_error(void);

cq_call *cq_call_new(const cq_prog *prog, const cq_opts *opts);
void cq_call_free(cq_call *call);
/* Host register r := the bytes at value (its storage type, one lane). */
void cq_set_reg(cq_call *call, int32_t r, const void *value);
/* Host buffer slot := a caller-owned array (written: poison flags or NULL). */
int cq_bind(cq_call *call, int32_t slot, void *data, int32_t ndim, const int64_t *shape,
            uint8_t *written);
int cq_run(cq_call *call, int64_t slice_steps);
const cq_record *cq_get_fault(const cq_call *call);
size_t cq_take_output(cq_call *call, char *dst, size_t cap);
size_t cq_output_size(const cq_call *call);
void cq_where(const cq_call *call, cq_position *out);
/* Stop a launch whose blocks run on threads (an interrupt): the position of each block
 * that was running, at most ``max``, in ``out`` by block; returns how many. */
int cq_pool_interrupt(cq_call *call, cq_position *out, int max);
/* The returned value: 0 none, 1 scalar (its bytes in value, 8 at most; its type in
 * info->type), 2 buffer (info). */
int cq_result(const cq_call *call, void *value, cq_buffer_info *info);
/* 1 when the race check's detector stopped the run (opts.race): it races, or does what
 * only the reference engine checks; 0 otherwise. */
int cq_race_stopped(const cq_call *call);

/* The faulting block, for deadlock and partial-group reports. */
int cq_view_size(const cq_call *call, int32_t *nwarps, int32_t *size, uint32_t *live);
int cq_view_warp(const cq_call *call, int32_t w, cq_warp_view *out, int32_t *openers,
                 uint32_t *entered, int32_t cap);
int cq_view_rdvs(const cq_call *call, int32_t w, cq_rdv_view *out, int32_t cap);
/* A warp blocked at WAIT_EVENT: event, then for the first of its lanes still waiting:
 * slot, completed generations, arrivals, arrivals needed, the generation it waits for. */
void cq_view_event_wait(const cq_call *call, int32_t w, int64_t *out);
/* A warp blocked at BAR_SYNC: the named barrier, the threads arrived in its current
 * phase, the count that phase began with. */
void cq_view_named_barrier(const cq_call *call, int32_t w, int64_t *out);

/* Tracing (croqvm trace: croqvm/trace/native.py, docs/TRACE.md). cq_trace_start, before
 * the first cq_run, gives every warp a clock that the cost model ``model`` advances (its
 * arrays must outlive the call); cq_trace_finish, after the last, closes what is open
 * (``stopped``: the run stopped with a runtime error). Then the timeline reads back:
 * slices in the order they closed (a wait's and a copy's details on the side), flows,
 * the processes (blocks) in the order they started and the totals of each statement
 * row. croqvm/trace/recorder.py is the
 * reference: the same slices, times and flows. */
typedef struct {
    double start, end;
    int32_t pid, tid;
    int32_t row;            /* run, wait, launch: the statement's row; copy: -1 */
    int32_t lanes;          /* run, copy: lanes; launch: blocks */
    uint32_t mask;          /* run: its lanes when ``masked`` (bit i lane i); wait, copy:
                             * its details, an index of cq_trace_details */
    uint8_t kind;           /* 0 run, 1 wait, 2 copy, 3 launch */
    uint8_t masked;         /* run: not the whole warp */
    uint16_t unused;
} cq_slice;

/* What a wait waits for, or what a copy is. */
typedef struct {
    double bytes;           /* copy: the bytes it moves */
    int32_t code;           /* 0 the host program, 1 + k kernel k */
    int32_t what;           /* wait: CQ_WAIT_* */
    int32_t index;          /* wait: the collective site, event, future or barrier; copy:
                             * the DMA descriptor */
    int32_t slot;           /* CQ_WAIT_EVENT_SLOT: the slot */
    int32_t ip;             /* copy: its instruction */
    int32_t row;            /* wait: its slice's statement row; copy: -1 (so a detail
                             * tells its slice's kind and row without the slices) */
} cq_detail;

enum { CQ_WAIT_NOTHING, CQ_WAIT_COLL, CQ_WAIT_EVENT_SLOT, CQ_WAIT_EVENT, CQ_WAIT_FUTURE,
       CQ_WAIT_BARRIER, CQ_WAIT_STOPPED };

/* An arrow through n points: kind 0 a DMA, 1 a TMA copy, 2 a trigger. */
typedef struct {
    int32_t kind, n;
    int32_t pid[3], tid[3];
    double t[3];
} cq_flow;

/* A block's process: its launch (1 the first), kernel, index, warps and copy tracks. */
typedef struct {
    int32_t pid, launch, kernel, rank, nwarps, ncopies;
    int64_t index[3];
} cq_process;

typedef struct {
    int64_t steps, lanes, slots;
    double cycles, wait;
} cq_stat;

/* The cost model, resolved per instruction by Python: ``cost`` and ``row`` (the statement
 * row) of instruction ip of code c (0 the host program, 1 + k kernel k) at code_at[c] +
 * ip; whether DMA descriptor d of code c is a TMA copy at tma[dma_at[c] + d]; per opcode
 * whether its step is timed (it may wait, or its cost depends on what it does); per dtype
 * its bits and an MMA's rate on it (multiply-adds per cycle, a whole SM). */
typedef struct {
    int32_t ncodes, nrows;
    const int32_t *code_at;
    const double *cost;
    const int32_t *row;
    const int32_t *dma_at;
    const uint8_t *tma;
    const uint8_t *timed;
    const int32_t *bits;
    const double *macs;
    double barrier, launch, dma_latency, dma_rate, tma_latency, tma_rate, mma_latency,
           mma_move;
} cq_trace_model;

void cq_trace_start(cq_call *call, const cq_trace_model *model);
void cq_trace_finish(cq_call *call, int32_t stopped);
/* The slices, handed over: the caller frees them with cq_trace_release. */
cq_slice *cq_trace_take_slices(cq_call *call, int64_t *n);
void cq_trace_release(void *slices);
/* The slices recorded so far, left in place; forgotten (their memory kept for the next)
 * once written: croqvm trace -o writes them as the run goes, between its slices of
 * steps. */
const cq_slice *cq_trace_slices(const cq_call *call, int64_t *n);
void cq_trace_forget_slices(cq_call *call);
const cq_detail *cq_trace_details(const cq_call *call, int64_t *n);
const cq_flow *cq_trace_flows(const cq_call *call, int64_t *n);
const cq_process *cq_trace_processes(const cq_call *call, int64_t *n);
const cq_stat *cq_trace_stats(const cq_call *call);
/* When the latest slice ends (cycles; 0 without slices). */
double cq_trace_end(const cq_call *call);

/* The debugger's fast-forward (croqvm/debug/forward.py): blocks first..last-1 of host
 * launch ``launch`` run as cq_run runs a launch, the host registers (cq_set_reg) and the
 * buffers it binds (cq_bind) being those the reference engine holds, from step counts
 * ``steps`` and ``lane_steps`` on (the random schedule draws from opts.seed, the
 * reference scheduler's state); cq_run then returns CQ_RUN_DONE after block last-1.
 * With ``dbg`` (cq_debug_attach, before cq_debug_launch) the run ends with
 * CQ_DEBUG_STOP in the first block where the debugger could stop, which is left to the
 * reference engine (cq_where names it): before a warp runs an instruction ip with
 * stop_pc[ip] set (a statement at a breakpoint's line), before step stop_step, or after
 * an instruction when the bytes of a watched element differ from ``old``. With ``place``
 * (per kernel instruction: its statement's place as a number, -1 none; per place
 * ``caller``, the place of the call it lies in or -1, and ``calls``, how many calls it
 * lies in: croqvm/debug/frames.py) each block that ends records, per warp and depth
 * (control depth and calls), its last statement start there and the block's first one
 * (cq_debug_events), by session.py's rule of a new statement.
 * With ``nsave`` buffers, the host slots ``save_slot``, their bytes are saved before the
 * first block and before each later block that begins at least ``save_every``
 * lane-steps after the last save, so that a run on the real memory can go back to the
 * start of a block before the one it stopped in (cq_debug_saved): over the older of two
 * saves, in two areas, save_to[area * nsave + k] for buffer k.
 * cq_debug_launch returns 0, or 1 with the fault the LAUNCH gives recorded. */
typedef struct {
    const uint8_t *stop_pc;
    int64_t stop_step;
    const int32_t *place;
    int32_t nwatch;
    const int32_t *watch_slot;      /* the host buffer slot */
    const int64_t *watch_offset;    /* the element's byte offset */
    const int32_t *watch_size;      /* its bytes: 1, 2, 4 or 8 */
    const uint8_t *watch_old;       /* 16 bytes a watch: the value last seen */
    int32_t nsave;
    const int32_t *save_slot;
    void *const *save_to;
    int64_t save_every;
    const uint8_t *statement;       /* per kernel instruction: 1 where a statement can
                                     * start (cq_debug_image's notes), or NULL */
    const int32_t *caller;          /* with ``place``: per place */
    const int32_t *calls;
} cq_debug;

void cq_debug_attach(cq_call *call, const cq_debug *dbg);
int cq_debug_launch(cq_call *call, int32_t launch, int64_t first, int64_t last,
                    int64_t steps, int64_t lane_steps);
/* Statement starts recorded, 4 words each: step, block number, warp, depth. */
const int64_t *cq_debug_events(const cq_call *call, int64_t *n);
/* The last save (``which`` 0) or the one before (1): the block it was made before (-1:
 * none), the steps, lane-steps, random schedule's state and bytes of output so far then,
 * and its area. */
void cq_debug_saved(const cq_call *call, int which, int64_t *out);
/* The random schedule's state after the run. */
uint64_t cq_rng_state(const cq_call *call);

/* The image of the block a run stopped in before an instruction (stop_pc or stop_step),
 * for the reference engine to go on from there (croqvm/debug/forward.py _Image).
 * cq_debug_image: 0 when the run did not stop so, or the block holds what the image
 * does not carry (an open collective other than a block barrier's, an async copy in
 * flight, a future naming a buffer not the block's, the initialisation check's marks, a warp at
 * the grid barrier); else 1, the
 * block's statement starts so far recorded (cq_debug_events), and ``head`` = the warp
 * about to run, the steps when the block started, the words cq_debug_warp writes at
 * most, the block's lanes. cq_debug_warp: warp k's state, pc, ip, hold, active lanes,
 * live lanes, last statement instruction (-1 none), blocker (0 none, 1 collectives, 2
 * an event, 3 a named barrier), control depth, then per frame kind (0 if, 1 loop),
 * opener, jump, entered lanes, other lanes (an IF's else lanes, a LOOP's broken ones);
 * then the collectives' count and each one's open rendezvous (-1: completed), or an
 * event wait's event, parity (0/1), n and n times lane, slot, generation; a
 * named barrier's number and phase; then per collective instruction it has run its
 * index and 32 execution counts, ended by -1. Returns the words written.
 * cq_debug_reg: warp k's register r, its lanes in storage type. cq_debug_buffer: the
 * data of instance ``element`` of buffer slot ``slot`` (a local one: of block lane
 * ``lane``), its extents in ``shape``; NULL before its ALLOC. cq_debug_block: per
 * event its completed generations and arrivals per slot and its waits per lane and
 * slot, then per named barrier its count, threads arrived and phases, then per ONCE
 * site its arrivals per lane and its claims per unit instance. cq_debug_future: the
 * handle future ``slot`` of block lane ``lane`` holds (-1: none, and ``words`` as it
 * was), with its buffer (0 none: a placeholder; 1 a block-wide slot's, 2 a lane's
 * local one), that slot, lane and instance, its rank, origin, extents, whether async,
 * the issuing span and the lanes that waited for it (32 per word, 32 words). */
int cq_debug_image(cq_call *call, int64_t *head);
int32_t cq_debug_future(const cq_call *call, int32_t slot, int32_t lane, int64_t *words);
/* The k-th open rendezvous in creation order (-1: none), with its instruction, unit
 * instance, execution count, collective site, whether the whole unit takes part, then
 * its member lanes and arrived lanes (32 per word, 32 words each). */
int32_t cq_debug_rendezvous(const cq_call *call, int32_t k, int64_t *words);
/* Unit instance u's copy of fragment m: NULL when it has none; else ``words`` = its
 * rows, columns (-1: not fixed yet), pending asynchronous MMAs, whether it has data,
 * its fill value as an integer and as the bits of a double, and the data (rows x
 * columns, int64 for an integer type, else double) or ``words`` when it has none. */
const void *cq_debug_fragment(const cq_call *call, int32_t m, int32_t u, int64_t *words);
int64_t cq_debug_warp(const cq_call *call, int32_t k, int64_t *words);
void cq_debug_reg(const cq_call *call, int32_t k, int32_t r, void *out);
const void *cq_debug_buffer(const cq_call *call, int32_t slot, int32_t lane, int32_t element,
                            int64_t *shape);
void cq_debug_block(const cq_call *call, int64_t *words);

/* The Trace Event Format text of a trace's slices and flows (native/trace_text.c;
 * croqvm/trace/output.py ``events`` is the specification), each event after a comma but
 * the first when ``comma`` is 0. Strings are handed as JSON, string k text[at[k]] up to
 * text[at[k + 1]], -1 none: per statement row a statement slice's name and "args" item
 * (run_name, run_where), a launch's name (launch_name) and its or a wait's item (where);
 * per detail a wait's name, or a copy's without its closing quote (the bytes follow), and
 * its item (detail_name, detail_where); per flow kind its name. Times are cycles times
 * ``scale``, microseconds, from 0 up to 2^39 (see us() there). */
typedef struct {
    const cq_slice *slices;
    int64_t nslices;
    const cq_detail *details;
    const cq_flow *flows;
    int64_t nflows;
    double scale;
    const char *text;
    const int64_t *at;
    const int32_t *run_name, *run_where, *launch_name, *where, *detail_name, *detail_where,
                  *flow_name;
    int32_t comma;
    int64_t slice, flow;        /* where the next call goes on */
    int32_t point;
    int64_t events;             /* the events written */
} cq_trace_text;

/* Fills ``buf`` with the next whole events (``cap`` bytes hold 256 more than the two
 * longest strings); returns the bytes written, 0 once every event is. */
int64_t cq_trace_text_next(cq_trace_text *tx, char *buf, int64_t cap);

/* After ISA-L's deflate (a .json.gz trace): clears the upper halves of the vector
 * registers, which its assembly leaves in use. Until then every SSE instruction of the
 * engine (built without AVX) waits on them: runs in the same thread took 3x as long
 * (a 512^3 1P1C matmul: 0.37 s, then 1.09 s). A no-op on a CPU without AVX. */
void cq_clear_upper_vectors(void);
/* Whether those upper halves are in use now (XINUSE): 1 or 0, -1 where the CPU can not
 * tell. */
int32_t cq_upper_vectors_in_use(void);

/* cdef end */
#endif
