"""The OCP MX element types f6_e2m3, f6_e3m2, f4_e2m1, f8_ue8m0 and f8_ue4m3 (LANGUAGE.md
§12.1, §12.3; docs/NUMERICS.md "OCP MX formats"): every pattern and the rounding of f32
values against ml_dtypes, croqvm's own decisions by hand, and the types in programs and
at the API, where arrays go in and out as ml_dtypes arrays (float32 accepted too).
"""
from __future__ import annotations

import io
import textwrap

import ml_dtypes
import numpy as np
import pytest

import croqvm
from croqvm.core import dtypes, numerics
from croqvm.core.errors import ArgumentError

import engines

T = dtypes.BY_NAME
ML = {"f6_e2m3": ml_dtypes.float6_e2m3fn, "f6_e3m2": ml_dtypes.float6_e3m2fn,
      "f4_e2m1": ml_dtypes.float4_e2m1fn, "f8_ue8m0": ml_dtypes.float8_e8m0fnu}
WIDTH = {"f6_e2m3": 6, "f6_e3m2": 6, "f4_e2m1": 4, "f8_ue8m0": 8}


def same(a, b) -> bool:
    """Equal values with equal signs, NaN matching NaN."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan], b[~nan])
                and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])))


@pytest.mark.parametrize("name", list(ML))
def test_every_pattern_decodes_as_ml_dtypes(name):
    bits = np.arange(1 << WIDTH[name], dtype=np.uint8)
    assert same(numerics.decode(bits, T[name]), bits.view(ML[name]).astype(np.float64))


def test_ue4m3_is_the_positive_half_of_e4m3():
    bits = np.arange(128, dtype=np.uint8)
    want = bits.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert same(numerics.decode(bits, T["f8_ue4m3"]), want)


def _f32_samples(name) -> np.ndarray:
    """Every value of the format, the points halfway between neighbours and just beside
    them, both signs, values beyond the range and random ones."""
    values = numerics.DECODE[name]
    finite = np.unique(np.abs(values[np.isfinite(values)]))
    halves = (finite[1:] + finite[:-1]) / 2
    rng = np.random.default_rng(11)
    x = np.concatenate([finite, halves, np.nextafter(halves, 0), np.nextafter(halves, np.inf),
                        finite * 4, rng.normal(0, 8, 5000), np.ldexp(1.0, np.arange(-150, 128))])
    x = x[np.abs(x) < np.finfo(np.float32).max]
    return np.concatenate([x, -x]).astype(np.float32)


@pytest.mark.parametrize("name", list(ML))
def test_rounding_from_f32_is_ml_dtypes(name):
    """Round to nearest even with saturation as ml_dtypes does, apart from the cases
    croqvm decides itself (next test): NaN into f6/f4, ties, zeros and values below
    the range into f8_ue8m0."""
    x = _f32_samples(name)
    if name == "f8_ue8m0":
        m, _ = np.frexp(np.abs(x))
        x = x[(m != 0.75) & (x >= 2.0 ** -127)]      # no ties, nothing below the range
    got = numerics.round_to(x.astype(np.float64), T[name])
    np.testing.assert_array_equal(got, x.astype(ML[name]).view(np.uint8))


@pytest.mark.parametrize("name, x, want", [
    ("f4_e2m1", np.nan, 6.0), ("f4_e2m1", -np.inf, -6.0), ("f4_e2m1", 0.25, 0.0),
    ("f4_e2m1", 0.75, 1.0), ("f4_e2m1", 5.0, 4.0), ("f6_e2m3", np.nan, 7.5),
    ("f6_e3m2", 1e9, 28.0), ("f6_e3m2", -0.0, -0.0),
    ("f8_ue8m0", 3.0, 2.0), ("f8_ue8m0", 6.0, 8.0), ("f8_ue8m0", 0.75, 0.5),  # even pattern
    ("f8_ue8m0", 0.0, 2.0 ** -127), ("f8_ue8m0", 1e-40, 2.0 ** -127),
    ("f8_ue8m0", -1.0, np.nan), ("f8_ue8m0", np.inf, np.nan), ("f8_ue8m0", 2.0 ** 128, np.nan),
    ("f8_ue4m3", 448.0, 448.0), ("f8_ue4m3", 465.0, np.nan), ("f8_ue4m3", -1.0, np.nan),
    ("f8_ue4m3", -0.0, 0.0), ("f8_ue4m3", 2.0 ** -9, 2.0 ** -9), ("f8_ue4m3", 2.0 ** -11, 0.0),
])
def test_croqvms_own_rounding_rules(name, x, want):
    got = numerics.decode(numerics.round_to(np.array([x]), T[name]), T[name])
    assert same(got, [want])


# --------------------------------------------------------------------------- in programs

def compile_src(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "mx.co")


ADD = """
    __co__ auto add(f4_e2m1 [2, 8] a, f6_e3m2 [2, 8] b, global f6_e2m3 [2, 8] c) {
      f32 [a.span] out;
      parallel p by 2, q by 8 {
        out.at(p, q) = a.at(p, q) + b.at(p, q);
        c.at(p, q) = __to<f6_e2m3>(out.at(p, q));
      }
      return out;
    }
    __co__ auto pass(f8_ue8m0 [8] s) {
      f8_ue8m0 [8] out;
      parallel p by 8 : thread
        out.at(p) = s.at(p);
      return out;
    }"""


@pytest.mark.usefixtures("engine")
def test_arrays_go_in_and_out_as_ml_dtypes():
    rng = np.random.default_rng(2)
    a = rng.uniform(-6, 6, (2, 8)).astype(ml_dtypes.float4_e2m1fn)
    b = rng.uniform(-28, 28, (2, 8)).astype(np.float32)            # float32 accepted too
    c = np.zeros((2, 8), ml_dtypes.float6_e2m3fn)
    prog = compile_src(ADD)
    got = engines.run(prog, "add", a, b, c)
    want = a.astype(np.float32) + b.astype(ml_dtypes.float6_e3m2fn).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(c.view(np.uint8), want.astype(ml_dtypes.float6_e2m3fn)
                                  .view(np.uint8))
    c32 = np.zeros((2, 8), np.float32)                 # a float32 array receives values
    engines.run(prog, "add", a, b, c32)
    np.testing.assert_array_equal(c32, c.astype(np.float32))
    s = np.array([2.0 ** k for k in range(-3, 5)], ml_dtypes.float8_e8m0fnu)
    out = engines.run(prog, "pass", s)
    assert out.dtype == ml_dtypes.float8_e8m0fnu
    np.testing.assert_array_equal(out.view(np.uint8), s.view(np.uint8))


def test_a_wrong_array_type_is_an_argument_error():
    with pytest.raises(ArgumentError, match="expects dtype float32 or float8_e8m0fnu but "
                                            "got float16"):
        compile_src(ADD).run("pass", np.zeros(8, np.float16))


@pytest.mark.usefixtures("engine")
def test_print_and_conversions():
    src = """
        __co__ void f() {
          f4_e2m1 a = 1.5f;
          f6_e2m3 b = __to<f6_e2m3>(100.0f);
          f8_ue8m0 c = __to<f8_ue8m0>(3.0f);
          f8_ue4m3 d = __to<f8_ue4m3>(-1.0f);
          f6_e3m2 e = __to<f6_e3m2>(-0.3f);
          println(a, b, c, d, e, a + b, __to<s32>(b), __to<bool>(e));
        }"""
    out = io.StringIO()
    engines.run(compile_src(src), "f", out=out)
    assert out.getvalue() == "1.5 7.5 2 nan -0.3125 9 7 true\n"


def test_npy_files_carry_the_patterns(tmp_path, capsys):
    """numpy saves an ml_dtypes array as raw bytes; --input reads them back as the
    parameter's type, and --output saves the result's patterns."""
    from croqvm.cli.main import main
    src = tmp_path / "mx.co"
    src.write_text(textwrap.dedent(ADD))
    s = np.array([2.0 ** k for k in range(-3, 5)], ml_dtypes.float8_e8m0fnu)
    np.save(tmp_path / "s.npy", s)
    assert main(["run", str(src), "--func", "pass", "--input", f"s={tmp_path / 's.npy'}",
                 "--output", str(tmp_path / "o.npz"), "--engine", "python"]) == 0
    capsys.readouterr()
    out = np.load(tmp_path / "o.npz")["result"]
    np.testing.assert_array_equal(out.view(np.uint8), s.view(np.uint8))


@pytest.mark.usefixtures("engine")
@pytest.mark.parametrize("name", ["bf16", "f8_e4m3", "f8_e5m2"])
def test_bf16_and_fp8_arrays_as_ml_dtypes(name):
    """Stored as float32 holding the value, they go in as float32 (rounded) or as their
    ml_dtypes type, and come out as the ml_dtypes type."""
    ml = dtypes.ml_dtype(T[name])
    prog = compile_src(f"""
        __co__ auto twice({name} [4] x, global {name} [4] y) {{
          {name} [4] r;
          parallel p by 4 : thread {{
            r.at(p) = x.at(p) * 2.0f;
            y.at(p) = x.at(p);
          }}
          return r;
        }}""")
    x32 = np.array([1.1, -0.3, 3.0, 0.0], np.float32)
    want = x32.astype(ml)
    for x in (x32, want):
        y = np.zeros(4, ml)
        got = engines.run(prog, "twice", x, y)
        assert got.dtype == ml
        np.testing.assert_array_equal(got.astype(np.float32), (want.astype(np.float32) * 2)
                                      .astype(ml).astype(np.float32))
        np.testing.assert_array_equal(y.astype(np.float32), want.astype(np.float32))
