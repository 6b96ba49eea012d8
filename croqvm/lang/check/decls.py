"""Declarations and assignments (LANGUAGE.md §3.2-§3.4, §6.6, D13, D14)."""
from __future__ import annotations

import dataclasses

from croqvm.lang import ast
from croqvm.lang.types import Bounded, Buffer, Future, ITuple, Mdspan, Scalar, View

from .consteval import const_as, const_value
from .context import UNKNOWN
from .exprs import binary_type, check_step, mdspan_dims
from .typerules import convert, is_unknown, resolve_type, tname
from .views import fragment_source
from .walk import thread_dependence, value_names

_KIND_OF = {Scalar: "scalar", Bounded: "bounded", ITuple: "ituple", Mdspan: "mdspan",
            View: "view"}
_ALWAYS_IMMUTABLE = ("bounded", "ituple", "mdspan", "view")


def _remember_value(sym, init):
    """Facts later checks use: the constant value of an immutable scalar (consteval) and
    dependence on a thread index (§9.3.3)."""
    if sym.kind == "scalar" and not sym.mutable:
        value = const_as(init, sym.type.dtype)
        if value is not None:
            sym.info["const"] = value
    dep = thread_dependence(init)
    if dep:
        sym.info["lane_dep"] = dep


def _copy_error(ck, ty, init, name, span):
    """Values that can not be named or copied (§3.1)."""
    if isinstance(ty, Future):
        src = init.sym if isinstance(init, ast.Name) else None
        if src is not None and src.info.get("placeholder") and ty.dtype is None:
            ck.error(span, f"can not initialize variable '{name}' with a placeholder.")
        else:
            ck.error(span, f"future '{getattr(init, 'id', 'value')}' can not be copied.",
                     hint="use swap(...) to exchange futures, or '.data' to use its buffer")
    else:
        ck.error(span, f"can not initialize '{name}' with a value of type '{tname(ty)}'.")


def declare_value(ck, name, ty, init, decl, span, *, mutable, declared=None):
    """Declare ``name`` initialised with ``init`` of type ``ty``: explicit declarations
    (``declared`` a Scalar, "ituple" or "mdspan") and inferred ones (§3.4, D13)."""
    if isinstance(declared, Scalar):
        convert(ck, ty, declared.dtype, init)
        sym = ck.declare(name, "scalar", declared, decl, span,
                         mutable=mutable or not declared.control)
        _remember_value(sym, init)
        return sym
    if isinstance(ty, Buffer) and not ty.array and declared is None:
        ty = View(ty.dtype, tuple(ty.shape), ty.storage, tuple(ty.shape), tuple(ty.shape))
    kind = _KIND_OF.get(type(ty))   # a whole buffer named again is a view of it (§8.3.5)
    if declared is not None and not is_unknown(ty) and kind != declared:
        ck.error(span, f"'{name}' is declared as \"{declared}\" but initialized with "
                       f"\"{tname(ty)}\".")
        kind = None
    if kind is None:
        if not is_unknown(ty) and declared is None:
            _copy_error(ck, ty, init, name, span)
        sym = ck.declare(name, declared or "scalar", UNKNOWN, decl, span)
        sym.info["bad"] = True
        return sym
    if mutable and kind in _ALWAYS_IMMUTABLE:
        ck.error(span, f"'{name}' with a type of \"{ty}\" can not be declared as 'mutable'.")
    if kind == "view" and not _fixed_view(ck, name, init):
        sym = ck.declare(name, kind, UNKNOWN, decl, span)
        sym.info["bad"] = True
        return sym
    if isinstance(ty, Scalar):
        ty = Scalar(ty.dtype, control=ty.control)
    sym = ck.declare(name, kind, ty, decl, span, mutable=mutable and kind == "scalar")
    _remember_value(sym, init)
    return sym


def _fixed_view(ck, name, init) -> bool:
    """A named view stands for its chain wherever it is used (§8.3.5), so the chain may
    read no value that can change: no mutable scalar and no buffer element."""
    for node in _nodes(init):
        what = None
        if isinstance(node, ast.ElemAccess):
            what = f"the element '{node_text(node)}'"
        elif isinstance(node, ast.Name) and node.sym is not None and node.sym.mutable \
                and node.sym.kind == "scalar":
            what = f"the mutable '{node.id}'"
        if what is not None:
            ck.error(node.span, f"the view '{name}' can not be named: it depends on {what}, "
                                f"which can change.",
                     hint="copy the value into an immutable name first, as in "
                          "'int row = ...;'")
            return False
    return True


def _nodes(expr):
    stack = [expr]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.Extent):
            continue
        for f in dataclasses.fields(n) if dataclasses.is_dataclass(n) else ():
            value = getattr(n, f.name)
            if isinstance(value, ast.Expr):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.Expr))


def node_text(node) -> str:
    from .views import root_name
    return f"{root_name(node.base)}.at(...)"


def _declared_type(ck, ref: ast.TypeRef | None):
    if ref is None or ref.name == "auto":
        return None
    if ref.name in ("ituple", "mdspan"):
        return ref.name
    dt = resolve_type(ck, ref)
    return UNKNOWN if dt is None else Scalar(dt, control=ref.name in ("int", "bool"))


def check_scalar_decl(ck, d: ast.ScalarDecl):
    declared = _declared_type(ck, d.type)
    for item in d.items:
        if item.init is None:
            ck.error(item.span, f"declaration of '{item.name}' requires an initializer.")
            item.sym = ck.declare(item.name, "scalar", UNKNOWN, item, item.span)
            item.sym.info["bad"] = True
            continue
        ty = ck.expr(item.init)
        if is_unknown(declared):
            item.sym = ck.declare(item.name, "scalar", UNKNOWN, item, item.span)
            item.sym.info["bad"] = True
            continue
        if d.type is not None and d.type.rank is not None:
            ty = _check_rank(ck, item, d.type, ty)
        item.sym = declare_value(ck, item.name, ty, item.init, item, item.span,
                                 mutable=d.mutable, declared=declared)


def _check_rank(ck, item, ref: ast.TypeRef, ty):
    """``mdspan<N> sp : ...`` and ``ituple<N> t = ...``: the initializer has rank N
    (lib/earlysema.cpp)."""
    rank = len(ty.shape) if isinstance(ty, Mdspan) else ty.rank if isinstance(ty, ITuple) \
        else None
    if rank is not None and rank != ref.rank:
        ck.error(item.span, f"'{item.name}' is declared as \"{ref.name}<{ref.rank}>\" but "
                            f"initialized with \"{tname(ty)}\".")
        return UNKNOWN
    return ty


# --------------------------------------------------------------------------- buffers


def _array_dims(ck, item: ast.BufferItem):
    dims = []
    for x in item.array:
        ck.expr(x)
        value = const_value(x)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            ck.error(x.span, f"the size of buffer array '{item.name}' must be a positive "
                             f"integer constant.")
            value = 1
        dims.append(value)
    return tuple(dims)


def _storage(ck, d: ast.BufferDecl, item) -> str:
    """§3.2.2-§3.2.3: host level buffers are global; inside a parallel, a global buffer
    is one buffer for the call, declared before the parallel-by (lib/latenorm.hpp)."""
    if ck.fn.device and d.storage == "local":   # runs on one thread (§6.10.2)
        return "local"
    if not ck.in_parallel:
        if d.storage in ("shared", "local"):
            ck.error(item.span, f"{d.storage} variable '{item.name}' must be declared inside "
                                f"parallel-by.")
        return "global" if d.storage in (None, "global") else d.storage
    if d.storage in (None, "global"):
        _global_in_parallel(ck, d, item)
        return "global"
    return d.storage


def _global_in_parallel(ck, d: ast.BufferDecl, item):
    """A global buffer declared inside a parallel-by is made once, before the outermost
    one, so its shape and fill value may only read values of the host code."""
    parts = [("shape", e) for e in d.shape] + \
        ([("fill value", item.init)] if item.init is not None else [])
    for what, e in parts:
        for n in value_names(e):
            if n.sym is not None and n.sym.parallel is not None:
                ck.error(n.span, f"global variable '{item.name}' is made before the "
                                 f"parallel-by, but its {what} reads '{n.id}', which is "
                                 f"declared inside it.",
                         hint="declare it 'shared' (one per block) or 'local' (one per thread)")
                return
    if d.storage is None:
        ck.warning(item.span, f"'{item.name}' declared inside parallel-by without 'shared' or "
                              f"'local' is global: one buffer for the whole call, shared by "
                              f"every instance.",
                   hint="declare it 'global' to say so, or 'shared' (one per block) or "
                        "'local' (one per thread)")


def check_buffer_decl(ck, d: ast.BufferDecl):
    dt = resolve_type(ck, d.dtype)
    shape = mdspan_dims(ck, d.shape, "a buffer shape")
    for item in d.items:
        storage = _storage(ck, d, item)
        array = _array_dims(ck, item)
        if item.init is not None:
            ty = ck.expr(item.init)
            if dt is not None:
                convert(ck, ty, dt, item.init)
        ty = UNKNOWN if dt is None or shape is None else Buffer(dt, shape, storage, array)
        item.sym = ck.declare(item.name, "buffer", ty, item, item.span, mutable=True)
        if ty is UNKNOWN:
            item.sym.info["bad"] = True


# --------------------------------------------------------------------------- assignments


def note_param_write(ck, target):
    """§14.3.3: writes to a non-global buffer parameter never reach the caller."""
    while isinstance(target, (ast.ElemAccess, ast.Index, ast.ChunkAt, ast.Subspan,
                              ast.ViewFrom, ast.SpanAs, ast.Squeeze)):
        target = target.base
    sym = target.sym if isinstance(target, ast.Name) else None
    if (sym is not None and sym.kind == "buffer" and sym.param_index is not None
            and sym.decl.storage != "global" and not sym.decl.by_ref and not ck.fn.device
            and sym.param_index not in ck.warned_params):
        ck.warned_params.add(sym.param_index)
        ck.warning(target.span, f"writes to parameter '{sym.name}' are not visible to the "
                                f"caller; declare it 'global'.")


def _store(ck, s: ast.Assign, target_ty, value_ty):
    """Convert the stored value (``x op= e`` is ``x = x op (e)``, §6.6)."""
    if is_unknown(target_ty) or is_unknown(value_ty):
        return
    result = value_ty
    if s.op != "=":
        result = binary_type(ck, s, s.op[:-1], target_ty, value_ty)
        if is_unknown(result):
            return
    convert(ck, result, target_ty.dtype, s.value, s.value.span)


def _assign_symbol(ck, s: ast.Assign, sym, value_ty):
    name = sym.name
    if sym.kind == "future":
        if isinstance(value_ty, Future):
            _copy_error(ck, value_ty, s.value, name, s.span)
        elif not is_unknown(value_ty):
            ck.error(s.span, f"'{name}' of type \"{sym.type}\" can not be re-assigned as "
                             f"\"{tname(value_ty)}\".")
        return
    if sym.kind == "buffer":
        ck.error(s.target.span, f"can not assign to buffer '{name}': assign its elements "
                                f"with '{name}.at(...)'.")
        return
    if sym.kind == "fragment" and s.op != "=" and sym.type.role == "acc":
        _update_accumulator(ck, s, sym, value_ty)
        return
    if sym.kind in ("fragment", "event"):
        ck.error(s.target.span, f"can not assign to {sym.kind} '{name}'.",
                 hint="fragments change only through mma operations" if sym.kind ==
                 "fragment" else "events change only through 'trigger' and 'wait'")
        return
    if sym.kind != "scalar" or not sym.mutable:
        ck.error(s.span, f"only mutables can be re-assigned ({name}).")
        return
    if not ck.check_modifiable(sym, s.span):
        return
    _store(ck, s, sym.type, value_ty)
    dep = thread_dependence(s.value)
    if dep:
        sym.info["lane_dep"] = dep


def _shadowable(ck, sym) -> bool:
    """D13: ``x = e`` declares a new ``x`` in an inner scope when the visible ``x`` is an
    immutable value of an enclosing scope (lib/earlysema.cpp: immutables in an inner scope
    are new declarations)."""
    if sym.info.get("bad") or ck.scope.declares(sym.name):
        return False
    return sym.kind in ("scalar", "bounded", "ituple", "mdspan", "dim", "view") and \
        not sym.mutable


def _update_accumulator(ck, s: ast.Assign, sym, value_ty):
    """``acc op= v`` (LANGUAGE.md §11.7): each element the lane holds, ``op`` ``v``."""
    if fragment_source(ck, sym.type, s.target) is None:
        return
    if not is_unknown(value_ty) and not isinstance(value_ty, (Scalar, Bounded)):
        ck.error(s.value.span, f"'{sym.name} {s.op} v' needs a number but got "
                               f"'{tname(value_ty)}'.",
                 hint=f"update elements with 'apply {{i, j}} in {sym.name}.span'")
        return
    s.frag_update = True
    _store(ck, s, Scalar(sym.type.dtype), value_ty)


def check_assign(ck, s: ast.Assign):
    t = s.target
    if isinstance(t, ast.Name):
        sym = ck.lookup(t.id)
        if sym is None and s.op == "=" and isinstance(s.value, ast.Call) \
                and s.value.func == "select":
            _select(ck, s)
            return
        shadows = (sym is not None and s.op == "=" and _shadowable(ck, sym))
        if shadows:
            ck.warning(t.span, f"'{t.id} = ...' declares a new '{t.id}' that shadows the "
                               f"immutable one of an enclosing scope; it is not an "
                               f"assignment.",
                       hint=f"declare the outer '{t.id}' 'mutable' to assign it, or give "
                            f"the new value another name")
        if (sym is None or shadows) and s.op == "=":  # D13: declares
            ty = ck.expr(s.value)
            sym = declare_value(ck, t.id, ty, s.value, s, t.span, mutable=False)
            s.declares, s.sym, t.sym = True, sym, sym
            t.ty = UNKNOWN if sym.info.get("bad") else sym.type
            return
        ck.expr(t)
        value_ty = ck.expr(s.value)
        s.sym = t.sym
        if t.sym is not None and not t.sym.info.get("bad"):
            _assign_symbol(ck, s, t.sym, value_ty)
        return
    target_ty = ck.expr(t)
    value_ty = ck.expr(s.value)
    if not isinstance(t, ast.ElemAccess):
        ck.error(t.span, "only a variable or an element 'b.at(...)' can be assigned.")
        return
    note_param_write(ck, t)
    _store(ck, s, target_ty, value_ty)


def _select(ck, s: ast.Assign):
    """``c = select(i, x0, x1, ...)`` (§4.4, D28): ``c`` names operand ``i``, a constant,
    of buffers or futures of one type (lib's tests: an index choice). ``c`` becomes
    another name of that operand's symbol; nothing is lowered."""
    e, name = s.value, s.target.id
    if len(e.args) < 2:
        ck.error(e.span, f"'select' takes an index and operands but got {len(e.args)} "
                         f"argument{'s' if len(e.args) != 1 else ''}.")
        return
    types = [ck.expr(a) for a in e.args]
    if any(is_unknown(t) for t in types):
        return
    syms = []
    for a, t in zip(e.args[1:], types[1:]):
        if not (isinstance(a, ast.Name) and a.sym is not None and
                a.sym.kind in ("buffer", "future")):
            ck.error(a.span, f"'select' chooses among buffers and futures, named; got "
                             f"'{tname(t)}'.")
            return
        syms.append(a.sym)
    for a, t in zip(e.args[2:], types[2:]):
        if t != types[1] or a.sym.kind != syms[0].kind:
            ck.error(a.span, f"'select' chooses among operands of one type: {a.id}({tname(t)}) "
                             f"vs. {e.args[1].id}({tname(types[1])}).")
            return
    i = const_value(e.args[0])
    if not isinstance(i, int) or isinstance(i, bool):
        ck.error(e.args[0].span, "the index of 'select' must be an integer constant in "
                                 "croqvm.", "choose with 'if' where the index is known only "
                                            "at run time")
        return
    if not 0 <= i < len(syms):
        ck.error(e.args[0].span, f"index {i} is out of range for 'select' of {len(syms)} "
                                 f"operands.")
        return
    if ck.lookup(name) is not None or name in ck.scope.names:
        ck.error(s.target.span, f"symbol '{name}' has been declared already.")
        return
    ck.scope.names[name] = syms[i]
    s.alias = True
    s.target.sym = syms[i]


def check_incdec(ck, s: ast.IncDec):
    check_step(ck, s, s.target)


RULES = {
    ast.ScalarDecl: check_scalar_decl,
    ast.BufferDecl: check_buffer_decl,
    ast.Assign: check_assign,
    ast.IncDec: check_incdec,
}
