"""The ``croqvm`` command (LANGUAGE.md §14.1, §15.1 exit statuses).

Exit status: 0 success, 1 static error (source or ``.cqb`` rejected), 2 usage error (bad
arguments, unreadable or unwritable files, nothing to run), 3 runtime error (a kernel
fault, or results that differ from ``--expect``), 4 internal error (a croqvm bug), 130
when interrupted. User errors print their diagnostic on stderr, never a traceback.
"""
from __future__ import annotations

import functools
import os
import re
import signal
import sys
import time
import traceback

import click
import numpy as np

from . import __version__, errors
from .files import check_output, read_program
from .position import Interrupted

EXIT = {errors.CompileError: 1, errors.BytecodeError: 1, errors.ArgumentError: 2,
        errors.KernelFault: 3, errors.InternalError: 4}
EXIT_MISMATCH = 3          # --expect found a difference: a wrong result is a runtime error
EXIT_INTERRUPTED = 130     # 128 + SIGINT, as a shell reports a process Ctrl-C stopped
DEFAULT_WATCHDOG = 10.0    # seconds one block may run before the watchdog's note

_MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\([^()]*\))?\Z")

HELP = f"""Compile Croqtile kernels to SIMT bytecode and run them lane by lane.

\b
Exit status: 0 success, 1 static error (source or .cqb rejected), 2 usage
error, 3 runtime error (a kernel fault, or a result that differs from
--expect), 4 internal error (a croqvm bug: please report it), {EXIT_INTERRUPTED} interrupted."""

RUN_HELP = """Run a function of a .co or .cqb file on the CPU interpreter, or its
kernels as CUDA (--device cuda-cpu or gpu).

\b
Without --func, every function without parameters runs, in file order.
With --func NAME, the function gets its arguments from --input and
--random-inputs; symbolic dimensions no input binds come from --dim.

\b
--random-inputs fills each parameter without --input, in parameter order,
from one generator seeded by --seed: signed integers uniform in [-8, 8),
unsigned in [0, 16), floats uniform in [-1, 1) (rounded to the type), bools
0 or 1; scalar parameters too. --output saves them (as input.NAME) with
the results, so that a run can be checked and repeated.

\b
Results: the summary on stderr gives each result's min, max and mean over
its finite elements, its NaN and infinity counts and a crc32. --output
writes them to an .npz: the returned value as 'result', every global
parameter under its name, every input as 'input.NAME'. --expect REF
compares them with REF (keys as --output writes them; a .npy for a single
result) and exits with status 3 on a difference, listing the first ones.

\b
No step limit applies unless --max-steps is given: when one block (or the
host code) runs longer than --watchdog seconds, a note shows the loop it is
in, and Ctrl-C stops the run saying where it was."""


class _Count(click.ParamType):
    """A positive integer, also written ``1e9`` or ``1_000_000``."""
    name = "N"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        number = None
        try:
            number = int(value, 0)
        except ValueError:
            try:
                if float(value).is_integer():
                    number = int(float(value))
            except (ValueError, OverflowError):
                pass
        if number is None or number < 1:
            self.fail(f"{value!r} is not a positive integer", param, ctx)
        return number


class _Seed(click.ParamType):
    """A seed: an integer from 0 to 2^64 - 1 (the state of the project's generator)."""
    name = "N"

    def convert(self, value, param, ctx):
        try:
            number = value if isinstance(value, int) else int(value, 0)
        except ValueError:
            number = None
        if number is None or not 0 <= number < 2 ** 64:
            self.fail(f"{value!r} is not a seed: use an integer from 0 to 2^64 - 1", param, ctx)
        return number


COUNT, SEED = _Count(), _Seed()


def _defines_option(fn):
    return click.option("-D", "--define", "defines", multiple=True, metavar="NAME[=VALUE]",
                        help="Define a macro, as a C compiler's -D does (repeatable).")(fn)


def _verbose_option(fn):
    return click.option("-v", "--verbose", is_flag=True,
                        help="Show the CUDA build cache's hits and misses and the compiler "
                             "commands.")(fn)


def _cuda_verbose(verbose: bool) -> None:
    """The CUDA devices read this when they are made (croqvm.cuda.launch)."""
    if verbose:
        os.environ["CROQVM_CUDA_VERBOSE"] = "1"


@click.group(help=HELP, context_settings={"help_option_names": ["-h", "--help"],
                                          "max_content_width": 88})
@click.version_option(__version__, "--version", prog_name="croqvm",
                      message="%(prog)s %(version)s")
def app():
    pass


def _print_error(err: errors.CroqvmError) -> None:
    print(str(err), file=sys.stderr)
    if err.hint:
        print(f"hint: {err.hint}", file=sys.stderr)


def _status(err: errors.CroqvmError) -> int:
    return next((code for cls, code in EXIT.items() if isinstance(err, cls)), 2)


def command(**settings):
    """Register a subcommand whose croqvm errors and interrupts become a message and an
    exit status."""
    def register(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except errors.CroqvmError as err:
                _print_error(err)
                raise SystemExit(_status(err)) from None
            except Interrupted as stop:
                print(f"interrupted {stop.position.describe()}", file=sys.stderr)
                raise SystemExit(EXIT_INTERRUPTED) from None
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                raise SystemExit(EXIT_INTERRUPTED) from None
            except Exception:   # a croqvm bug: the traceback is what its report needs
                traceback.print_exc()
                print("croqvm: internal error: this is a bug in croqvm; please report it with "
                      "the traceback above", file=sys.stderr)
                raise SystemExit(EXIT[errors.InternalError]) from None
        return app.command(**settings)(wrapper)
    return register


def _defines(items) -> dict:
    """§1.2.4: ``-D NAME`` defines NAME as 1 (None, as the preprocessor's
    ``initial_macros`` reads it), ``-D NAME=VALUE`` as VALUE (``-D NAME=``: as nothing)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not _MACRO_NAME.match(name):
            raise errors.ArgumentError(f"-D {item}: '{name}' is not a macro name (a name, "
                                       f"or NAME(PARAMS) for a function-like macro)")
        out[name] = value if sep else None
    return out


def _load(path: str, defines, verb: str):
    """The ``croqvm.Program`` in ``path`` (a ``.cqb`` by its magic number, else source
    compiled with ``defines``); source warnings go to stderr."""
    import croqvm
    from .bytecode.cqb import decode
    source = read_program(path)
    if source.bytecode is not None:
        if defines:
            raise errors.ArgumentError(
                f"-D does nothing to {path}: a .cqb file holds compiled code, its macros were "
                f"expanded when it was compiled; pass -D when compiling the .co file")
        program = croqvm.Program(decode(source.bytecode, path))
    else:
        program = croqvm.compile(source.text, path, _defines(defines))
        if program.warnings:
            print(program.warnings, file=sys.stderr)
    if not program.functions:
        raise errors.ArgumentError(f"{path}: no __co__ function, nothing to {verb}")
    return program


@command(help="Report every error and warning of a source file: whatever compile would "
              "reject, all at once.")
@click.argument("file", metavar="FILE")
@_defines_option
def check(file, defines):
    import croqvm
    from .bytecode.cqb import decode
    from .diagnostics import render_all
    source = read_program(file)
    if source.bytecode is not None:
        if defines:
            raise errors.ArgumentError(f"-D does nothing to {file}: a .cqb file holds "
                                       f"compiled code")
        module = decode(source.bytecode, file)
        names = ", ".join(f.name for f in module.functions)
        print(f"{file}: ok: verified bytecode, {len(module.functions)} function(s) ({names})")
        return
    tree, diags, sources = croqvm.check(source.text, file, _defines(defines))
    if diags:
        print(render_all(diags, sources), file=sys.stderr)
    errs = [d for d in diags if d.is_error]
    if errs:   # only croqvm bugs: the internal error status, as compile would give
        raise SystemExit(EXIT[errors.InternalError] if all(d.is_internal for d in errs)
                         else EXIT[errors.CompileError])
    functions = tree.functions if tree else []
    if not functions:
        raise errors.ArgumentError(f"{file}: no __co__ function, nothing to check")
    n_warn = sum(d.severity == "warning" for d in diags)
    names = ", ".join(f.name for f in functions)
    print(f"{file}: ok: {len(functions)} function(s) ({names}), {n_warn} warning(s)")


@command(help="Compile a .co file to a .cqb bytecode file.")
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", metavar="FILE.cqb",
              help="Where to write (default: FILE with the suffix .cqb).")
@_defines_option
def compile(file, output, defines):
    if read_program(file).bytecode is not None:
        raise errors.ArgumentError(f"{file} is already bytecode; compile takes a .co file")
    out = os.path.splitext(file)[0] + ".cqb" if output is None else output
    check_output(out, "-o", {file: "the source file"})
    program = _load(file, defines, "compile")
    program.save(out)
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


@command(help="Print the bytecode of every function, with source positions.")
@click.argument("file", metavar="FILE")
@_defines_option
def disasm(file, defines):
    from .bytecode.disasm import disassemble
    print(disassemble(_load(file, defines, "disassemble").module))


@command(help=RUN_HELP)
@click.argument("file", metavar="FILE")
@click.option("--func", metavar="NAME",
              help="The function to run (default: every one without parameters).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help="A parameter's value: FILE.npy, FILE.npz (its array NAME) or FILE.npz:KEY.")
@click.option("--random-inputs", is_flag=True,
              help="Random values for the parameters without --input (see above).")
@click.option("--seed", type=SEED, metavar="N",
              help="Seed of --random-inputs (default 0).")
@click.option("--dim", "dims", multiple=True, metavar="NAME=N",
              help="The value of a symbolic dimension no input binds.")
@click.option("--output", metavar="FILE.npz", help="Save the results and inputs here.")
@click.option("--expect", metavar="REF.npz",
              help="Compare the results with REF; exit status 3 if they differ.")
@click.option("--rtol", type=float, metavar="X",
              help="Relative tolerance of --expect (default 1e-5; integers: exact).")
@click.option("--atol", type=float, metavar="X",
              help="Absolute tolerance of --expect (default 1e-8; integers: exact).")
@click.option("--schedule", type=click.Choice(["rr", "random"]), default="rr",
              show_default=True, help="Warp order: round-robin, or seeded random.")
@click.option("--schedule-seed", type=SEED, metavar="N",
              help="Seed of --schedule random (default 0).")
@click.option("--poison", is_flag=True,
              help="Poison new buffers: reading an element never written faults.")
@click.option("--check", type=click.Choice(["race", "init"]),
              help="race: report the data races of the run; init: reads of elements and "
                   "registers never written (as --poison); exit status 3.")
@click.option("--replay", metavar="FILE",
              help="Run again, exactly, the call a replay file of 'croqvm explore --record' "
                   "holds: its function, inputs, dims, schedule and check.")
@click.option("--max-steps", type=COUNT, metavar="N",
              help="Stop with a runtime error after N warp-instructions (default: no limit).")
@click.option("--watchdog", type=click.FloatRange(min=0), default=DEFAULT_WATCHDOG,
              show_default=True, metavar="SECONDS",
              help="Note the loop a block is in once it has run this long (0: never).")
@click.option("--progress", is_flag=True,
              help="Print progress lines even when stderr is not a terminal, from the start.")
@click.option("--quiet", is_flag=True, help="No progress line and no summary of results.")
@click.option("--device", type=click.Choice(["cpu", "cuda-cpu", "gpu"]), default="cpu",
              show_default=True,
              help="Where kernels run: cpu (the lane-accurate interpreter), cuda-cpu (the "
                   "generated CUDA compiled for the CPU), gpu (compiled by nvcc).")
@click.option("--engine", type=click.Choice(["native", "python"]),
              help="The interpreter: native (C) or python (the reference engine). Default: "
                   "native, or python for --check, --poison and where native is not built.")
@click.option("--jobs", type=click.IntRange(min=1), metavar="N",
              help="Threads a launch's blocks run on (native engine; default: the cores).")
@_verbose_option
@_defines_option
def run(file, func, inputs, random_inputs, seed, dims, output, expect, rtol, atol, schedule,
        schedule_seed, poison, check, replay, max_steps, watchdog, progress, quiet, device,
        engine, jobs, verbose, defines):
    _cuda_verbose(verbose)
    if replay is not None:
        _check_replay_options(func=func, input=inputs, random_inputs=random_inputs, seed=seed,
                              dim=dims, schedule=schedule != "rr", schedule_seed=schedule_seed,
                              poison=poison, check=check)
    _check_run_options(func, inputs, random_inputs, seed, dims, expect, rtol, atol, schedule,
                       schedule_seed, progress, quiet)
    if output is not None:
        from .run_io import input_files
        given = {path: "an --input file" for path in input_files(list(inputs))}
        given[file] = "the program file"
        if expect:
            given[expect] = "the --expect file"
        check_output(output, "--output", given)
    program = _load(file, defines, "run")
    if replay is None:
        from .run_io import load_inputs, parse_dims
        arrays, dim_values = load_inputs(list(inputs)), parse_dims(list(dims))
    else:
        from .explore import read_replay
        rec = read_replay(replay, program)
        func, arrays, dim_values = rec.func, rec.inputs, rec.dims
        schedule, schedule_seed, check = "random", rec.seed, rec.check
        random_inputs = True      # the file holds every argument; a stream takes None
    monitor = _monitor(program, progress, quiet, watchdog)
    options = dict(engine=engine, poison=poison, check=check, schedule=schedule,
                   seed=schedule_seed or 0, max_steps=max_steps, out=sys.stdout,
                   progress=monitor, device=device, jobs=jobs)
    stats = {}
    try:
        if func is None:
            results, saved_inputs = _run_all(program, file, options, stats), {}
        else:
            results, saved_inputs = _run_one(program, file, func, arrays, random_inputs,
                                              seed or 0, dim_values, options, stats)
    finally:
        monitor.finish()
    if progress:
        print(f"progress: done: {stats.get('launches', 0)} launch(es), "
              f"{stats.get('blocks', 0)} block(s), {stats.get('warp_steps', 0)} "
              f"warp-instructions in {time.monotonic() - monitor.start:.1f} s", file=sys.stderr)
    _finish(results, saved_inputs, quiet, output, expect, rtol, atol)


def _check_run_options(func, inputs, random_inputs, seed, dims, expect, rtol, atol, schedule,
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
    """What a replay file gives can not be given again."""
    for name, value in given.items():
        if value:
            option = "--" + name.replace("_", "-")
            raise errors.ArgumentError(f"{option} with --replay: the replay file gives the "
                                       f"function, its inputs and dims, the schedule and the "
                                       f"check")


def _monitor(program, progress: bool, quiet: bool, watchdog: float):
    from .source import SourceFile
    from .monitor import Monitor
    show = "always" if progress else "never" if quiet else "auto"
    sources = {name: SourceFile(name, text) for name, text in program.module.sources}
    return Monitor(sys.stderr, sources, show=show, watchdog=watchdog,
                   tty=sys.stderr.isatty())


def _run_all(program, file: str, options: dict, stats: dict) -> dict:
    """Every parameterless function in file order; results named after the functions."""
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
        try:
            result = program.run(fn.name, **options, stats=stats)
        except errors.CroqvmError as err:
            rest = ", ".join(f"'{f.name}'" for f in runnable[n + 1:])
            if not rest:
                raise
            _print_error(err)
            print(f"note: not run after this error: {rest}", file=sys.stderr)
            raise SystemExit(_status(err)) from None
        if result is not None:
            results[fn.name] = result
    return results


def _arguments(program, file, func, arrays: dict, dims: dict, random_inputs, seed):
    """Function ``func`` of ``program`` (``file``) and its arguments: (function,
    arguments in parameter order, the dims no argument binds)."""
    from .run_io import build_args
    fn = program.function(func)
    if fn is None:
        known = ", ".join(f.name for f in program.functions) or "none"
        raise errors.ArgumentError(f"no function '{func}' in {file} (functions: {known})")
    args, dim_values = build_args(fn, arrays, dims, random_inputs, seed)
    return fn, args, dim_values


def _run_one(program, file, func, arrays, random_inputs, seed, dims, options, stats):
    from .run_io import inputs_used, results_of
    fn, args, dim_values = _arguments(program, file, func, arrays, dims, random_inputs, seed)
    used = inputs_used(fn, args)
    result = program.run(func, *args, **options, stats=stats, **dim_values)
    return results_of(fn, args, result), used


def _finish(results, used, quiet, output, expect, rtol, atol) -> None:
    """The summary, the output file, then the comparison (whose failure keeps the file)."""
    from .results import compare, describe
    from .run_io import save_npz
    if not quiet:
        for name, value in results.items():
            print(describe(name, value), file=sys.stderr)
    if output is not None:
        save_npz(output, {**{k: np.asarray(v) for k, v in results.items()}, **used})
    if expect is not None:
        report = compare(results, used, expect, rtol, atol)
        if report:
            print(f"--expect {expect}: the results differ", file=sys.stderr)
            print("\n".join(report), file=sys.stderr)
            raise SystemExit(EXIT_MISMATCH)
        if not quiet:
            print(f"--expect {expect}: the results agree", file=sys.stderr)


@command(name="emit-cuda", help="Write the CUDA C++ the generator makes of a file's kernels: "
                                "one CQ_KERNEL per kernel, each statement with its source line.")
@click.argument("file", metavar="FILE")
@click.option("-o", "--output", metavar="FILE.cu",
              help="Where to write (default: FILE with the suffix .cu).")
@click.option("--arch", type=click.Choice(["sm_80", "sm_90a"]), default="sm_80",
              show_default=True, help="The GPU architecture to generate for.")
@click.option("--checks/--no-checks", default=True, show_default=True,
              help="Bounds checks of every element access in the generated code.")
@_defines_option
def emit_cuda(file, output, arch, checks, defines):
    from .cuda.emit import emit
    out = os.path.splitext(file)[0] + ".cu" if output is None else output
    check_output(out, "-o", {file: "the program file"})
    program = _load(file, defines, "translate")
    text = emit(program.module, arch=arch, checks=checks).text
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {out} ({len(text.splitlines())} lines)")


@command(help="Run a function on the interpreter and on another engine or device with the "
              "same inputs; say whether they agree, else list the first differences (exit "
              "status 3).")
@click.argument("file", metavar="FILE")
@click.option("--func", required=True, metavar="NAME", help="The function to run.")
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help="A parameter's value, as for run.")
@click.option("--random-inputs", is_flag=True,
              help="Random values for the parameters without --input, as for run.")
@click.option("--seed", type=SEED, metavar="N", help="Seed of --random-inputs (default 0).")
@click.option("--dim", "dims", multiple=True, metavar="NAME=N",
              help="The value of a symbolic dimension no input binds.")
@click.option("--against", type=click.Choice(["python", "native", "cuda-cpu", "gpu"]),
              default="cuda-cpu", show_default=True, help="What to compare with.")
@click.option("--rtol", type=float, metavar="X",
              help="Relative tolerance for floats (default: 0, or 1e-3 against gpu).")
@click.option("--atol", type=float, metavar="X",
              help="Absolute tolerance for floats (default: 0, or 1e-5 against gpu).")
@_verbose_option
@_defines_option
def diff(file, func, inputs, random_inputs, seed, dims, against, rtol, atol, verbose, defines):
    from .diff import differ
    from .run_io import load_inputs, parse_dims
    _cuda_verbose(verbose)
    program = _load(file, defines, "run")
    _, args, dim_values = _arguments(program, file, func, load_inputs(list(inputs)),
                                     parse_dims(list(dims)), random_inputs, seed or 0)
    found = differ(program, func, *args, against=against, rtol=rtol, atol=atol, **dim_values)
    if not found:
        print(f"{func}: {against} agrees with the interpreter")
        return
    print(f"{func}: {against} differs from the interpreter:", file=sys.stderr)
    for m in found:
        print(f"  {m}", file=sys.stderr)
    raise SystemExit(EXIT_MISMATCH)


@command(help="Run a function under N seeded random schedules with the same inputs and "
              "group the outcomes (results, printed text, runtime error) with their seeds; "
              "exit status 3 when they differ or a run stops with a runtime error.")
@click.argument("file", metavar="FILE")
@click.option("--func", metavar="NAME",
              help="The function to run (default: the file's only function).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE",
              help="A parameter's value, as for run.")
@click.option("--random-inputs", is_flag=True,
              help="Random values for the parameters without --input, drawn once, as for "
                   "run.")
@click.option("--seed", type=SEED, metavar="N", help="Seed of --random-inputs (default 0).")
@click.option("--dim", "dims", multiple=True, metavar="NAME=N",
              help="The value of a symbolic dimension no input binds.")
@click.option("--seeds", type=COUNT, required=True, metavar="N",
              help="How many schedules: the schedule seeds 0 to N-1.")
@click.option("--check", type=click.Choice(["race", "init"]),
              help="Check every run, as run --check does.")
@click.option("--record", metavar="DIR",
              help="Write a replay file (for run --replay) of each schedule whose outcome "
                   "is not the usual one, or that stops with a runtime error.")
@_defines_option
def explore(file, func, inputs, random_inputs, seed, dims, seeds, check, record, defines):
    from .explore import deviating, explore as run_seeds, write_replay
    from .run_io import inputs_used, load_inputs, parse_dims
    if seed is not None and not random_inputs:
        raise errors.ArgumentError("--seed seeds --random-inputs")
    program = _load(file, defines, "run")
    if func is None:
        if len(program.functions) != 1:
            names = ", ".join(f.name for f in program.functions)
            raise errors.ArgumentError(f"{file} has several functions ({names}): choose one "
                                       f"with --func NAME")
        func = program.functions[0].name
    fn, args, dim_values = _arguments(program, file, func, load_inputs(list(inputs)),
                                      parse_dims(list(dims)), random_inputs, seed or 0)
    groups = run_seeds(program, fn, args, dim_values, range(seeds), check)
    print(f"explore: '{func}' under {seeds} random schedules (seeds 0-{seeds - 1})")
    for n, (outcome, which, results) in enumerate(groups, 1):
        _print_outcome(n, outcome, which, results)
    late = deviating(groups)
    if record is not None and late:
        os.makedirs(record, exist_ok=True)
        used = inputs_used(fn, args)
        for s in late:
            path = os.path.join(record, f"{func}.seed{s}.replay")
            write_replay(path, program, file, fn, used, dim_values, s, check,
                         _defines(defines))
            print(f"wrote {path}")
    if len(groups) > 1:
        print(f"explore: the results differ between schedules ({len(groups)} outcomes in "
              f"{seeds} runs)", file=sys.stderr)
        raise SystemExit(EXIT_MISMATCH)
    if late:
        print(f"explore: every schedule stops with the same runtime error", file=sys.stderr)
        raise SystemExit(EXIT_MISMATCH)
    print("explore: every schedule gives the same outcome")


SHOWN_LINES = 10     # of what a run printed, in explore's outcomes


def _print_outcome(n: int, outcome, seeds: list, results: dict) -> None:
    from .messages import format_lanes
    from .results import describe
    print(f"outcome {n}: seed{'s' if len(seeds) > 1 else ''} {format_lanes(seeds)}")
    lines = outcome.printed.splitlines()
    for k, text in enumerate(lines[:SHOWN_LINES]):
        print(f"  {'printed: ' if k == 0 else '         '}{text}")
    if len(lines) > SHOWN_LINES:
        print(f"           ... and {len(lines) - SHOWN_LINES} more lines")
    for name, value in results.items():
        print(f"  {describe(name, value)}")
    if outcome.error is not None:
        print(f"  stopped: {outcome.error.splitlines()[0]}")


def main(argv=None) -> int:
    """Run the command with ``argv`` (default: the process's); returns the exit status."""
    try:
        app.main(args=argv, prog_name="croqvm", standalone_mode=True)
    except SystemExit as e:   # click exits with 2 on usage errors, as §15.1 asks
        return e.code if isinstance(e.code, int) else 1
    return 0


def entry() -> int:
    """The ``croqvm`` executable. Writing into a closed pipe (``croqvm run ... | head``)
    ends it quietly, as it ends any Unix tool, instead of raising BrokenPipeError."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()
