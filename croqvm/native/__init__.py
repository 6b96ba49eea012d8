"""The native engine: the machine model in C (native/, built as croqvm._native through
cffi), agreeing bit for bit with the reference engine (croqvm/interp/), which stays the
specification. ``run_function`` takes what ``croqvm.interp.run_function`` takes."""
from __future__ import annotations

from ..errors import ArgumentError


def extension():
    """The built extension module, or None when it was not built."""
    try:
        from .. import _native
    except ImportError:
        return None
    return _native


def available() -> bool:
    return extension() is not None


def run_function(module, name: str, args: list, dims: dict | None = None, **options):
    ext = extension()
    if ext is None:
        raise ArgumentError("the native engine is not built: install croqvm with "
                            "'pip install -e .' (it compiles croqvm._native), or use "
                            "engine='python'")
    from .driver import run_function as run
    return run(ext.lib, ext.ffi, module, name, args, dims, **options)
