"""Tracing on the native engine (docs/TRACE.md "Engines"): native/trace.c times every step
as ``recorder.py`` does, the reference it must agree with slice for slice, time for time.

Python resolves the cost model per instruction with the recorder's own rules
(``Recorder._step_info``: each instruction's cost and statement row) and hands C the
tables (``cq_trace_model``, native/cq_api.h); C keeps every warp's clock and records
slices, flows, the blocks' processes and the statements' totals as flat records. They
come back as numpy columns (a ``NativeTrace``), and the ``Slice`` objects are made only
when ``Trace.slices`` is first read, so a traced run costs little more than a plain one;
its file is written from the columns by native/trace_text.c (croqvm.trace.output). Given
a ``sink`` (``croqvm trace -o``: the file), the tracer hands it the slices between slices
of steps and C forgets them: the run's slices are written as it goes, in the memory of a
few million at most, not kept.

Conventions: ``lib``/``ffi`` the extension, ``c`` the C call, ``codes`` the function's
host code then its kernels' (C's code 0, 1 + k).
"""
from __future__ import annotations

import numpy as np

from ..bytecode.opcodes import SPAN, TABLE
from ..core.dtypes import BY_CODE
from ..interp.machine import Program
from .cost import CostModel
from .recorder import _TIMED, COPY_TID, HOST_PID, Flow, Recorder, Slice, StatRow, Trace

FLOWS = ("dma", "tma", "trigger")     # cq_flow's kinds
KINDS = ("run", "wait", "copy", "launch")   # cq_slice's kinds
EXACT_US = 2.0 ** 39    # native/trace_text.c writes times below this exactly
FIRST_WINDOW = 4096     # the slices NativeTrace.first looks through at first
# the text written at a time: a chunk that stays in the cache as it is copied to the file
# (a trace of 416 MB: 0.17 s of system time in chunks of 256 KB, 0.8 s in chunks of 1 MB)
CHUNK = 1 << 18
# native/cq_api.h's CQ_WAIT_*, in order: what a wait slice waits for
WAITS = ("nothing", "coll", "event_slot", "event", "future", "barrier", "stopped")


def _columns(ffi, struct: str, fields: dict) -> np.dtype:
    """The numpy record type of C struct ``struct`` ({field: numpy type})."""
    return np.dtype({"names": list(fields), "formats": list(fields.values()),
                     "offsets": [ffi.offsetof(struct, f) for f in fields],
                     "itemsize": ffi.sizeof(struct)})


def _read(ffi, getter, c, struct: str, dtype) -> np.ndarray:
    n = ffi.new("int64_t *")
    ptr = getter(c, n)
    if not n[0]:
        return np.zeros(0, dtype)
    return np.frombuffer(ffi.buffer(ptr, n[0] * ffi.sizeof(struct)), dtype).copy()


class NativeTracer:
    """The tracing hook of one native call of ``fn`` of ``module`` (croqvm.native.driver
    ``run_function(tracer=...)``): ``start`` attaches the model, ``finish`` reads back what
    C recorded; ``trace`` gives it as a ``Trace``."""

    def __init__(self, module, fn, cost: CostModel, sink=None):
        self.cost = cost
        self.sink = sink        # takes the slices as they come (``between``), or None
        self.rec = Recorder(module, cost)      # the spec's step facts, rows and names
        self.codes = [fn.host] + [k.code for k in fn.kernels]
        self.progs = [Program(code) for code in self.codes]
        self.steps = [[self.rec._step_info(prog, pc, ins) for pc, ins in enumerate(prog.ins)]
                      for prog in self.progs]
        self.rows = list(self.rec.rows.values())
        number = {id(r): k for k, r in enumerate(self.rows)}
        self.row_of = [[number[id(s.stat)] for s in steps] for steps in self.steps]
        self.recorded = None
        self.end = 0.0          # when the latest slice ends, as C recorded it
        self.handed = 0         # the slices the sink took

    def start(self, lib, ffi, c) -> None:
        cost = self.cost
        rates = cost.mma.macs_per_cycle
        dtypes = range(max(BY_CODE) + 1)
        timed = np.zeros(len(TABLE), np.uint8)
        timed[sorted(_TIMED)] = 1
        at = np.cumsum([0] + [len(s) for s in self.steps]).astype(np.int32)
        dma_at = np.cumsum([0] + [len(c.dmas) for c in self.codes]).astype(np.int32)
        keep = self._keep = [
            np.array([s.cost for steps in self.steps for s in steps] or [0.0], np.float64),
            np.array([r for rows in self.row_of for r in rows] or [0], np.int32),
            at, dma_at,
            np.array([d.tma for c in self.codes for d in c.dmas] or [0], np.uint8),
            timed,
            np.array([BY_CODE[t].bits if t in BY_CODE else 0 for t in dtypes], np.int32),
            np.array([float(rates.get(BY_CODE[t].name.split("_")[0], rates["other"]))
                      if t in BY_CODE else 1.0 for t in dtypes], np.float64)]
        ptr = [ffi.from_buffer(a) for a in keep]
        self._model = ffi.new("cq_trace_model *", {
            "ncodes": len(self.codes), "nrows": len(self.rows),
            "cost": ffi.cast("double *", ptr[0]), "row": ffi.cast("int32_t *", ptr[1]),
            "code_at": ffi.cast("int32_t *", ptr[2]), "dma_at": ffi.cast("int32_t *", ptr[3]),
            "tma": ffi.cast("uint8_t *", ptr[4]), "timed": ffi.cast("uint8_t *", ptr[5]),
            "bits": ffi.cast("int32_t *", ptr[6]), "macs": ffi.cast("double *", ptr[7]),
            "barrier": cost.cycles["barrier"], "launch": cost.cycles["launch"],
            "dma_latency": cost.dma.latency, "dma_rate": cost.dma.bytes_per_cycle,
            "tma_latency": cost.tma.latency, "tma_rate": cost.tma.bytes_per_cycle,
            "mma_latency": cost.mma.latency, "mma_move": cost.mma.move_bytes_per_cycle})
        self._ptr = ptr
        self.lib, self.ffi = lib, ffi
        self._slice = _columns(ffi, "cq_slice", {
            "start": "f8", "end": "f8", "pid": "i4", "tid": "i4", "row": "i4", "lanes": "i4",
            "mask": "u4", "kind": "u1", "masked": "u1"})
        self._detail = _columns(ffi, "cq_detail", {
            "bytes": "f8", "code": "i4", "what": "i4", "index": "i4", "slot": "i4",
            "ip": "i4", "row": "i4"})
        self._flow = _columns(ffi, "cq_flow", {
            "kind": "i4", "n": "i4", "pid": ("i4", 3), "tid": ("i4", 3), "t": ("f8", 3)})
        lib.cq_trace_start(c, self._model)

    def between(self, lib, ffi, c) -> None:
        """Between two slices of steps: the slices so far to the sink, which C then
        forgets (unless the sink can not take them yet)."""
        if self.sink is None:
            return
        self.end = lib.cq_trace_end(c)
        n = ffi.new("int64_t *")
        ptr = lib.cq_trace_slices(c, n)
        if not n[0]:
            return
        # views of C's records, valid while it does not run
        slices = np.frombuffer(ffi.buffer(ptr, n[0] * ffi.sizeof("cq_slice")), self._slice)
        nd = ffi.new("int64_t *")
        dptr = lib.cq_trace_details(c, nd)
        details = np.frombuffer(ffi.buffer(dptr, nd[0] * ffi.sizeof("cq_detail")),
                                self._detail) if nd[0] else np.zeros(0, self._detail)
        if self.sink.take(self, slices, details, np.zeros(0, self._flow)):
            self.handed += len(slices)
            lib.cq_trace_forget_slices(c)

    def finish(self, lib, ffi, c, stopped: bool) -> None:
        lib.cq_trace_finish(c, int(stopped))
        self.between(lib, ffi, c)
        n = ffi.new("int64_t *")
        ptr = ffi.gc(lib.cq_trace_take_slices(c, n), lib.cq_trace_release)
        # the slices stay where C wrote them (``ptr`` keeps them): no copy
        slices = np.frombuffer(ffi.buffer(ptr, n[0] * ffi.sizeof("cq_slice")), self._slice) \
            if n[0] else np.zeros(0, self._slice)
        details = _read(ffi, lib.cq_trace_details, c, "cq_detail", self._detail)
        flows = _read(ffi, lib.cq_trace_flows, c, "cq_flow", self._flow)
        procs = _read(ffi, lib.cq_trace_processes, c, "cq_process", _columns(
            ffi, "cq_process", {"pid": "i4", "launch": "i4", "kernel": "i4", "rank": "i4",
                                "nwarps": "i4", "ncopies": "i4", "index": ("i8", 3)}))
        stats = np.frombuffer(ffi.buffer(lib.cq_trace_stats(c), max(len(self.rows), 1) *
                                         ffi.sizeof("cq_stat")),
                              _columns(ffi, "cq_stat", {"steps": "i8", "lanes": "i8",
                                                        "slots": "i8", "cycles": "f8",
                                                        "wait": "f8"})).copy()
        self.end = lib.cq_trace_end(c)
        self.recorded = (slices, details, flows, procs, stats, ptr)

    # ------------------------------------------------------------------ the file

    @property
    def scale(self) -> float:
        """Microseconds per cycle."""
        return 1.0 / (self.cost.clock_ghz * 1000.0)

    def exact(self, details, flows) -> bool:
        """Whether native/trace_text.c writes every number of the slices recorded so far
        (the latest ends at ``end``), of ``details`` and of ``flows`` exactly: times
        (microseconds, never negative, a slice's end never before its start) below
        ``EXACT_US``, copies' bytes below 2^63."""
        latest = max([self.end] + [float(flows["t"][flows["n"] > k, k].max(initial=0.0))
                                   for k in range(flows["t"].shape[1])])
        return round(latest * self.scale, 4) < EXACT_US and \
            float(details["bytes"].max(initial=0.0)) < 2.0 ** 63

    def label(self, details, at: dict) -> np.ndarray:
        """The names and places of wait and copy slices by their ``details``: per detail
        the numbers of its name and its where in ``at`` ((sort, text) -> number, each
        text once, numbered as it first comes: (``"name"``, a wait's name), (``"copy"``,
        a copy's name but the bytes it ends with), (``"where"``, a wait's or a copy's
        where))."""
        label = np.zeros((len(details), 2), np.int32)
        # a detail's row tells a wait's (its slice's row) from a copy's (-1)
        waits = details["row"] >= 0
        for wait, columns, sort, make, to in (
                (True, ("code", "what", "index", "slot", "row"), "name", self._wait_name, 0),
                (True, ("row",), "where", lambda row: self.rows[row].where, 1),
                (False, ("code", "index"), "copy", self._copy_text, 0),
                (False, ("code", "ip"), "where", self._copy_where, 1)):
            d = np.flatnonzero(waits == wait)
            if not d.size:
                continue
            keys = np.stack([details[c][d] for c in columns], 1)
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
            ids = [at.setdefault((sort, make(*key)), len(at)) for key in unique.tolist()]
            label[d, to] = np.array(ids, np.int32)[inverse.ravel()]
        return label

    def text(self, slices, details, flows, strings: list, tables: dict, comma: bool):
        """The file's events of these records, as native/trace_text.c writes them with
        ``strings`` (JSON, bytes), numbered by ``tables`` (cq_trace_text's per-row,
        per-detail and per-flow-kind string numbers): (events, text) chunks, each in the
        buffer of the one before (write it before asking for the next)."""
        lib, ffi = self.lib, self.ffi
        at = np.cumsum([0] + [len(s) for s in strings], dtype=np.int64)
        blob = b"".join(strings)
        keep = {name: np.ascontiguousarray(t, np.int32) for name, t in tables.items()}
        keep.update(at=at, slices=np.ascontiguousarray(slices),
                    details=np.ascontiguousarray(details), flows=np.ascontiguousarray(flows))
        ptr = {name: ffi.from_buffer(a) for name, a in keep.items()}
        tx = ffi.new("cq_trace_text *", {
            "slices": ffi.cast("cq_slice *", ptr["slices"]), "nslices": len(slices),
            "details": ffi.cast("cq_detail *", ptr["details"]),
            "flows": ffi.cast("cq_flow *", ptr["flows"]), "nflows": len(flows),
            "scale": self.scale, "text": ffi.from_buffer(blob),
            "at": ffi.cast("int64_t *", ptr["at"]), "comma": int(comma),
            **{name: ffi.cast("int32_t *", ptr[name]) for name in tables}})
        cap = max(CHUNK, 256 + 2 * max(map(len, strings), default=0))
        buf = ffi.new("char[]", cap)
        while True:
            before = tx.events
            n = lib.cq_trace_text_next(tx, buf, cap)
            if not n:
                return
            yield tx.events - before, ffi.buffer(buf, n)

    # ------------------------------------------------------------------ the Trace

    def trace(self, result=None, error=None) -> Trace:
        slices, details, flows, procs, stats, _ = self.recorded
        processes = {HOST_PID: "host"}
        threads = {(HOST_PID, 0): "host program"}
        for p in procs.tolist():
            pid, launch, kernel, rank, nwarps, ncopies, index = p
            if pid != HOST_PID:
                processes[pid] = f"block ({', '.join(map(str, index[:rank]))}) of launch " \
                                 f"{launch}"
                for w in range(nwarps):
                    threads[(pid, w)] = f"warp {w}"
            for k in range(ncopies):
                threads[(pid, COPY_TID + k)] = "copies" if k == 0 else f"copies {k}"
        return NativeTrace(self, self._flows(flows), processes, threads,
                           self._stats(stats, procs), self.cost.clock_ghz, result, error)

    def _stats(self, stats, procs) -> list:
        """The statements' rows in the order the reference makes them: the host code's,
        then each kernel's as its first block runs."""
        kernels = list(dict.fromkeys(k for k in procs["kernel"].tolist() if k >= 0))
        order = dict.fromkeys(r for code in [0] + [k + 1 for k in kernels]
                              for r in self.row_of[code])
        out = []
        for r in order:
            row, s = self.rows[r], stats[r]
            out.append(StatRow(row.where, row.text, int(s["steps"]), int(s["lanes"]),
                               int(s["slots"]), float(s["cycles"]), float(s["wait"])))
        return out

    def _flows(self, flows) -> list:
        columns = zip(*(flows[f].tolist() for f in ("kind", "n", "pid", "tid", "t")))
        return [Flow(k, FLOWS[kind], [(pid[j], tid[j], t[j]) for j in range(n)])
                for k, (kind, n, pid, tid, t) in enumerate(columns)]

    def _slices(self, cols, details) -> list:
        rows = self.rows
        names = {}
        out = []
        for start, end, pid, tid, row, lanes, mask, kind, masked in cols.tolist():
            if kind == 0:
                out.append(Slice(pid, tid, rows[row].text, start, end, "run", rows[row].where,
                                 lanes, hex(mask) if masked else ""))
            elif kind == 1:
                nbytes, code, what, index, slot, ip, _ = details[mask]
                key = (code, what, index, slot, row)
                name = names.get(key)
                if name is None:
                    name = names[key] = self._wait_name(*key)
                out.append(Slice(pid, tid, name, start, end, "wait", rows[row].where))
            elif kind == 2:
                nbytes, code, what, index, slot, ip, _ = details[mask]
                out.append(Slice(pid, tid, f"{self._copy_text(code, index)} ({int(nbytes)} B)",
                                 start, end, "copy", self._copy_where(code, ip), lanes))
            else:
                out.append(Slice(pid, tid, self._launch_name(row), start, end, "launch",
                                 rows[row].where, lanes))
        return out

    def _copy_text(self, code, index) -> str:
        """A copy slice's name but its bytes."""
        return self.codes[code].dmas[index].text

    def _copy_where(self, code, ip) -> str:
        return self.rec._where(self.progs[code].ins[ip][SPAN])

    def _launch_name(self, row) -> str:
        return f"launch: {self.rows[row].text}"

    def _wait_name(self, code, what, index, slot, row) -> str:
        c = self.codes[code]
        kind = WAITS[what]
        if kind == "stopped":
            return f"still waiting when the run stopped: {self.rows[row].text}"
        text = {"nothing": "", "coll": lambda: c.colls[index].text,
                "event_slot": lambda: f"{c.events[index].name}[{slot}]",
                "event": lambda: c.events[index].name,
                "future": lambda: c.futures[index].name,
                "barrier": lambda: f"named barrier {index}"}[kind]
        return f"wait {text() if callable(text) else text}".rstrip()


class NativeTrace(Trace):
    """A native run's trace: its slices stay C's records until ``slices`` is first read,
    and what needs no ``Slice`` object reads the records: ``end``, ``first`` and the file
    (croqvm.trace.output, by the tracer's ``label``, ``exact`` and ``text``). A trace
    whose slices went to a sink as the run went holds those the sink has not taken."""

    def __init__(self, tracer: NativeTracer, flows, processes, threads, stats, clock_ghz,
                 result=None, error=None):
        super().__init__(self._made, flows, processes, threads, stats, clock_ghz, result,
                         error)
        self._tracer = tracer

    @property
    def tracer(self) -> NativeTracer:
        """What recorded it: the records, and what writes its file from them."""
        return self._tracer

    def _kept(self) -> tuple:
        """The slices' records and their details; an error where the slices went to the
        trace's file as the run went."""
        if self._tracer.handed:
            raise ValueError("this trace's slices were written to its file as the run went "
                             "(record(..., file=...)): read them from the file")
        return self._tracer.recorded[:2]

    def _made(self) -> list:
        cols, details = self._kept()
        return self._tracer._slices(cols, details.tolist())

    @property
    def end(self) -> float:
        if not callable(self._slices):
            return super().end
        return self._tracer.end       # C's, kept as it recorded: no pass over the records

    def first(self, kind: str):
        if not callable(self._slices):
            return super().first(kind)
        cols, details = self._kept()
        code = KINDS.index(kind)
        # in growing windows: the first of a kind is near the start, mostly
        at, size = 0, FIRST_WINDOW
        while at < len(cols):
            mine = np.flatnonzero(cols["kind"][at:at + size] == code)
            if mine.size:
                k = at + int(mine[0])
                needed = details.tolist() if kind in ("wait", "copy") else []
                return self._tracer._slices(cols[k:k + 1], needed)[0]
            at, size = at + size, 2 * size
        return None

    def exact(self) -> bool:
        """Whether native/trace_text.c writes every number of its file exactly
        (``NativeTracer.exact``)."""
        details, flows = self._tracer.recorded[1:3]
        return self._tracer.exact(details, flows)

    @property
    def scale(self) -> float:
        """Microseconds per cycle."""
        return self._tracer.scale
