"""How long ``croqvm run`` of a small program takes, against ``python -c "import numpy"``.

    python bench/startup.py [PROGRAM.co] [--runs 20]

Runs each command ``--runs`` times in a fresh process and reports the fastest and the
median wall-clock time and CPU time (user + system of the process and its threads; on a
busy machine the fastest CPU time is the steadiest figure), and each one's ratio to
importing numpy: ``croqvm run`` from its cache of compiled modules (README "Caches"),
without it (``CROQVM_DISABLE_CACHE=1``), and ``croqvm --version``. The cache lives in a
temporary directory, filled by one run before the timed ones. ``croqvm`` is run as the
executable pip installs runs it: Python calling the entry that pyproject.toml's
``[project.scripts]`` names, from this checkout.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def executable() -> list[str]:
    """The ``croqvm`` command: what pip's generated script does, on this checkout."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        module, function = tomllib.load(f)["project"]["scripts"]["croqvm"].split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {function}; "
                                  f"sys.exit({function}())"]


def timed(cmd: list[str], env: dict, runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds of ``runs`` runs of ``cmd``."""
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", nargs="?", default=str(ROOT / "programs" / "hello.co"))
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=str(ROOT), CROQVM_CACHE_DIR=cache)
        env.pop("CROQVM_DISABLE_CACHE", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)    # every import compiled from its text
        croqvm = executable()
        run = croqvm + ["run", args.program]
        subprocess.run(run, env=env, capture_output=True, check=True)   # fills the cache
        rows = [("python -c 'import numpy'", [sys.executable, "-c", "import numpy"], env),
                ("croqvm --version", croqvm + ["--version"], env),
                ("croqvm run, cached", run, env),
                ("croqvm run, not cached", run, dict(env, CROQVM_DISABLE_CACHE="1"))]
        numpy = None
        for name, cmd, cmd_env in rows:
            wall, cpu = timed(cmd, cmd_env, args.runs)
            numpy = numpy or (min(wall), min(cpu))
            print(f"{name:26} wall {min(wall) * 1000:6.0f} ms (median "
                  f"{statistics.median(wall) * 1000:6.0f}), cpu {min(cpu) * 1000:6.0f} ms "
                  f"(median {statistics.median(cpu) * 1000:6.0f}); x{min(wall) / numpy[0]:.2f} "
                  f"wall, x{min(cpu) / numpy[1]:.2f} cpu")


if __name__ == "__main__":
    main()
