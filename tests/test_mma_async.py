"""Asynchronous MMA and operation futures (LANGUAGE.md §11.5), K-tile schedules (§11.6),
``mma.store.mask`` (§11.1, §11.3.4) and the ``[[...]]`` attributes (§6.2.5): results
against numpy references computed in the order LANGUAGE.md §12.4 prescribes, runtime
faults and static errors with their exact text."""
import numpy as np
import pytest

import croqvm
from croqvm.lang.frontend import front_end
from engines import run
from test_race import NATIVE, detector_stops

SHARED_GEMM = """
#define N 32
#define K 64
__co__ void f(global f16 [64, K] a, global f16 [N, K] b, global f32 [64, N] c) {
  parallel blk by 1 : block {
    shared f16 [64, K] sa;
    shared f16 [N, K] sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      SCHEDULE
      f = mma.row.row.async acc, sa, sb;
      wait f;
      mma.store acc, c;
    }
  }
}
"""


def in_tile_order(a, b, order, tile):
    """c[m][n] = sum of a[m][k] b[n][k], k visited tile by tile in ``order``, ascending in
    each tile, every step rounded to f32 (§12.4; f16 products are exact in f64)."""
    c = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for t in order:
        for k in range(t * tile, (t + 1) * tile):
            c = (c.astype(np.float64) + np.outer(a[:, k].astype(np.float64),
                                                 b[:, k].astype(np.float64))).astype(np.float32)
    return c


def gemm_inputs(n=32, k=64, seed=3):
    rng = np.random.default_rng(seed)
    # magnitudes spread over many binades, so that the order of the steps shows in f32
    a = (rng.standard_normal((64, k)) * 2.0 ** rng.integers(-8, 8, (64, k))).astype(np.float16)
    b = (rng.standard_normal((n, k)) * 2.0 ** rng.integers(-8, 8, (n, k))).astype(np.float16)
    return a, b


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("order", [(0, 1, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1)])
def test_schedule_visits_k_tiles_in_its_order(engine, order):
    a, b = gemm_inputs()
    schedule = f"[[schedule(k_tiles({', '.join(map(str, order))}))]]"
    prog = croqvm.compile(SHARED_GEMM.replace("SCHEDULE", schedule), "t.co")
    c = np.full((64, 32), np.nan, np.float32)
    run(prog, "f", a, b, c)
    want = in_tile_order(a, b, order, 16)
    assert np.array_equal(c, want)
    if order != (0, 1, 2, 3):       # the data tell the orders apart
        assert not np.array_equal(want, in_tile_order(a, b, (0, 1, 2, 3), 16))


@pytest.mark.usefixtures("engine")
def test_async_mma_without_schedule_is_k_ascending(engine):
    a, b = gemm_inputs()
    prog = croqvm.compile(SHARED_GEMM.replace("SCHEDULE", ""), "t.co")
    c = np.zeros((64, 32), np.float32)
    run(prog, "f", a, b, c)
    assert np.array_equal(c, in_tile_order(a, b, (0, 1, 2, 3), 16))


MASKED = """
__co__ void f(global f32 [R, C] src, global f32 [R, C] dst, int rows, int cols) {
  parallel blk by 1 : block {
    parallel w by 1 : group {
      acc = mma.fill.f32 0.0f;
      ones = mma.load src.subspan(16, 16).at(0, 0);
      eye = mma.load src.subspan(16, 16).at(1, 0);
      mma.row.col acc, ones, eye;              // acc = src[0:16, 0:16]
      mma.store.mask acc, dst.subspan(16, 16).at(0, 0), GUARDS;
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("guards, rows, cols, keep", [
    ("rows", 5, 0, (5, 16)),            # one count: the columns are the view's
    ("rows, cols", 5, 11, (5, 11)),
    ("rows, cols", 40, 40, (16, 16)),    # counts beyond the tile store all of it
    ("rows, cols", -3, 7, (0, 0)),       # nothing
])
def test_masked_store_writes_rows_and_columns_below_the_counts(engine, guards, rows, cols,
                                                               keep):
    rng = np.random.default_rng(5)
    src = np.zeros((32, 16), np.float32)
    src[:16] = rng.integers(-8, 8, (16, 16))
    src[16:] = np.eye(16)
    dst = np.full((32, 16), -99.0, np.float32)
    prog = croqvm.compile(MASKED.replace("GUARDS", guards), "t.co")
    run(prog, "f", src, dst, rows, cols)
    want = np.full((32, 16), -99.0, np.float32)
    want[:keep[0], :keep[1]] = src[:keep[0], :keep[1]]
    assert np.array_equal(dst, want)


FAULTING = """
__co__ void f(global f16 [64, 16] a, global f16 [64, 16] b, global f32 [64, 64] c) {
  parallel blk by 1 : block {
    shared f16 [64, 16] sa, sb;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 2 : group-4 {
      acc = mma.fill.f32 0.0f;
      f = mma.row.row.async acc, sa, sb;
BODY
    }
  }
}
"""


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("body, where, message", [
    ("      mma.fill acc, 1.0f;\n      wait f;", "10:7",
     "accumulator 'acc' is used before the wait of its asynchronous mma."),
    ("      mma.row.row acc, sa, sb;\n      wait f;", "10:7",
     "accumulator 'acc' is used before the wait of its asynchronous mma."),
    ("      foreach i in [2] { wait f; }\n      mma.store acc, c;", "10:26",
     "no asynchronous mma on accumulator 'acc' is pending here: its operation future has "
     "been waited already."),
])
def test_accumulator_use_before_the_wait_and_double_waits_fault(engine, body, where, message):
    prog = croqvm.compile(FAULTING.replace("BODY", body), "t.co")
    args = [np.ones((64, 16), np.float16), np.ones((64, 16), np.float16),
            np.zeros((64, 64), np.float32)]
    with pytest.raises(croqvm.KernelFault) as err:
        run(prog, "f", *args)
    text = str(err.value)
    assert text.startswith(f"t.co:{where}: runtime error: {message}")
    assert "block (0), lane 0 (warp 0, lane 0)" in text


def diagnose(text: str) -> list[str]:
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags if d.is_error]


def kernel(body: str = "      mma.row.row acc, sa, sb;", attrs: str = "") -> str:
    return ("__co__ void f(global f16 [64, 64] a, global f16 [128, 64] b, int n) {\n"
            f"{attrs}  parallel p by 1 : block {{\n"
            "    shared f16 [64, 64] sa;\n    shared f16 [128, 64] sb;\n"
            f"    parallel g by 1 : group-4 {{\n      acc = mma.fill.f32 0.0f;\n{body}\n"
            "    }\n  }\n}\n")


@pytest.mark.parametrize("source, expected", [
    (kernel("      [[schedule(k_tiles(3, 2, 2, 0))]]\n      mma.row.row acc, sa, sb;"),
     ["7:7: MMA k_tiles schedule must be a permutation of [0, 4)."]),
    (kernel("      [[schedule(k_tiles(1, 0))]]\n      mma.row.row acc, sa, sb;"),
     ["7:7: MMA k_tiles schedule must contain exactly one entry for each auto-split K tile "
      "(expected 4, got 2)."]),
    (kernel("      fa = mma.load sa;\n      [[schedule(k_tiles(0, 1, 2, 3))]]\n"
            "      mma.row.row acc, fa, sb;"),
     ["8:7: MMA k_tiles schedule must contain exactly one entry for each auto-split K tile "
      "(expected 1, got 4)."]),
    (kernel("      [[schedule(k_tiles(0))]]\n      mma.store acc, sa;"),
     ["8:7: [[schedule(k_tiles(...))]] only applies to an MMA execution statement."]),
    (kernel("      [[schedule(k_tiles(0, -1))]]\n      mma.row.row acc, sa, sb;"),
     ["7:29: mma issue order entries must be non-negative."]),
    (kernel("      [[schedule(tiles(0))]]\n      mma.row.row acc, sa, sb;"),
     ["7:18: syntax error: expected 'k_tiles' inside the MMA schedule attribute."]),
    (kernel("      [[stages(2)]]\n      mma.row.row acc, sa, sb;"),
     ["7:9: syntax error: unknown attribute 'stages'; the attributes are 'schedule', "
      "'launch_bounds' and 'maxnreg'."]),
    (kernel("      f = mma.row.row.async acc, sa, sb;\n      x = f.data;\n      wait f;"),
     ["8:11: the operation future 'f' has no '.data': after 'wait f', the result is the "
      "accumulator 'acc'."]),
    (kernel("      acc2 = mma.fill.f32 0.0f;\n      f = mma.row.row.async acc, sa, sb;\n"
            "      f = mma.row.row.async acc2, sa, sb;\n      wait f;"),
     ["9:7: 'f' is the future of asynchronous MMAs on 'acc', not on 'acc2'."]),
    (kernel("      f = mma.row.row.async acc, sa, sb;"),
     ["7:7: some asyncs are not explicitly waited: f."]),
    (kernel("      f = mma.row.row.async acc, sa, sb;\n      wait f;\n      wait f;"),
     ["9:12: wait observes future 'f' more than once."]),
    (kernel("      f = mma.row.row acc, sa, sb;"),
     ["7:18: syntax error: 'mma.row.row' has no value to assign to 'f'; 'f = "
      "mma.row.row.async ...' makes an operation future."]),
    (kernel("      mma.row.row.async acc, sa, sb;"),
     ["7:18: syntax error: 'mma.row.row.async' must be assigned to a name, as in 'f = "
      "mma.row.row.async mc, a, b;'."]),
    (kernel(attrs="  [[launch_bounds(n)]]\n"),
     ["2:19: [[launch_bounds]] argument must be a compile-time integer constant."]),
    (kernel(attrs="  [[launch_bounds(128, 0)]]\n"),
     ["2:24: [[launch_bounds]] minBlocks/maxCluster must be positive (use 0 only for "
      "maxThreadsPerBlock to auto-compute)."]),
    (kernel(attrs="  [[launch_bounds(1, 2, 3, 4)]]\n"),
     ["2:3: [[launch_bounds]] expects 1 to 3 integer arguments, but got 4."]),
    (kernel(attrs="  [[maxnreg(0)]]\n"),
     ["2:13: [[maxnreg]] argument must be a positive integer."]),
    (kernel(attrs="  [[maxnreg(1.5f)]]\n"),
     ["2:13: [[maxnreg]] argument must be an integer but got 'f32'."]),
    (kernel(attrs="  [[maxnreg(64)]]\n  [[maxnreg(64)]]\n"),
     ["3:3: syntax error: '[[maxnreg]]' is written twice."]),
    (kernel("      [[maxnreg(64)]]\n      mma.row.row acc, sa, sb;"),
     ["7:7: syntax error: '[[maxnreg]]' applies to a 'parallel' statement only."]),
    ("__co__ void f() {\n  [[launch_bounds(64)]]\n  parallel t by 64 : thread { }\n}\n",
     ["2:3: [[launch_bounds]] is only valid on block-level parallel-by."]),
    (kernel(attrs="  [[launch_bounds(_, 2)]]\n  [[maxnreg(72)]]\n"), []),
])
def test_static_errors(source, expected):
    assert diagnose(source) == expected


def test_attributes_reach_the_kernel():
    """``[[launch_bounds(_, 2)]]``: ``_`` is the kernel's block size."""
    prog = croqvm.compile(kernel(attrs="  [[launch_bounds(_, 2)]]\n  [[maxnreg(72)]]\n"),
                          "t.co")
    k = prog.module.functions[0].kernels[0]
    assert (k.launch_bounds, k.maxnreg) == ([128, 2], 72)


RACY = """
__co__ void f(global f16 [64, 16] a, global f16 [64, 16] b, global f32 [64, 64] c) {
  parallel blk by 1 : block {
    shared f16 [64, 16] sa, sb;
    shared event issued;
    dma.copy a => sa;
    dma.copy b => sb;
    parallel g by 2 : group-4 {
      inthreads.async (g == 0) {
        acc = mma.fill.f32 0.0f;
        f = mma.row.row.async acc, sa, sb;
        BEFORE
        trigger issued;
        AFTER
        mma.store acc, c;
      }
      inthreads.async (g == 1) {
        wait issued;
        foreach k in [16] { sb.at(0, k) = 0.0f; }
      }
    }
  }
}
"""


@pytest.mark.parametrize("before, after, racy", [("", "wait f;", True), ("wait f;", "", False)])
def test_async_mma_reads_its_operands_until_its_wait(before, after, racy):
    """Warpgroup 1 writes an operand after the issue (the event orders that) but nothing
    orders it before warpgroup 0's wait: a race. With the wait before the trigger, none."""
    prog = croqvm.compile(RACY.replace("BEFORE", before).replace("AFTER", after), "t.co")
    args = [np.ones((64, 16), np.float16), np.ones((64, 16), np.float16),
            np.zeros((64, 64), np.float32)]
    if NATIVE:      # the native engine's detector stops exactly the racy run
        assert detector_stops(prog.module, "f", *args) == racy
    if not racy:
        prog.run("f", *args, check="race")
        return
    with pytest.raises(croqvm.KernelFault) as err:
        prog.run("f", *args, check="race")
    assert str(err.value).startswith(
        "t.co:19:29: runtime error: data race on shared 'sb' element (0, 0): written here, "
        "read by the asynchronous 'mma.row.row.async' at t.co:11:9; the trigger at t.co:13:9 "
        "completes the generation of 'issued' that the wait at t.co:18:9 waits for, but it "
        "comes before the asynchronous 'mma.row.row.async'.")


def test_a_write_to_an_operand_before_the_wait_of_the_same_warpgroup_races():
    source = FAULTING.replace("parallel g by 2", "parallel g by 1").replace(
        "BODY", "      dma.copy a => sb;\n      wait f;\n      mma.store acc, c;")
    prog = croqvm.compile(source, "t.co")
    args = [np.ones((64, 16), np.float16), np.ones((64, 16), np.float16),
            np.zeros((64, 64), np.float32)]
    if NATIVE:
        assert detector_stops(prog.module, "f", *args)
    with pytest.raises(croqvm.KernelFault) as err:
        prog.run("f", *args, check="race")
    assert str(err.value).startswith(
        "t.co:10:7: runtime error: data race on shared 'sb' element (0, 0): written by "
        "'dma.copy' here, read by the asynchronous 'mma.row.row.async' at t.co:9:7; the "
        "asynchronous mma reads its operands until its wait at t.co:11:7.")


def test_kernel_qualifiers_in_generated_cuda():
    """nvcc takes __launch_bounds__ or __maxnreg__ on a kernel, not both: launch bounds
    win, and the kernel says why its register cap is missing."""
    from croqvm.cuda.emit import emit
    source = "".join(kernel(attrs=attrs).replace("void f(", f"void f{i}(")
                     for i, attrs in enumerate(["  [[launch_bounds(_, 2)]]\n",
                                                "  [[maxnreg(40)]]\n",
                                                "  [[maxnreg(72)]]\n  [[launch_bounds(256)]]\n"]))
    text = emit(croqvm.compile(source, "t.co").module, arch="sm_90a").text
    assert "CQ_KERNEL CQ_LAUNCH_BOUNDS(128, 2) void f0_k0(" in text
    assert "CQ_KERNEL CQ_MAXNREG(40) void f1_k0(" in text
    assert ("// [[maxnreg(72)]] is not applied: nvcc does not take __maxnreg__ beside "
            "__launch_bounds__\nCQ_KERNEL CQ_LAUNCH_BOUNDS(256) void f2_k0(") in text


def test_launch_bounds_below_the_block_size_are_refused():
    with pytest.raises(croqvm.CompileError) as err:
        croqvm.compile(kernel(attrs="  [[launch_bounds(64)]]\n"), "t.co")
    assert str(err.value).startswith("t.co:2:3: error: [[launch_bounds]] allows 64 threads "
                                     "per block, but the kernel has 128.")


@pytest.mark.parametrize("body", [
    "      mma.fill acc, 1.0f;\n      wait f;",
    "      foreach i in [2] { wait f; }\n      mma.store acc, c;",
])
def test_cuda_cpu_faults_as_the_interpreter(body):
    prog = croqvm.compile(FAULTING.replace("BODY", body), "t.co")
    args = [np.ones((64, 16), np.float16), np.ones((64, 16), np.float16),
            np.zeros((64, 64), np.float32)]
    texts = []
    for device in ("cpu", "cuda-cpu"):
        with pytest.raises(croqvm.KernelFault) as err:
            prog.run("f", *[a.copy() for a in args], device=device)
        texts.append(str(err.value))
    assert texts[0] == texts[1]


def test_cuda_cpu_masked_store_and_schedule_agree_with_numpy():
    a, b = gemm_inputs()
    source = SHARED_GEMM.replace("SCHEDULE", "[[schedule(k_tiles(2, 0, 3, 1))]]").replace(
        "mma.store acc, c;", "mma.store.mask acc, c, 37, 29;")
    c = np.full((64, 32), np.nan, np.float32)
    croqvm.compile(source, "t.co").run("f", a, b, c, device="cuda-cpu")
    want = np.full((64, 32), np.nan, np.float32)
    want[:37, :29] = in_tile_order(a, b, (2, 0, 3, 1), 16)[:37, :29]
    np.testing.assert_array_equal(c, want)


def test_the_verifier_rejects_mma_async_on_an_operand_fragment():
    from croqvm.bytecode import opcodes
    from croqvm.bytecode.verify import verify
    from croqvm.core.errors import BytecodeError
    module = croqvm.compile(kernel("      f = mma.row.row.async acc, sa, sb;\n      wait f;"),
                            "t.co").module
    code = module.functions[0].kernels[0].code
    at = next(i for i in range(0, len(code.code), opcodes.WIDTH)
              if code.code[i] == opcodes.MMA_ASYNC)
    operand = next(m for m, f in enumerate(code.frags) if f.role != 0)
    code.code[at + 1] = operand
    with pytest.raises(BytecodeError, match="MMA_ASYNC"):
        verify(module)


@pytest.mark.usefixtures("engine")
def test_one_wait_for_two_futures_and_host_level_async(engine):
    """``wait f, g`` completes both; at host level the host lane is the unit (§11.2 (c))."""
    source = """
__co__ void f(global f16 [16, 8] a, global f16 [16, 8] b, global f32 [16, 16] c,
              global f32 [16, 16] d) {
  acc = mma.fill.f32 0.0f;
  acc2 = mma.fill.f32 1.0f;
  p = mma.row.row.async acc, a, b;
  q = mma.row.row.async acc2, b, a;
  wait p, q;
  mma.store acc, c;
  mma.store acc2, d;
}
"""
    rng = np.random.default_rng(11)
    a = rng.integers(-4, 5, (16, 8)).astype(np.float16)
    b = rng.integers(-4, 5, (16, 8)).astype(np.float16)
    c, d = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    run(croqvm.compile(source, "t.co"), "f", a, b, c, d)
    exact_a = a.astype(np.float64)             # small integers: every sum is exact
    assert np.array_equal(c, exact_a @ b.astype(np.float64).T)
    assert np.array_equal(d, 1.0 + b.astype(np.float64) @ exact_a.T)
