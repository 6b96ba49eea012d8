"""The native engine against the reference engine (STYLE.md rule 8: two engines, one
meaning): every program of programs/ runs on both and must give bit-identical results and
parameters, the same printed text, the same diagnostics and the same statistics, under
the round-robin schedule and random ones. The execution tests themselves run on both
engines through the ``engine`` parameter (tests/engines.py); this module holds what only
makes sense for two engines side by side, and the native build's own contracts."""
from __future__ import annotations

import io
import os
import pathlib
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

import croqvm
from croqvm.bytecode import cqb, schema
from croqvm.running import program
from croqvm.native import driver, extension
from croqvm.native.faults import c_header
from parity import assert_alike, outcome

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "programs"))
from catalog import PROGRAMS  # noqa: E402

EXT = extension()
pytestmark = pytest.mark.skipif(EXT is None, reason="the native extension is not built")


def test_generated_record_header_is_current():
    """native/cq_record.h is written by croqvm/native/faults.py."""
    assert (ROOT / "native" / "cq_record.h").read_text() == c_header()


def test_loading_the_engine_keeps_subnormals():
    """A library built with -ffast-math would switch the process to flush-to-zero."""
    tiny = np.float32(np.finfo(np.float32).smallest_subnormal)
    assert tiny > 0 and tiny * np.float32(3) == np.float32(3) * tiny > tiny


# --------------------------------------------------------------------------- programs/

def _runs():
    for entry in PROGRAMS:
        if entry.stage == "static":
            continue
        for schedule, seed in (("rr", 0), ("random", 1), ("random", 2)):
            yield pytest.param(entry, schedule, seed, id=f"{entry.id}-{schedule}-{seed}")


@pytest.mark.parametrize("entry, schedule, seed", list(_runs()))
def test_program_runs_alike_on_both_engines(entry, schedule, seed, monkeypatch):
    module = croqvm.compile_file(entry.path, defines=entry.defines).module
    funcs = [entry.func] if entry.func else [f.name for f in module.functions if not f.params]
    for func in funcs:
        args, dims = entry.make_args(np.random.default_rng(0), "test") if entry.make_args \
            else ([], {})
        ref = outcome(module, func, args, dims, "python", schedule=schedule, seed=seed)
        got = outcome(module, func, args, dims, "native", schedule=schedule, seed=seed)
        assert_alike(got, ref, func)
        if schedule == "rr" and entry.check is None:
            # race-free up to its end or its error (tests/test_programs.py checks that on
            # the reference engine): the race-checked native run shows the same, and its
            # C detector never hands it to the reference engine
            monkeypatch.setattr(driver, "reference_run", None)
            assert_alike(outcome(module, func, args, dims, "native", check="race"), ref,
                         f"{func}, race-checked")


# --------------------------------------------------------------------------- several threads

BLOCKS = """
__co__ void blocks(global s32 [N] x) {
  parallel b by [N] : block {
    println("block ", b, " starts");
    foreach i in [b * 50]
      x.at(b) += i;
    if (b == 5 || b == 9)
      x.at(b + BAD) = 1;
    println("block ", b, " ends");
  }
}
"""


@pytest.mark.parametrize("bad, max_steps", [(0, None), (100, None), (0, 3000)],
                         ids=["clean", "faults in blocks 5 and 9", "step limit"])
def test_blocks_on_threads_give_the_serial_run(bad, max_steps):
    """A launch's blocks on 4 threads: the same results, output in row-major order, and
    the report of the serial run (the lowest faulting block, the step the limit hits)."""
    module = croqvm.compile(BLOCKS, "blocks.co", {"BAD": str(bad)}).module
    x = np.zeros(16, np.int32)
    ref = outcome(module, "blocks", [x], {}, "python", max_steps=max_steps)
    for jobs in (1, 4):
        got = outcome(module, "blocks", [x], {}, "native", max_steps=max_steps, jobs=jobs)
        assert_alike(got, ref, f"jobs={jobs}")


# --------------------------------------------------------------------------- slices

SPIN = """
__co__ void spin(global s32 [128] a) {
  parallel p by 4 : block, t by [32] : thread {
    if (t == 0) println("block", p, "starts");
    mutable int i = 0;
    while (i >= 0) { a.at(p # t) += 1; }
  }
}
"""


def _start(tmp_path, *options):
    (tmp_path / "spin.co").write_text(SPIN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "croqvm", "run", "spin.co", "--func",
                             "spin", "--random-inputs", "--engine", "native", *options],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _interrupt(proc) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    return err.splitlines()[-1]


def test_a_kernel_prints_while_it_runs_and_ctrl_c_stops_it(tmp_path):
    """The run never ends: the line read is output streamed from the running launch (a
    kernel that prints runs its blocks one after another by default), and the interrupt
    stops the C engine between two slices, saying where it was."""
    proc = _start(tmp_path)
    assert proc.stdout.readline() == "block 0 starts\n"
    assert re.fullmatch(r"interrupted in 'spin', launch 1 \(kernel at spin\.co:3:3\), "
                        r"block \(0\) \(1 of 4\), at spin\.co:6:\d+ \(warp 0, lanes 0-31\), "
                        r"after \d+ warp-instructions", _interrupt(proc))


def test_ctrl_c_stops_blocks_running_on_threads_saying_where_each_was(tmp_path):
    proc = _start(tmp_path, "--jobs", "2", "--progress")
    assert re.match(r"progress: 'spin', launch 1, blocks on threads, [0-4]/4 started, ",
                    proc.stderr.readline())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = err.splitlines()[-3:]      # a line for each of the two threads' blocks
    assert re.fullmatch(r"interrupted in 'spin', launch 1 \(kernel at spin\.co:3:3\), blocks on "
                        r"threads \([2-4] of 4 started\), after \d+ warp-instructions", lines[0])
    blocks = [re.fullmatch(r"  block \((\d)\) \((\d) of 4\) at spin\.co:6:\d+ \(warp 0, "
                           r"lanes 0-31\)", line) for line in lines[1:]]
    assert all(blocks), lines
    numbers = [int(b[1]) for b in blocks]
    assert numbers == sorted(numbers) and all(int(b[2]) == int(b[1]) + 1 for b in blocks)


# --------------------------------------------------------------------------- engine selection

# Runs croqvm's command line in a fresh process whose import of croqvm._native fails as
# an installation without the extension (ModuleNotFoundError) or with a broken one
# (ImportError) does.
WITHOUT_EXTENSION = """
import runpy, sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name == "croqvm._native":
            raise {error}("croqvm._native: simulated")
sys.meta_path.insert(0, Missing())
sys.argv = ["croqvm", *sys.argv[1:]]
runpy.run_module("croqvm", run_name="__main__")
"""
ADD_TWICE = """
__co__ void twice(global s32 [4] x) {
  parallel t by [4] : thread { x.at(t) = x.at(t) + 1; }
  parallel t by [4] : thread { x.at(t) = x.at(t) + 1; }
  println("x", x.at(3));
}
"""


def _croqvm(prelude: str, *args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", prelude, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("error, why", [
    ("ModuleNotFoundError", "the extension croqvm._native was not built (reinstall croqvm "
                            "with 'pip install -e .', which compiles it)"),
    ("ImportError", "the extension croqvm._native does not load (croqvm._native: simulated)")])
def test_without_the_extension_native_is_an_error_and_the_default_python(error, why,
                                                                        tmp_path):
    (tmp_path / "twice.co").write_text(ADD_TWICE)
    prelude = WITHOUT_EXTENSION.format(error=error)
    run = ["run", "twice.co", "--func", "twice", "--random-inputs"]
    chosen = _croqvm(prelude, *run, "--engine", "native", cwd=tmp_path)
    assert chosen.returncode == 2 and chosen.stdout == ""
    assert chosen.stderr.startswith(f"engine 'native' is not available: {why}")
    assert "Traceback" not in chosen.stderr and len(chosen.stderr.splitlines()) == 1
    default = _croqvm(prelude, *run, cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    # two launches, one warning line first; then what the python engine shows
    warning, rest = default.stderr.split("\n", 1)
    assert warning == (f"croqvm: warning: the native engine is not available, running on "
                       f"the python engine: {why}.")
    python = _croqvm(prelude, *run, "--engine", "python", cwd=tmp_path)
    assert python.returncode == 0 and "warning" not in python.stderr
    assert (default.stdout, rest) == (python.stdout, python.stderr)
    assert "x " in default.stdout


def test_a_run_naming_no_engine_runs_on_native(monkeypatch):
    """Without ``engine``, a plain run, one with the init check (``poison=True`` is its
    other name) or a race-checked one that does not race never reaches the Python
    engine's runner."""
    calls = []
    python = program.ENGINES["python"]

    def spy():
        calls.append(True)
        return python()
    monkeypatch.setitem(program.ENGINES, "python", spy)
    prog = croqvm.compile(ADD_TWICE, "twice.co")
    x = np.arange(4, dtype=np.int32)
    prog.run("twice", x, out=io.StringIO())
    assert calls == [] and x.tolist() == [2, 3, 4, 5]
    prog.run("twice", x, check="init", out=io.StringIO())
    prog.run("twice", x, poison=True, out=io.StringIO())
    assert calls == [] and x.tolist() == [6, 7, 8, 9]
    prog.run("twice", x, check="race", out=io.StringIO())
    assert calls == [] and x.tolist() == [8, 9, 10, 11]


def test_the_engine_verifies_only_what_no_one_verified(monkeypatch):
    """C trusts verified modules only (STYLE.md rule 6): a compiled or decoded module
    passed the verifier already, a module made in memory has not."""
    verifying = []
    monkeypatch.setattr(driver, "verify", verifying.append)
    prog = croqvm.compile(ADD_TWICE, "twice.co")
    for module in (prog.module, cqb.decode(cqb.encode(prog.module))):
        croqvm.Program(module).run("twice", np.zeros(4, np.int32), out=io.StringIO())
    assert verifying == []
    made = schema.from_plain(schema.to_plain(prog.module))    # an equal module, unverified
    croqvm.Program(made).run("twice", np.zeros(4, np.int32), out=io.StringIO())
    assert verifying == [made]
