"""What ``croqvm trace`` writes: the Trace Event Format file (Chrome's and Perfetto's
JSON, docs/TRACE.md "The file"), the hot-spot table of ``--stats`` and the picture of
``--png``."""
from __future__ import annotations

import gzip
import json

from ..core.errors import ArgumentError
from .recorder import Trace


def events(trace: Trace) -> list:
    """The trace as Trace Event Format events: names of processes and threads, one
    complete event ("X") per slice, and per flow a start ("s"), steps ("t") and a finish
    ("f") bound to the slice it ends in. Times in microseconds of the model's clock."""
    scale = 1.0 / (trace.clock_ghz * 1000.0)

    def us(cycles):
        return round(cycles * scale, 6)

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
        args = {"where": s.where}
        if s.kind in ("run", "copy"):
            args["lanes"] = s.lanes
        if s.mask:
            args["mask"] = s.mask
        out.append({"ph": "X", "name": s.name, "cat": s.kind, "pid": s.pid, "tid": s.tid,
                    "ts": us(s.start), "dur": round(us(s.end) - us(s.start), 6),
                    "args": args})   # rounded ends, so that touching slices still touch
    for f in trace.flows:
        if len(f.points) < 2:
            continue
        last = len(f.points) - 1
        for k, (pid, tid, t) in enumerate(f.points):
            e = {"ph": "s" if k == 0 else "f" if k == last else "t", "id": f.id,
                 "name": f.name, "cat": "flow", "pid": pid, "tid": tid, "ts": us(t)}
            if k == last:
                e["bp"] = "e"
            out.append(e)
    return out


def write(trace: Trace, path: str) -> int:
    """Write the trace to ``path`` (gzip-compressed when it ends in ``.gz``); returns the
    number of events."""
    evs = events(trace)
    doc = {"traceEvents": evs, "displayTimeUnit": "ns",
           "otherData": {"clock_ghz": trace.clock_ghz, "time": "cost model (docs/TRACE.md)"}}
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
