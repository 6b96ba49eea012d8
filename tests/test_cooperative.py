"""Cooperative launches, ``parallel ... : block<cooperative>``, and their grid barrier
``sync.barrier : block`` (LANGUAGE.md §7.1.4; Croqtile: cooperative-launch.md): one short
program per rule with what it must return, print or report written out by hand.
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm
from croqvm.lang.frontend import front_end

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def compile_src(source: str, filename: str = "coop.co"):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), filename)


def run(source: str, func: str, *args):
    """(printed, returned) of ``func``."""
    prog = compile_src(source)
    out = io.StringIO()
    result = engines.run(prog, func, *args, out=out)
    return out.getvalue(), result


def fault(source: str, func: str) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(source), func, out=io.StringIO())
    return str(info.value)


# Each block writes its element, then reads its mirror's after the grid barrier: block b
# reads a[3 - b] = 10 (4 - b).
EXCHANGE = """
    __co__ auto exchange() {
      s32 [4] a;
      s32 [4] b;
      parallel bx by 4 : block<cooperative> {
        a.at(bx) = (bx + 1) * 10;
        sync.barrier : block;
        b.at(bx) = a.at(3 - bx);
      }
      return b;
    }
"""


def test_blocks_exchange_values_through_the_grid_barrier():
    _, b = run(EXCHANGE, "exchange")
    np.testing.assert_array_equal(b, [40, 30, 20, 10])


# Three rounds of "every block adds its left neighbour's value" with two barriers per
# round (one before reading, one before the next write). Per round v[b] += v[b - 1] for
# b > 0, from v = 1, 1, 1, 1: (1, 2, 2, 2), (1, 3, 4, 4), (1, 4, 7, 8).
ROUNDS = """
    __co__ auto prefix() {
      s32 [4] v;
      parallel bx by 4 : block<cooperative>, t by 64 : thread {
        shared s32 [1] left;
        if (t == 0)
          v.at(bx) = 1;
        foreach r in [3] {
          sync.barrier : block;
          if (t == 0)
            left.at(0) = bx > 0 ? v.at(bx - 1) : 0;
          sync.barrier : block;
          if (t == 0)
            v.at(bx) = v.at(bx) + left.at(0);
        }
      }
      return v;
    }
"""


def test_a_grid_barrier_in_a_loop_releases_once_per_round():
    _, v = run(ROUNDS, "prefix")
    np.testing.assert_array_equal(v, [1, 4, 7, 8])


# Resident blocks run in row-major order, each until it waits at the barrier.
ORDER = """
    __co__ void order() {
      parallel bx by 3 : block<cooperative> {
        println("before", bx);
        sync.barrier : block;
        println("after", bx);
      }
    }
"""


def test_every_block_reaches_the_barrier_before_any_goes_on():
    printed, _ = run(ORDER, "order")
    assert printed == "before 0\nbefore 1\nbefore 2\nafter 0\nafter 1\nafter 2\n"


def test_a_block_that_finishes_first_is_a_deadlock():
    assert fault("""
        __co__ void early_exit() {
          parallel bx by 3 : block<cooperative>, t by 64 : thread {
            if (bx == 1)
              yield;
            sync.barrier : block;
          }
        }
    """, "early_exit") == textwrap.dedent("""\
        coop.co:5:5: runtime error: deadlock: 'sync.barrier : block' waits for every block of the cooperative launch, but block (1) finished the kernel without reaching it.
            5 |     sync.barrier : block;
              |     ^~~~~~~~~~~~~~~~~~~~
          in kernel launched at coop.co:2:3, block (0), lane 0 (warp 0, lane 0)""")


def test_a_grid_larger_than_the_device_holds_is_a_deadlock():
    """132 SMs of 2048 threads hold 2 blocks of 1024 threads each: 264 of 300."""
    assert fault("""
        __co__ void too_many() {
          parallel bx by 300 : block<cooperative>, t by 1024 : thread
            sync.barrier : block;
        }
    """, "too_many").splitlines()[0] == (
        "coop.co:3:5: runtime error: deadlock: 'sync.barrier : block' waits for all 300 "
        "blocks of the cooperative launch, but at most 264 blocks of 1024 threads are "
        "resident at once, and the others can not start.")


def test_a_block_stuck_before_the_barrier_is_reported_with_its_waits():
    assert fault("""
        __co__ void stuck() {
          parallel bx by 2 : block<cooperative>, t by 64 : thread {
            if (t < 32)
              __bar_sync(1, 64);
            else
              sync.barrier : block;
          }
        }
    """, "stuck") == textwrap.dedent("""\
        coop.co:4:7: runtime error: deadlock: every live lane of block (0) is blocked
            4 |       __bar_sync(1, 64);
              |       ^~~~~~~~~~~~~~~~~
          warp 0 (lanes 0-31): coop.co:4:7 '__bar_sync(1, 64)': named barrier 1: arrived 32/64 threads
          warp 1 (lanes 32-63): grid barrier 'sync.barrier : block' (coop.co:6:7), waiting for the other blocks
          in kernel launched at coop.co:2:3
        hint: named barrier 1 waits for 64 threads, but only 32 arrived before every warp was blocked or done: the count must be the threads (32 per warp) of the warps that reach the barrier in each phase.""")


def test_without_cooperative_the_barrier_is_the_blocks_own():
    """Each block then reads its mirror's element before that block has run: 0 for the
    blocks below the middle (blocks run one after another, §7.1.1)."""
    source = EXCHANGE.replace("block<cooperative>", "block")
    prog = compile_src(source)
    b = engines.run(prog, "exchange", out=io.StringIO())
    np.testing.assert_array_equal(b, [0, 0, 20, 10])


# ------------------------------------------------------------------------ the race check

def test_the_grid_barrier_orders_every_blocks_accesses():
    if engines._active[-1] != "python":
        pytest.skip("race checking runs on the Python engine")
    prog = compile_src(EXCHANGE)
    prog.run("exchange", engine="python", check="race", out=io.StringIO())
    compile_src(ROUNDS).run("prefix", engine="python", check="race", out=io.StringIO())


def test_accesses_on_one_side_of_the_grid_barrier_race_between_blocks():
    """Block 1 reads a[2] before the barrier; block 2, which runs after it, then writes
    a[2] before the barrier too: the first race the run meets."""
    if engines._active[-1] != "python":
        pytest.skip("race checking runs on the Python engine")
    racy = EXCHANGE.replace("        sync.barrier : block;\n        b.at(bx) = a.at(3 - bx);",
                            "        b.at(bx) = a.at(3 - bx);\n        sync.barrier : block;")
    assert racy != EXCHANGE
    with pytest.raises(croqvm.KernelFault) as info:
        compile_src(racy).run("exchange", engine="python", check="race", out=io.StringIO())
    assert str(info.value).splitlines()[0] == (
        "coop.co:5:5: runtime error: data race on global 'a' element (2): written here, read "
        "at coop.co:6:5; the blocks of one launch are not ordered with each other.")


# ------------------------------------------------------------------------ the CUDA path

# Two phases per round across a 2 x 3 grid: every block writes its value, then (after the
# grid barrier) adds the value of the block mirrored through the grid's centre, then
# (after another) writes again. From v = 1 + linear index (1..6; mirror of linear l is
# 5 - l): round 1 gives 7 everywhere, round 2 gives 14.
TWO_PHASE = """
    __co__ auto two_phase() {
      s32 [2, 3] v;
      s32 [2, 3] w;
      parallel {bx, bz} by [2, 3] : block<cooperative>, t by 64 : thread {
        if (t == 0)
          v.at(bx, bz) = bx * 3 + bz + 1;
        foreach r in [2] {
          sync.barrier : block;
          if (t == 0)
            w.at(bx, bz) = v.at(bx, bz) + v.at(1 - bx, 2 - bz);
          sync.barrier : block;
          if (t == 0)
            v.at(bx, bz) = w.at(bx, bz);
        }
      }
      return v;
    }
"""


def _once_on_the_python_engine():
    if engines._active[-1] != "python":
        pytest.skip("runs the CUDA path once, beside the Python engine")


def test_cuda_cpu_agrees_with_the_engines_on_a_two_phase_kernel_across_blocks():
    _once_on_the_python_engine()
    from croqvm.running.diff import assert_agree
    prog = compile_src(TWO_PHASE)
    np.testing.assert_array_equal(prog.run("two_phase", device="cuda-cpu",
                                           out=io.StringIO()), np.full((2, 3), 14))
    assert_agree(prog, "two_phase", against="cuda-cpu")


def test_cuda_cpu_reports_a_block_finished_before_the_grid_barrier_as_the_engines_do():
    _once_on_the_python_engine()
    source = """
        __co__ void early_exit() {
          parallel bx by 3 : block<cooperative>, t by 64 : thread {
            if (bx == 1)
              yield;
            sync.barrier : block;
          }
        }
    """
    texts = []
    for where in ({"engine": "python"}, {"device": "cuda-cpu"}):
        with pytest.raises(croqvm.KernelFault) as info:
            compile_src(source).run("early_exit", out=io.StringIO(), **where)
        texts.append(str(info.value))
    assert texts[1] == texts[0]
    assert "block (1) finished the kernel without reaching it" in texts[0]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_grid_barrier_compiles_with_nvcc(arch):
    """Every block's leader arrives at the global generation-counting barrier between two
    meetings of its block's participants."""
    _once_on_the_python_engine()
    from croqvm.cuda import compile as cc
    from croqvm.cuda.emit import emit
    text = emit(compile_src(TWO_PHASE).module, arch=arch).text
    assert text.count("cq_grid_sync(cq_coll_rank(cl, lane) == 0, ") == 2
    if cc.shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert cc.build(text, arch).read_bytes()[:4] == b"\x7fELF"


# ------------------------------------------------------------------------ the front end

def _diags(body: str, severity: str) -> list[str]:
    _, diags, _ = front_end("__co__ void f() {\n" + body + "\n}", "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == severity]


def test_cooperative_belongs_to_the_block_level():
    assert _diags("parallel b by 2 : block, t by 32 : thread<cooperative> { }",
                  "warning") == ["2:26: 'cooperative' annotation is only valid on "
                                 "block-level parallel-by; ignoring."]


def test_only_cooperative_goes_between_the_brackets():
    assert _diags("parallel b by 2 : block<resident> { }", "error") == [
        "2:25: syntax error: unexpected 'resident', expecting 'cooperative' in "
        "'block<cooperative>'."]

