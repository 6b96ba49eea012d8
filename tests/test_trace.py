"""croqvm trace (croqvm/trace, docs/TRACE.md): the timeline's times follow the cost model
across warps (a warp-specialised pipeline overlaps copy and MMA, a serialised one does
not; a wait ends when what releases it happens), the file is valid Trace Event Format,
the statement totals match counts made by hand and by the engine, tracing changes no
result, and bad options are one-line errors."""
from __future__ import annotations

import functools
import gzip
import io
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main
from croqvm.core.errors import ArgumentError
from croqvm.trace import CostModel, load

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "programs"

TINY = """\
__co__ void tiny(global s32 [40] x) {
  parallel p by 1 {
    parallel t by 40 : thread {
      s32 v = t;
      if (t < 8)
        v = v + 100;
      x.at(t) = v;
    }
  }
}
"""


@functools.cache
def gemm(stages: int):
    """programs/matmul_1p1c.co with a ring of ``stages`` slots (1: the producer can only
    copy while the consumer waits, and the other way round), on one 64x64 tile, K = 256."""
    program = croqvm.compile_file(str(PROGRAMS / "matmul_1p1c.co"),
                                  defines={"STAGES": str(stages)})
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (64, 256)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 256)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    return program.trace("gemm_ws", a, b, c), (a, b, c)


def copies(s):      # the producer warpgroup's copies (warps 0-3 of the one block)
    return s.pid == 1 and s.tid < 4 and s.kind == "run" and s.name.startswith("dma.copy")


def mmas(s):        # the consumer warpgroup's MMAs (warps 4-7)
    return s.pid == 1 and 4 <= s.tid < 8 and s.kind == "run" and s.name.startswith("mma.row")


def test_a_two_slot_pipeline_overlaps_copy_and_mma_and_a_one_slot_one_does_not():
    two, (a, b, c) = gemm(2)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, atol=1e-3)
    one, _ = gemm(1)
    assert two.overlap(copies, mmas) > 0
    assert one.overlap(copies, mmas) == 0
    end = lambda t: max(s.end for s in t.slices)    # noqa: E731
    assert end(two) < end(one)


def test_the_timeline_does_not_depend_on_the_interpreters_schedule():
    program = croqvm.compile_file(str(PROGRAMS / "pipeline_events.co"))
    shape = lambda t: sorted((s.pid, s.tid, s.name, s.start, s.end) for s in t.slices)  # noqa: E731
    rr = program.trace("pipeline", out=io.StringIO())
    shuffled = program.trace("pipeline", schedule="random", seed=1, out=io.StringIO())
    assert shape(shuffled) == shape(rr)


def test_an_event_wait_ends_when_the_last_trigger_of_its_generation_does():
    trace, _ = gemm(2)
    triggers = {s.end for s in trace.slices if s.pid == 1 and s.tid < 4
                and s.name == "trigger full[st];"}
    waits = [s for s in trace.slices if s.kind == "wait" and s.name.startswith("wait full")]
    assert waits and all(w.end in triggers for w in waits)
    flows = [f for f in trace.flows if f.name == "trigger"]
    assert flows and all(f.points[0][2] <= f.points[-1][2] for f in flows)


def test_a_future_wait_ends_at_its_copy_landing_and_the_copy_flows_from_issue_to_wait():
    program = croqvm.compile_file(str(PROGRAMS / "matmul_double_buffer.co"))
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype(np.float32) for _ in range(2))
    trace = program.trace("matmul_db", a, b, M=64, K=64, N=64)
    landed = {s.end for s in trace.slices if s.kind == "copy"}
    waits = [s for s in trace.slices if s.kind == "wait" and s.name.startswith("wait cur_")]
    assert waits and all(w.end in landed for w in waits)
    dma = [f for f in trace.flows if f.name == "dma"]
    assert dma
    for f in dma:
        (_, issuer, issued), (_, copy, land), (_, waiter, waited) = f.points
        assert issuer < 1000 <= copy and waiter < 1000 and issued < land <= waited


def test_copies_and_mmas_take_the_cycles_the_model_gives():
    program = croqvm.compile_file(str(PROGRAMS / "matmul_mma_warp.co"))
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (32, 32)).astype(np.float16) for _ in range(2))
    trace = program.trace("gemm_warps", a, b, np.zeros((32, 32), np.float32))
    took = defaultdict(set)
    for s in trace.slices:
        if s.kind in ("run", "copy"):
            took[(s.kind, s.name.split()[0])].add(s.end - s.start)
    # a warp's 16x16x16 f16 MMA: a quarter of 2048 MACs/cycle, 30 latency, 20 barrier
    assert took[("run", "mma.row.col")] == {16 * 16 * 16 / 512 + 30 + 20}
    # a 32x16 f16 tile (1024 B) at 16 B/cycle and 600 latency, in flight on its track
    assert took[("copy", "dma.copy")] == {1024 / 16 + 600}


HANDOFF = """
__co__ auto handoff() {
  s32 [64] out;
  parallel p by 1 : block {
    shared s32 [64] buf;
    parallel t by 128 : thread {
      if (t < 64) {
        buf.at(t) = t * 10;
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


def test_a_named_barrier_releases_its_waiters_at_the_last_arrival():
    trace = croqvm.compile(HANDOFF, "handoff.co").trace("handoff")
    np.testing.assert_array_equal(trace.result, (63 - np.arange(64)) * 10)
    arrivals = [s for s in trace.slices if s.name == "__bar_arrive(1, 128);"]
    waits = [s for s in trace.slices if s.name == "wait named barrier 1"]
    assert {s.tid for s in arrivals} == {0, 1} and {s.tid for s in waits} == {2, 3}
    last = max(arrivals, key=lambda s: s.end)
    assert all(last.start <= w.end <= last.end for w in waits)


def test_the_file_is_trace_event_format_with_matching_flows(tmp_path):
    for name in ("t.json", "t.json.gz"):
        path = tmp_path / name
        assert main(["trace", str(PROGRAMS / "matmul_double_buffer.co"), "--func",
                     "matmul_db", "--random-inputs", "--dim", "M=32", "--dim", "K=64",
                     "--dim", "N=32", "-o", str(path)]) == 0
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        slices = defaultdict(list)
        flows = defaultdict(list)
        for e in events:
            assert e["ph"] in "MXstf" and isinstance(e["pid"], int) and isinstance(e["tid"], int)
            if e["ph"] == "X":
                assert e["dur"] >= 0 and e["ts"] >= 0 and e["name"]
                slices[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
            elif e["ph"] in "stf":
                flows[e["id"]].append(e)
        assert flows
        for points in flows.values():
            assert [p["ph"] for p in points] == ["s"] + ["t"] * (len(points) - 2) + ["f"]
            assert len({(p["name"], p["cat"]) for p in points}) == 1
            for p in points:     # each point lies in a slice of its track (decimal times)
                assert any(s - 1e-9 <= p["ts"] <= e + 1e-9
                           for s, e in slices[(p["pid"], p["tid"])])
        for spans in slices.values():    # a track's slices never overlap
            spans.sort()
            assert all(e0 <= s1 + 1e-9 for (_, e0), (s1, _) in zip(spans, spans[1:]))


def test_statement_totals_match_counts_by_hand_and_the_engines_own():
    program = croqvm.compile(TINY, "tiny.co")
    x = np.zeros(40, np.int32)
    trace = program.trace("tiny", x)
    rows = {r.text: r for r in trace.stats}
    # 40 lanes: warp 0 (32 lanes) and warp 1 (8); the if body runs on lanes 0-7 of warp 0
    body, store = rows["v = v + 100;"], rows["x.at(t) = v;"]
    assert body.steps > 0 and body.lanes == 8 * body.steps and body.divergence == 75.0
    assert store.steps % 2 == 0 and store.lanes == 20 * store.steps and store.divergence == 0
    stats = {}
    program.run("tiny", np.zeros(40, np.int32), engine="python", stats=stats)
    assert sum(r.lanes for r in trace.stats) == stats["lane_steps"]
    assert sum(r.steps for r in trace.stats) == stats["warp_steps"]
    np.testing.assert_array_equal(x, np.arange(40) + 100 * (np.arange(40) < 8))


def test_stats_table_is_aligned(capsys, tmp_path):
    assert main(["trace", str(PROGRAMS / "divergence.co"), "-o", str(tmp_path / "d.json"),
                 "--stats"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(k for k, line in enumerate(out) if line.startswith("where"))
    table = out[head:]
    assert table[0].split()[:6] == ["where", "lane-instr", "warp-steps", "diverg%", "cycles",
                                    "wait"]
    column = table[0].index("diverg%") + len("diverg%")
    assert all(line[column - 1].isdigit() for line in table[1:])


@pytest.mark.parametrize("file, func, dims", [
    ("pipeline_events.co", "pipeline", {}),
    ("matmul_tma.co", "gemm_tma", {"M": 64, "N": 128, "K": 192}),
    ("persistent_scale.co", "scale_tiles", {"M": 100, "N": 70}),
])
def test_tracing_changes_no_result(file, func, dims):
    from croqvm.running.inputs import build_args
    program = croqvm.compile_file(str(PROGRAMS / file))
    fn = program.function(func)
    args, rest = build_args(fn, {}, dims, bool(fn.params), 0)
    runs = []
    for how in ("native", "traced"):
        copy = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        out = io.StringIO()
        if how == "traced":
            result = program.trace(func, *copy, out=out, **rest).result
        else:
            result = program.run(func, *copy, engine=how, out=out, **rest)
        runs.append((copy, result, out.getvalue()))
    (a0, r0, o0), (a1, r1, o1) = runs
    assert o0 == o1
    for x, y in zip(a0 + [r0], a1 + [r1]):
        np.testing.assert_array_equal(x, y)


def test_a_cost_file_changes_the_times(tmp_path):
    program = croqvm.compile(TINY, "tiny.co")
    base = program.trace("tiny", np.zeros(40, np.int32))
    path = tmp_path / "cost.toml"
    path.write_text("[cycles]\nglobal = 5000\n")
    slow = program.trace("tiny", np.zeros(40, np.int32), cost=load(str(path)))
    store = lambda t: next(r for r in t.stats if r.text == "x.at(t) = v;")    # noqa: E731
    assert store(slow).cycles - store(base).cycles == 4500 * store(base).steps
    assert CostModel().cycles["global"] == 500


@pytest.mark.parametrize("options, message", [
    (["-o", "t.txt"], "-o t.txt: a trace file is named .json or .json.gz"),
    (["--cost", "missing.toml"], "--cost missing.toml: No such file or directory"),
    (["--cost", "bad.toml"], "--cost bad.toml: [cycles] has no entry 'alus' (known: "),
    (["--cost", "neg.toml"], "--cost neg.toml: [dma].latency must be a non-negative number"),
    (["--seed", "3"], "--seed seeds --random-inputs"),
    (["--func", "nope"], "no function 'nope' in"),
])
def test_bad_options_are_one_line_errors(options, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text("[cycles]\nalus = 3\n")
    (tmp_path / "neg.toml").write_text("[dma]\nlatency = -1\n")
    status = main(["trace", str(PROGRAMS / "hello.co"), *options])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and message in err, err


def test_the_picture_draws_each_track_s_slices_in_their_colour(tmp_path, capsys):
    # a two-stage pipeline: the consumer warp's rows run (blue) and wait (red, hatched),
    # the block's copy track holds the copies (green), the host its launch (grey)
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from croqvm.trace.output import figure
    program = croqvm.compile_file(str(PROGRAMS / "matmul_1p1c.co"))
    trace = program.trace("gemm_ws", np.ones((64, 128), np.float16),
                          np.ones((64, 128), np.float16), np.zeros((64, 64), np.float32))
    ax = figure(trace).axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    drawn = defaultdict(set)        # row -> (colour, hatched) of its bars
    for bars in ax.collections:
        y = bars.get_paths()[0].vertices[:, 1].min() + 0.4
        colour = "#%02x%02x%02x" % tuple(round(255 * c) for c in bars.get_facecolor()[0][:3])
        drawn[rows[round(y)]].add((colour, bool(bars.get_hatch())))
    plt.close("all")
    assert len(ax.collections) == len(trace.slices)
    consumer = "block (0, 0) of launch 1: warp 4"
    assert drawn[consumer] == {("#1f77b4", False), ("#d62728", True)}
    assert drawn["block (0, 0) of launch 1: copies"] == {("#2ca02c", False)}
    assert ("#7f7f7f", False) in drawn["host: host program"]
    png = tmp_path / "p.png"            # and the command writes it
    assert main(["trace", str(PROGRAMS / "matmul_1p1c.co"), "--func", "gemm_ws",
                 "--random-inputs", "--dim", "M=64", "--dim", "N=64", "--dim", "K=128",
                 "-o", str(tmp_path / "p.json"), "--png", str(png)]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"wrote {png}"
    assert png.read_bytes().startswith(b"\x89PNG")


def test_png_without_matplotlib_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # as if not installed
    status = main(["trace", str(PROGRAMS / "hello.co"), "-o", str(tmp_path / "h.json"),
                   "--png", str(tmp_path / "h.png")])
    err = capsys.readouterr().err
    assert status == 2 and err == "--png needs matplotlib, which is not installed " \
                                  "(pip install matplotlib)\n"


def test_the_api_refuses_an_unknown_function():
    program = croqvm.compile(TINY, "tiny.co")
    with pytest.raises(ArgumentError, match="no function named 'nope'"):
        program.trace("nope")


def test_a_run_that_stops_with_a_runtime_error_still_writes_its_trace(tmp_path, capsys):
    path = tmp_path / "dead.json"
    broken = PROGRAMS / "broken" / "missing_bootstrap.co"
    assert main(["trace", str(broken), "-o", str(path)]) == 3     # as croqvm run exits
    assert "deadlock" in capsys.readouterr().err
    events = json.loads(path.read_text())["traceEvents"]
    # every warp: the producer's 4 on `empty`, the consumer's 4 on `full`, these last
    # to block (their slices of no length, at the end of the block's last clock)
    waiting = sorted((e["tid"], e["name"].split(": ", 1)[1], e["dur"] > 0) for e in events
                     if e["name"].startswith("still waiting when the run stopped"))
    assert waiting == [(w, "wait empty[k % STAGES];", True) for w in range(4)] + \
        [(w, "wait full[k % STAGES];", False) for w in range(4, 8)]
    with pytest.raises(croqvm.KernelFault, match="deadlock"):
        croqvm.compile_file(str(broken)).trace("broken", out=io.StringIO())


LOOP = """\
__co__ void loop(global s32 [64] x) {
  parallel p by 1 {
    parallel t by 64 : thread {
      s32 acc = x.at(t);
      foreach i in [200] {
        acc = acc * 3 + i;
        acc = acc ^ (acc >> 3);
      }
      x.at(t) = acc;
    }
  }
}
"""


def test_a_trace_file_takes_under_100_bytes_an_event(tmp_path):
    from croqvm.trace.output import write
    trace = croqvm.compile(LOOP, "loop.co").trace("loop", np.zeros(64, np.int32))
    path = tmp_path / "loop.json"
    n = write(trace, str(path))
    assert n > 1000 and path.stat().st_size / n < 100
    doc = json.loads(path.read_text())
    names = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert doc["otherData"]["file"] == "loop.co" and "6: acc = acc * 3 + i;" in names
