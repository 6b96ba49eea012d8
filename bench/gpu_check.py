"""The prepared GPU check (run by bench/gpu_check.sh): everything the CUDA path needs
to show on real hardware, in one run under 8 minutes on one H100, with a table of results.

Steps, each with its own time limit, each program in a process of its own (a device fault
leaves the process's CUDA context unusable):
  facts       the machine, the driver, nvcc, croqvm's GPU probe
  tests       the GPU cases of the runtime, driver and TMA tests (a TMA box at a
              tensor's edge, the swizzle tables, on the hardware)
  programs    every programs/ kernel and demo: `croqvm diff --against gpu` of the catalogue's
              inputs (derived tolerances, docs/CUDA.md), the demos' printed lines
  repros      the review's GPU-only bugs and the sm_90a fast paths at edge shapes
              (REPRO_CALLS), each against the interpreter
  sanitizer   compute-sanitizer memcheck, racecheck and synccheck on a small 1P1C GEMM
  gemm        the generated 1P1C f16 GEMM at 4096^3 (ncu kernel time) against torch.matmul
              (cuBLAS) in f16 and bf16
  conformance with CROQTILE=<checkout>: the Croqtile repository's kernels against the
              interpreter on the GPU

Without a GPU the facts are written and every other step is skipped with the reason; the
exit status is 0 unless a step found a disagreement or a failure.

  python bench/gpu_check.py [--out DIR] [--only STEP ...]
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
import time
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
)
STEPS = ("facts", "tests", "programs", "repros", "sanitizer", "gemm", "conformance")
GEMM = {"M": 4096, "N": 4096, "K": 4096}


def sh(cmd: list, timeout: float, env: dict | None = None, cwd: Path = ROOT) -> dict:
    """A command's status, seconds and output tail; a time-out is a result, not a crash."""
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env={**os.environ, **(env or {})})
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
    run = sh([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "gpu",
              "tests/test_cuda_runtime.py", "tests/test_cuda_wgmma.py",
              "tests/test_cuda_driver.py", "tests/test_cuda_tma.py"], 180)
    summary = run["tail"].strip().splitlines()[-1] if run["tail"].strip() else ""
    return {"ok": run["rc"] == 0, "summary": summary, "run": run}


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


def repros() -> dict:
    """The review's GPU-only bugs (docs/CUDA.md "GPUs"), each against the interpreter."""
    rows = []
    for name, call in REPRO_CALLS:
        r = sh(croqvm("diff", *call.split(), "--against", "gpu"), 120)
        rows.append({"repro": name, "ok": r["rc"] == 0, "detail": r["tail"][-400:]})
    return {"ok": all(r["ok"] for r in rows), "rows": rows}


def sanitizer() -> dict:
    tool = shutil.which("compute-sanitizer")
    if tool is None:
        return {"skipped": "compute-sanitizer is not on PATH"}
    run = croqvm("run", "programs/matmul_1p1c.co", "--func", "gemm_ws", "--random-inputs",
                 "--dim", "M=128", "--dim", "N=128", "--dim", "K=256", "--device", "gpu")
    rows = []
    for check in ("memcheck", "racecheck", "synccheck"):
        r = sh([tool, "--tool", check, "--error-exitcode", "9", *run], 150)
        errors = re.search(r"ERROR SUMMARY: (\d+)", r["tail"])
        rows.append({"tool": check, "ok": r["rc"] == 0,
                     "errors": int(errors.group(1)) if errors else None, "rc": r["rc"]})
    return {"ok": all(r["ok"] for r in rows), "rows": rows}


def gemm() -> dict:
    out = {"cublas": torch_gemm()}
    ncu = shutil.which("ncu")
    if ncu is None:
        out["croqvm"] = {"skipped": "ncu is not on PATH"}
        return out
    dims = [x for k, v in GEMM.items() for x in ("--dim", f"{k}={v}")]
    r = sh([ncu, "--metrics", "gpu__time_duration.sum", "--kernel-name", "regex:gemm_ws",
            "--launch-count", "1", *croqvm("run", "programs/matmul_1p1c.co", "--func",
                                            "gemm_ws", "--random-inputs", *dims, "--device",
                                            "gpu")], 300)
    took = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+([\d.,]+)", r["tail"])
    if not took:
        out["croqvm"] = {"ok": False, "detail": r["tail"][-600:]}
        return out
    unit, value = took.group(1), float(took.group(2).replace(",", ""))
    ms = value * {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "msecond": 1.0, "ms": 1.0,
                  "nsecond": 1e-6, "second": 1e3}.get(unit, 1.0)
    flops = 2 * GEMM["M"] * GEMM["N"] * GEMM["K"]
    out["croqvm"] = {"f16_ms": ms, "f16_tflops": flops / ms / 1e9}
    f16 = out["cublas"].get("f16_ms")
    if f16:
        out["croqvm"]["of_cublas"] = f16 / ms
    return out


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
    root = os.environ.get("CROQTILE")
    if not root:
        return {"skipped": "CROQTILE is not set to a Croqtile checkout"}
    r = sh([sys.executable, "bench/conformance.py", root, "--against", "gpu", "--jobs",
            str(jobs)], 300)
    return {"ok": r["rc"] == 0, "run": r}


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
        elif step == "programs":
            bad = ", ".join(r["program"] for r in res["rows"] if not r["ok"]) or "none"
            lines.append(f"| programs | {res['agree']} of {res['of']} agree; failing: {bad} |")
        elif step in ("repros", "sanitizer"):
            lines.append(f"| {step} | " + ", ".join(
                f"{r.get('repro') or r.get('tool')}: {'ok' if r['ok'] else 'FAIL'}"
                for r in res["rows"]) + " |")
        elif step == "gemm":
            lines.append(f"| gemm | {json.dumps(res)} |")
        else:
            lines.append(f"| {step} | {'ok' if res.get('ok') else 'FAIL'} "
                         f"{res.get('summary', '')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("CROQVM_GPU_CHECK_OUT", "gpu-check"))
    ap.add_argument("--only", nargs="+", choices=STEPS)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.one is not None:
        print(json.dumps(one_program(args.one)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"facts": facts()}
    gpu = results["facts"]["gpu"]
    steps = {"tests": tests, "programs": lambda: programs(args.jobs), "repros": repros,
             "sanitizer": sanitizer, "gemm": gemm,
             "conformance": lambda: conformance(args.jobs)}
    for step, fn in steps.items():
        if args.only and step not in args.only:
            continue
        started = time.monotonic()
        results[step] = fn() if gpu.get("ok") else {"skipped": f"no GPU: {gpu.get('reason')}"}
        results[step]["seconds"] = round(time.monotonic() - started, 1)
        print(f"{step}: {'skipped' if 'skipped' in results[step] else 'done'} "
              f"({results[step]['seconds']} s)", flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "results.md").write_text(table(results))
    print(table(results))
    return 0 if all(r.get("ok", True) for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
