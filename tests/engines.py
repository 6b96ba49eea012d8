"""The engines every execution test runs on (STYLE.md §4: the same tests against every
engine through one parameter, not copies of the tests).

``ENGINES`` names each way of running a module and the ``Program.run`` options that select
it; a new engine or device plugs in by adding one entry here (it is then used wherever
``croqvm.running.program.available`` says it works). A test module that runs code declares
``pytestmark = pytest.mark.usefixtures("engine")``; conftest.py then runs each of its tests
once per selected engine (``pytest --engine NAME``, repeatable; by default every available
one), with that engine active while the test runs. The helpers that run code
(``tests/asm.py``'s ``run`` and ``run`` here) add the active engine's options, and fail
when no engine is active, so a test that runs code can not bypass the parameter. Tests of
the croqvm command pass their command lines through ``cli_options``, which adds the active
engine's options to a ``run``; one without an engine exercises the default engine.
"""
from __future__ import annotations

from contextlib import contextmanager

from croqvm.running.program import available

ENGINES = {
    "python": {"engine": "python"},
    "native": {"engine": "native"},
    "cuda-cpu": {"device": "cuda-cpu"},
}
# run only when asked for (``--engine cuda-cpu``): every test program is compiled by the
# host C++ compiler first, which takes most of a second each; tests/test_cuda_programs.py
# runs the programs of programs/ on cuda-cpu by default
ON_REQUEST = {"cuda-cpu"}

_active: list[str] = []     # the engine of the running test, set by the 'engine' fixture


def usable() -> list[str]:
    """The engines of ``ENGINES`` that work in this installation."""
    return [name for name, opts in ENGINES.items() if available(**opts)]


def default() -> list[str]:
    """The engines tests run on when ``--engine`` does not choose."""
    return [name for name in usable() if name not in ON_REQUEST]


@contextmanager
def active(name: str):
    """Make ``name`` the engine of the helpers while the block runs."""
    _active.append(name)
    try:
        yield
    finally:
        _active.pop()


def options() -> dict:
    """The ``Program.run`` options of the active engine."""
    if not _active:
        raise RuntimeError("this test runs code without an engine: its module needs "
                           "pytestmark = pytest.mark.usefixtures('engine')")
    return dict(ENGINES[_active[-1]])


def interprets(name: str) -> bool:
    """Whether engine ``name`` runs kernels on an interpreter, lane by lane (schedules
    are the interpreters', and their progress lines, watchdog and interrupts count
    warp-instructions), not as CUDA."""
    return "device" not in ENGINES[name]


# options of croqvm run that decide where it runs: the checks run on the interpreters, not
# on a CUDA device
RUN_WHERE = ("--check", "--poison", "--device")


def runs_on_any_engine(argv) -> bool:
    """Whether the croqvm command line ``argv`` is a ``run`` that every engine can do."""
    return argv[:1] == ["run"] and not any(a.split("=")[0] in RUN_WHERE for a in argv)


def cli_options(argv) -> list:
    """``argv`` of the croqvm command with, for a ``run``, the options that choose the
    active engine (``--engine native``, ``--device cuda-cpu``) added; with no engine
    active, ``argv`` as it is: the run gets the command's default engine."""
    argv = [str(a) for a in argv]
    if not _active or argv[:1] != ["run"]:
        return argv
    chosen = ENGINES[_active[-1]].items()
    return argv + [x for key, value in chosen for x in (f"--{key}", value)]


def run(program, func: str, *args, **opts):
    """``program.run(func, *args, **opts)`` on the active engine."""
    return program.run(func, *args, **options(), **opts)
