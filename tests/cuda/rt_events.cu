// Counter events (LANGUAGE.md §10.3), cp.async, faults and deadlocks of the croqvm CUDA
// runtime (tests/test_cuda_runtime.py runs these and checks the results).
#include "croqvm_rt.cuh"

// A producer warp fills a ring of `stages` slots, a consumer warp drains it:
// full[s] needs the 32 producer lanes, empty[s] the 32 consumer lanes. The consumer
// gives the initial credits by triggering every empty slot, or the empty events start
// with one completed generation (`ready`, §10.4).
CQ_KERNEL void pipeline(int *out, int items, int stages, int ready) {
  int t = cq_lane(), lane = t % 32;
  unsigned *full = (unsigned *)cq_smem(), *empty = full + stages;
  int *slot = (int *)(empty + stages);
  if (t == 0)
    for (int s = 0; s < 2 * stages; s++) full[s] = 0;
  cq_sync_block(1);
  unsigned waits[8] = {0};
  if (t < 32) {
    for (int k = 0; k < items; k++) {
      int s = k % stages;
      cq_event_wait(&empty[s], 32, ready, &waits[s], 2);
      if (lane == 0) slot[s] = k * k + 1;
      cq_event_trigger(&full[s]);
    }
  } else {
    if (!ready)
      for (int s = 0; s < stages; s++) cq_event_trigger(&empty[s]);
    for (int k = 0; k < items; k++) {
      int s = k % stages;
      cq_event_wait(&full[s], 32, 0, &waits[s], 3);
      if (lane == 0) out[k] = slot[s];
      cq_event_trigger(&empty[s]);
    }
  }
}
CQ_EXPORT(pipeline);

// One slot with `need` arrivals per generation: lanes of warp 0 trigger `per_lane` times
// each (a slot may complete several generations before anyone waits, and arrivals
// beyond a multiple of `need` count toward the next one); every lane of warp 1 waits
// `waits` times and records the arrivals it saw after each wait.
CQ_KERNEL void run_ahead(long long *seen, int triggers, int per_lane, int need, int ready,
                         int waits) {
  int t = cq_lane();
  unsigned *ev = (unsigned *)cq_smem();
  if (t == 0) *ev = 0;
  cq_sync_block(4);
  if (t < 32) {
    if (t < triggers)
      for (int i = 0; i < per_lane; i++) cq_event_trigger(ev);
    return;
  }
  unsigned w = 0;
  for (int i = 0; i < waits; i++) {
    cq_event_wait(ev, (unsigned)need, (unsigned)ready, &w, 5);
    seen[(t - 32) * waits + i] = (long long)*ev * 1000 + w;
  }
}
CQ_EXPORT(run_ahead);

// Each thread copies 16 bytes of `src` (`n` ints) into shared memory with cp.async,
// zero-filling past the end: the first half of the threads in group 0, the rest in
// group 1. After wait_group 1 only group 0 has landed (the CPU runtime lands a copy at
// its wait; before that the bytes read 0xFF); `early` gets that view of group 1, `out`
// the whole buffer after wait_group 0 and a barrier.
CQ_KERNEL void copy_async(const int *src, int n, int *early, int *out) {
  int t = cq_lane(), threads = cq_block_size();
  int *tile = (int *)cq_smem();
  int left = n - 4 * t, bytes = left >= 4 ? 16 : left > 0 ? 4 * left : 0;
  const int *from = bytes ? src + 4 * t : src;
  if (t < threads / 2) cq_cp_async<16>(tile + 4 * t, from, bytes);
  cq_cp_async_commit();
  if (t >= threads / 2) cq_cp_async<16>(tile + 4 * t, from, bytes);
  cq_cp_async_commit();
  cq_cp_async_wait<1>();
  if (t >= threads / 2)
    for (int i = 0; i < 4; i++) early[4 * (t - threads / 2) + i] = tile[4 * t + i];
  cq_cp_async_wait<0>();
  cq_sync_block(6);
  for (int i = 0; i < 4; i++) out[4 * t + i] = tile[(4 * t + i + 4) % (4 * threads)];
}
CQ_EXPORT(copy_async);

// ONCE (LANGUAGE.md §7.2.2): every thread arrives `rounds` times; the n-th arrival of
// exactly one thread claims execution n, which records its lane in `by[n]`; `claims[t]`
// counts thread t's claims.
CQ_KERNEL void once(int *by, int *claims, int rounds) {
  int t = cq_lane();
  unsigned *claimed = (unsigned *)cq_smem();
  if (t == 0) *claimed = 0;
  cq_sync_block(60);
  int mine = 0;
  for (int n = 1; n <= rounds; n++)
    if (cq_once_claim(claimed, (unsigned)n)) {
      by[n - 1] = t;
      mine++;
    }
  claims[t] = mine;
}
CQ_EXPORT(once);

// Faults at (block, lane) pairs listed in `where` (pairs, -1 ends): the record keeps
// the first in (block, lane) order. Every thread then marks its block as run.
CQ_KERNEL void faults(const int *where, int *ran) {
  int b = cq_block_idx(0) * cq_grid_dim(1) + cq_block_idx(1), t = cq_lane();
  for (int i = 0; where[i] >= 0; i += 2)
    if (where[i] == b && where[i + 1] == t) cq_fault(100 + i / 2, b, t, -5, 1LL << 40);
  ran[b * cq_block_size() + t] = 1;
}
CQ_EXPORT(faults);

// Warp 1 waits on an event nobody triggers while warp 0 waits at a named barrier that
// needs warp 1 too: every thread blocks.
CQ_KERNEL void deadlock(int *unused) {
  int t = cq_lane();
  unsigned *ev = (unsigned *)cq_smem();
  if (t == 0) ev[0] = ev[1] = 0;
  cq_sync_block(7);
  if (t < 32) {
    cq_event_trigger(&ev[0]);
    cq_sync_named(3, 64, 8);
  } else {
    unsigned w = 0;
    cq_event_wait(&ev[1], 32, 0, &w, 9);
  }
  unused[t] = t;
}
CQ_EXPORT(deadlock);

// Threads 0-9 wait at a block barrier that threads 10-31 never reach (they wait on an
// event): a deadlock with a partly arrived barrier.
CQ_KERNEL void deadlock_barrier(int *unused) {
  int t = cq_lane();
  unsigned *ev = (unsigned *)cq_smem();
  if (t == 0) *ev = 0;
  cq_sync_block(10);
  if (t < 10) {
    cq_sync_block(11);
  } else {
    unsigned w = 0;
    cq_event_wait(ev, 1, 0, &w, 12);
  }
  unused[t] = t;
}
CQ_EXPORT(deadlock_barrier);

// Rules the CPU runtime enforces (on a GPU these hang or are undefined); `which` picks one.
CQ_KERNEL void misuse(const int *src, int which) {
  int t = cq_lane();
  unsigned char *smem = cq_smem();
  switch (which) {
    case 0: cq_sync_named(1, 48, 13); break;                  /* count not a multiple of 32 */
    case 1: cq_sync_named(0, 32, 14); break;                  /* id 0 is __syncthreads' */
    case 2: cq_cp_async<16>(smem + 4, src, 16); cq_cp_async_wait<0>(); break; /* misaligned */
    case 3: cq_cp_async<8>(smem, src, 8); break;              /* exits with a copy pending */
    case 4: {                                                 /* mma needs a full warp */
      double a[1] = {0}, b[1] = {0}, c[2] = {0, 0}, d[2];
      cq_mma_sync<cq_mma_m8n8k4_f64_f64>(d, a, b, c, 15);
      break;
    }
    case 5: {                                                 /* mbarrier with no arrivals left */
      cq_mbar *bar = (cq_mbar *)smem;
      if (t == 0) cq_mbar_init(bar, 1);
      cq_sync_block(16);
      if (t == 0) cq_mbar_arrive_drop(bar);
      cq_sync_block(17);
      if (t == 0) cq_mbar_arrive(bar);
      break;
    }
  }
}
CQ_EXPORT(misuse);
