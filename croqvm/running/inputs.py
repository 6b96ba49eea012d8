"""The inputs and outputs of a run, as the commands take them (LANGUAGE.md §14.1).

Builds a function's arguments from ``--input NAME=FILE`` (``.npy``, ``.npz``),
``--random-inputs`` (croqvm.core.prng) and ``--dim``; writes ``--output`` atomically
(croqvm.core.files). Everything a user can get wrong raises ``ArgumentError`` (exit status
2). ``croqvm run`` and every tool that runs a function (explore, sweep, diff) share it.
"""
from __future__ import annotations

import os

import numpy as np

from ..bytecode.module import ParamKind, ParamStorage
from ..core.dtypes import BY_CODE, ml_dtype
from ..core.errors import ArgumentError
from ..core.files import load_numpy, max_array_bytes, write_atomic
from ..core.limits import MAX_INT
from ..core.prng import SplitMix64, random_array


def parse_assignments(items: list[str], what: str) -> dict[str, str]:
    """``["M=128", "N=64"]`` -> ``{"M": "128", "N": "64"}``; a name given twice is an error."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ArgumentError(f"{what} '{item}' must look like NAME=VALUE")
        if name in out:
            raise ArgumentError(f"{what} {name} is given twice ({name}={out[name]} and "
                                f"{item.strip()})")
        out[name] = value.strip()
    return out


def parse_dims(items: list[str]) -> dict[str, int]:
    dims = {}
    for name, value in parse_assignments(items, "--dim").items():
        try:
            dims[name] = int(value, 0)
        except ValueError:
            raise ArgumentError(f"--dim {name}={value}: the value must be an integer") from None
        if not 1 <= dims[name] <= MAX_INT:
            raise ArgumentError(f"--dim {name}={value}: a dimension is an 'int' from 1 to "
                                f"{MAX_INT}")
    return dims


def load_inputs(items: list[str]) -> dict[str, np.ndarray]:
    """``NAME=FILE.npy``, ``NAME=FILE.npz`` (the array stored as NAME) or
    ``NAME=FILE.npz:KEY``, read into arrays by parameter name."""
    arrays = {}
    for name, spec in parse_assignments(items, "--input").items():
        arrays[name] = _read_input(name, spec)
    return arrays


def _split_spec(spec: str) -> tuple[str, str | None]:
    """``FILE.npz:KEY`` -> (``FILE.npz``, ``KEY``); any other file name -> (name, None)."""
    base, sep, key = spec.rpartition(".npz:")
    if sep and not os.path.exists(spec):
        return base + ".npz", key
    return spec, None


def input_files(items: list[str]) -> list[str]:
    """The files that ``--input`` options name."""
    return [_split_spec(item.partition("=")[2].strip())[0] for item in items]


def _read_input(name: str, spec: str) -> np.ndarray:
    path, key = _split_spec(spec)
    where = f"--input {name}={spec}"
    data = load_numpy(path, where)
    if not isinstance(data, dict):
        if key is not None:
            raise ArgumentError(f"{where}: '{path}' is a single array (.npy), it has no keys")
        return data
    key = name if key is None else key
    if key not in data:
        held = ", ".join(data) or "nothing"
        raise ArgumentError(f"{where}: '{path}' holds no array '{key}' (it holds: {held}); "
                            f"choose one with {name}={path}:KEY")
    return data[key]


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
    if random_inputs:
        _all_dims_known(fn, inputs, known)
    rng = SplitMix64(seed)       # one stream, parameter after parameter (croqvm.core.prng)
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
                else:       # symbolic ones are known (_all_dims_known)
                    raise ArgumentError(f"parameter '{p.name}' has an anonymous dimension "
                                        f"'?'; give it with --input {p.name}=FILE.npy")
            _check_random_size(p, shape)
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


def _check_random_size(p, shape: list) -> None:
    """Random data for parameter ``p`` fits in what this machine can spare (the bound
    input files have, croqvm.core.files.max_array_bytes): checked before any of it is
    made, since memory the system only promised would be taken page by page as the data
    is drawn."""
    size = np.dtype(BY_CODE[p.dtype].numpy_param).itemsize
    for d in shape:
        size *= d
    spare = max_array_bytes()
    if size > spare:
        raise ArgumentError(f"parameter '{p.name}': random data of shape {tuple(shape)} would "
                            f"take {size} bytes, more than the {spare} this machine can "
                            f"spare")


def _all_dims_known(fn, inputs: dict, known: dict) -> None:
    """Every symbolic dimension a random parameter needs has a value: else one error that
    lists all of those missing, in parameter order."""
    missing = []
    for p in fn.params:
        if p.kind == ParamKind.BUFFER and p.name not in inputs:
            missing += [d for d in p.shape if isinstance(d, str) and d != "?"
                        and d not in known and d not in missing]
    if missing:
        names = ", ".join(f"'{d}'" for d in missing)
        given = " ".join(f"--dim {d}=VALUE" for d in missing)
        what = "symbolic dimension" if len(missing) == 1 else "symbolic dimensions"
        raise ArgumentError(f"no value for the {what} {names} of '{fn.name}'; give "
                            f"{'it' if len(missing) == 1 else 'them'} with {given}")


def _input_value(p, arr):
    """A scalar parameter takes the number a 0-d array holds (``np.save(f, 3)``), which
    must be a value of the parameter's type: an integer in its range for an integer type
    (a file is data, not an expression: nothing wraps), a number for a float type (rounded
    once), a bool or 0/1 for bool. numpy saves an ml_dtypes array as raw bytes (dtype
    ``V1``, ``V2``): for a parameter of the narrow float type they encode, the bytes are
    read as that type (LANGUAGE.md §12.1)."""
    if p.kind != ParamKind.SCALAR:
        ml = ml_dtype(BY_CODE[p.dtype])
        if ml is not None and arr.dtype.kind == "V" and arr.dtype.itemsize == ml.itemsize:
            return arr.view(ml)
        return arr
    where = f"--input {p.name}"
    if np.ndim(arr) != 0:
        raise ArgumentError(f"{where}: '{p.name}' is a scalar parameter, but the "
                            f"file holds an array of shape {np.shape(arr)}")
    t = BY_CODE[p.dtype]
    if np.asarray(arr).dtype.kind not in "biuf":
        raise ArgumentError(f"{where}: the file holds a {np.asarray(arr).dtype}, not a number")
    value = arr.item()
    if t.is_float:
        return float(value)
    if isinstance(value, float):
        raise ArgumentError(f"{where}: '{p.name}' is {t.name}, but the file holds the float "
                            f"{value!r}; save an integer array (e.g. np.int64)")
    low, high = (0, 1) if t.kind == "bool" else \
        (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
    if not low <= value <= high:
        raise ArgumentError(f"{where}: {value} is out of range for '{p.name}' ({t.name}: "
                            f"{low} to {high})")
    return bool(value) if t.kind == "bool" else int(value)


def inputs_used(fn, args: list) -> dict[str, np.ndarray]:
    """The arguments as ``--output`` saves them: ``input.NAME`` arrays (a scalar as a 0-d
    array of its parameter's type), copied before the call changes any."""
    return {f"input.{p.name}": np.array(a, copy=True) if p.kind == ParamKind.BUFFER else
            np.asarray(a, dtype=BY_CODE[p.dtype].numpy_param)
            for p, a in zip(fn.params, args) if p.kind != ParamKind.STREAM}


def results_of(fn, args: list, result) -> dict:
    """A call's results by name: its returned value as ``result``, then every ``global``
    buffer parameter (after the call)."""
    results = {} if result is None else {"result": result}
    for p, a in zip(fn.params, args):
        if p.kind == ParamKind.BUFFER and p.storage == ParamStorage.GLOBAL:
            results[p.name] = a
    return results


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically (croqvm.core.files.write_atomic)."""
    write_atomic(path, lambda f: np.savez(f, **arrays))
