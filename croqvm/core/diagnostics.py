"""Diagnostic records and their one renderer (LANGUAGE.md §15.1).

A checker builds ``Diagnostic`` values; the CLI, the API and the tests all print them
through ``render`` so the text is identical everywhere::

    FILE:LINE:COL: error: message
     LINE | source line
          | ^~~~~
    hint: suggestion
"""
from __future__ import annotations

from dataclasses import field

from .source import SourceFile, Span
from .records import dataclass

MAX_ERRORS = 50
INTERNAL = "internal error: "   # how a diagnostic reporting a croqvm bug begins


@dataclass
class Diagnostic:
    severity: str  # "error", "warning", "note", "runtime error"
    message: str
    span: Span | None
    hint: str | None = None
    notes: list[str] = field(default_factory=list)  # extra lines printed after the caret

    @property
    def is_error(self) -> bool:
        return self.severity.endswith("error")

    @property
    def is_internal(self) -> bool:
        """A croqvm bug reported where it showed (every stage words it this way)."""
        return self.message.startswith(INTERNAL)


def _caret_line(span: Span, text: str) -> str:
    start = max(span.col - 1, 0)
    if span.end_line == span.line:
        end = max(span.end_col - 1, start + 1)
    else:
        end = max(len(text), start + 1)
    width = max(end - start, 1)
    # Tabs before the construct are copied, so that the '^' sits under its first character
    # however wide a terminal shows a tab (columns count a tab as one, §2.1.1).
    indent = "".join("\t" if c == "\t" else " " for c in text[:start].ljust(start))
    return indent + "^" + "~" * (width - 1)


def render(diag: Diagnostic, sources: dict[str, SourceFile] | None = None) -> str:
    """Render one diagnostic as text (no trailing newline)."""
    span = diag.span
    if span is None:
        out = [f"{diag.severity}: {diag.message}"]
    else:
        out = [f"{span}: {diag.severity}: {diag.message}"]
        src = (sources or {}).get(span.file)
        if src is not None:
            text = src.line(span.line)
            if text or span.line >= 1:
                out.append(f"{span.line:>5} | {text}")
                out.append(f"{'':>5} | {_caret_line(span, text)}")
    out.extend(diag.notes)
    if diag.hint:
        out.append(f"hint: {diag.hint}")
    return "\n".join(out)


def render_all(diags, sources=None) -> str:
    return "\n".join(render(d, sources) for d in diags)


class DiagnosticSink:
    """Collects diagnostics; ``sorted`` gives them in source order with the first
    ``MAX_ERRORS`` errors (§15.1). Stages may report out of order (a check at the end of a
    body about an earlier statement), so the cut is made only after sorting."""

    def __init__(self):
        self.items: list[Diagnostic] = []
        self._seen: set = set()

    def error(self, span, message, hint=None):
        self.add(Diagnostic("error", message, span, hint))

    def warning(self, span, message, hint=None):
        self.add(Diagnostic("warning", message, span, hint))

    def note(self, span, message, hint=None):
        self.add(Diagnostic("note", message, span, hint))

    def add(self, d: Diagnostic):
        key = (d.span, d.message)
        if key in self._seen:
            return  # one problem, one report
        self._seen.add(key)
        self.items.append(d)

    def sorted(self) -> list[Diagnostic]:
        def key(d):
            s = d.span
            return (0, "", 0, 0) if s is None else (1, s.file, s.line, s.col)
        out, errors = [], 0
        for d in sorted(self.items, key=key):
            if d.is_error:
                errors += 1
                if errors > MAX_ERRORS:
                    continue
            out.append(d)
        return out
