"""A verified bytecode function as the native engine's image: the one place where the
module model (croqvm/bytecode/module.py) meets the C structures (native/cq_engine.h).

The image is a flat list of int64 words plus a string table (UTF-8 bytes), read in this
order by native/load.c::

    magic, nstrings, (offset, length) per string, promote[16 x 16] (C type ids),
    function span, return kind (0 void, 1 scalar, 2 buffer),
    host Code, nkernels, per kernel: block size, grid rank, span, Code

    Code = nregs, C type per register,
           ninstructions, 7 words per instruction (as Code.code holds them),
           nbuffers, per buffer: storage (0 global, 1 shared, 2 local), C type, span,
                  name, param, nshape, shape registers, count, instance names,
           nfutures, name per future,
           nevents, per event: slots, ready, count, name, nlanesets, lane sets,
           nfrags, per fragment: C type, unit, name,
           naccesses, per access: kind (0 buffer, 1 future), base, arr, nindices, indices,
           nviews, per view: kind, base, arr, norigin, origin, nextents, extents,
           ndmas, per DMA: op (0 copy, 1 transp, 2 pad), src, dst view, dst buffer, future,
                  async, zfill, site, name, pad value, nperm, perm, npad, pad lo, hi, mid,
           nsites, per site: lane set, unit,
           nlanesets, per lane set: result, ninstructions, 7 words each,
           nprints, per format: npieces, kinds (0 text, 1 register), values, newline,
           nlaunches, per launch: kernel, async, span, block register, ngrid, grid,
                  2 x nbuffers, (kernel slot, host slot) pairs, 2 x nscalars, pairs,
           once sites,
           per CONST instruction (the Code's, then each lane set's): value bits in the
                  register's storage type and 0, or a fault id and 1.

Names are string ids; the driver keeps the strings and renders messages from them.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..bytecode import opcodes
from ..errors import CroqvmError
from ..interp.faults import LaneFault
from ..interp.alu import prepare_const

MAGIC = 0x31474D4951435143          # "CQCQIMG1", little-endian
STORAGE = {"global": 0, "shared": 1, "local": 2}
BASE = {"buf": 0, "fut": 1}
DMA_OP = {"copy": 0, "transp": 1, "pad": 2}
RET = {"void": 0, "scalar": 1, "buffer": 2}


class Image:
    """The image of one function, and what the driver needs to read faults back."""

    def __init__(self, lib, fn):
        self.lib, self.fn = lib, fn
        self.words: list[int] = []
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}
        self.const_faults: list[str] = []     # messages of CONSTs that do not fit
        self._supported = lib.cq_supported_types()

    def string(self, text: str) -> int:
        """The id of ``text`` in the string table (equal strings share one id, so
        comparing ids compares names, as §7.4.5 compares operand texts)."""
        sid = self._ids.get(text)
        if sid is None:
            sid = self._ids[text] = len(self.strings)
            self.strings.append(text)
        return sid

    def ctype(self, code: int) -> int:
        """The C type id of a dtype code; a type the engine lacks is a clear error."""
        dt = dtypes.BY_CODE[code]
        ct = getattr(self.lib, "CQ_" + dt.name.upper())
        if not self._supported >> ct & 1:
            raise CroqvmError(f"the native engine does not support '{dt.name}' yet: run "
                              f"'{self.fn.name}' with engine='python' (--engine python)")
        return ct

    # -- emitting

    def put(self, *values) -> None:
        self.words.extend(int(v) for v in values)

    def counted(self, values) -> None:
        values = list(values)
        self.words.append(len(values))
        self.words.extend(int(v) for v in values)

    def code(self, code) -> None:
        regs = [dtypes.BY_CODE[c] for c in code.regs]
        self.put(len(code.regs), *(self.ctype(c) for c in code.regs))
        self.put(len(code.code) // opcodes.WIDTH, *code.code)
        self.put(len(code.buffers))
        for b in code.buffers:
            names = [b.name] if not b.array else [f"{b.name}[{k}]" for k in range(b.count)]
            self.put(STORAGE[b.storage], self.ctype(b.dtype), b.span, self.string(b.name),
                     b.param)
            self.counted(b.shape)
            self.counted(self.string(n) for n in names)
        self.counted(self.string(f.name) for f in code.futures)
        self.put(len(code.events))
        for e in code.events:
            self.put(e.slots, int(e.ready), e.count, self.string(e.name))
            self.counted(e.lanesets)
        self.put(len(code.frags))
        for f in code.frags:
            self.put(self.ctype(f.dtype), f.unit, self.string(f.name))
        self.put(len(code.accesses))
        for a in code.accesses:
            self.put(BASE[a.base_kind], a.base, a.arr)
            self.counted(a.indices)
        self.put(len(code.views))
        for v in code.views:
            self.put(BASE[v.base_kind], v.base, v.arr)
            self.counted(v.origin)
            self.counted(v.extents)
        self.put(len(code.dmas))
        for d in code.dmas:
            self.put(DMA_OP[d.op], d.src, d.dst_view, d.dst_buffer, d.future, int(d.is_async),
                     int(d.zfill), d.coll, self.string(d.text), d.pad_value)
            self.counted(d.perm)
            self.counted(d.pad_lo)
            self.put(*d.pad_hi, *d.pad_mid)
        self.put(len(code.colls))
        for c in code.colls:
            self.put(c.laneset, c.unit)
        self.put(len(code.lanesets))
        for ls in code.lanesets:
            self.put(ls.result, len(ls.code) // opcodes.WIDTH, *ls.code)
        self.put(len(code.prints))
        for p in code.prints:
            kinds = [0 if kind == "str" else 1 for kind, _ in p.pieces]
            values = [self.string(str(code.consts[x][1])) if kind == "str" else x
                      for kind, x in p.pieces]
            self.put(len(p.pieces), *kinds, *values, int(p.newline))
        self.put(len(code.launches))
        for ln in code.launches:
            self.put(ln.kernel, int(ln.is_async), ln.span, ln.block)
            self.counted(ln.grid)
            self.counted(x for pair in ln.buffers for x in pair)
            self.counted(x for pair in ln.scalars for x in pair)
        self.put(code.once_sites)
        view = _ConstView(code, regs)
        for words in [code.code] + [ls.code for ls in code.lanesets]:
            for pc in range(0, len(words), opcodes.WIDTH):
                if words[pc] == opcodes.CONST:
                    self.put(*self._const(view, tuple(words[pc:pc + opcodes.WIDTH])))

    def _const(self, view, ins) -> tuple[int, int]:
        """(bits, 0) of a CONST's value in its register's storage type, or (fault id, 1)
        when the constant does not fit (the fault happens if the instruction runs)."""
        try:
            _, value, fault = prepare_const(view, ins)
        except LaneFault as f:   # prepare_const reports most misfits itself
            value, fault = None, f
        if fault is not None:
            self.const_faults.append(fault.message)
            return len(self.const_faults) - 1, 1
        raw = np.asarray(value).tobytes()
        return int.from_bytes(raw.ljust(8, b"\0"), "little", signed=True), 0

    def finish(self) -> tuple[list[int], bytes]:
        """The words with their header (strings, promotions) in front, and the strings."""
        encoded = [s.encode("utf-8") for s in self.strings]
        offsets, at = [], 0
        for b in encoded:
            offsets += [at, len(b)]
            at += len(b)
        c_id = {code: getattr(self.lib, "CQ_" + dt.name.upper())
                for code, dt in dtypes.BY_CODE.items()}
        order = sorted(dtypes.BY_CODE.values(), key=lambda d: c_id[d.code])
        promote = [c_id[dtypes.promote(a, b).code] for a in order for b in order]
        return [MAGIC, len(encoded), *offsets, *promote] + self.words, b"".join(encoded)


class _ConstView:
    """What ``prepare_const`` reads from a program: its code and register types."""

    def __init__(self, code, rtypes):
        self.code, self.rtypes = code, rtypes


def flatten(lib, fn) -> tuple[Image, list[int], bytes]:
    """The image of function ``fn`` (of a verified module): (image, words, strings)."""
    img = Image(lib, fn)
    img.put(fn.span, RET[fn.ret_kind])
    img.code(fn.host)
    img.put(len(fn.kernels))
    for k in fn.kernels:
        img.put(k.block_size, k.grid_rank, k.span)
        img.code(k.code)
    words, strings = img.finish()
    return img, words, strings
