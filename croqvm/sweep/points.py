"""The points of a sweep: ``--dim`` options with ranges and lists, and their product.

``--dim NAME=START:STOP:STEP`` gives START, START+STEP, ... up to STOP *inclusive* (when
STEP reaches it: ``64:1024:64`` is 64, 128, ..., 1024; ``8:20:8`` is 8 and 16);
``NAME=START:STOP`` steps by 1; ``NAME=A,B,C`` gives those values in that order;
``NAME=N`` one value. Every value is a dimension, an ``int`` from 1 to ``MAX_INT``.

A point gives each dimension one value. The points are the cartesian product of the
dimensions' values, the first ``--dim`` varying slowest and each dimension's values in the
order given, so a sweep enumerates the same points in the same order every time.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..core.errors import ArgumentError
from ..core.limits import MAX_INT
from ..running.inputs import parse_assignments


@dataclass(frozen=True)
class Point:
    """One value per dimension: ``dims`` as (name, value) pairs in ``--dim`` order."""
    dims: tuple[tuple[str, int], ...]

    def as_dict(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def size(self) -> int:
        """The product of the values: how large a problem the point is."""
        out = 1
        for _, value in self.dims:
            out *= value
        return out

    def order(self) -> tuple:
        """Smaller first: by size, then by the values in ``--dim`` order."""
        return (self.size, tuple(value for _, value in self.dims))

    def __str__(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.dims)


def _number(text: str, where: str) -> int:
    try:
        value = int(text.strip(), 0)
    except ValueError:
        raise ArgumentError(f"{where}: '{text.strip()}' is not an integer") from None
    if not 1 <= value <= MAX_INT:
        raise ArgumentError(f"{where}: {value} is not a dimension (an 'int' from 1 to "
                            f"{MAX_INT})")
    return value


def _values(name: str, spec: str) -> tuple[int, ...]:
    where = f"--dim {name}={spec}"
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise ArgumentError(f"{where}: a range is START:STOP or START:STOP:STEP")
        start, stop = _number(parts[0], where), _number(parts[1], where)
        step = _number(parts[2], where) if len(parts) == 3 else 1
        if stop < start:
            raise ArgumentError(f"{where}: the range is empty (STOP {stop} is below START "
                                f"{start})")
        return tuple(range(start, stop + 1, step))
    values = tuple(_number(part, where) for part in spec.split(","))
    if len(set(values)) != len(values):
        raise ArgumentError(f"{where}: a value is given twice")
    return values


def parse_dims(items: list[str]) -> dict[str, tuple[int, ...]]:
    """``["M=8:32:8", "N=16,24"]`` -> ``{"M": (8, 16, 24, 32), "N": (16, 24)}``, in the
    order given; every mistake is an ArgumentError naming the option."""
    return {name: _values(name, spec)
            for name, spec in parse_assignments(items, "--dim").items()}


def product(dims: dict[str, tuple[int, ...]]) -> list[Point]:
    """Every combination of the dimensions' values, the first dimension varying slowest."""
    names = list(dims)
    return [Point(tuple(zip(names, values)))
            for values in itertools.product(*(dims[name] for name in names))]
