"""The checker on valid programs: Appendix A checks clean, and the annotations the lowering
stage reads (LANGUAGE.md §3-§11; the contract is in croqvm/lang/ast.py and
croqvm.lang.check)."""
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from croqvm.core import dtypes
from croqvm.lang import ast
from croqvm.lang.check import check_program
from croqvm.lang.check.consteval import const_value
from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.frontend import front_end
from croqvm.core.source import Span
from appendix import APPENDIX
from croqvm.lang.types import (Bounded, Buffer, Event, Fragment, Future, ITuple, Mdspan,
                               Scalar, View)

LANGUAGE = Path(__file__).resolve().parents[1] / "docs" / "LANGUAGE.md"



def check(text):
    program, diags, _ = front_end(text, "t.co")
    errors = [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags if d.is_error]
    assert errors == []
    return program


def body(text):
    """The first function of a program whose body is ``text``."""
    return check("__co__ void f() {\n" + text + "\n}").functions[0]


def find(node, cls, pred=lambda n: True):
    """Every node of class ``cls`` under ``node``, in source order."""
    found = []

    def visit(n):
        if isinstance(n, cls) and pred(n):
            found.append(n)
        if hasattr(n, "__dataclass_fields__"):
            for name in n.__dataclass_fields__:
                value = getattr(n, name)
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, ast.Node):
                        visit(v)
    visit(node)
    return found


def sym(fn, name):
    matches = [s for s in fn.sym_table if s.name == name]
    assert len(matches) == 1, matches
    return matches[0]


# --------------------------------------------------------------------------- Appendix A


def test_appendix_copies_match_the_reference():
    text = LANGUAGE.read_text()
    appendix = text[text.index("## Appendix A"):]
    parts = re.split(r"\n### (A\.\d)[^\n]*\n", appendix)
    spec = {parts[i]: re.search(r"```\n(.*?)```", parts[i + 1], re.S).group(1)
            for i in range(1, len(parts), 2)}
    assert spec == APPENDIX


@pytest.mark.parametrize("name", sorted(APPENDIX))
def test_appendix_program_checks_clean(name):
    _, diags, _ = front_end(APPENDIX[name], "a.co")
    rendered = [f"{d.severity}: {d.message}" for d in diags if d.severity != "note"]
    expected = (["warning: '&' binds tighter than '==' in Croqtile (unlike C); add "
                 "parentheses."] if name == "A.7" else [])
    assert rendered == expected


def test_every_expression_of_the_appendix_is_typed_and_every_name_resolved():
    for text in APPENDIX.values():
        program, _, _ = front_end(text, "a.co")
        for fn in program.functions:
            for e in find(fn, ast.Expr):
                assert e.ty is not None, e
            for n in find(fn, ast.Name):
                assert n.sym is not None and n.sym in fn.sym_table, n


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize("expr, expected", [
    ("1 + 2", Scalar(dtypes.S32, control=True)),
    ("1 + 2.0f", Scalar(dtypes.F32)),
    ("2.0 * 1.0f", Scalar(dtypes.F64)),
    ("h + h", Scalar(dtypes.F16)),
    ("h + bh", Scalar(dtypes.F32)),          # f16 with bf16 -> f32 (§12.2)
    ("c + 1", Scalar(dtypes.S32)),           # s8 promotes to s32
    ("u + 1", Scalar(dtypes.U32)),           # same width: unsigned wins
    ("u + 5000000000", Scalar(dtypes.S64)),  # s64 outranks u32
    ("1 < 2", Scalar(dtypes.BOOL, control=True)),
    ("7 + 3 & 1", Scalar(dtypes.S32, control=True)),
    ("__to<f16>(1)", Scalar(dtypes.F16)),
    ("__max(1, 2.0f)", Scalar(dtypes.F32)),
    ("cdiv(7, 2)", Scalar(dtypes.S32, control=True)),
    ("{1, 2, 3}", ITuple(3)),
    ("[4, 8]", Mdspan((4, 8))),
])
def test_expression_types(expr, expected):
    fn = body(f"half h = 1.0f;\nbfp16 bh = 1.0f;\ns8 c = 1;\nu32 u = 1;\nx = {expr};")
    assign = find(fn, ast.Assign)[-1]
    assert assign.value.ty == expected


def test_bounded_values_follow_section_5():
    fn = body("parallel p by 4, q by 8 {\n"
              "  a = p # q;\n  b = p #+ 2;\n  c = p + 1;\n  d = p * q;\n  e = #q;\n"
              "  t = {p, q};\n  g = p & 1;\n}")
    types = {a.target.id: a.value.ty for a in find(fn, ast.Assign)}
    assert types["a"] == Bounded(32)            # bounded by #p * #q (§5.3)
    assert types["b"] == Bounded(6)             # #p + 2 (§5.2)
    assert types["c"] == Bounded(4)             # x op n keeps #x (§5.4)
    assert types["d"] == Scalar(dtypes.S32, control=True)  # two bounded operands: plain
    assert types["e"] == Scalar(dtypes.S32, control=True)
    assert types["t"] == ITuple(2, bounded=True)
    assert types["g"] == Scalar(dtypes.S32, control=True)  # bitwise: plain int
    assert sym(fn, "a").kind == "bounded" and sym(fn, "g").kind == "scalar"


def test_views_have_extents_of_section_8():
    fn = body("s32 [10, 16] a;\nparallel {p, q} by [3, 4] : block {\n"
              "  f = dma.copy a.chunkat(p, q) => shared;\n"
              "  g = dma.copy a.subspan(4, 8).step(2, 4).at(1, 1) => local;\n"
              "  h = dma.copy a.view(3, 5).from(1, 2) => shared;\n"
              "  k = dma.copy a.chunkat(_, q) => shared;\n}")
    views = [d.src.ty for d in find(fn, ast.Dma)]
    assert views[0] == View(dtypes.S32, (3, 4), "global", (10, 16), (3, 4))   # floor(10 / 3), 16 / 4
    assert views[1] == View(dtypes.S32, (4, 8), "global", (10, 16), (4, 8))
    assert views[2] == View(dtypes.S32, (3, 5), "global", (10, 16), (3, 5))
    assert views[3] == View(dtypes.S32, (10, 4), "global", (10, 16), (10, 4))
    assert sym(fn, "f").type == Future(False, dtypes.S32, (3, 4), "shared")
    assert sym(fn, "g").type == Future(False, dtypes.S32, (4, 8), "local")


def test_symbolic_dimensions_and_parameters():
    fn = check("__co__ auto mm(s32 [M, K] a, global f16 [K, N] b, f32 alpha, int n, "
               "stream s) {\n  s32 [M, N] c;\n  println(cdiv(M, 64), alpha, n);\n"
               "  return c;\n}").functions[0]
    dims = [s for s in fn.sym_table if s.kind == "dim"]
    assert [d.name for d in dims] == ["M", "K", "N"]          # one per name
    assert all(d.type == Scalar(dtypes.S32, control=True) for d in dims)
    a, b, alpha, n, s = (p.sym for p in fn.params)
    assert (a.kind, a.param_index, a.type) == ("buffer", 0,
                                               Buffer(dtypes.S32, ("M", "K"), "global"))
    assert (b.kind, b.param_index) == ("buffer", 1)
    assert (alpha.kind, alpha.param_index, alpha.mutable) == ("scalar", 2, True)
    assert (n.kind, n.type, n.mutable) == ("scalar", Scalar(dtypes.S32, control=True), False)
    assert (s.kind, s.param_index) == ("stream", 4)
    assert sym(fn, "c").type == Buffer(dtypes.S32, ("M", "N"), "global")


# --------------------------------------------------------------------------- symbols


def test_declarations_and_assignments_d13():
    fn = body("mutable int total = 0;\ns32 e = 1;\nx = 3;\nx2 = x + 1;\ntotal = total + x;\n"
              "mdspan sp : [2, 3];\nf32 [sp] buf {1.5f};")
    assigns = find(fn, ast.Assign)
    assert [(a.target.id, a.declares) for a in assigns] == [
        ("x", True), ("x2", True), ("total", False)]
    assert assigns[0].sym is sym(fn, "x") and assigns[0].target.sym is sym(fn, "x")
    assert sym(fn, "total").mutable and sym(fn, "e").mutable      # explicit element type
    assert not sym(fn, "x").mutable                               # inferred: immutable
    assert sym(fn, "x").info["const"] == 3 and sym(fn, "x2").info["const"] == 4
    assert const_value(assigns[1].value) == 4
    assert sym(fn, "sp").type == Mdspan((2, 3))
    assert sym(fn, "buf").type == Buffer(dtypes.F32, (2, 3), "global")
    assert all(s.parallel is None for s in fn.sym_table)


def test_parallel_variables():
    fn = body("parallel idx = {x, y} by [2, 3] : block, t by 32 : thread {\n"
              "  shared s32 [4] sa[2];\n  local f32 [2] l;\n}")
    par = find(fn, ast.Parallel)[0]
    x, y, idx = par.levels[0].syms
    (t,) = par.levels[1].syms
    assert (x.kind, x.level, x.sub_index, x.plevel) == ("bounded", "block", 0, par.levels[0])
    assert (y.type, y.sub_index, y.bound_expr) == (Bounded(3), 1, par.levels[0].bounds[1])
    assert (idx.kind, idx.type) == ("ituple", ITuple(2, bounded=True))
    assert (t.level, t.type, t.parallel) == ("thread", Bounded(32), par)
    assert sym(fn, "sa").type == Buffer(dtypes.S32, (4,), "shared", (2,))
    assert sym(fn, "l").type == Buffer(dtypes.F32, (2,), "local")
    assert sym(fn, "sa").parallel is par


def test_with_and_foreach_symbols():
    fn = body("s32 [4, 6] a;\nwith idx = {i, j} in a.span {\n  foreach i, j(1:) {\n"
              "    foreach u = i(:-1) { println(u); }\n  }\n}")
    w = find(fn, ast.Within)[0]
    i, j, idx = w.syms
    assert (i.kind, i.type, i.level, i.info["bound_dim"]) == ("bounded", Bounded(4), None, 0)
    assert (j.type, j.info["bound_dim"], j.bound_expr) == (Bounded(6), 1, w.bound[0])
    ranges = find(fn, ast.Range)
    assert ranges[0].sym is i and ranges[0].var_sym is i
    assert ranges[1].sym is j
    assert ranges[2].var_sym is i and ranges[2].sym is sym(fn, "u")
    assert sym(fn, "u").type == Bounded(4)


@pytest.mark.parametrize("nest, kinds", [
    ("parallel p by 32 { }", [["thread"]]),                                  # D = 1
    ("parallel p by 4 { parallel q by 8 { } }", [["block"], ["thread"]]),    # D = 2
    ("parallel p by 2, q by 2 { parallel r by 8 { } }",
     [["block", "group"], ["thread"]]),                                      # D = 3
    ("parallel p by 4 : block { parallel q by 8 { } }", [["block"], ["thread"]]),  # D15
    ("parallel p by 4 { parallel q by 2 : group { } }", [["block"], ["group"]]),   # D15
    ("parallel p by 4 { parallel q by 2 : group-4, r by 128 : thread { } }",
     [["block"], ["group-4", "thread"]]),
    ("parallel p by 4 { parallel q by 8 { } parallel r by 2 { parallel s by 3 { } } }",
     [["block"], ["group"], ["group"], ["thread"]]),                         # deepest: D = 3
])
def test_parallel_kinds(nest, kinds):
    fn = body(nest)
    pars = find(fn, ast.Parallel)
    assert [p.kinds for p in pars] == kinds
    assert [p.is_kernel for p in pars] == [True] + [False] * (len(pars) - 1)


def test_futures_placeholders_and_swap():
    fn = check(APPENDIX["A.4"]).functions[0]
    cur_a, nxt_a = sym(fn, "cur_a"), sym(fn, "nxt_a")
    assert cur_a.type == Future(True, dtypes.F32, (16, 16), "shared")
    assert nxt_a.type == cur_a.type and nxt_a.info["placeholder"]
    dmas = find(fn, ast.Dma)
    assert [d.declares for d in dmas] == [True, True, False, False]
    assert dmas[2].sym is nxt_a
    assert find(fn, ast.DmaAny)[0].declares
    data = find(fn, ast.DataOf)[0]
    assert data.ty == Buffer(dtypes.F32, (16, 16), "shared")
    # every use of a future carries its final type, also uses before its first DMA
    assert all(n.ty == n.sym.type for n in find(fn, ast.Name) if n.sym.kind == "future")


def test_events_and_mma_fragments():
    fn = check(APPENDIX["A.5"]).functions[0]
    full = sym(fn, "full")
    assert (full.kind, full.type, full.info["ready"]) == ("event", Event((2,)), False)
    acc, fa = sym(fn, "acc"), sym(fn, "fa")
    assert acc.type == Fragment(dtypes.F32, (64, 64), "acc")     # shape from the exec
    assert fa.type == Fragment(dtypes.F16, (64, 16), "operand")
    fill, load = find(fn, ast.MmaFill)[0], find(fn, ast.MmaLoad)[0]
    assert (fill.declares, fill.sym, load.declares, load.sym) == (True, acc, True, fa)
    kinds = [p.kinds for p in find(fn, ast.Parallel)]
    assert kinds == [["block"], ["group-4"]]


def test_accumulator_type_follows_d11():
    fn = body("parallel p by 1 : group {\n  shared bf16 [16, 16] a, b;\n  shared f32 [16, 8] o;\n"
              "  c = mma.fill 0.0f;\n  mma.row.col c, a, b.subspan(16, 8);\n"
              "  d = mma.fill 0.0f;\n  mma.store d, o;\n}")
    assert sym(fn, "c").type == Fragment(dtypes.F32, (16, 8), "acc")   # bf16 -> f32
    assert sym(fn, "d").type == Fragment(dtypes.F32, (16, 8), "acc")   # from the store


# --------------------------------------------------------------------------- consteval


@pytest.mark.parametrize("expr, value", [
    ("-7 / 2", -3), ("-7 % 3", -1), ("2147483647 + 1", -2147483648), ("cdiv(10, 4)", 3),
    ("1 << 4 | 1", 32), ("7 + 3 & 1", 8), ("__min(3, 9)", 3), ("__to<bool>(2)", True),
    ("1.5f * 2", 3.0), ("true && 1 > 2", False), ("(1 > 0) ? 4 : 5", 4),
    ("0.1f", 0.10000000149011612),   # rounded to f32
    ("__to<s32>(__to<bf16>(257.0f))", 256), ("__to<s32>(__to<tf32>(2049.0f))", 2048),
    ("__to<s32>(__to<f8_e4m3>(465.0f))", None),          # NaN: the conversion faults
    ("__to<f8_e4m3>(464.0f)", 448.0),                    # tie to even
    ("__to<bf16>(1157425104234217473ll)", 2.0 ** 60 + 2.0 ** 53),   # rounded to odd first
    ("__to<s8>(200) << 20", -56 << 20),          # s8 wraps, then promotes to s32
    ("1 << 31", -2 ** 31), ("1 << 32", None), ("1ll << 40", 2 ** 40), ("1 << -1", None),
    ("1 / 0", None), ("1 % 0", None), ("(-2147483647 - 1) / -1", -2 ** 31),
    ("1.0f / 0.0f", float("inf")), ("__to<s32>(3000000000.0)", None),
    ("4294967295u + 1u", 0), ("-1 < 1u", False),
    ("__max(0.0f, -0.0f)", 0.0), ("false && 1 / 0 == 0", None), ("true || 1 / 0 == 0", None),
])
def test_const_value(expr, value):
    fn = body(f"x = {expr};")
    got = const_value(find(fn, ast.Assign)[0].value)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("expr, negative", [
    ("__min(0.0f, -0.0f)", False), ("__min(-0.0f, 0.0f)", True),    # the first when equal
    ("__max(-0.0f, 0.0f)", True),
])
def test_const_value_sign_of_zero(expr, negative):
    got = const_value(find(body(f"x = {expr};"), ast.Assign)[0].value)
    assert got == 0.0 and math.copysign(1.0, got) == (-1.0 if negative else 1.0)


def test_const_value_reads_bounds_and_shapes():
    fn = body("s32 [3, 5] a;\nparallel p by 4 {\n  x = #p + a.span(1) + |a.span|;\n"
              "  y = p + 1;\n}")
    x, y = find(fn, ast.Assign)
    assert const_value(x.value) == 4 + 5 + 15
    assert const_value(y.value) is None          # a parallel variable is not a constant


def test_symbolic_dimension_is_not_constant():
    fn = check("__co__ void f(s32 [N] a) {\n  x = N * 2;\n}").functions[0]
    assert const_value(find(fn, ast.Assign)[0].value) is None


# --------------------------------------------------------------------------- robustness


class Mystery(ast.Stmt):
    def __init__(self, span):
        self.span = span


def test_internal_failure_becomes_a_diagnostic():
    program = check("__co__ void f() {\n  int x = 1;\n}")
    fn = program.functions[0]
    fn.body.stmts.append(Mystery(Span("t.co", 3, 3, 3, 8)))
    sink = DiagnosticSink()
    check_program(program, sink)
    assert [(d.span.line, d.message) for d in sink.items] == [
        (3, "internal error: no check for 'Mystery'.")]


PROGRAMS = sorted((Path(__file__).resolve().parents[1] / "programs").rglob("*.co"))
SOURCES = [p.read_text() for p in PROGRAMS] + list(APPENDIX.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_programs_never_crash_the_checker(data):
    """Deleting lines of real programs yields many wrong but parsable programs: each must
    get diagnostics, never an internal error."""
    text = data.draw(st.sampled_from(SOURCES))
    lines = text.split("\n")
    drop = data.draw(st.sets(st.integers(0, len(lines) - 1), max_size=4))
    damaged = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    _, diags, _ = front_end(damaged, "t.co")
    assert not [d for d in diags if "internal error" in d.message]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_check_reports_an_error_exactly_when_compile_rejects(data):
    """croqvm check runs what compile runs (front end, lowering, limits): on real and
    damaged programs, one finds an error if and only if the other raises."""
    import croqvm
    from croqvm.core.errors import CompileError
    text = data.draw(st.sampled_from(SOURCES))
    lines = text.split("\n")
    drop = data.draw(st.sets(st.integers(0, len(lines) - 1), max_size=3))
    damaged = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    _, diags, _ = croqvm.check(damaged, "t.co")
    try:
        croqvm.compile(damaged, "t.co")
        rejected = False
    except CompileError:
        rejected = True
    assert any(d.is_error for d in diags) == rejected
