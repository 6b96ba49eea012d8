"""Differential runs: one function on the same inputs by the reference interpreter and
by another engine or device, and where they disagree (``croqvm diff``; a pytest helper).

    from croqvm.running.diff import assert_agree
    def test_my_kernel_on_cuda():
        prog = croqvm.compile_file("gemm.co")
        assert_agree(prog, "matmul", a, b, against="cuda-cpu")

What is compared: the returned value, every ``global`` buffer parameter after the call
(§14.3.3), the printed lines (as multisets: a device prints a launch's lines in its own
order) and the runtime error, if any (its text). Integers and bools must be equal;
floats may differ by ``atol + rtol * |reference|`` (NaN equals NaN).

The reference is the native engine (``reference="python"`` for the specification itself;
against the native engine, the reference is always the Python engine). Two runs that
stop with the same runtime error agree, but a caller that wants results must not take that
for success: ``Comparison.both_fault`` says so.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from ..bytecode.module import ParamKind, ParamStorage
from ..core.errors import ArgumentError, KernelFault
from ..cuda.tolerance import gpu_tolerance, result_types

# what --against names -> Program.run options
AGAINST = {"python": {"engine": "python"}, "native": {"engine": "native"},
           "cuda-cpu": {"device": "cuda-cpu"}, "gpu": {"device": "gpu"}}
# default float tolerance per target: exact where the arithmetic is the engines'; on a
# GPU, tensor cores and math functions round differently (LANGUAGE.md §12.4), by bounds
# derived from each result's type and the module's accumulations
DEFAULT_TOLERANCE = {"python": (0.0, 0.0), "native": (0.0, 0.0), "cuda-cpu": (0.0, 0.0),
                     "gpu": (0.0, 0.0)}     # gpu: derived per result (cuda/tolerance.py)
REFERENCES = ("native", "python")      # the interpreters a comparison may take as reference


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: ``what`` (a result name, ``output`` or ``error``), the element
    index (None for a whole value), both values and the tolerance that applied."""
    what: str
    index: tuple | None
    reference: object
    other: object
    tolerance: float = 0.0

    def __str__(self) -> str:
        where = self.what if self.index is None else \
            f"{self.what}[{', '.join(map(str, self.index))}]"
        if self.what in ("output", "error"):      # text: shown as text, one block each
            return (f"{where}:\n    reference: {_text(self.reference)}\n"
                    f"    other:     {_text(self.other)}")
        tol = f" (tolerance {self.tolerance:g})" if self.tolerance else ""
        return f"{where}: reference {self.reference!r}, other {self.other!r}{tol}"


def _text(value) -> str:
    if value is None:
        return "(no error)"
    lines = str(value).rstrip("\n").split("\n")
    return "\n               ".join(lines) if lines != [""] else "(nothing)"


@dataclass
class Outcome:
    results: dict
    output: str
    error: str | None
    fault: KernelFault | None = None     # the error raised, when there is one


def run_once(program, func: str, args: list, dims: dict, options: dict) -> Outcome:
    """One run on copies of ``args``: results by name (``result`` for the returned
    value, then each ``global`` buffer parameter), printed text, error text."""
    fn = program.function(func)
    if fn is None:
        raise ArgumentError(f"no function named '{func}' in this module.")
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = io.StringIO()
    try:
        result = program.run(func, *mine, out=out, **options, **dims)
    except KernelFault as err:
        return Outcome({}, out.getvalue(), str(err), err)
    results = {} if result is None else {"result": result}
    for p, a in zip(fn.params, mine):
        if p.kind == ParamKind.BUFFER and p.storage == ParamStorage.GLOBAL:
            results[p.name] = a
    return Outcome(results, out.getvalue(), None)


def _elements(name, want, got, rtol, atol, limit):
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape or want.dtype != got.dtype:
        return [Mismatch(name, None, f"{want.dtype}{list(want.shape)}",
                         f"{got.dtype}{list(got.shape)}")]
    if want.dtype.kind == "f":
        w, g = want.astype(np.float64), got.astype(np.float64)
        with np.errstate(all="ignore"):          # inf - inf is a NaN that compares unequal
            bound = atol + rtol * np.abs(w)
            # an infinity is only close to itself (its bound would be infinite)
            near = (np.abs(g - w) <= bound) & np.isfinite(w) & np.isfinite(g)
            bad = ~(near | (np.isnan(w) & np.isnan(g)) | (w == g))
    else:
        bound = np.zeros(want.shape)
        bad = want != got
    out = []
    for idx in np.argwhere(bad)[:limit]:
        i = tuple(int(x) for x in idx)
        out.append(Mismatch(name, i, want[i].item(), got[i].item(), float(bound[i])))
    return out


def compare(ref: Outcome, other: Outcome, rtol: float = 0.0, atol: float = 0.0,
            limit: int = 10, tolerance=None) -> list:
    """The first ``limit`` mismatches between two outcomes (in order of results, then
    output, then error). ``tolerance(name, want)``, if given, is each float result's
    (rtol, atol) instead."""
    found = []
    for name, want in ref.results.items():
        if name not in other.results:
            found.append(Mismatch(name, None, "a value", "nothing"))
        elif np.ndim(want) == 0 and not isinstance(want, np.ndarray):
            got = other.results[name]
            if not (got == want or (isinstance(want, float) and got != got and want != want)):
                found.append(Mismatch(name, None, want, got))
        else:
            if tolerance is not None and np.asarray(want).dtype.kind == "f":
                rtol, atol = tolerance(name, np.asarray(want))
            found += _elements(name, want, other.results[name], rtol, atol, limit)
    if sorted(ref.output.splitlines()) != sorted(other.output.splitlines()):
        found.append(Mismatch("output", None, ref.output, other.output))
    if ref.error != other.error:
        found.append(Mismatch("error", None, ref.error, other.error))
    return found[:limit]


@dataclass
class Comparison:
    """Both outcomes of a differential run and their mismatches (none: they agree)."""
    reference: Outcome
    other: Outcome
    mismatches: list

    @property
    def both_fault(self) -> bool:
        """Both runs stopped with the same runtime error: they agree, on a fault."""
        return not self.mismatches and self.reference.error is not None


def reference_for(against: str, reference: str = "native") -> str:
    """The interpreter a comparison against ``against`` takes as reference: ``reference``,
    unless that is ``against`` itself (the native engine is compared with Python)."""
    from .program import available
    if reference not in REFERENCES:
        raise ArgumentError(f"unknown reference '{reference}': use {' or '.join(REFERENCES)}")
    if against == reference or not available("cpu", reference):
        return "python"      # the specification: also where the extension is not built
    return reference


def comparison(program, func: str, *args, against: str = "cuda-cpu",
               reference: str = "native", rtol: float | None = None,
               atol: float | None = None, limit: int = 10, check=None, **dims) -> Comparison:
    """Run ``func`` on the reference interpreter and on ``against`` with the same
    arguments; both outcomes and the first ``limit`` mismatches. ``check`` checks the
    reference run (``Program.run``'s ``check``): an error that it alone gives (the same
    run unchecked does not), a race report, is raised, as the run's error."""
    if against not in AGAINST:
        raise ArgumentError(f"unknown target '{against}' to compare with: use "
                            f"{', '.join(AGAINST)}")
    ref_engine = reference_for(against, reference)
    rtol, atol, derived = tolerances(program, func, args, against, rtol, atol)
    ref = run_once(program, func, list(args), dims, {"engine": ref_engine, "check": check})
    if check is not None and ref.error is not None and \
            run_once(program, func, list(args), dims, {"engine": ref_engine}).error != ref.error:
        raise ref.fault
    other = run_once(program, func, list(args), dims, AGAINST[against])
    return Comparison(ref, other, compare(ref, other, rtol, atol, limit, derived))


def tolerances(program, func: str, args, against: str, rtol: float | None,
               atol: float | None):
    """The float tolerances of a comparison of ``func`` with ``against``, as ``compare``
    takes them: (rtol, atol, per-result tolerance or None), the target's defaults for those
    not given; against gpu with neither given, each result's own (cuda/tolerance.py)."""
    d_rtol, d_atol = DEFAULT_TOLERANCE[against]
    derived = None
    if against == "gpu" and rtol is None and atol is None:
        derived = gpu_tolerances(program, func, args)
    return d_rtol if rtol is None else rtol, d_atol if atol is None else atol, derived


def gpu_tolerances(program, func: str, args):
    """``compare``'s per-result tolerance of a run of ``func`` on a GPU."""
    types = result_types(program.module, func)
    return lambda name, want: gpu_tolerance(program.module, args, want, types.get(name))


def differ(program, func: str, *args, against: str = "cuda-cpu", reference: str = "native",
           rtol: float | None = None, atol: float | None = None, limit: int = 10,
           **dims) -> list:
    """Run ``func`` on the reference interpreter and on ``against``; the mismatches."""
    return comparison(program, func, *args, against=against, reference=reference, rtol=rtol,
                      atol=atol, limit=limit, **dims).mismatches


def assert_agree(program, func: str, *args, against: str = "cuda-cpu", reference="native",
                 rtol=None, atol=None, **dims) -> None:
    """pytest helper: fail with the mismatches unless ``against`` agrees with the
    reference interpreter on ``func(*args)``."""
    found = differ(program, func, *args, against=against, reference=reference, rtol=rtol,
                   atol=atol, **dims)
    if found:
        raise AssertionError(f"'{func}' on {against} differs from the interpreter:\n" +
                             "\n".join(f"  {m}" for m in found))
