"""``dataclass``: ``dataclasses.dataclass`` for the records a cached ``croqvm run``
imports, made without compiling code.

``dataclasses.dataclass`` writes a class's ``__init__``, ``__repr__`` and ``__eq__`` (a
frozen class's ``__hash__``, ``__setattr__`` and ``__delattr__`` too) as Python text and
compiles each, some 2.5 million instructions a class: for the four dozen records a
cached run imports, a sixth of all it executes (bench/startup.py). A class made here is a
dataclass all the same, made by ``dataclasses.dataclass`` with those methods left out,
so ``fields``, ``asdict``, ``replace`` and ``is_dataclass`` see the same fields; the
methods added here behave as the ones it would add (tests/test_records.py compares
them): ``__repr__``, ``__eq__``, ``__hash__`` and the frozen guards read the fields
through functions made once per class, and ``__init__``, whose parameters are the
fields', is compiled when the class is first instantiated (most records a run imports
never are; ``inspect.signature`` sees its parameters from then on).

The options are ``eq`` and ``frozen``; a record's bases are not dataclasses, and its
fields are neither keyword-only nor ``InitVar``s. A method the class defines itself is
kept, as ``dataclasses.dataclass`` keeps it.
"""
from __future__ import annotations

import dataclasses
import inspect
import reprlib
from dataclasses import MISSING
from operator import attrgetter


class _Factory:
    """The default of an ``__init__`` parameter whose field has a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"      # as inspect.signature shows it for a dataclass


_FACTORY = _Factory()


def dataclass(cls=None, /, *, eq: bool = True, frozen: bool = False):
    """``dataclasses.dataclass(cls, eq=eq, frozen=frozen)``, made as the module says."""
    if cls is None:
        return lambda cls: _record(cls, eq, frozen)
    return _record(cls, eq, frozen)


def _record(cls, eq: bool, frozen: bool):
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: the bases of a record are not dataclasses")
    documented = bool(cls.__dict__.get("__doc__"))
    if not documented:
        cls.__doc__ = cls.__name__     # for now: dataclass would read the signature's text
    own_hash = cls.__dict__.get("__hash__", MISSING)
    own_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    params = cls.__dataclass_params__    # what the class is, as dataclass would record it
    params.init = params.repr = True
    params.eq, params.frozen = eq, frozen
    fields = dataclasses.fields(cls)
    _check_fields(cls, fields)
    if not documented:
        cls.__doc__ = cls.__name__ + _signature_text(fields)
    _add(cls, "__init__", _first_init(cls, fields, frozen))
    _add(cls, "__repr__", _repr([f.name for f in fields if f.repr]))
    if eq:
        _add(cls, "__eq__", _eq(_key([f.name for f in fields if f.compare])))
        # dataclasses' rule: equal objects hash alike, so only a frozen one hashes
        if not own_hash and frozen:
            _put(cls, "__hash__", _hash(_key([f.name for f in fields if
                                              (f.compare if f.hash is None else f.hash)])))
        elif not own_hash:
            cls.__hash__ = None
    if frozen:
        for guard in _frozen_guards(cls, frozenset(f.name for f in fields)):
            if guard.__name__ in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {guard.__name__} in class "
                                f"{cls.__name__}")
            _put(cls, guard.__name__, guard)
    return cls


def _check_fields(cls, fields) -> None:
    """Refuse, when the class is made, what ``_init`` does not handle, and defaults in
    the order ``dataclasses.dataclass`` refuses then (``_init`` runs later)."""
    if len(fields) != len(cls.__dataclass_fields__):
        raise TypeError(f"{cls.__name__}: a record has no ClassVar or InitVar fields")
    defaulted = False
    for f in fields:
        if f.kw_only:
            raise TypeError(f"{cls.__name__}: a record has no keyword-only fields")
        if not f.init:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if defaulted:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            defaulted = True


def _add(cls, name: str, method) -> None:
    """``method`` as ``cls``'s ``name``, unless the class defines one itself."""
    if name not in cls.__dict__:
        _put(cls, name, method)


def _put(cls, name: str, method) -> None:
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, method)


def _signature_text(fields) -> str:
    """The signature of the class's ``__init__`` as ``inspect.signature`` prints it,
    which ``dataclasses.dataclass`` makes the docstring of a class without one."""
    params = []
    for f in fields:
        if f.init:
            text = f"{f.name}: {inspect.formatannotation(f.type)}"
            default = _FACTORY if f.default_factory is not MISSING else f.default
            params.append(text if default is MISSING else f"{text} = {default!r}")
    return f"({', '.join(params)})"


def _key(names: list):
    """The function giving an object's values of ``names``, as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _repr(names: list):
    @reprlib.recursive_repr()
    def __repr__(self):
        return (f"{self.__class__.__qualname__}("
                f"{', '.join(f'{name}={getattr(self, name)!r}' for name in names)})")
    return __repr__


def _eq(key):
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented
    return __eq__


def _hash(key):
    def __hash__(self):
        return hash(key(self))
    return __hash__


def _frozen_guards(cls, names: frozenset):
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __setattr__, __delattr__


def _first_init(cls, fields, frozen: bool):
    """The ``__init__`` a record has until it is first called: it compiles the true one
    (``_init``), which takes its place in the class."""
    def __init__(self, *args, **kwargs):
        init = _init(cls, fields, frozen)
        _put(cls, "__init__", init)
        init(self, *args, **kwargs)
    return __init__


def _init(cls, fields, frozen: bool):
    """The ``__init__`` ``dataclasses.dataclass`` would write: a parameter per ``init``
    field, defaults included; a ``default_factory`` called for each object made without
    that argument (or for a field outside ``__init__``); ``__post_init__`` called last."""
    names = {"__name__": cls.__module__, "_FACTORY": _FACTORY, "_setattr": object.__setattr__}
    params, body = ["self"], []
    for f in fields:
        factory = f.default_factory is not MISSING
        if factory:
            names[f"_factory_{f.name}"] = f.default_factory
        if f.init:
            param = f.name
            if factory:
                param += " = _FACTORY"
                value = f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"
            elif f.default is not MISSING:
                names[f"_default_{f.name}"] = f.default
                param += f" = _default_{f.name}"
                value = f.name
            else:
                value = f.name
            params.append(param)
        elif factory:
            value = f"_factory_{f.name}()"
        else:
            continue        # the class attribute holds its default
        body.append(f"_setattr(self, {f.name!r}, {value})" if frozen else
                    f"self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    text = (f"def __init__({', '.join(params)}):\n"
            + "".join(f"    {line}\n" for line in body or ["pass"]))
    exec(text, names)
    init = names["__init__"]
    # the fields' types, as dataclasses' annotations give them; written here, not in the
    # text, which then compiles a quarter faster
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return init
