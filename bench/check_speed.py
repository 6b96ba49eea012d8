"""How long the front end (preprocess, lex, parse, check) takes.

    python bench/check_speed.py

Times ``croqvm check`` on the largest program in programs/ and on generated programs of
300 and 2,000 lines (best of 5 runs each).
"""
from __future__ import annotations

import pathlib
import time

import croqvm

ROOT = pathlib.Path(__file__).resolve().parent.parent


def generated(lines: int) -> str:
    """A valid program of about ``lines`` lines: kernels with loops, ifs and tiles."""
    body = ["#define T 16", "__co__ void big(global s32 [M, N] x, global s32 [M, N] y) {"]
    i = 0
    while len(body) < lines - 1:
        body += [
            f"  parallel {{bm{i}, bn{i}}} by [cdiv(M, T), cdiv(N, T)] : block,",
            f"           {{tr{i}, tc{i}}} by [T, T] : thread {{",
            f"    s32 acc{i} = 0;",
            f"    foreach k{i} in [4] {{",
            f"      if (bm{i} # tr{i} < M && bn{i} # tc{i} < N)",
            f"        acc{i} += x.at(bm{i} # tr{i}, bn{i} # tc{i}) * (k{i} + {i});",
            "    }",
            f"    if (bm{i} # tr{i} < M && bn{i} # tc{i} < N)",
            f"      y.at(bm{i} # tr{i}, bn{i} # tc{i}) = acc{i};",
            "  }",
        ]
        i += 1
    body.append("}")
    return "\n".join(body) + "\n"


def best_of(fn, runs=5) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def timed_check(text: str, name: str) -> float:
    def run():
        _, diags, _ = croqvm.check(text, name)
        errors = [d for d in diags if d.is_error]
        assert not errors, errors
    return best_of(run)


def main() -> None:
    programs = sorted((ROOT / "programs").rglob("*.co"), key=lambda p: len(p.read_text()))
    valid = [p for p in programs if "broken" not in p.parts]
    largest = valid[-1]
    text = largest.read_text()
    rows = [(str(largest.relative_to(ROOT)), text)]
    rows += [(f"generated {n}-line program", generated(n)) for n in (300, 2000)]
    for name, text in rows:
        seconds = timed_check(text, name)
        print(f"{name:45s} {text.count(chr(10)):6d} lines  {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
