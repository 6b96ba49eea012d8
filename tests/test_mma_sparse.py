"""2:4 structured-sparse MMA (LANGUAGE.md §11.9): ``mma.<a>.<b>.sp`` against a dense numpy
matmul of the matrix the packed operand and its metadata stand for (encoded here as the
reference's host helper does, runtime/choreo.h), the static errors, the verifier's rule
and the generated CUDA."""
import numpy as np
import pytest

import croqvm
import croqvm.core.dtypes
import engines
from croqvm.bytecode.opcodes import MMA_SPARSE, WIDTH
from croqvm.bytecode.verify import verify
from croqvm.cuda.emit import emit
from croqvm.core.errors import BytecodeError
from croqvm.lang.frontend import front_end

SPARSE = """
__co__ void f(global f16 [64, 32] ap, global u8 [64, 8] am, global f16 [N, 64] b,
              global f32 [64, N] c) {
  parallel p by 1 : block {
    shared f16 [64, 32] sa;
    shared u8 [64, 8] sm;
    shared f16 [N, 64] sb;
    dma.copy ap => sa;
    dma.copy am => sm;
    dma.copy b => sb;
    parallel w by 1 : UNIT {
      acc = mma.fill.f32 0.0f;
      foreach {k} in [2] {
        me = mma.load sm.chunkat(_, k);
        mma.row.row.sp acc, sa.chunkat(_, k), sb.chunkat(_, k), me;
      }
      mma.store acc, c;
    }
  }
}
"""


def sparse_dense(rows: int, k: int, seed: int) -> np.ndarray:
    """A [rows, k] matrix with two nonzero small integers in every group of four along k
    (some groups keep positions 0 and 1 written as zeros: a kept value may be 0)."""
    rng = np.random.default_rng(seed)
    a = np.zeros((rows, k), np.float16)
    for r in range(rows):
        for g in range(k // 4):
            p, q = sorted(rng.choice(4, 2, replace=False))
            a[r, 4 * g + p], a[r, 4 * g + q] = rng.integers(1, 5, 2) * rng.choice([-1, 1], 2)
    return a


def encode(dense: np.ndarray):
    """Packed [M, K/2] and u8 metadata [M, K/8]: per group of four, the two kept values
    and their positions p | q << 2, the low half-byte for even groups."""
    rows, k = dense.shape
    packed = np.zeros((rows, k // 2), dense.dtype)
    meta = np.zeros((rows, k // 8), np.uint8)
    for r in range(rows):
        for g in range(k // 4):
            nz = [i for i in range(4) if dense[r, 4 * g + i] != 0]
            p, q = (nz + [i for i in range(4) if i not in nz])[:2] if len(nz) < 2 else nz
            p, q = sorted((p, q))
            packed[r, 2 * g:2 * g + 2] = dense[r, 4 * g + p], dense[r, 4 * g + q]
            meta[r, g // 2] |= (p | q << 2) << (4 * (g % 2))
    return packed, meta


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("unit", ["group", "group-4"])
@pytest.mark.parametrize("n", [8, 32])
def test_a_sparse_mma_multiplies_the_matrix_its_operands_stand_for(unit, n):
    dense = sparse_dense(64, 64, seed=n)
    packed, meta = encode(dense)
    b = np.random.default_rng(1).integers(-3, 4, (n, 64)).astype(np.float16)
    c = np.zeros((64, n), np.float32)
    src = SPARSE.replace("UNIT", unit)
    engines.run(croqvm.compile(src, "t.co"), "f", packed, meta, b, c)
    assert np.array_equal(c, (dense.astype(np.float64) @ b.astype(np.float64).T)
                          .astype(np.float32))


@pytest.mark.usefixtures("engine")
def test_equal_positions_keep_the_second_value():
    """Metadata naming one position twice: the second kept value lands there (§11.9)."""
    src = ("__co__ void f(global f16 [1, 4] ap, global u8 [1, 1] am, global f16 [1, 8] b,"
           " global f32 [1, 1] c) {\n  acc = mma.fill.f32 0.0f;\n  me = mma.load am;\n"
           "  mma.row.row.sp acc, ap, b, me;\n  mma.store acc, c;\n}")
    c = np.zeros((1, 1), np.float32)
    engines.run(croqvm.compile(src, "t.co"), "f", np.array([[2, 3, 0, 0]], np.float16),
                np.array([[0b0100_0101]], np.uint8), np.arange(8, dtype=np.float16)[None], c)
    assert c[0, 0] == 3 * 1      # 3 at position 1 of group 0, where b[0][1] = 1


def diagnose(body: str) -> list[str]:
    text = ("__co__ void f(global f16 [16, 8] ap, global u8 [16, 2] am, global f16 [8, 16] b,"
            "\n              global f16 [16, 2] hm, global u8 [16, 6] ap6,"
            " global f32 [16, 8] c) {\n  parallel p by 1 : block {\n"
            "    parallel w by 1 : group {\n      acc = mma.fill.f32 0.0f;\n" + body +
            "\n      mma.store acc, c;\n    }\n  }\n}")
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags if d.severity == "error"]


ERRORS = [
    ("      mma.row.row.sp acc, ap, b, am;", []),
    ("      mma.col.row.sp acc, ap, b, am;",
     ["6:7: 'mma.col.row.sp' needs A stored [M, K/2] along K, as 'mma.row.*.sp'."]),
    ("      mma.row.row.sp acc, ap, b, hm;",
     ["6:34: the metadata of 'mma.row.row.sp' is 8-bit integers, but 'hm' is f16."]),
    ("      mma.row.row.sp acc, ap, b, am.subspan(16, 1).at(0, 0);",
     ["6:34: the metadata of 'mma.row.row.sp' for the packed A 'ap' [16, 8] is [16, 2], "
      "but 'am' is [16, 1]."]),
    ("      frag f32[16, 8] fa;\n      mma.row.row.sp fa, ap, b, am;",
     ["7:7: a frag accumulator takes plain MMAs only, not 'mma.row.row.sp'."]),
    ("      [[schedule(k_tiles(0))]] mma.row.row.sp acc, ap, b, am;",
     ["6:7: Sparse MMA k_tiles schedules are not supported."]),
    ("      mma.row.row.sp acc, ap, b;",
     ["6:32: syntax error: expected ',' and the metadata of the packed A operand, as in "
      "'mma.row.row.sp mc, a, b, meta;'"]),
]


@pytest.mark.parametrize("body, want", ERRORS)
def test_static_errors(body, want):
    assert diagnose(body) == want


def _module():
    return croqvm.compile(SPARSE.replace("UNIT", "group").replace("N,", "8,")
                          .replace("N]", "8]"), "t.co").module


def test_the_verifier_checks_mma_sparse():
    module = _module()
    code = module.functions[0].kernels[0].code
    (ins,) = [i for i in range(0, len(code.code), WIDTH) if code.code[i] == MMA_SPARSE]
    code.frags[code.code[ins + 1]].dtype = croqvm.core.dtypes.F32.code     # the dense A
    with pytest.raises(BytecodeError) as e:
        verify(module)
    assert "(dense)') is f32, but the packed fragment" in str(e.value)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_cuda_generator_builds_the_dense_operand(arch):
    text = emit(_module(), arch=arch).text
    assert "& 15;" in text and "it wins when both are one" in text
