"""Running one call on two engines and comparing everything it shows (tests/test_native*.py)."""
from __future__ import annotations

import io

import numpy as np

import croqvm


def outcome(module, func, args, dims, engine, **options):
    """Everything a run shows: result, arguments after it, printed text, error, stats."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    out, stats = io.StringIO(), {}
    try:
        result, error = croqvm.Program(module).run(func, *args, engine=engine, out=out,
                                                   stats=stats, **options, **dims), None
    except croqvm.CroqvmError as e:
        result, error = None, (type(e).__name__, str(e))
    return result, args, out.getvalue(), error, stats


def same(a, b) -> bool:
    """Equal values: arrays equal in dtype, shape and bits, except that a NaN equals any
    NaN (NUMERICS.md §12: the sign and payload of a NaN are not specified, and C compilers
    may swap the operands of a commutative operation, which picks the other NaN); -0 and
    +0 differ."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if a.dtype.kind != "f":
            return a.tobytes() == b.tobytes()
        nan = np.isnan(a)
        return bool(np.array_equal(nan, np.isnan(b))
                    and a[~nan].tobytes() == b[~nan].tobytes())
    if isinstance(a, float) and isinstance(b, float):
        return a != a and b != b or np.float64(a).tobytes() == np.float64(b).tobytes()
    return type(a) is type(b) and a == b


def assert_alike(got, ref, what: str) -> None:
    """``got`` (an outcome) shows what ``ref`` shows."""
    assert same(got[0], ref[0]), f"{what}: result"
    assert len(got[1]) == len(ref[1]) and all(same(g, r) for g, r in zip(got[1], ref[1])), \
        f"{what}: arguments"
    assert got[2] == ref[2], f"{what}: printed output"
    assert got[3] == ref[3], f"{what}: error"
    assert got[4] == ref[4], f"{what}: stats"
