// Block barriers, named barriers and mbarriers of the croqvm CUDA runtime, with threads
// that exit early (tests/test_cuda_runtime.py runs these and checks the results).
#include "croqvm_rt.cuh"

// Ring exchange: each round every thread publishes its value and takes its successor's
// plus one. Without a working barrier a thread would read a value of the wrong round.
CQ_DEV void ring(int *slots, int n, int t, int rounds, int &v, void (*sync)(int)) {
  for (int r = 0; r < rounds; r++) {
    slots[t] = v;
    sync(1);
    v = slots[(t + 1) % n] + 1;
    sync(2);
  }
}

CQ_DEV void block_sync(int site) { cq_sync_block(site); }

// Threads at or above `stay` return at once; the others exchange among themselves.
CQ_KERNEL void block_ring(int *out, int rounds, int stay) {
  int t = cq_lane(), n = cq_block_size(), base = cq_block_idx(0) * n;
  if (t >= stay) return;
  int v = base + t;
  ring((int *)cq_smem(), stay, t, rounds, v, block_sync);
  out[base + t] = v;
}
CQ_EXPORT(block_ring);

CQ_DEV void sync_group_a(int site) { cq_sync_named(1, 64, 10 + site); }
CQ_DEV void sync_group_b(int site) { cq_sync_named(2, 64, 20 + site); }

// Warps 0-1 and warps 2-3 exchange on named barriers 1 and 2, a different number of
// rounds each, so neither group may wait for the other.
CQ_KERNEL void named_groups(int *out, int rounds_a, int rounds_b) {
  int t = cq_lane(), g = t / 64, local = t % 64;
  int *slots = (int *)cq_smem() + 64 * g;
  int v = 1000 * g + local;
  ring(slots, 64, local, g ? rounds_b : rounds_a, v, g ? sync_group_b : sync_group_a);
  out[t] = v;
}
CQ_EXPORT(named_groups);

// Odd lanes of warp 1 exit; barrier.sync 1, 64 still completes: a warp arrives once its
// non-exited threads have. Every remaining thread reads an even (so live) lane's slot.
CQ_KERNEL void named_after_exit(int *out) {
  int t = cq_lane();
  if (t >= 32 && t % 2) return;
  int *slots = (int *)cq_smem();
  slots[t] = 10 * t;
  cq_sync_named(1, 64, 30);
  out[t] = slots[(2 * t + 2) % 64];
}
CQ_EXPORT(named_after_exit);

// An mbarrier of the whole block over several phases; after `drop_round` rounds the
// threads at or above `stay` leave with arrive_drop and the others go on alone.
CQ_KERNEL void mbar_ring(int *out, int rounds, int drop_round, int stay) {
  int t = cq_lane(), n = cq_block_size();
  cq_mbar *bar = (cq_mbar *)cq_smem();
  int *slots = (int *)(cq_smem() + 8);
  if (t == 0) cq_mbar_init(bar, (unsigned)n);
  cq_sync_block(40);
  int v = t, live = n;
  for (int r = 0; r < rounds; r++) {
    if (r == drop_round) {
      if (t >= stay) {
        cq_mbar_arrive_drop(bar);
        out[t] = -v;
        return;
      }
      cq_mbar_wait(bar, cq_mbar_arrive(bar), 41);
      live = stay;
    }
    slots[t] = v;
    cq_mbar_wait(bar, cq_mbar_arrive(bar), 42);
    v = slots[(t + 1) % live] + 1;
    cq_mbar_wait(bar, cq_mbar_arrive(bar), 43);
  }
  out[t] = v;
}
CQ_EXPORT(mbar_ring);

// The ring on doubles: values stay in floating-point registers across barriers, which a
// fiber switch must preserve (callee-saved d8-d15 on aarch64).
CQ_KERNEL void double_ring(double *out, int rounds) {
  int t = cq_lane(), n = cq_block_size();
  double *slots = (double *)cq_smem();
  double v = t * 0.5, w = 1.0 / (t + 1);
  for (int r = 0; r < rounds; r++) {
    slots[t] = v;
    cq_sync_block(50);
    v = slots[(t + 1) % n] * 0.75 + w;
    w = w * 1.25;
    cq_sync_block(51);
  }
  out[t] = v + w;
}
CQ_EXPORT(double_ring);
