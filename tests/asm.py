"""A tiny assembler for engine tests: bytecode listings in, ``Module`` out.

One instruction per line: ``OPNAME operand ...`` with operands written by kind
(``r3 k0 s1 b1 f0 e0 m2 a0 v1 d0 c0 p0 l0``) or as plain integers (immediates, ``-1``).
Targets of IF/ELSE/LOOP/END are filled in from the nesting and may be left out. ``#``
starts a comment. A trailing ``@sN`` gives the instruction span index N (made with
``Asm.span``), else the span is the listing line itself, so runtime errors quote the
listing. Register types are given as a string of dtype names, constants as (type, value)
pairs (the value as the type holds it: bools 0/1, floats as floats), strings as a list.
"""
from __future__ import annotations

import io
import re

from croqvm.core import dtypes
from croqvm.bytecode import module as M
from croqvm.bytecode.opcodes import BY_NAME
from croqvm.running.program import Program

import engines


class Asm:
    def __init__(self):
        self.sources: list[tuple[str, str]] = []
        self.spans: list[tuple[int, int, int, int, int]] = []

    def source(self, name: str, text: str) -> int:
        self.sources.append((name, text))
        return len(self.sources) - 1

    def span(self, file: int, line: int, col: int, end_col: int) -> int:
        self.spans.append((file, line, col, line, end_col))
        return len(self.spans) - 1

    def find(self, file: int, needle: str, nth: int = 0) -> int:
        """A span covering the ``nth`` occurrence of ``needle`` in source ``file``."""
        text = self.sources[file][1]
        pos = -1
        for _ in range(nth + 1):
            pos = text.index(needle, pos + 1)
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return self.span(file, line, col, col + len(needle))

    def flat(self, text: str, name: str = "code.asm") -> list[int]:
        file = self.source(name, text)
        rows, opens = [], []          # rows: [op, operands, span]; opens: [opener, else]
        for n, raw in enumerate(text.split("\n"), 1):
            line = raw.split("#")[0].rstrip()
            words = line.replace(",", " ").split()
            if not words:
                continue
            span = int(words.pop()[2:]) if words[-1].startswith("@s") else None
            op = BY_NAME[words[0]]
            if span is None:
                col = raw.index(words[0]) + 1
                span = self.span(file, n, col, len(line) + 1)
            ops = [int(re.sub(r"^[a-z]", "", w)) for w in words[1:]]
            ip = len(rows)
            if op.name == "IF":
                ops = ops[:1] + [0]
            elif op.name in ("LOOP", "ELSE", "END"):
                ops = [0]
            rows.append([op, ops, span])
            if op.name in ("IF", "LOOP"):
                opens.append([ip, None])
            elif op.name == "ELSE":
                rows[opens[-1][0]][1][1] = ip
                opens[-1][1] = ip
            elif op.name == "END":
                opener, els = opens.pop()
                ops[0] = opener
                if els is not None:
                    rows[els][1][0] = ip
                else:
                    rows[opener][1][-1] = ip
        out = []
        for op, ops, span in rows:
            out += [op.code] + ops + [0] * (5 - len(ops)) + [span]
        return out

    def code(self, text: str, *, regs: str = "", consts=(), strings=(), name="code.asm",
             **tables) -> M.Code:
        c = M.Code(code=self.flat(text, name))
        c.regs = [dtypes.BY_NAME[t].code for t in regs.split()]
        c.reg_names = [""] * len(c.regs)
        c.consts = [const(t, v) for t, v in consts]
        c.strings = list(strings)
        for key, value in tables.items():   # side tables, and once_sites (a count)
            setattr(c, key, value if isinstance(value, int) else list(value))
        return c

    def module(self, *functions: M.Function) -> M.Module:
        return M.Module(self.sources, self.spans, list(functions))


def function(name, host, kernels=(), params=(), dims=(), ret="void", ret_dtype=-1):
    """A function returning ``ret`` ("void", "buffer" or "scalar")."""
    return M.Function(name, list(params), list(dims), M.RetKind[ret.upper()], ret_dtype, host,
                      list(kernels))


def launch_host(asm: Asm, grid=(1,), bind=(), scalars=(), regs="", consts=(), pre="",
                post="", launch_span=None, block=None, **tables) -> M.Code:
    """A host program: ``pre``, then the launch of kernel 0 with grid extents from
    constants, then ``post``. The grid registers and constants come first, then, when
    ``block`` gives the block size at launch, its register and constant; ``bind`` maps
    kernel buffer slots to host ones, ``scalars`` kernel registers to host ones."""
    sizes = list(grid) + ([] if block is None else [block])
    lines = [f"CONST r{d} k{d}" for d in range(len(sizes))]
    text = "\n".join(lines + [pre, "LAUNCH l0", post, "RET"])
    consts = [("s32", x) for x in sizes] + list(consts)
    regs = " ".join(["s32"] * len(sizes)) + " " + regs
    g = len(grid)
    launch = M.Launch(0, list(range(g)), list(bind), list(scalars),
                      block=-1 if block is None else g)
    code = asm.code(text, regs=regs, consts=consts, name="host.asm", launches=[launch],
                    **tables)
    at = [i for i in range(0, len(code.code), 7) if code.code[i] == BY_NAME["LAUNCH"].code]
    launch.span = code.code[at[0] + 6] if launch_span is None else launch_span
    return code


def kernel_module(asm: Asm, kernel: M.Code, block_size: int, grid=(1,), name="f",
                  params=(), at_launch=False, **host) -> M.Module:
    """A module with one function ``name`` launching ``kernel`` once with blocks of
    ``block_size`` lanes, which with ``at_launch`` the launch gives (the kernel's own
    size is then 0)."""
    k = M.Kernel("k", kernel, 0 if at_launch else block_size, len(grid))
    host = launch_host(asm, grid, block=block_size if at_launch else None, **host)
    return asm.module(function(name, host, [k], params))


def run(module, name="f", args=(), **options):
    """Run on the test's engine (tests/engines.py); return (result, printed text)."""
    out = io.StringIO()
    result = engines.run(Program(module), name, *args, out=out, **options)
    return result, out.getvalue()


def const(dtype: str, value) -> M.Const:
    """A constant of dtype ``dtype`` (a name) as the model stores it: bools as 0/1."""
    t = dtypes.BY_NAME[dtype]
    return M.Const(t.code, int(value) if not t.is_float else float(value))


def P(spec: str, newline: bool = True) -> M.PrintFormat:
    """A print format from ``"s2 r0 s3 r1"``: strings and registers."""
    kinds = {"s": M.PieceKind.STR, "r": M.PieceKind.REG}
    return M.PrintFormat([(kinds[w[0]], int(w[1:])) for w in spec.split()], newline)


ALL = M.LaneSet()   # the lane set of every lane of the block
