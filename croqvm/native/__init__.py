"""The native engine: the machine model in C (native/, built as croqvm._native through
cffi), agreeing bit for bit with the reference engine (croqvm/interp/), which stays the
specification. ``runner()`` gives its runner for croqvm.program."""
from __future__ import annotations

from ..errors import ArgumentError


def extension():
    """The built extension module, or None when it was not built; one that was built but
    can not be loaded is an ArgumentError saying why."""
    try:
        from .. import _native
    except ModuleNotFoundError:
        return None
    except ImportError as e:
        raise ArgumentError(f"engine 'native' is not available: the extension "
                            f"croqvm._native does not load ({e}).") from None
    return _native


def runner():
    """The native engine's runner (croqvm.program); an ArgumentError when the extension
    was not built."""
    ext = extension()
    if ext is None:
        raise ArgumentError("engine 'native' is not available: the extension croqvm._native "
                            "was not built (reinstall croqvm with 'pip install -e .', which "
                            "compiles it); use engine='python'.")
    from .driver import run_function

    def run(module, name, args, dims, **options):
        return run_function(ext.lib, ext.ffi, module, name, args, dims, **options)
    return run
