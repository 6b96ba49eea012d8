"""How far a GPU's float results may be from the interpreter's (docs/CUDA.md,
"Tolerances").

The generated code rounds every scalar operation as the engines do (``-fmad=false``), so
the differences come from two places: the math functions (CUDA's f64 functions against the
C library's, rounded once into the result's type: within 2 ulps of it) and the tensor cores, which accumulate an MMA's
products in an order of their own and truncate rather than round (an FP8 wgmma keeps about
14 bits of its sum). An accumulation of K products then errs by up to K units of the
accumulator's precision, relative to the sum of the magnitudes, which is where the
absolute part of the bound comes from.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes

MATH_ULPS = 2                     # CUDA's f64 functions rounded once (NUMERICS.md §12a)
ACCUMULATOR_UNIT = 2.0 ** -23     # a truncating f32 accumulation: one ulp per addition
FP8_ACCUMULATOR_UNIT = 2.0 ** -13  # an FP8 wgmma's ~14-bit accumulation
FP8 = ("f8_e4m3", "f8_e5m2")


def unit_roundoff(dtype: np.dtype) -> float:
    """Half the distance from 1.0 to the next value of a float type (ml_dtypes' too)."""
    try:
        import ml_dtypes
        return float(ml_dtypes.finfo(dtype).eps) / 2
    except (ImportError, ValueError, TypeError):
        return float(np.finfo(dtype).eps) / 2


def accumulation(module) -> float | None:
    """The accumulator unit of the module's MMAs (None: it has none): the FP8 one when
    any MMA takes FP8 operands."""
    operands = [dtypes.BY_CODE[f.dtype].name
                for fn in module.functions for k in fn.kernels for f in k.code.frags]
    if not operands:
        return None
    if any(name in FP8 for name in operands):
        return FP8_ACCUMULATOR_UNIT
    return ACCUMULATOR_UNIT


def result_types(module, func: str) -> dict:
    """Result name (a parameter's, or "return") -> its element type, for ``func`` (a
    stream parameter has none)."""
    fn = next(f for f in module.functions if f.name == func)
    types = {p.name: dtypes.BY_CODE[p.dtype] for p in fn.params if p.dtype >= 0}
    if fn.ret_dtype is not None and fn.ret_dtype >= 0:
        types["return"] = dtypes.BY_CODE[fn.ret_dtype]
    return types


def gpu_tolerance(module, inputs, want: np.ndarray, elem: dtypes.DType | None = None
                  ) -> tuple[float, float]:
    """(rtol, atol) for a float result ``want`` of a run on a GPU, whose element type is
    ``elem`` (default: its array's): a bf16 or narrower float result is held in a float32
    array, but a difference in the last bit of its sum moves it by a unit of its own
    precision. K, the length of an accumulation, is bounded by the largest extent of any
    input array."""
    narrow = elem is not None and dtypes.ml_dtype(elem)
    rtol = MATH_ULPS * 2 * unit_roundoff(narrow if narrow else want.dtype)
    unit = accumulation(module)
    if unit is None:
        return rtol, 0.0
    k = max((max(a.shape, default=1) for a in inputs if isinstance(a, np.ndarray)), default=1)
    finite = np.abs(want[np.isfinite(want)].astype(np.float64))
    scale = float(finite.max()) if finite.size else 0.0
    return rtol + k * unit, k * unit * scale
