"""Schedule exploration and replay files: ``croqvm explore`` runs one call under many
seeded random schedules (LANGUAGE.md §7.1.2) and groups the outcomes; ``--record DIR``
keeps a replay file of each schedule that deviates, and ``croqvm run FILE --replay FILE``
runs that call again exactly (README "Finding races").

An *outcome* is what a run gives: its results (each one's name, dtype, shape and a
SHA-256 of its bytes), the text it printed, and the runtime error it stopped with, if any
(with ``--check race``, the race report). A schedule is only a seed of the random
scheduler: the same program, inputs, seed and croqvm version give the same interleaving,
so a replay file records the inputs, the function, the dims, the seed and the check, and
identifies the program by a digest of its bytecode and the croqvm version that ran it. A
replay file without a seed (``croqvm sweep`` records one for a run that failed under the
default schedule) replays under round-robin, which needs no seed.

The runs go through an executor (croqvm.running.executor): one after another here, or on a
Dask cluster (``--workers``, ``--scheduler``; docs/CLUSTER.md). They are grouped in seed
order whatever the order they end in, so the report and the replay files are the same.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from dataclasses import dataclass

import numpy as np

from .. import __version__
from ..bytecode.cqb import decode, encode
from ..core.errors import ArgumentError, KernelFault
from ..core.files import load_numpy, write_atomic
from .executor import SerialExecutor, TimedOut
from .inputs import results_of

REPLAY_FORMAT = "croqvm replay"
REPLAY_VERSION = 1


@dataclass(frozen=True)
class Outcome:
    results: tuple          # (name, dtype, shape, sha256) per result, in order
    printed: str
    error: str | None       # the runtime error's text


def digest(results: dict) -> tuple:
    out = []
    for name, value in results.items():
        arr = np.ascontiguousarray(value)
        out.append((name, str(arr.dtype), arr.shape, hashlib.sha256(arr.tobytes()).hexdigest()))
    return tuple(out)


def run_schedule(program, fn, args: list, dims: dict, seed: int, check, **options):
    """One run of ``fn`` under the random schedule ``seed``, on copies of ``args``: its
    ``Outcome`` and its results (empty when it stopped with a runtime error). ``options``
    are further ``Program.run`` options (engine, max_steps)."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    out = io.StringIO()
    try:
        result = program.run(fn.name, *copies, schedule="random", seed=seed, check=check,
                             out=out, **options, **dims)
    except KernelFault as err:
        return Outcome((), out.getvalue(), str(err)), {}
    results = results_of(fn, copies, result)
    return Outcome(digest(results), out.getvalue(), None), results


class Schedules:
    """What every run of an exploration shares: the program, the function's name, its
    arguments and dims, the check and further ``Program.run`` options. Pickled (to reach
    the workers of a cluster) as the module's ``.cqb`` bytes, decoded once where it is
    unpickled."""

    def __init__(self, program, func: str, args: list, dims: dict, check,
                 options: dict | None = None):
        self.program, self.func, self.args, self.dims, self.check, self.options = \
            program, func, args, dims, check, options or {}

    def __reduce__(self):
        return (_unpickled_schedules, (encode(self.program.module), self.func, self.args,
                                       self.dims, self.check, self.options))


def _unpickled_schedules(cqb: bytes, func, args, dims, check, options) -> Schedules:
    from .program import Program
    return Schedules(Program(decode(cqb)), func, args, dims, check, options)


def run_seed(runs: Schedules, seed: int):
    """The task of an exploration: ``run_schedule`` of one seed, for an executor."""
    return run_schedule(runs.program, runs.program.function(runs.func), runs.args,
                        runs.dims, seed, runs.check, **runs.options)


def timed_out(seconds: float):
    """The outcome of a run stopped by the executor's time limit (and no results)."""
    return Outcome((), "", f"over the time limit of {seconds:g} s per run "
                           f"(--task-timeout)"), {}


def run_seeds(program, fn, args: list, dims: dict, seeds, check, executor=None, **options):
    """``(seed, outcome, results)`` for every seed of ``seeds``, in the order the runs end,
    on ``executor`` (default: one after another, here); ``options`` as for
    ``run_schedule``."""
    seeds = list(seeds)
    runs = Schedules(program, fn.name, args, dims, check, options)
    for i, value in (executor or SerialExecutor()).map_unordered(run_seed, runs, seeds):
        yield (seeds[i], *(timed_out(value.seconds) if isinstance(value, TimedOut)
                           else value))


def group(runs) -> list:
    """The runs ``(seed, outcome, results)`` grouped by outcome, the outcomes in the order
    of their first seed, each with its seeds and the results of its first run: a list of
    (Outcome, seeds, results). The same whatever the order the runs came in."""
    groups: dict = {}
    for seed, outcome, results in sorted(runs, key=lambda run: run[0]):
        groups.setdefault(outcome, ([], results))[0].append(seed)
    return [(outcome, seeds, results) for outcome, (seeds, results) in groups.items()]


def deviating(groups) -> list[int]:
    """The seeds whose outcome is not the usual one (the most frequent; of equals, the
    first seen), or that stopped with a runtime error."""
    usual = max(groups, key=lambda g: len(g[1]))[0]
    return sorted(s for outcome, seeds, _ in groups for s in seeds
                  if outcome != usual or outcome.error is not None)


# --------------------------------------------------------------------------- replay files

def program_digest(module) -> str:
    """The program's identity: its bytecode, whatever the path its sources were read from."""
    plain = dataclasses.replace(module, sources=[("", text) for _, text in module.sources])
    return hashlib.sha256(encode(plain)).hexdigest()


def write_replay(path: str, program, file: str, fn, used: dict, dims: dict, seed: int | None,
                 check, defines: dict) -> None:
    """A replay file of ``fn``'s run on the inputs ``used`` (``input.NAME`` arrays, as
    ``croqvm run --output`` writes them) under the random schedule ``seed`` (None:
    round-robin)."""
    meta = {"format": REPLAY_FORMAT, "version": REPLAY_VERSION, "croqvm": __version__,
            "program": program_digest(program.module), "file": file, "defines": defines,
            "func": fn.name, "dims": dims, "schedule_seed": seed, "check": check}
    write_atomic(path, lambda f: np.savez(f, meta=np.array(json.dumps(meta)), **used))


@dataclass(frozen=True)
class Replay:
    """What a replay file says: the call and how to run it."""
    path: str
    func: str
    inputs: dict            # parameter name -> array
    dims: dict
    seed: int | None        # of the random schedule; None: round-robin
    check: str | None


_REPLAY_FIELDS = ("croqvm", "program", "defines", "file", "func", "dims", "schedule_seed",
                  "check")


def read_replay(path: str, program) -> Replay:
    """The replay file ``path`` for ``program``; a file of another program, another croqvm
    version or another format is an ArgumentError that says which."""
    data = load_numpy(path, "--replay")
    if not isinstance(data, dict) or "meta" not in data:
        raise ArgumentError(f"--replay {path}: not a replay file (croqvm explore --record "
                            f"writes them)")
    try:
        meta = json.loads(str(data["meta"]))
    except (ValueError, TypeError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("format") != REPLAY_FORMAT or meta.get("version") != REPLAY_VERSION:
        raise ArgumentError(f"--replay {path}: not a replay file of this croqvm "
                            f"(format {meta.get('format')!r} version "
                            f"{meta.get('version')!r})")
    lacking = [k for k in _REPLAY_FIELDS if k not in meta]
    if lacking:
        raise ArgumentError(f"--replay {path}: a damaged replay file (its record lacks "
                            f"{', '.join(lacking)})")
    if meta["croqvm"] != __version__:
        raise ArgumentError(f"--replay {path}: recorded by croqvm {meta['croqvm']}, this "
                            f"is croqvm {__version__}: its schedules may differ; record "
                            f"it again with croqvm explore")
    if meta["program"] != program_digest(program.module):
        given = " ".join(f"-D {k}" + ("" if v is None else f"={v}")
                         for k, v in meta["defines"].items())
        raise ArgumentError(f"--replay {path}: recorded for another program: "
                            f"{meta['file']}" + (f" with {given}" if given else "") +
                            ", as it was then")
    inputs = {key[len("input."):]: data[key] for key in data
              if key.startswith("input.")}
    return Replay(path, meta["func"], inputs, meta["dims"], meta["schedule_seed"],
                  meta["check"])
