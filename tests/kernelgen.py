"""Random valid kernels for the differential tests of the engines
(tests/test_native_generated.py): hypothesis strategies that draw a Croqtile source text
together with the arguments to call it with.

Six families, each aimed at one part of the machine:

- ``lanes``: per-lane code in a thread region with variables of every element type;
  nested ``if``/``else`` on lane numbers and data (divergence), ``foreach`` and ``while``
  loops with ``break`` and ``continue``, ``yield``, barriers exchanging values through
  shared memory, printing, asserts and the run-time errors of arithmetic (division by
  zero, shift counts, conversions out of range) and of element access;
- ``events``: producer and consumer warps (or warpgroups) handing slots over with events
  through several generations, with credits or ``= ready``, and now and then a trigger
  missing, which deadlocks;
- ``copies``: double and triple buffering with asynchronous copies, ``swap`` and
  ``rotate``, into shared or local memory, over tiles that do not divide the matrix
  (partial tiles, with and without ``.zfill``);
- ``mma``: every MMA layout and operand type, at warp, warpgroup and block level, with
  several k steps, stores with and without ``.transp`` and partly out of range;
- ``views`` (tests/kernelgen_data.py): the data side of kernels -- register fragments,
  ``apply``, ``reduce_*``, ``all_reduce_*`` and ``copy``; the view algebra (``subspan``,
  ``step``, ``at``, ``view`` with and without element strides, ``chunkat``, ``span_as``,
  ``sqz``) as DMA operands and in element access; ranges with steps and ``unroll``;
  math builtins, ``select``, conversions to the narrow float formats, atomics and calls
  of ``__co_device__`` functions; and views and indices out of range, which fault.
- ``pipelines`` (tests/kernelgen_async.py): the asynchrony of warp-specialised kernels,
  a producer handing tiles to consumers through a ring of shared slots, filled by lanes,
  DMA or TMA copies (swizzled or not, synchronous or asynchronous) and handed over by
  event arrays with cyclic orders and ``trigger ... after``, by a shared future or by
  named barriers, with ``trigger.cluster`` in cluster kernels, and now and then a
  trigger or arrival missing, which deadlocks.

A kernel is valid by construction; what it computes is whatever the engines compute, and
the test requires them to agree bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from croqvm.core import dtypes

INTS = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")
FLOATS = ("f16", "bf16", "f32", "f64", "tf32", "f8_e4m3", "f8_e5m2")
# interesting float inputs beside uniform ones: zeros, infinities, NaN, a subnormal of
# every format, values that round differently in the narrow formats, and big ones
SPECIAL = (0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 6e-8, 2.0 ** -140, 1.0 + 2.0 ** -10,
           65504.0, 70000.0, 448.0, 1e30, -3.5, 2.5, 0.1)


@dataclass
class Case:
    """A generated kernel: its source, the function and the arguments to call it with."""
    source: str
    func: str
    args: list = field(default_factory=list)
    max_steps: int = 400_000
    independent: bool = True          # no block writes what another block reads or writes


def _array(draw, name: str, shape) -> np.ndarray:
    """Random contents of a parameter of element type ``name``, in its parameter dtype."""
    t = dtypes.BY_NAME[name]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    if t.is_int:
        info = np.iinfo(t.numpy_param)
        small = rng.integers(-20 if t.signed else 0, 20, size=shape)
        wide = rng.integers(info.min, info.max, size=shape, dtype=np.int64 if t.signed
                            else np.uint64, endpoint=True)
        return np.where(rng.random(shape) < 0.5, small, wide).astype(t.numpy_param)
    values = rng.uniform(-8, 8, size=shape)
    special = rng.choice(np.array(SPECIAL), size=shape)
    with np.errstate(over="ignore"):      # big specials become infinities in narrow types
        return np.where(rng.random(shape) < 0.25, special, values).astype(t.numpy_param)


# --------------------------------------------------------------------------- lanes

def _int_range(name: str) -> tuple[int, int]:
    t = dtypes.BY_NAME[name]
    return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)


class _Lanes:
    """The generator of one ``lanes`` kernel: variables ``v0..``, loop counters, and the
    parts of the program drawn so far."""

    def __init__(self, draw, nt: int):
        self.draw = draw
        self.nt = nt
        self.types = draw(st.lists(st.sampled_from(INTS + FLOATS), min_size=1, max_size=4))
        self.loops: list[str] = []        # loop variables in scope (ints)
        self.serial = 0
        self.exchange = False             # a shared buffer is needed
        self.independent = True           # no store into another block's elements

    def name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def pick(self, options, weights=None):
        if weights is None:
            return self.draw(st.sampled_from(options))
        total = sum(weights)
        at = self.draw(st.integers(0, total - 1))
        for option, w in zip(options, weights):
            if at < w:
                return option
            at -= w
        raise AssertionError

    # ---- expressions of an exact type

    def literal(self, t: str) -> str:
        if t in INTS:
            hi = _int_range(t)[1]
            value = self.pick([self.draw(st.integers(0, 9)), self.draw(st.integers(0, hi)),
                               hi], [6, 2, 1])
            # an integer literal is s32, s64, u32 or u64 by its value and 'u' (§2.2)
            return f"__to<{t}>({value}{'u' if t.startswith('u') else ''})"
        whole, frac = self.draw(st.integers(0, 300)), self.draw(st.integers(0, 999))
        return f"__to<{t}>({whole}.{frac:03d}f)"

    def convert(self, src: str, var: str, t: str) -> str:
        """``var`` of type ``src`` as a ``t``: float to integer is clamped into range
        (and a NaN replaced) unless the draw lets it fault."""
        if src in FLOATS and t in INTS and self.pick([True, False], [12, 1]):
            lo, hi = _int_range(t)
            lo, hi = max(lo, -100000), min(hi, 100000)
            var = f"__min(__max({var}, {float(lo)}), {float(hi)})"
        return var if src == t else f"__to<{t}>({var})"

    def leaf(self, t: str) -> str:
        kind = self.pick(["var", "other", "lit", "lane", "loop"], [6, 3, 2, 2, 2])
        if kind == "var" and t in self.types:
            return f"v{self.types.index(t)}"
        if kind in ("var", "other"):
            k = self.draw(st.integers(0, len(self.types) - 1))
            return self.convert(self.types[k], f"v{k}", t)
        if kind == "lane":
            return f"__to<{t}>(t)"
        if kind == "loop" and self.loops:
            return f"__to<{t}>({self.draw(st.sampled_from(self.loops))})"
        return self.literal(t)

    def expr(self, t: str, depth: int) -> str:
        if depth <= 0:
            return self.leaf(t)
        ops = ["leaf", "+", "-", "*", "/", "min", "max", "neg", "?:"]
        weights = [4, 3, 3, 3, 1, 1, 1, 1, 1]
        if t in INTS:
            ops += ["%", "&", "^", "|", "<<", ">>", "~"]
            weights += [1, 1, 1, 1, 1, 1, 1]
        op = self.pick(ops, weights)
        if op == "leaf":
            return self.leaf(t)
        a = self.expr(t, depth - 1)
        if op == "neg":
            return f"__to<{t}>(-{a})"
        if op == "~":
            return f"__to<{t}>(~{a})"
        if op == "?:":
            return f"({self.cond(depth - 1)} ? {a} : {self.expr(t, depth - 1)})"
        if op in ("min", "max"):
            return f"__{op}({a}, {self.expr(t, depth - 1)})"
        if op in ("<<", ">>"):
            width = 64 if dtypes.BY_NAME[t].bits == 64 else 32
            count = self.pick([str(self.draw(st.integers(0, width - 1))),
                               f"({self.expr(t, depth - 1)} & {width - 1})",
                               f"__to<s32>({self.expr('s8', 0)})"], [4, 3, 1])
            return f"__to<{t}>({a} {op} {count})"
        b = self.expr(t, depth - 1)
        if op in ("/", "%") and t in INTS and self.pick([True, False], [10, 1]):
            b = f"({b} | 1)"                     # never zero, unless the draw wants a fault
        return f"__to<{t}>({a} {op} {b})"

    def cond(self, depth: int) -> str:
        kind = self.pick(["lane", "cmp", "loop", "not", "and", "or"], [3, 4, 2, 1, 1, 1])
        if kind == "lane":
            k = self.draw(st.integers(0, max(self.nt - 1, 0)))
            return self.pick([f"(t < {k})", f"((t & 3) == {k & 3})", f"(t % 3 == {k % 3})",
                              f"(t == {k})"])
        if kind == "loop" and self.loops:
            return f"({self.draw(st.sampled_from(self.loops))} "\
                   f"{self.pick(['<', '==', '>='])} {self.draw(st.integers(0, 5))})"
        if kind in ("not", "and", "or") and depth > 0:
            a = self.cond(depth - 1)
            if kind == "not":
                return f"(!{a})"
            return f"({a} {'&&' if kind == 'and' else '||'} {self.cond(depth - 1)})"
        t = self.draw(st.sampled_from(self.types))
        op = self.pick(["<", "<=", ">", ">=", "==", "!="])
        return f"({self.expr(t, min(depth, 1))} {op} {self.expr(t, min(depth, 1))})"

    # ---- statements

    def block(self, depth: int, loop: bool, indent: str) -> list[str]:
        return [line for _ in range(self.draw(st.integers(1, 3)))
                for line in self.statement(depth, loop, indent)]

    def statement(self, depth: int, loop: bool, indent: str) -> list[str]:
        kinds = ["assign", "update", "if", "for", "while", "print", "yield", "assert",
                 "break", "continue", "store", "fault"]
        weights = [8, 3, 3 if depth else 0, 2 if depth else 0, 1 if depth else 0, 3, 1, 1,
                   2 if loop else 0, 2 if loop else 0, 1, 1]
        kind = self.pick(kinds, weights)
        k = self.draw(st.integers(0, len(self.types) - 1))
        t = self.types[k]
        if kind == "assign":
            return [f"{indent}v{k} = {self.expr(t, self.draw(st.integers(0, 3)))};"]
        if kind == "update":
            op = self.pick(["+=", "-=", "*="])
            return [f"{indent}v{k} {op} {self.expr(t, self.draw(st.integers(0, 2)))};"]
        if kind == "if":
            lines = [f"{indent}if {self.cond(2)} {{", *self.block(depth - 1, loop, indent + "  ")]
            if self.pick([True, False]):
                lines += [f"{indent}}} else {{", *self.block(depth - 1, loop, indent + "  ")]
            return lines + [f"{indent}}}"]
        if kind == "for":
            var = self.name("i")
            self.loops.append(var)
            body = self.block(depth - 1, True, indent + "  ")
            self.loops.pop()
            return [f"{indent}foreach {var} in [{self.draw(st.integers(0, 6))}] {{", *body,
                    f"{indent}}}"]
        if kind == "while":
            var = self.name("w")
            self.loops.append(var)
            body = self.block(depth - 1, True, indent + "  ")
            self.loops.pop()
            return [f"{indent}mutable int {var} = 0;",
                    f"{indent}while ({var} < {self.draw(st.integers(0, 5))}) {{",
                    f"{indent}  {var}++;", *body, f"{indent}}}"]
        if kind == "print":
            guard = self.pick(["", f"if (t == {self.draw(st.integers(0, self.nt - 1))}) "])
            return [f'{indent}{guard}println("at", t, v{k});']
        if kind == "yield":
            return [f"{indent}if {self.cond(1)} yield;"]
        if kind == "assert":
            # '|| t < 0' (never true) keeps a condition of literals from being folded:
            # an assert that is false as written is a compile-time error (§13)
            return [f'{indent}assert({self.cond(1)} || t < 0, "a{self.name("")}");']
        if kind in ("break", "continue"):
            return [f"{indent}if {self.cond(1)} {kind};"]
        if kind == "fault":
            return [f"{indent}if {self.cond(1)} {self.fault()}"]
        j = self.draw(st.integers(0, len(self.types) - 1))
        near = f"t + __to<s32>({self.convert(self.types[j], f'v{j}', 'u8')}) % 3"
        index = self.pick(["b # t", near], [4, 1])       # near: out of range at the end
        self.independent &= index != near
        return [f"{indent}a{k}.at({index}) = v{k};"]

    def fault(self) -> str:
        """A statement that faults in every lane running it (lane 0 excepted for the
        conversion): the run-time errors of arithmetic and of element access."""
        ints = [k for k, t in enumerate(self.types) if t in INTS]
        kind = self.pick(["divide", "shift", "convert", "element"] if ints
                         else ["convert", "element"])
        k = self.draw(st.sampled_from(ints)) if ints else 0
        t = self.types[k]
        if kind == "divide":
            return f"v{k} = __to<{t}>(v{k} {self.pick(['/', '%'])} __to<{t}>(t - t));"
        if kind == "shift":
            width = 64 if dtypes.BY_NAME[t].bits == 64 else 32
            return f"v{k} = __to<{t}>(v{k} {self.pick(['<<', '>>'])} (t + {width}));"
        if kind == "convert":
            # 0 in lane 0, out of range for every integer type in the others
            target = self.pick(INTS)
            big = f"__to<{target}>(__to<f32>(t) * {10 ** 30}.0f)"
            return f"v{k} = {self.convert(target, big, t)};"
        return f"v{k} = a{k}.at(t + {self.nt * 3});"      # beyond every block's elements

    def exchange_block(self, indent: str) -> list[str]:
        """Values through shared memory between two barriers: lane t reads a neighbour."""
        self.exchange = True
        k = self.draw(st.integers(0, len(self.types) - 1))
        j = self.draw(st.integers(0, len(self.types) - 1))
        shift = self.draw(st.integers(1, self.nt))
        return [f"{indent}xch.at(t) = {self.convert(self.types[k], f'v{k}', 'f64')};",
                f"{indent}sync.shared;",
                f"{indent}v{j} = {self.convert('f64', f'xch.at((t + {shift}) % {self.nt})', self.types[j])};",
                f"{indent}sync.shared;"]


@st.composite
def lanes(draw) -> Case:
    nt = draw(st.sampled_from([1, 3, 32, 40, 64]))
    nb = draw(st.integers(1, 3))
    g = _Lanes(draw, nt)
    body: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 4)) == 0:
            body += g.exchange_block("      ")
        else:
            body += g.statement(3, False, "      ")
    n = nb * nt
    params = ", ".join(f"global {t} [{n}] a{k}" for k, t in enumerate(g.types))
    lines = [f"__co__ void lanes({params}) {{",
             f"  parallel b by [{nb}] : block {{"]
    if g.exchange:
        lines.append(f"    shared f64 [{nt}] xch;")
    lines.append(f"    parallel t by [{nt}] : thread {{")
    lines += [f"      {t} v{k} = a{k}.at(b # t);" for k, t in enumerate(g.types)]
    lines += body
    lines += [f"      a{k}.at(b # t) = v{k};" for k in range(len(g.types))]
    lines += ["    }", "  }", "}", ""]
    return Case("\n".join(lines), "lanes", [_array(draw, t, (n,)) for t in g.types],
                independent=g.independent)


# --------------------------------------------------------------------------- events

@st.composite
def events(draw) -> Case:
    """A producer role fills ``slot`` and triggers ``full``; a consumer waits, reads, and
    triggers ``empty``; both loop over K items through STAGES slots."""
    unit, width = draw(st.sampled_from([("group", 32), ("group-4", 128)]))
    lanes_ = draw(st.sampled_from([width, 8]))      # lanes of a role that take part
    stages, items, nb = draw(st.integers(1, 3)), draw(st.integers(0, 7)), draw(st.integers(1, 2))
    ready = draw(st.booleans())
    missing = draw(st.integers(0, 9)) == 0          # a credit not given: deadlock
    extra = draw(st.integers(0, 3))                 # uneven work before a trigger
    printing = draw(st.booleans())
    credits = "" if ready else (
        f"        foreach s in [{stages - 1 if missing and stages > 1 else stages}]\n"
        "          trigger empty[s];\n")
    if ready and missing:
        credits = ""
        ready = False
    work = (f"          mutable int r = 0;\n"
            f"          while (r < t % {extra + 1}) {{\n"
            f"            slot.at(k % {stages}, t) += r;\n"
            f"            r++;\n"
            f"          }}\n") if extra else ""
    show = (f"          if (t == {lanes_ - 1})\n"
            f'            println("item", b, k, out.at(b, k, t));\n') if printing else ""
    source = f"""__co__ void events(global s32 [{nb}, {max(items, 1)}, {width}] out,
                     global s32 [{nb}, {max(items, 1)}, {width}] inp) {{
  parallel b by [{nb}] : block {{
    shared event full[{stages}], empty[{stages}]{" = ready" if ready else ""};
    shared s32 [{stages}, {width}] slot;
    parallel role by 2 : {unit}, t by [{width}] : thread {{
      inthreads.async (role == 0) {{
        foreach k in [{items}] {{
          wait empty[k % {stages}];
          if (t < {lanes_})
            slot.at(k % {stages}, t) = inp.at(b, k, t) * 3 + k;
{work}          trigger full[k % {stages}];
        }}
      }}
      inthreads.async (role == 1) {{
{credits}        foreach k in [{items}] {{
          wait full[k % {stages}];
          out.at(b, k, t) = slot.at(k % {stages}, t) - t;
{show}          trigger empty[k % {stages}];
        }}
      }}
    }}
  }}
}}
"""
    shape = (nb, max(items, 1), width)
    return Case(source, "events", [_array(draw, "s16", shape).astype(np.int32),
                                   _array(draw, "s16", shape).astype(np.int32)])


# --------------------------------------------------------------------------- copies

@st.composite
def copies(draw) -> Case:
    """Sums of the tiles of one row of tiles of ``a`` per block, double or triple buffered
    with asynchronous copies; the tiles need not divide ``a``."""
    t = draw(st.sampled_from(["s32", "f32", "f16", "u8", "f64"]))
    tr, tc = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    rows, cols = draw(st.integers(tr, 10)), draw(st.integers(tc, 20))  # a tile fits
    row_tiles, col_tiles = -(-rows // tr), -(-cols // tc)
    depth = draw(st.sampled_from([2, 3])) if col_tiles >= 2 else 2
    into = draw(st.sampled_from(["shared", "local"]))
    zfill = ".zfill" if draw(st.booleans()) else ""
    acc = "f64" if t in FLOATS else "s64"
    lanes_ = "{i, j}" if into == "shared" else "{i, j}"
    use = "acc += __to<{acc}>({f}.data.at(i, j));"
    if depth == 2:
        body = f"""      cur = dma.copy.async{zfill} a.subspan({tr}, {tc}).at(b, 0) => {into};
      nxt = dma.any;
      foreach kt in [{col_tiles - 1}] {{
        nxt = dma.copy.async{zfill} a.subspan({tr}, {tc}).at(b, kt + 1) => {into};
        wait cur;
        {use.format(acc=acc, f="cur")}
        swap(cur, nxt);
      }}
      wait cur;
      {use.format(acc=acc, f="cur")}
"""
    else:
        body = f"""      f0 = dma.copy.async{zfill} a.subspan({tr}, {tc}).at(b, 0) => {into};
      f1 = dma.copy.async{zfill} a.subspan({tr}, {tc}).at(b, 1) => {into};
      f2 = dma.any;
      foreach kt in [{col_tiles - 2}] {{
        f2 = dma.copy.async{zfill} a.subspan({tr}, {tc}).at(b, kt + 2) => {into};
        wait f0;
        {use.format(acc=acc, f="f0")}
        rotate(f0, f1, f2);
      }}
      wait f0;
      {use.format(acc=acc, f="f0")}
      wait f1;
      {use.format(acc=acc, f="f1")}
"""
    source = f"""__co__ void copies(global {t} [{rows}, {cols}] a, global {acc} [{row_tiles}, {tr}, {tc}] out) {{
  parallel b by [{row_tiles}] : block, {lanes_} by [{tr}, {tc}] : thread {{
    {acc} acc = out.at(b, i, j);
{body}    out.at(b, i, j) = acc;
  }}
}}
"""
    return Case(source, "copies", [_array(draw, t, (rows, cols)),
                                   np.zeros((row_tiles, tr, tc), dtypes.BY_NAME[acc].numpy_param)])


# --------------------------------------------------------------------------- mma

# operand type -> accumulator types it may have (LANGUAGE.md §11.3)
MMA_TYPES = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "f32": ("f32",),
             "f8_e4m3": ("f32", "f16"), "f8_e5m2": ("f32", "f16"), "s8": ("s32",),
             "u8": ("s32",), "s32": ("s32",), "f64": ("f64",)}
METHODS = ("row.row", "row.col", "col.row", "col.col")


@st.composite
def mma(draw) -> Case:
    ta = draw(st.sampled_from(sorted(MMA_TYPES)))
    tb = draw(st.sampled_from(["s8", "u8"])) if ta in ("s8", "u8") else ta
    tc = draw(st.sampled_from(MMA_TYPES[ta]))
    ts = draw(st.sampled_from(["s32", "s64"] if tc == "s32" else ["f32", "f16", "f64"]))
    method = draw(st.sampled_from(METHODS))
    m, n, k = draw(st.integers(1, 12)), draw(st.integers(1, 12)), draw(st.integers(1, 8))
    steps = draw(st.integers(1, 3))
    unit = draw(st.sampled_from(["group", "group-4", "block", "host"]))
    units = draw(st.integers(1, 2)) if unit in ("group", "group-4") else 1
    transp = draw(st.booleans())
    a_shape = (m, k * steps) if method.startswith("row") else (k * steps, m)
    b_shape = (n, k * steps) if method.endswith("row") else (k * steps, n)
    a_view = "sa.chunkat(_, s)" if method.startswith("row") else "sa.chunkat(s, _)"
    b_view = "sb.chunkat(_, s)" if method.endswith("row") else "sb.chunkat(s, _)"
    sm, sn = (n, m) if transp else (m, n)
    # the second unit's destination may lose rows at the edge (stores skip them)
    short = draw(st.integers(0, min(2, sm - 1))) if units == 2 else 0
    c_shape = (units * sm - short, sn)
    fill = f"{draw(st.integers(-3, 3))}.{draw(st.integers(0, 9))}f" if tc != "s32" \
        else str(draw(st.integers(0, 5)))
    where = "u" if unit in ("group", "group-4") else "0"
    store = f"mma.store{'.transp' if transp else ''} acc, c.subspan({sm}, {sn}).at({where}, 0);"
    inner = f"""      acc = mma.fill.{tc} {fill};
      foreach s in [{steps}] {{
        fa = mma.load {a_view};
        fb = mma.load {b_view};
        mma.{method} acc, fa, fb;
      }}
      {store}"""
    kernel = f"""  parallel blk by 1 : block {{
    shared {ta} [{a_shape[0]}, {a_shape[1]}] sa;
    shared {tb} [{b_shape[0]}, {b_shape[1]}] sb;
    dma.copy a => sa;
    dma.copy b => sb;
REGION
  }}"""
    if unit == "host":        # the host lane loads from the parameters themselves
        body = inner.replace("      ", "  ").replace("sa.", "a.").replace("sb.", "b.")
    elif unit == "block":
        body = kernel.replace("REGION", inner)
    else:
        body = kernel.replace("REGION", f"""    parallel u by {units} : {unit} {{
{inner}
    }}""")
    source = f"""__co__ void gemm(global {ta} [{a_shape[0]}, {a_shape[1]}] a,
                  global {tb} [{b_shape[0]}, {b_shape[1]}] b,
                  global {ts} [{c_shape[0]}, {c_shape[1]}] c) {{
{body}
}}
"""
    ints = ta in ("s8", "u8", "s32")
    make = (lambda t, shape: _array(draw, t, shape)) if ints else \
        (lambda t, shape: np.clip(np.nan_to_num(_array(draw, t, shape), nan=0.5,
                                                 posinf=2.0, neginf=-2.0), -8, 8)
         .astype(dtypes.BY_NAME[t].numpy_param))
    return Case(source, "gemm", [make(ta, a_shape), make(tb, b_shape),
                                np.zeros(c_shape, dtypes.BY_NAME[ts].numpy_param)])


FAMILIES = {"lanes": lanes, "events": events, "copies": copies, "mma": mma}


def family_test(family: str, examples: int, check):
    """A test that runs ``check(case)`` on ``examples`` kernels drawn from ``family``, the
    same ones on every run (derandomized), however long each takes."""
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(FAMILIES[family]())
    def test(case):
        check(case)
    return test

# the families 'views' and 'pipelines' live in modules of their own, which add them
# to FAMILIES
import kernelgen_async  # noqa: E402, F401
import kernelgen_data  # noqa: E402, F401
