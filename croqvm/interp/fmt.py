"""How ``print`` shows values (LANGUAGE.md §13.2, D19) and how messages write lane sets,
tuples and shapes. Floats are written by ``croqvm.numerics.format_float``.
"""
from __future__ import annotations

from ..dtypes import DType
from ..numerics import format_float


def format_value(v, t: DType) -> str:
    """One lane's value of type ``t`` as ``print`` writes it."""
    if t.kind == "bool":
        return "true" if v else "false"
    if t.is_float:
        return format_float(float(v))
    return str(int(v))


def format_lanes(lanes) -> str:
    """Lane numbers as ranges: ``16-31``, ``3, 5-7``."""
    lanes = sorted(int(x) for x in lanes)
    parts, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        parts.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ", ".join(parts)


def lanes_phrase(lanes) -> str:
    """``lane 5`` or ``lanes 16-31``."""
    lanes = list(lanes)
    return f"lane {format_lanes(lanes)}" if len(lanes) == 1 else f"lanes {format_lanes(lanes)}"


def lanes_verb(lanes, singular: str, plural: str, rest: str = "") -> str:
    """The lanes' phrase, ``rest``, and the verb agreeing with them:
    ``lanes_verb([5], "is", "are", " of warp 0")`` gives ``lane 5 of warp 0 is``."""
    lanes = list(lanes)
    return f"{lanes_phrase(lanes)}{rest} {singular if len(lanes) == 1 else plural}"


def tuple_text(values) -> str:
    """``(0, 16)``: origins, element coordinates and block indices in messages."""
    return "(" + ", ".join(str(int(v)) for v in values) + ")"


def shape_text(values) -> str:
    """``[16, 8]``: extents in messages, as the language writes mdspans."""
    return "[" + ", ".join(str(int(v)) for v in values) + "]"
