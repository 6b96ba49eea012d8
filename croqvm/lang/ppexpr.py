"""``#if`` / ``#elif`` conditions: integer constant expressions with C precedence (§1.2.3).

``defined X`` / ``defined(X)`` are replaced first, then macros expand, then every name
left is 0. Arithmetic is C's on 64-bit signed integers (``intmax_t``); a division by zero
is an error only where C would evaluate it (not behind a short-circuit).
"""
from __future__ import annotations

from .macros import Expander
from .tokens import FLOAT, INT, KEYWORD, NAME, OP, STRING, Token

# C binary operators, loosest first (C11 §6.5.5-§6.5.14).
_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%"))
_LEVEL_OF = {op: i for i, ops in enumerate(_LEVELS) for op in ops}
_UNARY = ("+", "-", "!", "~")
MAX_NESTING = 64  # C11 §5.2.4.1 asks for 63 levels of parentheses


def _wrap(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_BINARY = {
    "*": lambda a, b: a * b, "/": _cdiv, "%": lambda a, b: a - b * _cdiv(a, b),
    "+": lambda a, b: a + b, "-": lambda a, b: a - b,
    "<<": lambda a, b: a << b if 0 <= b < 64 else 0,
    ">>": lambda a, b: a >> min(b, 63) if b >= 0 else 0,
    "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "&": lambda a, b: a & b, "^": lambda a, b: a ^ b, "|": lambda a, b: a | b,
    "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b)),
}
_UNARY_FN = {"+": lambda a: a, "-": lambda a: -a, "!": lambda a: int(not a), "~": lambda a: ~a}


class _Bad(Exception):
    def __init__(self, span, message):
        super().__init__(message)
        self.span, self.message = span, message


def evaluate_condition(items: list[tuple[Token, dict]], directive: str, where, sink) -> bool:
    """The truth of one ``#if``/``#elif`` condition; errors are reported and count as false."""
    try:
        toks = Expander(sink).expand(_replace_defined(items, directive))
        if not toks:
            raise _Bad(where, f"'#{directive}' with no expression.")
        parser = _Parser(toks, directive, where)
        value = parser.ternary(True, 0)
        if parser.pos < len(toks):
            t = toks[parser.pos]
            raise _Bad(t.span, f"missing binary operator before {t.describe()} in '#{directive}'.")
        return value != 0
    except _Bad as bad:
        sink.error(bad.span, bad.message)
        return False


def _replace_defined(items, directive):
    out, i = [], 0
    while i < len(items):
        tok, env = items[i]
        if tok.kind not in (NAME, KEYWORD) or tok.value != "defined":
            out.append(items[i])
            i += 1
            continue
        paren = i + 1 < len(items) and items[i + 1][0].is_op("(")
        j = i + 2 if paren else i + 1
        name = items[j][0] if j < len(items) else None
        if name is None or name.kind not in (NAME, KEYWORD):
            raise _Bad(tok.span, f"'defined' needs a macro name in '#{directive}'.")
        if paren and not (j + 1 < len(items) and items[j + 1][0].is_op(")")):
            raise _Bad(tok.span, f"missing ')' after 'defined' in '#{directive}'.")
        end = j + 2 if paren else j + 1
        out.append((Token(INT, int(name.value in env), tok.span, "s32"), {}))
        i = end
    return out


class _Parser:
    """Precedence climbing over ``_LEVELS``; ``live`` is False behind a short-circuit."""

    def __init__(self, toks, directive, where):
        self.toks, self.pos, self.directive, self.where = toks, 0, directive, where

    def peek_op(self, *ops):
        t = self.toks[self.pos] if self.pos < len(self.toks) else None
        return t is not None and t.kind == OP and t.value in ops

    def take(self) -> Token:
        if self.pos >= len(self.toks):
            end = self.toks[-1].span
            raise _Bad(end, f"'#{self.directive}' expression ends unexpectedly.")
        self.pos += 1
        return self.toks[self.pos - 1]

    def ternary(self, live, depth):
        cond = self.binary(0, live, depth)
        if not self.peek_op("?"):
            return cond
        self.take()
        yes = self.ternary(live and cond != 0, depth + 1)
        if not self.peek_op(":"):
            raise _Bad(self.take().span, f"expected ':' in '#{self.directive}'.")
        self.take()
        no = self.ternary(live and cond == 0, depth + 1)
        return yes if cond else no

    def binary(self, min_level, live, depth):
        left = self.unary(live, depth)
        while True:
            t = self.toks[self.pos] if self.pos < len(self.toks) else None
            level = _LEVEL_OF.get(t.value) if t is not None and t.kind == OP else None
            if level is None or level < min_level:
                return left
            op = self.take()
            # && and || do not evaluate their right side once the left decides (C11 §6.5.13)
            rlive = live and not (op.value == "&&" and not left or op.value == "||" and left)
            right = self.binary(level + 1, rlive, depth)
            if op.value in ("/", "%") and right == 0:
                if rlive:
                    raise _Bad(op.span, f"division by zero in '#{self.directive}'.")
                left = 0
                continue
            left = _wrap(_BINARY[op.value](left, right))

    def unary(self, live, depth):
        if depth > MAX_NESTING:
            raise _Bad(self.where, f"'#{self.directive}' expression is nested too deeply.")
        t = self.take()
        if t.kind == OP and t.value in _UNARY:
            return _wrap(_UNARY_FN[t.value](self.unary(live, depth + 1)))
        if t.is_op("("):
            value = self.ternary(live, depth + 1)
            if not self.peek_op(")"):
                raise _Bad(t.span, f"missing ')' in '#{self.directive}' expression.")
            self.take()
            return value
        if t.kind == INT:
            return _wrap(t.value)
        if t.kind in (NAME, KEYWORD):
            return 0  # §1.2.3: names that are not macros count as 0
        what = {FLOAT: "floating-point literals", STRING: "strings"}.get(t.kind)
        if what:
            raise _Bad(t.span, f"{what} are not allowed in '#{self.directive}'.")
        raise _Bad(t.span, f"unexpected {t.describe()} in '#{self.directive}'.")
