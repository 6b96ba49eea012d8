"""The prepared GPU check (run by bench/gpu_check.sh): everything the CUDA path needs
to show on real hardware, in one run under 8 minutes on one H100, with a table of results.

Steps, in this order (the timing first, on an idle GPU; what a time limit would cut off
last), each with its own time limit, each program in a process of its own (a device fault
leaves the process's CUDA context unusable):
  facts       the machine, the driver, nvcc, croqvm's GPU probe
  gemm        the generated 1P1C GEMMs of GEMM_RUNS at 4096^3 (ncu's kernel time at the
              GPU's own clocks; each result against torch's in the derived tolerance)
              against torch.matmul (cuBLAS) in f16 and bf16
  programs    every programs/ kernel and demo: `croqvm diff --against gpu` of the catalogue's
              inputs (derived tolerances, docs/CUDA.md), the demos' printed lines
  repros      the review's GPU-only bugs and the sm_90a fast paths at edge shapes
              (REPRO_CALLS), each against the interpreter
  tests       the GPU cases of the runtime, driver and TMA tests (a TMA box at a
              tensor's edge, the swizzle tables, on the hardware)
  sanitizer   compute-sanitizer memcheck, racecheck and synccheck on a small 1P1C GEMM
  conformance with CROQTILE=<checkout>: the Croqtile repository's GPU kernels against the
              interpreter on the GPU, counted (to set beside the cuda-cpu figures), never
              a failure of the check

Without a GPU the facts are written and every other step is skipped with the reason; the
exit status is 0 unless a step found a disagreement or a failure. The results are written
after every step, so a check stopped at its time limit still leaves what it found.

``--prebuild ARCH`` compiles every kernel the steps launch for ARCH into croqvm's CUDA
cache (CROQVM_CACHE_DIR), here, without a GPU: the GPU machine then spends its time running
them (the cache key holds nvcc's version, so a different nvcc there compiles again).

  python bench/gpu_check.py [--out DIR] [--only STEP ...] [--prebuild ARCH]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPRO_CALLS = (
    ("pooled shared memory", "bench/gpu_repros/sized_shared.co --func sized --random-inputs "
                             "--dim N=64"),
    ("1024-lane double buffer", "programs/matmul_double_buffer.co --func matmul_db "
                                "--random-inputs -D TM=32 -D TN=32 --dim M=64 --dim K=64 "
                                "--dim N=64"),
    ("lanes leaving early", "bench/gpu_repros/leave_early.co --func yc --random-inputs "
                            "--dim N=256"),
    ("device heap", "bench/gpu_repros/heap_locals.co --func heap --random-inputs --dim B=512 "
                    "--dim T=256 --dim K=64"),
    # sm_90a fast paths (docs/CUDA.md): tensor-map TMA boxes clipped at ragged edges into
    # 128B-swizzled tiles wgmma reads in place; then rows of 600 bytes, which TMA can not
    # take, so the same kernel's general copies write the swizzled tiles
    ("TMA at ragged edges", "programs/matmul_1p1c.co --func gemm_ws --random-inputs "
                            "-D STAGES=4 --dim M=100 --dim N=72 --dim K=304"),
    ("no TMA for 600-byte rows", "programs/matmul_1p1c.co --func gemm_ws --random-inputs "
                                 "--dim M=100 --dim N=72 --dim K=300"),
    ("swizzled TMA, wgmma in place", "programs/matmul_tma.co --func gemm_tma --random-inputs "
                                     "--dim M=128 --dim N=64 --dim K=256"),
    ("two warpgroups in place", "programs/matmul_wgmma_async.co --func gemm_async "
                                "--random-inputs --dim M=200 --dim N=72 --dim K=192"),
    # the larger tiles the gemm step times, at ragged edges
    ("1P1C 64x256 tiles", "programs/matmul_1p1c.co --func gemm_ws --random-inputs -D BN=256 "
                          "-D STAGES=3 --dim M=100 --dim N=300 --dim K=192"),
    ("1P1C 128x128 tiles", "programs/matmul_1p1c.co --func gemm_ws --random-inputs -D BM=128 "
                           "-D BN=128 -D STAGES=4 --dim M=200 --dim N=136 --dim K=320"),
)
STEPS = ("facts", "gemm", "programs", "repros", "tests", "sanitizer", "conformance")
GEMM = {"M": 4096, "N": 4096, "K": 4096}
# the GEMMs timed by the gemm step, (program, function, defines, bounds checks in the
# generated code), each c = a @ b^T with a [M, K] and b [N, K]: matmul_1p1c's default
# (64x64x64 tiles, two stages, f16), then larger tiles the same source takes with -D (each
# under the shared memory of one block, and each a repro above), one of them without checks
# (what they cost), one in bf16; matmul_1p1c_async, whose producer publishes its TMA
# copies with the slot's event and does not wait for them; and matmul_overlap, whose K loop
# keeps a slab's wgmmas in flight
GEMM_RUNS = (("matmul_1p1c", "gemm_ws", {}, True),
             ("matmul_1p1c", "gemm_ws", {"BN": "128", "STAGES": "4"}, True),
             ("matmul_1p1c", "gemm_ws", {"BN": "256", "STAGES": "3"}, True),
             ("matmul_1p1c", "gemm_ws", {"BN": "256", "STAGES": "3"}, False),
             ("matmul_1p1c", "gemm_ws", {"BM": "128", "BN": "128", "STAGES": "4"}, True),
             ("matmul_1p1c", "gemm_ws", {"ELEM": "bf16", "BN": "256", "STAGES": "3"}, True),
             ("matmul_1p1c_async", "gemm_async", {}, True),
             ("matmul_1p1c_async", "gemm_async", {"BN": "256", "STAGES": "3"}, True),
             ("matmul_overlap", "gemm_overlap", {}, True))
# the Croqtile repository's folders of GPU programs (bench/conformance.py)
CONFORMANCE_FOLDERS = ("end2end", "cute")
# a spin wait stalled this long is a deadlock report, not a hung step
WATCHDOG_S = "20"


def sh(cmd: list, timeout: float, env: dict | None = None, cwd: Path = ROOT) -> dict:
    """A command's status, seconds and output tail; a time-out is a result, not a crash."""
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env={**os.environ, "CROQVM_GPU_WATCHDOG_S": WATCHDOG_S,
                                   **(env or {})})
        rc, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = "timeout", f"{exc.stdout or ''}{exc.stderr or ''}"
        out = out.decode() if isinstance(out, bytes) else out
    except FileNotFoundError as exc:
        rc, out = "missing", str(exc)
    return {"cmd": " ".join(map(str, cmd)), "rc": rc, "seconds": round(time.monotonic() - start, 1),
            "tail": out[-2000:]}


def croqvm(*args) -> list:
    return [sys.executable, "-m", "croqvm", *map(str, args)]


def catalog():
    spec = importlib.util.spec_from_file_location("programs_catalog", ROOT / "programs" /
                                                  "catalog.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- steps

def facts() -> dict:
    from croqvm.cuda import driver
    out = {"python": sys.version.split()[0], "machine": platform.machine(),
           "gpu": driver.gpu_status()}
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
              "--format=csv,noheader"], 30)
    out["nvidia-smi"] = smi["tail"].strip() if smi["rc"] == 0 else f"unavailable ({smi['rc']})"
    nvcc = sh(["nvcc", "--version"], 30)
    out["nvcc"] = nvcc["tail"].strip().splitlines()[-1] if nvcc["rc"] == 0 else "unavailable"
    return out


def tests() -> dict:
    # no pytest-benchmark (a GPU machine's image may hold it): its warnings would fill the
    # tail where the failures are named
    run = sh([sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "-p",
              "no:benchmark", "-k", "gpu", "tests/test_cuda_runtime.py",
              "tests/test_cuda_wgmma.py", "tests/test_cuda_driver.py", "tests/test_cuda_tma.py"],
             180)
    lines = run["tail"].strip().splitlines()
    return {"ok": run["rc"] == 0, "summary": lines[-1] if lines else "",
            "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
            "run": run}


def one_program(index: int) -> dict:
    """Entry ``index`` of the catalogue on the GPU against the native engine (a process
    of its own: called through --one)."""
    import io

    import numpy as np

    import croqvm
    from croqvm.running import diff
    from croqvm.core.errors import CroqvmError
    cat = catalog()
    entry = [e for e in cat.PROGRAMS if e.stage is None][index]
    prog = croqvm.compile_file(entry.path, defines=entry.defines)
    name = f"{entry.file}{''.join(f' -D{k}={v}' for k, v in entry.defines.items())}"
    try:
        if entry.func is None:
            outs = {}
            for device in ("cpu", "gpu"):
                buf = io.StringIO()
                for fn in prog.functions:
                    if not fn.params:
                        prog.run(fn.name, device=device, out=buf)
                outs[device] = sorted(buf.getvalue().splitlines())
            return {"program": name, "ok": outs["cpu"] == outs["gpu"],
                    "detail": "" if outs["cpu"] == outs["gpu"] else "printed lines differ"}
        args, dims = entry.make_args(np.random.default_rng(7), "test")
        found = diff.comparison(prog, entry.func, *args, against="gpu", **dims)
        return {"program": name, "ok": not found.mismatches,
                "detail": "; ".join(f"{m.what}{list(m.index) if m.index else ''}: "
                                    f"{m.reference} vs {m.other}"
                                    for m in found.mismatches[:3])}
    except CroqvmError as exc:
        return {"program": name, "ok": False, "detail": str(exc).splitlines()[0]}


def programs(jobs: int) -> dict:
    count = len([e for e in catalog().PROGRAMS if e.stage is None])

    def run(i):
        r = sh([sys.executable, __file__, "--one", str(i)], 240)
        try:
            return json.loads(r["tail"].strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"program": f"entry {i}", "ok": False, "detail": f"exit {r['rc']}: "
                    f"{r['tail'][-300:]}"}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(run, range(count)))
    return {"ok": all(r["ok"] for r in rows), "agree": sum(r["ok"] for r in rows),
            "of": len(rows), "rows": rows}


def repros(jobs: int) -> dict:
    """The review's GPU-only bugs (docs/CUDA.md "GPUs"), each against the interpreter."""
    def run(repro):
        name, call = repro
        r = sh(croqvm("diff", *call.split(), "--against", "gpu"), 120)
        return {"repro": name, "ok": r["rc"] == 0, "detail": r["tail"][-400:]}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(run, REPRO_CALLS))
    return {"ok": all(r["ok"] for r in rows), "rows": rows}


def sanitizer() -> dict:
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        return {"skipped": "compute-sanitizer is not on PATH"}
    run = croqvm("run", "programs/matmul_1p1c.co", "--func", "gemm_ws", "--random-inputs",
                 "--dim", "M=128", "--dim", "N=128", "--dim", "K=256", "--device", "gpu")

    def check(tool_name):
        r = sh([tool, "--tool", tool_name, "--error-exitcode", "9", *run], 150)
        errors = re.search(r"ERROR SUMMARY: (\d+)", r["tail"])
        return {"tool": tool_name, "ok": r["rc"] == 0,
                "errors": int(errors.group(1)) if errors else None, "rc": r["rc"],
                "detail": "" if r["rc"] == 0 else r["tail"][-600:]}
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        rows = list(pool.map(check, ("memcheck", "racecheck", "synccheck")))
    return {"ok": all(r["ok"] for r in rows), "rows": rows}


def gemm() -> dict:
    """Each run of GEMM_RUNS at 4096^3 under ncu, one process each (gemm_one)."""
    from croqvm.cuda.launch import CHECKS_ENV
    out = {"cublas": torch_gemm()}
    ncu = shutil.which("ncu")
    rows = []
    for index, (program, func, defines, checks) in enumerate(GEMM_RUNS):
        cmd = [sys.executable, __file__, "--gemm", str(index)]
        if ncu:
            # the GPU's own clocks, as torch's timing below runs at; nanoseconds in full
            cmd = [ncu, "--clock-control", "none", "--print-units", "base", "--metrics",
                   "gpu__time_duration.sum", "--kernel-name", f"regex:{func}_k",
                   "--launch-count", "1", *cmd]
        r = sh(cmd, 150, env={CHECKS_ENV: "1" if checks else "0"})
        row = {"tiles": " ".join([program] + [f"{k}={v}" for k, v in defines.items()]),
               "ok": False}
        if not checks:
            row["tiles"] += ", no checks"
        found = [line for line in r["tail"].splitlines() if line.startswith('{"gemm"')]
        if found:
            row.update(json.loads(found[-1])["gemm"])
        else:
            row["detail"] = r["tail"][-600:]
        took = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", r["tail"])
        if took:
            unit, value = took.group(1), float(took.group(2).replace(",", ""))
            ms = value * {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3,
                          "ms": 1.0, "msecond": 1.0, "s": 1e3, "second": 1e3}[unit]
            row["ms"] = ms
            row["tflops"] = 2 * GEMM["M"] * GEMM["N"] * GEMM["K"] / ms / 1e9
            if out["cublas"].get("f16_ms"):
                row["of_cublas"] = out["cublas"]["f16_ms"] / ms
        elif ncu is None:
            row["timing"] = "ncu is not on PATH"
        rows.append(row)
    out["croqvm"] = rows
    out["ok"] = all(r["ok"] for r in rows)
    return out


def gemm_one(index: int) -> dict:
    """GEMM_RUNS[index] at 4096^3 on the GPU (its checks as the environment says), its
    result against torch's (inputs in [-1, 1], products summed in f64) within
    docs/CUDA.md's derived tolerance."""
    import numpy as np
    import torch

    import croqvm
    from croqvm.core import dtypes
    from croqvm.cuda.tolerance import gpu_tolerance
    m, n, k = GEMM["M"], GEMM["N"], GEMM["K"]
    program, func, defines, _ = GEMM_RUNS[index]
    prog = croqvm.compile_file(ROOT / "programs" / f"{program}.co", defines=defines)
    elem = dtypes.lookup(defines.get("ELEM", "f16"))
    elem = dtypes.ml_dtype(elem) or dtypes.param_dtype(elem)     # bf16 as ml_dtypes
    rng = np.random.default_rng(index)
    a = rng.uniform(-1, 1, (m, k)).astype(elem)
    b = rng.uniform(-1, 1, (n, k)).astype(elem)
    c = np.zeros((m, n), np.float32)
    start = time.monotonic()
    prog.run(func, a, b, c, device="gpu")
    seconds = time.monotonic() - start
    want = (torch.from_numpy(a.astype(np.float64)).cuda() @
            torch.from_numpy(b.astype(np.float64)).cuda().T).cpu().numpy()
    rtol, atol = gpu_tolerance(prog.module, [a, b, c], want)
    err = np.abs(c.astype(np.float64) - want)
    return {"ok": bool(np.all(err <= atol + rtol * np.abs(want))),
            "max_abs_err": float(err.max()), "atol": atol, "rtol": rtol,
            "run_s": round(seconds, 2)}


def torch_gemm() -> dict:
    try:
        import torch
    except ImportError:
        return {"skipped": "torch is not installed"}
    out = {}
    m, n, k = GEMM["M"], GEMM["N"], GEMM["K"]
    for name, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        for _ in range(3):
            torch.matmul(a, b)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 20
        out[f"{name}_ms"] = ms
        out[f"{name}_tflops"] = 2 * m * n * k / ms / 1e9
    return out


def conformance(jobs: int) -> dict:
    """The Croqtile repository's GPU programs against the interpreter on the GPU: how many
    check, run and agree, per folder, to compare with the same figures on cuda-cpu."""
    root = os.environ.get("CROQTILE")
    if not root:
        return {"skipped": "CROQTILE is not set to a Croqtile checkout"}
    out = {}
    for folder in CONFORMANCE_FOLDERS:
        with tempfile.NamedTemporaryFile(suffix=".json") as records:
            r = sh([sys.executable, "bench/conformance.py", root, "--folder", folder,
                    "--against", "gpu", "--jobs", str(jobs), "--timeout", "60",
                    "--json", records.name], 200)
            try:
                found = json.loads(Path(records.name).read_text() or "[]")
            except ValueError:
                found = []
        valid = [rec for rec in found if rec["kind"] == "valid"]
        out[folder] = {"rc": r["rc"], "seconds": r["seconds"], "valid": len(valid),
                       **{stage: sum(1 for rec in valid if rec["stage"].get(stage))
                          for stage in ("check", "run", "agree")},
                       "failures": [f"{Path(rec['file']).name}: {rec['cause']}"
                                    for rec in found if rec["cause"]]}
        if not found:
            out[folder]["detail"] = r["tail"][-600:]
    return {"folders": out}


def prebuild(arch: str, jobs: int) -> int:
    """Compiles the kernels of every step for ``arch`` into the CUDA cache, each from the
    source path its step compiles (a path is part of the generated text, so of the key)."""
    import croqvm
    from croqvm.core.errors import CroqvmError
    from croqvm.cuda import compile as cc
    from croqvm.cuda.emit import emit
    from croqvm.cuda.launch import GENERATOR_VERSION, checks_enabled
    os.chdir(ROOT)
    modules = [lambda e=e: croqvm.compile_file(e.path, defines=e.defines).module
               for e in catalog().PROGRAMS if e.stage is None]
    for _, call in REPRO_CALLS:
        words = call.split()
        defines = dict(words[i + 1].split("=") for i, w in enumerate(words) if w == "-D")
        modules.append(lambda f=words[0], d=defines: croqvm.compile_file(f, defines=d).module)
    gemms = [(lambda f=f, d=d: croqvm.compile_file(ROOT / "programs" / f"{f}.co",
                                                  defines=d).module, checks)
             for f, _, d, checks in GEMM_RUNS]
    modules += [make for make, checks in gemms if checks]
    modules.append(lambda: croqvm.compile_file("programs/matmul_1p1c.co").module)  # sanitizer
    unchecked = [make for make, checks in gemms if not checks]
    if os.environ.get("CROQTILE"):
        import conformance
        for path, folder in conformance.collect(Path(os.environ["CROQTILE"]), None):
            if folder in CONFORMANCE_FOLDERS:
                modules.append(lambda p=path: croqvm.compile(
                    Path(p).read_text(encoding="utf-8", errors="replace"), p).module)

    def build(make, checks=checks_enabled()):
        try:
            text = emit(make(), arch=arch, checks=checks).text
        except CroqvmError:
            return "rejected"                  # the step that runs it reports why
        said = []
        try:
            cc.build(text, arch, generator=GENERATOR_VERSION, log=said.append)
        except CroqvmError:
            return "not compiled"              # nvcc's message: the step that runs it
        return "cached" if "cache hit" in said[0] else "built"
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        counts = Counter(pool.map(build, modules + unchecked,
                                  [checks_enabled()] * len(modules) + [False] * len(unchecked)))
    print(f"prebuild {arch}: {dict(counts)} in {time.monotonic() - started:.0f} s, into "
          f"{cc.cache_dir()}")
    return 0


# --------------------------------------------------------------------------- report

def table(results: dict) -> str:
    lines = ["| step | result |", "|---|---|"]
    for step, res in results.items():
        if step == "facts":
            gpu = res["gpu"]
            lines.append(f"| facts | {res['nvidia-smi']}; {res['nvcc']}; probe: "
                         f"{'ok ' + str(gpu.get('capability')) if gpu.get('ok') else gpu.get('reason')} |")
        elif "skipped" in res:
            lines.append(f"| {step} | skipped: {res['skipped']} |")
        elif "error" in res:
            lines.append(f"| {step} | FAIL: {res['error']} |")
        elif step == "programs":
            bad = ", ".join(r["program"] for r in res["rows"] if not r["ok"]) or "none"
            lines.append(f"| programs | {res['agree']} of {res['of']} agree; failing: {bad} |")
        elif step in ("repros", "sanitizer"):
            lines.append(f"| {step} | " + ", ".join(
                f"{r.get('repro') or r.get('tool')}: {'ok' if r['ok'] else 'FAIL'}"
                for r in res["rows"]) + " |")
        elif step == "gemm":
            cublas = res["cublas"]
            lines.append("| gemm cuBLAS | " + (cublas.get("skipped") or ", ".join(
                f"{t} {cublas[t + '_ms']:.3f} ms ({cublas[t + '_tflops']:.0f} TFLOP/s)"
                for t in ("f16", "bf16"))) + " |")
            for row in res["croqvm"]:
                timing = (f"{row['ms']:.3f} ms, {row['tflops']:.0f} TFLOP/s, "
                          f"{row.get('of_cublas', 0):.0%} of cuBLAS f16"
                          if "ms" in row else row.get("timing", "no timing"))
                result = ("result ok" if row["ok"] else "result WRONG" if "max_abs_err" in row
                          else "FAIL: " + row.get("detail", "")[-200:].replace("\n", " "))
                lines.append(f"| gemm {row['tiles']} | {timing}; {result} |")
        elif step == "conformance":
            for folder, fig in res["folders"].items():
                lines.append(f"| conformance {folder} | of {fig['valid']} valid: check "
                             f"{fig['check']}, run {fig['run']}, agree on the GPU "
                             f"{fig['agree']} ({fig['seconds']} s) |")
        else:
            lines.append(f"| {step} | {'ok' if res.get('ok') else 'FAIL'} "
                         f"{res.get('summary', '')} |")
    return "\n".join(lines) + "\n"


def write(out: Path, results: dict) -> None:
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "results.md").write_text(table(results))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("CROQVM_GPU_CHECK_OUT", "gpu-check"))
    ap.add_argument("--only", nargs="+", choices=STEPS)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--prebuild", metavar="ARCH", choices=("sm_80", "sm_90a"),
                    help="compile the kernels of every step for ARCH into the CUDA cache")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--gemm", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.one is not None:
        print(json.dumps(one_program(args.one)))
        return 0
    if args.gemm is not None:
        print(json.dumps({"gemm": gemm_one(args.gemm)}))
        return 0
    if args.prebuild:
        return prebuild(args.prebuild, args.jobs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"facts": facts()}
    gpu = results["facts"]["gpu"]
    steps = {"gemm": gemm, "programs": lambda: programs(args.jobs),
             "repros": lambda: repros(args.jobs), "tests": tests, "sanitizer": sanitizer,
             "conformance": lambda: conformance(args.jobs)}
    for step, fn in steps.items():
        if args.only and step not in args.only:
            continue
        started = time.monotonic()
        try:
            results[step] = (fn() if gpu.get("ok") else
                             {"skipped": f"no GPU: {gpu.get('reason')}"})
        except Exception as exc:        # a step that breaks is its result; the rest still run
            results[step] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        results[step]["seconds"] = round(time.monotonic() - started, 1)
        print(f"{step}: {'skipped' if 'skipped' in results[step] else 'done'} "
              f"({results[step]['seconds']} s)", flush=True)
        write(out, results)
    write(out, results)
    print(table(results))
    return 0 if all(r.get("ok", True) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
