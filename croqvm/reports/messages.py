"""Every runtime message croqvm writes, one template per kind (LANGUAGE.md §15.3;
docs/EXECUTION.md §14), and how messages write values.

An engine reports a runtime error as a *kind* (``croqvm.core.faults.Kind``, whose numbers are
the ones a C engine uses) and the kind's *arguments*: ints, floats, lane sets and indices into the
module's tables. Python formats every message from this catalogue, whichever engine ran,
so the texts are identical. ``TEMPLATES[kind]`` declares the arguments, in order, as
``name:type``; the template names them as ``str.format`` fields. Argument types:

  int, float       a number; a float as ``print`` writes it (%g, ``nan``)
  dtype            a dtype code, written as its name
  tuple / shape    ints written ``(0, 16)`` / ``[16, 8]``
  fragshape        a fragment's extents, ``[16, ?]`` for one not known yet (DYNAMIC)
  dims / list      ints written ``16 x 8`` / ``0, 16``
  lanes            lane numbers, written ``lane 5`` / ``lanes 3, 16-31``; ``{x.are}`` and
                   ``{x.have}`` agree with them
  unit             a unit's lane count (32, 128); ``{x.noun}``, ``{x.plural}``, ``{x.level}``
  value            (dtype code, number): a register's value, written as ``print`` would
  where            a span index, written ``FILE:LINE:COL``
  source           a span index, written as the source text it covers (one line)
  slot_of_event    (event, slot): the slot's name, ``full[1]`` (``full`` for one slot)
  buffer           a buffer instance: (code, slot, element) with code -1 for the host
                   program, else the kernel index; element -1 outside a buffer array.
                   Written as its name (``sa[1]``); ``{x.decl}`` is where it is declared
  slot, future, event, frag, access, dma, coll
                   an index into that table of the code that ran, written as the name
                   (buffer declaration, future, event, fragment) or the text (access,
                   DMA, collective site) the table gives
  loadsite         the collective site of an MMA_LOAD, written as its text, or -1 (an
                   MMA_LOAD without a site, at host level), written ``mma.load``
  register         a register of the code that ran: ``variable 'x'`` when it holds a named
                   variable (``Code.reg_names``), else ``register r12``
  string           a string of the code that ran (``Code.strings``), verbatim (ASSERT)
  print            (print format, values of its register pieces), written as ``print``
                   would (ASSERT_FMT)
  typed            (one of the types above, a value of it): operands of several types
  text             words of the template's own vocabulary (labels)
"""
from __future__ import annotations

import numpy as np

from ..bytecode.module import DYNAMIC, PieceKind
from ..core import dtypes
from ..core.faults import Kind
from ..core.limits import GRID_LIMIT_TAIL, TOO_MANY_THREADS, UNIT_OF_LANES, shared_limit_message
from ..core.numerics import decode, format_float
from ..core.records import dataclass


@dataclass(frozen=True)
class Template:
    args: tuple[tuple[str, str], ...]    # (name, type) in order
    text: str


def _t(args: str, text: str) -> Template:
    return Template(tuple(tuple(a.split(":")) for a in args.split()), text)


_SHAPES = "MMA: matrix shapes do not match: `{x}'({xs}) v.s. `{y}'({ys})."

TEMPLATES = {
    Kind.STEP_LIMIT: _t("limit:int", "exceeded the step limit of {limit} warp-instructions"),
    Kind.GRID_BOUND: _t("dim:int bound:int", "the parallel bound of grid dimension {dim} is "
                        "{bound}: it should be greater than 0."),
    Kind.GRID_LIMIT: _t("dim:int blocks:int limit:int", "the grid of this launch has {blocks} "
                        "blocks in dimension {dim}: " + GRID_LIMIT_TAIL),
    Kind.SHARED_LIMIT: _t("slot:slot used:int", "allocating '{slot}': " +
                          shared_limit_message("{used}") + "."),
    Kind.TOO_MANY_THREADS: _t("", TOO_MANY_THREADS),
    Kind.BLOCK_SIZE: _t("size:int", "the block size of this launch is {size}: it should be "
                        "greater than 0."),
    Kind.FLOAT_TO_INT: _t("value:float dtype:dtype", "value {value} out of range for "
                          "'{dtype}'."),
    Kind.DIVISION_BY_ZERO: _t("", "integer division by zero."),
    Kind.SHIFT_COUNT: _t("count:int dtype:dtype", "shift count {count} out of range for "
                         "'{dtype}'."),
    Kind.ALLOC_EXTENT: _t("extent:int", 'The mdspan size "{extent}" is invalid!'),
    Kind.ALLOC_BUFFER: _t("buffer:slot extents:dims", "can not allocate buffer '{buffer}' "
                          "of {extents} elements."),
    Kind.ALLOC_TILE: _t("dma:dma extents:dims", "can not allocate the '{dma}' tile of "
                        "{extents} elements."),
    Kind.ALLOC_FRAGMENT: _t("frag:frag extents:dims", "can not allocate fragment '{frag}' "
                            "of {extents} elements."),
    Kind.BUFFER_ARRAY_INDEX: _t("index:int buffer:slot count:int", "index {index} is out of "
                                "range for buffer array '{buffer}' [0, {count})."),
    Kind.BUFFER_BEFORE_DECLARATION: _t("buffer:slot", "buffer '{buffer}' is used before its "
                                       "declaration executed."),
    Kind.OUT_OF_RANGE: _t("access:access indices:list index:int dim:int lo:int hi:int",
                          "out-of-range access {access}.at({indices}): index {index} of "
                          "dimension {dim} is not in [{lo}, {hi})."),
    Kind.UNINITIALISED: _t("access:access indices:list buffer:buffer", "read of "
                           "uninitialised element {access}.at({indices}) (buffer declared "
                           "at {buffer.decl})."),
    Kind.FUTURE_NO_DATA: _t("future:future", "future '{future}' has no data."),
    Kind.FUTURE_NOT_WAITED: _t("future:future", "future '{future}' is not waited before "
                               "using."),
    Kind.FUTURE_WAITED_TWICE: _t("future:future", "future '{future}' has been waited "
                                 "multiple times."),
    Kind.NEVER_WAITED: _t("issued:where future:future", "async copy issued at {issued} into "
                          "'{future}' was never waited."),
    Kind.EMPTY_TILE: _t("buffer:buffer origin:tuple extents:shape", "tile of '{buffer}' at "
                        "origin {origin} has no elements (extents {extents})."),
    Kind.TILE_OUTSIDE: _t("buffer:buffer origin:tuple shape:shape", "tile of '{buffer}' at "
                          "origin {origin} lies outside {shape}."),
    Kind.DMA_SHAPE: _t("dma:dma tile:shape dst:shape", "'{dma}' copies a {tile} tile into a "
                       "{dst} destination; a tile smaller than its destination needs "
                       "'.zfill'."),
    Kind.EVENT_INDEX: _t("index:int event:event slots:int", "index {index} is out of range "
                         "for event array '{event}' [0, {slots})."),
    Kind.NOT_A_PARTICIPANT: _t("lane:int site:coll", "lane {lane} reaches '{site}' but is "
                               "not one of its participants."),
    Kind.DIVERGENT_COLLECTIVE: _t("site:coll count:int idle:lanes warp:int", "'{site}' is a "
                                  "collective of {count} lanes but {idle} of warp {warp} "
                                  "{idle.are} not active here (divergent control flow)."),
    Kind.UNIT_INACTIVE: _t("site:coll unit:unit index:int idle:lanes", "{site} needs all "
                           "{unit} lanes of {unit.noun} {index}, but {idle} {idle.are} not "
                           "active here."),
    Kind.UNIT_TERMINATED: _t("site:coll unit:unit index:int gone:lanes", "{site} needs all "
                             "{unit} lanes of {unit.noun} {index}, but {gone} {gone.have} "
                             "terminated."),
    Kind.OPERANDS_DIFFER: _t("site:coll first:int lane:int operand:text mine:typed "
                             "theirs:typed", "operands of collective '{site}' differ "
                             "between lane {first} and lane {lane} ({operand} {mine} vs "
                             "{theirs})."),
    Kind.MMA_READ_OUTSIDE: _t("site:loadsite element:tuple buffer:buffer", "{site} reads "
                              "element {element} outside '{buffer}'."),
    Kind.UNINITIALISED_REGISTER: _t("register:register", "read of uninitialised "
                                    "{register}: no instruction has written it in this lane "
                                    "yet."),
    Kind.MMA_UNINITIALISED: _t("buffer:buffer element:list", "read of uninitialised element "
                               "{buffer}.at({element}) (buffer declared at {buffer.decl})."),
    Kind.FRAGMENT_EMPTY: _t("frag:frag", "fragment '{frag}' is used before it holds a tile."),
    Kind.MMA_SHAPES: _t("x:frag xs:fragshape y:frag ys:shape", _SHAPES),
    Kind.MMA_TILE_SHAPE: _t("x:frag xs:fragshape y:buffer ys:shape", _SHAPES),
    Kind.MMA_STORE_OWNERS: _t("frag:frag count:int unit:unit", "mma.store of '{frag}' at "
                              "block level would write the same destination from {count} "
                              "{unit.plural}; store inside the '{unit.level}' level."),
    Kind.MMA_PENDING: _t("frag:frag", "accumulator '{frag}' is used before the wait of "
                         "its asynchronous mma."),
    Kind.MMA_NOT_PENDING: _t("frag:frag", "no asynchronous mma on accumulator '{frag}' is "
                             "pending here: its operation future has been waited already."),
    Kind.ASSERT: _t("message:string", "{message}"),
    Kind.ASM_ON_CPU: _t("", "inline assembly ('__asm__') runs only on a GPU."),
    Kind.ASSERT_FMT: _t("message:print", "{message}"),
    Kind.FRAGMENT_INDEX: _t("frag:frag element:tuple shape:fragshape", "element {element} "
                            "is outside accumulator '{frag}' {shape}."),
    Kind.FRAGMENT_NOT_OWNED: _t("frag:frag element:tuple unit:unit owner:int", "element "
                                "{element} of accumulator '{frag}' is held by lane {owner} "
                                "of the {unit.noun}, not by this lane (the hardware's "
                                "fragment layout, LANGUAGE.md §11.7)."),
    Kind.SHUFFLE_INACTIVE: _t("partner:int", "the lane exchanges a value with lane "
                              "{partner} of its warp, which is not active here."),
    Kind.BAR_ID: _t("site:coll id:int", "'{site}' names barrier {id}, but named barriers "
                    "are numbered 1 to 15 (0 is the block barrier of 'sync.shared')."),
    Kind.BAR_COUNT: _t("site:coll count:int limit:int", "'{site}' waits for {count} threads, "
                       "but the count must be a positive multiple of 32 and at most the "
                       "{limit} threads of the block's warps."),
    Kind.BAR_COUNT_DIFFERS: _t("site:coll id:int count:int other:int", "'{site}' arrives at "
                               "barrier {id} with a count of {count} threads, but the "
                               "barrier's current phase began with a count of {other}."),
    Kind.GRID_FINISHED: _t("site:coll block:tuple", "deadlock: '{site}' waits for every block "
                           "of the cooperative launch, but block {block} finished the kernel "
                           "without reaching it."),
    Kind.GRID_RESIDENT: _t("site:coll blocks:int resident:int threads:int", "deadlock: "
                           "'{site}' waits for all {blocks} blocks of the cooperative launch, "
                           "but at most {resident} blocks of {threads} threads are resident "
                           "at once, and the others can not start."),
    Kind.EXTERN_CALL: _t("name:string", "'{name}' is defined in no file of this program: "
                         "croqvm has no code to run for it."),
    Kind.FUTURE_NOT_CONTIGUOUS: _t("future:future buffer:buffer origin:tuple extents:shape",
                                   "the data of future '{future}', a {extents} tile of "
                                   "'{buffer}' at origin {origin}, does not lie contiguous "
                                   "in memory, which a 'span_as' or element strides of it "
                                   "address."),
}

# The lines around a runtime error and a deadlock report (croqvm.reports.render), by name.
REPORTS = {
    "in_host": _t("function:text", "  in host code of '{function}'"),
    "in_kernel": _t("launch:where", "  in kernel launched at {launch}"),
    "in_kernel_lane": _t("launch:where block:tuple lane:int warp:int index:int",
                         "  in kernel launched at {launch}, block {block}, lane {lane} "
                         "(warp {warp}, lane {index})"),
    "in_call": _t("call:where", "  in the call at {call}"),
    "internal": _t("what:text", "internal error: {what}"),
    # deadlock reports (croqvm.reports.render.deadlock)
    "deadlock": _t("block:tuple", "deadlock: every live lane of block {block} is blocked"),
    "partial_group": _t("site:coll gone:lanes", "'{site}' was reached by only part of its "
                        "group: {gone} finished the kernel without arriving."),
    "warp": _t("warp:int lanes:lanes what:text", "  warp {warp} ({lanes}): {what}"),
    "warps": _t("first:int last:int lanes:lanes what:text",
                "  warps {first}-{last} ({lanes}): {what}"),
    "at_barrier": _t("site:coll where:where arrived:int need:int",
                     "{site} ({where}): arrived {arrived}/{need}"),
    "at_collective": _t("site:coll where:where arrived:int need:int",
                        "collective '{site}' ({where}): arrived {arrived}/{need}"),
    "at_event": _t("where:where statement:source slot:slot_of_event completed:int "
                   "arrivals:int need:int generation:int",
                   "{where} '{statement}': slot {slot}: completed generations {completed}, "
                   "arrivals {arrivals}/{need}; these lanes wait for generation {generation}"),
    "at_named_barrier": _t("where:where statement:source barrier:int arrived:int need:int",
                           "{where} '{statement}': named barrier {barrier}: arrived "
                           "{arrived}/{need} threads"),
    "at_grid": _t("site:coll where:where", "grid barrier '{site}' ({where}), waiting for "
                  "the other blocks"),
    "named_barrier_short": _t("barrier:int need:int arrived:int",
                              "named barrier {barrier} waits for {need} threads, but only "
                              "{arrived} arrived before every warp was blocked or done: the "
                              "count must be the threads (32 per warp) of the warps that reach "
                              "the barrier in each phase."),
    "suspended": _t("lanes:lanes where:where", "  {lanes} suspended in divergent code at "
                    "{where}"),
    "suspended_at_start": _t("lanes:lanes", "  {lanes} suspended in divergent code at the "
                             "kernel's start"),
    "needs_credits": _t("slot:slot_of_event", "no lane has triggered '{slot}' yet; a "
                        "credit-based pipeline needs initial credits: trigger every slot "
                        "once before the loop, or declare the event '= ready'."),
    "same_warp_trigger": _t("slot:slot_of_event lanes:lanes", "no lane has triggered "
                            "'{slot}' yet, and {lanes} of the same warp {lanes.are} suspended "
                            "until the waiting lanes leave their divergent code, so no trigger "
                            "of theirs can release the wait: trigger before the divergent "
                            "code, or from another warp."),
    "stale_phase": _t("slot:slot_of_event generation:int completed:int", "generation "
                      "{generation} of '{slot}' completed, but the slot has completed "
                      "{completed} generations by now; a wait '.at(order)' tells generations "
                      "apart only by their parity, so a waiter two generations behind waits "
                      "for the next generation of that parity: let no trigger run more than "
                      "one generation ahead of the slowest waiter."),
    "cluster_short": _t("slot:slot_of_event need:int arrivals:int", "'{slot}' counts the "
                        "arrivals of every block of its cluster ('trigger.cluster'): a "
                        "generation needs {need}, but only {arrivals} arrived before every "
                        "warp of the cluster was blocked or done, so the lanes of some block "
                        "did not reach their 'trigger.cluster'."),
    # race reports (croqvm.interp.racereport): the headline at the later access, the
    # lanes of each access, and why nothing orders the two
    "race": _t("storage:text buffer:buffer element:tuple here:text there:text where:where "
               "why:text", "data race on {storage} '{buffer}' element {element}: {here} here, "
               "{there} at {where}; {why}."),
    "race_lanes": _t("storage:text buffer:buffer element:tuple here:text why:text",
                     "data race on {storage} '{buffer}' element {element}: {here} here by "
                     "several lanes of one warp; {why}."),
    "race_by": _t("what:text block:tuple warps:text lanes:lanes",
                  "{what} in block {block}, {warps} ({lanes})"),
    "race_by_host": _t("what:text", "{what} on the host lane"),
    "races_more": _t("count:int", "... and {count} more data races"),
    "why_none": _t("", "no barrier or event orders them"),
    "why_blocks": _t("", "the blocks of one launch are not ordered with each other"),
    "why_async": _t("launch:where", "the kernel launched at {launch} is asynchronous, and "
                    "neither 'sync.global' nor a synchronous launch comes between them"),
    "why_stream": _t("launch:where stream:text", "the kernel launched at {launch} runs on "
                     "stream '{stream}', and neither 'sync.global' nor a synchronous launch on "
                     "that stream comes between them"),
    "why_trigger": _t("trigger:where slot:slot_of_event wait:where access:text",
                      "the trigger at {trigger} completes the generation of '{slot}' that the "
                      "wait at {wait} waits for, but it comes before the {access}"),
    "why_copy": _t("wait:where", "the copy is in flight until its wait at {wait}"),
    "why_copy_open": _t("", "the copy is in flight: nothing has waited for it yet"),
    "why_mma": _t("wait:where", "the asynchronous mma reads its operands until its wait at "
                  "{wait}"),
    "why_mma_open": _t("", "the asynchronous mma reads its operands until its wait, and "
                       "nothing has waited for it yet"),
    "why_lanes": _t("", "the lanes of a warp are not ordered within one instruction"),
    "why_no_wait": _t("event:text access:text other:text trigger:where",
                      "nothing waits on '{event}' before this {access}; the lanes of the "
                      "{other} trigger it at {trigger}"),
}

# How race reports name what an access did: the participle (``read``, ``written by
# 'mma.store'``) and the noun (``read``, ``'mma.store'``), by croqvm.interp.checks.Access
# kind; ``{text}`` is the statement that makes the access, for copies and tiles.
ACCESS_DONE = {
    "read": "read", "write": "written", "update": "updated", "fill": "initialised",
    "copy read": "read by '{text}'", "copy write": "written by '{text}'",
    "async copy read": "read by the async copy '{text}'",
    "async copy write": "written by the async copy '{text}'",
    "tile read": "read by '{text}'", "tile write": "written by '{text}'",
    "atomic": "updated atomically",
    "async tile read": "read by the asynchronous '{text}'",
}
ACCESS_NOUN = {
    "read": "read", "write": "write", "update": "update", "fill": "initialisation",
    "copy read": "'{text}'", "copy write": "'{text}'", "async copy read": "copy '{text}'",
    "async copy write": "copy '{text}'", "tile read": "'{text}'", "tile write": "'{text}'",
    "atomic": "atomic",
    "async tile read": "asynchronous '{text}'",
}


# --------------------------------------------------------------------------- writing values

def format_value(v, t: dtypes.DType) -> str:
    """One lane's value of type ``t`` as ``print`` writes it (LANGUAGE.md §13.2, D19)."""
    if t.kind == "bool":
        return "true" if v else "false"
    if t.name in dtypes.BIT_STORED:
        return format_float(float(decode(np.asarray(v), t)))
    if t.is_float:
        return format_float(float(v))
    return str(int(v))


def format_lanes(lanes) -> str:
    """Lane numbers as ranges: ``16-31``, ``3, 5-7``."""
    lanes = sorted(int(x) for x in lanes)
    parts, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        parts.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ", ".join(parts)


def lanes_phrase(lanes) -> str:
    """``lane 5`` or ``lanes 16-31``."""
    lanes = list(lanes)
    return f"lane {format_lanes(lanes)}" if len(lanes) == 1 else f"lanes {format_lanes(lanes)}"


def tuple_text(values) -> str:
    """``(0, 16)``: origins, element coordinates and block indices in messages."""
    return "(" + ", ".join(str(int(v)) for v in values) + ")"


def shape_text(values) -> str:
    """``[16, 8]``: extents in messages, as the language writes mdspans."""
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def print_registers(fmt) -> list[int]:
    """The registers whose values print format ``fmt`` shows, in order."""
    return [x for kind, x in fmt.pieces if kind == PieceKind.REG]


def print_text(code, fmt, values) -> str:
    """Print format ``fmt`` of ``code`` with ``values`` for its registers (in the order of
    ``print_registers``), without its newline, as ``print`` writes it (§13.2)."""
    out, vals = [], iter(values)
    for kind, x in fmt.pieces:
        out.append(code.strings[x] if kind == PieceKind.STR else
                   format_value(next(vals), dtypes.BY_CODE[code.regs[x]]))
    return "".join(out)


class _Lanes:
    def __init__(self, lanes):
        lanes = [int(x) for x in lanes]
        one = len(lanes) == 1
        self.text, self.are, self.have = lanes_phrase(lanes), "is" if one else "are", \
            "has" if one else "have"

    def __format__(self, spec):
        return self.text


class _Unit:
    def __init__(self, lanes):
        u = UNIT_OF_LANES[int(lanes)]
        self.lanes, self.noun, self.plural, self.level = u.lanes, u.noun, u.plural, u.level

    def __format__(self, spec):
        return str(self.lanes)


class _Buffer:
    def __init__(self, name, decl):
        self.name, self.decl = name, decl

    def __format__(self, spec):
        return self.name


class Context:
    """What messages need besides their arguments: the module's span table
    (``croqvm.core.source.SpanTable``), the function that ran, and the code whose tables
    argument indices refer to."""

    def __init__(self, spans, fn, code):
        self.spans, self.fn, self.code = spans, fn, code

    def code_of(self, k: int):
        """The host program (-1) or kernel ``k`` of the function."""
        return self.fn.host if k < 0 else self.fn.kernels[k].code

    def buffer_name(self, code, slot: int, element: int) -> str:
        decl = code.buffers[slot]
        return f"{decl.name}[{element}]" if decl.array else decl.name



def _slot_name(decl, s: int) -> str:
    return f"{decl.name}[{s}]" if decl.slots > 1 else decl.name


def _buffer(cx: Context, ref):
    code_index, slot, element = ref
    code = cx.code_of(code_index)
    return _Buffer(cx.buffer_name(code, slot, element), cx.spans.where(code.buffers[slot].span))


# argument type -> what the template receives, given the context and the raw value
WRITERS = {
    "int": lambda cx, v: str(int(v)),
    "float": lambda cx, v: format_float(float(v)),
    "dtype": lambda cx, v: dtypes.BY_CODE[v].name,
    "tuple": lambda cx, v: tuple_text(v),
    "shape": lambda cx, v: shape_text(v),
    "fragshape": lambda cx, v: "[" + ", ".join("?" if d == DYNAMIC else str(int(d))
                                               for d in v) + "]",
    "dims": lambda cx, v: " x ".join(str(int(d)) for d in v),
    "list": lambda cx, v: ", ".join(str(int(x)) for x in v),
    "lanes": lambda cx, v: _Lanes(v),
    "unit": lambda cx, v: _Unit(v),
    "value": lambda cx, v: format_value(v[1], dtypes.BY_CODE[v[0]]),
    "where": lambda cx, v: cx.spans.where(v),
    "source": lambda cx, v: cx.spans.text(v),
    "slot_of_event": lambda cx, v: _slot_name(cx.code.events[v[0]], v[1]),
    "buffer": _buffer,
    "slot": lambda cx, v: cx.code.buffers[v].name,
    "register": lambda cx, v: f"variable '{cx.code.reg_names[v]}'" if cx.code.reg_names[v]
    else f"register r{v}",
    "future": lambda cx, v: cx.code.futures[v].name,
    "event": lambda cx, v: cx.code.events[v].name,
    "frag": lambda cx, v: cx.code.frags[v].name,
    "access": lambda cx, v: cx.code.accesses[v].text,
    "dma": lambda cx, v: cx.code.dmas[v].text,
    "coll": lambda cx, v: cx.code.colls[v].text,
    "loadsite": lambda cx, v: cx.code.colls[v].text if v >= 0 else "mma.load",
    "string": lambda cx, v: cx.code.strings[v],
    "print": lambda cx, v: print_text(cx.code, cx.code.prints[v[0]], v[1]),
    "typed": lambda cx, v: WRITERS[v[0]](cx, v[1]),
    "text": lambda cx, v: str(v),
}


def _fill(t: Template, args: tuple, cx) -> str:
    return t.text.format(**{name: WRITERS[ty](cx, v) for (name, ty), v in zip(t.args, args)})


def message(kind: Kind, args: tuple, cx: Context) -> str:
    """The text of a runtime error of ``kind`` with ``args``."""
    return _fill(TEMPLATES[kind], args, cx)


def _smaller_tile_hint(args: tuple, cx: Context) -> str | None:
    """A tile smaller than its destination: '.zfill' fits a tile cut at an edge, not the
    equal parts of 'chunkat', which a user meaning fixed-size tiles gets wrong silently."""
    _, tile, dst = args
    if any(t > d for t, d in zip(tile, dst)):
        return None
    return (f"'.zfill' is right for a tile cut short at the edge of its buffer. A 'chunkat' "
            f"tile is not cut: chunkat divides each dimension into equal parts (here "
            f"{shape_text(tile)}), which do not line up with fixed-size tiles of the other "
            f"operands; for {shape_text(dst)} tiles, the last one cut at the edge, use "
            f"'subspan({', '.join(str(int(d)) for d in dst)}).at(...)' with '.zfill'.")


def _block_size_hint(args: tuple, cx: Context) -> str:
    return ("a parallel level with more instances than a block holds belongs on the grid: "
            "annotate it ': block'")


def _gpu_hint(args: tuple, cx: Context) -> str:
    return "run it with '--device gpu' (device='gpu' in Python)"


def _define_hint(args: tuple, cx: Context) -> str:
    return "define it in the file, as a '__co_device__' or a C++ '__device__' function"


# kind -> the hint printed after its message, given the same arguments (None: no hint)
HINTS = {Kind.DMA_SHAPE: _smaller_tile_hint, Kind.TOO_MANY_THREADS: _block_size_hint,
         Kind.ASM_ON_CPU: _gpu_hint, Kind.EXTERN_CALL: _define_hint}


def hint(kind: Kind, args: tuple, cx: Context) -> str | None:
    """The hint of a runtime error of ``kind`` with ``args``, if it has one."""
    rule = HINTS.get(kind)
    return rule(args, cx) if rule else None


def report(name: str, args: tuple, cx: Context) -> str:
    """The report line ``name`` of ``REPORTS`` with ``args``."""
    return _fill(REPORTS[name], args, cx)
