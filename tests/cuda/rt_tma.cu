// Tensor-map TMA of the croqvm CUDA runtime (cq_tma_tile, sm_90a): tests/test_cuda_tma.py
// runs these on the CPU runtime's emulation (and on a GPU where there is one).
#include "croqvm_rt.cuh"

// `src` is the tensor `m` describes (the host encodes the map from it). Thread 0 announces `expect` bytes and copies the box of `m` at (c0, c1) into shared
// memory at byte `at` (past the barrier); once the phase completes every thread copies
// the shared bytes out, as they lie (swizzled or not), `bytes` of them.
CQ_KERNEL void box(const unsigned char *src, unsigned char *out, const CQ_GRID_CONSTANT cq_tmap m, int c0, int c1,
                   int expect, int at, int bytes) {
  (void)src;
  int t = cq_lane();
  unsigned char *smem = cq_smem();
  cq_tma_bar *bar = (cq_tma_bar *)smem;
  if (t == 0) cq_tma_init(bar);
  cq_sync_block(1);
  unsigned parity = cq_tma_phase(bar);
  cq_sync_block(2);
  if (t == 0) {
    cq_tma_expect(bar, (unsigned)expect);
    cq_tma_tile(smem + at, &m, c0, c1, bar, 0);
  }
  cq_tma_wait(bar, parity, 3);
  for (int i = t; i < bytes; i += cq_block_size()) out[i] = smem[at + i];
}
CQ_EXPORT(box);
