"""The race check ``croqvm run``, ``diff`` and ``explore`` make without ``--check`` (README:
Finding races): on the native engine; ``--check none`` turns it off; a replay file keeps the check it recorded."""
from __future__ import annotations

from pathlib import Path

import pytest

from croqvm.cli.main import main
from croqvm.running.explore import write_replay

from tests.test_explore import RACY

NATIVE = pytest.importorskip("croqvm.native").unavailable() is None
pytestmark = pytest.mark.skipif(not NATIVE, reason="the native engine is not built")

# programs/matmul_1p1c.co without the consumer's `wait full[st]`: its mma.load reads a stage
# the producer's copy writes, with nothing between them
PIPELINE = (Path(__file__).resolve().parent.parent / "programs" / "matmul_1p1c.co").read_text()
RACY_PIPELINE = PIPELINE.replace("          wait full[st];\n", "")
CALL = ["--func", "gemm_ws", "--random-inputs", "--dim", "M=64", "--dim", "N=64", "--dim",
        "K=128"]
RACE = ("runtime error: data race on shared 'sa[0]' element (0, 0): read by 'mma.load' "
        "here, written by 'dma.copy'")


def croqvm(capsys, *argv):
    """(exit status, stdout, stderr) of the croqvm command."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def racy_pipeline(tmp_path):
    assert RACY_PIPELINE != PIPELINE
    path = tmp_path / "racy.co"
    path.write_text(RACY_PIPELINE)
    return path


def test_a_plain_run_reports_the_race_and_check_none_runs_it(racy_pipeline, capsys):
    code, _, err = croqvm(capsys, "run", racy_pipeline, *CALL)
    assert code == 3 and RACE in err
    code, _, err = croqvm(capsys, "run", racy_pipeline, *CALL, "--check", "none")
    assert code == 0 and "runtime error" not in err and "c: float32 [64x64]" in err


def test_diff_checks_its_reference_run(racy_pipeline, capsys):
    # the race is the error, found before the other side runs
    code, out, err = croqvm(capsys, "diff", racy_pipeline, *CALL)
    assert code == 3 and out == "" and RACE in err and "differs" not in err


def test_explore_reports_the_race_as_an_outcome(tmp_path, capsys):
    path = tmp_path / "swap.co"
    path.write_text(RACY)
    code, out, _ = croqvm(capsys, "explore", path, "--seeds", 2)
    assert code == 3
    assert "stopped: " in out and "data race on shared 'buf' element" in out
    code, out, _ = croqvm(capsys, "explore", path, "--seeds", 2, "--check", "none")
    assert "data race" not in out


def test_a_replay_keeps_the_check_it_recorded(racy_pipeline, tmp_path, capsys):
    # a replay file written without a check (as files were before the default) runs
    # unchecked; one recorded with the race check reports the race
    from croqvm import compile_file
    from croqvm.running.inputs import build_args, inputs_used
    program = compile_file(str(racy_pipeline))
    fn = program.function("gemm_ws")
    args, dims = build_args(fn, {}, {"M": 64, "N": 64, "K": 128}, True, 0)
    for check, status in ((None, 0), ("race", 3)):
        path = tmp_path / f"{check}.replay"
        write_replay(path, program, str(racy_pipeline), fn, inputs_used(fn, args), dims, 0,
                     check, {})
        code, _, err = croqvm(capsys, "run", racy_pipeline, "--replay", path)
        assert code == status and (RACE in err) == (check == "race")
