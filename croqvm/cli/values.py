"""The values the ``croqvm`` command's options take (croqvm/cli/main.py): each a parser typer
calls with the text given, returning the value or raising ``typer.BadParameter`` with the
message croqvm's usage errors give (``Error: Invalid value for '--seed': ...``, exit
status 2). typer's own conversions answer in its validation library's words ("Input
should be a valid number, unable to parse string as a number"); these say what was wrong
with the text the user typed, in the form the command has always used.

A parser is also given an option's default, already of its type: that passes through.
The executable's own reading of a run's options (croqvm/cli/launch.py) calls them too,
without typer, which is imported only to refuse a value.
"""
from __future__ import annotations


def _invalid(message: str) -> Exception:
    """The usage error typer reports for a value: ``Invalid value for '--seed': ...``."""
    import typer
    return typer.BadParameter(message)


def _number(text, kind: type, what: str):
    """``text`` as ``kind`` (int or float), else the error naming it ``what``."""
    if isinstance(text, kind):
        return text
    try:
        return kind(text)
    except ValueError:
        raise _invalid(f"{text!r} is not a valid {what}.") from None


def tolerance(text) -> float:
    """A tolerance: a finite float of at least 0 (a NaN would make every value agree)."""
    number = _number(text, float, "float")
    if not 0.0 <= number < float("inf"):
        raise _invalid(f"{text!r} is not a tolerance: use a finite number of at least 0.")
    return number


def seconds(text) -> float:
    """A duration: a finite float above 0."""
    number = _number(text, float, "float")
    if not 0.0 < number < float("inf"):
        raise _invalid(f"{text!r} is not a duration: use a number of seconds above 0.")
    return number


def at_least(low: int, kind: type = int) -> dict:
    """The ``typer.Option`` settings of a ``kind`` (int or float) from ``low`` up: the
    parser, and ``min`` for the ``[x>=low]`` of the help."""
    what = {int: "integer range", float: "float range"}[kind]

    def parse(text):
        number = _number(text, kind, what)
        if not number >= low:
            raise _invalid(f"{number} is not in the range x>={low}.")
        return number
    return {"parser": parse, "min": low}


def count(text) -> int:
    """A positive integer, also written ``1e9`` or ``1_000_000``."""
    if isinstance(text, int):
        return text
    number = None
    try:
        number = int(text, 0)
    except ValueError:
        try:
            if float(text).is_integer():
                number = int(float(text))
        except (ValueError, OverflowError):
            pass
    if number is None or number < 1:
        raise _invalid(f"{text!r} is not a positive integer")
    return number


def seed(text) -> int:
    """A seed: an integer from 0 to 2^64 - 1 (the state of the project's generator)."""
    try:
        number = text if isinstance(text, int) else int(text, 0)
    except ValueError:
        number = None
    if number is None or not 0 <= number < 2 ** 64:
        raise _invalid(f"{text!r} is not a seed: use an integer from 0 to 2^64 - 1")
    return number


def one_of(*names: str) -> dict:
    """The ``typer.Option`` settings of a choice among ``names`` (exact spelling): the
    parser, and the ``[a|b]`` metavar of the help."""
    def parse(text):
        if text not in names:
            listed = ", ".join(repr(n) for n in names)
            raise _invalid(f"{text!r} is not one of {listed}.")
        return text
    return {"parser": parse, "metavar": f"[{'|'.join(names)}]"}
