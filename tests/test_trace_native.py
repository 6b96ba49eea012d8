"""croqvm trace on the native engine (native/trace.c, croqvm/trace/native.py) against the
reference recorder (croqvm/trace/recorder.py): the same slices in the same order, the same
times to the bit, the same flows, processes, threads and statement totals, on programs
that exercise each kind of wait: a warp-specialised pipeline and its serialised variant
(events, collective DMA, MMAs), divergence with named barriers, async copies and future
waits, a deadlock that stops the run, and the random schedule."""
from __future__ import annotations

import functools
import io
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.core.errors import ArgumentError
from croqvm.running.program import available
from croqvm.trace import record

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "programs"

pytestmark = pytest.mark.skipif(not available(engine="native"),
                                reason="the native engine is not built")

# divergent lanes, a named barrier's arrive and sync, and a warp that finishes early
BARRIERS = """
__co__ auto handoff() {
  s32 [64] out;
  parallel p by 1 : block {
    shared s32 [64] buf;
    parallel t by 128 : thread {
      if (t < 64) {
        if (t % 3 == 0)
          buf.at(t) = t * 10;
        else
          buf.at(t) = t;
        __bar_arrive(1, 128);
      } else {
        __bar_sync(1, 128);
        out.at(t - 64) = buf.at(127 - t);
      }
    }
  }
  return out;
}
"""


def _gemm(stages: str):
    program = croqvm.compile_file(str(PROGRAMS / "matmul_1p1c.co"), defines={"STAGES": stages})
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (64, 128)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 128)).astype(np.float16)
    return program, "gemm_ws", [a, b, np.zeros((64, 64), np.float32)], {}


def _double_buffer():
    program = croqvm.compile_file(str(PROGRAMS / "matmul_double_buffer.co"))
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (32, 64)).astype(np.float32) for _ in range(2))
    return program, "matmul_db", [a, b.T.copy()], {"M": 32, "K": 64, "N": 32}


CASES = {
    "pipeline": lambda: _gemm("2"),
    "serialised": lambda: _gemm("1"),
    "barriers": lambda: (croqvm.compile(BARRIERS, "handoff.co"), "handoff", [], {}),
    "async copies": _double_buffer,
    "events": lambda: (croqvm.compile_file(str(PROGRAMS / "pipeline_events.co")), "pipeline",
                       [], {}),
    "deadlock": lambda: (croqvm.compile_file(str(PROGRAMS / "broken" / "missing_bootstrap.co")),
                         "broken", [], {}),
}


def _both(case: str, **options):
    program, func, args, dims = CASES[case]()
    out = {}
    for engine in ("python", "native"):
        copies = [np.array(a, copy=True) for a in args]
        out[engine] = record(program, func, copies, dims, engine=engine, out=io.StringIO(),
                             keep_on_fault=True, **options)
    return out["python"], out["native"]


@functools.cache
def _pair(case: str):
    return _both(case)


@pytest.mark.parametrize("case", list(CASES))
def test_the_native_trace_is_the_reference_trace(case):
    ref, got = _pair(case)
    assert got.slices == ref.slices
    assert got.flows == ref.flows
    assert got.processes == ref.processes and got.threads == ref.threads
    assert got.stats == ref.stats
    assert str(got.error) == str(ref.error)
    if case != "deadlock":
        assert ref.error is None and got.slices
        np.testing.assert_array_equal(got.result, ref.result)


def test_every_wait_kind_is_covered():
    """The cases above do wait on each kind the recorder names (a case that stopped
    waiting would leave a kind untested)."""
    kinds = set()
    for case in CASES:
        ref, _ = _pair(case)
        kinds |= {s.name.split()[1] if s.kind == "wait" else s.kind for s in ref.slices
                  if s.kind != "run"}
        kinds |= {f.name for f in ref.flows}
    assert {"copy", "launch", "dma", "trigger", "named", "full[0]", "waiting"} <= kinds, kinds


def test_the_random_schedule_gives_the_same_trace_on_both_engines():
    ref, got = _both("events", schedule="random", seed=5)
    assert got.end == ref.end > 0      # C's latest end, read before the slices are made
    assert got.slices == ref.slices and got.flows == ref.flows and got.stats == ref.stats


def test_the_race_check_traces_on_the_reference_engine():
    program = croqvm.compile(BARRIERS, "handoff.co")
    trace = program.trace("handoff", check="race", out=io.StringIO())
    assert trace.slices and trace.error is None
    with pytest.raises(ArgumentError, match="runs on the Python engine only"):
        program.trace("handoff", check="race", engine="native")
