// mma.sync through the croqvm CUDA runtime: one kernel per shape of cq_mma.h, run by
// one warp, that gathers its fragments from row-major A [M, K], B [K, N], C [M, N] in
// global memory with the fragment maps, multiplies, and scatters D [M, N] back; and
// one that writes the maps themselves (tests/test_cuda_runtime.py checks both).
#include "croqvm_rt.cuh"

template <class S>
CQ_DEV void mma_tile(const typename S::a_value *A, const typename S::b_value *B,
                     const typename S::c_value *C, typename S::c_value *D) {
  int l = cq_lane();
  typename S::a_value a[S::NA];
  typename S::b_value b[S::NB];
  typename S::c_value c[S::NC], d[S::NC];
  for (int i = 0; i < S::NA; i++)
    a[i] = A[cq_mma_a_row(S::ta::W, l, i) * S::K + cq_mma_a_col(S::ta::W, l, i)];
  for (int i = 0; i < S::NB; i++) b[i] = B[cq_mma_b_row(S::tb::W, l, i) * S::N + cq_mma_b_col(l)];
  for (int i = 0; i < S::NC; i++) c[i] = C[cq_mma_c_row(l, i) * S::N + cq_mma_c_col(l, i)];
  cq_mma_sync<S>(d, a, b, c, 1);
  for (int i = 0; i < S::NC; i++) D[cq_mma_c_row(l, i) * S::N + cq_mma_c_col(l, i)] = d[i];
}

// (row, column) of every (lane, element) of A, B and C, lane-major.
template <class S> CQ_DEV void mma_maps(int *a, int *b, int *c) {
  int l = cq_lane();
  for (int i = 0; i < S::NA; i++) {
    a[2 * (l * S::NA + i)] = cq_mma_a_row(S::ta::W, l, i);
    a[2 * (l * S::NA + i) + 1] = cq_mma_a_col(S::ta::W, l, i);
  }
  for (int i = 0; i < S::NB; i++) {
    b[2 * (l * S::NB + i)] = cq_mma_b_row(S::tb::W, l, i);
    b[2 * (l * S::NB + i) + 1] = cq_mma_b_col(l);
  }
  for (int i = 0; i < S::NC; i++) {
    c[2 * (l * S::NC + i)] = cq_mma_c_row(l, i);
    c[2 * (l * S::NC + i) + 1] = cq_mma_c_col(l, i);
  }
}

#define MMA_KERNELS(name, m, n, k, ta, tb, tc)                                          \
  CQ_KERNEL void mma_##name(const ta::value *A, const tb::value *B, const tc::value *C,  \
                            tc::value *D) {                                              \
    mma_tile<cq_mma_##name>(A, B, C, D);                                                 \
  }                                                                                      \
  CQ_EXPORT(mma_##name);                                                                 \
  CQ_KERNEL void maps_##name(int *a, int *b, int *c) { mma_maps<cq_mma_##name>(a, b, c); } \
  CQ_EXPORT(maps_##name);
CQ_MMA_SHAPES(MMA_KERNELS)
