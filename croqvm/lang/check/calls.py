"""``__co_device__`` functions and ``call`` (LANGUAGE.md §6.10; Croqtile:
call-and-device.md, lib/earlysema.cpp for the messages the reference gives), and inline
assembly (§6.11; Croqtile: inline-asm.md).

A ``__co_device__`` function is checked once, on its own, as code that runs on one thread:
it has no ``parallel``, data movement, events, barriers or MMA, and buffers it declares are
``local``. A ``call`` is checked against the callee's parameters; lowering inlines the
callee at each call, so the program-wide rule here is that no function reaches itself
through calls (``check_recursion``). A call of a C++ device function (``lang.cxx``,
§6.10.4) is checked against the signature read from its header.
"""
from __future__ import annotations

import dataclasses

from croqvm.core import dtypes
from croqvm.core.limits import REG_BUDGET_MAX, REG_BUDGET_MIN
from croqvm.lang import ast
from croqvm.lang.cxx import CxxFunction
from croqvm.lang.suggest import did_you_mean
from croqvm.lang.types import Bounded, Buffer, Fragment, Scalar, Type

from .consteval import const_value
from .context import UNKNOWN, ordinal
from .typerules import convert, is_unknown, resolve_type, tname
from .walk import child_stmts, nodes_under

# Statements a ``__co_device__`` function can not contain, with the word that names them.
_NOT_IN_DEVICE = {
    ast.Parallel: "parallel", ast.Inthreads: "inthreads", ast.Dma: "dma", ast.DmaAny: "dma",
    ast.Wait: "wait", ast.Trigger: "trigger", ast.Swap: "swap", ast.Sync: "sync",
    ast.Yield: "yield", ast.EventDecl: "event", ast.MmaFill: "mma", ast.MmaLoad: "mma",
    ast.MmaExec: "mma", ast.MmaStore: "mma", ast.MmaCommit: "mma", ast.MmaScale: "mma",
    ast.DeviceRegion: "parallel",
}
_LOOPS = (ast.While, ast.Foreach, ast.With)


def check_device_body(sink, fn: ast.Function) -> None:
    """The statements a ``__co_device__`` function may hold (§6.10.2)."""
    def visit(s, in_loop: bool):
        word = _NOT_IN_DEVICE.get(type(s))
        if word is not None:
            sink.error(s.span, f"'{word}' can not be used in a '__co_device__' function: it "
                             f"runs on the one thread that calls it.",
                       "move it into the '__co__' function around the 'call'")
            return
        if isinstance(s, ast.BufferDecl) and s.storage != "local":
            sink.error(s.span, "a '__co_device__' function can only declare 'local' buffers.",
                       "write 'local' before the buffer's type")
        if isinstance(s, ast.Return) and in_loop:
            sink.error(s.span, "croqvm does not support 'return' inside a loop of a "
                               "'__co_device__' function.",
                       "keep the result in a 'mutable' variable, 'break', and return it "
                          "after the loop")
        for child in child_stmts(s):
            visit(child, in_loop or isinstance(s, _LOOPS))
    visit(fn.body, False)


def check_call_stmt(ck, s: ast.CallStmt):
    ck.expr(s.call)


def check_device_call(ck, e: ast.DeviceCall):
    types = [ck.expr(a) for a in e.args]
    if not (ck.in_parallel or ck.fn.device):
        ck.error(e.span, "unable to call kernel function outside the parallel-by block(s).",
                 hint="a '__co_device__' function runs on a thread: call it inside a "
                      "'parallel'")
    callee = ck.device_functions.get(e.func)
    if callee is None:
        if e.func in REGISTER_BUDGETS:
            return _register_budget(ck, e)
        return _unknown_callee(ck, e, types)
    if isinstance(callee, CxxFunction):
        return _cxx_call(ck, e, callee, types)
    e.callee = callee
    if e.targs:
        ck.error(e.targs[0].span, f"'{e.func}' is a '__co_device__' function and takes no "
                                  f"template arguments.")
    if len(e.args) != len(callee.params):
        ck.error(e.span, f"'{e.func}' takes {len(callee.params)} argument(s) but got "
                         f"{len(e.args)}.", hint=_declared_as(callee))
        return _result_type(ck, callee)
    dims: dict[str, tuple] = {}
    for index, (p, a, ty) in enumerate(zip(callee.params, e.args, types)):
        if not is_unknown(ty):
            _check_argument(ck, e, callee, index, p, a, ty, dims)
    return _result_type(ck, callee)


def _cxx_call(ck, e: ast.DeviceCall, fn: CxxFunction, types):
    """A call of a C++ device function (§6.10.4): scalars in, a scalar or nothing out."""
    if fn.problem is not None:
        ck.error(e.func_span, f"croqvm can not call the C++ function '{fn.name}': "
                              f"{fn.problem}.",
                 hint="write it as a '__co_device__' function, or call a C++ function "
                      "of scalars and pointers to elements")
        return UNKNOWN
    if e.targs:
        ck.error(e.targs[0].span, f"'{e.func}' is not a template.")
    e.callee = fn
    if len(e.args) != len(fn.params):
        ck.error(e.span, f"'{e.func}' takes {len(fn.params)} argument(s) but got "
                         f"{len(e.args)}.", hint=f"'{fn.name}' is declared at line "
                                                 f"{fn.span.line}")
    else:
        for index, (a, ty, want) in enumerate(zip(e.args, types, fn.params)):
            if want.endswith("*"):
                _pointer_argument(ck, e, index, a, ty, want[:-1])
            else:
                convert(ck, ty, dtypes.lookup(want) or dtypes.BOOL, a)
    if fn.ret is None:
        return VOID
    return Scalar(dtypes.lookup(fn.ret) or dtypes.BOOL)


def _pointer_argument(ck, e, index: int, a: ast.Expr, ty, element: str) -> None:
    """A pointer parameter takes a buffer (not an array of buffers) of its element type:
    C++ decays it to a pointer to its first element (call-and-device.md)."""
    if is_unknown(ty) or _future_data(ck, a):
        return
    if _accumulator(a, ty):
        ty = Buffer(ty.dtype, (None,), "local")
    if not (isinstance(ty, Buffer) and not ty.array and _names_buffer(a)):
        ck.error(a.span, f"({ordinal(index + 1)}) argument of '{e.func}' must be a buffer "
                         f"of '{element}' but got '{tname(ty)}'.",
                 hint="a pointer parameter takes a buffer's name")
    elif ty.dtype.name != element:
        ck.error(a.span, f"({ordinal(index + 1)}) argument of '{e.func}' has element type "
                         f"'{ty.dtype.name}' but the parameter points to '{element}'.")


def _unknown_callee(ck, e: ast.DeviceCall, types):
    """A name that is no function of the file is a function defined elsewhere (§6.10.6):
    the C++ compiler of the CUDA path resolves it; it takes scalars and buffer names and
    gives no value croqvm knows."""
    span = e.func_span
    if e.func in ck.function_names:
        ck.error(span, f"'{e.func}' is a '__co__' function and can not be called: Croqtile "
                       f"functions can not call each other.",
                 hint="write the shared code as a '__co_device__' function")
        return UNKNOWN
    ck.warning(span, f"function '{e.func}' is not defined in this file: the call is left "
                     f"to the C++ compiler, and running it on the CPU is a runtime error.",
               did_you_mean(e.func, sorted(ck.device_functions)) or
               "croqvm runs '__co_device__' and '__device__' functions defined in the same "
               "file")
    for index, (a, ty) in enumerate(zip(e.args, types)):
        if is_unknown(ty) or isinstance(ty, (Scalar, Bounded)) or _accumulator(a, ty):
            continue
        if not (isinstance(ty, Buffer) and not ty.array and _names_buffer(a)):
            ck.error(a.span, f"({ordinal(index + 1)}) argument of '{e.func}' must be a scalar "
                             f"or a buffer's name but got '{tname(ty)}'.",
                     hint="a function defined in no file of the program takes values and "
                          "pointers to buffers")
    e.callee = ExternFunction(e.func)
    return VOID


@dataclasses.dataclass(frozen=True)
class ExternFunction:
    """The callee of a call of a function defined in no file of the program (§6.10.6)."""
    name: str


@dataclasses.dataclass(frozen=True)
class RegisterBudget:
    """``croq::cuda::setreg_inc(n)`` / ``setreg_dec(n)`` (§6.10.6): the warp's registers per
    thread become ``n`` (``setmaxnreg`` on sm_90a; lib/Target/GPU/cute_codegen.cpp)."""
    increase: bool
    count: int


REGISTER_BUDGETS = {"croq::cuda::setreg_inc": True, "croq::cuda::setreg_dec": False}


def _register_budget(ck, e: ast.DeviceCall):
    """One integer constant, a register count setmaxnreg takes: a multiple of 8 in
    24..256 (the reference checks the integer (lib/earlysema.cpp) and needs a positive
    constant when it emits the instruction; PTX needs the rest)."""
    if len(e.args) != 1:
        ck.error(e.span, f"'{e.func}' expects exactly one integer argument, but got "
                         f"{len(e.args)}.")
        return VOID
    value = const_value(e.args[0])
    if not isinstance(value, int) or isinstance(value, bool):
        ck.error(e.args[0].span, f"'{e.func}' expects an integer constant.",
                 hint="write the register count as a number, e.g. 240")
        return VOID
    if not (REG_BUDGET_MIN <= value <= REG_BUDGET_MAX and value % 8 == 0):
        ck.error(e.args[0].span, f"'{e.func}' takes a register count that is a multiple of 8 "
                                 f"from {REG_BUDGET_MIN} to {REG_BUDGET_MAX}, but got {value}.",
                 hint="setmaxnreg on sm_90a takes such counts")
        return VOID
    e.callee = RegisterBudget(REGISTER_BUDGETS[e.func], value)
    return VOID


def _declared_as(fn: ast.Function) -> str:
    return f"'{fn.name}' is declared at line {fn.name_span.line}"


def _result_type(ck, callee: ast.Function):
    if callee.ret.name == "void":
        return VOID
    dt = resolve_type(ck, callee.ret) if callee.ret.name != "auto" else None
    return Scalar(dt) if dt is not None and callee.ret_shape is None else UNKNOWN


def check_device_result(sink, fn: ast.Function) -> None:
    """A ``__co_device__`` function returns nothing or one scalar of a written type."""
    if fn.ret.name == "auto" or fn.ret_shape is not None:
        sink.error(fn.ret.span, "a '__co_device__' function returns 'void' or a scalar of a "
                                "written type.",
                   "write its result type, e.g. 'f32', or fill a buffer parameter")


def _check_argument(ck, e, callee, index, p: ast.Param, a: ast.Expr, ty, dims) -> None:
    where = f"({ordinal(index + 1)}) argument of '{e.func}'"
    if p.shape is None:
        dt = resolve_type(ck, p.type)
        if dt is not None:
            convert(ck, ty, dt, a)
        return
    if _future_data(ck, a):
        return
    if _accumulator(a, ty):         # the lane's registers: a 1-D buffer, its length known
        ty = Buffer(ty.dtype, (None,), "local")   # when lowering knows the unit holding it
    if not isinstance(ty, Buffer) or not _names_buffer(a):
        ck.error(a.span, f"{where} must be a buffer of type '{p.type.name}' but got "
                         f"'{tname(ty)}'.",
                 hint=f"parameter '{p.name}' is a buffer: pass a buffer's name")
        return
    dt = resolve_type(ck, p.type)
    if dt is not None and ty.dtype is not dt:
        ck.error(a.span, f"{where} has element type '{ty.dtype.name}' but parameter "
                         f"'{p.name}' is '{dt.name}'.", hint=_declared_as(callee))
        return
    if len(ty.shape) != len(p.shape):
        ck.error(a.span, f"{where} has rank {len(ty.shape)} but parameter '{p.name}' has "
                         f"rank {len(p.shape)}.", hint=_declared_as(callee))
        return
    for k, (d, want) in enumerate(zip(ty.shape, p.shape)):
        want_value = _param_dim(want)
        if isinstance(want_value, str):      # a symbolic dimension: bound by its first use
            first = dims.setdefault(want_value, (d, index))
            if isinstance(d, int) and isinstance(first[0], int) and d != first[0]:
                ck.error(a.span, f"{where} has {d} in dimension {k} but '{want_value}' is "
                                 f"{first[0]} (bound by the {ordinal(first[1] + 1)} "
                                 f"argument).")
        elif isinstance(want_value, int) and isinstance(d, int) and d != want_value:
            ck.error(a.span, f"{where} has {d} in dimension {k} but parameter '{p.name}' "
                             f"has {want_value}.", hint=_declared_as(callee))


def _accumulator(a: ast.Expr, ty) -> bool:
    """An MMA accumulator of known shape, named: passed as the lane's registers (§11.7
    item 10)."""
    return (isinstance(ty, Fragment) and ty.role == "acc" and ty.shape is not None
            and ty.dtype is not None and isinstance(a, ast.Name))


def _names_buffer(a: ast.Expr) -> bool:
    """Lowering passes a buffer by its name (the callee then uses the caller's buffer)."""
    return isinstance(a, ast.Name)


def _future_data(ck, a: ast.Expr) -> bool:
    """``f.data`` as an argument: reported, as croqvm passes named buffers only."""
    if not isinstance(a, ast.DataOf):
        return False
    ck.error(a.span, "croqvm does not pass a future's data ('.data') to a function yet.",
             hint="copy it into a named buffer ('dma.copy ... => buf;') and pass 'buf'")
    return True


def _param_dim(d: ast.Dim):
    """A parameter dimension as the callee declared it: an int, a symbolic name or None."""
    if d.expr is None:
        return None
    if isinstance(d.expr, ast.Name):
        return d.expr.id
    value = const_value(d.expr)
    return value if isinstance(value, int) else None


@dataclasses.dataclass(frozen=True)
class Void(Type):
    """The type of a call of a ``void`` function: it has no value."""

    def __str__(self):
        return "void"


VOID = Void()


def check_recursion(program: ast.Program, sink) -> None:
    """A ``call`` that leads back to a function it is in, directly or through other calls,
    would be inlined without end: reported at the call that closes the cycle."""
    calls = {fn.name: list(_calls_in(fn.body)) for fn in program.functions if fn.device}
    reported: set[frozenset] = set()

    def visit(name: str, path: list[str]):
        for call in calls.get(name, ()):
            target = call.callee.name
            if target in path:
                members = frozenset(path[path.index(target):])
                if members not in reported:
                    reported.add(members)
                    cycle = " -> ".join(path[path.index(target):] + [target])
                    sink.error(call.func_span, f"recursive call of '{target}' ({cycle}): a "
                                               f"'__co_device__' function is inlined where it "
                                               f"is called and can not call itself.",
                               "write the recursion as a loop")
                continue
            visit(target, path + [target])
    for name in calls:
        visit(name, [name])


def _calls_in(node):
    """The checked ``call``s in ``node`` (statements and expressions, any depth)."""
    return (n for n in nodes_under(node)
            if isinstance(n, ast.DeviceCall) and isinstance(n.callee, ast.Function))


def check_call_placement(fn: ast.Function, sink) -> None:
    """``call`` is not a general expression (call-and-device.md, Restrictions): it is a
    statement, or the whole value of a declaration, assignment, condition or return."""
    stack = [fn.body]
    while stack:
        n = stack.pop()
        if not dataclasses.is_dataclass(n):
            continue
        for f in dataclasses.fields(n):
            value = getattr(n, f.name)
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.Node):
                    continue
                if isinstance(child, ast.DeviceCall) and isinstance(n, ast.Expr):
                    sink.error(child.span, "'call' can not be part of an expression.",
                               "assign its result to a variable first: 'mutable x = call "
                               "f(...);'")
                stack.append(child)


# --------------------------------------------------------------------------- inline assembly


def check_asm(ck, s: ast.Asm):
    """§6.11 (Croqtile: inline-asm.md): device code only; outputs are modifiable scalars
    or elements and say '=' or '+', inputs are scalar values and say neither."""
    if not (ck.in_parallel or ck.fn.device):
        ck.error(s.span, "'__asm__' can only be used inside parallel-by.",
                 hint="inline assembly runs on GPU threads: put it inside a 'parallel'")
    for role, operands in (("output", s.outputs), ("input", s.inputs)):
        for op in operands:
            ty = ck.expr(op.expr)
            output = role == "output"
            if output != op.constraint.startswith(("=", "+")):
                ck.error(op.span, f"the constraint of an {role} operand "
                                  f"{'must' if output else 'can not'} start with '=' or "
                                  f"'+': '{op.constraint}'.",
                         hint="outputs come first, after the first ':', inputs after the "
                              "second")
            if is_unknown(ty):
                continue
            if not isinstance(ty, (Scalar, Bounded)):
                ck.error(op.expr.span, f"an {role} operand of '__asm__' must be a scalar "
                                       f"value but got '{tname(ty)}'.")
                continue
            if output and not _asm_target(ck, op.expr):
                ck.error(op.expr.span, "an output operand of '__asm__' must be a mutable "
                                       "variable or an element 'b.at(...)'.")


def _asm_target(ck, e: ast.Expr) -> bool:
    if isinstance(e, ast.ElemAccess):
        return True
    if isinstance(e, ast.Name) and e.sym is not None and e.sym.kind == "scalar":
        if not e.sym.mutable:
            ck.error(e.span, f"only mutables can be re-assigned ({e.id}).")
            return True
        ck.check_modifiable(e.sym, e.span)
        return True
    return False


RULES = {ast.DeviceCall: check_device_call}
STMT_RULES = {ast.CallStmt: check_call_stmt, ast.Asm: check_asm}
