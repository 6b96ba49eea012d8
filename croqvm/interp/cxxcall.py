"""CALL_CXX (LANGUAGE.md §6.10.4): a C++ device function, compiled for the CPU
(``croqvm.cxx``), called once per active lane in increasing lane order with pointers to
that lane's argument and result registers.

Conventions: handlers take (``w``, ``ins``); ``i`` indexes the warp's lanes.
"""
from __future__ import annotations

from .. import cxx


def op_call_cxx(w, ins):
    call = w.blk.prog.code.cxx_calls[ins[1]]
    lib = cxx.library(w.blk.call.module)
    ffi, entry = lib.ffi, lib.entries[call.func]
    argv = ffi.new("void *[]", max(len(call.args), 1))
    for i in w.active_indices():
        values = [ffi.from_buffer(w.regs[r][i:i + 1]) for r in call.args]
        for k, v in enumerate(values):
            argv[k] = v
        result = ffi.NULL if call.result < 0 else \
            ffi.from_buffer(w.regs[call.result][i:i + 1], require_writable=True)
        entry(argv, result)


HANDLERS = {"CALL_CXX": op_call_cxx}
