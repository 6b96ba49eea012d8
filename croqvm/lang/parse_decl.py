"""Declarations: buffers (LANGUAGE.md §3.3), scalars, ituples and mdspans (§3.4) and events
(§10.1), plus the written types they share with parameters (§3.1)."""
from __future__ import annotations

import dataclasses

from croqvm.core import dtypes

from . import ast
from .tokens import INT, KEYWORD, NAME

# Every element-type spelling is a reserved word (§2.1.3).
TYPE_WORDS = frozenset(dtypes.BY_NAME) | frozenset(dtypes.ALIASES)
SHAPE_TYPES = ("ituple", "mdspan")


class DeclParser:
    def type_ref(self) -> ast.TypeRef:
        t = self.tok
        if t.kind == KEYWORD and t.value in TYPE_WORDS:
            self.advance()
            return ast.TypeRef(str(t.value), t.span)
        self.fail(f"syntax error: unexpected {t.describe()}, expecting a type such as 's32' "
                  f"or 'f16'.")

    # ---------------------------------------------------------------- statements

    def _storage_decl(self) -> ast.Stmt:
        """``global|shared|local`` then a buffer or an event declaration."""
        start = self.advance()
        if self.at_kw("event"):
            return self._event_decl(start)
        dtype = self.type_ref()
        if not self.at_op("["):
            self.fail_after(f"syntax error: expected '[' and the shape of the '{start.value}' "
                            f"buffer after '{dtype.name}'.")
        return self._buffer_decl(start, str(start.value), dtype)

    def _typed_decl(self) -> ast.Stmt:
        """``T [shape] b ...;`` or ``(int|bool|T|ituple|mdspan) x = e, ...;``."""
        start = self.tok
        if self.at_kw(*SHAPE_TYPES):
            return self._scalar_decl(start, False, self._shape_type())
        dtype = self.type_ref()
        if self.at_op("["):
            return self._buffer_decl(start, None, dtype)
        return self._scalar_decl(start, False, dtype)

    def _mutable_decl(self) -> ast.Stmt:
        start = self.advance()
        t = self.tok
        written = None
        if t.kind == KEYWORD and t.value in SHAPE_TYPES:
            written = self._shape_type()
        elif t.kind == KEYWORD and t.value in TYPE_WORDS:
            self.advance()
            written = ast.TypeRef(str(t.value), t.span)
        return self._scalar_decl(start, True, written)

    def _shape_type(self) -> ast.TypeRef:
        """``mdspan`` or ``ituple``, with an optional rank ``<N>`` (Croqtile:
        shapes-and-mdspan.md, integers-and-ituples.md)."""
        t = self.advance()
        rank = None
        if self.accept_op("<"):
            n = self.tok
            if n.kind != INT or not isinstance(n.value, int) or n.value <= 0:
                self.fail(f"syntax error: the rank of '{t.value}<N>' must be a positive "
                          f"integer literal.")
            self.advance()
            rank = n.value
            self.expect_op(">", f"syntax error: expected '>' after the rank of "
                                f"'{t.value}<{rank}>'.")
        return ast.TypeRef(str(t.value), self.span_from(t), rank)

    def _scalar_decl(self, start, mutable: bool, written: ast.TypeRef | None) -> ast.Stmt:
        items = self.comma_list(lambda: self._scalar_item(written))
        self.end_statement()
        return ast.ScalarDecl(mutable, written, items, self.span_from(start))

    def _scalar_item(self, written: ast.TypeRef | None) -> ast.ScalarItem:
        name = self.name()
        init = None
        # ``mdspan sp : [a, b];`` is the reference's spelling of an mdspan initializer.
        if written is not None and written.name == "mdspan" and self.accept_op(":"):
            init = self._derived_shape() if self.tok.kind == NAME and \
                self.peek().is_op("[") else self.expr()
        elif self.accept_op("="):
            init = self.expr()
        return ast.ScalarItem(str(name.value), init, self.span_from(name))

    def _derived_shape(self) -> ast.Expr:
        """``shape [(0) / 2, (1) + 1, 1]``: an mdspan whose items read dimension ``k`` of
        ``shape`` as ``(k)`` (Croqtile: shapes-and-mdspan.md), that is ``shape(k)``."""
        base = self.advance()
        open_ = self.advance()
        items = self.expr_list(open_)
        return ast.MdspanLit([self._dimension_refs(str(base.value), base.span, x)
                              for x in items], self.span_from(base))

    def _dimension_refs(self, base: str, base_span, e):
        if isinstance(e, ast.IntLit) and id(e) in self.parenthesised:
            return ast.Call(base, [e], e.span, base_span)
        for f in dataclasses.fields(e) if dataclasses.is_dataclass(e) else ():
            value = getattr(e, f.name)
            if isinstance(value, ast.Expr):
                setattr(e, f.name, self._dimension_refs(base, base_span, value))
            elif isinstance(value, list):
                setattr(e, f.name, [self._dimension_refs(base, base_span, v)
                                    if isinstance(v, ast.Expr) else v for v in value])
        return e

    def _buffer_decl(self, start, storage: str | None, dtype: ast.TypeRef) -> ast.Stmt:
        open_ = self.advance()
        shape = self.expr_list(open_)
        if not shape:
            self.fail("syntax error: a buffer shape needs at least one dimension.",
                      self.span_from(open_))
        items = self.comma_list(self._buffer_item)
        self.end_statement()
        return ast.BufferDecl(storage, dtype, shape, items, self.span_from(start))

    def _buffer_item(self) -> ast.BufferItem:
        name = self.name()
        array = self._subscripts()
        init = None
        if self.accept_op("{"):
            init = self.expr()
            self.expect_op("}", "syntax error: expected '}' after the fill value of a buffer "
                                "(one value, as in '{0}').")
        return ast.BufferItem(str(name.value), array, init, self.span_from(name))

    def _subscripts(self) -> list[ast.Expr]:
        """``name[N][M]``: the dimensions of a buffer or event array (§8.5)."""
        dims = []
        while self.at_op("["):
            open_ = self.advance()
            dims.append(self.expr())
            self.expect_close(open_)
        return dims

    def _event_decl(self, storage_tok=None) -> ast.Stmt:
        """``[shared] event[<N>] e[S], f [= ready];`` (§10.1)."""
        start = storage_tok or self.tok
        self.advance()  # 'event'
        count = None
        if self.accept_op("<"):
            count = self.arithmetic_expr()
            self.expect_op(">", "syntax error: expected '>' after the arrival count of "
                                "'event<N>'.")
        items = []
        while True:
            name = self.name()
            array = self._subscripts()
            span = self.span_from(name)
            ready = self.accept_op("=") is not None
            if ready:
                self._ready()
            items.append(ast.EventItem(str(name.value), array, ready, span))
            if not self.accept_op(","):
                break
        self.end_statement()
        storage = str(storage_tok.value) if storage_tok is not None else None
        return ast.EventDecl(storage, count, items, self.span_from(start))

    def _ready(self):
        t = self.tok
        if not (t.kind == NAME and t.value == "ready"):
            self.fail("event initializer must be 'ready'")
        self.advance()
