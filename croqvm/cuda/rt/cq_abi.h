/* The records the device (a GPU, or the CPU runtime) and the host exchange.
 *
 * croqvm/cuda/abi.py mirrors every type and enum here with ctypes; the CPU runtime
 * exports cq_abi_table (names, values, sizes and field offsets) and the host refuses a
 * library whose table disagrees with its mirror, so the two cannot drift apart.
 * Plain C layout (no pointers inside records), identical under nvcc and g++.
 */
#ifndef CQ_ABI_H
#define CQ_ABI_H

/* What stopped a thread: the fault record holds the first one in (block, lane) order,
   block linear in row-major order of the block indices (LANGUAGE.md §7.1.1). */
#define CQ_FAULT_KINDS(X)                                                               \
  X(CQ_FAULT_CHECK, 1)   /* a check of the generated code failed; site names it */      \
  X(CQ_FAULT_TIMEOUT, 2) /* GPU watchdog: a wait at `site` made no progress */          \
  X(CQ_FAULT_MISUSE, 3)  /* CPU runtime: the generated code broke a CUDA rule; args[0]  \
                            is a cq_misuse code (an internal error, never a user's) */

/* Rules of CUDA/PTX the CPU runtime checks because real hardware would hang, corrupt or
   behave undefinedly instead of complaining. */
#define CQ_MISUSES(X)                                                                   \
  X(CQ_MISUSE_BARRIER_ID, 1, "named barrier id outside 1..15")                          \
  X(CQ_MISUSE_BARRIER_COUNT, 2, "named barrier count not a positive multiple of 32 "    \
                                "or above the block size")                              \
  X(CQ_MISUSE_BARRIER_MIXED, 3, "threads of one barrier generation gave different counts") \
  X(CQ_MISUSE_BARRIER_OVERFLOW, 4, "more warps arrived at a named barrier than its count") \
  X(CQ_MISUSE_MBAR_COUNT, 5, "mbarrier expected count outside 1..2^20-1")               \
  X(CQ_MISUSE_MBAR_EMPTY, 6, "arrival on an mbarrier that expects no arrivals")         \
  X(CQ_MISUSE_CP_ASYNC_SIZE, 7, "cp.async size not 4, 8 or 16, or source size above it") \
  X(CQ_MISUSE_CP_ASYNC_ALIGN, 8, "cp.async address not aligned to the copy size")       \
  X(CQ_MISUSE_CP_ASYNC_DST, 9, "cp.async destination outside the block's shared memory") \
  X(CQ_MISUSE_CP_ASYNC_PENDING, 10, "thread exited with cp.async copies never waited")  \
  X(CQ_MISUSE_WARP_PARTIAL, 11, "warp-wide operation in a warp without 32 live threads") \
  X(CQ_MISUSE_WARP_DIVERGED, 12, "threads of one warp reached different warp-wide operations") \
  X(CQ_MISUSE_SMEM_CARVE, 13, "shared memory object outside the launch's shared memory") \
  X(CQ_MISUSE_WGMMA_FENCE, 14, "wgmma.mma_async without a wgmma.fence since the "       \
                               "accumulator was last waited for")                       \
  X(CQ_MISUSE_WGMMA_DESC, 15, "wgmma matrix descriptor with a base offset, a swizzled " \
                              "start outside an atom's first row, or a matrix outside "  \
                              "the block's shared memory")                               \
  X(CQ_MISUSE_WGMMA_PENDING, 16, "thread exited with wgmma results never waited for")   \
  X(CQ_MISUSE_SMEM_OVERRUN, 17, "a write past the end of the launch's shared memory")    \
  X(CQ_MISUSE_TMA_MAP, 18, "tensor-map TMA copy with a map the host marked unusable, or "  \
                           "a destination not 128-byte aligned (1024 when swizzled) or "  \
                           "outside the block's shared memory")                           \
  X(CQ_MISUSE_TMA_TX, 19, "more bytes landed on an mbarrier than its expect_tx announced")

/* What a thread of a deadlocked block (CPU runtime) waits for. */
#define CQ_WAIT_KINDS(X)                                                                \
  X(CQ_WAIT_NONE, 0)          /* runnable */                                            \
  X(CQ_WAIT_EXITED, 1)        /* finished or returned early */                          \
  X(CQ_WAIT_BLOCK_BARRIER, 2) /* a0: threads arrived, a1: threads awaited */            \
  X(CQ_WAIT_NAMED_BARRIER, 3) /* a0: barrier id, a1: threads arrived (warps * 32) */    \
  X(CQ_WAIT_MBARRIER, 4)      /* a0: its byte offset in shared memory, a1: the phase */ \
  X(CQ_WAIT_EVENT, 5)         /* a0: counter's byte offset in shared memory, a1: the    \
                                 generation waited for */                               \
  X(CQ_WAIT_WARP, 6)          /* a warp-wide operation; a0: lanes of the warp arrived */ \
  X(CQ_WAIT_FLAG, 7)          /* a published count; a0: its byte offset in shared memory,\
                                 a1: the value waited for */                            \
  X(CQ_WAIT_GRID, 8)          /* the grid barrier, for its block; a0: the generation    \
                                 waited for, a1: the fault site of a block finished     \
                                 without arriving */

/* What a CPU launch returns. */
#define CQ_STATUSES(X)                                                                  \
  X(CQ_OK, 0)                                                                           \
  X(CQ_FAULTED, 1)     /* cq_fault_record holds the fault; later blocks did not run */  \
  X(CQ_DEADLOCKED, 2)  /* cq_deadlock_record describes the block */                     \
  X(CQ_ERR_CONFIG, -1) /* grid or block size out of range */                            \
  X(CQ_ERR_NOMEM, -2)  /* stacks or shared memory could not be allocated */

#define CQ_ENUM_ITEM(name, value, ...) name = value,
enum cq_fault_kind { CQ_FAULT_KINDS(CQ_ENUM_ITEM) };
enum cq_misuse { CQ_MISUSES(CQ_ENUM_ITEM) };
enum cq_wait_kind { CQ_WAIT_KINDS(CQ_ENUM_ITEM) };
enum cq_status { CQ_STATUSES(CQ_ENUM_ITEM) };
#undef CQ_ENUM_ITEM

#define CQ_NO_FAULT 0xFFFFFFFFFFFFFFFFull
#define CQ_MAX_BLOCK 1024

typedef struct cq_fault_rec {
  unsigned long long key; /* (linear block << 32) | lane; CQ_NO_FAULT when none */
  int lock;               /* held while a thread writes the fields (GPU) */
  int kind;               /* cq_fault_kind */
  int site;               /* the generator's site id (check or wait statement) */
  int pad;
  long long args[16];     /* values the message shows; for a misuse args[0] is its code */
} cq_fault_rec;

typedef struct cq_thread_wait {
  int kind; /* cq_wait_kind */
  int site; /* the generator's site id of the waiting statement, -1 if none */
  long long a0, a1; /* what it waits for; a named barrier: the id, then count << 32 | arrived */
} cq_thread_wait;

typedef struct cq_deadlock_rec {
  long long block; /* linear block index */
  int nthreads;
  int pad;
  cq_thread_wait thread[CQ_MAX_BLOCK];
} cq_deadlock_rec;

/* Printed records: `data` holds, back to back, a header word (print format << 32 |
   1 << 31 | value count; never 0) and that many 64-bit values (integers sign- or
   zero-extended, floats as the bits of a double, bool as 0 or 1). `used` counts the
   words asked for, which may exceed `cap`: a record that does not fit is dropped, and
   the host reports how much was lost. */
typedef struct cq_print_buf {
  unsigned long long used;
  unsigned long long cap;
  unsigned long long *data;
} cq_print_buf;

typedef struct cq_launch_cfg {
  unsigned grid[3];
  unsigned block;                /* threads per block, 1..1024 (1-D blocks) */
  unsigned long long smem_bytes; /* dynamic shared memory per block */
  unsigned long long stack_bytes; /* CPU runtime: stack per thread; 0 = the default */
  unsigned cooperative;          /* 1: every block resident at once (a grid barrier) */
  unsigned cluster[3];           /* blocks per cluster in each dimension when the kernel
                                    triggers across a cluster's blocks (LANGUAGE.md §10.8),
                                    else 1s */
} cq_launch_cfg;

/* Where a CPU launch is, for the host's progress line, watchdog note and interrupt
   report; the host reads it while the launch runs. Every loop step records the running
   thread and its loop; once the host asks the launch to stop, it stays where it was. */
typedef struct cq_position_rec {
  unsigned long long steps;       /* loop iterations the launch's threads have run */
  unsigned long long block_start; /* `steps` when the running block began its turn */
  long long block;                /* linear index of the block running, -1 before one */
  int lane;                       /* the thread that ran the last loop step */
  int site;                       /* the fault site of that loop (its step limit), -1: none */
} cq_position_rec;

/* A tensor map as the CPU runtime reads it (the kernel parameter cq_tmap under -DCQ_CPU;
   on a GPU the parameter holds the driver's encoded CUtensorMap instead, see cq_gpu.cuh).
   Rank 2, dimension 0 innermost, as cuTensorMapEncodeTiled takes them. */
typedef struct cq_tensor_map {
  unsigned long long base;  /* address of element (0, 0) */
  long long dims[2];        /* elements per dimension */
  long long row_bytes;      /* bytes from one row (dimension 1) to the next */
  unsigned box[2];          /* the box a copy moves, elements per dimension */
  unsigned elem;            /* bytes per element */
  unsigned swizzle;         /* 0 (none), 32, 64 or 128: the shared layout's swizzle */
  unsigned ok;              /* 0: the host could not encode it (the copy goes another way) */
  unsigned pad;
} cq_tensor_map;

#endif /* CQ_ABI_H */
