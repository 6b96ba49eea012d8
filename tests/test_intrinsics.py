"""Math builtins and atomics (LANGUAGE.md §4.4, §4.5; docs/NUMERICS.md "Math functions";
croqvm/core/intrinsics.py): results against numpy and the math module, atomics against counts
worked out by hand, the static errors, and the race check of atomics.
"""
from __future__ import annotations

import io
import math
import textwrap
from fractions import Fraction

import numpy as np
import pytest

import croqvm
from croqvm.core.intrinsics import MATH
from croqvm.lang.frontend import front_end

import engines

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RUNS = pytest.mark.usefixtures("engine")      # a test that runs code runs on each engine


def compile_src(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "intr.co")


def printed(source: str, func: str, *args) -> str:
    out = io.StringIO()
    engines.run(compile_src(source), func, *args, out=out)
    return out.getvalue()


def errors(body: str) -> list[str]:
    text = "__co__ void f(global s32 [64] g, global f32 [4] h) {\n" + body + "\n}"
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags if d.severity == "error"]


# --------------------------------------------------------------------------- math functions

# the f64 value of each function by an independent route: Python's math module or
# numpy's own functions (not the C library through ctypes), or the formula itself
REFERENCE = {
    "__sqrt": np.sqrt, "__rsqrt": lambda x: 1.0 / np.sqrt(x), "__exp": np.exp,
    "__exp2f": np.exp2, "__expm1": np.expm1, "__log": np.log, "__log1p": np.log1p,
    "__sin": np.sin, "__cos": np.cos, "__tan": np.tan, "__asin": np.arcsin,
    "__acos": np.arccos, "__atan": np.arctan, "__sinh": np.sinh, "__cosh": np.cosh,
    "__tanh": np.tanh, "__ceil": np.ceil, "__floor": np.floor,
    "__round": np.vectorize(lambda v: float(math.floor(abs(v) + 0.5)) * math.copysign(1, v)),
    "__fabs": np.abs, "__frcp_rn": lambda x: 1.0 / x,
    "__gelu": lambda x: x * 0.5 * (1.0 + np.tanh(0.7978845608028654 *
                                                 (x + 0.044715 * x * x * x))),
    "__sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "__softplus": lambda x: np.log1p(np.exp(x)), "__sign": np.sign,
    "__isfinite": np.isfinite, "__pow": np.power, "__atan2": np.arctan2,
    "__fmaf": None,
}
# exact in f64, then rounded once: no ulp of doubt
EXACT = {"__sqrt", "__ceil", "__floor", "__round", "__fabs", "__frcp_rn", "__sign",
         "__isfinite", "__fmaf"}


def _kernel(fn) -> str:
    args = ", ".join(f"{n}.at(p)" for n in "xyz"[:fn.arity])
    return f"""
        __co__ auto m(f32 [64] x, f32 [64] y, f32 [64] z) {{
          {"bool" if fn.predicate else "f32"} [64] out;
          parallel p by 64 : thread
            out.at(p) = {fn.name}({args});
          return out;
        }}"""


@RUNS
@pytest.mark.parametrize("name", [f.name for f in MATH])
def test_math_function_on_f32(name):
    fn = next(f for f in MATH if f.name == name)
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.9, 0.9, 64).astype(np.float32)
    y = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    z = rng.uniform(-2, 2, 64).astype(np.float32)
    x[:4] = [0.0, -0.0, 2.5, -2.5]          # signs of zero, ties of __round
    got = engines.run(compile_src(_kernel(fn)), "m", x, y, z)
    xs = [a.astype(np.float64) for a in (x, y, z)[:fn.arity]]
    if name == "__fmaf":       # the exact value, where f64 holds it, rounded once to f32
        exact = [Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
                 for a, b, c in zip(x, y, z)]
        held = np.array([Fraction(float(v)) == v for v in exact])
        assert held.sum() > 48
        got, want = got[held], np.array([float(v) for v in exact], np.float64)[held]
        want = want.astype(np.float32)
    else:
        with np.errstate(all="ignore"):
            want = REFERENCE[name](*xs)
        want = want if fn.predicate else want.astype(np.float32)
    if name in EXACT or fn.predicate:
        np.testing.assert_array_equal(got, want)
    else:                       # the reference's f64 may differ in its last bit
        np.testing.assert_array_max_ulp(got, want, maxulp=1)


@RUNS
def test_fmaf_rounds_once():
    """(1 + 2^-12)^2 + 2^-30 = 1 + 2^-11 + 2^-24 + 2^-30: just above the halfway point
    between two f32 values, so one rounding goes up, while rounding the product first
    (to the even 1 + 2^-11) and then adding 2^-30 stays down."""
    x = np.full(64, 1 + 2.0 ** -12, np.float32)
    z = np.full(64, 2.0 ** -30, np.float32)
    got = engines.run(compile_src(_kernel(next(f for f in MATH if f.name == "__fmaf"))),
                      "m", x, x, z)
    assert got[0] == np.float32(1 + 2.0 ** -11 + 2.0 ** -23)


@RUNS
def test_math_in_f16_and_f64_and_with_integers():
    src = """
        __co__ void f() {
          f16 h = 2.0f;
          f64 d = 2.0;
          s32 n = 10;
          println(__sqrt(h), __sqrt(d), __sqrt(n), __exp(h), __isfinite(__log(0.0f)));
          println(__pow(2.0f, 0.5f), __atan2(1.0f, -1.0f), __sign(-0.0f), __round(-2.5f));
        }"""
    sqrt_h = float(np.float16(math.sqrt(2.0)))
    exp_h = float(np.float16(math.exp(2.0)))
    assert printed(src, "f") == (
        f"{sqrt_h:g} {math.sqrt(2):g} 3 {exp_h:g} false\n"
        f"{math.sqrt(2):g} {math.atan2(1, -1):g} 0 -3\n")


@RUNS
def test_alignup_aligndown():
    src = """
        __co__ void f() {
          println(__alignup(7, 3), __aligndown(7, 3), __alignup(8, 4), __aligndown(-7, 4));
        }"""
    assert printed(src, "f") == "9 6 8 -4\n"     # (a + b - 1) / b * b, a / b * b


# --------------------------------------------------------------------------- atomics

HISTOGRAM = """
    __co__ s32 [16] hist(s32 [256] input) {
      s32 [16] output;
      parallel p by 256 : thread {
        shared s32 [16] counts;
        if (p < 16) counts.at(p) = 0;
        sync.barrier : block;
        __atomic_add(counts.at(input.at(p) % 16), 1);
        sync.barrier : block;
        if (p < 16) output.at(p) = counts.at(p);
      }
      return output;
    }"""


@RUNS
def test_histogram_in_shared_memory():
    data = np.random.default_rng(1).integers(0, 1000, 256).astype(np.int32)
    got = engines.run(compile_src(HISTOGRAM), "hist", data)
    np.testing.assert_array_equal(got, np.bincount(data % 16, minlength=16))


@RUNS
def test_old_values_follow_lane_order():
    """Every lane adds its index to one element: lane i reads the sum of the lanes before
    it, 0 + 1 + ... + (i - 1), one lane after another in lane order (§4.5)."""
    src = """
        __co__ s32 [64] f(global s32 [1] acc) {
          s32 [64] old;
          parallel p by 64 : thread {
            mutable s32 o = __atomic_add(acc.at(0), p);
            old.at(p) = o;
          }
          return old;
        }"""
    acc = np.zeros(1, np.int32)
    got = engines.run(compile_src(src), "f", acc)
    lanes = np.arange(64)
    if engines.interprets(engines._active[-1]):
        np.testing.assert_array_equal(got, lanes * (lanes - 1) // 2)
    else:                       # a device orders the lanes its own way
        assert (got + lanes).max() == lanes.sum()
    assert acc[0] == lanes.sum()


@RUNS
def test_every_operation_and_its_old_value():
    src = """
        __co__ void f() {
          s32 [4] d;
          foreach i in 4
            d.at(i) = i * 10;
          println(__atomic_add(d.at(1), 5), __atomic_sub(d.at(1), 2), d.at(1));
          println(__atomic_max(d.at(0), 99), __atomic_min(d.at(3), 15), d.at(0), d.at(3));
          println(__atomic_exch(d.at(0), 42), __atomic_and(d.at(0), 0xF0), d.at(0));
          println(__atomic_or(d.at(0), 3), __atomic_xor(d.at(0), 0xFF), d.at(0));
          println(__atomic_cas(d.at(2), 20, 7), __atomic_cas(d.at(2), 20, 8), d.at(2));
          f32 [1] s;
          __atomic_add(s.at(0), 0.1f);
          __atomic_add(s.at(0), 0.2f);
          println(s.at(0) == 0.1f + 0.2f);
        }"""
    assert printed(src, "f") == ("10 15 13\n0 30 99 15\n99 42 32\n32 35 220\n20 7 7\n"
                                 "true\n")


def test_static_errors():
    assert errors("__atomic_add(g.at(0));") == [
        "2:1: '__atomic_add' takes 2 arguments but got 1."]
    assert errors("__atomic_sub(h.at(0), 1.0f);") == [
        "2:14: '__atomic_sub' is not available for 'f32' elements."]
    assert errors("parallel p by 4 : thread {\n  local s32 [4] l;\n"
                  "  __atomic_add(l.at(p), 1);\n}") == [
        "4:16: '__atomic_add' on an element of the local buffer 'l': atomics need shared or "
        "global memory."]
    assert errors("int x = 1;\n__atomic_add(x, 1);") == [
        "3:14: the first argument of '__atomic_add' must be an element 'b.at(...)' of a "
        "shared or global buffer."]
    assert errors("f32 v = __sqrt(1.0f, 2.0f);") == ["2:9: '__sqrt' takes 1 argument but got 2."]
    assert errors("bool b = true;\nf32 v = __exp(b);") == [
        "3:15: '__exp' requires numbers but got 'bool'."]
    assert errors("f32 v = __alignup(1.5f, 2);") == [
        "2:9: '__alignup' requires integers but got 'f32' and 's32'."]


@RUNS
def test_alignup_is_a_constant_in_a_shape():
    src = """
        __co__ void f() {
          s32 [__alignup(5, 4), __aligndown(9, 4)] b;
          println(b.span);
        }"""
    assert printed(src, "f") == "[8, 8]\n"


# --------------------------------------------------------------------------- the verifier

def _instruction(code, name):
    from croqvm.bytecode import opcodes as O
    for i in range(0, len(code.code), O.WIDTH):
        if code.code[i] == O.BY_NAME[name].code:
            return i
    raise AssertionError(name)


@pytest.mark.parametrize("name, mutate, message", [
    ("MATH", lambda code, i: code.code.__setitem__(i + 5, 99), "math function 99 out of range"),
    ("MATH", lambda code, i: code.code.__setitem__(i + 5, 25),
     "__isfinite of f32 gives bool, but r"),
    ("ATOMIC", lambda code, i: code.code.__setitem__(i + 5, 1),
     "__atomic_sub on f32 elements; it takes s32, u32"),
])
def test_the_verifier_rejects(name, mutate, message):
    from croqvm.bytecode.verify import verify
    from croqvm.core.errors import BytecodeError
    prog = compile_src("""
        __co__ void f() {
          f32 [2] d;
          println(__sqrt(d.at(0)), __atomic_add(d.at(1), 1.0f));
        }""")
    module = prog.module
    code = module.functions[0].host
    mutate(code, _instruction(code, name))
    with pytest.raises(BytecodeError, match=message):
        verify(module)


# --------------------------------------------------------------------------- select

SELECT = """
    __co__ void f() {
      parallel p by 1 : block {
        shared s32 [4] a, b;
        foreach k in [2] {
          c = select(1, a, b);
          parallel t by 4 : thread
            c.at(t) = t + 10 * k;
        }
        g = dma.copy a => local;
        h = dma.copy b => local;
        f2 = select(0, g, h);
        parallel t by 1 : thread
          println(b.at(3), a.at(3), f2.data.at(0));
      }
    }"""


@RUNS
def test_select_names_the_operand_its_index_chooses():
    """select(1, a, b) is b (an index choice, as the reference's code generation and
    co-mock make it), for buffers and futures."""
    assert printed(SELECT, "f") == "13 0 0\n"


def test_select_errors():
    assert errors("shared s32 [4] a;") == [
        "2:16: shared variable 'a' must be declared inside parallel-by."]
    body = ("parallel p by 1 : block {{\n  shared s32 [4] a;\n  shared s32 [8] b;\n"
            "  foreach k in [2] {{\n    {}\n  }}\n}}")
    assert errors(body.format("c = select(k % 2, a, a);")) == [
        "6:16: the index of 'select' must be an integer constant in croqvm."]
    assert errors(body.format("c = select(0, a, b);")) == [
        "6:22: 'select' chooses among operands of one type: b(s32 [8]) vs. a(s32 [4])."]
    assert errors(body.format("c = select(2, a, a);")) == [
        "6:16: index 2 is out of range for 'select' of 2 operands."]
    assert errors(body.format("println(select(0, a, a));")) == [
        "6:13: 'select' can only name one of its operands: write 'c = select(i, a, b);' and "
        "use 'c'."]
