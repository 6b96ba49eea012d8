"""The command lines in the headers of programs/ work as written, as a new user would run
them: exit status 0 for valid programs, 3 for runtime faults, 1 for static errors. Each
``croqvm run`` that any engine can do runs once per engine (tests/engines.py)."""
import re
import shlex
from pathlib import Path

import pytest

from croqvm.cli.main import main
from engines import cli_options, runs_on_any_engine

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"^//\s*(?:(?:Run|Check):)?\s*(croqvm .*?)\s*(?:\(exit status (\d)\))?\s*$")


def header_commands():
    for path in sorted((ROOT / "programs").rglob("*.co")):
        for line in path.read_text().splitlines():
            if not line.startswith("//"):
                break
            m = COMMAND.match(line)
            if m:
                argv = shlex.split(m.group(1))[1:]
                broken = "broken" in path.parts
                status = int(m.group(2)) if m.group(2) else (
                    (3 if argv[0] == "run" else 1) if broken else 0)
                yield pytest.param(argv, status, id=" ".join(argv))


COMMANDS = list(header_commands())
RUNS = [p for p in COMMANDS if runs_on_any_engine(p.values[0])]
OTHERS = [p for p in COMMANDS if p not in RUNS]


def test_every_program_shows_how_to_run_it():
    shown = {Path(p.values[0][1]).name for p in COMMANDS}
    files = {p.name for p in (ROOT / "programs").rglob("*.co")}
    assert shown == files


def exits_as_the_header_says(argv, status, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == status, err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, status", OTHERS)
def test_header_command(argv, status, monkeypatch, capsys):
    exits_as_the_header_says(argv, status, monkeypatch, capsys)


@pytest.mark.parametrize("argv, status", RUNS)
def test_header_run(argv, status, monkeypatch, capsys, engine):
    exits_as_the_header_says(cli_options(argv), status, monkeypatch, capsys)
