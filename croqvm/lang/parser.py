"""The parser: token lists -> ``ast.Program`` (LANGUAGE.md §6.1 grammar, §4.1 precedence,
§15 diagnostics).

    parse_program(functions, sink) -> ast.Program
    parse_function(tokens, sink) -> ast.Function | None

Each token list is one ``__co__`` or ``__co_device__`` function from the lexer (first token
``__co__`` or ``__co_device__``, last EOF).
Syntax errors and the §4.1 precedence warning go to ``sink``; parsing recovers after each
error so that independent errors are all reported, and no token list makes it raise. A
function with a syntax error is still parsed to the end but not returned.

The grammar is split by topic: ``parse_expr`` (expressions), ``parse_stmt`` (blocks, control
flow, assignments), ``parse_loops`` (``parallel``/``with``/``foreach``), ``parse_decl``
(declarations and types), ``parse_device`` (DMA, MMA, events, sync), ``parse_base`` (the
token cursor, error reports and recovery).
"""
from __future__ import annotations

from typing import Iterable

from . import ast
from .parse_base import Cursor, SyntaxAbort, TooDeep
from .parse_decl import DeclParser
from .parse_device import DeviceParser
from .parse_expr import ExprParser
from .parse_loops import LoopParser
from .parse_stmt import StmtParser
from .tokens import EOF, KEYWORD, NAME, Token

RETURN_WORDS = ("void", "auto")
PARAM_STORAGES = ("global", "shared", "local")


class Parser(StmtParser, LoopParser, DeclParser, DeviceParser, ExprParser, Cursor):
    def function(self) -> ast.Function | None:
        start = self.tok
        try:
            header = self._header()
        except SyntaxAbort:
            header = None
            self._skip_to_body()
        body = self.block() if self.at_op("{") else None
        if self.tok.kind != EOF and body is not None:
            self._report(f"syntax error: unexpected {self.tok.describe()} after the end of "
                         f"the function.", self.tok.span)
        if header is None or body is None or self.errors:
            return None
        ret, ret_shape, name, params = header
        return ast.Function(ret, ret_shape, str(name.value), params, body,
                            self.span_from(start), name.span, start.is_kw("__co_device__"))

    def _header(self):
        """``(__co__|__co_device__) (T [shape]|void|auto) NAME ( params )`` (§6.1
        ``function``, §6.10, §14.3)."""
        if not self.at_kw("__co__", "__co_device__"):
            self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting '__co__'.")
        self.advance()
        ret = self._return_type()
        ret_shape = None
        if self.at_op("["):
            open_ = self.advance()
            ret_shape = self.expr_list(open_)
        name = self.name("the function name")
        open_ = self.expect_op("(", f"syntax error: expected '(' and the parameters after "
                                    f"the function name '{name.value}'.")
        params = self.expr_list(open_, self._param)
        if not self.at_op("{"):
            self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting '{{' to "
                      f"open the body of '{name.value}'.")
        return ret, ret_shape, name, params

    def _return_type(self) -> ast.TypeRef:
        t = self.tok
        if t.is_kw(*RETURN_WORDS):
            self.advance()
            return ast.TypeRef(str(t.value), t.span)
        if t.kind == KEYWORD:
            return self.type_ref()
        self.fail(f"syntax error: unexpected {t.describe()}, expecting a return type "
                  f"('void', 'auto' or a type such as 's32').")

    def _param(self) -> ast.Param:
        """``[global] T [dims] [&] [NAME]``, ``(int|bool|T) [&] [NAME]`` or ``stream [NAME]``."""
        start = self.tok
        storage = str(self.advance().value) if self.at_kw(*PARAM_STORAGES) else None
        shape = None
        if self.at_kw("stream"):
            t = self.advance()
            written = ast.TypeRef("stream", t.span)
        else:
            written = self.type_ref()
            if self.at_op("["):
                shape = self.expr_list(self.advance(), self._dim)
                if not shape:
                    self.fail("syntax error: a parameter shape needs at least one dimension.",
                              self.prev.span)
        if storage is not None and shape is None:  # scalars take no qualifier (§3.2.3)
            self.fail_after(f"syntax error: expected '[' and the shape of the '{storage}' "
                            f"buffer after '{written.name}'.")
        by_ref = self.accept_op("&") is not None
        name = None
        if self.tok.kind == NAME:
            name = str(self.advance().value)
        elif self.tok.kind == KEYWORD:
            self.reserved_word()
        return ast.Param(storage, written, shape, name, self.span_from(start), by_ref)

    def _dim(self) -> ast.Dim:
        """A parameter dimension: an expression or ``?`` (§3.3.3)."""
        if self.at_op("?") and self.peek().is_op(",", "]"):
            t = self.advance()
            return ast.Dim(None, t.span)
        e = self.expr()
        return ast.Dim(e, e.span)

    def _skip_to_body(self):
        """After a header error: continue at the body's '{' so its errors are reported."""
        depth = 0
        while self.tok.kind != EOF:
            if self.at_op("(", "["):
                depth += 1
            elif self.at_op(")", "]"):
                depth = max(depth - 1, 0)
            elif self.at_op("{") and depth == 0:
                return
            self.advance()


def parse_function(tokens: list[Token], sink) -> ast.Function | None:
    """Parse one ``__co__`` function; None when it has syntax errors (reported to sink)."""
    p = Parser(tokens, sink)
    try:
        return p.function()
    except RecursionError:
        # MAX_NESTING keeps well clear of this; a caller already deep in its own stack
        # still gets the same report.
        try:
            p.too_deep()
        except TooDeep:
            return None
    except TooDeep:
        return None  # reported where the limit was hit
    except SyntaxAbort:
        return None  # reported; raised outside any statement (the body's braces)
    except Exception as exc:  # noqa: BLE001 - §15.1: an internal failure is a diagnostic
        sink.error(p.tok.span, f"internal error: {type(exc).__name__}: {exc}")
        return None


def parse_program(functions: Iterable[list[Token]], sink) -> ast.Program:
    """Parse every function; those with syntax errors are left out (errors are in sink).
    Each token list is dropped once parsed: ``functions`` may make them one at a time
    (``lexer.function_tokens``)."""
    parsed = (parse_function(tokens, sink) for tokens in functions)
    return ast.Program([f for f in parsed if f is not None])
