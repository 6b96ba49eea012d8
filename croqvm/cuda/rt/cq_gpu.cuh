/* The GPU implementation of the croqvm CUDA runtime: CUDA built-ins and inline PTX for
 * sm_80 and sm_90a, no CCCL headers (they triple compile times).
 *
 * Faults are recorded, never raised with __trap(): a trap poisons the CUDA context
 * until the process ends. Spin waits (mbarrier, events) watch %globaltimer: a wait
 * that makes no progress for cq_watchdog_ns nanoseconds (0: never) records a
 * CQ_FAULT_TIMEOUT fault naming its site and exits the thread, so a deadlocked kernel
 * ends with a report instead of hanging the GPU.
 */
#ifndef CQ_GPU_CUH
#define CQ_GPU_CUH

#define CQ_KERNEL extern "C" __global__
#define CQ_LAUNCH_BOUNDS(...) __launch_bounds__(__VA_ARGS__)
#define CQ_MAXNREG(n) __maxnreg__(n)
#define CQ_DEV static __device__ __forceinline__
#define CQ_HD static __host__ __device__ __forceinline__
#define CQ_OUTLINED static __device__ __noinline__   /* big helpers: compiled once */
#define CQ_UNROLL _Pragma("unroll")   /* a loop whose indices must become constants */

typedef unsigned long long cq_mbar;
typedef unsigned long long cq_mbar_token;

#include "cq_mma.h"
#include "cq_wgmma.h"

extern "C" {
__device__ cq_fault_rec cq_fault_record = {CQ_NO_FAULT, 0, 0, 0, 0, {0}};
__device__ unsigned long long cq_watchdog_ns = 0;
__device__ cq_print_buf cq_print_state = {0, 0, 0};
__device__ unsigned long long cq_step_limit = ~0ull;
/* The grid barrier of a cooperative launch: blocks arrived at its open generation, and
   generations completed. The host zeroes both before each cooperative launch. */
__device__ unsigned cq_grid_state[2] = {0, 0};
}

/* 1024-byte aligned: the swizzled layouts of TMA copies and wgmma repeat every 1024 bytes
   of shared address, and generated code places them at offsets from here. */
extern __shared__ __align__(1024) unsigned char cq_smem_buf[];

CQ_DEV int cq_lane() { return (int)threadIdx.x; }
CQ_DEV int cq_block_size() { return (int)blockDim.x; }
CQ_DEV int cq_block_idx(int d) { return (int)(d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : blockIdx.z); }
CQ_DEV int cq_grid_dim(int d) { return (int)(d == 0 ? gridDim.x : d == 1 ? gridDim.y : gridDim.z); }
CQ_DEV unsigned char *cq_smem() { return cq_smem_buf; }
/* A loop's next iteration is past the step limit (a GPU run is stopped by the watchdog). */
CQ_DEV bool cq_steps_over(unsigned long long steps, unsigned long long limit, int site) {
  return steps > limit;
}
/* The thread reached the end of its kernel (the CPU runtime's block barrier goes on
   waiting for it; here it exits). */
CQ_DEV void cq_kernel_finished() {}
CQ_DEV unsigned cq_smem_bytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

CQ_DEV unsigned cq_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

CQ_DEV void cq_fence_block() { __threadfence_block(); }
CQ_DEV void cq_fence_global() { __threadfence(); }

CQ_DEV unsigned cq_atomic_or(unsigned *p, unsigned v) { return atomicOr(p, v); }
CQ_DEV unsigned cq_atomic_and(unsigned *p, unsigned v) { return atomicAnd(p, v); }
CQ_DEV unsigned cq_popc(unsigned v) { return (unsigned)__popc(v); }
CQ_DEV unsigned cq_atomic_cas(unsigned *p, unsigned expect, unsigned v) {
  return atomicCAS(p, expect, v);
}
CQ_DEV unsigned cq_atomic_add(unsigned *p, unsigned v) { return atomicAdd(p, v); }

/* A lane's own memory of a size known at run time: the device heap. */
CQ_DEV void *cq_malloc(unsigned long long bytes) { return malloc(bytes); }
CQ_DEV void cq_free(void *p) { free(p); }

/* The thread ends here (PTX exit: barriers stop waiting for it, nothing traps). */
CQ_DEV void cq_thread_exit() { asm volatile("exit;"); }

/* Appends one printed record (cq_abi.h); records beyond the buffer are counted only.
   Nothing is printed once a fault is recorded: the engines stop at the first one. */
CQ_DEV void cq_print(int fmt, int n, const unsigned long long *values) {
  if (*(volatile unsigned long long *)&cq_fault_record.key != CQ_NO_FAULT) return;
  unsigned long long at = atomicAdd(&cq_print_state.used, (unsigned long long)n + 1);
  if (at + n + 1 > cq_print_state.cap) return;
  cq_print_state.data[at] = (unsigned long long)fmt << 32 | 0x80000000u | (unsigned)n;
  for (int i = 0; i < n; i++) cq_print_state.data[at + 1 + i] = values[i];
}

/* ------------------------------------------------------------------ faults */

/* The fault record is claimed by the lowest (block, thread) key: cq_record_claim gives
   true, with the record's lock held, when this thread's key wins; the caller writes the
   values and cq_record_publish releases it. Values go one by one, not through an array:
   a kernel keeps no stack frame for its fault sites. A module with setmaxnreg defines
   CQ_INLINE_RECORDS: ptxas cannot allocate registers for a call made where a warp's
   register count has changed, so there they are inlined. */
#ifdef CQ_INLINE_RECORDS
#define CQ_RECORD_FN CQ_DEV
#else
#define CQ_RECORD_FN CQ_OUTLINED
#endif

CQ_RECORD_FN bool cq_record_claim() {
  unsigned long long linear =
      ((unsigned long long)blockIdx.x * gridDim.y + blockIdx.y) * gridDim.z + blockIdx.z;
  unsigned long long key = linear << 32 | threadIdx.x;
  if (key >= *(volatile unsigned long long *)&cq_fault_record.key) return false;
  /* sm_70+ schedules the threads of a warp independently, so a lock may be spun on */
  while (atomicCAS(&cq_fault_record.lock, 0, 1) != 0) {}
  __threadfence();
  if (key < cq_fault_record.key) return true;
  __threadfence();
  atomicExch(&cq_fault_record.lock, 0);
  return false;
}

CQ_RECORD_FN void cq_record_publish(int kind, int site, int n) {
  for (int i = n; i < 16; i++) cq_fault_record.args[i] = 0;
  cq_fault_record.kind = kind;
  cq_fault_record.site = site;
  cq_fault_record.key =
      ((unsigned long long)blockIdx.x * gridDim.y + blockIdx.y) * gridDim.z + blockIdx.z
      << 32 | threadIdx.x;
  __threadfence();
  atomicExch(&cq_fault_record.lock, 0);
}

CQ_DEV void cq_record(int kind, int site, const long long *args, int n) {
  if (!cq_record_claim()) return;
  for (int i = 0; i < n; i++) cq_fault_record.args[i] = args[i];
  cq_record_publish(kind, site, n);
}

CQ_DEV void cq_fault_n(int site, const long long *args, int n) {
  cq_record(CQ_FAULT_CHECK, site, args, n);
}

/* cq_fault_n of N values known to the caller: unrolled, so they stay in registers. */
template <int N> CQ_DEV void cq_fault_values(int site, const long long (&args)[N]) {
  if (!cq_record_claim()) return;
#pragma unroll
  for (int i = 0; i < N - 1; i++) cq_fault_record.args[i] = args[i];
  cq_record_publish(CQ_FAULT_CHECK, site, N - 1);
}

CQ_DEV unsigned long long cq_now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Spins until ready(); after cq_watchdog_ns without it, records a timeout and exits. */
template <class Ready> CQ_DEV void cq_spin(int site, Ready ready) {
  if (ready()) return;
  unsigned long long limit = cq_watchdog_ns, start = limit ? cq_now_ns() : 0;
  unsigned backoff = 32;
  while (!ready()) {
    __nanosleep(backoff);
    if (backoff < 1024) backoff *= 2;
    if (limit && cq_now_ns() - start > limit) {
      cq_record(CQ_FAULT_TIMEOUT, site, 0, 0);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
      /* a rendezvous inside a wgmma region (emit_wgmma.py): see cq_wgmma_wait_all */
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
      asm volatile("exit;");
    }
  }
}

/* ------------------------------------------------------------------ barriers */

/* barrier.sync 0 rather than __syncthreads (bar.sync, .aligned): the threads of a warp
   may reach it at different times (after spin waits), which .aligned forbids. */
CQ_DEV void cq_sync_block(int site) {
  (void)site;
  asm volatile("barrier.sync 0;" ::: "memory");
}

CQ_DEV void cq_sync_named(int id, int count, int site) {
  (void)site;
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

CQ_DEV void cq_arrive_named(int id, int count, int site) {
  (void)site;
  asm volatile("barrier.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/* The engines' named barriers: a count mixed within a phase is the hardware's to
   mishandle here (the CPU runtime reports it as a fault of `fault_site`). */
CQ_DEV bool cq_bar_sync(int id, int count, int site, int fault_site) {
  (void)fault_site;
  cq_sync_named(id, count, site);
  return true;
}

CQ_DEV bool cq_bar_arrive(int id, int count, int site, int fault_site) {
  (void)fault_site;
  cq_arrive_named(id, count, site);
  return true;
}

CQ_DEV void cq_mbar_init(cq_mbar *bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(cq_smem_addr(bar)), "r"(count)
               : "memory");
}

CQ_DEV cq_mbar_token cq_mbar_arrive(cq_mbar *bar) {
  cq_mbar_token token;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];"
               : "=l"(token) : "r"(cq_smem_addr(bar)) : "memory");
  return token;
}

CQ_DEV void cq_mbar_arrive_drop(cq_mbar *bar) {
  asm volatile("{ .reg .b64 state; mbarrier.arrive_drop.shared.b64 state, [%0]; }"
               ::"r"(cq_smem_addr(bar)) : "memory");
}

CQ_DEV bool cq_mbar_done(cq_mbar *bar, cq_mbar_token token) {
  unsigned done;
#if __CUDA_ARCH__ >= 900
  asm volatile("{ .reg .pred p; mbarrier.try_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(cq_smem_addr(bar)), "l"(token) : "memory");
#else
  asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(cq_smem_addr(bar)), "l"(token) : "memory");
#endif
  return done != 0;
}

CQ_DEV void cq_mbar_wait(cq_mbar *bar, cq_mbar_token token, int site) {
  cq_spin(site, [=] { return cq_mbar_done(bar, token); });
}

/* ------------------------------------------------------------------ events */

/* Counter events (LANGUAGE.md §10.3) instead of mbarrier parity: a slot may run
   several generations ahead of a waiter (surplus triggers, `= ready`), which one
   parity bit cannot tell apart. The release/acquire pair orders the data written
   before a trigger before the reads after the matching wait. */
CQ_DEV void cq_event_trigger(unsigned *arrivals) {
  asm volatile("red.release.cta.shared.add.u32 [%0], 1;" ::"r"(cq_smem_addr(arrivals))
               : "memory");
}

/* A lane binding TMA copies to an event slot adds their barriers to the slot's set
   (§10.7), before its arrival releases them; the set only grows. */
CQ_DEV void cq_landings_publish(unsigned long long *landings, unsigned long long bars) {
  if ((*(volatile unsigned long long *)landings & bars) != bars) atomicOr(landings, bars);
}

CQ_DEV unsigned cq_event_load(const unsigned *arrivals) {
  unsigned v;
#if __CUDA_ARCH__ >= 900   /* a cluster-scope trigger (§10.8) releases at cluster scope */
  asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];"
               : "=r"(v) : "r"(cq_smem_addr(arrivals)) : "memory");
#else
  asm volatile("ld.acquire.cta.shared.u32 %0, [%1];"
               : "=r"(v) : "r"(cq_smem_addr(arrivals)) : "memory");
#endif
  return v;
}

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* The blocks of the thread block cluster (1 without a cluster launch). */
CQ_DEV unsigned cq_cluster_blocks() {
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

/* trigger.cluster (LANGUAGE.md §10.8): one arrival at the slot at the same place in the
   shared memory of every block of the cluster (mapa gives its address there). */
CQ_DEV void cq_event_trigger_cluster(unsigned *arrivals) {
  const unsigned local = cq_smem_addr(arrivals), n = cq_cluster_blocks();
  for (unsigned rank = 0; rank < n; rank++) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("red.release.cluster.shared::cluster.add.u32 [%0], 1;" ::"r"(remote)
                 : "memory");
  }
}

/* Every thread of the cluster that has not exited meets the others: after the start, so
   that no block arrives at a slot of another before it is zeroed; at the end, so that
   no block leaves while another may still arrive at one of its slots. */
CQ_DEV void cq_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
#endif

CQ_DEV void cq_event_wait(const unsigned *arrivals, unsigned need, unsigned ready,
                          unsigned *waits, int site) {
  unsigned want = *waits;
  cq_spin(site, [=] { return ready + (need ? cq_event_load(arrivals) / need : 0) > want; });
  *waits = want + 1;
}

/* A parity wait (LANGUAGE.md §10.6) for generation `gen`: it passes while the slot's
   completed count has the parity of gen + 1, as an mbarrier parity wait does. */
CQ_DEV void cq_event_wait_parity(const unsigned *arrivals, unsigned need, unsigned ready,
                                 unsigned gen, int site) {
  cq_spin(site, [=] {
    return ((ready + (need ? cq_event_load(arrivals) / need : 0)) & 1u) != (gen & 1u);
  });
}

/* The grid barrier of a cooperative launch (cuLaunchCooperativeKernel keeps every block
   resident): the block's leader arrives once the block's participants have met, as
   cooperative_groups' grid.sync() does; the last block to arrive reopens the count and
   completes the generation, the others spin until it has. The fences make the writes
   the block made before the barrier visible to every block after it. A block that never
   arrives is the watchdog's (finished_site is the CPU runtime's). */
CQ_DEV unsigned cq_grid_load(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

CQ_DEV void cq_grid_sync(bool leader, int site, int finished_site) {
  (void)finished_site;
  if (!leader) return;
  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  const unsigned gen = cq_grid_load(&cq_grid_state[1]);
  __threadfence();
  if (atomicAdd(&cq_grid_state[0], 1u) == blocks - 1) {
    atomicExch(&cq_grid_state[0], 0u);
    __threadfence();
    atomicAdd(&cq_grid_state[1], 1u);
  } else {
    cq_spin(site, [=] { return cq_grid_load(&cq_grid_state[1]) != gen; });
  }
  __threadfence();
}

CQ_DEV bool cq_once_claim(unsigned *claimed, unsigned nth) { return atomicMax(claimed, nth) < nth; }

/* A count one thread publishes (release) and others wait to reach (acquire): what a
   claimed outer-level effect did is visible once its count is. */
CQ_DEV void cq_flag_publish(unsigned *flag, unsigned value) {
  asm volatile("st.release.cta.shared.u32 [%0], %1;" ::"r"(cq_smem_addr(flag)), "r"(value)
               : "memory");
}
CQ_DEV void cq_flag_wait(const unsigned *flag, unsigned value, int site) {
  cq_spin(site, [=] { return cq_event_load(flag) >= value; });
}

/* ------------------------------------------------------------------ cp.async */

template <int BYTES> CQ_DEV void cq_cp_async(void *dst, const void *src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  if (BYTES == 16)   /* whole lines: past L1 (.cg), as for tiles used once per block */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 ::"r"(cq_smem_addr(dst)), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;"
                 ::"r"(cq_smem_addr(dst)), "l"(src), "n"(BYTES), "r"(src_bytes) : "memory");
}

CQ_DEV void cq_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N> CQ_DEV void cq_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* Until the lane's cp.async groups but the newest `newer` have landed: wait_group takes
   an immediate, and waiting for more groups than asked is safe. */
CQ_DEV void cq_cp_async_wait_newer(unsigned newer) {
  if (newer >= 3) cq_cp_async_wait<3>();
  else if (newer == 2) cq_cp_async_wait<2>();
  else if (newer == 1) cq_cp_async_wait<1>();
  else cq_cp_async_wait<0>();
}

/* ------------------------------------------------------------------ mma.sync */

/* Element values to 32-bit registers: W elements per register, the lowest index in the
   lowest bits (PTX packs .f16x2 and 8-bit vectors that way). */
template <class T> struct cq_pack;
template <> struct cq_pack<cq_f16> {
  CQ_DEV unsigned run(const float *v) {
    unsigned short lo, hi;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(lo) : "f"(v[0]));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(hi) : "f"(v[1]));
    return (unsigned)lo | (unsigned)hi << 16;
  }
};
template <> struct cq_pack<cq_bf16> {
  CQ_DEV unsigned run(const float *v) {
    unsigned short lo, hi;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(lo) : "f"(v[0]));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(hi) : "f"(v[1]));
    return (unsigned)lo | (unsigned)hi << 16;
  }
};
/* the value is already rounded to tf32 (LANGUAGE.md §12.3), so its low 13 bits are 0 */
template <> struct cq_pack<cq_tf32> {
  CQ_DEV unsigned run(const float *v) { return __float_as_uint(v[0]); }
};
template <> struct cq_pack<cq_s8> {
  CQ_DEV unsigned run(const int *v) {
    return (unsigned)(v[0] & 255) | (unsigned)(v[1] & 255) << 8 |
           (unsigned)(v[2] & 255) << 16 | (unsigned)(v[3] & 255) << 24;
  }
};
template <> struct cq_pack<cq_u8> : cq_pack<cq_s8> {};

/* One specialisation per shape: the PTX instruction with its register counts. */
template <class S> struct cq_mma_ptx;

#define CQ_MMA_PTX_424(shape, ptx, cc)                                                 \
  template <> struct cq_mma_ptx<cq_mma_##shape> {                                       \
    template <class C>                                                                  \
    CQ_DEV void run(C *d, const unsigned *a, const unsigned *b, const C *c) {          \
      asm volatile(ptx " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"     \
                   : "=" cc(d[0]), "=" cc(d[1]), "=" cc(d[2]), "=" cc(d[3])             \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),  \
                     cc(c[0]), cc(c[1]), cc(c[2]), cc(c[3]));                           \
    }                                                                                   \
  };
#define CQ_MMA_PTX_214(shape, ptx, cc)                                                 \
  template <> struct cq_mma_ptx<cq_mma_##shape> {                                       \
    template <class C>                                                                  \
    CQ_DEV void run(C *d, const unsigned *a, const unsigned *b, const C *c) {          \
      asm volatile(ptx " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"                 \
                   : "=" cc(d[0]), "=" cc(d[1]), "=" cc(d[2]), "=" cc(d[3])             \
                   : "r"(a[0]), "r"(a[1]), "r"(b[0]), cc(c[0]), cc(c[1]), cc(c[2]),     \
                     cc(c[3]));                                                         \
    }                                                                                   \
  };
#define CQ_MMA_PTX_112(shape, ptx, cc)                                                 \
  template <> struct cq_mma_ptx<cq_mma_##shape> {                                       \
    template <class C>                                                                  \
    CQ_DEV void run(C *d, const unsigned *a, const unsigned *b, const C *c) {          \
      asm volatile(ptx " {%0,%1}, {%2}, {%3}, {%4,%5};"                                 \
                   : "=" cc(d[0]), "=" cc(d[1])                                         \
                   : "r"(a[0]), "r"(b[0]), cc(c[0]), cc(c[1]));                         \
    }                                                                                   \
  };

#define CQ_MMA_INT8(X, m, k)                                                            \
  X(m##k##_s8_s8_s32, "mma.sync.aligned." #m #k ".row.col.s32.s8.s8.s32", "r")          \
  X(m##k##_s8_u8_s32, "mma.sync.aligned." #m #k ".row.col.s32.s8.u8.s32", "r")          \
  X(m##k##_u8_s8_s32, "mma.sync.aligned." #m #k ".row.col.s32.u8.s8.s32", "r")          \
  X(m##k##_u8_u8_s32, "mma.sync.aligned." #m #k ".row.col.s32.u8.u8.s32", "r")

CQ_MMA_PTX_424(m16n8k16_f16_f32, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "f")
CQ_MMA_PTX_214(m16n8k8_f16_f32, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", "f")
CQ_MMA_PTX_424(m16n8k16_bf16_f32, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "f")
CQ_MMA_PTX_214(m16n8k8_bf16_f32, "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", "f")
CQ_MMA_PTX_424(m16n8k8_tf32_f32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "f")
CQ_MMA_PTX_214(m16n8k4_tf32_f32, "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", "f")
CQ_MMA_INT8(CQ_MMA_PTX_424, m16n8, k32)
CQ_MMA_INT8(CQ_MMA_PTX_214, m16n8, k16)
CQ_MMA_INT8(CQ_MMA_PTX_112, m8n8, k16)

/* f64 uses 64-bit registers, one element each. */
template <> struct cq_mma_ptx<cq_mma_m8n8k4_f64_f64> {
  CQ_DEV void run(double *d, const double *a, const double *b, const double *c) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=d"(d[0]), "=d"(d[1])
                 : "d"(a[0]), "d"(b[0]), "d"(c[0]), "d"(c[1]));
  }
};

/* Warp shuffles (SHFL_XOR): the lanes of the warp executing together. */
CQ_DEV unsigned cq_active_lanes() { return __activemask(); }
template <class T> CQ_DEV T cq_shfl_xor(T v, int mask, int site) {
  (void)site;
  return __shfl_xor_sync(__activemask(), v, mask);
}

template <class S>
CQ_DEV void cq_mma_sync(typename S::c_value *d, const typename S::a_value *a,
                        const typename S::b_value *b, const typename S::c_value *c, int site) {
  (void)site;
  __syncwarp();   /* mma.sync.aligned: the warp's threads execute it together */
  if constexpr (sizeof(typename S::a_value) == 8) {
    cq_mma_ptx<S>::run(d, a, b, c);
  } else {
    enum { WA = S::ta::W, WB = S::tb::W };
    unsigned ra[S::NA / WA], rb[S::NB / WB];
    for (int r = 0; r < S::NA / WA; r++) ra[r] = cq_pack<typename S::ta>::run(a + r * WA);
    for (int r = 0; r < S::NB / WB; r++) rb[r] = cq_pack<typename S::tb>::run(b + r * WB);
    cq_mma_ptx<S>::run(d, ra, rb, c);
  }
}

/* ------------------------------------------------------------------ TMA bulk copies */

struct cq_tma_bar {
  cq_mbar bar;
  unsigned long long unused;   /* the CPU runtime's transaction count */
};

/* A tensor map kernel parameter: the CUtensorMap the host encoded with
   cuTensorMapEncodeTiled (opaque, 64-byte aligned), and whether it could (0: the copies
   go another way). Passed as `const __grid_constant__`, so TMA reads it from the
   parameter space. */
struct __align__(64) cq_tmap {
  unsigned long long map[16];
  unsigned ok;
};
#define CQ_GRID_CONSTANT __grid_constant__

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
CQ_DEV void cq_tma_init(cq_tma_bar *b) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(cq_smem_addr(&b->bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* test_wait.parity 0 succeeds once the phase of parity 0 has completed, that is while
   the current phase has parity 1. */
CQ_DEV unsigned cq_tma_phase(cq_tma_bar *b) {
  unsigned done;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0; "
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(cq_smem_addr(&b->bar)) : "memory");
  return done;
}

CQ_DEV void cq_tma_expect(cq_tma_bar *b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               ::"r"(cq_smem_addr(&b->bar)), "r"(bytes) : "memory");
}

/* The L2 cache policy of an eviction hint (1: evict_first, 2: evict_last). */
CQ_DEV unsigned long long cq_l2_policy(int hint) {
  unsigned long long policy;
  if (hint == 1)
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  else
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

CQ_DEV void cq_tma_load(void *dst, const void *src, unsigned bytes, cq_tma_bar *b, int hint) {
  unsigned d = cq_smem_addr(dst), m = cq_smem_addr(&b->bar);
  if (hint == 0) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], %2, [%3];" ::"r"(d), "l"(src), "r"(bytes), "r"(m) : "memory");
    return;
  }
  const unsigned long long policy = cq_l2_policy(hint);
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".L2::cache_hint [%0], [%1], %2, [%3], %4;"
               ::"r"(d), "l"(src), "r"(bytes), "r"(m), "l"(policy) : "memory");
}

CQ_DEV bool cq_tma_done(cq_tma_bar *b, unsigned parity) {
  unsigned done;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(cq_smem_addr(&b->bar)), "r"(parity) : "memory");
  return done;
}

CQ_DEV void cq_tma_wait(cq_tma_bar *b, unsigned parity, int site) {
  cq_spin(site, [=] { return cq_tma_done(b, parity); });
}

/* cp.async.bulk.tensor.2d: the box of tensor map m at coordinates (c0, c1), c0 innermost,
   into shared memory at dst (128-byte aligned, 1024 when the map swizzles), completing
   its bytes on b; out-of-bounds elements are filled with zeros. */
CQ_DEV void cq_tma_tile(void *dst, const cq_tmap *m, int c0, int c1, cq_tma_bar *b, int hint) {
  unsigned d = cq_smem_addr(dst), bar = cq_smem_addr(&b->bar);
  if (hint == 0) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx"
                 "::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(d), "l"(m->map), "r"(c0), "r"(c1), "r"(bar) : "memory");
    return;
  }
  const unsigned long long policy = cq_l2_policy(hint);
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx"
               "::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;"
               ::"r"(d), "l"(m->map), "r"(c0), "r"(c1), "r"(bar), "l"(policy) : "memory");
}
#endif

/* ------------------------------------------------------------------ wgmma (sm_90a) */

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* Accumulator operands: N / 2 registers, then the two descriptors. */
#define CQ_WG_D4(c, o) "+" c(d[o]), "+" c(d[o + 1]), "+" c(d[o + 2]), "+" c(d[o + 3])
#define CQ_WG_D8(c, o) CQ_WG_D4(c, o), CQ_WG_D4(c, o + 4)
#define CQ_WG_D16(c, o) CQ_WG_D8(c, o), CQ_WG_D8(c, o + 8)
#define CQ_WG_D32(c, o) CQ_WG_D16(c, o), CQ_WG_D16(c, o + 16)
#define CQ_WG_D64(c, o) CQ_WG_D32(c, o), CQ_WG_D32(c, o + 32)
#define CQ_WG_D128(c, o) CQ_WG_D64(c, o), CQ_WG_D64(c, o + 64)
#define CQ_WG_D_8 CQ_WG_D4
#define CQ_WG_D_16 CQ_WG_D8
#define CQ_WG_D_32 CQ_WG_D16
#define CQ_WG_D_64 CQ_WG_D32
#define CQ_WG_D_128 CQ_WG_D64
#define CQ_WG_D_256 CQ_WG_D128
#define CQ_WG_OPS_8 "{%0, %1, %2, %3}, %4, %5"
#define CQ_WG_OPS_16 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9"
#define CQ_WG_OPS_32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17"
#define CQ_WG_OPS_64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33"
#define CQ_WG_OPS_128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65"
#define CQ_WG_OPS_256 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129"

template <class S> struct cq_wgmma_ptx;
/* scale-d 1: D = A B + D */
#define CQ_WGMMA_PTX(n, name, a, b, c, k, ptx, imm, cc)                                 \
  template <> struct cq_wgmma_ptx<cq_wgmma_n##n##_##name> {                             \
    template <class C>                                                                  \
    CQ_DEV void run(C *d, unsigned long long da, unsigned long long db) {               \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #n "k" #k "." ptx " "            \
                   CQ_WG_OPS_##n ", 1" imm ";"                                          \
                   : CQ_WG_D_##n(cc, 0) : "l"(da), "l"(db) : "memory");                 \
    }                                                                                   \
  };
CQ_WGMMA_SHAPES(CQ_WGMMA_PTX)
#undef CQ_WGMMA_PTX

/* Shared memory written by the threads' ordinary stores is read by wgmma through the
   async proxy: each writer fences before the barrier that precedes the wgmma. */
CQ_DEV void cq_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* The compiler must not move accumulator accesses across the asynchronous section. */
CQ_DEV void cq_wgmma_keep(float &x) { asm volatile("" : "+f"(x)::"memory"); }
CQ_DEV void cq_wgmma_keep(int &x) { asm volatile("" : "+r"(x)::"memory"); }

template <class S> CQ_DEV void cq_wgmma_fence(typename S::c_value *d) {
  __syncwarp();   /* .sync.aligned: the warp's threads execute it together */
  for (int i = 0; i < S::ND; i++) cq_wgmma_keep(d[i]);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

template <class S>
CQ_DEV void cq_wgmma(typename S::c_value *d, unsigned long long da, unsigned long long db,
                     int site) {
  (void)site;
  cq_wgmma_ptx<S>::run(d, da, db);
}

CQ_DEV void cq_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

template <int N, class S> CQ_DEV void cq_wgmma_wait(typename S::c_value *d) {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
  for (int i = 0; i < S::ND; i++) cq_wgmma_keep(d[i]);
}

/* A lane leaving after a fault inside a wgmma region waits for its committed groups
   first. ptxas would insert that wait before the exit itself, but one it inserts in a
   divergent path makes it serialize every wgmma of the kernel. The faults of a chain
   are uniform in the warpgroup (emit_wgmma.py), which takes the path whole; a loop's
   step limit may end a lane alone, which then waits as ptxas's own wait would. */
CQ_DEV void cq_wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

/* The step counts of a warpgroup's lanes made equal where a wgmma slice loop meets
   before it (emit_wgmma.py): each lane offers its count before the rendezvous and takes
   the largest after it, so that the step limit ends the lanes of the loop together. The
   lanes running together reduce first and one of them offers (a 64-bit shared atomicMax
   is a compare-and-swap loop): whatever the grouping, the slot gets the largest. */
CQ_DEV void cq_steps_offer(unsigned long long *slot, unsigned long long steps) {
  const unsigned m = __activemask();
  const unsigned hi = __reduce_max_sync(m, (unsigned)(steps >> 32));
  const unsigned lo = __reduce_max_sync(m, (unsigned)(steps >> 32) == hi ? (unsigned)steps : 0u);
  if ((m & ((1u << (threadIdx.x & 31)) - 1)) == 0) atomicMax(slot, (unsigned long long)hi << 32 | lo);
}
CQ_DEV unsigned long long cq_steps_largest(unsigned long long *slot) {
  return *(volatile unsigned long long *)slot;
}
#endif

#endif /* CQ_GPU_CUH */
