"""Runtime errors of the native engine: a C fault record (native/cq_api.h ``cq_fault``)
worded as the reference engine words it, and rendered by the same renderer
(croqvm/interp/diagnose.py), so that both engines print identical diagnostics.

Conventions: ``f`` the fault record, ``fn`` the bytecode Function, ``code`` the Code the
fault happened in, ``names`` the image's string table, ``ctypes`` C type id -> DType.
One function per fault kind, in ``MESSAGES``.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..limits import TOO_MANY_THREADS
from ..interp.fmt import format_float, lanes_verb, shape_text, tuple_text
from ..interp.sync import UNIT_NAMES

# §7.4.5 operand labels, as the reference engine names them (index: the C label).
OPERAND_LABELS = ("value", "buffer", "origin", "extents", "source", "destination",
                  "destination origin", "destination extents", "padding", "extents")


class Context:
    """What a message needs: the function, the faulting Code, strings, type names."""

    def __init__(self, fn, f, text, names, ctypes, const_faults, call):
        self.fn, self.f, self.text, self.names, self.ctypes = fn, f, text, names, ctypes
        self.const_faults, self.call = const_faults, call
        self.code = fn.host if f.code < 0 else fn.kernels[f.code].code

    def i(self, k: int) -> int:
        return int(self.f.i[k])

    def ints(self, start: int, n: int) -> list[int]:
        return [int(self.f.i[start + k]) for k in range(n)]

    def name(self, k: int) -> str:
        return self.names[self.i(k)]

    def type(self, k: int):
        return self.ctypes[self.i(k)]

    def lanes(self) -> list[int]:
        return [w * 32 + b for w in range(32) for b in range(32) if self.f.lanes[w] >> b & 1]

    def site(self) -> str:
        return self.code.colls[self.i(0)].text


def _dims(values) -> str:
    return " x ".join(str(v) for v in values)


def _unsigned(value: int, t) -> int:
    """A register value from its int64 bits, as Python's int() of it reads it."""
    return value & ((1 << 64) - 1) if t.name == "u64" else value


def _alloc(c: Context) -> str:
    what = ("buffer '{}'", "the '{}' tile", "fragment '{}'")[c.i(0)].format(c.name(1))
    return f"can not allocate {what} of {_dims(c.ints(3, c.i(2)))} elements."


def _range(c: Context) -> str:
    acc = c.code.accesses[c.i(0)]
    idx = c.ints(5, c.i(4))
    return (f"out-of-range access {acc.text}.at({', '.join(map(str, idx))}): index "
            f"{idx[c.i(1)]} of dimension {c.i(1)} is not in [{c.i(2)}, {c.i(3)}).")


def _uninit(c: Context) -> str:
    text = c.code.accesses[c.i(0)].text if c.i(0) >= 0 else c.name(1)
    idx = ", ".join(map(str, c.ints(4, c.i(3))))
    return (f"read of uninitialised element {text}.at({idx}) (buffer declared at "
            f"{c.call.where(c.i(2))}).")


def _array_index(c: Context) -> str:
    decl = c.code.buffers[c.i(1)]
    a = c.i(0) & ((1 << 64) - 1) if c.i(3) else c.i(0)
    return f"index {a} is out of range for buffer array '{decl.name}' [0, {c.i(2)})."


def _unit(verb: tuple[str, str], tail: str):
    def message(c: Context) -> str:
        unit = c.i(1)
        return (f"{c.site()} needs all {unit} lanes of {UNIT_NAMES[unit]} {c.i(2)}, but "
                f"{lanes_verb(c.lanes(), *verb)} {tail}.")
    return message


def _divergent(c: Context) -> str:
    lanes = [x for x in c.lanes() if x < 32]
    idle = lanes_verb(lanes, "is", "are", f" of warp {c.i(2)}")
    return (f"'{c.site()}' is a collective of {c.i(1)} lanes but {idle} not active here "
            f"(divergent control flow).")


def _operand_text(c: Context, label: int, words: list[int]) -> str:
    name = OPERAND_LABELS[label]
    if name == "value":
        t = c.ctypes[words[0]]
        raw = np.array([words[1]], np.int64).view(np.uint8)[:t.np.itemsize]
        return str(raw.view(t.np)[0])
    if name in ("buffer", "source", "destination"):
        return f"'{c.names[words[0]]}'"
    if name == "padding":
        parts, at = [], 0
        for _ in range(3):
            n = words[at]
            parts.append(tuple(words[at + 1:at + 1 + n]))
            at += n + 1
        return str(tuple(parts))
    values = words[1:1 + words[0]]
    return shape_text(values) if label in (7, 9) else tuple_text(values)


def _operands(c: Context) -> str:
    label, n = c.i(2), c.i(3)
    a = _operand_text(c, label, c.ints(4, n))
    b = _operand_text(c, label, c.ints(4 + n, n))
    return (f"operands of collective '{c.site()}' differ between lane {c.i(1)} and lane "
            f"{c.f.lane} ({OPERAND_LABELS[label]} {a} vs {b}).")


def _tile(tail):
    def message(c: Context) -> str:
        nd = c.i(1)
        o, second = c.ints(2, nd), c.ints(2 + nd, nd)
        return f"tile of '{c.name(0)}' at origin {tuple_text(o)} {tail(second)}."
    return message


def _tile_shape(c: Context) -> str:
    desc = c.code.dmas[c.i(0)]
    shape, dst = c.ints(3, c.i(1)), c.ints(3 + c.i(1), c.i(2))
    hint = "" if desc.zfill else "; add '.zfill' to clear the rest"
    return (f"'{desc.text}' copies a {shape_text(shape)} tile into a {shape_text(dst)} "
            f"destination{hint}.")


def _mma_shapes(c: Context) -> str:
    x, y = c.ints(2, 2), c.ints(4, 2)
    return (f"MMA: matrix shapes do not match: `{c.name(0)}'({shape_text(x)}) v.s. "
            f"`{c.name(1)}'({shape_text(y)}).")


def _store_units(c: Context) -> str:
    decl = c.code.frags[c.i(0)]
    plural, level = {128: ("warpgroups", "group-4"), 32: ("warps", "group")}[decl.unit]
    return (f"mma.store of '{decl.name}' at block level would write the same destination "
            f"from {c.i(1)} {plural}; store inside the '{level}' level.")


MESSAGES = {
    "STEP_LIMIT": lambda c: f"exceeded the step limit of {c.i(0)} (use --max-steps)",
    "CONVERT": lambda c: f"value {format_float(float(c.f.f[0]))} out of range for "
                         f"'{c.type(0).name}'.",
    "DIV_ZERO": lambda c: "integer division by zero.",
    "SHIFT": lambda c: f"shift count {_unsigned(c.i(0), c.type(1))} out of range for "
                       f"'{c.type(2).name}'.",
    "CONST": lambda c: c.const_faults[c.i(0)],
    "ASSERT": lambda c: str(c.code.consts[c.i(0)][1]),
    "ASSERT_FMT": lambda c: c.text,
    "GRID": lambda c: f"the parallel bound of grid dimension {c.i(0)} is {c.i(1)}: it "
                      f"should be greater than 0.",
    "BLOCK_SIZE": lambda c: TOO_MANY_THREADS,
    "BLOCK_SIZE_LOW": lambda c: f"the block size of this launch is {c.i(0)}: it should be "
                                f"greater than 0.",
    "MDSPAN_SIZE": lambda c: f'The mdspan size "{c.i(0)}" is invalid!',
    "ALLOC": _alloc,
    "ARRAY_INDEX": _array_index,
    "BEFORE_DECL": lambda c: f"buffer '{c.code.buffers[c.i(0)].name}' is used before its "
                             f"declaration executed.",
    "NO_DATA": lambda c: f"future '{c.code.futures[c.i(0)].name}' has no data.",
    "NOT_WAITED": lambda c: f"future '{c.code.futures[c.i(0)].name}' is not waited before "
                            f"using.",
    "RANGE": _range,
    "UNINIT": _uninit,
    "EVENT_INDEX": lambda c: f"index {c.i(0)} is out of range for event array "
                             f"'{c.code.events[c.i(1)].name}' [0, {c.code.events[c.i(1)].slots}).",
    "NOT_PARTICIPANT": lambda c: f"lane {c.f.lane} reaches '{c.site()}' but is not one of its "
                                 f"participants.",
    "UNIT_TERMINATED": _unit(("has", "have"), "terminated"),
    "UNIT_INACTIVE": _unit(("is", "are"), "not active here"),
    "DIVERGENT": _divergent,
    "OPERANDS": _operands,
    "EMPTY_TILE": _tile(lambda e: f"has no elements (extents {shape_text(e)})"),
    "TILE_OUTSIDE": _tile(lambda shape: f"lies outside {shape_text(shape)}"),
    "TILE_SHAPE": _tile_shape,
    "UNWAITED": lambda c: f"async copy issued at {c.call.where(c.i(1))} into "
                          f"'{c.code.futures[c.i(0)].name}' was never waited.",
    "WAITED_TWICE": lambda c: f"future '{c.code.futures[c.i(0)].name}' has been waited "
                              f"multiple times.",
    "MMA_OUTSIDE": lambda c: f"{c.site()} reads element {tuple_text(c.ints(3, c.i(2)))} "
                             f"outside '{c.name(1)}'.",
    "FRAG_EMPTY": lambda c: f"fragment '{c.code.frags[c.i(0)].name}' is used before it holds "
                            f"a tile.",
    "MMA_SHAPES": _mma_shapes,
    "MMA_STORE_UNITS": _store_units,
}


def kind_names(lib) -> dict[int, str]:
    """C fault kind -> its name in MESSAGES (every kind but NONE and DEADLOCK has one)."""
    return {getattr(lib, "CQ_F_" + name): name for name in MESSAGES}


def message(lib, c: Context) -> str:
    return MESSAGES[kind_names(lib)[int(c.f.kind)]](c)


def ctype_table(lib) -> dict:
    """C type id -> DType."""
    return {getattr(lib, "CQ_" + d.name.upper()): d for d in dtypes.BY_CODE.values()}
