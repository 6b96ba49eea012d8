"""Type predicates, spellings and conversions (LANGUAGE.md §3.1, §3.4.6, §12.2-§12.3)."""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.core.dtypes import BOOL, S32, DType
from croqvm.lang import ast
from croqvm.core.numerics import FLOAT_FORMATS, fits, int_range
from croqvm.lang.types import Bounded, ITuple, Mdspan, Scalar, Type, value_dtype

from .consteval import const_value
from .context import UNKNOWN, Unknown

INT = Scalar(S32, control=True)
BOOL_T = Scalar(BOOL, control=True)


def tname(ty: Type) -> str:
    """How messages spell a type: scalars by their element type (``'s32'``, also for
    ``int``), everything else as ``str`` gives it (``int->[0,4]``, ``ituple<2>``)."""
    if isinstance(ty, Scalar):
        return ty.dtype.name
    return str(ty)


def mdspan_str(ty) -> str:
    """The DMA operand spelling of §9.2: ``shared s32 mdspan<2> [4, 4]`` (global omitted)."""
    storage = "" if ty.storage == "global" else ty.storage + " "
    return f"{storage}{ty.dtype.name} {Mdspan(tuple(ty.shape))}"


def is_unknown(ty) -> bool:
    return isinstance(ty, Unknown)


def is_integer(ty) -> bool:
    return isinstance(ty, Bounded) or (isinstance(ty, Scalar) and ty.dtype.is_int)


def is_number(ty) -> bool:
    return isinstance(ty, Bounded) or (isinstance(ty, Scalar) and ty.dtype.kind != "bool")


def is_bool(ty) -> bool:
    return isinstance(ty, Scalar) and ty.dtype.kind == "bool"


def is_bounded_like(ty) -> bool:
    """A bounded int or a bounded ituple (§5.1)."""
    return isinstance(ty, Bounded) or (isinstance(ty, ITuple) and ty.bounded)


def is_control(ty) -> bool:
    return isinstance(ty, Bounded) or (isinstance(ty, Scalar) and ty.control)


def arithmetic(a: Type, b: Type) -> Scalar:
    """The result of ``a op b`` on numbers (§12.2)."""
    return Scalar(dtypes.promote(value_dtype(a), value_dtype(b)),
                  control=is_control(a) and is_control(b))


def resolve_type(ck, ref: ast.TypeRef) -> DType | None:
    """An element type (or ``int``/``bool``) named in source."""
    if ref.name == "bool":
        return BOOL
    dt = dtypes.lookup(ref.name)
    if dt is None:
        ck.error(ref.span, f"'{ref.name}' is not an element type.")
    return dt


def dim_of(expr: ast.Expr):
    """A shape dimension for ``types``: an int when constant, the name of a symbolic
    dimension, else None (computed at run time)."""
    value = const_value(expr)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(expr, ast.Name) and expr.sym is not None and expr.sym.kind == "dim":
        return expr.id
    return None


# --------------------------------------------------------------------------- conversions

def is_lossy(src: DType, dst: DType) -> bool:
    """Whether converting every value of ``src`` to ``dst`` may change it (§3.4.6). Integer
    to float is not flagged: it is the usual way to feed indices into float math."""
    if src is dst:
        return False
    if src.is_float and dst.is_int:
        return True
    if src.is_float and dst.is_float:
        sm, se = FLOAT_FORMATS[src.name]
        dm, de = FLOAT_FORMATS[dst.name]
        return dm < sm or de < se
    if src.is_int and dst.is_int:
        slo, shi = int_range(src)
        dlo, dhi = int_range(dst)
        return slo < dlo or shi > dhi
    return False


def convert(ck, ty: Type, dst: DType, expr: ast.Expr, span=None) -> bool:
    """Check an implicit conversion of ``expr`` (of type ``ty``) to ``dst`` on
    initialisation, assignment, element store or fill (§3.4.6). Returns False on error."""
    span = span or expr.span
    if is_unknown(ty):
        return True
    src = value_dtype(ty)
    if src is None:
        ck.error(span, f"expect a scalar value of type '{dst.name}' but got '{tname(ty)}'.")
        return False
    if (src.kind == "bool") != (dst.kind == "bool"):
        ck.error(span, f"can not convert '{src.name}' to '{dst.name}' implicitly.",
                 hint=f"write __to<{dst.name}>(...) for an explicit conversion")
        return False
    if is_lossy(src, dst):
        value = const_value(expr)
        if value is None or isinstance(value, bool) or not fits(value, dst):
            ck.warning(span, f"implicit conversion from '{src.name}' to '{dst.name}' may "
                             f"lose precision.")
    return True


def common(ck, a: Type, b: Type, span, op: str) -> Type:
    """The type both branches of ``c ? a : b`` (and both arguments of ``__min``/``__max``)
    convert to (§4.2.5, §4.4)."""
    if is_unknown(a) or is_unknown(b):
        return a if is_unknown(a) else b
    if is_number(a) and is_number(b):
        return arithmetic(a, b)
    if is_bool(a) and is_bool(b):
        return BOOL_T
    if a == b:
        return a
    ck.error(span, f'in operation "{op}": unable to apply to the types '
                   f'({tname(a)} vs. {tname(b)}).')
    return UNKNOWN
