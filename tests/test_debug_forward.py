"""The debugger's fast-forward (croqvm/debug/forward.py, native/debug.c): a session that
runs the blocks it can not stop in on the native engine shows exactly what a session
running every block under the hook shows (the reference), command for command: the same
stops, step counts, values, output and results; and it does run blocks natively, hand
a block stopped inside over to the reference engine (forward.py _Image) and begin
re-runs at checkpoints.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main
from croqvm.debug import Session
from croqvm.debug.console import Console, run_script
from croqvm.debug.forward import FastForward
from croqvm.interp import engine
from croqvm.native import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason="needs the native engine")

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
DEBUG = Path(__file__).resolve().parent / "debug"

# 16 blocks of two warps; block ``last`` subtracts one (line 10); blocks 0, 5, 10, 15
# print; a second launch of 4 blocks adds one to the first 128 elements (line 18).
# ``pad`` makes the memory a block may write large against the block's work, so that
# the fast-forward saves it once per run (native/debug.c) and goes back over blocks.
BLOCKS = """__co__ void blocks(global s32 [1024] out, s32 last, global s32 [262144] pad) {
  parallel p by 16 {
    parallel t by 64 : thread {
      s32 v = t * 2;
      if (t < 4)
        v = v + 100;
      foreach i in [8]
        v = v + i;
      if (p == last)
        v = v - 1;
      if (t == 0 && p % 5 == 0)
        println("block", p, v);
      out.at(p # t) = v + p + pad.at(p # t);
    }
  }
  println(out.at(3));
  parallel q by 4 {
    parallel u by 32 : thread
      out.at(q # u) = out.at(q # u) + 1;
  }
  println(out.at(5));
}
"""

# Block 11 of 16 indexes past the end of ``out`` (line 5).
FAULTS = """__co__ void faults(global s32 [512] out) {
  parallel p by 16 {
    parallel t by 32 : thread {
      s32 k = p == 11 ? t + 512 : p # t;
      out.at(k) = t;
    }
  }
}
"""

# One block of two warps: a loop with an if/else splitting each warp's lanes (lines
# 8-11), a block barrier (15), a named barrier the warps reach in the two branches of
# an if (18, 22).
ONE_BLOCK = """__co__ void mid(global s32 [64] out, s32 n) {
  parallel p by 1 : block {
    shared s32 [64] buf;
    parallel t by 64 : thread {
      s32 v = t;
      s32 k = 0;
      while (k < n) {
        if (t % 3 == 0)
          v = v + k;
        else
          v = v * 2 % 97;
        k = k + 1;
      }
      buf.at(t) = v;
      sync.shared;
      v = v + buf.at(63 - t);
      if (t < 32) {
        __bar_sync(1, 64);
        v = v + 1;
      } else {
        v = v + 2;
        __bar_sync(1, 64);
      }
      out.at(t) = v;
    }
  }
}
"""

# 16 small blocks (memory saved before each): block ``last`` subtracts one (line 7);
# blocks 0, 4, 8, 12 print.
SMALL = """__co__ void small(global s32 [16, 32] out, s32 last) {
  parallel p by 16 {
    parallel t by 32 : thread {
      s32 v = t;
      foreach i in [4]
        v = v * 3 % 101 + i;
      if (p == last)
        v = v - 1;
      if (t == 0 && p % 4 == 0)
        println("block", p, v);
      out.at(p, t) = v;
    }
  }
}
"""

BLOCKS_SCRIPTS = [
    "b 10\nc\np v\nn\nn\nrs\nrs\nrn\nrc\nc\nc\n",
    "b 10 if t == 3\nc\nc\n",
    "watch out.at(780)\nc\nrs\nrs\nrn\nc\nc\n",
    "b 13\nc\nd 13\nfinish\nn\nrs\nrs\nrs\n",
    "n\nn\nn\nrs\nrs\nrn\nb 19\nc\nrs\nrs\nrn\nrc\nc\n",
    "b 10\nc\nd\nb 4\nc\nrs\nrs\nrs\nrn\nrs\nc\n",
    "b 10\nc\nwatch out.at(13)\nc\nc\nrc\nc\n",
    "watch out.at(780)\nc\nb 19\nc\nrc\np out.at(780)\nrc\nc\nc\n",
]


def _transcript(program, func, args, script, fast_forward, **options):
    out = io.StringIO()
    fresh = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    s = Session(program, func, *fresh, out=out, fast_forward=fast_forward, **options)
    text = io.StringIO()
    status = run_script(Console(s, text), script.splitlines(), "script")
    return status, text.getvalue(), out.getvalue(), [a for a in fresh
                                                     if isinstance(a, np.ndarray)]


def _same(program, func, args, script, **options):
    fast = _transcript(program, func, args, script, True, **options)
    slow = _transcript(program, func, args, script, False, **options)
    assert fast[:3] == slow[:3]
    for a, b in zip(fast[3], slow[3]):
        assert np.array_equal(a, b)
    return fast


@pytest.mark.parametrize("schedule, seed", [("rr", 0), ("random", 5)])
@pytest.mark.parametrize("script", BLOCKS_SCRIPTS)
def test_blocks_transcripts_are_the_reference_sessions(script, schedule, seed):
    program = croqvm.compile(BLOCKS, "blocks.co")
    _same(program, "blocks", (np.full(1024, -1, np.int32), 12, np.zeros(262144, np.int32)),
          script, schedule=schedule, seed=seed)


@pytest.mark.parametrize("script", ["c\n", "break fault\nc\np k\nrs\nrs\n",
                                    "watch out.at(321)\nc\nc\n"])
def test_a_fault_in_a_late_block_is_reported_as_the_reference_session_does(script):
    program = croqvm.compile(FAULTS, "faults.co")
    status, text, _, _ = _same(program, "faults", (np.zeros(512, np.int32),), script)
    assert status == 3 and "block (11)" in text


# Block 10 of BLOCKS starts with step 1858: a limit of 1857 stops it at its first step,
# before the debugger's hook sees it, where the stop shows the warp that ran last.
@pytest.mark.parametrize("limit, script", [(2000, "break fault\nc\nrs\nrs\nc\n"),
                                           (1857, "break fault\nc\np v\nrs\nc\n")])
def test_the_step_limit_in_a_late_block_is_met_where_the_reference_session_meets_it(
        limit, script):
    program = croqvm.compile(BLOCKS, "blocks.co")       # about 190 warp-steps a block
    status, text, _, _ = _same(program, "blocks", (np.full(1024, -1, np.int32), 12,
                                                   np.zeros(262144, np.int32)),
                               script, max_steps=limit)
    assert status == 3 and f"step limit of {limit}" in text and "block (10)" in text


@pytest.mark.parametrize("script", ["watch c.at(20, 40)\nc\nrs\nc\n",
                                    "b 31 if bm == 1 && bn == 2 && tm == 3\nc\nfinish\n"])
def test_dma_into_shared_memory_over_a_2d_grid(script):
    program = croqvm.compile_file(str(PROGRAMS / "matmul_dma.co"))
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (32, 32), dtype=np.int32)
    b = rng.integers(-8, 8, (32, 48), dtype=np.int32)
    _same(program, "matmul", (a, b), script)


def test_blocks_it_can_not_stop_in_run_natively(monkeypatch):
    ran = []                # the blocks the reference engine starts

    def counting(blk, hregs, cluster_blocks):
        ran.append(blk.index)
        return start_block(blk, hregs, cluster_blocks)
    start_block = engine._start_block
    monkeypatch.setattr(engine, "_start_block", counting)
    program = croqvm.compile(BLOCKS, "blocks.co")
    s = Session(program, "blocks", np.full(1024, -1, np.int32), 12, np.zeros(262144, np.int32),
                out=io.StringIO())
    s.break_at(10)
    stop = s.cont()
    assert stop.place.block == (12,) and ran == [(12,)]
    assert s.cont().place.warp == 1                # the block's second warp
    assert s.cont().reason == "finished" and ran == [(12,)]
    s.break_at(10, condition="t == 3")     # a condition: each block reaching it is checked
    s.reverse_continue()
    assert s.stop.place.block == (12,)


def test_cli_no_fast_forward_gives_the_same_transcript(tmp_path, capsys):
    (tmp_path / "blocks.co").write_text(BLOCKS)
    (tmp_path / "cmds").write_text("watch out.at(780)\nc\np v\nrs\nc\nc\n")
    shown = []
    for flag in ([], ["--no-fast-forward"]):
        assert main(["debug", str(tmp_path / "blocks.co"), "--func", "blocks",
                     "--random-inputs", "--script", str(tmp_path / "cmds"), *flag]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] and "by block (12) warp 0 lanes 12" in shown[0]


def test_blocks_that_all_stop_are_tried_less_often_when_saving_costs_more(monkeypatch):
    tries = []
    forward = FastForward._forward

    def counting(self, run, call, hblk, index, grid, number, total):
        tries.append(number)
        return forward(self, run, call, hblk, index, grid, number, total)
    monkeypatch.setattr(FastForward, "_forward", counting)
    program = croqvm.compile(BLOCKS, "blocks.co")     # 1 MiB to save, a block's 5,000
    _same(program, "blocks", (np.full(1024, -1, np.int32), 12,   # lane-steps: each try
                              np.zeros(262144, np.int32)),       # pauses twice as long
          "b 4 if t == 1\n" + "c\n" * 17)
    assert tries[:5] == [0, 2, 5, 10, 0]      # the second launch starts again


def _resumed(monkeypatch) -> list:
    """The blocks the reference engine goes on with from a native run's image."""
    resumed = []

    def spy(blk, w):
        resumed.append((blk.index, w.index, w.ip))
        return resume(blk, w)
    resume = engine.resume_block
    monkeypatch.setattr(engine, "resume_block", spy)
    return resumed


# stopping inside the only block: in a branch of a loop, after a block barrier, at it
# while another warp waits there, before and after a named barrier; values of all lanes, the warps, stepping on and going back
# (each reverse command re-runs the call and stops natively at the step it goes to)
@pytest.mark.parametrize("schedule", ["rr", "random"])
@pytest.mark.parametrize("script", [
    ("b 11\nc\nwarp 1\ns\ns\nwarp 0\np v\np k\ninfo warps\nn\nn\nwarp 1\nn\nrs\nrs\nrn\nc\nd\n"
     "b 9 if k == 5\nc\nrc\nc\n"),
    ("b 21\nc\ninfo warps\nwarp 0\nn\nrs\np v\nd\nb 16\nrc\nwhere\np v\nsi\nsi\nn\nwarp 1\n"
     "n\nrs\nrs\nc\n"),
    "b 16\nc\nwarp 1\nrs\nwhere\nrs\np v\nn\nn\nwhere\nc\n",     # warp 0 waits at line 15
])
def test_a_stop_inside_a_block_goes_on_from_the_native_state(monkeypatch, script, schedule):
    resumed = _resumed(monkeypatch)
    program = croqvm.compile(ONE_BLOCK, "mid.co")
    _same(program, "mid", (np.zeros(64, np.int32), 10), script, schedule=schedule, seed=3)
    assert len(resumed) >= 4      # the first stop and the re-runs of reverse commands


# warps waiting for events that others trigger (programs/pipeline_events.co)
@pytest.mark.parametrize("schedule", ["rr", "random"])
def test_a_stop_with_event_waiters_goes_on_from_the_native_state(monkeypatch, schedule):
    resumed = _resumed(monkeypatch)
    program = croqvm.compile_file(str(PROGRAMS / "pipeline_events.co"))
    _same(program, "pipeline", (), "b 33\nc\ninfo events\nwhere\nn\nrs\nrs\nd\nb 24\nc\n"
          "c\ninfo events\ninfo warps\nrc\nrs\nc\n", schedule=schedule, seed=2)
    assert resumed


# futures of async copies, waited and not, held when a block is handed over
@pytest.mark.parametrize("schedule", ["rr", "random"])
def test_a_stop_with_futures_goes_on_from_the_native_state(monkeypatch, schedule):
    resumed = _resumed(monkeypatch)
    program = croqvm.compile_file(str(PROGRAMS / "matmul_double_buffer.co"))
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (32, 32)).astype(np.float32)
    b = rng.integers(-8, 8, (32, 48)).astype(np.float32)
    _same(program, "matmul_db", (a, b), "b 36 if bm == 1 && bn == 1 && tm == 3\nc\n"
          "info futures\np cur_a.data.at(tm, 0)\nn\nn\ninfo futures\nrs\nrs\nrn\nc\n",
          schedule=schedule, seed=1)
    assert resumed


# MMA fragments (accumulators, loaded operands) held when a block is handed over
@pytest.mark.parametrize("schedule", ["rr", "random"])
def test_a_stop_with_fragments_goes_on_from_the_native_state(monkeypatch, schedule):
    resumed = _resumed(monkeypatch)
    program = croqvm.compile_file(str(PROGRAMS / "matmul_mma_warp.co"))
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    _same(program, "gemm_warps", (a, b, np.zeros((32, 32), np.float32)),
          "b 27\nc\np kt\nc\nn\nrs\nrc\nc\nd\nb 29\nc\nrs\nc\n",
          schedule=schedule, seed=3)
    assert resumed


# calls inlined in a block the native run hands over (tests/debug/calls.co: block p's
# lane t calls quad(t) on line 14, which calls twice on lines 7 and 8): the statement
# starts native/debug.c records for going back (the rest of line 14 after quad returns
# is none; twice's lines are deeper than quad's, quad's than line 14) and the frames
@pytest.mark.parametrize("schedule", ["rr", "random"])
def test_calls_in_a_block_handed_over_are_the_reference_sessions(monkeypatch, schedule):
    resumed = _resumed(monkeypatch)
    program = croqvm.compile_file(str(DEBUG / "calls.co"))
    _, text, _, _ = _same(program, "calls", (np.zeros(64, np.int32),),
                          "b 15 if p == 1\nc\nrn\ns\nbt\nrs\nrs\nbt\nd\nb 2 if p == 1\n"
                          "c\nc\nbt\nrc\nfinish\nn\nrn\nrn\nbt\nc\n",
                          schedule=schedule, seed=4)
    shown = [ln.split("    [")[0] for ln in text.splitlines() if ln.startswith(("->", "B>"))]
    assert shown == ["-> 12    parallel p by 2 {",
                     "B> 15        out.at(p # t) = v + p;",
                     "-> 14        s32 v = call quad(t);",       # rn: over both calls
                     "-> 7    s32 h = call twice(a);",
                     "-> 14        s32 v = call quad(t);",
                     "-> 13      parallel t by 32 : thread {",
                     "B> 2    s32 r = a * 2;",                 # twice from line 7
                     "B> 2    s32 r = a * 2;",                 # from line 8
                     "B> 2    s32 r = a * 2;",                 # rc: from line 7
                     "-> 7    s32 h = call twice(a);",         # finish: the rest of line 7
                     "-> 8    return call twice(h);",
                     "-> 7    s32 h = call twice(a);",         # rn: over twice
                     "-> 14        s32 v = call quad(t);",
                     "B> 2    s32 r = a * 2;",                 # c: from line 7
                     "B> 2    s32 r = a * 2;"]                 # the script over: line 8
    assert "#2   block (1) warp 0: line 14 (ready), lanes 0-31: s32 v = call quad(t);" in text
    assert resumed
