"""``trigger.cluster`` (LANGUAGE.md §10.8): each lane arrives at the event in every block of
its cluster, a generation needs the arrivals of every block, and the blocks of such a
cluster run together. References are written out by hand.
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm
from croqvm.bytecode.verify import verify
from croqvm.cuda.emit import UnsupportedError, emit
from croqvm.core.errors import BytecodeError
from croqvm.lang.frontend import front_end

import engines
import parity

ITEMS = 4

# Two clusters of two blocks; in each block a producer warp hands ITEMS items to a
# consumer warp through one shared slot. The consumer releases the slot in both blocks
# of its cluster, so a producer refills it only once the consumers of both blocks have
# taken the item: before item k it sees that the other block's consumer took k items.
PIPELINE = """
__co__ s32 [4, 4] pipeline() {
  s32 [4] taken {0};
  s32 [4, 4] seen;
  parallel c by 2 : cluster, b by 4 : block {
    shared event full, empty = ready;
    shared s32 [1] box;
    parallel g by 2 : group, t by 32 : thread {
      inthreads.async (g == 0) {                  // producer
        foreach {k} in [4] {
          wait empty;
          if (t == 0) {
            seen.at(b, k) = taken.at(b + 1 - 2 * c);  // the other block of the cluster
            box.at(0) = b * 10 + k;
          }
          trigger full;
        }
      }
      inthreads.async (g == 1) {                  // consumer
        foreach {k} in [4] {
          wait full;
          if (t == 0)
            taken.at(b) = box.at(0) % 10 + 1;
          trigger.cluster empty;
        }
      }
    }
  }
  return seen;
}
"""


def compile_(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "ct.co")


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("schedule", [{}, {"schedule": "random", "seed": 7}])
def test_the_producer_waits_for_the_consumers_of_both_blocks(schedule):
    if schedule and not engines.interprets(engines._active[-1]):
        pytest.skip("schedules are the interpreters'")
    seen = engines.run(compile_(PIPELINE), "pipeline", **schedule)
    k = np.arange(ITEMS)
    # item 0 waits for the ready generation only; item k for k arrivals of each block
    assert (seen >= k).all(), seen
    # the other block's consumer can not be ahead by more than the one item its own
    # producer may hand over before waiting for this block's consumer
    assert (seen <= k + 1).all(), seen


def test_without_the_cluster_trigger_the_blocks_do_not_wait_for_each_other():
    """The same pipeline with a block-scope trigger: each block runs alone, one after
    another, so the first block of each cluster never sees the second one's progress."""
    with engines.active("native"):
        seen = engines.run(compile_(PIPELINE.replace("trigger.cluster", "trigger")),
                           "pipeline", jobs=1)
    assert seen[0].tolist() == [0, 0, 0, 0] and seen[2].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("schedule", [{}, {"schedule": "random", "seed": 3}])
def test_both_engines_agree(schedule):
    prog = compile_(PIPELINE)
    ref = parity.outcome(prog.module, "pipeline", [], {}, "python", **schedule)
    got = parity.outcome(prog.module, "pipeline", [], {}, "native", **schedule)
    parity.assert_alike(got, ref, "pipeline")


# Only the consumers of the first block of each cluster release the slot: the second
# arrival of each generation of 'empty' (32 lanes of each of two blocks) never comes.
ONE_SIDED = """
__co__ void one_sided() {
  parallel c by 2 : cluster, b by 2 : block {
    shared event full, empty = ready;
    parallel g by 2 : group, t by 32 : thread {
      inthreads.async (g == 0) {
        foreach {k} in [2] {
          wait empty;
          trigger full;
        }
      }
      inthreads.async (g == 1) {
        foreach {k} in [2] {
          wait full;
          if (c == 0)
            trigger.cluster empty;
        }
      }
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
def test_a_block_that_does_not_release_deadlocks_its_cluster():
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_(ONE_SIDED), "one_sided", out=io.StringIO())
    assert str(info.value) == (
        "ct.co:7:11: runtime error: deadlock: every live lane of block (0) is blocked\n"
        "    7 |           wait empty;\n"
        "      |           ^~~~~~~~~~\n"
        "  warp 0 (lanes 0-31): ct.co:7:11 'wait empty': slot empty: completed generations"
        " 1, arrivals 32/64; these lanes wait for generation 1\n"
        "  warp 1 (lanes 32-63): ct.co:13:11 'wait full': slot full: completed generations"
        " 1, arrivals 0/32; these lanes wait for generation 1\n"
        "  in kernel launched at ct.co:2:3\n"
        "hint: 'empty' counts the arrivals of every block of its cluster ('trigger.cluster'):"
        " a generation needs 64, but only 32 arrived before every warp of the cluster was"
        " blocked or done, so the lanes of some block did not reach their"
        " 'trigger.cluster'.")


# The pipeline without its look across blocks through global memory, which the race
# checker reports: blocks of a launch are not ordered with each other (§7.5).
OWN_BLOCK = PIPELINE.replace("taken.at(b + 1 - 2 * c)", "k")


def test_the_pipeline_is_race_free():
    seen = compile_(OWN_BLOCK).run("pipeline", engine="python", check="race")
    assert seen.tolist() == [list(range(ITEMS))] * 4


def test_a_consumer_that_releases_before_reading_races_with_the_next_fill():
    racy = OWN_BLOCK.replace(
        """          if (t == 0)
            taken.at(b) = box.at(0) % 10 + 1;
          trigger.cluster empty;""",
        """          trigger.cluster empty;
          if (t == 0)
            taken.at(b) = box.at(0) % 10 + 1;""")
    with pytest.raises(croqvm.KernelFault) as info:
        compile_(racy).run("pipeline", engine="python", check="race", out=io.StringIO())
    first = str(info.value).splitlines()[0]
    assert first.startswith("ct.co:23:13: runtime error: data race on shared 'box' element "
                            "(0): read here, written at ct.co:13:13"), first


def diagnose(text: str) -> list[str]:
    _, diags, _ = front_end(textwrap.dedent(text).lstrip("\n"), "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == "error"]


KERNEL = """
__co__ void f() {
  parallel %s {
    shared event e, e2;
    s32 [4] x;
    %s
  }
}
"""
CLUSTER = "c by 2 : cluster, b by 2 : block"


@pytest.mark.parametrize("level", ["block", "group-4", "group", "thread", "device"])
def test_only_the_cluster_scope(level):
    assert diagnose(KERNEL % (CLUSTER, f"trigger.{level} e;")) == [
        "5:13: only 'cluster' scope is supported for trigger."]


@pytest.mark.parametrize("stmt, errors", [
    ("trigger.warp e;", ["5:13: syntax error: unexpected 'warp', expecting 'cluster', "
                         "'block', 'group-4', 'group' or 'thread'."]),
    ("trigger.cluster e; trigger e;",
     ["5:32: event 'e' is triggered both by 'trigger.cluster' and by 'trigger'."]),
    ("trigger.cluster e after x;",
     ["5:29: 'trigger.cluster' can not publish async copies with 'after': the copies land "
      "in the lane's own block only."]),
    ("trigger.cluster x;", ["5:21: expect `x' an event but got 's32 [4]'."]),
    ("trigger.cluster e, e2; wait e2;", []),
])
def test_static_errors(stmt, errors):
    assert diagnose(KERNEL % (CLUSTER, stmt)) == errors


def test_a_kernel_without_a_cluster_level_is_refused():
    assert diagnose(KERNEL % ("b by 2 : block", "trigger.cluster e;")) == [
        "5:5: 'trigger.cluster' arrives at the event in every block of the cluster, but "
        "this kernel has no 'cluster' level."]


def test_the_verifier_keeps_trigger_scopes_apart():
    module = compile_(PIPELINE).module
    kernel = module.functions[0].kernels[0].code
    empty = next(ev for ev in kernel.events if ev.name == "empty")
    empty.cluster = False
    with pytest.raises(BytecodeError, match="TRIGGER_CLUSTER on event 1 .'empty'., a "
                                            "block-scope event"):
        verify(module)
    empty.cluster = True
    verify(module)
    module.functions[0].host.launches[0].cluster.append(0)
    with pytest.raises(BytecodeError, match="2 cluster extents for a kernel of grid rank 1"):
        verify(module)


def test_the_cuda_generator_needs_sm_90a():
    with pytest.raises(UnsupportedError, match="ct.co:23:11: error: 'trigger.cluster' "
                                               r"\(an arrival in every block of a thread "
                                               r"block cluster\) needs sm_90a"):
        emit(compile_(PIPELINE).module, arch="sm_80")


def test_on_sm_90a_every_block_of_the_cluster_gets_the_arrival():
    """The arrival goes to every block of the cluster, the event's need counts them, and
    the blocks meet after zeroing their counters and before they leave."""
    text = emit(compile_(PIPELINE).module, arch="sm_90a").text
    kernel = text[text.index("CQ_KERNEL"):]
    assert kernel.count("cq_event_trigger_cluster(") == 1
    assert kernel.count("cq_cluster_sync();") == 2
    assert "* cq_cluster_blocks();" in kernel
