"""Compile CUDA C++ written against the croqvm runtime (``rt/croqvm_rt.cuh``): nvcc to a
cubin per GPU architecture, or the host C++ compiler to a shared library that runs the
kernels on the CPU (``--device cuda-cpu``). Results are cached on disk.

Cache: ``CROQVM_CACHE_DIR``, else ``$XDG_CACHE_HOME/croqvm/cuda-v1`` (``~/.cache/...``).
The key hashes the source, the runtime headers (they are ``#include``d, so a change
there changes the binary), the generator version, the target, the compiler's
``--version`` text and the flags. An entry is ``<key>.cu`` (the source, kept for
reading), ``<key>.json`` (the command, the compiler version, seconds taken) and the
binary ``<key>.cubin`` / ``<key>.so``, written last: each file goes to a temporary name
and is renamed into place, so concurrent processes never see half a file.
``CROQVM_DISABLE_CACHE=1`` compiles into a private temporary directory instead.
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from ..core import errors, files

RT_DIR = Path(__file__).resolve().parent / "rt"
# cq_numerics.h, the engines' numerics in C: shipped beside the runtime in an installed
# package, in native/ of a source checkout
NUMERICS_DIR = RT_DIR if (RT_DIR / "cq_numerics.h").exists() else \
    Path(__file__).resolve().parents[2] / "native"
INCLUDE_DIRS = (RT_DIR, NUMERICS_DIR)
CACHE_LAYOUT = "cuda-v1"
HEADERS = (".h", ".cuh")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[ \t]*$', re.M)

# -fmad=false: no contraction of a*b+c, which would round once where the engines round
# twice (LANGUAGE.md §12.3); the -prec-div/-prec-sqrt/-ftz defaults are already IEEE.
NVCC_FLAGS = ("-std=c++17", "-O3", "-fmad=false", "-lineinfo", "--expt-relaxed-constexpr",
              "-diag-suppress", "177")   # 177: a register the kernel never reads
# -O1 keeps builds fast (kernels are small, the fibers dominate); -ffp-contract=off for
# the same reason as -fmad=false.
CXX_FLAGS = ("-std=c++17", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-DCQ_CPU")

# Targets: GPU architectures with a cubin each (nvcc -arch values); PTX for the driver to
# compile on any newer GPU; the CPU runtime.
GPU_ARCHES = ("sm_80", "sm_90a")
PTX = "compute_80"
CPU = "cpu"
SUFFIX = {CPU: ".so", PTX: ".ptx", **{a: ".cubin" for a in GPU_ARCHES}}

Log = Optional[Callable[[str], None]]


def cache_dir() -> Path:
    return Path(files.cache_dir(CACHE_LAYOUT))


def _tool(target: str) -> str:
    """The compiler for ``target``: nvcc, or $CXX / g++ / c++ for the CPU runtime."""
    if target == CPU:
        chosen = os.environ.get("CXX")
        names = [chosen] if chosen else ["g++", "c++", "clang++"]
        hint = (f"CXX is '{chosen}'" if chosen else
                "install g++ (or set CXX to a C++17 compiler)")
    elif target in SUFFIX:
        names, hint = ["nvcc"], "install the CUDA toolkit and put nvcc on PATH"
    else:
        raise errors.ArgumentError(f"unknown CUDA target '{target}': expected one of "
                                   f"{', '.join(SUFFIX)}")
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    what = "a C++ compiler" if target == CPU else "nvcc"
    raise errors.DeviceError(f"{what} is needed for target '{target}' but was not found: "
                             f"{hint}.")


@functools.lru_cache(maxsize=None)
def compiler_version(tool: str) -> str:
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise errors.DeviceError(f"can not run '{tool} --version': {exc}") from None
    return done.stdout.strip()


def runtime_hash() -> str:
    """sha256 of every header the sources include, names included."""
    h = hashlib.sha256()
    for path in sorted({p for d in INCLUDE_DIRS for p in d.iterdir() if p.suffix in HEADERS}):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def command(tool: str, target: str, src: Path, out: Path, flags: Sequence[str]) -> list:
    includes = [f"-I{d}" for d in INCLUDE_DIRS]
    if target == CPU:
        return [tool, *CXX_FLAGS, *flags, *includes, "-x", "c++", str(src), "-o", str(out)]
    kind = "-ptx" if target == PTX else "-cubin"
    return [tool, *NVCC_FLAGS, *flags, kind, f"-arch={target}", *includes, str(src),
            "-o", str(out)]


def standalone(source: str) -> str:
    """``source`` with the runtime's headers written in place of its quoted includes,
    recursively, so that a plain ``nvcc -arch=ARCH -cubin`` compiles it. A header
    included twice is written twice: its include guard empties the second copy."""
    def expand(match):
        name = match.group(1)
        path = next((d / name for d in INCLUDE_DIRS if (d / name).is_file()), None)
        if path is None:
            return match.group(0)
        body = _INCLUDE.sub(expand, path.read_text())
        return f"// ---- {name} (croqvm runtime) ----\n{body.rstrip()}\n// ---- end of {name} ----"
    return _INCLUDE.sub(expand, source)


def cache_key(source: str, target: str, version: str, flags: Sequence[str],
              generator: str) -> str:
    h = hashlib.sha256()
    for part in (source, runtime_hash(), generator, target, version, " ".join(flags)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@functools.lru_cache(maxsize=None)
def _private_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="croqvm-cuda-"))
    atexit.register(shutil.rmtree, d, True)
    return d


def build(source: str, target: str, *, generator: str = "", flags: Sequence[str] = (),
          log: Log = None) -> Path:
    """The binary for ``source`` on ``target`` (``sm_80``, ``sm_90a``, ``compute_80``
    or ``cpu``),
    compiled now or found in the cache. ``generator`` names the generator version that
    wrote ``source``; ``log`` receives cache hits, misses and commands."""
    tool = _tool(target)
    version = compiler_version(tool)
    key = cache_key(source, target, version, flags, generator)
    cached = files.caching()
    where = cache_dir() if cached else _private_dir()
    binary = where / (key + SUFFIX[target])
    if cached and binary.exists():
        if log:
            log(f"croqvm: cuda cache hit {binary}")
        return binary
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise errors.DeviceError(f"can not create the CUDA cache directory {where}: "
                                 f"{exc.strerror} (set CROQVM_CACHE_DIR)") from None
    with tempfile.TemporaryDirectory(dir=where, prefix=key + ".") as work:
        src = Path(work) / (key + ".cu")
        src.write_text(source)
        out = Path(work) / binary.name
        cmd = command(tool, target, src, out, flags)
        if log:
            log(f"croqvm: cuda cache miss; {' '.join(cmd)}")
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise errors.InternalError(
                f"{Path(tool).name} failed on the CUDA source for {target} "
                f"(exit status {done.returncode}); the source is {_keep(src, where)}:\n"
                f"{done.stderr.strip()}")
        meta = {"command": cmd, "compiler": version, "target": target, "seconds": seconds,
                "generator": generator, "warnings": done.stderr.strip()}
        _write_atomic(where / (key + ".cu"), source.encode())
        _write_atomic(where / (key + ".json"), json.dumps(meta, indent=1).encode())
        os.replace(out, binary)
    return binary


def _keep(src: Path, where: Path) -> Path:
    """Keeps a source nvcc rejected, for the error message to point at."""
    kept = where / ("failed-" + src.name)
    shutil.copyfile(src, kept)
    return kept


def build_info(binary: Path) -> dict:
    """The ``.json`` record written beside a cached binary."""
    return json.loads(binary.with_suffix(".json").read_text())
