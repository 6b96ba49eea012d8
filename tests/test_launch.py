"""The executable's own reading of ``croqvm run`` (croqvm/cli/launch.py): every option it
reads gives ``run_command.run`` the values the typer app gives it, whatever it does not
read goes to the app, and a run it reads imports neither typer nor the stages a cached
native run does not use."""
import dataclasses
import importlib
import inspect
import os
import subprocess
import sys

import pytest
import typer

from croqvm.cli import launch, main, run_command
from croqvm.core import records

FORMS = [
    ["run", "p.co"],
    ["run", "p.co", "--func", "f", "--input", "a=x.npy", "--input=b=y.npz:k",
     "--random-inputs", "--seed", "7", "--dim", "N=4", "--dim=M=2"],
    ["run", "--output", "o.npz", "p.co", "--expect=r.npz", "--rtol", "1e-3", "--atol=0"],
    ["run", "p.co", "--schedule", "random", "--schedule-seed", "0x10"],
    ["run", "p.co", "--poison", "--check", "init", "--max-steps", "1e6", "--watchdog", "2.5"],
    ["run", "p.co", "--replay", "r.json", "--progress", "--device", "cuda-cpu", "--engine",
     "python", "--jobs", "3"],
    ["run", "p.co", "--quiet", "--debug-on-fault", "-v", "--verbose", "-D", "N=3", "-DM",
     "--define", "K=", "--define=L(x)=x"],
    ["run", "p.co", "--func", "a", "--func=b", "--check=none", "--watchdog=0"],
]

NOT_READ = [
    [], ["check", "p.co"], ["--version", "run", "p.co"], ["run"], ["run", "a.co", "b.co"],
    ["run", "p.co", "--help"], ["run", "-h", "p.co"], ["run", "p.co", "--seed", "x"],
    ["run", "p.co", "--jobs", "0"], ["run", "p.co", "--check", "all"], ["run", "p.co", "--func"],
    ["run", "p.co", "--func", "--quiet"], ["run", "p.co", "--quiet=yes"],
    ["run", "p.co", "-vD", "N=1"], ["run", "p.co", "--engines", "native"], ["run", "--", "p.co"],
]


RUN = inspect.signature(run_command.run)


def through_the_app(args, monkeypatch) -> dict:
    """The arguments the typer app gives ``run_command.run`` for ``args``."""
    calls = []
    monkeypatch.setattr(run_command, "run", lambda *a, **kw: calls.append((a, kw)))
    assert main.run_app(args) == 0
    (positional, keywords), = calls
    return RUN.bind(*positional, **keywords).arguments


def with_defaults(given: dict) -> dict:
    bound = RUN.bind(**given)
    bound.apply_defaults()
    return bound.arguments


@pytest.mark.parametrize("args", FORMS, ids=" ".join)
def test_every_option_reads_as_the_app_reads_it(args, monkeypatch):
    assert with_defaults(launch.read_run(args)) == through_the_app(args, monkeypatch)


def test_the_options_read_are_the_apps_options():
    command = typer.main.get_command(main.app).commands["run"]
    expected = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        kind = (launch.FLAG if param.is_flag else launch.REPEATED if param.multiple
                else launch.VALUE)
        for name in param.opts:
            expected[name] = (param.name, kind)
    assert {name: spec[:2] for name, spec in launch.run_options().items()} == expected


@pytest.mark.parametrize("args", NOT_READ, ids=" ".join)
def test_what_is_not_read_goes_to_the_app(args):
    assert launch.read_run(args) is None


def test_shell_completion_goes_to_the_app(monkeypatch):
    monkeypatch.setenv(launch.COMPLETION_VARIABLE, "bash_complete")
    assert launch.read_run(["run", "p.co"]) is None


PROGRAM = """\
__co__ void show() {
  parallel p by 2 : block, q by 2 : thread
    println("block", p, "lane", q);
}
"""
# what a cached native run never imports: the typer app, the front end, the reference
# engine proper, the CUDA path, the tools, the narrow float types, hashlib (which loads
# OpenSSL: croqvm.core.digest), json (a program without warnings)
UNUSED = ("typer", "croqvm.cli.main", "croqvm.lang", "croqvm.interp.engine", "croqvm.cuda",
          "croqvm.debug", "croqvm.trace", "croqvm.sweep", "ml_dtypes", "hashlib", "_hashlib",
          "json")


def imported(argv, env) -> set:
    """The modules ``python -m croqvm ARGV`` imports (-X importtime names each)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "croqvm", *argv], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return {line.split("|")[-1].strip() for line in r.stderr.splitlines()
            if line.startswith("import time:")}


def test_a_cached_run_imports_only_what_it_uses(tmp_path):
    source = tmp_path / "show.co"
    source.write_text(PROGRAM)
    env = dict(os.environ, CROQVM_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CROQVM_DISABLE_CACHE", None)
    first = imported(["run", str(source)], env)
    assert "croqvm.lang" in first and "typer" not in first      # compiled, then kept
    again = imported(["run", str(source)], env)
    assert "croqvm.native.driver" in again
    assert [name for name in again if name.startswith(UNUSED)] == []
    # and its records are made without compiling their methods (croqvm.core.records)
    compiled = [f"{cls.__module__}.{cls.__name__}" for name in sorted(again)
                if name.startswith("croqvm.")
                for cls in vars(importlib.import_module(name)).values()
                if dataclasses.is_dataclass(cls) and cls.__module__ == name
                and cls.__repr__.__module__ != records.__name__]
    assert compiled == []
