"""Race checking (``check="race"``, ``croqvm run --check race``; LANGUAGE.md §7.5,
docs/EXECUTION.md §20): one short kernel per kind of race with its report,
written out by hand from the kernel (which statements, which warps and lanes, which
element, and why nothing orders them), the same kernels made correct reporting nothing,
and the programs and examples that must report nothing.

Every kernel runs on the reference engine, whose checker is the executable spec, and on
the native engine, whose C detector (native/race.c) must stop exactly the runs the
reference engine reports races in (then the driver runs them again there, for the report)
and give the same output, results and report (``both``).
"""
from __future__ import annotations

import io
import shlex
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cli.main import main
from croqvm.native import driver
from croqvm.running.program import available
from parity import assert_alike, outcome
from test_language_doc import EXAMPLES

NATIVE = available(engine="native")


def compile_src(source: str, filename: str = "race.co"):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), filename)


def detector_stops(module, func: str, *args, **options) -> bool:
    """Whether the native engine's race-checked run of ``func`` ran again on the reference
    engine: its C detector stopped it."""
    calls = []
    real = driver.reference_run

    def recording(*a, **k):
        calls.append(True)
        return real(*a, **k)
    driver.reference_run = recording
    try:
        outcome(module, func, args, {}, "native", check="race", **options)
    finally:
        driver.reference_run = real
    return bool(calls)


def both(source, func: str, *args, **options):
    """The race-checked run of ``func`` on the reference engine (``parity.outcome``), after
    checking that the native engine shows the same and that its detector stopped the run
    exactly when the reference engine reports races. ``jobs`` is the native engine's
    (the reference engine runs the blocks one after another)."""
    module = compile_src(source).module if isinstance(source, str) else source
    ref = outcome(module, func, args, {}, "python", check="race",
                  **{k: v for k, v in options.items() if k != "jobs"})
    if NATIVE:
        got = outcome(module, func, args, {}, "native", check="race", **options)
        assert_alike(got, ref, "native against python")
        racy = ref[3] is not None and "data race" in ref[3][1]
        assert detector_stops(module, func, *args, **options) == racy
    for given, after in zip(args, ref[1]):
        if isinstance(given, np.ndarray):
            given[...] = after          # as a run on the caller's arrays leaves them
    return ref


def checked(source: str, func: str, *args, **options) -> str:
    """Run ``func`` with the race check; the output it printed (there must be no race)."""
    ref = both(source, func, *args, **options)
    assert ref[3] is None, ref[3]
    return ref[2]


def races(source: str, func: str, *args, **options) -> str:
    """Run ``func`` with the race check; the report (there must be one)."""
    ref = both(source, func, *args, **options)
    assert ref[3] is not None and ref[3][0] == "KernelFault", ref[3]
    return ref[3][1]


def report(*lines: str) -> str:
    return "\n".join(lines)


def quote(n: int, line: str) -> tuple[str, str]:
    """Line ``n`` of a listing, ``line``, with a caret under the statement it holds (a
    statement's span ends before its ';')."""
    statement = line.strip().rstrip(";")
    return f"{n:>5} | {line}", f"      | {' ' * line.index(statement)}^{'~' * (len(statement) - 1)}"


# --------------------------------------------------------------------------- barriers

# Warp 0 (lanes 0-31) writes buf[0..31] and reads buf[63..32], which warp 1 (lanes 32-63)
# writes afterwards under the default schedule: nothing orders warp 0's reads and warp 1's
# writes. The first conflict found is warp 1's write of element 32, which lane 31 read.
FORGOTTEN_BARRIER = """
    __co__ void swap_halves() {
      s32 [64] out;
      parallel b by 1 : block, t by 64 : thread {
        shared s32 [64] buf;
        buf.at(t) = t + 1;
        BARRIER
        out.at(t) = buf.at(63 - t);
      }
      println(out.at(0), out.at(63));
    }
"""


def test_a_forgotten_barrier_is_a_race_between_warps():
    assert races(FORGOTTEN_BARRIER.replace("BARRIER", ""), "swap_halves") == report(
        "race.co:5:5: runtime error: data race on shared 'buf' element (32): written here, "
        "read at race.co:7:5; no barrier or event orders them.",
        *quote(5, "    buf.at(t) = t + 1;"),
        "  written in block (0), warp 1 (lanes 32-63)",
        "  in kernel launched at race.co:3:3",
        "race.co:7:5: note: read in block (0), warp 0 (lanes 0-31)",
        *quote(7, "    out.at(t) = buf.at(63 - t);"))


def test_the_barrier_orders_the_writes_before_the_reads():
    assert checked(FORGOTTEN_BARRIER.replace("BARRIER", "sync.shared;"),
                   "swap_halves") == "64 1\n"


THROUGH_VIEWS = """
__co__ void f(s32 [4, 6] a) {
  l = a.span_as(6, 4);
  parallel p by 2 : block {
    row = a.subspan(1, 6).at(p, 0).sqz();
    if (p == 0) row.at(4) = 1;
    if (p == 1) l.at(COLUMN) = 2;
  }
}
"""


def test_writes_through_views_race_on_the_element_of_the_buffer_they_name():
    # row.at(4) of block 0 is a.at(0, 4); l.at(1, 0) is element 4 of the reshaped a, too
    zeros = np.zeros((4, 6), np.int32)
    assert races(THROUGH_VIEWS.replace("COLUMN", "1, 0"), "f", zeros) == report(
        "race.co:6:17: runtime error: data race on global 'a' element (0, 4): written here, "
        "written at race.co:5:17; the blocks of one launch are not ordered with each other.",
        "    6 |     if (p == 1) l.at(1, 0) = 2;",
        "      |                 ^~~~~~~~~~~~~~",
        "  written in block (1), warp 0 (lane 0)",
        "  in kernel launched at race.co:3:3",
        "race.co:5:17: note: written in block (0), warp 0 (lane 0)",
        "    5 |     if (p == 0) row.at(4) = 1;",
        "      |                 ^~~~~~~~~~~~~")
    # l.at(2, 2) is element 10, a.at(1, 4): no other block writes it
    assert checked(THROUGH_VIEWS.replace("COLUMN", "2, 2"), "f", zeros) == ""


STRIDED_COPIES = """
__co__ void f(s32 [3, 4] t, global s32 [4, 8] a) {
  parallel p by 2 : block
    dma.copy t => a.subspan(1, 1).at(SHIFT).view(3, 4 : 8, 2).from(0, 0);
}
"""


def test_a_strided_copy_touches_its_elements_not_the_box_around_them():
    # block p writes a's elements 8i + 2j + p of its first three rows: the even ones
    # and the odd ones, whose boxes overlap; shifted by a row instead, both write row 1
    t, a = np.ones((3, 4), np.int32), np.zeros((4, 8), np.int32)
    assert checked(STRIDED_COPIES.replace("SHIFT", "0, p"), "f", t, a) == ""
    np.testing.assert_array_equal(a, np.arange(4)[:, None].repeat(8, 1) < 3)
    assert races(STRIDED_COPIES.replace("SHIFT", "p, 0"), "f", t, a).splitlines()[0] == (
        "race.co:3:5: runtime error: data race on global 'a' element (1, 0): written by "
        "'dma.copy' here, written by 'dma.copy' at race.co:3:5; the blocks of one launch are not ordered with each other.")


# --------------------------------------------------------------------------- lanes of a warp

def test_lanes_of_one_warp_storing_different_values_to_one_element_race():
    assert races("""
        __co__ void last_lane() {
          s32 [4] x;
          parallel t by 32 : thread
            x.at(0) = t;
          println(x.at(0));
        }
    """, "last_lane") == report(
        "race.co:4:5: runtime error: data race on global 'x' element (0): written here by "
        "several lanes of one warp; the lanes of a warp are not ordered within one "
        "instruction.",
        *quote(4, "    x.at(0) = t;"),
        "  written in block (0), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:3:3")


def test_lanes_of_one_warp_updating_one_element_race():
    assert races("""
        __co__ void total() {
          s32 [1] sum;
          parallel t by 8 : thread
            sum.at(0) += t;
          println(sum.at(0));
        }
    """, "total").splitlines()[0] == (
        "race.co:4:5: runtime error: data race on global 'sum' element (0): updated here by "
        "several lanes of one warp; the lanes of a warp are not ordered within one "
        "instruction.")


def test_lanes_of_one_warp_copying_into_one_shared_tile_race():
    # Each lane copies its own local tile (a copy per lane, §9.3.1) into the whole of dst:
    # lanes 0 and 1 are the first two whose copies meet.
    assert races("""
        __co__ void spread() {
          s32 [8] src {3};
          s32 [4, 8] out;
          parallel b by 1 : block, t by 4 : thread {
            shared s32 [8] dst;
            mine = dma.copy src => local;
            dma.copy mine.data => dst;
            sync.shared;
            foreach j in [8]
              out.at(t, j) = dst.at(j);
          }
          println(out.at(3, 7));
        }
    """, "spread") == report(
        "race.co:7:5: runtime error: data race on shared 'dst' element (0): written by "
        "'dma.copy' here by several lanes of one warp; the lanes of a warp are not ordered "
        "within one instruction.",
        *quote(7, "    dma.copy mine.data => dst;"),
        "  written by 'dma.copy' in block (0), warp 0 (lanes 0-1)",
        "  in kernel launched at race.co:4:3")


def test_lanes_storing_one_value_to_one_element_do_not_race():
    # Every lane of a level without a nested parallel runs the statement (§7.2.1): they
    # all store the same value, which no read can tell apart from one store.
    assert checked("""
        __co__ void same() {
          s32 [1] x;
          parallel t by 64 : thread
            x.at(0) = 7;
          println(x.at(0));
        }
    """, "same") == "7\n"


# --------------------------------------------------------------------------- events

# Warpgroup 0 (warps 0-3) fills a ring of two slots; warpgroup 1 (warps 4-7) reads them.
PIPELINE = """
    #define STAGES 2
    __co__ void ring() {
      s32 [8] out;
      parallel blk by 1 : block {
        shared event full[STAGES], empty[STAGES];
        shared s32 [STAGES] slot;
        parallel role by 2 : group-4 {
          inthreads.async (role == 0)
            foreach k in [8] {
              wait empty[k % STAGES];
              PRODUCE
            }
          inthreads.async (role == 1) {
            foreach s in [STAGES]
              trigger empty[s];
            foreach k in [8] {
              wait full[k % STAGES];
              CONSUME
            }
          }
        }
      }
      println(out.at(1), out.at(7));
    }
"""
FILL_THEN_TRIGGER = """slot.at(k % STAGES) = k * k + 1;
              trigger full[k % STAGES];"""
READ_THEN_TRIGGER = """out.at(k) = slot.at(k % STAGES);
              trigger empty[k % STAGES];"""


def pipeline(produce: str, consume: str) -> str:
    return PIPELINE.replace("PRODUCE", produce).replace("CONSUME", consume)


def test_the_event_protocol_orders_the_ring():
    assert checked(pipeline(FILL_THEN_TRIGGER, READ_THEN_TRIGGER), "ring") == "2 50\n"


def test_handing_a_slot_back_before_reading_it_races():
    # The consumer triggers empty[0] and then reads slot 0: the producer, released by that
    # trigger, refills slot 0 (element (0), round 2) before the read. The lane reported for
    # the read is the last lane of warp 4 that read the element. Since the four consumer
    # warps then read different rounds, their stores to out race too.
    text = races(pipeline(FILL_THEN_TRIGGER, """trigger empty[k % STAGES];
              out.at(k) = slot.at(k % STAGES);"""), "ring")
    first, second = text.split("\nrace.co:20:11: runtime error: ")
    assert first == report(
        "race.co:11:11: runtime error: data race on shared 'slot' element (0): written "
        "here, read at race.co:20:11; the trigger at race.co:19:11 completes the generation "
        "of 'empty[0]' that the wait at race.co:10:11 waits for, but it comes before the "
        "read.",
        *quote(11, "          slot.at(k % STAGES) = k * k + 1;"),
        "  written in block (0), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:4:3",
        "race.co:20:11: note: read in block (0), warp 4 (lane 159)",
        *quote(20, "          out.at(k) = slot.at(k % STAGES);"))
    assert second.startswith("data race on global 'out' element (0): written here, written "
                             "at race.co:20:11; no barrier or event orders them.")


def test_a_consumer_without_its_wait_is_told_which_wait_is_missing():
    # the consumer's 'wait full' is gone: the report names the event nothing waits on and
    # the producer's trigger of it, not the bootstrap triggers of 'empty'
    text = races(PIPELINE.replace("PRODUCE", FILL_THEN_TRIGGER)
                 .replace("wait full[k % STAGES];", "").replace("CONSUME", READ_THEN_TRIGGER),
                 "ring")
    assert text.splitlines()[0] == (
        "race.co:19:11: runtime error: data race on shared 'slot' element (0): read here, "
        "written at race.co:11:11; nothing waits on 'full' before this read; the lanes of the "
        "write trigger it at race.co:12:11.")


def test_signalling_a_slot_full_before_filling_it_races():
    # The producer triggers full[0] and then writes slot 0; the consumer, released by that
    # trigger, reads slot 0 before the write (warp 4, all lanes) while lane 31 of warp 0
    # wrote it last.
    assert races(pipeline("""trigger full[k % STAGES];
              slot.at(k % STAGES) = k * k + 1;""", READ_THEN_TRIGGER), "ring") == report(
        "race.co:19:11: runtime error: data race on shared 'slot' element (0): read here, "
        "written at race.co:12:11; the trigger at race.co:11:11 completes the generation of "
        "'full[0]' that the wait at race.co:18:11 waits for, but it comes before the write.",
        *quote(19, "          out.at(k) = slot.at(k % STAGES);"),
        "  read in block (0), warp 4 (lanes 128-159)",
        "  in kernel launched at race.co:4:3",
        "race.co:12:11: note: written in block (0), warp 0 (lane 31)",
        *quote(12, "          slot.at(k % STAGES) = k * k + 1;"))


def test_a_producer_that_refills_before_the_consumer_read_races():
    # Lane 32 writes v and triggers e three times; lane 0 waits for each generation and
    # reads v. Nothing tells the producer that the read is done before the next write:
    # the protocol lacks an event (the trigger publishes the write before it, it is not
    # misplaced).
    assert races("""
        __co__ void rounds() {
          parallel blk by 1 : block {
            shared event<1> e;
            shared s32 [1] v;
            parallel t by 64 : thread {
              foreach k in [3] {
                if (t == 32) {
                  v.at(0) = k + 1;
                  trigger e;
                }
                if (t == 0) {
                  wait e;
                  println(v.at(0));
                }
              }
            }
          }
        }
    """, "rounds").splitlines()[0] == (
        "race.co:8:11: runtime error: data race on shared 'v' element (0): written here, "
        "read at race.co:13:11; no barrier or event orders them.")


# --------------------------------------------------------------------------- async copies

COPY = """
    __co__ void early() {
      s32 [32] a;
      foreach i in [32]
        a.at(i) = i + 1;
      s32 [32] out;
      parallel b by 1 : block {
        shared s32 [32] dst;
        f = dma.copy.async a => dst;
        BEFORE
        wait f;
        AFTER
      }
      println(out.at(3));
    }
"""
READ_DST = """parallel t by 32 : thread
          out.at(t) = dst.at(t);"""


def test_reading_an_async_copys_destination_before_its_wait_races():
    assert races(COPY.replace("BEFORE", READ_DST).replace("AFTER", ""), "early") == report(
        "race.co:10:7: runtime error: data race on shared 'dst' element (0): read here, "
        "written by the async copy 'dma.copy' at race.co:8:5; the copy is in flight until "
        "its wait at race.co:11:5.",
        *quote(10, "      out.at(t) = dst.at(t);"),
        "  read in block (0), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:6:3",
        "race.co:8:5: note: written by the async copy 'dma.copy' in block (0), warp 0 "
        "(lanes 0-31)",
        *quote(8, "    f = dma.copy.async a => dst;"))


def test_reading_an_async_copys_destination_after_its_wait_is_ordered():
    assert checked(COPY.replace("BEFORE", "").replace("AFTER", READ_DST), "early") == "4\n"


def test_overwriting_an_in_flight_copys_source_races():
    # Each lane copies the shared src into its own local buffer (a copy per lane, §9.3.1);
    # lane 0's copy is the first that lane 0's write of src[0] meets.
    assert races("""
        __co__ void clobber() {
          s32 [32] out;
          parallel b by 1 : block {
            shared s32 [32] src;
            parallel t by 32 : thread
              src.at(t) = t + 1;
            f = dma.copy.async src => local;
            parallel t by 32 : thread
              src.at(t) = 0;
            wait f;
            parallel t by 32 : thread
              out.at(t) = f.data.at(t);
          }
          println(out.at(3));
        }
    """, "clobber") == report(
        "race.co:9:7: runtime error: data race on shared 'src' element (0): written here, "
        "read by the async copy 'dma.copy' at race.co:7:5; the copy is in flight until its "
        "wait at race.co:10:5.",
        *quote(9, "      src.at(t) = 0;"),
        "  written in block (0), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:3:3",
        "race.co:7:5: note: read by the async copy 'dma.copy' in block (0), warp 0 (lane 0)",
        *quote(7, "    f = dma.copy.async src => local;"))


CUT_COPY = """
    __co__ void cut(s32 n) {
      s32 [8] out;
      parallel b by 1 : block {
        shared s32 [8] src;
        parallel t by 8 : thread
          src.at(t) = t + 1;
        f = dma.copy.async src => out.view(n).from(0);
        parallel t by 4 : thread
          src.at(t + 4) = 0;
        wait f;
      }
      println(out.at(1));
    }
"""


def test_a_copy_cut_to_its_destination_reads_only_the_part_it_copies():
    # §9.5.1: with n = 4 the copy reads src[0..3] only; with n = 8 it reads src[4] too
    assert checked(CUT_COPY, "cut", 4) == "2\n"
    assert races(CUT_COPY, "cut", 8).startswith(
        "race.co:9:7: runtime error: data race on shared 'src' element (4): written here, "
        "read by the async copy 'dma.copy' at race.co:7:5;")


# --------------------------------------------------------------------------- blocks, launches

def test_blocks_of_one_launch_updating_one_element_race():
    assert races("""
        __co__ void histogram() {
          s32 [32] acc;
          parallel p by 4 : block, t by 32 : thread
            acc.at(t) += p + 1;
          println(acc.at(0));
        }
    """, "histogram") == report(
        "race.co:4:5: runtime error: data race on global 'acc' element (0): updated here, "
        "updated at race.co:4:5; the blocks of one launch are not ordered with each other.",
        *quote(4, "    acc.at(t) += p + 1;"),
        "  updated in block (1), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:3:3",
        "race.co:4:5: note: updated in block (0), warp 0 (lanes 0-31)",
        *quote(4, "    acc.at(t) += p + 1;"))




# Each block prints before and after a read of what its other warp writes unordered: the
# native run prints as it goes and stops at the race; the reference engine's run, which
# writes the report, prints only what follows, so no line comes twice or goes missing.
PRINTS_AROUND_A_RACE = """
__co__ void told(global s32 [128] out) {
  parallel p by 2 : block, t by 64 : thread {
    shared s32 [64] buf;
    if (t == 0) println("block", p, "before");
    buf.at(t) = t;
    out.at(p * 64 + t) = buf.at(63 - t);
    if (t == 0) println("block", p, "after");
  }
}
"""


def test_a_racy_run_prints_each_line_once():
    ref = both(PRINTS_AROUND_A_RACE, "told", np.zeros(128, np.int32))
    assert ref[2] == "block 0 before\nblock 0 after\nblock 1 before\nblock 1 after\n"
    assert "data race on shared 'buf'" in ref[3][1]


def test_a_pipeline_missing_its_wait_is_reported_by_both_engines():
    # programs/matmul_1p1c.co without the consumer's `wait full[st]`: its mma.load reads a
    # stage the producer's copy writes, with nothing between them
    source = (Path(__file__).resolve().parent.parent / "programs" / "matmul_1p1c.co").read_text()
    racy = source.replace("          wait full[st];\n", "")
    assert racy != source
    module = croqvm.compile(racy, "matmul_1p1c.co").module
    rng = np.random.default_rng(1)
    a, b = (rng.uniform(-1, 1, (64, 64)).astype(np.float16) for _ in range(2))
    text = races(module, "gemm_ws", a, b, np.zeros((64, 64), np.float32))

    def line(statement: str) -> int:
        return racy[:racy.index(statement)].count("\n") + 1
    load, copy, trigger = (line(s) for s in ("fa = mma.load", "dma.copy.zfill a",
                                             "trigger full[st]"))
    assert text.splitlines()[0] == (
        f"matmul_1p1c.co:{load}:13: runtime error: data race on shared 'sa[0]' element "
        f"(0, 0): read by 'mma.load' here, written by 'dma.copy' at matmul_1p1c.co:{copy}:11; "
        f"nothing waits on 'full' before this 'mma.load'; the lanes of the 'dma.copy' trigger "
        f"it at matmul_1p1c.co:{trigger}:11.")


@pytest.mark.skipif(not NATIVE, reason="the native engine is not built")
def test_blocks_on_threads_give_the_serial_report():
    # the native engine runs the blocks of one launch on threads: its detector shares the
    # shadow of global memory between them, and a race-free run stays on native
    racy = """
        __co__ void histogram() {
          s32 [32] acc;
          parallel p by 8 : block, t by 32 : thread
            acc.at(t) += p + 1;
          println(acc.at(0));
        }
    """
    module = compile_src(racy).module
    serial = outcome(module, "histogram", (), {}, "python", check="race")
    assert "data race" in serial[3][1]
    assert_alike(outcome(module, "histogram", (), {}, "native", check="race", jobs=2), serial,
                 "native on two threads against python")
    assert detector_stops(module, "histogram", jobs=2)
    free = compile_src(racy.replace("acc.at(t) +=", "acc.at(p * 32 + t) =")
                       .replace("s32 [32] acc", "s32 [256] acc")).module
    assert_alike(outcome(free, "histogram", (), {}, "native", check="race", jobs=2),
                 outcome(free, "histogram", (), {}, "python", check="race"), "race-free")
    assert not detector_stops(free, "histogram", jobs=2)

def test_launches_are_ordered():
    assert checked("""
        __co__ void twice() {
          s32 [64] a;
          parallel p by 2 : block, t by 32 : thread
            a.at(p # t) = p # t;
          parallel p by 2 : block, t by 32 : thread
            a.at(63 - p # t) += 1;
          println(a.at(0), a.at(63));
        }
    """, "twice") == "1 64\n"


ASYNC = """
    __co__ void later() {
      s32 [64] a;
      s32 [64] b;
      parallel.async p by 2 : block, t by 32 : thread
        a.at(p # t) = p # t + 1;
      SYNC
      parallel LAUNCH p by 2 : block, t by 32 : thread
        b.at(p # t) = a.at(p # t) * 2;
      sync.global;
      println(b.at(5));
    }
"""


def async_launch(sync: str, launch: str) -> str:
    return ASYNC.replace("SYNC", sync).replace("parallel LAUNCH", f"parallel{launch}")


def test_an_async_launch_is_not_ordered_with_a_later_async_launch():
    assert races(async_launch("", ".async"), "later") == report(
        "race.co:8:5: runtime error: data race on global 'a' element (0): read here, written "
        "at race.co:5:5; the kernel launched at race.co:4:3 is asynchronous, and neither "
        "'sync.global' nor a synchronous launch comes between them.",
        *quote(8, "    b.at(p # t) = a.at(p # t) * 2;"),
        "  read in block (0), warp 0 (lanes 0-31)",
        "  in kernel launched at race.co:7:3",
        "race.co:5:5: note: written in block (0), warp 0 (lanes 0-31)",
        *quote(5, "    a.at(p # t) = p # t + 1;"),
        "  in kernel launched at race.co:4:3")


@pytest.mark.parametrize("sync, launch", [("sync.global;", ".async"), ("", "")])
def test_sync_global_or_a_synchronous_launch_orders_an_async_launch(sync, launch):
    assert checked(async_launch(sync, launch), "later") == "12\n"


STREAMS = """
    __co__ void f(global s32 [64] a, global s32 [64] b, stream s, stream t) {
      FIRST p by 2 : block, q by 32 : thread
        a.at(p # q) = p # q + 1;
      SECOND p by 2 : block, q by 32 : thread
        b.at(p # q) = a.at(p # q) * 2;
      HOST
    }"""
# (first launch, second launch, host code after them, whether the reference reports a race)
STREAM_CASES = [
    ("parallel.async<s>", "parallel.async<t>", "", True),       # two streams: unordered
    ("parallel.async<s>", "parallel.async<s>", "sync.global;", False),   # one stream: ordered
    ("parallel.async<s>", "parallel<t>", "", True),
    ("parallel.async<s>", "parallel<s>", "println(a.at(3), b.at(3));", False),
    ("parallel.async<s>", "parallel<t>", "println(b.at(3));", True),
    ("parallel.async<s>", "parallel", "println(a.at(3));", False),
    ("parallel.async", "parallel.async<t>", "println(b.at(3));", True),
    ("parallel<s>", "parallel.async<t>", "sync.global; println(b.at(3));", False),
    # the host reads b while the async launch that writes it may still run
    ("parallel<s>", "parallel.async<t>", "println(b.at(3));", True)]


@pytest.mark.parametrize("options", [{}, {"jobs": 2}, {"schedule": "random", "seed": 5}],
                         ids=["rr", "threads", "random"])
@pytest.mark.parametrize("first, second, host, racy", STREAM_CASES)
def test_launches_on_streams_are_ordered_per_stream_on_both_engines(first, second, host,
                                                                    racy, options):
    source = STREAMS.replace("FIRST", first).replace("SECOND", second).replace("HOST", host)
    ref = both(source, "f", np.zeros(64, np.int32), np.zeros(64, np.int32), None, None,
               **options)
    assert (ref[3] is not None and "data race" in ref[3][1]) == racy, ref[3]


# LANGUAGE.md §7.1.4: the grid barrier of a cooperative launch orders what every block did
# before it before what any does after it; without it, block b reads a[3 - b] that another
# block writes, and after it two blocks writing one element still race
COOPERATIVE = """
    __co__ auto exchange() {
      s32 [4] a;
      s32 [4] b;
      parallel bx by 4 : block<cooperative> {
        a.at(bx) = (bx + 1) * 10;
        BARRIER
        b.at(AFTER) = a.at(3 - bx);
        sync.barrier : block;
      }
      return b;
    }"""
COOPERATIVE_CASES = [("sync.barrier : block;", "bx", False), ("", "bx", True),
                     ("sync.barrier : block;", "bx / 2", True)]


@pytest.mark.parametrize("options", [{}, {"schedule": "random", "seed": 7}],
                         ids=["rr", "random"])
@pytest.mark.parametrize("barrier, after, racy", COOPERATIVE_CASES)
def test_the_grid_barrier_orders_the_blocks_of_a_cooperative_launch(barrier, after, racy,
                                                                     options):
    source = COOPERATIVE.replace("BARRIER", barrier).replace("AFTER", after)
    ref = both(source, "exchange", **options)
    assert (ref[3] is not None and "data race" in ref[3][1]) == racy, ref[3]
    if not racy:
        assert ref[0].tolist() == [40, 30, 20, 10]


@pytest.mark.parametrize("options", [{}, {"schedule": "random", "seed": 7}, {"jobs": 2}],
                         ids=["rr", "random", "threads"])
@pytest.mark.parametrize("racy", [False, True])
def test_a_cluster_scope_trigger_orders_its_own_block_only(racy, options):
    # tests/test_cluster_trigger.py's pipeline: a block of a cluster reading what the other
    # block wrote to global memory races, however the cluster's events order them (§10.8)
    from test_cluster_trigger import OWN_BLOCK, PIPELINE
    ref = both(PIPELINE if racy else OWN_BLOCK, "pipeline", **options)
    assert (ref[3] is not None and "data race" in ref[3][1]) == racy, ref[3]


def test_the_host_reading_what_an_async_launch_writes_races():
    text = races("""
        __co__ void peek() {
          s32 [64] a;
          parallel.async p by 2 : block, t by 32 : thread
            a.at(p # t) = p # t + 1;
          println(a.at(5));
        }
    """, "peek")
    assert text.splitlines()[:5] == [
        "race.co:5:3: runtime error: data race on global 'a' element (5): read here, written "
        "at race.co:4:5; the kernel launched at race.co:3:3 is asynchronous, and neither "
        "'sync.global' nor a synchronous launch comes between them.",
        *quote(5, "  println(a.at(5));"),
        "  read on the host lane",
        "  in host code of 'peek'"]


# --------------------------------------------------------------------------- outer level

def test_an_outer_level_effect_is_published_to_the_instance():
    # LANGUAGE.md §7.2: the lane that performs base.at(0) = ... publishes it to the other
    # lanes of its block; the region's barriers order the rest.
    assert checked("""
        __co__ void outer() {
          s32 [2] out;
          parallel b by 2 : block {
            shared s32 [1] base;
            base.at(0) = 10 * (b + 1);
            println("block", b, "sets", base.at(0));
            parallel t by 64 : thread {
              if (t == 63)
                out.at(b) = base.at(0) + t;
            }
          }
          println(out.at(0), out.at(1));
        }
    """, "outer") == "block 0 sets 10\nblock 1 sets 20\n73 83\n"


OUTER = """
    __co__ void outer() {
      s32 [64] out;
      parallel b by 1 : block {
        shared s32 [1] x;
        x.at(0) = 1;
        STATEMENTS
        parallel t by 64 : thread
          out.at(t) = v;
      }
      println(out.at(0), out.at(63));
    }
"""


def test_an_outer_level_statement_reading_what_its_own_effect_writes_is_no_race():
    # Every lane reads x for x = x + 1, but only the performing lane's sum is stored; the
    # others' reads, after the store under the default schedule, are not used (§7.2.2).
    assert checked(OUTER.replace("STATEMENTS", "x.at(0) = x.at(0) + 1;\n        s32 v = "
                                 "x.at(0);"), "outer") == "2 2\n"


def test_an_outer_level_read_and_a_later_outer_level_write_race():
    # Warp 0 reads x, then performs the write of the next statement before warp 1 reads x
    # for its own v: the lanes of warp 1 keep 7, those of warp 0 keep 1.
    assert races(OUTER.replace("STATEMENTS", "s32 v = x.at(0);\n        x.at(0) = 7;"),
                 "outer").splitlines()[0] == (
        "race.co:6:5: runtime error: data race on shared 'x' element (0): read here, written "
        "at race.co:7:5; no barrier or event orders them.")


# --------------------------------------------------------------------------- the report

def test_every_race_is_listed_once_per_pair_of_statements_up_to_a_cap():
    # Twelve statements each write an element warp 0 read before: twelve races, ten shown.
    writes = "\n".join(f"        if (t == 32) buf.at({k}) = {k + 1};" for k in range(12))
    text = races(f"""
        __co__ void many() {{
          s32 [64] out;
          parallel b by 1 : block, t by 64 : thread {{
            shared s32 [16] buf;
            out.at(t) = buf.at(t % 16);
{writes}
          }}
        }}
    """, "many")
    assert text.count("runtime error: data race") == 10
    assert text.endswith("\n... and 2 more data races")


def test_races_come_before_the_error_that_stopped_the_run():
    text = races(FORGOTTEN_BARRIER.replace("BARRIER", "").replace(
        "println(out.at(0), out.at(63));", "println(100 / (out.at(0) - out.at(0)));"),
        "swap_halves")
    assert text.count("runtime error: data race") == 1
    assert text.index("runtime error: data race") < \
        text.index("race.co:9:3: runtime error: integer division by zero.")


def test_a_random_schedule_finds_the_same_race():
    for seed in range(1, 4):
        text = races(FORGOTTEN_BARRIER.replace("BARRIER", ""), "swap_halves",
                     schedule="random", seed=seed)
        assert "no barrier or event orders them" in text


def test_cli_reports_races_with_status_3(tmp_path, capsys):
    path = tmp_path / "race.co"
    path.write_text(textwrap.dedent(FORGOTTEN_BARRIER.replace("BARRIER", "")).lstrip("\n"))
    assert main(["run", str(path), "--check", "race"]) == 3
    err = capsys.readouterr().err
    assert f"{path}:5:5: runtime error: data race on shared 'buf' element (32)" in err
    assert main(["run", str(path)]) == 3            # the default checks too
    assert main(["run", str(path), "--check", "none"]) == 0


def test_a_race_free_run_returns_its_results():
    prog = compile_src("""
        __co__ auto squares(s32 [N] x) {
          s32 [N] y;
          parallel p by cdiv(N, 32) : block, t by 32 : thread
            if (p # t < N)
              y.at(p # t) = x.at(p # t) * x.at(p # t);
          return y;
        }
    """)
    x = np.arange(40, dtype=np.int32)
    got = both(prog.module, "squares", x)[0]
    np.testing.assert_array_equal(got, x * x)


# --------------------------------------------------------------------------- no false alarms

TUTORIAL = Path(__file__).resolve().parent / "tutorial"


def _f16_matmul_bound(a, b):
    """How far c = a @ b^T accumulated in f16 (the kernels' ``mma.fill.f16``) may lie from
    the exact sum: each of the K steps rounds once to f16 (u = 2^-11), so
    |c - exact| <= gamma_K * sum_k |a b| (Higham, §3.1); the f64 reference adds its own
    gamma_K with u = 2^-53."""
    k = a.shape[1]
    gamma = sum(k * u / (1 - k * u) for u in (2.0 ** -11, 2.0 ** -53))
    return gamma * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)).T)


@pytest.mark.parametrize("name, defines", [
    ("ch5_persistent.co", {}), ("ch5_persistent.co", {"NUM_SMS": "3"}),
    ("ch6_pipeline.co", {})])
def test_the_tutorials_f16_kernels_are_race_free(name, defines):
    prog = croqvm.compile_file(TUTORIAL / name, defines=defines)
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (128, 256)).astype(np.float16)
    b = rng.uniform(-1, 1, (128, 256)).astype(np.float16)
    c = np.zeros((128, 128), np.float16)
    checked(prog.module, "matmul", a, b, c)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.all(np.abs(c - exact) <= _f16_matmul_bound(a, b))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ch3_matmul_scalar.co", "ch3_matmul_dma.co"])
def test_the_tutorials_s32_kernels_are_race_free(name):
    prog = croqvm.compile_file(TUTORIAL / name)
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, (128, 256), dtype=np.int32)
    b = rng.integers(-100, 100, (256, 256), dtype=np.int32)
    got = both(prog.module, "matmul", a, b)[0]
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


def _doc_examples():
    """LANGUAGE.md's runnable examples that run to the end (exit status 0)."""
    return [p for p in EXAMPLES if p.values[2] == 0 and p.values[1].startswith("$ croqvm run ")]


@pytest.mark.parametrize("source, shown, status", _doc_examples())
def test_the_language_references_examples_are_race_free(source, shown, status, tmp_path,
                                                         monkeypatch):
    command, _, expected = shown.partition("\n")
    argv = shlex.split(command[len("$ croqvm "):]) + ["--check", "race"]
    name = next(a for a in argv if a.endswith(".co"))
    (tmp_path / name).write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert (main(argv), terminal.getvalue()) == (0, expected)


# --------------------------------------------------------------------------- trigger-after

# Warp 0 copies `a` into the shared `box` asynchronously and binds the copy to `full`
# (§10.7); warp 1 waits for `full` and reads `box`. PRODUCER and CONSUMER add statements.
BOUND = """
    __co__ void bound() {
      s32 [32] a {4};
      s32 [32] out;
      parallel b by 1 : block {
        shared s32 [32] box;
        shared event full;
        parallel g by 2 : group, t by 32 : thread {
          inthreads.async (g == 0) {
            f = dma.copy.async a => box;
            trigger full after f;
            PRODUCER
          }
          inthreads.async (g == 1) {
            CONSUMER
            out.at(t) = box.at(t);
          }
        }
      }
      println(out.at(31));
    }
"""


def test_a_copy_bound_to_an_event_lands_before_its_waiters_read():
    assert checked(BOUND.replace("PRODUCER", "").replace("CONSUMER", "wait full;"),
                   "bound") == "4\n"


def test_reading_a_bound_copys_destination_without_waiting_for_the_event_races():
    text = races(BOUND.replace("PRODUCER", "").replace("CONSUMER", ""), "bound")
    assert text.splitlines()[0] == (
        "race.co:15:9: runtime error: data race on shared 'box' element (0): read here, "
        "written by the async copy 'dma.copy' at race.co:9:9; the copy is in flight: "
        "nothing has waited for it yet."), text


def test_the_binding_warp_is_not_ordered_after_its_copy():
    # trigger-after does not wait: the producer's own write meets its copy in flight.
    text = races(BOUND.replace("PRODUCER", "box.at(t) = 1;").replace("CONSUMER", "wait full;"),
                 "bound")
    assert text.splitlines()[0] == (
        "race.co:11:9: runtime error: data race on shared 'box' element (0): written here, "
        "written by the async copy 'dma.copy' at race.co:9:9; the copy is in flight until "
        "its wait at race.co:14:9."), text


def test_a_bound_copy_is_ordered_before_what_follows_its_waiter():
    # Warp 1 waits for `full`, which lands the bound copy for it, and hands on to warp 2
    # through `seen`: warp 2's read of `box` is ordered after the copy's write; without
    # the wait for `seen` it is not, and the report names the missing wait.
    def relay(wait: str) -> str:
        return f"""
            __co__ void relay() {{
              s32 [32] a {{4}};
              s32 [32] out;
              parallel b by 1 : block {{
                shared s32 [32] box;
                shared event full, seen;
                parallel g by 3 : group, t by 32 : thread {{
                  inthreads.async (g == 0) {{
                    f = dma.copy.async a => box;
                    trigger full after f;
                  }}
                  inthreads.async (g == 1) {{
                    wait full;
                    trigger seen;
                  }}
                  inthreads.async (g == 2) {{
                    {wait}
                    out.at(t) = box.at(t);
                  }}
                }}
              }}
              println(out.at(31));
            }}
        """
    assert checked(relay("wait seen;"), "relay") == "4\n"
    assert races(relay(""), "relay").splitlines()[0] == (
        "race.co:18:9: runtime error: data race on shared 'box' element (0): read here, "
        "written by the async copy 'dma.copy' at race.co:9:9; nothing waits on 'seen' "
        "before this read; the lanes of the copy 'dma.copy' trigger it at race.co:14:9.")


def test_a_ring_with_cyclic_generations_and_bound_copies_is_ordered():
    # Seven items through two slots: every refill waits for the slot's `empty`
    # generation of that round and every read for its `full` one (§10.6, §10.7).
    from test_semantics_events import ring
    checked(ring(7), "ring", np.arange(28, dtype=np.int32).reshape(7, 4))


def test_a_parity_wait_that_passes_two_generations_early_does_not_order_the_read():
    # Warp 1 publishes box = 1 as generation 0 of `full`, then box = 2 as generation 1
    # after warp 0's hand-back; warp 0's wait for generation 2 (slot 0 of event[1], phase
    # 0) passes on generation 0's parity before generation 1 (§10.6), and its read of
    # box meets the unordered write of the second round.
    text = races("""
        __co__ void early() {
          parallel b by 1 : block {
            shared event full[1], back;
            shared s32 [1] box;
            parallel g by 2 : group, t by 32 : thread {
              inthreads.async (g == 0) {
                wait full.at(0);
                trigger back;
                wait full.at(2);
                println(box.at(0));
              }
              inthreads.async (g == 1) {
                box.at(0) = 1;
                trigger full.at(0);
                wait back;
                box.at(0) = 2;
                trigger full.at(1);
              }
            }
          }
        }
    """, "early")
    assert "data race on shared 'box' element (0)" in text.splitlines()[0], text


# --------------------------------------------------------------------------- atomics (§4.5)

ATOMICS = """
    __co__ void f(global s32 [4] out) {
      parallel p by 64 : thread {
        __atomic_add(out.at(0), 1);
        if (p == 40) out.at(0) = 5;
      }
    }
    __co__ void g(global s32 [4] out) {
      parallel p by 64 : thread {
        shared s32 [4] s;
        __atomic_max(s.at(p % 4), p);
        __atomic_add(out.at(p % 4), 1);
      }
    }"""


def test_atomics_never_race_with_each_other():
    out = np.zeros(4, np.int32)
    assert checked(ATOMICS, "g", out) == ""
    np.testing.assert_array_equal(out, [16, 16, 16, 16])


def test_an_atomic_races_with_a_plain_access():
    assert races(ATOMICS, "f", np.zeros(4, np.int32)) == report(
        "race.co:4:18: runtime error: data race on global 'out' element (0): written here, "
        "updated atomically at race.co:3:5; no barrier or event orders them.",
        "    4 |     if (p == 40) out.at(0) = 5;",
        "      |                  ^~~~~~~~~~~~~",
        "  written in block (0), warp 1 (lane 40)",
        "  in kernel launched at race.co:2:3",
        "race.co:3:5: note: updated atomically in block (0), warp 0 (lane 31)",
        *quote(3, "    __atomic_add(out.at(0), 1);"))


# Atomics against the other accesses, each kernel racy or not as its comment says; ``both``
# checks that the native detector stops exactly the racy runs, with the reference report,
# serially, on two threads (a kernel whose atomics reach global memory runs its blocks one
# after another there) and under the random schedule.
ATOMIC_KERNELS = {
    # warp 1's atomics come after warp 0 read s[0], with no barrier between them (each
    # block its own s: on threads, the blocks run at once)
    "warps": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by 4 : block, p by 64 : thread {
            shared s32 [4] s;
            __atomic_add(s.at(0), 1);
            BARRIER
            out.at(b # p) = s.at(0);
          }
        }""", True),
    # other blocks of the launch add to out[0] while block 0 reads it
    "blocks": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by 4 : block, t by 32 : thread {
            __atomic_add(out.at(0), 1);
            if (t == 0) out.at(1 + b) = out.at(0);
          }
        }""", True),
    # launches are ordered, and so is the host after them, atomics included
    "launches": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by 4 : block, t by 32 : thread
            __atomic_max(out.at(t), b * 32 + t);
          parallel b by 2 : block, t by 32 : thread
            out.at(32 + t) = out.at(t) * 2;
          __atomic_add(out.at(0), 1);
          println(out.at(0), out.at(33));
        }""", False),
    # block 1's copy reads the tile block 0 updated atomically
    "tile": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by BLOCKS : block {
            shared s32 [256] s;
            dma.copy out => s;
            parallel t by 32 : thread
              __atomic_add(out.at(t), 1);
          }
        }""", True),
    # an atomic on the source, or the destination, of an async copy in flight
    "in flight": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by 1 : block {
            shared s32 [256] s;
            f = dma.copy.async out => s;
            parallel t by 32 : thread
              __atomic_add(WHERE.at(t), 1);
            wait f;
          }
        }""", True),
    # the read of an outer-level statement and the atomic of its own effect
    "own effect": ("""
        __co__ void f(global s32 [256] out) {
          parallel b by 2 : block
            __atomic_add(out.at(b), out.at(b) + 1);
          println(out.at(0), out.at(1));
        }""", False),
}
ATOMIC_CASES = [
    ("warps", {"BARRIER": ""}, True), ("warps", {"BARRIER": "sync.barrier : block;"}, False),
    ("blocks", {}, True), ("launches", {}, False),
    ("tile", {"BLOCKS": "2"}, True), ("tile", {"BLOCKS": "1"}, False),
    ("in flight", {"WHERE": "out"}, True), ("in flight", {"WHERE": "s"}, True),
    ("own effect", {}, False)]


@pytest.mark.parametrize("options", [{}, {"jobs": 2}, {"schedule": "random", "seed": 3}],
                         ids=["rr", "threads", "random"])
@pytest.mark.parametrize("name, fill, racy", ATOMIC_CASES,
                         ids=[f"{n}-{'racy' if r else 'free'}-{i}"
                              for i, (n, _, r) in enumerate(ATOMIC_CASES)])
def test_atomics_race_with_plain_accesses_on_both_engines(name, fill, racy, options):
    source = ATOMIC_KERNELS[name][0]
    for key, value in fill.items():
        source = source.replace(key, value)
    ref = both(source, "f", np.zeros(256, np.int32), **options)
    assert (ref[3] is not None and "data race" in ref[3][1]) == racy, ref[3]


@pytest.mark.skipif(not NATIVE, reason="the native engine is not built")
def test_global_atomics_on_threads_lose_no_update():
    # the blocks of a kernel whose atomics reach global memory run one after another,
    # so the count is every block's and the old values follow the serial order
    module = compile_src("""
        __co__ void f(global s32 [513] out) {
          parallel b by 16 : block, t by 32 : thread
            foreach i in [8]
              out.at(1 + b * 32 + t) = __atomic_add(out.at(0), 1);
        }""").module
    ref = outcome(module, "f", (np.zeros(513, np.int32),), {}, "python")
    got = outcome(module, "f", (np.zeros(513, np.int32),), {}, "native", jobs=2)
    assert_alike(got, ref, "native on two threads against python")
    assert ref[3] is None and ref[1][0][0] == 16 * 32 * 8


# LANGUAGE.md §11.8: mma.scale reads its row scales as a tile; warp 1 writes rows[3],
# which warp 0's mma.scale read with nothing between them, or rows[20], which it does not
SCALED = """
    __co__ void f(global f16 [16, 16] a, global f16 [8, 16] b, global f32 [16, 8] c) {
      parallel p by 1 : block {
        shared f32 [32] rows;
        parallel t by 32 : thread
          rows.at(t) = __to<f32>(t);
        parallel w by 2 : group {
          acc = mma.fill.f32 0.0f;
          mma.row.row acc, a, b;
          mma.scale acc, rows.subspan(16).at(0), 1.0f;
          if (w == 1) { rows.at(WHERE) = 5.0f; }
          if (w == 0) { mma.store acc, c; }
        }
      }
    }"""


@pytest.mark.parametrize("schedule", ["rr", "random"])
@pytest.mark.parametrize("where, racy", [("3", True), ("20", False)])
def test_the_row_scales_of_mma_scale_are_a_tile_it_reads(where, racy, schedule):
    a, b = np.ones((16, 16), np.float16), np.ones((8, 16), np.float16)
    ref = both(SCALED.replace("WHERE", where), "f", a, b, np.zeros((16, 8), np.float32),
               schedule=schedule, seed=5)
    if racy:
        assert ref[3][1].splitlines()[0] == (
            "race.co:10:21: runtime error: data race on shared 'rows' element (3): written "
            "here, read by 'mma.scale' at race.co:9:7; no barrier or event orders them.")
    else:
        assert ref[3] is None
        np.testing.assert_array_equal(ref[1][2][:, 0], 16 * np.arange(16))


LOADED_ACC = """
    __co__ void f(f16 [16, 16] a, global f16 [16, 8] c) {
      parallel blk by 1 : block {
        shared f16 [16, 8] s;
        dma.copy c => s;
        parallel w by 2 : group {
          mc = mma.load s;
          fa = mma.load a;
          mma.row.row mc, fa, a.subspan(8, 16).at(0, 0);
          if (w == 1) { mma.store mc, s; }
        }
      }
    }"""


def test_an_accumulator_loaded_from_a_tile_reads_it_as_mma_load_does():
    """LANGUAGE.md §11.3.2: warp 1 stores into the tile warp 0 started its accumulator
    from, with nothing between them."""
    zero = np.zeros((16, 16), np.float16), np.zeros((16, 8), np.float16)
    assert races(LOADED_ACC, "f", *zero) == report(
        "race.co:9:21: runtime error: data race on shared 's' element (0, 0): written by "
        "'mma.store' here, read by 'mma.load' at race.co:6:7; no barrier or event orders "
        "them.",
        "    9 |       if (w == 1) { mma.store mc, s; }",
        "      |                     ^~~~~~~~~~~~~~~",
        "  written by 'mma.store' in block (0), warp 1 (lanes 32-63)",
        "  in kernel launched at race.co:2:3",
        "race.co:6:7: note: read by 'mma.load' in block (0), warp 0 (lanes 0-31)",
        *quote(6, "      mc = mma.load s;"))


def test_copies_through_span_as_views_race_where_their_elements_meet():
    # Each lane copies two elements into a window of dst seen as [4, 2] (apart) or as
    # [2, 4] (lanes t and t + 2 write the same columns of row 1: elements 4 and 5).
    body = """
        __co__ void f() {
          s32 [1, 2] src {3};
          s32 [8] out;
          parallel b by 1 : block, t by 4 : thread {
            shared s32 [8] dst;
            mine = dma.copy src => local;
            dma.copy mine.data => DST;
            sync.shared;
            out.at(t) = dst.at(t);
          }
          println(out.at(3));
        }
    """
    assert checked(body.replace("DST", "dst.span_as([4, 2]).chunkat(t, _)"), "f") == "3\n"
    meet = "dst.span_as([2, 4]).subspan(1, 2).at(1, t % 2)"
    assert races(body.replace("DST", meet), "f") == report(
        "race.co:7:5: runtime error: data race on shared 'dst' element (4): written by "
        "'dma.copy' here by several lanes of one warp; the lanes of a warp are not ordered "
        "within one instruction.",
        *quote(7, f"    dma.copy mine.data => {meet};"),
        "  written by 'dma.copy' in block (0), warp 0 (lanes 0, 2)",
        "  in kernel launched at race.co:4:3")


SHARED_FUTURE = """
    __co__ void f(s32 [2, 128] src, global s32 [2, 128] out) {
      parallel b by 1 : block {
        shared s32 [1, 128] first;
        shared s32 [1, 128] second;
        parallel p by 2 : group-4, t by 128 : thread {
          fut = tma.any;
          inthreads.async (p == 0) {
            fut = tma.copy.async src.subspan(1, 128).at(0, 0) => first;
            fut = tma.copy.async src.subspan(1, 128).at(1, 0) => second;
          }
          inthreads.async (p == 1) {
            WAIT0out.at(0, t) = first.at(0, 127 - t);
            wait fut;
            out.at(1, t) = second.at(0, t);
          }
        }
      }
    }
"""


def test_a_wait_of_a_shared_future_orders_the_copy_before_the_waiter():
    # §9.5.6: the consumer's wait is the wait of the copy's completion event
    args = (np.ones((2, 128), np.int32), np.zeros((2, 128), np.int32))
    checked(SHARED_FUTURE.replace("WAIT0", "wait fut;\n            "), "f", *args)
    text = races(SHARED_FUTURE.replace("WAIT0", ""), "f", *args)
    assert "data race on shared 'first' element (0, 127): read here, written by the async copy " \
           "'tma.copy' at race.co:8:9" in text, text


PER_WARP_COPY = """
    __co__ void f(s32 [4, 8] a, global s32 [4, 8] out) {
      parallel b by 1 : block {
        shared s32 [1, 8] rows[4];
        parallel g by 4 : group, t by 32 : thread {
          dma.copy a.subspan(1, 8).at(g, 0) => rows[g];
          if (t < 8)
            out.at(g, t) = rows[ROW].at(0, t);
        }
      }
    }
"""


def test_a_per_warp_copy_orders_its_tile_for_that_warp_only():
    # §9.3.2: the copy's rendezvous is the warp's, so another warp reading the tile races
    args = (np.ones((4, 8), np.int32), np.zeros((4, 8), np.int32))
    checked(PER_WARP_COPY.replace("ROW", "g"), "f", *args)
    text = races(PER_WARP_COPY.replace("ROW", "(g + 1) % 4"), "f", *args)
    assert "data race on shared 'rows[1]' element" in text, text
