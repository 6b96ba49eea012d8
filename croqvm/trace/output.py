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

from ..core.errors import ArgumentError
from .native import FLOWS, NativeTrace
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
    """The trace as Trace Event Format events: names of processes and threads, one
    complete event ("X") per slice, and per flow a start ("s"), steps ("t") and a finish
    ("f") bound to the slice it ends in. Times in microseconds of the model's clock, to
    0.1 ns (finer than a cycle of any clock up to 10 GHz). Compact, for traces of
    millions of events (docs/TRACE.md "The file"): a statement slice of
    ``main_file(trace)`` is named ``LINE: TEXT``, has no category, and has arguments
    (``lanes``, ``mask``) only when not its whole warp ran; another slice has its
    category and its ``line`` (``where``, file:line, outside the main file). (Identical
    consecutive steps are one slice already: the recorder merges them.)"""
    scale = 1.0 / (trace.clock_ghz * 1000.0)
    main = main_file(trace)

    def us(cycles):
        return round(cycles * scale, DIGITS)

    out = _names(trace)
    for s in trace.slices:
        name, args = _placed(main, s.kind, s.name, s.where)
        if s.kind == "copy" or s.mask:
            args["lanes"] = s.lanes
        if s.mask:
            args["mask"] = s.mask
        ts = us(s.start)
        # rounded ends, so that touching slices still touch
        e = {"ph": "X", "name": name, "pid": s.pid, "tid": s.tid, "ts": ts,
             "dur": round(us(s.end) - ts, DIGITS)}
        if args:
            e["args"] = args
        if s.kind != "run":
            e["cat"] = s.kind
        out.append(e)
    for f in trace.flows:
        if len(f.points) < 2:
            continue
        n = len(f.points) - 1
        for k, (pid, tid, t) in enumerate(f.points):
            e = {"ph": "s" if k == 0 else "f" if k == n else "t", "id": f.id,
                 "name": f.name, "cat": "flow", "pid": pid, "tid": tid, "ts": us(t)}
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
    number of events. A native trace's slices and flows are written by C from its
    records (``NativeTrace.text``), the text ``events`` gives them (tests/test_trace_file.py),
    unless a number lies beyond what C writes exactly (``NativeTrace.exact``)."""
    main = main_file(trace)
    names = _names(trace)
    native = isinstance(trace, NativeTrace) and trace.exact()
    evs = names if native else events(trace)
    doc = {"traceEvents": evs, "displayTimeUnit": "ns",
           "otherData": {"clock_ghz": trace.clock_ghz, "time": "cost model (docs/TRACE.md)",
                         "file": main}}
    with (Gzip(path, deflate) if path.endswith(".gz") else open(path, "wb")) as f:
        text = json.dumps(doc, separators=SEPARATORS).encode()
        if not native:
            f.write(text)
            return len(evs)
        # the names' events, then C's, then the rest of the document
        cut = len('{"traceEvents":') + len(json.dumps(names, separators=SEPARATORS)) - 1
        f.write(text[:cut])
        count = len(names)
        # each chunk written (compressed) as soon as made, while it is in the cache: a
        # second thread doing it would overlap with C on a second core, but cost more
        # CPU time (the host program of bench/trace.py: 0.34 s against 0.30 s as .json,
        # 0.44 s against 0.38 s as .json.gz)
        for n, chunk in _native_events(trace, main, bool(names)):
            count += n
            f.write(chunk)
        f.write(text[cut:])
    return count


class Gzip:
    """A gzip file written as a stream, by ``module``'s deflate (``isal_zlib`` or
    ``zlib``, the same interface): one member, checksum included, no name or time in
    its header (so the same trace makes the same file)."""

    def __init__(self, path: str, module=deflate):
        self._file = open(path, "wb")
        self._deflate = module.compressobj(GZIP_LEVEL, module.DEFLATED, GZIP_WBITS)

    def write(self, data) -> None:
        self._file.write(self._deflate.compress(data))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._file.write(self._deflate.flush())
        finally:
            self._file.close()


def _native_events(trace: NativeTrace, main: str, comma: bool):
    """A native trace's slice and flow events, as ``events`` makes them, written by
    native/trace_text.c from its records and the strings made here once per name and
    place (JSON: a name with its quotes, the argument that places a slice): (events,
    text) chunks."""
    strings, number = [], {}

    def string(text: str) -> int:
        k = number.get(text)
        if k is None:
            k = number[text] = len(strings)
            strings.append(text.encode())
        return k

    def item(args: dict) -> int:
        return string(json.dumps(args, separators=SEPARATORS)[1:-1]) if args else -1

    rows, texts, label = trace.labels()
    run = [_placed(main, "run", text, where) for text, _, where in rows]
    of_text = np.array([string(json.dumps(text)) if sort == "name" else
                        string(json.dumps(text)[:-1]) if sort == "copy" else
                        item(_placed(main, "wait", "", text)[1])
                        for sort, text in texts] or [0], np.int32)
    tables = {"run_name": [string(json.dumps(name)) for name, _ in run],
              "run_where": [item(args) for _, args in run],
              "launch_name": [string(json.dumps(launch)) for _, launch, _ in rows],
              "where": [item(_placed(main, "launch", "", where)[1]) for *_, where in rows],
              "detail_name": of_text[label[:, 0]], "detail_where": of_text[label[:, 1]],
              "flow_name": [string(json.dumps(name)) for name in FLOWS]}
    return trace.text(strings, tables, comma)


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
    """The timeline as a picture: one row per track (the host, then each block's warps and
    copy tracks), slices coloured by activity, waits hatched."""
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
    fig.savefig(path, dpi=120)
    plt.close(fig)
