"""Expressions: precedence (LANGUAGE.md §4.1, D2), unary minus (§4.3, D3), primaries and
builtins (§4.4), bounded-variable operators (§5) and view chains (§8).

The levels of §4.1, loosest first, and where each is parsed:

    1 ?:                  ``expr`` (right-associative)
    2-10 || ... #* #/ #%  ``_operators`` over ``BINARY_LEVELS``
    11 prefix ! ++ -- -   ``_prefixed``: its operand is a level-12 expression, so
                          ``!a & b`` is ``!(a & b)``
    12 & ^ |, 13 #        ``_operators`` over ``TIGHT_LEVELS`` of ``_tight_operand``s
    14 prefix ~           ``_unary_tilde``
    15 postfix            ``_postfix``

A prefix operator may start any operand, as in the reference's yacc grammar: where a
level-11 operator follows a tighter one (``a & -x``, ``~!b``), it takes the rest of the
level-12 chain as its operand (``a & -x & b`` is ``a & -(x & b)``).

``_operators`` keeps an explicit operator stack instead of one recursive call per level, so
a nesting level costs few Python frames (see ``parse_base.MAX_NESTING``).
"""
from __future__ import annotations

import math

from croqvm.core import dtypes

from . import ast
from .parse_base import BRACKETS, alternatives
from .suggest import CUDA, did_you_mean
from .tokens import FLOAT, INT, KEYWORD, NAME, OP, STRING

BINARY_LEVELS = {
    "||": 2, "&&": 3, "==": 4, "!=": 4, "<": 5, "<=": 5, ">": 5, ">=": 5, "<<": 6, ">>": 6,
    "+": 7, "-": 7, "*": 8, "/": 8, "%": 8, "#+": 9, "#-": 9, "#*": 10, "#/": 10, "#%": 10,
}
TIGHT_LEVELS = {"&": 12, "^": 12, "|": 12, "#": 13}
PREFIX_OPS = ("!", "++", "--", "-")
LOWEST_ARITHMETIC = BINARY_LEVELS["<<"]  # '<' expr '>' arguments stop before comparisons

BITWISE = frozenset("&^|")
# Operators that bind tighter than '&' in C but looser in Croqtile: the §4.1 warning.
C_TIGHTER_THAN_BITWISE = frozenset(["+", "-", "*", "/", "%", "<<", ">>",
                                    "==", "!=", "<", "<=", ">", ">="])
C_TIGHTER_PREFIX = frozenset(["-", "!"])

BUILTIN_CALLS = frozenset(["cdiv"])  # plus every '__name' keyword but '__to' and '__co__'


class ExprParser:
    # ---------------------------------------------------------------- levels 1-13

    def expr(self) -> ast.Expr:
        with self.nested():
            cond = self._operators(BINARY_LEVELS, 2, self._prefixed)
            if not self.at_op("?"):
                return cond
            self.advance()
            then = self.expr()
            self.expect_op(":", "syntax error: expected ':' in the conditional expression "
                                "'c ? a : b'.")
            other = self.expr()
            return ast.Ternary(cond, then, other, cond.span.to(other.span))

    def arithmetic_expr(self) -> ast.Expr:
        """An expression without comparisons or shifts: an argument inside ``<...>``."""
        with self.nested():
            return self._operators(BINARY_LEVELS, LOWEST_ARITHMETIC + 1, self._prefixed)

    def _operators(self, levels: dict, min_level: int, operand) -> ast.Expr:
        """Left-associative binary operators of ``levels`` (at least ``min_level``) over
        ``operand``s, with an explicit operator stack."""
        operands = [operand()]
        ops = []
        added = 0
        try:
            while self.tok.kind == OP and levels.get(self.tok.value, -1) >= min_level:
                level = levels[self.tok.value]
                while ops and levels[ops[-1].value] >= level:
                    self._reduce(operands, ops)
                ops.append(self.advance())
                added += 1
                self.lengthen()
                operands.append(operand())
            while ops:
                self._reduce(operands, ops)
        finally:
            self.chain -= added
        return operands[0]

    def _reduce(self, operands: list, ops: list):
        op = ops.pop().value
        rhs = operands.pop()
        lhs = operands.pop()
        node = ast.Binary(op, lhs, rhs, lhs.span.to(rhs.span))
        if op in C_TIGHTER_THAN_BITWISE:
            self._warn_bitwise(node, f"'{op}'", (lhs, rhs))
        operands.append(node)

    def _warn_bitwise(self, node, outer: str, operands):
        # Only this direction can occur: an arithmetic or comparison operand of '&' would
        # need parentheses, which is exactly what silences the warning (§4.1).
        for child in operands:
            if (isinstance(child, ast.Binary) and child.op in BITWISE
                    and id(child) not in self.parenthesised):
                self.warn(node.span, f"'{child.op}' binds tighter than {outer} in Croqtile "
                                     f"(unlike C); add parentheses.")
                return

    def _at_prefix(self) -> bool:
        return (self.tok.kind == OP and self.tok.value in PREFIX_OPS
                and not self._negative_literal())

    def _prefixed(self) -> ast.Expr:
        ops = []
        try:
            while self._at_prefix():
                ops.append(self.advance())
                self.lengthen()
            operand = self._operators(TIGHT_LEVELS, 0, self._tight_operand)
        finally:
            self.chain -= len(ops)
        for op in reversed(ops):
            operand = ast.Unary(op.value, operand, op.span.to(operand.span))
            if op.value in C_TIGHTER_PREFIX:
                self._warn_bitwise(operand, f"prefix '{op.value}'", (operand.operand,))
        return operand

    def _tight_operand(self) -> ast.Expr:
        """An operand of ``& ^ | #`` (levels 12-13)."""
        return self._prefixed() if self._at_prefix() else self._unary_tilde()

    def _unary_tilde(self) -> ast.Expr:
        tildes = []
        try:
            while self.at_op("~"):
                tildes.append(self.advance())
                self.lengthen()
            operand = self._prefixed() if tildes and self._at_prefix() else \
                self._postfix(self._primary())
        finally:
            self.chain -= len(tildes)
        for t in reversed(tildes):
            operand = ast.Unary("~", operand, t.span.to(operand.span))
        return operand

    def _negative_literal(self) -> bool:
        """``-`` directly followed (no blank) by a numeric literal (§4.3, D3)."""
        nxt = self.peek()
        return self.tok.is_op("-") and nxt.kind in (INT, FLOAT) and nxt.glued

    # ---------------------------------------------------------------- level 15

    def postfix_expr(self) -> ast.Expr:
        """A primary with its postfix operators (level 15): an assignment target."""
        return self._postfix(self._primary())

    def _postfix(self, expr: ast.Expr) -> ast.Expr:
        added = 0
        try:
            while True:
                nxt = self._postfix_once(expr)
                if nxt is None:
                    return expr
                expr = nxt
                added += 1
                self.lengthen()
        finally:
            self.chain -= added

    def _postfix_once(self, expr: ast.Expr) -> ast.Expr | None:
        word, n = self.peek_dotted()
        if word in _MEMBERS:
            for _ in range(n):
                self.advance()
            return getattr(self, _MEMBERS[word])(expr)
        if word in _CHAINED:
            self.fail(f"syntax error: '.{word}' must follow '.{_CHAINED[word]}(...)'.")
        if word is not None:
            if isinstance(expr, ast.Name) and expr.id in CUDA:   # threadIdx.x
                self.fail(f"syntax error: '{expr.id}.{word}' is CUDA, not Croqtile.",
                          expr.span, CUDA[expr.id])
            at = self.tok.span if n == 1 else self.tok.span.to(self.peek().span)
            self.fail(f"syntax error: unknown member '.{word}'; croqvm knows "
                      f"{alternatives('.' + m for m in _MEMBERS)}.", at,
                      did_you_mean(word, _MEMBERS))
        if self.at_op("["):
            open_ = self.advance()
            index = self.expr()
            self.expect_close(open_)
            return ast.Index(expr, index, self.span_from(expr.span))
        if self.at_op("++", "--"):
            return ast.Postfix(self.advance().value, expr, self.span_from(expr.span))
        if self.at_op("("):
            args = self.paren_args()
            if isinstance(expr, ast.Name) and id(expr) not in self.parenthesised:
                return ast.Call(expr.id, args, self.span_from(expr.span), expr.span)
            return ast.Element(expr, args, self.span_from(expr.span))
        return None

    def paren_args(self, after: str | None = None) -> list[ast.Expr]:
        if after is not None and not self.at_op("("):
            self.fail_after(f"syntax error: expected '(' after '{after}'.")
        return self.expr_list(self.expect_op("("))

    def expr_list(self, opener, item=None) -> list[ast.Expr]:
        """Comma-separated items after ``opener`` up to its closing bracket (may be empty)."""
        item = item or self.expr
        close = BRACKETS[opener.value]
        items = []
        if self.accept_op(close):
            return items
        while True:
            items.append(item())
            if not self.accept_op(","):
                self.expect_close(opener)
                return items

    def _member_at(self, base):
        return ast.ElemAccess(base, self.paren_args(".at"), self.span_from(base.span))

    def _member_chunkat(self, base):
        return ast.ChunkAt(base, self.paren_args(".chunkat"), self.span_from(base.span))

    def _member_subspan(self, base):
        sizes = self.paren_args(".subspan")
        steps = self.paren_args(".step") if self.accept_dotted("step") else None
        at = self.paren_args(".at") if self.accept_dotted("at") else None
        return ast.Subspan(base, sizes, steps, at, self.span_from(base.span))

    def _member_view(self, base):
        """``.view(e0, ... [: t0, ...]).from(f0, ...)``: extents, then element strides."""
        if not self.at_op("("):
            self.fail_after("syntax error: expected '(' after '.view'.")
        open_ = self.advance()
        sizes, strides = [], None
        while not self.at_op(")"):
            sizes.append(self.expr())
            if self.accept_op(":"):
                strides = self.expr_list(open_)
                break
            if not self.accept_op(","):
                self.expect_close(open_)
                break
        else:
            self.advance()
        if not self.accept_dotted("from"):
            self.fail_after("syntax error: expected '.from(...)' after '.view(...)'.")
        origin = self.paren_args(".from")
        return ast.ViewFrom(base, sizes, origin, self.span_from(base.span), strides)

    def _member_span_as(self, base):
        """``.span_as([a, b])`` or ``.span_as(a, b)``: one mdspan or the extents."""
        sizes = self.paren_args(".span_as")
        if not sizes:
            self.fail_after("syntax error: '.span_as' needs a shape, as in '.span_as([4, 8])'.")
        return ast.SpanAs(base, sizes, self.span_from(base.span))

    def _member_sqz(self, base):
        open_ = self.expect_op("(")
        self.expect_close(open_)
        return ast.Squeeze(base, self.span_from(base.span))

    def _member_span(self, base):
        dim = None
        if self.at_op("("):
            open_ = self.advance()
            dim = self.expr()
            self.expect_close(open_)
        return ast.SpanOf(base, dim, self.span_from(base.span))

    def _member_data(self, base):
        return ast.DataOf(base, self.span_from(base.span))

    # ---------------------------------------------------------------- primaries

    def _primary(self) -> ast.Expr:
        t = self.tok
        if t.kind in (INT, FLOAT) or self._negative_literal():
            return self._number()
        if t.kind == STRING:
            self.advance()
            return ast.StringLit(str(t.value), t.span)
        if t.kind == NAME:
            self.advance()
            return ast.Wildcard(t.span) if t.value == "_" else ast.Name(str(t.value), t.span)
        if t.kind == KEYWORD:
            return self._keyword_primary()
        if t.kind == OP and t.value in _OP_PRIMARIES:
            return getattr(self, _OP_PRIMARIES[t.value])()
        self.fail(f"syntax error: unexpected {t.describe()}, expecting an expression.")

    def _number(self) -> ast.Expr:
        minus = self.advance() if self.at_op("-") else None
        t = self.advance()
        span = minus.span.to(t.span) if minus else t.span
        value = -t.value if minus else t.value
        if t.kind == INT:
            return ast.IntLit(int(value), t.dtype or "s32", span)
        return ast.FloatLit(float(value), t.dtype or "f64", span)

    def _keyword_primary(self) -> ast.Expr:
        t = self.tok
        if t.value in ("true", "false"):
            self.advance()
            return ast.BoolLit(t.value == "true", t.span)
        if t.value == "inf":
            self.advance()
            return ast.FloatLit(math.inf, "f32", t.span)
        if t.value == "__to":
            return self._convert()
        if t.value == "call":
            return self.device_call()
        if t.value == "select":
            self.advance()
            return ast.Call("select", self.paren_args("select"), self.span_from(t), t.span)
        if t.value in BUILTIN_CALLS or (str(t.value).startswith("__") and t.value != "__co__"):
            self.advance()
            args = self.paren_args(t.value)
            return ast.Call(t.value, args, self.span_from(t), t.span)
        self.reserved_word()

    def _convert(self) -> ast.Expr:
        start = self.advance()
        self.expect_op("<", "syntax error: expected '<' and a type after '__to', as in "
                            "'__to<f32>(x)'.")
        if self.tok.kind == STRING:
            name = self._foreign_type()
        else:
            name = self.type_ref().name
        self.expect_op(">", "syntax error: expected '>' after the type of '__to<...>'.")
        open_ = self.expect_op("(", "syntax error: expected '(' after '__to<...>'.")
        operand = self.expr()
        self.expect_close(open_)
        return ast.Convert(name, operand, self.span_from(start))

    def _foreign_type(self) -> str:
        """``__to<"type">``: the reference pastes the C++ type into generated code; on
        croqvm it means a conversion when the string names an element type's C type
        (dtypes.FOREIGN), and is refused otherwise (a pointer, a library type)."""
        t = self.advance()
        name = dtypes.FOREIGN.get(" ".join(str(t.value).split()))
        if name is None:
            self.fail(f"the foreign cast '__to<\"{t.value}\">' names a C++ type that is no "
                      f"element type: croqvm runs no C++ it could be pasted into.", t.span,
                      "write __to<T>(...) with an element type T, such as __to<f16>(x)")
        return name

    def device_call(self) -> ast.DeviceCall:
        """``call NAME[::NAME...] [<args>] (args)`` (§6.10)."""
        start = self.advance()
        name = self._qualified_name("the function name after 'call'")
        targs = []
        if self.at_op("<"):
            self.advance()
            while True:
                targs.append(self._template_arg())
                if not self.accept_op(","):
                    break
            self.expect_op(">", "syntax error: expected '>' after the template arguments.")
        if not self.at_op("("):
            self.fail(f"syntax error: expected '(' and the arguments after 'call "
                      f"{name.id}'.")
        args = self.paren_args()
        return ast.DeviceCall(name.id, targs, args, self.span_from(start), name.span)

    def _qualified_name(self, what: str) -> ast.Name:
        first = self.name(what)
        parts, span = [str(first.value)], first.span
        while self.at_op("::"):
            self.advance()
            t = self.name("a name after '::'")
            parts.append(str(t.value))
            span = span.to(t.span)
        return ast.Name("::".join(parts), span)

    def _template_arg(self) -> ast.Expr:
        """A template argument: a constant expression, or a name of the host C++ code."""
        if self.tok.kind == NAME and self.peek().is_op("::"):
            return self._qualified_name("a template argument")
        return self.arithmetic_expr()

    def _paren(self) -> ast.Expr:
        open_ = self.advance()
        inner = self.expr()
        self.expect_close(open_)
        inner.span = self.span_from(open_)  # the parentheses belong to the construct
        self.parenthesised.add(id(inner))
        return inner

    def _ituple(self) -> ast.Expr:
        open_ = self.advance()
        elems = self.expr_list(open_)
        return ast.ITupleLit(elems, self.span_from(open_))

    def _mdspan(self) -> ast.Expr:
        open_ = self.advance()
        elems = self.expr_list(open_)
        return ast.MdspanLit(elems, self.span_from(open_))

    def _extent(self) -> ast.Expr:
        hash_ = self.advance()
        name = self.name("a name after '#' (the bound '#x' of a bounded variable)")
        return ast.Extent(ast.Name(str(name.value), name.span), self.span_from(hash_))

    def _elem_count(self) -> ast.Expr:
        bar = self.advance()
        with self.nested():
            operand = self._unary_tilde()
        self.expect_op("|", "syntax error: expected '|' to close '|' (the element count "
                            "'|a.span|').")
        return ast.ElemCount(operand, self.span_from(bar))


# Postfix member words and the method parsing each (§4.4, §8).
_MEMBERS = {
    "at": "_member_at", "chunkat": "_member_chunkat", "subspan": "_member_subspan",
    "view": "_member_view", "span": "_member_span", "data": "_member_data",
    "span_as": "_member_span_as", "sqz": "_member_sqz",
}
# Member words valid only right after another one.
_CHAINED = {"step": "subspan", "from": "view"}

# Operators that start a primary in prefix position.
_OP_PRIMARIES = {"(": "_paren", "{": "_ituple", "[": "_mdspan", "#": "_extent",
                 "|": "_elem_count"}
