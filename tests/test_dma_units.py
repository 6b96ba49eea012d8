"""Who takes part in a DMA or TMA copy, and who may wait for its future (LANGUAGE.md
§9.3.2, §9.5.6): copies issued per warp or warpgroup when their operands name its index,
and shared futures filled in one `inthreads` branch and waited for in another. Every
result is compared with values computed here by hand."""
from __future__ import annotations

import io
import textwrap

import numpy as np
import pytest

import croqvm

import engines

pytestmark = pytest.mark.usefixtures("engine")


def compile_src(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "units.co")


def fault(source: str, func: str, *args) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(compile_src(source), func, *args, out=io.StringIO())
    return str(info.value)


PER_WARP = """
    __co__ void f(s32 [4, 8] a, global s32 [4, 8] out) {
      parallel b by 1 : block {
        shared s32 [1, 8] rows[4];
        parallel g by 4 : group, t by 32 : thread {
          dma.copy a.subspan(1, 8).at(g, 0) => rows[g];    // each warp its own row
          if (t < 8)
            out.at(g, t) = rows[g].at(0, t) + 1000 * g;
        }
      }
    }
"""


@pytest.mark.parametrize("copy", [
    "dma.copy a.subspan(1, 8).at(g, 0) => rows[g];",
    # an async copy and its wait: a barrier of the warp that issued it
    "f = dma.copy.async a.subspan(1, 8).at(g, 0) => rows[g];\n          wait f;"])
def test_each_warp_copies_the_tile_its_index_names(copy):
    a = np.arange(32, dtype=np.int32).reshape(4, 8) * 3
    out = np.zeros((4, 8), np.int32)
    src = PER_WARP.replace("dma.copy a.subspan(1, 8).at(g, 0) => rows[g];", copy)
    engines.run(compile_src(src), "f", a, out)
    assert np.array_equal(out, a + 1000 * np.arange(4)[:, None])


def test_a_per_warp_copy_needs_its_whole_warp():
    # the collective is the warp's 32 lanes now, and half of them are elsewhere
    src = PER_WARP.replace("          dma.copy", "          if (t < 16)\n            dma.copy")
    text = fault(src, "f", np.zeros((4, 8), np.int32), np.zeros((4, 8), np.int32))
    assert "runtime error: 'dma.copy' is a collective of 32 lanes but lanes 16-31 of warp 0 " \
           "are not active here (divergent control flow)." in text, text


HANDOFF = """
    __co__ void f(s32 [2, 128] src, global s32 [2, 128] out) {
      parallel b by 1 : block {
        shared s32 [1, 128] first;
        shared s32 [1, 128] second;
        parallel p by 2 : group-4, t by 128 : thread {
          fut = ANY;
          inthreads.async (p == 0) {             // the producer warpgroup
            fut = COPY src.subspan(1, 128).at(0, 0) => first;
            fut = COPY src.subspan(1, 128).at(1, 0) => second;
          }
          inthreads.async (p == 1) {             // the consumer warpgroup
            wait fut;
            out.at(0, t) = first.at(0, 127 - t);
            wait fut;
            out.at(1, t) = second.at(0, t) * 2;
          }
        }
      }
    }
"""


@pytest.mark.parametrize("any_, copy", [("dma.any", "dma.copy.async"),
                                        ("tma.any", "tma.copy.async")])
def test_a_consumer_warpgroup_waits_for_the_copies_of_the_producer(any_, copy):
    src = np.arange(256, dtype=np.int32).reshape(2, 128) * 7 - 5
    out = np.zeros((2, 128), np.int32)
    engines.run(compile_src(HANDOFF.replace("ANY", any_).replace("COPY", copy)), "f", src, out)
    assert np.array_equal(out[0], src[0, ::-1])
    assert np.array_equal(out[1], src[1] * 2)


def test_a_shared_future_waited_with_no_copy_to_come_deadlocks(engine):
    src = HANDOFF.replace("ANY", "dma.any").replace("COPY", "dma.copy.async")
    src = src.replace("            fut = dma.copy.async src.subspan(1, 128).at(1, 0) => second;\n",
                      "")
    text = fault(src, "f", np.zeros((2, 128), np.int32), np.zeros((2, 128), np.int32))
    assert "runtime error: deadlock: every live lane of block (0) is blocked" in text, text
    if engines.interprets(engine):      # the consumer's second wait, for the second copy
        assert "warps 4-7 (lanes 128-255): units.co:13:9 'wait fut': slot fut: completed " \
               "generations 1, arrivals 0/128; these lanes wait for generation 1" in text, text


def test_a_placeholder_waited_only_in_the_branch_that_fills_it_stays_an_ordinary_future():
    # §9.5.6: no other branch waits, so the copies keep their barrier waits and may swap
    src = """
        __co__ void f(s32 [2, 64] a, global s32 [2, 64] out) {
          parallel b by 1 : block {
            parallel p by 2 : group, t by 32 : thread {
              cur = dma.any;
              nxt = dma.any;
              inthreads.async (p == 0) {
                cur = dma.copy.async a.subspan(1, 64).at(0, 0) => shared;
                nxt = dma.copy.async a.subspan(1, 64).at(1, 0) => shared;
                wait cur;
                out.at(0, t) = cur.data.at(0, t);
                swap(cur, nxt);
                wait cur;
                out.at(1, t) = cur.data.at(0, t + 32);
              }
            }
          }
        }
    """
    a = np.arange(128, dtype=np.int32).reshape(2, 64) * 5
    out = np.zeros((2, 64), np.int32)
    engines.run(compile_src(src), "f", a, out)
    assert np.array_equal(out[:, :32], np.stack([a[0, :32], a[1, 32:]]))
    assert not out[:, 32:].any()
