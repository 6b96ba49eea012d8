// A standalone program running kernels of rt_barriers.cu and rt_events.cu through
// cq_cpu_launch, for builds that can not be loaded into this Python (another CPU
// architecture under an emulator, the ucontext fiber fallback). It prints one line per
// result; tests/test_cuda_runtime.py compares them with the values the in-process
// tests expect.
#include <stdio.h>

#include "rt_barriers.cu"
#include "rt_events.cu"

static void run(const char *name, void (*entry)(void **), void **args, unsigned block,
                unsigned long long smem, const int *out, int n) {
  cq_launch_cfg cfg = {{1, 1, 1}, block, smem, 0};
  int status = cq_cpu_launch(entry, args, &cfg);
  printf("%s %d", name, status);
  for (int i = 0; i < n; i++) printf(" %d", out[i]);
  printf("\n");
}

int main() {
  static int out[128];
  int *p = out, rounds = 5, stay = 40, items = 10, stages = 2, ready = 0;
  void *ring_args[] = {&p, &rounds, &stay};
  run("block_ring", cq_entry_block_ring, ring_args, 96, 96 * 4, out, stay);
  void *pipe_args[] = {&p, &items, &stages, &ready};
  run("pipeline", cq_entry_pipeline, pipe_args, 64, 4 * stages * 3, out, items);
  void *deadlock_args[] = {&p};
  cq_launch_cfg cfg = {{1, 1, 1}, 64, 8, 0};
  int status = cq_cpu_launch(cq_entry_deadlock, deadlock_args, &cfg);
  printf("deadlock %d %d %d\n", status, cq_deadlock_record.thread[0].site,
         cq_deadlock_record.thread[40].site);
  return 0;
}
