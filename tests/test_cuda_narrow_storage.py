"""bf16 and fp8 elements at their real width on the CUDA path (docs/CUDA.md "How bytecode
maps"): buffers hold the types' bit patterns (2 and 1 bytes), so a shared tile whose
float32 copy would overflow the block's shared memory fits; loads widen exactly, stores
round as croqvm.core.numerics does; the host hands the kernel the patterns and reads them
back. References: ml_dtypes' patterns and roundings, and the interpreter."""
import ml_dtypes
import numpy as np
import pytest

import croqvm
from croqvm.core import dtypes, numerics
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import emit
from croqvm.core.limits import MAX_SHARED_BYTES

E4M3, E5M2, BF16 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16

# 64 KiB of e4m3 and 128 KiB of bf16: 768 KiB as float32, more than a block may have
BIG = """
__co__ void big(global f8_e4m3 [128, 512] a, global bf16 [256, 256] b,
                global f8_e4m3 [128, 512] oa, global bf16 [256, 256] ob) {
  parallel p by 1 : block {
    shared f8_e4m3 [128, 512] sa;
    shared bf16 [256, 256] sb;
    tma.copy a => sa;
    tma.copy b => sb;
    parallel t by 128 : thread {
      foreach j in [512] { sa.at(t, j) = __to<f8_e4m3>(sa.at(t, j) * 1.5f); }
      foreach i in [2] {
        foreach j in [256] { sb.at(t * 2 + i, j) = __to<bf16>(sb.at(t * 2 + i, j) * 3.0f); }
      }
    }
    tma.copy sa => oa;
    tma.copy sb => ob;
  }
}
"""


def test_a_tile_too_large_as_float32_fits_at_its_real_width():
    prog = croqvm.compile(BIG, "big.co")
    gen = emit(prog.module, arch="sm_90a")
    (info,) = gen.kernels.values()
    real = 128 * 512 * 1 + 256 * 256 * 2
    assert 4 * (128 * 512 + 256 * 256) > MAX_SHARED_BYTES
    assert real <= info.smem_bytes < real + 4096
    assert "void big_k0(uint8_t *b2, long long b2_d0, long long b2_d1, uint16_t *b3, " \
        in gen.text
    rng = np.random.default_rng(5)
    a = rng.uniform(-200, 200, (128, 512)).astype(E4M3)
    b = rng.uniform(-1e30, 1e30, (256, 256)).astype(BF16)
    oa, ob = np.zeros((128, 512), E4M3), np.zeros((256, 256), BF16)
    prog.run("big", a, b, oa, ob, device="cuda-cpu")
    # one rounding of the exact f32 product, as ml_dtypes rounds (nearest even); e4m3 has
    # no infinity: beyond 448 (after rounding) is NaN, as in croqvm.core.numerics
    want_a = (a.astype(np.float32) * np.float32(1.5)).astype(np.float64)
    want_a = numerics.round_to(want_a, dtypes.F8_E4M3)
    np.testing.assert_array_equal(oa.astype(np.float32), want_a)
    np.testing.assert_array_equal(ob.view(np.uint16),
                                  (b.astype(np.float32) * np.float32(3)).astype(BF16)
                                  .view(np.uint16))


TRIP = """
__co__ void trip(global f32 [32] x, global bf16 [32] ib, global f8_e4m3 [32] ie,
                 global f8_e5m2 [32] iv, global bf16 [32] ob, global f8_e4m3 [32] oe,
                 global f8_e5m2 [32] ov, global bf16 [32] rb, global f8_e4m3 [32] re,
                 global f8_e5m2 [32] rv) {
  parallel p by 1 : block {
    shared bf16 [32] sb;
    shared f8_e4m3 [32] se;
    shared f8_e5m2 [32] sv;
    parallel t by 32 : thread {
      sb.at(t) = __to<bf16>(x.at(t));
      se.at(t) = __to<f8_e4m3>(x.at(t));
      sv.at(t) = __to<f8_e5m2>(x.at(t));
      rb.at(t) = sb.at(t);
      re.at(t) = se.at(t);
      rv.at(t) = sv.at(t);
      sb.at(t) = ib.at(t);
      se.at(t) = ie.at(t);
      sv.at(t) = iv.at(t);
      ob.at(t) = sb.at(t);
      oe.at(t) = se.at(t);
      ov.at(t) = sv.at(t);
    }
  }
}
"""


def _extremes() -> np.ndarray:
    """f32 values at the edges of the three formats: largest finite values and beyond,
    ties between neighbours (to even), subnormals and halfway below the least, signed
    zeros, infinities and NaN."""
    v = [448.0, 464.0, 480.0, -448.0, 57344.0, 61440.0, 3.3895314e38, 2.0 ** -9,
         2.0 ** -10, 1.5 * 2.0 ** -9, 2.0 ** -16, 2.0 ** -17, 2.0 ** -133, 2.0 ** -134,
         1.0 + 2.0 ** -4, 1.0 + 3 * 2.0 ** -4, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
         1.0 + 2.0 ** -3, 1.0 + 2.0 ** -5, 0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan,
         3.0e38, -1.0e-40, 17.0, -0.3, 240.0, 1e-3]
    return np.array(v, np.float32)


def _patterns(fmt, dtype) -> np.ndarray:
    """Stored patterns of ``dtype``: its largest finite, subnormals, NaN, zero, ..."""
    info = ml_dtypes.finfo(dtype)
    v = [info.max, -info.max, info.smallest_subnormal, -info.smallest_subnormal,
         info.smallest_normal, 3 * info.smallest_subnormal, 0.0, -0.0, np.nan, 1.0, -2.5]
    if fmt != "f8_e4m3":
        v += [np.inf, -np.inf]
    return np.resize(np.array(v, np.float32), 32).astype(dtype)


@pytest.fixture(scope="module")
def trip_results():
    prog = croqvm.compile(TRIP, "trip.co")
    x = _extremes()
    ins = [_patterns(f, t) for f, t in (("bf16", BF16), ("f8_e4m3", E4M3),
                                         ("f8_e5m2", E5M2))]
    runs = {}
    for device in ("cpu", "cuda-cpu"):
        outs = [np.zeros(32, t) for t in (BF16, E4M3, E5M2) * 2]
        prog.run("trip", x, *[a.copy() for a in ins], *outs, device=device)
        runs[device] = outs
    return x, ins, runs


def _bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)


@pytest.mark.parametrize("i, fmt", list(enumerate(["bf16", "f8_e4m3", "f8_e5m2"])))
def test_stored_patterns_travel_unchanged(trip_results, i, fmt):
    _, ins, runs = trip_results
    for device, outs in runs.items():
        np.testing.assert_array_equal(_bits(outs[i]), _bits(ins[i]), err_msg=device)


@pytest.mark.parametrize("i, fmt", list(enumerate(["bf16", "f8_e4m3", "f8_e5m2"])))
def test_rounding_on_store_is_the_interpreters_bit_for_bit(trip_results, i, fmt):
    x, _, runs = trip_results
    got, want = _bits(runs["cuda-cpu"][3 + i]), _bits(runs["cpu"][3 + i])
    np.testing.assert_array_equal(got, want)
    ref = numerics.round_to(x.astype(np.float64), dtypes.BY_NAME[fmt])
    np.testing.assert_array_equal(runs["cuda-cpu"][3 + i].astype(np.float32), ref)


@pytest.mark.parametrize("arch", cc.GPU_ARCHES)
def test_narrow_storage_compiles_with_nvcc(arch):
    if cc.shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    binary = cc.build(emit(croqvm.compile(TRIP, "trip.co").module, arch=arch).text, arch)
    assert binary.read_bytes()[:4] == b"\x7fELF"


SWIZZLED = """
__co__ void raw(global T [8, 128] a, global T [8, 128] out) {
  parallel p by 1 : block {
    shared T [8, 128] s;
    tma.copy.swiz<128> a => s;
    parallel t by 8 : thread {
      foreach j in [128] { out.at(t, j) = s.at(t, j); }
    }
  }
}
"""


def _hardware_swizzle(a: np.ndarray, width: int) -> np.ndarray:
    """Where a 128-byte swizzle puts each element of ``a`` (PTX Swizzle<3, 4, 3> on byte
    offsets of ``width``-byte elements): out[pos(k)] = a[k]."""
    k = np.arange(a.size)
    b = k * width
    pos = (b ^ ((b & (7 << 7)) >> 3)) // width
    out = np.empty_like(a.reshape(-1))
    out[pos] = a.reshape(-1)
    return out.reshape(a.shape)


@pytest.mark.parametrize("name, dtype, width", [("bf16", BF16, 2), ("f8_e4m3", E4M3, 1)])
def test_a_swizzle_places_elements_by_their_real_bytes(name, dtype, width):
    """Raw element reads after a swizzled copy see the GPU's layout, on every device."""
    prog = croqvm.compile(SWIZZLED.replace("T ", name + " "), "raw.co")
    a = np.random.default_rng(9).standard_normal((8, 128)).astype(dtype)
    want = _hardware_swizzle(a, width)
    assert not np.array_equal(want, a)
    for device in ("cpu", "cuda-cpu"):
        for engine in (("python", "native") if device == "cpu" else (None,)):
            out = np.zeros((8, 128), dtype)
            options = {"engine": engine} if engine else {}
            prog.run("raw", a, out, device=device, **options)
            np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8),
                                          err_msg=f"{device} {engine}")
