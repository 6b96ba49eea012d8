"""Source files and spans: every AST node and bytecode instruction points back here."""
from __future__ import annotations

import re
import threading
from array import array
from dataclasses import field

from .records import dataclass


def line_starts(text: str) -> array:
    """The offset where each line of ``text`` starts (an array: a list took 40 bytes a
    line)."""
    starts = array("q", [0])
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str
    # The offset where each line starts, computed on first use: every diagnostic and
    # every lowered statement looks a line up, so it must not cost a pass over the text.
    _starts: array | None = field(default=None, init=False, repr=False, compare=False)

    def _bounds(self, n: int) -> tuple[int, int] | None:
        """Where line ``n`` (1-based) starts and ends (before its newline) in ``text``."""
        starts = self._starts
        if starts is None:
            starts = line_starts(self.text)
            object.__setattr__(self, "_starts", starts)
        if not 1 <= n <= len(starts):
            return None
        return starts[n - 1], starts[n] - 1 if n < len(starts) else len(self.text)

    def line(self, n: int) -> str:
        """Line ``n`` (1-based) without its newline, or '' past the end."""
        bounds = self._bounds(n)
        return self.text[bounds[0]:bounds[1]].rstrip("\r") if bounds else ""

    def excerpt(self, span: "Span") -> str:
        """The text ``span`` covers on its first line (to the line's end when it goes on),
        copied without the rest of the line: a generated one-line program may be megabytes."""
        bounds = self._bounds(span.line)
        if bounds is None:
            return ""
        start, end = bounds
        if span.end_line == span.line:
            end = min(end, start + span.end_col - 1)
        return self.text[start + span.col - 1:end].rstrip("\r")


# How a ``Span`` packs its place into one int. Compact: bit 0 clear, then the file's
# index (5 bits), the column and end column (12 each), how many lines the span goes past
# its first (8), and the line on top (22): 60 bits, an int of two digits. Wide, bit 0
# set: the width W of a field in the next 16 bits, then the five fields in W bits each,
# offset by 2**(W-1) so that any int fits (a ``#line`` number may be any literal).
_FILE_SHIFT, _COL_SHIFT, _END_COL_SHIFT, _LINES_SHIFT, _LINE_SHIFT = 1, 6, 18, 30, 38
_FILE_MASK, _COL_MASK, _LINES_MASK = (1 << 5) - 1, (1 << 12) - 1, (1 << 8) - 1
_COMPACT_LIMIT = 1 << 60
_START_BITS = (1 << _END_COL_SHIFT) - 1      # the flag, file and column
_WIDTH_BITS = 16

# The file names spans name, by index: a span holds the index. One entry per file name the
# process has seen (a file, a ``#line`` name, ``<string>``), kept for the process.
_FILE_NAMES: list[str] = []
_FILE_INDEX: dict[str, int] = {}
_FILES_LOCK = threading.Lock()


def _file_index(name: str) -> int:
    index = _FILE_INDEX.get(name)
    if index is None:
        with _FILES_LOCK:
            index = _FILE_INDEX.get(name)
            if index is None:
                index = _FILE_INDEX[name] = len(_FILE_NAMES)
                _FILE_NAMES.append(name)
    return index


class Span(int):
    """A range in a source file: 1-based line and column; ``end_col`` is exclusive.

    ``file`` is the file name as the user wrote it (or as ``#line`` set it).

    Every token and AST node holds one, so a span is a single int packing the five
    fields (an int is not tracked by the cycle collector and takes 32 bytes where an
    object of five slots takes 72); equal spans are equal ints. Read it through its
    fields only.
    """

    __slots__ = ()

    def __new__(cls, file: str, line: int, col: int, end_line: int, end_col: int) -> "Span":
        f = _FILE_INDEX.get(file)
        if f is None:
            f = _file_index(file)
        lines = end_line - line
        if (0 <= line and f <= _FILE_MASK and 0 <= col <= _COL_MASK and
                0 <= end_col <= _COL_MASK and 0 <= lines <= _LINES_MASK):
            packed = (line << _LINE_SHIFT | lines << _LINES_SHIFT | end_col << _END_COL_SHIFT
                      | col << _COL_SHIFT | f << _FILE_SHIFT)
            if packed < _COMPACT_LIMIT:
                return int.__new__(cls, packed)
        fields = (f, line, col, end_line, end_col)
        width = max(abs(value) for value in fields).bit_length() + 2
        packed = 1 | width << 1
        for i, value in enumerate(fields):
            packed |= (value + (1 << (width - 1))) << (1 + _WIDTH_BITS + i * width)
        return int.__new__(cls, packed)

    def _wide(self, i: int) -> int:
        width = (self >> 1) & ((1 << _WIDTH_BITS) - 1)
        return (((self >> (1 + _WIDTH_BITS + i * width)) & ((1 << width) - 1))
                - (1 << (width - 1)))

    @property
    def file(self) -> str:
        return _FILE_NAMES[self._wide(0) if self & 1 else (self >> _FILE_SHIFT) & _FILE_MASK]

    @property
    def line(self) -> int:
        return self._wide(1) if self & 1 else self >> _LINE_SHIFT

    @property
    def col(self) -> int:
        return self._wide(2) if self & 1 else (self >> _COL_SHIFT) & _COL_MASK

    @property
    def end_line(self) -> int:
        if self & 1:
            return self._wide(3)
        return (self >> _LINE_SHIFT) + ((self >> _LINES_SHIFT) & _LINES_MASK)

    @property
    def end_col(self) -> int:
        return self._wide(4) if self & 1 else (self >> _END_COL_SHIFT) & _COL_MASK

    @staticmethod
    def point(file: str, line: int, col: int) -> "Span":
        return Span(file, line, col, line, col + 1)

    def to(self, other: "Span") -> "Span":
        """The span from the start of ``self`` to the end of ``other``."""
        if not (self | other) & 1:     # both compact: the parser's many joins, unpacked not
            line = self >> _LINE_SHIFT
            lines = (other >> _LINE_SHIFT) + ((other >> _LINES_SHIFT) & _LINES_MASK) - line
            if 0 <= lines <= _LINES_MASK:
                return int.__new__(Span, self & _START_BITS | lines << _LINES_SHIFT
                                   | line << _LINE_SHIFT
                                   | other & (_COL_MASK << _END_COL_SHIFT))
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)

    def fields(self) -> dict:
        """The five fields by name (``Span(**span.fields())`` is ``span``)."""
        return {"file": self.file, "line": self.line, "col": self.col,
                "end_line": self.end_line, "end_col": self.end_col}

    def __bool__(self) -> bool:
        return True

    def __reduce__(self):
        return Span, (self.file, self.line, self.col, self.end_line, self.end_col)

    def __repr__(self) -> str:
        return "Span(" + ", ".join(f"{k}={v!r}" for k, v in self.fields().items()) + ")"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    __format__ = object.__format__


class SpanTable:
    """The spans of a bytecode module (``spans[i] = (file index, line, col, end_line,
    end_col)``) over its source files: how runtime messages quote places. ``calls`` pairs
    a span inside an inlined call with the call's span (``Module.calls``)."""

    def __init__(self, sources: list[tuple[str, str]], spans: list, calls=()):
        self.names = [name for name, _ in sources]
        self.files = {name: SourceFile(name, text) for name, text in sources}
        self.spans = spans
        self.caller = dict(calls)

    def calls_around(self, index: int) -> list[int]:
        """The spans of the calls ``index`` lies in, innermost first."""
        out = []
        while index in self.caller and len(out) < len(self.caller):
            index = self.caller[index]
            out.append(index)
        return out

    def span(self, index: int) -> Span | None:
        if not 0 <= index < len(self.spans):
            return None
        f, line, col, end_line, end_col = self.spans[index]
        name = self.names[f] if 0 <= f < len(self.names) else "<unknown>"
        return Span(name, line, col, end_line, end_col)

    def where(self, index: int) -> str:
        """``FILE:L:C`` of a span index, as messages quote places."""
        span = self.span(index)
        return str(span) if span else "<unknown>"

    def text(self, index: int) -> str:
        """The source text a one-line span covers (the statement in deadlock reports)."""
        span = self.span(index)
        src = self.files.get(span.file) if span else None
        if src is None or span.end_line != span.line:
            return ""
        return src.excerpt(span)
