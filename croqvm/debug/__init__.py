"""A debugger for running kernels (``croqvm debug``, README "Stepping through a kernel").

It runs the reference engine (croqvm.interp) with a hook that wraps the step table of each
program the call prepares (``Call.debugger``, croqvm.interp.engine.prepare): the engine is
unchanged, and with no debugger attached it runs its own step table.

- ``session.py``: ``Session``, the commands as methods returning data; the run executes on
  a thread of its own that parks at every stop; going back in time re-runs the call from
  its start (the run is deterministic) to an earlier step count;
- ``forward.py``: the blocks of a launch the session can not stop in, run on the native
  engine (native/debug.c) from the reference engine's state;
- ``values.py``: names, expressions and values of the stopped state;
- ``console.py``: the command language of co-mock's debugger and its text, interactive or
  from a script.
"""
from .session import Session, DebugError

__all__ = ["Session", "DebugError"]
