"""Lowering: the checked AST -> a bytecode ``Module`` (ARCHITECTURE.md "The bytecode";
docs/EXECUTION.md is the contract with the engines).

    module, diagnostics = lower_program(program, sources)

The input is the AST after ``check_program`` reported no error, annotated as
``croqvm.lang.ast`` describes. A construct croqvm cannot lower stops its function with a
diagnostic at the construct; an unexpected failure becomes an ``internal error:``
diagnostic at the node being lowered (LANGUAGE.md §15.1), never a raw exception.

Modules: builder (one Code), hoist (loop-invariant instructions out of their loops, when
a Code is finished), state (the Lowerer and contexts), values (lowered values and
environments), exprs, views (§8), stmts (§3, §5.5, §6.4-§6.6), output (§6.9, §13), host
(§14), kernel (§6.2-§7.4), dma (§9), events (§10), mma (§11), calls (§6.10).
"""
from __future__ import annotations

import gc

from croqvm.bytecode.module import Module, Words
from croqvm.bytecode.verify import static_shared_bytes
from croqvm.core.diagnostics import Diagnostic
from croqvm.core.errors import CompileError
from croqvm.lang import ast
from croqvm.core.limits import MAX_REGISTERS, MAX_SHARED_BYTES, shared_limit_message
from croqvm.core.source import SourceFile
from croqvm.core.source import SpanTable as SourceSpans

from . import (calls, dma, events, exprs, frags, hetero, host, kernel, mma, output, stmts,
               views)
from .builder import SpanTable
from .state import Lowerer

STMT_TABLE = {**stmts.TABLE, **output.TABLE, **host.TABLE, **kernel.TABLE, **dma.TABLE,
              **events.TABLE, **mma.TABLE, **frags.TABLE, **calls.TABLE, **hetero.TABLE}
EXPR_TABLE = {**exprs.TABLE, **views.TABLE, **calls.EXPR_TABLE}

__all__ = ["lower_program"]


def lower_program(program: ast.Program, sources: list[SourceFile], release: bool = False,
                  collect: bool = False, keep: bool = True):
    """``(module, diagnostics)``: the module of every function that lowered, and for each
    other function the error that stopped it (a construct croqvm can not lower, or a
    resource limit: every function is lowered, so that ``croqvm check`` reports what
    ``compile`` rejects all at once). The module may be used only without diagnostics.

    ``release``: each function keeps only its name, signature and spans once lowered
    (``_release``), so that the tree shrinks as the module grows: a large program does
    not hold both whole; ``collect``: what is released is also freed as lowering goes
    (a large program's: each collection walks every live object of the process);
    ``keep=False``: each function is checked against the limits as soon as it is lowered
    and then dropped (``croqvm check``, which wants the diagnostics only): the module
    returned has no functions."""
    spans = SpanTable(list(sources))
    cxx = calls.CxxTable(program.cxx)
    functions, diagnostics = [], []
    lowered = [fn for fn in program.functions if not fn.device]
    # The tree is cyclic (symbols and the nodes declaring them), and compiling runs with
    # the cycle collector paused (core/collector.py): what is released is freed by a
    # collection, run after each eighth of the functions. Each walks every live object,
    # so a fixed number of them keeps the time linear in the program.
    every = max(1, len(lowered) // 8)
    for count, fn in enumerate(lowered, 1):
        lw = Lowerer(list(sources), spans, STMT_TABLE, EXPR_TABLE)
        lw.node_span = fn.span
        lw.cxx = cxx
        try:
            lowered_fn = host.lower_function(lw, fn)
            for code in [lowered_fn.host] + [k.code for k in lowered_fn.kernels]:
                code.code = Words(code.code)
            if keep:
                functions.append(lowered_fn)
            else:
                diagnostics += _over_limits(Module(spans.sources, spans.rows, [lowered_fn]),
                                            lowered_fn)
            del lowered_fn
        except CompileError as err:
            diagnostics += err.diagnostics
        except RecursionError:
            diagnostics.append(Diagnostic("error", "nesting too deep to lower.", lw.node_span))
        except Exception as exc:  # a croqvm bug: report it at the node being lowered
            diagnostics.append(Diagnostic("error", f"internal error: {type(exc).__name__}: "
                                                   f"{exc}", lw.node_span))
        if release:
            _release(fn)
            if collect and count % every == 0:
                gc.collect()
    module = Module(spans.sources, spans.rows, functions, calls=spans.calls,
                    cxx_source=cxx.source(), cxx=cxx.funcs)
    for fn in functions:
        diagnostics += _over_limits(module, fn)
    return module, diagnostics


def _release(fn: ast.Function) -> None:
    """Drop what lowering ``fn`` read: its body, parameters and symbols. A symbol and
    the nodes declaring it refer to each other; the links are cut, so that most of the
    tree is freed here rather than by the next collection."""
    for sym in fn.sym_table or ():
        sym.decl = sym.parallel = sym.plevel = sym.bound_expr = None
        sym.info = {}
    fn.body = ast.Block([], fn.body.span)
    fn.params, fn.ret_shape, fn.sym_table = [], None, None


def _over_limits(module: Module, fn) -> list[Diagnostic]:
    """The hardware limits the verifier enforces, as source errors at the function (its
    host program) or the kernel (its ``parallel``) that breaks them."""
    places = SourceSpans(module.sources, module.spans)
    out = []
    codes = [(fn.host, fn.span, f"the host code of '{fn.name}'")] + \
        [(k.code, k.span, "this kernel") for k in fn.kernels]
    for code, span, what in codes:
        if len(code.regs) > MAX_REGISTERS:
            out.append(Diagnostic("error", f"{what} needs {len(code.regs)} registers, more than "
                                  f"the limit of {MAX_REGISTERS}.", places.span(span),
                                  "split the function, or use loops instead of repeated "
                                  "statements"))
    for kern, used in zip(fn.kernels, static_shared_bytes(module, fn)):
        if used > MAX_SHARED_BYTES:
            out.append(Diagnostic("error", f"this kernel needs {shared_limit_message(used)}.",
                                  places.span(kern.span),
                                  "shared memory holds every shared buffer of a block and 8 "
                                  "bytes per event slot: use smaller tiles or fewer stages"))
    return out
