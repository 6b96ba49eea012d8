"""Per-lane control flow as the language defines it, one short program per test with the
output derived by hand from LANGUAGE.md: divergence and reconvergence (§7.3), `break` /
`continue` in divergent loops (§6.5, §7.3), warp-uniform against divergent branches over
several warps (§6.3.5, §7.1), `inthreads` (§6.7), `yield` before a barrier (§6.5), idle
lanes (§6.3.4), outer-level code once per instance (§7.2) and the runtime errors of plain
statements (§15.3).

Print order is §13.3: warp by warp as the default schedule runs them (§7.1.2), and within
one execution of a statement lane by lane.
"""
from __future__ import annotations

import io
import textwrap

import pytest

import croqvm

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def output(source: str, func: str = "main", *args, **options) -> str:
    """Compile ``source`` (as ``sem.co``), run ``func`` and return what it printed."""
    out = io.StringIO()
    engines.run(croqvm.compile(textwrap.dedent(source), "sem.co"), func, *args, out=out, **options)
    return out.getvalue()


def lines(*items: str) -> str:
    return "".join(item + "\n" for item in items)


def fault(source: str, func: str = "main", *args, **options) -> str:
    """Run a program that must stop with a runtime error; return the rendered report."""
    prog = croqvm.compile(textwrap.dedent(source), "sem.co")
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(prog, func, *args, out=io.StringIO(), **options)
    return str(info.value)


# ----------------------------------------------------------------- divergence (§7.3)


def test_nested_if_inside_a_foreach_reconverges_after_each_statement():
    # Every iteration: the then-lanes (inner then, inner else, their join), then the
    # else-lanes, then all four lanes together.
    src = """
        __co__ void main() {
          parallel t by 4 : thread {
            foreach i in [2] {
              if (t >= i + 1) {
                if (t % 2 == 0)
                  println("A", i, t);
                else
                  println("B", i, t);
                println("C", i, t);
              } else {
                println("D", i, t);
              }
              println("E", i, t);
            }
          }
        }
    """
    assert output(src) == lines(
        "A 0 2", "B 0 1", "B 0 3", "C 0 1", "C 0 2", "C 0 3", "D 0 0",
        "E 0 0", "E 0 1", "E 0 2", "E 0 3",
        "A 1 2", "B 1 3", "C 1 2", "C 1 3", "D 1 0", "D 1 1",
        "E 1 0", "E 1 1", "E 1 2", "E 1 3")


def test_if_inside_a_while_whose_trip_count_differs_per_lane():
    # Lane t loops t times; a lane whose condition is false waits, masked, for the others.
    src = """
        __co__ void main() {
          parallel t by 4 : thread {
            mutable int k = 0;
            while (k < t) {
              if ((k + t) % 2 == 0)
                println("even", k, t);
              else
                println("odd", k, t);
              k++;
            }
            println("done", t, k);
          }
        }
    """
    assert output(src) == lines(
        "even 0 2", "odd 0 1", "odd 0 3",
        "even 1 3", "odd 1 2",
        "odd 2 3",
        "done 0 0", "done 1 1", "done 2 2", "done 3 3")


def test_lanes_of_one_warp_waiting_for_each_other_deadlock():
    # The then-lanes run first (§7.3): lane 0 blocks the whole warp, so lanes 1-31 never
    # reach their trigger.
    src = """
        __co__ void main() {
          parallel blk by 1 : block {
            shared event<1> e;
            parallel t by 32 : thread {
              if (t == 0)
                wait e;
              else
                trigger e;
            }
          }
        }
    """
    first, *rest = fault(src).splitlines()
    assert first == "sem.co:7:9: runtime error: deadlock: every live lane of block (0) is blocked"
    assert any(line.startswith("  lanes 1-31 suspended in divergent code at sem.co:")
               for line in rest), rest


def test_lanes_of_one_warp_signalling_in_branch_order_do_not_deadlock():
    # Now the triggering lanes are the then-lanes: 31 generations complete (N = 1)
    # before lane 0 waits for its first.
    src = """
        __co__ void main() {
          parallel blk by 1 : block {
            shared event<1> e;
            parallel t by 32 : thread {
              if (t != 0)
                trigger e;
              else
                wait e;
              if (t < 2) println("past", t);
            }
          }
        }
    """
    assert output(src) == lines("past 0", "past 1")


# ------------------------------------------------------------- break and continue (§6.5)


def test_break_in_a_foreach_masks_the_lane_until_the_loop_ends():
    # Lane t breaks in iteration t; lane 4 never does and ends the loop by its bound.
    src = """
        __co__ void main() {
          s32 [5] last;
          parallel t by 5 : thread {
            mutable int s = 0;
            foreach i in [4] {
              println("top", i, t);
              if (i == t) {
                println("break", i, t);
                break;
              }
              s += 10;
            }
            println("end", t, s);
            last.at(t) = s;
          }
          println(last.at(0), last.at(1), last.at(2), last.at(3), last.at(4));
        }
    """
    assert output(src) == lines(
        "top 0 0", "top 0 1", "top 0 2", "top 0 3", "top 0 4", "break 0 0",
        "top 1 1", "top 1 2", "top 1 3", "top 1 4", "break 1 1",
        "top 2 2", "top 2 3", "top 2 4", "break 2 2",
        "top 3 3", "top 3 4", "break 3 3",
        "end 0 0", "end 1 10", "end 2 20", "end 3 30", "end 4 40",
        "0 10 20 30 40")


def test_break_in_a_while_with_lanes_leaving_on_different_iterations():
    # Lane t breaks when n exceeds t; lane 5 leaves by the loop condition instead.
    src = """
        __co__ void main() {
          parallel t by 6 : thread {
            mutable int n = 0;
            while (n < 5) {
              n++;
              if (n > t)
                break;
              println("loop", t, n);
            }
            println("n", t, n);
          }
        }
    """
    assert output(src) == lines(
        "loop 1 1", "loop 2 1", "loop 3 1", "loop 4 1", "loop 5 1",
        "loop 2 2", "loop 3 2", "loop 4 2", "loop 5 2",
        "loop 3 3", "loop 4 3", "loop 5 3",
        "loop 4 4", "loop 5 4",
        "loop 5 5",
        "n 0 1", "n 1 2", "n 2 3", "n 3 4", "n 4 5", "n 5 5")


def test_continue_skips_the_rest_of_one_iteration_for_some_lanes():
    src = """
        __co__ void main() {
          s32 [4] acc;
          parallel t by 4 : thread {
            mutable int s = 0;
            foreach i in [4] {
              if (i % 2 == t % 2) {
                println("skip", i, t);
                continue;
              }
              s += i;
              println("add", i, t);
            }
            acc.at(t) = s;
          }
          println(acc.at(0), acc.at(1), acc.at(2), acc.at(3));
        }
    """
    assert output(src) == lines(
        "skip 0 0", "skip 0 2", "add 0 1", "add 0 3",
        "skip 1 1", "skip 1 3", "add 1 0", "add 1 2",
        "skip 2 0", "skip 2 2", "add 2 1", "add 2 3",
        "skip 3 1", "skip 3 3", "add 3 0", "add 3 2",
        "4 2 4 2")


def test_continue_inside_nested_ifs_is_not_revived_by_the_enclosing_if():
    # The lane that continues leaves both ifs: it does not print "outer" in that
    # iteration, while lane 0 (which never entered the outer then) does.
    src = """
        __co__ void main() {
          parallel t by 4 : thread {
            foreach i in [3] {
              if (t > 0) {
                if (i == t)
                  continue;
                println("inner", i, t);
              }
              println("outer", i, t);
            }
          }
        }
    """
    assert output(src) == lines(
        "inner 0 1", "inner 0 2", "inner 0 3", "outer 0 0", "outer 0 1", "outer 0 2",
        "outer 0 3",
        "inner 1 2", "inner 1 3", "outer 1 0", "outer 1 2", "outer 1 3",
        "inner 2 1", "inner 2 3", "outer 2 0", "outer 2 1", "outer 2 3")


def test_continue_in_a_while_loop():
    src = """
        __co__ void main() {
          s32 [3] odd;
          parallel t by 3 : thread {
            mutable int n = 0;
            s32 sum = 0;
            while (n < 2 * t + 2) {
              n++;
              if (n % 2 == 0)
                continue;
              sum += n;
            }
            odd.at(t) = sum;
          }
          println(odd.at(0), odd.at(1), odd.at(2));
        }
    """
    # t = 0: 1; t = 1: 1 + 3; t = 2: 1 + 3 + 5
    assert output(src) == lines("1 4 9")


# ------------------------------------------------- uniform against divergent (§6.3.5)


def test_a_condition_splitting_the_lanes_of_two_warps():
    # Warp 0 (lanes 0-31) is entirely below 40: only its then branch runs. Warp 1 splits:
    # lane 32 takes the then branch, lanes 40-63 the else branch. Warp 0 runs to the end
    # before warp 1 starts (no barrier, §7.1.2).
    src = """
        __co__ void main() {
          parallel t by 64 : thread {
            if (t < 40) {
              if (t % 8 == 0) println("lo", t);
            } else {
              if (t % 8 == 0) println("hi", t);
            }
            if (t % 8 == 0) println("join", t);
          }
        }
    """
    assert output(src) == lines(
        "lo 0", "lo 8", "lo 16", "lo 24", "join 0", "join 8", "join 16", "join 24",
        "lo 32", "hi 40", "hi 48", "hi 56", "join 32", "join 40", "join 48", "join 56")


def test_a_group_index_is_uniform_per_warp_and_a_barrier_interleaves_the_warps():
    # g == 1 holds for all of warp 1 and none of warp 0; l < 2 splits each warp. Warp 0
    # blocks at the barrier, warp 1 arrives and releases it, then scheduling resumes
    # at warp 0 (§7.1.2).
    src = """
        __co__ void main() {
          parallel g by 2 : group, l by 32 : thread {
            if (g == 1) {
              if (l < 2) println("g1 lane", l);
            }
            if (l == 31) println("before", g);
            sync.shared;
            if (l == 0) println("after", g);
          }
        }
    """
    assert output(src) == lines(
        "before 0", "g1 lane 0", "g1 lane 1", "before 1", "after 0", "after 1")


def test_plain_inthreads_ends_with_a_barrier_of_the_whole_collective_set():
    # Warp 0 skips the body and waits at the end of the inthreads for warp 1 (D17); the
    # sync.shared inside only involves warp 1, the lanes with p == 1 (§7.4.1).
    src = """
        __co__ void main() {
          parallel p by 2 : group, t by 32 : thread {
            inthreads (p == 1) {
              if (t == 0) println("p1 in");
              sync.shared;
              if (t == 0) println("p1 out");
            }
            if (t == 0) println("after", p);
          }
        }
    """
    assert output(src) == lines("p1 in", "p1 out", "after 0", "after 1")


# -------------------------------------------------------------------- yield (§6.5)


def test_yielded_lanes_are_not_awaited_by_a_barrier():
    # Lanes 3, 7, ..., 39 and 36-38 end at the yield; the 27 others meet at the barrier
    # and each counts 27 marks.
    src = """
        __co__ void main() {
          s32 [40] seen;
          s32 [40] counted;
          parallel t by 40 : thread {
            if (t % 4 == 3 || t >= 36) {
              println("bye", t);
              yield;
            }
            seen.at(t) = 1;
            sync.shared;
            s32 marks = 0;
            foreach j in [40]
              marks += seen.at(j);
            counted.at(t) = marks;
          }
          s32 live = 0;
          foreach j in [40]
            live += seen.at(j);
          println(live, counted.at(0), counted.at(3), counted.at(34), counted.at(35),
                  counted.at(36));
        }
    """
    assert output(src) == lines(
        *[f"bye {t}" for t in range(3, 32, 4)],
        "bye 35", "bye 36", "bye 37", "bye 38", "bye 39",
        "27 27 0 27 0 0")


def test_yield_inside_a_region_lets_the_join_and_the_outer_code_go_on():
    src = """
        __co__ void main() {
          s32 [2, 8] v;
          parallel b by 2 : block {
            parallel t by 8 : thread {
              if (t >= 2 + b)
                yield;
              v.at(b, t) = 1 + t;
            }
            println("block", b, v.at(b, 0) + v.at(b, 1) + v.at(b, 2) + v.at(b, 3));
          }
        }
    """
    # Block 0 keeps lanes 0-1 (1 + 2), block 1 lanes 0-2 (1 + 2 + 3).
    assert output(src) == lines("block 0 3", "block 1 6")


def test_yield_in_a_loop_shrinks_each_later_barrier():
    # Round i loses the lanes t >= 64 - 16 * i (warp 1 entirely by round 2); the barrier
    # of each round waits for the lanes still alive, which all marked row i.
    src = """
        __co__ void main() {
          s32 [4, 64] mark;
          parallel t by 64 : thread {
            foreach i in [4] {
              if (t >= 64 - 16 * i)
                yield;
              mark.at(i, t) = 1;
              sync.shared;
              if (t == 0) {
                s32 n = 0;
                foreach j in [64]
                  n += mark.at(i, j);
                println("round", i, "alive", n);
              }
            }
          }
        }
    """
    assert output(src) == lines(
        "round 0 alive 64", "round 1 alive 48", "round 2 alive 32", "round 3 alive 16")


# ------------------------------------------------------------ outer-level code (§7.2)


def test_outer_level_statements_run_once_per_block():
    # The block body holds a nested parallel, so its print, its scalar and its element
    # write happen once per block (not once per lane); v[b, 0] gains 100 per round.
    src = """
        __co__ void main() {
          s32 [2, 4] v;
          parallel b by 2 : block {
            int base = b * 10;
            println("block", b, "base", base);
            foreach round in [2] {
              println("round", b, round);
              v.at(b, 0) += 100;
              parallel t by 4 : thread
                v.at(b, t) += base + t;
            }
            println("joined", b, v.at(b, 0), v.at(b, 3));
          }
          println(v.at(0, 0), v.at(0, 1), v.at(1, 0), v.at(1, 3));
        }
    """
    assert output(src) == lines(
        "block 0 base 0", "round 0 0", "round 0 1", "joined 0 200 6",
        "block 1 base 10", "round 1 0", "round 1 1", "joined 1 220 26",
        "200 2 220 26")


def test_outer_level_code_of_a_warpgroup_runs_once_per_warpgroup():
    # Warps 0-3 form warpgroup 0: warp 0 prints its outer lines and lane 0's line, then
    # waits at the join until warp 3 arrives; after that release warp 0 runs on (§7.1.2).
    src = """
        __co__ void main() {
          parallel g by 2 : group-4 {
            println("group", g);
            parallel t by 128 : thread {
              if (t == 0) println("lane 0 of", g);
            }
            println("done", g);
          }
        }
    """
    assert output(src) == lines(
        "group 0", "lane 0 of 0", "done 0", "group 1", "lane 0 of 1", "done 1")


def test_lanes_beyond_a_smaller_region_are_idle():
    # The block has 40 lanes (its largest nest); the second region uses 4 of them and
    # lanes 4-39 skip it and wait at its join (D16), rather than repeating u = 0..3.
    src = """
        __co__ void main() {
          s32 [40] a;
          parallel b by 1 : block {
            parallel t by 40 : thread
              a.at(t) = 1;
            parallel u by 4 : thread {
              a.at(u) += 10;
              println("u", u);
            }
            println("after", a.at(0), a.at(3), a.at(4), a.at(39));
          }
        }
    """
    assert output(src) == lines("u 0", "u 1", "u 2", "u 3", "after 11 11 1 1")


# ----------------------------------------------------------- runtime errors (§15.3)


def test_out_of_range_element_access():
    src = """
        __co__ void main() {
          s32 [4, 3] a;
          parallel t by 6 : thread {
            a.at(t, 2) = t;
          }
        }
    """
    assert fault(src) == lines(
        "sem.co:5:5: runtime error: out-of-range access a.at(4, 2): index 4 of dimension 0 "
        "is not in [0, 4).",
        "    5 |     a.at(t, 2) = t;",
        "      |     ^~~~~~~~~~~~~~",
        "  in kernel launched at sem.co:4:3, block (0), lane 4 (warp 0, lane 4)").rstrip("\n")


def test_integer_division_by_zero_in_one_lane():
    src = """
        __co__ void main() {
          s32 [4] q;
          parallel t by 36 : thread {
            q.at(t % 4) = 12 / (t - 33);
          }
        }
    """
    assert fault(src) == lines(
        "sem.co:5:5: runtime error: integer division by zero.",
        "    5 |     q.at(t % 4) = 12 / (t - 33);",
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "  in kernel launched at sem.co:4:3, block (0), lane 33 (warp 1, lane 1)").rstrip("\n")


def test_integer_division_by_zero_in_host_code():
    src = """
        __co__ int main(int d) {
          int q = 7 % d;
          return q;
        }
    """
    assert engines.run(croqvm.compile(textwrap.dedent(src), "sem.co"), "main", 2) == 1
    assert fault(src, "main", 0) == lines(
        "sem.co:3:3: runtime error: integer division by zero.",
        "    3 |   int q = 7 % d;",
        "      |   ^~~~~~~~~~~~~",
        "  in host code of 'main'").rstrip("\n")


SPIN = """
    __co__ void main(int limit) {
      mutable int n = 0;
      while (n != limit)
        n++;
      println(n);
    }
"""


def test_a_step_limit_stops_a_long_loop_at_the_statement_running_then():
    assert output(SPIN, "main", 5, max_steps=1000) == lines("5")
    text = fault(SPIN, "main", -1, max_steps=1000)
    first = text.splitlines()[0]
    assert first.startswith("sem.co:") and ": runtime error: " in first
    assert "step limit of 1000" in first
    assert text.splitlines()[-1] == "  in host code of 'main'"
