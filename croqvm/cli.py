"""The ``croqvm`` command (LANGUAGE.md §14.1, §15.1 exit statuses).

Exit status: 0 success, 1 static error (source or ``.cqb`` rejected), 2 usage error (bad
arguments or input files), 3 runtime error. User errors print their diagnostic on stderr,
never a traceback.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import List, Optional

import typer

from . import errors
from .bytecode.module import ParamKind, ParamStorage
from .run_io import build_args, describe, load_inputs, parse_dims, save_npz

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Compile Croqtile kernels to SIMT bytecode and run them lane by lane.")

EXIT = {errors.CompileError: 1, errors.BytecodeError: 1, errors.ArgumentError: 2,
        errors.KernelFault: 3}

DefineOpt = typer.Option([], "-D", "--define", help="Define a macro: NAME or NAME=VALUE.")


def _fail(err: errors.CroqvmError) -> None:
    print(str(err), file=sys.stderr)
    raise typer.Exit(next((c for cls, c in EXIT.items() if isinstance(err, cls)), 2))


def command(fn):
    """Register ``fn`` as a subcommand whose croqvm errors become a message and a status."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.CroqvmError as err:
            _fail(err)
    return app.command()(wrapper)


def _defines(items: List[str]) -> dict:
    """§1.2.4: ``-D NAME`` defines NAME as 1 (None, as the preprocessor's
    ``initial_macros`` reads it), ``-D NAME=VALUE`` as VALUE (``-D NAME=``: as nothing)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        out[name] = value if sep else None
    return out


def _load(path: str, defines: List[str]):
    """A ``.cqb`` or ``.co`` file as a ``croqvm.Program``; warnings go to stderr."""
    import croqvm
    if not os.path.exists(path):
        raise errors.ArgumentError(f"no such file: '{path}'")
    if path.endswith(".cqb"):
        return croqvm.load(path)
    program = croqvm.compile_file(path, defines=_defines(defines))
    if program.warnings:
        print(program.warnings, file=sys.stderr)
    return program


@command
def check(file: str = typer.Argument(..., help="A .co source file."),
          define: List[str] = DefineOpt):
    """Check a Croqtile source file and report every diagnostic."""
    import croqvm
    from .diagnostics import render_all
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        _fail(errors.ArgumentError(f"can not read '{file}': {exc.strerror}"))
    program, diags, sources = croqvm.check(text, file, _defines(define))
    if diags:
        print(render_all(diags, sources), file=sys.stderr)
    n_err = sum(d.is_error for d in diags)
    if n_err:
        raise typer.Exit(1)
    n_warn = sum(d.severity == "warning" for d in diags)
    names = ", ".join(f.name for f in program.functions) if program else ""
    print(f"{file}: ok: {len(program.functions) if program else 0} function(s)"
          f"{' (' + names + ')' if names else ''}, {n_warn} warning(s)")


@command
def compile(file: str = typer.Argument(..., help="A .co source file."),
            output: Optional[str] = typer.Option(None, "-o", "--output",
                                                 help="Output .cqb (default: beside the input)."),
            define: List[str] = DefineOpt):
    """Compile a .co file to a .cqb bytecode file."""
    module = _load(file, define)
    out = output or os.path.splitext(file)[0] + ".cqb"
    module.save(out)
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


@command
def disasm(file: str = typer.Argument(..., help="A .cqb or .co file."),
           define: List[str] = DefineOpt):
    """Print the bytecode of every function, with source positions."""
    from .bytecode.disasm import disassemble
    print(disassemble(_load(file, define).module))


@command
def run(file: str = typer.Argument(..., help="A .co or .cqb file."),
        device: str = typer.Option("cpu", help="cpu (the lane-accurate interpreter) or gpu."),
        func: Optional[str] = typer.Option(None, help="Function to run (default: every "
                                           "parameterless function)."),
        input: List[str] = typer.Option([], help="PARAM=file.npy"),
        random_inputs: bool = typer.Option(False, "--random-inputs",
                                           help="Seeded random data for parameters not given."),
        seed: int = typer.Option(0, help="Seed for --random-inputs and --schedule random."),
        dim: List[str] = typer.Option([], help="NAME=VALUE for a symbolic dimension."),
        output: Optional[str] = typer.Option(None, help="Save results to this .npz file."),
        poison: bool = typer.Option(False, help="Poison new buffers; reading them faults."),
        schedule: str = typer.Option("rr", help="rr (default) or random."),
        max_steps: Optional[int] = typer.Option(None, help="Stop after this many warp steps."),
        quiet: bool = typer.Option(False, "--quiet", help="No summary of results."),
        define: List[str] = DefineOpt):
    """Run a function (or every parameterless one) of a .co/.cqb file."""
    if device == "gpu":
        raise errors.ArgumentError(
            "--device gpu is not available yet: croqvm's CUDA path is not built; use --device cpu")
    if device != "cpu":
        raise errors.ArgumentError(f"unknown device '{device}': use cpu or gpu")
    if schedule not in ("rr", "random"):
        raise errors.ArgumentError(f"unknown schedule '{schedule}': use rr or random")
    module = _load(file, define)
    options = dict(poison=poison, schedule=schedule, seed=seed, max_steps=max_steps,
                   out=sys.stdout)
    results = {}
    if func is None:
        # Every parameterless function, in file order; their results are named after them.
        for fn in module.functions:
            if fn.params:
                print(f"note: skipping '{fn.name}': it has parameters; run it with --func "
                      f"{fn.name} and --input/--random-inputs.", file=sys.stderr)
                continue
            result = module.run(fn.name, **options)
            if result is not None:
                results[fn.name] = result
    else:
        fn = module.function(func)
        if fn is None:
            known = ", ".join(f.name for f in module.functions) or "none"
            raise errors.ArgumentError(f"no function '{func}' in {file} (functions: {known})")
        args, dims = build_args(fn, load_inputs(input), parse_dims(dim), random_inputs, seed)
        result = module.run(func, *args, **options, **dims)
        if result is not None:
            results["result"] = result
        for p, a in zip(fn.params, args):
            if p.kind == ParamKind.BUFFER and p.storage == ParamStorage.GLOBAL:
                results[p.name] = a
    if not quiet:
        for name, value in results.items():
            print(describe(name, value), file=sys.stderr)
    if output:
        import numpy as np
        save_npz(output, {k: np.asarray(v) for k, v in results.items()})


def main(argv=None) -> int:
    """Entry point: run the typer app; returns the exit status (§15.1)."""
    try:
        app(args=argv, prog_name="croqvm", standalone_mode=True)
    except SystemExit as e:   # click exits with 2 on usage errors, as §15.1 asks
        return e.code if isinstance(e.code, int) else 1
    return 0
