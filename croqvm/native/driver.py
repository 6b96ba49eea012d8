"""Running a function on the native engine (the extension croqvm._native).

Python binds the arguments exactly as the reference engine does (croqvm/interp/host.py
``bind``: the same checks and copies), hands the host registers and buffers to C, runs
the call in slices with the GIL released (output streams between slices, Ctrl-C stops at
the next one), and turns the result, the statistics and any fault record into what the
reference engine gives: the same values, the same text, the same errors.

Conventions: ``lib``/``ffi`` the extension, ``c`` the C call, ``fn`` the Function,
``pycall`` the reference engine's Call, used for binding and for rendering reports.
"""
from __future__ import annotations

import codecs
import os

import numpy as np

from dataclasses import replace

from ..bytecode.module import ParamKind
from ..bytecode.opcodes import SPAN, WIDTH
from ..bytecode.verify import verified, verify
from ..core.errors import InternalError
from ..core.limits import MAX_GRID
from ..reports.messages import lanes_phrase
from ..core.position import PROGRESS_EVERY, Interrupted, RunPosition
from ..interp.host import _given_dims, bind
from ..interp.host import run_function as reference_run
from ..interp.values import copy_back, returned, returned_copy, scalar_result
from ..interp.machine import Block, Call
from ..interp.scheduler import make_scheduler
from ..core import dtypes
from .faults import record
from .flatten import flatten

SLICE_STEPS = 1 << 20      # warp-steps between two returns to Python
SCHEDULES = {"rr": 0, "random": 1}
NO_LIMIT = 2 ** 63 - 1
# more threads than this gain nothing on any machine croqvm runs on, and a huge --jobs
# would only meet the system's thread limit (the pool also never starts more than blocks)
MAX_JOBS = 256


class Program:
    """One function loaded into C, with what its faults are read back with."""

    def __init__(self, lib, ffi, fn, cxx=()):
        self.fn = fn
        words, strings = flatten(fn, cxx)
        self._words = ffi.new("int64_t[]", words)
        self._strings = ffi.new("char[]", strings or b"\0")
        prog = lib.cq_load(self._words, len(words), self._strings, len(strings))
        if prog == ffi.NULL:
            reason = ffi.string(lib.cq_load_error()).decode()
            raise InternalError(f"internal error: the native engine rejected the image of "
                                f"'{fn.name}': {reason}")
        self.prog = ffi.gc(prog, lib.cq_prog_free)


def program(lib, ffi, module, fn) -> Program:
    """The loaded program of ``fn``, flattened once per module. C trusts only verified
    modules (STYLE.md rule 6): a module made in memory, not compiled or decoded, is
    verified here first."""
    cache = module.__dict__.get("_native_programs")
    if cache is None:
        if not verified(module):
            verify(module)
        cache = module.__dict__["_native_programs"] = {}
    prog = cache.get(fn.name)
    if prog is None or prog.fn is not fn:
        prog = cache[fn.name] = Program(lib, ffi, fn, module.cxx)
        if module.cxx:          # the C++ functions its kernels call (croqvm/cuda/cxx.py)
            from ..cuda import cxx    # here: most modules call none
            compiled = cxx.library(module)
            fns = ffi.new("cq_cxx_fn[]", [ffi.cast("cq_cxx_fn", compiled.address(k))
                                          for k in range(len(module.cxx))])
            lib.cq_prog_set_cxx(prog.prog, len(module.cxx), fns)
    return prog


def run_function(lib, ffi, module, name: str, args: list, dims: dict, *, poison: bool,
                 schedule: str, seed: int, max_steps: int | None, out, stats: dict | None,
                 progress=None, jobs: int | None = None, check: str | None = None,
                 tracer=None):
    """The native engine's runner (croqvm.running.program): what croqvm.interp.run_function does,
    ``check`` "init" (or ``poison``, its other name) and "race" included
    (docs/EXECUTION.md §20).
    ``progress`` is called between slices (every PROGRESS_EVERY warp-steps or so);
    ``jobs`` threads run a launch's blocks (default: the cores the process may use; one
    under the random schedule, whose runs replay exactly (croqvm explore --record), which
    blocks racing on threads would not). A kernel that prints runs on one unless ``jobs``
    is given: serially its output streams while it runs, on threads it comes when the
    launch ends. A ``tracer`` (croqvm.trace.native) times the steps: its ``start(lib,
    ffi, c)`` before the run, its ``between(lib, ffi, c)`` between slices, its
    ``finish(lib, ffi, c, stopped)`` after it, however it ended (``stopped``: by an
    exception); it runs the blocks one at a time."""
    fn = module.function(name)
    if check == "race":
        return _race_checked(lib, ffi, module, fn, args, dims, schedule=schedule, seed=seed,
                             max_steps=max_steps, out=out, stats=stats, progress=progress,
                             jobs=jobs)
    return _run_function(lib, ffi, module, fn, args, dims, poison=poison or check == "init",
                         schedule=schedule, seed=seed, max_steps=max_steps, out=out,
                         stats=stats, progress=progress,
                         jobs=1 if tracer is not None else jobs, tracer=tracer)


def _race_checked(lib, ffi, module, fn, args, dims, *, schedule, seed, max_steps, out, stats,
                  progress, jobs):
    """``check="race"`` (docs/EXECUTION.md §20): the run on the native engine with the C
    detector, which stops it where it races; such a run runs again on the reference engine
    with the same inputs, schedule and seed, whose checker reports the races. The native run's
    output streams as it comes; a run done again prints only what follows it (the engines
    print the same text in the same order up to the point where the detector stopped)."""
    def reference(out):
        return reference_run(module, fn.name, args, dims, poison=False, schedule=schedule,
                             seed=seed, max_steps=max_steps, out=out, stats=stats,
                             progress=progress, check="race")
    printed = _Counted(out)
    try:
        return _run_function(lib, ffi, module, fn, args, dims, poison=False,
                             schedule=schedule, seed=seed, max_steps=max_steps, out=printed,
                             stats=stats, progress=progress, jobs=jobs, race=True)
    except _RaceStopped:
        return reference(_AfterPrefix(out, printed.count))


class _Counted:
    """An output stream that writes through to ``out`` and counts the characters."""

    def __init__(self, out):
        self.out, self.count = out, 0

    def write(self, text: str) -> int:
        self.out.write(text)
        self.count += len(text)
        return len(text)


class _AfterPrefix:
    """An output stream that drops its first ``skip`` characters and writes the rest to
    ``out``: a run done again after a stopped one prints only what that one did not."""

    def __init__(self, out, skip: int):
        self.out, self.skip = out, skip

    def write(self, text: str) -> int:
        if self.skip < len(text):
            self.out.write(text[self.skip:])
        self.skip = max(0, self.skip - len(text))
        return len(text)


class _RaceStopped(Exception):
    """The race check's detector stopped the native run (CQ_RACE_STOP)."""


def _run_function(lib, ffi, module, fn, args, dims, *, poison, schedule, seed, max_steps, out,
                  stats, progress, jobs, race=False, tracer=None):
    """The native run of ``fn`` (``run_function``); ``race``: with the race check's
    detector, raising _RaceStopped where it stops the run, before anything is copied back;
    ``tracer``: see run_function."""
    pycall = Call(module, fn, out=out, poison=poison, scheduler=make_scheduler(schedule, seed),
                  max_steps=max_steps, progress=progress)
    hblk = Block(pycall, pycall.program(fn.host), 1)
    with np.errstate(all="ignore"):
        back = bind(pycall, hblk, list(args), _given_dims(fn, dims or {}))
    prog = program(lib, ffi, module, fn)
    opts = ffi.new("cq_opts *", {"max_steps": NO_LIMIT if max_steps is None else max_steps,
                                 "poison": int(poison), "schedule": SCHEDULES[schedule],
                                 "seed": seed, "max_grid": list(MAX_GRID),
                                 "jobs": min(jobs or (1 if schedule == "random"
                                                      else len(os.sched_getaffinity(0))),
                                             MAX_JOBS),
                                 "jobs_printing": jobs is not None, "race": int(race)})
    c = lib.cq_call_new(prog.prog, opts)
    if tracer is not None:
        tracer.start(lib, ffi, c)
    stopped = True
    try:
        keep = _bind(lib, ffi, c, fn, hblk)
        result = _run(lib, ffi, c, prog, pycall, tracer)
        del keep
        stopped = False
    except KeyboardInterrupt:
        raise Interrupted(_stopped(lib, ffi, c, pycall)) from None
    finally:
        if stats is not None:
            at = _where(lib, ffi, c)
            stats.update(warp_steps=at.steps, lane_steps=at.lane_steps,
                         launches=at.launches, blocks=at.blocks_run)
        try:        # the tracer's file may fail to take the last slices
            if tracer is not None:
                tracer.finish(lib, ffi, c, stopped)
        finally:
            lib.cq_call_free(c)     # before the program can go: the call reads its tables
    for arr, buf, t in back:
        copy_back(arr, buf.data, t)
    return result


def _bind(lib, ffi, c, fn, hblk) -> list:
    """Hand the bound host registers and buffers to C; returns what must stay alive."""
    hw = hblk.warps[0]
    keep = []
    for r in [p.slot for p in fn.params if p.kind == ParamKind.SCALAR] + [r for _, r in fn.dims]:
        raw = ffi.from_buffer(hw.regs[r].tobytes())
        keep.append(raw)
        lib.cq_set_reg(c, r, raw)
    for slot, (buf,) in hblk.bufs.items():
        size = buf.data.size
        data = ffi.from_buffer("char[]", buf.data, require_writable=True) if size else ffi.NULL
        written = ffi.from_buffer("uint8_t[]", buf.written, require_writable=True) \
            if buf.written is not None and size else ffi.NULL
        shape = ffi.new("int64_t[]", list(buf.shape) or [0])
        lib.cq_bind(c, slot, data, buf.data.ndim, shape, written)
        keep += [data, written, shape]
    return keep


def _run(lib, ffi, c, prog, pycall, tracer=None):
    """Run ``c`` slice by slice; returns the function's result or raises its error."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    chunk = ffi.new("char[]", 1 << 16)
    slice_steps = SLICE_STEPS if pycall.progress is None else PROGRESS_EVERY
    while True:
        status = lib.cq_run(c, slice_steps)
        while lib.cq_output_size(c):
            n = lib.cq_take_output(c, chunk, len(chunk))
            pycall.out.write(decoder.decode(ffi.buffer(chunk, n)[:]))
        if status != lib.CQ_RUN_SLICE:
            break
        if tracer is not None:
            tracer.between(lib, ffi, c)
        if pycall.progress is not None:
            pycall.progress(_position(lib, ffi, c, pycall))
    if lib.cq_race_stopped(c):
        raise _RaceStopped()
    f = lib.cq_get_fault(c)
    if status == lib.CQ_RUN_INTERNAL:
        raise _internal(ffi, f, pycall)
    if status == lib.CQ_RUN_FAULT:
        if f.kind == lib.CQ_DEADLOCK:
            from .blockview import deadlock
            raise deadlock(lib, ffi, c, prog.fn, pycall.spans)
        from ..reports import render as report    # here: a run that ends well needs none
        raise report.fault(pycall.spans, prog.fn, record(f, prog.fn))
    return _result(lib, ffi, c, prog)


def _where(lib, ffi, c):
    at = ffi.new("cq_position *")
    lib.cq_where(c, at)
    return at


def _stopped(lib, ffi, c, pycall) -> RunPosition:
    """Where an interrupted call ``c`` stopped; a launch on threads is stopped, and says
    where each of its blocks was."""
    at = _position(lib, ffi, c, pycall)
    if not at.on_threads:
        return at
    blocks = ffi.new("cq_position[]", MAX_JOBS)
    n = lib.cq_pool_interrupt(c, blocks, MAX_JOBS)
    return replace(at, running=tuple(_position_of(blocks[k], pycall) for k in range(n)))


def _position(lib, ffi, c, pycall) -> RunPosition:
    """Where call ``c`` is, as croqvm.interp's Call.position says it."""
    return _position_of(_where(lib, ffi, c), pycall)


def _position_of(at, pycall) -> RunPosition:
    """A ``cq_position`` as a RunPosition."""
    fn, spans = pycall.fn, pycall.spans
    base = RunPosition(fn.name, at.steps, at.lane_steps, at.launches)
    if at.launch >= 0 and at.warp < 0:      # the launch's blocks run on threads
        return replace(base, kernel_span=spans.span(fn.host.launches[at.launch].span),
                       block_number=at.block_number, blocks=at.blocks)
    if at.warp < 0:
        return base
    code = fn.host if at.launch < 0 else fn.kernels[fn.host.launches[at.launch].kernel].code
    n = len(code.code) // WIDTH
    span = spans.span(code.code[at.ip * WIDTH + SPAN]) if 0 <= at.ip < n else None
    loop = spans.span(code.code[at.loop_ip * WIDTH + SPAN]) if at.loop_ip >= 0 else None
    base = replace(base, span=span, loop_span=loop)
    if at.launch < 0:
        return base
    launch = fn.host.launches[at.launch]
    act = [at.base + b for b in range(32) if at.act >> b & 1]
    lanes = lanes_phrase(act) if act else "no active lanes"
    return replace(base, kernel_span=spans.span(launch.span),
                   block=tuple(at.block[d] for d in range(len(launch.grid))),
                   block_number=at.block_number, blocks=at.blocks, block_steps=at.block_steps,
                   lanes=f"warp {at.warp}, {lanes}")


def _result(lib, ffi, c, prog):
    value = ffi.new("int64_t *")
    info = ffi.new("cq_buffer_info *")
    kind = lib.cq_result(c, value, info)
    if kind == 0:
        return None
    t = dtypes.BY_CODE[info.type]
    if kind == 1:
        v = np.frombuffer(ffi.buffer(value, 8), np.uint8)[:t.np.itemsize].view(t.np)
        return scalar_result(v, t)
    shape = tuple(info.shape[d] for d in range(info.ndim))
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return returned(np.zeros(shape, t.np), t)
    raw = ffi.buffer(info.data, count * t.np.itemsize)
    return returned_copy(np.frombuffer(raw, t.np).reshape(shape), t, prog.fn.name)


def _internal(ffi, f, pycall) -> InternalError:
    where = ffi.string(f.c_file).decode() if f.c_file != ffi.NULL else "?"
    span = pycall.spans.span(int(f.span))
    msg = f"internal error: the native engine found an inconsistency ({where}:{f.c_line})"
    return InternalError(f"{span}: error: {msg}" if span else f"error: {msg}")
