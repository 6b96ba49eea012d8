"""What ``croqvm.compile``, ``compile_file`` and ``load`` return: a verified bytecode module
and the warnings compiling it gave, which runs on a device with an engine (LANGUAGE.md
§14.1; ARCHITECTURE.md "The machine model").

This is the one place that chooses how a module runs. The data model
(``croqvm.bytecode``) knows no engine, and an engine knows no other. Each engine is a
*runner*: ``runner(module, func, args, dims, *, poison, schedule, seed, max_steps, out,
stats, progress)``, with the meaning of ``croqvm.interp.run_function``, the reference.
``Program.run`` checks every option first, so a runner receives a function that exists, a
schedule of ``SCHEDULES``, a seed in [0, 2**64), a positive step limit or None (no limit),
an output stream and a progress hook or None (croqvm.core.position). An engine
or device planned but not part of this installation, and any unknown name, is an
``ArgumentError`` that says which are available. Without an ``engine``, a run goes to
the native engine, or to the reference engine where native can not serve it: another
device, or an installation without the extension, which one warning line says once per
process. The run-time checks of ``CHECKS`` run on the engines that
``CHECKING`` lists for them (the reference engine is the executable spec they observe),
whose runners also take ``check``; other engines refuse them. ``poison`` is
``check="init"`` by its older name, on every engine.
"""
from __future__ import annotations

import sys

from ..core.diagnostics import Diagnostic, render_all
from ..core.errors import ArgumentError, DeviceError
from ..core.source import SourceFile

SCHEDULES = ("rr", "random")     # LANGUAGE.md §7.1.2; docs/EXECUTION.md §16
SEED_BITS = 64                   # a seed is taken modulo 2**64: the PRNG state (croqvm.core.prng)
MAX_STEP_LIMIT = 2 ** 63 - 1     # the engines count warp-steps in 64-bit signed integers


def _python_engine():
    from ..interp import run_function
    return run_function


def _native_engine():
    from ..native import runner
    return runner()


# engine name -> loader giving its runner (raising ArgumentError when it can not run here)
ENGINES = {"python": _python_engine, "native": _native_engine}
# what exists on paper only, and why it can not be used yet
PLANNED: dict = {}
# "cpu": the engines run everything; "cuda-cpu" and "gpu": the host program runs on the
# Python engine and the kernels as generated CUDA (croqvm.cuda), compiled for the CPU
# runtime or for the GPU
DEVICES = ("cpu", "cuda-cpu", "gpu")
# data races (LANGUAGE.md §7.5); reads of elements and registers never written (§14.4)
CHECKS = (None, "race", "init")
# check -> the engines whose runners take it as ``check``
CHECKING = {"race": ("python", "native"), "init": ("python", "native")}
THREADED = ("native",)           # the engines whose runners take ``jobs``
_FALLBACK_TOLD: list = []        # the warning that native is missing, once per process
_CUDA_DEVICES: dict = {}         # one per device kind: it keeps what it built loaded


def _device_runner(device: str, engine: str):
    """The Python engine's runner with kernels on a CUDA ``device``."""
    import functools

    from ..cuda.launch import Device
    if engine != "python":
        raise ArgumentError(f"device '{device}' runs host programs on the python engine; "
                            f"use engine='python'.")
    if device not in _CUDA_DEVICES:
        _CUDA_DEVICES[device] = Device(device)
    run = functools.partial(_python_engine(), device=_CUDA_DEVICES[device])

    def runner(module, func, args, dims, *, poison, schedule, seed, max_steps, out, stats,
               progress=None):
        if poison or schedule != "rr":
            what = "poison mode" if poison else f"schedule '{schedule}'"
            raise ArgumentError(f"{what} is not available on device '{device}': the "
                                f"kernels run as compiled code.")
        return run(module, func, args, dims, poison=poison, schedule=schedule, seed=seed,
                   max_steps=max_steps, out=out, stats=stats, progress=progress)
    return runner


def _choose(what: str, name, usable) -> None:
    """Raise the ArgumentError for a ``what`` (engine, device, check) named ``name`` that
    is not in ``usable``."""
    if name in usable:
        return
    known = [n for n in usable if n is not None] + [n for w, n in PLANNED if w == what]
    reason = PLANNED.get((what, name))
    if reason is not None:
        raise ArgumentError(f"{what} '{name}' is not available: {reason}; use "
                            f"{what}={usable[0]!r}.")
    raise ArgumentError(f"unknown {what} {name!r}: use one of {', '.join(known)}.")


def runner(device: str = "cpu", engine: str = "python"):
    """The function that runs modules on ``device`` with ``engine``."""
    _choose("device", device, DEVICES)
    _choose("engine", engine, tuple(ENGINES))
    if device != "cpu":
        return _device_runner(device, engine)
    return ENGINES[engine]()


def default_engine(device: str = "cpu", check=None, poison: bool = False) -> str:
    """The engine a run gets when it names none: "native", else "python" (see above),
    with the warning line on ``sys.stderr``. ``poison`` is the init check, which native
    runs too."""
    if device != "cpu" or (check is not None and "native" not in CHECKING.get(check, ())):
        return "python"
    from ..native import unavailable
    why = unavailable()
    if why is None:
        return "native"
    if not _FALLBACK_TOLD:
        _FALLBACK_TOLD.append(True)
        print(f"croqvm: warning: the native engine is not available, running on the python "
              f"engine: {why}.", file=sys.stderr)
    return "python"


def available(device: str = "cpu", engine: str = "python") -> bool:
    """Whether ``runner(device, engine)`` works in this installation."""
    try:
        runner(device, engine)
    except (ArgumentError, DeviceError):
        return False
    return True


def check_seed(seed) -> int:
    """A seed as the PRNG takes it: any Python int, modulo 2**64."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"a seed must be an integer, not {seed!r}.")
    return seed % (1 << SEED_BITS)


class Program:
    """A verified module and the warnings (``Diagnostic`` records) compiling it gave; a
    loaded ``.cqb`` has none."""

    def __init__(self, module, warnings=()):
        self.module = module
        self.diagnostics: list[Diagnostic] = list(warnings)

    @property
    def warnings(self) -> str:
        """The warnings as the CLI prints them ("" when there are none)."""
        sources = {name: SourceFile(name, text) for name, text in self.module.sources}
        return render_all(self.diagnostics, sources)

    @property
    def functions(self):
        return self.module.functions

    def function(self, name: str):
        """The bytecode ``Function`` named ``name``, or None."""
        return self.module.function(name)

    def save(self, path) -> None:
        """Write the module as a ``.cqb`` file, atomically."""
        from ..bytecode.cqb import save
        save(self.module, path)

    def run(self, func: str, *args, device: str = "cpu", engine: str | None = None, check=None,
            schedule: str = "rr", seed: int = 0, poison: bool = False,
            max_steps: int | None = None, out=None, stats: dict | None = None, progress=None,
            jobs: int | None = None, **dims):
        """Run function ``func`` on numpy arrays and Python scalars (in parameter order)
        and return its result (§14.3): an array, a scalar or None. ``global`` buffer
        parameters are updated in place. ``dims`` fixes symbolic dimensions no argument
        binds; ``max_steps`` stops the run after that many warp-steps (default: never);
        ``stats`` (a dict) receives ``warp_steps``, ``lane_steps``, ``launches`` and
        ``blocks``; ``out`` receives what the kernels print (default: ``sys.stdout``);
        ``progress`` is called with a ``croqvm.core.position.RunPosition`` now and then, and
        an interrupt leaves as ``croqvm.core.position.Interrupted``, which says where the run
        was. ``engine`` is "native" or "python" (default: ``default_engine``).
        ``check`` adds a run-time check of ``CHECKS``: "race" reports data races
        (§7.5, both engines), "init" reads of registers and of buffer elements that
        nothing gave a value (§14.4, both engines). ``poison=True`` is ``check="init"``.
        The default is no check (``croqvm run`` checks races by default; the API only
        when asked: docs/EXECUTION.md §20).
        ``jobs`` is how many threads a launch's blocks may run on (the native
        engine; default: the cores, or 1 under the random schedule, whose runs are
        replayed exactly, and for a kernel that prints, whose output then streams while
        it runs; on threads it comes when the launch ends), with results identical to
        one thread's when no block races with another."""
        if engine is None:
            engine = default_engine(device, check, poison)
        run = runner(device, engine)
        self.check_options(func, check, schedule, max_steps)
        if poison and check not in (None, "init"):
            raise ArgumentError(f"poison mode is check='init', which does not run with "
                                f"check='{check}'.")
        if poison and device == "cpu":
            check = "init"
        if check is not None and (engine not in CHECKING[check] or device != "cpu"):
            raise ArgumentError(f"check '{check}' runs on the Python and native engines "
                                f"only: use one of them and device='cpu' with it.")
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)
                                 or jobs < 1):
            raise ArgumentError(f"jobs must be a positive integer, not {jobs!r}.")
        if jobs not in (None, 1) and engine not in THREADED:
            raise ArgumentError(f"jobs={jobs} runs on the native engine only: use "
                                f"engine='native' with it.")
        extra = {} if check is None else {"check": check}
        if engine in THREADED:
            extra["jobs"] = jobs
        return run(self.module, func, list(args), dims, poison=bool(poison),
                   schedule=schedule, seed=check_seed(seed), max_steps=max_steps,
                   out=sys.stdout if out is None else out, stats=stats, progress=progress,
                   **extra)

    def check_options(self, func: str, check, schedule: str, max_steps) -> None:
        """The options of every way of running ``func`` (``run``, ``trace``), refused
        alike."""
        _choose("check", check, CHECKS)
        if schedule not in SCHEDULES:
            raise ArgumentError(f"unknown schedule '{schedule}': use 'rr' or 'random'.")
        if max_steps is not None and (isinstance(max_steps, bool)
                                      or not isinstance(max_steps, int)
                                      or not 1 <= max_steps <= MAX_STEP_LIMIT):
            raise ArgumentError(f"the step limit must be an integer from 1 to 2^63 - 1, not "
                                f"{max_steps!r}.")
        if self.module.function(func) is None:
            raise ArgumentError(f"no function named '{func}' in this module.")

    def trace(self, func: str, *args, cost=None, check=None, schedule: str = "rr",
              seed: int = 0, poison: bool = False, max_steps: int | None = None, out=None,
              engine: str | None = None, **dims):
        """Run ``func`` as ``run`` does, on ``engine`` (default: the one ``run`` would
        choose; either gives the same timeline), and return its timeline (a
        ``croqvm.trace.Trace``: a slice per statement and per wait on every warp's track,
        copies and flows, per-statement totals; ``Trace.result`` the result) under the
        cost model ``cost`` (a ``croqvm.trace.CostModel``; default: an H100's,
        docs/TRACE.md)."""
        from ..trace import record
        return record(self, func, args, dims, cost=cost, check=check, schedule=schedule,
                      seed=seed, poison=poison, max_steps=max_steps, out=out, engine=engine)
