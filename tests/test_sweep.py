"""``croqvm sweep`` (docs/SWEEP.md; croqvm/sweep/): the points of ``--dim`` ranges, the
failing points grouped by signature with their smallest point, replay files that
``croqvm run --replay`` runs again, ``--against``, ``--schedules``, ``--json``, and the
same report whatever executor runs the points.

Which points fail is derived from the kernels' bugs (the row guard of ragged_edge.co lets
row M through, which only a ragged last tile has), not from croqvm output.
"""
from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from croqvm.cli.main import main
from croqvm.core.errors import ArgumentError
from croqvm.sweep import points as grid
from croqvm.running.executor import SerialExecutor, TimedOut

ROOT = Path(__file__).resolve().parent.parent
RAGGED = ROOT / "programs" / "broken" / "ragged_edge.co"       # TM = 8
CLEAN = ROOT / "programs" / "add_2d_ragged.co"

# Warp 0 reads what warp 1 writes with no barrier between: the results depend on the
# interleaving (§7.5).
MIRROR = """\
__co__ void mirror(s32 [N] x, global s32 [N] y) {
  parallel b by cdiv(N, 64) : block, t by 64 : thread {
    shared s32 [64] buf;
    buf.at(t) = x.at(b # t);
    y.at(b # t) = buf.at(63 - t);
  }
}
"""


def croqvm(capsys, *argv):
    """(exit status, stdout, stderr) of the croqvm command."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def sweep_json(capsys, *argv):
    code, out, err = croqvm(capsys, "sweep", *argv, "--json")
    return code, json.loads(out), err


# --------------------------------------------------------------------------- points

def test_dim_values_ranges_include_their_stop_lists_keep_their_order():
    assert grid.parse_dims(["M=64:1024:64", "K=96,64,128", "N=7", "P=3:5"]) == {
        "M": tuple(range(64, 1025, 64)), "K": (96, 64, 128), "N": (7,), "P": (3, 4, 5)}
    assert grid.parse_dims(["M=8:20:8"])["M"] == (8, 16)


def test_the_points_are_the_product_with_the_first_dim_slowest():
    points = grid.product({"M": (1, 2), "N": (5, 3)})
    assert [p.as_dict() for p in points] == [{"M": 1, "N": 5}, {"M": 1, "N": 3},
                                              {"M": 2, "N": 5}, {"M": 2, "N": 3}]


@pytest.mark.parametrize("dim, says", [
    ("M", "--dim 'M' must look like NAME=VALUE"),
    ("M=x", "--dim M=x: 'x' is not an integer"),
    ("M=0:8:4", "--dim M=0:8:4: 0 is not a dimension (an 'int' from 1 to 2147483647)"),
    ("M=16:8", "--dim M=16:8: the range is empty (STOP 8 is below START 16)"),
    ("M=1:2:3:4", "--dim M=1:2:3:4: a range is START:STOP or START:STOP:STEP"),
    ("M=8,8", "--dim M=8,8: a value is given twice"),
    ("Q=8", "--dim Q: 'add_2d' has no symbolic dimension 'Q' (it has: M, N)"),
])
def test_a_bad_dim_is_a_one_line_usage_error(dim, says, capsys):
    code, out, err = croqvm(capsys, "sweep", RAGGED, "--func", "add_2d", "--dim", "N=16",
                            "--dim", dim)
    assert (code, out, err) == (2, "", says + "\n")


def test_a_dim_given_twice_is_a_usage_error():
    with pytest.raises(ArgumentError, match="--dim M is given twice"):
        grid.parse_dims(["M=8", "M=16"])


# --------------------------------------------------------------------------- sweeps

def test_a_sweep_finds_the_ragged_edge_bug_and_replays_its_smallest_shape(tmp_path, capsys):
    rec = tmp_path / "rec"
    code, out, err = croqvm(capsys, "sweep", RAGGED, "--func", "add_2d", "--dim",
                            "M=8:24:4", "--dim", "N=24,16", "--record", rec)
    assert code == 3 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("sweep: 'add_2d' at 10 points (M=8:24:4 N=24,16), inputs from seed "
                        "0: 4 fault, 6 pass")
    assert lines[2].split() == ["1", "fault", "4", "M=12", "N=16", "out-of-range", "at",
                                f"{RAGGED}:21:7"]
    # every M that is not a multiple of the tile, smallest first
    assert lines[4] == "  points: M=12 N=16, M=12 N=24, M=20 N=16, M=20 N=24"
    replay = rec / "add_2d.M12_N16.replay"
    assert lines[6] == f"  replay: croqvm run {RAGGED} --replay {replay}"
    # no schedule seed: the replay runs round-robin, as the sweep did, and faults alike
    code, _, err = croqvm(capsys, "run", RAGGED, "--replay", replay)
    assert code == 3
    assert err.splitlines()[0] == (f"{RAGGED}:21:7: runtime error: out-of-range access "
                                   f"a.at(12, 0): index 12 of dimension 0 is not in [0, 12).")
    assert lines[5] == "  " + err.splitlines()[0]


def test_a_clean_sweep_against_cuda_cpu_exits_0(capsys):
    code, out, err = croqvm(capsys, "sweep", CLEAN, "--func", "add_2d", "--dim", "M=8,12",
                            "--dim", "N=20", "--against", "cuda-cpu")
    assert (code, err) == (0, "")
    assert out == ("sweep: 'add_2d' at 2 points (M=8,12 N=20), inputs from seed 0: 2 pass\n"
                   "sweep: every point passes\n")


def test_schedules_find_the_racy_schedule_and_its_replay_runs_it(tmp_path, capsys):
    path = tmp_path / "mirror.co"
    path.write_text(MIRROR)
    code, report, _ = sweep_json(capsys, path, "--func", "mirror", "--dim", "N=64",
                                 "--schedules", 4, "--record", tmp_path)
    assert code == 3
    [group] = report["groups"]
    assert (group["status"], group["signature"]) == ("differ",
                                                     "differs between schedules: y")
    seed = group["schedule_seed"]
    assert group["replay"] == str(tmp_path / f"mirror.N64.seed{seed}.replay")
    # the replay gives what that schedule gives on the point's inputs
    croqvm(capsys, "run", path, "--replay", group["replay"], "--output", tmp_path / "r.npz")
    # unchecked, as the sweep ran it (the replay keeps that check)
    croqvm(capsys, "run", path, "--func", "mirror", "--random-inputs", "--seed",
           group["point_seed"], "--dim", "N=64", "--schedule", "random", "--schedule-seed",
           seed, "--check", "none", "--output", tmp_path / "s.npz")
    replayed, direct = np.load(tmp_path / "r.npz"), np.load(tmp_path / "s.npz")
    assert np.array_equal(replayed["input.x"], direct["input.x"])
    assert np.array_equal(replayed["y"], direct["y"])


def test_json_report(capsys):
    code, report, _ = sweep_json(capsys, RAGGED, "--func", "add_2d", "--dim", "M=12,8",
                                 "--dim", "N=16", "--seed", 5)
    assert code == 3
    assert {k: report[k] for k in ("file", "func", "seed", "dims", "points", "counts")} == {
        "file": str(RAGGED), "func": "add_2d", "seed": 5, "dims": {"M": [12, 8], "N": [16]},
        "points": 2, "counts": {"fault": 1, "pass": 1}}
    [group] = report["groups"]
    assert set(group) == {"status", "signature", "count", "smallest", "point_seed",
                          "schedule_seed", "message", "replay", "points"}
    assert group["smallest"] == {"M": 12, "N": 16} and group["points"] == [{"M": 12, "N": 16}]
    assert (group["count"], group["schedule_seed"], group["replay"]) == (1, None, None)
    assert isinstance(group["point_seed"], int) and "a.at(12, 0)" in group["message"]


# --------------------------------------------------------------------------- executors

class Reversed:
    """An executor finishing the points last to first; one point may time out."""
    made: dict = {}

    def __init__(self, timed_out=None, **settings):
        Reversed.made = settings
        self.timed_out = timed_out

    def map_unordered(self, fn, shared, items):
        for i in reversed(range(len(items))):
            yield i, TimedOut(2.0) if i == self.timed_out else fn(shared, items[i])


@pytest.fixture
def cluster(monkeypatch):
    """croqvm.sweep.cluster as a module whose DaskExecutor is ``Reversed``."""
    module = types.ModuleType("croqvm.sweep.cluster")
    module.DaskExecutor = Reversed
    monkeypatch.setitem(sys.modules, "croqvm.sweep.cluster", module)
    return module


def test_the_report_is_the_same_whatever_order_the_points_finish_in(cluster, capsys):
    argv = (RAGGED, "--func", "add_2d", "--dim", "M=8:20:4", "--dim", "N=16")
    serial = sweep_json(capsys, *argv)
    assert sweep_json(capsys, *argv, "--workers", 3, "--task-timeout", 60) == serial
    assert Reversed.made == {"workers": 3, "scheduler": None, "task_timeout": 60.0}


def test_a_point_over_the_time_limit_is_reported_as_timed_out(cluster, monkeypatch, capsys):
    monkeypatch.setattr(cluster, "DaskExecutor", lambda **kw: Reversed(timed_out=0, **kw))
    code, report, _ = sweep_json(capsys, CLEAN, "--func", "add_2d", "--dim", "M=8,12",
                                 "--dim", "N=16", "--scheduler", "tcp://host:8786")
    assert code == 3
    assert [(g["status"], g["smallest"], g["message"]) for g in report["groups"]] == [
        ("timeout", {"M": 8, "N": 16}, "stopped after 2 s")]


def test_without_the_cluster_module_workers_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "croqvm.sweep.cluster", None)
    code, _, err = croqvm(capsys, "sweep", CLEAN, "--func", "add_2d", "--dim", "M=8",
                          "--dim", "N=16", "--workers", 2)
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("--workers and --scheduler need Dask's distributed package")


def test_task_timeout_needs_a_cluster(capsys):
    code, _, err = croqvm(capsys, "sweep", CLEAN, "--func", "add_2d", "--dim", "M=8",
                          "--dim", "N=16", "--task-timeout", 5)
    assert code == 2 and err.startswith("--task-timeout limits the runs of a cluster")


def test_a_serial_sweep_imports_no_dask():
    code = ("import sys; from croqvm.cli.main import main; "
            f"status = main(['sweep', {str(CLEAN)!r}, '--func', 'add_2d', '--dim', 'M=8', "
            "'--dim', 'N=16']); "
            "assert not {'dask', 'distributed'} & set(sys.modules), 'dask imported'; "
            "sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_the_serial_executor_yields_in_item_order():
    assert list(SerialExecutor().map_unordered(lambda s, x: s * x, 3, [1, 2])) == [(0, 3),
                                                                                  (1, 6)]
