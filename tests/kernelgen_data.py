"""The ``views`` family of generated kernels (tests/kernelgen.py): the data side of
Croqtile kernels in random valid combinations.

Each lane of a thread region holds a register fragment ``x`` (``frag f32[R, C]``) and
changes it by statements drawn from:

- DMA copies into ``local`` tiles of element type ``T`` (f32, bf16, the f8, f6 and f4
  formats) from views of the global matrix ``a``, and out of such tiles into the same
  views of a local buffer: ``subspan(...).step(...).at(...)``,
  ``view(...).from(...)`` with and without element strides, ``chunkat`` by the block and
  inside ``foreach`` loops (with ``: unroll(k)``), ``span_as`` of contiguous windows and
  ``.sqz()``; partial tiles at the edges;
- element access through named views, the same operations;
- ``apply`` over the fragment and over buffers, with the math builtins (``__sqrt``,
  ``__exp``, ``__atan2``, ``__alignup``, ...) and ``__to<T>`` conversions;
- ``reduce_sum|max|min`` and ``all_reduce_*`` on row fragments, ``copy`` through
  fragments of narrow element types (rounding), ``select`` between two tiles;
- ranges with negative ``hi`` offsets and steps, ``foreach u = i(lo:hi:step)``;
- atomics (``__atomic_add``, ``__atomic_cas``, ...) on the block's own counters, using
  the old values;
- calls of ``__co_device__`` functions taking the fragment (a buffer) and scalars.

Now and then a statement faults in some lanes: an element access or a view with element
strides out of range. Every block writes only its own elements of the outputs (the
atomics too), so the blocks are independent.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from kernelgen import FAMILIES, Case, _array

ELEMENTS = ("f32", "bf16", "f16", "f8_e4m3", "f8_e5m2", "f6_e2m3", "f6_e3m2", "f4_e2m1")
NARROW = ("bf16", "f16", "f8_e4m3", "f8_e5m2", "f6_e2m3", "f6_e3m2", "f4_e2m1")
MATH1 = ("__sqrt(__fabs({a}))", "__exp(__min({a}, 4.0f))", "__atan2({a}, {b})",
         "__tanh({a})", "__floor({a})", "__fmaf({a}, {b}, 0.5f)", "__sigmoid({a})")

DEVICE = """__co_device__ void scale(f32 [{R}, {C}] m, s32 k, f32 w) {{
  foreach {{i, j}} in [{R}, {C}]
    m.at(i, j) = m.at(i, j) * w + __to<f32>(k - i);
}}

__co_device__ f32 mix(f32 p, f32 q) {{
  if (p > q) return __atan2(p, q);
  return p - __sqrt(__fabs(q));
}}

"""


class _Views:
    """The generator of one ``views`` kernel: the matrix ``a`` [H, W] of type ``T``, the
    fragment ``x`` [R, C], and the lines drawn so far."""

    def __init__(self, draw, nb: int, nt: int):
        self.draw = draw
        self.nb, self.nt = nb, nt
        self.t = draw(st.sampled_from(ELEMENTS))
        self.r, self.c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        # a is cut into k0 x k1 tiles of [R, C], plus a remainder chunkat never covers
        self.k0, self.k1 = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        self.h = self.r * self.k0 + draw(st.integers(0, 2))
        self.w = self.c * self.k1 + draw(st.integers(0, 2))
        self.serial = 0
        self.device = False               # the kernel calls the device functions

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def origin(self, room: int) -> str:
        """An index in [0, room] that varies with the lane and block."""
        if room <= 0:
            return "0"
        return self.draw(st.sampled_from([str(self.integer(0, room)), f"(t + b) % {room + 1}",
                                          f"(t * {self.integer(1, 3)} + b) % {room + 1}"]))

    # ---- views of a and their shapes

    def view(self, partial: bool) -> tuple[str, tuple[int, ...]]:
        """A view of ``a`` drawn from the view algebra, (text, extents); with ``partial``,
        a window may reach past the edge of ``a`` (DMA skips those elements, element
        access faults on them)."""
        h, w = self.h, self.w
        kind = self.draw(st.sampled_from(["subspan", "from", "strided", "span_as", "sqz",
                                          "span_as_row", "chunkat"]))
        e0, e1 = self.integer(1, h), self.integer(1, w)
        if kind == "chunkat" and self.nb <= h:
            # the block's rows, then a window of them
            rows = h // self.nb
            e0 = min(e0, rows)
            return f"a.chunkat(b, _).subspan({e0}, {e1}).at({self.origin(rows // e0 - 1)}, " \
                   f"{self.origin(w // e1 - 1)})", (e0, e1)
        if kind == "subspan":
            s0, s1 = self.integer(1, e0), self.integer(1, e1)
            n0, n1 = (h - e0) // s0, (w - e1) // s1
            text = f"a.subspan({e0}, {e1})"
            if (s0, s1) != (e0, e1) or self.draw(st.booleans()):
                text += f".step({s0}, {s1})"
            return f"{text}.at({self.origin(n0)}, {self.origin(n1)})", (e0, e1)
        if kind == "from":
            if partial and self.integer(0, 3) == 0:
                return f"a.view({e0}, {e1}).from({self.origin(h - 1)}, {self.origin(w - 1)})", \
                    (e0, e1)
            return f"a.view({e0}, {e1}).from({self.origin(h - e0)}, {self.origin(w - e1)})", \
                (e0, e1)
        if kind == "strided":
            # element (i, j) is element (f0 + i) * s0 + (f1 + j) * s1 of a, in memory
            s0, s1 = self.integer(1, w + 1), self.integer(1, 3)
            e0, e1 = self.integer(1, 3), self.integer(1, 3)
            room = h * w - 1 - (e0 - 1) * s0 - (e1 - 1) * s1
            if room < 0:
                return f"a.view(1, 1 : 1, 1).from(0, {self.origin(h * w - 1)})", (1, 1)
            f0 = self.integer(0, room // s0)
            f1 = self.origin((room - f0 * s0) // s1)
            return f"a.view({e0}, {e1} : {s0}, {s1}).from({f0}, {f1})", (e0, e1)
        if kind == "span_as":
            # the whole buffer reshaped to rows of a divisor of its size
            n = h * w
            cols = self.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
            rows = n // cols
            t0, t1 = self.integer(1, min(rows, 4)), self.integer(1, min(cols, 4))
            return f"a.span_as([{rows}, {cols}]).subspan({t0}, {t1})" \
                   f".at({self.origin(rows // t0 - 1)}, {self.origin(cols // t1 - 1)})", \
                (t0, t1)
        if kind == "span_as_row":
            # k whole rows, contiguous, flat, then a window of it
            k = self.integer(1, h)
            n = k * w
            e = self.integer(1, min(n, 6))
            return f"a.subspan({k}, {w}).at({self.origin(h // k - 1)}, 0).span_as([{n}])" \
                   f".subspan({e}).at({self.origin(n // e - 1)})", (e,)
        # a row window squeezed to rank 1, or a column one (also for "chunkat" when a
        # has fewer rows than blocks)
        if self.draw(st.booleans()):
            return f"a.subspan(1, {e1}).at({self.origin(h - 1)}, {self.origin(w // e1 - 1)}).sqz()", \
                (e1,)
        return f"a.subspan({e0}, 1).at({self.origin(h // e0 - 1)}, {self.origin(w - 1)}).sqz()", \
            (e0,)

    def spread(self, buf: str, shape: tuple[int, ...]) -> str:
        """Element (i, j) of ``x`` mapped onto ``buf`` of ``shape``, as f32."""
        if len(shape) == 1:
            return f"__to<f32>({buf}.at((i * {self.c} + j) % {shape[0]}))"
        return f"__to<f32>({buf}.at(i % {shape[0]}, j % {shape[1]}))"

    def combine(self, value: str) -> str:
        op = self.draw(st.sampled_from(["+=", "=", "-=", "*="]))
        return f"x.at(i, j) {op} {value};"

    # ---- statements

    def statement(self, indent: str) -> list[str]:
        kinds = ["dma", "scatter", "chunk", "element", "apply", "reduce", "narrow", "select",
                 "range", "atomic", "call", "fault"]
        weights = [4, 2, 2, 3, 3, 2, 2, 1, 2, 2, 1, 1]
        at = self.integer(0, sum(weights) - 1)
        for kind, weight in zip(kinds, weights):
            if at < weight:
                return getattr(self, "_" + kind)(indent)
            at -= weight
        raise AssertionError

    def _dma(self, indent: str) -> list[str]:
        view, shape = self.view(True)
        tile = self.name("tile")
        dims = ", ".join(map(str, shape))
        # a tile partly out of range keeps what the destination held there
        return [f"{indent}local {self.t} [{dims}] {tile};",
                f"{indent}dma.copy {view} => {tile};",
                f"{indent}apply {{i, j}} in x.span",
                f"{indent}  {self.combine(self.spread(tile, shape))}"]

    def _scatter(self, indent: str) -> list[str]:
        """A tile made from x copied into a view of a local buffer shaped like a."""
        view, shape = self.view(True)
        tile, big = self.name("tile"), self.name("big")
        index = "i, j" if len(shape) == 2 else "i"
        dims = ", ".join(map(str, shape))
        return [f"{indent}local {self.t} [{dims}] {tile};",
                f"{indent}apply {{{index}}} in {tile}.span",
                f"{indent}  {tile}.at({index}) = __to<{self.t}>(x.at(i % {self.r}, "
                f"{'j' if len(shape) == 2 else 'i'} % {self.c}) + 1.0f);",
                f"{indent}local {self.t} [{self.h}, {self.w}] {big};",
                f"{indent}dma.copy {tile} => {big}{view[1:]};",
                f"{indent}apply {{i, j}} in x.span",
                f"{indent}  {self.combine(self.spread(big, (self.h, self.w)))}"]

    def _chunk(self, indent: str) -> list[str]:
        """Every tile of a by chunkat, in nested loops (the inner one now and then with
        ``: unroll(k)``)."""
        tile, p, q = self.name("tile"), self.name("cp"), self.name("cq")
        unroll = f" : unroll({self.integer(1, self.k1)})" if self.draw(st.booleans()) else ""
        return [f"{indent}foreach {p} in [{self.k0}] {{",
                f"{indent}  foreach {q} in [{self.k1}]{unroll} {{",
                f"{indent}    local {self.t} [{self.h // self.k0}, {self.w // self.k1}] {tile};",
                f"{indent}    dma.copy a.chunkat({p}, {q}) => {tile};",
                f"{indent}    apply {{i, j}} in x.span",
                f"{indent}      x.at(i, j) += {self.spread(tile, (self.h // self.k0, self.w // self.k1))}"
                f" * __to<f32>({p} - {q});",
                f"{indent}  }}", f"{indent}}}"]

    def _element(self, indent: str) -> list[str]:
        view, shape = self.view(self.integer(0, 5) == 0)
        v = self.name("vw")
        return [f"{indent}{v} = {view};",
                f"{indent}apply {{i, j}} in x.span",
                f"{indent}  {self.combine(self.spread(v, shape))}"]

    def expr(self, depth: int) -> str:
        leaves = ["x.at(i, j)", "__to<f32>(i - j)", "__to<f32>(t)",
                  f"{self.integer(-5, 5)}.{self.integer(0, 9)}f",
                  f"__to<f32>(__alignup(i + t, {self.integer(1, 4)}))"]
        if depth <= 0:
            return self.draw(st.sampled_from(leaves))
        a, b = self.expr(depth - 1), self.expr(depth - 1)
        form = self.draw(st.sampled_from(MATH1 + ("({a} + {b})", "({a} * {b})",
                                                  "__max({a}, {b})", "({a} - {b})")))
        return form.format(a=a, b=b)

    def _apply(self, indent: str) -> list[str]:
        return [f"{indent}apply {{i, j}} in x.span",
                f"{indent}  x.at(i, j) = {self.expr(self.integer(0, 2))};"]

    def _reduce(self, indent: str) -> list[str]:
        op = self.draw(st.sampled_from(["sum", "max", "min"]))
        row = self.name("row")
        shape = self.draw(st.sampled_from([f"[{self.r}]", f"[{self.r}, 1]", f"[1, {self.r}]"]))
        index = {f"[{self.r}]": "i", f"[{self.r}, 1]": "i, 0", f"[1, {self.r}]": "0, i"}[shape]
        lines = [f"{indent}frag f32{shape} {row};",
                 f"{indent}reduce_{op}({row}, x, 1);"]
        if shape == f"[{self.r}]" and self.draw(st.booleans()):
            lines.append(f"{indent}all_reduce_{self.draw(st.sampled_from(['sum', 'max', 'min']))}({row});")
        return lines + [f"{indent}apply {{i, j}} in x.span",
                        f"{indent}  x.at(i, j) -= {row}.at({index}) * 0.25f;"]

    def _narrow(self, indent: str) -> list[str]:
        """Through a fragment of a narrow type and back: every element rounds."""
        y = self.name("fy")
        t = self.draw(st.sampled_from(NARROW))
        return [f"{indent}frag {t}[{self.r}, {self.c}] {y};",
                f"{indent}copy({y}, x);",
                f"{indent}apply {{i, j}} in {y}.span",
                f"{indent}  {y}.at(i, j) = __to<{t}>(__to<f32>({y}.at(i, j)) * 0.5f);",
                f"{indent}copy(x, {y});"]

    def _select(self, indent: str) -> list[str]:
        l0, l1, s = self.name("tile"), self.name("tile"), self.name("sel")
        shape = (self.r, self.c)
        origin = f"{self.origin(self.h - self.r)}, {self.origin(self.w - self.c)}"
        return [f"{indent}local {self.t} [{self.r}, {self.c}] {l0}, {l1};",
                f"{indent}dma.copy a.view({self.r}, {self.c}).from({origin}) => {l0};",
                f"{indent}apply {{i, j}} in {l1}.span",
                f"{indent}  {l1}.at(i, j) = __to<{self.t}>(x.at(i, j));",
                f"{indent}{s} = select({self.integer(0, 1)}, {l0}, {l1});",
                f"{indent}apply {{i, j}} in x.span",
                f"{indent}  {self.combine(self.spread(s, shape))}"]

    def _range(self, indent: str) -> list[str]:
        """A loop over part of a bound: from lo, stopping hi before its end, by step."""
        n = self.integer(1, 8)
        w, u = self.name("wb"), self.name("it")
        lo, hi, step = self.integer(0, 2), -self.integer(0, 2), self.integer(1, 3)
        unroll = f" : unroll({self.integer(1, n)})" if self.draw(st.booleans()) else ""
        return [f"{indent}with {w} in {n} {{",
                f"{indent}  foreach {u} = {w}({lo}:{hi}:{step}){unroll}",
                f"{indent}    x.at({u} % {self.r}, ({u} + t) % {self.c}) += __to<f32>({u}) - 1.5f;",
                f"{indent}}}"]

    def _atomic(self, indent: str) -> list[str]:
        old = self.name("old")
        op = self.draw(st.sampled_from(["add", "sub", "max", "cas", "exch", "xor"]))
        slot = self.draw(st.sampled_from(["0", "1", "t % 2"]))
        value = self.draw(st.sampled_from(["t", "__to<s32>(x.at(0, 0))", str(self.integer(-3, 9))]))
        if op == "cas":
            call = f"__atomic_cas(cnt.at(b, {slot}), {self.integer(0, 4)}, {value})"
        else:
            call = f"__atomic_{op}(cnt.at(b, {slot}), {value})"
        if self.draw(st.booleans()):
            return [f"{indent}{call};"]
        return [f"{indent}s32 {old} = {call};",
                f"{indent}x.at(t % {self.r}, 0) += __to<f32>({old} % 100);"]

    def _call(self, indent: str) -> list[str]:
        self.device = True
        if self.draw(st.booleans()):
            return [f"{indent}call scale(x, t - b, {self.integer(-2, 2)}.5f);"]
        m = self.name("mx")
        return [f"{indent}f32 {m} = call mix(x.at(0, {self.c - 1}), __to<f32>(t) - 0.5f);",
                f"{indent}x.at({self.r - 1}, 0) = {m};"]

    def _fault(self, indent: str) -> list[str]:
        """Out of range in the lanes from k on of each block: an element of the fragment, an
        element of a view, or a view with element strides beyond a's memory."""
        k = self.integer(0, self.nt - 1)
        kind = self.draw(st.sampled_from(["frag", "view", "strided"]))
        if kind == "frag":
            body = f"x.at(t + {self.r - k}, 0) = 1.0f;"
        elif kind == "view":
            body = f"x.at(0, 0) = __to<f32>(a.view(1, {self.w}).from(t + {self.h - k}, 0).at(0, 0));"
        else:
            body = f"x.at(0, 0) = __to<f32>(a.view(2, 2 : {self.w}, 1).from(t + {self.h - 1 - k}, 0).at(1, 1));"
        return [f"{indent}if (t >= {k}) {body}"]


@st.composite
def views(draw) -> Case:
    nb, nt = draw(st.integers(1, 2)), draw(st.sampled_from([1, 2, 3, 5, 32]))
    g = _Views(draw, nb, nt)
    body: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        body += g.statement("      ")
    init = draw(st.sampled_from(["", " {0.0f}", " {1.5f}", " {-2.0f}"]))
    lines = [DEVICE.format(R=g.r, C=g.c)] if g.device else []
    lines += [f"__co__ void views(global {g.t} [{g.h}, {g.w}] a, "
              f"global f32 [{nb}, {nt}, {g.r}, {g.c}] out, global s32 [{nb}, 2] cnt) {{",
              f"  parallel b by [{nb}] : block {{",
              f"    parallel t by [{nt}] : thread {{",
              f"      frag f32[{g.r}, {g.c}] x{init};"]
    lines += body
    lines += ["      apply {i, j} in x.span",
              "        out.at(b, t, i, j) = x.at(i, j);",
              "    }", "  }", "}", ""]
    # the call rounds a's values to T (the formats without infinities or NaN saturate)
    return Case("\n".join(lines), "views",
                [_array(draw, g.t, (g.h, g.w)), np.zeros((nb, nt, g.r, g.c), np.float32),
                 _array(draw, "s32", (nb, 2)) % 50])


FAMILIES["views"] = views
