"""The exceptions croqvm raises for anything a user can cause (STYLE.md house rule 7).

Every error carries its rendered text (LANGUAGE.md §15.1): the CLI prints ``str(err)``
(and ``hint``, a suggestion kept apart so that messages the spec words stay verbatim) and
never a traceback. ``diagnostics`` holds the structured records when there are any.
"""
from __future__ import annotations


class CroqvmError(Exception):
    """Base of every user-facing croqvm error."""

    def __init__(self, message: str, diagnostics=(), hint: str | None = None):
        super().__init__(message)
        self.diagnostics = list(diagnostics)
        self.hint = hint


class CompileError(CroqvmError):
    """Static errors in Croqtile source (LANGUAGE.md §15.2); exit status 1."""


class BytecodeError(CroqvmError):
    """A malformed or hostile ``.cqb`` module, rejected by the decoder/verifier; exit status 1."""


class ArgumentError(CroqvmError):
    """A usage error; exit status 2: command-line arguments, files that can not be read or
    written, arguments that do not fit a function's parameters (LANGUAGE.md §14.3)."""


class KernelFault(CroqvmError):
    """A runtime error while a function runs (LANGUAGE.md §15.3); exit status 3.
    ``record`` is the engine's ``croqvm.core.faults.FaultRecord`` when one fault caused it (a
    deadlock report has none)."""

    def __init__(self, message: str, diagnostics=(), record=None):
        super().__init__(message, diagnostics)
        self.record = record


class DeviceError(CroqvmError):
    """A device or a tool it needs is unavailable (no CUDA driver or GPU, no nvcc, no C++
    compiler for ``cuda-cpu``); exit status 2."""


class InternalError(CroqvmError):
    """A failure that valid input cannot cause: a croqvm bug, reported with its position;
    exit status 4."""
