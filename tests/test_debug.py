"""croqvm debug (croqvm/debug): co-mock's three debugger tests, and each command against
values computed by hand from the programs in tests/debug/.

kernel.co: ``scale(out)`` runs 2 blocks of one warp; lane t of block p computes
v = 2t, adds 100 where t < 4 (line 6), and stores out[32p + t] = v + p (line 7).

calls.co: ``calls(out)`` runs 2 blocks of one warp; lane t of block p calls quad(t)
(line 14), which calls twice(a) = 2a + 1 (r = 2a on line 2, returned plus one on line 3)
on line 7 (h = 2t + 1) and again on line 8, so v = 4t + 3; out[32p + t] = v + p (line 15).
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main
from croqvm.debug import DebugError, Session
from croqvm.debug.console import Console, run_script

HERE = Path(__file__).parent / "debug"


def session(name="kernel.co", func="scale", *args):
    program = croqvm.compile_file(str(HERE / name))
    out = io.StringIO()
    if not args and func == "scale":
        args = (np.full(64, -1, np.int32),)
    return Session(program, func, *args, out=out), out


def transcript(name, func, args, script: str):
    s, out = session(name, func, *args)
    text = io.StringIO()
    status = run_script(Console(s, text), script.splitlines(), "script")
    return status, text.getvalue(), out.getvalue()


# ----------------------------------------------------------------------- co-mock's tests

@pytest.mark.parametrize("name, script, expected", [
    ("script_debug.co", "s\ns\np x\nc\n", ["x = 10", "15"]),
    ("script_mode.co", "c\n", ["42"]),
    ("debugger_info.co", "s\ninfo mem\nc\n", ["arr: global s32[4] (16 bytes)", "20"]),
])
def test_comock_debugger_scripts(tmp_path, capsys, name, script, expected):
    path = tmp_path / "cmds"
    path.write_text(script)
    assert main(["debug", str(HERE / name), "--script", str(path)]) == 0
    out = capsys.readouterr().out
    at = 0
    for want in expected:                  # FileCheck: in order
        at = out.index(want, at) + len(want)


def test_script_transcript_echoes_each_command_then_its_output(tmp_path, capsys):
    path = tmp_path / "cmds"
    path.write_text("s\ns\np x\nc\n")
    main(["debug", str(HERE / "script_debug.co"), "--script", str(path)])
    assert capsys.readouterr().out.splitlines() == [
        "-> 4    s32 x = 10;",
        "(croqvm) s",
        "-> 5    s32 y = x + 5;",
        "(croqvm) s",
        "-> 6    println(y);",
        "(croqvm) p x",
        "x = 10",
        "(croqvm) c",
        "15",
        "The program finished.",
    ]


# ----------------------------------------------------------------------- commands

def test_breakpoint_and_every_lane_of_a_variable():
    s, _ = session()
    s.break_at(6)
    stop = s.cont()
    assert (stop.reason, stop.place.line, stop.place.block) == ("breakpoint", 6, (0,))
    assert stop.place.active == [0, 1, 2, 3]          # t < 4
    v = s.evaluate("v")
    assert v.values.tolist() == [2 * t for t in range(32)]
    assert v.active.tolist() == [t < 4 for t in range(32)]
    s.set_focus(lane=3)
    assert s.evaluate("v + 1").values[3] == 7
    assert s.evaluate("t < 4 ? v : -1").values[3] == 6
    s.quit()


def test_conditional_breakpoint_names_the_lanes_that_met_it():
    s, _ = session()
    s.break_at(7, condition="t % 8 == 5 && p == 1")
    stop = s.cont()
    assert stop.reason == "breakpoint" and stop.place.block == (1,)
    assert stop.lanes == [5, 13, 21, 29]
    s.quit()


def test_step_next_and_step_into_a_kernel():
    s, _ = session()
    assert (s.stop.place.line, s.stop.place.block) == (2, None)     # the host's launch
    assert [s.step().place.line for _ in range(4)] == [3, 4, 5, 6]
    assert s.stop.place.block == (0,) and s.focus == ((0,), 0, 0)
    assert s.next().place.line == 7
    s.quit()


def test_next_steps_over_a_launch_and_over_a_nested_block():
    s, _ = session()
    assert s.next().reason == "finished"          # the host's only statement: the launch
    s, _ = session()
    s.break_at(5)
    s.cont()
    assert s.next().place.line == 7               # over the if and its body (line 6)
    s.quit()


def test_stepi_runs_one_instruction_of_the_focused_warp():
    s, _ = session()
    s.break_at(4)
    first = s.cont()
    second = s.stepi()                          # t * 2, then the move into v: same line
    assert (second.step, second.place.line) == (first.step + 1, 4)
    assert s.stepi().place.line == 5
    s.quit()


def test_finish_runs_until_the_host_resumes():
    program = croqvm.compile(HOST_AFTER, "tail.co")
    s = Session(program, "tail", np.zeros(32, np.int32), out=io.StringIO())
    s.break_at(3)
    s.cont()
    stop = s.finish()
    assert (stop.place.block, stop.place.line) == (None, 4)
    assert s.step().place.line == 5 and s.evaluate("k").values[0] == 7
    s.quit()


HOST_AFTER = """__co__ void tail(global s32 [32] out) {
  parallel t by 32 : thread
    out.at(t) = t;
  s32 k = 7;
  println(k);
}
"""


def test_reverse_next_goes_back_over_the_nested_block():
    s, _ = session()
    s.break_at(5)
    at5 = s.cont()
    s.next()                                      # line 7
    back = s.reverse_next()
    assert (back.step, back.place.line) == (at5.step, 5)
    s.quit()


def test_enter_repeats_the_last_motion():
    status, text, _ = transcript("kernel.co", "scale", (), "s\n\n\nq\n")
    assert status == 0
    assert [ln.split()[1] for ln in text.splitlines() if ln.startswith("->")] == \
        ["2", "3", "4", "5"]


def test_read_watchpoint_stops_after_the_load():
    program = croqvm.compile(READER, "reader.co")
    s = Session(program, "reader", np.arange(4, dtype=np.int32), np.zeros(1, np.int32),
                out=io.StringIO())
    s.watch("a.at(2)", read=True)
    stop = s.cont()
    watch, old, new, writer, lanes = stop.watch
    assert stop.reason == "watch" and int(new) == 2 and writer == (None, 0)
    assert s.stop.place.line == 3                  # the statement that read it
    s.quit()


READER = """__co__ void reader(s32 [4] a, global s32 [1] out) {
  out.at(0) = a.at(0);
  out.at(0) = out.at(0) + a.at(2);
}
"""


def test_break_race_stops_at_the_first_race_with_the_warp_that_made_it():
    program = croqvm.compile_file(str(HERE / "racy.co"))
    s = Session(program, "racy", np.zeros(2, np.int32), check="race", out=io.StringIO())
    s.break_race = True
    stop = s.cont()
    # lane t of warp t / 32 writes out[1 - t / 32]: the 32 lanes of warp 0 all write out[1]
    assert stop.reason == "race" and stop.message == "data race on 'out' element (1)"
    assert s.focus[:2] == ((0,), 0)
    while not s.finished:
        s.cont()
    assert "data race" in s.stop.message


def test_info_variables_of_each_scope_and_help_and_list():
    s, _ = session()
    s.break_at(7)
    s.cont()
    s.set_focus(lane=3)
    scopes = dict(s.variables())
    kernel = scopes["kernel block (0) warp 0 lane 3"]
    assert ("v", "106") in kernel and ("t", "3") in kernel and ("p", "0") in kernel
    text = io.StringIO()
    console = Console(s, text)
    console.execute("help watch")
    console.execute("l")
    lines = text.getvalue().splitlines()
    assert lines[0].startswith("watch BUF.at(i, ...): stop after an instruction changes")
    assert "B-> 7\t      out.at(p # t) = v + p;" in lines
    s.quit()


def test_reverse_step_is_exact_under_the_random_schedule():
    program = croqvm.compile_file(str(HERE / "kernel.co"))
    s = Session(program, "scale", np.zeros(64, np.int32), schedule="random", seed=3,
                out=io.StringIO())
    s.break_at(7)
    s.cont()
    s.cont()
    mark = s.stop.step
    state = s.evaluate("out").data.copy()
    s.step()
    back = s.reverse_step()
    assert back.step == mark and np.array_equal(s.evaluate("out").data, state)
    s.quit()


OOB_NO_PARAMS = """__co__ void oob() {
  s32[8] out;
  parallel t by 32 : thread {
    s32 k = t + 5;
    out.at(k) = t;
  }
}
"""


def test_debug_on_fault_stops_at_the_error(tmp_path, capsys, monkeypatch):
    path = tmp_path / "oob.co"
    path.write_text(OOB_NO_PARAMS)
    monkeypatch.setattr("sys.stdin", io.StringIO("p k\nq\n"))
    assert main(["run", str(path), "--debug-on-fault", "--engine", "python"]) == 3
    out = capsys.readouterr().out
    assert "-> 5" in out and "lanes  0- 7:  5  6  7  8  9 10 11 12" in out


def test_reverse_step_lands_on_the_exact_earlier_state():
    s, _ = session()
    s.break_at(6)
    at6 = s.cont()
    before = s.evaluate("v").values.copy()            # 0, 2, 4, ... (line 6 not run yet)
    s.step()
    assert s.evaluate("v").values[:4].tolist() == [100, 102, 104, 106]
    back = s.reverse_step()
    assert (back.step, back.place.line) == (at6.step, 6)
    assert np.array_equal(s.evaluate("v").values, before)
    s.quit()


def test_reverse_continue_goes_back_to_the_last_breakpoint_hit():
    s, _ = session()
    s.break_at(6)
    first = s.cont()                 # block 0
    second = s.cont()                # block 1
    assert second.place.block == (1,) and second.step > first.step
    s.step()
    back = s.reverse_continue()
    assert (back.step, back.reason, back.place.block) == (second.step, "breakpoint", (1,))
    s.quit()


def test_watchpoint_names_old_and_new_value_and_the_writer():
    s, _ = session()
    w = s.watch("out.at(33)")        # written by block 1, lane 1: 2 + 100 + 1
    stop = s.cont()
    watch, old, new, writer, lanes = stop.watch
    assert watch is w and (int(old), int(new)) == (-1, 103)
    assert writer == ((1,), 0) and lanes == [1]
    s.quit()


def test_print_buffer_element_and_chunk():
    s, _ = session()
    s.break_at(7)
    s.cont()
    s.cont()                         # block 1 at line 7: block 0 has stored its 32
    assert s.evaluate("out.at(2)").values[0] == 104
    chunk = s.evaluate("out.chunkat(p)")
    assert chunk.origin == (32,) and chunk.data.tolist() == [-1] * 32
    s.quit()


def test_info_mem_and_variables():
    s, _ = session("debugger_info.co", "debugger_info_test")
    s.step()
    assert s.memory() == [("arr", "global", "s32", [4], 16)]
    s.quit()


def test_break_fault_stops_before_the_report_with_state_live():
    s, _ = session("oob.co", "oob", np.zeros(8, np.int32), 5)
    s.break_fault = True
    stop = s.cont()
    assert stop.reason == "fault" and stop.place.line == 4
    assert "out.at(8)" in stop.message and "lane 3" in stop.message
    assert s.evaluate("k").values.tolist() == [t + 5 for t in range(32)]


def test_debugging_changes_no_result():
    program = croqvm.compile_file(str(HERE / "kernel.co"))
    ref = np.full(64, -1, np.int32)
    program.run("scale", ref, engine="python", out=io.StringIO())
    got = np.full(64, -1, np.int32)
    s = Session(program, "scale", got, out=io.StringIO())
    s.break_at(7)
    s.cont()
    s.reverse_step()
    while not s.finished:
        s.cont()
    assert np.array_equal(got, ref)
    t = np.arange(32)
    assert got.tolist() == [2 * i + 100 * (i < 4) + p for p in (0, 1) for i in t]


@pytest.mark.parametrize("line, message", [
    ("zork", "unknown command 'zork'"),
    ("b 9", "line 9 of"),
    ("p v +", "does not parse"),
    ("warp 3", "no warp 3"),
    ("lane 40", "no lane 40"),
    ("p nothing", "no variable 'nothing'"),
    ("b 6 if zz == 1", "no variable 'zz' at line 6"),
    ("d 9", "no breakpoint at line 9"),
    ("d #4", "no breakpoint number 4"),
    ("break race", "break race needs the race check: run with --check race"),
    ("block 5", r"block \(5\) is not running"),
])
def test_bad_input_is_one_line_and_the_prompt_again(line, message):
    s, _ = session()
    text = io.StringIO()
    with pytest.raises(DebugError, match=message):
        Console(s, text).execute(line)
    assert text.getvalue() == ""
    s.quit()


def test_a_script_error_stops_with_its_line_number_and_exit_2():
    status, text, _ = transcript("kernel.co", "scale", (), "s\nwarp 7\nc\n")
    assert status == 2
    assert text.splitlines()[-1] == "script:2: no warp 7: the block has 1 warp(s), 0-0"


def test_readme_transcript_is_what_the_debugger_prints(tmp_path, capsys, monkeypatch):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Stepping through a kernel", 1)[1].split("\n## ", 1)[0]
    source, script, shown = [b.split("```", 1)[0] for b in section.split("```\n")[1::2]]
    (tmp_path / "stepping.co").write_text(source)
    (tmp_path / "steps.txt").write_text(script)
    monkeypatch.chdir(tmp_path)
    assert main(["debug", "stepping.co", "--func", "scale", "--random-inputs",
                 "--script", "steps.txt"]) == 0
    assert capsys.readouterr().out == shown


def test_where_shows_each_warp_with_what_it_waits_for():
    program = croqvm.compile_file(str(HERE / "barrier.co"))
    s = Session(program, "two", np.zeros(64, np.int32), out=io.StringIO())
    s.break_at(4)
    s.cont()                                  # warp 0 (round-robin: it runs first)
    stop = s.cont()                           # warp 0 waits at the inner parallel's end
    assert stop.place.warp == 1
    w0, w1 = s.where()
    assert (w0.state, w0.line, w0.waits) == \
        ("blocked", 3, "waiting for barrier at end of parallel")
    assert (w1.state, w1.line, w1.waits) == ("ready", 4, "")
    s.quit()


def test_info_futures_and_the_data_a_future_holds():
    program = croqvm.compile_file(str(HERE.parent.parent / "programs" /
                                      "matmul_double_buffer.co"))
    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    b = np.ones((32, 16), np.float32)
    s = Session(program, "matmul_db", a, b, out=io.StringIO())
    s.break_at(34)                  # the first wait: both pairs issued, none waited
    s.cont()
    assert dict(s.futures()) == {name: "pending (async), data [0:16, 0:16]"
                                 for name in ("cur_a", "cur_b", "nxt_a", "nxt_b")}
    assert np.array_equal(s.evaluate("cur_a.data").data, a[:, 0:16])
    assert np.array_equal(s.evaluate("nxt_a.data").data, a[:, 16:32])
    assert s.evaluate("nxt_a.data.at(1, 2)").values[0] == a[1, 18]
    s.quit()


SHOW = """__co__ void show(global s32 [10, 10] m) {
  parallel t by 1 : thread
    m.at(0, 0) = 1;
}
"""


def test_print_buffer_as_an_aligned_table_with_elision_and_file_breakpoints():
    program = croqvm.compile(SHOW, "show.co")
    s = Session(program, "show", np.arange(100, dtype=np.int32).reshape(10, 10),
                out=io.StringIO())
    text = io.StringIO()
    console = Console(s, text)
    for line in ("p m", "p m.at(9, 8)", "b show.co:3", "info break"):
        console.execute(line)
    assert text.getvalue().splitlines() == [
        "m: global s32[10, 10]",
        "[[ 0  1  2 ...  7  8  9]",
        " [10 11 12 ... 17 18 19]",
        " [20 21 22 ... 27 28 29]",
        " ...",
        " [70 71 72 ... 77 78 79]",
        " [80 81 82 ... 87 88 89]",
        " [90 91 92 ... 97 98 99]]",
        "m.at(9, 8) = 98",
        "Breakpoint 1 set at line 3",
        "Breakpoints:",
        "  1: line 3: m.at(0, 0) = 1;  (hit 0 time(s))",
    ]
    with pytest.raises(DebugError, match="no source file 'nope.co'"):
        console.execute("b nope.co:3")
    s.quit()


def test_going_back_from_the_end_of_the_run():
    s, out = session("script_debug.co", "script_debug_test")
    assert s.cont().reason == "finished" and out.getvalue() == "15\n"
    back = s.reverse_step()                   # the last statement: println(y), not run
    assert back.place.line == 6 and s.evaluate("y").values[0] == 15
    assert s.cont().reason == "finished" and out.getvalue() == "15\n15\n"


def test_no_going_back_before_the_first_statement():
    s, _ = session("script_debug.co", "script_debug_test")
    with pytest.raises(DebugError, match="already at the first statement"):
        s.reverse_step()
    assert s.stop.place.line == 4 and s.step().place.line == 5
    s.quit()


def test_break_fault_at_a_deadlock_shows_every_blocked_warp_and_the_launch():
    program = croqvm.compile_file(str(HERE.parent.parent / "programs" / "broken" /
                                      "missing_bootstrap.co"))
    s = Session(program, "broken", out=io.StringIO())
    s.break_fault = True
    stop = s.cont()
    assert stop.reason == "fault" and "deadlock" in stop.message
    warps = s.where()
    assert [(w.state, w.line) for w in warps] == [("blocked", 20)] * 4 + [("blocked", 27)] * 4
    assert warps[0].waits == "waiting for event 'empty' slot 0"
    assert warps[7].waits == "waiting for event 'full' slot 0"
    kernel, host = s.backtrace()
    assert (kernel.block, kernel.warp, host.block, host.line) == ((0,), 7, None, 14)


# ----------------------------------------------------------------------- calls

def calls_session():
    return session("calls.co", "calls", np.zeros(64, np.int32))[0]


def test_next_steps_over_a_call_and_step_goes_into_it_and_out():
    s = calls_session()
    s.break_at(14)
    s.cont()
    assert s.next().place.line == 15
    assert s.evaluate("v").values[:4].tolist() == [3, 7, 11, 15]
    s.quit()
    s = calls_session()
    s.break_at(14)
    s.cont()
    # into quad (7), into twice (2, 3), back in quad: the rest of line 7, then line 8
    assert [s.step().place.line for _ in range(5)] == [7, 2, 3, 7, 8]
    assert s.evaluate("h").values[:4].tolist() == [1, 3, 5, 7]
    assert s.next().place.line == 14          # over the second twice, out of quad
    assert s.next().place.line == 15
    s.quit()


def test_bt_lists_each_call_with_its_line_and_finish_returns_to_the_caller():
    status, text, _ = transcript("calls.co", "calls", (np.zeros(64, np.int32),),
                                 "b 3\nc\nbt\nc\nbt\nfinish\nfinish\nbt\nq\n")
    lines = text.splitlines()
    assert status == 0
    assert [ln for ln in lines if ln.startswith(("#", "->", "B>"))] == [
        "-> 12    parallel p by 2 {",
        "B> 3    return r + 1;    [block (0) warp 0 lanes 0-31]",
        "#0   block (0) warp 0: line 3 (ready), lanes 0-31: return r + 1;",
        "#1   block (0) warp 0: line 7 (ready), lanes 0-31: s32 h = call twice(a);",
        "#2   block (0) warp 0: line 14 (ready), lanes 0-31: s32 v = call quad(t);",
        "#3   host: line 12 (ready), lanes 0: parallel p by 2 {",
        "B> 3    return r + 1;    [block (0) warp 0 lanes 0-31]",
        "#0   block (0) warp 0: line 3 (ready), lanes 0-31: return r + 1;",
        "#1   block (0) warp 0: line 8 (ready), lanes 0-31: return call twice(h);",
        "#2   block (0) warp 0: line 14 (ready), lanes 0-31: s32 v = call quad(t);",
        "#3   host: line 12 (ready), lanes 0: parallel p by 2 {",
        "-> 8    return call twice(h);    [block (0) warp 0 lanes 0-31]",    # out of twice
        "-> 14        s32 v = call quad(t);    [block (0) warp 0 lanes 0-31]",   # of quad
        "#0   block (0) warp 0: line 14 (ready), lanes 0-31: s32 v = call quad(t);",
        "#1   host: line 12 (ready), lanes 0: parallel p by 2 {",
    ]


def test_a_breakpoint_on_a_call_stops_once_each_time_its_line_runs():
    s = calls_session()
    bp = s.break_at(14)
    assert s.cont().place.block == (0,)
    assert s.cont().place.block == (1,)       # not block 0 again when quad returns
    assert s.cont().reason == "finished" and bp.hits == 2
    s.quit()


def test_a_breakpoint_on_a_parallel_stops_once_per_block():
    # the barrier that ends the parallel has its line too, but closes it as END does
    s = calls_session()
    bp = s.break_at(13)
    assert [s.cont().place.block for _ in range(2)] == [(0,), (1,)]
    assert s.cont().reason == "finished" and bp.hits == 2
    s.quit()


def test_reverse_commands_go_back_through_calls():
    s = calls_session()
    s.break_at(14)
    at14 = s.cont()
    s.delete()
    s.break_at(15)
    at15 = s.cont()
    back = s.reverse_step()                   # into the last statement of the last call
    assert [f.line for f in s.backtrace()] == [3, 8, 14, 12]
    assert s.evaluate("r").values[:4].tolist() == [2, 6, 10, 14]     # 2h = 4t + 2
    assert [s.next().place.line for _ in range(3)] == [8, 14, 15]
    assert s.stop.step == at15.step and back.step < at15.step
    back = s.reverse_next()                   # over both calls
    assert (back.step, back.place.line) == (at14.step, 14)
    assert s.step().place.line == 7


def frames_session(func):
    args = (np.zeros(32, np.int32),) + ((np.zeros(4, np.int32),) if func == "nest" else ())
    return session("frames.co", func, *args)[0]


def test_after_a_call_a_name_means_the_callers_variable_not_the_callees_parameter():
    # shadow: v = t + 100, then x = triple(v + 1), whose parameter is also v
    s = frames_session("shadow")
    s.break_at(2)                             # inside triple: its parameter v = t + 101
    s.cont()
    assert s.evaluate("v").values.tolist() == [t + 101 for t in range(32)]
    s.break_at(21)
    s.cont()                                  # back in the kernel: its own v
    assert s.evaluate("v").values.tolist() == [t + 100 for t in range(32)]
    assert s.evaluate("x + v").values[5] == 3 * 106 + 105
    s.quit()
    s = frames_session("shadow")
    bp = s.break_at(21, condition="v == 100")
    assert s.cont().breakpoint is bp and s.stop.lanes == [0]


def test_a_name_means_a_variable_of_the_calls_the_warp_is_in_and_info_lists_only_those():
    # nest: v = step(v, i) three times; step(a, i) calls inc(a, i), which has an 'a' too
    s = frames_session("nest")
    s.break_at(12)                            # in step, before it calls inc: step's a, i
    s.cont()
    assert s.evaluate("a").values.tolist() == list(range(32))
    assert s.evaluate("i").values.tolist() == [0] * 32
    with pytest.raises(DebugError, match="no variable 'r' at line 27"):
        s.break_at(27, condition="r == 0")    # inc's local, not the kernel's
    s.delete()
    s.break_at(30)
    s.cont()
    s.set_focus(lane=2)                       # v = step(2, 0) = (2 + 0) * 2
    kernel = dict(s.variables()[0][1])
    assert {name: kernel[name] for name in ("t", "v", "i")} == {"t": "2", "v": "4", "i": "0"}
    assert not {"a", "u", "w", "r"} & set(kernel)      # the calls have returned
    s.quit()


def test_a_stop_focuses_the_same_lane_reached_forward_or_back():
    # lane 2 adds v to acc[0] after each step(v, i): v = 4, 10, 24, so 0 -> 4 -> 14 -> 38
    s = frames_session("nest")
    s.watch("acc.at(0)")
    s.break_at(33)
    for _ in range(3):
        forward = s.cont()
    assert forward.watch[1:3] == (14, 38) and s.focus == ((0,), 0, 2)
    assert s.cont().reason == "breakpoint" and s.focus == ((0,), 0, 0)
    back = s.reverse_continue()
    assert back.step == forward.step and back.watch[1:3] == (14, 38)
    assert s.focus == ((0,), 0, 2) and s.evaluate("t * 1").values[2] == 2
    s.quit()


def test_break_fault_focuses_the_faulting_lane():
    # 4 blocks of 32 lanes over N = 100 elements: block 3, lane 4 indexes x.at(100)
    program = croqvm.compile_file(str(HERE.parents[1] / "programs/broken/oob_element.co"))
    s = Session(program, "scale_1d", np.zeros(100, np.float32), 2.0, out=io.StringIO(),
                N=100)
    s.break_fault = True
    assert s.cont().reason == "fault" and s.focus == ((3,), 0, 4)
    assert s.evaluate("i").values[4] == 100


def test_when_the_program_finishes_the_focus_is_the_host_program():
    s = frames_session("shadow")
    s.break_at(21)
    s.cont()
    assert s.next().reason == "finished" and s.focus == (None, 0, 0)
    assert s.evaluate("out.at(0)").values[0] == 3 * 101 + 100


# ----------------------------------------------------------------------- scripts

def commands(program, func, args, script: str, **options):
    """The exit status and the transcript of ``script`` on ``func(*args)``."""
    s = Session(program, func, *args, out=io.StringIO(), **options)
    text = io.StringIO()
    status = run_script(Console(s, text), script.splitlines(), "script")
    return status, text.getvalue().splitlines()


ACC = """__co__ void acc(global s32 [4] out) {
  parallel t by 32 : thread {
    foreach i in [3] {
      if (t == 1)
        out.at(0) = out.at(0) + 10 * (i + 1);
    }
  }
}
"""


def test_reverse_continue_goes_back_to_the_previous_write_of_a_watched_element():
    # lane 1 adds 10, 20, 30 to out[0]: 0 -> 10 -> 30 -> 60, each write at line 5; after
    # it the warp stands at the end of the if (line 4)
    status, text = commands(croqvm.compile(ACC, "acc.co"), "acc", (np.zeros(4, np.int32),),
                            "watch out.at(0)\nc\nc\nc\nrc\np i + 0\np out.at(0)\nrc\n"
                            "p out.at(0)\nrc\nq\n")
    prompt = "(croqvm block (0) warp 0 lane 1) "
    after = "-> 4        if (t == 1)    [block (0) warp 0 lanes 1]"
    write = "Watchpoint 1: out.at(0): {} -> {}, by block (0) warp 0 lanes 1 at line 5"
    assert status == 0 and text == [
        "-> 2    parallel t by 32 : thread {",
        "(croqvm) watch out.at(0)", "Watchpoint 1: out.at(0) (now 0)",
        "(croqvm) c", write.format(0, 10), after,
        prompt + "c", write.format(10, 30), after,
        prompt + "c", write.format(30, 60), after,
        prompt + "rc", write.format(10, 30), after,       # the write before the last
        prompt + "p i + 0", "i + 0 = 1",
        prompt + "p out.at(0)", "out.at(0) = 30",
        prompt + "rc", write.format(0, 10), after,
        prompt + "p out.at(0)", "out.at(0) = 10",
        prompt + "rc", "-> 2    parallel t by 32 : thread {",   # no hit before: the start
        "(croqvm) q",
    ]


def test_going_back_restores_the_breakpoint_hit_counts():
    status, text, _ = transcript("kernel.co", "scale", (), "b 7\nc\nc\ninfo break\nrc\n"
                              "info break\nrc\ninfo break\nq\n")
    counts = [ln for ln in text.splitlines() if ln.startswith("  1: line 7")]
    assert status == 0 and [c.split("  (")[1] for c in counts] == \
        ["hit 2 time(s))", "hit 1 time(s))", "hit 0 time(s))"]   # block 1, block 0, start


HANDOFF = """__co__ void handoff(global s32 [32] out) {
  parallel p by 1 : block {
    shared event filled;
    shared s32 [32] box;
    parallel w by 2 : group, t by 32 : thread {
      inthreads.async (w == 0) {
        if (t < 8)
          wait filled;
        out.at(t) = box.at(31 - t);
      }
      inthreads.async (w == 1) {
        box.at(t) = t * t;
        trigger filled;
      }
    }
  }
}
"""


def test_info_events_warps_focus_and_delete_from_a_script():
    # warp 0 runs first: its lanes 0-7 wait for 'filled', which warp 1's 32 lanes
    # complete at line 13; then warp 0 goes on to line 9 with all its lanes
    status, text = commands(croqvm.compile(HANDOFF, "handoff.co"), "handoff",
                            (np.zeros(32, np.int32),),
                            "b 13\nb 9\nwatch out.at(0)\nc\ninfo events\ninfo warps\n"
                            "block host\nwhere\nblock 0\nwarp 1\nlane 3\nc\ninfo events\n"
                            "d 13\nd #3\ninfo break\nd\ninfo break\nblock 5\nc\n")
    at = "(croqvm block (0) warp {} lane {}) "
    assert status == 2 and text == [
        "-> 2    parallel p by 1 : block {",
        "(croqvm) b 13", "Breakpoint 1 set at line 13",
        "(croqvm) b 9", "Breakpoint 2 set at line 9",
        "(croqvm) watch out.at(0)", "Watchpoint 3: out.at(0) (now 0)",
        "(croqvm) c", "B> 13          trigger filled;    [block (0) warp 1 lanes 0-31]",
        at.format(1, 0) + "info events",
        "  filled slot 0: 0 done, 0 arrived; waiting: warp 0 lanes 0-7",
        at.format(1, 0) + "info warps",
        "  host: line 2 (ready), lanes 0: parallel p by 1 : block {",
        "  block (0) warp 0: line 8 (blocked, waiting for event 'filled' slot 0), "
        "lanes 0-7: wait filled;",
        "  block (0) warp 1: line 13 (ready), lanes 0-31: trigger filled;",
        at.format(1, 0) + "block host", "Focus: the host program, warp 0, lane 0",
        "(croqvm) where", "  host: line 2 (ready), lanes 0: parallel p by 1 : block {",
        "(croqvm) block 0", "Focus: block (0), warp 0, lane 0",
        at.format(0, 0) + "warp 1", "Focus: block (0), warp 1, lane 0",
        at.format(1, 0) + "lane 3", "Focus: block (0), warp 1, lane 3",
        at.format(1, 3) + "c", "B> 9          out.at(t) = box.at(31 - t);    "
        "[block (0) warp 0 lanes 0-31]",
        at.format(0, 0) + "info events", "  filled slot 0: 1 done, 0 arrived",
        at.format(0, 0) + "d 13", "Breakpoint at line 13 deleted.",
        at.format(0, 0) + "d #3", "Deleted 3.",
        at.format(0, 0) + "info break", "Breakpoints:",
        "  2: line 9: out.at(t) = box.at(31 - t);  (hit 1 time(s))",
        at.format(0, 0) + "d", "All breakpoints deleted.",
        at.format(0, 0) + "info break", "No breakpoints set.",
        at.format(0, 0) + "block 5",
        "script:19: block (5) is not running (blocks run one at a time; now: block (0))",
    ]


def test_break_race_from_a_script_stops_at_the_race_and_exits_3(tmp_path, capsys):
    # lanes 0-31 (warp 0) all write out[1] at line 4: the first race
    path = tmp_path / "cmds"
    path.write_text("break race\nc\nq\n")
    racy = str(HERE / "racy.co")
    assert main(["debug", racy, "--func", "racy", "--random-inputs", "--check", "race",
                 "--script", str(path)]) == 3
    assert capsys.readouterr().out.splitlines() == [
        "-> 2    parallel t by 64 : thread {",
        "(croqvm) break race", "Will stop at the first data race (with --check race).",
        "(croqvm) c",
        "Stopped at a data race on 'out' element (1) at line 4 (the report comes when the "
        "run ends).",
        "-> 5      out.at(w) = out.at(w) + 1;    [block (0) warp 0 lanes 0-31]",
        "(croqvm block (0) warp 0 lane 0) q",
    ]
    assert main(["debug", racy, "--func", "racy", "--random-inputs",
                 "--script", str(path)]) == 2
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"{path}:1: break race needs the race check: run with --check race"


def test_read_watchpoint_from_a_script_names_the_reader_and_its_line():
    # out[0] = a[0] (line 2), then out[0] + a[2] (line 3): a[2] is read once, at line 3
    status, text = commands(croqvm.compile(READER, "reader.co"), "reader",
                            (np.arange(4, dtype=np.int32), np.zeros(1, np.int32)),
                            "rwatch a.at(2)\nc\np out.at(0)\nc\n")
    assert status == 0 and text == [
        "-> 2    out.at(0) = a.at(0);",
        "(croqvm) rwatch a.at(2)", "Read watchpoint 1: a.at(2) (now 2)",
        "(croqvm) c", "Watchpoint 1: a.at(2): read, by the host program at line 3",
        "-> 3    out.at(0) = out.at(0) + a.at(2);",
        "(croqvm) p out.at(0)", "out.at(0) = 0",
        "(croqvm) c", "The program finished.",
    ]


def test_help_lists_every_command():
    status, text, _ = transcript("kernel.co", "scale", (), "help\nq\n")
    listed = [ln.split()[0].rstrip(",") for ln in text.splitlines()[3:-1]]
    assert status == 0 and listed == [
        "s", "n", "si", "c", "finish", "rs", "rn", "rc", "b", "break", "d", "watch",
        "rwatch", "block", "warp", "lane", "where", "bt", "p", "info", "l", "q", "help"]


def test_comock_subscript_prints_an_element_and_a_buffer_of_an_array():
    status, text, _ = transcript("debugger_info.co", "debugger_info_test", (),
                              "b 9\nc\np arr[2]\np arr[1 + 2]\nq\n")
    assert status == 0 and text.splitlines()[-5:-1] == [
        "(croqvm) p arr[2]", "arr[2] = 20", "(croqvm) p arr[1 + 2]", "arr[1 + 2] = 30"]
    s, _ = session("debugger_info.co", "debugger_info_test")
    s.break_at(9)
    s.cont()
    with pytest.raises(DebugError, match=r"arr\[4\] is out of bounds \(extents \[4\]\)"):
        s.evaluate("arr[4]")
    s.quit()
    program = croqvm.compile(ARRAYS, "arrays.co")
    s = Session(program, "arrays", np.zeros(1, np.int32), out=io.StringIO())
    s.break_at(7)
    s.cont()
    assert s.evaluate("sa[1]").data.tolist() == [[0, 10, 20], [30, 40, 50]]
    assert s.evaluate("sa[1][4]").values[0] == 40 == s.evaluate("sa[1].at(1, 1)").values[0]
    assert s.evaluate("sa[0]").data.tolist() == [[0] * 3] * 2
    with pytest.raises(DebugError, match=r"index 2 is out of range for buffer array 'sa'"):
        s.evaluate("sa[2]")
    s.quit()


ARRAYS = """__co__ void arrays(global s32 [1] out) {
  parallel p by 1 : block {
    shared s32 [2, 3] sa[2];
    parallel t by 32 : thread {
      if (t < 6)
        sa[1].at(t / 3, t % 3) = t * 10;
      out.at(0) = 1;
    }
  }
}
"""


def test_a_condition_that_can_not_be_evaluated_stops_and_says_why():
    s, _ = session()
    s.break_at(6, condition="v / (t - t) == 1")
    stop = s.cont()
    assert (stop.reason, stop.place.line, stop.lanes) == ("breakpoint", 6, [0, 1, 2, 3])
    assert stop.message == "its condition can not be evaluated here: division by zero"
    s.quit()
