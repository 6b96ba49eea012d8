"""Expression typing: operands (LANGUAGE.md §4.2), builtins (§4.4), bounded values (§5).

Each rule takes ``(ck, e)`` and returns the type; ``ck.expr`` stores it in ``e.ty``.
Operand errors of binary operators use the wording of §5.3:
``in operation "+": unable to apply to the types (bool vs. s32).``
"""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.core.intrinsics import ATOMIC_BY_NAME, CAS, MATH_BY_NAME
from croqvm.lang import ast
from croqvm.lang.suggest import CUDA, did_you_mean, undeclared
from croqvm.lang.types import Bounded, Buffer, ITuple, Mdspan, Scalar, String, value_dtype

from .consteval import const_value
from .context import UNKNOWN
from .typerules import (BOOL_T, INT, arithmetic, common, convert, dim_of, is_bool,
                        is_bounded_like, is_integer, is_number, is_unknown, tname)
from .views import root_name

SUPPORTED_BUILTINS = ("cdiv", "__min", "__max", "__alignup", "__aligndown",
                      *MATH_BY_NAME, *ATOMIC_BY_NAME)
# Kinds whose values never change (§3.4.2, §3.3.3): bounded values, ituples, mdspans and
# symbolic dimensions.
ALWAYS_IMMUTABLE = frozenset(["bounded", "ituple", "mdspan", "dim"])


def check_name(ck, e: ast.Name):
    sym = ck.lookup(e.id)
    e.sym = sym
    if sym is None:
        if e.id not in ck.unknown_names:  # one problem, one report (§15.1)
            ck.unknown_names.add(e.id)
            ck.error(e.span, f"symbol '{e.id}' is used before declaration.",
                     undeclared(e.id, ck.visible_names()))
        return UNKNOWN
    if sym.kind in ("future", "fragment"):
        ck.late_names.append(e)
    return UNKNOWN if sym.info.get("bad") else sym.type


def check_wildcard(ck, e: ast.Wildcard):
    ck.error(e.span, "'_' means a whole dimension and can only be used in 'chunkat', "
                     "'subspan' and 'view' arguments.")
    return UNKNOWN


# --------------------------------------------------------------------------- operators


def require_bool(ck, ty, expr):
    """§4.2.4: conditions and operands of ``&& || !``."""
    if not is_unknown(ty) and not is_bool(ty):
        ck.error(expr.span, f"requires a predication expression but got '{tname(ty)}'.")


def _bad_operands(ck, e, op, a, b):
    ck.error(e.span, f'in operation "{op}": unable to apply to the types '
                     f'({tname(a)} vs. {tname(b)}).')
    return UNKNOWN


def _shape_arith(ck, e, op, a: Mdspan, b):
    """``sp op n`` and ``sp op t`` (an ituple or mdspan of its rank): dimension by
    dimension (Croqtile: shapes-and-mdspan.md)."""
    if is_integer(b):
        right = [const_value(e.rhs)] * len(a.shape)
    elif isinstance(b, (ITuple, Mdspan)) and not getattr(b, "bounded", False):
        rank = b.rank if isinstance(b, ITuple) else len(b.shape)
        if rank != len(a.shape):
            return _bad_operands(ck, e, op, a, b)
        right = list(b.shape) if isinstance(b, Mdspan) else [None] * rank
    else:
        return _bad_operands(ck, e, op, a, b)
    return Mdspan(tuple(_fold_dim(op, x, y) for x, y in zip(a.shape, right)))


def _fold_dim(op, x, y):
    if not (isinstance(x, int) and isinstance(y, int)) or isinstance(y, bool):
        return None
    if op in ("/", "%") and (y <= 0 or x < 0):
        return None     # C's rounding differs from Python's; the engine computes it
    return {"+": x + y, "-": x - y, "*": x * y, "/": x // max(y, 1),
            "%": x % max(y, 1)}[op]


def _arith(ck, e, op, a, b):
    """``+ - * / %`` (§4.2.1) with bounded results (§5.4); on mdspans dimension by
    dimension."""
    if isinstance(a, Mdspan):
        return _shape_arith(ck, e, op, a, b)
    ok = is_integer if op == "%" else is_number
    if not (ok(a) and ok(b)):
        return _bad_operands(ck, e, op, a, b)
    if isinstance(a, Bounded) != isinstance(b, Bounded) and is_integer(a) and is_integer(b):
        bounded = a if isinstance(a, Bounded) else b
        return Bounded(bounded.bound)
    return arithmetic(a, b)


def _bitwise(ck, e, op, a, b):
    """``& ^ | << >>`` (§4.2.2): integers, a plain integer result."""
    if not (is_integer(a) and is_integer(b)):
        return _bad_operands(ck, e, op, a, b)
    if op in ("<<", ">>"):
        return arithmetic(a, a)
    return arithmetic(a, b)


def _order(ck, e, op, a, b):
    if not (is_number(a) and is_number(b)):
        return _bad_operands(ck, e, op, a, b)
    return BOOL_T


def _equality(ck, e, op, a, b):
    if not ((is_number(a) and is_number(b)) or (is_bool(a) and is_bool(b))):
        return _bad_operands(ck, e, op, a, b)
    return BOOL_T


def _logical(ck, e, op, a, b):
    require_bool(ck, a, e.lhs)
    require_bool(ck, b, e.rhs)
    return BOOL_T


def _compose(ck, e, op, a, b):
    """``a # b`` (§5.3): value ``a * #b + b``, bound ``#a * #b``; bounded ints only."""
    if isinstance(a, Bounded) and isinstance(b, Bounded):
        known = isinstance(a.bound, int) and isinstance(b.bound, int)
        return Bounded(a.bound * b.bound if known else None)
    return _bad_operands(ck, e, op, a, b)


def _extend(ck, e, op, a, b):
    """``x #+ n`` / ``x #- n`` (§5.2): same value, bound ``#x ± n``."""
    if not (isinstance(a, Bounded) and is_integer(b) and not isinstance(b, Bounded)):
        return _bad_operands(ck, e, op, a, b)
    n = const_value(e.rhs)
    if isinstance(a.bound, int) and isinstance(n, int):
        return Bounded(a.bound + n if op == "#+" else a.bound - n)
    return Bounded(None)


def _unsupported_op(ck, e, op, a, b):
    ck.error(e.span, f"operator '{op}' is not supported by croqvm.")
    return UNKNOWN


BINARY_RULES = {
    "+": _arith, "-": _arith, "*": _arith, "/": _arith, "%": _arith,
    "&": _bitwise, "^": _bitwise, "|": _bitwise, "<<": _bitwise, ">>": _bitwise,
    "<": _order, "<=": _order, ">": _order, ">=": _order,
    "==": _equality, "!=": _equality, "&&": _logical, "||": _logical,
    "#": _compose, "#+": _extend, "#-": _extend,
    "#*": _unsupported_op, "#/": _unsupported_op, "#%": _unsupported_op,
}


def binary_type(ck, e, op, a, b):
    """The type of ``a op b``; also used for compound assignments (``x += e``, §6.6)."""
    if is_unknown(a) or is_unknown(b):
        return UNKNOWN
    return BINARY_RULES[op](ck, e, op, a, b)


def check_binary(ck, e: ast.Binary):
    a, b = ck.expr(e.lhs), ck.expr(e.rhs)
    if e.op not in BINARY_RULES:
        ck.error(e.span, f"operator '{e.op}' is not supported by croqvm.")
        return UNKNOWN
    return binary_type(ck, e, e.op, a, b)


def check_step(ck, e, operand):
    """``++x``, ``x--`` (§4.2.6): mutable scalar names only."""
    ty = ck.expr(operand)
    if is_unknown(ty):
        return UNKNOWN
    sym = operand.sym if isinstance(operand, ast.Name) else None
    if sym is not None and sym.kind in ALWAYS_IMMUTABLE:   # as for '+=' (§3.4.2)
        ck.error(e.span, f"only mutables can be re-assigned ({sym.name}).")
        return UNKNOWN
    if sym is None or sym.kind != "scalar" or not is_number(ty):
        ck.error(e.span, f"'{e.op}' requires a mutable scalar variable but got "
                         f"'{tname(ty)}'.")
        return UNKNOWN
    if not sym.mutable:
        ck.error(e.span, f"only mutables can be re-assigned ({sym.name}).")
    else:
        ck.check_modifiable(sym, e.span)
    return ty


def check_unary(ck, e: ast.Unary):
    if e.op in ("++", "--"):
        return check_step(ck, e, e.operand)
    ty = ck.expr(e.operand)
    if is_unknown(ty):
        return UNKNOWN
    if e.op == "!":
        require_bool(ck, ty, e.operand)
        return BOOL_T
    if e.op == "-" and is_number(ty):
        return arithmetic(ty, ty)
    if e.op == "~" and is_integer(ty):
        return arithmetic(ty, ty)
    ck.error(e.span, f"operator '{e.op}' can not be applied to '{tname(ty)}'.")
    return UNKNOWN


def check_postfix(ck, e: ast.Postfix):
    return check_step(ck, e, e.operand)


def check_ternary(ck, e: ast.Ternary):
    require_bool(ck, ck.expr(e.cond), e.cond)
    return common(ck, ck.expr(e.then), ck.expr(e.other), e.span, "?:")


# --------------------------------------------------------------------------- bounded values


def check_extent(ck, e: ast.Extent):
    """``#x`` (§5.2): the bound of a bounded name."""
    ty = ck.expr(e.name)
    if is_unknown(ty):
        return UNKNOWN
    if isinstance(ty, Bounded):
        return INT
    ck.error(e.span, f"'#' requires a bounded variable but '{e.name.id}' is "
                     f"'{tname(ty)}'.")
    return UNKNOWN


def check_elem_count(ck, e: ast.ElemCount):
    ty = ck.expr(e.operand)
    if is_unknown(ty) or isinstance(ty, Mdspan):
        return INT
    ck.error(e.span, f"'|...|' requires an mdspan (such as 'a.span') but got '{tname(ty)}'.")
    return UNKNOWN


# --------------------------------------------------------------------------- calls


def _cdiv(ck, e, types):
    if all(is_integer(t) or is_unknown(t) for t in types):
        return arithmetic(*(INT if is_unknown(t) else t for t in types))
    ck.error(e.span, f"'cdiv' requires integers but got '{tname(types[0])}' and "
                     f"'{tname(types[1])}'.")
    return UNKNOWN


def _min_max(ck, e, types):
    return common(ck, types[0], types[1], e.span, e.func)


def _align(ck, e, types):
    """``__alignup(x, a)`` and ``__aligndown(x, a)``: integers (lib/earlysema.cpp)."""
    if all(is_integer(t) or is_unknown(t) for t in types):
        return arithmetic(*(INT if is_unknown(t) else t for t in types))
    ck.error(e.span, f"'{e.func}' requires integers but got '{tname(types[0])}' and "
                     f"'{tname(types[1])}'.")
    return UNKNOWN


_BUILTINS = {"cdiv": _cdiv, "__min": _min_max, "__max": _min_max,
             "__alignup": _align, "__aligndown": _align}


def _arity(ck, e, types, want: int) -> bool:
    if len(types) == want:
        return True
    ck.error(e.span, f"'{e.func}' takes {want} argument{'s' if want > 1 else ''} but got "
                     f"{len(types)}.")
    return False


def _math(ck, e, types):
    """A math function (§4.4, croqvm.core.intrinsics): numbers in, the first argument's type
    out (lib/earlysema.cpp), bool for ``__isfinite``."""
    fn = MATH_BY_NAME[e.func]
    if not _arity(ck, e, types, fn.arity) or any(is_unknown(t) for t in types):
        return UNKNOWN
    for arg, t in zip(e.args, types):
        if not is_number(t):
            ck.error(arg.span, f"'{e.func}' requires numbers but got '{tname(t)}'.")
            return UNKNOWN
    if fn.predicate:
        return BOOL_T
    return Scalar(value_dtype(types[0]))


def _atomic(ck, e, types):
    """An atomic operation (§4.5): an element of a shared or global buffer, of a type the
    operation takes (atomic-operations.md), and values converting to it."""
    op = ATOMIC_BY_NAME[e.func]
    if not _arity(ck, e, types, 3 if op.code == CAS else 2) or is_unknown(types[0]):
        return UNKNOWN
    target = e.args[0]
    if not isinstance(target, ast.ElemAccess):
        ck.error(target.span, f"the first argument of '{e.func}' must be an element "
                              f"'b.at(...)' of a shared or global buffer.")
        return UNKNOWN
    base = target.base.ty
    if isinstance(base, Buffer) and base.storage not in ("shared", "global"):
        ck.error(target.span, f"'{e.func}' on an element of the {base.storage} buffer "
                              f"'{root_name(target.base)}': atomics need shared or global "
                              f"memory.")
        return UNKNOWN
    elem = value_dtype(types[0])
    if elem.name not in op.types:
        ck.error(target.span, f"'{e.func}' is not available for '{elem.name}' elements.",
                 f"it takes {', '.join(op.types)}")
        return UNKNOWN
    for arg, t in zip(e.args[1:], types[1:]):
        convert(ck, t, elem, arg)
    return Scalar(elem)


def _element_of(ck, e, ty, types, name: str | None):
    """``t(i)`` of an ituple, a bounded ituple or an mdspan (§4.4; Croqtile:
    shapes-and-mdspan.md), or ``x(-n)`` of a bounded int.
    ``name`` is the called name (``t``), None for ``e(i)`` on another expression, which
    the diagnostic's caret shows."""
    if len(types) != 1 or not is_integer(types[0]):
        called = f"'{name}(...)'" if name else "an element '(...)'"
        ck.error(e.span, f"{called} takes one integer argument.")
        return UNKNOWN
    if isinstance(ty, Bounded):
        return Bounded(ty.bound)
    i = const_value(e.args[0])
    kind = "mdspan" if isinstance(ty, Mdspan) else "ituple"
    if i is None:
        of = f"{kind} '{name}'" if name else f"an {kind}"
        ck.error(e.args[0].span, f"the element index of {of} must be a constant.")
        return UNKNOWN
    rank = len(ty.shape) if isinstance(ty, Mdspan) else ty.rank
    if not 0 <= i < rank:
        of = f"'{name}' ({tname(ty)})" if name else f"an {tname(ty)}"
        ck.error(e.args[0].span, f"index {i} is out of range for {of}.")
        return UNKNOWN
    if isinstance(ty, Mdspan):
        return INT
    return Bounded(None) if ty.bounded else INT


def check_call(ck, e: ast.Call):
    types = [ck.expr(a) for a in e.args]
    span = e.func_span or e.span
    if e.func == "select":
        ck.error(e.span, "'select' can only name one of its operands: write "
                         "'c = select(i, a, b);' and use 'c'.")
        return UNKNOWN
    if e.func in MATH_BY_NAME:
        return _math(ck, e, types)
    if e.func in ATOMIC_BY_NAME:
        return _atomic(ck, e, types)
    rule = _BUILTINS.get(e.func)
    if rule is not None:
        if len(types) != 2:
            ck.error(e.span, f"'{e.func}' takes 2 arguments but got {len(types)}.")
            return UNKNOWN
        return rule(ck, e, types)
    if e.func.startswith("__"):
        ck.error(span, f"builtin '{e.func}' is not supported by croqvm.",
                 CUDA.get(e.func) or did_you_mean(e.func, SUPPORTED_BUILTINS + ("__to",)))
        return UNKNOWN
    sym = ck.lookup(e.func)
    if sym is None and e.func in ck.function_names:
        ck.error(span, f"function '{e.func}' can not be called: Croqtile functions can not "
                       f"call each other.")
        return UNKNOWN
    if sym is None:
        if e.func not in ck.unknown_names:
            ck.unknown_names.add(e.func)
            ck.error(span, f"symbol '{e.func}' is used before declaration.",
                     did_you_mean(e.func, SUPPORTED_BUILTINS) or
                     undeclared(e.func, ck.visible_names()))
        return UNKNOWN
    if sym.info.get("bad") or any(is_unknown(t) for t in types):
        return UNKNOWN
    if isinstance(sym.type, (ITuple, Bounded, Mdspan)):
        return _element_of(ck, e, sym.type, types, e.func)
    ck.error(span, f"'{e.func}' of type '{tname(sym.type)}' can not be called; croqvm "
                   f"supports {', '.join(SUPPORTED_BUILTINS)} and __to<T>.")
    return UNKNOWN


def check_element(ck, e: ast.Element):
    """``e(i)`` on an expression other than a name (§4.1 level 15), as in ``idx(1)(-1)``."""
    ty = ck.expr(e.base)
    types = [ck.expr(a) for a in e.args]
    if is_unknown(ty) or any(is_unknown(t) for t in types):
        return UNKNOWN
    if isinstance(ty, (ITuple, Bounded, Mdspan)):
        return _element_of(ck, e, ty, types, None)
    ck.error(e.span, f"a value of type '{tname(ty)}' can not be called; '(i)' applies to "
                     f"ituples, mdspans and bounded ints only.")
    return UNKNOWN


def check_convert(ck, e: ast.Convert):
    """``__to<T>(e)``: explicit conversion, bool <-> numbers included (§4.4)."""
    ty = ck.expr(e.operand)
    dt = dtypes.BOOL if e.dtype == "bool" else dtypes.lookup(e.dtype)
    if dt is None:
        ck.error(e.span, f"'{e.dtype}' is not an element type.")
        return UNKNOWN
    if not is_unknown(ty) and not (is_number(ty) or is_bool(ty)):
        ck.error(e.operand.span, f"'__to<{e.dtype}>' requires a scalar but got "
                                 f"'{tname(ty)}'.")
    return Scalar(dt, control=e.dtype in ("int", "bool"))


# --------------------------------------------------------------------------- literals


def check_ituple(ck, e: ast.ITupleLit):
    types = [ck.expr(x) for x in e.elems]
    rank = 0
    for x, ty in zip(e.elems, types):
        if isinstance(ty, ITuple):
            rank += ty.rank
        elif is_integer(ty) or is_unknown(ty):
            rank += 1
        else:
            ck.error(x.span, f"an ituple element must be an integer but got '{tname(ty)}'.")
            rank += 1
    return ITuple(rank, bounded=bool(types) and all(is_bounded_like(t) for t in types))


def mdspan_dims(ck, elems, what: str) -> tuple | None:
    """Shape items (§3.3.1): integers, or an mdspan spliced in place. None when an item
    is erroneous (already reported): then not even the rank is known."""
    dims = []
    known = True
    for x in elems:
        ty = ck.expr(x)
        if isinstance(ty, Mdspan):
            dims.extend(ty.shape)
        elif is_integer(ty):
            dims.append(dim_of(x))
            value = const_value(x)
            if isinstance(value, int) and value <= 0:
                ck.error(x.span, f'The mdspan size "{value}" is invalid!')
        elif is_unknown(ty):
            known = False
        else:
            ck.error(x.span, f"{what} requires integers but got '{tname(ty)}'.")
            known = False
    return tuple(dims) if known else None


def check_mdspan(ck, e: ast.MdspanLit):
    dims = mdspan_dims(ck, e.elems, "an mdspan")
    return UNKNOWN if dims is None else Mdspan(dims)


RULES = {
    ast.IntLit: lambda ck, e: INT if e.dtype == "s32" else Scalar(dtypes.lookup(e.dtype)),
    ast.FloatLit: lambda ck, e: Scalar(dtypes.lookup(e.dtype)),
    ast.BoolLit: lambda ck, e: BOOL_T,
    ast.StringLit: lambda ck, e: String(),
    ast.Name: check_name,
    ast.Wildcard: check_wildcard,
    ast.Binary: check_binary,
    ast.Unary: check_unary,
    ast.Postfix: check_postfix,
    ast.Ternary: check_ternary,
    ast.Extent: check_extent,
    ast.ElemCount: check_elem_count,
    ast.Call: check_call,
    ast.Element: check_element,
    ast.Convert: check_convert,
    ast.ITupleLit: check_ituple,
    ast.MdspanLit: check_mdspan,
}
