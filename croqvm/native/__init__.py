"""The native engine: the machine model in C (native/, built as croqvm._native through
cffi), agreeing bit for bit with the reference engine (croqvm/interp/), which stays the
specification. ``runner()`` gives its runner for croqvm.running.program."""
from __future__ import annotations

from ..core.errors import ArgumentError


NOT_BUILT = ("the extension croqvm._native was not built (reinstall croqvm with "
             "'pip install -e .', which compiles it)")


def _load():
    """(the built extension module or None, why it is None)."""
    try:
        from .. import _native
    except ModuleNotFoundError:
        return None, NOT_BUILT
    except ImportError as e:
        return None, f"the extension croqvm._native does not load ({e})"
    return _native, None


def extension():
    """The built extension module, or None when it was not built; one that was built but
    can not be loaded is an ArgumentError saying why."""
    ext, why = _load()
    if ext is None and why is not NOT_BUILT:
        raise ArgumentError(f"engine 'native' is not available: {why}.")
    return ext


def unavailable() -> str | None:
    """Why the native engine can not run in this installation, or None when it can."""
    return _load()[1]


def runner():
    """The native engine's runner (croqvm.running.program); an ArgumentError when the extension
    was not built or does not load."""
    ext, why = _load()
    if ext is None:
        raise ArgumentError(f"engine 'native' is not available: {why}; use engine='python'.")
    from .driver import run_function

    def run(module, name, args, dims, **options):
        return run_function(ext.lib, ext.ffi, module, name, args, dims, **options)
    return run
