"""Whether compile time grows linearly with program size.

    python bench/compile_scale.py [--sizes 2000,20000] [--profile]

Compiles generated programs of 2,000 and 20,000 statements (one function: host code,
loops, ifs, kernels) and times each stage of ``croqvm.compile`` and ``.cqb`` encoding,
best of 3: the front end (preprocess, parse, check), lowering, verification, encoding.
Compile time is linear when ten times the statements take about ten times as long; the
ratio of the totals is reported against a bound of 12. ``--profile`` prints
the functions taking the most time on the largest program (cProfile).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time

from croqvm.core.collector import paused
from croqvm.bytecode.cqb import encode
from croqvm.bytecode.lower import lower_program
from croqvm.bytecode.verify import verify
from croqvm.lang.frontend import front_end

LINEAR_BOUND = 12.0     # the most 10x the statements may take, in multiples
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
    args = parser.parse_args()
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
