"""The CUDA generator's specialised code on the CPU runtime (``--device cuda-cpu``)
against the Python engine, on the shapes where its branches part (docs/CUDA.md,
"Specialised code"): plain tile copies with constant shapes, by 16-byte cp.async where
rows are whole aligned chunks and element by element elsewhere, with ragged edges, .zfill
and without (the destination keeps what lies beyond the source), f32 and f16, and their
fault records; and which UPDATEs go without a compare-and-swap loop (one lane reaches
each element), with the cases that must keep it.
"""
from __future__ import annotations

import numpy as np
import pytest

import croqvm
from croqvm.cuda.emit import emit

TILES = """
__co__ void zfill_tiles(global f32 [M, K] a, global f32 [P, Q] out) {
  parallel {bm, bk} by [cdiv(M, 8), cdiv(K, 8)] : block, t by 32 : thread {
    shared f32 [8, 8] s;
    dma.copy.zfill a.subspan(8, 8).at(bm, bk) => s;
    dma.copy s => out.subspan(8, 8).at(bm, bk);
  }
}

__co__ void stay_tiles(global f32 [M, K] a, global f32 [P, Q] out) {
  parallel {bm, bk} by [cdiv(M, 8), cdiv(K, 8)] : block, t by 32 : thread {
    shared f32 [8, 8] s;
    s.at(t / 8, t % 8) = -1.0f;
    s.at(t / 8 + 4, t % 8) = -1.0f;
    dma.copy a.subspan(8, 8).at(bm, bk) => s;
    dma.copy s => out.subspan(8, 8).at(bm, bk);
  }
}

__co__ void half_tiles(global f16 [M, K] a, global f16 [P, Q] out) {
  parallel {bm, bk} by [cdiv(M, 4), cdiv(K, 16)] : block, t by 32 : thread {
    shared f16 [4, 16] s;
    dma.copy.zfill a.subspan(4, 16).at(bm, bk) => s;
    dma.copy s => out.subspan(4, 16).at(bm, bk);
  }
}

__co__ void outside(global f32 [M, K] a, global f32 [M, K] out) {
  parallel {bm, bk} by [cdiv(M, 8), cdiv(K, 8)] : block, t by 32 : thread {
    shared f32 [8, 8] s;
    dma.copy a.subspan(8, 8).at(bm + 3, bk) => s;
    dma.copy s => out.subspan(8, 8).at(bm, bk);
  }
}
"""


@pytest.fixture(scope="module")
def tiles():
    return croqvm.compile(TILES, "tiles.co")


# (function, element type, source shape, tile): rows of 80 and 48 bytes go by 16-byte
# chunks, of 84 and 40 bytes element by element; 13 and 7 rows leave a ragged last tile
@pytest.mark.parametrize("func, dtype, shape, tile", [
    ("zfill_tiles", np.float32, (13, 20), (8, 8)),
    ("zfill_tiles", np.float32, (13, 21), (8, 8)),
    ("stay_tiles", np.float32, (13, 20), (8, 8)),
    ("stay_tiles", np.float32, (13, 21), (8, 8)),
    ("stay_tiles", np.float32, (16, 16), (8, 8)),
    ("half_tiles", np.float16, (7, 24), (4, 16)),
    ("half_tiles", np.float16, (7, 20), (4, 16)),
])
def test_tile_copies_agree_with_the_interpreter(tiles, func, dtype, shape, tile):
    a = np.random.default_rng(7).standard_normal(shape).astype(dtype) + 2  # no zeros
    padded = tuple(-(-n // t) * t for n, t in zip(shape, tile))
    outs = []
    for device in ("cpu", "cuda-cpu"):
        out = np.full(padded, 7, dtype)
        tiles.run(func, a, out, device=device)
        outs.append(out)
    np.testing.assert_array_equal(outs[1], outs[0])
    beyond = outs[0][shape[0]:], outs[0][:, shape[1]:]
    fill = -1 if func == "stay_tiles" else 0       # kept, or zero-filled
    assert all((b == fill).all() for b in beyond) and np.array_equal(
        outs[0][:shape[0], :shape[1]], a)


def test_tile_outside_faults_as_on_the_interpreter(tiles):
    errors = []
    for device in ("cpu", "cuda-cpu"):
        with pytest.raises(croqvm.KernelFault) as fault:
            tiles.run("outside", np.ones((16, 16), np.float32),
                      np.zeros((16, 16), np.float32), device=device)
        errors.append(str(fault.value))
    assert errors[0] == errors[1] and "lies outside [16, 16]" in errors[0]


OWNED = """
__co__ auto owned(s32 [M, K] a) {
  s32 [M, 8] c;
  parallel {bm, bk} by [M / 4, 1] : block, {r, s} by [4, 8] : thread {
    foreach k in [K]
      c.at(bm # r, bk # s) += a.at(bm # r, k);
  }
  return c;
}
"""
SHARED_OWNER = {
    # every lane of a block adds to its block's element
    "block": """
__co__ auto f(s32 [M] a) {
  s32 [M] c;
  parallel b by M / 4 : block, t by 4 : thread
    c.at(b) += a.at(b # t);
  return c;
}""",
    # a lane part wider than its block's stride: blocks overlap
    "overlap": """
__co__ auto f(s32 [M] a) {
  s32 [M] c;
  parallel b by M / 8 : block, t by 8 : thread
    c.at(b * 4 + t) += a.at(b # t);
  return c;
}""",
    # the index is data: any lane may reach any element
    "histogram": """
__co__ auto f(s32 [M] a) {
  s32 [8] c;
  parallel b by M / 8 : block, t by 8 : thread
    c.at(a.at(b # t) % 8) += 1;
  return c;
}""",
    # the lanes' column only: the lanes of a row share it
    "column": """
__co__ auto f(s32 [M] a) {
  s32 [M] c;
  parallel b by M / 8 : block, {r, s} by [2, 4] : thread
    c.at(b # s) += a.at(b # s);
  return c;
}""",
}


def _updates(source: str) -> tuple[int, int]:
    text = emit(croqvm.compile(source, "u.co").module).text
    return text.count("cq_update_owned("), text.count("cq_update(")


def test_one_owner_update_is_plain_and_agrees():
    assert _updates(OWNED) == (1, 0)
    program = croqvm.compile(OWNED, "u.co")
    a = np.random.default_rng(3).integers(-99, 99, (8, 5)).astype(np.int32)
    got = program.run("owned", a, device="cuda-cpu")
    np.testing.assert_array_equal(got, program.run("owned", a))
    np.testing.assert_array_equal(got, np.repeat(a.sum(axis=1, keepdims=True), 8, axis=1))


@pytest.mark.parametrize("case", sorted(SHARED_OWNER))
def test_shared_elements_keep_the_compare_and_swap(case):
    assert _updates(SHARED_OWNER[case]) == (0, 1)
