"""The ``croqvm`` command (LANGUAGE.md §14.1, §15.1 exit statuses).

Exit status: 0 success, 1 static error (source or ``.cqb`` rejected), 2 usage error (bad
arguments, unreadable or unwritable files, nothing to run), 3 runtime error (a kernel
fault, or results that differ from ``--expect``), 4 internal error (a croqvm bug), 130
when interrupted. User errors print their diagnostic on stderr, never a traceback.

This is the typer app. The executable starts in ``launch.py``, which runs the common
forms of ``croqvm run`` without it; what ``run`` does, and what every command shares, is
in ``run_command.py``.

Unlike croqvm's other modules, this one evaluates its annotations where they are written
(no ``from __future__ import annotations``): typer reads the commands' parameters from
them at every start, and would otherwise compile each one from its text.
"""

import os
import sys
from typing import Annotated

import typer
import typer.core
from typer._coercion import RuntimeParam

from .. import __version__
from ..core import errors
from ..core.files import check_output, read_program
from ..core.position import Interrupted
from ..running.program import CHECKS, DEVICES, ENGINES, SCHEDULES
from . import run_command, values
from .launch import entry, main  # noqa: F401  (the names the tests and older installs use)
from .run_command import (DEFAULT_WATCHDOG, EXIT, EXIT_INTERRUPTED, EXIT_MISMATCH, RUN_CHECKS,
                          arguments, check_run_options, cuda_verbose, debug_session,
                          default_check, load_program, parse_defines, reported)

HELP = f"""Compile Croqtile kernels to SIMT bytecode and run them lane by lane.

\b
Exit status: 0 success, 1 static error (source or .cqb rejected), 2 usage
error, 3 runtime error (a kernel fault, or a result that differs from
--expect), 4 internal error (a croqvm bug: please report it), {EXIT_INTERRUPTED} interrupted."""

RUN_HELP = """Run a function of a .co or .cqb file on the CPU interpreter, or its
kernels as CUDA (--device cuda-cpu or gpu).

\b
Without --func, every function without parameters runs, in file order
(when there are several, each after a line '==> NAME <==' on stderr).
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


def _flag(value):
    """A flag's value other than a bool, which typer passes through unconverted: it can
    only come from somewhere croqvm does not read options from (a prompt, a variable)."""
    raise typer.BadParameter(f"{value!r} is not a flag's value")


class _PlainValue(RuntimeParam):
    """The conversion of a parameter's value (each value of a repeatable option) by its
    parser (cli_values), as text, or as a flag, without typer's validation library
    (pydantic): importing that and building its validators takes longer than compiling
    and running a small program. typer converts each parameter on first use with what
    ``get_runtime_param`` makes; ``_PlainParams`` makes it first."""

    def _coerce_value(self, value, param, ctx):
        info, annotation = self.parameter_info, self.annotation
        convert = info.parser or (_flag if annotation is bool else str)
        if isinstance(value, (list, tuple)):
            return [convert(item) for item in value]
        return convert(value)


class _PlainParams:
    """A command whose parameters convert their values as ``_PlainValue``: those with a
    parser, text and flags, which are all croqvm's (the help option included)."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for param in params:
            desc = param.type_descriptor
            if param._runtime_param is None and (
                    desc.parameter_info.parser is not None
                    or desc.annotation in (str, list[str], bool)):
                param._runtime_param = _PlainValue(desc.parameter_info, desc.annotation)
        return params


class _Group(_PlainParams, typer.core.TyperGroup):
    """The commands in the help in alphabetical order, as croqvm has always listed them."""

    def list_commands(self, ctx):
        return sorted(super().list_commands(ctx))


class _Command(_PlainParams, typer.core.TyperCommand):
    """A command's help as croqvm has always shown it: its argument in the usage line by
    its name (``croqvm run [OPTIONS] FILE``), the options below, no table of arguments
    (typer writes ``{FILE}`` and a section ``Arguments: FILE <str> [required]``)."""

    def collect_usage_pieces(self, ctx):
        return [self.options_metavar] + [param.metavar for param in self.get_params(ctx)
                                         if param.param_type_name == "argument"]

    def format_options(self, ctx, formatter):
        options = [param.get_help_record(ctx) for param in self.get_params(ctx)
                   if param.param_type_name == "option"]
        with formatter.section("Options"):
            formatter.write_dl([record for record in options if record])


app = typer.Typer(cls=_Group, help=HELP, no_args_is_help=True, add_completion=False,
                  rich_markup_mode=None, pretty_exceptions_enable=False,
                  # the longest name first: usage errors end "Try 'croqvm run --help'"
                  context_settings={"help_option_names": ["--help", "-h"],
                                    "max_content_width": 88})


def _show_version(wanted: bool) -> None:
    if wanted:
        print(f"croqvm {__version__}")
        raise typer.Exit()


@app.callback()
def _croqvm(version: Annotated[bool, typer.Option(
        "--version", callback=_show_version, is_eager=True, expose_value=False,
        help="Show the version and exit.")] = False) -> None:
    pass


# the argument and options several commands share
File = Annotated[str, typer.Argument(metavar="FILE")]
Defines = Annotated[list[str] | None, typer.Option(
    "-D", "--define", metavar="NAME[=VALUE]",
    help="Define a macro, as a C compiler's -D does (repeatable).")]
Verbose = Annotated[bool, typer.Option(
    "-v", "--verbose",
    help="Show the CUDA build cache's hits and misses and the compiler commands.")]
Seed = Annotated[int | None, typer.Option(
    parser=values.seed, metavar="N", help="Seed of --random-inputs (default 0).")]
Dims = Annotated[list[str] | None, typer.Option(
    "--dim", metavar="NAME=N", help="The value of a symbolic dimension no input binds.")]
Inputs = Annotated[list[str] | None, typer.Option(
    "--input", metavar="NAME=FILE", help="A parameter's value, as for run.")]
# the options of the commands that run one function on the reference engine as run does
# (debug, trace)
OneFunc = Annotated[str | None, typer.Option(
    metavar="NAME", help="The function (default: the first one without parameters).")]
RandomInputs = Annotated[bool, typer.Option(
    "--random-inputs", help="Random values for the parameters without --input.")]
Schedule = Annotated[str, typer.Option(
    **values.one_of(*SCHEDULES), show_default=True,
    help="Warp order: round-robin, or seeded random.")]
ScheduleSeed = Annotated[int | None, typer.Option(
    parser=values.seed, metavar="N", help="Seed of --schedule random.")]
Poison = Annotated[bool, typer.Option("--poison", help="The same as --check init.")]
MaxSteps = Annotated[int | None, typer.Option(
    parser=values.count, metavar="N",
    help="Stop with a runtime error after N warp-instructions.")]
# where the runs of explore go: here, one after another, or on a Dask cluster
Workers = Annotated[int | None, typer.Option(
    **values.at_least(1), metavar="N",
    help="Run on a local Dask cluster of N worker processes (pip install croqvm[cluster]).")]
Scheduler = Annotated[str | None, typer.Option(
    metavar="ADDRESS",
    help="Run on the Dask cluster whose scheduler listens at ADDRESS "
         "(tcp://HOST:8786).")]
TaskTimeout = Annotated[float | None, typer.Option(
    parser=values.seconds, metavar="S",
    help="On a cluster, stop a run after S seconds and report it as timed out.")]
NoProgress = Annotated[bool, typer.Option(
    "--no-progress", help="No progress bar (there is none when stderr is not a terminal).")]


def _executor(workers, scheduler, task_timeout):
    """Where the runs go: a Dask cluster (imported only then), or here, serially."""
    if workers is not None and scheduler is not None:
        raise errors.ArgumentError("--workers starts a local cluster, --scheduler uses a "
                                   "running one: give one of them")
    if workers is None and scheduler is None:
        if task_timeout is not None:
            raise errors.ArgumentError("--task-timeout limits the runs of a cluster: give "
                                       "--workers N or --scheduler ADDRESS too")
        from ..running.executor import SerialExecutor
        return SerialExecutor()
    try:
        from ..sweep.cluster import DaskExecutor
    except ImportError as exc:
        raise errors.ArgumentError(f"--workers and --scheduler need Dask's distributed "
                                   f"package ({exc}): pip install croqvm[cluster]") from None
    return DaskExecutor(workers=workers, scheduler=scheduler, task_timeout=task_timeout)


def _where(workers, scheduler) -> str:
    """Where the runs went, for a progress summary."""
    return ("here" if scheduler is None and workers is None else
            f"on {workers} local workers" if workers else f"on {scheduler}")


def command(**settings):
    """Register a subcommand whose croqvm errors and interrupts become a message and an
    exit status."""
    def register(fn):
        return app.command(cls=_Command, **settings)(reported(fn))
    return register


@command(help="Report every error and warning of a source file: whatever compile would "
              "reject, all at once.")
def check(file: File, defines: Defines = None):
    import croqvm

    from ..bytecode.cqb import decode
    from ..core.diagnostics import render_all
    source = read_program(file)
    if source.bytecode is not None:
        if defines:
            raise errors.ArgumentError(f"-D does nothing to {file}: a .cqb file holds "
                                       f"compiled code")
        module = decode(source.bytecode, file)
        names = ", ".join(f.name for f in module.functions)
        print(f"{file}: ok: verified bytecode, {len(module.functions)} function(s) ({names})")
        return
    tree, diags, sources = croqvm.check(source.text, file, parse_defines(defines), bodies=False)
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
def compile(file: File,
            output: Annotated[str | None, typer.Option(
                "-o", "--output", metavar="FILE.cqb",
                help="Where to write (default: FILE with the suffix .cqb).")] = None,
            defines: Defines = None):
    if read_program(file).bytecode is not None:
        raise errors.ArgumentError(f"{file} is already bytecode; compile takes a .co file")
    out = os.path.splitext(file)[0] + ".cqb" if output is None else output
    check_output(out, "-o", {file: "the source file"})
    program = load_program(file, defines, "compile")
    program.save(out)
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


@command(help="Print the bytecode of every function, with source positions.")
def disasm(file: File, defines: Defines = None):
    from ..bytecode.disasm import disassemble
    print(disassemble(load_program(file, defines, "disassemble").module))


@command(help=RUN_HELP)
def run(
        file: File,
        func: Annotated[str | None, typer.Option(
            metavar="NAME",
            help="The function to run (default: every one without parameters).")] = None,
        inputs: Annotated[list[str] | None, typer.Option(
            "--input", metavar="NAME=FILE",
            help="A parameter's value: FILE.npy, FILE.npz (its array NAME) or "
                 "FILE.npz:KEY.")] = None,
        random_inputs: Annotated[bool, typer.Option(
            "--random-inputs",
            help="Random values for the parameters without --input (see above).")] = False,
        seed: Seed = None,
        dims: Dims = None,
        output: Annotated[str | None, typer.Option(
            metavar="FILE.npz", help="Save the results and inputs here.")] = None,
        expect: Annotated[str | None, typer.Option(
            metavar="REF.npz",
            help="Compare the results with REF; exit status 3 if they differ.")] = None,
        rtol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Relative tolerance of --expect (default 1e-5; integers: exact).")] = None,
        atol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Absolute tolerance of --expect (default 1e-8; integers: exact).")] = None,
        schedule: Annotated[str, typer.Option(
            **values.one_of(*SCHEDULES), show_default=True,
            help="Warp order: round-robin, or seeded random.")] = "rr",
        schedule_seed: Annotated[int | None, typer.Option(
            parser=values.seed, metavar="N",
            help="Seed of --schedule random (default 0).")] = None,
        poison: Annotated[bool, typer.Option(
            "--poison",
            help="The same as --check init.")] = False,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*RUN_CHECKS),
            help="race: report the data races of the run; init: reads of registers, and "
                 "of elements of a DMA's own buffer, that nothing wrote (declared buffers "
                 "start zeroed); exit status 3. none: no check. Default: race on the "
                 "native engine (about 1.0 to 1.6 times the CPU time of an unchecked run); "
                 "none on --engine python and other devices (README: Finding races).")] = None,
        replay: Annotated[str | None, typer.Option(
            metavar="FILE",
            help="Run again, exactly, the call a replay file of 'croqvm explore --record' "
                 "or 'croqvm sweep --record' holds: its function, inputs, dims, schedule "
                 "and check (options that give them again must agree with it).")] = None,
        max_steps: Annotated[int | None, typer.Option(
            parser=values.count, metavar="N",
            help="Stop with a runtime error after N warp-instructions, on cuda-cpu "
                 "after N loop iterations of a lane (default: no limit).")] = None,
        watchdog: Annotated[float, typer.Option(
            **values.at_least(0, float), show_default=True, metavar="SECONDS",
            help="Note the loop a block is in once it has run this long (0: "
                 "never).")] = DEFAULT_WATCHDOG,
        progress: Annotated[bool, typer.Option(
            "--progress",
            help="Print progress lines even when stderr is not a terminal, from the "
                 "start.")] = False,
        quiet: Annotated[bool, typer.Option(
            "--quiet", help="No progress line and no summary of results.")] = False,
        device: Annotated[str, typer.Option(
            **values.one_of(*DEVICES), show_default=True,
            help="Where kernels run: cpu (the lane-accurate interpreter), cuda-cpu (the "
                 "generated CUDA compiled for the CPU), gpu (compiled by nvcc).")] = "cpu",
        engine: Annotated[str | None, typer.Option(
            **values.one_of(*ENGINES),
            help="The interpreter: native (C) or python (the reference engine). Default: "
                 "native, or python where native is not built.")] = None,
        jobs: Annotated[int | None, typer.Option(
            **values.at_least(1), metavar="N",
            help="Threads a launch's blocks run on (native engine; default: the "
                 "cores, but one for a kernel that prints, whose output then "
                 "streams).")] = None,
        debug_on_fault: Annotated[bool, typer.Option(
            "--debug-on-fault",
            help="On a runtime error, run the call again under the debugger (croqvm debug) "
                 "and stop at the error, its state live.")] = False,
        verbose: Verbose = False,
        defines: Defines = None):
    run_command.run(file, func=func, inputs=inputs, random_inputs=random_inputs, seed=seed,
                    dims=dims, output=output, expect=expect, rtol=rtol, atol=atol,
                    schedule=schedule, schedule_seed=schedule_seed, poison=poison, check=check,
                    replay=replay, max_steps=max_steps, watchdog=watchdog, progress=progress,
                    quiet=quiet, device=device, engine=engine, jobs=jobs,
                    debug_on_fault=debug_on_fault, verbose=verbose, defines=defines)


@command(help="Step through a function as it runs on the reference engine: breakpoints, "
              "watchpoints, every lane's values, stepping back (README: Stepping through a "
              "kernel).")
def debug(
        file: File,
        func: OneFunc = None,
        inputs: Inputs = None,
        random_inputs: RandomInputs = False,
        seed: Seed = None,
        dims: Dims = None,
        schedule: Schedule = "rr",
        schedule_seed: ScheduleSeed = None,
        poison: Poison = False,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*CHECKS[1:]),
            help="race or init, as for run ('break race' stops at a race).")] = None,
        max_steps: MaxSteps = None,
        script: Annotated[str | None, typer.Option(
            metavar="FILE",
            help="Read the commands from FILE, echoing each; at its end the run goes on to "
                 "its end. Without it the commands come from the terminal.")] = None,
        fast_forward: Annotated[bool, typer.Option(
            "--fast-forward/--no-fast-forward",
            help="Run the kernel blocks the session can not stop in on the native engine "
                 "(README: Stepping through a kernel); --no-fast-forward runs every block "
                 "on the reference engine.")] = True,
        defines: Defines = None):
    inputs, dims = inputs or [], dims or []
    # there is always a function to give arguments to: --func, else the default one
    check_run_options(func or "(the default)", inputs, random_inputs, seed, dims, None, None, None,
                       schedule, schedule_seed, False, False)
    program = load_program(file, defines, "debug")
    func, args, dim_values = _one_call(program, file, func, inputs, dims, random_inputs, seed)
    lines = None
    if script is not None:
        try:
            with open(script, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise errors.ArgumentError(f"--script {script}: {e.strerror}") from None
    raise SystemExit(debug_session(program, func, args, dim_values, lines, script,
                            dict(schedule=schedule, seed=schedule_seed or 0, poison=poison,
                                 check=check, max_steps=max_steps, fast_forward=fast_forward)))


def _one_call(program, file, func, inputs, dims, random_inputs, seed):
    """The call debug and trace make: ``func``, else the first function without
    parameters; its arguments and dimensions as run builds them."""
    if func is None:
        fn = next((f for f in program.functions if not f.params), None)
        if fn is None:
            raise errors.ArgumentError(f"every function of {file} takes parameters; choose "
                                       f"one with --func NAME and give its arguments")
        func = fn.name
    from ..running.inputs import load_inputs, parse_dims
    _, args, dim_values = arguments(program, file, func, load_inputs(list(inputs)),
                                     parse_dims(list(dims)), random_inputs, seed or 0)
    return func, args, dim_values


@command(help="Run a function and write its timeline, a Trace Event "
              "Format file for ui.perfetto.dev or chrome://tracing: a track per warp, slices "
              "per statement, waits, copies and flows, timed by a cost model (README: Seeing "
              "the timeline; docs/TRACE.md).")
def trace(
        file: File,
        func: OneFunc = None,
        inputs: Inputs = None,
        random_inputs: RandomInputs = False,
        seed: Seed = None,
        dims: Dims = None,
        schedule: Schedule = "rr",
        schedule_seed: ScheduleSeed = None,
        poison: Poison = False,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*CHECKS[1:]), help="race or init, as for run.")] = None,
        max_steps: MaxSteps = None,
        engine: Annotated[str | None, typer.Option(
            **values.one_of(*ENGINES),
            help="The interpreter that runs it: native (C) or python (the reference "
                 "engine); both give the same timeline. Default: native, or python for "
                 "--check race and where native is not built.")] = None,
        output: Annotated[str | None, typer.Option(
            "-o", "--output", metavar="FILE.json",
            help="Where to write the trace; gzip-compressed when the name ends in .json.gz "
                 "(default: FILE with the suffix .trace.json).")] = None,
        cost: Annotated[str | None, typer.Option(
            metavar="FILE.toml",
            help="Cost-model numbers replacing the H100 defaults (docs/TRACE.md).")] = None,
        stats: Annotated[bool, typer.Option(
            "--stats", help="Print each statement's lane-instructions, divergence, cycles "
                            "and wait, the most expensive first.")] = False,
        png: Annotated[str | None, typer.Option(
            metavar="FILE.png", help="Also draw the timeline (needs matplotlib).")] = None,
        defines: Defines = None):
    inputs, dims = inputs or [], dims or []
    from ..trace import CostModel, load, record
    from ..trace.output import TraceFile, draw, stats_table
    check_run_options(func or "(the default)", inputs, random_inputs, seed, dims, None, None,
                       None, schedule, schedule_seed, False, False)
    out = os.path.splitext(file)[0] + ".trace.json" if output is None else output
    if not (out.endswith(".json") or out.endswith(".json.gz")):
        raise errors.ArgumentError(f"-o {out}: a trace file is named .json or .json.gz")
    check_output(out, "-o", {file: "the program file"})
    if png is not None:
        check_output(png, "--png", {file: "the program file", out: "the trace file"})
        try:
            import matplotlib  # noqa: F401  (drawn after the run; missing: say so now)
        except ImportError:
            raise errors.ArgumentError("--png needs matplotlib, which is not installed "
                                       "(pip install matplotlib)") from None
    model = CostModel() if cost is None else load(cost)
    program = load_program(file, defines, "trace")
    func, args, dim_values = _one_call(program, file, func, inputs, dims, random_inputs, seed)
    trace_file = TraceFile(out)
    try:    # the picture needs the slices: the file is then written after the run
        timeline = record(program, func, args, dim_values, cost=model, schedule=schedule,
                          seed=schedule_seed or 0, poison=poison, check=check,
                          max_steps=max_steps, keep_on_fault=True, engine=engine,
                          file=None if png else trace_file)
    except BaseException:
        trace_file.discard()
        raise
    sys.stdout.flush()
    events = trace_file.close(timeline)
    print(f"wrote {out}: {events} events, {len(timeline.processes) - 1} block(s), "
          f"{timeline.end / (model.clock_ghz * 1000):.3f} us of modelled time",
          file=sys.stderr)
    if png is not None:
        draw(timeline, png)
        print(f"wrote {png}", file=sys.stderr)
    if stats:
        print(stats_table(timeline))
    if timeline.error is not None:     # the trace up to it is written: reported as run does
        raise timeline.error


@command(name="emit-cuda", help="Write the CUDA C++ the generator makes of a file's kernels: "
                                "one CQ_KERNEL per kernel, each statement with its source "
                                "line, and the runtime it calls, so that 'nvcc -arch=ARCH "
                                "-cubin FILE.cu' compiles it as it is.")
def emit_cuda(
        file: File,
        output: Annotated[str | None, typer.Option(
            "-o", "--output", metavar="FILE.cu",
            help="Where to write (default: FILE with the suffix .cu).")] = None,
        arch: Annotated[str, typer.Option(
            **values.one_of("sm_80", "sm_90a"), show_default=True,
            help="The GPU architecture to generate for.")] = "sm_80",
        checks: Annotated[bool, typer.Option(
            "--checks/--no-checks", show_default=True,
            help="Bounds checks of every element access in the generated code.")] = True,
        defines: Defines = None):
    from ..cuda.compile import standalone
    from ..cuda.emit import emit
    out = os.path.splitext(file)[0] + ".cu" if output is None else output
    check_output(out, "-o", {file: "the program file"})
    program = load_program(file, defines, "translate")
    generated, origin, rest = emit(program.module, arch=arch, checks=checks).text.split("\n", 2)
    usage = (f"// The croqvm runtime is written into this file, which compiles by itself: "
             f"nvcc -arch={arch} -cubin {os.path.basename(out)}")
    text = "\n".join([generated, origin, usage, standalone(rest)])
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {out} ({len(text.splitlines())} lines)")


@command(help="Run a function on the interpreter (the native engine, or --reference "
              "python) and on another engine or device with the same inputs; say whether "
              "they agree, else list the first differences (exit status 3). Both runs "
              "stopping with the same runtime error is reported as such, with status 3.")
def diff(
        file: File,
        func: Annotated[str, typer.Option(metavar="NAME", help="The function to run.")],
        inputs: Inputs = None,
        random_inputs: Annotated[bool, typer.Option(
            "--random-inputs",
            help="Random values for the parameters without --input, as for run.")] = False,
        seed: Seed = None,
        dims: Dims = None,
        against: Annotated[str, typer.Option(
            **values.one_of("python", "native", "cuda-cpu", "gpu"), show_default=True,
            help="What to compare with.")] = "cuda-cpu",
        reference: Annotated[str, typer.Option(
            **values.one_of("native", "python"), show_default=True,
            help="The interpreter whose run is the reference (against native: python).")
            ] = "native",
        rtol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Relative tolerance for floats (default: 0; against gpu, with --atol not "
                 "given either, each result's own, from its type and, for MMAs, K: "
                 "docs/CUDA.md, Tolerances).")] = None,
        atol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Absolute tolerance for floats (default: 0, or derived as --rtol is).")
            ] = None,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*RUN_CHECKS),
            help="Check the reference run as run --check does (its report is the error, "
                 "exit status 3); by default as run does.")] = None,
        verbose: Verbose = False,
        defines: Defines = None):
    inputs, dims = inputs or [], dims or []    # typer gives None for none given
    from ..running.diff import comparison, reference_for
    from ..running.inputs import load_inputs, parse_dims
    cuda_verbose(verbose)
    program = load_program(file, defines, "run")
    fn, args, dim_values = arguments(program, file, func, load_inputs(list(inputs)),
                                      parse_dims(list(dims)), random_inputs, seed or 0)
    engine = reference_for(against, reference)
    if check is None:
        check = default_check("cpu", engine)
    found = comparison(program, func, *args, against=against, reference=reference, rtol=rtol,
                       atol=atol, check=None if check == "none" else check, **dim_values)
    if found.both_fault:      # alike, but no results to compare: not a success
        print(f"{func}: {against} and the {engine} engine both fault alike:\n"
              f"{found.reference.error.rstrip()}", file=sys.stderr)
        raise SystemExit(EXIT_MISMATCH)
    if not found.mismatches:
        print(f"{func}: {against} agrees with the {engine} engine")
        return
    print(f"{func}: {against} differs from the {engine} engine:", file=sys.stderr)
    for m in found.mismatches:
        print(f"  {m}", file=sys.stderr)
    raise SystemExit(EXIT_MISMATCH)


@command(help="Run a function under N seeded random schedules with the same inputs and "
              "group the outcomes (results, printed text, runtime error) with their seeds; "
              "exit status 3 when they differ or a run stops with a runtime error.")
def explore(
        file: File,
        func: Annotated[str | None, typer.Option(
            metavar="NAME",
            help="The function to run (default: the file's only function).")] = None,
        inputs: Inputs = None,
        random_inputs: Annotated[bool, typer.Option(
            "--random-inputs",
            help="Random values for the parameters without --input, drawn once, as for "
                 "run.")] = False,
        seed: Seed = None,
        dims: Dims = None,
        seeds: Annotated[int, typer.Option(
            parser=values.count, metavar="N",
            help="How many schedules: the schedule seeds 0 to N-1.")] = ...,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*RUN_CHECKS),
            help="Check every run, as run --check does; by default as run does (a replay "
                 "file records the check its run made).")] = None,
        record: Annotated[str | None, typer.Option(
            metavar="DIR",
            help="Write a replay file (for run --replay) of each schedule whose outcome is "
                 "not the usual one, or that stops with a runtime error.")] = None,
        workers: Workers = None,
        scheduler: Scheduler = None,
        task_timeout: TaskTimeout = None,
        no_progress: NoProgress = False,
        defines: Defines = None):
    inputs, dims = inputs or [], dims or []    # typer gives None for none given
    from ..running.explore import deviating, group, run_seeds, write_replay
    from ..running.inputs import inputs_used, load_inputs, parse_dims
    from ..sweep.progress import Progress
    if seed is not None and not random_inputs:
        raise errors.ArgumentError("--seed seeds --random-inputs")
    program = load_program(file, defines, "run")
    if func is None:
        if len(program.functions) != 1:
            names = ", ".join(f.name for f in program.functions)
            raise errors.ArgumentError(f"{file} has several functions ({names}): choose one "
                                       f"with --func NAME")
        func = program.functions[0].name
    fn, args, dim_values = arguments(program, file, func, load_inputs(list(inputs)),
                                      parse_dims(list(dims)), random_inputs, seed or 0)
    check = default_check("cpu", None) if check is None else \
        None if check == "none" else check
    executor = _executor(workers, scheduler, task_timeout)
    runs, stop = [], None
    with Progress(seeds, "runs", show=False if no_progress else None) as bar:
        try:
            for run in run_seeds(program, fn, args, dim_values, range(seeds), check,
                                 executor):
                runs.append(run)
                bar.advance()
        except KeyboardInterrupt as interrupt:   # what ended is reported, then the interrupt
            stop = interrupt
    if bar.show and stop is None:
        print(f"explore: {bar.summary(_where(workers, scheduler))}", file=sys.stderr)
    groups = group(runs)
    print(f"explore: '{func}' under {seeds} random schedules (seeds 0-{seeds - 1})")
    for n, (outcome, which, results) in enumerate(groups, 1):
        _print_outcome(n, outcome, which, results)
    if stop is not None:
        at = f" {stop.position.describe()}" if isinstance(stop, Interrupted) else ""
        print(f"explore: interrupted{at}, {len(runs)} of {seeds} runs done", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED)
    late = deviating(groups)
    if record is not None and late:
        os.makedirs(record, exist_ok=True)
        used = inputs_used(fn, args)
        for s in late:
            path = os.path.join(record, f"{func}.seed{s}.replay")
            write_replay(path, program, file, fn, used, dim_values, s, check,
                         parse_defines(defines))
            print(f"wrote {path}")
    if len(groups) > 1:
        print(f"explore: the results differ between schedules ({len(groups)} outcomes in "
              f"{seeds} runs)", file=sys.stderr)
        raise SystemExit(EXIT_MISMATCH)
    if late:
        print("explore: every schedule stops with the same runtime error", file=sys.stderr)
        raise SystemExit(EXIT_MISMATCH)
    print("explore: every schedule gives the same outcome")


SWEEP_HELP = """Run a function at every point of a grid of symbolic dimensions, on the
interpreter, and group the points that fault or differ by signature, each group with its
smallest point; exit status 3 when a point fails (docs/SWEEP.md).

\b
--dim NAME=START:STOP:STEP gives START to STOP inclusive (64:1024:64 is
64, 128, ..., 1024), NAME=A,B,C those values, NAME=N one; the points are
their cartesian product. Each point gets random inputs (as run
--random-inputs draws them) from its own seed, derived from --seed and
the point's values. A point runs under round-robin; with --against, the
same call on another target must agree with it (as diff compares); with
--schedules N, under the random schedules 0 to N-1 too."""


@command(help=SWEEP_HELP)
def sweep(
        file: File,
        func: Annotated[str, typer.Option(metavar="NAME", help="The function to run.")],
        dims: Annotated[list[str], typer.Option(
            "--dim", metavar="NAME=VALUES",
            help="A symbolic dimension's values: START:STOP:STEP, A,B,C or N "
                 "(repeatable).")],
        inputs: Inputs = None,
        seed: Annotated[int | None, typer.Option(
            parser=values.seed, metavar="N",
            help="Seed the points' inputs are drawn from (default 0).")] = None,
        against: Annotated[str | None, typer.Option(
            **values.one_of("python", "native", "cuda-cpu", "gpu"),
            help="Compare every point with this target, as diff does.")] = None,
        rtol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Relative tolerance of --against, as for diff.")] = None,
        atol: Annotated[float | None, typer.Option(
            parser=values.tolerance, metavar="X",
            help="Absolute tolerance of --against, as for diff.")] = None,
        check: Annotated[str | None, typer.Option(
            **values.one_of(*CHECKS[1:]),
            help="Check every run, as run --check does (sweep has no default check: "
                 "without it the points run unchecked).")] = None,
        schedules: Annotated[int | None, typer.Option(
            parser=values.count, metavar="N",
            help="Also run every point under the random schedules 0 to N-1.")] = None,
        engine: Annotated[str | None, typer.Option(
            **values.one_of(*ENGINES),
            help="The interpreter, as for run (default: native, or python for "
                 "--check).")] = None,
        max_steps: MaxSteps = None,
        record: Annotated[str | None, typer.Option(
            metavar="DIR",
            help="Write a replay file (for run --replay) of each group's smallest "
                 "point.")] = None,
        json_output: Annotated[bool, typer.Option(
            "--json", help="Print the report as JSON.")] = False,
        workers: Workers = None,
        scheduler: Scheduler = None,
        task_timeout: TaskTimeout = None,
        no_progress: NoProgress = False,
        defines: Defines = None):
    import json

    from ..bytecode.cqb import encode
    from ..running.diff import reference_for
    from ..running.inputs import load_inputs
    from ..running.program import CHECKING, default_engine
    from ..sweep import points as grid
    from ..sweep import report
    from ..sweep.progress import Progress
    from ..sweep.task import Job, arguments, run_point
    if (rtol is not None or atol is not None) and against is None:
        raise errors.ArgumentError("--rtol and --atol are the tolerances of --against")
    engine = engine or default_engine("cpu", check)
    if against is not None:     # as diff: against the native engine, the reference is python
        engine = reference_for(against, engine)
    if check is not None and engine not in CHECKING[check]:
        raise errors.ArgumentError(f"--check {check} runs on the "
                                   f"{' and '.join(CHECKING[check])} engines only: use "
                                   f"--engine {CHECKING[check][-1]} with it")
    if record is not None and os.path.exists(record) and not os.path.isdir(record):
        raise errors.ArgumentError(f"--record {record}: not a directory")
    dim_values = grid.parse_dims(list(dims))
    executor = _executor(workers, scheduler, task_timeout)
    program = load_program(file, defines, "run")
    fn = program.function(func)
    if fn is None:
        known = ", ".join(f.name for f in program.functions)
        raise errors.ArgumentError(f"no function '{func}' in {file} (functions: {known})")
    symbolic = [name for name, _ in fn.dims]
    for name in dim_values:
        if name not in symbolic:
            raise errors.ArgumentError(
                f"--dim {name}: '{func}' has no symbolic dimension '{name}' (it has: "
                f"{', '.join(symbolic) or 'none'})")
    job = Job(encode(program.module), func, seed or 0, load_inputs(list(inputs or [])),
              engine, check, max_steps, against, rtol, atol, schedules or 0)
    points = grid.product(dim_values)
    arguments(program, job, points[0])    # what every point needs is there: say it now
    values, stop = [None] * len(points), None
    with Progress(len(points), "points", show=False if no_progress else None) as bar:
        try:
            for index, value in executor.map_unordered(run_point, job, points):
                values[index] = value
                bar.advance()
        except KeyboardInterrupt as interrupt:   # what ended is reported, then the interrupt
            stop = interrupt
    if bar.show and stop is None:
        print(f"sweep: {bar.summary(_where(workers, scheduler))}", file=sys.stderr)
    done = [i for i, value in enumerate(values) if value is not None]
    points = [points[i] for i in done]     # in point order, whatever order they ended in
    results = [report.as_result(values[i]) for i in done]
    groups = report.group(points, results)
    replays = None
    if record is not None:
        replays = report.write_replays(record, program, file, job, groups, parse_defines(defines))
    if json_output:
        print(json.dumps(report.as_json(file, job, dim_values, points, results, groups,
                                        replays), indent=2))
    else:
        print(report.text(file, job, dim_values, points, results, groups, replays))
    if stop is not None:
        at = f" {stop.position.describe()}" if isinstance(stop, Interrupted) else ""
        print(f"sweep: interrupted{at}, {len(done)} of {len(values)} points done",
              file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED)
    if groups:
        raise SystemExit(EXIT_MISMATCH)


SHOWN_LINES = 10     # of what a run printed, in explore's outcomes


def _print_outcome(n: int, outcome, seeds: list, results: dict) -> None:
    from ..reports.messages import format_lanes
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



def run_app(args: list) -> int:
    """Run the typer app on ``args``, the command line after the program's name; returns
    the exit status."""
    try:
        typer.main.get_command(app).main(args=args, prog_name="croqvm")
    except SystemExit as e:   # typer exits with 2 on usage errors, as §15.1 asks
        return e.code if isinstance(e.code, int) else 1
    return 0
