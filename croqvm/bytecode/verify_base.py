"""What every part of the verifier shares: places, index lookups, the context of the
Code being checked, and the facts the module states about its tables (ranks, element
types, storages, registers holding one known constant).

Conventions: ``cx`` the Code being checked (``CodeCtx``), ``at`` a ``Where`` (the place
messages name), ``op`` an ``opcodes.Op``, ``used`` the operand words the op uses.
"""
from __future__ import annotations

from dataclasses import field

from croqvm.core.dtypes import BY_CODE, DType
from croqvm.core.errors import BytecodeError
from croqvm.core.limits import MAX_BLOCK_SIZE
from croqvm.core.records import dataclass

from . import opcodes as O
from .module import DYNAMIC, BaseKind, Code, Function, Kernel, Module, Storage
from .verify_rules import CLASSES, in_class

MAX_GRID_RANK = 3

_PLURALS = {"target": "instructions", "access": "accesses", "launch": "launches"}


class Where:
    """A place in a module, named the way messages name it."""

    def __init__(self, text: str):
        self.text = text

    def at(self, more: str) -> "Where":
        return Where(f"{self.text}, {more}")

    def fail(self, message: str):
        raise BytecodeError(f"malformed .cqb: {self.text}: {message}")


def lookup(at: Where, noun: str, n: int, table, *, optional: bool = False):
    """``table[n]`` (None for -1 when ``optional``), or the one index error wording."""
    if optional and n == -1:
        return None
    if not 0 <= n < len(table):
        plural = _PLURALS.get(noun, noun + "s")
        at.fail(f"{noun} index {n} out of range ({len(table)} {plural})")
    return table[n]


def label(noun: str, n: int, name: str) -> str:
    """How messages name a table entry: "buffer 3 ('sa')", or "buffer 3" if unnamed."""
    return f"{noun} {n} ('{name}')" if name else f"{noun} {n}"


@dataclass
class CodeCtx:
    """The Code being verified and what its checks need to know around it."""
    module: Module
    fn: Function
    code: Code
    kernel: Kernel | None      # None: the host program
    where: Where
    known: dict | None = field(default=None, repr=False)   # see known_registers
    launches: dict | None = field(default=None, repr=False)  # see kernel_launches

    @property
    def is_kernel(self) -> bool:
        return self.kernel is not None

    def beside(self, code: Code, kernel: Kernel | None, where: Where) -> "CodeCtx":
        """The context of another Code of the same function, sharing the index of its
        launches (a function may have thousands of kernels)."""
        launch_index(self)
        return CodeCtx(self.module, self.fn, code, kernel, where, launches=self.launches)


def launch_index(cx: CodeCtx) -> dict:
    """The host's launches by the kernel they launch (``id`` of the Kernel; launches of
    a kernel index out of range are left out), made once per function."""
    if cx.launches is None:
        cx.launches = {}
        kernels = cx.fn.kernels
        for launch in cx.fn.host.launches:
            if 0 <= launch.kernel < len(kernels):
                cx.launches.setdefault(id(kernels[launch.kernel]), []).append(launch)
    return cx.launches


def kernel_launches(cx: CodeCtx) -> list:
    """The host's launches of ``cx``'s kernel."""
    return launch_index(cx).get(id(cx.kernel), [])


def want_reg(cx: CodeCtx, at: Where, reg: int, rule: str, what: str,
             *, optional=False) -> DType | None:
    """Register ``reg`` exists and its dtype is in class ``rule``; returns the dtype."""
    if lookup(at, "register", reg, cx.code.regs, optional=optional) is None:
        return None
    dt = BY_CODE[cx.code.regs[reg]]
    if not in_class(rule, dt):
        at.fail(f"{what} r{reg} is {dt.name}, but must be {CLASSES[rule.rstrip('=')][0]}")
    return dt


def check_unit(at: Where, unit: int):
    """A unit of lanes: 0 (the block) or a lane count up to the block limit (§7.4, §11.2)."""
    if not 0 <= unit <= MAX_BLOCK_SIZE:
        at.fail(f"unit of {unit} lanes out of range (0 for the block, else 1..{MAX_BLOCK_SIZE})")


def element_dtype(cx: CodeCtx, kind: BaseKind, base: int) -> DType:
    """The element type of an access's or view's base (checked to exist): the buffer's,
    or the future's declared one (§9.4.4)."""
    table = cx.code.buffers if kind == BaseKind.BUF else cx.code.futures
    return BY_CODE[table[base].dtype]


def buffer_rank(cx: CodeCtx, b: int) -> int | None:
    """Rank of buffer slot ``b`` as the module states it, None if it does not: its shape
    registers; else the parameter it is bound to; else (a kernel's global slot) the host
    buffer the first launch binds to it. Indices are guarded: this runs before the tables
    it reads are checked, and the checks of launches then hold every other binding to the
    rank found here."""
    buf = cx.code.buffers[b]
    params = cx.fn.params
    if buf.shape:
        return len(buf.shape)
    if 0 <= buf.param < len(params) and params[buf.param].shape:
        return len(params[buf.param].shape)
    if cx.is_kernel:
        host = cx.beside(cx.fn.host, None, cx.where)
        for launch in kernel_launches(cx):
            for kslot, hslot in launch.buffers:
                if kslot == b and 0 <= hslot < len(host.code.buffers):
                    return buffer_rank(host, hslot)
    return None


def base_rank(cx: CodeCtx, kind: BaseKind, base: int) -> int | None:
    """Rank of an access's or view's base (checked to exist), None if not stated."""
    if kind == BaseKind.FUT:
        return len(cx.code.futures[base].shape)
    return buffer_rank(cx, base)


def base_storage(cx: CodeCtx, kind: BaseKind, base: int) -> Storage:
    """Where an access's or view's base (checked to exist) lives."""
    table = cx.code.buffers if kind == BaseKind.BUF else cx.code.futures
    return table[base].storage


def future_text(fut) -> str:
    """A future's declared type as messages write it: ``async shared f16 [16, ?]``."""
    shape = ", ".join("?" if d == DYNAMIC else str(d) for d in fut.shape)
    return (f"{'async ' if fut.is_async else ''}{fut.storage.name.lower()} "
            f"{dt_name(fut.dtype)} [{shape}]")


def dt_name(code: int) -> str:
    return BY_CODE[code].name if code in BY_CODE else f"<dtype {code}>"


def operand(op: O.Op, used: list[int], kind: str) -> int:
    """The first operand of ``kind`` among an instruction's operand words ``used``."""
    return used[op.operands.index(kind)]


def known_registers(cx: CodeCtx) -> dict[int, int]:
    """Integer registers whose only writer is one CONST: their value wherever a module
    uses them as lowering shapes it (constants are loaded in a prologue, EXECUTION.md
    §3). Any other instruction writing the register counts as a writer, and so does a
    launch passing it an argument. What this states is checked again by the engines at
    run time (a hand-made module may read a register before its CONST). Computed once
    per Code; words are guarded, as the pass may not have reached them yet."""
    if cx.known is None:
        writers, value = {}, {}
        if cx.is_kernel:
            for launch in kernel_launches(cx):
                for reg, _ in launch.scalars:
                    writers[reg] = writers.get(reg, 0) + 1
        for words in [cx.code.code] + [ls.code for ls in cx.code.lanesets]:
            for pc in range(0, len(words) - O.WIDTH + 1, O.WIDTH):
                op = O.TABLE[words[pc]] if 0 <= words[pc] < len(O.TABLE) else None
                if op is None or op.writes < 0:
                    continue
                reg = words[pc + 1 + op.writes]
                writers[reg] = writers.get(reg, 0) + 1
                if op.code == O.CONST and 0 <= words[pc + 2] < len(cx.code.consts):
                    value[reg] = cx.code.consts[words[pc + 2]]
        cx.known = {reg: k.value for reg, k in value.items()
                    if writers[reg] == 1 and k.dtype in BY_CODE and BY_CODE[k.dtype].is_int}
    return cx.known


def known_extents(cx: CodeCtx, regs: list[int]) -> list[int]:
    """The values of extent registers, DYNAMIC where not known statically."""
    known = known_registers(cx)
    return [known.get(r, DYNAMIC) for r in regs]


def extents_text(extents) -> str:
    """``[16, ?]``: extents in messages, ``?`` where only known at run time."""
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in extents) + "]"
