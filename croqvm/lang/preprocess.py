"""The preprocessor (LANGUAGE.md §1.2): comments, directives, conditional regions.

It runs over the whole file in line order and produces a text of the same length and line
structure as the source, in which comments, directive lines and false regions are blanked
out, plus the macro table in force on every line (definitions count from their line on,
host text included). Expansion itself happens later, inside ``__co__`` functions only
(``macros.Expander``).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from .macros import Macro, parse_define
from .ppexpr import evaluate_condition
from .scanner import LineMap, scan
from ..core.source import SourceFile
from .tokens import INT, STRING

COMMAND_LINE = "<command line>"   # the file name of -D macros
DIRECTIVES = frozenset("define undef if ifdef ifndef elif else endif include line pragma".split())
_DIRECTIVE_RE = re.compile(r"[ \t\f\v\r]*#[ \t\f\v\r]*([A-Za-z_][A-Za-z0-9_]*)")
_NAME_RE = re.compile(r"[ \t\f\v\r\n]*([A-Za-z_][A-Za-z0-9_]*)")

# Host C++ lexemes that may hide comment starters, quotes or braces (§1.1.1): raw strings,
# strings and character literals (each ends at its line's end when unterminated), numbers
# with digit separators, names, comments, braces.
HOST_LEXEME = re.compile(r"""
    (?P<raw>(?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\((?s:.*?)\)(?P=delim)")
  | (?P<string>"[^"\\\n]*(?:\\.[^"\\\n]*)*"?)
  | (?P<char>'[^'\\\n]*(?:\\.[^'\\\n]*)*'?)
  | (?P<word>[0-9](?:'?[A-Za-z0-9_.])*|[A-Za-z_][A-Za-z0-9_]*)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*(?s:.*?)(?:\*/|\Z))
  | (?P<brace>[{}])
""", re.VERBOSE)


class MacroTable:
    """Every definition and removal of each macro, numbered in file order: the tables in
    force on all lines share it (one copy per ``#define`` would take memory quadratic in
    the number of macros)."""

    def __init__(self, initial: dict[str, Macro]):
        self.version = 0
        self.history = {name: ([0], [m]) for name, m in initial.items()}  # versions, macros
        self.now = MacroView(self, 0)

    def set(self, name: str, macro: Macro | None) -> None:
        """``#define`` (``macro``) or ``#undef`` (None) of ``name`` from here on."""
        self.version += 1
        versions, macros = self.history.setdefault(name, ([], []))
        versions.append(self.version)
        macros.append(macro)
        self.now = MacroView(self, self.version)


class MacroView:
    """The macro table as it was at one version of a ``MacroTable``: ``get`` and ``in`` as
    on a dict."""
    __slots__ = ("table", "version")

    def __init__(self, table: MacroTable, version: int):
        self.table, self.version = table, version

    def get(self, name: str, default=None) -> Macro | None:
        found = self.table.history.get(name)
        if found is None:
            return default
        k = bisect_right(found[0], self.version)
        macro = found[1][k - 1] if k else None
        return default if macro is None else macro

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __bool__(self) -> bool:
        return bool(self.table.history)


@dataclass
class Preprocessed:
    text: str  # the source with comments, directives and false regions blanked
    lines: LineMap
    envs: list[MacroView]  # the macro table on each physical line

    def env_at(self, offset: int) -> MacroView:
        return self.envs[self.lines.line_index(offset)]


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def strip_comments(text: str, lines: LineMap, sink) -> str:
    """``text`` with every comment replaced by blanks, newlines kept (§1.2.1)."""
    pieces, last = [], 0
    for m in HOST_LEXEME.finditer(text):
        kind = m.lastgroup
        if kind not in ("line_comment", "block_comment"):
            continue
        if kind == "block_comment" and (len(m.group()) < 4 or not m.group().endswith("*/")):
            sink.error(lines.span(m.start(), m.start() + 2), "unterminated comment.")
        pieces += [text[last:m.start()], _blank(m.group())]
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces)


def initial_macros(defines: dict[str, str | None] | None, sink) -> dict[str, Macro]:
    """The ``-D`` macros (§1.2.4), ``{name: body}``: a body of None is ``-D NAME`` (1),
    a string is ``-D NAME=VALUE`` (``""`` defines NAME as nothing); a name ``NAME(a)``
    makes a function-like macro."""
    env = {}
    for name, value in (defines or {}).items():
        text = f"{name} {'1' if value is None else value}"
        lines = LineMap(text, COMMAND_LINE)
        macro = parse_define(text, 0, lines, lines.span(0, len(name)), sink)
        if macro is not None:
            env[macro.name] = macro
    return env


def _option_text(macro: Macro) -> str:
    """How the user wrote a ``-D`` macro: ``-D STAGES=4``."""
    params = "" if macro.params is None else f"({', '.join(macro.params)})"
    return f"-D {macro.name}{params}={macro.body.strip()}"


@dataclass
class _Cond:
    kind: str  # the opening directive, for messages
    parent_active: bool
    taken: bool  # some branch of this #if was chosen already
    where: object
    else_seen: bool = False


class _Pass:
    """One walk over the lines; ``active`` says whether the current line is compiled."""

    def __init__(self, src: SourceFile, defines, sink):
        self.sink = sink
        self.lines = LineMap(src.text, src.name)
        self.text = strip_comments(src.text, self.lines, sink)
        self.rows = self.text.split("\n")
        self.macros = MacroTable(initial_macros(defines, sink))
        self.envs: list[MacroView] = []
        self.stack: list[_Cond] = []
        self.active = True
        self.file, self.delta = src.name, 0  # #line state: logical line = index + 1 + delta

    def run(self) -> Preprocessed:
        i = 0
        while i < len(self.rows):
            self._number(i)
            m = _DIRECTIVE_RE.match(self.rows[i])
            if m and m.group(1) in DIRECTIVES:
                i = self._directive(i, m)
                continue
            if not self.active:
                self.rows[i] = _blank(self.rows[i])
            self.envs.append(self.macros.now)
            i += 1
        for cond in self.stack:
            self.sink.error(cond.where, f"unterminated '#{cond.kind}'.")
        return Preprocessed("\n".join(self.rows), self.lines, self.envs)

    def _number(self, i: int):
        self.lines.logical[i] = (self.file, i + 1 + self.delta)

    def _directive(self, i: int, m) -> int:
        """Handle the directive starting on row ``i``; returns the next row."""
        j = i
        while self.rows[j].rstrip(" \t\r").endswith("\\") and j + 1 < len(self.rows):
            j += 1  # '\' continues the directive (§1.2.2)
            self._number(j)
        start = self.lines.starts[i]
        hash_at = start + self.rows[i].index("#")
        body_at = start + m.end()
        rows = [self.rows[k] for k in range(i, j + 1)]
        rows[:-1] = [re.sub(r"\\([ \t\r]*)$", r" \1", r) for r in rows[:-1]]
        body = "\n".join(rows)[m.end():]
        where = self.lines.span(hash_at, start + len(self.rows[i].rstrip(" \t\r")))
        for k in range(i, j + 1):
            self.rows[k] = _blank(self.rows[k])
            self.envs.append(self.macros.now)
        name = m.group(1)
        if name in _CONDITIONALS:
            _CONDITIONALS[name](self, name, body, body_at, where)
        elif self.active and name in _ACTIONS:
            _ACTIONS[name](self, body, body_at, where, j)
        return j + 1

    # ----------------------------------------------------------------- conditionals

    def _condition(self, directive, body, body_at, where) -> bool:
        if directive in ("ifdef", "ifndef"):
            m = _NAME_RE.match(body)
            if m is None:
                self.sink.error(where, f"no macro name given in '#{directive}' directive.")
                return False
            return (m.group(1) in self.macros.now) == (directive == "ifdef")
        toks = scan(body, body_at, self.lines, self.sink)
        return evaluate_condition([(t, self.macros.now) for t, _ in toks], directive, where,
                                  self.sink)

    def _if(self, directive, body, body_at, where):
        cond = self.active and self._condition(directive, body, body_at, where)
        self.stack.append(_Cond(directive, self.active, cond, where))
        self.active = cond

    def _innermost(self, directive, where) -> _Cond | None:
        """The open conditional an ``#elif`` or ``#else`` continues, reporting one that
        has none or that follows that conditional's ``#else``."""
        if not self.stack:
            self.sink.error(where, f"'#{directive}' without '#if'.")
            return None
        top = self.stack[-1]
        if top.else_seen:
            self.sink.error(where, f"'#{directive}' after '#else'.")
        return top

    def _elif(self, directive, body, body_at, where):
        top = self._innermost(directive, where)
        if top is None:
            return
        chosen = (top.parent_active and not top.taken
                  and self._condition(directive, body, body_at, where))
        top.taken = top.taken or chosen
        self.active = chosen

    def _else(self, directive, body, body_at, where):
        top = self._innermost(directive, where)
        if top is None:
            return
        top.else_seen = True
        self.active = top.parent_active and not top.taken
        top.taken = True

    def _endif(self, directive, body, body_at, where):
        if not self.stack:
            self.sink.error(where, "'#endif' without '#if'.")
            return
        self.active = self.stack.pop().parent_active

    # ----------------------------------------------------------------- actions

    def _define(self, body, body_at, where, last_row):
        macro = parse_define(body, body_at, self.lines, where, self.sink)
        if macro is None:
            return
        old = self.macros.now.get(macro.name)
        if old is not None and old.lines.logical[0][0] == COMMAND_LINE and \
                (old.params, old.body.strip()) != (macro.params, macro.body.strip()):
            # as C compilers warn "macro redefined": the file silently wins otherwise
            self.sink.warning(where, f"macro '{macro.name}' redefined: this '#define' "
                                     f"overrides '{_option_text(old)}' from the command line.",
                              f"guard the definition with '#ifndef {macro.name}' ... "
                              f"'#endif' to let -D choose the value")
        self.macros.set(macro.name, macro)

    def _undef(self, body, body_at, where, last_row):
        m = _NAME_RE.match(body)
        if m is None:
            self.sink.error(where, "no macro name given in '#undef' directive.")
        elif m.group(1) in self.macros.now:
            self.macros.set(m.group(1), None)

    def _line(self, body, body_at, where, last_row):
        toks = [t for t, _ in scan(body, body_at, self.lines, self.sink)]
        ok = (1 <= len(toks) <= 2 and toks[0].kind == INT and toks[0].value > 0
              and (len(toks) == 1 or toks[1].kind == STRING))
        if not ok:
            self.sink.error(where, "'#line' needs a positive line number and, optionally, "
                                   "a file name in quotes.")
            return
        if len(toks) == 2:
            self.file = toks[1].value
        self.delta = toks[0].value - last_row - 2  # the next row is line N (§1.2.4)

    def _ignore(self, body, body_at, where, last_row):
        """``#include`` is not followed and ``#pragma`` has no effect (§1.2.4)."""


_CONDITIONALS = {"if": _Pass._if, "ifdef": _Pass._if, "ifndef": _Pass._if,
                 "elif": _Pass._elif, "else": _Pass._else, "endif": _Pass._endif}
_ACTIONS = {"define": _Pass._define, "undef": _Pass._undef, "line": _Pass._line,
            "include": _Pass._ignore, "pragma": _Pass._ignore}


def preprocess(src: SourceFile, defines: dict[str, str | None] | None, sink) -> Preprocessed:
    """Preprocess ``src`` with the command-line macros ``defines`` (see ``initial_macros``)."""
    return _Pass(src, defines, sink).run()
