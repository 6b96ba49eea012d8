"""The verifier's instruction pass (STYLE.md §2: the WebAssembly one-pass validator).

One pass over a flat instruction array with an explicit control stack whose bottom frame
is implicit, so "there is always a frame" holds without special cases (wasm spec,
``appendix/algorithm.rst``). Operands are checked by their kinds from ``opcodes.TABLE``
through ``lookup`` -- one wording for every index error -- and then by the per-opcode
rules of ``verify_rules``. Structured control flow is EXECUTION.md §3: ``IF`` and ``LOOP``
push a frame storing the index of their ``ELSE``/``END``; ``ELSE`` must be that index of
an ``IF`` on top; ``END`` must be that index and store its opener's; ``BREAK_IF`` and
``CONTINUE_IF`` need an enclosing ``LOOP``.

Conventions: ``cx`` the Code being checked (``CodeCtx``), ``at`` a ``Where`` (the place
messages name), ``op`` an ``opcodes.Op``, ``used`` the operand words the op uses, ``i``
an instruction index, ``frames`` the control stack.
"""
from __future__ import annotations

from dataclasses import dataclass

from croqvm.dtypes import BY_CODE, DType
from croqvm.errors import BytecodeError
from croqvm.limits import MAX_BLOCK_SIZE

from . import opcodes as O
from .module import Code, Function, Kernel, Module
from .verify_rules import (CLASSES, CONSTANTS, ENTRIES, IMMEDIATES, REGISTER_TYPES, RETURNS,
                           in_class)

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
    swapped: dict | None = None   # future -> futures it exchanges handles with, transitively

    @property
    def is_kernel(self) -> bool:
        return self.kernel is not None


def want_reg(cx: CodeCtx, at: Where, reg: int, rule: str, what: str,
             *, optional=False) -> DType | None:
    """Register ``reg`` exists and its dtype is in class ``rule``; returns the dtype."""
    if lookup(at, "register", reg, cx.code.regs, optional=optional) is None:
        return None
    dt = BY_CODE[cx.code.regs[reg]]
    if not in_class(rule, dt):
        at.fail(f"{what} r{reg} is {dt.name}, but must be {CLASSES[rule.rstrip('=')][0]}")
    return dt


def want_const(cx: CodeCtx, at: Where, k: int, what: str):
    """Constant ``k`` holds a string (``what`` == "str") or a number or bool ("value")."""
    is_str = isinstance(lookup(at, "constant", k, cx.code.consts)[1], str)
    if is_str != (what == "str"):
        at.fail(f"constant k{k} must be {'a string' if what == 'str' else 'a number or bool'}")


def check_unit(at: Where, unit: int):
    """A unit of lanes: 0 (the block) or a lane count up to the block limit (§7.4, §11.2)."""
    if not 0 <= unit <= MAX_BLOCK_SIZE:
        at.fail(f"unit of {unit} lanes out of range (0 for the block, else 1..{MAX_BLOCK_SIZE})")


def buffer_rank(cx: CodeCtx, b: int) -> int | None:
    """Rank of buffer slot ``b`` as the module states it, None if it does not: its shape
    registers; else the parameter it is bound to; else (a kernel's global slot) the host
    buffer the first launch binds to it; else the source of the DMA that owns it (§9.4).
    Indices are guarded: this runs before the tables it reads are checked, and the checks
    of launches and DMAs then hold every other binding to the rank found here."""
    buf = cx.code.buffers[b]
    params = cx.fn.params
    if buf.shape:
        return len(buf.shape)
    if 0 <= buf.param < len(params) and params[buf.param].shape:
        return len(params[buf.param].shape)
    if cx.is_kernel:
        host = CodeCtx(cx.module, cx.fn, cx.fn.host, None, cx.where)
        for launch in cx.fn.host.launches:
            for kslot, hslot in launch.buffers:
                if (0 <= launch.kernel < len(cx.fn.kernels) and cx.fn.kernels[launch.kernel] is
                        cx.kernel and kslot == b and 0 <= hslot < len(host.code.buffers)):
                    return buffer_rank(host, hslot)
    return _source_rank(cx.code, [d for d in cx.code.dmas if d.dst_buffer == b])


def future_rank(cx: CodeCtx, f: int) -> int | None:
    """Rank of the data future ``f`` refers to: that of the first DMA filling it or a
    future it is swapped with (§9.4.4 fixes a future's shape at its first DMA, and SWAP
    exchanges data of one shape, §9.6); the DMA checks hold the others to it."""
    group = _swap_groups(cx).get(f, {f})
    return _source_rank(cx.code, [d for d in cx.code.dmas if d.future in group])


def _swap_groups(cx: CodeCtx) -> dict:
    """Futures connected by SWAP instructions (words guarded: not yet checked)."""
    if cx.swapped is None:
        cx.swapped = {}
        words = cx.code.code
        for pc in range(0, len(words) - O.WIDTH + 1, O.WIDTH):
            if words[pc] == O.SWAP:
                a, b = words[pc + 1:pc + 3]
                group = cx.swapped.get(a, {a}) | cx.swapped.get(b, {b})
                for f in group:
                    cx.swapped[f] = group
    return cx.swapped


def _source_rank(code: Code, dmas: list) -> int | None:
    for d in dmas:
        if 0 <= d.src < len(code.views):
            return len(code.views[d.src].extents) or None
    return None


# -- the pass -----------------------------------------------------------------------------

@dataclass
class Frame:
    opener: str          # "IF", "ELSE" (an IF past its ELSE), "LOOP"; "" at the bottom
    start: int           # index of the IF/LOOP
    target: int          # the stored index of the ELSE/END that must come next


def check_instructions(cx: CodeCtx, words: list[int], where: Where, *, laneset=False):
    """One pass over ``words`` (a Code's, or a LaneSet's when ``laneset``)."""
    if len(words) % O.WIDTH:
        where.fail(f"code length {len(words)} is not a multiple of {O.WIDTH} words")
    n = len(words) // O.WIDTH
    frames = [Frame("", -1, n)]
    for i in range(n):
        ins = words[i * O.WIDTH:(i + 1) * O.WIDTH]
        if not 0 <= ins[0] < len(O.TABLE):
            where.at(f"instruction {i}").fail(f"unknown opcode {ins[0]}")
        op = O.TABLE[ins[0]]
        at = where.at(f"instruction {i} ({op.name})")
        _check_placement(cx, op, at, laneset)
        used, unused = ins[1:1 + len(op.operands)], ins[1 + len(op.operands):-1]
        if any(unused):
            at.fail(f"unused operand slots must be 0, got {unused}")
        for kind, value in zip(op.operands, used):
            _check_operand(cx, at, kind, value, n)
        lookup(at, "span", ins[-1], cx.module.spans)
        _check_values(cx, at, op, used)
        _structure_rule(op)(frames, i, op, used, at)
    if len(frames) > 1:
        f = frames[-1]
        where.fail(f"{f.opener} at instruction {f.start} is never closed "
                   f"(it stores {f.target} as its end)")


def _check_placement(cx: CodeCtx, op: O.Op, at: Where, laneset: bool):
    if op.host_only and cx.is_kernel:
        at.fail(f"{op.name} is only allowed in host code")
    if op.kernel_only and not cx.is_kernel:
        at.fail(f"{op.name} is only allowed in kernels")
    if laneset and not _pure(op):
        at.fail(f"{op.name} is not allowed in a lane set's code, which may only compute on "
                "registers (no control flow, memory, blocking or collective ops)")


def _pure(op: O.Op) -> bool:
    """Straight-line register arithmetic: what a LaneSet may run (EXECUTION.md §2)."""
    return (all(k in ("r", "k", "i") for k in op.operands)
            and _structure_rule(op) is _nothing
            and not (op.collective or op.blocks or op.host_only or op.kernel_only))


def _check_operand(cx: CodeCtx, at: Where, kind: str, value: int, n: int):
    base = kind.rstrip("?")
    attr, noun = O.OPERAND_KINDS[base]
    if base == "t":
        lookup(at, noun, value, range(n))
    elif attr is not None:
        lookup(at, noun, value, getattr(cx.code, attr), optional=kind.endswith("?"))


def _check_values(cx: CodeCtx, at: Where, op: O.Op, used: list[int]):
    """The per-opcode rules of verify_rules: register dtypes, immediates, constants."""
    letters = "abcde"
    regs = [(letters[p], v) for p, (k, v) in enumerate(zip(op.operands, used)) if k == "r"]
    tied = None
    for (letter, reg), rule in zip(regs, REGISTER_TYPES.get(op.name, ())):
        dt = want_reg(cx, at, reg, rule, f"operand {letter}")
        if rule.endswith("="):
            if tied is not None and tied[1] is not dt:
                at.fail(f"operands {tied[0]} and {letter} must have the same dtype, "
                        f"got {tied[1].name} and {dt.name}")
            tied = tied or (letter, dt)
    imms = [v for k, v in zip(op.operands, used) if k == "i"]
    for value, rule in zip(imms, IMMEDIATES.get(op.name, ())):
        _IMMEDIATE_RULES[rule](cx, at, value, op, used)
    for kind, value in zip(op.operands, used):
        if kind == "k":
            want_const(cx, at, value, CONSTANTS[op.name])
    if op.name in ENTRIES:
        _ENTRY_RULES[ENTRIES[op.name]](cx, at, op, used)
    if RETURNS.get(op.name, cx.fn.ret_kind) != cx.fn.ret_kind:
        at.fail(f"{op.name} in a function returning {cx.fn.ret_kind}")


# -- immediates (verify_rules.IMMEDIATES) ----------------------------------------------------

def _operand(op: O.Op, used: list[int], kind: str) -> int:
    return used[op.operands.index(kind)]


def _grid_dim(cx, at, v, op, used):
    rank = cx.kernel.grid_rank if cx.is_kernel else MAX_GRID_RANK
    if not 0 <= v < rank:
        at.fail(f"grid dimension {v} out of range (grid rank {rank})")


def _once_site(cx, at, v, op, used):
    lookup(at, "once site", v, range(cx.code.once_sites))


def _unit(cx, at, v, op, used):
    check_unit(at, v)


def _alu_op(cx, at, v, op, used):
    if v not in O.BINARY_ALU:
        names = ", ".join(O.TABLE[c].name for c in O.BINARY_ALU)
        at.fail(f"update operator {v} is not a binary ALU opcode ({names})")
    # @a := @a <op> R[b]: the operator's dtype class binds the value and the element.
    name = O.TABLE[v].name
    rule = REGISTER_TYPES[name][0]
    want_reg(cx, at, _operand(op, used, "r"), rule, f"value of the {name} update")
    access = cx.code.accesses[_operand(op, used, "a")]
    if access.base_kind == "buf":
        dt = BY_CODE[cx.code.buffers[access.base].dtype]
        if not in_class(rule, dt):
            at.fail(f"{name} update of a {dt.name} element")


def _buffer_dim(cx, at, v, op, used):
    rank = buffer_rank(cx, _operand(op, used, "b"))
    if v < 0 or (rank is not None and v >= rank):
        at.fail(f"dimension {v} out of range (rank {rank})")


def _future_dim(cx, at, v, op, used):
    rank = future_rank(cx, _operand(op, used, "f"))
    if v < 0 or (rank is not None and v >= rank):
        at.fail(f"dimension {v} out of range (rank {rank})")


def _choice(count: int, what: str):
    def rule(cx, at, v, op, used):
        if not 0 <= v < count:
            at.fail(f"{what} {v} out of range (0..{count - 1})")
    return rule


_IMMEDIATE_RULES = {
    "grid_dim": _grid_dim, "once_site": _once_site, "unit": _unit, "alu_op": _alu_op,
    "buffer_dim": _buffer_dim, "future_dim": _future_dim,
    "mma_layout": _choice(4, "mma layout"), "flag": _choice(2, "flag"),
}


# -- entries named by operands (verify_rules.ENTRIES) ---------------------------------------

def _allocatable(cx, at, op, used):
    b = _operand(op, used, "b")
    buf = cx.code.buffers[b]
    bound = buf.param >= 0 if not cx.is_kernel else buf.storage == "global"
    if not buf.shape and not bound:
        at.fail(f"{label('buffer', b, buf.name)} has no extents to allocate with")


def _matrix_view(cx, at, op, used):
    v = _operand(op, used, "v")
    rank = len(cx.code.views[v].extents)
    if rank != 2:
        at.fail(f"view {v} has rank {rank}; MMA tiles are 2-D")


def _message(cx, at, op, used):
    p = _operand(op, used, "p")
    if cx.code.prints[p].newline:
        at.fail(f"print format {p} ends with a newline; a fault message is one line")


_ENTRY_RULES = {"allocatable": _allocatable, "matrix_view": _matrix_view, "message": _message}


# -- structured control flow (EXECUTION.md §3) ----------------------------------------------

def _open(frames, i, op, used, at):
    frames.append(Frame(op.name, i, _operand(op, used, "t")))


def _else(frames, i, op, used, at):
    top = frames[-1]
    if top.opener != "IF":
        at.fail(f"second ELSE of the IF at instruction {top.start}" if top.opener == "ELSE"
                else "ELSE outside an IF")
    if top.target != i:
        at.fail(f"the IF at instruction {top.start} stores {top.target} as its ELSE/END")
    frames[-1] = Frame("ELSE", top.start, _operand(op, used, "t"))


def _end(frames, i, op, used, at):
    top = frames[-1]
    if len(frames) == 1:
        at.fail("END without an open IF or LOOP")
    if top.target != i:
        at.fail(f"closes the {_opener(top)} at instruction {top.start}, which stores "
                f"{top.target} as its end")
    if _operand(op, used, "t") != top.start:
        at.fail(f"stores {_operand(op, used, 't')} as its opener, but closes the "
                f"{_opener(top)} at instruction {top.start}")
    frames.pop()


def _opener(frame: Frame) -> str:
    return "IF" if frame.opener == "ELSE" else frame.opener


def _in_loop(frames, i, op, used, at):
    if not any(f.opener == "LOOP" for f in frames):
        at.fail(f"{op.name} needs an enclosing LOOP")


def _nothing(frames, i, op, used, at):
    pass


# Openers and closers are flagged in the table; the other structured ops are named here.
_STRUCTURE = {"ELSE": _else, "BREAK_IF": _in_loop, "CONTINUE_IF": _in_loop}


def _structure_rule(op: O.Op):
    return _open if op.opens else _end if op.closes else _STRUCTURE.get(op.name, _nothing)
