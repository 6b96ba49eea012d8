"""The croqvm command as a user runs it: exit statuses, streams, files (LANGUAGE.md §14.1, §15.1)."""
import numpy as np
import pytest

from croqvm.cli.main import main
from engines import cli_options

ADD = """\
__co__ void add_demo() {
  s32 [2, 3] a;
  s32 [2, 3] b {10};
  foreach {i, j} in [2, 3]
    a.at(i, j) = i * 3 + j;
  parallel {i, j} by [2, 3]
    a.at(i, j) += b.at(i, j);
  foreach i in [2]
    println(a.at(i, 0), a.at(i, 1), a.at(i, 2));
}
"""

SCALE = """\
__co__ auto scale(s32 [N] x, s32 k) {
  s32 [N] y;
  parallel b by cdiv(N, 4) : block, t by 4 : thread
    if (b # t < N)
      y.at(b # t) = x.at(b # t) * k;
  return y;
}
"""

OOB = """\
__co__ void oob() {
  s32 [4] v;
  parallel p by 8
    v.at(p) = p;
}
"""


@pytest.fixture
def write(tmp_path):
    def _write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return _write


def test_check_clean_prints_one_line_summary(write, capsys):
    path = write("add.co", ADD)
    assert main(["check", path]) == 0
    out = capsys.readouterr().out
    assert out.strip() == f"{path}: ok: 1 function(s) (add_demo), 0 warning(s)"


def test_check_reports_error_with_position_and_exit_1(write, capsys):
    path = write("bad.co", "__co__ void f() {\n  int x = 1;\n  x = 2;\n}\n")
    assert main(["check", path]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3:3: error: only mutables can be re-assigned (x)." in err
    assert "Traceback" not in err


def test_run_parameterless_function_prints_its_output(write, capsys, engine):
    assert main(cli_options(["run", write("add.co", ADD)])) == 0
    assert capsys.readouterr().out == "10 11 12\n13 14 15\n"


def test_run_without_engine_option_runs_on_the_default_engine(write, capsys):
    assert main(["run", write("add.co", ADD)]) == 0
    assert capsys.readouterr().out == "10 11 12\n13 14 15\n"


def test_run_with_inputs_and_output_file(write, tmp_path, capsys, engine):
    x = np.arange(5, dtype=np.int32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    rc = main(cli_options(["run", write("scale.co", SCALE), "--func", "scale",
                           "--input", f"x={tmp_path / 'x.npy'}", "--random-inputs",
                           "--seed", "3", "--output", str(out)]))
    assert rc == 0
    saved = np.load(out)
    k = int(saved["result"][1])  # y[1] = x[1] * k = k
    np.testing.assert_array_equal(saved["result"], x * k)
    assert "result: int32 [5]" in capsys.readouterr().err


def test_compile_then_run_cqb(write, tmp_path, capsys, engine):
    src = write("add.co", ADD)
    assert main(["compile", src]) == 0
    cqb = src[:-3] + ".cqb"
    assert main(cli_options(["run", cqb])) == 0
    assert capsys.readouterr().out.endswith("10 11 12\n13 14 15\n")


def test_runtime_fault_exits_3_with_lane_and_line(write, capsys, engine):
    path = write("oob.co", OOB)
    assert main(cli_options(["run", path])) == 3
    err = capsys.readouterr().err
    assert f"{path}:4:5: runtime error: out-of-range access v.at(4): index 4 of dimension 0 is not in [0, 4)." in err
    assert "lane 4 (warp 0, lane 4)" in err


def test_skips_functions_with_parameters_with_a_note(write, capsys, engine):
    assert main(cli_options(["run", write("both.co", SCALE + ADD)])) == 0
    assert "note: skipping 'scale': it has parameters" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["run", "missing.co"], "no such file: 'missing.co'"),
    (["check", "{add}", "extra"], "unexpected extra argument"),
    (["frobnicate"], "No such command 'frobnicate'"),
    (["run", "{add}", "--device", "tpu"], "Invalid value for '--device'"),
    (["run", "{add}", "--func", "nope"], "no function 'nope'"),
    (["run", "{scale}", "--func", "scale"], "parameter 'x' of 'scale' needs a value"),
    (["run", "{scale}", "--func", "scale", "--random-inputs"], "give it with --dim N=VALUE"),
    (["run", "{scale}", "--func", "scale", "--dim", "N"], "--dim 'N' must look like NAME=VALUE"),
    (["run", "{scale}", "--func", "scale", "--random-inputs", "--dim", "N=1000000000000"],
     "--dim N=1000000000000: a dimension is an 'int' from 1 to 2147483647"),
])
def test_usage_errors_exit_2(write, capsys, argv, message):
    files = {"{add}": write("add.co", ADD), "{scale}": write("scale.co", SCALE)}
    argv = [files.get(a, a) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_corrupt_cqb_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.cqb"
    bad.write_bytes(b"not a cqb file")
    assert main(["run", str(bad)]) == 1
    assert "malformed .cqb" in capsys.readouterr().err


def test_results_of_parameterless_functions_are_saved_by_name(write, tmp_path, capsys,
                                                              engine):
    path = write("two.co", "__co__ auto ramp() {\n  s32 [3] r;\n  foreach i in [3]\n"
                           "    r.at(i) = i * 2;\n  return r;\n}\n"
                           "__co__ void hello() {\n  println(1);\n}\n")
    out = tmp_path / "two.npz"
    assert main(cli_options(["run", path, "--output", str(out)])) == 0
    saved = np.load(out)
    assert list(saved) == ["ramp"]
    np.testing.assert_array_equal(saved["ramp"], [0, 2, 4])
    assert capsys.readouterr().out == "1\n"


def test_an_internal_error_exits_4(write, capsys, monkeypatch):
    import croqvm
    from croqvm.core.errors import InternalError

    def broken(*args, **kwargs):
        raise InternalError("add.co:1:1: error: internal error: KeyError: 3")
    monkeypatch.setattr(croqvm, "compile", broken)
    assert main(["run", write("add.co", ADD)]) == 4
    assert capsys.readouterr().err == "add.co:1:1: error: internal error: KeyError: 3\n"


def test_an_unexpected_exception_is_an_internal_error_with_its_traceback(write, capsys,
                                                                         monkeypatch):
    import croqvm

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(croqvm, "compile", broken)
    assert main(["run", write("add.co", ADD)]) == 4
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith("ZeroDivisionError: a bug\ncroqvm: internal error: this is a bug in "
                        "croqvm; please report it with the traceback above\n")
