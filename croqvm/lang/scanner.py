"""The raw Croqtile scanner: characters to tokens, before macro expansion (LANGUAGE.md §2).

``scan`` reads one stretch of (comment-free) text and returns ``(token, offset)`` pairs;
the offset is where the token starts in the whole file, so callers can look up the macro
table in force there. Every problem goes to the sink and scanning goes on.
"""
from __future__ import annotations

import re
import sys
from array import array
from bisect import bisect_right
from dataclasses import replace

from . import literals
from ..core.source import Span, line_starts
from .tokens import GROUP4, KEYWORD, MEMBER, MEMBER_WORDS, NAME, OP, RESERVED, STRING, Token


class LineMap:
    """Offsets in one file's text to locations; ``#line`` (§1.2.4) rewrites the latter.

    ``logical[i]`` is the (file, line) that physical line ``i`` (0-based) reports.
    Columns always count characters of the physical line from 1 (a tab is one column).
    """

    def __init__(self, text: str, filename: str):
        self.starts = list(line_starts(text))  # a list: bisect reads it twice a token
        self.logical = LogicalLines(filename, len(self.starts))

    def line_index(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def locate(self, offset: int) -> tuple[str, int, int]:
        i = self.line_index(offset)
        file, line = self.logical[i]
        return file, line, offset - self.starts[i] + 1

    def span(self, start: int, end: int) -> Span:
        end = max(end, start + 1)
        starts, logical = self.starts, self.logical
        i = bisect_right(starts, start) - 1
        file, line = logical.names[logical.files[i]], logical.lines[i]
        col = start - starts[i] + 1
        if i + 1 == len(starts) or end < starts[i + 1]:  # the usual one-line case
            return Span(file, line, col, line, col + end - start)
        _, end_line, end_col = self.locate(end)
        return Span(file, line, col, end_line, end_col)


class LogicalLines:
    """``logical[i]``, the ``(file, line)`` physical line ``i`` reports, kept in arrays: a
    source of megabytes has hundreds of thousands of lines, and a tuple each took more
    memory than the text."""

    def __init__(self, filename: str, count: int):
        self.names = [filename]
        self.files = array("i", bytes(4 * count))    # index in ``names`` per line
        self.lines: array | list = array("q", range(1, count + 1))

    def __getitem__(self, i: int) -> tuple[str, int]:
        return self.names[self.files[i]], self.lines[i]

    def __setitem__(self, i: int, place: tuple[str, int]) -> None:
        file, line = place
        if file != self.names[self.files[i]]:
            if file not in self.names:
                self.names.append(file)
            self.files[i] = self.names.index(file)
        try:
            self.lines[i] = line
        except OverflowError:       # ``#line`` numbers beyond 64 bits: Python ints, then
            self.lines = list(self.lines)
            self.lines[i] = line


# Longest match first (§2.4.1).
OPERATORS = sorted("""
=> :: ++ -- == != <= >= && || << >> #+ #- #* #/ #%
+ - * / % = < > ! ~ & | ^ ? : ; , . # ( ) [ ] { }
""".split(), key=len, reverse=True)

_TOKEN_RE = re.compile(r"""
    (?P<blank>[ \t\r\n\f\v]+)
  | (?P<group4>group-4(?![A-Za-z0-9_]))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<hex>0[xX][A-Za-z0-9_]*)
  | (?P<number>[0-9][A-Za-z0-9_]*(?:\.[0-9A-Za-z_]*)?(?:(?<=[eE])[+-][0-9A-Za-z_]*)?)
  | (?P<dotnum>\.[0-9][A-Za-z0-9_]*(?:(?<=[eE])[+-][0-9A-Za-z_]*)?)
  | (?P<member>\.[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*\\?(?P<close>")?)
  | (?P<char>'[^'\\\n]*(?:\\[^\n][^'\\\n]*)*'?)
  | (?P<op>""" + "|".join(re.escape(op) for op in OPERATORS) + r""")
""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    """``\\n \\t \\" \\\\`` are replaced; other backslash pairs stay as written (§2.2.3)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


def stray_char_text(ch: str) -> str:
    """How a stray character is quoted: itself when visible, else its code (``\\x01``)."""
    if ch.isprintable() and not ch.isspace():
        return ch
    return f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"


_NOT_UTF8 = "\ufffd"    # sources are decoded as UTF-8, bytes that are not UTF-8 replaced by it


def _stray_message(ch: str) -> str:
    if ch == _NOT_UTF8:
        return "stray byte that is not UTF-8 in program (croqvm reads sources as UTF-8)"
    return f"stray '{stray_char_text(ch)}' in program"


def scan(text: str, base: int, lines: LineMap, sink) -> list[tuple[Token, int]]:
    """Tokens of ``text``, which starts at offset ``base`` of the file ``lines`` maps."""
    out: list[tuple[Token, int]] = []
    pos, n = 0, len(text)
    glued = False
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            start = base + pos
            sink.error(lines.span(start, start + 1), _stray_message(text[pos]))
            pos += 1
            continue
        kind, lexeme = m.lastgroup, m.group()
        start, end = base + pos, base + m.end()
        pos = m.end()
        if kind == "blank":
            glued = False
            continue
        if kind == "member" and lexeme[1:] not in MEMBER_WORDS:
            # §2.4.2: only the listed words fuse with their dot; rescan the word alone.
            pos -= len(lexeme) - 1
            kind, lexeme, end = "op", ".", start + 1
        span = lines.span(start, end)
        if kind == "string":
            tok = _string(lexeme, m.group("close") is not None, span, sink)
        else:
            tok = _RULES[kind](lexeme, span, sink)
        if tok is not None:
            out.append((replace(tok, glued=True) if glued else tok, start))
        glued = True
    return out


def _ident(text, span, sink):
    is_kw = text in RESERVED or text.startswith("__")  # §2.1.3
    # interned: the tree and the symbols keep one copy of each name, not one per use
    return Token(KEYWORD if is_kw else NAME, sys.intern(text), span)


def _member(text, span, sink):
    # The regex took the whole word after the dot, so a non-identifier character follows
    # it, as §2.4.2 requires of a member token.
    return Token(MEMBER, text, span)


def _string(text, closed, span, sink):
    if _NOT_UTF8 in text:
        sink.warning(span, "string literal with bytes that are not UTF-8: each prints as "
                           "U+FFFD (croqvm reads sources as UTF-8).")
    if not closed:
        sink.error(span, "missing terminating '\"' character.")
        return Token(STRING, _unescape(text[1:]), span)
    return Token(STRING, _unescape(text[1:-1]), span)


def _char(text, span, sink):
    sink.error(span, "character literals are not supported.")
    return None


def _op(text, span, sink):
    return Token(OP, text, span)


def _group4(text, span, sink):
    return Token(GROUP4, text, span)


def _number(text, span, sink):
    return literals.number_token(text, span, sink)


_RULES = {
    "ident": _ident, "member": _member, "char": _char, "op": _op,
    "group4": _group4, "number": _number, "dotnum": _number, "hex": _number,
}
