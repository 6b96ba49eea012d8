"""The semantic checker (LANGUAGE.md §3-§11, §14.3, §15.2).

``check_program(program, sink)`` reports static errors and warnings into ``sink`` and
annotates the AST in place for the lowering stage (see ``croqvm.lang.ast``):

- every ``Expr`` gets ``ty`` (a ``croqvm.lang.types`` type);
- every ``Name`` gets ``sym``; declaring nodes get their symbols (``Param.sym``,
  ``BufferItem.sym``, ``ScalarItem.sym``, ``EventItem.sym``, ``PLevel.syms``,
  ``Within.syms``, ``Range.sym``/``Range.var_sym``), and ``Assign``, ``Dma``, ``DmaAny``,
  ``MmaFill``, ``MmaLoad`` get ``declares`` and ``sym``;
- every ``Parallel`` gets ``kinds`` and ``is_kernel``;
- every ``Function`` gets ``sym_table``, all the symbols declared in it.

Facts kept in ``Symbol.info`` for later stages: ``"const"`` (value of an immutable scalar
with a constant initializer), ``"bound_dim"`` (which dimension of an mdspan-valued
``bound_expr`` bounds a with/parallel variable), ``"binder"`` ("parallel", "with" or
"foreach"), ``"ready"`` (events), ``"placeholder"`` (``dma.any`` futures), ``"units"``
(the 'group'/'group-4' kinds a fragment is used under, §11.2). Checker-internal:
``"bad"`` (an erroneous declaration), ``"lane_dep"`` (a thread index the
value depends on, §9.3.3), ``"typed_at"``, ``"span_early"`` and ``"later"`` (placeholder
types, §9.4.4; see ``dma``).

Modules: ``context`` (state, scopes), ``typerules`` (types, conversions), ``consteval``,
``exprs`` and ``views`` (expressions), ``decls``, ``control``, ``loops``, ``parallel`` and
``levels``, ``dma``, ``events``, ``mma`` (statements), ``functions`` (parameters, returns).
"""
from __future__ import annotations

from croqvm.lang import ast

from . import (calls, control, decls, dma, events, exprs, frags, hetero, loops, mma, parallel,
               views)
from .functions import check_function

EXPR_RULES = {**exprs.RULES, **views.RULES, **calls.RULES}
STMT_RULES = {**control.RULES, **decls.RULES, **loops.RULES, **parallel.RULES,
              **dma.RULES, **events.RULES, **mma.RULES, **frags.RULES,
              **calls.STMT_RULES, **hetero.RULES}
FINISHERS = (dma.finish, events.finish, mma.finish)


def check_program(program: ast.Program, sink) -> None:
    """Check every function of ``program``; never raises for any input (§15.1)."""
    seen: set[str] = set()
    names = frozenset(fn.name for fn in program.functions if not fn.device)
    device = {**{fn.name: fn for fn in program.cxx},
              **{fn.name: fn for fn in program.functions if fn.device}}
    for fn in program.functions:
        if fn.name in seen:
            sink.error(fn.name_span or fn.span, f"function '{fn.name}' has been defined "
                                                f"already.")
        seen.add(fn.name)
        if fn.device:
            calls.check_device_result(sink, fn)
            calls.check_device_body(sink, fn)
        check_function(fn, sink, EXPR_RULES, STMT_RULES, FINISHERS, names, device)
        calls.check_call_placement(fn, sink)
    calls.check_recursion(program, sink)


__all__ = ["check_program"]
