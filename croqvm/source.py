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
