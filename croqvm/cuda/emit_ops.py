"""Instruction handlers of the CUDA generator: registers, control flow and memory
(LANGUAGE.md §4, §6.5, §8.5-§8.6, §12; docs/EXECUTION.md §3, §6). The synchronising
ones are in ``emit_sync``; ``HANDLERS`` gathers both.

Conventions: a handler is ``fn(k, ins, ip)`` with ``k`` the ``KernelEmitter``, ``ins``
the instruction and ``ip`` its index in the kernel (-1 inside a lane set's code); it
appends C++ statements with ``k.line``. Each statement computes exactly what the Python
engine's handler of the same opcode computes for one lane.
"""
from __future__ import annotations

import re

from ..bytecode.module import BaseKind, Storage
from ..bytecode.opcodes import BINARY_ALU, COMPARE, TABLE
from ..core import dtypes
from ..core.faults import Kind
from ..core.intrinsics import ATOMIC, C_NAME, CAS, MATH
from ..core.limits import MAX_SHARED_BYTES
from . import cnum, emit_regs
from .owner import one_owner


def op_nop(k, ins, ip):
    pass


def op_const(k, ins, ip):
    _, r, c = ins[:3]
    k.line(f"r{r} = {cnum.literal(k.code.consts[c].value, k.rt(r))};", ins)


def op_mov(k, ins, ip):
    k.line(f"r{ins[1]} = r{ins[2]};", ins)


def op_cvt(k, ins, ip):
    _, a, b = ins[:3]
    k.convert_into(f"r{a}", f"r{b}", k.rt(b), k.rt(a), ins, ip)


def op_lane(k, ins, ip):
    k.line(f"r{ins[1]} = ({cnum.reg_c(k.rt(ins[1]))})lane;", ins)


def op_blockidx(k, ins, ip):
    _, r, d = ins[:3]
    value = f"cq_block_idx({d})" if d < k.kernel.grid_rank else "0"
    k.line(f"r{r} = ({cnum.reg_c(k.rt(r))}){value};", ins)


def op_binary(k, ins, ip):
    """R[a] := R[b] op R[c], computed in the arithmetic type and converted to R[a]'s."""
    name = TABLE[ins[0]].name
    _, a, b, c = ins[:4]
    tb, tc = k.rt(b), k.rt(c)
    t = cnum.arith_type(name, tb, tc)
    x = cnum.convert(f"r{b}", tb, t, "").value
    y = f"r{c}" if name in ("SHL", "SHR") else cnum.convert(f"r{c}", tc, t, "").value
    res = cnum.binary(name, x, y, t, tc, f"t{max(ip, 0)}_{a}")
    result_type = dtypes.BOOL if name in cnum.COMPARE else t
    if not res.faults and result_type is k.rt(a):
        k.line(f"r{a} = {res.value};", ins)
        return
    tmp = f"v{max(ip, 0)}_{a}"
    k.line("{", ins)
    k.depth += 1
    k.line(f"{cnum.reg_c(result_type)} {tmp};", ins)
    k.checked(tmp, res, ins, ip)
    k.convert_into(f"r{a}", tmp, result_type, k.rt(a), ins, ip)
    k.depth -= 1
    k.line("}", ins)


def op_unary(k, ins, ip):
    name = TABLE[ins[0]].name
    _, a, b = ins[:3]
    tb = k.rt(b)
    t = cnum.unary_type(name, tb)
    x = cnum.convert(f"r{b}", tb, t, "").value if name != "NOT" else f"r{b}"
    value = cnum.unary(name, x, t)
    if t is k.rt(a):
        k.line(f"r{a} = {value};", ins)
    else:
        k.convert_into(f"r{a}", value, t, k.rt(a), ins, ip)


def op_select(k, ins, ip):
    """Both choices are converted for every lane, as the engine does (§4.2.4 lowers
    selections that may fault to IF/ELSE)."""
    _, a, b, c, d = ins[:5]
    ta = k.rt(a)
    k.line("{", ins)
    k.depth += 1
    k.line(f"{cnum.reg_c(ta)} yes, no;", ins)
    k.convert_into("yes", f"r{c}", k.rt(c), ta, ins, ip)
    k.convert_into("no", f"r{d}", k.rt(d), ta, ins, ip)
    k.line(f"r{a} = r{b} ? yes : no;", ins)
    k.depth -= 1
    k.line("}", ins)


# --------------------------------------------------------------------------- control flow

def op_if(k, ins, ip):
    _, r, _ = ins[:3]
    once = k.pending_once if k.pending_once and k.pending_once[0] == r else None
    k.pending_once = None
    k.frames.append(("if", once))
    k.line(f"if (r{r}) {{", ins)
    k.depth += 1
    emit_regs.enter(k, ins, ip)      # a warpgroup role's register budget


def op_else(k, ins, ip):
    kind, once = k.frames[-1]
    if once is not None:
        raise k.unsupported("an outer-level effect block with an 'else'", ins)
    k.depth -= 1
    k.line("} else {", ins)
    k.depth += 1


def op_loop(k, ins, ip):
    """Each iteration counts toward the call's step limit: a lane's iterations are fewer
    than the engines' warp-steps, so a program within the engines' limit is within this
    one, and one that runs away stops with the engines' error. On cuda-cpu the check is
    also where a run the user interrupts stops, and where the runtime notes which loop
    runs (the site of its fault) for the progress line."""
    k.frames.append(("loop", None))
    k.line("while (true) {", ins)
    k.depth += 1
    k.fault(lambda site: f"cq_steps_over(++cq_steps, cq_limit, {site})", Kind.STEP_LIMIT,
            ins, ip,
            ("(long long)cq_limit",),
            lambda a, refs: (int(a[0]),))


def op_break_if(k, ins, ip):
    k.line(f"if (r{ins[1]}) break;", ins)


def op_continue_if(k, ins, ip):
    k.line(f"if (r{ins[1]}) continue;", ins)


def op_end(k, ins, ip):
    from .emit_sync import close_once
    kind, once = k.frames.pop()
    if once is not None:
        close_once(k, ins, once)
        return
    k.depth -= 1
    k.line("}", ins)


def op_yield(k, ins, ip):
    """The lane terminates (§6.5): first the kernel-end check of its futures (§9.5.4)."""
    from .emit_sync import never_waited_checks
    never_waited_checks(k, ip, ins)
    k.line("cq_leave();", ins)


# --------------------------------------------------------------------------- memory

class Instance:
    """A buffer instance as generated code reaches it: a byte pointer, the C
    expressions of its extents, its element type, slot and array element."""

    def __init__(self, base, dims, dtype, slot, index):
        self.base, self.dims, self.dtype, self.slot, self.index = base, dims, dtype, slot, index

    def view(self) -> str:
        """A ``cq_view`` initializer of the whole instance."""
        dims = ", ".join(self.dims) or "0"
        zeros = ", ".join("0" for _ in self.dims) or "0"
        return (f"cq_view{{{self.base}, {cnum.elem_bytes(self.dtype)}, {len(self.dims)}, "
                f"{self.slot}, {self.index}, {{{dims}}}, {{{zeros}}}, {{{dims}}}}}")


def buffer_instance(k, slot: int, arr: int, ins, ip) -> Instance:
    """Instance R[arr] (or the only one) of buffer slot ``slot`` for this lane; checks
    the array index (§8.5)."""
    decl = k.code.buffers[slot]
    t = dtypes.BY_CODE[decl.dtype]
    index = "-1"
    element = "0"
    if arr >= 0:
        index = f"ai{ip}_{slot}"
        k.line(f"const long long {index} = (long long)r{arr};", ins)
        k.fault(f"{index} < 0 || {index} >= {decl.count}", Kind.BUFFER_ARRAY_INDEX, ins, ip,
                (index,), lambda a, refs, s=slot, n=decl.count: (int(a[0]), s, n))
        element = index
    if decl.storage == Storage.GLOBAL:
        rank = next(b.rank for b in k.bound if b.slot == slot)
        return Instance(f"(unsigned char *)b{slot}", [f"b{slot}_d{d}" for d in range(rank)],
                        t, slot, f"(int){index}")
    if slot in k.dyn_shared or slot in k.dyn_local:
        return _dynamic_instance(k, slot, element, ins, ip)
    if decl.storage == Storage.SHARED:
        off, n, size, shape = k.shared[slot]
        base = f"(smem + {off} + {element} * {n * size}ll)"
    else:
        n, shape = k.local[slot]
        base = f"((unsigned char *)lb{slot} + {element} * {n * cnum.elem_bytes(t)}ll)"
    return Instance(base, [f"{d}ll" for d in shape], t, slot, f"(int){index}")


def dyn_record(k, slot: int) -> str:
    """The cq_dyn record (shared) or cq_local_dyn (local) of a buffer with run-time
    extents."""
    if slot in k.dyn_shared:
        return f"((cq_dyn *)(smem + {k.dyn_shared[slot]}))"
    return f"(&lbd{slot})"


def _dynamic_instance(k, slot, element, ins, ip) -> Instance:
    """An instance of a buffer allocated at run time: its ALLOC must have run (§3.2.4)."""
    decl = k.code.buffers[slot]
    t = dtypes.BY_CODE[decl.dtype]
    rec = dyn_record(k, slot)
    rank = len(decl.shape)
    ready = f"{rec}->state == CQ_DYN_READY" if slot in k.dyn_shared else f"{rec}->p"
    k.fault(f"!({ready})", Kind.BUFFER_BEFORE_DECLARATION, ins, ip, (),
            lambda a, refs, s=slot: (s,))
    dims = [f"{rec}->dims[{d}]" for d in range(rank)]
    size = " * ".join(dims + [str(cnum.elem_bytes(t))])
    base = f"(smem + {rec}->off" if slot in k.dyn_shared else f"({rec}->p"
    return Instance(f"{base} + {element} * {size})", dims, t, slot,
                    "-1" if element == "0" else f"(int){element}")


def allocate(k, slot: int, ins, ip) -> None:
    """ALLOC of a buffer with run-time extents: the extents of its shape registers, each
    at least 1; the first lane of the block (shared) or the lane (local) allocates it,
    zeroed, if it was not yet (§3.2.4); memory beyond the engines' limit of shared
    memory, or beyond what the device has, faults as the engines do."""
    decl = k.code.buffers[slot]
    t = dtypes.BY_CODE[decl.dtype]
    rank = len(decl.shape)
    k.line(f"const long long ext[{rank}] = {{{', '.join(f'(long long)r{r}' for r in decl.shape)}}};",
           ins)
    for d in range(rank):
        k.fault(f"ext[{d}] < 1", Kind.ALLOC_EXTENT, ins, ip, (f"ext[{d}]",),
                lambda a, refs: (int(a[0]),))
    extents = lambda a, refs, s=slot, n=rank: (s, tuple(int(x) for x in a[:n]))  # noqa: E731
    if slot in k.dyn_local:
        rec = dyn_record(k, slot)
        k.line(f"if (!{rec}->p) {{", ins)
        k.line(f"  long long n = {decl.count} * {cnum.elem_bytes(t)};", ins)
        k.line(f"  for (int d = 0; d < {rank}; d++) {{ n *= ext[d]; {rec}->dims[d] = ext[d]; }}",
               ins)
        k.line(f"  {rec}->p = (unsigned char *)cq_malloc((unsigned long long)n);", ins)
        k.fault(f"!{rec}->p", Kind.ALLOC_BUFFER, ins, ip,
                tuple(f"ext[{d}]" for d in range(rank)), extents)
        k.line("  for (long long i = 0; i < n; i++) " f"{rec}->p[i] = 0;", ins)
        k.line("}", ins)
        return
    top, used, _ = k.pool
    n = k.wait_site_plain(ins, ip, f"allocating '{decl.name}'")
    account = f"{decl.count}ll * {max(1, t.bits // 8)}"
    for d in range(rank):
        account += f" * ext[{d}]"
    k.line(f"const unsigned st = cq_dyn_alloc({dyn_record(k, slot)}, ext, {rank}, "
           f"{cnum.elem_bytes(t)}, {decl.count}, {account}, smem, (unsigned *)(smem + {top}), "
           f"cq_smem_bytes(), (unsigned *)(smem + {used}), {MAX_SHARED_BYTES}u, {n});", ins)
    k.fault("st == CQ_DYN_OVER_LIMIT", Kind.SHARED_LIMIT, ins, ip,
            (f"{dyn_record(k, slot)}->used",), lambda a, refs, s=slot: (s, int(a[0])))
    k.fault("st == CQ_DYN_NO_ROOM", Kind.ALLOC_BUFFER, ins, ip,
            tuple(f"ext[{d}]" for d in range(rank)), extents)


def future_view(k, n: int, ins, ip) -> str:
    """Future n's view for reading its data (§9.5.4): it must hold data the lane has
    waited for."""
    k.fault(f"!f{n}.has_data", Kind.FUTURE_NO_DATA, ins, ip, (),
            lambda a, refs, f=n: (f,))
    k.fault(f"cq_future_pending(f{n})", Kind.FUTURE_NOT_WAITED, ins, ip, (),
            lambda a, refs, f=n: (f,))
    return f"f{n}.v"


def element_type(k, acc) -> dtypes.DType:
    table = k.code.buffers if acc.base_kind == BaseKind.BUF else k.code.futures
    return dtypes.BY_CODE[table[acc.base].dtype]


def _range_operands(a: int, rank: int):
    def operands(args, refs):
        idx = [int(x) for x in args[:rank]]
        dim = int(args[rank])
        return (a, tuple(idx), idx[dim], dim, int(args[rank + 1]), int(args[rank + 2]))
    return operands


def element_pointer(k, a: int, ins, ip) -> str:
    """A C pointer (to the storage type) to access ``a``'s element for this lane, every
    index checked (§8.6) when checks are on."""
    acc = k.code.accesses[a]
    t = element_type(k, acc)
    rank = len(acc.indices)
    idx = f"ix{ip}"
    values = ", ".join(f"(long long)r{r}" for r in acc.indices) or "0"
    k.line(f"const long long {idx}[{max(rank, 1)}] = {{{values}}};", ins)
    ptr_t = f"{cnum.store_c(t)} *"
    if acc.base_kind == BaseKind.FUT:
        view = future_view(k, acc.base, ins, ip)
        # rank known here: the unrolled forms, which keep the future out of local memory
        check, offset = ("cq_index_in", "cq_offset_r") if rank else \
            ("cq_check_index", "cq_offset")
        if k.checks:
            n = k.site(Kind.OUT_OF_RANGE, ip, ins[-1], _range_operands(a, rank))
            k.line(f"if (!{check}({view}, {idx}, {n})) cq_leave();", ins)
        return f"(({ptr_t})({view}.base + {offset}({view}, {idx})))"
    inst = buffer_instance(k, acc.base, acc.arr, ins, ip)
    if k.checks and rank:
        dims = f"dm{ip}"
        k.line(f"const long long {dims}[{rank}] = {{{', '.join(inst.dims)}}};", ins)
        n = k.site(Kind.OUT_OF_RANGE, ip, ins[-1], _range_operands(a, rank))
        k.line(f"if (!cq_dims_in({idx}, {dims}, {n})) cq_leave();", ins)
    off = "0"
    for d in range(rank):
        off = f"{idx}[{d}]" if d == 0 else f"({off}) * {inst.dims[d]} + {idx}[{d}]"
    return f"(({ptr_t}){inst.base} + ({off}))"


def op_load(k, ins, ip):
    _, r, a = ins[:3]
    t = element_type(k, k.code.accesses[a])
    k.line("{", ins)
    k.depth += 1
    ptr = element_pointer(k, a, ins, ip)
    k.convert_into(f"r{r}", cnum.load_value(ptr, t), t, k.rt(r), ins, ip)
    k.depth -= 1
    k.line("}", ins)


def op_store(k, ins, ip):
    _, a, r = ins[:3]
    t = element_type(k, k.code.accesses[a])
    k.line("{", ins)
    k.depth += 1
    ptr = element_pointer(k, a, ins, ip)
    k.line(f"{cnum.reg_c(t)} val;", ins)
    k.convert_into("val", f"r{r}", k.rt(r), t, ins, ip)
    k.line(f"*{ptr} = {cnum.store_value('val', t)};", ins)
    k.depth -= 1
    k.line("}", ins)


def op_update(k, ins, ip):
    """@a := @a <op> R[b], one indivisible step per lane (§7.1.3); a fault of the
    operation ends the lane after the step wrote the old value back."""
    _, a, r, opcode = ins[:4]
    acc = k.code.accesses[a]
    t = element_type(k, acc)
    name = TABLE[opcode].name
    tr = k.rt(r)
    at = cnum.arith_type(name, t, tr)
    x = cnum.convert("old", t, at, "").value
    y = f"r{r}" if name in ("SHL", "SHR") else cnum.convert(f"r{r}", tr, at, "").value
    res = cnum.binary(name, x, y, at, tr, "u")
    back = cnum.convert("res", at, t, "ub")
    k.line("{", ins)
    k.depth += 1
    ptr = element_pointer(k, a, ins, ip)
    faults = [c for c in (res, back) if c.faults]
    if faults:
        k.line("int bad = 0; long long why[2] = {0, 0};", ins)
    # one lane alone reaches the element: no compare-and-swap loop (owner.py)
    update = "cq_update_owned" if one_owner(k, a) else "cq_update"
    k.line(f"{update}({ptr}, [&]({cnum.store_c(t)} stored) {{", ins)
    k.depth += 1
    k.line(f"{cnum.reg_c(t)} old = {cnum.load_value('&stored', t)};", ins)
    for s in res.setup:
        k.line(s, ins)
    if res.faults:
        k.line(f"bad = {res.bad} ? 1 : 0;", ins)
        if res.args:
            k.line(f"why[0] = {res.args[0]}; why[1] = {res.args[1]};", ins)
        k.line("if (bad) return stored;", ins)
    k.line(f"{cnum.reg_c(at)} res = {res.value};", ins)
    if back.faults:
        k.line("uint64_t ub;", ins)
        k.line(f"if ({back.bad}) {{ bad = 2; why[0] = {back.args[0]}; why[1] = {back.args[1]}; "
               f"return stored; }}", ins)
    k.line(f"{cnum.reg_c(t)} now = {back.value};", ins)
    k.line(f"return ({cnum.store_c(t)}){cnum.store_value('now', t)};", ins)
    k.depth -= 1
    k.line("});", ins)
    from .emit_kernel import _OPERANDS
    for code, c in ((1, res), (2, back)):
        if c.faults:
            k.fault(f"bad == {code}", c.kind, ins, ip, ("why[0]", "why[1]")[:len(c.args)],
                    _OPERANDS[c.kind])
    k.depth -= 1
    k.line("}", ins)


def op_atomic(k, ins, ip):
    """R[a] := @b, @b := the new element, as one indivisible step per lane (§4.5): the
    compare-and-swap loop of UPDATE (cq_update), so the element is computed as the
    engines compute it; R[a] takes what the successful step read."""
    _, r, a, v, cmp, code = ins[:6]
    t = element_type(k, k.code.accesses[a])
    op = ATOMIC[code]
    if op.alu:
        now = cnum.binary(op.alu, "old", f"r{v}", t, t, "").value
    elif code == CAS:
        now = f"(old == r{cmp} ? r{v} : old)"
    else:
        now = f"r{v}"
    k.line("{", ins)
    k.depth += 1
    ptr = element_pointer(k, a, ins, ip)
    k.line(f"{cnum.reg_c(t)} old;", ins)
    k.line(f"cq_update({ptr}, [&]({cnum.store_c(t)} stored) {{", ins)
    k.depth += 1
    k.line(f"old = {cnum.load_value('&stored', t)};", ins)
    k.line(f"{cnum.reg_c(t)} now = {now};", ins)
    k.line(f"return ({cnum.store_c(t)}){cnum.store_value('now', t)};", ins)
    k.depth -= 1
    k.line("});", ins)
    k.line(f"r{r} = old;", ins)
    k.depth -= 1
    k.line("}", ins)


def op_math(k, ins, ip):
    """cq_numerics.h's cq_math, as the engines compute it (docs/NUMERICS.md)."""
    _, a, b, c, d, fn = ins[:6]
    t = k.rt(b)
    value = (f"cq_math({C_NAME[fn]}, (double)r{b}, (double)r{c}, (double)r{d}, "
             f"{cnum.FMT[t.name]})")
    if MATH[fn].predicate:
        k.line(f"r{a} = {value} != 0.0;", ins)
    else:
        k.line(f"r{a} = ({cnum.reg_c(t)}){value};", ins)


def op_alloc(k, ins, ip):
    """Buffers of static extents are zeroed when the block starts (shared) or the lane
    does (local), which is when their ALLOC takes effect the first time (§3.2.4);
    others are allocated here."""
    slot = ins[1]
    decl = k.code.buffers[slot]
    if slot in k.dyn_shared or slot in k.dyn_local:
        k.line("{", ins)
        k.depth += 1
        allocate(k, slot, ins, ip)
        k.depth -= 1
        k.line("}", ins)
        return
    shape = (k.shared.get(slot) or (0, 0, 0, k.local.get(slot, (0, []))[1]))[3]
    bad = [d for d in shape if d < 1]
    if bad:
        k.fault("true", Kind.ALLOC_EXTENT, ins, ip, (),
                lambda a, refs, d=bad[0]: (d,))
    else:
        k.line(f"// buffer '{decl.name}' ({decl.storage.name.lower()}) was zeroed at the "
               f"start", ins)


def op_fill(k, ins, ip):
    """Every element of every instance of the buffer := R[b] (§3.3.2); a collective
    splits the elements among its participants."""
    from .emit_sync import collective
    _, slot, r, c = ins[:4]
    decl = k.code.buffers[slot]
    t = dtypes.BY_CODE[decl.dtype]
    with collective(k, ins, ip, c >= 0) as (part, parts):
        inst = buffer_instance(k, slot, -1, ins, ip)
        k.line(f"{cnum.reg_c(t)} val;", ins)
        k.convert_into("val", f"r{r}", k.rt(r), t, ins, ip)
        total = " * ".join(inst.dims) or "1"
        k.line(f"const long long total = ({total}) * {decl.count};", ins)
        k.line(f"for (long long i = {part}; i < total; i += {parts}) "
               f"(({cnum.store_c(t)} *){inst.base})[i] = {cnum.store_value('val', t)};", ins)


def op_dimof(k, ins, ip):
    _, r, slot, d = ins[:4]
    k.line("{", ins)
    k.depth += 1
    inst = buffer_instance(k, slot, -1, ins, ip)
    k.line(f"r{r} = ({cnum.reg_c(k.rt(r))}){inst.dims[d]};", ins)
    k.depth -= 1
    k.line("}", ins)


def _c_string(text: str) -> str:
    """``text`` as a C string literal."""
    escaped = "".join(c if c.isprintable() and c not in '"\\' else
                      {"\n": "\\n", "\t": "\\t", '"': '\\"', "\\": "\\\\"}.get(
                          c, f"\\{ord(c):03o}") for c in text)
    return f'"{escaped}"'


def _positional(asm) -> str:
    """The template with each ``%[name]`` written as its operand's number (outputs first,
    then inputs): nvcc takes no symbolic operand names."""
    numbers = {}
    for n, x in enumerate(asm.outputs + asm.inputs):
        if x.name:
            numbers.setdefault(x.name, n)
    return re.sub(r"%(%|\[([A-Za-z_]\w*)\])",
                  lambda m: m.group(0) if m.group(2) not in numbers
                  else f"%{numbers[m.group(2)]}", asm.text)


def op_asm(k, ins, ip):
    """Inline assembly (LANGUAGE.md §6.11) passes to the GPU's assembler as written, its
    operands bound to the registers lowering chose; the CPU runtime faults instead."""
    asm = k.code.asms[ins[1]]

    def operands(xs):
        return ", ".join(f"{_c_string(x.constraint)}(r{x.reg})" for x in xs)
    parts = [_c_string(_positional(asm)), operands(asm.outputs), operands(asm.inputs),
             ", ".join(_c_string(c) for c in asm.clobbers)]
    while len(parts) > 1 and not parts[-1]:
        parts.pop()
    k.line("#ifdef CQ_CPU", ins)
    k.fault("true", Kind.ASM_ON_CPU, ins, ip)
    k.line("#else")
    k.line(f"asm{' volatile' if asm.volatile else ''}({' : '.join(parts)});", ins)
    k.line("#endif")


def op_call_cxx(k, ins, ip):
    """A C++ device function (LANGUAGE.md §6.10.4), compiled with the kernel; a pointer
    parameter gets the lane's instance of its buffer."""
    from .cxx import C_TYPE
    call = k.code.cxx_calls[ins[1]]
    fn = k.module.cxx[call.func]
    args = []
    for x, t, pointer in zip(call.args, fn.params, fn.pointers):
        if pointer:
            inst = buffer_instance(k, x, -1, ins, ip)
            args.append(f"({C_TYPE[dtypes.BY_CODE[t].name]} *){inst.base}")
        else:
            args.append(f"r{x}")
    expr = f"{fn.name}({', '.join(args)})"
    k.line(f"r{call.result} = {expr};" if call.result >= 0 else f"{expr};", ins)


def op_call_extern(k, ins, ip):
    """A function defined in no file of the program (LANGUAGE.md §6.10.6): nvcc resolves
    it against the code the kernels are built with; the CPU runtime faults, as the
    interpreters do. A buffer argument is a pointer to the lane's instance."""
    from .cxx import C_TYPE
    call = k.code.extern_calls[ins[2]]
    args = []
    for x, buffer in zip(call.args, call.buffers):
        if buffer:
            inst = buffer_instance(k, x, -1, ins, ip)
            args.append(f"({C_TYPE[dtypes.BY_CODE[k.code.buffers[x].dtype].name]} *)"
                        f"{inst.base}")
        else:
            args.append(f"r{x}")
    targs = f"<{call.template_args}>" if call.template_args else ""
    k.line("#ifdef CQ_CPU", ins)
    k.fault("true", Kind.EXTERN_CALL, ins, ip, operands=lambda a, refs, s=ins[1]: (s,))
    k.line("#else")
    k.line(f"{k.code.strings[ins[1]]}{targs}({', '.join(args)});", ins)
    k.line("#endif")


def op_set_maxnreg(k, ins, ip):
    """The warp's register budget (LANGUAGE.md §6.10.6): setmaxnreg on sm_90a, nothing
    on sm_80 (which has no such instruction) and on the CPU, as the reference emits
    (lib/Target/GPU/cute_codegen.cpp)."""
    if k.arch != "sm_90a":
        return
    word = "inc" if ins[2] else "dec"
    k.line("#ifndef CQ_CPU", ins)
    k.line(f'asm volatile("setmaxnreg.{word}.sync.aligned.u32 {ins[1]};");', ins)
    k.line("#endif")


def op_shfl_xor(k, ins, ip):
    """R[a] := R[b] of the warp's lane (own index xor c), which must be active: a warp
    shuffle (cq_shfl_xor: __shfl_xor_sync on a GPU, a warp rendezvous on cuda-cpu)."""
    from .emit_sync import wait_site
    _, a, b, mask = ins[:4]
    n = wait_site(k, ins, ip, "warp shuffle")
    k.line("{", ins)
    k.depth += 1
    k.line(f"const int partner = (lane % 32) ^ {mask};", ins)
    k.fault("lane - lane % 32 + partner >= nlanes || !(cq_active_lanes() >> partner & 1u)",
            Kind.SHUFFLE_INACTIVE, ins, ip, ("partner",), lambda v, refs: (int(v[0]),))
    k.line(f"r{a} = cq_shfl_xor(r{b}, {mask}, {n});", ins)
    k.depth -= 1
    k.line("}", ins)


def _handlers():
    from . import emit_sync
    table = {
        "NOP": op_nop, "CONST": op_const, "MOV": op_mov, "CVT": op_cvt, "LANE": op_lane,
        "BLOCKIDX": op_blockidx, "SELECT": op_select, "IF": op_if, "ELSE": op_else,
        "LOOP": op_loop, "BREAK_IF": op_break_if, "CONTINUE_IF": op_continue_if, "END": op_end,
        "YIELD": op_yield, "ALLOC": op_alloc, "FILL": op_fill, "LOAD": op_load,
        "STORE": op_store, "UPDATE": op_update, "DIMOF": op_dimof, "ASM": op_asm,
        "CALL_CXX": op_call_cxx, "ATOMIC": op_atomic, "MATH": op_math, "SHFL_XOR": op_shfl_xor,
        "CALL_EXTERN": op_call_extern, "SET_MAXNREG": op_set_maxnreg,
        **{TABLE[c].name: op_binary for c in BINARY_ALU + COMPARE},
        **{n: op_unary for n in ("NEG", "NOT", "BNOT")},
        **emit_sync.HANDLERS,
    }
    return table


HANDLERS = _handlers()
