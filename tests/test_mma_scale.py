"""Block-scaled MMA (LANGUAGE.md §11.8): ``mma.<a>.<b>.scale`` and ``mma.scale`` against
numpy (the products are small integers, so the partial sums are exact and only the
scaling rounds, as §11.8 says), a scale tile reaching past its buffer, the static errors,
the verifier's rule and the generated CUDA."""
import numpy as np
import pytest

import croqvm
import engines
from croqvm.bytecode.opcodes import MMA_SCALE, WIDTH
from croqvm.bytecode.verify import verify
from croqvm.cuda.emit import emit
from croqvm.core.errors import BytecodeError, KernelFault
from croqvm.lang.frontend import front_end

EXPLICIT = """
__co__ void f(global f16 [16, 64] a, global f16 [8, 64] b, global f32 [R, 2] sa,
              global f32 [2] sb, global T [16, 8] c) {
  parallel p by 1 : block {
    shared f16 [16, 64] la;
    shared f16 [8, 64] lb;
    dma.copy a => la;
    dma.copy b => lb;
    parallel w by 1 : UNIT {
      acc = mma.fill.T 0.0f;
      foreach {k} in [2] {
        rows = sa.subspan(16, 1).at(0, k);
        foreach {h} in [2]
          mma.row.row acc, la.subspan(16, 16).at(0, k * 2 + h),
                      lb.subspan(8, 16).at(0, k * 2 + h);
        mma.scale acc, rows, sb.at(k);
      }
      mma.store acc, c;
    }
  }
}
"""

INLINE = """
__co__ void f(global f16 [16, 64] a, global f16 [8, 64] b, global f32 [4, 16] sa,
              global f32 [4] sb, global T [16, 8] c) {
  parallel p by 1 : block {
    parallel w by 1 : group {
      acc = mma.fill.T 0.0f;
      foreach {k} in [4]
        mma.row.row.scale acc, a.subspan(16, 16).at(0, k), b.subspan(8, 16).at(0, k),
                          sa.subspan(1, 16).at(k, 0), sb.at(k);
      mma.store acc, c;
    }
  }
}
"""


def operands(seed: int):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (16, 64)).astype(np.float16)
    b = rng.integers(-4, 5, (8, 64)).astype(np.float16)
    return a, b


def scaled_reference(a, b, row_scales, factors, dtype):
    """acc += P_k * f32(rows_k[i] * factor_k) for each K block k of 64 / len(factors)
    columns: one rounding into f32, or f32 then f16 then the f16 add (§11.8). P_k is
    exact (small integers)."""
    blocks = len(factors)
    width = 64 // blocks
    acc = np.zeros((16, 8), dtype)
    for k in range(blocks):
        cols = slice(k * width, (k + 1) * width)
        p = a[:, cols].astype(np.float64) @ b[:, cols].astype(np.float64).T
        s = (row_scales[k].astype(np.float64) * np.float64(factors[k])).astype(np.float32)
        if dtype == np.float32:
            acc = (acc.astype(np.float64) + p * s[:, None].astype(np.float64)).astype(np.float32)
        else:
            x = (p * s[:, None].astype(np.float64)).astype(np.float32).astype(np.float16)
            acc = (acc.astype(np.float64) + x.astype(np.float64)).astype(np.float16)
    return acc


def explicit_case(unit: str, tname: str, dtype):
    """EXPLICIT for ``unit`` with ``tname`` accumulators: the program, its arguments (the
    output last, zeroed) and the numpy reference of the output."""
    a, b = operands(1)
    rng = np.random.default_rng(2)
    sa = rng.uniform(0.1, 3.0, (16, 2)).astype(np.float32)
    sb = rng.uniform(0.1, 3.0, 2).astype(np.float32)
    src = EXPLICIT.replace("UNIT", unit).replace("T ", tname + " ").replace(".T", "." + tname)
    program = croqvm.compile(src.replace("R,", "16,"), "t.co")
    want = scaled_reference(a, b, [sa[:, 0], sa[:, 1]], sb, dtype)
    return program, [a, b, sa, sb, np.zeros((16, 8), dtype)], want


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("unit", ["group", "group-4"])
@pytest.mark.parametrize("tname, dtype", [("f32", np.float32), ("f16", np.float16)])
def test_mma_scale_scales_the_mmas_before_it_in_its_block(unit, tname, dtype):
    program, args, want = explicit_case(unit, tname, dtype)
    engines.run(program, "f", *args)
    assert np.array_equal(args[-1], want)


@pytest.mark.parametrize("unit, tname, dtype", [("group", "f32", np.float32),
                                                 ("group-4", "f16", np.float16)])
def test_cuda_cpu_scales_an_accumulator_in_registers(unit, tname, dtype):
    """The accumulator of a warp or warpgroup lives in its lanes' registers on the CUDA
    path: each lane scales the cells it holds."""
    program, args, want = explicit_case(unit, tname, dtype)
    program.run("f", *args, device="cuda-cpu")
    assert np.array_equal(args[-1], want)


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("tname, dtype", [("f32", np.float32), ("f16", np.float16)])
def test_a_scaled_mma_scales_its_own_product(tname, dtype):
    a, b = operands(3)
    rng = np.random.default_rng(4)
    sa = rng.uniform(0.1, 3.0, (4, 16)).astype(np.float32)     # a [1, 16] row per block
    sb = rng.uniform(0.1, 3.0, 4).astype(np.float32)
    src = INLINE.replace("T ", tname + " ").replace(".T", "." + tname)
    c = np.zeros((16, 8), dtype)
    engines.run(croqvm.compile(src, "t.co"), "f", a, b, sa, sb, c)
    assert np.array_equal(c, scaled_reference(a, b, list(sa), sb, dtype))


@pytest.mark.usefixtures("engine")
def test_rows_whose_scale_lies_outside_the_buffer_are_scaled_by_zero():
    """A [16, 1] scale tile over a buffer of R = 12 rows: rows 12-15 get nothing, as the
    reference's valid-row count gives them (runtime/choreo_cute.h)."""
    a, b = operands(5)
    sa = np.full((12, 2), 2.0, np.float32)
    sb = np.ones(2, np.float32)
    src = EXPLICIT.replace("UNIT", "group").replace("T ", "f32 ").replace(".T", ".f32")
    c = np.full((16, 8), 7.0, np.float32)
    engines.run(croqvm.compile(src, "t.co"), "f", a, b, sa, sb, c)     # R = 12
    full = a.astype(np.float64) @ b.astype(np.float64).T * 2
    assert np.array_equal(c[:12], full[:12].astype(np.float32))
    assert not c[12:].any()


def diagnose(body: str) -> list[str]:
    text = ("__co__ void f(global f16 [16, 16] a, global f16 [8, 16] b, global f32 [16, 1] s,"
            " global f16 [16, 1] h,\n              global f32 [4] x, global f32 [16, 8] c) {\n"
            "  parallel p by 1 : block {\n    parallel w by 1 : group {\n"
            "      acc = mma.fill.f32 0.0f;\n" + body +
            "\n      mma.store acc, c;\n    }\n  }\n}")
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags if d.severity == "error"]


MMA = "      mma.row.row acc, a, b;\n"
ERRORS = [
    ("      mma.scale acc, s, 1.0f;",
     ["6:7: mma.scale requires a preceding plain MMA on 'acc' in the same scope."]),
    ("      foreach k in [2] { mma.row.row acc, a, b; }\n      mma.scale acc, s, 1.0f;", []),
    (MMA + "      foreach k in [2]\n        mma.scale acc, s, 1.0f;",
     ["8:9: mma.scale requires a preceding plain MMA on 'acc' in the same scope."]),
    (MMA + "      mma.scale acc, h, 1.0f;",
     ["7:22: the row scales of 'mma.scale' are f32, but 'h' is f16."]),
    (MMA + "      mma.scale acc, s.subspan(8, 1).at(0, 0), x.at(0);",
     ["7:22: the row scales of 'mma.scale' are one per row of 'acc' [16, 8]: a [16, 1], "
      "[1, 16] or [16] tile, but 's' is [8, 1]."]),
    ("      mma.row.row.scale acc, a, b, s, x;",
     ["6:39: expect a scalar value of type 'f32' but got 'f32 [4]'."]),
    ("      mma.row.row.scale acc, a, b;",
     ["6:34: syntax error: expected ',' and the row scales and the factor, as in "
      "'mma.row.row.scale mc, a, b, rows, factor;'"]),
    ("      mma.scale s, s, 1.0f;",
     ["6:17: 's' of type \"f32 [16, 1]\" is not an MMA accumulator."]),
]


@pytest.mark.parametrize("body, want", ERRORS)
def test_static_errors(body, want):
    assert diagnose(body) == want


def test_an_integer_accumulator_can_not_be_scaled():
    text = ("__co__ void f(global s8 [16, 16] a, global s8 [8, 16] b, global f32 [16] s) {\n"
            "  parallel p by 1 : block {\n    parallel w by 1 : group {\n"
            "      acc = mma.fill.s32 0;\n      mma.row.row.scale acc, a, b, s, 1.0f;\n"
            "    }\n  }\n}")
    _, diags, _ = front_end(text, "t.co")
    assert [d.message for d in diags if d.severity == "error"] == [
        "'mma.row.row.scale' scales an f16 or f32 accumulator, but 'acc' is s32."]


def _module():
    src = EXPLICIT.replace("UNIT", "group").replace("T ", "f32 ").replace(".T", ".f32")
    return croqvm.compile(src.replace("R,", "16,"), "t.co").module


def test_the_verifier_checks_mma_scale():
    module = _module()
    code = module.functions[0].kernels[0].code
    (ins,) = [i for i in range(0, len(code.code), WIDTH) if code.code[i] == MMA_SCALE]
    code.code[ins + 2] = code.code[ins + 1]          # the accumulator as its own partial
    with pytest.raises(BytecodeError) as e:
        verify(module)
    assert "is its own partial sum" in str(e.value)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_cuda_generator_scales_cell_by_cell(arch):
    text = emit(_module(), arch=arch).text
    assert "cq_fma_to((double)" in text and "CQ_FMT_F32, 1);" in text


RACY_SCALES = """
__co__ void f(global f16 [16, 16] a, global f16 [8, 16] b, global f32 [16, 8] c) {
  parallel p by 1 : block {
    shared f32 [16] sc;
    parallel g by 2 : group, t by 32 : thread {
      inthreads.async (g == 1) {
        if (t < 16) sc.at(t) = 2.0f;
      }
      inthreads.async (g == 0) {
        acc = mma.fill.f32 0.0f;
        mma.row.row acc, a, b;
        mma.scale acc, sc, 1.0f;
        mma.store acc, c;
      }
    }
  }
}
"""


def test_the_race_checker_sees_mma_scale_read_its_scales():
    a, b = operands(6)
    with pytest.raises(KernelFault) as e:
        croqvm.compile(RACY_SCALES, "t.co").run("f", a[:, :16].copy(), b[:, :16].copy(),
                                                np.zeros((16, 8), np.float32),
                                                engine="python", check="race")
    assert "runtime error: data race on shared 'sc' element (0): written here, read by " \
           "'mma.scale' at t.co:12:9; no barrier or event orders them." in str(e.value)
