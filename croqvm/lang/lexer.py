"""From a ``.co`` file to one token list per ``__co__`` function (LANGUAGE.md §1-§2).

    tokenize_program(src, defines, sink) -> list[list[Token]]
    function_tokens(src, defines, sink) -> the same lists, one at a time

Steps: preprocess the whole file (``preprocess``), find the functions in what is left
(§1.1.1), note the host text between them (§1.1.2), then scan each function
(``scanner``), expand its macros (``macros``) and join adjacent strings (§2.2.3). Each
list starts with the KEYWORD ``__co__`` and ends with an EOF token placed just after the
function's closing brace (or at the end of the file when the brace is missing; the parser
reports that). Problems go to the sink; no input makes this raise. ``defines`` maps
``-D`` names to bodies: None means ``-D NAME`` (1), ``""`` ``-D NAME=`` (nothing), §1.2.4.
"""
from __future__ import annotations

import re
from typing import Iterator

from .cxx import find_device_functions
from .macros import Expander
from .preprocess import HOST_LEXEME, Preprocessed, preprocess
from .scanner import scan
from ..core.source import SourceFile, Span
from .tokens import EOF, STRING, Token

_BLANKS = " \t\r\n\f\v"


def tokenize_program(src: SourceFile, defines: dict[str, str | None] | None,
                     sink, cxx: list | None = None) -> list[list[Token]]:
    """The token lists; the C++ device functions of the host text are appended to
    ``cxx`` when it is given (§6.10.4)."""
    return list(function_tokens(src, defines, sink, cxx))


def function_tokens(src: SourceFile, defines: dict[str, str | None] | None,
                    sink, cxx: list | None = None) -> Iterator[list[Token]]:
    """``tokenize_program``'s lists one at a time, each scanned when it is asked for: a
    parser that takes them in turn holds the tokens of one function, not of the file."""
    pp = preprocess(src, defines, sink)
    functions = find_functions(pp.text)
    report_host_text(src, pp, functions, sink)
    if cxx is not None:
        cxx += find_device_functions(pp.text, pp.lines, functions)
    for start, end in functions:
        yield _function_tokens(pp, start, end, sink)


# A ``__co_device__`` function written in Croqtile (§6.10): a result type with an optional
# shape, a name and parameters without C++'s pointers, references, strings or qualifiers.
# Any other ``__co_device__`` function is C++ (the reference passes its text through).
_CROQTILE_DEVICE_HEADER = re.compile(r"""
    __co_device__\s+[A-Za-z_]\w*(?:\s*\[[^\]{};*&"]*\])?\s+[A-Za-z_]\w*
    \s*\([^(){};*&"]*\)\s*\{""", re.VERBOSE)
_CXX_WORDS = re.compile(r"\b(?:extern|static|inline|__forceinline__|const|unsigned|template|"
                        r"struct|volatile|signed|long|short)\b")


def croqtile_device_header(text: str, start: int) -> bool:
    """Whether the ``__co_device__`` at ``start`` begins a function written in Croqtile."""
    m = _CROQTILE_DEVICE_HEADER.match(text, start)
    return m is not None and _CXX_WORDS.search(m.group()) is None


def find_functions(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of each ``__co__`` function and each ``__co_device__``
    function written in Croqtile: from its first word to just after the ``}`` that closes
    its body (§1.1.1). Braces inside strings and character literals do not count (comments
    are gone already). A function still open when the next one or the end of the file
    comes ends there."""
    found, start, depth = [], None, 0
    for m in HOST_LEXEME.finditer(text):
        kind = m.lastgroup
        if kind == "word" and (m.group() == "__co__" or m.group() == "__co_device__"
                               and croqtile_device_header(text, m.start())):
            if start is not None:
                found.append((start, m.start()))
            start, depth = m.start(), 0
        elif kind == "brace" and start is not None:
            if m.group() == "{":
                depth += 1
            elif depth > 0:
                depth -= 1
                if depth == 0:
                    found.append((start, m.end()))
                    start = None
    if start is not None:
        found.append((start, len(text)))
    return found


def report_host_text(src: SourceFile, pp: Preprocessed, functions, sink) -> None:
    """One note per stretch of host text between functions that holds more than blanks,
    comments and directives (§1.1.2), naming its first and last such line."""
    bounds = [0] + [x for f in functions for x in f] + [len(pp.text)]
    for a, b in zip(bounds[0::2], bounds[1::2]):
        segment = pp.text[a:b]
        body = segment.strip(_BLANKS)
        if not body:
            continue
        first = a + len(segment) - len(segment.lstrip(_BLANKS))
        last = first + len(body) - 1
        row = pp.lines.line_index(first)
        file, line = pp.lines.logical[row]
        _, end_line = pp.lines.logical[pp.lines.line_index(last)]
        where = f"line {line}" if end_line == line else f"lines {line}-{end_line}"
        sink.note(Span(file, line, 1, line, len(src.line(row + 1)) + 1),
                  f"host C++ code is not compiled by croqvm ({where})")


def _function_tokens(pp: Preprocessed, start: int, end: int, sink) -> list[Token]:
    raw = scan(pp.text[start:end], start, pp.lines, sink)
    head = raw[0][0]  # the KEYWORD '__co__' (or '__co_device__') is never macro-expanded
    items = [(tok, pp.env_at(offset)) for tok, offset in raw[1:]]
    toks = [head] + join_strings(Expander(sink).expand(items))
    file, line, col = pp.lines.locate(end)
    toks.append(Token(EOF, None, Span.point(file, line, col)))
    return toks


def join_strings(toks: list[Token]) -> list[Token]:
    """Adjacent string literals are one STRING token spanning all of them (§2.2.3)."""
    out: list[Token] = []
    for t in toks:
        if t.kind == STRING and out and out[-1].kind == STRING:
            prev = out[-1]
            out[-1] = Token(STRING, prev.value + t.value, prev.span.to(t.span))
        else:
            out.append(t)
    return out
