"""Memory handlers: ALLOC, FILL, LOAD, STORE, UPDATE, DIMOF (LANGUAGE.md §3.2-§3.3,
§8.5-§8.6, §14.4; docs/EXECUTION.md §9-§10).

Conventions: handlers take (``w``, ``ins``); ``a`` the index of an ``Access`` in the
code's table, ``acc`` the access itself; element stores go
lane by lane in increasing order (§7.1.3), so when lanes collide the highest one's value
stays; faults are raised for the lowest active lane that has one. LOAD, STORE, UPDATE and
DIMOF are prepared (``PREPARE``): their handlers receive the access index (and whether
its base is one instance for the block) or the buffer slot, the register's type and the
element type the module declares for the base (a buffer's, or a future's, §9.4.4),
instead of the instruction.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..bytecode.module import BaseKind
from ..bytecode.opcodes import TABLE
from ..core.faults import LaneFault
from ..core.intrinsics import ATOMIC, CAS
from ..core.numerics import binary_op, convert, converter
from .checks import Access
from .memory import (block_wide, buffer_of, check_written, distinct, gather, is_uniform, load,
                     locate, store)
from .sync import arrive, check_uniform, register_operand


def _lowest(*faults):
    faults = [f for f in faults if f is not None]
    if faults:
        raise min(faults, key=lambda f: f.index)


def _try(fn, *args):
    try:
        return fn(*args), None
    except LaneFault as f:
        return None, f


def op_alloc(w, ins):
    """§3.2.4: allocate (zeroed) the first time this instance runs it."""
    slot = ins[1]
    blk = w.blk
    decl = blk.prog.code.buffers[slot]
    for i in w.active_indices():
        lane = w.base + int(i)
        if blk.instances(slot, lane) is not None:
            if blk.uniform_slot(slot):
                return
            continue
        blk.allocate_declared(slot, lane, [int(w.regs[r][i]) for r in decl.shape])


def _fill(blk, slot, lane, value, vtype):
    """Every element of every buffer of ``slot`` for ``lane`` := value (§3.3.2)."""
    for buf in blk.instances(slot, lane) or ():
        buf.data[...] = convert(np.asarray([value]), vtype, buf.dtype, np.ones(1, bool))[0]
        if buf.written is not None:
            buf.written[...] = True
        if blk.call.checker is not None:
            blk.call.checker.tile(blk, buf, (0,) * buf.data.ndim, buf.shape, Access.FILL, lane)


def op_fill(w, ins):
    _, slot, r, coll = ins[:4]
    blk = w.blk
    rtype = blk.prog.rtypes[r]
    if coll >= 0:
        def effect(blk, rec, lanes):
            check_uniform(blk, rec, lanes,
                          lambda lane: [("value", register_operand(blk, lane, r))], [r])
            _fill(blk, slot, int(lanes[0]), blk.lane_reg(int(lanes[0]), r), rtype)
        arrive(w, ins, coll, effect)
        return
    for i in w.active_indices():
        _fill(blk, slot, w.base + int(i), w.regs[r][i], rtype)


def element_type(code, acc) -> dtypes.DType:
    """The element type of access ``acc``'s base, as declared."""
    table = code.buffers if acc.base_kind == BaseKind.BUF else code.futures
    return dtypes.BY_CODE[table[acc.base].dtype]


def prepare_load(prog, ins):
    _, r, a = ins[:3]
    acc = prog.code.accesses[a]
    to_reg = converter(element_type(prog.code, acc), prog.rtypes[r])
    return r, a, is_uniform(prog.code, acc), to_reg


def op_load(w, ins):
    r, a, uniform, to_reg = ins
    w.write(r, to_reg(load(w, a, uniform), w.act))


def load_at(w, ins, groups, fault):
    """LOAD of the elements ``locate`` found, or its ``fault`` (a checker locates them
    first, croqvm.interp.race)."""
    if fault is not None:
        raise fault
    r, a, _, to_reg = ins
    w.write(r, to_reg(gather(w, a, groups), w.act))


def prepare_store(prog, ins):
    _, a, r = ins[:3]
    acc = prog.code.accesses[a]
    to_elem = converter(prog.rtypes[r], element_type(prog.code, acc))
    return a, is_uniform(prog.code, acc), r, to_elem


def op_store(w, ins):
    store_at(w, ins, *_try(locate, w, ins[0], ins[1]))


def store_at(w, ins, groups, fault):
    """STORE of the elements ``locate`` found, or its ``fault``."""
    _, _, r, to_elem = ins
    vals, f2 = _try(to_elem, w.regs[r], w.act)
    _lowest(fault, f2)
    for buf, lanes, flat in groups:
        store(buf, lanes, flat, vals)


def prepare_update(prog, ins):
    """(access index, uniform, r, (``fn`` giving the new values, the conversion back to the
    element type)): the operation for the element type and R[b]'s."""
    _, a, r, opcode = ins[:4]
    acc = prog.code.accesses[a]
    etype = element_type(prog.code, acc)
    fn, t = binary_op(TABLE[opcode].name, etype, prog.rtypes[r])
    return a, is_uniform(prog.code, acc), r, (fn, converter(t, etype))


def op_update(w, ins):
    """``@a := @a <op> R[b]`` one lane after another (§7.1.3): a lane sees the element
    as the lanes before it left it. When no two lanes share an element that order is
    invisible and the lanes go together, checked in stages (docs/EXECUTION.md §14.2):
    addresses, then uninitialised reads, then the operation."""
    update_at(w, ins, *_try(locate, w, ins[0], ins[1]))


def update_at(w, ins, groups, fault):
    """UPDATE of the elements ``locate`` found, or its ``fault``."""
    if fault is not None:
        raise fault
    a, _, r, ops = ins
    if _lanes_collide(groups):
        _update_in_order(w, a, groups, ops, r)
        return
    _lowest(*(_try(check_written, w, a, buf, lanes, flat)[1] for buf, lanes, flat in groups))
    results, faults = [], []
    for buf, lanes, flat in groups:
        vals, fault = _try(_updated, w, lanes, flat, buf, ops, r)
        results.append((buf, flat, vals))
        faults.append(fault)
    _lowest(*faults)
    for buf, flat, vals in results:
        buf.flat[flat] = vals
        if buf.written is not None:
            buf.written.reshape(-1)[flat] = True


def _updated(w, lanes, flat, buf, ops, r):
    """The new values of the elements at ``flat`` of ``buf`` that ``lanes`` update."""
    fn, to_elem = ops
    if len(lanes) == w.width:          # every lane: the register as it is
        values, act = w.regs[r], w.act
    else:
        values, act = w.regs[r][lanes], np.ones(len(lanes), bool)
    try:
        return to_elem(fn(buf.flat[flat], values, act), act)
    except LaneFault as f:
        raise f.at(int(lanes[f.index])) from None


def _update_in_order(w, a, groups, ops, r):
    order = sorted((int(lanes[n]), buf, int(flat[n]))
                   for buf, lanes, flat in groups for n in range(len(lanes)))
    one = np.ones(1, bool)
    fn, to_elem = ops
    for i, buf, off in order:
        try:
            check_written(w, a, buf, np.array([i]), np.array([off]))
            new = fn(buf.flat[off:off + 1], w.regs[r][i:i + 1], one)
            buf.flat[off] = to_elem(new, one)[0]
        except LaneFault as f:
            raise f.at(i) from None
        if buf.written is not None:
            buf.written.reshape(-1)[off] = True


def _lanes_collide(groups) -> bool:
    """Whether two of the lanes of ``groups`` (from ``locate``) address one element."""
    if len(groups) == 1:
        return not distinct(groups[0][2])
    cells = [(id(buf), off) for buf, _, flat in groups for off in flat.tolist()]
    return len(set(cells)) < len(cells)


def prepare_atomic(prog, ins):
    """(r, access index, uniform, value and compare registers, ``new(old, v, cmp)`` on
    one-lane arrays of the element type T, which the registers have too)."""
    _, r, a, v, cmp, code = ins[:6]
    acc = prog.code.accesses[a]
    t = element_type(prog.code, acc)
    op = ATOMIC[code]
    if op.alu:
        fn, _ = binary_op(op.alu, t, t)
        new = lambda old, x, c: fn(old, x, _ONE)       # noqa: E731
    elif code == CAS:
        new = lambda old, x, c: np.where(old == c, x, old)   # noqa: E731
    else:
        new = lambda old, x, c: x                       # noqa: E731
    return r, a, is_uniform(prog.code, acc), v, cmp, new


_ONE = np.ones(1, bool)


def op_atomic(w, ins):
    atomic_at(w, ins, *_try(locate, w, ins[1], ins[2]))


def atomic_at(w, ins, groups, fault):
    """ATOMIC of the elements ``locate`` found: one lane after another in lane order
    (§4.5), each reading the element as the lanes before it left it; R[r] := the value it
    read."""
    if fault is not None:
        raise fault
    r, a, _, v, cmp, new = ins
    old = np.zeros(w.width, w.regs[r].dtype)
    order = sorted((int(lanes[n]), buf, int(flat[n]))
                   for buf, lanes, flat in groups for n in range(len(lanes)))
    for i, buf, off in order:
        try:
            check_written(w, a, buf, np.array([i]), np.array([off]))
        except LaneFault as f:
            raise f.at(i) from None
        cell = buf.flat[off:off + 1]
        old[i] = cell[0]
        buf.flat[off] = new(cell, w.regs[v][i:i + 1], w.regs[cmp][i:i + 1])[0]
        if buf.written is not None:
            buf.written.reshape(-1)[off] = True
    w.write(r, old)


def prepare_dimof(prog, ins):
    _, r, slot, k = ins[:4]
    return r, slot, k, block_wide(prog.code.buffers[slot]), prog.rtypes[r]


def op_dimof(w, ins):
    r, slot, k, uniform, rtype = ins
    lanes = w.active_indices()
    if uniform:    # one instance for every lane: the lowest lane's answer is everyone's
        out = np.full(w.width, buffer_of(w, slot, -1, int(lanes[0])).shape[k], np.int64)
    else:
        out = np.zeros(w.width, np.int64)
        for i in lanes:
            out[i] = buffer_of(w, slot, -1, int(i)).shape[k]
    w.write(r, converter(dtypes.S64, rtype)(out, w.act))


# LOAD, STORE, UPDATE given what ``locate`` gave: (groups, fault)
LOCATED = {"LOAD": load_at, "STORE": store_at, "UPDATE": update_at, "ATOMIC": atomic_at}

PREPARE = {"LOAD": prepare_load, "STORE": prepare_store, "UPDATE": prepare_update,
           "DIMOF": prepare_dimof, "ATOMIC": prepare_atomic}

HANDLERS = {
    "ALLOC": op_alloc, "FILL": op_fill, "LOAD": op_load, "STORE": op_store,
    "UPDATE": op_update, "DIMOF": op_dimof, "ATOMIC": op_atomic,
}
