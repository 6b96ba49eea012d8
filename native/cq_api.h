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

/* Element types, by name (the Python side maps croqvm.dtypes names onto these). */
enum cq_type {
    CQ_BOOL, CQ_S8, CQ_S16, CQ_S32, CQ_S64, CQ_U8, CQ_U16, CQ_U32, CQ_U64,
    CQ_F16, CQ_BF16, CQ_F32, CQ_F64, CQ_TF32, CQ_F8_E4M3, CQ_F8_E5M2, CQ_NTYPES
};

/* What cq_run returns. */
enum cq_status { CQ_DONE, CQ_SLICE, CQ_FAULT, CQ_INTERNAL };

/* Fault kinds: how Python words the record (croqvm/native/faults.py, one entry each). */
enum cq_fault_kind {
    CQ_F_NONE,
    CQ_F_STEP_LIMIT,        /* i0 the limit */
    CQ_F_CONVERT,           /* f0 the value, i0 destination type */
    CQ_F_DIV_ZERO,
    CQ_F_SHIFT,             /* i0 the count (as int64), i1 its type, i2 the shift's type */
    CQ_F_CONST,             /* i0 the constant's instruction (its conversion faults) */
    CQ_F_ASSERT,            /* i0 the message constant */
    CQ_F_ASSERT_FMT,        /* text: the lane's print text */
    CQ_F_GRID,              /* i0 dimension, i1 extent */
    CQ_F_BLOCK_SIZE,        /* i0 the size (too large) */
    CQ_F_BLOCK_SIZE_LOW,    /* i0 the size (below 1) */
    CQ_F_MDSPAN_SIZE,       /* i0 the extent */
    CQ_F_ALLOC,             /* i0 what (0 buffer, 1 DMA tile, 2 fragment), i1 name,
                               i2 rank, i3.. extents */
    CQ_F_ARRAY_INDEX,       /* i0 index, i1 buffer slot, i2 array size */
    CQ_F_BEFORE_DECL,       /* i0 buffer slot */
    CQ_F_NO_DATA,           /* i0 future */
    CQ_F_NOT_WAITED,        /* i0 future */
    CQ_F_RANGE,             /* i0 access, i1 dimension, i2 lo, i3 hi, i4 rank, i5.. index */
    CQ_F_UNINIT,            /* i0 access (-1: a buffer name, i1), i2 decl span, i3 rank,
                               i4.. element */
    CQ_F_EVENT_INDEX,       /* i0 index, i1 event */
    CQ_F_NOT_PARTICIPANT,   /* i0 site */
    CQ_F_UNIT_TERMINATED,   /* i0 site, i1 unit, i2 unit index; lanes */
    CQ_F_UNIT_INACTIVE,     /* i0 site, i1 unit, i2 unit index; lanes */
    CQ_F_DIVERGENT,         /* i0 site, i1 participants, i2 warp; lanes (warp lanes) */
    CQ_F_OPERANDS,          /* i0 site, i1 first lane, i2 label, i3 words per value,
                               i4.. first value then the other's (see faults.py) */
    CQ_F_EMPTY_TILE,        /* i0 name, i1 rank, i2.. origin, extents */
    CQ_F_TILE_OUTSIDE,      /* i0 name, i1 rank, i2.. origin, buffer shape */
    CQ_F_TILE_SHAPE,        /* i0 dma, i1 rank of tile, i2 rank of dst, i3.. tile, dst */
    CQ_F_UNWAITED,          /* i0 future, i1 issuing span */
    CQ_F_WAITED_TWICE,      /* i0 future */
    CQ_F_MMA_OUTSIDE,       /* i0 site, i1 name, i2 rank, i3.. element */
    CQ_F_FRAG_EMPTY,        /* i0 fragment */
    CQ_F_MMA_SHAPES,        /* i0 x name kind(0 frag,1 buffer), i1 x, i2 y kind, i3 y,
                               i4..i7 shapes [x0 x1 y0 y1] */
    CQ_F_MMA_STORE_UNITS,   /* i0 fragment, i1 units */
    CQ_F_DEADLOCK,          /* cq_view_* describe the block */
    CQ_F_NKINDS
};

/* A runtime error, or CQ_INTERNAL's origin. ``code`` is the faulting Code: -1 the host
 * program, k kernel k. ``span`` >= 0 overrides the instruction's span. ``lane`` is the
 * block lane (-1: none). ``lanes`` is the lane set some kinds list. */
typedef struct {
    int32_t kind;
    int32_t code;
    int32_t launch;         /* the host's launch running the block, -1 for the host */
    int32_t ip;
    int32_t span;
    int32_t lane;
    int32_t block[3];
    int64_t i[48];
    double f[2];
    uint32_t lanes[32];
    const char *text;
    const char *c_file;     /* CQ_INTERNAL: where the engine found the inconsistency */
    int32_t c_line;
} cq_fault;

typedef struct cq_prog cq_prog;
typedef struct cq_call cq_call;

typedef struct {
    int64_t max_steps;
    int32_t poison;
    int32_t schedule;       /* 0 round-robin, 1 random */
    uint64_t seed;
} cq_opts;

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
const char *cq_load_error(void);
/* The element types the engine computes with: bit t for enum cq_type t. */
uint32_t cq_supported_types(void);

cq_call *cq_call_new(const cq_prog *prog, const cq_opts *opts);
void cq_call_free(cq_call *call);
/* Host register r := the bytes at value (its storage type, one lane). */
void cq_set_reg(cq_call *call, int32_t r, const void *value);
/* Host buffer slot := a caller-owned array (written: poison flags or NULL), named
 * ``name`` (a string id) and declared at span ``decl_span``. */
int cq_bind(cq_call *call, int32_t slot, void *data, int32_t ndim, const int64_t *shape,
            uint8_t *written, int32_t name, int32_t decl_span);
int cq_run(cq_call *call, int64_t slice_steps);
const cq_fault *cq_get_fault(const cq_call *call);
size_t cq_take_output(cq_call *call, char *dst, size_t cap);
size_t cq_output_size(const cq_call *call);
void cq_stats(const cq_call *call, int64_t *steps, int64_t *lane_steps);
/* The returned value: 0 none, 1 scalar (its bytes in value, 8 at most; its type in
 * info->type), 2 buffer (info). */
int cq_result(const cq_call *call, void *value, cq_buffer_info *info);

/* The faulting block, for deadlock and partial-group reports. */
int cq_view_size(const cq_call *call, int32_t *nwarps, int32_t *size, uint32_t *live);
int cq_view_warp(const cq_call *call, int32_t w, cq_warp_view *out, int32_t *openers,
                 uint32_t *entered);
int cq_view_rdvs(const cq_call *call, int32_t w, cq_rdv_view *out, int32_t cap);
int cq_view_event_wait(const cq_call *call, int32_t w, int32_t *event, int32_t *span,
                       int32_t *lanes, int32_t *slots, int32_t cap);
int cq_view_event(const cq_call *call, int32_t event, int64_t *completed, int64_t *arrivals,
                  int64_t *waits, int32_t slots_cap, int32_t lanes_cap, int64_t *need);

/* cdef end */
#endif
