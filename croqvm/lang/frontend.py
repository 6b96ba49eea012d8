"""The front end in one call: preprocess, lex, parse and check (ARCHITECTURE.md, stage 1).

``front_end`` never raises for any input: whatever goes wrong becomes a diagnostic, an
unexpected failure an ``internal error:`` at the best position known (LANGUAGE.md §15.1).
"""
from __future__ import annotations

from ..core.diagnostics import Diagnostic, DiagnosticSink
from ..core.source import SourceFile, Span


def front_end(text: str, filename: str = "<string>", defines=None):
    """Return ``(program, diagnostics, sources)``.

    ``program`` is the checked, annotated ``ast.Program`` (None when parsing failed badly);
    ``diagnostics`` are sorted by position; ``sources`` maps file names to ``SourceFile``.
    The program may only be lowered when no diagnostic is an error.
    """
    from .check import check_program
    from .lexer import function_tokens
    from .parser import parse_program

    src = SourceFile(filename, text)
    sink = DiagnosticSink()
    program = None
    try:
        cxx: list = []
        # Each function is scanned when the parser comes to it, so that the tokens of one
        # function are alive at a time, not those of the file; the parser's reports wait
        # in a sink of their own, to reach ``sink`` after every lexical one as when the
        # whole file was scanned first (the order of reports at one place).
        syntax = DiagnosticSink()
        program = parse_program(function_tokens(src, dict(defines or {}), sink, cxx), syntax)
        for d in syntax.items:
            sink.add(d)
        program.cxx = cxx
        check_program(program, sink)   # the functions that parsed; the others are reported
    except RecursionError:
        sink.error(Span.point(filename, 1, 1), "nesting too deep")
    except Exception as exc:  # a croqvm bug: report it where the user can see it
        sink.error(Span.point(filename, 1, 1), f"internal error: {type(exc).__name__}: {exc}")
    return program, sink.sorted(), {filename: src}


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.is_error for d in diagnostics)
