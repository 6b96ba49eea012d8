"""What ``croqvm trace`` writes: the Trace Event Format file (Chrome's and Perfetto's
JSON, docs/TRACE.md "The file"), the hot-spot table of ``--stats`` and the picture of
``--png``."""
from __future__ import annotations

import gzip
import json

from ..core.errors import ArgumentError
from .recorder import Trace

DIGITS = 4          # decimals of the microseconds in the file


def main_file(trace: Trace) -> str:
    """The file of the trace's first statement, whose slices give only their line."""
    return next((s.where.rsplit(":", 1)[0] for s in trace.slices if s.kind == "run"), "")


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

    out = []
    for pid, name in sorted(trace.processes.items()):
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": name}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                    "args": {"sort_index": pid}})
    for (pid, tid), name in sorted(trace.threads.items()):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": name}})
    for s in trace.slices:
        file, _, line = s.where.rpartition(":")
        mine = file == main and line.isdigit()
        name, args = s.name, {}
        if s.kind == "run" and mine:
            name = f"{line}: {s.name}"
        elif mine:
            args["line"] = int(line)
        else:
            args["where"] = s.where
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


def write(trace: Trace, path: str) -> int:
    """Write the trace to ``path`` (gzip-compressed when it ends in ``.gz``); returns the
    number of events."""
    evs = events(trace)
    doc = {"traceEvents": evs, "displayTimeUnit": "ns",
           "otherData": {"clock_ghz": trace.clock_ghz, "time": "cost model (docs/TRACE.md)",
                         "file": main_file(trace)}}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
    return len(evs)


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
