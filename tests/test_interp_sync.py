"""Events, ONCE and the deadlock report (LANGUAGE.md §7.2.2, §10, Appendix A.8), on
bytecode written by hand for the programs shown."""
import numpy as np
import pytest

from appendix import A8_REPORT, APPENDIX
from asm import ALL, Asm, P, function, kernel_module, launch_host, run
from croqvm.bytecode.module import (Access, BaseKind, BufferDecl, EventDecl, Kernel, LaneSet, Param,
                                    ParamKind, ParamStorage, Storage)
from croqvm.core.errors import KernelFault

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

BROKEN = APPENDIX["A.8"]

LOOP = """
    CONST r3 k4
    LOOP
      ADD r3 r3 r4
      GE r8 r3 r7
      BREAK_IF r8
      MOD r5 r3 r6
      {body}
    END"""


def pipeline(empty_ready: bool):
    """A.8 as lowering shapes it: role 0 (lanes 0-127) produces, role 1 consumes."""
    a = Asm()
    src = a.source("broken.co", BROKEN)
    wait_empty = a.find(src, "wait empty[k % STAGES]")
    wait_full = a.find(src, "wait full[k % STAGES]")
    producer = f"WAIT_EVENT e1 r5 @s{wait_empty}\nMUL r9 r3 r3\nSTORE a0 r9\nTRIGGER e0 r5"
    consumer = f"WAIT_EVENT e0 r5 @s{wait_full}\nLOAD r9 a0\nSTORE a1 r9\nTRIGGER e1 r5"
    k = a.code(f"""
        LANE r0
        CONST r1 k0
        CONST r4 k1
        CONST r6 k2
        CONST r7 k3
        ALLOC b1
        LT r2 r0 r1
        IF r2
          {LOOP.format(body=producer)}
        ELSE
          {LOOP.format(body=consumer)}
        END
    """, regs="s32 s32 bool s32 s32 s32 s32 s32 bool s32",
        consts=[("s32", 128), ("s32", 1), ("s32", 2), ("s32", 8), ("s32", -1)],
        buffers=[BufferDecl("out", Storage.GLOBAL, 3, []), BufferDecl("slot", Storage.SHARED, 3, [6])],
        accesses=[Access(BaseKind.BUF, 1, -1, [5], "slot"), Access(BaseKind.BUF, 0, -1, [3], "out")],
        events=[EventDecl("full", 2, lanesets=[0]),
                EventDecl("empty", 2, empty_ready, lanesets=[1])],
        lanesets=[LaneSet(a.flat("LANE r0\nCONST r1 k0\nLT r2 r0 r1"), 2),
                  LaneSet(a.flat("LANE r0\nCONST r1 k0\nGE r2 r0 r1"), 2)])
    host = launch_host(a, bind=[(0, 0)], regs="s32 s32 s32",
                       consts=[("s32", 8), ("s32", 7)],
                       pre="CONST r1 k1\nALLOC b0", post="CONST r2 k2\nLOAD r3 a0\nPRINT p0",
                       launch_span=a.find(src, "parallel blk"),
                       buffers=[BufferDecl("out", Storage.GLOBAL, 3, [1])],
                       accesses=[Access(BaseKind.BUF, 0, -1, [2], "out")], prints=[P("r3")])
    return a.module(function("broken", host, [Kernel("k", k, 256, 1)]))


def test_pipeline_with_initial_credits_prints_49():
    assert run(pipeline(empty_ready=True), "broken")[1] == "49\n"


def test_pipeline_without_credits_reports_the_deadlock_of_appendix_a8():
    with pytest.raises(KernelFault) as e:
        run(pipeline(empty_ready=False), "broken")
    assert str(e.value) == A8_REPORT


def event_kernel(a, body, need=-1, ready=False, size=64):
    """Warp 1 triggers slot 0 of 'e' (32 arrivals per generation); warp 0 waits."""
    return a.code(f"""
        LANE r0
        CONST r1 k0
        CONST r3 k1
        LT r2 r0 r1
        {body}
    """, regs="s32 s32 bool s32", consts=[("s32", 32), ("s32", 0)],
        strings=["waited ", "triggered "],
        prints=[P("s0 r0"), P("s1 r0")], events=[EventDecl("e", 1, ready, need, [1])],
        lanesets=[ALL, LaneSet(a.flat("LANE r0\nCONST r1 k0\nGE r2 r0 r1"), 2)])


def first_lane_prints(lines):
    return [x for x in lines if x.split()[1] in ("0", "32")]


def test_wait_blocks_until_the_generation_completes():
    a = Asm()
    k = event_kernel(a, """
        IF r2
          WAIT_EVENT e0 r3
          PRINT p0
        ELSE
          PRINT p1
          TRIGGER e0 r3
        END""")
    out = run(kernel_module(a, k, 64))[1].splitlines()
    assert first_lane_prints(out) == ["triggered 32", "waited 0"]
    assert out.index("triggered 63") < out.index("waited 0")


def test_a_ready_event_has_one_completed_generation():
    a = Asm()
    k = event_kernel(a, """
        IF r2
          WAIT_EVENT e0 r3
          PRINT p0
          WAIT_EVENT e0 r3     # the second wait needs the trigger's generation
          PRINT p0
        ELSE
          PRINT p1
          TRIGGER e0 r3
        END""", ready=True)
    out = first_lane_prints(run(kernel_module(a, k, 64))[1].splitlines())
    assert out == ["waited 0", "triggered 32", "waited 0"]


def test_event_count_override_and_surplus_arrivals():
    """event<16>: 32 triggering lanes complete two generations at once."""
    a = Asm()
    k = event_kernel(a, """
        IF r2
          WAIT_EVENT e0 r3
          WAIT_EVENT e0 r3
          PRINT p0
        ELSE
          TRIGGER e0 r3
        END""", need=16)
    out = run(kernel_module(a, k, 64))[1].splitlines()
    assert out == [f"waited {i}" for i in range(32)]


def test_event_slot_out_of_range():
    a = Asm()
    k = event_kernel(a, """
        CONST r3 k0
        TRIGGER e0 r3""")
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 64))
    assert str(e.value).splitlines()[0] == (
        "code.asm:8:9: runtime error: index 32 is out of range for event array 'e' [0, 1).")


def once_kernel(a, unit):
    return a.code(f"""
        CONST r1 k0
        CONST r2 k1
        CONST r3 k2
        LOOP
          ADD r1 r1 r2
          GE r4 r1 r3
          BREAK_IF r4
          LANE r0
          ONCE r5 0 {unit}
          IF r5
            PRINT p0
          END
        END
    """, regs="s32 s32 s32 s32 bool bool", consts=[("s32", -1), ("s32", 1), ("s32", 3)],
        strings=["lane ", " round "],
        prints=[P("s0 r0 s1 r1")], once_sites=1)


def test_once_picks_one_lane_per_execution_and_block():
    a = Asm()
    out = run(kernel_module(a, once_kernel(a, 0), 64, grid=(2,)))[1]
    assert out.splitlines() == ["lane 0 round 0", "lane 0 round 1", "lane 0 round 2"] * 2


def test_once_per_warp_instance():
    a = Asm()
    out = run(kernel_module(a, once_kernel(a, 32), 64))[1]
    assert out.splitlines() == ["lane 0 round 0", "lane 0 round 1", "lane 0 round 2",
                                "lane 32 round 0", "lane 32 round 1", "lane 32 round 2"]


@pytest.mark.parametrize("unit, want", [
    (0, ["first 16", "second 16"]),
    (32, ["first 16", "second 16", "first 32", "second 32"]),
])
def test_once_claims_follow_each_lanes_own_arrivals(unit, want):
    """Lanes 16-63 reach the site once before every lane reaches it again: at the second
    arrival lanes 0-15 are at their first execution, which lane 16 (or 32) has claimed."""
    a = Asm()
    k = a.code(f"""
        LANE r0
        CONST r1 k0
        GE r2 r0 r1
        IF r2
          ONCE r3 0 {unit}
          IF r3
            PRINT p0
          END
        END
        ONCE r3 0 {unit}
        IF r3
          PRINT p1
        END
    """, regs="s32 s32 bool bool", consts=[("s32", 16)], strings=["first ", "second "],
        prints=[P("s0 r0"), P("s1 r0")], once_sites=1)
    assert run(kernel_module(a, k, 64))[1].splitlines() == want


def test_deadlock_report_lists_lanes_suspended_in_divergent_code():
    """Lanes 0-15 wait for an event nobody triggers; lanes 16-31 wait, masked, at the IF."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        CONST r3 k1
        LT r2 r0 r1
        IF r2
          WAIT_EVENT e0 r3
        END
    """, regs="s32 s32 bool s32", consts=[("s32", 16), ("s32", 0)],
        events=[EventDecl("e", 1, count=16)], lanesets=[ALL])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 32))
    assert str(e.value).splitlines()[3:] == [
        "  warp 0 (lanes 0-15): code.asm:7:11 'WAIT_EVENT e0 r3': slot e: completed "
        "generations 0, arrivals 0/16; these lanes wait for generation 0",
        "  lanes 16-31 suspended in divergent code at code.asm:6:9",
        "  in kernel launched at host.asm:3:1",
        "hint: no lane has triggered 'e' yet, and lanes 16-31 of the same warp are suspended "
        "until the waiting lanes leave their divergent code, so no trigger of theirs can "
        "release the wait: trigger before the divergent code, or from another warp."]


def test_once_effect_is_seen_by_every_lane_under_random_schedules():
    """§7.2.2: cell.at(0) = 7 once, then every lane reads it; no interleaving of the two
    warps may let a lane read before the claiming lane has stored."""
    a = Asm()
    k = a.code("""
        CONST r2 k0
        CONST r3 k1
        CONST r4 k2
        ALLOC b0
        ONCE r0 0 0
        IF r0
          NOP
          NOP
          STORE a0 r3
        END
        LOAD r1 a0
        LANE r2
        STORE a1 r1
    """, regs="bool s32 s32 s32 s32", consts=[("s32", 0), ("s32", 7), ("s32", 1)],
        buffers=[BufferDecl("cell", Storage.SHARED, 3, [4]), BufferDecl("out", Storage.GLOBAL, 3, [])],
        accesses=[Access(BaseKind.BUF, 0, -1, [2], "cell"), Access(BaseKind.BUF, 1, -1, [2], "out")],
        once_sites=1)
    mod = kernel_module(a, k, 64, params=[Param("out", ParamKind.BUFFER, 3, [64], ParamStorage.GLOBAL, 0)],
                        bind=[(1, 0)], buffers=[BufferDecl("out", Storage.GLOBAL, 3, [], param=0)])
    for seed in range(12):
        out = np.zeros(64, np.int32)
        run(mod, args=[out], schedule="random", seed=seed)
        assert (out == 7).all(), seed


def test_a_blocked_wait_is_one_step():
    """docs/EXECUTION.md §17: warp 0 waits for warp 1's trigger; each warp
    issues 8 instructions and the host 3, and the wait that blocked does not run again."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        LT r2 r0 r1
        CONST r3 k1
        IF r2
          WAIT_EVENT e0 r3
        ELSE
          TRIGGER e0 r3
        END""", regs="s32 s32 bool s32", consts=[("s32", 32), ("s32", 0)],
        events=[EventDecl("e", 1, count=32)])
    stats = {}
    run(kernel_module(a, k, 64), stats=stats)
    # warp 0: 7 instructions with its 32 lanes, then END with none (the ELSE emptied it);
    # warp 1: IF leaves none active, so its ELSE issues with none
    assert (stats["warp_steps"], stats["lane_steps"]) == (8 + 8 + 3, 7 * 32 + 7 * 32 + 3)
