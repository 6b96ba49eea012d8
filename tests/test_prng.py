"""The project PRNG (croqvm/core/prng.py): SplitMix64 against its published outputs, the
documented distribution of random inputs, and the random schedule's decisions against a
model of the procedure docs/EXECUTION.md writes down."""
import numpy as np
import pytest

from asm import Asm, P, kernel_module, run
from croqvm.core import dtypes
from croqvm.bytecode.module import Code, Function, Param, ParamKind, RetKind
from croqvm.core.prng import SplitMix64, random_array
from croqvm.running.inputs import build_args

# The first outputs of SplitMix64 (Steele, Lea and Flood; Vigna's reference splitmix64.c)
SEED_1234567 = [6457827717110365317, 3203168211198807973, 9817491932198370423,
                4593380528125082431, 16408922859458223821]
SEED_0 = 0xE220A8397B1DCDAF


def test_splitmix64_gives_the_published_outputs():
    rng = SplitMix64(1234567)
    assert [rng.next() for _ in range(5)] == SEED_1234567
    assert SplitMix64(0).next() == SEED_0
    assert SplitMix64(-1).state == 2 ** 64 - 1 and SplitMix64(2 ** 64).state == 0


def test_below_scales_one_draw_by_the_exact_product():
    rng = SplitMix64(1234567)
    got = [rng.below(n) for n in (10, 3, 1000, 2)]
    assert got == [x * n // 2 ** 64 for x, n in zip(SEED_1234567, (10, 3, 1000, 2))]
    assert got == [3, 0, 532, 0]


def test_a_block_of_draws_is_what_successive_draws_give():
    one, many = SplitMix64(99), SplitMix64(99)
    assert many.draws(1000).tolist() == [one.next() for _ in range(1000)]
    assert many.next() == one.next()


@pytest.mark.parametrize("dtype, want", [
    ("s32", [x // 2 ** 60 - 8 for x in SEED_1234567]),
    ("u8", [x // 2 ** 60 for x in SEED_1234567]),
    ("bool", [x >= 2 ** 63 for x in SEED_1234567]),
    ("f64", [2 * (x >> 11) / 2 ** 53 - 1 for x in SEED_1234567]),
])
def test_random_inputs_follow_the_documented_distribution(dtype, want):
    got = random_array(SplitMix64(1234567), dtypes.BY_NAME[dtype].code, (5,))
    assert got.dtype == np.dtype(dtypes.BY_NAME[dtype].numpy_param)
    assert got.tolist() == want


def test_random_floats_round_once_into_narrow_types():
    x = 2 * (SEED_1234567[0] >> 11) / 2 ** 53 - 1          # -0.29984..., exact in f64
    f32 = random_array(SplitMix64(1234567), dtypes.F32.code, (1,))
    bf16 = random_array(SplitMix64(1234567), dtypes.BY_NAME["bf16"].code, (1,))
    assert f32[0] == np.float32(x)
    # bf16 keeps 8 significant bits: multiples of 2^-9 here; x * 512 = -153.52
    assert bf16.dtype == np.float32 and bf16[0] == -154 / 512


def test_random_ranges_over_many_draws():
    s8 = random_array(SplitMix64(5), dtypes.BY_NAME["s8"].code, (4000,))
    f16 = random_array(SplitMix64(5), dtypes.BY_NAME["f16"].code, (4000,))
    assert set(s8.tolist()) == set(range(-8, 8))
    # [-1, 1) before rounding: values just below 1 may round up to it
    assert f16.min() >= -1 and f16.max() <= 1 and len(set(f16.tolist())) > 1000


def test_one_stream_in_parameter_order_scalars_too():
    params = [Param("a", ParamKind.BUFFER, dtypes.S32.code, [2]),
              Param("k", ParamKind.SCALAR, dtypes.U8.code),
              Param("b", ParamKind.BUFFER, dtypes.S32.code, ["N"])]
    fn = Function("f", params, [], RetKind.VOID, 0, Code())
    args, _ = build_args(fn, {}, {"N": 2}, True, 1234567)
    assert args[0].tolist() == [x // 2 ** 60 - 8 for x in SEED_1234567[:2]]
    assert args[1] == SEED_1234567[2] // 2 ** 60
    assert args[2].tolist() == [x // 2 ** 60 - 8 for x in SEED_1234567[3:5]]


def two_warps_print():
    """Two warps run LANE then PRINT: the printed order is the order of their PRINTs."""
    a = Asm()
    k = a.code("LANE r0\nPRINT p0", regs="s32", prints=[P("r0")])
    return kernel_module(a, k, 64)


def model_schedule(seed: int) -> list[int]:
    """docs/EXECUTION.md §16, for warps of two instructions and no copies: before
    each step, the runnable warps in order; one runs without a draw, two by below(2); a
    warp is done after its last instruction. Gives the warps in the order they print."""
    rng, left, printed = SplitMix64(seed), [2, 2], []
    while any(left):
        ready = [w for w in (0, 1) if left[w]]
        w = ready[0] if len(ready) == 1 else ready[rng.below(len(ready))]
        left[w] -= 1
        if not left[w]:
            printed.append(w)
    return printed


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 1234567])
def test_random_schedule_makes_the_documented_decisions(seed):
    _, out = run(two_warps_print(), schedule="random", seed=seed)
    want = [lane for w in model_schedule(seed) for lane in range(32 * w, 32 * w + 32)]
    assert out.split() == [str(x) for x in want]
