"""The ``croqvm`` executable (pyproject's ``[project.scripts]``, ``python -m croqvm``).

A ``croqvm run`` whose command line has only the forms ``read_run`` reads runs without
the typer app: importing typer and building the app's commands take longer than running
a small program kept compiled in the cache (bench/startup.py). Every other command line
goes to the app (croqvm/cli/main.py) as it is -- the help, the other commands, an option
or a form of one not read here, a value the option's parser refuses, a missing or extra
argument -- so that what the command accepts and every message it gives stay the app's.
Both paths call croqvm/cli/run_command.py's ``run``, with the same values
(tests/test_launch.py compares them for each option).
"""
from __future__ import annotations

import os
import signal
import sys

from .. import __version__

# how a ``run`` option is given (click's forms, which the app parses): a flag alone; a
# value as ``--name VALUE``, ``--name=VALUE``, ``-D VALUE`` or ``-DVALUE``; a repeatable
# option's values gathered in a list
FLAG, VALUE, REPEATED = "flag", "value", "repeated"
# set, it asks the app for shell completions (typer's _CROQVM_COMPLETE)
COMPLETION_VARIABLE = "_CROQVM_COMPLETE"


def run_options() -> dict:
    """Each option of ``croqvm run`` (main.py's ``run``): its names -> (the parameter of
    ``run_command.run``, how it is given, the parser of its value or None for text)."""
    from ..running.program import DEVICES, ENGINES, SCHEDULES
    from . import values
    from .run_command import RUN_CHECKS
    options = {
        "--func": ("func", VALUE, None),
        "--input": ("inputs", REPEATED, None),
        "--random-inputs": ("random_inputs", FLAG, None),
        "--seed": ("seed", VALUE, values.seed),
        "--dim": ("dims", REPEATED, None),
        "--output": ("output", VALUE, None),
        "--expect": ("expect", VALUE, None),
        "--rtol": ("rtol", VALUE, values.tolerance),
        "--atol": ("atol", VALUE, values.tolerance),
        "--schedule": ("schedule", VALUE, values.one_of(*SCHEDULES)["parser"]),
        "--schedule-seed": ("schedule_seed", VALUE, values.seed),
        "--poison": ("poison", FLAG, None),
        "--check": ("check", VALUE, values.one_of(*RUN_CHECKS)["parser"]),
        "--replay": ("replay", VALUE, None),
        "--max-steps": ("max_steps", VALUE, values.count),
        "--watchdog": ("watchdog", VALUE, values.at_least(0, float)["parser"]),
        "--progress": ("progress", FLAG, None),
        "--quiet": ("quiet", FLAG, None),
        "--device": ("device", VALUE, values.one_of(*DEVICES)["parser"]),
        "--engine": ("engine", VALUE, values.one_of(*ENGINES)["parser"]),
        "--jobs": ("jobs", VALUE, values.at_least(1)["parser"]),
        "--debug-on-fault": ("debug_on_fault", FLAG, None),
        "--verbose": ("verbose", FLAG, None),
        "--define": ("defines", REPEATED, None),
    }
    options["-v"], options["-D"] = options["--verbose"], options["--define"]
    return options


def read_run(args: list) -> dict | None:
    """The keyword arguments of ``run_command.run`` for ``args``, the command line after
    the program's name, or None when it is not a ``run`` whose every word is read here."""
    if args[:1] != ["run"] or os.environ.get(COMPLETION_VARIABLE):
        return None
    options, given, rest = run_options(), {}, list(args[1:])
    while rest:
        word = rest.pop(0)
        if not word.startswith("-"):
            if "file" in given:
                return None             # an extra argument
            given["file"] = word
            continue
        # a long option's value may follow '='; a short one's, its letter
        name, equals, value = word.partition("=") if word.startswith("--") else \
            (word[:2], "", word[2:])
        if name not in options:
            return None
        parameter, kind, parse = options[name]
        if kind == FLAG:
            if equals or value:
                return None             # a flag given a value, or short flags run together
            given[parameter] = True
            continue
        if not (equals or value):
            if not rest or rest[0].startswith("-"):
                return None             # no value, or one that looks like an option
            value = rest.pop(0)
        if parse is not None:
            try:
                value = parse(value)
            except Exception:           # typer's BadParameter: the app reports it
                return None
        if kind == REPEATED:
            given.setdefault(parameter, []).append(value)
        else:
            given[parameter] = value
    return given if "file" in given else None


def main(argv=None) -> int:
    """Run the command with ``argv`` (default: the process's); returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:
        print(f"croqvm {__version__}")
        return 0
    given = read_run(args)
    if given is None:
        from .main import run_app
        return run_app(args)
    from .run_command import reported, run
    try:
        reported(run)(**given)
    except SystemExit as e:     # the statuses the app would give (main.run_app)
        return e.code if isinstance(e.code, int) else 1
    return 0


def _terminated(signum, frame):
    """SIGTERM (``kill``, ``timeout``, a CI job cancelled) unwinds as Ctrl-C does, so
    that a file being written (a trace, growing by a GB a second on a loop that never
    ends) is removed rather than left behind; the status is the signal's, 128 + 15."""
    print("terminated", file=sys.stderr)
    raise SystemExit(128 + signum)


def entry() -> int:
    """The ``croqvm`` executable. Writing into a closed pipe (``croqvm run ... | head``)
    ends it quietly, as it ends any Unix tool, instead of raising BrokenPipeError; a
    SIGTERM ends it as Ctrl-C does (``_terminated``)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _terminated)
    status = main()
    try:    # what is still buffered: the refusal of its write is reported as any other
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as exc:
        from ..core.errors import ArgumentError
        from .run_command import EXIT, STDOUT
        print(f"{STDOUT}: can not write: {exc.strerror or exc}", file=sys.stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)   # the exit's own flush goes nowhere
        return status or EXIT[ArgumentError]
    return status
