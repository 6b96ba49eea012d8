"""Generated kernels (tests/kernelgen.py) on both engines: bit-identical results, the same
printed text, the same diagnostics and the same statistics, under the round-robin schedule
and two random ones. The native engine runs a launch's blocks on one thread, and, when no
block touches another's elements, on two as well (a race between blocks may end otherwise
on threads: jobs promise the serial result to race-free programs only). The default run
draws a few hundred kernels; ``--runslow`` draws thousands (the marker ``slow``)."""
from __future__ import annotations

import pytest

import croqvm
from croqvm.native import extension
from kernelgen import family_test
from parity import assert_alike, outcome

pytestmark = pytest.mark.skipif(extension() is None, reason="the native extension is not built")

SCHEDULES = (("rr", 0), ("random", 1), ("random", 7))
EXAMPLES = {"lanes": 300, "events": 80, "copies": 80, "mma": 150, "views": 120,
            "pipelines": 200}


def check_alike(case) -> None:
    module = croqvm.compile(case.source, "gen.co").module
    for schedule, seed in SCHEDULES:
        options = dict(schedule=schedule, seed=seed, max_steps=case.max_steps)
        ref = outcome(module, case.func, case.args, {}, "python", **options)
        for jobs in (1, 2) if case.independent else (1,):
            got = outcome(module, case.func, case.args, {}, "native", jobs=jobs, **options)
            assert_alike(got, ref, f"{schedule} {seed} jobs={jobs}:\n{case.source}")


test_lanes = family_test("lanes", EXAMPLES["lanes"], check_alike)
test_events = family_test("events", EXAMPLES["events"], check_alike)
test_copies = family_test("copies", EXAMPLES["copies"], check_alike)
test_mma = family_test("mma", EXAMPLES["mma"], check_alike)
test_views = family_test("views", EXAMPLES["views"], check_alike)
test_pipelines = family_test("pipelines", EXAMPLES["pipelines"], check_alike)

test_lanes_many = pytest.mark.slow(family_test("lanes", 5000, check_alike))
test_events_many = pytest.mark.slow(family_test("events", 1000, check_alike))
test_copies_many = pytest.mark.slow(family_test("copies", 1000, check_alike))
test_mma_many = pytest.mark.slow(family_test("mma", 2000, check_alike))
test_views_many = pytest.mark.slow(family_test("views", 3000, check_alike))
test_pipelines_many = pytest.mark.slow(family_test("pipelines", 1500, check_alike))
