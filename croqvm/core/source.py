"""Source files and spans: every AST node and bytecode instruction points back here."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str
    # The offset where each line starts, computed on first use: every diagnostic and
    # every lowered statement looks a line up, so it must not cost a pass over the text.
    _starts: list = field(default=None, init=False, repr=False, compare=False)

    def _bounds(self, n: int) -> tuple[int, int] | None:
        """Where line ``n`` (1-based) starts and ends (before its newline) in ``text``."""
        starts = self._starts
        if starts is None:
            starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
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


@dataclass(frozen=True, slots=True)   # slots: every token and AST node holds one
class Span:
    """A range in a source file: 1-based line and column; ``end_col`` is exclusive.

    ``file`` is the file name as the user wrote it (or as ``#line`` set it).
    """

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(file: str, line: int, col: int) -> "Span":
        return Span(file, line, col, line, col + 1)

    def to(self, other: "Span") -> "Span":
        """The span from the start of ``self`` to the end of ``other``."""
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


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
