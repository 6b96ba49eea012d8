"""Cyclic event generations (`e.at(order)`, LANGUAGE.md §10.6), `trigger e after f`
(§10.7) and event shadowing (§10.1), one short program per test, with the expected output
derived by hand from the rules: `.at(order)` on `event[N]` is slot `order % N`, and a wait
passes while that slot's completed count has the parity of `order / N + 1` (an mbarrier
parity wait).

Where printed order matters it follows the default schedule (§7.1.2): the lowest-numbered
runnable warp runs until it blocks or finishes.
"""
from __future__ import annotations

import numpy as np
import pytest

import engines
from test_semantics_sync import fault, lines, run

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


# A two-slot ring carrying ITEMS rows of a [ITEMS, 4] input through shared tiles: warp 0
# produces with async copies bound to `full` by trigger-after, warp 1 consumes and hands
# the slot back through `empty` (= ready: every slot starts empty). Both keep one logical
# order, advanced with `.at(order++)`, over more items than slots.
RING = """
    __co__ auto ring(s32 [ITEMS, 4] input) {
      s32 [ITEMS, 4] out;
      parallel b by 1 : block {
        shared s32 [1, 4] tile[2];
        shared event full[2], empty[2] = ready;
        parallel g by 2 : group, t by 32 : thread {
          inthreads.async (g == 0) {
            mutable ORDER_T order = 0;
            foreach {i} in [ITEMS] {
              wait empty.at(order);
              load = dma.copy.async input.chunkat(i, _) => tile[order % 2];
              trigger full.at(STEP) after load;
            }
          }
          inthreads.async (g == 1) {
            mutable s32 order = 0;
            foreach {i} in [ITEMS] {
              wait full.at(order);
              if (t < 4)
                out.at(i, t) = tile[order % 2].at(0, t) * 10 + i;
              trigger empty.at(order++);
            }
          }
        }
      }
      return out;
    }
"""


def ring(items: int, order_type: str = "u32", step: str = "order++") -> str:
    return RING.replace("ITEMS", str(items)).replace("ORDER_T", order_type) \
        .replace("STEP", step)


def ring_expected(data: np.ndarray) -> np.ndarray:
    return data * 10 + np.arange(len(data))[:, None]


@pytest.mark.parametrize("order_type", ["u32", "s32", "s64"])
def test_a_ring_of_two_slots_carries_seven_items_in_order(order_type):
    data = np.arange(28, dtype=np.int32).reshape(7, 4) - 5
    _, out = run(ring(7, order_type), "ring", data)
    np.testing.assert_array_equal(out, ring_expected(data))


def test_an_order_kept_modulo_twice_the_slots_selects_the_same_generations():
    # (order + 1) & 3 for event[2] keeps the slot and the phase (§10.6).
    src = ring(6, step="order").replace(
        "trigger full.at(order) after load;",
        "trigger full.at(order) after load;\n              order = (order + 1) & 3;")
    data = np.arange(24, dtype=np.int32).reshape(6, 4)
    _, out = run(src, "ring", data)
    np.testing.assert_array_equal(out, ring_expected(data))


def test_an_order_reduced_modulo_the_slots_loses_the_phase(engine):
    # With order % 2 the producer asks for generation 0 of `empty` forever, which `=
    # ready` has completed, so it runs ahead of the consumer. On the default schedule
    # (warp 0 runs until it blocks) it never waits and runs all six items, so each `full`
    # slot completes 3 generations; the consumer passes orders 0 and 1 (generation 0: 3 is
    # odd) and blocks at order 2 (generation 1 of slot 0, whose count 3 has generation 1's
    # parity): two generations behind. Other schedules end in such a wait too.
    src = ring(6, step="order").replace(
        "trigger full.at(order) after load;",
        "trigger full.at(order) after load;\n              order = (order + 1) % 2;")
    text = fault(src, "ring", np.zeros((6, 4), np.int32))
    assert "runtime error: deadlock: every live lane of block (0) is blocked" in text
    assert "a wait '.at(order)' tells generations apart only by their parity" in text, text
    if engines.interprets(engine):
        assert "'wait full.at(order)': slot full[0]: completed generations 3, arrivals " \
               "0/32; these lanes wait for generation 1" in text, text


WRONG_PHASE = """
    __co__ void wrong_phase() {
      parallel b by 1 : block {
        shared event full[2];
        parallel g by 2 : group, t by 32 : thread {
          inthreads.async (g == 0) {
            trigger full.at(0);
          }
          inthreads.async (g == 1) {
            wait full.at(2);
          }
        }
      }
    }
"""


def test_a_wait_for_a_later_generation_of_the_slot_deadlocks_with_its_generation():
    # order 2 of event[2]: slot 0, generation 1; one trigger completed generation 0 only.
    assert fault(WRONG_PHASE, "wrong_phase", filename="phase.co") == (
        "phase.co:4:5: runtime error: deadlock: every live lane of block (0) is blocked\n"
        "    4 |     parallel g by 2 : group, t by 32 : thread {\n"
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
        "  warp 0 (lanes 0-31): barrier at end of parallel (phase.co:4:5): arrived 32/64\n"
        "  warp 1 (lanes 32-63): phase.co:9:9 'wait full.at(2)': slot full[0]: completed "
        "generations 1, arrivals 0/32; these lanes wait for generation 1\n"
        "  in kernel launched at phase.co:2:3")


# Warp 1 triggers slot 0 of a one-slot event `full` TRIGGERS times, then `go`; warp 0
# waits for `go` and then for generation WANTED of `full`.
PARITY = """
    __co__ void parity() {
      parallel b by 1 : block {
        shared event full[1], go;
        parallel g by 2 : group, t by 32 : thread {
          inthreads.async (g == 0) {
            wait go;
            wait full.at(WANTED);
            println("passed");
          }
          inthreads.async (g == 1) {
            foreach {i} in [TRIGGERS]
              trigger full.at(i);
            trigger go;
          }
        }
      }
    }
"""


def parity(triggers: int, wanted: int) -> str:
    return PARITY.replace("TRIGGERS", str(triggers)).replace("WANTED", str(wanted))


@pytest.mark.parametrize("triggers, wanted", [(1, 0), (2, 1), (3, 2), (3, 0)])
def test_a_parity_wait_passes_when_the_completed_count_has_the_parity_after_its_own(
        triggers, wanted):
    # (3, 0): generation 0 completed three generations ago, and 3 is odd like 0 + 1.
    printed, _ = run(parity(triggers, wanted), "parity")
    assert printed == lines(*["passed"] * 32)


def test_a_parity_wait_two_generations_ahead_passes_at_once_as_the_hardware_does():
    # One completed generation; generation 2 has the parity of generation 0, which has
    # completed, so the wait passes although generation 2 has not (§10.6).
    printed, _ = run(parity(1, 2), "parity")
    assert printed == lines(*["passed"] * 32)


def test_a_parity_wait_two_generations_behind_deadlocks_with_the_stale_phase_hint():
    text = fault(parity(2, 0), "parity", filename="stale.co")
    assert "'wait full.at(0)': slot full: completed generations 2, arrivals 0/32; these " \
           "lanes wait for generation 0" in text, text
    assert text.endswith(
        "hint: generation 0 of 'full' completed, but the slot has completed 2 generations "
        "by now; a wait '.at(order)' tells generations apart only by their parity, so a "
        "waiter two generations behind waits for the next generation of that parity: let "
        "no trigger run more than one generation ahead of the slowest waiter."), text


def test_a_ready_event_has_completed_generation_zero_of_every_slot():
    src = """
        __co__ void ready() {
          parallel b by 1 : block {
            shared event e[3] = ready;
            parallel t by 32 : thread {
              wait e.at(0), e.at(1), e.at(2);
              if (t == 0)
                println("through");
            }
          }
        }
    """
    printed, _ = run(src, "ready")
    assert printed == lines("through")


@pytest.mark.parametrize("statement", ["wait e.at(k);", "trigger e.at(k);"])
def test_a_negative_order_is_out_of_range(statement):
    src = """
        __co__ void negative() {
          parallel b by 1 : block {
            shared event e[2] = ready;
            parallel t by 32 : thread {
              s32 k = t - 3;
              STATEMENT
            }
          }
        }
    """.replace("STATEMENT", statement)
    text = fault(src, "negative")
    assert text.splitlines()[0] == \
        "sem.co:6:7: runtime error: index -3 is out of range for event array 'e' [0, 2)."
    assert "lane 0 (warp 0, lane 0)" in text, text


JOIN = """
    __co__ auto join(s32 [4] lhs, s32 [4] rhs) {
      s32 [4] out;
      parallel b by 1 : block {
        shared s32 [4] l;
        shared s32 [4] r;
        shared event full;
        parallel g by 2 : group, t by 32 : thread {
          inthreads.async (g == 0) {
            lf = dma.copy.async lhs => l;
            rf = dma.copy.async rhs => r;
            trigger full after lf, rf;
            AFTER
          }
          inthreads.async (g == 1) {
            wait full;
            if (t < 4)
              out.at(t) = l.at(t) * 100 + r.at(t);
          }
        }
      }
      return out;
    }
"""


def test_trigger_after_publishes_two_copies_with_one_arrival_per_lane():
    lhs = np.array([1, 2, 3, 4], np.int32)
    rhs = np.array([5, 6, 7, 8], np.int32)
    _, out = run(JOIN.replace("AFTER", ""), "join", lhs, rhs)
    np.testing.assert_array_equal(out, lhs * 100 + rhs)


def test_waiting_a_future_already_bound_to_an_event_faults():
    text = fault(JOIN.replace("AFTER", "wait lf;"), "join",
                 np.zeros(4, np.int32), np.zeros(4, np.int32))
    assert text.splitlines()[0] == \
        "sem.co:12:9: runtime error: future 'lf' has been waited multiple times.", text


def test_wait_takes_events_and_futures_in_one_list():
    src = """
        __co__ auto lists(s32 [4] a) {
          s32 [4] out;
          parallel b by 1 : block {
            shared event e0, e1;
            shared s32 [4] box;
            parallel g by 2 : group, t by 32 : thread {
              inthreads.async (g == 0) {
                f = dma.copy.async a => local;
                wait e0, f, e1;
                if (t < 4)
                  out.at(t) = f.data.at(t) + box.at(t);
              }
              inthreads.async (g == 1) {
                if (t < 4)
                  box.at(t) = 10 * t;
                trigger e1, e0;
              }
            }
          }
          return out;
        }
    """
    a = np.array([3, 1, 4, 1], np.int32)
    _, out = run(src, "lists", a)
    np.testing.assert_array_equal(out, a + 10 * np.arange(4))


def test_an_inner_event_shadows_the_outer_one_of_the_same_name():
    # The outer `e` starts ready; the inner one does not, so warp 0's wait in the inner
    # scope must wait for warp 1's trigger and then see its store; after the inner
    # parallel-by the name is the outer (ready) event again.
    src = """
        __co__ void shadow() {
          parallel b by 1 : block {
            shared event e = ready;
            shared s32 [1] box;
            parallel g by 2 : group, t by 32 : thread {
              shared event e;
              inthreads.async (g == 0) {
                wait e;
                if (t == 0)
                  println("inner", box.at(0));
              }
              inthreads.async (g == 1) {
                if (t == 0)
                  box.at(0) = 7;
                trigger e;
              }
            }
            wait e;
            println("outer");
          }
        }
    """
    printed, _ = run(src, "shadow")
    assert printed == lines("inner 7", "outer")
