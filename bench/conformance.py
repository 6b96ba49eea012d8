"""Croqtile conformance: croqvm over the language repository's own test programs.

    python bench/conformance.py PATH-TO-CROQTILE-CHECKOUT [--jobs N] [--no-cuda] [--against gpu]
                                [--folder end2end|cute|co-mock] [--json FILE] [-v]

Three folders of the checkout are read (docs/CROQTILE-REFERENCE.md in the shared notes says
what each holds):

- ``tests/gpu/end2end`` and ``tests/gpu/codegen/cute``: GPU programs. A program is
  *negative* when a ``RUN:`` line starts with ``not`` or its CHECK lines expect an
  ``error``: croqvm must reject it (``check`` fails). Every other program must pass
  ``check``; then each of its functions runs with random inputs (``--random-inputs``,
  seed 0; signed integers made non-negative, since programs index with them) on the
  default engine and on cuda-cpu, and the two must agree (``croqvm diff``'s rules). A
  symbolic dimension takes its size from the file's host code where it calls the
  function with arrays it builds (``host_shapes``), else ``--dim-default``; when a
  function with such a dimension goes out of range of a buffer, it runs again with
  ``--dim-retry`` for them (a kernel of 128 threads indexing rows of an [M, K] input needs
  M >= 128, which nothing in a file without host calls says). A function still out of
  range runs once more with every integer input 0: random values are not the in-range
  indices its host code would pass (a tile schedule, a fragment array's index).
- ``tools/co-mock/tests``: co-mock's own programs. Every function without parameters runs
  in file order on the default engine, and the printed text must satisfy the file's
  ``// CHECK`` lines (a small FileCheck: CHECK, -NEXT, -SAME, -NOT, -DAG, -LABEL, -EMPTY,
  ``{{regex}}``). With cuda-cpu, the same functions must also print the same lines there.
  Programs run with a debugger script (``-s`` in their RUN line) run that script through
  ``croqvm debug --script``, the transcript against the CHECK lines.

Each program runs in a process of its own (``--one``) under a time limit, so a crash or a
hang is a result, not the end of the run. The table per folder and the failures grouped
by cause go to stdout; ``--json`` writes every program's record. This is a tool, never a
test: the test suite reads nothing outside the repository.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FOLDERS = {"end2end": "tests/gpu/end2end", "cute": "tests/gpu/codegen/cute",
           "co-mock": "tools/co-mock/tests"}
GPU_FOLDERS = ("end2end", "cute")
STAGES = ("check", "run", "agree")         # what a valid program must pass, in order


# -- what a program expects -----------------------------------------------------------

def _comment_lines(text: str, key: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"//\s*{key}:(.*)", text)]


def classify(folder: str, text: str) -> str:
    """'negative', 'debugger' (a co-mock program driven by a script) or 'valid'."""
    runs = _comment_lines(text, "RUN")
    if folder == "co-mock" and any(re.search(r"\s-s\s", r) for r in runs):
        return "debugger"
    if any(r.strip().startswith("not ") for r in runs):
        return "negative"
    if folder in GPU_FOLDERS and any(re.search(r"\berror\b", c, re.I)
                                     for c in _comment_lines(text, "CHECK")):
        return "negative"
    return "valid"


# -- a small FileCheck ----------------------------------------------------------------

def _pattern(text: str) -> re.Pattern:
    """A CHECK pattern as a regex: literal text with runs of blanks matching any run of
    blanks (FileCheck's default), ``{{...}}`` spliced in as a regex."""
    parts, pos = [], 0
    for m in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(_literal(text[pos:m.start()]))
        parts.append(f"(?:{m.group(1)})")
        pos = m.end()
    parts.append(_literal(text[pos:]))
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", text))


def filecheck(checks: list[tuple[str, str]], output: str) -> str | None:
    """None when ``output`` satisfies ``checks`` ((directive, pattern) in file order),
    else what failed. Each match starts after the previous one, as in FileCheck."""
    lines = output.splitlines()
    line, col = 0, 0              # where the next match may start
    pending_not: list[str] = []
    dag: list[str] = []

    def find(pat: str, start: int, end: int | None = None):
        rx = _pattern(pat.strip())
        for i in range(start, len(lines) if end is None else end):
            m = rx.search(lines[i], col if i == start else 0)
            if m:
                return i, m.end()
        return None

    def flush_nots(upto: int) -> str | None:
        for pat in pending_not:
            hit = find(pat, line, upto)
            if hit:
                return f"CHECK-NOT: '{pat.strip()}' found on output line {hit[0] + 1}"
        pending_not.clear()
        return None

    def flush_dag() -> str | None:
        nonlocal line, col
        used, last = set(), (line, col)
        for pat in dag:
            rx = _pattern(pat.strip())
            for i in range(line, len(lines)):
                if i in used:
                    continue
                if rx.search(lines[i], col if i == line else 0):
                    used.add(i)
                    last = max(last, (i, len(lines[i])))
                    break
            else:
                return f"CHECK-DAG: '{pat.strip()}' not found"
        dag.clear()
        line, col = last
        return None

    for directive, pat in checks:
        if directive == "CHECK-DAG":
            dag.append(pat)
            continue
        if dag and (err := flush_dag()):
            return err
        if directive == "CHECK-NOT":
            pending_not.append(pat)
            continue
        if directive == "CHECK-EMPTY":
            nxt = line + 1
            if nxt >= len(lines) or lines[nxt].strip():
                return "CHECK-EMPTY: the next line is not empty"
            line, col = nxt, 0
            continue
        if directive == "CHECK-SAME":
            m = _pattern(pat.strip()).search(lines[line], col) if line < len(lines) else None
            if not m:
                return f"CHECK-SAME: '{pat.strip()}' not on output line {line + 1}"
            col = m.end()
            continue
        if directive == "CHECK-NEXT":
            nxt = line + 1
            m = _pattern(pat.strip()).search(lines[nxt]) if nxt < len(lines) else None
            if not m:
                return f"CHECK-NEXT: '{pat.strip()}' not on output line {nxt + 1}"
            hit = (nxt, m.end())
        else:
            hit = find(pat, line)
            if hit is None:
                return f"{directive}: '{pat.strip()}' not found"
        if err := flush_nots(hit[0]):
            return err
        line, col = hit
    if dag and (err := flush_dag()):
        return err
    return flush_nots(len(lines))


def check_lines(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"//\s*(CHECK(?:-NEXT|-SAME|-NOT|-DAG|-LABEL|-EMPTY)?):(.*)", text)]


# -- the sizes the host program calls a function with -----------------------------------

def host_shapes(text: str) -> dict[str, list[tuple[int, ...]]]:
    """Per function name, the shapes of its arguments in the first call the file's host
    C++ makes with arrays it builds itself (``auto x = choreo::make_spandata<T>(2, 3)``
    or ``make_spanview<N, T>(ptr, {a, b})``, sizes as integer literals or variables set
    from one): the sizes a symbolic dimension gets, as the compiler's own test runs it."""
    # a size variable may be set in several host tests: each use takes the latest before it
    ints: dict[str, list[tuple[int, int]]] = {}
    for m in re.finditer(r"\b(\w+)\s*=\s*(\d+)\s*[,;]", text):
        ints.setdefault(m.group(1), []).append((m.start(), int(m.group(2))))

    def size(tok: str, where: int):
        tok = tok.strip()
        if tok.isdigit():
            return int(tok)
        values = [value for at, value in ints.get(tok, ()) if at < where]
        return values[-1] if values else None

    arrays: dict[str, list[tuple[int, tuple[int, ...]]]] = {}   # name -> (where, shape)
    for m in re.finditer(r"\b(\w+)\s*=\s*(?:choreo::)?make_span(?:data|view)\s*<[^>]*>"
                         r"\s*\(([^;]*)\)\s*;", text):
        inner = m.group(2)
        brace = re.search(r"\{([^}]*)\}", inner)
        dims = [size(t, m.start()) for t in (brace.group(1) if brace else inner).split(",")]
        if dims and None not in dims:
            arrays.setdefault(m.group(1), []).append((m.start(), tuple(dims)))

    def latest(name: str, where: int):
        shapes = [shape for at, shape in arrays.get(name, ()) if at < where]
        return shapes[-1] if shapes else None

    calls: dict[str, list[tuple[int, ...]]] = {}
    for m in re.finditer(r"\b(\w+)\s*\(([^;{}]*)\)\s*;", text):
        args = [latest(re.sub(r"\.view\(\)$", "", a.strip()), m.start())
                for a in m.group(2).split(",")]
        if m.group(1) not in calls and args and None not in args:
            calls[m.group(1)] = args
    return calls


def bind_dims(fn, shapes, default: int) -> dict[str, int]:
    """A value for each symbolic dimension of ``fn``'s buffer parameters: from the host's
    call where it makes one, else ``default``."""
    from croqvm.bytecode.module import ParamKind
    dims: dict[str, int] = {}
    buffers = [p for p in fn.params if p.kind == ParamKind.BUFFER]
    for p, shape in zip(buffers, shapes or []):
        if len(shape) == len(p.shape):
            for d, n in zip(p.shape, shape):
                if isinstance(d, str) and d != "?":
                    dims.setdefault(d, n)
    for p in buffers:
        for d in p.shape:
            if isinstance(d, str) and d != "?":
                dims.setdefault(d, default)
    return dims


def dim_sizes(fn, shapes, default: int, retry: int) -> list[dict[str, int]]:
    """The bindings to try for ``fn``: ``bind_dims`` with ``default``, then with ``retry``
    when that binds some dimension differently."""
    first, second = bind_dims(fn, shapes, default), bind_dims(fn, shapes, retry)
    return [first] + ([second] if second != first else [])


def range_fault(error: str) -> bool:
    """Whether a run failed by going out of range of a buffer or an array, which larger
    sizes of the dimensions nothing binds, or integer inputs that index in range, may
    cure."""
    return re.search(r"error: (out-of-range access|tile of .* lies outside|index .* is out "
                     r"of range for)", error) is not None


# -- one program, in a process of its own ---------------------------------------------

def _first_error(text: str) -> str:
    for ln in text.splitlines():
        m = re.search(r"(?:runtime )?error: (.*)", ln)
        if m:
            return m.group(1).strip()
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def _integers(arg, zero: bool):
    """Signed integer inputs made non-negative, or every integer input 0: the test
    programs index with them (the compiler's own runs fill index arrays and pass index
    scalars that are in range, which random values may not be; 0 always is)."""
    import numpy as np
    if isinstance(arg, np.ndarray) and arg.dtype.kind in "iu":
        return np.zeros_like(arg) if zero else np.abs(arg)
    if isinstance(arg, int) and not isinstance(arg, bool):
        return 0 if zero else abs(arg)
    return arg


def debugger_script(text: str) -> str | None:
    """The script a co-mock RUN line writes with ``printf '...'`` or ``echo "..."`` before
    running ``co-mock -s``, as text; None when the line writes it otherwise."""
    for run in _comment_lines(text, "RUN"):
        m = re.search(r"printf\s+'([^']*)'|echo\s+\"([^\"]*)\"", run)
        if m:
            return m.group(2) + "\n" if m.group(1) is None else \
                m.group(1).encode().decode("unicode_escape")
    return None


def _run_debugger(path: str, text: str, rec: dict) -> dict:
    """A co-mock debugger test: its script through ``croqvm debug --script``, the
    transcript against the CHECK lines."""
    import tempfile
    script = debugger_script(text)
    if script is None:
        rec["cause"] = "debugger: the RUN line's script is not written by printf or echo"
        return rec
    with tempfile.NamedTemporaryFile("w", suffix=".script", delete=False) as f:
        f.write(script)
    try:
        done = subprocess.run([sys.executable, "-m", "croqvm", "debug", path, "--script",
                               f.name], capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)
    rec["stage"]["check"] = rec["stage"]["run"] = done.returncode == 0
    failed = filecheck(check_lines(text), done.stdout + done.stderr)
    rec["stage"]["output"] = done.returncode == 0 and failed is None
    if not rec["stage"]["output"]:
        rec["cause"] = "debugger: " + (failed or _first_error(done.stderr))
    return rec


def run_one(path: str, folder: str, cuda: bool, dim_default: int,
            dim_retry: int, device: str = "cuda-cpu") -> dict:
    """Everything this runner asks of one program, as a JSON-ready record."""
    import numpy as np
    import croqvm
    from croqvm.running.diff import compare, gpu_tolerances, run_once
    from croqvm.core.errors import CroqvmError
    from croqvm.running.inputs import build_args

    text = Path(path).read_text(encoding="utf-8", errors="replace")
    kind = classify(folder, text)
    rec = {"file": path, "folder": folder, "kind": kind, "stage": {}, "cause": None}
    if kind == "debugger":
        return _run_debugger(path, text, rec)
    _, diags, _ = croqvm.check(text, path)
    errors = [d for d in diags if d.is_error]
    rec["stage"]["check"] = not errors
    if kind == "negative":
        if not errors:
            rec["cause"] = "accepted a program the compiler rejects"
        return rec
    if errors:
        rec["cause"] = "check: " + errors[0].message
        return rec
    try:
        program = croqvm.compile(text, path)
    except CroqvmError as err:
        rec["stage"]["check"] = False
        rec["cause"] = "compile: " + _first_error(str(err))
        return rec

    np.seterr(all="ignore")
    calls = host_shapes(text)
    runs, agree = True, True
    printed = []
    for fn in program.functions:
        if folder == "co-mock" and fn.params:
            continue
        tries = [(dims, False) for dims in dim_sizes(fn, calls.get(fn.name), dim_default,
                                                      dim_retry)]
        for dims, zero in tries + [(tries[-1][0], True)]:
            try:
                args, _ = build_args(fn, {}, dims, True, 0)
            except CroqvmError as err:
                ref, failure = None, str(err)
                break
            args = [_integers(a, zero) for a in args]
            ref = run_once(program, fn.name, args, dims, {})
            if ref.error is None or not range_fault(ref.error):
                break
        if ref is None:
            runs = False
            rec["cause"] = rec["cause"] or f"run: {fn.name}: {failure}"
            continue
        printed.append(ref.output)
        if ref.error is not None:
            runs = False
            rec["cause"] = rec["cause"] or f"run: {fn.name}: {_first_error(ref.error)}"
            continue
        if not cuda:
            continue
        try:
            other = run_once(program, fn.name, args, dims, {"device": device})
        except CroqvmError as err:
            agree = False
            rec["cause"] = rec["cause"] or f"{device}: {fn.name}: {_first_error(str(err))}"
            continue
        found = compare(ref, other, tolerance=None if device == "cuda-cpu" else
                        gpu_tolerances(program, fn.name, args))
        if found:
            agree = False
            rec["cause"] = rec["cause"] or f"differs on {device}: {fn.name}: {found[0].what}"
    rec["stage"]["run"] = runs
    if folder == "co-mock":
        checks = check_lines(text)
        failed = filecheck(checks, "".join(printed)) if checks else None
        rec["stage"]["output"] = runs and failed is None
        if runs and failed:
            rec["cause"] = rec["cause"] or "output: " + failed
    if cuda:
        rec["stage"]["agree"] = runs and agree
    return rec


# -- the table ------------------------------------------------------------------------

def _group(cause: str) -> str:
    """A failure's cause with numbers and long quotations blanked, so alike failures
    group while the construct a short quotation names stays."""
    cause = re.sub(r"'[^']{21,}'|`[^`]{21,}`|\"[^\"]{21,}\"", "'…'", cause)
    cause = re.sub(r"\b\d+\b", "N", cause)
    return re.sub(r"^(run|cuda-cpu|gpu|differs on cuda-cpu|differs on gpu): [\w:]+: ", r"\1: ",
                  cause)


def report(records: list[dict], cuda: bool) -> str:
    out = []
    for folder in FOLDERS:
        recs = [r for r in records if r["folder"] == folder]
        if not recs:
            continue
        kinds = Counter(r["kind"] for r in recs)
        valid = [r for r in recs if r["kind"] == "valid"]
        cols = ["check", "run"] + (["output"] if folder == "co-mock" else []) \
            + (["agree"] if cuda else [])
        out.append(f"\n{folder} ({FOLDERS[folder]}): {len(recs)} programs, "
                   f"{kinds['valid']} valid, {kinds['negative']} negative"
                   + (f", {kinds['debugger']} debugger scripts" if kinds["debugger"] else ""))
        for col in cols:
            n = sum(1 for r in valid if r["stage"].get(col))
            pct = 100.0 * n / len(valid) if valid else 0.0
            out.append(f"  {col:<8} {n:>4} / {len(valid):<4} {pct:5.1f}%")
        dbg = [r for r in recs if r["kind"] == "debugger"]
        if dbg:
            n = sum(1 for r in dbg if r["stage"].get("output"))
            out.append(f"  {'debugger':<8} {n:>4} / {len(dbg):<4} (scripts, croqvm debug)")
        neg = [r for r in recs if r["kind"] == "negative"]
        if neg:
            n = sum(1 for r in neg if not r["stage"].get("check"))
            out.append(f"  {'rejected':<8} {n:>4} / {len(neg):<4} (negative programs)")
    groups = defaultdict(list)
    for r in records:
        if r["cause"]:
            groups[_group(r["cause"])].append(r)
    if groups:
        out.append("\nfailures by cause:")
        for cause, recs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            names = ", ".join(Path(r["file"]).name for r in recs[:6])
            more = f", ... ({len(recs) - 6} more)" if len(recs) > 6 else ""
            out.append(f"  {len(recs):>3}  {cause}\n       {names}{more}")
    return "\n".join(out)


def collect(root: Path, only: str | None) -> list[tuple[str, str]]:
    found = []
    for folder, rel in FOLDERS.items():
        if only and folder != only:
            continue
        base = root / rel
        if not base.is_dir():
            sys.exit(f"conformance: {base} is not a folder: give the root of a Croqtile "
                     f"checkout")
        found += [(str(p), folder) for p in sorted(base.rglob("*.co"))]
    return found


def _spawn(path: str, folder: str, args) -> dict:
    cmd = [sys.executable, __file__, "--one", path, "--folder", folder,
           "--dim-default", str(args.dim_default), "--dim-retry", str(args.dim_retry),
           "--against", args.against] + \
        ([] if args.cuda else ["--no-cuda"])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"file": path, "folder": folder, "kind": "?", "stage": {},
                "cause": f"timeout after {args.timeout} s"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"file": path, "folder": folder, "kind": "?", "stage": {},
                "cause": "crash: " + (done.stderr.strip().splitlines() or ["?"])[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a Croqtile checkout (or, with --one, a program)")
    ap.add_argument("--folder", choices=list(FOLDERS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-cuda", dest="cuda", action="store_false",
                    help="skip the device (check and run only)")
    ap.add_argument("--against", choices=("cuda-cpu", "gpu"), default="cuda-cpu",
                    help="the device compared with the interpreter (gpu: within the "
                         "derived tolerances of docs/CUDA.md)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per program")
    ap.add_argument("--dim-default", type=int, default=16,
                    help="value of a symbolic dimension nothing binds")
    ap.add_argument("--dim-retry", type=int, default=128,
                    help="its value for a second run when the first goes out of range")
    ap.add_argument("--json", metavar="FILE", help="write every program's record here")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per program")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.root, args.folder, args.cuda, args.dim_default,
                                 args.dim_retry, args.against)))
        return
    cases = collect(Path(args.root), args.folder)
    records = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for rec in pool.map(lambda c: _spawn(c[0], c[1], args), cases):
            records.append(rec)
            if args.verbose:
                state = " ".join(f"{k}={'ok' if v else 'FAIL'}" for k, v in rec["stage"].items())
                print(f"{rec['file']}: {rec['kind']} {state} {rec['cause'] or ''}",
                      file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    print(report(records, args.cuda))


if __name__ == "__main__":
    main()
