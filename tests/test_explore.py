"""``croqvm explore`` and ``croqvm run --replay`` (README "Finding races"; croqvm.running.explore):
one call under many random schedules, outcomes grouped with their seeds, replay files of
the schedules that deviate, and a replay that runs that very schedule again.

What a schedule gives is compared with ``croqvm run --schedule random --schedule-seed S``
on the same inputs, the documented way to run one schedule.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main

# Warp 0 reads what warp 1 writes with no barrier between: what it prints depends on the
# interleaving (§7.5).
RACY = """\
__co__ void swap_halves() {
  s32 [64] out;
  parallel b by 1 : block, t by 64 : thread {
    shared s32 [64] buf;
    buf.at(t) = t + 1;
    out.at(t) = buf.at(63 - t);
  }
  println(out.at(0), out.at(63));
}
"""
FIXED = RACY.replace("    out.at(t)", "    sync.shared;\n    out.at(t)")

# A kernel with inputs and a global result; its warps and blocks race on acc.
SUMS = """\
__co__ void sums(s32 [N] x, global s32 [4] acc) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    if (p # t < N)
      acc.at(t % 4) += x.at(p # t);
}
"""


@pytest.fixture
def racy(tmp_path):
    path = tmp_path / "swap.co"
    path.write_text(RACY)
    return path


def croqvm_run(capsys, *argv):
    """(exit status, stdout, stderr) of the croqvm command."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def printed_by(path, seed, capsys) -> str:
    code, out, _ = croqvm_run(capsys, "run", path, "--schedule", "random", "--schedule-seed",
                              seed, "--check", "none")
    assert code == 0
    return out


def test_explore_groups_the_seeds_by_outcome(racy, capsys):
    # unchecked, as the race check would stop every run at the race
    code, out, err = croqvm_run(capsys, "explore", racy, "--seeds", 6, "--check", "none")
    assert code == 3
    assert err == "explore: the results differ between schedules (3 outcomes in 6 runs)\n"
    lines = out.splitlines()
    assert lines[0] == "explore: 'swap_halves' under 6 random schedules (seeds 0-5)"
    by_seed = {}
    for head, shown in zip(lines[1::2], lines[2::2]):
        seeds = head.split(": ", 1)[1].replace("seeds ", "").replace("seed ", "")
        for part in seeds.split(", "):
            lo, _, hi = part.partition("-")
            for s in range(int(lo), int(hi or lo) + 1):
                by_seed[s] = shown.removeprefix("  printed: ") + "\n"
    assert by_seed == {s: printed_by(racy, s, capsys) for s in range(6)}


def test_explore_of_a_race_free_kernel_agrees(tmp_path, capsys):
    path = tmp_path / "fixed.co"
    path.write_text(FIXED)
    assert croqvm_run(capsys, "explore", path, "--seeds", 5, "--check", "race") == (
        0, "explore: 'swap_halves' under 5 random schedules (seeds 0-4)\n"
           "outcome 1: seeds 0-4\n"
           "  printed: 64 1\n"
           "explore: every schedule gives the same outcome\n", "")


def test_explore_reports_a_runtime_error_every_schedule_stops_with(tmp_path, capsys):
    path = tmp_path / "past.co"
    path.write_text("__co__ void f() {\n  s32 [4] a;\n  foreach i in [5]\n    a.at(i) = i;\n}\n")
    code, out, err = croqvm_run(capsys, "explore", path, "--seeds", 3, "--check", "init")
    assert code == 3
    assert err == "explore: every schedule stops with the same runtime error\n"
    assert out.splitlines()[1:] == [
        "outcome 1: seeds 0-2",
        f"  stopped: {path}:4:5: runtime error: out-of-range access a.at(4): index 4 of "
        f"dimension 0 is not in [0, 4)."]


def test_record_and_replay_reproduce_a_deviating_schedule(tmp_path, capsys):
    path = tmp_path / "sums.co"
    path.write_text(SUMS)
    rec = tmp_path / "rec"
    inputs = ["--func", "sums", "--random-inputs", "--seed", 4, "--dim", "N=100"]
    code, out, _ = croqvm_run(capsys, "explore", path, *inputs, "--seeds", 4, "--check",
                              "race", "--record", rec)
    assert code == 3
    files = sorted(p.name for p in rec.iterdir())
    # every run reports the races on acc: each schedule is recorded
    assert files == [f"sums.seed{s}.replay" for s in range(4)]
    for s in range(4):
        replayed = croqvm_run(capsys, "run", path, "--replay", rec / f"sums.seed{s}.replay")
        direct = croqvm_run(capsys, "run", path, *inputs, "--schedule", "random",
                            "--schedule-seed", s, "--check", "race")
        assert replayed == direct and replayed[0] == 3
        assert "runtime error: data race on global 'acc' element" in replayed[2]


def test_a_replay_runs_the_recorded_inputs_and_schedule(tmp_path, capsys):
    # Without the check the sums are a result: the replay prints the same summary, inputs
    # and result, as the run it recorded (it keeps the recorded check, none).
    path = tmp_path / "sums.co"
    path.write_text(SUMS.replace("acc.at(t % 4) +=", "acc.at(t % 4) = acc.at(t % 4) +"))
    rec = tmp_path / "rec"
    inputs = ["--func", "sums", "--random-inputs", "--seed", 9, "--dim", "N=200"]
    code, out, _ = croqvm_run(capsys, "explore", path, *inputs, "--seeds", 6, "--check",
                              "none", "--record", rec)
    assert code == 3 and len(out.split("outcome ")) > 2
    replays = sorted(rec.iterdir())
    assert replays
    for replay in replays:
        seed = int(replay.name.split(".seed")[1].split(".")[0])
        got = croqvm_run(capsys, "run", path, "--replay", replay, "--output",
                         tmp_path / "a.npz")
        want = croqvm_run(capsys, "run", path, *inputs, "--schedule", "random",
                          "--schedule-seed", seed, "--check", "none", "--output",
                          tmp_path / "b.npz")
        assert got == want
        a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key])


def test_a_replay_refuses_another_program_version_or_file(racy, tmp_path, capsys,
                                                          monkeypatch):
    rec = tmp_path / "rec"
    assert croqvm_run(capsys, "explore", racy, "--seeds", 2, "--check", "race", "--record",
                      rec)[0] == 3
    replay = rec / "swap_halves.seed0.replay"
    other = tmp_path / "other.co"
    other.write_text(RACY.replace("t + 1", "t + 2"))
    assert croqvm_run(capsys, "run", other, "--replay", replay) == (
        2, "", f"--replay {replay}: recorded for another program: {racy}, as it was then\n")
    monkeypatch.setattr(croqvm.running.explore, "__version__", "9.9")
    assert croqvm_run(capsys, "run", racy, "--replay", replay)[2] == (
        f"--replay {replay}: recorded by croqvm {croqvm.__version__}, this is croqvm 9.9: "
        f"its schedules may differ; record it again with croqvm explore\n")
    data = tmp_path / "data.npz"
    np.savez(data, x=np.zeros(3))
    assert croqvm_run(capsys, "run", racy, "--replay", data)[2] == (
        f"--replay {data}: not a replay file (croqvm explore --record writes them)\n")
    meta = json.loads(str(np.load(replay)["meta"]))
    del meta["func"], meta["dims"]
    np.savez(data, meta=np.array(json.dumps(meta)))
    assert croqvm_run(capsys, "run", racy, "--replay", data) == (
        2, "", f"--replay {data}: a damaged replay file (its record lacks func, dims)\n")


@pytest.fixture
def sums_replay(tmp_path, capsys):
    """(program, replay file) of 'sums' checked for races, with random inputs, under seed
    1's schedule."""
    path = tmp_path / "sums.co"
    path.write_text(SUMS)
    croqvm_run(capsys, "explore", path, "--func", "sums", "--random-inputs", "--dim", "N=200",
               "--check", "race", "--seeds", 2, "--record", tmp_path / "rec")
    replay = tmp_path / "rec" / "sums.seed1.replay"
    np.save(tmp_path / "x.npy", np.load(replay)["input.x"])
    np.save(tmp_path / "zeros.npy", np.zeros(200, np.int32))
    return path, replay


def test_a_replay_takes_the_options_that_say_what_its_file_says(sums_replay, capsys):
    path, replay = sums_replay
    want = croqvm_run(capsys, "run", path, "--replay", replay)
    assert want[0] == 3 and "data race on global 'acc'" in want[2]
    assert croqvm_run(capsys, "run", path, "--replay", replay, "--func", "sums", "--input",
                      f"x={path.parent / 'x.npy'}", "--dim", "N=200", "--schedule", "random",
                      "--schedule-seed", 1, "--check", "race") == want


@pytest.mark.parametrize("option, says", [
    (["--func", "other"], "--func other with --replay: the replay file runs 'sums'"),
    (["--input", "x=zeros.npy"], "--input x with --replay: the replay file holds another 'x'"),
    (["--dim", "N=20"], "--dim N=20 with --replay: the replay file has N=200"),
    (["--check", "init"], "--check init with --replay: the replay file runs --check race"),
    (["--schedule-seed", "3"], "--schedule-seed 3 with --replay: the replay file runs "
                               "--schedule-seed 1"),
    (["--random-inputs"], "--random-inputs with --replay: the replay file gives the function, "
                          "its inputs and dims, the schedule and the check"),
])
def test_a_replay_refuses_options_that_say_otherwise(sums_replay, capsys, option, says):
    path, replay = sums_replay
    option = [o.replace("zeros.npy", str(path.parent / "zeros.npy")) for o in option]
    assert croqvm_run(capsys, "run", path, "--replay", replay, *option) == (2, "", says + "\n")


def test_explore_needs_a_function_when_the_file_has_several(tmp_path, capsys):
    path = tmp_path / "two.co"
    path.write_text(RACY + FIXED.replace("swap_halves", "fixed"))
    assert croqvm_run(capsys, "explore", path, "--seeds", 2) == (
        2, "", f"{path} has several functions (swap_halves, fixed): choose one with "
               f"--func NAME\n")
