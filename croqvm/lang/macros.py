"""Macros: ``#define`` parsing and expansion over tokens (LANGUAGE.md §1.2.2, §1.2.4).

Expansion follows the C rules with hide sets (Prosser's algorithm without ``#``/``##``):
a token that came out of macro ``M`` never expands ``M`` again, arguments are expanded
before they are substituted, and the result is rescanned together with the rest of the
input, so ``#define F G`` then ``F(1)`` calls ``G``.

Tokens taken from a macro body carry the span of the macro use; argument tokens keep their
own, since they were written at the use. Features that C has but croqvm does not (``#``,
``##``, variadic macros) are reported when such a macro is used inside a ``__co__``
function, so host C++ may keep its own macros.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..core.diagnostics import DiagnosticSink
from .scanner import LineMap, scan
from ..core.source import Span
from .tokens import KEYWORD, NAME, OP, Token

_NAME_RE = re.compile(r"[ \t\r\n\f\v]*([A-Za-z_][A-Za-z0-9_]*)")
_PARAM_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Guards against inputs that would otherwise run for ever or exhaust the stack.
MAX_EXPANDED_TOKENS = 200_000
MAX_ARGUMENT_DEPTH = 100
MAX_NESTING = 256        # macros expanded one inside another: the size of a hide set

UNSUPPORTED_HASH = "'#' and '##' are not supported in macros."
UNSUPPORTED_VARIADIC = "variadic macros ('...') are not supported in macros."


@dataclass
class Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like
    body: str
    body_base: int  # offset of ``body`` in the text ``lines`` maps
    lines: LineMap
    problem: tuple[Span, str] | None = None  # an unsupported feature, reported on use
    _scanned: tuple | None = field(default=None, repr=False)

    def scanned(self) -> tuple[list[Token], list, tuple[Span, str] | None]:
        """Body tokens, the scanner's diagnostics for them, and any unsupported feature."""
        if self._scanned is None:
            local = DiagnosticSink()
            toks = [t for t, _ in scan(self.body, self.body_base, self.lines, local)]
            problem = self.problem
            hashes = [t for t in toks if t.is_op("#")]
            if problem is None and hashes:
                problem = (hashes[0].span, UNSUPPORTED_HASH)
            self._scanned = (toks, local.items, problem)
        return self._scanned


def parse_define(rest: str, base: int, lines: LineMap, where: Span, sink) -> Macro | None:
    """The macro defined by ``#define`` + ``rest`` (``rest`` starts at offset ``base``)."""
    m = _NAME_RE.match(rest)
    if m is None:
        sink.error(where, "macro names must be identifiers.")
        return None
    name, pos = m.group(1), m.end()
    if not rest.startswith("(", pos):  # §1.2.2: no blank before '(' for function-like
        return Macro(name, None, rest[pos:], base + pos, lines)
    close = rest.find(")", pos)
    if close < 0:
        sink.error(where, f"missing ')' in the parameter list of macro '{name}'.")
        return None
    inner = rest[pos + 1:close]
    params = [p.strip() for p in inner.split(",")] if inner.strip() else []
    problem = None
    for p in params:
        if p.endswith("..."):
            at = base + pos + 1 + inner.find("...")
            problem = problem or (lines.span(at, at + 3), UNSUPPORTED_VARIADIC)
        elif not _PARAM_RE.match(p):
            sink.error(where, f"'{p}' may not appear in the parameter list of macro '{name}'.")
            return None
    dup = next((p for i, p in enumerate(params) if p in params[:i]), None)
    if dup is not None:
        sink.error(where, f"duplicate parameter '{dup}' in macro '{name}'.")
        return None
    return Macro(name, tuple(params), rest[close + 1:], base + close + 1, lines, problem)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class Expander:
    """Expands the macros of one token stream; ``items`` are ``(token, env)`` pairs."""

    def __init__(self, sink):
        self.sink = sink
        self.budget = MAX_EXPANDED_TOKENS

    def expand(self, items: list[tuple[Token, dict]]) -> list[Token]:
        return [t for t, _, _ in self._expand([(t, frozenset(), env) for t, env in items], 0)]

    def _expand(self, items, depth):
        pending = items[::-1]  # a stack: the next token is pending[-1]
        out = []
        while pending:
            item = pending.pop()
            tok, hide, env = item
            macro = env.get(tok.value) if env and tok.kind in (NAME, KEYWORD) else None
            if macro is None or tok.value in hide:
                out.append(item)
                continue
            if macro.params is None:
                result = self._substitute(macro, tok, tok.span, [], hide | {macro.name}, env)
            else:
                if not pending or not pending[-1][0].is_op("("):
                    out.append(item)  # a function-like macro name without '(' stays a name
                    continue
                result = self._invoke(macro, item, pending, depth)
                if result is None:
                    continue
            self.budget -= len(result)
            if self.budget < 0:
                self.sink.error(tok.span, "macro expansion is too large.")
                return out + pending[::-1]
            pending.extend(reversed(result))
        return out

    def _invoke(self, macro, item, pending, depth):
        tok, hide, env = item
        collected = _collect_args(pending)
        if collected is None:
            self.sink.error(tok.span, f"unterminated argument list invoking macro '{macro.name}'.")
            return [(tok, hide | {macro.name}, env)]  # left as a plain name
        args, close = collected
        use = tok.span.to(close[0].span)
        if not macro.params and args == [[]]:
            args = []
        if len(args) != len(macro.params):
            self.sink.error(use, f"macro '{macro.name}' expects "
                                 f"{_plural(len(macro.params), 'argument')}, but "
                                 f"{len(args)} {'was' if len(args) == 1 else 'were'} given.")
            return None
        if depth >= MAX_ARGUMENT_DEPTH:
            self.sink.error(use, "macro arguments are nested too deeply.")
            return None
        expanded = [self._expand(arg, depth + 1) for arg in args]
        # Prosser: the result hides what both the name and the ')' hid, plus the macro.
        return self._substitute(macro, tok, use, expanded, (hide & close[1]) | {macro.name},
                                env)

    def _substitute(self, macro, name: Token, use: Span, args, hide, env):
        if len(hide) > MAX_NESTING:
            self.sink.error(use, f"macros expand inside each other too deeply (more than "
                                 f"{MAX_NESTING} levels, at '{macro.name}').")
            return []
        self.budget -= len(hide)   # the hide set its tokens share is memory too
        toks, diags, problem = macro.scanned()
        if problem is not None:
            self.sink.error(problem[0], problem[1])
            return []
        for d in diags:  # lexical errors of the body show at the use (§1.2.4)
            self.sink.error(use, d.message, d.hint)
        index = {p: i for i, p in enumerate(macro.params or ())}
        result = []
        for k, t in enumerate(toks):
            glued = name.glued if k == 0 else t.glued  # what the use shows before the token
            i = index.get(t.value) if t.kind in (NAME, KEYWORD) else None
            if i is None:
                result.append((replace(t, span=use, glued=glued), hide, env))
            else:
                result.extend((replace(a, glued=glued) if j == 0 else a, h | hide, e)
                              for j, (a, h, e) in enumerate(args[i]))
        return result


def _collect_args(pending):
    """Pop ``( a, b )`` off ``pending``; ``(args, close_item)``, or None (and nothing
    popped) when the ``)`` never comes. Only parentheses group, as in C."""
    taken = [pending.pop()]
    depth, args = 1, [[]]
    while pending:
        item = pending.pop()
        taken.append(item)
        t = item[0]
        if t.kind == OP and t.value in ("(", ")", ","):
            if t.value == "(":
                depth += 1
            elif t.value == ")":
                depth -= 1
                if depth == 0:
                    return args, item
            elif depth == 1:
                args.append([])
                continue
        args[-1].append(item)
    pending.extend(reversed(taken))
    return None
