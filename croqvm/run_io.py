"""Command-line inputs and outputs of ``croqvm run`` (LANGUAGE.md §14.1).

Builds a function's arguments from ``--input NAME=file.npy``, ``--random-inputs`` and
``--dim``; writes ``--output`` atomically; summarises results. Everything a user can get
wrong raises ``ArgumentError`` (exit status 2).
"""
from __future__ import annotations

import os
import tempfile
import zlib

import numpy as np

from .bytecode.module import ParamKind
from .errors import ArgumentError
from .prng import SplitMix64, random_array


def parse_assignments(items: list[str], what: str) -> dict[str, str]:
    """``["M=128", "N=64"]`` -> ``{"M": "128", "N": "64"}``."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ArgumentError(f"{what} '{item}' must look like NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def parse_dims(items: list[str]) -> dict[str, int]:
    dims = {}
    for name, value in parse_assignments(items, "--dim").items():
        try:
            dims[name] = int(value, 0)
        except ValueError:
            raise ArgumentError(f"--dim {name}={value}: the value must be an integer") from None
        if dims[name] < 1:
            raise ArgumentError(f"--dim {name}={value}: a dimension must be at least 1")
    return dims


def load_inputs(items: list[str]) -> dict[str, np.ndarray]:
    arrays = {}
    for name, path in parse_assignments(items, "--input").items():
        try:
            arrays[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ArgumentError(f"--input {name}={path}: can not read a .npy array ({exc})") from None
    return arrays


def build_args(fn, inputs: dict, dims: dict, random_inputs: bool, seed: int):
    """Arguments for ``fn`` (a bytecode Function) in parameter order, and the dims left."""
    known = dict(dims)
    names = {p.name for p in fn.params}
    for extra in inputs:
        if extra not in names:
            raise ArgumentError(f"--input {extra}: '{fn.name}' has no parameter '{extra}'")
    # Symbolic dimensions bound by given inputs come first, so random ones agree with them.
    for p in fn.params:
        if p.kind == ParamKind.BUFFER and p.name in inputs:
            arr = inputs[p.name]
            for d, ext in zip(p.shape, np.shape(arr)):
                if isinstance(d, str) and d != "?":
                    known.setdefault(d, int(ext))
    rng = SplitMix64(seed)       # one stream, parameter after parameter (croqvm.prng)
    args = []
    for p in fn.params:
        if p.name in inputs:
            args.append(_input_value(p, inputs[p.name]))
        elif not random_inputs:
            raise ArgumentError(f"parameter '{p.name}' of '{fn.name}' needs a value: "
                                f"pass --input {p.name}=FILE.npy or --random-inputs")
        elif p.kind == ParamKind.BUFFER:
            shape = []
            for d in p.shape:
                if isinstance(d, int):
                    shape.append(d)
                elif d in known:
                    shape.append(known[d])
                else:
                    what = "an anonymous dimension '?'" if d == "?" else f"symbolic dimension '{d}'"
                    hint = f"--input {p.name}=FILE.npy" if d == "?" else f"--dim {d}=VALUE"
                    raise ArgumentError(f"parameter '{p.name}' has {what}; give it with {hint}")
            try:
                args.append(random_array(rng, p.dtype, tuple(shape)))
            except (MemoryError, ValueError):
                raise ArgumentError(f"parameter '{p.name}': can not make random data of "
                                    f"shape {tuple(shape)}") from None
        elif p.kind == ParamKind.SCALAR:
            args.append(random_array(rng, p.dtype, ()).item())
        else:
            args.append(None)
    return args, {k: v for k, v in dims.items()}


def _input_value(p, arr):
    """A scalar parameter takes the number a 0-d array holds (``np.save(f, 3)``)."""
    if p.kind != ParamKind.SCALAR:
        return arr
    if np.ndim(arr) != 0:
        raise ArgumentError(f"--input {p.name}: '{p.name}' is a scalar parameter, but the "
                            f"file holds an array of shape {np.shape(arr)}")
    return arr.item()


def checksum(arr: np.ndarray) -> str:
    data = np.ascontiguousarray(arr)
    return f"crc32 {zlib.crc32(data.tobytes()) & 0xFFFFFFFF:08x}"


def describe(name: str, value) -> str:
    if isinstance(value, np.ndarray):
        shape = "x".join(str(d) for d in value.shape) or "scalar"
        return f"{name}: {value.dtype} [{shape}] {checksum(value)}"
    return f"{name}: {value!r}"


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically: a temporary file then a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".croqvm-", suffix=".npz", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
