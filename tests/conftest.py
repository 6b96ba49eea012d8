"""Shared pytest set-up: long stress and fuzz runs are behind ``--runslow``, the native
engine's sanitizer run (tests/test_sanitize.py) behind ``--sanitize``; execution
tests run once per engine (tests/engines.py), chosen with ``--engine``; compiled CUDA
goes to a cache inside .pytest_cache, never the user's."""
import os

import pytest

import engines


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run tests marked slow (long fuzz and stress runs)")
    parser.addoption("--sanitize", action="store_true", default=False,
                     help="also run tests marked sanitize (the native engine built with "
                          "ASan and UBSan: minutes)")
    parser.addoption("--engine", action="append", default=[], choices=list(engines.ENGINES),
                     help="run the execution tests on this engine (repeatable; default: "
                          "every available one)")


def pytest_configure(config):
    missing = [e for e in config.getoption("--engine") if e not in engines.usable()]
    if missing:
        raise pytest.UsageError(f"--engine {missing[0]}: that engine is not available in "
                                f"this installation")


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--engine") or engines.default()
        metafunc.parametrize("engine", chosen, indirect=True)


@pytest.fixture
def engine(request):
    """The engine the test runs on; the helpers of tests/engines.py use it meanwhile."""
    with engines.active(request.param):
        yield request.param


def pytest_collection_modifyitems(config, items):
    for marker, option in (("slow", "--runslow"), ("sanitize", "--sanitize")):
        if config.getoption(option):
            continue
        skip = pytest.mark.skip(reason=f"{marker}: run with {option}")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def cuda_cache(request):
    """CROQVM_CACHE_DIR for the session: pytest's own cache directory (kept between
    runs of this checkout), unless the caller chose one."""
    if "CROQVM_CACHE_DIR" in os.environ:
        yield
        return
    cache = getattr(request.config, "cache", None)      # absent with -p no:cacheprovider
    where = cache.mkdir("croqvm-cuda") if cache else request.getfixturevalue(
        "tmp_path_factory").mktemp("croqvm-cuda")
    os.environ["CROQVM_CACHE_DIR"] = str(where)
    yield
    del os.environ["CROQVM_CACHE_DIR"]
