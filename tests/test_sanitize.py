"""The native engine under AddressSanitizer and UndefinedBehaviorSanitizer (``pytest
--sanitize``; most of an hour on two cores): a copy of this checkout gets the extension
built with ``CROQVM_NATIVE_SANITIZE=1`` (native/build_native.py), and the differential
tests (tests/test_native.py, tests/test_native_generated.py with its long runs), the race
check's and tracing's differential tests (native/race.c, native/trace.c, the trace file's
native/trace_text.c), the debugger's fast-forward (native/debug.c) and the
.cqb fuzzer (tests/test_fuzz_run.py with its long runs) run there on the native engine.
Any sanitizer report aborts the run, so the test passes only when there was none."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUITE = ["tests/test_native.py", "tests/test_native_generated.py", "tests/test_race.py",
         "tests/test_race_detector.py", "tests/test_named_barriers.py",
         "tests/test_trace_native.py", "tests/test_trace_file.py", "tests/test_fuzz_run.py",
         "tests/test_debug_forward.py"]


def _runtime() -> str | None:
    """The ASan runtime to load before Python (which is not instrumented), or None."""
    cc = shutil.which("gcc")
    if cc is None:
        return None
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def _copy_checkout(to: Path) -> None:
    """The files of the checkout that git tracks or would track (no build outputs)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def _tail(run: subprocess.CompletedProcess) -> str:
    """The start of stderr (a sanitizer report) and the end of the test run's output."""
    return run.stderr[:6000] + "\n...\n" + run.stdout[-2000:]


@pytest.mark.sanitize
def test_differential_suite_and_fuzzer_are_clean_under_asan_and_ubsan():
    runtime = _runtime()
    if runtime is None or shutil.which("git") is None:
        pytest.skip("needs gcc's libasan and git")
    # not pytest's tmp_path: pytest keeps only the last few of those, and a concurrent run
    # would delete this one under the hour-long run
    with tempfile.TemporaryDirectory(prefix="croqvm-sanitize-") as where:
        _run(Path(where), runtime)


def _run(where: Path, runtime: str) -> None:
    _copy_checkout(where)
    env = dict(os.environ, CROQVM_NATIVE_SANITIZE="1")
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                           cwd=where, env=env, capture_output=True, text=True)
    assert build.returncode == 0, _tail(build)
    env.update(LD_PRELOAD=runtime, PYTHONPATH=str(where),
               # Python's own allocations are never freed at exit: not the engine's leaks.
               # A mutant asking for terabytes must get the engine's error, not an abort.
               ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1",
               UBSAN_OPTIONS="print_stacktrace=1")
    # -s: a report ends the process at once, before pytest could show the stderr it
    # captured; uncaptured, the report is in this run's stderr
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-x", "-p",
                          "no:cacheprovider", f"--basetemp={where / 'pytest'}", "--runslow",
                          "--engine", "native", *SUITE],
                         cwd=where, env=env, capture_output=True, text=True)
    assert run.returncode == 0, _tail(run)
