"""End-to-end tests over programs/: every program of programs/catalog.py is compiled and
run on the CPU engine and compared with its independent numpy reference, its expected
output or its expected diagnostic (LANGUAGE.md §14, §15).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from croqvm.core.errors import CompileError, KernelFault
from croqvm.core.diagnostics import render_all
from croqvm.running.program import CHECKING

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

PROGRAMS_DIR = Path(__file__).resolve().parent.parent / "programs"


def _load_catalog():
    spec = importlib.util.spec_from_file_location("programs_catalog", PROGRAMS_DIR / "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


catalog = _load_catalog()
VALID = [e for e in catalog.PROGRAMS if e.stage is None]
STATIC = [e for e in catalog.PROGRAMS if e.stage == "static"]
RUNTIME = [e for e in catalog.PROGRAMS if e.stage == "runtime"]
KERNELS = [e for e in VALID if e.func is not None]
PRINTERS = [e for e in VALID if e.func is None]


def entries(group):
    return pytest.mark.parametrize("entry", group, ids=[e.id for e in group])


def front_end(entry):
    return croqvm.check(entry.path.read_text(), str(entry.path), entry.defines)


def compile_entry(entry):
    return croqvm.compile_file(entry.path, defines=entry.defines)


def parameterless_functions(entry):
    program, _, _ = front_end(entry)
    return [fn.name for fn in program.functions if not fn.params]


def run_entry(prog, entry, **options):
    """Run an entry as its catalogue says; return (inputs as passed, args after, result)."""
    if entry.func is None:
        for name in parameterless_functions(entry):
            engines.run(prog, name, **options)
        return None, None, None
    args, dims = entry.make_args(np.random.default_rng(7), "test")
    inputs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = engines.run(prog, entry.func, *args, **options, **dims)
    return inputs, args, result


def location(entry):
    err = entry.error
    return f"{entry.path}:{err.line}:{err.col}"


def assert_reported(entry, text, severity):
    message = entry.error.message.replace("{file}", str(entry.path))
    assert f"{location(entry)}: {severity}: {message}" in text, text
    for extra in entry.error.also:
        assert extra.replace("{file}", str(entry.path)) in text, text


# --------------------------------------------------------------------------- the catalogue


def test_every_program_file_is_catalogued():
    on_disk = {p.relative_to(PROGRAMS_DIR).as_posix() for p in PROGRAMS_DIR.rglob("*.co")}
    assert on_disk == {e.file for e in catalog.PROGRAMS}


@entries(catalog.PROGRAMS)
def test_header_says_how_to_run_it(entry):
    header = entry.path.read_text().split("__co__")[0]
    command = "check" if entry.stage == "static" else "run"
    assert f"croqvm {command} programs/{entry.file}" in header


@entries(STATIC + RUNTIME + [e for e in VALID if e.warnings])
def test_expected_positions_point_at_the_source(entry):
    expected = list(entry.warnings) + ([entry.error] if entry.error else [])
    lines = entry.path.read_text().split("\n")
    for exp in expected:
        assert lines[exp.line - 1][exp.col - 1:].startswith(exp.at), exp


# --------------------------------------------------------------------------- static checks


@entries(VALID)
def test_valid_program_checks_clean(entry):
    program, diags, sources = front_end(entry)
    errors = [d for d in diags if d.is_error]
    assert not errors, render_all(errors, sources)
    warnings = [(d.message, d.span.line, d.span.col) for d in diags if d.severity == "warning"]
    assert warnings == [(w.message, w.line, w.col) for w in entry.warnings], \
        render_all([d for d in diags if d.severity == "warning"], sources)
    if entry.func is not None:
        fn = next(f for f in program.functions if f.name == entry.func)
        assert tuple(p.name for p in fn.params) == entry.params


@entries(STATIC)
def test_static_error_is_reported_alone_and_in_place(entry):
    _, diags, sources = front_end(entry)
    errors = [d for d in diags if d.is_error]
    assert len(errors) == 1, render_all(errors, sources)
    err = errors[0]
    assert (err.message, err.span.line, err.span.col) == \
        (entry.error.message, entry.error.line, entry.error.col), render_all(errors, sources)


@entries(STATIC)
def test_static_error_stops_compilation(entry):
    with pytest.raises(CompileError) as info:
        compile_entry(entry)
    assert_reported(entry, str(info.value), "error")


# --------------------------------------------------------------------------- running


def _assert_matches(entry, what, got, want, bound):
    if isinstance(want, (bool, int, float)):        # a returned scalar (§14.3.4)
        assert type(got) is type(want) and got == want, f"{what}: {got!r}, expected {want!r}"
        return
    if bound is None:
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
        np.testing.assert_array_equal(got, want, err_msg=f"{entry.id}: {what}")
        return
    err = np.abs(np.asarray(got, np.float64) - want)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), \
        f"{entry.id}: {what}{list(worst)} is {got[worst]}, expected {want[worst]} +- {bound[worst]}"


def _check_kernel(entry, **options):
    inputs, args, result = run_entry(compile_entry(entry), entry, **options)
    bound = entry.tolerance(inputs) if entry.tolerance else None
    for key, want in entry.reference(inputs).items():
        got = result if key == "return" else args[entry.params.index(key)]
        _assert_matches(entry, key, got, want, bound)


@entries(KERNELS)
def test_kernel_matches_reference(entry):
    _check_kernel(entry)


@pytest.mark.parametrize("seed", [1, 2])
@entries(KERNELS)
def test_kernel_is_race_free_under_random_schedules(entry, seed):
    # The programs order every shared access by barriers, collectives, events or waits, so
    # any interleaving of warps must give the same result (§7.1.2, §7.5).
    _check_kernel(entry, schedule="random", seed=seed)


@entries(PRINTERS)
def test_program_prints_expected_output(entry, capfd):
    run_entry(compile_entry(entry), entry)
    assert capfd.readouterr().out == entry.expected_stdout


@entries(RUNTIME)
def test_runtime_error_stops_the_call_in_place(entry, engine):
    if entry.check is not None and engine not in CHECKING[entry.check]:
        pytest.skip(f"check '{entry.check}' runs on the Python engine")
    prog = compile_entry(entry)
    with pytest.raises(KernelFault) as info:
        run_entry(prog, entry, check=entry.check)
    assert_reported(entry, str(info.value), "runtime error")


@entries([e for e in RUNTIME if e.check is not None])
def test_runtime_error_needs_its_check(entry):
    run_entry(compile_entry(entry), entry)


@entries(VALID)
def test_valid_program_has_no_data_races(entry, engine):
    # Every program orders its shared and global accesses (LANGUAGE.md §7.5): the race
    # check of the reference engine reports nothing, whatever the schedule.
    if engine not in CHECKING["race"]:
        pytest.skip("race checks run on the Python engine")
    run_entry(compile_entry(entry), entry, check="race")
    run_entry(compile_entry(entry), entry, check="race", schedule="random", seed=3)
