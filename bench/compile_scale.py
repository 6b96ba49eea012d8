"""Whether compile time grows linearly with program size.

    python bench/compile_scale.py [--sizes 2000,20000] [--profile]

Compiles generated programs of 2,000 and 20,000 statements (one function: host code,
loops, ifs, kernels) and times each stage of ``croqvm.compile`` and ``.cqb`` encoding,
best of 3: the front end (preprocess, parse, check), lowering, verification, encoding.
Compile time is linear when ten times the statements take about ten times as long; the
ratio of the totals is reported against a bound of 12. ``--profile`` prints
the functions taking the most time on the largest program (cProfile).

    python bench/compile_scale.py --memory [--mb 1,2,5,10]

Whether compile memory stays bounded by the source size: the peak resident memory of
``croqvm check`` and ``croqvm compile`` (each run as its own process, the module cache
off) on generated sources of so many megabytes, dense with statements: kernels of a
couple of thousand statements (index arithmetic, ifs, foreach, prints), host functions
as above and many small functions. Reported per megabyte of source against a bound of
50 bytes of memory per byte of source, the interpreter's own included.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import subprocess
import sys
import tempfile
import time

from croqvm.core.collector import paused
from croqvm.bytecode.cqb import encode
from croqvm.bytecode.lower import lower_program
from croqvm.bytecode.verify import verify
from croqvm.lang.frontend import front_end

LINEAR_BOUND = 12.0     # the most 10x the statements may take, in multiples
MEMORY_BOUND = 50       # bytes of peak resident memory per byte of source
STAGES = ("front end", "lower", "verify", "encode")


def generated(statements: int) -> str:
    """One function of ``statements`` statements, in groups of ten like these."""
    body = ["__co__ void big() {", "  s32 [64] a;", "  s32 [32] b;"]
    count, i = 2, 0
    while count < statements:
        body += [
            f"  mutable s32 v{i} = {i % 97};",
            f"  foreach k{i} in [4]",
            f"    v{i} += k{i};",
            f"  if (v{i} > 3)",
            f"    v{i} -= 1;",
            f"  a.at({i % 64}) = v{i};",
            f"  parallel t{i} by 32 : thread {{",
            f"    s32 w{i} = t{i} + v{i};",
            f"    b.at(t{i}) = w{i} * 2;",
            "  }",
        ]
        count, i = count + 9, i + 1
    body.append("}")
    return "\n".join(body) + "\n"


def _kernel(name: str, groups: int) -> list[str]:
    """A kernel of ``groups`` groups of ten statements: index arithmetic, an if/else,
    a foreach and a print."""
    body = [f"__co__ void {name}(global s32 [1024] x, global f32 [1024] y) {{",
            "  parallel p by [4] : block {",
            "    shared s32 [256] tile;",
            "    parallel q by [256] : thread {"]
    for i in range(groups):
        body += [
            f"      s32 a{i} = x.at((p # q + {i % 251}) % 1024) * {i % 7 + 1} + {i % 13};",
            f"      mutable f32 g{i} = y.at(p # q) * {i % 5}.5f;",
            f"      if (a{i} > {i % 100}) {{",
            f"        g{i} += 1.0f;",
            f"        x.at(p # q) = a{i} - (q & {i % 31});",
            "      } else",
            f"        y.at((p # q + {i % 17}) % 1024) = g{i};",
            f"      foreach k{i} in [{i % 3 + 2}]",
            f"        tile.at(q) += a{i} + k{i};",
            f"      if (q == {i % 256}) println(\"row\", p, a{i}, g{i});",
        ]
    return body + ["    }", "  }", "}", ""]


def _small(name: str, i: int) -> list[str]:
    return [f"__co__ void {name}() {{",
            f"  mutable s32 n = {i};",
            f"  foreach k in [{i % 5 + 1}] n = n * 3 + k;",
            f"  if (n > {i}) println(\"{name}\", n);",
            "}", ""]


def dense(size: int) -> str:
    """A source of at least ``size`` bytes dense with statements: in turn a kernel of
    2,000 statements, a host function of 1,000 (``generated``'s) and 20 small functions."""
    lines: list[str] = []
    total, n = 0, 0
    while total < size:
        host = generated(1000).replace("void big()", f"void h{n}()").splitlines() + [""]
        part = _kernel(f"k{n}", 200) + host + \
            [line for j in range(20) for line in _small(f"s{n}_{j}", j)]
        lines += part
        total += sum(len(line) + 1 for line in part)
        n += 1
    return "\n".join(lines) + "\n"


def peak_rss(args: list[str]) -> tuple[int, int]:
    """``(exit status, peak resident bytes)`` of ``python -m croqvm ARGS`` run alone."""
    env = dict(os.environ, CROQVM_DISABLE_CACHE="1")
    child = subprocess.Popen([sys.executable, "-m", "croqvm", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        print(child.stderr.read().decode()[-2000:], file=sys.stderr)
    child.stderr.close()
    return child.returncode, usage.ru_maxrss * 1024      # kilobytes on Linux


def memory(megabytes: list[float]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "big.co"), os.path.join(tmp, "big.cqb")
        for mb in megabytes:
            text = dense(int(mb * 1e6))
            with open(src, "w") as f:
                f.write(text)
            row = []
            for verb, extra in (("check", []), ("compile", ["-o", out])):
                status, rss = peak_rss([verb, src, *extra])
                verdict = "" if rss <= MEMORY_BOUND * len(text) else " over"
                row.append(f"{verb} {rss / 2**20:6.0f} MB ({rss / len(text):5.1f} B/B{verdict})"
                           + (f" exit {status}" if status else ""))
            print(f"{len(text) / 1e6:5.1f} MB source, {text.count(chr(10))} lines: "
                  + "  ".join(row), flush=True)


def stages(text: str, runs: int) -> dict:
    """CPU seconds of each stage of compiling and encoding ``text``, the best of
    ``runs`` (CPU time: on a busy machine wall-clock time measures the others' work);
    the stages run as ``croqvm.compile`` and ``encode`` run them, the cycle collector
    paused (croqvm/core/collector.py)."""
    best: dict = {}
    for _ in range(runs):
        gc.collect()        # what the previous run left, outside the times
        with paused():
            clock = [time.process_time()]
            program, _, sources = front_end(text, "big.co")
            clock.append(time.process_time())
            module, errors = lower_program(program, list(sources.values()))
            clock.append(time.process_time())
            verify(module)
            clock.append(time.process_time())
            encode(module)
            clock.append(time.process_time())
        assert not errors
        del program, module
        spent = [b - a for a, b in zip(clock, clock[1:])]
        for name, seconds in zip(STAGES + ("total",), spent + [clock[-1] - clock[0]]):
            best[name] = min(best.get(name, seconds), seconds)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,20000",
                        help="statement counts, comma-separated (default 2000,20000)")
    parser.add_argument("--runs", type=int, default=3, help="best of (default 3)")
    parser.add_argument("--profile", action="store_true",
                        help="profile compiling the largest program")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory of check and compile instead (see above)")
    parser.add_argument("--mb", default="1,2,5,10",
                        help="--memory's source sizes in megabytes (default 1,2,5,10)")
    args = parser.parse_args()
    if args.memory:
        memory([float(x) for x in args.mb.split(",")])
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    times = {}
    for n in sizes:
        text = generated(n)
        times[n] = stages(text, args.runs)
        row = "  ".join(f"{k} {v * 1000:8.1f} ms" for k, v in times[n].items())
        print(f"{n:6d} statements ({len(text.splitlines())} lines): {row}")
    small, large = sizes[0], sizes[-1]
    for stage in times[small]:
        print(f"{stage:>15}: x{times[large][stage] / times[small][stage]:.1f} for "
              f"x{large / small:g} statements")
    ratio = times[large]["total"] / times[small]["total"]
    verdict = "linear" if ratio <= LINEAR_BOUND * large / small / 10 else "superlinear"
    print(f"compile + encode: x{ratio:.1f} ({verdict}; bound x{LINEAR_BOUND:g} per x10)")
    if args.profile:
        text = generated(large)
        profile = cProfile.Profile()
        profile.runcall(stages, text, 1)
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
