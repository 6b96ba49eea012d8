"""The Dask executor (croqvm.sweep.cluster) on a local cluster of two worker processes:
the same results as the serial executor, items in chunks, every index reported once when a
worker dies in the middle of a chunk, a hung item stopped by the time limit (alone, when
it shares a chunk), an interrupted map that cancels its tasks and stops its workers;
``croqvm explore --scheduler`` and ``croqvm sweep`` on 1 and 2 workers printing and
recording what the serial run does; no Dask when no cluster is asked for.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

import croqvm
from croqvm.cli.main import main
from croqvm.running.explore import Schedules, run_seed
from croqvm.sweep.cluster import DaskExecutor, chunked, run_task
from croqvm.running.executor import SerialExecutor, TimedOut

TIME_LIMIT = 3.0            # seconds per item on the shared cluster (a loaded machine)
RAGGED = os.path.join(os.path.dirname(__file__), "..", "programs", "broken",
                      "ragged_edge.co")

# Warps race on acc: the sums depend on the schedule (tests/test_explore.py).
SUMS = """\
__co__ void sums(s32 [N] x, global s32 [4] acc) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread
    if (p # t < N)
      acc.at(t % 4) = acc.at(t % 4) + x.at(p # t);
}
"""
# Never ends for n > 0; no step limit is set, so only the time limit stops it.
SPIN = """\
__co__ void spin(s32 n) {
  s32 i = 0;
  while (n > 0) {
    i = i + 1;
  }
  println(i);
}
"""


@pytest.fixture(scope="module")
def cluster():
    with DaskExecutor(workers=2, task_timeout=TIME_LIMIT) as executor:
        yield executor


def sums_runs() -> Schedules:
    x = np.arange(300, dtype=np.int32) % 7 - 3
    return Schedules(croqvm.compile(SUMS), "sums", [x, np.zeros(4, np.int32)], {}, None)


def all_once(pairs) -> dict:
    """``pairs`` as a dict, after checking that no index came twice."""
    pairs = list(pairs)
    assert len({i for i, _ in pairs}) == len(pairs)
    return dict(pairs)


def test_a_cluster_gives_the_serial_results(cluster):
    runs, seeds = sums_runs(), list(range(10))
    serial = all_once(SerialExecutor().map_unordered(run_seed, runs, seeds))
    on_cluster = all_once(cluster.map_unordered(run_seed, runs, seeds))
    assert sorted(on_cluster) == seeds
    assert len({outcome for outcome, _ in serial.values()}) > 1     # schedules matter here
    for i in seeds:
        (outcome, results), (want, want_results) = on_cluster[i], serial[i]
        assert outcome == want
        np.testing.assert_array_equal(results["acc"], want_results["acc"])


def test_chunks_hold_every_index_once_the_largest_first():
    for count, threads in ((200, 2), (37, 3), (5, 4), (0, 2)):
        chunks = chunked(count, threads)
        assert sorted(i for chunk in chunks for i in chunk) == list(range(count))
        sizes = [len(chunk) for chunk in chunks]
        assert sizes == sorted(sizes, reverse=True)
    # 200 // (4 x 2) = 25 items, then 175 // 8 = 21, 154 // 8 = 19, ..., the last 15 alone
    sizes = [len(chunk) for chunk in chunked(200, 2)]
    assert sizes[:3] == [25, 21, 19] and sizes[-16:] == [2] + [1] * 15
    assert chunked(200, 2) == chunked(200, 2)


def in_a_chunk(count: int) -> int:
    """An item that the cluster of two workers runs in the middle of a chunk."""
    return next(chunk for chunk in chunked(count, 2) if len(chunk) > 2)[1]


def die_first_time(shared, item):
    """``item`` squared and the worker's pid; item ``victim`` first ends its worker
    process."""
    marker, victim = shared
    if item == victim and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return item * item, os.getpid()


def test_the_chunk_of_a_killed_worker_runs_again_and_each_item_comes_once(cluster, tmp_path):
    marker, victim = str(tmp_path / "killed"), in_a_chunk(40)
    got = all_once(cluster.map_unordered(die_first_time, (marker, victim), range(40)))
    assert {i: square for i, (square, _) in got.items()} == {i: i * i for i in range(40)}
    killed = int(open(marker).read())
    assert got[victim][1] != killed


def hang_on_odd(_, item):
    while item % 2:
        pass
    return item


def test_a_hung_task_is_stopped_by_the_time_limit(cluster):
    assert all_once(cluster.map_unordered(hang_on_odd, None, range(4))) == {
        0: 0, 1: TimedOut(TIME_LIMIT), 2: 2, 3: TimedOut(TIME_LIMIT)}


def hang_on(victim, item):
    while item == victim:
        pass
    return item


def test_a_hung_item_times_out_alone_and_its_chunk_goes_on(cluster):
    victim = in_a_chunk(24)
    assert all_once(cluster.map_unordered(hang_on, victim, range(24))) == {
        i: TimedOut(TIME_LIMIT) if i == victim else i for i in range(24)}


def test_an_endless_kernel_run_is_stopped_on_the_worker(cluster):
    runs = Schedules(croqvm.compile(SPIN), "spin", [np.int32(5)], {}, None)
    assert all_once(cluster.map_unordered(run_seed, runs, [0])) == {0: TimedOut(TIME_LIMIT)}


def test_the_watchdog_leaves_a_task_that_ends_in_time_alone():
    assert run_task(lambda shared, item: shared + item, 1, 2, 0.2) == 3
    time.sleep(0.4)          # past the limit: nothing is raised here any more
    assert run_task(hang_on_odd, None, 1, 0.2) == TimedOut(0.2)


def slow(folder, item):
    time.sleep(0.5)
    (folder / f"done{item}").touch()
    return os.getpid()


def test_an_interrupt_cancels_the_tasks_and_stops_the_workers(tmp_path):
    executor = DaskExecutor(workers=2)
    with pytest.raises(KeyboardInterrupt):
        for _, pid in executor.map_unordered(slow, tmp_path, range(20)):
            raise KeyboardInterrupt
    # the workers are stopped: of the 20 tasks of 0.5 s, those that ended came first
    assert len(list(tmp_path.iterdir())) < 10
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_explore_on_a_cluster_prints_and_records_what_a_serial_run_does(cluster, tmp_path,
                                                                        capsys):
    path = tmp_path / "sums.co"
    path.write_text(SUMS)
    common = [str(path), "--func", "sums", "--random-inputs", "--seed", "3", "--dim",
              "N=300", "--seeds", "8", "--record"]
    got = {}
    on_cluster = ["--scheduler", cluster.address, "--task-timeout", "60"]
    for how, options in (("serial", []), ("cluster", on_cluster)):
        capsys.readouterr()
        code = main(["explore", *common, str(tmp_path / how), *options])
        out, err = capsys.readouterr()
        got[how] = code, out.replace(str(tmp_path / how), "REC"), err
    assert got["cluster"] == got["serial"]
    assert got["serial"][0] == 3 and "wrote REC/sums.seed" in got["serial"][1]
    serial = sorted((tmp_path / "serial").iterdir())
    assert [p.name for p in serial] == sorted(p.name
                                              for p in (tmp_path / "cluster").iterdir())
    for replay in serial:
        assert replay.read_bytes() == (tmp_path / "cluster" / replay.name).read_bytes()


def test_a_sweep_on_one_or_two_workers_reports_and_records_what_a_serial_one_does(
        cluster, tmp_path, capsys):
    # 34 points: on two workers the first chunks hold 4, 3 and 3 of them
    common = [RAGGED, "--func", "add_2d", "--dim", "M=8:40:2", "--dim", "N=16,24",
              "--json", "--record"]
    got = {}
    for how, options in (("serial", []), ("one", ["--workers", "1"]),
                         ("two", ["--scheduler", cluster.address])):
        capsys.readouterr()
        code = main(["sweep", *common, str(tmp_path / how), *options, "--no-progress"])
        out, err = capsys.readouterr()
        replays = {p.name: p.read_bytes() for p in (tmp_path / how).iterdir()}
        got[how] = code, out.replace(str(tmp_path / how), "REC"), err, replays
    assert got["one"] == got["serial"] and got["two"] == got["serial"]
    assert got["serial"][0] == 3 and len(got["serial"][3]) == 1


def test_explore_without_a_cluster_does_not_import_dask(tmp_path):
    path = tmp_path / "sums.co"
    path.write_text(SUMS)
    script = ("import sys\nfrom croqvm.cli.main import main\n"
              f"main(['explore', {str(path)!r}, '--random-inputs', '--dim', 'N=8', "
              f"'--seeds', '2'])\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('dask', 'distributed')))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.stdout.splitlines()[-1] == "[]"


def test_task_timeout_needs_a_cluster(tmp_path, capsys):
    path = tmp_path / "sums.co"
    path.write_text(SUMS)
    code = main(["explore", str(path), "--random-inputs", "--dim", "N=8", "--seeds", "2",
                 "--task-timeout", "5"])
    assert code == 2
    assert capsys.readouterr().err == ("--task-timeout limits the runs of a cluster: give "
                                       "--workers N or --scheduler ADDRESS too\n")
