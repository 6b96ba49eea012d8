"""``parallel``, ``with`` and ``foreach`` (LANGUAGE.md §6.1 ``parallel``/``plevel``/``with``/
``within``/``foreach``/``range``, §5.5 ranges, §6.2-§6.4)."""
from __future__ import annotations

from . import ast
from .parse_base import alternatives
from .tokens import GROUP4, INT, KEYWORD, NAME

LEVELS = ("cluster", "block", "group-4", "group", "thread")


class LoopParser:
    # ---------------------------------------------------------------- parallel

    def _parallel(self) -> ast.Stmt:
        start = self.advance()
        is_async = self.accept_dotted("async") is not None
        stream = None
        if self.accept_op("<"):
            stream = str(self.name("the name of a 'stream' parameter").value)
            form = "parallel.async<s>" if is_async else "parallel<s>"
            self.expect_op(">", f"syntax error: expected '>' after the stream of '{form}'.")
        levels = self.comma_list(self._plevel)
        devices = [lv for lv in levels if (lv.level or "").startswith("device(")]
        if devices:
            if len(levels) > 1 or stream is not None:
                self.fail("syntax error: a 'device(...)' level stands alone in its "
                          "'parallel'.", devices[0].span)
            return ast.DeviceRegion(is_async, devices[0].level[7:-1], devices[0],
                                    self.body(), self.span_from(start))
        body = self.body()
        inner = _only_parallel(body)
        if levels[-1].level == "cluster" and inner is not None and not inner.is_async \
                and inner.stream is None:
            # one statement of the levels, as 'parallel c by C : cluster, b by B : block'
            levels, body = levels + inner.levels, inner.body
        return ast.Parallel(is_async, stream, levels, body, self.span_from(start))

    def _plevel(self) -> ast.PLevel:
        start = self.tok
        names, tuple_name = [], None
        if self.tok.kind == NAME and self.peek().is_op("="):
            tuple_name = str(self.advance().value)
            self.advance()
            names = self._brace_names()
        elif self.at_op("{"):
            names = self._brace_names()
        elif self.tok.kind == NAME:
            names = [str(self.advance().value)]
        elif self.tok.kind == KEYWORD and not self.at_kw("by"):
            self.reserved_word()
        elif not self.at_kw("by"):
            self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting 'by', "
                      f"'{{' or a name.")
        self.expect_kw("by", "syntax error: expected 'by' after the parallel variables.")
        bounds, is_list = self._bound()
        level, cooperative = None, False
        if self.accept_op(":"):
            level = self._device_level() if self.at_kw("device") and self.peek().is_op("(") \
                else self.level()
            cooperative = self.accept_op("<") is not None
        if cooperative:
            if self.tok.kind not in (NAME, KEYWORD) or self.tok.value != "cooperative":
                self.fail(f"syntax error: unexpected {self.tok.describe()}, expecting "
                          "'cooperative' in 'block<cooperative>'.")
            self.advance()
            self.expect_op(">", "syntax error: expected '>' after 'block<cooperative'.")
        pl = ast.PLevel(names, tuple_name, bounds, is_list, level, self.span_from(start))
        pl.cooperative = cooperative
        return pl

    def _device_level(self) -> str:
        """``device(NAME)`` (§14.2.1), as the level text ``device(NAME)``."""
        self.advance()
        open_ = self.advance()
        name = self.name("a device name ('cpu' or 'gpu')")
        self.expect_close(open_)
        return f"device({name.value})"

    def level(self) -> str:
        """``block``, ``group-4``, ``group`` or ``thread`` (§6.1 ``level``)."""
        t = self.tok
        if t.kind == GROUP4:
            self.advance()
            return "group-4"
        if t.is_kw("group") and self._split_group4():
            return "group-4"
        if t.kind == KEYWORD and t.value in LEVELS:
            return str(self.advance().value)
        self.fail(f"syntax error: unexpected {t.describe()}, expecting {alternatives(LEVELS)}.")

    def _split_group4(self) -> bool:
        """``group-4`` written without blanks but tokenized as ``group`` ``-`` ``4``."""
        g, minus, four = self.tok, self.peek(), self.peek(2)
        if not (minus.is_op("-") and four.kind == INT and four.value == 4):
            return False
        if (minus.span.line, minus.span.col) != (g.span.end_line, g.span.end_col) or \
                (four.span.line, four.span.col) != (minus.span.end_line, minus.span.end_col):
            return False
        for _ in range(3):
            self.advance()
        return True

    def _bound(self) -> tuple[list[ast.Expr], bool]:
        """``expr`` or ``'[' expr {',' expr} ']'`` (§6.1 ``bound``)."""
        if self.at_op("["):
            open_ = self.advance()
            items = self.expr_list(open_)
            if not items:
                self.fail("syntax error: a bound list '[...]' needs at least one bound.",
                          self.span_from(open_))
            return items, True
        return [self.expr()], False

    def _brace_names(self) -> list[str]:
        open_ = self.expect_op("{")
        names = self.expr_list(open_, self.name)
        if not names:
            self.fail("syntax error: '{}' needs at least one name.", self.span_from(open_))
        return [str(t.value) for t in names]

    # ---------------------------------------------------------------- with, foreach

    def _with(self) -> ast.Stmt:
        start = self.advance()
        withins = self.comma_list(self._within)
        return ast.With(withins, self.body(), self.span_from(start))

    def _within(self) -> ast.Within:
        start = self.tok
        tuple_name = None
        if self.tok.kind == NAME and self.peek().is_op("=") and self.peek(2).is_op("{"):
            tuple_name = str(self.advance().value)
            self.advance()
        braced = self.at_op("{")
        if braced:
            names = self._brace_names()
        else:
            names = [str(self.name("'{' or a name").value)]
        self.expect_kw("in", "syntax error: expected 'in' after the iteration variables.")
        bound, is_list = self._bound()
        return ast.Within(names, tuple_name, bound, is_list, self.span_from(start), braced)

    def _foreach(self) -> ast.Stmt:
        start = self.advance()
        items = self.comma_list(self._foreach_item)
        withins = [i for i in items if isinstance(i, ast.Within)]
        ranges = [i for i in items if isinstance(i, ast.Range)]
        if withins and ranges:
            self.fail("syntax error: a 'foreach' iterates either 'in' bounds or ranges of "
                      "bounded variables, not both.", self.span_from(start))
        unroll = self._unroll_hint() if self.at_op(":") else None
        span = self.span_from(start)
        return ast.Foreach(withins, ranges, self.body(), span, unroll)

    def _unroll_hint(self) -> int:
        """``: unroll`` (0) or ``: unroll(k)``, a hint for code generation that croqvm's
        engines need not follow (lib/parser.yy ``suffix_expr``)."""
        self.advance()
        t = self.tok
        if not t.is_kw("unroll"):
            self.fail("syntax error: expected 'unroll' or 'unroll(k)' after ':' of the "
                      "'foreach'.")
        self.advance()
        if not self.at_op("("):
            return 0
        open_ = self.advance()
        t = self.tok
        if t.kind != INT or not isinstance(t.value, int) or t.value <= 0:
            self.fail("syntax error: unroll factor must be a positive integer.",
                      hint="write a positive integer literal, as in 'unroll(2)'")
        self.advance()
        self.expect_close(open_)
        return t.value

    def _foreach_item(self):
        t, nxt = self.tok, self.peek()
        if t.is_op("{") or (t.kind == NAME and nxt.is_kw("in")) or \
                (t.kind == NAME and nxt.is_op("=") and self.peek(2).is_op("{")):
            return self._within()
        return self._range()

    def _range(self) -> ast.Range:
        """``[u =] t['(' [lo] ':' [hi] [':' step] ')']`` (§5.5)."""
        start = self.tok
        new_name = None
        if self.tok.kind == NAME and self.peek().is_op("="):
            new_name = str(self.advance().value)
            self.advance()
        name = str(self.name("a name, '{' or a range such as 't(1:)'").value)
        lo = hi = step = None
        if self.at_op("("):
            open_ = self.advance()
            lo = None if self.at_op(":", "::") else self.expr()
            if self.at_op("::"):    # longest match makes '::' one token (§2.4.1)
                self.fail(f"syntax error: '::' is one token, not two ':' of the range of "
                          f"'{name}'.", hint=f"put a blank between them, as in "
                                             f"'{name}(0: :2)', or write '{name}(0:0:2)'")
            self.expect_op(":", f"syntax error: expected ':' in the range of '{name}', as in "
                                f"'{name}(lo:hi)'.")
            hi = None if self.at_op(":", ")") else self.expr()
            if self.accept_op(":") and not self.at_op(")"):  # ``t(lo:hi:)``: the default
                step = self._step(name)
            self.expect_close(open_)
        return ast.Range(new_name, name, lo, hi, step, self.span_from(start))

    def _step(self, name: str) -> int:
        t = self.tok
        if t.kind != INT or not isinstance(t.value, int) or t.value <= 0:
            self.fail(f"syntax error: the step of the range of '{name}' must be a positive "
                      f"integer literal.")
        self.advance()
        return t.value


def _only_parallel(body):
    """The ``parallel`` statement that is all of ``body``, or None."""
    while isinstance(body, ast.Block) and len(body.stmts) == 1:
        body = body.stmts[0]
    return body if isinstance(body, ast.Parallel) else None
