"""One point of a sweep, run wherever the executor puts it.

``Job`` is what every point shares, shipped once: the module as ``.cqb`` bytes (a process
decodes it once, croqvm.bytecode.cqb, and keeps it by its bytes), the function, the inputs
given with ``--input``, the seed and the options. ``run_point(job, point)`` is a top-level
function, so that a worker process can import it; it draws the point's inputs itself, from
the point's own seed (``point_seed``), so no array crosses the network, and returns a small
``Result``.

A point runs once on the interpreter under the round-robin schedule (with ``check``); when
that passes, against ``against`` (croqvm.running.diff's comparison: same inputs, the reference
engine's results, output and error against the other's) and under the random schedules
0 to ``schedules``-1 (croqvm.running.explore: a schedule that stops with a runtime error, or
results that differ between schedules). The first of those that fails is the point's
result.
"""
from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ArgumentError, InternalError, KernelFault

PASS, FAULT, DIFFER, ERROR, TIMEOUT = "pass", "fault", "differ", "error", "timeout"


@dataclass(frozen=True)
class Job:
    """What every point of a sweep shares."""
    module: bytes                   # the program, as a .cqb file holds it
    func: str
    seed: int                       # --seed: each point's inputs come from it and the point
    inputs: dict = field(default_factory=dict)    # --input arrays by parameter name
    engine: str = "native"
    check: str | None = None
    max_steps: int | None = None
    against: str | None = None
    rtol: float | None = None
    atol: float | None = None
    schedules: int = 0              # random schedules per point, seeds 0 to schedules-1


@dataclass(frozen=True)
class Result:
    """How a point went: ``status`` (pass, fault, differ, error; timeout when the executor
    stopped it), the ``signature`` that groups it with the points that failed alike, the
    first line of what went wrong, and the random schedule it went wrong under (None:
    round-robin)."""
    status: str
    signature: str = ""
    message: str = ""
    schedule_seed: int | None = None


def point_seed(seed: int, point) -> int:
    """The seed of a point's random inputs: the first 8 bytes (big-endian) of the SHA-256
    of ``SEED:NAME=VALUE,...`` (the dimensions sorted by name), so that it depends on the
    point's values alone, not on the order of the options or the points."""
    text = f"{seed}:" + ",".join(f"{n}={v}" for n, v in sorted(point.dims))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def program_of(job: Job):
    """The job's program, decoded once per process (a worker runs many points of it)."""
    return _decoded(job.module)


@functools.lru_cache(maxsize=4)     # keyed by the module's bytes: one decoding each
def _decoded(module: bytes):
    from ..bytecode.cqb import decode
    from ..running.program import Program
    return Program(decode(module))


def arguments(program, job: Job, point):
    """The function, its arguments at ``point`` (as ``croqvm run --random-inputs --seed
    POINT_SEED`` draws them) and the dims no argument binds."""
    from ..running.inputs import build_args
    fn = program.function(job.func)
    args, dims = build_args(fn, job.inputs, point.as_dict(), True, point_seed(job.seed, point))
    return fn, args, dims


def fault_kind(err: KernelFault) -> str:
    """The kind of a runtime error, as a signature names it: the catalogue's kind
    (``out-of-range``), ``data-race`` or ``deadlock``."""
    if err.record is not None:
        return err.record.kind.name.lower().replace("_", "-")
    first = err.diagnostics[0].message if err.diagnostics else str(err)
    return "data-race" if first.startswith("data race") else first.split(":")[0]


def fault_result(err: KernelFault, seed: int | None) -> Result:
    """A fault's signature is its kind and the statement it stopped at."""
    where = ""
    if err.diagnostics and err.diagnostics[0].span is not None:
        span = err.diagnostics[0].span
        where = f" at {span.file}:{span.line}:{span.col}"
    return Result(FAULT, fault_kind(err) + where, str(err).split("\n")[0], seed)


def _first_lines(text: str, count: int = 3) -> str:
    return "\n".join(text.split("\n")[:count])


def run_point(job: Job, point) -> Result:
    """Run the sweep's function at ``point`` as the module docstring says."""
    program = program_of(job)
    options = {"engine": job.engine, "max_steps": job.max_steps}
    if job.engine == "native":          # a sweep's points run side by side: one thread each
        options["jobs"] = 1
    try:
        fn, args, dims = arguments(program, job, point)
        reference = _round_robin(program, fn, args, dims, job, options)
        if isinstance(reference, Result):
            return reference
        if job.against is not None:
            found = _against(program, fn, args, dims, job, reference)
            if found is not None:
                return found
        if job.schedules:
            found = _schedules(program, fn, args, dims, job, options)
            if found is not None:
                return found
    except ArgumentError as err:        # values the function refuses at this point
        return Result(ERROR, "argument error", str(err).split("\n")[0])
    return Result(PASS)


def _round_robin(program, fn, args, dims, job, options):
    """The run under the default schedule: its fault's Result, else its outcome as
    croqvm.running.diff compares outcomes."""
    from ..running.diff import Outcome
    from ..running.inputs import results_of
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = io.StringIO()
    try:
        result = program.run(fn.name, *copies, check=job.check, out=out, **options, **dims)
    except KernelFault as err:
        return fault_result(err, None)
    return Outcome(results_of(fn, copies, result), out.getvalue(), None)


def _against(program, fn, args, dims, job, reference):
    """The round-robin run compared with the same call on ``job.against``."""
    from ..running.diff import AGAINST, compare, run_once, tolerances
    other = run_once(program, fn.name, list(args), dims, AGAINST[job.against])
    rtol, atol, derived = tolerances(program, fn.name, args, job.against, job.rtol,
                                     job.atol)
    found = compare(reference, other, rtol, atol, tolerance=derived)
    if not found:
        return None
    what = ", ".join(dict.fromkeys(m.what for m in found))
    return Result(DIFFER, f"differs from {job.against}: {what}", _first_lines(str(found[0])))


def _schedules(program, fn, args, dims, job, options):
    """The random schedules 0 to ``job.schedules``-1: the first that faults, else the
    first whose outcome is not the usual one (croqvm.running.explore.deviating)."""
    from ..running.explore import deviating, group, run_seeds
    groups = group(run_seeds(program, fn, args, dims, range(job.schedules), job.check,
                             **options))
    faulty = [s for outcome, seeds, _ in groups if outcome.error is not None for s in seeds]
    if faulty:
        # an outcome keeps the error's text; its kind and statement come from that
        # schedule run again (the same seed gives the same interleaving)
        seed = min(faulty)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            program.run(fn.name, *copies, schedule="random", seed=seed, check=job.check,
                        out=io.StringIO(), **options, **dims)
        except KernelFault as err:
            return fault_result(err, seed)
        raise InternalError(f"random schedule {seed} of '{fn.name}' faulted once only")
    if len(groups) == 1:
        return None
    outcomes = [outcome for outcome, _, _ in groups]
    what = [name for k, (name, *_) in enumerate(outcomes[0].results)
            if len({o.results[k] for o in outcomes}) > 1]
    if len({o.printed for o in outcomes}) > 1:
        what.append("output")
    seed = deviating(groups)[0]
    return Result(DIFFER, f"differs between schedules: {', '.join(what)}",
                  f"{len(groups)} outcomes in {job.schedules} schedules; schedule {seed} "
                  f"is not the usual one", seed)

