"""Running a function on the native engine (the extension croqvm._native).

Python binds the arguments exactly as the reference engine does (croqvm/interp/host.py
``bind``: same checks, same copies), hands the host registers and buffers to C, runs the
call in slices with the GIL released (output streams between slices, Ctrl-C stops at the
next one), and turns the result, the statistics and any fault record into what
``croqvm.interp.run_function`` gives: the same values, the same text, the same errors.

Conventions: ``lib``/``ffi`` the extension, ``c`` the C call, ``fn`` the Function,
``pycall`` the reference engine's Call used for binding and for rendering messages.
"""
from __future__ import annotations

import codecs
import sys

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, CroqvmError, InternalError
from ..interp import diagnose
from ..interp.host import DEFAULT_MAX_STEPS, _given_dims, bind, p_span
from ..interp.machine import Block, Call
from ..interp.scheduler import make_scheduler
from . import faults
from .flatten import flatten

SLICE_STEPS = 1 << 20      # warp-instructions between two returns to Python
SCHEDULES = {"rr": 0, "random": 1}


class Program:
    """One function loaded into C, with what its faults are read back with."""

    def __init__(self, lib, ffi, fn):
        self.fn = fn
        self.image, words, strings = flatten(lib, fn)
        self._words = ffi.new("int64_t[]", words)
        self._strings = ffi.new("char[]", strings or b"\0")
        prog = lib.cq_load(self._words, len(words), self._strings, len(strings))
        if prog == ffi.NULL:
            reason = ffi.string(lib.cq_load_error()).decode()
            raise InternalError(f"internal error: the native engine rejected the image of "
                                f"'{fn.name}': {reason}")
        self.prog = ffi.gc(prog, lib.cq_prog_free)
        self.ctypes = faults.ctype_table(lib)


def program(lib, ffi, module, fn) -> Program:
    """The loaded program of ``fn``, flattened once per module."""
    cache = module.__dict__.setdefault("_native_programs", {})
    prog = cache.get(fn.name)
    if prog is None or prog.fn is not fn:
        prog = cache[fn.name] = Program(lib, ffi, fn)
    return prog


def run_function(lib, ffi, module, name: str, args: list, dims: dict | None = None, *,
                 poison=False, schedule="rr", seed=0, max_steps=None, out=None, stats=None):
    """``croqvm.interp.run_function`` on the native engine (same arguments, results and
    errors)."""
    fn = module.function(name)
    if fn is None:
        raise ArgumentError(f"no function named '{name}' in this module.")
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
        raise ArgumentError(f"the step limit must be a positive integer, not {max_steps!r}.")
    out = out if out is not None else sys.stdout
    pycall = Call(module, fn, out=out, poison=poison, scheduler=make_scheduler(schedule, seed),
                  max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps)
    hblk = Block(pycall, pycall.program(fn.host), 1)
    with np.errstate(all="ignore"):
        back = bind(pycall, hblk, list(args), _given_dims(fn, dims or {}))
    prog = program(lib, ffi, module, fn)
    opts = ffi.new("cq_opts *", {"max_steps": pycall.max_steps, "poison": int(poison),
                                 "schedule": SCHEDULES[schedule], "seed": seed & (2 ** 64 - 1)})
    c = ffi.gc(lib.cq_call_new(prog.prog, opts), lib.cq_call_free)
    keep = _bind(lib, ffi, c, prog, pycall, hblk)
    try:
        result = _run(lib, ffi, c, prog, pycall)
    finally:
        if stats is not None:
            steps, lanes = ffi.new("int64_t *"), ffi.new("int64_t *")
            lib.cq_stats(c, steps, lanes)
            stats.update(warp_steps=steps[0], lane_steps=lanes[0])
    del keep
    for arr, buf in back:
        arr[...] = buf.data
    return result


def _bind(lib, ffi, c, prog, pycall, hblk) -> list:
    """Hand the bound host registers and buffers to C; returns what must stay alive."""
    fn = prog.fn
    hw = hblk.warps[0]
    regs = [p.slot for p in fn.params if p.kind == "scalar"] + [r for _, r in fn.dims]
    keep = []
    for r in regs:
        raw = ffi.from_buffer(hw.regs[r].tobytes())
        keep.append(raw)
        lib.cq_set_reg(c, r, raw)
    for slot, insts in hblk.bufs.items():
        buf = insts[0]
        data = ffi.from_buffer("char[]", buf.data, require_writable=True) \
            if buf.data.size else ffi.NULL
        written = ffi.from_buffer("uint8_t[]", buf.written, require_writable=True) \
            if buf.written is not None and buf.data.size else ffi.NULL
        shape = ffi.new("int64_t[]", list(buf.shape) or [0])
        param = next(p for p in fn.params if p.kind == "buffer" and p.slot == slot)
        lib.cq_bind(c, slot, data, buf.data.ndim, shape, written, prog.image.string(buf.name),
                    p_span(pycall, param))
        keep += [data, written, shape]
    return keep


def _run(lib, ffi, c, prog, pycall):
    """Run ``c`` slice by slice; returns the function's result or raises its error."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    chunk = ffi.new("char[]", 1 << 16)
    while True:
        status = lib.cq_run(c, SLICE_STEPS)
        _drain(lib, ffi, c, chunk, decoder, pycall.out)
        if status != lib.CQ_SLICE:
            break
    if status == lib.CQ_INTERNAL:
        raise _internal(ffi, lib.cq_get_fault(c), pycall)
    if status == lib.CQ_FAULT:
        raise _fault(lib, ffi, c, prog, pycall)
    return _result(lib, ffi, c, prog)


def _drain(lib, ffi, c, chunk, decoder, out) -> None:
    while lib.cq_output_size(c):
        n = lib.cq_take_output(c, chunk, len(chunk))
        out.write(decoder.decode(ffi.buffer(chunk, n)[:]))


def _result(lib, ffi, c, prog):
    value = ffi.new("int64_t *")
    info = ffi.new("cq_buffer_info *")
    kind = lib.cq_result(c, value, info)
    if kind == 0:
        return None
    t = prog.ctypes[info.type]
    if kind == 1:
        v = np.frombuffer(ffi.buffer(value, 8), np.uint8)[:t.np.itemsize].view(t.np)[0]
        return bool(v) if t.kind == "bool" else float(v) if t.is_float else int(v)
    shape = tuple(info.shape[d] for d in range(info.ndim))
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return np.zeros(shape, t.np)
    raw = ffi.buffer(info.data, count * t.np.itemsize)
    return np.frombuffer(raw, t.np).reshape(shape).copy()


class _Place:
    """The block a fault happened in, as croqvm/interp/diagnose.py reads a Block."""

    def __init__(self, pycall, fn, f):
        self.call = pycall
        self.is_host = f.code < 0
        self.launch = fn.host.launches[f.launch] if f.launch >= 0 else None
        rank = len(self.launch.grid) if self.launch else 0
        self.index = tuple(int(f.block[d]) for d in range(rank))

    def block_text(self) -> str:
        return "(" + ", ".join(str(i) for i in self.index) + ")"


def _fault(lib, ffi, c, prog, pycall) -> CroqvmError:
    f = lib.cq_get_fault(c)
    place = _Place(pycall, prog.fn, f)
    if f.kind == lib.CQ_F_DEADLOCK:
        from .blockview import deadlock
        return deadlock(lib, ffi, c, prog, pycall, place)
    text = ffi.string(f.text).decode("utf-8", "replace") if f.text != ffi.NULL else ""
    ctx = faults.Context(prog.fn, f, text, prog.image.strings, prog.ctypes,
                         prog.image.const_faults, pycall)
    lane = int(f.lane) if f.lane >= 0 else None
    return diagnose.fault(place, int(f.span), faults.message(lib, ctx), lane)


def _internal(ffi, f, pycall) -> InternalError:
    where = ffi.string(f.c_file).decode() if f.c_file != ffi.NULL else "?"
    span = pycall.span(int(f.span))
    msg = f"internal error: the native engine found an inconsistency ({where}:{f.c_line})"
    return InternalError(f"{span}: error: {msg}" if span else f"error: {msg}")
