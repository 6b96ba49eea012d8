"""Source files and spans: every AST node and bytecode instruction points back here."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str

    def line(self, n: int) -> str:
        """Line ``n`` (1-based) without its newline, or '' past the end."""
        lines = self.text.split("\n")
        return lines[n - 1].rstrip("\r") if 1 <= n <= len(lines) else ""


@dataclass(frozen=True)
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
    end_col)``) over its source files: how runtime messages quote places."""

    def __init__(self, sources: list[tuple[str, str]], spans: list):
        self.names = [name for name, _ in sources]
        self.files = {name: SourceFile(name, text) for name, text in sources}
        self.spans = spans

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
        return src.line(span.line)[span.col - 1:span.end_col - 1]
