"""The parser's token cursor: lookahead, error reports and error recovery (LANGUAGE.md §15).

Conventions used by every parser module:
- ``tok`` is the current token, ``prev`` the last consumed one; nodes span from their first
  token to ``prev`` (``span_from``).
- ``fail`` reports a syntax error at the current token and raises ``SyntaxAbort``; the
  innermost statement catches it, skips the rest of the statement (``recover``) and parsing
  goes on, so independent errors are all reported. ``fail_after`` does the same for a
  missing token: it points just past ``prev``, where the token belongs.
- ``nested`` and ``lengthen`` bound the nesting: beyond ``MAX_NESTING`` levels or
  ``MAX_CHAIN`` chained operators the function is abandoned with one ``nesting too deep``
  error instead of a Python ``RecursionError`` (here or in a later stage walking the tree).
"""
from __future__ import annotations

from contextlib import contextmanager

from ..core.source import Span
from .suggest import CUDA
from .tokens import EOF, INT, KEYWORD, MEMBER, NAME, OP, Token

# A level costs at most about ten Python frames (``a.at(a.at(...))``), so 64 levels stay
# well below the interpreter's default recursion limit of 1000, even under a test runner,
# and far above real kernels.
MAX_NESTING = 64
# Operator chains (``a + b + ...``, ``- - x``, ``a.at(i).at(j)...``) are parsed in loops, but
# nest in the tree that later stages walk recursively: they get a budget of their own.
MAX_CHAIN = 256

BRACKETS = {"(": ")", "[": "]", "{": "}"}  # opener -> closer


class SyntaxAbort(Exception):
    """A syntax error was reported; unwind to the innermost statement."""


class TooDeep(Exception):
    """Nesting beyond ``MAX_NESTING`` was reported; unwind the whole function."""


def _with_eof(tokens: list[Token]) -> list[Token]:
    if tokens and tokens[-1].kind == EOF:
        return list(tokens)
    if tokens:
        s = tokens[-1].span
        end = Span(s.file, s.end_line, s.end_col, s.end_line, s.end_col + 1)
    else:
        end = Span("<input>", 1, 1, 1, 2)
    return list(tokens) + [Token(EOF, None, end)]


class Cursor:
    def __init__(self, tokens: list[Token], sink):
        self.toks = _with_eof(tokens)
        self.pos = 0
        self.sink = sink
        self.depth = 0
        self.chain = 0
        self.last_error_pos = -1
        self.errors = 0  # syntax errors found, reported or not (the sink caps and dedups)
        self.parenthesised: set[int] = set()  # ids of expressions written inside ( )

    # ---------------------------------------------------------------- looking and moving

    @property
    def tok(self) -> Token:
        return self.toks[self.pos]

    @property
    def prev(self) -> Token:
        return self.toks[self.pos - 1] if self.pos else self.toks[0]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def advance(self) -> Token:
        t = self.tok
        if t.kind != EOF:
            self.pos += 1
        return t

    def span_from(self, start: Token | Span) -> Span:
        """From ``start`` to ``prev``; a statement's span stops before its ';', as the
        diagnostics of LANGUAGE.md show it (Appendix A.8: ``'wait empty[k % STAGES]'``)."""
        first = start.span if isinstance(start, Token) else start
        if not self.pos:
            return first
        last = self.prev.span
        if self.prev.is_op(";") and self.pos >= 2:
            before = self.toks[self.pos - 2].span
            if (before.line, before.col) >= (first.line, first.col):
                last = before
        return first.to(last)

    def at_op(self, *texts: str) -> bool:
        return self.tok.is_op(*texts)

    def at_kw(self, *words: str) -> bool:
        return self.tok.is_kw(*words)

    def accept_op(self, text: str) -> Token | None:
        return self.advance() if self.tok.is_op(text) else None

    def accept_kw(self, word: str) -> Token | None:
        return self.advance() if self.tok.is_kw(word) else None

    # ---------------------------------------------------------------- dotted words
    # ``.at`` may arrive as one MEMBER token or as OP '.' plus a word (LANGUAGE.md §2.4.2:
    # ``sync.shared`` and ``mma.fill.f16`` are always two tokens); accept both everywhere.

    def peek_dotted(self) -> tuple[str | None, int]:
        """The word of a dotted word at the cursor and its token count, or (None, 0)."""
        t = self.tok
        if t.kind == MEMBER and isinstance(t.value, str) and t.value.startswith("."):
            return t.value[1:], 1
        if t.is_op(".") and self.peek().kind in (NAME, KEYWORD):
            return str(self.peek().value), 2
        return None, 0

    def accept_dotted(self, *words: str) -> str | None:
        word, n = self.peek_dotted()
        if word is None or word not in words:
            return None
        for _ in range(n):
            self.advance()
        return word

    def expect_dotted(self, *words: str, after: str) -> str:
        word = self.accept_dotted(*words)
        if word is None:
            found, _ = self.peek_dotted()
            what = f"'.{found}'" if found is not None else self.tok.describe()
            self.fail(f"syntax error: unexpected {what}, expecting "
                      f"{alternatives('.' + w for w in words)} after '{after}'.")
        return word

    # ---------------------------------------------------------------- expecting

    def expect_op(self, text: str, message: str | None = None) -> Token:
        if self.tok.is_op(text):
            return self.advance()
        if message is None:
            self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting '{text}'.")
        self.fail_after(message)

    def expect_kw(self, word: str, message: str) -> Token:
        if self.tok.is_kw(word):
            return self.advance()
        self.fail_after(message)

    def expect_close(self, opener: Token) -> Token:
        close = BRACKETS[opener.value]
        return self.expect_op(close, f"syntax error: expected '{close}' to close '{opener.value}'.")

    def comma_list(self, item) -> list:
        """One or more ``item()`` separated by commas, with no brackets around them."""
        items = [item()]
        while self.accept_op(","):
            items.append(item())
        return items

    def end_statement(self) -> Token:
        return self.expect_op(";", "syntax error: expected ';' after the statement.")

    def name(self, what: str = "a name") -> Token:
        """A NAME token; a reserved word here gets the §2.1.3 message."""
        t = self.tok
        if t.kind == NAME:
            return self.advance()
        if t.kind == KEYWORD:
            self.reserved_word()
        self.fail(f"syntax error: unexpected {t.describe()}, expecting {what}.")

    def reserved_word(self):
        self.fail(f"syntax error: '{self.tok.value}' is a reserved word and can not be used "
                  f"as a name.", hint=CUDA.get(str(self.tok.value)))

    def int_literal(self, what: str) -> Token:
        if self.tok.kind == INT:
            return self.advance()
        self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting {what}.")

    # ---------------------------------------------------------------- errors and recovery

    def fail(self, message: str, span: Span | None = None, hint: str | None = None):
        self._report(message, span or self.tok.span, hint)
        raise SyntaxAbort()

    def fail_after(self, message: str):
        s = self.prev.span if self.pos else self.tok.span
        self._report(message, Span(s.file, s.end_line, s.end_col, s.end_line, s.end_col + 1))
        raise SyntaxAbort()

    def _report(self, message: str, span: Span, hint: str | None = None):
        self.errors += 1
        # A second error at the very token where the last one was reported is its echo.
        if self.pos != self.last_error_pos:
            self.sink.error(span, message, hint)
        self.last_error_pos = self.pos

    def warn(self, span: Span, message: str):
        self.sink.warning(span, message)

    def too_deep(self, message: str = f"nesting too deep (more than {MAX_NESTING} levels of "
                                      f"brackets or statements)", hint: str | None = None):
        self.errors += 1
        self.sink.error(self.tok.span, f"syntax error: {message}.", hint)
        raise TooDeep()

    def deepen(self):
        """One more bracket or statement level; ``nested`` gives it back."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.too_deep()

    def lengthen(self):
        """One more operator in a chain; the caller gives it back with ``self.chain -= 1``."""
        self.chain += 1
        if self.chain > MAX_CHAIN:
            self.too_deep(f"expression too long (more than {MAX_CHAIN} operators in a row)",
                          "split it with intermediate variables")

    @contextmanager
    def nested(self):
        try:
            self.deepen()
            yield
        finally:
            self.depth -= 1

    def skip_brackets(self):
        """Skip the bracketed group that opens at the cursor, nested groups included."""
        depth = 0
        while self.tok.kind != EOF:
            t = self.advance()
            if t.kind == OP and t.value in ("(", "[", "{"):
                depth += 1
            elif t.kind == OP and t.value in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return

    def recover(self, start: int):
        """Skip the rest of a statement that began at token ``start`` (§15.1: report every
        error, but one error should not cascade).

        No statement holds a ';' inside parentheses or brackets, nor inside the braces of an
        expression (``{a, b}``, ``{v}``); a block that is the statement's own body starts
        after the error. So: skip to the first ';' outside braces opened after the error,
        consume the '}' of braces opened before it, stop before any other '}' (it closes
        the enclosing block) and stop after a braced body skipped whole (and its 'else')."""
        open_before = 0
        for t in self.toks[start:self.pos]:
            if t.is_op("{"):
                open_before += 1
            elif t.is_op("}") and open_before:
                open_before -= 1
        fresh = 0
        while self.tok.kind != EOF:
            t = self.tok
            if t.is_op(";") and not fresh:
                self.advance()
                return
            if t.is_op("}") and not fresh and not open_before:
                return
            self.advance()
            if t.is_op("{"):
                fresh += 1
            elif t.is_op("}") and fresh:
                fresh -= 1
                if not fresh and not self.accept_kw("else"):  # an 'if' goes on with 'else'
                    return
            elif t.is_op("}"):
                open_before -= 1


def alternatives(items) -> str:
    """``'a', 'b' or 'c'``: how messages list what was expected."""
    quoted = [f"'{x}'" for x in items]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]
