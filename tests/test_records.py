"""croqvm.core.records.dataclass against ``dataclasses.dataclass``, the reference: the same
class body, made by each, gives objects made, compared, hashed, shown, guarded, copied
and introspected alike."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import field

import pytest

from croqvm.core import records


def mixed():
    """A record of every kind of field the run's records have."""
    class Mixed:
        a: int
        b: list = field(default_factory=list)
        c: str = "c"
        d: object = field(default=None, repr=False, compare=False)
        e: int = field(default=5, init=False)
        f: dict = field(default_factory=dict, init=False, compare=False)

        def __post_init__(self):
            self.b.append("post")
    return Mixed


def documented():
    class Documented:
        """Its own docstring."""
        x: float
        y: tuple = ()
    return Documented


def both(body, **options):
    """(the record, the dataclass) of the class ``body`` returns, with ``options``."""
    return records.dataclass(body(), **options), dataclasses.dataclass(body(), **options)


def the_same(record, reference):
    """What ``record`` and ``reference`` (objects) show of themselves, compared."""
    assert repr(record) == repr(reference)
    assert dataclasses.asdict(record) == dataclasses.asdict(reference)
    assert vars(record) == vars(reference)


OPTIONS = [{}, {"frozen": True}, {"eq": False}]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("body", [mixed, documented])
def test_the_class_is_the_dataclass_it_would_be(body, options):
    record, reference = both(body, **options)
    assert record.__doc__ == reference.__doc__
    assert record.__match_args__ == reference.__match_args__
    assert repr(record.__dataclass_params__) == repr(reference.__dataclass_params__)
    assert [(f.name, f.type, f.init, f.repr, f.compare) for f in dataclasses.fields(record)] \
        == [(f.name, f.type, f.init, f.repr, f.compare) for f in dataclasses.fields(reference)]
    assert (record.__hash__ is None) == (reference.__hash__ is None)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_objects_are_made_shown_and_compared_alike(options):
    record, reference = both(mixed, **options)
    r, d = record(1, ["x"], c="z", d=7), reference(1, ["x"], c="z", d=7)
    the_same(r, d)
    assert str(inspect.signature(record)) == str(inspect.signature(reference))
    assert record.__init__.__annotations__ == reference.__init__.__annotations__
    the_same(record(2), reference(2))
    assert record(2).b is not record(2).b        # a factory's value per object
    the_same(dataclasses.replace(r, a=9, c="y"), dataclasses.replace(d, a=9, c="y"))
    for a, c in ((1, "z"), (1, "y"), (2, "z")):      # d is not compared
        assert (r == record(a, ["x"], c)) == (d == reference(a, ["x"], c))
    assert r != d and (r == r) is True
    for args, kwargs in [((), {}), ((1, 2, 3, 4, 5), {}), ((1,), {"e": 2}), ((1,), {"a": 1})]:
        with pytest.raises(TypeError) as got:
            record(*args, **kwargs)
        with pytest.raises(TypeError) as want:
            reference(*args, **kwargs)
        assert str(got.value) == str(want.value)


def test_frozen_objects_hash_alike_and_refuse_changes():
    record, reference = both(documented, frozen=True)
    r, d = record(1.5, (2, 3)), reference(1.5, (2, 3))
    assert hash(r) == hash(d) and hash(record(0.0)) == hash(reference(-0.0))
    for change in (lambda o: setattr(o, "x", 2.0), lambda o: setattr(o, "z", 0),
                   lambda o: delattr(o, "y")):
        with pytest.raises(dataclasses.FrozenInstanceError) as got:
            change(r)
        with pytest.raises(dataclasses.FrozenInstanceError) as want:
            change(d)
        assert str(got.value) == str(want.value)

    class Sub(record):    # a subclass that is no record may set what is not a field
        pass
    sub = Sub(1.0)
    sub.z = 3
    assert sub.z == 3 and sub == Sub(1.0) and sub != record(1.0)


def test_objects_copy_and_pickle():
    r = Picklable([1, 2], "n")
    for again in (copy.copy(r), copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        assert again == r and again is not r and repr(again) == repr(r)


@records.dataclass(frozen=True)
class Picklable:
    items: list
    name: str = ""


def test_what_the_class_defines_itself_is_kept():
    @records.dataclass
    class Own:
        a: int

        def __repr__(self):
            return "own"

        def __eq__(self, other):
            return True

        __hash__ = object.__hash__
    assert repr(Own(1)) == "own" and Own(1) == Own(2) and hash(Own(1)) != hash(Own(1))


def test_a_record_that_holds_itself_shows_dots():
    r = Picklable([])
    r.items.append(r)
    assert repr(r) == "Picklable(items=[...], name='')"


def test_what_records_do_not_do_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @records.dataclass
        class Order:
            a: int = 0
            b: int
    with pytest.raises(TypeError, match="keyword-only"):
        @records.dataclass
        class KeywordOnly:
            a: int = field(kw_only=True)
    with pytest.raises(TypeError, match="bases"):
        @records.dataclass
        class Derived(Picklable):
            more: int = 0
