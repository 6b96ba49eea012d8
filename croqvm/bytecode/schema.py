"""The module model as plain data: the shape of a ``.cqb`` payload (ARCHITECTURE.md "The bytecode").

The schema is read off the type annotations of ``croqvm.bytecode.module``, so the model
stays the one source of truth: a dataclass becomes a list of its field values in field
order, ``list[T]`` a list, ``tuple[A, B]`` a fixed-length list, and ``int``/``bool``/``str``
themselves. Two annotations need words of their own: a constant's value (``object``: a
bool, int, float or str; ints beyond msgpack's 64 bits travel as ``["bigint", decimal]``)
and a parameter's shape (bare ``list``: ints, symbolic names and ``"?"``).

``to_plain`` checks every value's Python type on the way out (so the verifier can trust
types) and ``from_plain`` checks the decoded data on the way in; both name the offending
place as a path such as ``functions[0].kernels[1].code.buffers[3].dtype``.

Conventions: ``spec`` is a type annotation; ``path`` the dotted location of a value.
"""
from __future__ import annotations

import dataclasses
import functools
import typing

from croqvm.errors import BytecodeError

from . import module as M

# msgpack integers span [-2**63, 2**64); wider constants are spelled in decimal.
_MSGPACK_INT = (-(1 << 63), 1 << 64)
_BIGINT_TAG = "bigint"
_MAX_BIGINT_DIGITS = 4000   # below CPython's int/str conversion limit (4300 digits)


def _fail(path: str, message: str):
    raise BytecodeError(f"malformed .cqb: {path}: {message}")


def _what(value) -> str:
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    return type(value).__name__


@functools.cache
def _fields(cls) -> tuple:
    """(name, annotation) for each field of a model dataclass, in declaration order."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


# -- scalar leaves ------------------------------------------------------------------------

def _leaf_int(value, path):
    if type(value) is not int:
        _fail(path, f"expected an integer, got {_what(value)}")
    return value


def _leaf_bool(value, path):
    if type(value) is not bool:
        _fail(path, f"expected true or false, got {_what(value)}")
    return value


def _leaf_str(value, path):
    if type(value) is not str:
        _fail(path, f"expected a string, got {_what(value)}")
    return value


def _shape_item(value, path):
    """A parameter extent: an int, a symbolic name or "?" (§3.3.3)."""
    if type(value) not in (int, str):
        _fail(path, f"expected an integer or a name, got {_what(value)}")
    return value


def _const_out(value, path):
    if type(value) is int and not _MSGPACK_INT[0] <= value < _MSGPACK_INT[1]:
        return [_BIGINT_TAG, str(value)]
    if type(value) not in (bool, int, float, str):
        _fail(path, f"a constant must be a bool, int, float or str, got {_what(value)}")
    return value


def _const_in(value, path):
    if type(value) is list:
        if (len(value) != 2 or value[0] != _BIGINT_TAG or type(value[1]) is not str
                or not _is_decimal(value[1])):
            _fail(path, "a constant must be a bool, int, float, str or a decimal big integer")
        return int(value[1])
    if type(value) not in (bool, int, float, str):
        _fail(path, f"a constant must be a bool, int, float or str, got {_what(value)}")
    return value


def _is_decimal(text: str) -> bool:
    digits = text[1:] if text.startswith("-") else text
    return 0 < len(digits) <= _MAX_BIGINT_DIGITS and digits.isascii() and digits.isdigit()


_LEAVES_OUT = {int: _leaf_int, bool: _leaf_bool, str: _leaf_str, object: _const_out}
_LEAVES_IN = {int: _leaf_int, bool: _leaf_bool, str: _leaf_str, object: _const_in}


# -- the two walks ------------------------------------------------------------------------

def to_plain(obj, spec=M.Module, path="module"):
    """``obj`` (a model object) as plain lists/ints/strings; BytecodeError on a wrong type."""
    if dataclasses.is_dataclass(spec):
        if type(obj) is not spec:
            _fail(path, f"expected a {spec.__name__}, got {_what(obj)}")
        return [to_plain(getattr(obj, name), ann, f"{path}.{name}")
                for name, ann in _fields(spec)]
    origin = typing.get_origin(spec)
    if origin is list or spec is list:
        if not isinstance(obj, list):
            _fail(path, f"expected a list, got {_what(obj)}")
        item = typing.get_args(spec)[0] if origin is list else list
        if item is int and all(type(x) is int for x in obj):
            return list(obj)    # the common case (instruction words, register lists), fast
        if item is list:    # a Param shape: items are leaves, not nested lists
            return [_shape_item(x, f"{path}[{i}]") for i, x in enumerate(obj)]
        return [to_plain(x, item, f"{path}[{i}]") for i, x in enumerate(obj)]
    if origin is tuple:
        items = typing.get_args(spec)
        if not isinstance(obj, (tuple, list)) or len(obj) != len(items):
            _fail(path, f"expected {len(items)} items, got {_what(obj)}")
        return [to_plain(x, t, f"{path}[{i}]") for i, (x, t) in enumerate(zip(obj, items))]
    return _LEAVES_OUT[spec](obj, path)


def from_plain(data, spec=M.Module, path="module"):
    """The model object that plain ``data`` describes; BytecodeError where it does not fit."""
    if dataclasses.is_dataclass(spec):
        fields = _fields(spec)
        if type(data) is not list or len(data) != len(fields):
            _fail(path, f"expected a record of {len(fields)} fields ({spec.__name__}), "
                        f"got {_what(data)}")
        return spec(*(from_plain(x, ann, f"{path}.{name}")
                      for x, (name, ann) in zip(data, fields)))
    origin = typing.get_origin(spec)
    if origin is list or spec is list:
        if type(data) is not list:
            _fail(path, f"expected a list, got {_what(data)}")
        item = typing.get_args(spec)[0] if origin is list else list
        if item is int and all(type(x) is int for x in data):
            return data     # the common case (instruction words, register lists), fast
        if item is list:
            return [_shape_item(x, f"{path}[{i}]") for i, x in enumerate(data)]
        return [from_plain(x, item, f"{path}[{i}]") for i, x in enumerate(data)]
    if origin is tuple:
        items = typing.get_args(spec)
        if type(data) is not list or len(data) != len(items):
            _fail(path, f"expected a list of {len(items)} items, got {_what(data)}")
        return tuple(from_plain(x, t, f"{path}[{i}]") for i, (x, t) in enumerate(zip(data, items)))
    return _LEAVES_IN[spec](data, path)
