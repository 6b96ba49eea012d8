"""The catalogue of programs/: each program, how to call it, and what it must produce.

``PROGRAMS`` lists every ``.co`` file here (tests/test_programs.py checks that none is
missing). An entry is one of:

- a kernel called with arguments: ``func``, ``params``, ``make_args`` and ``reference``;
- a parameterless demo: ``func`` is None, every parameterless function of the file runs in
  file order (as ``croqvm run FILE`` does, LANGUAGE.md §14.1) and the output must equal
  ``expected_stdout``;
- a broken program (``broken/``): ``stage`` says whether the error is static or a runtime
  error, ``error`` what it says and where, and ``check`` the run-time check that finds a
  runtime error the plain run does not (``croqvm run --check``).

References are computed with numpy from the inputs alone, in the precision §12 prescribes
(s32 arithmetic wraps, every f32 operation rounds to f32), and never from croqvm output.
Expected output was derived by hand from §13 and the comments in each program.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Expect:
    """A diagnostic: ``message`` reported at ``line``:``col``, where the source reads
    ``at``; ``also`` lists further text the report must contain (context lines, hints), with
    ``{file}`` standing for the file name as it was given to the compiler."""
    message: str
    line: int
    col: int
    at: str
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One program of the collection (or one set of ``-D`` defines of it)."""
    file: str                             # relative to programs/
    func: str | None = None               # None: run the parameterless functions for output
    params: tuple[str, ...] = ()          # parameter names of ``func``, in order
    defines: dict = field(default_factory=dict)
    make_args: Callable | None = None     # (rng, scale) -> (args, dims); scale "test"/"bench"
    reference: Callable | None = None     # inputs -> {"return" or parameter name: expected}
    tolerance: Callable | None = None     # inputs -> absolute error bound; None means exact
    expected_stdout: str | None = None
    warnings: tuple[Expect, ...] = ()     # warnings a valid program must produce, in order
    stage: str | None = None              # broken programs: "static" or "runtime"
    error: Expect | None = None
    check: str | None = None              # the check that finds the runtime error, if any

    @property
    def path(self) -> Path:
        return HERE / self.file

    @property
    def id(self) -> str:
        flags = ",".join(f"{k}={v}" for k, v in self.defines.items())
        return f"{self.file}[{flags}]" if flags else self.file


# --------------------------------------------------------------------------- inputs

def _f32(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def _f16(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float16)


def _s32(rng, *shape, bits=31):
    return rng.integers(-2 ** bits, 2 ** bits, size=shape, dtype=np.int64).astype(np.int32)


def _sized(sizes, build):
    """``make_args`` from per-scale sizes: ``build(rng, *sizes[scale])``."""
    return lambda rng, scale: build(rng, *sizes[scale])


def _vector_args(rng, n):
    # c starts with garbage: the kernel must overwrite every element.
    return [_f32(rng, n), _f32(rng, n), _f32(rng, n)], {"N": n}


def _add_2d_args(rng, m, n):
    # Full-range s32 values, so about half the sums wrap around (§12.3.1).
    return [_s32(rng, m, n), _s32(rng, m, n)], {"M": m, "N": n}


def _matrix_f32_args(rng, m, n):
    # c starts with garbage: the kernel must overwrite every element.
    return [_f32(rng, m, n), _f32(rng, m, n), _f32(rng, m, n)], {"M": m, "N": n}


def _ring_args(rng, n):
    # 16-bit magnitudes; more rows than slots, so every slot is reused.
    return [_s32(rng, n, 32, bits=15)], {"N": n}


def _matmul_s32_args(rng, m, k, n):
    # 16-bit magnitudes: products fit in s32 but sums of a few of them wrap.
    return [_s32(rng, m, k, bits=15), _s32(rng, k, n, bits=15)], {"M": m, "K": k, "N": n}


def _matmul_f32_args(rng, m, k, n):
    return [_f32(rng, m, k), _f32(rng, k, n)], {"M": m, "K": k, "N": n}


def _gemm_nt_args(rng, m, n, k):
    """a [M, K], b [N, K] in f16 for c = a @ b^T; c starts as NaN: every element must be
    stored."""
    c = np.full((m, n), np.nan, np.float32)
    return [_f16(rng, m, k), _f16(rng, n, k), c], {"M": m, "N": n, "K": k}


def _gemm_nn_args(rng, m, n, k):
    """a [M, K], b [K, N] in f16 for c = a @ b."""
    c = np.full((m, n), np.nan, np.float32)
    return [_f16(rng, m, k), _f16(rng, k, n), c], {"M": m, "N": n, "K": k}


def _vector_s32_args(rng, n):
    return [_s32(rng, n, bits=15)], {"N": n}


def _scale_args(rng, m, n):
    return [_f32(rng, m, n), float(rng.uniform(-2.0, 2.0))], {"M": m, "N": n}


def _tile_args(rng):
    return [_f16(rng, 64, 16), _f16(rng, 64, 16), np.zeros((64, 64), np.float32)], {}


def _skeleton_args(rng):
    """lhs [M, K], rhs [N, K] and output [M, N] in f16, M = N = 128, K = 256."""
    return [_f16(rng, 128, 256), _f16(rng, 128, 256), np.zeros((128, 128), np.float16)], \
        {"M": 128, "N": 128, "K": 256}


# --------------------------------------------------------------------------- references

def _wrap32(x):
    """An exact int64 result taken modulo 2^32 as s32: what s32 arithmetic gives (§12.3.1)."""
    return x.astype(np.int64).astype(np.int32)


def _matmul_s32(x):
    # |sums| < 2^63, so the int64 product is exact; s32 wraps each step, which is the same
    # value modulo 2^32.
    return {"return": _wrap32(x[0].astype(np.int64) @ x[1].astype(np.int64))}


def _ring(x):
    return {"return": x[0] * 3 + np.arange(len(x[0]), dtype=np.int32)[:, None]}


def _matmul_f32_in_k_order(x):
    """c += a[:, k] * b[k, :] for k ascending, each product and sum rounded to f32 (§12.3.2).

    numpy's float32 multiply and add are single correctly rounded IEEE operations, so this
    is the exact result croqvm must produce, bit for bit.
    """
    a, b = x
    c = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        c = c + np.outer(a[:, k], b[k, :])
    return {"return": c}


def _gemm_exact(a, b_kn):
    """a @ b_kn in f64: exact for f16 inputs up to rounding far below the f32 bound."""
    return a.astype(np.float64) @ b_kn.astype(np.float64)


def _gemm_bound(a, b_kn):
    """How far an f32-accumulated product of f16 matrices may lie from the exact sum.

    The inputs are f16 values and the reference uses those very values (exactly widened
    to f64), so rounding the inputs contributes nothing. A product of two f16 values has
    at most 22 significant bits, exact in f32 (and §12.4 forms it exactly anyway); each of
    the K accumulation steps rounds to f32 with relative error at most u = 2^-24; the
    zero-filled padding beyond K adds exact zeros. For recursive summation this gives
    |c - exact| <= gamma_K * sum_k |a[m, k] b[k, n]|, gamma_K = K u / (1 - K u) (Higham,
    Accuracy and Stability of Numerical Algorithms, §3.1). The f64 reference itself is off
    by at most the same bound with u = 2^-53, which is added.
    """
    a, b_kn = np.abs(a.astype(np.float64)), np.abs(b_kn.astype(np.float64))
    k = a.shape[1]
    gamma = sum(k * u / (1 - k * u) for u in (2.0 ** -24, 2.0 ** -53))
    return gamma * (a @ b_kn)


def _sum_squares(x):
    # Squares below 2^30 and int64 sums are exact; s32 wraps each step, the same modulo 2^32.
    return {"return": int(_wrap32(np.sum(x[0].astype(np.int64) ** 2)))}


def _scaled(x):
    # The f32 parameter alpha is the argument rounded to f32 (§14.3.1); one f32 multiply.
    return {"x": x[0] * np.float32(x[1])}


# --------------------------------------------------------------------------- printed output

HELLO = """\
hello from croqvm
ints: 42 -7 2147483647 3000000000 4294967295 -56
floats: 1.5 0.1 0.333333 100000 1e+06 0.0001 1e-05
f64: 0.1 0.666667 1.23457e+08 0.000976562
special: inf -inf -0
narrow: 0.0999756 0.100098 0.199951
bools: true false false true
ituple: {3, 4, 5} second element 4
mdspan: [4, 8] dim 1 8 elements 32
no newline, then one
i = 0 of 3
i = 1 of 3
i = 2 of 3
block 0 thread 0 global 0
block 0 thread 1 global 1
block 0 thread 2 global 2
block 1 thread 0 global 3
block 1 thread 1 global 4
block 1 thread 2 global 5
"""

LOOPS = """\
sum of 0..9: 45
t = 2
t = 5
after the loop t = 0
odd numbers up to 9 add up to 25
collatz steps of 1..8: 0 1 7 2 5 8 16 3
after yield: 5 5 0 0
"""

PRECEDENCE = """\
7 + 3 & 1 = 8
(7 + 3) & 1 = 0
6 & 3 == 2 is true
-3 & 1 = 1
1 << 2 + 1 = 8
~0 = -1 and 5 ^ 4 = 1
p # q + 1 = 6
"""

VIEWS = """\
chunk 0 0 from 0 to 12
chunk 0 1 from 3 to 15
chunk 1 0 from 20 to 32
chunk 1 1 from 23 to 35
stepped: 23 24 33 34
view: [3, 2] 14 35
transposed: 35 10
padded: 9 1 9 2 9 3 9 9
zfill: 34 35 0 0
plain: 34 35 7 7
row sums: 15 75 135 195
"""

# Appendix A.7: then-lanes, else-lanes, then all lanes after reconvergence.
DIVERGENCE = "".join(
    [f"even {t}\n" for t in (0, 2, 4, 6)] + [f"odd {t}\n" for t in (1, 3, 5, 7)]
    + [f"join {t}\n" for t in range(8)] + ["0 -1 20 -3 40 -5 60 -7\n"])


def _precedence_warning(op: str, line: int, col: int, at: str) -> Expect:
    return Expect(f"'&' binds tighter than '{op}' in Croqtile (unlike C); add parentheses.",
                  line, col, at)


# --------------------------------------------------------------------------- the catalogue

_GEMM_PARAMS = ("a", "b", "c")


def _attention_args(rng, length):
    """q, k, v in [0.1, 1) so that every causal row of scores has a positive sum; o starts
    as NaN: every element must be stored."""
    q, k, v = (rng.uniform(0.1, 1, (length, 16)).astype(np.float16) for _ in range(3))
    return [q, k, v, np.full((length, 16), np.nan, np.float32)], {"L": length}


def _attention_parts(x):
    """The causal scores (exact, f64), the f16 weights and the row sums."""
    q, k = (a.astype(np.float64) for a in x[:2])
    s = np.tril(q @ k.T)
    return s, s.astype(np.float16).astype(np.float64), s.sum(1, keepdims=True)


def _attention(x):
    _, p, total = _attention_parts(x)
    return {"o": (p @ x[2].astype(np.float64)) / total}


def _attention_bound(x):
    """The scores are f32 sums of 16 exact f16 products (relative error <= 16 u32); each
    weight rounds once more to f16 (half an ulp, 2^-11, and at most one ulp apart from the
    reference's rounding of the exact score); the output sums and the row totals are f32
    (relative error <= L u32 each). So |o - ref| <= (2^-10 + 2 (16 + L) 2^-24) times
    (|p| |v|)[i] / total[i], plus the f64 reference's own error."""
    _, p, total = _attention_parts(x)
    length = x[0].shape[0]
    scale = (np.abs(p) @ np.abs(x[2].astype(np.float64))) / total
    return (2.0 ** -10 + 2 * (16 + length) * 2.0 ** -24) * scale + 1e-12

VALID = [
    Entry("add_1d.co", "add_1d", ("a", "b", "c"),
          make_args=_sized({"test": (100,), "bench": (100_003,)}, _vector_args),
          reference=lambda x: {"c": x[0] + x[1]}),          # one f32 add, as numpy's
    Entry("add_2d_tiled.co", "add_2d", ("a", "b"),
          make_args=_sized({"test": (24, 48), "bench": (256, 512)}, _add_2d_args),
          reference=lambda x: {"return": _wrap32(x[0].astype(np.int64) + x[1])}),
    # both dimensions ragged: 20 = 2 * 8 + 4 rows, 40 = 2 * 16 + 8 columns
    Entry("add_2d_ragged.co", "add_2d", ("a", "b", "c"),
          make_args=_sized({"test": (20, 40), "bench": (250, 500)}, _matrix_f32_args),
          reference=lambda x: {"c": x[0] + x[1]}),          # one f32 add, as numpy's
    Entry("matmul_scalar.co", "matmul", ("a", "b"),
          make_args=_sized({"test": (16, 20, 24), "bench": (128, 256, 256)}, _matmul_s32_args),
          reference=_matmul_s32),
    Entry("matmul_dma.co", "matmul", ("a", "b"),
          make_args=_sized({"test": (16, 48, 32), "bench": (128, 256, 256)}, _matmul_s32_args),
          reference=_matmul_s32),
    Entry("matmul_dma.co", "matmul", ("a", "b"), defines={"TM": "8", "TN": "32", "TK": "8"},
          make_args=_sized({"test": (16, 24, 32), "bench": (128, 256, 256)}, _matmul_s32_args),
          reference=_matmul_s32),
    Entry("matmul_double_buffer.co", "matmul_db", ("a", "b"),
          make_args=_sized({"test": (16, 48, 32), "bench": (128, 256, 256)}, _matmul_f32_args),
          reference=_matmul_f32_in_k_order),
    Entry("matmul_triple_buffer.co", "matmul_tb", ("a", "b"),
          make_args=_sized({"test": (16, 80, 32), "bench": (128, 256, 256)}, _matmul_f32_args),
          reference=_matmul_f32_in_k_order),
    Entry("matmul_1p1c.co", "gemm_ws", _GEMM_PARAMS,
          make_args=_sized({"test": (80, 64, 160), "bench": (256, 256, 256)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("matmul_1p1c.co", "gemm_ws", _GEMM_PARAMS, defines={"STAGES": "4"},
          make_args=_sized({"test": (64, 72, 320), "bench": (256, 256, 512)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("matmul_1p1c_async.co", "gemm_async", _GEMM_PARAMS,
          make_args=_sized({"test": (100, 72, 256), "bench": (256, 256, 512)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("matmul_overlap.co", "gemm_overlap", _GEMM_PARAMS,
          make_args=_sized({"test": (100, 72, 384), "bench": (256, 256, 512)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("matmul_mma_warp.co", "gemm_warps", _GEMM_PARAMS,
          make_args=_sized({"test": (64, 32, 48), "bench": (256, 256, 256)}, _gemm_nn_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1])},
          tolerance=lambda x: _gemm_bound(x[0], x[1])),
    Entry("matmul_wgmma_async.co", "gemm_async", _GEMM_PARAMS,
          make_args=_sized({"test": (100, 72, 128), "bench": (256, 256, 512)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("attention_rows.co", "attention", ("q", "k", "v", "o"),
          make_args=_sized({"test": (128,), "bench": (512,)}, _attention_args),
          reference=_attention, tolerance=_attention_bound),
    Entry("matmul_tma.co", "gemm_tma", _GEMM_PARAMS,
          make_args=_sized({"test": (64, 128, 192), "bench": (256, 256, 512)}, _gemm_nt_args),
          reference=lambda x: {"c": _gemm_exact(x[0], x[1].T)},
          tolerance=lambda x: _gemm_bound(x[0], x[1].T)),
    Entry("reduce_sum.co", "sum_squares", ("x",),
          make_args=_sized({"test": (200,), "bench": (100_003,)}, _vector_s32_args),
          reference=_sum_squares),
    Entry("persistent_scale.co", "scale_tiles", ("x", "alpha"),
          make_args=_sized({"test": (40, 24), "bench": (250, 300)}, _scale_args),
          reference=_scaled),
    Entry("divergence.co", expected_stdout=DIVERGENCE),
    Entry("pipeline_events.co", expected_stdout="49\n49\n"),
    Entry("pipeline_ring.co", "ring", ("input",),
          make_args=_sized({"test": (7,), "bench": (64,)}, _ring_args), reference=_ring),
    Entry("pipeline_ring.co", "ring", ("input",), defines={"STAGES": "3"},
          make_args=_sized({"test": (10,), "bench": (64,)}, _ring_args), reference=_ring),
    Entry("async_launch.co", expected_stdout="0 126\n2 3\n"),
    Entry("hello.co", expected_stdout=HELLO),
    Entry("loops.co", expected_stdout=LOOPS),
    Entry("precedence.co", expected_stdout=PRECEDENCE,
          warnings=(_precedence_warning("+", 11, 26, "7 + 3 & 1"),
                    _precedence_warning("==", 13, 28, "6 & 3 == 2"))),
    Entry("views.co", expected_stdout=VIEWS),
]

RUNTIME_BROKEN = [
    # The report of Appendix A.8, line for line.
    Entry("broken/missing_bootstrap.co", stage="runtime", error=Expect(
        "deadlock: every live lane of block (0) is blocked", 20, 11, "wait empty[k % STAGES];",
        also=("\n   20 |           wait empty[k % STAGES];\n"
              "      |           ^~~~~~~~~~~~~~~~~~~~~~\n",
              "\n  warps 0-3 (lanes 0-127): {file}:20:11 'wait empty[k % STAGES]': slot "
              "empty[0]: completed generations 0, arrivals 0/128; these lanes wait for "
              "generation 0\n",
              "\n  warps 4-7 (lanes 128-255): {file}:27:11 'wait full[k % STAGES]': slot "
              "full[0]: completed generations 0, arrivals 0/128; these lanes wait for "
              "generation 0\n",
              "\n  in kernel launched at {file}:14:3\n",
              "\nhint: no lane has triggered 'empty[0]' yet; a credit-based pipeline needs "
              "initial credits: trigger every slot once before the loop, or declare the event "
              "'= ready'."))),
    Entry("broken/missing_wait.co", "matmul_db", ("a", "b"), stage="runtime",
          make_args=lambda rng, scale: _matmul_f32_args(rng, 16, 32, 16),
          error=Expect("future 'cur_a' is not waited before using.", 34, 9, "c.at(bm # tm",
                       also=("\n  in kernel launched at {file}:17:3, block (0, 0), lane 0 "
                             "(warp 0, lane 0)",))),
    Entry("broken/double_wait.co", "matmul_db", ("a", "b"), stage="runtime",
          make_args=lambda rng, scale: _matmul_f32_args(rng, 16, 48, 16),
          error=Expect("future 'cur_a' has been waited multiple times.", 26, 9,
                       "wait cur_a, cur_b;",
                       also=("\n  in kernel launched at {file}:16:3, block (0, 0), lane 0 "
                             "(warp 0, lane 0)",))),
    Entry("broken/oob_element.co", "scale_1d", ("x", "alpha"), stage="runtime",
          make_args=lambda rng, scale: ([_f32(rng, 100), 2.0], {"N": 100}),
          error=Expect("out-of-range access x.at(100): index 100 of dimension 0 is not in "
                       "[0, 100).", 15, 5, "x.at(i) = x.at(i) * alpha;",
                       also=("\n  in kernel launched at {file}:13:3, block (3), lane 4 "
                             "(warp 0, lane 4)",))),
    Entry("broken/ragged_edge.co", "add_2d", ("a", "b", "c"), stage="runtime",
          make_args=lambda rng, scale: _matrix_f32_args(rng, 20, 16),
          error=Expect("out-of-range access a.at(20, 0): index 20 of dimension 0 is not in "
                       "[0, 20).", 21, 7, "c.at(i, j) = a.at(i, j) + b.at(i, j);",
                       also=("\n  in kernel launched at {file}:17:3, block (2, 0), lane 64 "
                             "(warp 2, lane 0)",))),
    Entry("broken/oob_tile.co", "matmul", ("a", "b"), stage="runtime",
          make_args=lambda rng, scale: _matmul_s32_args(rng, 16, 32, 64),
          error=Expect("tile of 'a' at origin (0, 32) lies outside [16, 32].", 19, 7,
                       "ta = dma.copy",
                       also=("\n  in kernel launched at {file}:17:3, block (0, 0)",))),
    # Every thread writes the one global 'window' (§3.2.3); lanes 0-7 are one warp.
    Entry("broken/unqualified_in_parallel.co", "prefix3", ("a",), stage="runtime",
          check="race", make_args=lambda rng, scale: _vector_s32_args(rng, 8),
          error=Expect("data race on global 'window' element (0): written here by several "
                       "lanes of one warp; the lanes of a warp are not ordered within one "
                       "instruction.", 15, 7, "window.at(j) = a.at(__max(t - j, 0));",
                       also=("\n  written in block (0), warp 0 (lanes 0-7)\n  in kernel "
                             "launched at {file}:12:3",))),
    # Warps 0-2 wait at the collective; warp 3 arrives with lanes 112-127 masked off.
    # The tutorial's racy skeleton: the first of the two races (lhs; rhs is the same).
    Entry("broken/racy_1p1c.co", "matmul", ("lhs", "rhs", "output"), stage="runtime",
          check="race", make_args=lambda rng, scale: _skeleton_args(rng),
          error=Expect("data race on shared 'lhs_load_s' element (0, 0): read by 'mma.load' "
                       "here, written by 'dma.copy' at {file}:28:11; no barrier or event "
                       "orders them.", 37, 13, "ma = mma.load lhs_load_s",
                       also=("\n  read by 'mma.load' in block (0, 0), warps 4-7 (lanes "
                             "128-255)\n  in kernel launched at {file}:19:3\n{file}:28:11: "
                             "note: written by 'dma.copy' in block (0, 0), warps 0-3 (lanes "
                             "0-127)\n",
                             "\n{file}:38:13: runtime error: data race on shared "
                             "'rhs_load_s' element (0, 0): read by 'mma.load' here, written "
                             "by 'dma.copy' at {file}:29:11; no barrier or event orders "
                             "them.\n"))),
    Entry("broken/mma_divergent.co", "gemm_tile", _GEMM_PARAMS, stage="runtime",
          make_args=lambda rng, scale: _tile_args(rng),
          error=Expect("mma.row.row needs all 128 lanes of warpgroup 0, but lanes 112-127 are "
                       "not active here.", 23, 9, "mma.row.row acc, fa, fb;",
                       also=("\n  in kernel launched at {file}:13:3, block (0), lane 96 "
                             "(warp 3, lane 0)",))),
    Entry("broken/mma_before_wait.co", "gemm_tile", _GEMM_PARAMS, stage="runtime",
          make_args=lambda rng, scale: _tile_args(rng),
          error=Expect("accumulator 'acc' is used before the wait of its asynchronous mma.",
                       19, 7, "mma.store acc, c;",
                       also=("\n  in kernel launched at {file}:12:3, block (0), lane 0 "
                             "(warp 0, lane 0)",))),
]

STATIC_BROKEN = [
    Entry("broken/thread_dependent_dma.co", stage="static", error=Expect(
        "dma.copy into shared memory is executed once per block, but its source depends on "
        "thread index 'r': every thread would overwrite the same shared buffer.", 15, 5,
        "row = dma.copy",
        also=("hint: copy into 'local' memory (=> local) to give each thread its own tile, "
              "or index the tile with block-level variables.",))),
    Entry("broken/shared_at_host.co", stage="static", error=Expect(
        "shared variable 'staging' must be declared inside parallel-by.", 10, 19,
        "staging;")),
    Entry("broken/never_waited.co", stage="static", error=Expect(
        "some asyncs are not explicitly waited: tile.", 11, 5, "tile = dma.copy.async")),
    Entry("broken/wait_sync_future.co", stage="static", error=Expect(
        "non-async future 'tile' can not be waited.", 12, 10, "tile;")),
    Entry("broken/event_never_triggered.co", stage="static", error=Expect(
        "event 'full' is waited but never triggered.", 26, 11, "wait full[k % STAGES];")),
    Entry("broken/inthreads_not_divergent.co", stage="static", error=Expect(
        "inthreads' predicate must be strictly divergent.", 13, 16, "t % 2 == 0")),
    Entry("broken/mma_shape_mismatch.co", stage="static", error=Expect(
        "MMA: matrix shapes do not match: `fa'([64, 16]) v.s. `fb'([64, 8]).", 18, 7,
        "mma.row.row acc, fa, fb;")),
]

PROGRAMS = VALID + RUNTIME_BROKEN + STATIC_BROKEN
