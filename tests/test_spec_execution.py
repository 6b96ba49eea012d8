"""LANGUAGE.md §6 (statements), §7 (execution model), §8 (views) and §10 (events), rule by
rule: each test is a short program whose output, result or message is derived by hand
from the section it names.

Print order follows §7.1.2 and §13.3: the lowest-numbered runnable warp runs until it
blocks or finishes, after any release (a barrier or collective completing, an event
generation completing) scheduling starts again at the lowest runnable warp, and one
execution of a statement prints lane by lane. Lane numbers in runtime errors show the
lane layout of §6.3.4 (``lane 37 (warp 1, lane 5)``).
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def output(text: str, func: str = "main", *args, **options) -> str:
    """Compile ``text`` (as ``x.co``), run ``func``; return what it printed."""
    out = io.StringIO()
    engines.run(croqvm.compile(source(text), "x.co"), func, *args, out=out, **options)
    return out.getvalue()


def result(text: str, func: str = "main", *args):
    return engines.run(croqvm.compile(source(text), "x.co"), func, *args, out=io.StringIO())


def fault(text: str, func: str = "main", *args) -> list[str]:
    """Run a program that must stop with a runtime error; return the report's lines."""
    prog = croqvm.compile(source(text), "x.co")
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(prog, func, *args, out=io.StringIO())
    return str(info.value).splitlines()


def errors(text: str) -> list[str]:
    """Static errors as ``line:col: message``; a text not starting with ``__co__`` is the
    body of ``__co__ void main() {``, so its first line is line 2."""
    if not text.startswith("__co__"):
        text = "__co__ void main() {\n" + text + "\n}"
    _, diags, _ = croqvm.check(text, "x.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == "error"]


def lines(*items: str) -> str:
    return "".join(item + "\n" for item in items)


# ===================================================================== §6 statements

STATIC = [
    # §6.2.3: more bounds than names, and more than three sub-indices
    ("parallel {x, y} by [2, 3, 4] { }",
     ["2:10: parallel variables are less than their bounds (2 vs. 3)."]),
    ("parallel {x, y, z, w} by [1, 2, 3, 4] { }",
     ["2:10: The number of parallel dimensions is limited to 3 (x, y, z)."]),
    # §6.2.4: parallel variables are immutable
    ("parallel p by 2 { p = 1; }", ["2:19: only mutables can be re-assigned (p)."]),
    # §6.3.1: 'block' only on a kernel; levels strictly descend
    ("parallel p by 2 : thread {\n  parallel q by 2 : block { }\n}",
     ["3:12: parallel-by level 'thread' can not enclose level 'block'."]),
    ("parallel p by 2 : block {\n  parallel q by 2 : block { }\n}",
     ["3:12: parallel-by level 'block' can not enclose level 'block'."]),
    ("parallel p by 2 : group, q by 2 : group { }",
     ["2:26: parallel-by level 'group' can not enclose level 'group'."]),
    # §6.3.2 (D15): an unannotated innermost level inside an unannotated one
    ("parallel b by 2 : block {\n  parallel g by 2 {\n    parallel t by 32 { }\n  }\n}",
     ["3:12: unable to infer the parallel-by level(s) between thread and block.",
      "4:14: unable to infer the parallel-by level(s) between thread and block."]),
    # §6.3.3: an explicit thread level directly inside group-4 has 128 instances
    ("parallel g by 2 : group-4 {\n  parallel t by 64 : thread { }\n}",
     ["3:12: a 'thread' level inside 'group-4' must have exactly 128 instances (got 64)."]),
    # §8.2: a bound of zero (#(p #- 4) == 0) as a tiling factor
    ("s32 [8] a;\nforeach p in [4] {\n  s32 [2] t;\n  dma.copy a.chunkat(p #- 4) => t;\n}",
     ["5:12: tiling factor can not be zero for dimension 0."]),
    # §10.1: events are 'shared', declared inside a parallel
    ("shared event e;", ["2:14: shared variable 'e' must be declared inside parallel-by."]),
    ("parallel b by 1 { global event e; trigger e; }",
     ["2:19: 'global' events are not supported by croqvm."]),
    ("parallel b by 1 : block, t by 32 : thread {\n  shared event e[2];\n  trigger e[2];\n"
     "  wait e[0];\n}",
     ["4:13: index 2 is out of range for event array 'e' [0, 2)."]),
]


@pytest.mark.parametrize("text, expected", STATIC, ids=[f"{i}" for i in range(len(STATIC))])
def test_static_rule(text, expected):
    assert errors(text) == expected


# ------------------------------------------------------------ §6.1 statement forms


def test_every_compound_statement_takes_a_single_statement_as_its_body():
    assert output("""
        __co__ void main() {
          ;
          parallel p by 2 println("p", p);
          with t in 2 foreach t println("t", t);
          parallel b by 1 : block, q by 32 : thread inthreads (q == 0) println("q", q);
          parallel b by 1 : block {
            shared event<1> e;
            parallel q by 32 : thread { if (q == 0) { trigger e; wait(e); println("e"); } }
          }
          mutable int k = 0;
          while (k < 2) k++;
          println(k);
        }
    """) == lines("p 0", "p 1", "t 0", "t 1", "q 0", "e", "2")


# ----------------------------------------------------------------- §6.2 parallel


def test_a_single_bound_may_be_written_as_a_list():
    assert output("""
        __co__ void main() {
          parallel p by [6] { if (p == 5) println(p, #p); }
        }
    """) == "5 6\n"


def test_sub_indices_enumerate_their_product_row_major():
    # {x, y} by [2, 3]: linear index l gives x = l / 3, y = l % 3 (§6.2.4); with the tuple
    # name both the ituple and its elements are bound.
    assert output("""
        __co__ void main() {
          parallel idx = {x, y} by [2, 3] { println(idx, x, y); }
        }
    """) == lines("{0, 0} 0 0", "{0, 1} 0 1", "{0, 2} 0 2",
                  "{1, 0} 1 0", "{1, 1} 1 1", "{1, 2} 1 2")


def test_blocks_run_one_after_another_in_row_major_order():
    # §7.1.1: block (0, 0) runs to completion (both of its warps) before block (0, 1).
    assert output("""
        __co__ void main() {
          parallel {x, y} by [2, 2] : block, t by 64 : thread {
            if (t % 32 == 0) println(x, y, t);
          }
        }
    """) == lines("0 0 0", "0 0 32", "0 1 0", "0 1 32",
                  "1 0 0", "1 0 32", "1 1 0", "1 1 32")


def test_an_async_kernel_on_a_stream_runs_to_completion_at_its_launch():
    # §6.2.1: '<s>' names a stream parameter; croqvm runs the launch at once (§14.2).
    assert output("""
        __co__ void main(stream s) {
          parallel.async<s> p by 2 : block { println("kernel", p); }
          println("host");
          sync.global;
        }
    """, "main", None) == lines("kernel 0", "kernel 1", "host")


RUNTIME_BOUNDS = """
    __co__ void main(int n) {
      parallel p by 2 : block {
        parallel q by n : thread { }
      }
    }
"""


def test_a_bound_known_only_at_run_time_is_checked_when_the_statement_starts():
    report = fault(RUNTIME_BOUNDS, "main", 0)
    assert report[0].startswith("x.co:2:3: runtime error: the parallel bound of 'q' ")
    assert report[-1] == "  in host code of 'main'"
    assert output(RUNTIME_BOUNDS, "main", 1) == ""


def test_a_run_time_bound_of_zero_is_reported_with_its_value():
    assert fault(RUNTIME_BOUNDS, "main", 0)[0] == (
        "x.co:2:3: runtime error: the parallel bound of 'q' is 0: it should be greater "
        "than 0.")


# ------------------------------------------------- §6.3 levels, lanes and block size

def lane_of_fault(text: str) -> str:
    """The 'in kernel launched at ...' line of a program faulting in exactly one lane."""
    return fault(text)[-1]


# Each program faults in one lane: the index it reaches is not in [0, 4).
LANES = [
    # D = 1: one implicit block of 40 threads; lane 37 is warp 1, lane 5
    ("parallel p by 40 { if (p == 37) a.at(p) = 1; }", "block (0), lane 37 (warp 1, lane 5)"),
    # D = 2: block, thread
    ("parallel p by 3 { parallel q by 40 { if (p == 2 && q == 37) a.at(q) = 1; } }",
     "block (2), lane 37 (warp 1, lane 5)"),
    # D = 3: block, group, thread; group 1 is lanes 32-63
    ("parallel p by 3 { parallel g by 2 { parallel q by 32 {\n"
     "  if (p == 2 && g == 1 && q == 5) a.at(q) = 1; } } }",
     "block (2), lane 37 (warp 1, lane 5)"),
    # D15: an unannotated kernel level enclosing an annotated one is 'block'
    ("parallel b by 2 { parallel t by 40 : thread { if (b == 1 && t == 33) a.at(t) = 1; } }",
     "block (1), lane 33 (warp 1, lane 1)"),
    # D15: an unannotated innermost level inside an annotated one is 'thread'
    ("parallel b by 2 : block { parallel t by 40 { if (b == 1 && t == 33) a.at(t) = 1; } }",
     "block (1), lane 33 (warp 1, lane 1)"),
    # group-4 by 3: warpgroup w is lanes [128w, 128w + 128)
    ("parallel w by 3 : group-4 { if (w == 2) { parallel t by 128 : thread {\n"
     "  if (t == 70) a.at(t) = 1; } } }",
     "block (0), lane 326 (warp 10, lane 6)"),
    # a group level without a nested parallel: an implicit thread level of 32 (§6.3.3)
    ("parallel g by 3 : group { if (g == 2) a.at(g + 3) = 1; }",
     "block (0), lane 64 (warp 2, lane 0)"),
    # thread sub-indices inside a group: {x, y} = (2, 3) is thread 19 of warp 1
    ("parallel g by 2 : group, {x, y} by [4, 8] : thread {\n"
     "  if (g == 1 && x == 2 && y == 3) a.at(x * 8 + y) = 1; }",
     "block (0), lane 51 (warp 1, lane 19)"),
    # the block is as large as its largest nest; the group nest starts at lane 0
    ("parallel b by 1 : block {\n  parallel t by 8 : thread { }\n"
     "  parallel g by 2 : group { if (g == 1) a.at(g + 8) = 1; }\n}",
     "block (0), lane 32 (warp 1, lane 0)"),
]


@pytest.mark.parametrize("body, where", LANES, ids=[f"{i}" for i in range(len(LANES))])
def test_levels_and_lanes(body, where):
    text = "__co__ void main() {\n  s32 [4] a;\n" + body + "\n}\n"
    assert lane_of_fault(text) == f"  in kernel launched at x.co:3:1, {where}"


def test_a_shallower_nest_takes_its_kinds_from_the_deepest_row():
    # D = 3, so the depth-1 level 'g' is a 'group' with an implicit thread level of 32:
    # its body runs once per lane (§6.3.2-§6.3.3).
    assert output("""
        __co__ void main() {
          s32 [2] a;
          parallel p by 1 {
            parallel g by 2 { a.at(g) += 1; }
            parallel h by 2 { parallel q by 32 { } }
          }
          println(a.at(0), a.at(1));
        }
    """) == "32 32\n"


def test_a_group4_level_without_a_nested_parallel_runs_its_body_per_lane():
    # §6.3.3 and §7.2.1: the implicit thread level does not make the body outer-level;
    # with a nested parallel it runs once per warpgroup.
    assert output("""
        __co__ void main() {
          s32 [1] n;
          parallel g by 2 : group-4 { n.at(0) += 1; }
          println(n.at(0));
          parallel g by 2 : group-4 { n.at(0) += 1; parallel t by 128 : thread { } }
          println(n.at(0));
        }
    """) == lines("256", "258")


def test_a_kernel_with_only_a_block_level_has_one_lane_per_block():
    assert output("""
        __co__ void main() {
          s32 [3] a;
          parallel b by 3 : block { a.at(b) += 1; }
          println(a.at(0), a.at(1), a.at(2));
        }
    """) == "1 1 1\n"


def test_lanes_beyond_a_smaller_group4_nest_are_idle():
    # D16: the block has 256 lanes; the group-4 nest uses lanes 0-127 only.
    assert output("""
        __co__ void main() {
          s32 [1] n;
          parallel b by 1 : block {
            parallel t by 256 : thread { }
            parallel g by 1 : group-4 { n.at(0) += 1; }
          }
          println(n.at(0));
        }
    """) == "128\n"


def test_lanes_beyond_an_inferred_thread_level_inside_a_group_are_idle():
    # D15 makes 't' a thread level of 8 inside each warp; lanes 8-31 of each warp are idle
    # (D16): 2 * (1 + 2 + ... + 8) = 72.
    assert output("""
        __co__ void main() {
          s32 [2, 32] a;
          parallel g by 2 : group { parallel t by 8 { a.at(g, t) += 1 + t; } }
          s32 sum = 0;
          foreach {i, j} in [2, 32] sum += a.at(i, j);
          println(sum, a.at(1, 7), a.at(1, 8));
        }
    """) == "72 8 0\n"


# ------------------------------------------------------------- §6.4 with and foreach


def test_several_ranges_and_ituple_elements_nest_leftmost_outermost():
    assert output("""
        __co__ void main() {
          foreach i in [2], j in [3] print(i, j, "");
          println();
          foreach {m, n, k} in [2, 1, 2] print(m, n, k, "");
          println();
          with {a, b} in [2, 2] {
            foreach b, a print(a, b, "");
            println();
          }
        }
    """) == lines("0 0 0 1 0 2 1 0 1 1 1 2 ",
                  "0 0 0 0 0 1 1 0 0 1 0 1 ",
                  "0 0 1 0 0 1 1 1 ")


def test_foreach_over_a_bounded_ituple_iterates_its_elements():
    # §6.4.1: the elements of an ituple nest leftmost-outermost; §5.5.1: afterwards 0 again.
    assert output("""
        __co__ void main() {
          with idx = {i, j} in [2, 3] {
            foreach idx print(i, j, "");
            println(idx);
          }
        }
    """) == lines("0 0 0 1 0 2 1 0 1 1 1 2 {0, 0}")


# ------------------------------------------------------------ §6.5 control flow


def test_else_belongs_to_the_nearest_if():
    assert output("""
        __co__ void main() {
          foreach i in [3]
            if (i > 0) if (i > 1) println("big", i); else println("one", i);
        }
    """) == lines("one 1", "big 2")


def test_break_and_continue_act_on_the_innermost_loop():
    assert output("""
        __co__ void main() {
          foreach i in [3] {
            foreach j in [3] { if (j == 1) break; print(i, j, ""); }
          }
          println();
          mutable int n = 0;
          while (n < 3) {
            n++;
            foreach j in [3] { if (j == n) break; print(n, j, ""); }
            if (n == 2) continue;
            print("|");
          }
          println();
        }
    """) == lines("0 0 1 0 2 0 ", "1 0 |2 0 2 1 3 0 3 1 3 2 |")


# --------------------------------------------------------------- §6.6 assignments


def test_compound_assignment_applies_the_operator_to_the_whole_right_side():
    # x op= e is x = x op (e): x *= 2 + 3 multiplies by 5 although '*' binds tighter.
    assert output("""
        __co__ void main() {
          mutable int x = 2;
          x *= 2 + 3; println(x);
          x -= 1 - 4; println(x);
          x /= 2 * 2; println(x);
          x %= 1 + 2; println(x);
          s32 [2] a;
          a.at(1) = 7;
          a.at(1) -= 2 + 1;
          a.at(1) *= 3 - 1;
          a.at(0) = 9;
          a.at(0) %= 2 + 3;
          println(a.at(0), a.at(1));
        }
    """) == lines("10", "13", "3", "0", "4 8")


def test_increments_as_statements_and_in_expressions():
    # Prefix yields the new value, postfix the old, each acting at once (§4.2.6).
    assert output("""
        __co__ void main() {
          mutable int x = 5;
          x++; ++x; println(x);
          x--; --x; --x; println(x);
          println(x++, x, ++x, x, x--, --x);
        }
    """) == lines("7", "4", "4 5 6 6 6 4")


# ----------------------------------------------------------------- §6.7 inthreads


def test_inthreads_predicates_joined_with_and_or():
    assert output("""
        __co__ void main(int k) {
          s32 [2, 4] a;
          parallel b by 2 : block, p by 4 : thread {
            inthreads (p == 0 || p == 3) a.at(b, p) += 1;
            inthreads (b == 1 && k < p) a.at(b, p) += 10;
          }
          println(a.at(0, 0), a.at(0, 1), a.at(0, 2), a.at(0, 3));
          println(a.at(1, 0), a.at(1, 1), a.at(1, 2), a.at(1, 3));
        }
    """, "main", 1) == lines("1 0 0 1", "1 0 10 11")


INTHREADS = """
    __co__ void main() {
      parallel g by 2 : group, t by 32 : thread {
        inthreads%s (g == 1) { if (t == 0) println("in", g); }
        if (t == 0) println("after", g);
      }
    }
"""


@pytest.mark.parametrize("suffix, printed", [
    # warp 0 skips the body and waits at the barrier until warp 1 has run it
    ("", ["in 1", "after 0", "after 1"]),
    # no barrier: warp 0 runs to its end first
    (".async", ["after 0", "in 1", "after 1"]),
])
def test_plain_inthreads_ends_with_a_barrier_and_async_does_not(suffix, printed):
    assert output(INTHREADS % suffix) == lines(*printed)


def test_a_nested_plain_inthreads_waits_only_for_its_collective_set():
    # D17: the barrier at the end of the inner inthreads covers the lanes of the enclosing
    # inthreads.async (warps 0-1), not warps 2-3, which never reach it.
    assert output("""
        __co__ void main() {
          parallel g by 4 : group, t by 32 : thread {
            inthreads.async (g < 2) {
              inthreads (g == 0) { if (t == 0) println("in", g); }
              if (t == 0) println("A", g);
            }
            inthreads.async (g >= 2) { if (t == 0) println("B", g); }
          }
        }
    """) == lines("in 0", "A 0", "A 1", "B 2", "B 3")


# ---------------------------------------------------------------------- §6.8 sync

SYNC = """
    __co__ void main() {
      parallel g by 2 : group-4, t by 128 : thread {
        if (t %% 32 == 0) print("b", g # t / 32, "");
        sync.%s;
        if (t %% 32 == 0) print("a", g # t / 32, "");
      }
      println();
    }
"""
EACH_WARP_ALONE = "b 0 a 0 b 1 a 1 b 2 a 2 b 3 a 3 b 4 a 4 b 5 a 5 b 6 a 6 b 7 a 7 "


@pytest.mark.parametrize("statement, printed", [
    # the whole block: every warp arrives before any goes on
    ("shared", "b 0 b 1 b 2 b 3 b 4 b 5 b 6 b 7 a 0 a 1 a 2 a 3 a 4 a 5 a 6 a 7 "),
    ("barrier : block", "b 0 b 1 b 2 b 3 b 4 b 5 b 6 b 7 a 0 a 1 a 2 a 3 a 4 a 5 a 6 a 7 "),
    # one warpgroup: warps 0-3 meet, run on, then warps 4-7
    ("barrier : group-4", "b 0 b 1 b 2 b 3 a 0 a 1 a 2 a 3 b 4 b 5 b 6 b 7 a 4 a 5 a 6 a 7 "),
    # one warp, one thread, fences: nothing to wait for
    ("barrier : group", EACH_WARP_ALONE),
    ("barrier : thread", EACH_WARP_ALONE),
    ("fence : block", EACH_WARP_ALONE),
])
def test_sync_statements_wait_for_their_level(statement, printed):
    # `g # t / 32` is (g * 128 + t) / 32: the warp (# binds tighter than /, §4.1)
    assert output(SYNC % statement) == printed + "\n"


# --------------------------------------------------------- §6.9 print and assert


def test_a_statically_true_assert_does_nothing():
    assert output("""
        __co__ void main() {
          assert(1 < 2, "fine");
          println("ok");
        }
    """) == "ok\n"


def test_a_failing_assert_in_host_code():
    assert fault("""
        __co__ void main(int n) {
          assert(n > 2, "n is too small");
        }
    """, "main", 1) == [
        "x.co:2:3: runtime error: assertion failed: n is too small",
        "    2 |   assert(n > 2, \"n is too small\");",
        "      |   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "  in host code of 'main'"]


def test_a_failing_assert_names_the_lowest_failing_lane():
    assert fault("""
        __co__ void main() {
          parallel t by 40 : thread { assert(t < 35, "t too big"); }
        }
    """)[::3] == [
        "x.co:2:31: runtime error: assertion failed: t too big",
        "  in kernel launched at x.co:2:3, block (0), lane 35 (warp 1, lane 3)"]


def test_a_failing_outer_level_assert_is_performed_by_the_first_lane_of_the_instance():
    assert fault("""
        __co__ void main(int n) {
          parallel b by 2 : block {
            assert(b < n, "block out of budget");
            parallel t by 64 : thread { }
          }
        }
    """, "main", 1)[::3] == [
        "x.co:3:5: runtime error: assertion failed: block out of budget",
        "  in kernel launched at x.co:2:3, block (1), lane 0 (warp 0, lane 0)"]


# ============================================================ §7 execution model
# ----------------------------------------------------- §7.2 outer-level code (D4)


def test_a_region_anywhere_in_the_body_makes_its_statements_outer_level():
    # The nested parallel sits in an if: the print and the element write still happen
    # once per block, not once per lane (§7.2.1).
    assert output("""
        __co__ void main() {
          s32 [1] c;
          parallel b by 1 : block {
            c.at(0) += 1;
            println("outer");
            if (b == 0) { parallel t by 64 : thread { } }
          }
          println(c.at(0));
        }
    """) == lines("outer", "1")


def test_outer_level_if_and_while_run_once_per_instance():
    assert output("""
        __co__ void main() {
          s32 [2] c;
          parallel b by 2 : block {
            if (b == 0) { c.at(0) += 1; println("b0"); } else { c.at(1) += 10; println("b1"); }
            mutable int k = 0;
            while (true) { k++; if (k == 3) break; c.at(b) += 100; println("k", b, k); }
            parallel t by 64 : thread { }
          }
          println(c.at(0), c.at(1));
        }
    """) == lines("b0", "k 0 1", "k 0 2", "b1", "k 1 1", "k 1 2", "201 210")


def test_outer_level_writes_to_local_buffers_and_scalars_happen_in_every_lane():
    # §7.2.2: per-lane state is updated on every lane; the shared write happens once and
    # is seen by every lane from the next statement on (b = 0: k = 21; b = 1: k = 23).
    assert output("""
        __co__ void main() {
          s32 [64] got;
          s32 [64] sum;
          parallel b by 2 : block {
            local s32 [1] l;
            l.at(0) = 5;
            shared s32 [1] s;
            s.at(0) = 10 + b;
            mutable int k = s.at(0) * 2;
            k += 1;
            parallel t by 64 : thread {
              got.at(t) = l.at(0);
              sum.at(t) += k;
            }
          }
          println(got.at(0), got.at(33), got.at(63), sum.at(0), sum.at(63));
        }
    """) == "5 5 5 44 44\n"


def test_an_outer_level_trigger_arrives_from_every_lane():
    # The trigger is outer-level: each of the 64 lanes arrives, which is N (§10.2).
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event e;
            trigger e;
            parallel t by 64 : thread { if (t % 32 == 0) { wait e; println("t", t); } }
          }
        }
    """) == lines("t 0", "t 32")


def test_outer_level_effects_after_lane_0_yielded_are_performed_by_a_live_lane():
    assert output("""
        __co__ void main() {
          s32 [1] c;
          parallel b by 1 : block {
            parallel t by 64 : thread { if (t < 33) yield; }
            println("after");
            c.at(0) += 1;
            parallel t by 64 : thread { if (t == 40) println("t", t); }
            println("end");
          }
          println(c.at(0));
        }
    """) == lines("after", "t 40", "end", "1")


def test_an_outer_level_yield_ends_its_whole_instance():
    # Every live lane of block 1 executes the yield (§6.5, §7.2.2); block 0 goes on.
    assert output("""
        __co__ void main() {
          parallel b by 2 : block {
            if (b == 1) yield;
            println("b", b);
            parallel t by 64 : thread { }
            println("end", b);
          }
          println("host");
        }
    """) == lines("b 0", "end 0", "host")


def test_outer_level_code_inside_an_inthreads_runs_once_per_warpgroup():
    assert output("""
        __co__ void main() {
          parallel g by 2 : group-4 {
            inthreads.async (g == 1) { println("in", g); parallel t by 128 : thread { } }
            println("all", g);
          }
        }
    """) == lines("all 0", "in 1", "all 1")


# Lane 0 triggers one generation that only warp 0 waits for, so at the outer-level
# `wait e` warp 0 waits for a second generation while warp 1 goes on to the next region.
BEGIN = """
    __co__ void main() {
      s32 [4] c;
      parallel b by 1 : block {
        shared event<1> e;
        parallel t by 64 : thread {
          if (t == 0) trigger e;
          if (t < 32) wait e;
        }
        wait e;
        %s
        parallel u by 64 : thread { }
      }
    }
"""


@pytest.mark.parametrize("statement, barrier", [
    # §7.2.3: an outer-level element write to shared/global memory or a DMA gives the
    # next region a barrier at its start
    ("c.at(0) = 1;", "barrier at start of parallel"),
    ("f = dma.copy c => local;", "barrier at start of parallel"),
    # otherwise warp 1 enters the region and waits at its end
    ("int z = 1;", "barrier at end of parallel"),
])
def test_a_region_starts_with_a_barrier_after_outer_level_writes(statement, barrier):
    report = fault(BEGIN % statement)
    assert report[0] == ("x.co:9:5: runtime error: deadlock: every live lane of block (0) "
                         "is blocked")
    assert report[3:5] == [
        "  warp 0 (lanes 0-31): x.co:9:5 'wait e': slot e: completed generations 1, "
        "arrivals 0/1; these lanes wait for generation 1",
        f"  warp 1 (lanes 32-63): {barrier} (x.co:11:5): arrived 32/64"]


# ---------------------------------------------------------- §7.1, §7.5 schedules


def test_racing_writes_leave_the_value_of_the_last_lane_in_schedule_order():
    # §7.1.3, §7.5: lanes write in increasing order, warp 0 before warp 1
    assert output("""
        __co__ void main() {
          s32 [1] a;
          parallel t by 64 : thread { a.at(0) = t; }
          println(a.at(0));
        }
    """) == "63\n"


TILED = """
    __co__ void tiled(f32 [16, 16] a, f32 [16, 16] b, global f32 [16, 16] c,
                      global s32 [16, 16] seen) {
      parallel {bm, bn} by [2, 2] : block {
        shared s32 [1] rounds;
        foreach kt in [2] {
          ta = dma.copy a.subspan(8, 8).at(bm, kt) => shared;
          tb = dma.copy b.subspan(8, 8).at(kt, bn) => shared;
          rounds.at(0) += 1;
          parallel {tm, tn} by [8, 8] : thread {
            foreach k in [8]
              c.at(bm # tm, bn # tn) += ta.data.at(tm, k) * tb.data.at(k, tn);
            seen.at(bm # tm, bn # tn) += rounds.at(0);
          }
        }
      }
    }
"""


@pytest.mark.parametrize("schedule, seed", [("rr", 0), ("random", 1), ("random", 2)])
def test_outer_level_code_and_regions_give_one_result_under_every_schedule(schedule, seed):
    # The copies and the count are outer-level (once per block, §7.2.2); the regions'
    # joins keep each tile in place until all 64 lanes have used it (Appendix A.3).
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    seen = np.zeros((16, 16), np.int32)
    engines.run(croqvm.compile(source(TILED), "x.co"), "tiled", a, b, c, seen, schedule=schedule,
                                              seed=seed, out=io.StringIO())
    np.testing.assert_array_equal(c, a @ b)
    np.testing.assert_array_equal(seen, np.full((16, 16), 1 + 2))


# ------------------------------------------------------------ §7.4 collectives


def test_a_barrier_in_a_smaller_region_waits_only_for_its_lanes():
    # Lanes 16-63 are idle for the second region (D16) and not in its collective set.
    assert output("""
        __co__ void main() {
          s32 [16] v;
          parallel b by 1 : block {
            parallel t by 64 : thread { }
            parallel u by 16 : thread {
              v.at(u) = u;
              sync.shared;
              v.at(u) += v.at(15 - u);
            }
          }
          println(v.at(0), v.at(7), v.at(15));
        }
    """) == "15 15 15\n"


def test_a_barrier_under_a_divergent_if():
    assert fault("""
        __co__ void main() {
          parallel t by 64 : thread { if (t < 40) { sync.shared; } }
        }
    """)[::3] == [
        "x.co:2:45: runtime error: 'sync.shared' is a collective of 64 lanes but lanes 8-31 "
        "of warp 1 are not active here (divergent control flow).",
        "  in kernel launched at x.co:2:3, block (0), lane 32 (warp 1, lane 0)"]


def test_a_shared_initializer_is_a_collective_fill():
    assert output("""
        __co__ void main() {
          parallel b by 1 : block, t by 64 : thread {
            shared s32 [4] x {3};
            if (t == 63) println(x.at(0), x.at(3));
          }
        }
    """) == "3 3\n"
    assert fault("""
        __co__ void main() {
          parallel b by 1 : block, t by 64 : thread { if (t < 16) { shared s32 [4] x {3}; } }
        }
    """)[0] == ("x.co:2:61: runtime error: 'fill' is a collective of 64 lanes but lanes "
                "16-31 of warp 0 are not active here (divergent control flow).")


# ============================================================================ §8 views

A10 = np.arange(10, dtype=np.int32)
A80 = np.arange(80, dtype=np.int32).reshape(8, 10)


def test_chunkat_never_covers_the_remainder():
    # [10] by 3: tiles of floor(10 / 3) = 3 at 0, 3, 6; element 9 is in none (§8.2).
    assert output("""
        __co__ void main(s32 [10] a) {
          foreach p in [3] {
            s32 [3] t {-1};
            dma.copy a.chunkat(p) => t;
            println(t.at(0), t.at(1), t.at(2));
          }
        }
    """, "main", A10) == lines("0 1 2", "3 4 5", "6 7 8")


def test_chunkat_takes_bounded_ituples_and_whole_dimensions():
    # [6, 8] by {x, y} in [3, 2]: tiles [2, 4] at (2x, 4y); by (_, y in [4]): [6, 2] at (0, 2y)
    m = np.arange(48, dtype=np.int32).reshape(6, 8)
    printed = output("""
        __co__ void main(s32 [6, 8] a) {
          foreach idx = {x, y} in [3, 2] {
            s32 [2, 4] t;
            dma.copy a.chunkat(idx) => t;
            println(t.at(0, 0), t.at(1, 3));
          }
          foreach y in [4] {
            s32 [6, 2] u;
            dma.copy a.chunkat(_, y) => u;
            println(u.at(0, 0), u.at(5, 1));
          }
        }
    """, "main", m)
    want = [f"{m[2 * x, 4 * y]} {m[2 * x + 1, 4 * y + 3]}" for x in range(3) for y in range(2)]
    want += [f"{m[0, 2 * y]} {m[5, 2 * y + 1]}" for y in range(4)]
    assert printed == lines(*want)


def test_chunkat_divides_by_the_bound_not_by_the_intended_tile():
    # #bn = cdiv(100, 64) = 2, so tiles are 100 / 2 = 50 wide (§8.2)
    assert output("""
        __co__ void main(s32 [N] a) {
          parallel bn by cdiv(N, 64) : block {
            f = dma.copy a.chunkat(bn) => local;
            println(bn, f.span, f.data.at(49));
          }
        }
    """, "main", np.arange(100, dtype=np.int32)) == lines("0 [50] 49", "1 [50] 99")


def test_a_tile_without_elements_is_a_runtime_error():
    # #p = 4 > N = 3: every tile is 3 / 4 = 0 wide
    assert fault("""
        __co__ void main(s32 [N] a) {
          s32 [1] t;
          foreach p in [4]
            dma.copy.zfill a.chunkat(p) => t;
        }
    """, "main", np.arange(3, dtype=np.int32))[::3] == [
        "x.co:4:5: runtime error: tile of 'a' at origin (0) has no elements (extents [0]).",
        "  in host code of 'main'"]


def test_subspan_step_and_at():
    # subspan(2, 3).step(3, 4).at(1, 2): origin (3, 8), extents [2, 3]; column 10 is past
    # the edge and left unchanged. subspan(_, 3).at(0, 2): [8, 3] at (0, 6). No .at: (0, 0).
    assert output("""
        __co__ void main(s32 [8, 10] a) {
          s32 [2, 3] t;
          dma.copy a.subspan(2, 3).step(3, 4).at(1, 2) => t;
          println(t.at(0, 0), t.at(0, 1), t.at(0, 2), t.at(1, 0));
          s32 [8, 3] u;
          dma.copy a.subspan(_, 3).at(0, 2) => u;
          println(u.at(0, 0), u.at(7, 2));
          s32 [2, 3] v;
          dma.copy a.subspan(2, 3) => v;
          println(v.at(0, 0), v.at(1, 2));
        }
    """, "main", A80) == lines("38 39 0 48", "6 78", "0 12")


def test_a_step_smaller_than_the_subspan_gives_overlapping_tiles():
    # subspan(4).step(2).at(i): extents [4] at origin 2i (§8.3.1)
    assert output("""
        __co__ void main(s32 [10] a) {
          foreach i in [4] {
            s32 [4] t;
            dma.copy a.subspan(4).step(2).at(i) => t;
            println(t.at(0), t.at(1), t.at(2), t.at(3));
          }
        }
    """, "main", A10 * 10) == lines("0 10 20 30", "20 30 40 50", "40 50 60 70",
                                    "60 70 80 90")


def test_view_operations_chain_left_to_right():
    # chunkat(i, j) of [8, 10] by [2, 2]: [4, 5] at (4i, 5j); then subspan(2, 2).at(1, 1)
    # adds (2, 2); then view(2, 2).from(0, 1) adds (0, 1): origin (4i + 2, 5j + 3).
    printed = output("""
        __co__ void main(s32 [8, 10] a) {
          foreach {i, j} in [2, 2] {
            s32 [2, 2] t;
            dma.copy a.chunkat(i, j).subspan(2, 2).at(1, 1).view(2, 2).from(0, 1) => t;
            println(t.at(0, 0), t.at(1, 1));
          }
        }
    """, "main", A80)
    want = [f"{A80[4 * i + 2, 5 * j + 3]} {A80[4 * i + 3, 5 * j + 4]}"
            for i in range(2) for j in range(2)]
    assert printed == lines(*want)


# ------------------------------------------------------------ §8.5 buffer arrays


def test_each_buffer_of_an_array_is_a_buffer_of_its_own():
    assert output("""
        __co__ void main() {
          s32 [2] b[3];
          foreach i in [3] { b[i].at(0) = i + 1; b[i].at(1) = 10 * (i + 1); }
          s32 [2] c;
          dma.copy b[2] => c;
          println(b[0].at(0), b[1].at(0), c.at(0), c.at(1), b[1].span);
        }
    """) == "1 2 3 30 [2]\n"


def test_a_partial_subscript_is_the_first_buffer_of_the_sub_array():
    """s[2] of s[3][2] is s[2][0] (lib/Target/GPU/cute_codegen.cpp LinearizeArrayOffset)."""
    assert output("""
        __co__ void main() {
          parallel p by 1 : block {
            shared s32 [4] s[3][2];
            foreach {i, j, k} in [3, 2, 4]
              s[i][j].at(k) = 100 * i + 10 * j + k;
            t = s[2].span_as(2, 2);
            println(t.at(1, 1), s[1].at(2), s[2][1].at(0));
          }
        }
    """) == "203 102 210\n"


def test_a_buffer_array_subscript_is_checked_at_run_time():
    assert fault("""
        __co__ void main(int k) {
          parallel p by 1 { shared s32 [4] bufs[2]; bufs[k - 3].at(0) = 1; }
        }
    """, "main", 2)[0] == ("x.co:2:45: runtime error: index -1 is out of range for buffer "
                           "array 'bufs' [0, 2).")


# ------------------------------------------------------------ §8.6 element access


def test_a_bounded_ituple_counts_as_its_elements():
    assert output("""
        __co__ void main() {
          s32 [2, 3] a;
          foreach idx = {i, j} in [2, 3] a.at(idx) = i * 10 + j;
          println(a.at(1, 2), a.at(0, 1));
        }
    """) == "12 1\n"


def test_future_data_elements_are_assignable():
    # f.data is the destination buffer b (§9.4.5), an lvalue like any buffer (§8.6)
    assert output("""
        __co__ void main(s32 [4] a) {
          s32 [4] b;
          f = dma.copy a => b;
          f.data.at(2) = 50;
          f.data.at(1) += 7;
          println(b.at(0), b.at(1), b.at(2), f.data.at(2));
        }
    """, "main", np.arange(4, dtype=np.int32)) == "0 8 50 50\n"


def test_local_future_data_is_one_buffer_per_lane():
    # Each lane writes its own element of its own copy; its neighbour's is still a's.
    assert output("""
        __co__ void main(s32 [4] a) {
          parallel p by 1 : block, t by 4 : thread {
            f = dma.copy a => local;
            f.data.at(t) = 10 * t;
            println(t, f.data.at(t), f.data.at((t + 1) % 4));
          }
        }
    """, "main", np.arange(4, dtype=np.int32)) == lines("0 0 1", "1 10 2", "2 20 3",
                                                         "3 30 0")


def test_a_negative_index_is_out_of_range():
    assert fault("""
        __co__ void main(int k) {
          s32 [4, 3] a;
          println(a.at(1, k));
        }
    """, "main", -1)[0] == ("x.co:3:3: runtime error: out-of-range access a.at(1, -1): "
                            "index -1 of dimension 1 is not in [0, 3).")


FUTURE_VIEW = """
    __co__ void main(s32 [8, 10] a, int k) {
      s32 [4, 4] b;
      f = dma.copy a.subspan(2, 2) => b.subspan(2, 2).at(1, 1);
      println(f.data.at(0, 1), f.data.at(1, 1), b.at(2, 3), b.at(3, 3));
      println(f.data.at(1, k));
    }
"""


def test_future_data_is_indexed_relative_to_its_view():
    # the destination view is b's [2, 2] corner at (2, 2): f.data.at(i, j) is b.at(2 + i,
    # 2 + j), which received a.at(i, j)
    assert output(FUTURE_VIEW, "main", A80, 0) == lines("1 11 1 11", "10")


def test_future_data_indices_are_checked_against_the_view_extents():
    # (1, 2) is inside b but outside the [2, 2] view; the access is named as written
    assert fault(FUTURE_VIEW, "main", A80, 2)[0] == (
        "x.co:5:3: runtime error: out-of-range access f.data.at(1, 2): index 2 of "
        "dimension 1 is not in [0, 2).")


# ========================================================================== §10 events


def test_the_arrival_count_is_the_union_of_the_trigger_statements_lanes():
    # Two triggers in different inthreads: N(e) = 64. Warp 0 waits; warp 1's 32 arrivals
    # do not complete the generation, so warp 2 prints first; warp 3 completes it.
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event e;
            parallel g by 4 : group, t by 32 : thread {
              inthreads.async (g == 0) { wait e; if (t == 0) println("released"); }
              inthreads.async (g == 1) { trigger e; }
              inthreads.async (g == 2) { if (t == 0) println("middle"); }
              inthreads.async (g == 3) { trigger e; }
            }
          }
        }
    """) == lines("middle", "released")


def test_the_arrival_count_follows_nested_regions_and_inthreads():
    # The trigger runs in lanes t < 64 of warpgroup 1's region: N(e) = 64. Warps 4 and 5
    # complete the generation and wake warp 0 while warp 4 waits at the end of the plain
    # inthreads for warps 6 and 7.
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event e;
            parallel g by 2 : group-4 {
              inthreads.async (g == 0) {
                parallel t by 128 : thread { if (t == 0) { wait e; println("woke"); } }
              }
              inthreads.async (g == 1) {
                parallel t by 128 : thread {
                  inthreads (t < 64) { trigger e; }
                  if (t == 0) println("sent");
                }
              }
            }
          }
        }
    """) == lines("woke", "sent")


def test_lanes_idle_for_the_triggering_region_do_not_count():
    # The trigger's region has 16 lanes of the block's 64 (D16): N(e) = 16.
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event e;
            parallel u by 16 : thread { trigger e; }
            parallel t by 64 : thread { if (t == 63) { wait e; println("done"); } }
          }
        }
    """) == "done\n"


def test_surplus_arrivals_count_toward_the_next_generation():
    # event<3> and 7 arrivals: 2 generations and 1 arrival; lane 0's third wait waits
    # for generation 2, which never completes.
    report = fault("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event<3> e;
            parallel t by 64 : thread {
              if (t == 32) { foreach k in [7] trigger e; }
              if (t == 0) { wait e; wait e; wait e; }
            }
          }
        }
    """)
    assert report[0] == ("x.co:6:37: runtime error: deadlock: every live lane of block (0) "
                         "is blocked")
    assert report[3:6] == [
        "  warp 0 (lane 0): x.co:6:37 'wait e': slot e: completed generations 2, arrivals "
        "1/3; these lanes wait for generation 2",
        "  warp 1 (lanes 32-63): barrier at end of parallel (x.co:4:5): arrived 32/64",
        "  lanes 1-31 suspended in divergent code at x.co:6:7"]


def test_a_warp_resumes_when_all_its_waiting_lanes_can():
    # Lanes 0 and 1 wait for different slots: completing slot 0 alone does not release
    # warp 0; completing slot 1 does, and warp 0 runs before warp 1 prints again.
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event<1> e[2];
            parallel t by 64 : thread {
              if (t < 2) { wait e[t]; println("lane", t); }
              if (t == 32) { trigger e[0]; println("sent 0"); }
              if (t == 33) { trigger e[1]; println("sent 1"); }
            }
          }
        }
    """) == lines("sent 0", "lane 0", "lane 1", "sent 1")


def test_a_wait_list_waits_left_to_right():
    # Completing y first does not release lane 0, which waits for x first; x then
    # releases it before warp 1 goes on.
    assert output("""
        __co__ void main() {
          parallel b by 1 : block {
            shared event<1> x, y;
            parallel t by 64 : thread {
              if (t == 0) { wait(x, y); println("got both"); }
              if (t == 32) { trigger y; println("y"); trigger x; println("x"); }
            }
          }
        }
    """) == lines("y", "got both", "x")


def test_an_event_slot_subscript_is_checked_at_run_time():
    assert fault("""
        __co__ void main(int k) {
          parallel b by 1 : block, t by 32 : thread {
            shared event e[2];
            trigger e[k];
            wait e[0];
          }
        }
    """, "main", 2)[::3] == [
        "x.co:4:5: runtime error: index 2 is out of range for event array 'e' [0, 2).",
        "  in kernel launched at x.co:2:3, block (0), lane 0 (warp 0, lane 0)"]


# ------------------------------------------------------- §10.5 the deadlock report


def test_the_report_names_a_block_by_all_its_indices_and_each_blocked_group():
    report = fault("""
        __co__ void main() {
          parallel {x, y} by [1, 2] : block {
            shared event e;
            parallel t by 64 : thread {
              if (y == 1 && t < 32) wait e;
              if (t >= 32) trigger e;
            }
          }
        }
    """)
    assert report == [
        "x.co:5:29: runtime error: deadlock: every live lane of block (0, 1) is blocked",
        "    5 |       if (y == 1 && t < 32) wait e;",
        "      |                             ^~~~~~",
        "  warp 0 (lanes 0-31): x.co:5:29 'wait e': slot e: completed generations 0, "
        "arrivals 32/64; these lanes wait for generation 0",
        "  warp 1 (lanes 32-63): barrier at end of parallel (x.co:4:5): arrived 32/64",
        "  in kernel launched at x.co:2:3"]


def test_the_report_names_a_collective_copy_and_how_many_have_arrived():
    report = fault("""
        __co__ void main(s32 [64] a) {
          parallel b by 1 : block {
            shared event<1> e;
            parallel t by 64 : thread {
              if (t >= 32) wait e;
              f = dma.copy a => shared;
              if (t == 0) trigger e;
            }
          }
        }
    """, "main", np.zeros(64, np.int32))
    assert report[0] == ("x.co:6:7: runtime error: deadlock: every live lane of block (0) "
                         "is blocked")
    assert report[3:6] == [
        "  warp 0 (lanes 0-31): collective 'dma.copy' (x.co:6:7): arrived 32/64",
        "  warp 1 (lanes 32-63): x.co:5:20 'wait e': slot e: completed generations 0, "
        "arrivals 0/1; these lanes wait for generation 0",
        "  in kernel launched at x.co:2:3"]
