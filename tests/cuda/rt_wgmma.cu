// wgmma.mma_async through the croqvm CUDA runtime (sm_90a; the CPU runtime emulates it
// from the descriptors): one kernel per shape of cq_wgmma.h, run by one warpgroup, that
// stages row-major A [64, 2K] and B [N, 2K] from global memory into shared memory in
// cq_wgmma.h's layout, gathers C [64, N] with the accumulator map, runs two chained
// wgmmas (the second's descriptors start 2 slabs further) in one commit group, and
// scatters D; and one kernel that writes the layout, descriptor and map themselves
// (tests/test_cuda_wgmma.py checks both).
#include "croqvm_rt.cuh"

template <class S>
CQ_DEV void wgmma_tile(const typename S::ta::value *A, const typename S::tb::value *B,
                       const typename S::c_value *C, typename S::c_value *D) {
  const int t = cq_lane(), k2 = 2 * S::K;
  unsigned char *sa = cq_smem(), *sb = cq_smem() + 2 * S::A_BYTES;
  for (int i = t; i < 64 * k2; i += 128)
    cq_wgmma_elem<typename S::ta>::put(sa + cq_wgmma_offset(i / k2, i % k2, 64, S::BYTES), A[i]);
  for (int i = t; i < S::N * k2; i += 128)
    cq_wgmma_elem<typename S::tb>::put(sb + cq_wgmma_offset(i / k2, i % k2, S::N, S::BYTES),
                                       B[i]);
  cq_fence_proxy_async();
  cq_sync_block(0);
  typename S::c_value d[S::ND];
  for (int i = 0; i < S::ND; i++) d[i] = C[cq_wgmma_d_row(t, i) * S::N + cq_wgmma_d_col(t, i)];
  cq_wgmma_fence<S>(d);
  for (int s = 0; s < 2; s++) {
    const unsigned step = CQ_WGMMA_STEP_SLABS * s;
    cq_wgmma<S>(d, cq_wgmma_desc(cq_smem_addr(sa) + step * cq_wgmma_lbo(64), cq_wgmma_lbo(64),
                                 CQ_WGMMA_SBO),
                cq_wgmma_desc(cq_smem_addr(sb) + step * cq_wgmma_lbo(S::N), cq_wgmma_lbo(S::N),
                              CQ_WGMMA_SBO), 1);
  }
  cq_wgmma_commit();
  cq_wgmma_wait<0, S>(d);
  for (int i = 0; i < S::ND; i++) D[cq_wgmma_d_row(t, i) * S::N + cq_wgmma_d_col(t, i)] = d[i];
}

#define WGMMA_KERNEL(n, name, a, b, c, k, ptx, imm, cc)                                 \
  CQ_KERNEL void wgmma_n##n##_##name(const a::value *A, const b::value *B,               \
                                     const c::value *C, c::value *D) {                  \
    wgmma_tile<cq_wgmma_n##n##_##name>(A, B, C, D);                                     \
  }                                                                                     \
  CQ_EXPORT(wgmma_n##n##_##name);
CQ_WGMMA_SHAPES(WGMMA_KERNEL)

// The byte offset of element (row, k) of a [rows, 32 / bytes * 2] operand; the
// descriptor of one at shared address `addr`; the accumulator map of N = 64 (row, col
// per thread and value, thread-major).
CQ_KERNEL void layout(int rows, int bytes, int *off, unsigned addr,
                      unsigned long long *desc, int *dmap) {
  const int t = cq_lane(), ks = 64 / bytes;
  for (int i = t; i < rows * ks; i += 128) off[i] = cq_wgmma_offset(i / ks, i % ks, rows, bytes);
  if (t == 0) *desc = cq_wgmma_desc(addr, cq_wgmma_lbo(rows), CQ_WGMMA_SBO);
  for (int i = 0; i < 32; i++) {
    dmap[2 * (t * 32 + i)] = cq_wgmma_d_row(t, i);
    dmap[2 * (t * 32 + i) + 1] = cq_wgmma_d_col(t, i);
  }
}
CQ_EXPORT(layout);

// Rules the CPU runtime checks: which = 0 issues a wgmma without wgmma.fence, 1 gives a
// descriptor with a base offset, 2 exits without waiting for the result, 3 gives a
// 128-byte swizzled descriptor starting in the second row of an atom.
CQ_KERNEL void misuse(int which) {
  typedef cq_wgmma_n8_f16_f32 S;
  S::c_value d[S::ND] = {};
  unsigned char *sa = cq_smem(), *sb = cq_smem() + S::A_BYTES;
  if (which != 0) cq_wgmma_fence<S>(d);
  unsigned long long da = cq_wgmma_desc(cq_smem_addr(sa), cq_wgmma_lbo(64), CQ_WGMMA_SBO);
  if (which == 1) da |= 1ull << 49;
  if (which == 3) da = cq_wgmma_desc_sw128(cq_smem_addr(sa) + 128);
  cq_wgmma<S>(d, da, cq_wgmma_desc(cq_smem_addr(sb), cq_wgmma_lbo(8), CQ_WGMMA_SBO), 1);
  cq_wgmma_commit();
  if (which != 2) cq_wgmma_wait<0, S>(d);
}
CQ_EXPORT(misuse);

// Two commit groups, one wgmma on its own accumulator each, then wgmma.wait_group 1 and
// 0: landed[t] and landed[128 + t] tell which accumulators hold their results after
// each wait (1: the first, 2: the second; results in flight read NaN on the CPU).
CQ_KERNEL void depth(int *landed) {
  typedef cq_wgmma_n8_f16_f32 S;
  const int t = cq_lane();
  for (int i = t; i < (S::A_BYTES + S::B_BYTES) / 4; i += 128) ((unsigned *)cq_smem())[i] = 0;
  cq_fence_proxy_async();
  cq_sync_block(0);
  S::c_value d0[S::ND] = {}, d1[S::ND] = {};
  unsigned char *sa = cq_smem(), *sb = cq_smem() + S::A_BYTES;
  const unsigned long long da = cq_wgmma_desc(cq_smem_addr(sa), cq_wgmma_lbo(64), CQ_WGMMA_SBO),
                           db = cq_wgmma_desc(cq_smem_addr(sb), cq_wgmma_lbo(8), CQ_WGMMA_SBO);
  cq_wgmma_fence<S>(d0);
  cq_wgmma<S>(d0, da, db, 1);
  cq_wgmma_commit();
  cq_wgmma<S>(d1, da, db, 1);
  cq_wgmma_commit();
  cq_wgmma_wait<1, S>(d0);
  landed[t] = (d0[0] == d0[0]) + 2 * (d1[0] == d1[0]);
  cq_wgmma_wait<0, S>(d1);
  landed[128 + t] = (d0[0] == d0[0]) + 2 * (d1[0] == d1[0]);
}
CQ_EXPORT(depth);
