"""Calling a function: parameter binding, the host program, results (LANGUAGE.md §14.3;
docs/EXECUTION.md §2-§3).

Conventions: ``fn`` a bytecode ``Function``, ``p`` a ``Param``, ``n`` its position in
the parameter list; every argument problem is an ``ArgumentError`` worded as §14.3.2.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..bytecode.module import ParamKind, ParamStorage
from ..core.errors import ArgumentError, KernelFault
from ..core.faults import Fault
from ..core.numerics import round_to, storage_array, value_of, wrap_narrow
from ..core.position import Interrupted
from .machine import Block, Call
from .memory import Buffer
from .scheduler import make_scheduler
from .values import copy_back


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, ..."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{({1: 'st', 2: 'nd', 3: 'rd'}).get(n % 10, 'th')}"


def _who(n: int, p, dim=None) -> str:
    inner = f"'{p.name}'" if dim is None else f"'{p.name}', dim: {dim}"
    return f"the {ordinal(n + 1)} parameter ({inner})"


class _Dims:
    """Symbolic dimensions bound by their first occurrence (§14.3.2)."""

    def __init__(self):
        self.values: dict[str, tuple[int, str]] = {}

    def bind(self, name: str, value: int, who: str) -> None:
        if name not in self.values:
            self.values[name] = (value, who)
            return
        bound, by = self.values[name]
        if value != bound:
            raise ArgumentError(f"{who} is {value} but symbolic dimension '{name}' is "
                                f"{bound} (bound by {by}).")


def _array_arg(n: int, p, arg, dims: _Dims) -> np.ndarray:
    t = dtypes.BY_CODE[p.dtype]
    if not isinstance(arg, np.ndarray):
        raise ArgumentError(f"{_who(n, p)} expects a numpy array but got "
                            f"{type(arg).__name__}.")
    if arg.ndim != len(p.shape):
        raise ArgumentError(f"{_who(n, p)} expects rank {len(p.shape)} but got rank {arg.ndim}.")
    ml = dtypes.ml_dtype(t)
    if arg.dtype != np.dtype(t.numpy_param) and (ml is None or arg.dtype != ml):
        also = f" or {ml}" if ml is not None else ""
        raise ArgumentError(f"{_who(n, p)} expects dtype {t.numpy_param}{also} but got "
                            f"{arg.dtype}.", hint=f"convert it with .astype(np.{t.numpy_param})")
    for k, (want, got) in enumerate(zip(p.shape, arg.shape)):
        if isinstance(want, int) and want != got:
            raise ArgumentError(f"shape inconsistent on {_who(n, p, k)}: expect: {want}, "
                                f"but got {got}.")
        if isinstance(want, str) and want != "?":
            dims.bind(want, got, _who(n, p, k))
    if t.name in dtypes.BIT_STORED and arg.dtype == ml:
        return arg.view(np.uint8).copy()             # the patterns themselves
    if t.is_float and t.name not in ("f16", "f32", "f64"):
        return round_to(arg.astype(np.float64), t)   # bf16, tf32, fp8, f6, f4: rounded on entry
    if t.is_int and t.bits < 8:
        return wrap_narrow(arg, t)                   # s2 ... u6: wrapped to their width
    return np.array(arg, copy=True)


def _scalar_arg(n: int, p, arg):
    t = dtypes.BY_CODE[p.dtype]
    if isinstance(arg, np.generic):
        arg = arg.item()
    ok = isinstance(arg, bool) if t.kind == "bool" else \
        isinstance(arg, int) and not isinstance(arg, bool) if t.is_int else \
        isinstance(arg, (int, float)) and not isinstance(arg, bool)
    if not ok:
        want = {"bool": "a bool", "int": "an integer", "float": "a number"}[t.kind]
        raise ArgumentError(f"{_who(n, p)} expects {want} ({t.name}) but got "
                            f"{type(arg).__name__}.")
    return arg


def bind(call: Call, hblk: Block, args: list, given: dict) -> list:
    """Bind ``args`` to the parameters in the host block, and the symbolic dimensions
    (from the parameters, else from ``given``); returns the copy-back list of (caller's
    array, host buffer) for ``global`` buffer parameters (§14.3.3)."""
    fn = call.fn
    if len(args) != len(fn.params):
        raise ArgumentError(f"'{fn.name}' takes {len(fn.params)} arguments but got {len(args)}.")
    dims = _Dims()
    back = []
    hw = hblk.warps[0]
    for n, (p, arg) in enumerate(zip(fn.params, args)):
        if p.kind == ParamKind.STREAM:
            continue
        t = dtypes.BY_CODE[p.dtype]
        if p.kind == ParamKind.SCALAR:
            hw.regs[p.slot][:] = _scalar_value(n, p, t, _scalar_arg(n, p, arg))
            continue
        data = _array_arg(n, p, arg, dims)
        written = np.ones(data.shape, bool) if call.poison else None
        buf = Buffer((-1, p.slot, -1), t, data, written)
        hblk.bufs[p.slot] = [buf]
        if p.storage == ParamStorage.GLOBAL:
            if not arg.flags.writeable:
                raise ArgumentError(f"{_who(n, p)} is 'global' and receives the results, "
                                    f"but the array is read-only.")
            back.append((arg, buf, t))
    for name, reg in fn.dims:
        hw.regs[reg][:] = _dim_value(fn, name, dims, given)
    return back


def _scalar_value(n, p, t, value):
    """The argument as a value of the parameter's type, converted as §12.3.3 converts an
    exact number (``numerics.value_of``): rounded once into a float type, an int of any
    width included. An int no croqvm type can hold is refused: into an integer type it
    must fit in 64 bits (and then wraps), into a float type in the range of f64."""
    if not (-(1 << 63) <= value < (1 << 64) if t.is_int else _fits_f64(value)):
        raise ArgumentError(f"{_who(n, p)} is {value}, out of range for '{t.name}'.")
    return storage_array([value_of(value, t)], t)


def _fits_f64(value) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _given_dims(fn, given: dict) -> dict[str, int]:
    """The symbolic dimensions the caller gives: names of the function's dimensions, with
    integer values (a misspelt keyword of ``run`` lands here, too)."""
    names = [name for name, _ in fn.dims]
    for name, value in given.items():
        if name not in names:
            raise ArgumentError(f"'{fn.name}' has no symbolic dimension '{name}' (its "
                                f"symbolic dimensions: {', '.join(names) or 'none'}).")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ArgumentError(f"symbolic dimension '{name}' must be an integer, not "
                                f"{value!r}.")
    return {name: int(value) for name, value in given.items()}


def _dim_value(fn, name, dims: _Dims, given: dict) -> int:
    if name in dims.values:
        value, by = dims.values[name]
        if name in given and given[name] != value:
            raise ArgumentError(f"symbolic dimension '{name}' is {value} (bound by {by}) but "
                                f"{given[name]} was given.")
        return value
    if name in given:
        return given[name]
    raise ArgumentError(f"symbolic dimension '{name}' of '{fn.name}' is not bound by any "
                        f"parameter; give its value in dims.")


def _check_end(hblk) -> None:
    """§9.5.4: the host lane, too, must wait for every async copy it issued."""
    from . import diagnose
    from .dma import check_kernel_end
    try:
        check_kernel_end(hblk)
    except Fault as f:
        raise diagnose.fault(hblk, f.kind, f.operands, f.lane, -1, f.span) from None


def run_function(module, name: str, args: list, dims: dict, *, poison: bool, schedule: str,
                 seed: int, max_steps: int | None, out, stats: dict | None, progress=None,
                 check: str | None = None, device=None, debugger=None, tracer=None):
    """The reference engine's runner (croqvm.running.program): run function ``name`` of
    ``module`` on ``args`` (numpy arrays and Python scalars in parameter order). Returns
    the returned array, scalar or None; ``global`` buffer parameters are copied back into
    the caller's arrays. ``dims`` gives symbolic dimensions no parameter binds (and must
    agree with those the parameters bind). ``max_steps`` bounds warp-steps
    (docs/EXECUTION.md §17); None: nothing does. A ``stats`` dict receives
    ``warp_steps``, ``lane_steps``, ``launches`` and ``blocks`` (kernel blocks run) when
    given. ``progress`` is called with a ``RunPosition`` every ``PROGRESS_EVERY``
    warp-steps; an interrupt (Ctrl-C) leaves as ``Interrupted`` with the position it
    stopped at (croqvm.core.position). ``check`` ("race", "init" or None) adds a run-time check
    (croqvm.interp.checks; "init" is poison mode and registers, and ``poison`` another
    name for it): what it finds is a KernelFault. The options are valid: the facade
    checked them. With a ``device`` (croqvm.cuda.launch.Device) the kernels run there and
    only the host program here.
    A ``debugger`` (croqvm.debug) wraps every step table the call prepares: with none,
    the engine runs its own. A ``tracer`` (croqvm.trace) wraps them the same way, inside
    the debugger's."""
    # the engine proper, imported here: the native engine binds its arguments with this
    # module's ``bind`` and runs without it
    from .checks import make_checker
    from .engine import run_block
    fn = module.function(name)
    if poison and check is None:
        check = "init"
    call = Call(module, fn, out=out, poison=check == "init",
                scheduler=make_scheduler(schedule, seed), max_steps=max_steps,
                progress=progress, device=device)
    call.checker = make_checker(check, call)
    call.debugger = debugger
    call.tracer = tracer
    call.result = None
    hblk = Block(call, call.program(fn.host), 1)
    # overflow to inf, x/0 and NaN are §12.3 results, in arguments (rounded on entry) too
    with np.errstate(all="ignore"):
        back = bind(call, hblk, list(args), _given_dims(fn, dims or {}))
        try:
            run_block(hblk)
            _check_end(hblk)
        except Interrupted:      # a device's launch says where it was itself
            raise
        except KeyboardInterrupt:
            raise Interrupted(call.position()) from None
        except KernelFault as fault:
            if call.checker is not None:
                raise call.checker.finish(fault) or fault from None
            raise
        finally:
            if stats is not None:
                stats.update(warp_steps=call.steps, lane_steps=call.lane_steps,
                             launches=call.launches, blocks=call.blocks_run)
        if call.checker is not None:
            found = call.checker.finish()
            if found is not None:
                raise found
    for arr, buf, t in back:
        copy_back(arr, buf.data, t)
    return call.result
