"""CALL_CXX (LANGUAGE.md §6.10.4): a C++ device function, compiled for the CPU
(``croqvm.cuda.cxx``), called once per active lane in increasing lane order with pointers to
that lane's argument and result registers, and to the data of its instances of the
buffers passed to pointer parameters. Those count as written in poison mode: what the
function wrote is not known.

Conventions: handlers take (``w``, ``ins``); ``i`` indexes the warp's lanes.
"""
from __future__ import annotations

from ..cuda import cxx
from .memory import buffer_of


def op_call_cxx(w, ins):
    call = w.blk.prog.code.cxx_calls[ins[1]]
    lib = cxx.library(w.blk.call.module)
    pointers = w.blk.call.module.cxx[call.func].pointers
    ffi, entry = lib.ffi, lib.entries[call.func]
    argv = ffi.new("void *[]", max(len(call.args), 1))
    for i in w.active_indices():
        bufs = [buffer_of(w, x, -1, i) if pointer else None
                for x, pointer in zip(call.args, pointers)]
        values = [ffi.from_buffer(buf.data, require_writable=True) if buf is not None
                  else ffi.from_buffer(w.regs[x][i:i + 1]) for x, buf in zip(call.args, bufs)]
        for k, v in enumerate(values):
            argv[k] = v
        result = ffi.NULL if call.result < 0 else \
            ffi.from_buffer(w.regs[call.result][i:i + 1], require_writable=True)
        entry(argv, result)
        for buf in bufs:
            if buf is not None and buf.written is not None:
                buf.written[...] = True


HANDLERS = {"CALL_CXX": op_call_cxx}
