"""A verified bytecode function as the native engine's image: the one place where the
module model (croqvm/bytecode/module.py) meets the C structures (native/cq_engine.h).

The image is a flat list of int64 words plus a string table (UTF-8 bytes), read in this
order by native/load.c. Types are dtype codes, enumerations the module's own values, "list" a count followed by that many words::

    magic, nstrings, (offset, length) per string, function span,
    host Code, nkernels, per kernel: block size, grid rank, span, Code

    Code = nregs, type per register,
           nbuffers, per buffer: storage, type, instances, is an array, shape registers (list),
           list of future element types,
           nevents, per event: slots, ready, count, cluster, lane sets (list),
           nfrags, per fragment: type, unit, rows, cols (-1: dynamic),
           naccesses, per access: base kind, base, arr, indices (list),
           nviews, per view: base kind, base, arr, origin (list), extents (list), swizzle,
                  space (list), flat, shown (list), strides (list),
           ndmas, per DMA: op, src, dst view, dst buffer, future, async, zfill,
                  pad value, perm (list), pad lo (list), pad hi, pad mid (as many),
                  swizzle of the source, of the destination (bytes, 0: none),
           nsites, per site: lane set, unit,
           nprints, per format: npieces, kinds (0 string, 1 register), values (string
                  ids, registers), newline,
           nlaunches, per launch: kernel, async, span, block register, cooperative, grid (list),
                  (kernel slot, host slot) pairs (list), (kernel, host register) pairs (list),
                  cluster (list),
           ncxxcalls, per C++ call: function, result register, arguments (list: a register,
                  or a buffer slot for a pointer parameter), whether each is a pointer (list),
           once sites, shared memory of the event slots,
           nlanesets, per lane set: result, ninstructions, 7 words each,
           ninstructions, 7 words each (as Code.code holds them),
           aux: one word per CONST (its value's bits in the register's storage type)
                and per UPDATE (its arithmetic type, §12.2), the Code's instructions
                first, then each lane set's,
           per instruction: the registers it reads (list) and writes (list), as the
                initialisation check follows them (croqvm/bytecode/dataflow.py).
"""
from __future__ import annotations

import numpy as np

from ..bytecode import opcodes
from ..bytecode.dataflow import registers_read, registers_written
from ..bytecode.module import PieceKind, swizzled_sides
from ..core import dtypes
from ..core.limits import EVENT_SLOT_BYTES
from ..core.numerics import binary_op, storage_array

MAGIC = 0x31474D4951435143          # "CQCQIMG1", little-endian


class Image:
    """The image of one function; ``cxx`` is the module's C++ functions (``Module.cxx``)."""

    def __init__(self, cxx=()):
        self.cxx = cxx
        self.words: list[int] = []
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}

    def string(self, text: str) -> int:
        sid = self._ids.get(text)
        if sid is None:
            sid = self._ids[text] = len(self.strings)
            self.strings.append(text)
        return sid

    def put(self, *values) -> None:
        self.words.extend(int(v) for v in values)

    def counted(self, values) -> None:
        values = [int(v) for v in values]
        self.words.append(len(values))
        self.words.extend(values)

    def code(self, code) -> None:
        rtypes = [dtypes.BY_CODE[c] for c in code.regs]
        self.put(len(code.regs), *(c for c in code.regs))
        self.put(len(code.buffers))
        for b in code.buffers:
            self.put(b.storage, b.dtype, b.count, int(bool(b.array)))
            self.counted(b.shape)
        self.counted(f.dtype for f in code.futures)
        self.put(len(code.events))
        for e in code.events:
            self.put(e.slots, int(e.ready), e.count, int(e.cluster))
            self.counted(e.lanesets)
        self.put(len(code.frags))
        for f in code.frags:
            self.put(f.dtype, f.unit, f.rows, f.cols)
        self.put(len(code.accesses))
        for a in code.accesses:
            self.put(a.base_kind, a.base, a.arr)
            self.counted(a.indices)
        self.put(len(code.views))
        for v in code.views:
            self.put(v.base_kind, v.base, v.arr)
            self.counted(v.origin)
            self.counted(v.extents)
            self.put(v.swizzle)
            self.counted(v.space)
            self.put(v.flat)
            self.counted(v.shown)
            self.counted(v.strides)
        self.put(len(code.dmas))
        for d in code.dmas:
            self.put(d.op, d.src, d.dst_view, d.dst_buffer, d.future, int(d.is_async),
                     int(d.zfill), d.pad_value)
            self.counted(d.perm)
            self.counted(d.pad_lo)
            self.put(*d.pad_hi, *d.pad_mid)
            self.put(*swizzled_sides(code, d))
        self.put(len(code.colls))
        for c in code.colls:
            self.put(c.laneset, c.unit)
        self.put(len(code.prints))
        for p in code.prints:
            self.put(len(p.pieces), *(kind for kind, _ in p.pieces),
                     *(self.string(code.strings[x]) if kind == PieceKind.STR else x
                       for kind, x in p.pieces), int(p.newline))
        self.put(len(code.launches))
        for ln in code.launches:
            self.put(ln.kernel, int(ln.is_async), ln.span, ln.block, int(ln.cooperative), ln.stream)
            self.counted(ln.grid)
            self.counted(x for pair in ln.buffers for x in pair)
            self.counted(x for pair in ln.scalars for x in pair)
            self.counted(ln.cluster)
        self.put(len(code.cxx_calls))
        for c in code.cxx_calls:
            self.put(c.func, c.result)
            self.counted(c.args)
            self.counted(int(p) for p in self.cxx[c.func].pointers)
        self.put(code.once_sites, EVENT_SLOT_BYTES * sum(e.slots for e in code.events))
        self.put(len(code.lanesets))
        for ls in code.lanesets:
            self.put(ls.result, len(ls.code) // opcodes.WIDTH, *ls.code)
        self.put(len(code.code) // opcodes.WIDTH, *code.code)
        for words in [code.code] + [ls.code for ls in code.lanesets]:
            for pc in range(0, len(words), opcodes.WIDTH):
                self._aux(code, rtypes, words[pc:pc + opcodes.WIDTH])
        for pc in range(0, len(code.code), opcodes.WIDTH):
            ins = code.code[pc:pc + opcodes.WIDTH]
            self.counted(registers_read(code, ins))
            self.counted(registers_written(code, ins))

    def _aux(self, code, rtypes, ins) -> None:
        if ins[0] == opcodes.CONST:
            raw = storage_array([code.consts[ins[2]].value], rtypes[ins[1]]).tobytes()
            self.put(int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True))
        elif ins[0] == opcodes.UPDATE:
            acc = code.accesses[ins[1]]
            table = code.futures if acc.base_kind else code.buffers
            etype = dtypes.BY_CODE[table[acc.base].dtype]
            _, t = binary_op(opcodes.TABLE[ins[3]].name, etype, rtypes[ins[2]])
            self.put(t.code)

    def finish(self) -> tuple[list[int], bytes]:
        """The words with the string table's header in front, and the strings."""
        encoded = [s.encode("utf-8") for s in self.strings]
        offsets, at = [], 0
        for b in encoded:
            offsets += [at, len(b)]
            at += len(b)
        return [MAGIC, len(encoded), *offsets] + self.words, b"".join(encoded)


def flatten(fn, cxx=()) -> tuple[list[int], bytes]:
    """The image of function ``fn`` of a verified module whose C++ functions are ``cxx``:
    (words, strings)."""
    img = Image(cxx)
    img.put(fn.span)
    img.code(fn.host)
    img.put(len(fn.kernels))
    for k in fn.kernels:
        img.put(k.block_size, k.grid_rank, k.span)
        img.code(k.code)
    return img.finish()
