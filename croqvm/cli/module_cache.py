"""The cache of compiled modules: ``croqvm run`` of a source compiled before with the same
inputs decodes the module it kept instead of compiling again (README "Caches").

An entry's key is the SHA-256 of everything compiling depends on: the source text, its
file name (spans and messages quote it), the ``-D`` macros in order, the croqvm version,
the ``.cqb`` format version, and the name, size and modification time of each of
croqvm's own Python files, so that an edited croqvm never reuses what another one
compiled. The entry is ``KEY.warnings.json``, the warnings compiling gave (they are
printed on every run), and ``KEY.cqb``, the module, written last; each is written
atomically (``files.write_atomic``), so a reader sees whole files or none. It lies in the
cache directory of the CUDA builds (``files.cache_dir``), whose entries have other names.

Reading decodes and verifies the module as ``croqvm.load`` does. An entry that is
missing, unreadable, corrupt or stale is compiled again and rewritten, and a cache that
can not be written is done without: the cache never makes a run fail. Programs with
errors are not kept. ``CROQVM_DISABLE_CACHE=1`` turns the cache off.
"""
from __future__ import annotations

import dataclasses
import os

from .. import __version__
from ..core.diagnostics import Diagnostic
from ..core.digest import sha256
from ..core.errors import ArgumentError, BytecodeError
from ..core.files import cache_dir, caching, write_atomic
from ..core.source import Span

LAYOUT = "modules-v1"
NO_WARNINGS = "[]"      # the warnings of most entries, read without importing json
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # croqvm/


def compile_cached(text: str, filename: str, defines: dict):
    """``croqvm.compile(text, filename, defines)``, from the cache when it holds it."""
    import croqvm
    if not caching():
        return croqvm.compile(text, filename, defines)
    entry = os.path.join(cache_dir(LAYOUT), entry_key(text, filename, defines))
    program = _read(entry)
    if program is None:
        program = croqvm.compile(text, filename, defines)
        _write(entry, program)
    return program


def entry_key(text: str, filename: str, defines: dict) -> str:
    from ..bytecode.module import FORMAT_VERSION
    h = sha256()
    for part in (__version__, str(FORMAT_VERSION), _croqvm_files(), filename,
                 repr(list(defines.items())), text):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:32]


def _croqvm_files() -> str:
    """A line per Python file of croqvm: its path, size and modification time."""
    lines, folders = [], [_PACKAGE]
    while folders:
        for item in os.scandir(folders.pop()):
            if item.is_dir():
                if item.name != "__pycache__":
                    folders.append(item.path)
            elif item.name.endswith(".py"):
                stat = item.stat()
                lines.append(f"{item.path} {stat.st_size} {stat.st_mtime_ns}")
    return "\n".join(sorted(lines))


def _read(entry: str):
    """The Program an entry holds, or None when it is missing or damaged."""
    import croqvm

    from ..bytecode.cqb import decode
    try:
        with open(entry + ".cqb", "rb") as f:
            data = f.read()
        with open(entry + ".warnings.json", encoding="utf-8") as f:
            text = f.read()
        if text == NO_WARNINGS:
            records = []
        else:
            import json
            records = json.loads(text)
        module = decode(data, entry + ".cqb")
        warnings = [Diagnostic(**{**r, "span": r["span"] and Span(**r["span"])})
                    for r in records]
    except (OSError, ValueError, TypeError, KeyError, BytecodeError):
        return None
    return croqvm.Program(module, warnings)


def _write(entry: str, program) -> None:
    """Keep ``program`` under ``entry``; nothing when the cache can not be written."""
    import json

    from ..bytecode.cqb import encode
    records = [{**dataclasses.asdict(d), "span": d.span and d.span.fields()}
               for d in program.diagnostics]
    try:
        data = encode(program.module)
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        write_atomic(entry + ".warnings.json", lambda f: f.write(json.dumps(records).encode()))
        write_atomic(entry + ".cqb", lambda f: f.write(data))
    except (OSError, ArgumentError, BytecodeError):
        pass
