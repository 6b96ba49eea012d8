"""Named barriers, ``__bar_sync(id, count)`` and ``__bar_arrive(id, count)`` (LANGUAGE.md
§6.8): one short program per rule, with what it must print, return or report written out
by hand. A warp arrives for its 32 threads; the arrival that brings a phase to its count
completes it; ``__bar_sync`` waits for its phase, ``__bar_arrive`` does not.
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm
from croqvm.lang.frontend import front_end

import engines
from test_race import both

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def compile_src(source: str, filename: str = "bar.co"):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), filename)


def run(source: str, func: str, *args):
    out = io.StringIO()
    result = engines.run(compile_src(source), func, *args, out=out)
    return out.getvalue(), result


def fault(source: str, func: str, *args) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(source), func, *args, out=io.StringIO())
    return str(info.value)


# Warps 0-1 write, then arrive without waiting; warps 2-3 wait for the phase (4 warps:
# 128 threads), so they read what warps 0-1 wrote: out[i] = buf[63 - i] = 10 (63 - i).
HANDOFF = """
    __co__ auto handoff() {
      s32 [64] out;
      parallel p by 1 : block {
        shared s32 [64] buf;
        parallel t by 128 : thread {
          if (t < 64) {
            buf.at(t) = t * 10;
            __bar_arrive(1, 128);
          } else {
            __bar_sync(1, 128);
            out.at(t - 64) = buf.at(127 - t);
          }
        }
      }
      return out;
    }
"""


def test_arrive_publishes_to_the_warps_that_sync():
    _, out = run(HANDOFF, "handoff")
    np.testing.assert_array_equal(out, (63 - np.arange(64)) * 10)


# One barrier reused in every iteration: each phase completes once both warps arrive.
# Warp 0 adds k + 1 before barrier 2, warp 1 reads after it, and barrier 3 keeps the next
# addition after the read: out = 1, 1 + 2, 1 + 2 + 3, 1 + 2 + 3 + 4.
ROUNDS = """
    __co__ auto rounds() {
      s32 [4] out;
      parallel p by 1 : block {
        shared s32 [1] acc;
        parallel t by 64 : thread {
          foreach k in [4] {
            if (t == 0)
              acc.at(0) = acc.at(0) + k + 1;
            __bar_sync(2, 64);
            if (t == 32)
              out.at(k) = acc.at(0);
            __bar_sync(3, 64);
          }
        }
      }
      return out;
    }
"""


def test_a_barrier_runs_one_phase_per_count_of_arrivals():
    _, out = run(ROUNDS, "rounds")
    np.testing.assert_array_equal(out, [1, 3, 6, 10])


# Only warps 1 and 3 take part (count 64); warps 0 and 2 pass by and print first under the
# default schedule (the lowest runnable warp runs until it blocks or finishes).
SUBSET = """
    __co__ void subset() {
      parallel t by 128 : thread {
        if (t % 64 >= 32) {
          __bar_sync(7, 64);
          if (t % 32 == 0)
            println("after", t);
        } else if (t % 32 == 0) {
          println("passing", t);
        }
      }
    }
"""


def test_a_count_of_two_warps_leaves_the_others_free():
    printed, _ = run(SUBSET, "subset")
    if engines.interprets(engines._active[-1]):
        assert printed == "passing 0\npassing 64\nafter 32\nafter 96\n"
    else:
        assert sorted(printed.splitlines()) == ["after 32", "after 96", "passing 0",
                                                "passing 64"]


# Warp specialisation as Croqtile kernels write it: warpgroup 0 fills a buffer and arrives
# at barrier 5, warpgroup 1 waits there, reads, and hands the buffer back at barrier 6
# (256 threads each). Round k reads buf[127 - t] = 1000 k + 127 - t.
PINGPONG = """
    __co__ void pingpong(global s32 [4, 128] out) {
      parallel p by 1 : block {
        shared s32 [128] buf;
        parallel g by 2 : group-4, t by 128 : thread {
          foreach k in [4] {
            inthreads.async (g == 0) {
              buf.at(t) = k * 1000 + t;
              __bar_arrive(5, 256);
              __bar_sync(6, 256);
            }
            inthreads.async (g == 1) {
              __bar_sync(5, 256);
              out.at(k, t) = buf.at(127 - t);
              __bar_arrive(6, 256);
            }
          }
        }
      }
    }
"""


def test_two_warpgroups_hand_a_buffer_back_and_forth():
    out = np.zeros((4, 128), np.int32)
    run(PINGPONG, "pingpong", out)
    k, t = np.meshgrid(np.arange(4), np.arange(128), indexing="ij")
    np.testing.assert_array_equal(out, k * 1000 + 127 - t)


# ------------------------------------------------------------------------ runtime errors

IDS = """
    __co__ void ids(int id) {
      parallel t by 32 : thread
        __bar_sync(id, 32);
    }
"""


@pytest.mark.parametrize("bar", [0, 16])
def test_an_id_outside_1_to_15_is_an_error(bar):
    assert fault(IDS, "ids", bar) == textwrap.dedent(f"""\
        bar.co:3:5: runtime error: '__bar_sync' names barrier {bar}, but named barriers are numbered 1 to 15 (0 is the block barrier of 'sync.shared').
            3 |     __bar_sync(id, 32);
              |     ^~~~~~~~~~~~~~~~~~
          in kernel launched at bar.co:2:3, block (0), lane 0 (warp 0, lane 0)""")


COUNTS = """
    __co__ void counts(int n) {
      parallel t by 64 : thread
        __bar_arrive(1, n);
    }
"""


@pytest.mark.parametrize("n", [0, 48, 96])
def test_a_count_must_be_whole_warps_of_the_block(n):
    assert fault(COUNTS, "counts", n).splitlines()[0] == (
        f"bar.co:3:5: runtime error: '__bar_arrive' waits for {n} threads, but the count "
        f"must be a positive multiple of 32 and at most the 64 threads of the block's warps.")


def _interpreters_only():
    """The lanes of one warp naming two barriers are left to the hardware by the generated
    CUDA: on the CPU runtime the warp waits at both."""
    if not engines.interprets(engines._active[-1]):
        pytest.skip("checked by the interpreters only")


def test_one_phase_has_one_count():
    text = fault("""
        __co__ void mixed() {
          parallel t by 128 : thread {
            if (t < 32)
              __bar_arrive(1, 64);
            else
              __bar_sync(1, 128);
          }
        }
    """, "mixed")
    assert text.splitlines()[0] == (
        "bar.co:6:7: runtime error: '__bar_sync' arrives at barrier 1 with a count of 128 "
        "threads, but the barrier's current phase began with a count of 64.")
    assert text.splitlines()[-1] == "  in kernel launched at bar.co:2:3, block (0), lane 32 " \
                                    "(warp 1, lane 0)"


def test_the_lanes_of_a_warp_name_one_barrier():
    _interpreters_only()
    text = fault("""
        __co__ void per_lane() {
          parallel t by 32 : thread
            __bar_sync(1 + t % 2, 32);
        }
    """, "per_lane")
    assert text.splitlines()[0] == (
        "bar.co:3:5: runtime error: operands of collective '__bar_sync' differ between "
        "lane 0 and lane 1 (barrier 1 vs 2).")


def test_part_of_a_warp_is_divergent_control_flow():
    text = fault("""
        __co__ void part() {
          parallel t by 64 : thread {
            if (t < 16)
              __bar_sync(1, 64);
          }
        }
    """, "part")
    assert text.splitlines()[0] == (
        "bar.co:4:7: runtime error: '__bar_sync' is a collective of 64 lanes but lanes 16-31 "
        "of warp 0 are not active here (divergent control flow).")


def test_a_count_the_arriving_warps_do_not_make_up_is_a_deadlock():
    assert fault("""
        __co__ void short_count() {
          parallel p by 1 : block {
            parallel t by 128 : thread {
              if (t < 64)
                __bar_sync(3, 128);
            }
          }
        }
    """, "short_count") == textwrap.dedent("""\
        bar.co:5:9: runtime error: deadlock: every live lane of block (0) is blocked
            5 |         __bar_sync(3, 128);
              |         ^~~~~~~~~~~~~~~~~~
          warps 0-1 (lanes 0-63): bar.co:5:9 '__bar_sync(3, 128)': named barrier 3: arrived 64/128 threads
          warps 2-3 (lanes 64-127): barrier at end of parallel (bar.co:3:5): arrived 64/128
          in kernel launched at bar.co:2:3
        hint: named barrier 3 waits for 128 threads, but only 64 arrived before every warp was blocked or done: the count must be the threads (32 per warp) of the warps that reach the barrier in each phase.""")


# ------------------------------------------------------------------------ static errors

def _errors(body: str) -> list[str]:
    _, diags, _ = front_end("__co__ void f(f32 x, int n) {\n" + body + "\n}", "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" + (f" [{d.hint}]" if d.hint else "")
            for d in diags if d.severity == "error"]


@pytest.mark.parametrize("body, expected", [
    ("__bar_sync(1, 32);", ["2:1: '__bar_sync' must be inside parallel-by."]),
    ("parallel t by 32 : thread __bar_arrive(1);",
     ["2:27: '__bar_arrive' expects 2 arguments (barrier id, thread count) but got 1. "
      "[write '__bar_arrive(id, count)': a barrier id 1-15 and the number of threads it "
      "waits for]"]),
    ("parallel t by 32 : thread __bar_sync(x, 32);",
     ["2:38: the barrier id of '__bar_sync' must be an integer but got 'f32'."]),
    ("parallel t by 32 : thread __bar_sync(16, 32);",
     ["2:38: '__bar_sync' can not use named barrier 16: ids are 1 to 15."]),
    ("parallel t by 32 : thread __bar_sync(0, n);",
     ["2:38: '__bar_sync' can not use named barrier 0: ids are 1 to 15. [barrier 0 is the "
      "block barrier of 'sync.shared' and of the barriers croqvm inserts]"]),
    ("parallel t by 32 : thread __bar_sync(n, 48);",
     ["2:41: '__bar_sync' can not wait for 48 threads: the count must be a positive multiple "
      "of 32 and at most 1024. [a warp arrives for all of its 32 threads: count the threads "
      "of the warps that reach the barrier]"]),
    ("parallel t by 32 : thread __bar_sync(n, 2048);",
     ["2:41: '__bar_sync' can not wait for 2048 threads: the count must be a positive "
      "multiple of 32 and at most 1024. [a warp arrives for all of its 32 threads: count "
      "the threads of the warps that reach the barrier]"]),
    ("parallel t by 32 : thread __bar_sync(n, n * 32);", []),
    ("parallel t by 64 : thread __bar_sync(n, 128);",
     ["2:41: '__bar_sync' waits for 128 threads, but a block of this kernel has 64. [count "
      "the threads (32 per warp) of the warps that reach the barrier; this kernel's blocks "
      "have 2 warps]"]),
    ("parallel t by 48 : thread __bar_sync(n, 64);", []),       # 2 warps, the second partial
    ("parallel t by n : thread __bar_sync(1, 1024);", []),      # the block size is not known
])
def test_static_errors(body, expected):
    assert _errors(body) == expected


# ------------------------------------------------------------------------ race checking

def _race_report(source: str, func: str, *args):
    """The race report of ``func`` (None: no race), after checking that the native
    engine's C detector stops the run exactly when the reference engine reports a race
    (test_race.both runs both engines itself)."""
    if engines._active[-1] != "python":
        pytest.skip("test_race.both runs the call on both engines")
    ref = both(compile_src(source).module, func, *args)
    return None if ref[3] is None else ref[3][1]


def test_a_barrier_orders_what_its_arrivals_did_before_it():
    assert _race_report(HANDOFF, "handoff") is None
    assert _race_report(ROUNDS, "rounds") is None
    assert _race_report(PINGPONG, "pingpong", np.zeros((4, 128), np.int32)) is None


def test_a_write_after_the_arrival_races_with_the_waiters_read():
    """Warp 1 writes buf[32..63] after arriving; warp 2 (lanes 64-95) reads buf[63]
    first, once the phase completes: nothing orders the write before the read."""
    late = HANDOFF.replace("buf.at(t) = t * 10;\n            __bar_arrive(1, 128);",
                           "__bar_arrive(1, 128);\n            buf.at(t) = t * 10;")
    assert late != HANDOFF
    report = _race_report(late, "handoff")
    assert report.splitlines()[0] == (
        "bar.co:11:9: runtime error: data race on shared 'buf' element (63): read here, "
        "written at bar.co:8:9; no barrier or event orders them.")


def test_a_reused_barrier_orders_each_phase_with_its_own_arrivals():
    """ROUNDS without barrier 3: nothing orders warp 0's addition of round k + 1 with
    warp 1's read of round k (each phase of barrier 2 orders an addition before the read
    of its own round only); warp 0 runs ahead under the default schedule, so the read
    comes second."""
    unguarded = ROUNDS.replace("            __bar_sync(3, 64);\n", "")
    assert unguarded != ROUNDS
    report = _race_report(unguarded, "rounds")
    assert report.splitlines()[0] == (
        "bar.co:11:11: runtime error: data race on shared 'acc' element (0): read here, "
        "written at bar.co:8:11; no barrier or event orders them.")


def test_an_arrival_orders_nothing_for_the_warp_that_only_arrives():
    """HANDOFF with the readers arriving instead of syncing: they do not wait for the
    phase, so nothing orders warp 1's write of buf[63] before warp 2's read of it."""
    racy = HANDOFF.replace("__bar_sync(1, 128);", "__bar_arrive(1, 128);")
    assert racy != HANDOFF
    report = _race_report(racy, "handoff")
    assert report.splitlines()[0] == (
        "bar.co:11:9: runtime error: data race on shared 'buf' element (63): read here, "
        "written at bar.co:7:9; no barrier or event orders them.")


# ------------------------------------------------------------------------ generated CUDA

@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_generated_named_barriers_compile_for_the_gpu(arch):
    """barrier.arrive and barrier.sync with register operands, through the runtime's
    cq_bar_arrive and cq_bar_sync, build with nvcc for both flavours."""
    from croqvm.cuda import compile as cc
    from croqvm.cuda.emit import emit
    if engines._active[-1] != "python":
        pytest.skip("built once, not per engine")
    if cc.shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    text = emit(compile_src(HANDOFF).module, arch=arch).text
    assert "cq_bar_arrive(" in text and "cq_bar_sync(" in text
    assert cc.build(text, arch).read_bytes()[:4] == b"\x7fELF"
