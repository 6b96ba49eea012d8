"""The debugger's time to its first stop (croqvm debug, croqvm/debug/forward.py): a
breakpoint reached after about 10^8 lane-instructions, against the plain native run of
the call (one thread), in CPU time, best of repeats; the goal is at most 3x the plain
run to that point. The plain run is timed to its end, which the stop is at or near.

    python bench/debug_speed.py              # about 10^8 lane-instructions (a minute)
    python bench/debug_speed.py --quick      # 10^6, to check the harness
    python bench/debug_speed.py --python     # also the session without fast-forward,
                                             # every block under the hook (minutes)

The shapes: the breakpoint in the last block of one big launch; in a short kernel
launched after a big one; a watchpoint on an element the last block writes; going back
one statement from the stop in the last block (reverse-step re-runs the call to the
stop, recording, then from the last memory save before the step it goes to);
the breakpoint late in the only block of a kernel (1/64 of the work); and one block
doing all the work, stopped late inside it: in a branch of some lanes while other warps
wait for an event, and after a block barrier. A row gives the debugger's CPU seconds
and their ratio to the plain run's.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import best_cpu  # noqa: E402

import croqvm  # noqa: E402
from croqvm.debug import Session  # noqa: E402

GOAL = 3.0

# ``blocks`` blocks of 128 lanes, each lane ``iters`` iterations of a short loop; the
# block ``last`` subtracts one (line 11), then a second launch of one block (line 17).
SOURCE = """__co__ void work(global s32 [B, 128] out, s32 iters, s32 last) {
  parallel p by B {
    parallel t by 128 : thread {
      s32 v = t;
      s32 k = 0;
      while (k < iters) {
        v = (v * 3 + k) % 1021;
        k = k + 1;
      }
      if (p == last)
        v = v - 1;
      out.at(p, t) = v;
    }
  }
  parallel q by 1 {
    parallel u by 128 : thread
      out.at(0, u) = out.at(0, u) + 1;
  }
}
"""
LAST_LINE, AFTER_LINE = 11, 17

# One block of two warpgroups: warpgroup 0 waits for an event that warpgroup 1 triggers
# after ``iters`` iterations and a named barrier of its warps; a branch of some lanes
# after that barrier (line 18), then a block barrier (line 22) and the line after it.
# The native engine runs the block up to the stop and hands its state over
# (croqvm/debug/forward.py _Image).
ONE_BLOCK = """__co__ void one(global s32 [256] out, s32 iters) {
  parallel p by 1 : block {
    shared event done;
    shared s32 [256] buf;
    parallel role by 2 : group-4 {
      parallel t by 128 : thread {
        s32 v = t;
        inthreads.async (role == 0) {
          wait done;
          v = v + buf.at(127 - t);
        }
        inthreads.async (role == 1) {
          foreach k in [iters] {
            v = (v * 3 + k) % 1021;
          }
          __bar_sync(1, 128);
          if (t % 3 == 0)
            v = v - 1;
          buf.at(t) = v;
          trigger done;
        }
        sync.shared;
        out.at(role # t) = v + buf.at(t);
      }
    }
  }
}
"""
BRANCH_LINE, BARRIER_LINE = 18, 23


def _first_stop(program, args, commands, fast_forward: bool, func: str = "work"):
    """A session stopped at its first statement, then ``commands``; returns the stop."""
    def run():
        s = Session(program, func, *[np.array(a, copy=True) if isinstance(a, np.ndarray)
                                       else a for a in args],
                    out=io.StringIO(), fast_forward=fast_forward)
        for command in commands:
            stop = command(s)
        assert stop.reason in ("breakpoint", "watch", "step"), stop.reason
        s.quit()
        return stop
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--python", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    opts = ap.parse_args()
    blocks, iters = (8, 40) if opts.quick else (256, 400)
    program = croqvm.compile(SOURCE.replace("B", str(blocks)), "work.co")
    out = np.zeros((blocks, 128), np.int32)
    stats: dict = {}
    program.run("work", out.copy(), iters, blocks - 1, engine="native", jobs=1,
                out=io.StringIO(), stats=stats)
    plain = best_cpu(lambda: program.run("work", out.copy(), iters, blocks - 1, engine="native",
                                     jobs=1, out=io.StringIO()), opts.repeats)
    one = Session(program, "work", out.copy(), iters, 0, out=io.StringIO())
    one.quit()
    shapes = [
        ("break in the last block", (out, iters, blocks - 1),
         [lambda s: s.break_at(LAST_LINE), lambda s: s.cont()]),
        ("break after the launch", (out, iters, -1),
         [lambda s: s.break_at(AFTER_LINE), lambda s: s.cont()]),
        ("watch the last block", (out, iters, -1),
         [lambda s: s.watch(f"out.at({blocks - 1}, 5)"), lambda s: s.cont()]),
        ("reverse-step there", (out, iters, blocks - 1),
         [lambda s: s.break_at(LAST_LINE), lambda s: s.cont(), lambda s: s.reverse_step()]),
    ]
    print(f"load: {os.getloadavg()[0]:.2f}; plain native run, one thread: {plain:.3f} s CPU, "
          f"{stats['lane_steps']:.3g} lane-instructions")
    print(f"{'shape':26s} {'debugger s':>11s} {'x plain':>8s}"
          + (f" {'no fast-forward s':>18s} {'x plain':>8s}" if opts.python else ""))
    for name, args, commands in shapes:
        fast = best_cpu(_first_stop(program, args, commands, True), opts.repeats)
        row = f"{name:26s} {fast:11.3f} {fast / plain:8.2f}"
        if opts.python:
            slow = best_cpu(_first_stop(program, args, commands, False), 1)
            row += f" {slow:18.3f} {slow / plain:8.2f}"
        print(row)
    # a kernel of one block doing 1/64 of the work, stopped late in it
    single = croqvm.compile(SOURCE.replace("B", "1"), "work.co")
    few = max(1, iters * blocks // 64)
    arg = np.zeros((1, 128), np.int32)
    base = best_cpu(lambda: single.run("work", arg.copy(), few, 0, engine="native", jobs=1,
                                   out=io.StringIO()), opts.repeats)
    late = best_cpu(_first_stop(single, (arg, few, 0),
                            [lambda s: s.break_at(LAST_LINE), lambda s: s.cont()], True), 1)
    print(f"{'break late in block 0':26s} {late:11.3f} {late / base:8.2f}   "
          f"(its plain run: {base:.3f} s, {1 / 64:.3g} of the work above)")
    # one block doing all the work above: stops late inside it
    one = croqvm.compile(ONE_BLOCK, "one.co")
    args = (np.zeros(256, np.int32), max(1, stats["lane_steps"] // (128 * 6)))
    stats = {}
    one.run("one", *args, engine="native", jobs=1, out=io.StringIO(), stats=stats)
    base = best_cpu(lambda: one.run("one", args[0].copy(), args[1], engine="native", jobs=1,
                                    out=io.StringIO()), opts.repeats)
    print(f"one block, {stats['lane_steps']:.3g} lane-instructions: plain run {base:.3f} s")
    for name, line in (("in a branch, event waited", BRANCH_LINE),
                       ("after a block barrier", BARRIER_LINE)):
        commands = [lambda s, line=line: s.break_at(line), lambda s: s.cont()]
        late = best_cpu(_first_stop(one, args, commands, True, "one"), opts.repeats)
        row = f"{name:26s} {late:11.3f} {late / base:8.2f}"
        if opts.python:
            slow = best_cpu(_first_stop(one, args, commands, False, "one"), 1)
            row += f" {slow:18.3f} {slow / base:8.2f}"
        print(row)
    print(f"goal: at most {GOAL:g}x the plain run to the stop")


if __name__ == "__main__":
    sys.exit(main())
