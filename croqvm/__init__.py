"""croqvm: compile Croqtile GPU kernels to structured SIMT bytecode and run them.

    import croqvm
    prog = croqvm.compile_file("gemm.co", defines={"STAGES": "2"})   # static errors raise
    c = prog.run("matmul", a, b)                                    # numpy in, numpy out
    prog.save("gemm.cqb"); prog = croqvm.load("gemm.cqb")

Each returns a ``croqvm.Program`` (croqvm/running/program.py), whose ``run`` takes the device,
engine, schedule and other options as keywords. See LANGUAGE.md §14.1 for the host-side
rules.
"""
from __future__ import annotations

import gc
import os

from .core.collector import paused
from .core.errors import (ArgumentError, BytecodeError, CompileError, CroqvmError, InternalError,
                     KernelFault)
from .running.program import Program

__all__ = ["compile", "compile_file", "check", "load", "Program", "CroqvmError",
           "CompileError", "BytecodeError", "ArgumentError", "KernelFault", "InternalError"]
__version__ = "0.1.0"


# Bytes of source from which compiling frees each function's tree as it goes: a
# collection walks every live object of the process (tens of milliseconds in a large one),
# more than a small program's tree is worth.
LARGE_SOURCE = 1 << 14


def check(source: str, filename: str = "<string>", defines=None, *, bodies: bool = True):
    """Everything ``compile`` checks, without raising: the front end, then (when it found
    no error) lowering and the hardware limits. Returns ``(program, diagnostics,
    sources)``: the checked ``ast.Program``, every diagnostic in source order, the
    ``SourceFile`` of each file name. ``bodies=False``: the functions that were lowered
    keep only their names and signatures, which spares a large program's memory."""
    with paused():
        program, _, diagnostics, sources = _build(source, filename, defines, bodies,
                                                  module=False)
    return program, diagnostics, sources


def _build(source: str, filename: str, defines, bodies: bool = True, module: bool = True):
    """``(program, module or None, diagnostics, sources)``: one pipeline for ``check`` and
    ``compile``, so that what one accepts the other does. ``bodies``: whether the
    program's functions keep their bodies once lowered (``lower_program``'s release);
    ``module``: whether the module is kept (else each function is dropped once lowered
    and checked against the limits, and the module is None)."""
    from .bytecode.lower import lower_program
    from .core.diagnostics import DiagnosticSink
    from .lang.frontend import front_end, has_errors
    program, diags, sources = front_end(source, filename, defines)
    if has_errors(diags) or program is None:
        return program, None, diags, sources
    lowered, lowering = lower_program(program, list(sources.values()), release=not bodies,
                                      collect=not bodies and len(source) >= LARGE_SOURCE,
                                      keep=module)
    sink = DiagnosticSink()
    for d in diags + lowering:
        sink.add(d)
    return program, lowered if module else None, sink.sorted(), sources


def compile(source: str, filename: str = "<string>", defines=None) -> Program:
    """Compile Croqtile source to a ``Program``; raises ``CompileError`` (or
    ``InternalError``, when a croqvm bug is all that went wrong).

    Warnings do not stop compilation; they are kept in the program (``warnings``: the
    rendered text, ``diagnostics``: the records).
    """
    from .core.diagnostics import render_all
    from .bytecode.verify import verify

    with paused():
        _, module, diags, sources = _build(source, filename, defines, bodies=False)
    if len(source) >= LARGE_SOURCE:
        gc.collect()    # what is left of the tree, before verifying the module adds to it
    errors = [d for d in diags if d.is_error]
    if errors:
        error = InternalError if all(d.is_internal for d in errors) else CompileError
        raise error(render_all(diags, sources), diags)
    try:
        with paused():
            verify(module)   # the engines trust verified modules only (STYLE.md rule 6)
    except BytecodeError as err:
        raise InternalError(f"{filename}: internal error: lowering produced an invalid "
                            f"module: {err}") from None
    return Program(module, [d for d in diags if d.severity == "warning"])


def compile_file(path, defines=None) -> Program:
    """Compile a ``.co`` file; see ``compile``."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as f:   # no BOM
            text = f.read()
    except OSError as exc:
        raise CroqvmError(f"can not read '{path}': {exc.strerror}") from None
    return compile(text, path, defines)


def load(path) -> Program:
    """Load a ``.cqb`` file (always verified); raises ``BytecodeError``."""
    from .bytecode.cqb import load as load_cqb
    return Program(load_cqb(os.fspath(path)))
