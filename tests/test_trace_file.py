"""The file of a native trace is written in C (native/trace_text.c) from the run's records;
croqvm/trace/output.py ``events`` is its specification, and writes the reference engine's
traces. The two engines' files must be the same bytes (.json, and .json.gz once
decompressed), and C's numbers Python's: ``repr(round(x, 4))``."""
from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main
from croqvm.running.program import available
from croqvm.trace import CostModel, record
from croqvm.trace.native import NativeTrace, _columns
from croqvm.trace.output import TraceFile, write

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "programs"

pytestmark = pytest.mark.skipif(not available(engine="native"),
                                reason="the native engine is not built")


def _double_buffer():
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (32, 64)).astype(np.float32) for _ in range(2))
    return "matmul_double_buffer.co", "matmul_db", [a, b.T.copy()], {"M": 32, "K": 64, "N": 32}


# events and triggers, async copies and future waits, divergent lanes (masks), MMAs
# and copies of a warp-specialised pipeline, a deadlock (still-waiting slices)
CASES = {
    "events": lambda: ("pipeline_events.co", "pipeline", [], {}),
    "async copies": _double_buffer,
    "divergence": lambda: ("divergence.co", None, [], {}),
    "pipeline": lambda: ("matmul_1p1c.co", "gemm_ws",
                         [np.ones((64, 128), np.float16), np.ones((64, 128), np.float16),
                          np.zeros((64, 64), np.float32)], {}),
    "deadlock": lambda: ("broken/missing_bootstrap.co", "broken", [], {}),
}


def _files(tmp_path, case, cost=None) -> dict:
    """{(engine, suffix): the file's bytes, decompressed} of the case traced on each
    engine."""
    file, func, args, dims = CASES[case]()
    program = croqvm.compile_file(str(PROGRAMS / file))
    func = func or program.functions[0].name
    out = {}
    for engine in ("python", "native"):
        trace = record(program, func, [np.array(a, copy=True) for a in args], dims,
                       engine=engine, out=io.StringIO(), keep_on_fault=True, cost=cost)
        assert isinstance(trace, NativeTrace) == (engine == "native")
        for suffix in (".json", ".json.gz"):
            path = tmp_path / f"{engine}{suffix}"
            events = write(trace, str(path))
            opener = gzip.open if suffix.endswith(".gz") else open
            with opener(path, "rb") as f:
                out[engine, suffix] = events, f.read()
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_both_engines_write_the_same_bytes(tmp_path, case):
    files = _files(tmp_path, case)
    for suffix in (".json", ".json.gz"):
        assert files["native", suffix] == files["python", suffix]
    events, text = files["native", ".json"]
    assert events > 10 and text.startswith(b'{"traceEvents":[{"ph":"X"')
    # the names of processes and threads last: a file written as the run goes knows
    # them at its end
    assert json.loads(text)["traceEvents"][-1]["ph"] == "M"


def _written_as_it_runs(tmp_path, monkeypatch, case, cost=None) -> tuple:
    """The case's native trace as ``croqvm trace -o`` writes it, the run in slices of 3
    steps (so that the file takes the slices a few at a time: waits and copies with their
    details, across the run's launches), as .json and .json.gz; and the reference
    engine's file: (native .json, native .json.gz decompressed, the reference's)."""
    from croqvm.native import driver
    monkeypatch.setattr(driver, "SLICE_STEPS", 3)
    file, func, args, dims = CASES[case]()
    program = croqvm.compile_file(str(PROGRAMS / file))
    func = func or program.functions[0].name
    reference = record(program, func, [np.array(a, copy=True) for a in args], dims,
                       engine="python", out=io.StringIO(), keep_on_fault=True, cost=cost)
    events = write(reference, str(tmp_path / "reference.json"))
    out = []
    for suffix in (".json", ".json.gz"):
        sink = TraceFile(str(tmp_path / f"native{suffix}"))
        trace = record(program, func, [np.array(a, copy=True) for a in args], dims,
                       engine="native", out=io.StringIO(), keep_on_fault=True, cost=cost,
                       file=sink)
        assert trace.tracer.handed > len(reference.slices) // 2     # not kept
        assert not trace.tracer.recorded[0].size
        with pytest.raises(ValueError, match="written to its file"):
            trace.slices
        assert sink.close(trace) == events
        data = (tmp_path / f"native{suffix}").read_bytes()
        out.append(gzip.decompress(data) if suffix == ".json.gz" else data)
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["native.json", "native.json.gz", "reference.json"]
    return out[0], out[1], (tmp_path / "reference.json").read_bytes()


@pytest.mark.parametrize("case", list(CASES))
def test_a_file_written_as_the_run_goes_is_the_file_of_the_trace(tmp_path, monkeypatch,
                                                                  case):
    text, unzipped, reference = _written_as_it_runs(tmp_path, monkeypatch, case)
    assert text == unzipped == reference


def test_a_run_that_stops_leaves_no_file(tmp_path):
    program = croqvm.compile_file(str(PROGRAMS / "broken/missing_bootstrap.co"))
    sink = TraceFile(str(tmp_path / "t.json.gz"))
    with pytest.raises(croqvm.KernelFault):
        record(program, program.functions[0].name, [], {}, engine="native",
               out=io.StringIO(), file=sink)
    sink.discard()
    assert not list(tmp_path.iterdir())


def test_times_beyond_what_c_writes_exactly_are_written_by_the_specification(tmp_path,
                                                                              monkeypatch):
    # a clock of 10^-12 GHz: a cycle is 10^9 us, past 2^39 us within a thousand cycles
    slow = CostModel(clock_ghz=1e-12)
    program = croqvm.compile_file(str(PROGRAMS / "pipeline_events.co"))
    trace = record(program, "pipeline", [], {}, engine="native", out=io.StringIO(),
                   cost=slow)
    assert not trace.exact() and record(program, "pipeline", [], {}, engine="native",
                                        out=io.StringIO()).exact()
    files = _files(tmp_path, "events", cost=slow)
    assert files["native", ".json"] == files["python", ".json"]
    assert b"e+" not in files["native", ".json"][1]    # under 10^16 us: no exponent
    # written as the run goes: C's text while it can, the specification's after
    streamed = tmp_path / "streamed"
    streamed.mkdir()
    text, unzipped, reference = _written_as_it_runs(streamed, monkeypatch, "events", slow)
    assert text == unzipped == reference


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_the_command_writes_the_same_file_on_either_engine(tmp_path, capsys, suffix):
    texts = []
    for engine in ("native", "python"):
        path = tmp_path / f"{engine}{suffix}"
        assert main(["trace", str(PROGRAMS / "pipeline_events.co"), "--func", "pipeline",
                     "--engine", engine, "-o", str(path)]) == 0
        data = path.read_bytes()
        texts.append(gzip.decompress(data) if suffix == ".json.gz" else data)
    assert texts[0] == texts[1] and len(json.loads(texts[0])["traceEvents"]) > 100
    # the same summary: the events, blocks and modelled time
    err = capsys.readouterr().err.replace("native.json", "python.json").splitlines()
    assert len(err) == 2 and err[0] == err[1] and "us of modelled time" in err[0]


def _text(starts, ends) -> list:
    """C's ts and dur texts of statement slices from ``starts`` to ``ends`` (cycles of
    a 0.001 GHz clock: a cycle is 1 us)."""
    from croqvm._native import ffi, lib
    dtype = _columns(ffi, "cq_slice", {"start": "f8", "end": "f8", "kind": "u1"})
    cols = np.zeros(len(starts), dtype)
    cols["start"], cols["end"] = starts, ends
    strings = b'"s"'
    at = np.array([0, len(strings)], np.int64)
    zero = np.zeros(1, np.int32)
    none = np.full(1, -1, np.int32)
    keep = [cols, at, zero, none]
    tx = ffi.new("cq_trace_text *", {
        "slices": ffi.cast("cq_slice *", ffi.from_buffer(cols)), "nslices": len(cols),
        "scale": 1.0, "text": ffi.from_buffer(strings),
        "at": ffi.cast("int64_t *", ffi.from_buffer(at)),
        "run_name": ffi.cast("int32_t *", ffi.from_buffer(zero)),
        "run_where": ffi.cast("int32_t *", ffi.from_buffer(none))})
    buf = ffi.new("char[]", 1 << 20)
    text = b""
    while n := lib.cq_trace_text_next(tx, buf, 1 << 20):
        text += ffi.buffer(buf, n)[:]
    del keep
    return [(e.split(b'"ts":')[1].split(b",")[0], e.split(b'"dur":')[1].rstrip(b"}"))
            for e in text.split(b"},{")]


def test_c_writes_times_as_python_rounds_and_prints_them():
    rng = np.random.default_rng(7)
    ties = np.arange(1, 400, 2) / 32       # k / 32: exact halves of a ten-thousandth
    spread = rng.uniform(0, 1, 3000) * 10.0 ** rng.integers(-6, 12, 3000)
    near = np.round(rng.uniform(0, 1e6, 500), 4) + 5e-5      # about half-way
    starts = np.concatenate([ties, spread, near, [0.0, 5e-324, 2.0 ** 39 - 1]])
    ends = starts + np.concatenate([ties[::-1], spread[::-1], near, [0.0, 0.0, 0.5]])
    expected = []
    for s, e in zip(starts.tolist(), ends.tolist()):
        ts = round(s, 4)
        expected.append((repr(ts).encode(), repr(round(round(e, 4) - ts, 4)).encode()))
    assert _text(starts, ends) == expected


def test_many_chunks_are_the_same_bytes(tmp_path, monkeypatch):
    # chunks of 512 B: C goes on where each chunk ended, in the buffer it just filled
    from croqvm.trace import native
    monkeypatch.setattr(native, "CHUNK", 512)
    files = _files(tmp_path, "pipeline")
    for suffix in (".json", ".json.gz"):
        assert files["native", suffix] == files["python", suffix]
    assert len(files["native", ".json"][1]) > 32 * 512


@pytest.mark.parametrize("module", ["isal_zlib", "zlib"])
def test_a_gzip_file_is_one_member_of_the_text_and_depends_on_nothing_else(tmp_path,
                                                                           module):
    # either deflate (ISA-L's, or zlib's where its wheel is missing); a viewer reads the
    # first member only, and the header holds no file name or time
    import importlib
    import zlib

    from croqvm.trace.output import Gzip
    deflate = importlib.import_module("isal.isal_zlib" if module == "isal_zlib" else "zlib")
    text = b"".join(b'{"ph":"X","name":"%d: x","ts":%d.5}' % (k % 7, k) for k in range(20000))
    data = []
    for name in ("a.json.gz", "other.json.gz"):
        with open(tmp_path / name, "wb") as out:
            f = Gzip(out, deflate)
            for k in range(0, len(text), 1000):
                f.write(text[k:k + 1000])
            f.finish()
        data.append((tmp_path / name).read_bytes())
    assert data[0] == data[1] and len(data[0]) < len(text) / 10
    one = zlib.decompressobj(31)
    assert one.decompress(data[0]) == text and one.eof and not one.unused_data
    assert gzip.decompress(data[0]) == text


def test_a_gzip_file_leaves_the_upper_halves_of_the_vector_registers_unused(tmp_path):
    # ISA-L's assembly returns with them in use: every SSE instruction of the engine
    # then waited on them, and the runs after a .json.gz trace took 3x as long
    from isal import isal_zlib

    from croqvm._native import lib
    from croqvm.trace.output import Gzip
    isal_zlib.compressobj(1, isal_zlib.DEFLATED, 31).compress(bytes(range(256)) * 400)
    if lib.cq_upper_vectors_in_use() != 1:
        pytest.skip("this CPU does not say, or this ISA-L leaves them unused")
    with open(tmp_path / "t.json.gz", "wb") as out:
        f = Gzip(out)
        f.write(bytes(range(256)) * 400)
        assert lib.cq_upper_vectors_in_use() == 0
        f.finish()
        assert lib.cq_upper_vectors_in_use() == 0


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_full_disk_is_a_one_line_error_and_leaves_no_file(tmp_path, capsys, monkeypatch,
                                                            suffix):
    import errno

    from croqvm.core import files

    class Full(io.FileIO):          # a disk with room for 100 bytes
        def write(self, data):
            if self.tell() + len(data) > 100:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode: Full(fd, mode))
    path = tmp_path / f"t{suffix}"
    assert main(["trace", str(PROGRAMS / "pipeline_events.co"), "--func", "pipeline",
                 "-o", str(path)]) == 2
    assert capsys.readouterr().err == f"{path}: can not write: No space left on device\n"
    assert not list(tmp_path.iterdir())


FOREVER = """__co__ void forever() {
  s32 [32] out;
  parallel blk by 1 : block {
    parallel t by 32 : thread {
      s32 acc = 0;
      foreach i in [2000000000]
        acc = acc + i;
      out.at(t) = acc;
    }
  }
  println(out.at(0));
}
"""


def test_a_trace_stopped_by_sigterm_leaves_no_file(tmp_path):
    # kill, timeout, a CI job cancelled: unwound as Ctrl-C is, the file being written
    # (a GB a second here) is removed
    import os
    import signal
    import subprocess
    import sys
    import time
    (tmp_path / "forever.co").write_text(FOREVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "croqvm", "trace", "forever.co", "-o",
                             "t.json"], cwd=tmp_path, env=env, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while not any(p.name != "forever.co" and p.stat().st_size > 1 << 20     # writing
                  for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert proc.stderr.read().splitlines()[-1] == "terminated"
    assert [p.name for p in tmp_path.iterdir()] == ["forever.co"]
