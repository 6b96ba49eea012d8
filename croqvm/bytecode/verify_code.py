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
from .module import DYNAMIC, BaseKind, Code, Function, Kernel, Module, Storage
from .verify_rules import CLASSES, ENTRIES, IMMEDIATES, REGISTER_TYPES, RETURNS, in_class

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
        host = CodeCtx(cx.module, cx.fn, cx.fn.host, None, cx.where)
        for launch in cx.fn.host.launches:
            for kslot, hslot in launch.buffers:
                if (0 <= launch.kernel < len(cx.fn.kernels) and cx.fn.kernels[launch.kernel] is
                        cx.kernel and kslot == b and 0 <= hslot < len(host.code.buffers)):
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
    if op.name in ENTRIES:
        _ENTRY_RULES[ENTRIES[op.name]](cx, at, op, used)
    if RETURNS.get(op.name, cx.fn.ret_kind) != cx.fn.ret_kind:
        at.fail(f"{op.name} in a function returning {cx.fn.ret_kind.name.lower()}")


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
    dt = element_dtype(cx, access.base_kind, access.base)
    if not in_class(rule, dt):
        at.fail(f"{name} update of a {dt.name} element")


def _buffer_dim(cx, at, v, op, used):
    rank = buffer_rank(cx, _operand(op, used, "b"))
    if v < 0 or (rank is not None and v >= rank):
        at.fail(f"dimension {v} out of range (rank {rank})")


def _future_dim(cx, at, v, op, used):
    rank = len(cx.code.futures[_operand(op, used, "f")].shape)
    if v < 0 or v >= rank:
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

def _matrix_view(cx, at, op, used):
    v = _operand(op, used, "v")
    rank = len(cx.code.views[v].extents)
    if rank != 2:
        at.fail(f"view {v} has rank {rank}; MMA tiles are 2-D")


def _message(cx, at, op, used):
    p = _operand(op, used, "p")
    if cx.code.prints[p].newline:
        at.fail(f"print format {p} ends with a newline; a fault message is one line")


def future_text(fut) -> str:
    """A future's declared type as messages write it: ``async shared f16 [16, ?]``."""
    shape = ", ".join("?" if d == DYNAMIC else str(d) for d in fut.shape)
    return (f"{'async ' if fut.is_async else ''}{fut.storage.name.lower()} "
            f"{_dt(fut.dtype)} [{shape}]")


def _dt(code: int) -> str:
    return BY_CODE[code].name if code in BY_CODE else f"<dtype {code}>"


def _same_future(cx, at, op, used):
    """SWAP exchanges handles of one type (§9.6.1)."""
    (a, fa), (b, fb) = ((f, cx.code.futures[f]) for f in used[:2])
    if future_text(fa) != future_text(fb):
        at.fail(f"exchanges {label('future', a, fa.name)} ({future_text(fa)}) and "
                f"{label('future', b, fb.name)} ({future_text(fb)}), whose types differ")


def _typed_const(cx, at, op, used):
    """CONST never converts: the constant has the register's dtype."""
    r, k = _operand(op, used, "r"), _operand(op, used, "k")
    have, want = cx.code.consts[k].dtype, cx.code.regs[r]
    if have != want:
        at.fail(f"constant k{k} is {BY_CODE[have].name}, but r{r} is {BY_CODE[want].name}")


_ENTRY_RULES = {"matrix_view": _matrix_view, "message": _message,
                "typed_const": _typed_const, "same_future": _same_future}


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
