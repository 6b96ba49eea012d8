"""The disassembler: bytecode as records, then as text (STYLE.md §3, after CPython's ``dis``).

``instructions(code)`` decodes a Code into ``Instruction`` records; ``disassemble(module)``
formats every function: its signature, then its host program and kernels, each with its
declarations (one line per side-table entry) and its instructions in columns::

    ; scale.co:10  if (i < N) v = tile.at(t) * k; else v = 0;
        scale.co:10:7    9  LT            r6, r5, r0
        scale.co:10:7   10  IF            r6, -> 13
    --> scale.co:10:18  11    LOAD        r7, acc0 'tile.at(t)'

a ``; file:line text`` row where the source line changes, then per instruction: ``-->``
when it is the one ``marker`` names, source position, index, opname indented by
structured depth, operands. Operands are rendered by their kind from ``opcodes.TABLE``
through the ``_OPERANDS`` dict -- no per-opcode branches; only immediates that encode a
choice (UPDATE's operator, MMA layouts, MATH's function, ATOMIC's operation) have a
table of names.

The disassembler never raises on a module the verifier would reject: an index out of range
prints as ``buf9 <out of range>``, so lowering bugs can be looked at.
"""
from __future__ import annotations

from dataclasses import dataclass

from croqvm.core.dtypes import BY_CODE
from croqvm.core.intrinsics import ATOMIC, MATH

from . import opcodes as O
from .module import DYNAMIC, BaseKind, Code, DmaOp, Function, Module, ParamKind, PieceKind, RetKind

MMA_LAYOUTS = ("row.row", "row.col", "col.row", "col.col")
_PER_LINE = 8     # registers and constants listed per line


@dataclass(frozen=True)
class Instruction:
    index: int                  # position in its Code (what stored targets name)
    opcode: int
    opname: str
    operands: tuple[int, ...]   # the raw words of the op's operands, in kind order
    argreprs: tuple[str, ...]   # each operand resolved for people: "buf1 'lhs'", "-> 17"
    span: int                   # index into Module.spans
    depth: int                  # structured nesting depth: IF/LOOP bodies are one deeper


def instructions(code: Code) -> list[Instruction]:
    """The instructions of ``code`` as records."""
    return _decode(code.code, code)


def _decode(words: list[int], tables: Code) -> list[Instruction]:
    out, depth = [], 0
    for i in range(len(words) // O.WIDTH):
        ins = words[i * O.WIDTH:(i + 1) * O.WIDTH]
        op = O.TABLE[ins[0]] if 0 <= ins[0] < len(O.TABLE) else None
        if op is None:
            out.append(Instruction(i, ins[0], f"<opcode {ins[0]}>", tuple(ins[1:-1]), (),
                                   ins[-1], depth))
            continue
        used = tuple(ins[1:1 + len(op.operands)])
        reprs = tuple(_render(tables, op, kind, value) for kind, value in zip(op.operands, used))
        shown = depth - 1 if (op.closes or op.name == "ELSE") else depth
        out.append(Instruction(i, op.code, op.name, used, reprs, ins[-1], max(shown, 0)))
        depth = max(depth + op.opens - op.closes, 0)
    return out


# -- operands by kind ---------------------------------------------------------------------

def _quote(text: str) -> str:
    return f" '{text}'" if text else ""


def _value(dtype: int, value) -> str:
    if dtype in BY_CODE and BY_CODE[dtype].kind == "bool":
        return "true" if value else "false"
    return repr(value)     # ints exact, floats round-trip


def _dt(code: int) -> str:
    return BY_CODE[code].name if code in BY_CODE else f"<dtype {code}>"


def _named(prefix, attr, field, paren=False):
    """Render ``prefix<n>`` followed by the entry's name or text, quoted or in parentheses."""
    def render(code: Code, n: int) -> str:
        table = getattr(code, attr)
        if not 0 <= n < len(table):
            return f"{prefix}{n} <out of range>"
        text = getattr(table[n], field) if field else ""
        if paren and text:
            return f"{prefix}{n} ({text})"
        return f"{prefix}{n}{_quote(text)}"
    return render


def _const(code: Code, n: int) -> str:
    if not 0 <= n < len(code.consts):
        return f"k{n} <out of range>"
    return f"k{n} (={_value(code.consts[n].dtype, code.consts[n].value)})"


def _string(code: Code, n: int) -> str:
    if not 0 <= n < len(code.strings):
        return f"s{n} <out of range>"
    return f"s{n} (={code.strings[n]!r})"


def _launch_operand(code: Code, n: int) -> str:
    if not 0 <= n < len(code.launches):
        return f"launch{n} <out of range>"
    return f"launch{n} (kernel {code.launches[n].kernel})"


_OPERANDS = {
    "r": lambda code, n: f"r{n}",
    "k": _const,
    "s": _string,
    "b": _named("buf", "buffers", "name"),
    "f": _named("fut", "futures", "name"),
    "e": _named("ev", "events", "name"),
    "m": _named("frag", "frags", "name"),
    "a": _named("acc", "accesses", "text"),
    "v": _named("view", "views", "text"),
    "d": _named("dma", "dmas", "text", paren=True),
    "c": _named("coll", "colls", "text", paren=True),
    "p": _named("fmt", "prints", None),
    "l": _launch_operand,
    "x": lambda code, n: (f"asm{n} ({code.asms[n].text!r})" if 0 <= n < len(code.asms)
                          else f"asm{n} <out of range>"),
    "y": lambda code, n: (f"cxx{n} (func {code.cxx_calls[n].func})"
                          if 0 <= n < len(code.cxx_calls) else f"cxx{n} <out of range>"),
    "z": lambda code, n: (f"extern{n}" if 0 <= n < len(code.extern_calls)
                          else f"extern{n} <out of range>"),
    "t": lambda code, n: f"-> {n}",
    "i": lambda code, n: str(n),
}

# Immediates that encode a choice, by opcode name.
_IMMEDIATE_NAMES = {
    "UPDATE": lambda n: O.TABLE[n].name if n in O.BINARY_ALU else str(n),
    "MMA_EXEC": lambda n: MMA_LAYOUTS[n] if 0 <= n < len(MMA_LAYOUTS) else str(n),
    "MATH": lambda n: MATH[n].name if 0 <= n < len(MATH) else str(n),
    "ATOMIC": lambda n: ATOMIC[n].name if 0 <= n < len(ATOMIC) else str(n),
}


def _render(code: Code, op: O.Op, kind: str, value: int) -> str:
    if kind.endswith("?") and value == -1:
        return "-"
    if kind == "i" and op.name in _IMMEDIATE_NAMES:
        return _IMMEDIATE_NAMES[op.name](value)
    return _OPERANDS[kind.rstrip("?")](code, value)


# -- the listing --------------------------------------------------------------------------

def disassemble(module: Module, marker: tuple[Code, int] | None = None) -> str:
    """Every function of ``module`` as text; ``marker=(code, index)`` puts ``-->`` there."""
    sections = []
    for fn in module.functions:
        out = function_header(module, fn)
        parts = [("host", fn.host)] + [
            (f"kernel {k} '{kern.name}': grid rank {kern.grid_rank}, block size "
             f"{_block_size(fn, k, kern)}  ({position(module, kern.span)})", kern.code)
            for k, kern in enumerate(fn.kernels)]
        for title, code in parts:
            out.append(f"  {title}")
            out += code_header(module, code)
            out += listing(module, instructions(code), marker[1] if marker and
                           marker[0] is code else None)
        sections.append("\n".join(out))
    return "\n\n".join(sections)


def _block_size(fn: Function, k: int, kern) -> str:
    """``32``, or for a size given at launch the host registers that hold it."""
    if kern.block_size != 0:
        return str(kern.block_size)
    regs = sorted({la.block for la in fn.host.launches if la.kernel == k})
    return f"{', '.join(_opt('r', r) for r in regs) or '-'} (at launch)"


def position(module: Module, span: int) -> str:
    """``file:line:col`` of a span index ("?" when there is no such span)."""
    if not 0 <= span < len(module.spans):
        return "?"
    f, line, col = module.spans[span][:3]
    name = module.sources[f][0] if 0 <= f < len(module.sources) else "?"
    return f"{name}:{line}:{col}"


def _source_line(module: Module, span: int):
    """(file index, line, text) of a span, or None."""
    if not 0 <= span < len(module.spans):
        return None
    f, line = module.spans[span][:2]
    if not 0 <= f < len(module.sources):
        return None
    lines = module.sources[f][1].split("\n")
    text = lines[line - 1].strip() if 1 <= line <= len(lines) else ""
    return f, line, text


def listing(module: Module, records: list[Instruction], marked: int | None = None,
            indent: str = "    ") -> list[str]:
    """Instruction rows in columns, with a source row where the line changes."""
    if not records:
        return [f"{indent}(no instructions)"]
    pos = [position(module, r.span) for r in records]
    pos_w = max(len(p) for p in pos)
    idx_w = len(str(records[-1].index))
    name_w = max(2 * r.depth + len(r.opname) for r in records) + 2
    out, last = [], None
    for r, p in zip(records, pos):
        src = _source_line(module, r.span)
        if src is not None and src[:2] != last:
            out.append(f"{indent}; {module.sources[src[0]][0]}:{src[1]}  {src[2]}")
            last = src[:2]
        mark = "-->" if r.index == marked else "   "
        name = ("  " * r.depth + r.opname).ljust(name_w)
        out.append(f"{indent}{mark} {p.ljust(pos_w)}  {str(r.index).rjust(idx_w)}  "
                   f"{name}{', '.join(r.argreprs)}".rstrip())
    return out


# -- declarations -------------------------------------------------------------------------

def function_header(module: Module, fn: Function) -> list[str]:
    ret = _name(fn.ret_kind)
    if fn.ret_kind != RetKind.VOID:
        ret += f" {_dt(fn.ret_dtype)}"
    out = [f"function '{fn.name}' -> {ret}  ({position(module, fn.span)})"]
    for p, param in enumerate(fn.params):
        if param.kind == ParamKind.BUFFER:
            shape = ", ".join(str(d) for d in param.shape)
            what, slot = f"{_name(param.storage)} {_dt(param.dtype)} [{shape}]", "buf"
        else:
            what, slot = _dt(param.dtype) if param.kind == ParamKind.SCALAR else "", "r"
        out.append(f"  param {p} '{param.name}': {_name(param.kind)} {what}".rstrip()
                   + (f" -> {slot}{param.slot}" if param.slot >= 0 else ""))
    for name, reg in fn.dims:
        out.append(f"  dim '{name}' -> r{reg}")
    return out


def code_header(module: Module, code: Code) -> list[str]:
    """The declarations of a host program or kernel, one line per entry."""
    out = []
    regs = [f"r{r} {_dt(d)}" + (f" '{code.reg_names[r]}'" if r < len(code.reg_names)
                                and code.reg_names[r] else "")
            for r, d in enumerate(code.regs)]
    consts = [f"k{k} {_dt(c.dtype)} {_value(c.dtype, c.value)}"
              for k, c in enumerate(code.consts)]
    strings = [f"s{n} {text!r}" for n, text in enumerate(code.strings)]
    out += _wrapped("regs", regs) + _wrapped("consts", consts) + _wrapped("strs", strings)
    for attr, fmt in _TABLES:
        for n, entry in enumerate(getattr(code, attr)):
            first, *rest = fmt(module, code, n, entry).split("\n")
            out += [f"    {first}", *rest]
    if code.once_sites:
        out.append(f"    once sites: {code.once_sites}")
    return out


def _wrapped(title: str, items: list[str]) -> list[str]:
    return [f"    {(title if i == 0 else '').ljust(6)}  "
            + ", ".join(items[i:i + _PER_LINE]) for i in range(0, len(items), _PER_LINE)]


def _regs(regs: list[int]) -> str:
    return "(" + ", ".join(f"r{r}" for r in regs) + ")"


def _opt(prefix: str, n: int) -> str:
    return "-" if n == -1 else f"{prefix}{n}"


def _unit(unit: int) -> str:
    return "the block" if unit == 0 else f"{unit} lane{'s' if unit != 1 else ''}"


def _name(member) -> str:
    """An enum value as listings write it: ``shared``, ``transp``."""
    return member.name.lower() if hasattr(member, "name") else f"<{member}>"


def _extent(d: int) -> str:
    return "?" if d == DYNAMIC else str(d)


def _buffer(module, code, n, b):
    shape = "[" + ", ".join(f"r{r}" for r in b.shape) + "]" if b.shape else "[-]"
    extra = (f" array {b.array}" if b.array else "") + (f" param {b.param}"
                                                         if b.param >= 0 else "")
    return f"buf{n}{_quote(b.name)}: {_name(b.storage)} {_dt(b.dtype)} {shape}{extra}"


def _future(module, code, n, f):
    shape = ", ".join(_extent(d) for d in f.shape)
    return (f"fut{n} '{f.name}': {'async ' if f.is_async else ''}{_name(f.storage)} "
            f"{_dt(f.dtype)} [{shape}]")


def _event(module, code, n, e):
    arrivals = (f"{e.count} arrivals" if e.count >= 0 else
                "arrivals: lanes of " + " | ".join(f"ls{i}" for i in e.lanesets))
    return (f"ev{n} '{e.name}': {e.slots} slot{'s' if e.slots != 1 else ''}, {arrivals}"
            + (" of every block of the cluster" if e.cluster else "")
            + (", ready" if e.ready else ""))


def _frag(module, code, n, f):
    return (f"frag{n} '{f.name}': {_name(f.role)} {_dt(f.dtype)} [{_extent(f.rows)}, "
            f"{_extent(f.cols)}], one per {_unit(f.unit)}")


def _base(kind: BaseKind, base: int, arr: int) -> str:
    return f"{_name(kind)}{base}" + (f"[r{arr}]" if arr != -1 else "")


def _access(module, code, n, a):
    return f"acc{n} '{a.text}': {_base(a.base_kind, a.base, a.arr)} at {_regs(a.indices)}"


def _view(module, code, n, v):
    return (f"view{n} '{v.text}': {_base(v.base_kind, v.base, v.arr)} origin "
            f"{_regs(v.origin)} extents {_regs(v.extents)}"
            + (f" swizzle {v.swizzle}" if v.swizzle else "")
            + (f" in {_regs(v.space)} from r{v.flat}" if v.space else "")
            + (f" strides {_regs(v.strides)} from r{v.flat}" if v.strides else "")
            + (f" shows {v.shown}" if v.shown else ""))


def _dma(module, code, n, d):
    parts = [f"dma{n}{_quote(d.text)}: {_name(d.op)} view{d.src} =>"]
    parts += [f"{name}{prefix}{value}" for name, prefix, value in (
        ("", "view", d.dst_view), ("own ", "buf", d.dst_buffer), ("future ", "fut", d.future))
        if value != -1]
    parts += [w for w, on in (("async", d.is_async), ("zfill", d.zfill), ("tma", d.tma))
              if on]
    if d.swizzle:
        parts.append(f"swizzle {d.swizzle}")
    if d.l2_hint:
        parts.append(_name(d.l2_hint))
    if d.multicast:
        parts.append("multicast")
    if d.perm:
        parts.append(f"perm {tuple(d.perm)}")
    if d.op == DmaOp.PAD:
        parts.append(f"pad lo {_regs(d.pad_lo)} hi {_regs(d.pad_hi)} mid {_regs(d.pad_mid)} "
                     f"value {_opt('r', d.pad_value)}")
    return " ".join(parts)


def _coll(module, code, n, c):
    return f"coll{n} '{c.text}': lanes of {_opt('ls', c.laneset)}, per {_unit(c.unit)}"


def _print(module, code, n, p):
    pieces = [_string(code, i) if kind == PieceKind.STR else f"r{i}" for kind, i in p.pieces]
    return f"fmt{n}: {', '.join(pieces)}" + (", newline" if p.newline else "")


def _launch(module, code, n, la):
    pairs = lambda items, pre: ", ".join(f"{pre}{a} <- {pre}{b}" for a, b in items) or "-"
    return (f"launch{n}: kernel {la.kernel}, grid {_regs(la.grid)}"
            + (f", cluster {_regs(la.cluster)}" if la.cluster else "") + ", buffers "
            f"{pairs(la.buffers, 'buf')}, scalars {pairs(la.scalars, 'r')}"
            + (f", block r{la.block}" if la.block != -1 else "")
            + (", async" if la.is_async else "") + f"  ({position(module, la.span)})")


def _laneset(module, code, n, ls):
    head = f"ls{n}: every lane" if ls.result == -1 else f"ls{n}: lanes with r{ls.result}"
    rows = listing(module, _decode(ls.code, code), indent="      ") if ls.code else []
    return "\n".join([head] + rows)


_TABLES = (
    ("buffers", _buffer), ("futures", _future), ("events", _event), ("frags", _frag),
    ("accesses", _access), ("views", _view), ("dmas", _dma), ("colls", _coll),
    ("lanesets", _laneset), ("prints", _print), ("launches", _launch),
)
