"""The public API facade, croqvm.Program (LANGUAGE.md §14.1): what compile/compile_file/load
return, how it chooses device and engine, and the options it checks before any engine
runs; and the layering it allows (the data model never imports an engine)."""
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cuda.driver import gpu_status
import engines
from croqvm.core.errors import ArgumentError

ADD = """
__co__ auto add(s32 [N] a, s32 [N] b) {
  s32 [N] c;
  parallel p by N
    c.at(p) = a.at(p) + b.at(p);
  return c;
}
__co__ void hello() { s8 x = 1.5f; println(x); }
"""


@pytest.fixture(scope="module")
def prog():
    return croqvm.compile(ADD, "add.co")


@pytest.mark.usefixtures("engine")
def test_compile_save_load_and_run(prog, tmp_path):
    path = tmp_path / "add.cqb"
    prog.save(path)
    loaded = croqvm.load(path)
    assert isinstance(loaded, croqvm.Program) and loaded.module.functions == prog.functions
    a, b = np.arange(4, dtype=np.int32), np.full(4, 10, np.int32)
    assert engines.run(loaded, "add", a, b).tolist() == [10, 11, 12, 13]
    out = io.StringIO()
    assert engines.run(prog, "hello", out=out) is None and out.getvalue() == "1\n"


def test_warnings_are_records_and_text(prog, tmp_path):
    assert [d.message for d in prog.diagnostics] == \
        ["implicit conversion from 'f32' to 's8' may lose precision."]
    assert prog.warnings.startswith("add.co:8:30: warning: implicit conversion")
    prog.save(tmp_path / "add.cqb")
    loaded = croqvm.load(tmp_path / "add.cqb")
    assert loaded.diagnostics == [] and loaded.warnings == ""


@pytest.mark.parametrize("options, message", [
    (dict(engine="cuda"), "unknown engine 'cuda': use one of python, native."),
    (dict(device="cuda-cpu", poison=True), "poison mode is not available on device "
                                           "'cuda-cpu': the kernels run as compiled code."),
    (dict(device="cuda-cpu", schedule="random"), "schedule 'random' is not available on "
                                                 "device 'cuda-cpu': the kernels run as "
                                                 "compiled code."),
    (dict(device="tpu"), "unknown device 'tpu': use one of cpu, cuda-cpu, gpu."),
    (dict(check="bounds"), "unknown check 'bounds': use one of race, init."),
    (dict(poison=True, check="race"), "poison mode is check='init', which does not run with "
                                      "check='race'."),
    (dict(schedule="fifo"), "unknown schedule 'fifo': use 'rr' or 'random'."),
    (dict(max_steps=0), "the step limit must be an integer from 1 to 2^63 - 1, not 0."),
    (dict(max_steps=True), "the step limit must be an integer from 1 to 2^63 - 1, not True."),
    (dict(max_steps=2 ** 63), "the step limit must be an integer from 1 to 2^63 - 1, not "
                              "9223372036854775808."),
    (dict(seed=1.5), "a seed must be an integer, not 1.5."),
])
def test_options_are_checked_before_anything_runs(prog, options, message):
    out = io.StringIO()
    with pytest.raises(ArgumentError) as e:
        prog.run("hello", out=out, **options)
    assert str(e.value) == message and out.getvalue() == ""


def test_checks_run_on_the_engines_that_check_only(prog, monkeypatch):
    # An engine without checks (this stand-in records what its runner gets) refuses
    # each check, and poison=True, which is check="init"; native takes both checks.
    calls = []
    monkeypatch.setitem(croqvm.running.program.ENGINES, "other",
                        lambda: lambda *args, **options: calls.append(options))
    with pytest.raises(ArgumentError) as e:
        prog.run("hello", engine="other", check="race")
    assert str(e.value) == "check 'race' runs on the Python and native engines only: " \
                           "use one of them and device='cpu' with it."
    for options in (dict(check="init"), dict(poison=True)):
        with pytest.raises(ArgumentError) as e:
            prog.run("hello", engine="other", **options)
        assert str(e.value) == "check 'init' runs on the Python and native engines only: " \
                               "use one of them and device='cpu' with it."
    assert calls == []
    assert croqvm.running.program.default_engine(check="init") == \
        croqvm.running.program.default_engine(poison=True) == croqvm.running.program.default_engine()
    assert croqvm.running.program.default_engine(check="race") == \
        croqvm.running.program.default_engine()


def test_an_unknown_function_is_an_argument_error(prog):
    with pytest.raises(ArgumentError) as e:
        prog.run("sub")
    assert str(e.value) == "no function named 'sub' in this module."


def test_availability_is_queryable():
    assert croqvm.running.program.available("cpu", "python")
    assert croqvm.running.program.available("cuda-cpu", "python")
    assert croqvm.running.program.available("gpu", "python") == gpu_status()["ok"]
    assert "python" in engines.usable()


def test_the_data_model_and_the_front_end_import_no_engine():
    """ARCHITECTURE.md: data flows one way; only the facade reaches the engines."""
    code = ("import sys, croqvm, croqvm.bytecode.cqb, croqvm.bytecode.disasm, "
            "croqvm.bytecode.lower, croqvm.lang.frontend, croqvm.running.inputs; "
            "print([m for m in sys.modules if m.startswith('croqvm.interp')])")
    root = Path(__file__).resolve().parent.parent       # this checkout's croqvm
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=root)
    assert done.stdout.strip() == "[]"
