"""The CUDA generator on every program of programs/ (issue: the CUDA path, item 5 and 7):
its output compiles with nvcc for sm_80 and sm_90a, and run on the CPU runtime
(``device="cuda-cpu"``) it gives what the interpreter gives on the same inputs.

cuda-cpu runs the sm_90a flavour of the generated code; the programs with MMA also run
the sm_80 flavour. Agreement: integer and bool results bit for bit. Floating-point results are exact too
wherever the order of operations is the engines': generated code rounds every
operation as croqvm.core.numerics does (cq_numerics.h) and runs each MMA step in the
engines' order, on tensor-core atoms as on the generic path. The one order that can
differ is that of several lanes accumulating into one element (UPDATE): the CPU runtime
runs lane after lane where the interpreter runs warp after warp. Such a result stays
within the catalogue's bound of the exact value on both devices, so the two agree within
twice that bound. Printed lines of a launch are compared as multisets: the runtime
prints lane after lane, the interpreter statement after statement. Runtime errors must
read the same, text for text.
"""
import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.cuda import compile as cc
from croqvm.cuda.emit import emit


PROGRAMS_DIR = Path(__file__).resolve().parent.parent / "programs"


def _catalog():
    spec = importlib.util.spec_from_file_location("programs_catalog_cuda",
                                                  PROGRAMS_DIR / "catalog.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


catalog = _catalog()
RUNNABLE = [e for e in catalog.PROGRAMS if e.stage != "static"]
KERNELS = [e for e in RUNNABLE if e.stage is None and e.func is not None]
PRINTERS = [e for e in RUNNABLE if e.stage is None and e.func is None]
# runtime errors a plain run gives (a --check finds the others, on the interpreter only)
FAULTS = [e for e in RUNNABLE if e.stage == "runtime" and e.check is None]


def entries(group):
    return pytest.mark.parametrize("entry", group, ids=[e.id for e in group])


def run(entry, device):
    """(outputs by name, printed text, error text or None) of an entry on a device."""
    prog = croqvm.compile_file(entry.path, defines=entry.defines)
    out = io.StringIO()
    outputs = {}
    try:
        if entry.func is None:
            for fn in prog.functions:
                if not fn.params:
                    prog.run(fn.name, device=device, out=out)
        else:
            args, dims = entry.make_args(np.random.default_rng(7), "test")
            outputs["return"] = prog.run(entry.func, *args, device=device, out=out, **dims)
            outputs.update({p: a for p, a in zip(entry.params, args)
                            if isinstance(a, np.ndarray)})
    except croqvm.KernelFault as err:
        return outputs, out.getvalue(), str(err)
    return outputs, out.getvalue(), None


def inputs_of(entry):
    args, _ = entry.make_args(np.random.default_rng(7), "test")
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@entries(KERNELS)
def test_kernel_results_match_the_interpreter(entry):
    """cuda-cpu runs the sm_90a flavour (wgmma for warpgroup MMA)."""
    kernel_results_match(entry)


@entries([e for e in KERNELS if "mma." in Path(e.path).read_text()])
def test_sm_80_flavour_results_match_the_interpreter(entry, monkeypatch):
    """The sm_80 flavour differs in MMA only (mma.sync per warp for warpgroups)."""
    monkeypatch.setenv("CROQVM_CUDA_ARCH", "sm_80")
    kernel_results_match(entry)


def kernel_results_match(entry):
    want, _, err_want = run(entry, "cpu")
    got, _, err_got = run(entry, "cuda-cpu")
    assert err_want is None and err_got is None, err_got
    inputs = inputs_of(entry)
    bound = entry.tolerance(inputs) if entry.tolerance else None
    checked = set(entry.reference(inputs))       # the results the catalogue bounds
    for name, w in want.items():
        g = got[name]
        if w is None:
            assert g is None
            continue
        w, g = np.asarray(w), np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if bound is None or w.dtype.kind in "biu" or name not in checked:
            np.testing.assert_array_equal(g, w, err_msg=f"{entry.id}: {name}")
        else:
            err = np.abs(g.astype(np.float64) - w)
            assert np.all(err <= 2 * bound), f"{entry.id}: {name} differs by {err.max()}"


@entries(PRINTERS)
def test_printed_output_matches_the_interpreter(entry):
    _, want, _ = run(entry, "cpu")
    _, got, err = run(entry, "cuda-cpu")
    assert err is None, err
    assert sorted(got.splitlines()) == sorted(want.splitlines())
    assert sorted(want.splitlines()) == sorted(entry.expected_stdout.splitlines())


@entries(FAULTS)
def test_runtime_errors_read_as_the_interpreters(entry):
    _, _, want = run(entry, "cpu")
    _, _, got = run(entry, "cuda-cpu")
    assert want is not None
    assert got == want


@pytest.mark.parametrize("arch", cc.GPU_ARCHES)
@entries([e for e in RUNNABLE if e.stage is None])
def test_generated_cuda_compiles_with_nvcc(entry, arch):
    if cc.shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    module = croqvm.compile_file(entry.path, defines=entry.defines).module
    if not module.functions or not any(fn.kernels for fn in module.functions):
        pytest.skip("no kernels")
    binary = cc.build(emit(module, arch=arch).text, arch)
    assert binary.read_bytes()[:4] == b"\x7fELF"
