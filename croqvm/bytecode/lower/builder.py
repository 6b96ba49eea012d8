"""Emitting one ``Code``: registers, constants, instructions, structured control, spans.

Everything a lowering step writes goes through ``CodeBuilder`` so that arity is checked
against the opcode table (the one source of truth, STYLE.md house rule 1) and structured
openers always get their ELSE/END targets patched (ARCHITECTURE.md "Structured control
flow only").

Constants are typed (``module.Const``): ``const`` turns a value of the front end into one
its dtype holds -- integers wrapped into range, floats rounded once (§12.3) -- so a CONST
never converts. Strings go to ``Code.strings`` (``string``).

Each distinct (dtype, value) a Code uses lives in one register, loaded once by
a CONST in a prologue at instruction 0 (``finish``), where every lane is still active. A
CONST at the first use would leave the register zero in the lanes a divergent IF set
aside (docs/EXECUTION.md §4), and a later use in another branch would read that zero.
Constant registers are read-only: emitting an instruction that writes one is a bug.
"""
from __future__ import annotations

from contextlib import contextmanager

from croqvm.bytecode import opcodes
from croqvm.bytecode.module import Code, Const
from croqvm.core import dtypes, numerics
from croqvm.core.source import SourceFile, Span

from .hoist import hoist_invariants

W = opcodes.WIDTH
# Operand positions holding instruction indices, moved when the prologue is inserted.
TARGETS = {op.code: [i for i, kind in enumerate(op.operands) if kind == "t"]
           for op in opcodes.TABLE}


class SpanTable:
    """Interns spans as ``Module.spans`` rows ``(file index, line, col, end_line, end_col)``.
    Inside ``calling`` a span is interned as a place inside that call: a row of its own,
    paired with the call's span in ``calls`` (``Module.calls``)."""

    def __init__(self, sources: list[SourceFile]):
        self.sources: list[tuple[str, str]] = [(s.name, s.text) for s in sources]
        self._file_index = {name: i for i, (name, _) in enumerate(self.sources)}
        self.rows: list[tuple[int, int, int, int, int]] = []
        self._index: dict = {}          # span, or (span, call) -> row
        self.calls: list[tuple[int, int]] = []
        self._call = -1         # the span index of the call being inlined, -1 outside

    @contextmanager
    def calling(self, call: Span):
        """Spans interned meanwhile lie inside the call at ``call`` (§6.10)."""
        saved = self._call
        self._call = self.intern(call)
        try:
            yield
        finally:
            self._call = saved

    def intern(self, span: Span | None) -> int:
        if span is None:
            return self.intern(Span.point(self.sources[0][0] if self.sources else "<none>", 1, 1))
        # Keyed by the span itself (equal spans are equal ints): its fields are read once.
        key = span if self._call < 0 else (span, self._call)
        idx = self._index.get(key)
        if idx is not None:
            return idx
        fi = self._file_index.get(span.file)
        if fi is None:  # a name set by #line: keep it so messages can still name the file
            fi = len(self.sources)
            self.sources.append((span.file, ""))
            self._file_index[span.file] = fi
        idx = self._index[key] = len(self.rows)
        line, end_line = span.line, span.end_line
        # most spans lie on one line: the row holds that int once (the rows are a large
        # program's second largest part of its module)
        self.rows.append((fi, line, span.col, line if end_line == line else end_line,
                          span.end_col))
        if self._call >= 0:
            self.calls.append((idx, self._call))
        return idx


class CodeBuilder:
    """Appends instructions to ``insns`` (by default ``code.code``); registers and constants
    always go to ``code``, so a laneset's straight-line code can share the kernel's tables."""

    def __init__(self, code: Code, spans: SpanTable, insns: list[int] | None = None):
        self.code = code
        self.spans = spans
        self.insns = code.code if insns is None else insns
        # The span every emitted instruction carries: that of the statement being lowered,
        # where runtime errors are reported (LANGUAGE.md §15.3).
        self.span: Span | None = None
        self._consts: dict[tuple, int] = {}
        for i, k in enumerate(code.consts):
            self._consts.setdefault(_const_key(k), i)
        self._strings = {text: i for i, text in reversed(list(enumerate(code.strings)))}
        self._reset_registers()

    def _reset_registers(self) -> None:
        """Per instruction list: its constant registers and what it has written."""
        self._const_regs: dict[int, int] = {}   # constant index -> its register
        self._const_of: dict[int, int] = {}     # constant register -> constant index
        self.known: dict[int, int] = {}         # integer constant registers -> value
        self._writes: dict[int, int] = {}       # register -> instructions writing it
        self._last_write: int | None = None     # register the last instruction wrote
        self._finished = False

    def fork(self, insns: list[int]) -> "CodeBuilder":
        """A builder writing to ``insns`` that shares this one's tables (laneset code). Its
        code runs in a register file of its own, so it loads its own constants."""
        other = CodeBuilder.__new__(CodeBuilder)
        other.__dict__.update(self.__dict__)
        other.insns = insns
        other._reset_registers()
        return other

    # ---------------------------------------------------------------- tables
    def reg(self, dtype: dtypes.DType, name: str = "") -> int:
        self.code.regs.append(dtype.code)
        self.code.reg_names.append(name)
        return len(self.code.regs) - 1

    def reg_dtype(self, r: int) -> dtypes.DType:
        return dtypes.BY_CODE[self.code.regs[r]]

    def const(self, dtype: dtypes.DType, value) -> int:
        """The constant-pool index of ``value`` (a number of the front end) as a ``dtype``:
        its value in ``dtype`` (``numerics.value_of``), a bool as 0 or 1."""
        v = numerics.value_of(value, dtype)
        k = Const(dtype.code, int(v) if dtype.kind == "bool" else v)
        key = _const_key(k)
        idx = self._consts.get(key)
        if idx is None:
            idx = self._consts[key] = len(self.code.consts)
            self.code.consts.append(k)
        return idx

    def string(self, text: str) -> int:
        """The index of ``text`` in ``Code.strings``."""
        idx = self._strings.get(text)
        if idx is None:
            idx = self._strings[text] = len(self.code.strings)
            self.code.strings.append(text)
        return idx

    def add(self, table: str, entry) -> int:
        items = getattr(self.code, table)
        items.append(entry)
        return len(items) - 1

    # ---------------------------------------------------------------- instructions
    @property
    def pc(self) -> int:
        return len(self.insns) // W

    def emit(self, name: str, *operands: int) -> int:
        op = opcodes.BY_NAME[name]
        if len(operands) != len(op.operands):
            raise AssertionError(f"{name} takes {len(op.operands)} operands, got {len(operands)}")
        self._last_write = None
        if op.writes >= 0:
            dst = operands[op.writes]
            if dst in self._const_of:
                raise AssertionError(f"{name} writes r{dst}, a read-only constant register")
            self._writes[dst] = self._writes.get(dst, 0) + 1
            self._last_write = dst
        pc = self.pc
        words = [op.code, *operands] + [0] * (opcodes.MAX_OPERANDS - len(operands))
        words.append(self.spans.intern(self.span))
        self.insns.extend(int(w) for w in words)
        return pc

    def patch(self, pc: int, operand: int, value: int) -> None:
        self.insns[pc * W + 1 + operand] = value

    # ---------------------------------------------------------------- values
    def load_const(self, dtype: dtypes.DType, value, name: str = "") -> int:
        """A register holding ``value``: the read-only constant register of (dtype, value),
        loaded by the prologue; with a ``name``, a new variable set by a CONST here."""
        k = self.const(dtype, value)
        if name:
            r = self.reg(dtype, name)
            self.emit("CONST", r, k)
            return r
        r = self._const_regs.get(k)
        if r is None:
            if self._finished:
                raise AssertionError("a new constant after the prologue was inserted")
            r = self._const_regs[k] = self.reg(dtype)
            self._const_of[r] = k
            if dtype.is_int:
                self.known[r] = int(value)
        return r

    def variable(self, src: int, name: str, mutable: bool) -> int:
        """The register of a new variable ``name`` holding R[src] (same dtype).

        An immutable variable (§3.4, §6.2) whose value the previous instruction has just
        computed into a temporary (unnamed, written by that instruction only) takes the
        temporary over, renamed, instead of copying it: temporaries are written only where
        they are made and variables only through mutable names, so neither register is
        written again and a copy would always equal the original. Otherwise a MOV (also
        from a constant register, which stays read-only).
        """
        if (not mutable and src == self._last_write and self._writes[src] == 1
                and not self.code.reg_names[src]):
            self.code.reg_names[src] = name
            return src
        r = self.reg(self.reg_dtype(src), name)
        self.emit("MOV", r, src)
        return r

    def finish(self, span: Span | None) -> None:
        """Move loop-invariant instructions out of their loops (hoist.py), then insert the
        prologue: one CONST per constant register, at instruction 0 (see the module
        docstring), carrying ``span`` (the function's or kernel's)."""
        self._finished = True
        hoist_invariants(self.code, self.insns, self.known)
        n = len(self._const_regs)
        if not n:
            return
        for pc in range(0, len(self.insns), W):
            for i in TARGETS[self.insns[pc]]:
                self.insns[pc + 1 + i] += n
        pad = [0] * (opcodes.MAX_OPERANDS - 2)
        where = self.spans.intern(span)
        prologue = []
        for k, r in self._const_regs.items():          # in order of first use
            prologue += [opcodes.CONST, r, k, *pad, where]
        self.insns[:0] = prologue

    def op_dim(self, name: str, slot: int, k: int) -> int:
        """``DIMOF`` / ``FUT_DIM``: extent ``k`` of a buffer or future into a new s32 register."""
        r = self.reg(dtypes.S32)
        self.emit(name, r, slot, k)
        return r

    def convert(self, r: int, dtype: dtypes.DType) -> int:
        """``r`` as a register of ``dtype`` (CVT into a new register when it differs, §12.3)."""
        if self.code.regs[r] == dtype.code:
            return r
        out = self.reg(dtype)
        self.emit("CVT", out, r)
        return out

    def op(self, name: str, dtype: dtypes.DType, *srcs: int) -> int:
        out = self.reg(dtype)
        self.emit(name, out, *srcs)
        return out

    # ---------------------------------------------------------------- structure
    def open_if(self, cond: int) -> int:
        return self.emit("IF", cond, 0)

    def open_else(self, if_pc: int) -> int:
        pc = self.emit("ELSE", 0)
        self.patch(if_pc, 1, pc)
        return pc

    def close_if(self, if_pc: int, else_pc: int | None = None) -> int:
        end = self.emit("END", if_pc)
        if else_pc is None:
            self.patch(if_pc, 1, end)
        else:
            self.patch(else_pc, 0, end)
        return end

    def open_loop(self) -> int:
        return self.emit("LOOP", 0)

    def close_loop(self, loop_pc: int) -> int:
        end = self.emit("END", loop_pc)
        self.patch(loop_pc, 0, end)
        return end


def _const_key(k: Const) -> tuple:
    return (k.dtype, type(k.value).__name__, repr(k.value))
