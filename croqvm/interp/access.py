"""Memory handlers: ALLOC, FILL, LOAD, STORE, UPDATE, DIMOF (LANGUAGE.md §3.2-§3.3,
§8.5-§8.6, §14.4; docs/EXECUTION.md §6).

Conventions: handlers take (``w``, ``ins``); ``acc`` an ``Access``; element stores go
lane by lane in increasing order (§7.1.3), so when lanes collide the highest one's value
stays; faults are raised for the lowest active lane that has one.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..bytecode.opcodes import TABLE
from .faults import LaneFault
from .memory import buffer_of, check_written, load, locate, store
from .scalar import binary, convert
from .sync import arrive, check_uniform


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
    """§3.2.4: allocate (zeroed, or poisoned) the first time this instance runs it."""
    slot = ins[1]
    blk = w.blk
    decl = blk.prog.code.buffers[slot]
    for i in w.active_indices():
        lane = w.base + int(i)
        if blk.instances(slot, lane) is not None:
            if blk.uniform_slot(slot):
                return
            continue
        shape = [int(w.regs[r][i]) for r in decl.shape]
        for d in shape:
            if d < 1:
                raise LaneFault(f'The mdspan size "{d}" is invalid!', int(i))
        blk.allocate(slot, lane, shape)


def _fill(blk, slot, lane, value, vtype):
    """Every element of every buffer of ``slot`` for ``lane`` := value (§3.3.2)."""
    for buf in blk.instances(slot, lane) or ():
        buf.data[...] = convert(np.asarray([value]), vtype, buf.dtype, np.ones(1, bool))[0]
        if buf.written is not None:
            buf.written[...] = True


def op_fill(w, ins):
    _, slot, r, coll = ins[:4]
    blk = w.blk
    rtype = blk.prog.rtypes[r]
    if coll >= 0:
        def effect(blk, rec, lanes):
            check_uniform(blk, rec, lanes, lambda lane: [("value", blk.lane_reg(lane, r))],
                          [r])
            _fill(blk, slot, int(lanes[0]), blk.lane_reg(int(lanes[0]), r), rtype)
        arrive(w, ins, coll, effect)
        return
    for i in w.active_indices():
        _fill(blk, slot, w.base + int(i), w.regs[r][i], rtype)


def op_load(w, ins):
    _, r, a = ins[:3]
    vals, etype = load(w, w.blk.prog.code.accesses[a])
    w.write(r, convert(vals, etype, w.blk.prog.rtypes[r], w.act))


def op_store(w, ins):
    _, a, r = ins[:3]
    acc = w.blk.prog.code.accesses[a]
    groups, f1 = _try(locate, w, acc)
    etype = groups[0][0].dtype if groups else _element_type(w, acc)
    vals, f2 = _try(convert, w.regs[r], w.blk.prog.rtypes[r], etype, w.act)
    _lowest(f1, f2)
    for buf, lanes, flat in groups:
        store(buf, lanes, flat, vals)


def _element_type(w, acc):
    if acc.base_kind == "buf":
        return dtypes.BY_CODE[w.blk.prog.code.buffers[acc.base].dtype]
    return dtypes.F64   # no active lane reached a future's data: nothing is converted


def op_update(w, ins):
    """``@a := @a <op> R[b]`` one lane after another (§7.1.3): a lane sees the element
    as the lanes before it left it. When no two lanes share an element that order is
    invisible and the lanes go together."""
    _, a, r, opcode = ins[:4]
    acc = w.blk.prog.code.accesses[a]
    name = TABLE[opcode].name
    rtype = w.blk.prog.rtypes[r]
    groups = locate(w, acc)
    cells = [(id(buf), int(off)) for buf, _, flat in groups for off in flat]
    if len(set(cells)) < len(cells):
        _update_in_order(w, acc, groups, name, r, rtype)
        return
    results, faults = [], []
    for buf, lanes, flat in groups:
        try:
            check_written(w, acc, buf, lanes, flat)
            act = np.ones(len(lanes), bool)
            new, t = binary(name, buf.data.reshape(-1)[flat], w.regs[r][lanes], buf.dtype,
                            rtype, act)
            results.append((buf, lanes, flat, convert(new, t, buf.dtype, act)))
        except LaneFault as f:
            faults.append(LaneFault(f.message, int(lanes[f.index])))
    _lowest(*faults)
    for buf, lanes, flat, vals in results:
        buf.data.reshape(-1)[flat] = vals
        if buf.written is not None:
            buf.written.reshape(-1)[flat] = True


def _update_in_order(w, acc, groups, name, r, rtype):
    order = sorted((int(lanes[n]), buf, int(flat[n]))
                   for buf, lanes, flat in groups for n in range(len(lanes)))
    one = np.ones(1, bool)
    for i, buf, off in order:
        try:
            check_written(w, acc, buf, np.array([i]), np.array([off]))
            old = buf.data.reshape(-1)[off:off + 1]
            new, t = binary(name, old, w.regs[r][i:i + 1], buf.dtype, rtype, one)
            buf.data.reshape(-1)[off] = convert(new, t, buf.dtype, one)[0]
        except LaneFault as f:
            raise LaneFault(f.message, i) from None
        if buf.written is not None:
            buf.written.reshape(-1)[off] = True


def op_dimof(w, ins):
    _, r, slot, k = ins[:4]
    out = np.zeros(w.width, np.int64)
    for i in w.active_indices():
        out[i] = buffer_of(w, slot, -1, int(i)).shape[k]
        if w.blk.uniform_slot(slot):
            out[:] = out[i]
            break
    w.write(r, convert(out, dtypes.S64, w.blk.prog.rtypes[r], w.act))


PREPARE = {}

HANDLERS = {
    "ALLOC": op_alloc, "FILL": op_fill, "LOAD": op_load, "STORE": op_store,
    "UPDATE": op_update, "DIMOF": op_dimof,
}
