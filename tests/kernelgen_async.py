"""The ``pipelines`` family of generated kernels (tests/kernelgen.py): the asynchrony of
warp-specialised Croqtile kernels, each construct drawn in valid random combinations.

A producer role (a warp or a warpgroup) hands ITEMS tiles of ``inp`` to one or two
consumer roles through a ring of STAGES shared slots (``shared T [R, W] tile[STAGES]``);
each consumer stores each tile it receives, its rows weighted by the row and the
consumer, into ``out``, so a tile read too early, too late or from the wrong slot shows
in the result. What is drawn:

- how the producer fills a slot: lanes storing elements, a synchronous ``dma.copy``,
  ``tma.copy`` or ``tma.copy.swiz<N>`` (N a swizzle whose span is one row of the tile, the
  combination TMA has), or an asynchronous ``dma.copy.async`` / ``tma.copy.async[.swiz<N>]``,
  with a second copy into a second ring beside it now and then;
- how the slot is handed over:
  - ``events``: ``shared event full[S], empty[S]`` with ``empty = ready`` or initial credits,
    ``wait full.at(order)`` / ``trigger empty.at(order)`` with orders kept growing (signed or
    unsigned, ``order++`` inside ``.at`` or apart) or modulo 2S, or plain slots
    ``full[k % S]``; an asynchronous copy is published by ``trigger full.at(order) after f``
    (``after f, f2`` for two copies), a synchronous one by a direct trigger;
  - ``future``: a shared future (``f = tma.any;`` or ``dma.any`` declared outside both
    branches) that the producer's copies fill and the consumer waits for, with ``empty``
    events for the way back;
  - ``barriers``: named barriers between the roles, ``__bar_arrive`` by the side that goes
    on and ``__bar_sync`` by the side that waits, two ids for the two directions;
- in a ``parallel c by 2 : cluster, b by B : block`` kernel, the consumers release a slot
  with ``trigger.cluster empty...`` in every block of the cluster (``events`` handover);
- now and then a trigger or an arrival left out (or no initial credits), which deadlocks:
  the engines must report the same deadlock.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from croqvm.core import dtypes
from kernelgen import FAMILIES, Case, _array

SIZES = {"s32": 4, "f32": 4, "f16": 2}
ACCUMULATOR = {"s32": "s32", "f32": "f32", "f16": "f32"}


@st.composite
def pipelines(draw) -> Case:
    t = draw(st.sampled_from(sorted(SIZES)))
    unit, width = draw(st.sampled_from([("group", 32), ("group-4", 128)]))
    handover = draw(st.sampled_from(["events", "events", "future", "barriers"]))
    cluster = handover == "events" and draw(st.integers(0, 3)) == 0
    consumers = draw(st.integers(1, 2))                  # consumer roles sharing each tile
    threads = (1 + consumers) * width                      # a named barrier's count
    stages = draw(st.integers(1, 3))
    items = draw(st.integers(1, 6)) if draw(st.integers(0, 9)) else 0
    nb = draw(st.integers(1, 2)) * (2 if cluster else 1)  # blocks: whole clusters of 2
    if handover == "future":
        fill = draw(st.sampled_from(["dma.async", "tma.async"]))
    else:
        fill = draw(st.sampled_from(["store", "dma", "tma", "dma.async", "tma.async",
                                     "dma.async", "tma.async"]))
    swizzle = 0
    if fill.startswith("tma") and draw(st.booleans()):
        # a swizzle whose span is one row of the tile, W elements of the tile's type
        options = [n for n in (32, 64, 128) if n // SIZES[t] <= width]
        swizzle = draw(st.sampled_from(options))
        w = swizzle // SIZES[t]
        rows = draw(st.integers(2, 4))
    else:
        w = draw(st.sampled_from([1, 3, 8, 16, 32]))
        rows = draw(st.integers(1, 3))
    joined = fill.endswith("async") and handover == "events" and draw(st.booleans())
    order_kind = draw(st.sampled_from(["grow", "grow++", "mod", "slot"]))
    order_type = draw(st.sampled_from(["u32", "int"]))
    ready = draw(st.booleans())
    missing = draw(st.integers(0, 7)) == 0               # a trigger or arrival left out
    skip = draw(st.integers(0, max(items - 1, 0)))        # the item that misses it
    ids = draw(st.lists(st.integers(1, 15), min_size=2, max_size=2, unique=True))

    modifier = f".swiz<{swizzle}>" if swizzle else ""
    copy = "tma.copy" if fill.startswith("tma") else "dma.copy"
    asynchronous = fill.endswith("async")

    def source(name: str) -> str:
        return f"{name}.subspan({rows}, {w}).at(b * {max(items, 1)} + k, 0)"

    def at(event: str, order: str = "order") -> str:
        return f"{event}[k % {stages}]" if order_kind == "slot" else f"{event}.at({order})"

    slot = f"k % {stages}" if order_kind == "slot" or handover == "barriers" \
        else f"order % {stages}"
    advance = {"grow": "order++;", "grow++": "order++;", "slot": "",
               "mod": f"order = (order + 1) % {2 * stages};"}[order_kind]

    # ---- the producer's filling of slot SLOT, and how it hands it over
    produce: list[str] = []
    if fill == "store":
        produce += [f"if (t < {w})",
                    f"  foreach r in [{rows}]",
                    (f"    tile[{slot}].at(r, t) = inp.at(b * {max(items, 1)} * {rows}"
                     f" + k * {rows} + r, t) + __to<{t}>(k);")]
        spin = draw(st.integers(0, 3))
        if spin:   # lanes of a warp finish the slot at different times, before the hand-over
            produce += ["mutable int spin = 0;",
                        f"while (spin < t % {spin + 1}) {{",
                        f"  if (t < {w}) tile[{slot}].at(0, t) += __to<{t}>(1);",
                        "  spin++;",
                        "}"]
    elif asynchronous:
        target = "f" if handover == "future" else "g"
        produce.append(f"{target} = {copy}.async{modifier} {source('inp')} => tile[{slot}];")
        if joined:
            produce.append(f"h = {copy}.async {source('inp2')} => tile2[{slot}];")
    else:
        produce.append(f"{copy}{modifier} {source('inp')} => tile[{slot}];")

    if handover == "events":
        if asynchronous:
            deps = "g, h" if joined else "g"
            inc = order_kind == "grow++" and not joined
            produce.append(f"trigger {at('full', 'order++' if inc else 'order')} after {deps};")
            if not inc:
                produce.append(advance)
        else:
            inc = order_kind == "grow++"
            produce.append(f"trigger {at('full', 'order++' if inc else 'order')};")
            if not inc:
                produce.append(advance)
        producer = [f"wait {at('empty')};", *produce]
    elif handover == "future":
        producer = [f"wait {at('empty')};", *produce, advance]
    else:
        if asynchronous:
            produce.append("wait g;")
        producer = [*produce, f"__bar_arrive({ids[0]}, {threads});",
                    f"__bar_sync({ids[1]}, {threads});"]

    # ---- the consumer: take the slot, weigh its rows into out, give it back
    take = {"events": f"wait {at('full')};", "future": "wait f;",
            "barriers": f"__bar_sync({ids[0]}, {threads});"}[handover]
    acc = ACCUMULATOR[t]
    use = [f"if (t < {w}) {{",
           f"  mutable {acc} sum = __to<{acc}>(0);",
           f"  foreach r in [{rows}]",
           f"    sum += __to<{acc}>(tile[{slot}].at(r, t)) * __to<{acc}>(r + p);"]
    if joined:
        use += [f"  foreach r in [{rows}]",
                f"    sum += __to<{acc}>(tile2[{slot}].at(r, t)) * __to<{acc}>(r + 7);"]
    use += ["  out.at(b, p - 1, k, t) = sum;", "}"]
    if handover == "barriers":
        give = f"__bar_arrive({ids[1]}, {threads});"
    else:
        trig = "trigger.cluster" if cluster else "trigger"
        give = f"{trig} {at('empty', 'order++' if order_kind == 'grow++' else 'order')};"
        if order_kind != "grow++" and advance:
            give += f"\n{advance}"
    credits: list[str] = []
    if handover != "barriers" and not ready and not missing:
        trig = "trigger.cluster" if cluster else "trigger"
        credits = [f"foreach s in [{stages}]", f"  {trig} empty[s];"]
    if missing and (ready or handover == "barriers"):
        # the consumer leaves out one give-back (with no ready credits, the missing
        # initial credits are the fault instead)
        give = f"if (k != {skip}) {{\n  " + give.replace("\n", "\n  ") + "\n}"
    consumer = [take, *use, *give.split("\n")]

    def body(lines: list[str], indent: str) -> str:
        return "".join(f"{indent}{line}\n" for line in lines if line)

    uses_order = order_kind != "slot" and handover != "barriers"
    order_decl = f"mutable {order_type} order = 0;" if uses_order else ""
    future_decl = f"f = {'tma' if fill.startswith('tma') else 'dma'}.any;\n      " \
        if handover == "future" else ""
    events_decl = "" if handover == "barriers" else \
        (f"shared event empty[{stages}]{' = ready' if ready else ''};\n    "
         if handover == "future"
         else f"shared event full[{stages}], empty[{stages}]{' = ready' if ready else ''};\n    ")
    ring2 = f"    shared {t} [{rows}, {w}] tile2[{stages}];\n" if joined else ""
    # b is a block's index in the grid, c its place in its cluster (b % 2)
    level = f"parallel c by 2 : cluster, b by {nb} : block" if cluster \
        else f"parallel b by {nb} : block"
    n_in = nb * max(items, 1) * rows
    params = [f"global {t} [{n_in}, {w}] inp"]
    if joined:
        params.append(f"global {t} [{n_in}, {w}] inp2")
    params.append(f"global {acc} [{nb}, {consumers}, {max(items, 1)}, {w}] out")
    text = f"""__co__ void pipelines({", ".join(params)}) {{
  {level} {{
    {events_decl}shared {t} [{rows}, {w}] tile[{stages}];
{ring2}    parallel p by {1 + consumers} : {unit}, t by {width} : thread {{
      {future_decl}inthreads.async (p == 0) {{
{body([order_decl], "        ")}        foreach k in [{items}] {{
{body(producer, "          ")}        }}
      }}
      inthreads.async ({"p >= 1" if consumers > 1 else "p == 1"}) {{
{body([order_decl, *credits], "        ")}        foreach k in [{items}] {{
{body(consumer, "          ")}        }}
      }}
    }}
  }}
}}
"""
    args = [_small(draw, t, (n_in, w))]
    if joined:
        args.append(_small(draw, t, (n_in, w)))
    args.append(np.zeros((nb, consumers, max(items, 1), w), dtypes.BY_NAME[acc].numpy_param))
    return Case(text, "pipelines", args, max_steps=1_000_000)


def _small(draw, t: str, shape) -> np.ndarray:
    """Inputs whose weighted sums stay exact in the accumulator: small integers (in
    floating point as well), so every difference in what was moved shows."""
    a = _array(draw, "s8", shape).astype(np.int64) % 17 - 8
    return a.astype(dtypes.BY_NAME[t].numpy_param)


FAMILIES["pipelines"] = pipelines
