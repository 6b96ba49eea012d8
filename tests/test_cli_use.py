"""Everyday use of the croqvm command, run as a user runs it (``python -m croqvm`` in a
subprocess): outputs, progress and limits, checkable results, runs that would do nothing,
the size of grids, help and exit statuses. Messages are checked exactly; numeric results
against numpy. The tests whose commands run kernels run once per engine (tests/engines.py:
``--engine NAME`` added to each ``croqvm run``)."""
import io
import os
import re
import resource
import signal
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bytecode_builders as B
from croqvm import compile_file
from croqvm.bytecode import cqb
from croqvm.core.limits import MAX_INT
from engines import cli_options, interprets

ROOT = Path(__file__).resolve().parents[1]

ADD = """\
__co__ auto add(f32 [N] a, f32 [N] b) {
  f32 [N] c;
  parallel p by cdiv(N, 32) : block, t by 32 : thread {
    if (p # t < N)
      c.at(p # t) = a.at(p # t) + b.at(p # t);
  }
  return c;
}
"""

HELLO = """\
__co__ void hello() {
  foreach i in [5000]
    println("line", i);
}
"""

SPIN = """\
__co__ void spin() {
  s32 [32] a;
  parallel t by 32 : thread {
    mutable int i = 0;
    while (i >= 0) { a.at(t) += 1; }
  }
}
"""

DIVIDE = """\
__co__ void divide(global f32 [N] x) {
  parallel t by N : thread
    x.at(t) = x.at(t) / 0.0f;
}
"""

SCALE = """\
__co__ void scale(global f16 [N] x, f32 k) {
  foreach i in [N]
    x.at(i) = x.at(i) * __to<f16>(k);
}
"""


def croqvm(*args, cwd, umask=None):
    """Run the command (a ``run`` on the test's engine, if it has one); return (exit
    status, stdout, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "croqvm", *cli_options(args)], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def work(tmp_path):
    """A directory with the test programs and a few input files."""
    for name, text in (("add.co", ADD), ("hello.co", HELLO), ("spin.co", SPIN),
                       ("divide.co", DIVIDE), ("scale.co", SCALE)):
        (tmp_path / name).write_text(text)
    np.save(tmp_path / "a.npy", np.arange(40, dtype=np.float32))
    np.save(tmp_path / "b.npy", np.full(40, 0.5, np.float32))
    return tmp_path


@pytest.fixture
def interpreter(engine):
    """The test's engine, an interpreter: what the test runs is the interpreters' (random
    schedules, progress lines, the watchdog, Ctrl-C)."""
    if not interprets(engine):
        pytest.skip(f"{engine} runs kernels as compiled CUDA")
    return engine


# ------------------------------------------------------------------ outputs

@pytest.mark.parametrize("output, message", [
    ("nodir/c.npz", "--output nodir/c.npz: can not write: no directory 'nodir'"),
    ("adir", "--output adir: is a directory"),
    ("", "--output: the file name is empty"),
    ("add.co", "--output add.co: this is the program file; writing there would overwrite it"),
    ("a.npy", "--output a.npy: this is an --input file; writing there would overwrite it"),
])
def test_a_bad_output_is_refused_before_the_run(work, output, message):
    (work / "adir").mkdir()
    before = sorted(os.listdir(work))
    status, out, err = croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy",
                              "--input", "b=b.npy", "--output", output, cwd=work)
    assert (status, out, err) == (2, "", message + "\n")   # nothing ran, nothing printed
    assert sorted(os.listdir(work)) == before
    assert (work / "add.co").read_text() == ADD


def test_an_output_that_is_a_pipe_is_written_not_replaced(work):
    # a temporary file renamed over it replaced /dev/full (as root) with a regular file
    fifo = work / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    status, _, err = croqvm("compile", "add.co", "-o", "fifo", cwd=work)
    reader.join(timeout=60)
    assert (status, err) == (0, "")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert croqvm("compile", "add.co", "-o", "add.cqb", cwd=work)[0] == 0
    assert got == [(work / "add.cqb").read_bytes()]
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()     # an archive's writer seeks back: it is made whole, then written
    assert croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy", "--input", "b=b.npy",
                  "--output", "fifo", "--quiet", cwd=work) == (0, "", "")
    reader.join(timeout=60)
    result = np.load(io.BytesIO(got[1]))["result"]
    np.testing.assert_array_equal(result, np.arange(40, dtype=np.float32) + 0.5)


def test_compile_refuses_to_overwrite_its_source(work):
    assert croqvm("compile", "add.co", "-o", "add.co", cwd=work) == (
        2, "", "-o add.co: this is the source file; writing there would overwrite it\n")
    assert (work / "add.co").read_text() == ADD


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_outputs_get_the_permissions_of_the_umask(work, umask):
    assert croqvm("compile", "add.co", cwd=work, umask=umask)[0] == 0
    assert croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy", "--input", "b=b.npy",
                  "--output", "c.npz", "--quiet", cwd=work, umask=umask)[0] == 0
    for name in ("add.cqb", "c.npz"):
        assert (work / name).stat().st_mode & 0o777 == 0o666 & ~umask


# ------------------------------------------------------------------ checkable results

def test_output_holds_results_and_every_input(work, engine):
    status, _, err = croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy",
                            "--random-inputs", "--seed", "7", "--output", "c.npz", cwd=work)
    assert status == 0, err
    saved = np.load(work / "c.npz")
    assert sorted(saved.files) == ["input.a", "input.b", "result"]
    np.testing.assert_array_equal(saved["input.a"], np.arange(40, dtype=np.float32))
    b = saved["input.b"]
    assert b.dtype == np.float32 and b.shape == (40,) and -1 <= b.min() and b.max() < 1
    np.testing.assert_array_equal(saved["result"], saved["input.a"] + b)


def test_summary_shows_range_mean_and_special_values(work, engine):
    np.save(work / "x.npy", np.array([1, -2, 0, 3], np.float32))
    status, _, err = croqvm("run", "divide.co", "--func", "divide", "--input", "x=x.npy",
                            cwd=work)
    assert status == 0
    assert re.fullmatch(r"x: float32 \[4\] 1 NaN, 2 \+inf, 1 -inf, crc32 [0-9a-f]{8}\n", err)
    status, _, err = croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy",
                            "--input", "b=b.npy", cwd=work)
    assert re.fullmatch(r"result: float32 \[40\] min 0.5 max 39.5 mean 20, crc32 [0-9a-f]{8}\n",
                        err)


def test_inputs_come_from_npz_files_by_name_or_key(work, engine):
    np.savez(work / "in.npz", a=np.ones(40, np.float32), other=np.full(40, 2, np.float32))
    status, _, err = croqvm("run", "add.co", "--func", "add", "--input", "a=in.npz",
                            "--input", "b=in.npz:other", "--output", "c.npz", cwd=work)
    assert status == 0, err
    np.testing.assert_array_equal(np.load(work / "c.npz")["result"], np.full(40, 3.0))


@pytest.mark.parametrize("inputs, message", [
    (["b=in.npz"], "--input b=in.npz: 'in.npz' holds no array 'b' (it holds: a, other); "
                   "choose one with b=in.npz:KEY"),
    (["a=a.npy", "a=b.npy"], "--input a is given twice (a=a.npy and a=b.npy)"),
    (["a=text.npy"], "--input a=text.npy: 'text.npy' is not a .npy or .npz file of numbers"),
    (["a=a.npy:x"], "--input a=a.npy:x: no such file: 'a.npy:x'"),
    (["a=f64.npy"], "the 1st parameter ('a') expects dtype float32 but got float64.\n"
                    "hint: convert it with .astype(np.float32)"),
])
def test_input_problems_name_the_file(work, inputs, message):
    np.savez(work / "in.npz", a=np.ones(40, np.float32), other=np.ones(40, np.float32))
    np.save(work / "f64.npy", np.ones(40))
    (work / "text.npy").write_text("1 2 3\n")
    args = [x for spec in inputs for x in ("--input", spec)]
    assert croqvm("run", "add.co", "--func", "add", *args, "--random-inputs",
                  cwd=work) == (2, "", message + "\n")


def _liar(path, shape):
    """A .npy file whose header claims ``shape`` but which holds 4 float32 values."""
    np.save(path, np.ones(4, np.float32))
    data = path.read_bytes()
    path.write_bytes(data.replace(b"(4,)", repr(shape).encode().ljust(4)))


@pytest.mark.parametrize("make, spec, message", [
    (lambda w: _liar(w / "liar.npy", (1 << 40,)), "a=liar.npy",
     "--input a=liar.npy: 'liar.npy' is damaged: its header claims an array of "
     "4398046511104 bytes (float32 [1099511627776]), more than the file holds"),
    (lambda w: _liar(w / "short.npy", (40,)), "a=short.npy",
     "--input a=short.npy: 'short.npy' is damaged: its header claims an array of 160 bytes "
     "(float32 [40]), more than the file holds"),
    (lambda w: (w / "zip.npz").write_bytes(b"PK\x03\x04" + bytes(60)), "a=zip.npz",
     "--input a=zip.npz: 'zip.npz' is a damaged .npz file"),
])
def test_damaged_array_files_are_refused_from_their_headers(work, make, spec, message):
    make(work)
    assert croqvm("run", "add.co", "--func", "add", "--input", spec, "--random-inputs",
                  cwd=work) == (2, "", message + "\n")


def test_damaged_expect_and_replay_files_are_usage_errors(work):
    (work / "zip.npz").write_bytes(b"PK\x03\x04" + bytes(60))
    base = ["run", "add.co", "--func", "add", "--random-inputs", "--dim", "N=4"]
    assert croqvm(*base, "--expect", "zip.npz", cwd=work) == (
        2, "", "--expect zip.npz: 'zip.npz' is a damaged .npz file\n")
    assert croqvm("run", "add.co", "--replay", "zip.npz", cwd=work) == (
        2, "", "--replay: 'zip.npz' is a damaged .npz file\n")


@pytest.mark.parametrize("value, message", [
    (np.int64(2 ** 31), "--input k: 2147483648 is out of range for 'k' (s32: -2147483648 to "
                        "2147483647)"),
    (np.float64("nan"), "--input k: 'k' is s32, but the file holds the float nan; save an "
                        "integer array (e.g. np.int64)"),
    (np.float64(1e300), "--input k: 'k' is s32, but the file holds the float 1e+300; save an "
                        "integer array (e.g. np.int64)"),
])
def test_a_scalar_input_must_be_a_value_of_its_type(work, value, message):
    (work / "k.co").write_text("__co__ s32 k(s32 k) { return k + 1; }\n")
    np.save(work / "k.npy", value)
    assert croqvm("run", "k.co", "--func", "k", "--input", "k=k.npy", cwd=work) == (
        2, "", message + "\n")
    np.save(work / "k.npy", np.int64(-7))
    assert croqvm("run", "k.co", "--func", "k", "--input", "k=k.npy", "--quiet",
                  cwd=work)[0] == 0


@pytest.mark.parametrize("args, message", [
    (["--max-steps", str(2 ** 63)], "the step limit must be an integer from 1 to 2^63 - 1, "
                                    f"not {2 ** 63}."),
    (["--expect", "x.npy", "--rtol", "nan"], "Error: Invalid value for '--rtol': 'nan' is "
                                             "not a tolerance: use a finite number of at least "
                                             "0."),
    (["--expect", "x.npy", "--atol", "-1"], "Error: Invalid value for '--atol': '-1' is not a "
                                            "tolerance: use a finite number of at least 0."),
])
def test_limits_and_tolerances_out_of_range_are_usage_errors(work, args, message):
    status, out, err = croqvm("run", "add.co", "--func", "add", "--random-inputs",
                              "--dim", "N=4", *args, cwd=work)
    assert (status, out, err.splitlines()[-1]) == (2, "", message)


@pytest.mark.parametrize("args, message", [
    (["--device", "cuda-cpu", "--check", "race"], "check 'race' runs on the Python and native "
                                                  "engines only: use one of them and --device "
                                                  "cpu with it."),
    (["--engine", "python", "--jobs", "4"], "--jobs 4 runs on the native engine only: use "
                                            "--engine native with it."),
])
def test_usage_errors_name_options_as_the_command_spells_them(work, args, message):
    assert croqvm("run", "add.co", "--func", "add", "--random-inputs", "--dim", "N=4", *args,
                  cwd=work) == (2, "", message + "\n")


def test_every_missing_dimension_is_named_in_one_message(work):
    matmul = ROOT / "programs" / "matmul_dma.co"
    assert croqvm("run", matmul, "--func", "matmul", "--random-inputs", "--dim", "K=16",
                  cwd=work) == (2, "", "no value for the symbolic dimensions 'M', 'N' of "
                                       "'matmul'; give them with --dim M=VALUE --dim N=VALUE\n")


def test_more_jobs_than_blocks_or_threads_run_as_many_as_are_useful(work):
    want = np.arange(40, dtype=np.float32) + 0.5
    np.save(work / "want.npy", want)
    for jobs in ("512", str(2 ** 40)):
        assert croqvm("run", "add.co", "--func", "add", "--input", "a=a.npy", "--input",
                      "b=b.npy", "--engine", "native", "--jobs", jobs, "--expect", "want.npy",
                      "--quiet", cwd=work) == (0, "", "")


def test_an_f32_array_for_an_f16_parameter_gets_the_conversion_as_a_hint(work):
    np.save(work / "x.npy", np.ones(4, np.float32))
    assert croqvm("run", "scale.co", "--func", "scale", "--input", "x=x.npy",
                  "--random-inputs", cwd=work) == (
        2, "", "the 1st parameter ('x') expects dtype float16 but got float32.\n"
               "hint: convert it with .astype(np.float16)\n")


def test_expect_agrees_and_differs_with_the_first_differences(work, engine):
    args = ["run", "add.co", "--func", "add", "--input", "a=a.npy", "--input", "b=b.npy"]
    want = np.arange(40, dtype=np.float32) + 0.5
    np.savez(work / "good.npz", result=want)
    assert croqvm(*args, "--expect", "good.npz", "--quiet", cwd=work) == (0, "", "")
    wrong = want.copy()
    wrong[[3, 17]] = [0.25, np.nan]
    np.savez(work / "bad.npz", result=wrong)
    assert croqvm(*args, "--expect", "bad.npz", "--quiet", cwd=work) == (3, "", (
        "--expect bad.npz: the results differ\n"
        "'result': 2 of 40 elements differ (rtol 1e-05, atol 1e-08); the first 2:\n"
        "  result[3]: got 3.5, expected 0.25\n"
        "  result[17]: got 17.5, expected nan\n"))
    np.save(work / "near.npy", want * 1.001)
    assert croqvm(*args, "--expect", "near.npy", "--rtol", "0.01", "--quiet",
                  cwd=work)[0] == 0
    assert croqvm(*args, "--expect", "near.npy", "--quiet", cwd=work)[0] == 3


def test_expect_compares_the_inputs_an_earlier_output_recorded(work):
    args = ["run", "add.co", "--func", "add", "--random-inputs", "--dim", "N=40", "--quiet"]
    assert croqvm(*args, "--seed", "1", "--output", "one.npz", cwd=work)[0] == 0
    assert croqvm(*args, "--seed", "1", "--expect", "one.npz", cwd=work) == (0, "", "")
    status, _, err = croqvm(*args, "--seed", "2", "--expect", "one.npz", cwd=work)
    assert status == 3
    assert err.splitlines()[1].startswith("'input.a': 40 of 40 elements differ")


@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "Error: Invalid value for '--seed': '-1' is not a seed: use an integer "
                       "from 0 to 2^64 - 1"),
    (["--seed", "3"], "--seed seeds --random-inputs; the seed of a random schedule is "
                      "--schedule-seed"),
    (["--random-inputs", "--schedule-seed", "3"], "--schedule-seed seeds --schedule random"),
    (["--random-inputs", "--rtol", "0.1"], "--rtol and --atol are the tolerances of --expect"),
])
def test_seed_and_tolerance_misuse_is_a_usage_error(work, args, message):
    status, out, err = croqvm("run", "add.co", "--func", "add", "--dim", "N=4", *args,
                              cwd=work)
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == message


def test_the_schedule_seed_leaves_the_inputs_alone(work, interpreter):
    base = ["run", "add.co", "--func", "add", "--random-inputs", "--seed", "5", "--dim", "N=40",
            "--schedule", "random", "--quiet"]
    assert croqvm(*base, "--schedule-seed", "1", "--output", "one.npz", cwd=work)[0] == 0
    assert croqvm(*base, "--schedule-seed", "2", "--expect", "one.npz", cwd=work)[0] == 0


# ------------------------------------------------------------------ runs that do nothing

@pytest.mark.parametrize("args, message", [
    (["run", "add.co"], "nothing to run in add.co: every function takes parameters (add); "
                        "choose one with --func NAME and give its arguments with --input or "
                        "--random-inputs"),
    (["run", "empty.co"], "empty.co: no __co__ function, nothing to run"),
    (["check", "empty.co"], "empty.co: no __co__ function, nothing to check"),
    (["compile", "empty.co"], "empty.co: no __co__ function, nothing to compile"),
    (["run", "a.npy"], "a.npy: this is a numpy .npy array, not a Croqtile program (give the "
                       "program first: croqvm run FILE.co --input NAME=a.npy)"),
    (["run", "binary.co"], "binary.co: binary data, not a Croqtile source file or .cqb"),
    (["run", "hello.co", "--input", "a=a.npy"], "--input gives a function's arguments: choose "
                                                "the function with --func NAME"),
    (["run", "hello.co", "--random-inputs"], "--random-inputs gives a function's arguments: "
                                             "choose the function with --func NAME"),
    (["run", "add.cqb", "-D", "N=3"], "-D does nothing to add.cqb: a .cqb file holds compiled "
                                      "code, its macros were expanded when it was compiled; "
                                      "pass -D when compiling the .co file"),
    (["compile", "add.cqb"], "add.cqb is already bytecode; compile takes a .co file"),
    (["run", "add.co", "-D", "3X=1"], "-D 3X=1: '3X' is not a macro name (a name, or "
                                      "NAME(PARAMS) for a function-like macro)"),
])
def test_a_run_that_would_do_nothing_is_a_usage_error(work, args, message):
    (work / "empty.co").write_text("// nothing here\n")
    (work / "binary.co").write_bytes(bytes(range(256)) * 4)
    assert croqvm("compile", "add.co", cwd=work)[0] == 0
    assert croqvm(*args, cwd=work) == (2, "", message + "\n")


def test_a_define_the_file_overrides_is_a_warning_naming_both(work):
    (work / "st.co").write_text("#define STAGES 2\n__co__ void f() { println(STAGES); }\n")
    assert croqvm("run", "st.co", "-D", "STAGES=4", cwd=work) == (0, "2\n", (
        "st.co:1:1: warning: macro 'STAGES' redefined: this '#define' overrides "
        "'-D STAGES=4' from the command line.\n"
        "    1 | #define STAGES 2\n"
        "      | ^~~~~~~~~~~~~~~~\n"
        "hint: guard the definition with '#ifndef STAGES' ... '#endif' to let -D choose "
        "the value\n"))


def test_the_output_of_each_function_follows_its_name(work, engine):
    (work / "two.co").write_text("__co__ void f1() { println(1); }\n"
                                 "__co__ void f2() { println(2); }\n")
    r = subprocess.run([sys.executable, "-m", "croqvm", *cli_options(["run", "two.co"])],
                       cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert (r.returncode, r.stdout) == (0, "==> f1 <==\n1\n==> f2 <==\n2\n")
    assert croqvm("run", "two.co", "--quiet", cwd=work) == (0, "1\n2\n", "")
    assert croqvm("run", "two.co", "--func", "f2", cwd=work) == (0, "2\n", "")


def test_a_byte_order_mark_and_crlf_line_ends_are_read_as_text(work):
    (work / "win.co").write_bytes(b"\xef\xbb\xbf__co__ void f() {\r\n  println(1);\r\n}\r\n")
    assert croqvm("check", "win.co", cwd=work) == (
        0, "win.co: ok: 1 function(s) (f), 0 warning(s)\n", "")   # no note about line 1
    assert croqvm("run", "win.co", cwd=work) == (0, "1\n", "")
    assert compile_file(work / "win.co").warnings == ""           # the API reads it so too


def test_functions_after_a_failing_one_are_named(work, engine):
    (work / "three.co").write_text("__co__ void f1() { println(1); }\n"
                                   "__co__ void f2() { s32 [2] v; parallel p by 4 v.at(p) = 1; }\n"
                                   "__co__ void f3() { println(3); }\n")
    status, out, err = croqvm("run", "three.co", cwd=work)
    assert (status, out) == (3, "1\n")
    assert err.splitlines()[0] == "==> f1 <=="
    assert err.splitlines()[-1] == "note: not run after this error: 'f3'"


# ------------------------------------------------------------------ progress and limits

def test_progress_lines_when_asked(work, interpreter):
    status, out, err = croqvm("run", "spin.co", "--max-steps", "100000", "--progress",
                              "--watchdog", "0", cwd=work)
    assert status == 3
    lines = err.splitlines()
    assert lines[0].startswith("progress: 'spin', launch 1, block 1/1 (0%), 65.5k "
                               "warp-instructions, ")
    assert lines[1] == "spin.co:5:5: runtime error: exceeded the step limit of 100000 " \
                       "warp-instructions"


def test_progress_ends_with_a_summary_of_the_work(work, interpreter):
    status, _, err = croqvm("run", "add.co", "--func", "add", "--random-inputs", "--dim",
                            "N=100", "--progress", cwd=work)
    assert status == 0
    assert re.fullmatch(r"progress: done: 1 launch\(es\), 4 block\(s\), \d+ warp-instructions "
                        r"in \d+\.\d s", err.splitlines()[0])


def test_the_watchdog_shows_the_loop_and_lets_the_run_go_on(work, interpreter):
    status, _, err = croqvm("run", "spin.co", "--watchdog", "0.001", "--max-steps", "200000",
                            cwd=work)
    assert status == 3
    lines = err.splitlines()
    assert re.fullmatch(r"spin\.co:5:5: note: block \(0\) of the kernel launched at "
                        r"spin\.co:3:3 has been running for \d+ s \(\d+ warp-instructions\); "
                        r"warp 0, lanes 0-31 is in this loop", lines[0])
    assert lines[1:4] == [
        "    5 |     while (i >= 0) { a.at(t) += 1; }",
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "hint: a loop that never ends runs until Ctrl-C, which says where the run was; "
        "--max-steps N stops a run after N warp-instructions."]
    assert lines[4].endswith("runtime error: exceeded the step limit of 200000 "
                             "warp-instructions")


def test_ctrl_c_says_where_the_run_was(work, interpreter):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = cli_options(["run", "spin.co", "--progress", "--watchdog", "0"])
    proc = subprocess.Popen([sys.executable, "-m", "croqvm", *argv], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()            # the run is in the loop now
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    assert first.startswith("progress: 'spin', launch 1, block 1/1")
    assert re.fullmatch(r"interrupted in 'spin', launch 1 \(kernel at spin\.co:3:3\), block "
                        r"\(0\) \(1 of 1\), at spin\.co:5:\d+ \(warp 0, lanes 0-31\), after "
                        r"\d+ warp-instructions", rest.splitlines()[-1]), rest


def test_help_shows_that_no_step_limit_applies_by_default(work):
    status, out, _ = croqvm("run", "-h", cwd=work)
    assert status == 0
    assert "--max-steps N" in out and "(default: no limit)" in " ".join(out.split())
    assert "<list[str]>" not in out and "<bool>" not in out


def test_version_and_short_help(work):
    from croqvm import __version__
    assert croqvm("--version", cwd=work) == (0, f"croqvm {__version__}\n", "")
    status, out, _ = croqvm("-h", cwd=work)
    assert status == 0 and out.startswith("Usage: croqvm [OPTIONS] COMMAND [ARGS]...")
    assert "4 internal error" in out


def test_a_closed_pipe_ends_the_run_quietly(work, engine):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = " ".join(cli_options(["run", "hello.co"]))
    r = subprocess.run(f"{sys.executable} -m croqvm {command} | head -n 1", shell=True,
                       cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert (r.stdout, r.stderr) == ("line 0\n", "")


def _refusing_writes():
    """In the child: files stop growing at 100 bytes; a write past that fails (EFBIG),
    as on a full disk, instead of the signal ending the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))


def test_standard_output_that_refuses_writes_is_a_usage_error(work, engine):
    # 20,000 lines: more than one write, the first of which is cut short
    (work / "lines.co").write_text(HELLO.replace("5000", "20000"))
    argv = [sys.executable, "-m", "croqvm", *cli_options(["run", "lines.co"])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(work / "out.txt", "w") as out:
        r = subprocess.run(argv, cwd=work, env=env, stdout=out, stderr=subprocess.PIPE,
                           text=True, timeout=120, preexec_fn=_refusing_writes)
    assert (r.returncode, r.stderr) == (2, "standard output: can not write: File too large\n")
    r = subprocess.run(argv, cwd=work, env=env, stdout=subprocess.DEVNULL, text=True,
                       stderr=subprocess.PIPE, timeout=120, pass_fds=(),
                       preexec_fn=lambda: os.close(1))
    assert (r.returncode, r.stderr) == (
        2, "standard output: can not write: the descriptor is closed\n")
    with open(work / "out.txt", "w") as out:     # a command that prints as it goes
        r = subprocess.run([sys.executable, "-m", "croqvm", "disasm",
                            ROOT / "programs" / "matmul_dma.co"], cwd=work, env=env, stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=120,
                           preexec_fn=_refusing_writes)
    assert (r.returncode, r.stderr) == (2, "standard output: can not write: File too large\n")


# Run croqvm's command in a process whose address space ends MB megabytes above what it
# has once everything a run needs is imported: what a command allocates beyond that fails.
UNDER_LIMIT = """
import resource, sys
from croqvm.cli.main import main
main(["run", "small.co", "--quiet"])
with open("/proc/self/status") as f:
    size = next(int(l.split()[1]) for l in f if l.startswith("VmSize")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + int(sys.argv[1]) * 2**20, resource.RLIM_INFINITY))
sys.exit(main(sys.argv[2:]))
"""


def under_limit(work, megabytes: int, *argv):
    (work / "small.co").write_text("__co__ auto small() { s32 [4] c; return c; }\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", UNDER_LIMIT, str(megabytes), *argv], cwd=work,
                       env=env, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_a_native_result_the_memory_left_can_not_hold_is_a_usage_error(work):
    # the engine's buffer (256 MiB, never touched) fits in the limit, its copy does not
    # (unchecked: the race check's shadow of the buffer would not fit either)
    (work / "big.co").write_text("__co__ auto big() {\n  s32 [67108864] c;\n"
                                 "  parallel t by 32 : thread\n    c.at(t) = t;\n"
                                 "  return c;\n}\n")
    assert under_limit(work, 384, "run", "big.co", "--engine", "native", "--check",
                       "none") == (
        2, "", "the result of 'big', s32 [67108864] (268435456 bytes), does not fit in the "
               "memory left to croqvm\n")


def test_a_race_check_shadow_the_memory_left_can_not_hold_is_a_usage_error(work):
    # the default check: the shadow of the 256 MiB buffer (8 bytes an element) does not fit
    (work / "big.co").write_text("__co__ auto big() {\n  s32 [67108864] c;\n"
                                 "  parallel t by 32 : thread\n    c.at(t) = t;\n"
                                 "  return c;\n}\n")
    assert under_limit(work, 384, "run", "big.co") == (
        2, "", "the race check's shadow of a buffer of 67108864 elements (536870920 bytes) "
               "does not fit in the memory left to croqvm; --check none runs without it\n")


def test_an_archive_that_expands_beyond_the_memory_left_is_refused_from_its_header(work):
    # 200 MiB of zeros in 200 KB: a 3 MB archive of this kind took 3.2 GB to read
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (50 * 2**20,)})
    with zipfile.ZipFile(work / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("a.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            for _ in range(200):
                member.write(bytes(2**20))
    status, out, err = under_limit(work, 64, "run", "add.co", "--func", "add", "--input",
                                   "a=bomb.npz", "--input", "b=b.npy")
    assert (status, out) == (2, "")
    assert re.fullmatch(r"--input a=bomb\.npz: 'bomb\.npz' would expand to 209715328 bytes, "
                        r"more than the \d+ this machine can spare\n", err)


def test_random_inputs_beyond_the_memory_left_are_refused_before_they_are_drawn(work, engine):
    # a .cqb whose parameter 'a' is f32 [2147483647] (one field of a hand-built module
    # changed, as the .cqb fuzzer did): its random data took 24 GB, the generator's
    # temporaries as well as the array, until the system killed the process
    module = B.misc()
    module.functions[0].params[0].shape = [MAX_INT]
    (work / "huge.cqb").write_bytes(cqb.encode(module))
    status, out, err = under_limit(work, 64, *cli_options(["run", "huge.cqb", "--func", "misc",
                                                           "--random-inputs"]))
    assert (status, out) == (2, "")
    assert re.fullmatch(r"parameter 'a': random data of shape \(2147483647,\) would take "
                        r"8589934588 bytes, more than the \d+ this machine can spare\n", err)


def test_random_inputs_are_drawn_in_memory_their_size_bounds(work, engine):
    # 64 MiB of random f32 under a 256 MiB limit: the draws of the whole array at once
    # took some 40 bytes an element (the states, the mixing, the conversion). The result
    # is the first draw of seed 0 (docs/EXECUTION.md §15) as f32.
    (work / "first.co").write_text("__co__ f32 first(f32 [N] a) {\n  return a.at(0);\n}\n")
    argv = cli_options(["run", "first.co", "--func", "first", "--random-inputs", "--dim",
                        "N=16777216", "--check", "none"])
    assert under_limit(work, 256, *argv) == (0, "", "result: 0.7666215896606445\n")


def test_threads_the_system_refuses_leave_the_blocks_to_those_it_gave(work):
    # 64 threads' stacks take 512 MiB: the first thread start that fails ends the pool's
    # growth (abort() before), the blocks run on the threads started, or serially
    (work / "blocks.co").write_text("__co__ auto blocks() {\n  s32 [64, 32] c;\n"
                                    "  parallel p by 64 : block, t by 32 : thread\n"
                                    "    c.at(p, t) = p * 32 + t;\n  return c;\n}\n")
    np.save(work / "want.npy", np.arange(64 * 32, dtype=np.int32).reshape(64, 32))
    assert under_limit(work, 16, "run", "blocks.co", "--engine", "native", "--jobs", "64",
                       "--expect", "want.npy", "--quiet") == (0, "", "")


def test_a_launch_whose_buffer_copies_do_not_fit_runs_its_blocks_serially(work):
    # blocks on threads work on the buffers with a copy kept for a serial rerun: the
    # 256 MiB buffer fits in the limit, its copy does not (abort() before); the reference
    # engine, which keeps no copy, gives the same
    (work / "big.co").write_text("__co__ s32 big() {\n  s32 [67108864] c;\n"
                                 "  parallel p by 4 : block, t by 32 : thread\n"
                                 "    c.at(p # t) = p # t;\n  return c.at(33);\n}\n")
    assert under_limit(work, 384, "run", "big.co", "--engine", "native", "--jobs", "2",
                       "--check", "none") == (0, "", "big: 33\n")
    assert under_limit(work, 384, "run", "big.co", "--engine", "python") == (0, "", "big: 33\n")


def test_long_literals_and_deep_macro_chains_check_in_memory_their_size_bounds(work):
    # a 3 MB string took 1.1 GB (the scanner's backtracking state); 3,000 macros each
    # defined by the one before took memory quadratic in their number (a table per line,
    # a hide set per level)
    (work / "text.co").write_text('__co__ void f() { println("' + "a" * 3_000_000 + '"); }\n')
    assert under_limit(work, 300, "check", "text.co") == (
        0, "text.co: ok: 1 function(s) (f), 0 warning(s)\n", "")
    chain = ["#define M0 1"] + [f"#define M{i} M{i - 1}" for i in range(1, 3000)]
    (work / "chain.co").write_text("\n".join(chain) + "\n__co__ s32 f() { return M2999; }\n")
    status, _, err = under_limit(work, 300, "check", "chain.co")
    assert status == 1
    assert "chain.co:3001:25: error: macros expand inside each other too deeply (more than " \
           "256 levels, at 'M2743')." in err.splitlines()


def test_a_stray_nul_or_byte_or_a_literal_too_long_is_reported_at_its_place(work):
    (work / "nul.co").write_bytes(b"__co__ s32 f() {\n  return 1;\x00\n}\n")
    status, _, err = croqvm("check", "nul.co", cwd=work)
    assert (status, err.splitlines()[0]) == (1, "nul.co:2:12: error: stray '\\x00' in program")
    (work / "latin1.co").write_bytes(b"__co__ s32 f() {\n  return 1; \xe9\n}\n")
    status, _, err = croqvm("check", "latin1.co", cwd=work)
    assert (status, err.splitlines()[0]) == (1, "latin1.co:2:13: error: stray byte that is not "
                                                "UTF-8 in program (croqvm reads sources as UTF-8)")
    (work / "long.co").write_text("__co__ s64 f() { return " + "9" * 5000 + "; }\n")
    status, _, err = croqvm("check", "long.co", cwd=work)
    assert (status, err.splitlines()[0]) == (
        1, "long.co:1:25: error: numeric literal of 5000 characters is too long (croqvm reads "
           "literals of up to 4096).")


# ------------------------------------------------------------------ size of grids

def test_a_huge_grid_starts_at_once(work, engine):
    # 10^8 blocks: listing them before the first ran took 4 GB; block (0) faults at once
    (work / "grid.co").write_text(
        "__co__ void g() {\n  s32 [4] a;\n"
        "  parallel p by 100000000 : block, q by 32 : thread\n    a.at(q + 10) = 1;\n}\n")
    status, _, err = croqvm("run", "grid.co", cwd=work)
    assert status == 3
    assert err.splitlines()[-1] == "  in kernel launched at grid.co:3:3, block (0), lane 0 " \
                                   "(warp 0, lane 0)"


def test_grid_bounds_beyond_cuda_and_int_are_errors(work, engine):
    (work / "g.co").write_text(
        "__co__ void g() {\n  s32 [4] a;\n"
        "  parallel p by 4294967296 : block, q by 32 : thread\n    a.at(0) = 1;\n"
        "  parallel {x, y} by [2, 70000] : block, q by 32 : thread\n    a.at(0) = 1;\n}\n")
    status, _, err = croqvm("check", "g.co", cwd=work)
    assert status == 1
    lines = err.splitlines()
    assert lines[0] == "g.co:3:17: error: the parallel bound of 'p' is 4294967296: it does " \
                       "not fit in an 'int' (at most 2147483647)."
    assert lines[3] == "g.co:5:26: error: the parallel bound of 'y' is 70000: more than " \
                       "CUDA's limit of 65535 blocks (dimension 0, x, allows 2147483647; " \
                       "dimensions 1 and 2, y and z, allow 65535)."
    (work / "d.co").write_text(
        "__co__ void d(s32 [N] z) {\n  s32 [4] a;\n"
        "  parallel {x, y} by [2, N] : block, q by 32 : thread\n    a.at(0) = 1;\n}\n")
    status, _, err = croqvm("run", "d.co", "--func", "d", "--random-inputs", "--dim",
                            "N=70000", cwd=work)
    assert status == 3
    assert err.splitlines()[0] == "d.co:3:3: runtime error: the grid of this launch has 70000 " \
                                  "blocks in dimension 1: more than CUDA's limit of 65535 " \
                                  "blocks (dimension 0, x, allows 2147483647; dimensions 1 " \
                                  "and 2, y and z, allow 65535)."
    assert croqvm("run", "d.co", "--func", "d", "--random-inputs", "--dim", "N=3000000000",
                  cwd=work) == (2, "", "--dim N=3000000000: a dimension is an 'int' from 1 "
                                       "to 2147483647\n")


# ------------------------------------------------------------------ check = compile

LOWERING = """\
__co__ void f(global s32 [4] x) {
  parallel b by 2 : block {
    n = x.at(0);
    parallel t by n : thread { x.at(0) = 1; }
  }
}
__co__ void big() {
  parallel b by 2 : block, t by 32 : thread {
    shared f32 [250, 250] s;
    s.at(0, 0) = 1.0f;
  }
}
__co__ void sized(global f32 [N] x) {
  parallel b by 2 : block, t by 32 : thread {
    shared f32 [N, N] s;
    s.at(0, 0) = 1.0f;
  }
}
"""


def test_check_reports_what_compile_rejects_all_at_once(work):
    (work / "low.co").write_text(LOWERING)
    status, out, err = croqvm("check", "low.co", cwd=work)
    assert (status, out) == (1, "")
    assert err == (
        "low.co:4:19: error: croqvm needs the bounds of block-internal parallel levels when "
        "the kernel starts; 'n' is computed inside it.\n"
        "    4 |     parallel t by n : thread { x.at(0) = 1; }\n"
        "      |                   ^\n"
        "hint: compute the bound before the parallel-by, or use a macro\n"
        "low.co:8:3: error: this kernel needs 250000 bytes of shared memory per block, more "
        "than the limit of 233472 (228 KiB).\n"
        "    8 |   parallel b by 2 : block, t by 32 : thread {\n"
        "      |   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
        "hint: shared memory holds every shared buffer of a block and 8 bytes per event "
        "slot: use smaller tiles or fewer stages\n")
    assert croqvm("compile", "low.co", cwd=work) == (1, "", err)


def test_a_shared_size_known_at_launch_is_checked_there(work, engine):
    (work / "sized.co").write_text(LOWERING[LOWERING.index("__co__ void sized"):])
    args = ["run", "sized.co", "--func", "sized", "--random-inputs", "--quiet"]
    assert croqvm(*args, "--dim", "N=100", cwd=work) == (0, "", "")
    status, _, err = croqvm(*args, "--dim", "N=1000", cwd=work)
    assert status == 3
    assert err.splitlines()[0] == "sized.co:3:5: runtime error: allocating 's': 4000000 " \
                                  "bytes of shared memory per block, more than the limit of " \
                                  "233472 (228 KiB)."


# ------------------------------------------------------------------ diagnostics that lead to the fix

MACROS = """\
__co__ void mm(global f16 [M, K] a, global f16 [N, K] b, global f16 [M, N] c) {
  parallel p by 1 : block {
    shared f16 [TM, TK] sa;
    shared f16 [TN, TK] sb;
    shared f16 [TM, TN] sc;
    parallel q by 1 : group-4 {
      mc = mma.fill.f16 0.0f;
      ma = mma.load sa;
      mb = mma.load sb;
      mma.row.row mc, ma, mb;
      mma.store mc, sc;
    }
  }
}
"""


def test_undefined_macros_suggest_a_define_without_follow_on_errors(work):
    (work / "mm.co").write_text(MACROS)
    status, _, err = croqvm("check", "mm.co", cwd=work)
    assert status == 1
    assert [line for line in err.splitlines() if not line.startswith(" ")] == [
        "mm.co:3:17: error: symbol 'TM' is used before declaration.",
        "hint: 'TM' looks like a macro: define it with '#define TM ...' or on the command "
        "line with -D TM=VALUE",
        "mm.co:3:21: error: symbol 'TK' is used before declaration.",
        "hint: 'TK' looks like a macro: define it with '#define TK ...' or on the command "
        "line with -D TK=VALUE",
        "mm.co:4:17: error: symbol 'TN' is used before declaration.",
        "hint: 'TN' looks like a macro: define it with '#define TN ...' or on the command "
        "line with -D TN=VALUE"]      # and no "can not infer the shape of accumulator 'mc'"
    assert croqvm("check", "mm.co", "-D", "TM=64", "-D", "TN=64", "-D", "TK=16",
                  cwd=work) == (0, "mm.co: ok: 1 function(s) (mm), 0 warning(s)\n", "")


@pytest.mark.parametrize("body, first, hint", [
    ("paralel t by 16 { }", "2:3: error: syntax error: unknown type 'paralel'.",
     "did you mean 'parallel'?"),
    ("pirntln(1);", "2:3: error: syntax error: 'pirntln(...)' is not a statement: Croqtile "
                    "functions can not call each other.", "did you mean 'println'?"),
    ("s32 [4] a;\n  a.at(0) = cdv(3, 2);", "3:13: error: symbol 'cdv' is used before "
                                           "declaration.", "did you mean 'cdiv'?"),
    ("s32 [4] a;\n  a.at(0) = __mn(3, 2);", "3:13: error: builtin '__mn' is not supported by "
                                            "croqvm.", "did you mean '__min'?"),
    ("int block_m = 1;\n  println(blok_m);", "3:11: error: symbol 'blok_m' is used before "
                                             "declaration.", "did you mean 'block_m'?"),
    ("s32 [64] x;\n  x.at(blockIdx.x * 32 + threadIdx.x) = 1;",
     "3:8: error: syntax error: 'blockIdx.x' is CUDA, not Croqtile.",
     "Croqtile has no built-in block index: 'parallel p by N : block' names it (p), and "
     "'p # t' combines it with a thread index t"),
    ("__syncthreads();", "2:3: error: syntax error: '__syncthreads' is a reserved word and "
                         "can not be used as a name.",
     "the barrier of a block is the statement 'sync.shared;'"),
    ("for (int i = 0; i < 4; i++) { println(i); }",
     "2:3: error: syntax error: 'for' is not a Croqtile statement.",
     "Croqtile has no C 'for' loop: write 'foreach i in [N] { ... }' for i from 0 to N-1, or "
     "a 'while' loop over a 'mutable int'"),
    ("s32 [4] a;\n  a.chunkt(2) = 1;", "3:4: error: syntax error: unknown member '.chunkt'; "
                                       "croqvm knows '.at', '.chunkat', '.subspan', '.view', "
                                       "'.span', '.data', '.span_as' or '.sqz'.",
     "did you mean 'chunkat'?"),
    ("s32 [4, 4] a;\n  println(a);", "3:11: error: can not print a value of type "
                                     "'s32 [4, 4]'.",
     "print the elements one by one: 'foreach {i, j} in [...] println(a.at(i, j));'"),
    ("s32 [4] v;\n  println(v);", "3:11: error: can not print a value of type 's32 [4]'.",
     "print the elements one by one: 'foreach i in [...] println(v.at(i));'"),
])
def test_misspellings_and_cuda_habits_get_a_hint(work, body, first, hint):
    (work / "d.co").write_text("__co__ void f() {\n  " + body + "\n}\n")
    status, _, err = croqvm("check", "d.co", cwd=work)
    lines = err.splitlines()
    assert (status, lines[0], lines[3]) == (1, "d.co:" + first, "hint: " + hint)
    assert len(lines) == 4        # one error: no cascade


def test_a_chunkat_tile_smaller_than_its_destination_explains_equal_parts(work, engine):
    (work / "c.co").write_text("__co__ void f(global f32 [4, K] b) {\n  f32 [4, 8] t;\n"
                               "  foreach k in [cdiv(K, 8)]\n"
                               "    dma.copy b.chunkat(_, k) => t;\n}\n")
    status, _, err = croqvm("run", "c.co", "--func", "f", "--random-inputs", "--dim", "K=10",
                            cwd=work)
    assert status == 3
    lines = err.splitlines()
    assert lines[0] == "c.co:4:5: runtime error: 'dma.copy' copies a [4, 5] tile into a " \
                       "[4, 8] destination; a tile smaller than its destination needs " \
                       "'.zfill'."
    assert lines[-1] == "hint: '.zfill' is right for a tile cut short at the edge of its " \
                        "buffer. A 'chunkat' tile is not cut: chunkat divides each dimension " \
                        "into equal parts (here [4, 5]), which do not line up with fixed-size " \
                        "tiles of the other operands; for [4, 8] tiles, the last one cut at " \
                        "the edge, use 'subspan(4, 8).at(...)' with '.zfill'."


def test_a_wide_bound_that_does_not_fit_an_int_is_an_error_not_a_wrap(work, engine):
    # 2^32 + 1 converted to 'int' would be 1: one block run instead of an error
    (work / "w.co").write_text("__co__ void w(s64 n) {\n  s32 [4] a;\n"
                               "  parallel p by n : block, q by 32 : thread\n"
                               "    a.at(0) = 1;\n  println(a.at(0));\n}\n")
    for value, text in ((2**32 + 1, "does not fit in an 'int' (at most 2147483647)."),
                        (-(2**32) + 1, "should be greater than 0.")):
        np.save(work / "n.npy", np.int64(value))
        status, out, err = croqvm("run", "w.co", "--func", "w", "--input", "n=n.npy", cwd=work)
        assert (status, out) == (3, "")
        assert err.splitlines()[0] == f"w.co:3:3: runtime error: the parallel bound of 'p' " \
                                      f"is {value}: it {text}"
    np.save(work / "n.npy", np.int64(3))
    assert croqvm("run", "w.co", "--func", "w", "--input", "n=n.npy", cwd=work)[:2] == (0, "1\n")


def test_an_mma_at_host_level_runs_as_croqtiles_own_interpreter_runs_it(work, engine):
    # §11.2 (c): the host lane is the unit; s32 operands accumulate in s32
    (work / "h.co").write_text(
        "__co__ void h() {\n  s32 [2, 3] a;\n  s32 [3, 2] b;\n  s32 [2, 2] c;\n"
        "  foreach {i, j} in [2, 3] {\n    a.at(i, j) = i - j;\n    b.at(j, i) = i + j * 2;\n"
        "  }\n  mc = mma.fill.s32 5;\n  ma = mma.load a;\n  mb = mma.load b;\n"
        "  mma.row.col mc, ma, mb;\n  mma.store mc, c;\n"
        "  println(c.at(0, 0), c.at(0, 1), c.at(1, 0), c.at(1, 1));\n}\n")
    a = np.array([[i - j for j in range(3)] for i in range(2)])
    b = np.array([[i + j * 2 for i in range(2)] for j in range(3)])
    want = " ".join(str(x) for x in (5 + a @ b).ravel())
    assert croqvm("run", "h.co", cwd=work) == (0, want + "\n", "")
