"""The checker's state: scopes, symbols, the enclosing parallel levels, diagnostics.

Conventions used by every module of this package:
- ``ck`` is the ``Checker`` of the function being checked;
- ``ck.expr(e)`` types an expression, annotates ``e.ty`` and returns the type;
- ``ck.stmt(s)`` checks a statement; an unexpected failure inside becomes an
  ``internal error: ...`` diagnostic at that statement (LANGUAGE.md §15.1);
- a type ``Unknown`` marks a value whose error was already reported: rules accept it
  silently, so one bad declaration gives one diagnostic, not one per use.
"""
from __future__ import annotations

from dataclasses import dataclass

from croqvm.lang import ast
from croqvm.lang.types import Symbol, Type


@dataclass(frozen=True)
class Unknown(Type):
    """The type of an erroneous expression (already reported)."""

    def __str__(self):
        return "<error>"


UNKNOWN = Unknown()


def is_bad(sym) -> bool:
    """A missing or erroneous declaration (already reported)."""
    return sym is None or bool(sym.info.get("bad"))


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th' (messages of §8.6)."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


class Scope:
    """One lexical scope (§3.4.4): a function body, a braced block or a statement body."""

    def __init__(self, parent: Scope | None, joined: bool = False):
        self.parent = parent
        self.joined = joined    # one scope with its parent: a body and the names bound for it
        self.names: dict[str, Symbol] = {}

    def declares(self, name: str) -> bool:
        """``name`` is declared in this scope (a joined scope includes its parent)."""
        scope = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent if scope.joined else None
        return False

    def find(self, name: str) -> Symbol | None:
        scope = self
        while scope is not None:
            sym = scope.names.get(name)
            if sym is not None:
                return sym
            scope = scope.parent
        return None


class Checker:
    """Checks one function. ``expr_rules`` / ``stmt_rules`` map AST classes to handlers
    ``rule(ck, node)``; they are assembled in ``croqvm.lang.check.__init__``."""

    def __init__(self, sink, fn: ast.Function, expr_rules: dict, stmt_rules: dict,
                 function_names=frozenset(), device_functions=None):
        self.sink = sink
        self.fn = fn
        self.function_names = function_names          # the program's functions (§1.1.3)
        self.device_functions = device_functions or {}  # name -> __co_device__ (§6.10)
        self.expr_rules = expr_rules
        self.stmt_rules = stmt_rules
        self.scope = Scope(None)
        self.symbols: list[Symbol] = []
        # The scope each symbol was declared in: held here, not on the symbol, so that the
        # scopes of a checked function are freed with the checker.
        self.scope_of: dict[Symbol, Scope] = {}
        self.parallels: list[ast.Parallel] = []      # enclosing parallel statements
        self.levels: list[tuple[str, ast.PLevel]] = []  # enclosing levels, outer first
        self.loop_depth = 0
        self.inthreads: list[ast.Inthreads] = []     # enclosing inthreads of this kernel level
        self.inthreads_total = 0                     # enclosing inthreads, all levels
        self.returns: list[tuple[ast.Return, Type]] = []
        self.unknown_names: set[str] = set()
        self.late_names: list[ast.Name] = []          # uses of futures and fragments
        self.warned_params: set[int] = set()
        self.facts: dict[str, object] = {}           # bookkeeping of dma, events

    # ----------------------------------------------------------------- diagnostics

    def error(self, span, message: str, hint: str | None = None):
        self.sink.error(span, message, hint)

    def warning(self, span, message: str, hint: str | None = None):
        self.sink.warning(span, message, hint)

    # ----------------------------------------------------------------- dispatch

    def expr(self, e: ast.Expr) -> Type:
        rule = self.expr_rules.get(type(e))
        ty = rule(self, e) if rule is not None else self._no_rule(e)
        e.ty = ty
        return ty

    def _no_rule(self, node) -> Type:
        self.error(node.span, f"internal error: no check for '{type(node).__name__}'.")
        return UNKNOWN

    def stmt(self, s: ast.Stmt):
        rule = self.stmt_rules.get(type(s))
        try:
            if rule is None:
                self._no_rule(s)
            else:
                rule(self, s)
        except RecursionError:
            self.error(s.span, "nesting too deep")
        except Exception as exc:  # a checker bug must not hide the user's other errors
            self.error(s.span, f"internal error: {type(exc).__name__}: {exc}")

    def body(self, s: ast.Stmt, joined: bool = False):
        """A statement body of ``if``/``while``/``foreach``...: its own scope (§3.4.4).
        ``joined``: the body shares the scope of the names bound for it (parameters,
        ``parallel``, ``with`` and ``foreach`` variables), so it can not declare them again."""
        with self.scoped(joined):
            if isinstance(s, ast.Block):
                for inner in s.stmts:
                    self.stmt(inner)
            else:
                self.stmt(s)

    # ----------------------------------------------------------------- scopes

    def scoped(self, joined: bool = False):
        return _ScopeGuard(self, joined)

    def lookup(self, name: str) -> Symbol | None:
        return self.scope.find(name)

    def visible_names(self) -> list[str]:
        """Every name the current scope sees (for did-you-mean hints)."""
        names, scope = [], self.scope
        while scope is not None:
            names += scope.names
            scope = scope.parent
        return names

    def declare(self, name: str, kind: str, ty: Type, decl, span, *, mutable=False,
                **fields) -> Symbol:
        """Declare ``name`` in the current scope. A name declared in the same scope is an
        error; one of an enclosing scope is shadowed (§3.4.4, lib/earlysema.cpp's one
        definition rule is per scope). On error the new symbol is still returned (marked
        bad) so checking can go on."""
        sym = Symbol(name, kind, ty, decl, mutable=mutable,
                     parallel=self.parallels[-1] if self.parallels else None, **fields)
        self.scope_of[sym] = self.scope
        if name == "_":
            self.error(span, "'_' can not be used as a name: it means a whole dimension in "
                             "'chunkat', 'subspan' and 'view' arguments.")
            sym.info["bad"] = True
            self.symbols.append(sym)
            return sym
        if self.scope.declares(name):
            self.error(span, f"symbol '{name}' has been declared already.")
            sym.info["bad"] = True
            self.symbols.append(sym)
            return sym
        self.scope.names[name] = sym
        self.symbols.append(sym)
        return sym

    def bad_symbol(self, name: str, kind: str, ty: Type, decl, span=None, **fields):
        """A symbol for a declaration already reported as wrong: in no scope, quiet."""
        sym = Symbol(name, kind, ty, decl,
                     parallel=self.parallels[-1] if self.parallels else None, **fields)
        self.scope_of[sym] = self.scope
        sym.info["bad"] = True
        self.symbols.append(sym)
        return sym

    def bind_name(self, name: ast.Name, sym: Symbol):
        """Annotate a declaring or re-targeted name (DMA, dma.any and MMA targets)."""
        name.sym = sym
        name.ty = sym.type
        if sym.kind in ("future", "fragment"):
            self.late_names.append(name)

    # ----------------------------------------------------------------- where we are

    @property
    def in_parallel(self) -> bool:
        return bool(self.parallels)

    @property
    def current_parallel(self):
        return self.parallels[-1] if self.parallels else None

    def outside_current_parallel(self, sym: Symbol) -> bool:
        """D14: declared outside the innermost enclosing ``parallel``."""
        return self.in_parallel and sym.parallel is not self.current_parallel

    def check_modifiable(self, sym: Symbol, span) -> bool:
        """§3.4.2 and D14 for an assignment, ``++``/``--``, DMA target or swap: a scalar of
        an enclosing parallel-by is each instance's own copy (a warning), as in the
        reference compiler's code; a future can not be changed there."""
        if sym.info.get("bad"):
            return False
        if sym.kind == "scalar" and self.outside_current_parallel(sym):
            self.warning(span, f"'{sym.name}' is declared outside the parallel-by: each "
                               f"instance changes a copy of its own.",
                         "the change is not seen outside the instance; to combine the "
                         "values of the instances, let each write its own element of a "
                         "buffer (indexed by its parallel variable) and add the elements up "
                         "after the parallel-by")
            return True
        if sym.kind == "future" and self.outside_current_parallel(sym):
            if sym.info.get("placeholder") and sym.parallel is None and \
                    not sym.info.get("host_data"):
                sym.info["instance_future"] = True     # each instance's own (§3.4.5)
                return True
            self.error(span, f"'{sym.name}' is declared outside the parallel-by and can "
                             f"not be modified inside it.")
            return False
        if sym.kind == "future" and not self.in_parallel:
            sym.info["host_data"] = True
        return True

    def fact(self, key: str, factory):
        if key not in self.facts:
            self.facts[key] = factory()
        return self.facts[key]


class _ScopeGuard:
    def __init__(self, ck: Checker, joined: bool):
        self.ck = ck
        self.joined = joined

    def __enter__(self):
        self.ck.scope = Scope(self.ck.scope, self.joined)
        return self.ck.scope

    def __exit__(self, *exc):
        self.ck.scope = self.ck.scope.parent
        return False
