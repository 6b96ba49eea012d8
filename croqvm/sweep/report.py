"""What a sweep found: the failing points grouped by signature, the smallest point of
each group, a text table or JSON, and a replay file per group.

The results are taken in the order of the points (whatever order an executor finished
them in), so the report is the same for every executor and number of workers. Groups come
in the order of their smallest points; a point is smaller than another when the product
of its dimensions is, then by its values in ``--dim`` order.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..running.executor import TimedOut
from .task import PASS, TIMEOUT, Result, arguments, point_seed

SHOWN_POINTS = 8        # of a group's points, in the text report


def as_result(value) -> Result:
    """An executor's value for a point: a Result, or TimedOut when the executor's time
    limit stopped it."""
    if isinstance(value, TimedOut):
        return Result(TIMEOUT, "timeout", f"stopped after {value.seconds:g} s")
    return value


@dataclass
class Group:
    """The points that failed with one signature, smallest first, with their results."""
    status: str
    signature: str
    members: list           # (Point, Result)

    @property
    def smallest(self):
        return self.members[0]


def group(points: list, results: list[Result]) -> list[Group]:
    """The failing points by signature (the status and the signature); ``results[i]`` is
    the result of ``points[i]``."""
    found: dict = {}
    for point, result in zip(points, results):
        if result.status != PASS:
            key = (result.status, result.signature)
            found.setdefault(key, Group(result.status, result.signature, [])).members.append(
                (point, result))
    groups = list(found.values())
    for g in groups:
        g.members.sort(key=lambda member: member[0].order())
    groups.sort(key=lambda g: (g.smallest[0].order(), g.status, g.signature))
    return groups


def replay_name(func: str, point, result: Result) -> str:
    """``FUNC.M20_N16.replay``, with ``.seedS`` for a random schedule."""
    dims = "_".join(f"{name}{value}" for name, value in point.dims)
    seed = "" if result.schedule_seed is None else f".seed{result.schedule_seed}"
    return f"{func}.{dims}{seed}.replay"


def write_replays(directory: str, program, file: str, job, groups: list[Group],
                  defines: dict) -> list[str]:
    """A replay file (croqvm.running.explore's) of each group's smallest point in ``directory``:
    the point's inputs, drawn again, its dims, its schedule and the check; the paths."""
    from ..core.errors import ArgumentError
    from ..running.explore import write_replay
    from ..running.inputs import inputs_used
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as err:
        raise ArgumentError(f"--record {directory}: can not make it: {err.strerror}") from None
    paths = []
    for g in groups:
        point, result = g.smallest
        fn, args, dims = arguments(program, job, point)
        path = os.path.join(directory, replay_name(job.func, point, result))
        write_replay(path, program, file, fn, inputs_used(fn, args), dims,
                     result.schedule_seed, job.check, defines)
        paths.append(path)
    return paths


def counts(results: list[Result]) -> dict[str, int]:
    out: dict = {}
    for result in results:
        out[result.status] = out.get(result.status, 0) + 1
    return out


def describe_dims(dims: dict) -> str:
    """``M=8:32:4 N=16,24``: each dimension's values, three or more evenly spaced ones as
    START:STOP:STEP."""
    parts = []
    for name, values in dims.items():
        step = values[1] - values[0] if len(values) > 2 else None
        regular = step is not None and step > 0 and all(
            b - a == step for a, b in zip(values, values[1:]))
        shown = f"{values[0]}:{values[-1]}:{step}" if regular else \
            ",".join(map(str, values))
        parts.append(f"{name}={shown}")
    return " ".join(parts)


def rerun(file: str, job, point, result: Result) -> str:
    """The ``croqvm run`` (``croqvm diff`` for a difference from another target) command
    that makes the point's call again from its seed, without the replay file."""
    words = ["croqvm", "diff" if job.against and result.status == "differ"
             and result.schedule_seed is None else "run", file, "--func", job.func,
             "--random-inputs", "--seed", str(point_seed(job.seed, point))]
    words += [f"--dim {name}={value}" for name, value in point.dims]
    if words[1] == "diff":
        words += ["--against", job.against]
    elif result.schedule_seed is not None:
        words += ["--schedule random --schedule-seed", str(result.schedule_seed)]
    if job.check and words[1] == "run":
        words += ["--check", job.check]
    return " ".join(words)


def text(file: str, job, dims: dict, points: list, results: list[Result],
         groups: list[Group], replays: list[str] | None) -> str:
    """The report: a line on the sweep, a table of the groups, then each group's smallest
    point, its message and how to run it again."""
    tally = counts(results)
    lines = [f"sweep: '{job.func}' at {len(points)} points ({describe_dims(dims)}), inputs "
             f"from seed {job.seed}: " + ", ".join(f"{tally[s]} {s}" for s in sorted(tally))]
    if not groups:
        lines.append("sweep: every point passes")
        return "\n".join(lines)
    rows = [("group", "status", "points", "smallest", "signature")]
    rows += [(str(n), g.status, str(len(g.members)), str(g.smallest[0]), g.signature)
             for n, g in enumerate(groups, 1)]
    widths = [max(len(row[k]) for row in rows) for k in range(4)]
    for row in rows:
        lines.append("  ".join(cell.rjust(w) if k in (0, 2) else cell.ljust(w)
                               for k, (cell, w) in enumerate(zip(row, widths)))
                     + "  " + row[4])
    for n, g in enumerate(groups, 1):
        point, result = g.smallest
        lines.append(f"group {n}: {g.status} {g.signature}")
        shown = ", ".join(str(p) for p, _ in g.members[:SHOWN_POINTS])
        more = len(g.members) - SHOWN_POINTS
        lines.append(f"  points: {shown}" + (f" and {more} more" if more > 0 else ""))
        lines += [f"  {line}" for line in result.message.split("\n")]
        if replays is not None:
            lines.append(f"  replay: croqvm run {file} --replay {replays[n - 1]}")
        if result.status != TIMEOUT:
            lines.append(f"  rerun:  {rerun(file, job, point, result)}")
    return "\n".join(lines)


def as_json(file: str, job, dims: dict, points: list, results: list[Result],
            groups: list[Group], replays: list[str] | None) -> dict:
    """The report as JSON (README "Sweeps" gives its keys)."""
    return {
        "file": file, "func": job.func, "seed": job.seed,
        "dims": {name: list(values) for name, values in dims.items()},
        "points": len(points), "counts": counts(results),
        "groups": [{
            "status": g.status, "signature": g.signature, "count": len(g.members),
            "smallest": g.smallest[0].as_dict(),
            "point_seed": point_seed(job.seed, g.smallest[0]),
            "schedule_seed": g.smallest[1].schedule_seed,
            "message": g.smallest[1].message,
            "replay": None if replays is None else replays[n],
            "points": [p.as_dict() for p, _ in g.members],
        } for n, g in enumerate(groups)],
    }
