"""A run's timeline without a GPU (``croqvm trace``, README "Seeing the timeline",
docs/TRACE.md).

- ``cost.py``: the cost model (cycles per instruction class, copies, MMAs), H100 numbers
  by default, overridable from a TOML file;
- ``recorder.py``: the engine's tracing hook (``Call.tracer``, croqvm.interp.engine.prepare)
  and what it records (``Trace``: slices per warp, waits, copies, flows, statement totals);
- ``output.py``: the Trace Event Format file, the hot-spot table and the picture.

Tracing runs on the reference engine: the hook wraps its step tables, and with no tracer
attached the engine runs its own.
"""
from __future__ import annotations

from ..core.errors import ArgumentError, KernelFault
from .cost import CostModel, load
from .recorder import Flow, Recorder, Slice, StatRow, Trace

__all__ = ["CostModel", "Flow", "Slice", "StatRow", "Trace", "load", "record"]


def record(program, func: str, args, dims: dict, *, cost: CostModel | None = None,
           schedule: str = "rr", seed: int = 0, poison: bool = False, check=None,
           max_steps: int | None = None, out=None, keep_on_fault: bool = False) -> Trace:
    """Run ``func(*args)`` of ``program`` (a croqvm.Program) on the reference engine under
    the tracing hook and return its ``Trace`` (``Trace.result`` the function's result).
    The options are ``Program.run``'s; ``cost`` the model (default: ``CostModel()``).
    A runtime error (``KernelFault``) is raised, or with ``keep_on_fault`` ends the
    trace where the run stopped and comes back as ``Trace.error``."""
    import sys
    from ..interp.host import run_function
    from ..running.program import check_seed
    program.check_options(func, check, schedule, max_steps)
    if cost is not None and not isinstance(cost, CostModel):
        raise ArgumentError(f"cost must be a croqvm.trace.CostModel, not "
                            f"{type(cost).__name__}.")
    recorder = Recorder(program.module, cost or CostModel())
    result = error = None
    try:
        result = run_function(program.module, func, list(args), dims, poison=bool(poison),
                              schedule=schedule, seed=check_seed(seed), max_steps=max_steps,
                              out=sys.stdout if out is None else out, stats=None,
                              check=check, tracer=recorder)
    except KernelFault as fault:
        if not keep_on_fault:
            raise
        error = fault
    recorder.finish(stopped=error is not None)
    return recorder.trace(result, error)
