"""What ``croqvm trace`` writes: the Trace Event Format file (Chrome's and Perfetto's
JSON, docs/TRACE.md "The file"), the hot-spot table of ``--stats`` and the picture of
``--png``."""
from __future__ import annotations

import json

import numpy as np

try:    # ISA-L's deflate: gzip's format at about 5x zlib's speed (docs/TRACE.md "The file")
    from isal import isal_zlib as deflate
except ImportError:     # a platform without its wheel: zlib, the same format
    import zlib as deflate

try:    # where the native extension is built: see Gzip
    from .._native.lib import cq_clear_upper_vectors as _clear_upper_vectors
except ImportError:
    def _clear_upper_vectors() -> None:
        pass

from ..core.errors import ArgumentError
from ..core.files import AtomicFile
from .native import FLOWS, KINDS, NativeTrace
from .recorder import Trace

DIGITS = 4          # decimals of the microseconds in the file
SEPARATORS = (",", ":")     # compact JSON
# the fastest level but one of ISA-L (0 is faster but larger): of bench/trace.py's host
# foreach matmul's 416 MB, 24 MB in 0.22 s CPU, where zlib's level 1 takes 1.2 s for 27 MB
GZIP_LEVEL = 1
GZIP_WBITS = 31     # deflate's largest window, in a gzip member


def main_file(trace: Trace) -> str:
    """The file of the trace's first statement, whose slices give only their line."""
    first = trace.first("run")
    return first.where.rsplit(":", 1)[0] if first else ""


def events(trace: Trace) -> list:
    """The trace as Trace Event Format events: one complete event ("X") per slice, per
    flow a start ("s"), steps ("t") and a finish ("f") bound to the slice it ends in, then
    the names of processes and threads (last: a file written as the run goes knows them
    at its end). Times in microseconds of the model's clock, to 0.1 ns (finer than a cycle
    of any clock up to 10 GHz). Compact, for traces of millions of events (docs/TRACE.md
    "The file"): a statement slice of ``main_file(trace)`` is named ``LINE: TEXT``, has no
    category, and has arguments (``lanes``, ``mask``) only when not its whole warp ran;
    another slice has its category and its ``line`` (``where``, file:line, outside the
    main file). (Identical consecutive steps are one slice already: the recorder merges
    them.)"""
    scale = 1.0 / (trace.clock_ghz * 1000.0)
    main = main_file(trace)
    return [_slice_event(s, main, scale) for s in trace.slices] + \
        _flow_events(trace.flows, scale) + _names(trace)


def _slice_event(s, main: str, scale: float) -> dict:
    name, args = _placed(main, s.kind, s.name, s.where)
    if s.kind == "copy" or s.mask:
        args["lanes"] = s.lanes
    if s.mask:
        args["mask"] = s.mask
    ts = round(s.start * scale, DIGITS)
    # rounded ends, so that touching slices still touch
    e = {"ph": "X", "name": name, "pid": s.pid, "tid": s.tid, "ts": ts,
         "dur": round(round(s.end * scale, DIGITS) - ts, DIGITS)}
    if args:
        e["args"] = args
    if s.kind != "run":
        e["cat"] = s.kind
    return e


def _flow_events(flows: list, scale: float) -> list:
    out = []
    for f in flows:
        if len(f.points) < 2:
            continue
        n = len(f.points) - 1
        for k, (pid, tid, t) in enumerate(f.points):
            e = {"ph": "s" if k == 0 else "f" if k == n else "t", "id": f.id,
                 "name": f.name, "cat": "flow", "pid": pid, "tid": tid,
                 "ts": round(t * scale, DIGITS)}
            if k == n:
                e["bp"] = "e"
            out.append(e)
    return out


def _names(trace: Trace) -> list:
    """The events naming the processes and threads."""
    out = []
    for pid, name in sorted(trace.processes.items()):
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": name}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                    "args": {"sort_index": pid}})
    for (pid, tid), name in sorted(trace.threads.items()):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": name}})
    return out


def _placed(main: str, kind: str, name: str, where: str) -> tuple:
    """A slice's event name and the argument that places it: a statement of the main
    file by its name, another slice of it by ``line``, one of another file by ``where``."""
    file, _, line = where.rpartition(":")
    if file == main and line.isdigit():
        return (f"{line}: {name}", {}) if kind == "run" else (name, {"line": int(line)})
    return name, {"where": where}


def write(trace: Trace, path: str) -> int:
    """Write the trace to ``path`` (gzip-compressed when it ends in ``.gz``); returns the
    number of events."""
    return TraceFile(path).close(trace)


class TraceFile:
    """A trace file as it is written: events as they come, then, once the trace is known,
    the rest of it (``close``). ``croqvm trace -o`` hands it to the native run as its
    sink (croqvm.trace.record's ``file``), which gives it the slices between slices of
    steps (``take``): a trace of any length is written in the memory of a few million
    slices. A native trace's events are written by C from its records
    (native/trace_text.c, ``NativeTracer.text``), the text ``events`` gives them
    (tests/test_trace_file.py), unless a number lies beyond what C writes exactly
    (``NativeTracer.exact``). The file is made under a temporary name and renamed when
    complete (croqvm.core.files.AtomicFile): a run that stops leaves none (``discard``)."""

    def __init__(self, path: str):
        self.path = path
        self._out = AtomicFile(path)
        self._gzip = Gzip(self._out) if path.endswith(".gz") else None
        self._put(b'{"traceEvents":[')
        self.events = 0
        self.main = None        # main_file of the trace, once known
        # C's strings (JSON, bytes; numbered), the texts of its details' labels
        # (NativeTracer.label: (sort, text) -> number) and its string tables
        self._strings, self._number, self._texts, self._tables = [], {}, {}, None

    def take(self, tracer, slices, details, flows) -> bool:
        """Write a native run's records (NativeTracer.between: views of C's, ``details``
        every one so far); False (nothing written) until a statement slice names the main
        file."""
        if self.main is None:
            run = np.flatnonzero(slices["kind"] == KINDS.index("run"))
            if not run.size:
                return False
            self.main = tracer.rows[int(slices["row"][run[0]])].where.rsplit(":", 1)[0]
        if not tracer.exact(details, flows):
            scale = tracer.scale
            self._python([_slice_event(s, self.main, scale)
                          for s in tracer._slices(slices, details.tolist())] +
                         _flow_events(tracer._flows(flows), scale))
            return True
        for n, chunk in tracer.text(slices, details, flows, self._strings,
                                    self._tables_of(tracer, details), self.events > 0):
            # each chunk written (compressed) as soon as made, while it is in the cache:
            # a second thread doing it would overlap with C on a second core, but cost
            # more CPU time (the host program of bench/trace.py: 0.34 s against 0.30 s as
            # .json, 0.44 s against 0.38 s as .json.gz)
            self.events += n
            self._put(chunk)
        return True

    def close(self, trace: Trace) -> int:
        """Write the rest of ``trace`` (its slices not taken, its flows, the names of its
        processes and threads, the document's end) and put the file in place; returns the
        number of events."""
        try:
            if self.main is None:
                self.main = main_file(trace)
            if isinstance(trace, NativeTrace):
                tracer = trace.tracer
                self.take(tracer, *tracer.recorded[:3])
            else:
                scale = 1.0 / (trace.clock_ghz * 1000.0)
                self._python([_slice_event(s, self.main, scale) for s in trace.slices] +
                             _flow_events(trace.flows, scale))
            self._python(_names(trace))
            doc = {"traceEvents": [], "displayTimeUnit": "ns",
                   "otherData": {"clock_ghz": trace.clock_ghz,
                                 "time": "cost model (docs/TRACE.md)", "file": self.main}}
            self._put(json.dumps(doc, separators=SEPARATORS)[len('{"traceEvents":['):]
                      .encode())
            if self._gzip is not None:
                self._gzip.finish()
            self._out.commit()
        except BaseException:
            self.discard()
            raise
        return self.events

    def discard(self) -> None:
        """Stop writing and remove what was written."""
        self._out.discard()

    def _put(self, data) -> None:
        (self._out if self._gzip is None else self._gzip).write(data)

    def _python(self, evs: list) -> None:
        if evs:
            text = json.dumps(evs, separators=SEPARATORS)[1:-1]
            self._put(("," + text if self.events else text).encode())
            self.events += len(evs)

    def _tables_of(self, tracer, details) -> dict:
        """C's string tables for ``details`` (cq_trace_text): the rows' and the flow
        kinds' made once, the details' grown by those new since the last records."""
        if self._tables is None:
            rows = [(r.text, tracer._launch_name(k), r.where) for k, r in enumerate(tracer.rows)]
            run = [_placed(self.main, "run", text, where) for text, _, where in rows]
            self._tables = {
                "run_name": [self._string(json.dumps(name)) for name, _ in run],
                "run_where": [self._item(args) for _, args in run],
                "launch_name": [self._string(json.dumps(launch)) for _, launch, _ in rows],
                "where": [self._item(_placed(self.main, "launch", "", where)[1])
                          for *_, where in rows],
                "detail_name": np.zeros(0, np.int32), "detail_where": np.zeros(0, np.int32),
                "flow_name": [self._string(json.dumps(name)) for name in FLOWS]}
        done = len(self._tables["detail_name"])
        if len(details) > done:
            label = tracer.label(details[done:], self._texts)
            of_text = np.array([self._text_string(sort, text) for sort, text in self._texts]
                               or [0], np.int32)
            for k, table in enumerate(("detail_name", "detail_where")):
                self._tables[table] = np.concatenate([self._tables[table], of_text[label[:, k]]])
        return self._tables

    def _text_string(self, sort: str, text: str) -> int:
        """The string of a label's text: a wait's name, a copy's without its closing
        quote (C writes the bytes that end it), a where's argument."""
        if sort == "name":
            return self._string(json.dumps(text))
        if sort == "copy":
            return self._string(json.dumps(text)[:-1])
        return self._item(_placed(self.main, "wait", "", text)[1])

    def _string(self, text: str) -> int:
        k = self._number.get(text)
        if k is None:
            k = self._number[text] = len(self._strings)
            self._strings.append(text.encode())
        return k

    def _item(self, args: dict) -> int:
        return self._string(json.dumps(args, separators=SEPARATORS)[1:-1]) if args else -1


class Gzip:
    """A gzip stream into ``out`` (anything with ``write(bytes)``), by ``module``'s deflate
    (``isal_zlib`` or ``zlib``, the same interface): one member, checksum included, no
    name or time in its header (so the same trace makes the same file); ``finish`` ends
    it. After each call of ISA-L's deflate the vector registers' upper halves are
    cleared, which its assembly leaves in use and which would slow the engine's later
    runs in this thread 3x (native/cq_api.h cq_clear_upper_vectors)."""

    def __init__(self, out, module=deflate):
        self._out = out
        self._deflate = module.compressobj(GZIP_LEVEL, module.DEFLATED, GZIP_WBITS)

    def write(self, data) -> None:
        data = self._deflate.compress(data)
        _clear_upper_vectors()
        self._out.write(data)

    def finish(self) -> None:
        data = self._deflate.flush()
        _clear_upper_vectors()
        self._out.write(data)


def stats_table(trace: Trace) -> str:
    """The statements that ran, the most expensive (cycles run plus waited) first, as an
    aligned table."""
    rows = sorted((r for r in trace.stats if r.steps),
                  key=lambda r: (-(r.cycles + r.wait), r.where))
    head = ("where", "lane-instr", "warp-steps", "diverg%", "cycles", "wait", "statement")
    body = [(r.where, str(r.lanes), str(r.steps), f"{r.divergence:.1f}", f"{r.cycles:.0f}",
             f"{r.wait:.0f}", r.text) for r in rows]
    widths = [max(len(x[k]) for x in [head] + body) for k in range(len(head) - 1)]
    lines = []
    for x in [head] + body:
        cells = [x[0].ljust(widths[0])] + [c.rjust(wd) for c, wd in zip(x[1:-1], widths[1:])]
        lines.append("  ".join(cells + [x[-1]]).rstrip())
    return "\n".join(lines)


_COLOURS = {"run": "tab:blue", "wait": "tab:red", "copy": "tab:green", "launch": "tab:gray"}


def draw(trace: Trace, path: str) -> None:
    """The timeline as a picture (``figure``) in the PNG file ``path``."""
    fig = figure(trace)
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt
    plt.close(fig)


def figure(trace: Trace):
    """The timeline as a matplotlib figure: one row per track (the host, then each block's
    warps and copy tracks), one bar per slice coloured by activity, waits hatched."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise ArgumentError("--png needs matplotlib, which is not installed "
                            "(pip install matplotlib).") from None
    tracks = sorted({(s.pid, s.tid) for s in trace.slices})
    row = {t: k for k, t in enumerate(tracks)}
    scale = 1.0 / (trace.clock_ghz * 1000.0)
    fig, ax = plt.subplots(figsize=(12, 1 + 0.3 * len(tracks)))
    for s in trace.slices:
        wait = s.kind == "wait"
        ax.broken_barh([(s.start * scale, (s.end - s.start) * scale)],
                       (row[(s.pid, s.tid)] - 0.4, 0.8), facecolors=_COLOURS[s.kind],
                       hatch="//" if wait else None, edgecolor="black" if wait else None,
                       linewidth=0)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([f"{trace.processes[p]}: {trace.threads.get((p, t), t)}"
                        for p, t in tracks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (µs, cost model)")
    ax.legend(handles=[Patch(facecolor=c, label=k, hatch="//" if k == "wait" else None)
                       for k, c in _COLOURS.items()], loc="upper left",
              bbox_to_anchor=(1.0, 1.0), fontsize=7)
    fig.tight_layout()
    return fig
