/* croqvm CUDA runtime: every device primitive generated kernels call, behind one cq_*
 * interface with two implementations chosen when compiling:
 *   nvcc (sm_80, sm_90a)          cq_gpu.cuh: CUDA built-ins and inline PTX;
 *   host C++ compiler, -DCQ_CPU   cq_cpu.h: CUDA threads as fibers (croqvm --device cuda-cpu).
 * Generated code writes no asm and no CUDA built-in of its own, so the same .cu text
 * runs on both (docs: ARCHITECTURE.md "The CUDA path").
 *
 * Kernels and entry points
 *   CQ_KERNEL void name(params) { ... }   a kernel: 1-D blocks, up to 3-D grids;
 *   CQ_EXPORT(name)                      after it: the CPU entry point cq_entry_<name>
 *                                        (void **args, as cuLaunchKernel takes them);
 *   CQ_DEV, CQ_HD                        device / host-and-device helper functions;
 *   CQ_OUTLINED                          a big helper, called rather than inlined (keeps
 *                                        nvcc fast: generated code calls them often).
 *   CQ_UNROLL for (...)                  a loop nvcc unrolls (register arrays indexed by
 *                                        its variable stay in registers)
 *   The CPU library runs a launch with cq_cpu_launch(cq_entry_<name>, args, &cfg).
 *
 * Identity and memory
 *   cq_lane(), cq_block_size(), cq_block_idx(d), cq_grid_dim(d)   threadIdx.x, blockDim.x, ...
 *   cq_smem(), cq_smem_bytes()    the block's dynamic shared memory, 128-byte aligned;
 *                                 every shared object is carved from it at fixed offsets
 *   cq_fence_block(), cq_fence_global()    memory fences (CTA, GPU scope)
 *
 * Synchronisation. `site` is the generator's id of the statement, used by deadlock
 * reports (CPU) and watchdog faults (GPU).
 *   cq_sync_block(site)                   __syncthreads(): every non-exited thread
 *   cq_sync_named(id, count, site)        barrier.sync id (1..15), count (multiple of 32)
 *   cq_arrive_named(id, count, site)      barrier.arrive id, count: no wait for other warps
 *   cq_bar_sync / cq_bar_arrive(id, count, site, fault_site) -> bool
 *                                         the same for __bar_sync / __bar_arrive; false
 *                                         after recording a count mixed within a phase
 *                                         (CPU) as the fault of fault_site
 *   cq_mbar_init(bar, count)              an mbarrier (8 bytes of shared memory, one thread
 *                                         initialises it, then a block barrier)
 *   cq_mbar_arrive(bar) -> token, cq_mbar_wait(bar, token, site), cq_mbar_arrive_drop(bar)
 *                                         barriers of any count that lanes may leave
 *   cq_event_trigger(arrivals), cq_event_wait(arrivals, need, ready, &waits, site)
 *                                         counter events with LANGUAGE.md §10.3 generations
 *   cq_once_claim(&claimed, nth)          true for the thread whose nth arrival claims
 *                                         execution nth first (ONCE, §7.2.2)
 *   cq_flag_publish(&flag, n), cq_flag_wait(&flag, n, site)
 *                                         release a count / wait until it reaches n
 *   cq_grid_sync(leader, site, finished_site)
 *                                         the grid barrier of a cooperative launch: the
 *                                         block's leader arrives for its block, after its
 *                                         participants met (every block resident at once)
 *
 * Asynchronous copies (global to shared)
 *   cq_cp_async<4|8|16>(dst, src, src_bytes)   copies src_bytes, zero-fills the rest
 *   cq_cp_async_commit(), cq_cp_async_wait<N>()  commit a group; wait for all but N
 *
 * Bulk copies by the tensor memory accelerator (sm_90a; the CPU runtime copies at once)
 *   cq_tma_bar                            an mbarrier with a transaction count (16 bytes
 *                                         of shared memory, 16-byte aligned)
 *   cq_tma_init(bar)                      one thread initialises it, then a block barrier
 *   cq_tma_phase(bar) -> parity           the parity of its current phase
 *   cq_tma_expect(bar, bytes)             one arrival expecting `bytes` more transferred
 *   cq_tma_load(dst, src, bytes, bar, hint)   cp.async.bulk global -> shared (16-byte
 *                                         aligned, whole 16-byte chunks), completing
 *                                         `bytes` on bar; hint 0 none, 1 evict_first,
 *                                         2 evict_last (module.L2Hint)
 *   cq_tma_wait(bar, parity, site)        until the phase of that parity has completed
 *   const CQ_GRID_CONSTANT cq_tmap m      a kernel parameter: a rank-2 tensor map the host
 *                                         built at launch (GPU: cuTensorMapEncodeTiled;
 *                                         CPU: cq_tensor_map), m.ok = 0 where it could not
 *   cq_tma_tile(dst, &m, c0, c1, bar, hint)   cp.async.bulk.tensor.2d: the map's box at
 *                                         element coordinates (c0 innermost, c1), zeros
 *                                         outside the tensor, laid out with the map's
 *                                         swizzle from dst (128-byte aligned, 1024 when
 *                                         swizzled), completing box bytes on bar
 *
 * Tensor cores (cq_mma.h lists the shapes and the fragment layouts)
 *   cq_mma_sync<cq_mma_m16n8k16_f16_f32>(d, a, b, c, site)   one warp, converged
 * Warpgroup tensor cores, sm_90a only (cq_wgmma.h: shapes, staging layout, descriptors)
 *   cq_fence_proxy_async()                after writing operands with ordinary stores
 *   cq_wgmma_fence<S>(d), cq_wgmma<S>(d, desc_a, desc_b, site), cq_wgmma_commit(),
 *   cq_wgmma_wait<N, S>(d)                wgmma.fence / mma_async / commit_group /
 *                                         wait_group of one warpgroup, converged
 *   cq_wgmma_wait_all()                   wait_group 0 of a lane leaving after a fault
 *   cq_steps_offer(slot, steps),          a warpgroup's largest step count, met before
 *   cq_steps_largest(slot)                a wgmma slice loop
 *   cq_smem_addr(p)                       the shared-window address descriptors take
 *
 * Other primitives
 *   cq_atomic_or/and/add(p, v), cq_atomic_cas(p, expect, v), cq_popc(v)   on 32-bit words
 *   cq_malloc(bytes), cq_free(p)          a lane's memory of a size known at run time
 *   cq_thread_exit()                      the thread ends here, as if it returned
 *   cq_kernel_finished()                  the thread reached the end of its kernel (the
 *                                         CPU runtime's block barrier still waits for it)
 *   cq_print(format, n, values)           appends a printed record to cq_print_state
 *   cq_step_limit                         loop iterations a thread may run (the host sets
 *                                         it from the call's step limit)
 *   cq_steps_over(steps, limit, site)     a loop's next iteration is over the limit (the
 *                                         CPU runtime: or the host asked it to stop; it
 *                                         records the loop, `site`, in cq_position)
 *
 * Faults: cq_fault(site, values...) records a failed check in cq_fault_record
 * (cq_abi.h); the first one in (block, lane) order is kept. Nothing traps.
 */
#ifndef CROQVM_RT_CUH
#define CROQVM_RT_CUH

#include "cq_abi.h"

#if defined(CQ_CPU)
#include "cq_cpu.h"
#define CQ_EXPORT(name)                                                                 \
  extern "C" void cq_entry_##name(void **args) { cq::call_with_args(name, args); }
#elif defined(__CUDACC__)
#include "cq_gpu.cuh"
#define CQ_EXPORT(name) static_assert(true, "")
#else
#error "croqvm_rt.cuh: compile with nvcc, or with -DCQ_CPU for the CPU runtime"
#endif

/* cq_fault(site, values...): up to 16 values for the message. */
template <class... A> CQ_DEV void cq_fault(int site, A... values) {
  static_assert(sizeof...(A) <= 16, "a fault record holds 16 values");
  const long long args[] = {(long long)values..., 0};   /* the last is a placeholder */
  cq_fault_values(site, args);
}

#endif /* CROQVM_RT_CUH */
