"""croqvm: compile Croqtile GPU kernels to structured SIMT bytecode and run them.

    import croqvm
    prog = croqvm.compile_file("gemm.co", defines={"STAGES": "2"})   # static errors raise
    c = prog.run("matmul", a, b)                                    # numpy in, numpy out
    prog.save("gemm.cqb"); prog = croqvm.load("gemm.cqb")

See LANGUAGE.md §14.1 for the host-side rules.
"""
from __future__ import annotations

import os

from .errors import (ArgumentError, BytecodeError, CompileError, CroqvmError, InternalError,
                     KernelFault)

__all__ = ["compile", "compile_file", "check", "load", "CroqvmError", "CompileError",
           "BytecodeError", "ArgumentError", "KernelFault", "InternalError"]
__version__ = "0.1.0"


def check(source: str, filename: str = "<string>", defines=None):
    """Run the front end; return ``(program, diagnostics, sources)``. Never raises."""
    from .lang.frontend import front_end
    return front_end(source, filename, defines)


def compile(source: str, filename: str = "<string>", defines=None):
    """Compile Croqtile source to a bytecode ``Module``; raises ``CompileError``.

    Warnings do not stop compilation; they are kept in ``module.warnings`` (rendered text).
    """
    from .lang.diagnostics import render_all
    from .lang.frontend import has_errors
    from .bytecode.lower import lower_program
    from .bytecode.verify import verify

    program, diags, sources = check(source, filename, defines)
    if has_errors(diags):
        raise CompileError(render_all(diags, sources), diags)
    module = lower_program(program, list(sources.values()))
    try:
        verify(module)   # the engines trust verified modules only (STYLE.md rule 6)
    except BytecodeError as err:
        raise InternalError(f"{filename}: internal error: lowering produced an invalid "
                            f"module: {err}") from None
    module.warnings = render_all([d for d in diags if d.severity == "warning"], sources)
    return module


def compile_file(path, defines=None):
    """Compile a ``.co`` file; see ``compile``."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise CroqvmError(f"can not read '{path}': {exc.strerror}") from None
    return compile(text, path, defines)


def load(path):
    """Load a ``.cqb`` file (always verified); raises ``BytecodeError``."""
    from .bytecode.cqb import load as load_cqb
    return load_cqb(os.fspath(path))
