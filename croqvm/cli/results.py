"""Results of ``croqvm run`` a user can check: a summary line per array and the
comparison with a reference file (``--expect``).

The summary shows what a checksum hides -- the range, the mean and how many elements are
NaN or infinite -- so that an all-inf output does not look like any other. A comparison
treats NaN as equal to NaN (a kernel that must produce NaN can be checked) and floats as
close under ``|got - expected| <= atol + rtol * |expected|`` (numpy's ``isclose``);
integers and bools must be equal unless a tolerance is given.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..core.errors import ArgumentError
from ..core.files import load_numpy

SHOWN_DIFFERENCES = 10


def checksum(arr: np.ndarray) -> str:
    data = np.ascontiguousarray(arr)
    return f"crc32 {zlib.crc32(data.tobytes()) & 0xFFFFFFFF:08x}"


def _number(x) -> str:
    """A summary value: integers exactly, floats in 6 significant digits."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x)).lower()
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.6g}"


def _statistics(value: np.ndarray) -> str:
    if value.size == 0:
        return "empty"
    if value.dtype == np.bool_:
        return f"{int(np.count_nonzero(value))} true"
    if value.dtype.kind in "iu":
        return (f"min {_number(value.min())} max {_number(value.max())} "
                f"mean {_number(value.mean(dtype=np.float64))}")
    data = value.astype(np.float64)
    nan = np.isnan(data)
    inf = np.isinf(data)
    finite = data[~nan & ~inf]
    parts = []
    if finite.size:
        parts.append(f"min {_number(finite.min())} max {_number(finite.max())} "
                     f"mean {_number(finite.mean())}")
    counts = [(int(nan.sum()), "NaN"), (int((inf & (data > 0)).sum()), "+inf"),
              (int((inf & (data < 0)).sum()), "-inf")]
    parts += [f"{n} {what}" for n, what in counts if n]
    return ", ".join(parts)


def describe(name: str, value) -> str:
    """``c: float32 [64x64] min -3.2 max 4.1 mean 0.013, 2 NaN, crc32 1a2b3c4d``: the
    min/max/mean are over the finite elements; NaN and infinities are counted apart."""
    if isinstance(value, np.ndarray):
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        return f"{name}: {value.dtype} [{shape}] {_statistics(value)}, {checksum(value)}"
    return f"{name}: {value!r}"


def read_expected(path: str):
    """The arrays of an ``--expect`` file, read before the run so that a damaged one is
    refused before any work: see ``compare``."""
    return load_numpy(path, f"--expect {path}")


def compare(results: dict, inputs: dict, expected_path: str, expected, rtol: float | None,
            atol: float | None) -> list[str]:
    """Compare ``results`` with ``expected``, the arrays ``read_expected`` read from
    ``expected_path`` (an .npz, or a .npy for a run with one result); return the report of
    every mismatch (empty: all agree). The reference's ``input.NAME`` arrays (an earlier
    ``--output`` file) are compared with ``inputs``, the values this run used."""
    reference = _read_reference(expected, expected_path, list(results), list(inputs))
    report = []
    for key, want in reference.items():
        got = np.asarray(results[key] if key in results else inputs[key])
        if got.shape != want.shape:
            report.append(f"'{key}': shape {list(got.shape)}, expected {list(want.shape)}")
            continue
        report += _differences(key, got, want, rtol, atol)
    return report


def _read_reference(data, path: str, produced: list[str], used: list[str]) -> dict:
    if not isinstance(data, dict):
        if len(produced) != 1:
            raise ArgumentError(f"--expect {path}: a .npy file holds one array, but this run "
                                f"produces {len(produced)} ({', '.join(produced) or 'none'}); "
                                f"give an .npz with one array per result")
        return {produced[0]: data}
    extra = [k for k in data if k not in produced and k not in used]
    if extra:
        raise ArgumentError(f"--expect {path}: this run produces no '{extra[0]}' (it "
                            f"produces: {', '.join(produced) or 'nothing'})")
    if not data:
        raise ArgumentError(f"--expect {path}: the file holds no array")
    # inputs first: when they differ, that explains the other differences
    return {k: data[k] for k in sorted(data, key=lambda k: k not in used)}


def _differences(key: str, got: np.ndarray, want: np.ndarray, rtol, atol) -> list[str]:
    exact = rtol is None and atol is None and got.dtype.kind in "biu" and want.dtype.kind in "biu"
    if exact:
        same = got == want
        tolerance = "exactly"
    else:
        rtol = 1e-5 if rtol is None else rtol
        atol = 1e-8 if atol is None else atol
        same = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                          atol=atol, equal_nan=True)
        tolerance = f"rtol {rtol:g}, atol {atol:g}"
    bad = np.argwhere(~same)
    if bad.size == 0:
        return []
    lines = [f"'{key}': {len(bad)} of {got.size} elements differ ({tolerance}); "
             f"the first {min(len(bad), SHOWN_DIFFERENCES)}:"]
    for index in bad[:SHOWN_DIFFERENCES]:
        at = tuple(int(i) for i in index)
        lines.append(f"  {key}{list(at)}: got {str(got[at])}, expected {str(want[at])}")
    return lines
