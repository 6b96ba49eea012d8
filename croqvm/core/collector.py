"""Python's cycle collector paused while croqvm builds large structures at once.

Compiling makes objects that live until it ends (tokens, the tree, the module, its plain
form for a ``.cqb`` file), and each full pass of the cycle collector walks all of them:
run every so many allocations, it would make compile time grow faster than the program
(bench/compile_scale.py). Reference counting frees what it can meanwhile; the collector
runs again afterwards.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """The cycle collector off inside, back on afterwards if it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
