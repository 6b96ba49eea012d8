"""A field-level .cqb fuzzer that runs what the verifier accepts (STYLE.md rule 6, "verify
once, then trust"): take real modules, change one or two decoded fields (an instruction
word, a table index, an extent, a dtype code, a constant; a record dropped, repeated or
moved), decode that payload as a .cqb file is decoded (schema, then verifier), and run
every function of each module the verifier accepts, on every engine of the test
parameter. The only outcomes allowed are a rejection (BytecodeError, with no warning
before it), a result, or a user error (KernelFault, ArgumentError). An InternalError or
any other exception is a hole in the verifier (or an engine bug); fix it in the verifier,
with a regression test in tests/test_verify.py, and never by loosening this test.

Mutants run with a small step limit and, where the platform allows, with the address
space capped while their inputs are made and they run, so a mutated extent asking for
gigabytes is the error it would be on a smaller machine instead of a slow test.
"""
from __future__ import annotations

import copy
import io
import random
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import bytecode_builders as B
import croqvm
import engines
from croqvm.bytecode import cqb, schema
from croqvm.bytecode.module import Module
from croqvm.core.errors import BytecodeError, CroqvmError, InternalError
from croqvm.running.program import Program
from croqvm.running.inputs import build_args

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "programs"))
from catalog import PROGRAMS  # noqa: E402

try:
    import resource
except ImportError:          # not on every platform; the step limit still bounds time
    resource = None

SEEDS = ["squares", "scale", "misc", "add_1d.co", "matmul_dma.co", "matmul_1p1c.co",
         "divergence.co", "pipeline_events.co", "matmul_mma_warp.co", "views.co",
         "reduce_sum.co", "loops.co"]
MAX_STEPS = 20_000
MEMORY = 1 << 30             # bytes a mutant may add to the address space

_BUILT: dict = {}


def seed_module(name: str):
    """(module, args by function name) for a fuzzing seed: a hand-built module or a
    program of the catalogue with its test-size arguments."""
    if name not in _BUILT:
        if name in B.ALL:
            _BUILT[name] = B.ALL[name](), {}
        else:
            entry = next(e for e in PROGRAMS if e.id == name)
            module = croqvm.compile_file(entry.path, defines=entry.defines).module
            args = {}
            if entry.make_args is not None:
                args[entry.func] = entry.make_args(np.random.default_rng(0), "test")
            _BUILT[name] = module, args
    return _BUILT[name]


# --------------------------------------------------------------------------- mutation
# Mutations act on the decoded payload (croqvm.bytecode.schema's plain data: every record
# a list of its fields in order), so each one changes a field, never the encoding.

def _places(plain, out):
    """(list, index) of every item below ``plain``, and (list, None) for every list."""
    out.append((plain, None))
    for i, item in enumerate(plain):
        if isinstance(item, list):
            _places(item, out)
        else:
            out.append((plain, i))


_INTS = [-1, 0, 1, 2, 3, 7, 31, 32, 33, 128, 1024, 1025, 2 ** 31 - 1, -2 ** 31, 2 ** 40]
_FLOATS = [0.0, -0.0, float("nan"), float("inf"), -1.0, 1e300, 3e10, 2.5]


def _new_value(rng: random.Random, value):
    """A value of the same type, near ``value`` or at a boundary."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return rng.choice(["", "x", value + value])
    if isinstance(value, float):
        return rng.choice(_FLOATS)
    return rng.choice([value + 1, value - 1, rng.randrange(8), rng.choice(_INTS)])


def mutate(rng: random.Random, plain: list) -> list:
    """A copy of the payload ``plain`` with one or two fields changed, or a list with an
    item dropped, repeated, or two items swapped."""
    plain = copy.deepcopy(plain)
    for _ in range(rng.randrange(1, 3)):
        places = []
        _places(plain, places)
        container, i = rng.choice(places)
        if i is not None:
            container[i] = _new_value(rng, container[i])
        elif container:
            k = rng.randrange(len(container))
            how = rng.randrange(3)
            if how == 0:
                del container[k]
            elif how == 1:
                container.insert(k, copy.deepcopy(container[k]))
            else:
                j = rng.randrange(len(container))
                container[k], container[j] = container[j], container[k]
    return plain


# --------------------------------------------------------------------------- running

@contextmanager
def bounded_memory():
    """Cap the address space (soft limit) at what is used now plus ``MEMORY``."""
    if resource is None or not hasattr(resource, "RLIMIT_AS"):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + MEMORY
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_all(module: Module, known_args: dict) -> list[str]:
    """Run every function of ``module``; the outcome of each (never an exception that
    is not a user error)."""
    outcomes = []
    prog = Program(module)
    for fn in module.functions:
        # the random inputs as well as the run: a mutated extent asks for gigabytes of them
        with bounded_memory(), np.errstate(all="ignore"):
            outcomes.append(run_one(prog, fn, known_args))
    return outcomes


def run_one(prog: Program, fn, known_args: dict) -> str:
    """The outcome of running ``fn`` on inputs of the seed's, or random ones."""
    try:
        if fn.name in known_args:
            args, dims = known_args[fn.name]
            args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
        else:
            try:
                args, dims = build_args(fn, {}, {}, True, 0)
            except CroqvmError:
                args, dims = build_args(fn, {}, {name: 4 for name, _ in fn.dims}, True, 0)
        engines.run(prog, fn.name, *args, out=io.StringIO(), max_steps=MAX_STEPS, **dims)
        return "ok"
    except InternalError:
        raise
    except CroqvmError as e:
        return type(e).__name__


def fuzz(seed: int, mutants: int) -> dict:
    """Mutants of every seed module; returns how many were rejected and how many ran."""
    rng = random.Random(seed)
    tally = {"rejected": 0, "ran": 0}
    for name in SEEDS:
        module, args = seed_module(name)
        plain = schema.to_plain(module)
        for _ in range(mutants):
            try:
                with warnings.catch_warnings():     # one would come before the user's error
                    warnings.simplefilter("error")
                    mutant = cqb.decode(cqb.pack(mutate(rng, plain)))   # decoded and verified
            except BytecodeError:
                tally["rejected"] += 1
                continue
            try:
                run_all(mutant, args)
            except Exception as e:
                raise AssertionError(f"seed {seed}, module {name}: a verified mutant gave "
                                     f"{type(e).__name__}: {e}") from e
            tally["ran"] += 1
    return tally


pytestmark = pytest.mark.usefixtures("engine")     # mutants run on each engine


def test_verified_mutants_run_to_a_result_or_a_user_error():
    tally = fuzz(seed=1, mutants=40)
    assert tally["ran"] > 0 and tally["rejected"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 12))
def test_verified_mutants_run_to_a_result_or_a_user_error_long(seed):
    tally = fuzz(seed, mutants=400)
    assert tally["ran"] > 0
