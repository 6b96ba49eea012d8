"""Coordination between lanes as the language defines it, one short program per test with
the expected output derived by hand from LANGUAGE.md: event generations, credits,
`= ready` and `event<N>` (§10), futures with `swap` / `rotate` (§9.4, §9.6), partial tiles
with `.zfill` (§8.4, §9.5), the collective and future errors (§7.4.4, §9.5.4), the
deadlock report (§10.5, Appendix A.8) and random schedules (§7.1.2, §7.5).

Where printed order matters it follows the default schedule (§7.1.2): the lowest-numbered
runnable warp runs until it blocks or finishes, and after any release (a collective or an
event generation completing) scheduling starts again from the lowest runnable warp.
"""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def compile_src(source: str, filename: str = "sem.co"):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), filename)


def run(source: str, func: str, *args, **options):
    """Run ``func``; return (what it printed, what it returned)."""
    out = io.StringIO()
    result = engines.run(compile_src(source), func, *args, out=out, **options)
    return out.getvalue(), result


def lines(*items: str) -> str:
    return "".join(item + "\n" for item in items)


def fault(source: str, func: str, *args, filename: str = "sem.co") -> str:
    """Run a program that must stop with a runtime error; return the rendered report."""
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(source, filename), func, *args, out=io.StringIO())
    return str(info.value)


# ------------------------------------------------------------------------ events (§10)

# Producer: warpgroup 0 (warps 0-3); consumer: warpgroup 1 (warps 4-7). Each event slot
# expects 128 arrivals per generation (§10.2): one trigger from every lane of one role.
CREDITS_2 = """
    __co__ auto pipe() {
      s32 [4] out;
      parallel blk by 1 : block {
        shared event full[2], empty[2];
        shared s32 [2] slot;
        parallel role by 2 : group-4, t by 128 : thread {
          inthreads.async (role == 0) {
            foreach k in [4] {
              wait empty[k % 2];
              if (t == 0) {
                slot.at(k % 2) = k * k;
                println("put", k);
              }
              trigger full[k % 2];
            }
          }
          inthreads.async (role == 1) {
            foreach s in [2]
              trigger empty[s];
            foreach k in [4] {
              wait full[k % 2];
              if (t == 0) {
                out.at(k) = slot.at(k % 2);
                println("got", k, slot.at(k % 2));
              }
              trigger empty[k % 2];
            }
          }
        }
      }
      return out;
    }
"""

READY_3 = """
    __co__ auto pipe() {
      s32 [5] out;
      parallel blk by 1 : block {
        shared event full[3];
        shared event empty[3] = ready;          // only the empty slots start completed
        shared s32 [3] slot;
        parallel role by 2 : group-4, t by 128 : thread {
          inthreads.async (role == 0) {
            foreach k in [5] {
              wait empty[k % 3];
              if (t == 0) {
                slot.at(k % 3) = k * k;
                println("put", k);
              }
              trigger full[k % 3];
            }
          }
          inthreads.async (role == 1) {
            foreach k in [5] {
              wait full[k % 3];
              if (t == 0) {
                out.at(k) = slot.at(k % 3);
                println("got", k, slot.at(k % 3));
              }
              trigger empty[k % 3];
            }
          }
        }
      }
      return out;
    }
"""


def test_two_stage_pipeline_with_initial_credits():
    # Warp 7's second initial credit completes empty[1] only after the consumer has taken
    # item 0, so producer and consumer alternate.
    printed, out = run(CREDITS_2, "pipe")
    assert printed == lines("put 0", "got 0 0", "put 1", "got 1 1", "put 2", "got 2 4",
                            "put 3", "got 3 9")
    assert out.tolist() == [0, 1, 4, 9]


def test_three_stage_pipeline_with_ready_slots_runs_three_items_ahead():
    # Every empty slot starts with one completed generation: the producer fills all three
    # before the consumer has taken any; item 3 needs the consumer's first credit.
    printed, out = run(READY_3, "pipe")
    assert printed == lines("put 0", "put 1", "put 2", "got 0 0", "got 1 1", "got 2 4",
                            "put 3", "got 3 9", "put 4", "got 4 16")
    assert out.tolist() == [0, 1, 4, 9, 16]


def test_ready_initialises_only_the_event_it_follows():
    src = """
        __co__ void main() {
          parallel b by 1 : block {
            shared event full, empty = ready;
            parallel t by 32 : thread {
              wait full;
              wait empty;
              trigger empty;
            }
          }
        }
    """
    with pytest.raises(croqvm.CompileError) as info:
        compile_src(src)
    assert "error: event 'full' is waited but never triggered." in str(info.value)


SIGNAL = """
    __co__ void main() {
      parallel blk by 1 : block {
        shared event%s e;
        shared s32 [1] v;
        parallel t by 64 : thread {
          if (t == 40) {
            v.at(0) = 7;
            trigger e;
            println("sent");
          }
          if (t < 32) {
            wait e;
            if (t == 0) println("saw", v.at(0));
          }
        }
      }
    }
"""


def test_event_with_an_explicit_arrival_count():
    # event<1>: lane 40's single trigger completes a generation; that release hands the
    # block back to warp 0 before warp 1 prints.
    printed, _ = run(SIGNAL % "<1>", "main")
    assert printed == lines("saw 7", "sent")


def test_event_arrival_count_is_every_lane_that_can_trigger_it():
    # Without <1> the trigger statement counts all 64 lanes of its region (the `if` is
    # ignored, §10.2): one arrival never completes a generation.
    text = fault(SIGNAL % "", "main")
    first, *rest = text.splitlines()
    assert first == "sem.co:12:9: runtime error: deadlock: every live lane of block (0) is blocked"
    assert any("arrivals 1/64" in line and "'wait e'" in line for line in rest), text
    assert any("barrier at end of parallel" in line and "arrived 32/64" in line
               for line in rest), text


def test_generations_let_a_lane_wait_for_each_trigger_in_turn():
    # Lane 32 (warp 1) triggers three times; each `wait` of warp 0 waits for the
    # generation after the one it saw last (§10.3), so warp 0 sees 1, 2, 3 in turn.
    src = """
        __co__ void main() {
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
                  println("round", k, "saw", v.at(0));
                }
              }
            }
          }
        }
    """
    printed, _ = run(src, "main")
    assert printed == lines("round 0 saw 1", "round 1 saw 2", "round 2 saw 3")


def test_trigger_and_wait_on_a_whole_event_array():
    # A whole array acts on each slot in index order (§10.1).
    src = """
        __co__ void main() {
          parallel blk by 1 : block {
            shared event<1> e[3];
            shared s32 [3] v;
            parallel t by 64 : thread {
              if (t == 32) {
                foreach s in [3]
                  v.at(s) = s + 7;
                trigger e;
              }
              if (t == 0) {
                wait e;
                println(v.at(0), v.at(1), v.at(2));
              }
            }
          }
        }
    """
    assert run(src, "main")[0] == "7 8 9\n"


BROKEN = """
    #define STAGES 2

    __co__ void broken() {
      s32 [8] out;
      parallel blk by 1 : block {
        shared event full[STAGES], empty[STAGES]%s;
        shared s32 [STAGES] slot;
        parallel role by 2 : group-4 {
          inthreads.async (role == 0)
            foreach k in [8] {
              wait empty[k %% STAGES];
              slot.at(k %% STAGES) = k * k;
              trigger full[k %% STAGES];
            }
          inthreads.async (role == 1) {
            %s
            foreach k in [8] {
              wait full[k %% STAGES];
              out.at(k) = slot.at(k %% STAGES);
              trigger empty[k %% STAGES];
            }
          }
        }
      }
      println(out.at(7));
    }
"""


def test_appendix_a8_deadlock_report():
    text = fault(BROKEN % ("", "// no initial credits"), "broken", filename="broken.co")
    assert text == "\n".join([
        "broken.co:11:11: runtime error: deadlock: every live lane of block (0) is blocked",
        "   11 |           wait empty[k % STAGES];",
        "      |           ^~~~~~~~~~~~~~~~~~~~~~",
        "  warps 0-3 (lanes 0-127): broken.co:11:11 'wait empty[k % STAGES]': slot empty[0]: "
        "completed generations 0, arrivals 0/128; these lanes wait for generation 0",
        "  warps 4-7 (lanes 128-255): broken.co:18:11 'wait full[k % STAGES]': slot full[0]: "
        "completed generations 0, arrivals 0/128; these lanes wait for generation 0",
        "  in kernel launched at broken.co:5:3",
        "hint: no lane has triggered 'empty[0]' yet; a credit-based pipeline needs initial "
        "credits: trigger every slot once before the loop, or declare the event '= ready'."])


@pytest.mark.parametrize("ready, credits", [
    ("", "foreach s in [STAGES] trigger empty[s];"),
    (" = ready", "// credits come from '= ready'"),
])
def test_appendix_a8_with_credits_restored(ready, credits):
    printed, _ = run(BROKEN % (ready, credits), "broken")
    assert printed == "49\n"


SAME_WARP = """
    __co__ void main() {
      parallel b by 1 : block {
        shared event<16> e;
        parallel t by %d : thread {
          if (t < 16) { wait e; }
          %s
        }
      }
    }
"""


@pytest.mark.parametrize("lanes, trigger, other", [
    (32, "else { trigger e; }", []),
    (64, "if (t >= 16 && t < 32) { trigger e; }",
     ["  warp 1 (lanes 32-63): barrier at end of parallel (sem.co:4:5): arrived 32/64"]),
])
def test_a_wait_on_a_trigger_of_the_same_warp_gets_the_divergence_hint(lanes, trigger, other):
    # §7.3: lanes 16-31 would trigger e, but they are in warp 0 too and run only after
    # lanes 0-15 leave the 'if'; initial credits are not the repair
    text = fault(SAME_WARP % (lanes, trigger), "main")
    assert text.splitlines()[3:] == [
        "  warp 0 (lanes 0-15): sem.co:5:21 'wait e': slot e: completed generations 0, "
        "arrivals 0/16; these lanes wait for generation 0",
        *other,
        "  lanes 16-31 suspended in divergent code at sem.co:5:7",
        "  in kernel launched at sem.co:2:3",
        "hint: no lane has triggered 'e' yet, and lanes 16-31 of the same warp are suspended "
        "until the waiting lanes leave their divergent code, so no trigger of theirs can "
        "release the wait: trigger before the divergent code, or from another warp."]


def test_a_one_lane_producer_without_credits_gets_the_credits_hint():
    # lane 0 alone produces (lanes 1-31 of its warp are set aside), warp 1 consumes: the
    # consumer waits on an event too, so the missing trigger is a credit
    src = """
        __co__ void main() {
          parallel b by 1 : block {
            shared event<1> full, empty;
            shared s32 [1] slot;
            parallel t by 64 : thread {
              if (t == 0) { wait empty; slot.at(0) = 1; trigger full; }
              if (t == 32) { wait full; trigger empty; }
            }
          }
        }
    """
    assert fault(src, "main").splitlines()[-1] == (
        "hint: no lane has triggered 'empty' yet; a credit-based pipeline needs initial "
        "credits: trigger every slot once before the loop, or declare the event '= ready'.")


# ------------------------------------------------------------ futures (§9.4, §9.6)

# Lane t of the single block stores the sum of elements 0..t of each row it sees, so
# every row arriving in the wrong iteration or buffer shows in the result.
SWAP = """
    __co__ auto prefix(s32 [6, 4] m) {
      s32 [6, 4] out;
      parallel p by 1 : block, t by 4 : thread {
        with r in 6 {
          cur = dma.copy.async m.subspan(1, 4).at(r, 0) => shared;   // r is 0 here
          nxt = dma.any;
          foreach r(1:) {
            nxt = dma.copy.async m.subspan(1, 4).at(r, 0) => shared;
            wait cur;
            s32 acc = 0;
            foreach j in [4]
              if (j <= t) acc += cur.data.at(0, j);
            out.at(r - 1, t) = acc;
            swap(cur, nxt);
          }
          wait cur;                                                  // row 5
          s32 last = 0;
          foreach j in [4]
            if (j <= t) last += cur.data.at(0, j);
          out.at(#r - 1, t) = last;
        }
      }
      return out;
    }
"""

ROTATE = """
    __co__ auto prefix(s32 [7, 4] m) {
      s32 [7, 4] out;
      parallel p by 1 : block, t by 4 : thread {
        with r in 7 {
          f0 = dma.copy.async m.subspan(1, 4).at(r, 0) => shared;       // row 0
          f1 = dma.copy.async m.subspan(1, 4).at(r + 1, 0) => shared;   // row 1
          f2 = dma.any;
          foreach r(2:) {
            f2 = dma.copy.async m.subspan(1, 4).at(r, 0) => shared;
            wait f0;                                                    // row r - 2
            s32 acc = 0;
            foreach j in [4]
              if (j <= t) acc += f0.data.at(0, j);
            out.at(r - 2, t) = acc;
            rotate(f0, f1, f2);              // f0 <- f1, f1 <- f2, f2 <- f0's buffer
          }
          wait f0, f1;                                                  // rows 5, 6
          s32 a = 0;
          s32 b = 0;
          foreach j in [4] {
            if (j <= t) a += f0.data.at(0, j);
            if (j <= t) b += f1.data.at(0, j);
          }
          out.at(#r - 2, t) = a;
          out.at(#r - 1, t) = b;
        }
      }
      return out;
    }
"""


def rows(n: int) -> np.ndarray:
    return np.random.default_rng(n).integers(-50, 50, size=(n, 4)).astype(np.int32)


@pytest.mark.parametrize("source, n", [(SWAP, 6), (ROTATE, 7)], ids=["swap", "rotate"])
def test_buffered_rows_arrive_in_order(source, n):
    m = rows(n)
    _, out = run(source, "prefix", m)
    np.testing.assert_array_equal(out, np.cumsum(m, axis=1, dtype=np.int32))


def test_swap_exchanges_handles_not_data():
    # After swap(a, b) each name holds the other's buffer (§9.6.1); a copy into b then
    # lands in the buffer a started with, which a holds again after the second swap.
    src = """
        __co__ void main() {
          s32 [3, 3] m;
          foreach {r, c} in [3, 3]
            m.at(r, c) = 10 * r + c;
          parallel p by 1 : block, t by 1 : thread {
            a = dma.copy m.subspan(1, 3).at(0, 0) => shared;   // buffer A: row 0
            b = dma.copy m.subspan(1, 3).at(1, 0) => shared;   // buffer B: row 1
            swap(a, b);
            println(a.data.at(0, 2), b.data.at(0, 2));
            b = dma.copy m.subspan(1, 3).at(2, 0) => shared;   // into A: row 2
            swap(a, b);
            println(a.data.at(0, 1), b.data.at(0, 1));
          }
        }
    """
    printed, _ = run(src, "main")
    assert printed == lines("12 2", "21 11")


# ------------------------------------------------------- partial tiles (§8.4, §9.5)

def edge_tiles(m: np.ndarray, fill: int) -> np.ndarray:
    """Tile (i, j) of shape [2, 3] at origin (2i, 3j); elements past m's edge are ``fill``."""
    tiles = np.full((3, 3, 2, 3), fill, np.int32)
    for i in range(3):
        for j in range(3):
            part = m[2 * i:2 * i + 2, 3 * j:3 * j + 3]
            tiles[i, j, :part.shape[0], :part.shape[1]] = part
    return tiles


M57 = np.arange(100, 135, dtype=np.int32).reshape(5, 7)


def test_edge_tiles_keep_or_zero_the_elements_past_the_buffer():
    src = """
        __co__ void edges(s32 [5, 7] m, global s32 [3, 3, 2, 3] plain,
                          global s32 [3, 3, 2, 3] zero) {
          foreach {i, j} in [3, 3] {
            s32 [2, 3] a {-1};                  // refilled on every iteration (§3.2.4)
            s32 [2, 3] z {-1};
            dma.copy m.subspan(2, 3).at(i, j) => a;
            dma.copy.zfill m.subspan(2, 3).at(i, j) => z;
            foreach {r, c} in [2, 3] {
              plain.at(i, j, r, c) = a.at(r, c);
              zero.at(i, j, r, c) = z.at(r, c);
            }
          }
        }
    """
    m = M57
    plain = np.full((3, 3, 2, 3), 99, np.int32)
    zero = np.full((3, 3, 2, 3), 99, np.int32)
    engines.run(compile_src(src), "edges", m, plain, zero)
    np.testing.assert_array_equal(plain, edge_tiles(m, -1))
    np.testing.assert_array_equal(zero, edge_tiles(m, 0))


def test_edge_tiles_into_shared_memory_in_a_kernel():
    src = """
        __co__ void tiles(s32 [5, 7] m, global s32 [3, 3, 2, 3] got) {
          parallel {bi, bj} by [3, 3] : block, t by 6 : thread {
            shared s32 [2, 3] kept {-1};
            dma.copy m.subspan(2, 3).at(bi, bj) => kept;
            tile = dma.copy.zfill m.subspan(2, 3).at(bi, bj) => shared;
            got.at(bi, bj, t / 3, t % 3) = tile.data.at(t / 3, t % 3)
                                           + 1000 * kept.at(t / 3, t % 3);
          }
        }
    """
    m = M57
    got = np.zeros((3, 3, 2, 3), np.int32)
    engines.run(compile_src(src), "tiles", m, got)
    np.testing.assert_array_equal(got, edge_tiles(m, 0) + 1000 * edge_tiles(m, -1))


def test_chunkat_of_a_view_reaching_past_the_edge():
    # The view starts at (4, 4) with extents [4, 4]; chunkat(_, y) cuts it into [4, 2]
    # tiles at (4, 4) and (4, 6): only row 4 exists, and column 7 does not.
    src = """
        __co__ void chunks(s32 [5, 7] m, global s32 [2, 4, 2] plain, global s32 [2, 4, 2] zero) {
          foreach y in [2] {
            s32 [4, 2] a {-1};
            s32 [4, 2] z {-1};
            dma.copy m.subspan(4, 4).at(1, 1).chunkat(_, y) => a;
            dma.copy.zfill m.subspan(4, 4).at(1, 1).chunkat(_, y) => z;
            foreach {r, c} in [4, 2] {
              plain.at(y, r, c) = a.at(r, c);
              zero.at(y, r, c) = z.at(r, c);
            }
          }
        }
    """
    m = M57
    plain = np.zeros((2, 4, 2), np.int32)
    zero = np.zeros((2, 4, 2), np.int32)
    engines.run(compile_src(src), "chunks", m, plain, zero)
    want_plain = np.full((2, 4, 2), -1, np.int32)
    want_zero = np.zeros((2, 4, 2), np.int32)
    for want in (want_plain, want_zero):
        want[0, 0, :] = m[4, 4:6]
        want[1, 0, 0] = m[4, 6]
    np.testing.assert_array_equal(plain, want_plain)
    np.testing.assert_array_equal(zero, want_zero)


def test_a_destination_tile_past_the_edge_is_clipped():
    src = """
        __co__ void place(global s32 [5, 7] dst) {
          s32 [2, 3] src;
          foreach {i, j} in [3, 3] {
            foreach {r, c} in [2, 3]
              src.at(r, c) = 10 * (3 * i + j) + 3 * r + c;
            dma.copy src => dst.subspan(2, 3).at(i, j);
          }
        }
    """
    dst = np.full((5, 7), -1, np.int32)
    engines.run(compile_src(src), "place", dst)
    rr, cc = np.indices((5, 7))
    np.testing.assert_array_equal(dst, 10 * (3 * (rr // 2) + cc // 3) + 3 * (rr % 2) + cc % 3)


def test_a_tile_entirely_outside_its_buffer():
    src = """
        __co__ void edge(s32 [5, 7] m) {
          s32 [2, 3] a;
          foreach i in [4]
            dma.copy m.subspan(2, 3).at(i, 0) => a;
        }
    """
    assert fault(src, "edge", M57) == "\n".join([
        "sem.co:4:5: runtime error: tile of 'm' at origin (6, 0) lies outside [5, 7].",
        "    4 |     dma.copy m.subspan(2, 3).at(i, 0) => a;",
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "  in host code of 'edge'"])


# ------------------------------------------------- collective and future errors


def test_a_collective_copy_under_a_divergent_if():
    src = """
        __co__ void main(s32 [4] m) {
          parallel b by 1 : block, t by 64 : thread {
            shared s32 [4] s;
            if (t < 16)
              dma.copy m => s;
          }
        }
    """
    assert fault(src, "main", np.zeros(4, np.int32)) == "\n".join([
        "sem.co:5:7: runtime error: 'dma.copy' is a collective of 64 lanes but lanes 16-31 "
        "of warp 0 are not active here (divergent control flow).",
        "    5 |       dma.copy m => s;",
        "      |       ^~~~~~~~~~~~~~~",
        "  in kernel launched at sem.co:2:3, block (0), lane 0 (warp 0, lane 0)"])


def test_reading_future_data_before_its_wait():
    src = """
        __co__ void main(s32 [2, 4] m) {
          parallel b by 1 : block, t by 4 : thread {
            f = dma.copy.async m.subspan(1, 4).at(0, 0) => shared;
            println(f.data.at(0, t));
            wait f;
          }
        }
    """
    assert fault(src, "main", np.zeros((2, 4), np.int32)) == "\n".join([
        "sem.co:4:5: runtime error: future 'f' is not waited before using.",
        "    4 |     println(f.data.at(0, t));",
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~",
        "  in kernel launched at sem.co:2:3, block (0), lane 0 (warp 0, lane 0)"])


def test_a_collective_copy_whose_operands_differ_between_warps():
    # The source depends on the group index through a scalar, so the copy is the block's
    # (§9.3.2) and its operands are compared at run time (§7.4.5): warp 1 brings row 1
    # where warp 0 brought row 0.
    src = """
        __co__ void main(s32 [2, 4] m) {
          parallel g by 2 : group, l by 32 : thread {
            shared s32 [1, 4] s;
            r = g;
            dma.copy m.subspan(1, 4).at(r, 0) => s;
          }
        }
    """
    assert fault(src, "main", np.zeros((2, 4), np.int32)) == "\n".join([
        "sem.co:5:5: runtime error: operands of collective 'dma.copy' differ between lane 0 "
        "and lane 32 (origin (0, 0) vs (1, 0)).",
        "    5 |     dma.copy m.subspan(1, 4).at(r, 0) => s;",
        "      |     ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~",
        "  in kernel launched at sem.co:2:3, block (0), lane 32 (warp 1, lane 0)"])


WAITS = """
    __co__ void main(s32 [4] m, int n) {
      parallel b by 1 : block, t by 4 : thread {
        f = dma.copy.async m => shared;
        if (n > 0)
          wait f;
        if (n > 1)
          wait f;
      }
    }
"""


def test_futures_are_waited_exactly_once():
    m = np.zeros(4, np.int32)
    assert run(WAITS, "main", m, 1)[0] == ""
    assert fault(WAITS, "main", m, 2) == "\n".join([
        "sem.co:7:7: runtime error: future 'f' has been waited multiple times.",
        "    7 |       wait f;",
        "      |       ^~~~~~",
        "  in kernel launched at sem.co:2:3, block (0), lane 0 (warp 0, lane 0)"])
    first = fault(WAITS, "main", m, 0).splitlines()[0]
    assert first.endswith(": runtime error: async copy issued at sem.co:3:5 into 'f' was "
                          "never waited."), first


# ---------------------------------------------------------- random schedules (§7.5)


@pytest.mark.parametrize("seed", range(5))
def test_race_free_pipelines_agree_under_random_schedules(seed):
    m = rows(7)
    _, out = run(ROTATE, "prefix", m, schedule="random", seed=seed)
    np.testing.assert_array_equal(out, np.cumsum(m, axis=1, dtype=np.int32))
    _, out = run(CREDITS_2, "pipe", schedule="random", seed=seed)
    assert out.tolist() == [0, 1, 4, 9]
    _, out = run(READY_3, "pipe", schedule="random", seed=seed)
    assert out.tolist() == [0, 1, 4, 9, 16]
