"""Lowering: the checked AST -> a bytecode ``Module`` (ARCHITECTURE.md "The bytecode";
docs/EXECUTION.md is the contract with the engines).

    module = lower_program(program, sources)

The input is the AST after ``check_program`` reported no error, annotated as
``croqvm.lang.ast`` describes. Constructs croqvm cannot lower raise ``CompileError`` with a
diagnostic at the construct; an unexpected failure becomes an ``internal error:``
diagnostic at the node being lowered (LANGUAGE.md §15.1), never a raw exception.

Modules: builder (one Code), state (the Lowerer and contexts), values (lowered values and
environments), exprs, views (§8), stmts (§3, §5.5, §6.4-§6.6), output (§6.9, §13), host
(§14), kernel (§6.2-§7.4), dma (§9), events (§10), mma (§11).
"""
from __future__ import annotations

from croqvm.bytecode.module import Module
from croqvm.errors import CompileError, CroqvmError
from croqvm.lang import ast
from croqvm.source import SourceFile

from . import dma, events, exprs, host, kernel, mma, output, stmts, views
from .builder import SpanTable
from .state import Lowerer

STMT_TABLE = {**stmts.TABLE, **output.TABLE, **host.TABLE, **kernel.TABLE, **dma.TABLE,
              **events.TABLE, **mma.TABLE}
EXPR_TABLE = {**exprs.TABLE, **views.TABLE}

__all__ = ["lower_program"]


def lower_program(program: ast.Program, sources: list[SourceFile]) -> Module:
    spans = SpanTable(list(sources))
    functions = []
    for fn in program.functions:
        lw = Lowerer(list(sources), spans, STMT_TABLE, EXPR_TABLE)
        lw.node_span = fn.span
        try:
            functions.append(host.lower_function(lw, fn))
        except CroqvmError:
            raise
        except RecursionError:
            lw.error(lw.node_span, "nesting too deep to lower.")
        except Exception as exc:  # a croqvm bug: report it at the node being lowered
            try:
                lw.error(lw.node_span, f"internal error: {type(exc).__name__}: {exc}")
            except CompileError as err:
                raise err from exc
    return Module(spans.sources, spans.rows, functions)
