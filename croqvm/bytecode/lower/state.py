"""The state of lowering one function, shared by every lowering module.

Conventions (used throughout ``croqvm/bytecode/lower/``): ``lw`` the ``Lowerer``, ``b`` its
current ``CodeBuilder`` (host program, kernel, or a laneset's straight-line code), ``ctx``
the ``Ctx`` of the statement being lowered, ``v`` a ``Val``.

Statement and expression handlers live in their own modules and are reached through the
dispatch tables ``lw.stmt_table`` / ``lw.expr_table`` (keyed by AST node class), so the
modules never import each other.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from croqvm.core import dtypes
from croqvm.core.errors import CompileError
from croqvm.lang import ast
from croqvm.lang.check.consteval import const_value
from croqvm.lang import types as T
from croqvm.core.diagnostics import Diagnostic, render
from croqvm.core.source import SourceFile, Span

from .builder import CodeBuilder, SpanTable
from .values import Env, Val


@dataclass(frozen=True)
class Ctx:
    """Where a statement runs (§7.2, §7.4).

    unit: lanes per instance of the innermost enclosing level: -1 host, 0 the block,
      128 a group-4 instance, 32 a group instance, 1 a lane.
    outer: the statement is outer-level (§7.2.1): its shared/global element writes, prints
      and asserts happen once per instance.
    guards: the enclosing regions (``LevelInfo``) and ``Inthreads`` nodes, outermost first;
      they define the statement's collective set (§7.4.1).
    mma_unit: unit of the innermost enclosing group-4 (128) or group (32) level, else None.
    level: the ``LevelInfo`` of the innermost enclosing level (None on the host).
    """
    unit: int = -1
    outer: bool = False
    guards: tuple = ()
    mma_unit: int | None = None
    level: object = None

    @property
    def in_kernel(self) -> bool:
        return self.unit >= 0


class Lowerer:
    def __init__(self, sources: list[SourceFile], spans: SpanTable, stmt_table, expr_table):
        self.sources = {s.name: s for s in sources}
        self.spans = spans
        self.stmt_table = stmt_table
        self.expr_table = expr_table
        self.b: CodeBuilder | None = None
        self.env: Env | None = None
        self.kernel = None          # kernel.KernelState while lowering a kernel
        self.fn = None              # function.FunctionState
        self.straight = False       # laneset code: no control flow may be emitted
        self.ctx = Ctx()
        self.node_span: Span | None = None  # for internal-error reports
        self.names: list[dict] = [{}]       # lexical name -> Symbol (for ``t(i)`` calls)
        self.cxx = None                     # calls.CxxTable: the module's C++ functions

    # ---------------------------------------------------------------- diagnostics
    def error(self, span: Span | None, message: str, hint: str | None = None):
        d = Diagnostic("error", message, span, hint)
        raise CompileError(render(d, self.sources), [d])

    def unsupported(self, node, what: str):
        self.error(getattr(node, "span", self.node_span), f"not supported by croqvm yet: {what}.")

    def snippet(self, span: Span | None) -> str:
        """The source text of ``span`` (first line only), for messages naming an operand."""
        if span is None:
            return ""
        src = self.sources.get(span.file)
        if src is None:
            return ""
        return src.excerpt(span)

    # ---------------------------------------------------------------- dispatch
    def stmt(self, s: ast.Stmt) -> None:
        handler = self.stmt_table.get(type(s))
        if handler is None:
            self.unsupported(s, f"the statement '{self.snippet(s.span)}'")
        saved_span, saved_node = self.b.span, self.node_span
        self.b.span = self.node_span = s.span
        handler(self, s)
        self.b.span, self.node_span = saved_span, saved_node

    def expr(self, e: ast.Expr) -> Val:
        handler = self.expr_table.get(type(e))
        if handler is None:
            self.unsupported(e, f"the expression '{self.snippet(e.span)}' here")
        saved = self.node_span
        self.node_span = e.span
        v = handler(self, e)
        self.node_span = saved
        return v

    def body(self, s: ast.Stmt | None) -> None:
        """A nested body: its own lexical scope (§3.4.4)."""
        if s is None:
            return
        self.names.append({})
        try:
            self.stmt(s)
        finally:
            self.names.pop()

    # ---------------------------------------------------------------- names
    def bind(self, sym, value) -> None:
        self.env.bind(sym, value)
        if sym is not None:
            self.names[-1][sym.name] = sym

    def lookup(self, sym, node=None):
        v = self.env.get(sym)
        if v is None:
            where = " inside a parallel-by" if self.kernel is not None else ""
            if self.kernel is not None and getattr(sym, "parallel", 0) is None:
                self.unsupported(node, f"using the host {sym.kind} '{sym.name}'{where}")
            self.unsupported(node, f"using '{sym.name}' here")
        return v

    def symbol_named(self, name: str):
        for scope in reversed(self.names):
            if name in scope:
                return scope[name]
        return None

    # ---------------------------------------------------------------- context switches
    @contextmanager
    def using(self, b: CodeBuilder, env: Env, straight: bool = False):
        saved = (self.b, self.env, self.straight)
        span = self.b.span if self.b is not None else None
        self.b, self.env, self.straight = b, env, straight
        self.b.span = self.b.span or span
        try:
            yield
        finally:
            self.b, self.env, self.straight = saved

    @contextmanager
    def in_ctx(self, ctx: Ctx):
        saved = self.ctx
        self.ctx = ctx
        try:
            yield
        finally:
            self.ctx = saved

    # ---------------------------------------------------------------- kernel contexts
    @contextmanager
    def once_guard(self, applies: bool = True):
        """Outer-level side effects happen once per instance (§7.2.2)::

            t := ONCE site, unit ; IF t ; <effect> ; END
        """
        if not (applies and self.ctx.in_kernel and self.ctx.outer):
            yield
            return
        code = self.b.code
        site = code.once_sites
        code.once_sites += 1
        t = self.b.reg(dtypes.BOOL)
        self.b.emit("ONCE", t, site, self.ctx.unit)
        pc = self.b.open_if(t)
        yield
        self.b.close_if(pc)

    def coll_site(self, text: str, unit: int = 0) -> int:
        """A collective site for the current context (-1 on the host: one lane, §14.2)."""
        if self.kernel is None:
            return -1
        from .kernel import coll_site
        return coll_site(self, text, unit)

    # ---------------------------------------------------------------- small helpers
    def true_reg(self) -> int:
        return self.b.load_const(dtypes.BOOL, True)

    def int_reg(self, value: int) -> int:
        return self.b.load_const(dtypes.S32, value)

    def static_sizes(self, exprs, what: str) -> list[int]:
        """The compile-time values of array sizes (``name[N][M]``); an error where not."""
        sizes = []
        for a in exprs:
            n = const_value(a)
            if not isinstance(n, int):
                self.error(a.span, f"croqvm needs the size of {what} at compile time.",
                           "use a literal or a macro")
            sizes.append(n)
        return sizes

    def as_int(self, v: Val) -> int:
        """The value of ``v`` as an s32 register (indices, extents, bounds)."""
        return self.b.convert(v.reg, dtypes.S32)


def dtype_of(ty) -> dtypes.DType | None:
    """The register dtype holding a value of static type ``ty``."""
    if isinstance(ty, T.Scalar):
        return ty.dtype
    if isinstance(ty, T.Bounded):
        return dtypes.S32
    return None
