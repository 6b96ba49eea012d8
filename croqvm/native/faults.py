"""Runtime errors of the native engine: the C fault record (native/cq_api.h ``cq_record``)
read back as the ``croqvm.core.faults.FaultRecord`` every engine reports, which
``croqvm.reports.render`` words from the catalogue of ``croqvm.reports.messages``. C never
writes text.

C writes a kind's arguments (``messages.TEMPLATES[kind].args``) one after another into
the record's words, each argument type in a fixed way (``READERS`` reads them back):

  int, unit, where, slot, future, event, frag, access, dma, coll, loadsite, string,
  register   one word
  float      the double's bits            dtype     a dtype code
  tuple, shape, fragshape, dims, list     a count, then that many words
  lanes      nothing: the record's lane set
  value      a dtype code, then the value's bits in its storage type
  buffer     code (-1 the host program, else the kernel), slot, element (-1 none)
  print      the print format, then the bits of each register value it shows
  typed      a tag (``TAGS``), then the tagged type's words
  text       an index into ``LABELS``

The kinds are croqvm.core.faults.Kind (CQ_FAULT_* in the generated native/cq_opcodes.h).
``c_header()`` writes native/cq_record.h, the C side of ``TAGS`` and ``LABELS`` (a test
keeps the committed header equal to it): ``python -m croqvm.native.faults >
native/cq_record.h``.
"""
from __future__ import annotations

import struct

import numpy as np

from ..bytecode.module import PieceKind
from ..core import dtypes
from ..core.faults import FaultRecord
from ..reports.messages import TEMPLATES, Kind

# the argument types a ``typed`` operand may have, by tag
TAGS = ("value", "buffer", "tuple", "shape")
# the words of ``text`` arguments: the operands of collectives (§7.4.5)
LABELS = ("value", "buffer", "origin", "extents", "source", "destination",
          "destination origin", "destination extents", "low padding", "high padding",
          "interior padding", "padding value", "barrier", "thread count")


class Words:
    """The words of one record, read front to back."""

    def __init__(self, f, lanes, fn, code):
        self.f, self.at, self.lanes, self.fn, self.code = f, 0, lanes, fn, code

    def next(self) -> int:
        """The next word; one marked unsigned holds a u64."""
        self.at += 1
        value = int(self.f.i[self.at - 1])
        return value & (2 ** 64 - 1) if self.f.unsigned_words >> (self.at - 1) & 1 else value

    def many(self) -> tuple:
        return tuple(self.next() for _ in range(self.next()))


def _value(r: Words, t) -> object:
    """A value of dtype ``t`` from its storage bits, as numpy holds it."""
    raw = struct.pack("<Q", r.next() & (2 ** 64 - 1))[:t.np.itemsize]
    return np.frombuffer(raw, t.np)[0]


def _typed(r: Words):
    tag = TAGS[r.next()]
    return tag, READERS[tag](r)


def _print(r: Words):
    p = r.next()
    regs = [x for kind, x in r.code.prints[p].pieces if kind == PieceKind.REG]
    return p, tuple(_value(r, dtypes.BY_CODE[r.code.regs[x]]) for x in regs)


def _one(r: Words) -> int:
    return r.next()


READERS = {
    "int": _one, "unit": _one, "where": _one, "slot": _one, "future": _one, "event": _one,
    "frag": _one, "access": _one, "dma": _one, "coll": _one, "loadsite": _one,
    "string": _one, "register": _one,
    "float": lambda r: struct.unpack("<d", struct.pack("<q", r.next()))[0],
    "dtype": _one,
    "tuple": Words.many, "shape": Words.many, "fragshape": Words.many, "dims": Words.many,
    "list": Words.many,
    "lanes": lambda r: tuple(r.lanes),
    "value": lambda r: (lambda t: (t.code, _value(r, t)))(dtypes.BY_CODE[r.next()]),
    "buffer": lambda r: (r.next(), r.next(), r.next()),
    "print": _print,
    "typed": _typed,
    "text": lambda r: LABELS[r.next()],
}


def record(f, fn) -> FaultRecord:
    """The FaultRecord of C fault ``f`` of a call of ``fn``."""
    kind = Kind(int(f.kind))
    lanes = [w * 32 + b for w in range(32) for b in range(32) if f.lanes[w] >> b & 1]
    launch = int(f.launch)
    code = fn.host if launch < 0 else fn.kernels[fn.host.launches[launch].kernel].code
    r = Words(f, lanes, fn, code)
    operands = tuple(READERS[t](r) for _, t in TEMPLATES[kind].args)
    block = () if launch < 0 else \
        tuple(int(f.block[d]) for d in range(len(fn.host.launches[launch].grid)))
    lane = int(f.lane) if f.lane >= 0 and launch >= 0 else None
    return FaultRecord(kind, operands, launch, block, lane, int(f.ip), int(f.span))


def _enum(name: str, prefix: str, items) -> list[str]:
    return [f"enum {name} {{"] + [f"    {prefix}{n} = {v}," for n, v in items] + ["};", ""]


def c_header() -> str:
    """native/cq_record.h: the operand tags and labels of fault records, for C."""
    label = [(s.upper().replace(" ", "_"), k) for k, s in enumerate(LABELS)]
    return "\n".join(
        ["/* Generated from croqvm/native/faults.py by 'python -m croqvm.native.faults': "
         "do not edit. */", "#ifndef CQ_RECORD_H", "#define CQ_RECORD_H", ""]
        + _enum("cq_tag", "CQ_TAG_", [(t.upper(), k) for k, t in enumerate(TAGS)])
        + _enum("cq_label", "CQ_LABEL_", label)
        + ["#endif", ""])


if __name__ == "__main__":
    print(c_header(), end="")
