"""The verifier's instruction pass (STYLE.md §2: the WebAssembly one-pass validator).

One pass over a flat instruction array with an explicit control stack whose bottom frame
is implicit, so "there is always a frame" holds without special cases (wasm spec,
``appendix/algorithm.rst``). Operands are checked by their kinds from ``opcodes.TABLE``
through ``lookup`` -- one wording for every index error -- and then by the opcode's rules
in the table (register dtypes, immediates, entries, returns). Structured control flow is
EXECUTION.md §4: ``IF`` and ``LOOP`` push a frame storing the index of their
``ELSE``/``END``; ``ELSE`` must be that index of an ``IF`` on top; ``END`` must be that
index and store its opener's; ``BREAK_IF`` and ``CONTINUE_IF`` need an enclosing
``LOOP``. After the pass, every ``ONCE`` must be followed by its effect block (the
opcodes module docstring), and every ``FUT_BIND`` by the ``TRIGGER`` that publishes it.

Conventions: ``cx`` the Code being checked (``CodeCtx``), ``at`` a ``Where`` (the place
messages name), ``op`` an ``opcodes.Op``, ``used`` the operand words the op uses, ``i``
an instruction index, ``frames`` the control stack.
"""
from __future__ import annotations

from croqvm.core.dtypes import BY_CODE, promote
from croqvm.core.intrinsics import ATOMIC, MATH
from croqvm.core.limits import REG_BUDGET_MAX, REG_BUDGET_MIN, WARP_SIZE
from croqvm.core.records import dataclass

from . import opcodes as O
from . import verify_mma
from .verify_base import (MAX_GRID_RANK, CodeCtx, Where, buffer_rank, check_unit, dt_name,
                          element_dtype, future_text, label, lookup, operand, want_reg)
from .verify_rules import CLASSES, in_class

# -- the pass -----------------------------------------------------------------------------

@dataclass
class Frame:
    opener: str          # "IF", "ELSE" (an IF past its ELSE), "LOOP"; "" at the bottom
    start: int           # index of the IF/LOOP
    target: int          # the stored index of the ELSE/END that must come next


def check_instructions(cx: CodeCtx, words: list[int], where: Where, *, laneset=False):
    """One pass over ``words`` (a Code's, or a LaneSet's when ``laneset``)."""
    words = list(words)     # a lowered Code's are packed (module.Words): the messages quote lists
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
    allocated = None
    for i in range(n):
        if O.TABLE[words[i * O.WIDTH]].effect_block:
            _effect_block(words, i, where)
        if words[i * O.WIDTH] == O.FUT_BIND:
            _bound_trigger(words, i, where)
        if words[i * O.WIDTH] == O.RET_BUF:
            allocated = _allocated(cx, words) if allocated is None else allocated
            if words[i * O.WIDTH + 1] not in allocated:
                where.at(f"instruction {i} (RET_BUF)").fail(
                    f"returns buffer {words[i * O.WIDTH + 1]}, which is no parameter's and "
                    f"which nothing allocates")


def _bound_trigger(words: list[int], i: int, where: Where) -> None:
    """``FUT_BIND`` at ``i``: more FUT_BINDs, then the TRIGGER whose arrival publishes the
    bound copies (§10.7; the race checker hands them to that trigger)."""
    j = i + 1
    while j * O.WIDTH < len(words) and words[j * O.WIDTH] == O.FUT_BIND:
        j += 1
    if j * O.WIDTH >= len(words) or words[j * O.WIDTH] != O.TRIGGER:
        where.at(f"instruction {i} (FUT_BIND)").fail(
            "must be followed by the TRIGGER that publishes it (FUT_BINDs may come between)")


def _allocated(cx: CodeCtx, words: list[int]) -> set[int]:
    """The buffers a RET_BUF may return: parameters' and those the code allocates, by an
    ALLOC or a DMA into them (whether that runs first is the engines' to check)."""
    out = {slot for slot, b in enumerate(cx.code.buffers) if b.param >= 0}
    for k in range(0, len(words), O.WIDTH):
        op, a = words[k], words[k + 1]
        if op == O.ALLOC:
            out.add(a)
        elif op == O.DMA and 0 <= a < len(cx.code.dmas):
            out.add(cx.code.dmas[a].dst_buffer)
    return out


def _check_placement(cx: CodeCtx, op: O.Op, at: Where, laneset: bool):
    if op.host_only and cx.is_kernel:
        at.fail(f"{op.name} is only allowed in host code")
    if op.kernel_only and not cx.is_kernel:
        at.fail(f"{op.name} is only allowed in kernels")
    if laneset and not _pure(op):
        at.fail(f"{op.name} is not allowed in a lane set's code, which may only compute on "
                "registers (no control flow, memory, blocking or collective ops)")


def _pure(op: O.Op) -> bool:
    """Straight-line register arithmetic: what a LaneSet may run (EXECUTION.md §3)."""
    return (all(k in ("r", "k", "i") for k in op.operands)
            and _structure_rule(op) is _nothing
            and not (op.collective or op.blocks or op.host_only or op.kernel_only))


def _effect_block(words: list[int], i: int, where: Where) -> None:
    """``ONCE r`` at ``i`` (the structure is checked): ``IF r`` follows, without ELSE, and
    its body is straight-line code without blocking, collective or ONCE instructions."""
    W = O.WIDTH
    at = where.at(f"instruction {i} (ONCE)")
    nxt = i + 1
    if nxt * W >= len(words) or words[nxt * W] != O.IF or words[nxt * W + 1] != words[i * W + 1]:
        at.fail(f"must be followed by IF r{words[i * W + 1]}, the effect block (§7.2.2)")
    end = words[nxt * W + 2]
    if words[end * W] != O.END:
        at.fail(f"its effect block (the IF at instruction {nxt}) has an ELSE")
    for j in range(nxt + 1, end):
        op = O.TABLE[words[j * W]]
        if op.opens or op.closes or op.effect_block or op.collective or op.blocks or \
                op.name in _STRUCTURE or op.code == O.YIELD:
            where.at(f"instruction {j} ({op.name})").fail(
                f"not allowed in the effect block of the ONCE at instruction {i} (straight-line "
                "code without control flow, blocking, collective or ONCE instructions)")


def _check_operand(cx: CodeCtx, at: Where, kind: str, value: int, n: int):
    base = kind.rstrip("?")
    attr, noun = O.OPERAND_KINDS[base]
    if base == "t":
        lookup(at, noun, value, range(n))
    elif attr is not None:
        lookup(at, noun, value, getattr(cx.code, attr), optional=kind.endswith("?"))


def _check_values(cx: CodeCtx, at: Where, op: O.Op, used: list[int]):
    """The opcode's rules in the table: register dtypes, immediates, entries, returns."""
    letters = "abcde"
    regs = [(letters[p], v) for p, (k, v) in enumerate(zip(op.operands, used)) if k == "r"]
    tied = None
    for (letter, reg), rule in zip(regs, op.types):
        dt = want_reg(cx, at, reg, rule, f"operand {letter}")
        if rule.endswith("="):
            if tied is not None and tied[1] is not dt:
                at.fail(f"operands {tied[0]} and {letter} must have the same dtype, "
                        f"got {tied[1].name} and {dt.name}")
            tied = tied or (letter, dt)
    imms = [v for k, v in zip(op.operands, used) if k == "i"]
    for value, rule in zip(imms, op.imms):
        _IMMEDIATE_RULES[rule](cx, at, value, op, used)
    if op.entry:
        ENTRY_RULES[op.entry](cx, at, op, used)
    if op.returns not in (None, cx.fn.ret_kind):
        at.fail(f"{op.name} in a function returning {cx.fn.ret_kind.name.lower()}")


# -- immediates (Op.imms) ---------------------------------------------------------------------

def _grid_dim(cx, at, v, op, used):
    rank = cx.kernel.grid_rank if cx.is_kernel else MAX_GRID_RANK
    if not 0 <= v < rank:
        at.fail(f"grid dimension {v} out of range (grid rank {rank})")


def _once_site(cx, at, v, op, used):
    lookup(at, "once site", v, range(cx.code.once_sites))


def _unit(cx, at, v, op, used):
    check_unit(at, v)


def _alu_op(cx, at, v, op, used):
    """@a := @a <op> R[b] computes in R[b]'s dtype T: the computation type of the element
    type and T (§12.2), one the operator takes."""
    if v not in O.BINARY_ALU:
        names = ", ".join(O.TABLE[c].name for c in O.BINARY_ALU)
        at.fail(f"update operator {v} is not a binary ALU opcode ({names})")
    alu = O.TABLE[v]
    r = operand(op, used, "r")
    t = BY_CODE[cx.code.regs[r]]
    if not in_class(alu.types[1], t):
        at.fail(f"{alu.name} update computing in {t.name}; {alu.name} takes "
                f"{CLASSES[alu.types[1].rstrip('=')][0]}")
    access = cx.code.accesses[operand(op, used, "a")]
    elem = element_dtype(cx, access.base_kind, access.base)
    if promote(elem, t) is not t:
        at.fail(f"the value r{r} is {t.name}, but {elem.name} elements and {t.name} values "
                f"compute in {promote(elem, t).name}")


def _buffer_dim(cx, at, v, op, used):
    rank = buffer_rank(cx, operand(op, used, "b"))
    if v < 0 or (rank is not None and v >= rank):
        at.fail(f"dimension {v} out of range (rank {rank})")


def _future_dim(cx, at, v, op, used):
    rank = len(cx.code.futures[operand(op, used, "f")].shape)
    if v < 0 or v >= rank:
        at.fail(f"dimension {v} out of range (rank {rank})")


def _choice(count: int, what: str):
    def rule(cx, at, v, op, used):
        if not 0 <= v < count:
            at.fail(f"{what} {v} out of range (0..{count - 1})")
    return rule


def _lane_mask(cx, at, v, op, used):
    """A shuffle partner differs from the lane and lies in its warp."""
    if not 0 < v < WARP_SIZE:
        at.fail(f"lane mask {v} out of range (1..{WARP_SIZE - 1})")


def _reg_budget(cx, at, v, op, used):
    """setmaxnreg's count: a multiple of 8 in 24..256 (PTX ISA, setmaxnreg; §6.10.6)."""
    if not (REG_BUDGET_MIN <= v <= REG_BUDGET_MAX and v % 8 == 0):
        at.fail(f"register count {v} is not a multiple of 8 in {REG_BUDGET_MIN}.."
                f"{REG_BUDGET_MAX}")


def _math_fn(cx, at, v, op, used):
    """The function exists; its result is bool (a predicate) or the arguments' type."""
    if not 0 <= v < len(MATH):
        at.fail(f"math function {v} out of range (0..{len(MATH) - 1})")
    regs = [r for k, r in zip(op.operands, used) if k == "r"]
    result, arg = BY_CODE[cx.code.regs[regs[0]]], BY_CODE[cx.code.regs[regs[1]]]
    want = "bool" if MATH[v].predicate else arg.name
    if result.name != want:
        at.fail(f"{MATH[v].name} of {arg.name} gives {want}, but r{regs[0]} is {result.name}")


def _atomic_op(cx, at, v, op, used):
    if not 0 <= v < len(ATOMIC):
        at.fail(f"atomic operation {v} out of range (0..{len(ATOMIC) - 1})")


_IMMEDIATE_RULES = {
    "math_fn": _math_fn, "atomic_op": _atomic_op,
    "grid_dim": _grid_dim, "once_site": _once_site, "unit": _unit, "alu_op": _alu_op,
    "buffer_dim": _buffer_dim, "future_dim": _future_dim,
    "mma_layout": _choice(4, "mma layout"), "flag": _choice(2, "flag"),
    "lane_mask": _lane_mask, "reg_budget": _reg_budget,
}


# -- entries named by operands (Op.entry) -----------------------------------------------------

def _message(cx, at, op, used):
    p = operand(op, used, "p")
    if cx.code.prints[p].newline:
        at.fail(f"print format {p} ends with a newline; a fault message is one line")


def _same_future(cx, at, op, used):
    """SWAP exchanges handles of one type (§9.6.1)."""
    (a, fa), (b, fb) = ((f, cx.code.futures[f]) for f in used[:2])
    if future_text(fa) != future_text(fb):
        at.fail(f"exchanges {label('future', a, fa.name)} ({future_text(fa)}) and "
                f"{label('future', b, fb.name)} ({future_text(fb)}), whose types differ")


def _event_scope(cx, at, op, used):
    """TRIGGER_CLUSTER names the events whose generations count a whole cluster's
    arrivals (``EventDecl.cluster``, §10.8), and TRIGGER every other one."""
    e = operand(op, used, "e")
    ev = cx.code.events[e]
    if ev.cluster != (op.code == O.TRIGGER_CLUSTER):
        scope = "cluster" if ev.cluster else "block"
        at.fail(f"{op.name} on {label('event', e, ev.name)}, a {scope}-scope event")


def _typed_const(cx, at, op, used):
    """CONST never converts: the constant has the register's dtype."""
    r, k = operand(op, used, "r"), operand(op, used, "k")
    have, want = cx.code.consts[k].dtype, cx.code.regs[r]
    if have != want:
        at.fail(f"constant k{k} is {dt_name(have)}, but r{r} is {dt_name(want)}")


def _asm_operands(cx, at, op, used):
    """Inline assembly (§6.11): its registers exist, outputs say '=' or '+' and inputs
    neither, and no output is a register a CONST loads (those are read-only)."""
    asm = cx.code.asms[operand(op, used, "x")]
    consts = {cx.code.code[i + 1] for i in range(0, len(cx.code.code), O.WIDTH)
              if cx.code.code[i] == O.CONST}
    for role, operands in (("output", asm.outputs), ("input", asm.inputs)):
        for k, x in enumerate(operands):
            want_reg(cx, at, x.reg, "any", f"{role} {k}")
            if (role == "output") != x.constraint.startswith(("=", "+")):
                at.fail(f"{role} {k} has constraint {x.constraint!r}: outputs start with "
                        f"'=' or '+', inputs with neither")
            if role == "output" and x.reg in consts:
                at.fail(f"output {k} writes r{x.reg}, a constant register")


def _cxx_call(cx, at, op, used):
    """A C++ call (§6.10.4) names a function of the module and passes registers of its
    parameters' dtypes (buffers for pointers); its result register has the result's dtype
    and no CONST loads it."""
    call = cx.code.cxx_calls[operand(op, used, "y")]
    fn = lookup(at, "cxx function", call.func, cx.module.cxx)
    if len(call.args) != len(fn.params):
        at.fail(f"passes {len(call.args)} argument(s) to '{fn.name}', which takes "
                f"{len(fn.params)}")
    if len(fn.pointers) != len(fn.params):
        at.fail(f"'{fn.name}' says of {len(fn.pointers)} parameter(s) whether they are "
                f"pointers, but has {len(fn.params)}")
    for k, (x, want, pointer) in enumerate(zip(call.args, fn.params, fn.pointers)):
        if pointer:
            buf = lookup(at, "buffer", x, cx.code.buffers)
            if buf.dtype != want or buf.array:
                at.fail(f"argument {k} is buffer {x}, but '{fn.name}' takes a pointer to "
                        f"{dt_name(want)}, which a buffer of that dtype (not an array) gives")
        elif want_reg(cx, at, x, "any", f"argument {k}") is not BY_CODE.get(want):
            at.fail(f"argument {k} r{x} is {dt_name(cx.code.regs[x])}, but '{fn.name}' "
                    f"takes {dt_name(want)}")
    if (call.result >= 0) != (fn.ret >= 0):
        at.fail(f"'{fn.name}' returns {'nothing' if fn.ret < 0 else dt_name(fn.ret)}, but "
                f"the call's result register is {call.result}")
    if call.result >= 0:
        want_reg(cx, at, call.result, "any", "the result")
        if cx.code.regs[call.result] != fn.ret:
            at.fail(f"the result r{call.result} is {dt_name(cx.code.regs[call.result])}, "
                    f"but '{fn.name}' returns {dt_name(fn.ret)}")
        if any(cx.code.code[i] == O.CONST and cx.code.code[i + 1] == call.result
               for i in range(0, len(cx.code.code), O.WIDTH)):
            at.fail(f"the result r{call.result} is a register a CONST loads")


def _extern_call(cx, at, op, used):
    """A call of a function defined in no file (§6.10.6): registers of any dtype, and
    buffers (not arrays) where it says so."""
    call = cx.code.extern_calls[operand(op, used, "z")]
    if len(call.buffers) != len(call.args):
        at.fail(f"says of {len(call.buffers)} argument(s) whether they are buffers, but "
                f"has {len(call.args)}")
    for k, (x, buffer) in enumerate(zip(call.args, call.buffers)):
        if not buffer:
            want_reg(cx, at, x, "any", f"argument {k}")
        elif lookup(at, "buffer", x, cx.code.buffers).array:
            at.fail(f"argument {k} is buffer {x}, an array of buffers")


def _atomic(cx, at, op, used):
    """The registers have the element type of the access, one the operation takes."""
    access = cx.code.accesses[operand(op, used, "a")]
    elem = element_dtype(cx, access.base_kind, access.base)
    r = operand(op, used, "r")
    fn = ATOMIC[operand(op, used, "i")]
    if cx.code.regs[r] != elem.code:
        at.fail(f"r{r} is {BY_CODE[cx.code.regs[r]].name}, but the element is {elem.name}")
    if elem.name not in fn.types:
        at.fail(f"{fn.name} on {elem.name} elements; it takes {', '.join(fn.types)}")


ENTRY_RULES = {"message": _message, "typed_const": _typed_const, "same_future": _same_future,
               "asm_operands": _asm_operands, "cxx_call": _cxx_call, "atomic": _atomic,
               "extern_call": _extern_call, "event_scope": _event_scope,
               **verify_mma.RULES}


# -- structured control flow (EXECUTION.md §4) ----------------------------------------------

def _open(frames, i, op, used, at):
    frames.append(Frame(op.name, i, operand(op, used, "t")))


def _else(frames, i, op, used, at):
    top = frames[-1]
    if top.opener != "IF":
        at.fail(f"second ELSE of the IF at instruction {top.start}" if top.opener == "ELSE"
                else "ELSE outside an IF")
    if top.target != i:
        at.fail(f"the IF at instruction {top.start} stores {top.target} as its ELSE/END")
    frames[-1] = Frame("ELSE", top.start, operand(op, used, "t"))


def _end(frames, i, op, used, at):
    top = frames[-1]
    if len(frames) == 1:
        at.fail("END without an open IF or LOOP")
    if top.target != i:
        at.fail(f"closes the {_opener(top)} at instruction {top.start}, which stores "
                f"{top.target} as its end")
    if operand(op, used, "t") != top.start:
        at.fail(f"stores {operand(op, used, 't')} as its opener, but closes the "
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
