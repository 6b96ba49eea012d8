"""Names, expressions and values of a stopped run (croqvm.debug).

An expression is parsed by the language's own expression parser (croqvm.lang) and
evaluated for every lane of the focused warp at once with the language's arithmetic
(croqvm.core.numerics: the types of §12.2, wrapping integers, truncating division), so a
breakpoint condition is a per-lane mask and ``p x`` shows every lane.

Names resolve in the focused warp's program first, then in the host program (whose
variables every kernel sees as arguments): a register named by a declaration, a buffer
slot by its name. A register is a variable of the frame of one ``call`` (or of the
function's own body: croqvm.debug.frames.Registers), and a name means one of the frames
the warp's instruction lies in: the innermost that has it, and there, where several
registers share the name (scopes, shadowing), the one whose first write comes last at or
before the warp's position.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bytecode.module import Storage
from ..bytecode.opcodes import TABLE, WIDTH
from ..core import dtypes
from ..core.diagnostics import DiagnosticSink
from ..core.faults import Fault, LaneFault
from ..core.numerics import binary, format_float, unary
from ..lang import ast
from ..lang.parse_base import SyntaxAbort, TooDeep
from ..lang.parser import Parser
from ..lang.scanner import LineMap, scan
from ..lang.tokens import EOF


class DebugError(Exception):
    """A command that can not be done (a bad name, an expression that does not parse, a
    focus out of range): its one-line message."""


_BINARY = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "%": "MOD", "&": "AND",
           "|": "OR", "^": "XOR", "<<": "SHL", ">>": "SHR", "==": "EQ", "!=": "NE",
           "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
_UNARY = {"-": "NEG", "!": "NOT", "~": "BNOT"}


def parse(text: str) -> ast.Expr:
    """The expression ``text``, or DebugError with the parser's first complaint."""
    sink = DiagnosticSink()
    toks = [t for t, _ in scan(text, 0, LineMap(text, "<expr>"), sink)]
    parser = Parser(toks, sink)
    try:
        e = parser.expr()
        if parser.tok.kind != EOF:
            raise DebugError(f"'{text}': unexpected '{parser.tok.value}' after the "
                             f"expression")
    except (SyntaxAbort, TooDeep):
        e = None
    errors = [d for d in sink.items if d.severity == "error"]
    if errors or e is None:
        raise DebugError(f"'{text}' does not parse: " +
                         (errors[0].message if errors else "not an expression"))
    return e


@dataclass
class Lanes:
    """A value per lane of a warp: ``values`` (the warp's width), its dtype, the active
    mask of the warp it was read in."""
    values: np.ndarray
    dtype: object
    active: np.ndarray


@dataclass
class Tile:
    """Elements of a buffer: a whole buffer, or a chunk of it (``origin`` its corner)."""
    name: str
    storage: str
    dtype: object
    data: np.ndarray
    origin: tuple = ()


class Scope:
    """What names mean in warp ``w`` (standing at instruction ``ip``) of ``blk``, with
    ``host`` the call's host block (None when ``blk`` is it); ``registers(code)``: its
    ``Registers`` (croqvm.debug.frames), kept by the session."""

    def __init__(self, blk, w, ip: int, host, registers):
        self.blk, self.w, self.ip, self.host = blk, w, ip, host
        self.registers = registers

    def register(self, name: str, blk, ip: int):
        found = self.registers(blk.prog.code).names(ip).get(name)
        return found[0] if found else None

    def buffer(self, name: str, blk):
        for slot, decl in enumerate(blk.prog.code.buffers):
            if decl.name == name:
                return slot
        return None

    def lookup(self, name: str, lane: int):
        """``name`` as Lanes (a register) or Tile (a buffer; local buffers: that of
        ``lane``, an index in the warp), or DebugError."""
        places = [(self.blk, self.w, self.ip)]
        if self.host is not None:
            places.append((self.host, self.host.warps[0], len(self.host.prog.ins)))
        for blk, w, ip in places:
            r = self.register(name, blk, ip)
            if r is not None:
                t = blk.prog.rtypes[r]
                if w is self.w:
                    return Lanes(w.regs[r].copy(), t, w.act.copy())
                return Lanes(np.full(self.w.width, w.regs[r][0], t.np), t,
                             self.w.act.copy())
            slot = self.buffer(name, blk)
            if slot is not None:
                return self.tile(blk, slot, self.w.base + lane if blk is self.blk else 0)
        raise DebugError(f"no variable '{name}' here")

    def tile(self, blk, slot: int, lane: int, instance: int = 0) -> Tile:
        """Buffer ``slot`` as ``lane`` sees it; ``instance``: which of a buffer array."""
        decl = blk.prog.code.buffers[slot]
        insts = blk.instances(slot, lane)
        if insts is None:
            raise DebugError(f"'{decl.name}' is not allocated yet")
        name = decl.name if not decl.array else \
            decl.name + "".join(f"[{i}]" for i in np.unravel_index(instance, decl.array))
        return Tile(name, Storage(decl.storage).name.lower(), dtypes.BY_CODE[decl.dtype],
                    insts[instance].data)

    def buffer_array(self, name: str, lane: int):
        """(block, slot, lane seen) of ``name`` when it is a buffer array, else None."""
        for blk in [self.blk] + ([self.host] if self.host is not None else []):
            if self.register(name, blk, self.ip if blk is self.blk else
                             len(blk.prog.ins)) is not None:
                return None
            slot = self.buffer(name, blk)
            if slot is not None:
                decl = blk.prog.code.buffers[slot]
                return (blk, slot, self.w.base + lane if blk is self.blk else 0) \
                    if decl.array else None
        return None

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, e, lane: int):
        """``e`` for every lane of the warp: Lanes, or a Tile for a buffer or chunk."""
        if isinstance(e, ast.IntLit):
            t = dtypes.BY_NAME[e.dtype]
            return Lanes(np.full(self.w.width, e.value, t.np), t, self.w.act.copy())
        if isinstance(e, ast.FloatLit):
            t = dtypes.BY_NAME[e.dtype]
            return Lanes(np.full(self.w.width, e.value, t.np), t, self.w.act.copy())
        if isinstance(e, ast.BoolLit):
            return Lanes(np.full(self.w.width, e.value, bool), dtypes.BOOL, self.w.act.copy())
        if isinstance(e, ast.Name):
            return self.lookup(e.id, lane)
        if isinstance(e, ast.Extent):
            return self.lookup("#" + e.name.id, lane)
        if isinstance(e, ast.Binary) and e.op in ("&&", "||"):
            a, b = self._truth(e.lhs, lane), self._truth(e.rhs, lane)
            v = (a & b) if e.op == "&&" else (a | b)
            return Lanes(v, dtypes.BOOL, self.w.act.copy())
        if isinstance(e, ast.Binary) and e.op in _BINARY:
            a, b = self._scalar(e.lhs, lane), self._scalar(e.rhs, lane)
            v, t = self._arith(lambda: binary(_BINARY[e.op], a.values, b.values, a.dtype,
                                                b.dtype, a.active))
            return Lanes(v, t, a.active)
        if isinstance(e, ast.Unary) and e.op in _UNARY:
            a = self._scalar(e.operand, lane)
            v, t = self._arith(lambda: unary(_UNARY[e.op], a.values, a.dtype, a.active))
            return Lanes(v, t, a.active)
        if isinstance(e, ast.Ternary):
            c = self._truth(e.cond, lane)
            a, b = self._scalar(e.then, lane), self._scalar(e.other, lane)
            return Lanes(np.where(c, a.values, b.values), a.dtype, a.active)
        if isinstance(e, ast.ElemAccess):
            return self._element(e, lane)
        if isinstance(e, ast.Index):
            return self._subscript(e, lane)
        if isinstance(e, ast.ChunkAt):
            return self._chunk(e, lane)
        if isinstance(e, ast.DataOf) and isinstance(e.base, ast.Name):
            return self._future_data(e.base.id, lane)
        raise DebugError("the debugger evaluates names, literals, operators, ?:, .at, "
                         "[i], .chunkat and a future's .data; not this expression")

    def _arith(self, fn):
        try:
            with np.errstate(all="ignore"):
                return fn()
        except (Fault, LaneFault):
            raise DebugError("division by zero") from None

    def _scalar(self, e, lane: int) -> Lanes:
        v = self.evaluate(e, lane)
        if isinstance(v, Tile):
            raise DebugError(f"'{v.name}' is a buffer; name an element with .at(...)")
        return v

    def _truth(self, e, lane: int) -> np.ndarray:
        return self._scalar(e, lane).values != 0

    def _base(self, e, lane: int) -> Tile:
        v = self.evaluate(e, lane)
        if not isinstance(v, Tile):
            raise DebugError("only a buffer has elements")
        return v

    def _element(self, e, lane: int) -> Lanes:
        base = self._base(e.base, lane)
        idx = [self._scalar(i, lane).values.astype(np.int64) for i in e.indices]
        if len(idx) != base.data.ndim:
            raise DebugError(f"'{base.name}' has {base.data.ndim} dimension(s), "
                             f"not {len(idx)}")
        out = np.zeros(self.w.width, base.dtype.np)
        for i in range(self.w.width):
            at = tuple(int(k[i]) for k in idx)      # a view's indices are its own (§8)
            if all(0 <= a < n for a, n in zip(at, base.data.shape)):
                out[i] = base.data[at]
            elif i == lane:
                shown = ", ".join(str(int(k[i])) for k in idx)
                raise DebugError(f"{base.name}.at({shown}) is out of bounds "
                                 f"(extents {list(base.data.shape)})")
        return Lanes(out, base.dtype, self.w.act.copy())

    def _subscript(self, e, lane: int):
        """``NAME[i]...``: the subscripts of a buffer array pick one of its buffers (the
        language's ``buf[i]``, §8.5); one subscript more, or one on a single buffer, is
        co-mock's: element ``i`` of the buffer counted in row-major order."""
        subs = []
        while isinstance(e, ast.Index):
            subs.insert(0, e.index)
            e = e.base
        array = self.buffer_array(e.id, lane) if isinstance(e, ast.Name) else None
        if array is not None:
            blk, slot, seen = array
            extents = blk.prog.code.buffers[slot].array
            picked = [int(self._scalar(i, lane).values[lane]) for i in subs[:len(extents)]]
            for p, n in zip(picked, extents):
                if not 0 <= p < n:
                    raise DebugError(f"index {p} is out of range for buffer array "
                                     f"'{e.id}' [0, {n})")
            picked += [0] * (len(extents) - len(picked))      # as the language's (§8.5)
            base = self.tile(blk, slot, seen, int(np.ravel_multi_index(picked, extents)))
            subs = subs[len(extents):]
        else:
            base = self._base(e, lane)
        if not subs:
            return base
        if len(subs) > 1:
            raise DebugError(f"'{base.name}' takes one subscript, its element in row-major "
                             f"order; name an element with .at(i, ...)")
        flat = self._scalar(subs[0], lane).values.astype(np.int64)
        out = np.zeros(self.w.width, base.dtype.np)
        for i in range(self.w.width):
            if 0 <= flat[i] < base.data.size:
                out[i] = base.data.flat[flat[i]]
            elif i == lane:
                raise DebugError(f"{base.name}[{int(flat[i])}] is out of bounds "
                                 f"(extents {list(base.data.shape)})")
        return Lanes(out, base.dtype, self.w.act.copy())

    def _future_data(self, name: str, lane: int) -> Tile:
        """``f.data``: the view of the buffer future ``f`` holds in ``lane``."""
        code = self.blk.prog.code
        slot = next((k for k, f in enumerate(code.futures) if f.name == name), None)
        if slot is None:
            raise DebugError(f"no future '{name}' here")
        h = self.blk.futures[slot][self.w.base + lane]
        if h is None or h.buf is None:
            raise DebugError(f"future '{name}' holds no data")
        decl = code.futures[slot]
        box = tuple(slice(o, o + n) for o, n in zip(h.origin, h.extents))
        return Tile(f"{name}.data", Storage(decl.storage).name.lower(),
                    dtypes.BY_CODE[decl.dtype], h.buf.data[box], tuple(h.origin))

    def _chunk(self, e, lane: int) -> Tile:
        base = self._base(e.base, lane)
        if len(e.args) != base.data.ndim:
            raise DebugError(f"'{base.name}' has {base.data.ndim} dimension(s), "
                             f"not {len(e.args)}")
        i = lane
        box, origin = [], []
        for arg, n in zip(e.args, base.data.shape):
            if isinstance(arg, ast.Wildcard):
                box.append(slice(0, n))
                origin.append(0)
                continue
            if not isinstance(arg, ast.Name):
                raise DebugError(".chunkat takes bounded variables (or _) here")
            parts = int(self._scalar(ast.Extent(arg, arg.span), lane).values[i])
            k = int(self._scalar(arg, lane).values[i])
            size = -(-n // parts)
            box.append(slice(k * size, min(n, (k + 1) * size)))
            origin.append(k * size)
        return Tile(f"{base.name}.chunkat(...)", base.storage, base.dtype,
                    base.data[tuple(box)], tuple(origin))


# --------------------------------------------------------------------------- text

def scalar_text(v, dtype) -> str:
    """One value as print writes it (§13.2)."""
    if dtype.kind == "bool":
        return "true" if v else "false"
    if dtype.is_float:
        return format_float(float(v))
    return str(int(v))


def table(tile: Tile, limit: int = 64) -> str:
    """The elements as an aligned table, numpy's elision beyond ``limit`` elements."""
    cells = np.vectorize(lambda v: scalar_text(v, tile.dtype), otypes=[object])(tile.data) \
        if tile.data.size else np.zeros(tile.data.shape, object)
    width = max((len(c) for c in cells.flat), default=1)
    padded = np.vectorize(lambda c: c.rjust(width), otypes=[object])(cells) \
        if tile.data.size else cells
    return np.array2string(padded, threshold=limit, edgeitems=3, max_line_width=100,
                           separator=" ", formatter={"all": str})


def lanes_text(name: str, v: Lanes, per_row: int = 8) -> list[str]:
    """Every lane's value, eight lanes a line; inactive lanes in parentheses."""
    cells = [scalar_text(x, v.dtype) for x in v.values]
    cells = [c if a else f"({c})" for c, a in zip(cells, v.active)]
    width = max(len(c) for c in cells)
    lines = [f"{name} ="]
    for start in range(0, len(cells), per_row):
        row = " ".join(c.rjust(width) for c in cells[start:start + per_row])
        end = min(start + per_row, len(cells)) - 1
        lines.append(f"  lanes {start:2}-{end:2}: {row}")
    if not v.active.all():
        lines.append("  (v): lane not active")
    return lines
