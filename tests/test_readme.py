"""The README's commands work as shown: each ``$ croqvm ...`` example prints what the README
shows after it, and each command of the table of broken programs ends with the exit status
the table gives. Files the README introduces (```NAME.co`:`` and a code block) are written
first; commands run in a directory where ``programs/`` is the repository's. Each ``croqvm
run`` that any engine can do runs once per engine (tests/engines.py), and once more on the
default engine, native: it shows the same with the Python engine's runner refused."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from croqvm.running.program import available
from engines import cli_options, runs_on_any_engine

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.S)
FILE = re.compile(r"`([\w.]+\.co)`:\n\n```\n(.*?)```", re.S)
ROW = re.compile(r"^\| `([\w.]+)` \| \w+ \(exit status (\d)\) \| `(croqvm [^`]*)` \|$", re.M)


def examples():
    for m in BLOCK.finditer(README):
        lines = m.group(1).splitlines()
        if lines and lines[0].startswith("$ croqvm "):
            yield pytest.param(lines[0][2:], "".join(x + "\n" for x in lines[1:]),
                               id=lines[0][2:60])


@pytest.fixture(scope="module")
def cwd(tmp_path_factory):
    where = tmp_path_factory.mktemp("readme")
    (where / "programs").symlink_to(ROOT / "programs")
    for name, text in FILE.findall(README):
        (where / name).write_text(text)
    return where


# croqvm's command line with the Python engine's runner replaced by a failure
WITHOUT_PYTHON_ENGINE = """
import runpy, sys
import croqvm.running.program
def refuse():
    raise SystemExit("the python engine was chosen")
croqvm.running.program.ENGINES["python"] = refuse
sys.argv = ["croqvm", *sys.argv[1:]]
runpy.run_module("croqvm", run_name="__main__")
"""


def croqvm(command: str, cwd, start=("-m", "croqvm")):
    """Run ``command`` (a ``run`` on the test's engine, if it has one), after the example
    that writes a file it reads (``--output c.npz`` before ``--expect c.npz``) when this
    process has not run that one yet: tests are spread over processes, each with its
    own directory."""
    for name, writer in WRITERS.items():
        if name in shlex.split(command) and writer != command and not (cwd / name).exists():
            croqvm(writer, cwd)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = cli_options(shlex.split(command)[1:])
    return subprocess.run([sys.executable, *start, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def on_any_engine(params, yes: bool) -> list:
    """The ``params`` whose command (their first value) every engine can run, or the
    others."""
    return [p for p in params
            if runs_on_any_engine(shlex.split(p.values[0])[1:]) == yes]


EXAMPLES = list(examples())
# file -> the example that writes it
WRITERS = {argv[argv.index("--output") + 1]: p.values[0]
           for p in EXAMPLES for argv in [shlex.split(p.values[0])] if "--output" in argv}


@pytest.mark.parametrize("command, shown", on_any_engine(EXAMPLES, False))
def test_example_prints_what_the_readme_shows(command, shown, cwd):
    r = croqvm(command, cwd)
    assert r.stderr + r.stdout == shown or r.stdout + r.stderr == shown


@pytest.mark.parametrize("command, shown", on_any_engine(EXAMPLES, True))
def test_run_example_prints_what_the_readme_shows_on_each_engine(command, shown, cwd, engine):
    r = croqvm(command, cwd)
    assert r.stderr + r.stdout == shown or r.stdout + r.stderr == shown


@pytest.mark.skipif(not available(engine="native"), reason="the native extension is not built")
@pytest.mark.parametrize("command, shown", on_any_engine(EXAMPLES, True))
def test_run_example_shows_the_same_on_the_default_engine_native(command, shown, cwd):
    r = croqvm(command, cwd, start=("-c", WITHOUT_PYTHON_ENGINE))
    assert r.stderr + r.stdout == shown or r.stdout + r.stderr == shown


def test_the_table_of_broken_programs_lists_each_one_with_its_header_command():
    rows = ROW.findall(README)
    assert sorted(name for name, _, _ in rows) == sorted(
        p.name for p in (ROOT / "programs" / "broken").glob("*.co"))
    for name, _, command in rows:
        assert command in (ROOT / "programs" / "broken" / name).read_text()


ROWS = [pytest.param(command, status, id=name) for name, status, command in ROW.findall(README)]


@pytest.mark.parametrize("command, status", on_any_engine(ROWS, False))
def test_broken_program_command_exits_as_the_table_says(command, status, cwd):
    assert croqvm(command, cwd).returncode == int(status)


@pytest.mark.parametrize("command, status", on_any_engine(ROWS, True))
def test_broken_program_run_exits_as_the_table_says_on_each_engine(command, status, cwd,
                                                                    engine):
    assert croqvm(command, cwd).returncode == int(status)
