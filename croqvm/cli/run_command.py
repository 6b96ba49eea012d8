"""What ``croqvm run`` does once its options are read, and what every command shares: the
exit statuses, the reporting of errors, loading a program (LANGUAGE.md §14.1, §15.1).

The options are read by the typer app (croqvm/cli/main.py), or, for a command line of
the forms ``launch`` reads itself, by the executable's entry without building that app
(croqvm/cli/launch.py); both call ``run`` here, whose parameters and defaults are the
command's options. Nothing here imports typer.
"""
from __future__ import annotations

import errno
import functools
import os
import re
import sys
import time

import numpy as np

from ..core import errors
from ..core.files import check_output, read_program
from ..core.position import Interrupted
from ..running.program import default_engine

EXIT = {errors.CompileError: 1, errors.BytecodeError: 1, errors.ArgumentError: 2,
        errors.KernelFault: 3, errors.InternalError: 4}
EXIT_MISMATCH = 3          # --expect found a difference: a wrong result is a runtime error
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as a shell reports a process Ctrl-C stopped
STDOUT = "standard output"
_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)   # a write the system refuses for room
# --check of run, diff and explore: without it they check races (see default_check)
RUN_CHECKS = ("race", "init", "none")
DEFAULT_WATCHDOG = 10.0    # seconds one block may run before the watchdog's note

_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\([^()]*\))?\Z")


def reported(fn):
    """``fn``, whose croqvm errors and interrupts become a message and an exit status."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.CroqvmError as err:
            print_error(err)
            raise SystemExit(exit_status(err)) from None
        except Interrupted as stop:
            print(f"interrupted {stop.position.describe()}", file=sys.stderr)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno in _FULL:
                # files croqvm writes report their own errors: this is standard output
                print(f"{STDOUT}: can not write: {exc.strerror}", file=sys.stderr)
                raise SystemExit(EXIT[errors.ArgumentError]) from None
            # a croqvm bug: the traceback is what its report needs
            import traceback
            traceback.print_exc()
            print("croqvm: internal error: this is a bug in croqvm; please report it with "
                  "the traceback above", file=sys.stderr)
            raise SystemExit(EXIT[errors.InternalError]) from None
    return wrapper


def cuda_verbose(verbose: bool) -> None:
    """The CUDA devices read this when they are made (croqvm.cuda.launch)."""
    if verbose:
        os.environ["CROQVM_CUDA_VERBOSE"] = "1"


# run options as croqvm.Program.run's messages name them (``engine='python'``, ``jobs=4``)
_API_OPTION = re.compile(r"\b(engine|device|check|schedule|jobs)=('?)([\w-]+)\2")


def print_error(err: errors.CroqvmError) -> None:
    """The error and its hint; a usage error names options as the command spells them."""
    text, hint = str(err), err.hint
    if isinstance(err, errors.ArgumentError):
        text = _API_OPTION.sub(r"--\1 \3", text)
        hint = hint and _API_OPTION.sub(r"--\1 \3", hint)
    print(text, file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


def exit_status(err: errors.CroqvmError) -> int:
    return next((code for cls, code in EXIT.items() if isinstance(err, cls)), 2)


def parse_defines(items) -> dict:
    """§1.2.4: ``-D NAME`` defines NAME as 1 (None, as the preprocessor's
    ``initial_macros`` reads it), ``-D NAME=VALUE`` as VALUE (``-D NAME=``: as nothing);
    ``items`` None: no -D given."""
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not _MACRO_NAME.match(name):
            raise errors.ArgumentError(f"-D {item}: '{name}' is not a macro name (a name, "
                                       f"or NAME(PARAMS) for a function-like macro)")
        out[name] = value if sep else None
    return out


def load_program(path: str, defines, verb: str):
    """The ``croqvm.Program`` in ``path`` (a ``.cqb`` by its magic number, else source
    compiled with ``defines``, or found compiled in the cache); source warnings go to
    stderr."""
    import croqvm

    from ..bytecode.cqb import decode
    from .module_cache import compile_cached
    source = read_program(path)
    if source.bytecode is not None:
        if defines:
            raise errors.ArgumentError(
                f"-D does nothing to {path}: a .cqb file holds compiled code, its macros were "
                f"expanded when it was compiled; pass -D when compiling the .co file")
        program = croqvm.Program(decode(source.bytecode, path))
    else:
        program = compile_cached(source.text, path, parse_defines(defines))
        if program.warnings:
            print(program.warnings, file=sys.stderr)
    if not program.functions:
        raise errors.ArgumentError(f"{path}: no __co__ function, nothing to {verb}")
    return program


def run(file: str, *, func=None, inputs=None, random_inputs=False, seed=None, dims=None,
        output=None, expect=None, rtol=None, atol=None, schedule="rr", schedule_seed=None,
        poison=False, check=None, replay=None, max_steps=None, watchdog=DEFAULT_WATCHDOG,
        progress=False, quiet=False, device="cpu", engine=None, jobs=None,
        debug_on_fault=False, verbose=False, defines=None) -> None:
    """``croqvm run``: each parameter is the option of its name (main.py's ``run`` says
    what each does), as typer gives it (None for a repeatable option not given)."""
    inputs, dims = inputs or [], dims or []    # typer gives None for none given
    cuda_verbose(verbose)
    if replay is not None:
        _check_replay_options(random_inputs=random_inputs, seed=seed)
    # with --replay, the replay file names the function and schedules at random
    check_run_options(func if replay is None else "", inputs, random_inputs, seed, dims,
                       expect, rtol, atol, schedule if replay is None else "random",
                       schedule_seed, progress, quiet)
    if output is not None:
        from ..running.inputs import input_files
        given = {path: "an --input file" for path in input_files(list(inputs))}
        given[file] = "the program file"
        if expect:
            given[expect] = "the --expect file"
        check_output(output, "--output", given)
    program = load_program(file, defines, "run")
    reference = None        # (path, arrays): read before the run, which may be long
    if expect is not None:
        from .results import read_expected
        reference = (expect, read_expected(expect))
    from ..running.inputs import load_inputs, parse_dims
    arrays, dim_values = load_inputs(list(inputs)), parse_dims(list(dims))
    if replay is not None:
        from ..running.explore import read_replay
        rec = read_replay(replay, program)
        _match_replay(rec, func, arrays, dim_values, schedule, schedule_seed,
                      "init" if poison else check)
        func, arrays, dim_values = rec.func, rec.inputs, rec.dims
        schedule = "rr" if rec.seed is None else "random"
        schedule_seed, check = rec.seed, rec.check or "none"   # the recorded check, or none
        random_inputs = True      # the file holds every argument; a stream takes None
    default = check is None and not poison
    check = None if check in (None, "none") else check
    monitor = _monitor(program, progress, quiet, watchdog)
    options = dict(engine=engine, poison=poison, check=check, schedule=schedule,
                   seed=schedule_seed or 0, max_steps=max_steps, out=Output(sys.stdout),
                   progress=monitor, device=device, jobs=jobs)
    stats = {}
    try:
        if func is None:
            results, saved_inputs = _run_all(program, file, options, default, stats,
                                             not quiet), {}
        else:
            results, saved_inputs = _run_one(program, file, func, arrays, random_inputs,
                                              seed or 0, dim_values, options, default, stats)
    except errors.KernelFault as fault:
        if not debug_on_fault:
            raise
        print_error(fault)
        monitor.finish()
        func = func or _faulting(program)
        _, args, dim_values = arguments(program, file, func, arrays, dim_values,
                                         random_inputs, seed or 0)
        # the debugger runs on the reference engine, where the default check is race
        raise SystemExit(debug_session(program, func, args, dim_values, None, None,
                                dict(schedule=schedule, seed=schedule_seed or 0,
                                     poison=poison,
                                     check="race" if default and device == "cpu" else check,
                                     max_steps=max_steps),
                                at_fault=True)) from None
    finally:
        monitor.finish()
    if progress:
        print(f"progress: done: {stats.get('launches', 0)} launch(es), "
              f"{stats.get('blocks', 0)} block(s), {stats.get('warp_steps', 0)} "
              f"warp-instructions in {time.monotonic() - monitor.start:.1f} s", file=sys.stderr)
    _finish(results, saved_inputs, quiet, output, reference, rtol, atol)


def check_run_options(func, inputs, random_inputs, seed, dims, expect, rtol, atol, schedule,
                       schedule_seed, progress, quiet):
    """Options that would be silently ignored are usage errors."""
    if func is None:
        given = [name for name, value in (("--input", inputs), ("--dim", dims),
                                           ("--random-inputs", random_inputs)) if value]
        if given:
            raise errors.ArgumentError(f"{given[0]} gives a function's arguments: choose the "
                                       f"function with --func NAME")
    if seed is not None and not random_inputs:
        raise errors.ArgumentError("--seed seeds --random-inputs; the seed of a random "
                                   "schedule is --schedule-seed")
    if schedule_seed is not None and schedule != "random":
        raise errors.ArgumentError("--schedule-seed seeds --schedule random")
    if (rtol is not None or atol is not None) and expect is None:
        raise errors.ArgumentError("--rtol and --atol are the tolerances of --expect")
    if progress and quiet:
        raise errors.ArgumentError("--progress and --quiet contradict each other")


def _check_replay_options(**given) -> None:
    """The sources of inputs a replay file replaces can not be given with it."""
    for name, value in given.items():
        if value:
            option = "--" + name.replace("_", "-")
            raise errors.ArgumentError(f"{option} with --replay: the replay file gives the "
                                       f"function, its inputs and dims, the schedule and the "
                                       f"check")


def _match_replay(rec, func, arrays: dict, dims: dict, schedule: str, schedule_seed,
                  check) -> None:
    """What is given with ``--replay`` must say what the replay file says (a script may
    name the function, or keep the inputs it recorded with)."""
    def differs(option: str, says: str):
        raise errors.ArgumentError(f"{option} with --replay: the replay file {says}")

    if func is not None and func != rec.func:
        differs(f"--func {func}", f"runs '{rec.func}'")
    for name, array in arrays.items():
        recorded = rec.inputs.get(name)
        if recorded is None or np.shape(recorded) != np.shape(array) or \
                not np.array_equal(recorded, array, equal_nan=array.dtype.kind in "fc"):
            differs(f"--input {name}", f"holds another '{name}'" if recorded is not None
                    else f"gives '{rec.func}' no parameter '{name}'")
    for name, value in dims.items():
        if rec.dims.get(name) != value:
            differs(f"--dim {name}={value}", f"has {name}={rec.dims.get(name)}"
                    if name in rec.dims else f"gives no dimension '{name}'")
    recorded_schedule = "rr" if rec.seed is None else "random"
    if schedule != "rr" and schedule != recorded_schedule:
        differs(f"--schedule {schedule}", "runs the round-robin schedule")
    if schedule_seed is not None and schedule_seed != rec.seed:
        differs(f"--schedule-seed {schedule_seed}",
                "runs the round-robin schedule" if rec.seed is None
                else f"runs --schedule-seed {rec.seed}")
    if check is not None and (None if check == "none" else check) != rec.check:
        differs(f"--check {check}", f"runs --check {rec.check}" if rec.check
                else "runs no check")


def _monitor(program, progress: bool, quiet: bool, watchdog: float):
    from ..core.source import SourceFile
    from .monitor import Monitor
    show = "always" if progress else "never" if quiet else "auto"
    sources = {name: SourceFile(name, text) for name, text in program.module.sources}
    return Monitor(sys.stderr, sources, show=show, watchdog=watchdog,
                   tty=sys.stderr.isatty())


def default_check(device: str, engine: str | None) -> str | None:
    """The check a run gets with neither --check nor --poison (README: Finding
    races): race on the native engine, whose detector costs little. None on --engine
    python (the slow engine stays as fast as it is) and on the CUDA devices (the check
    observes the interpreter)."""
    if device != "cpu" or (engine or default_engine(device)) != "native":
        return None
    return "race"


def _checked(options: dict, default: bool) -> dict:
    """``options`` with the default check where ``default`` (no check given)."""
    if not default:
        return options
    return {**options, "check": default_check(options["device"], options["engine"])}


def _run_all(program, file: str, options: dict, default: bool, stats: dict,
             label: bool) -> dict:
    """Every parameterless function in file order; results named after the functions.
    When several run and ``label``, a line on stderr names each before its output (as
    ``head`` names files), ``==> NAME <==``. ``default``: each gets its default check."""
    runnable = [fn for fn in program.functions if not fn.params]
    if not runnable:
        names = ", ".join(fn.name for fn in program.functions)
        raise errors.ArgumentError(
            f"nothing to run in {file}: every function takes parameters ({names}); choose "
            f"one with --func NAME and give its arguments with --input or --random-inputs")
    for fn in program.functions:
        if fn.params:
            print(f"note: skipping '{fn.name}': it has parameters; run it with --func "
                  f"{fn.name} and --input/--random-inputs.", file=sys.stderr)
    results = {}
    for n, fn in enumerate(runnable):
        if label and len(runnable) > 1:   # on stderr: stdout stays what the kernels print
            options["out"].flush()
            print(f"==> {fn.name} <==", file=sys.stderr)
        try:
            result = program.run(fn.name, **_checked(options, default), stats=stats)
        except errors.CroqvmError as err:
            rest = ", ".join(f"'{f.name}'" for f in runnable[n + 1:])
            if not rest:
                raise
            print_error(err)
            print(f"note: not run after this error: {rest}", file=sys.stderr)
            raise SystemExit(exit_status(err)) from None
        if result is not None:
            results[fn.name] = result
    return results


def arguments(program, file, func, arrays: dict, dims: dict, random_inputs, seed):
    """Function ``func`` of ``program`` (``file``) and its arguments: (function,
    arguments in parameter order, the dims no argument binds)."""
    from ..running.inputs import build_args
    fn = program.function(func)
    if fn is None:
        known = ", ".join(f.name for f in program.functions) or "none"
        raise errors.ArgumentError(f"no function '{func}' in {file} (functions: {known})")
    args, dim_values = build_args(fn, arrays, dims, random_inputs, seed)
    return fn, args, dim_values


def _run_one(program, file, func, arrays, random_inputs, seed, dims, options, default, stats):
    from ..running.inputs import inputs_used, results_of
    fn, args, dim_values = arguments(program, file, func, arrays, dims, random_inputs, seed)
    used = inputs_used(fn, args)
    result = program.run(func, *args, **_checked(options, default), stats=stats,
                         **dim_values)
    return results_of(fn, args, result), used


def _finish(results, used, quiet, output, reference, rtol, atol) -> None:
    """The summary, the output file, then the comparison with ``reference``, (path,
    arrays) or None (whose failure keeps the file)."""
    from ..running.inputs import save_npz
    from .results import compare, describe
    if not quiet:
        for name, value in results.items():
            print(describe(name, value), file=sys.stderr)
    if output is not None:
        save_npz(output, {**{k: np.asarray(v) for k, v in results.items()}, **used})
    if reference is not None:
        path, expected = reference
        report = compare(results, used, path, expected, rtol, atol)
        if report:
            print(f"--expect {path}: the results differ", file=sys.stderr)
            print("\n".join(report), file=sys.stderr)
            raise SystemExit(EXIT_MISMATCH)
        if not quiet:
            print(f"--expect {path}: the results agree", file=sys.stderr)


def _faulting(program) -> str:
    """The function a run of every parameterless function stopped in: the first that
    faults again on the reference engine (the runs are deterministic)."""
    import io
    for fn in program.functions:
        if fn.params:
            continue
        try:
            program.run(fn.name, engine="python", out=io.StringIO())
        except errors.KernelFault:
            return fn.name
    raise errors.ArgumentError("the runtime error does not recur on the reference engine; "
                               "nothing to debug")


def debug_session(program, func, args, dims, lines, script, options, at_fault=False) -> int:
    """A debugger session on ``func(*args)``: from ``lines`` of ``script``, else the
    terminal; ``at_fault``: run to the first runtime error and stop there."""
    from ..debug import Session
    from ..debug.console import Console, interact, run_script
    session = Session(program, func, *args, out=sys.stdout, **options, **dims)
    console = Console(session, sys.stdout)
    if at_fault:
        session.break_fault = True
        session.cont()
    if lines is None:
        return interact(console)
    return run_script(console, lines, script)


class Output:
    """What the kernels print, on ``stream`` (standard output): a write the system refuses
    (a full disk, a closed descriptor) is a usage error that says so, not a traceback."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        self._do(lambda: self.stream.write(text))

    def flush(self) -> None:
        self._do(lambda: self.stream.flush())

    def _do(self, act) -> None:
        if self.stream is None:    # Python's sys.stdout when descriptor 1 was closed
            raise errors.ArgumentError(f"{STDOUT}: can not write: the descriptor is closed")
        try:
            act()
        except OSError as exc:
            raise errors.ArgumentError(f"{STDOUT}: can not write: "
                                       f"{exc.strerror or exc}") from None
