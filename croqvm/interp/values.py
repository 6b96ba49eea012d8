"""How the values of each element type cross the API (LANGUAGE.md §14.3.1): what the
caller's arrays receive and what a function returns. The narrow float types go out as
their ml_dtypes array types (dtypes.ML_DTYPES), or as values into a float32 array the
caller gave; a bit-stored type (dtypes.BIT_STORED) keeps its patterns.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.errors import ArgumentError
from ..core.numerics import decode


def copy_back(arr: np.ndarray, data: np.ndarray, t) -> None:
    """A ``global`` buffer parameter's contents into the caller's array (§14.3.3): the
    values, or a bit-stored type's patterns into an ml_dtypes array of the type."""
    if t.name in dtypes.BIT_STORED:
        if arr.dtype == dtypes.ml_dtype(t):
            arr.view(np.uint8)[...] = data
        else:
            arr[...] = decode(data, t)
        return
    arr[...] = data


def scalar_result(v: np.ndarray, t):
    """A returned scalar (a one-element array of ``t``'s storage) as a Python value."""
    if t.name in dtypes.BIT_STORED:
        return float(decode(v, t)[0])
    v = v[0]
    return bool(v) if t.kind == "bool" else float(v) if t.is_float else int(v)


def returned_copy(data: np.ndarray, t, func: str) -> np.ndarray:
    """A copy of the buffer function ``func`` returns, as ``returned`` gives it; a copy
    the memory left can not hold is an ArgumentError naming the result's size."""
    try:
        return returned(np.array(data, copy=True), t)
    except MemoryError:
        raise ArgumentError(f"the result of '{func}', {t.name} {list(data.shape)} "
                            f"({data.nbytes} bytes), does not fit in the memory left to "
                            f"croqvm") from None


def returned(data: np.ndarray, t) -> np.ndarray:
    """A returned buffer as the caller gets it: a narrow float type as its ml_dtypes
    array type (f8_ue4m3 and tf32, which have none, as float32 values)."""
    if t.name in dtypes.BIT_STORED:
        ml = dtypes.ml_dtype(t)
        return data.view(ml) if ml is not None else decode(data, t).astype(np.float32)
    ml = dtypes.ml_dtype(t)
    return data if ml is None else data.astype(ml)     # bf16, fp8: exact
