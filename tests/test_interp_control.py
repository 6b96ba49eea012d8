"""Divergence and reconvergence inside a warp (LANGUAGE.md §7.3; docs/EXECUTION.md §4),
on hand-written bytecode listings; expected outputs worked out by hand."""
import pytest

from asm import ALL, Asm, P, kernel_module, run
from croqvm.bytecode.module import CollSite, LaneSet
from croqvm.bytecode.verify import verify
from croqvm.core.errors import KernelFault

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def lines(text):
    return text.splitlines()


def test_if_else_runs_then_lanes_then_else_lanes_then_reconverges():
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        MOD r2 r0 r1
        CONST r3 k1
        EQ r4 r2 r3
        IF r4
          PRINT p0
        ELSE
          PRINT p1
        END
        PRINT p2
    """, regs="s32 s32 s32 s32 bool",
        consts=[("s32", 2), ("s32", 0)], strings=["even ", "odd ", "join "],
        prints=[P("s0 r0"), P("s1 r0"), P("s2 r0")])
    _, out = run(kernel_module(a, k, 8))
    assert lines(out) == ["even 0", "even 2", "even 4", "even 6", "odd 1", "odd 3", "odd 5",
                          "odd 7"] + [f"join {i}" for i in range(8)]


def test_if_with_no_true_lane_skips_to_else():
    a = Asm()
    k = a.code("""
        CONST r0 k0
        IF r0
          PRINT p0
          DIV r1 r1 r1       # would divide by zero: never runs without lanes
        ELSE
          PRINT p1
        END
    """, regs="bool s32", consts=[("bool", False)], strings=["then", "else"],
        prints=[P("s0"), P("s1")])
    _, out = run(kernel_module(a, k, 2))
    assert lines(out) == ["else", "else"]


LOOP_BREAK = """
    LANE r0
    CONST r1 k0          # i := -1
    CONST r2 k1
    LOOP
      ADD r1 r1 r2       # i += 1 (at the top, so continue cannot skip it)
      GE r3 r1 r0
      BREAK_IF r3        # lane l leaves when i reaches l
      PRINT p0
    END
    PRINT p1
"""


def test_break_with_divergent_lanes_keeps_them_masked_until_the_loop_ends():
    a = Asm()
    k = a.code(LOOP_BREAK, regs="s32 s32 s32 bool",
               consts=[("s32", -1), ("s32", 1)], strings=["after"],
               prints=[P("r1 r0"), P("s0 r0 r1")])
    _, out = run(kernel_module(a, k, 4))
    assert lines(out) == ["01", "02", "03", "12", "13", "23",
                          "after00", "after11", "after22", "after33"]


def test_continue_skips_the_rest_of_the_iteration_only():
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        CONST r2 k1
        CONST r5 k2
        LOOP
          ADD r1 r1 r2
          CONST r6 k3
          GE r3 r1 r6
          BREAK_IF r3
          ADD r4 r1 r0
          MOD r4 r4 r5
          EQ r3 r4 r2
          CONTINUE_IF r3     # (i + lane) odd: next iteration
          PRINT p0
        END
    """, regs="s32 s32 s32 bool s32 s32 s32",
        consts=[("s32", -1), ("s32", 1), ("s32", 2), ("s32", 3)], strings=[" "],
        prints=[P("r1 s0 r0")])
    _, out = run(kernel_module(a, k, 2))
    assert lines(out) == ["0 0", "1 1", "2 0"]


def test_continue_inside_an_if_is_not_reenabled_by_its_end():
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        CONST r2 k1
        CONST r5 k2
        LOOP
          ADD r1 r1 r2
          CONST r6 k3
          GE r3 r1 r6
          BREAK_IF r3
          EQ r3 r0 r5        # lane 0 ...
          IF r3
            CONTINUE_IF r3   # ... continues from inside an IF
            PRINT p0
          END
          PRINT p1
        END
        PRINT p2
    """, regs="s32 s32 s32 bool s32 s32 s32",
        consts=[("s32", -1), ("s32", 1), ("s32", 0), ("s32", 2)],
        strings=["never", "tail ", " ", "done "],
        prints=[P("s0"), P("s1 r1 s2 r0"), P("s3 r0")])
    _, out = run(kernel_module(a, k, 2))
    assert lines(out) == ["tail 0 1", "tail 1 1", "done 0", "done 1"]


def test_nested_loops_and_ifs_reconverge_at_each_end():
    """Lane l counts, for j < l and k < 2, the pairs where j + k is even."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r7 k1
        CONST r8 k2
        CONST r1 k0                  # j := -1
        LOOP
          ADD r1 r1 r7
          GE r3 r1 r0
          BREAK_IF r3
          CONST r2 k0                # k := -1
          LOOP
            ADD r2 r2 r7
            GE r3 r2 r8
            BREAK_IF r3
            ADD r4 r1 r2
            MOD r4 r4 r8
            CONST r5 k3
            EQ r3 r4 r5
            IF r3
              ADD r6 r6 r7
            END
          END
        END
        PRINT p0
    """, regs="s32 s32 s32 bool s32 s32 s32 s32 s32",
        consts=[("s32", -1), ("s32", 1), ("s32", 2), ("s32", 0)], strings=[":"],
        prints=[P("r0 s0 r6")])
    _, out = run(kernel_module(a, k, 5))
    # lane l: l iterations of j, each with exactly one even j + k among k in {0, 1}
    assert lines(out) == ["0:0", "1:1", "2:2", "3:3", "4:4"]


def test_yielded_lanes_are_not_awaited_by_a_barrier():
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        GE r2 r0 r1
        IF r2
          YIELD
        END
        BARRIER c0
        PRINT p0
    """, regs="s32 s32 bool", consts=[("s32", 48)], strings=["after "],
        prints=[P("s0 r0")], lanesets=[ALL],
        colls=[CollSite(0, 0, "barrier at end of parallel")])
    _, out = run(kernel_module(a, k, 64))
    assert lines(out) == [f"after {i}" for i in range(48)]


def barrier_under(cond: str) -> str:
    """The error of a 32-lane BARRIER inside ``IF (LANE <cond> 16)``."""
    a = Asm()
    k = a.code(f"""
        LANE r0
        CONST r1 k0
        {cond} r2 r0 r1
        IF r2
          BARRIER c0
        END
    """, regs="s32 s32 bool", consts=[("s32", 16)], lanesets=[ALL],
        colls=[CollSite(0, 0, "sync.shared")])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 32))
    return str(e.value)


def test_barrier_reached_by_half_a_warp_is_a_divergence_error():
    assert barrier_under("LT") == "\n".join([
        "code.asm:6:11: runtime error: 'sync.shared' is a collective of 32 lanes but "
        "lanes 16-31 of warp 0 are not active here (divergent control flow).",
        "    6 |           BARRIER c0",
        "      |           ^~~~~~~~~~",
        "  in kernel launched at host.asm:3:1, block (0), lane 0 (warp 0, lane 0)",
    ])


def test_barrier_missed_by_one_lane_names_it_in_the_singular():
    assert barrier_under("NE").splitlines()[0] == (
        "code.asm:6:11: runtime error: 'sync.shared' is a collective of 32 lanes but "
        "lane 16 of warp 0 is not active here (divergent control flow).")


def test_barrier_waits_for_every_warp_of_its_lane_set():
    """Warp 1 prints before the barrier; warp 0 only after it (it blocked first)."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        GE r2 r0 r1
        IF r2
          PRINT p0
        END
        BARRIER c0
        CONST r1 k1
        MOD r3 r0 r1
        CONST r1 k2
        EQ r2 r3 r1
        IF r2
          PRINT p1
        END
    """, regs="s32 s32 bool s32",
        consts=[("s32", 62), ("s32", 32), ("s32", 0)], strings=["before ", "after "],
        prints=[P("s0 r0"), P("s1 r0")], lanesets=[ALL], colls=[CollSite(0, 0, "barrier")])
    _, out = run(kernel_module(a, k, 64))
    assert lines(out) == ["before 62", "before 63", "after 0", "after 32"]


def test_barrier_of_a_lane_subset_and_units():
    """Lanes 60-63 form the set; with unit 32 the barrier is warp 1's alone."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        GE r2 r0 r1
        IF r2
          BARRIER c0
          PRINT p0
        END
    """, regs="s32 s32 bool", consts=[("s32", 60)], strings=["in "],
        prints=[P("s0 r0")], colls=[CollSite(0, 32, "sync.barrier")],
        lanesets=[LaneSet(code=a.flat("LANE r0\nCONST r1 k0\nGE r2 r0 r1"), result=2)])
    _, out = run(kernel_module(a, k, 64))
    assert lines(out) == ["in 60", "in 61", "in 62", "in 63"]


def test_barrier_missed_by_lanes_that_finished_is_a_partial_group_error():
    """Warp 1 skips the barrier as a whole (no divergence inside a warp) and ends."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        LT r2 r0 r1
        IF r2
          BARRIER c0
        END
    """, regs="s32 s32 bool", consts=[("s32", 32)], lanesets=[ALL],
        colls=[CollSite(0, 0, "sync.shared")])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 64))
    assert str(e.value) == "\n".join([
        "code.asm:6:11: runtime error: 'sync.shared' was reached by only part of its group: "
        "lanes 32-63 finished the kernel without arriving.",
        "    6 |           BARRIER c0",
        "      |           ^~~~~~~~~~",
        "  warp 0 (lanes 0-31): sync.shared (code.asm:6:11): arrived 32/64",
        "  in kernel launched at host.asm:3:1",
    ])


def test_a_lane_outside_a_collectives_lane_set_is_a_runtime_error():
    """A hand-made module whose lane set leaves out lanes its control flow brings to the
    collective (lowering never does): the lowest such lane is reported, at the
    collective, rather than the collective computed over the wrong lanes."""
    a = Asm()
    k = a.code("LANE r0\nBARRIER c0", regs="s32 s32 bool", consts=[("s32", 37)],
               lanesets=[LaneSet(a.flat("LANE r0\nCONST r1 k0\nLT r2 r0 r1"), 2)],
               colls=[CollSite(0, 0, "sync.shared")])
    module = kernel_module(a, k, 64)
    verify(module)          # well-formed: lane sets are only evaluated when blocks start
    with pytest.raises(KernelFault) as e:
        run(module)
    assert str(e.value) == "\n".join([
        "code.asm:2:1: runtime error: lane 37 reaches 'sync.shared' but is not one of its "
        "participants.",
        "    2 | BARRIER c0",
        "      | ^~~~~~~~~~",
        "  in kernel launched at host.asm:3:1, block (0), lane 37 (warp 1, lane 5)"])