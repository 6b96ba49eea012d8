"""The module model as plain data: the shape of a ``.cqb`` payload (ARCHITECTURE.md "The bytecode").

The schema is read off the type annotations of ``croqvm.bytecode.module``, so the model
stays the one source of truth: a dataclass becomes a list of its field values in field
order, ``list[T]`` a list, ``tuple[A, B]`` a fixed-length list, an ``IntEnum`` its integer
value (one of the enum's), ``int | float`` a constant's value (an int or a float), and
``int``/``bool``/``str`` themselves. A parameter's shape (bare ``list``) holds ints,
symbolic names and ``"?"``.

``to_plain`` checks every value's Python type on the way out (so the verifier can trust
types) and ``from_plain`` checks the decoded data on the way in, turning enum values into
their members; both name the offending place as a path such as
``functions[0].kernels[1].code.buffers[3].dtype``. ``records`` and ``type_text`` describe
the layout for docs/CQB.md; ``fingerprint`` condenses everything a ``.cqb`` file's meaning
depends on, so that a test notices a change made without a new ``FORMAT_VERSION``.

Conventions: ``spec`` is a type annotation; ``path`` the dotted location of a value.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import typing

from croqvm.core.digest import sha256
from croqvm.core.errors import BytecodeError

from . import module as M

def _fail(path: str, message: str):
    raise BytecodeError(f"malformed .cqb: {path}: {message}")


def _what(value) -> str:
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    return type(value).__name__


@functools.cache
def _fields(cls) -> tuple:
    """(name, annotation) for each field of a model dataclass, in declaration order. The
    module writes its annotations as text (``from __future__ import annotations``): a
    record's are evaluated together, as one expression in the module's namespace, where
    ``typing.get_type_hints`` would compile each apart, taking longer than decoding a
    small module."""
    fields = dataclasses.fields(cls)
    types = eval(f"({''.join(f.type + ',' for f in fields)})", vars(M))
    return tuple((f.name, t) for f, t in zip(fields, types))


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


def _number(value, path):
    """A constant's value: an int (within msgpack's 64 bits) or a float."""
    if type(value) is int:
        if not -(1 << 63) <= value < (1 << 64):
            _fail(path, f"integer constant {value} does not fit in 64 bits")
        return value
    if type(value) is not float:
        _fail(path, f"expected an integer or a float, got {_what(value)}")
    return value


def _enum_leaf(spec):
    """The leaf check of an ``IntEnum`` field: one of its values, as its member."""
    def leaf(value, path):
        if type(value) is not int and not isinstance(value, spec):
            _fail(path, f"expected an integer ({spec.__name__}), got {_what(value)}")
        if value not in spec._value2member_map_:
            _fail(path, f"{value} is not a {spec.__name__} (expected one of "
                        f"{', '.join(f'{m.value} {m.name}' for m in spec)})")
        return spec(value)
    return leaf


_LEAVES = {int: _leaf_int, bool: _leaf_bool, str: _leaf_str, int | float: _number}


def _is_enum(spec) -> bool:
    return isinstance(spec, type) and issubclass(spec, enum.IntEnum)


@functools.cache
def _leaf(spec):
    if _is_enum(spec):
        return _enum_leaf(spec)
    return _LEAVES[spec]


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
        item = typing.get_args(spec)[0] if origin is list else list
        if type(obj) is M.Words and item is int:
            return obj.tolist()     # a lowered Code's instruction words: ints, packed
        if not isinstance(obj, list):
            _fail(path, f"expected a list, got {_what(obj)}")
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
    return int(_leaf(spec)(obj, path)) if _is_enum(spec) else _leaf(spec)(obj, path)


def plain_pieces(module):
    """``to_plain(module)`` in pieces, so that a large module is never copied whole:
    ``(True, n)`` for the header of a list of ``n`` items, ``(False, value)`` for a plain
    value. The Module is a list of its fields, the ``functions`` field a list of one piece
    per function: packed one after another (msgpack), the pieces give ``to_plain``'s
    bytes. Each piece is checked as ``to_plain`` checks it, in the same order."""
    if type(module) is not M.Module:
        _fail("module", f"expected a Module, got {_what(module)}")
    fields = _fields(M.Module)
    yield True, len(fields)
    for name, ann in fields:
        value, path = getattr(module, name), f"module.{name}"
        if name != "functions":
            yield False, to_plain(value, ann, path)
            continue
        if not isinstance(value, list):
            _fail(path, f"expected a list, got {_what(value)}")
        yield True, len(value)
        item = typing.get_args(ann)[0]
        for i, fn in enumerate(value):
            yield False, to_plain(fn, item, f"{path}[{i}]")


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
    return _leaf(spec)(data, path)


# -- the layout, described ----------------------------------------------------------------

def records(spec=M.Module) -> list:
    """Every record (dataclass) of the payload, depth first from ``spec`` in field order."""
    out: list = []

    def visit(t):
        if dataclasses.is_dataclass(t):
            if t in out:
                return
            out.append(t)
            for _, ann in _fields(t):
                visit(ann)
        for arg in typing.get_args(t):
            visit(arg)
    visit(spec)
    return out


def enums(spec=M.Module) -> list:
    """Every IntEnum a field of the payload holds, in the order ``records`` meets them."""
    out: list = []

    def visit(t):
        if _is_enum(t) and t not in out:
            out.append(t)
        for arg in typing.get_args(t):
            visit(arg)
    for record in records(spec):
        for _, ann in _fields(record):
            visit(ann)
    return out


def type_text(spec) -> str:
    """How docs/CQB.md writes a field's type."""
    if dataclasses.is_dataclass(spec):
        return spec.__name__
    if _is_enum(spec):
        return f"{spec.__name__} (int)"
    if spec is list:
        return "list of (int or str)"
    origin = typing.get_origin(spec)
    if origin is list:
        return f"list of {type_text(typing.get_args(spec)[0])}"
    if origin is tuple:
        return "[" + ", ".join(type_text(t) for t in typing.get_args(spec)) + "]"
    if spec == int | float:
        return "int or float"
    return spec.__name__


def fields(record) -> tuple:
    """(name, annotation) of each field of a model record, in payload order."""
    return _fields(record)


def fingerprint() -> str:
    """SHA-256 of what a payload's meaning depends on: every record's field names and
    types in order, every enum's members, the opcode table's numbers, names and operand
    kinds, and the dtype codes. Prose is left out, so documenting changes nothing."""
    from croqvm.core import dtypes
    from . import opcodes
    parts = [f"{r.__name__}({', '.join(f'{n}: {type_text(a)}' for n, a in _fields(r))})"
             for r in records()]
    parts += [f"{e.__name__}{[(m.name, m.value) for m in e]}" for e in enums()]
    parts += [f"{op.code} {op.name} {op.operands}" for op in opcodes.TABLE]
    parts += [f"{d.code} {d.name}" for d in dtypes.BY_CODE.values()]
    return sha256("\n".join(parts).encode()).hexdigest()
