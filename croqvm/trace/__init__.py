"""A run's timeline without a GPU (``croqvm trace``, README "Seeing the timeline",
docs/TRACE.md).

- ``cost.py``: the cost model (cycles per instruction class, copies, MMAs), H100 numbers
  by default, overridable from a TOML file;
- ``recorder.py``: the engine's tracing hook (``Call.tracer``, croqvm.interp.engine.prepare)
  and what it records (``Trace``: slices per warp, waits, copies, flows, statement totals);
- ``native.py``: the same on the native engine (native/trace.c), agreeing with the recorder;
- ``output.py``: the Trace Event Format file, the hot-spot table and the picture.

Tracing runs on either engine: on the reference engine the hook wraps its step tables
(with no tracer attached the engine runs its own); on the native engine ``native.py``
hands the model to native/trace.c, which times the steps as the recorder does.
"""
from __future__ import annotations

from ..core.errors import ArgumentError, KernelFault
from .cost import CostModel, load
from .recorder import Flow, Recorder, Slice, StatRow, Trace

__all__ = ["CostModel", "Flow", "Slice", "StatRow", "Trace", "load", "record"]


def record(program, func: str, args, dims: dict, *, cost: CostModel | None = None,
           schedule: str = "rr", seed: int = 0, poison: bool = False, check=None,
           max_steps: int | None = None, out=None, keep_on_fault: bool = False,
           engine: str | None = None, file=None) -> Trace:
    """Run ``func(*args)`` of ``program`` (a croqvm.Program) under the tracing hook of
    ``engine`` and return its ``Trace`` (``Trace.result`` the function's result). The
    options are ``Program.run``'s; ``engine`` "native" or "python" (default: the one
    ``run`` chooses, croqvm.running.program.default_engine); ``cost`` the model
    (default: ``CostModel()``). A runtime error (``KernelFault``) is raised, or with
    ``keep_on_fault`` ends the trace where the run stopped and comes back as
    ``Trace.error``. ``file``, a ``croqvm.trace.output.TraceFile`` the caller closes with
    the trace: the native engine writes the slices to it as the run goes (``croqvm trace
    -o``), and the trace does not keep them."""
    import sys
    from ..running.program import CHECKING, ENGINES, _choose, check_seed, default_engine
    program.check_options(func, check, schedule, max_steps)
    if cost is not None and not isinstance(cost, CostModel):
        raise ArgumentError(f"cost must be a croqvm.trace.CostModel, not "
                            f"{type(cost).__name__}.")
    cost = cost or CostModel()
    # A race-checked native run that races runs again on the reference engine
    # (croqvm.native.driver), so the race check traces there from the start.
    tracing = ("python",) if check == "race" else CHECKING.get(check, tuple(ENGINES))
    if engine is None:
        engine = default_engine(check=check, poison=poison)
        engine = engine if engine in tracing else "python"
    _choose("engine", engine, tuple(ENGINES))
    if engine not in tracing:
        raise ArgumentError(f"a trace with check '{check}' runs on the Python engine only: "
                            f"use engine='python' with it.")
    options = dict(poison=bool(poison), schedule=schedule, seed=check_seed(seed),
                   max_steps=max_steps, out=sys.stdout if out is None else out, stats=None,
                   check=check)
    if engine == "native":
        from ..native import runner
        from .native import NativeTracer
        hook = NativeTracer(program.module, program.module.function(func), cost, sink=file)
        run = runner()
    else:
        from ..interp.host import run_function as run
        hook = Recorder(program.module, cost)
    result = error = None
    try:
        result = run(program.module, func, list(args), dims, tracer=hook, **options)
    except KernelFault as fault:
        if not keep_on_fault:
            raise
        error = fault
    if engine == "python":
        hook.finish(stopped=error is not None)
    return hook.trace(result, error)
