"""MMA (LANGUAGE.md §11, §12.4) on hand-written kernels: the four layouts against numpy,
accumulator rounding after every step, unit checks."""
import numpy as np
import pytest

from asm import ALL, Asm, kernel_module, run
from croqvm.bytecode.module import (DYNAMIC, BaseKind, BufferDecl, CollSite, FragDecl, FragRole,
                                    Param, ParamKind, ParamStorage, Storage, View)
from croqvm.core.errors import KernelFault
from croqvm.interp.mma import _first_outside

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

F16, F32, S8, S32 = 9, 11, 1, 3
NP = {F16: np.float16, F32: np.float32, S8: np.int8, S32: np.int32}
NAME = {F16: "f16", F32: "f32", S32: "s32"}
LAYOUTS = {"row.row": 0, "row.col": 1, "col.row": 2, "col.col": 3}


def mma_kernel(a, b, acc_type, layout, fill, c_shape, *, size=32, unit=32, body=None,
               lanesets=None, store_unit=None, extra=(), declared=None):
    """c := fill; c += a x b (``layout``); store c. Operands are global parameters. The
    fragments 'acc', 'fa', 'fb' declare the extents ``declared`` gives them by name, else
    extents known only at run time."""
    declared = declared or {}
    asm = Asm()
    shapes = [a.shape, b.shape, c_shape]
    consts = [("s32", 0)] + [("s32", d) for s in shapes for d in s] + \
        [(NAME[acc_type], fill)] + [("s32", x) for x in extra]
    regs = "s32 " * 7 + NAME[acc_type] + " s32 bool bool"
    views = [View(BaseKind.BUF, n, -1, [0, 0], [1 + 2 * n, 2 + 2 * n]) for n in range(3)]
    lines = [f"CONST r{n} k{n}" for n in range(8)]
    lines += body or [
        "MMA_FILL m0 r7 c0", "MMA_LOAD m1 v0 c0", "MMA_LOAD m2 v1 c0",
        f"MMA_EXEC m0 m1 m2 {LAYOUTS[layout]} c0", "MMA_STORE m0 v2 0 c1"]
    ctype = {F16: F16, F32: F32, S32: S32}[acc_type]
    dt = {np.dtype(v): k for k, v in NP.items()}
    k = asm.code("\n".join(lines), regs=regs, consts=consts,
                 buffers=[BufferDecl("a", Storage.GLOBAL, dt[a.dtype], []),
                          BufferDecl("b", Storage.GLOBAL, dt[b.dtype], []),
                          BufferDecl("c", Storage.GLOBAL, ctype, [])],
                 views=views,
                 frags=[FragDecl(name, role, dtype, *declared.get(name, (DYNAMIC, DYNAMIC)),
                                 unit)
                        for name, role, dtype in (("acc", FragRole.ACC, acc_type),
                                                  ("fa", FragRole.A, dt[a.dtype]),
                                                  ("fb", FragRole.B, dt[b.dtype]))],
                 colls=[CollSite(0, unit, "mma.row.row"),
                        CollSite(0, unit if store_unit is None else store_unit, "mma.store")],
                 lanesets=lanesets or [ALL])
    params = [Param(n, ParamKind.BUFFER, dt[x.dtype], list(x.shape), ParamStorage.GLOBAL, i)
              for i, (n, x) in enumerate([("a", a), ("b", b)])]
    params.append(Param("c", ParamKind.BUFFER, ctype, list(c_shape), ParamStorage.GLOBAL, 2))
    mod = kernel_module(asm, k, size, params=params, bind=[(0, 0), (1, 1), (2, 2)],
                        buffers=[BufferDecl(n, Storage.GLOBAL, p.dtype, [], param=i)
                                 for i, (n, p) in enumerate(zip("abc", params))])
    c = np.zeros(c_shape, NP[ctype])
    run(mod, args=[a, b, c])
    return c


RNG = np.random.default_rng(7)
A = RNG.integers(-4, 5, (4, 3)).astype(np.float16)     # small integers: exact products
B = RNG.integers(-4, 5, (5, 3)).astype(np.float16)


@pytest.mark.parametrize("layout, a, b, want", [
    ("row.row", A, B, A.astype(float) @ B.astype(float).T),          # A [M,K], B [N,K]
    ("row.col", A, B.T.copy(), A.astype(float) @ B.astype(float).T),  # B [K,N]
    ("col.row", A.T.copy(), B, A.astype(float) @ B.astype(float).T),  # A [K,M]
    ("col.col", A.T.copy(), B.T.copy(), A.astype(float) @ B.astype(float).T),
])
def test_layouts_against_numpy(layout, a, b, want):
    c = mma_kernel(a, b, F32, layout, 1.0, (4, 5))
    assert np.array_equal(c, (want + 1).astype(np.float32))


def test_f16_accumulator_rounds_after_every_step():
    """2048 + 1 + 1 + 1: each step ties back to 2048; the exact sum 2051 would give 2052."""
    ones = np.ones((1, 3), np.float16)
    c = mma_kernel(ones, ones, F16, "row.row", 2048.0, (1, 1))
    assert c[0, 0] == 2048


def test_int8_operands_accumulate_in_s32_and_wrap():
    a = np.array([[127, 1]], np.int8)
    b = np.array([[1, 1]], np.int8)
    c = mma_kernel(a, b, S32, "row.row", 2 ** 31 - 100, (1, 1))
    assert c[0, 0] == -(2 ** 31) + 28       # 2^31 - 100 + 128 wraps


def test_store_clips_to_the_destination():
    """A [4, 5] view of the [3, 4] buffer c (§8.4, §11.3.4): elements past c are skipped."""
    c = mma_kernel(A, B, F32, "row.row", 0.0, (3, 4), extra=[4, 5], body=[
        "CONST r5 k8", "CONST r6 k9", "MMA_FILL m0 r7 c0", "MMA_LOAD m1 v0 c0",
        "MMA_LOAD m2 v1 c0", "MMA_EXEC m0 m1 m2 0 c0", "MMA_STORE m0 v2 0 c1"])
    assert np.array_equal(c, (A.astype(float) @ B.astype(float).T)[:3, :4])


def test_block_level_store_from_two_warpgroups():
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), size=256, unit=128, store_unit=0)
    assert ("runtime error: mma.store of 'acc' at block level would write the same "
            "destination from 2 warpgroups; store inside the 'group-4' level.") in str(e.value)


def test_mma_needs_its_whole_unit():
    """Lanes 160-191 (warp 5) skip the fill; the rest of warpgroup 1 waits for them."""
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), size=256, unit=128,
                   extra=[160, 192], body=[
                       "LANE r8", "CONST r0 k8", "LT r9 r8 r0", "CONST r0 k9", "GE r10 r8 r0",
                       "OR r9 r9 r10", "IF r9", "MMA_FILL m0 r7 c0", "END"])
    assert str(e.value).splitlines()[0] == (
        "code.asm:16:1: runtime error: mma.row.row needs all 128 lanes of warpgroup 1, "
        "but lanes 160-191 are not active here.")


def test_mma_missed_by_one_lane_names_it_in_the_singular():
    """Lane 160 alone skips the fill, so warp 5 reaches it diverged."""
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), size=256, unit=128,
                   extra=[160, 161], body=[
                       "LANE r8", "CONST r0 k8", "LT r9 r8 r0", "CONST r0 k9", "GE r10 r8 r0",
                       "OR r9 r9 r10", "IF r9", "MMA_FILL m0 r7 c0", "END"])
    assert "needs all 128 lanes of warpgroup 1, but lane 160 is not active here." \
        in str(e.value).splitlines()[0]


def test_a_fragment_keeps_its_declared_extents():
    """'fa' is declared [4, 2]; the view's extents are only known at run time (r2 is written
    twice), so the engine checks them at the load (FragDecl)."""
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), declared={"fa": (4, 2)}, body=[
            "CONST r2 k2", "MMA_LOAD m1 v0 c0"])
    assert str(e.value).splitlines()[0] == (
        "code.asm:10:1: runtime error: MMA: matrix shapes do not match: `fa'([4, 2]) v.s. "
        "`a'([4, 3]).")


def test_the_first_use_fixes_an_extent_known_only_at_run_time():
    """'fa' is [?, ?]: its first load makes it [4, 3], so a [2, 3] tile later is an error."""
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), extra=[2], body=[
            "MMA_LOAD m1 v0 c0", "CONST r1 k8", "MMA_LOAD m1 v0 c0"])
    assert str(e.value).splitlines()[0] == (
        "code.asm:11:1: runtime error: MMA: matrix shapes do not match: `fa'([4, 3]) v.s. "
        "`a'([2, 3]).")


def test_mma_load_outside_its_buffer():
    """A [4, 3] tile loaded from the [3, 3] corner of a: element (3, 0) is outside."""
    a = np.ones((3, 3), np.float16)
    with pytest.raises(KernelFault) as e:
        mma_kernel(a, B[:, :3].copy(), F32, "row.row", 0.0, (4, 5), body=[
            "CONST r1 k8", "MMA_LOAD m1 v0 c0"], extra=[4])
    assert "runtime error: mma.row.row reads element (3, 0) outside 'a'." in str(e.value)


def test_the_first_element_outside_a_tile_is_the_one_row_major_order_meets_first():
    """Against a brute-force scan of every element, on small random tiles."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        shape = tuple(int(x) for x in rng.integers(1, 5, 2))
        o = tuple(int(x) for x in rng.integers(-2, 6, 2))
        e = tuple(int(x) for x in rng.integers(0, 5, 2))
        scan = [tuple(int(a) + int(i) for a, i in zip(o, idx)) for idx in np.ndindex(*e)]
        outside = [p for p in scan if not all(0 <= x < d for x, d in zip(p, shape))]
        assert _first_outside(o, e, shape) == (outside[0] if outside else None)


HUGE = 1 << 30


def test_mma_load_of_a_huge_tile_outside_its_buffer():
    """A [2**30, 3] tile: the first element outside is found without listing the others."""
    a = np.ones((3, 3), np.float16)
    with pytest.raises(KernelFault) as e:
        mma_kernel(a, B[:, :3].copy(), F32, "row.row", 0.0, (4, 5), body=[
            "CONST r1 k8", "MMA_LOAD m1 v0 c0"], extra=[HUGE])
    assert "runtime error: mma.row.row reads element (3, 0) outside 'a'." in str(e.value)


def test_mma_store_of_a_filled_fragment_no_memory_can_hold():
    with pytest.raises(KernelFault) as e:
        mma_kernel(A, B, F32, "row.row", 0.0, (4, 5), extra=[HUGE], body=[
            "MMA_FILL m0 r7 c0", "CONST r5 k8", "CONST r6 k8", "MMA_STORE m0 v2 0 c1"])
    assert str(e.value).splitlines()[0] == (
        "code.asm:12:1: runtime error: can not allocate fragment 'acc' of 1073741824 x "
        "1073741824 elements.")
