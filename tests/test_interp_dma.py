"""DMA and futures (LANGUAGE.md §9): copies, partial tiles, zfill, transp, pad, future
misuse; expected tiles built with numpy slicing by hand."""
import numpy as np
import pytest

from asm import ALL, Asm, P, function, kernel_module, run
from croqvm.bytecode.module import (Access, BaseKind, BufferDecl, CollSite, DmaDesc, DmaOp,
                                    FutureDecl, Kernel, Launch, Param, ParamKind, ParamStorage,
                                    Storage, View)
from croqvm.bytecode.verify import verify
from croqvm.core.errors import KernelFault

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

S32 = 3
A = np.arange(24, dtype=np.int32).reshape(4, 6)
PARAM_A = Param("a", ParamKind.BUFFER, S32, [4, 6], ParamStorage.GLOBAL, 0)


def host_dma(src, dst_shape, *, dst=None, fill=None, **desc):
    """Host program: ``out`` (s32 ``dst_shape``, optionally filled) := DMA of view
    ``src`` = (origin, extents) of parameter ``a`` [4, 6]; ``dst`` an optional view of
    ``out``. Returns ``out``."""
    a = Asm()
    consts, lines = [], []

    def reg(value):
        consts.append(("s32", value))
        n = len(consts) - 1
        lines.append(f"CONST r{n} k{n}")
        return n

    shape = [reg(d) for d in dst_shape]
    lines.append("ALLOC b1")
    if fill is not None:
        lines.append(f"FILL b1 r{reg(fill)} -1")
    views = [View(BaseKind.BUF, 0, -1, [reg(x) for x in src[0]], [reg(x) for x in src[1]])]
    if dst is not None:
        views.append(View(BaseKind.BUF, 1, -1, [reg(x) for x in dst[0]],
                          [reg(x) for x in dst[1]]))
        desc["dst_view"] = 1
    for key in ("pad_lo", "pad_hi", "pad_mid"):
        if key in desc:
            desc[key] = [reg(x) for x in desc[key]]
    if "pad_value" in desc:
        desc["pad_value"] = reg(desc["pad_value"])
    lines += ["DMA d0 -1", "RET_BUF b1"]
    op = DmaOp[desc.pop("op", "copy").upper()]
    host = a.code("\n".join(lines), regs="s32 " * len(consts), consts=consts,
                  buffers=[BufferDecl("a", Storage.GLOBAL, S32, [], param=0),
                           BufferDecl("out", Storage.GLOBAL, S32, shape)],
                  views=views, dmas=[DmaDesc(op, 0, dst_buffer=1, text="dma.copy", **desc)])
    fn = function("f", host, params=[PARAM_A], ret="buffer", ret_dtype=S32)
    return run(a.module(fn), args=[A.copy()])[0]


def test_copy_of_an_inner_tile():
    assert np.array_equal(host_dma(((1, 2), (3, 3)), (3, 3)), A[1:4, 2:5])


def test_partial_tile_leaves_the_rest_unchanged():
    got = host_dma(((2, 4), (3, 3)), (3, 3), fill=7)
    want = np.full((3, 3), 7, np.int32)
    want[:2, :2] = A[2:4, 4:6]
    assert np.array_equal(got, want)


def test_partial_tile_with_zfill_clears_the_rest():
    got = host_dma(((2, 4), (3, 3)), (3, 3), fill=7, zfill=True)
    want = np.zeros((3, 3), np.int32)
    want[:2, :2] = A[2:4, 4:6]
    assert np.array_equal(got, want)


def test_zfill_clears_the_destination_beyond_a_smaller_source():
    got = host_dma(((0, 0), (2, 2)), (3, 4), fill=7, zfill=True)
    want = np.zeros((3, 4), np.int32)
    want[:2, :2] = A[:2, :2]
    assert np.array_equal(got, want)


def test_destination_elements_out_of_range_are_skipped():
    got = host_dma(((0, 0), (2, 2)), (3, 3), fill=7, dst=((2, 2), (2, 2)))
    want = np.full((3, 3), 7, np.int32)
    want[2, 2] = A[0, 0]
    assert np.array_equal(got, want)


def test_transpose():
    got = host_dma(((1, 1), (2, 3)), (3, 2), op="transp", perm=[1, 0])
    assert np.array_equal(got, A[1:3, 1:4].T)


def test_pad_places_source_elements_and_fills_the_rest():
    got = host_dma(((0, 0), (2, 2)), (4, 3), op="pad", pad_lo=[1, 0], pad_hi=[0, 1],
                   pad_mid=[1, 0], pad_value=9)
    s = A[:2, :2]
    assert np.array_equal(got, [[9, 9, 9], [s[0, 0], s[0, 1], 9], [9, 9, 9],
                                [s[1, 0], s[1, 1], 9]])


def test_tile_outside_its_buffer_is_an_error():
    with pytest.raises(KernelFault) as e:
        host_dma(((4, 0), (2, 2)), (2, 2))
    assert "runtime error: tile of 'a' at origin (4, 0) lies outside [4, 6]." in str(e.value)
    assert str(e.value).endswith("  in host code of 'f'")


@pytest.mark.parametrize("zfill", [False, True])
def test_source_larger_than_destination_is_cut_to_it(zfill):
    # §9.5.1: the overlap of the two extents is copied
    assert np.array_equal(host_dma(((1, 1), (3, 3)), (2, 3), zfill=zfill), A[1:3, 1:4])


def test_source_larger_in_one_dimension_and_smaller_in_another_with_zfill():
    got = host_dma(((1, 1), (3, 2)), (2, 3), fill=7, zfill=True)
    assert np.array_equal(got, [[A[1, 1], A[1, 2], 0], [A[2, 1], A[2, 2], 0]])


def test_smaller_source_needs_zfill():
    with pytest.raises(KernelFault) as e:
        host_dma(((0, 0), (2, 2)), (2, 3))
    assert str(e.value).splitlines()[0].endswith(
        "'dma.copy' copies a [2, 2] tile into a [2, 3] destination; a tile smaller than its "
        "destination needs '.zfill'.")
    assert str(e.value).splitlines()[-1] == (
        "hint: '.zfill' is right for a tile cut short at the edge of its buffer. A 'chunkat' "
        "tile is not cut: chunkat divides each dimension into equal parts (here [2, 2]), "
        "which do not line up with fixed-size tiles of the other operands; for [2, 3] tiles, "
        "the last one cut at the edge, use 'subspan(2, 3).at(...)' with '.zfill'.")


# ---------------------------------------------------------------- futures (per lane)

def future_kernel(body, *, is_async=True):
    """One lane: f = dma.copy[.async] a.view([2], from lane) => local; then ``body``."""
    a = Asm()
    k = a.code("""
        CONST r0 k0
        CONST r1 k1
        CONST r5 k2
""" + body, regs="s32 s32 s32 s32 s32 s32",
        consts=[("s32", 1), ("s32", 2), ("s32", 0)],
        buffers=[BufferDecl("a", Storage.GLOBAL, S32, []),
                 BufferDecl("t", Storage.LOCAL, S32, [1])],
        futures=[FutureDecl(n, S32, Storage.LOCAL, is_async, [2]) for n in "fg"],
        views=[View(BaseKind.BUF, 0, -1, [0], [1])],
        accesses=[Access(BaseKind.FUT, 0, -1, [5], "f.data"),
                  Access(BaseKind.FUT, 1, -1, [5], "g.data")],
        dmas=[DmaDesc(DmaOp.COPY, 0, dst_buffer=1, future=0, is_async=is_async)],
        prints=[P("r3"), P("r4")])
    host = a.code("""
        CONST r0 k0
        LAUNCH l0
        RET
    """, regs="s32", consts=[("s32", 1)], name="host.asm",
        buffers=[BufferDecl("a", Storage.GLOBAL, S32, [], param=0)],
        launches=[Launch(0, [0], [(0, 0)], [])])
    fn = function("f", host, [Kernel("k", k, 1, 1)],
                  params=[Param("a", ParamKind.BUFFER, S32, [6], ParamStorage.GLOBAL, 0)])
    return run(a.module(fn), args=[np.arange(10, 16, dtype=np.int32)])


def test_wait_then_read_the_data():
    assert future_kernel("DMA d0 -1\nWAIT f0 -1\nLOAD r3 a0\nPRINT p0")[1] == "11\n"


def test_reading_before_the_wait_is_an_error():
    with pytest.raises(KernelFault) as e:
        future_kernel("DMA d0 -1\nLOAD r3 a0")
    assert "runtime error: future 'f' is not waited before using." in str(e.value)


def test_waiting_twice_is_an_error():
    with pytest.raises(KernelFault) as e:
        future_kernel("DMA d0 -1\nWAIT f0 -1\nWAIT f0 -1")
    assert "runtime error: future 'f' has been waited multiple times." in str(e.value)


def test_a_kernel_ending_with_an_unwaited_copy_is_an_error():
    with pytest.raises(KernelFault) as e:
        future_kernel("DMA d0 -1")
    assert "runtime error: async copy issued at code.asm:5:1 into 'f' was never waited." \
        in str(e.value)


def test_issuing_again_before_the_wait_is_an_error():
    with pytest.raises(KernelFault) as e:
        future_kernel("DMA d0 -1\nDMA d0 -1")
    assert "async copy issued at code.asm:5:1 into 'f' was never waited." in str(e.value)
    assert "code.asm:6:1: runtime error:" in str(e.value)


def test_placeholder_without_data():
    with pytest.raises(KernelFault) as e:
        future_kernel("FUT_ANY f1\nWAIT f1 -1\nLOAD r3 a1")
    assert "runtime error: future 'g' has no data." in str(e.value)


def test_sync_copy_needs_no_wait_and_swap_exchanges_handles():
    out = future_kernel("FUT_ANY f1\nDMA d0 -1\nSWAP f0 f1\nLOAD r4 a1\nPRINT p1",
                        is_async=False)[1]
    assert out == "11\n"


def collective_copy(origin_from_lane=False, with_async=False, wait="WAIT f0 0", lanes=64,
                    odd_lane=-1):
    """64 lanes: f = dma.copy a.view(4).from(o) => shared (a collective of the block),
    then ``wait`` when the copy is async (r6 holds 16, r2 the lane), then for the lanes
    below ``lanes``: out.at(lane) = f.data.at(lane % 4). The origin o is 0, or the lane
    (``origin_from_lane``), or 1 in lane ``odd_lane`` only."""
    a = Asm()
    origin = "LANE r0" if origin_from_lane else \
        "LANE r2\nCONST r8 k4\nEQ r3 r2 r8\nCVT r0 r3" if odd_lane >= 0 else ""
    k = a.code(f"""
        CONST r0 k0
        {origin}
        CONST r1 k1
        DMA d0 c0
        LANE r2
        CONST r6 k2
        {wait if with_async else ""}
        CONST r8 k3
        LT r7 r2 r8
        IF r7
          MOD r4 r2 r1
          LOAD r5 a0
          STORE a1 r5
        END
    """, regs="s32 s32 s32 bool s32 s32 s32 bool s32",
        consts=[("s32", 0), ("s32", 4), ("s32", 16), ("s32", lanes), ("s32", odd_lane)],
        buffers=[BufferDecl("a", Storage.GLOBAL, S32, []),
                 BufferDecl("out", Storage.GLOBAL, S32, []),
                 BufferDecl("t", Storage.SHARED, S32, [1])],
        futures=[FutureDecl("f", S32, Storage.SHARED, with_async, [4])],
        views=[View(BaseKind.BUF, 0, -1, [0], [1])],
        accesses=[Access(BaseKind.FUT, 0, -1, [4], "f.data"),
                  Access(BaseKind.BUF, 1, -1, [2], "out")],
        dmas=[DmaDesc(DmaOp.COPY, 0, dst_buffer=2, future=0, is_async=with_async,
                      text="dma.copy")],
        colls=[CollSite(0, 0, "dma.copy")], lanesets=[ALL])
    params = [Param("a", ParamKind.BUFFER, S32, [8], ParamStorage.GLOBAL, 0),
              Param("out", ParamKind.BUFFER, S32, [64], ParamStorage.GLOBAL, 1)]
    mod = kernel_module(a, k, 64, params=params, bind=[(0, 0), (1, 1)],
                        buffers=[BufferDecl("a", Storage.GLOBAL, S32, [], param=0),
                                 BufferDecl("out", Storage.GLOBAL, S32, [], param=1)])
    out = np.zeros(64, np.int32)
    run(mod, args=[np.arange(10, 18, dtype=np.int32), out])
    return out


def test_collective_copy_into_shared_is_seen_by_every_lane():
    assert np.array_equal(collective_copy(), 10 + np.arange(64) % 4)


def test_collective_async_copy_with_a_collective_wait():
    assert np.array_equal(collective_copy(with_async=True), 10 + np.arange(64) % 4)


def test_lanes_of_one_collective_copy_wait_each_for_itself():
    assert np.array_equal(collective_copy(with_async=True, wait="WAIT f0 -1"),
                          10 + np.arange(64) % 4)


def test_a_lane_that_did_not_wait_for_a_collective_copy_can_not_read_it():
    with pytest.raises(KernelFault) as e:
        collective_copy(with_async=True, wait="LT r3 r2 r6\nIF r3\nWAIT f0 -1\nEND")
    text = str(e.value)
    assert "runtime error: future 'f' is not waited before using." in text
    assert text.endswith("block (0), lane 16 (warp 0, lane 16)")


def test_a_lane_waits_for_a_collective_copy_once():
    with pytest.raises(KernelFault) as e:
        collective_copy(with_async=True, wait="WAIT f0 -1\nLT r3 r2 r6\nIF r3\nWAIT f0 -1\nEND")
    text = str(e.value)
    assert "runtime error: future 'f' has been waited multiple times." in text
    assert text.endswith("block (0), lane 0 (warp 0, lane 0)")


def test_a_collective_copy_again_names_the_first_lane_that_did_not_wait():
    with pytest.raises(KernelFault) as e:
        collective_copy(with_async=True, wait="LT r3 r2 r6\nIF r3\nWAIT f0 -1\nEND\nDMA d0 c0")
    text = str(e.value)
    assert "async copy issued at code.asm:5:9 into 'f' was never waited." in text
    assert text.endswith("block (0), lane 16 (warp 0, lane 16)")


def test_part_of_a_warp_reads_a_collective_copy():
    want = np.where(np.arange(64) < 40, 10 + np.arange(64) % 4, 0)
    assert np.array_equal(collective_copy(with_async=True, lanes=40), want)


def test_collective_operands_must_be_uniform():
    with pytest.raises(KernelFault) as e:
        collective_copy(origin_from_lane=True)
    text = str(e.value)
    assert ("runtime error: operands of collective 'dma.copy' differ between lane 0 and "
            "lane 1 (origin (0) vs (1)).") in text
    assert text.endswith("block (0), lane 1 (warp 0, lane 1)")


@pytest.mark.parametrize("odd", [31, 40, 63])
def test_collective_operands_differing_in_one_lane_name_it(odd):
    # the lanes of both warps compared: the last of the first, one of the second, the last
    with pytest.raises(KernelFault) as e:
        collective_copy(odd_lane=odd)
    text = str(e.value)
    assert ("runtime error: operands of collective 'dma.copy' differ between lane 0 and "
            f"lane {odd} (origin (0) vs (1)).") in text
    assert text.endswith(f"block (0), lane {odd} (warp {odd // 32}, lane {odd % 32})")


# --------------------------------------------------------------------------- impossible tiles

HUGE = 1 << 30      # a [HUGE, HUGE] tile: 2**60 elements, more than any memory holds


def huge_dma(**desc) -> str:
    """Host: a DMA of the [HUGE, HUGE] view at (0, 0) of parameter 'a' [4, 6] (it overlaps
    'a', so it is a valid source) as ``desc`` says; returns the first line of its error."""
    a = Asm()
    own = [BufferDecl("own", Storage.GLOBAL, S32, [1, 1])] if "dst_buffer" in desc else []
    host = a.code("CONST r0 k0\nCONST r1 k1\nCONST r2 k2\nALLOC b1\nDMA d0 -1\nRET",
                  regs="s32 s32 s32", consts=[("s32", 0), ("s32", HUGE), ("s32", 2)],
                  buffers=[BufferDecl("a", Storage.GLOBAL, S32, [], param=0),
                           BufferDecl("out", Storage.GLOBAL, S32, [2, 2])] + own,
                  views=[View(BaseKind.BUF, 0, -1, [0, 0], [1, 1], "a"),
                         View(BaseKind.BUF, 1, -1, [0, 0], [1, 1], "out")],
                  dmas=[DmaDesc(DmaOp.COPY, 0, text="dma.copy", **desc)])
    fn = function("f", host, params=[PARAM_A])
    module = a.module(fn)
    verify(module)          # well-formed: only running it shows the extents are absurd
    with pytest.raises(KernelFault) as e:
        run(module, args=[A.copy()])
    return str(e.value).splitlines()[0]


def test_a_dma_into_its_own_buffer_that_no_memory_can_hold():
    assert huge_dma(dst_buffer=2) == (
        "code.asm:5:1: runtime error: can not allocate buffer 'own' of 1073741824 x "
        "1073741824 elements.")


def test_a_dma_whose_tile_no_memory_can_hold():
    assert huge_dma(dst_view=1) == (
        "code.asm:5:1: runtime error: can not allocate the 'dma.copy' tile of 1073741824 x "
        "1073741824 elements.")
