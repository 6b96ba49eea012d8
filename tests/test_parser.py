"""The parser on valid programs: LANGUAGE.md Appendix A, the §4.1 precedence table, view
chains (§8), DMA (§9.1), MMA (§11.1), parallel levels (§6.1-§6.3) and every statement and
declaration form of §3 and §6.

Expressions are compared in a small prefix notation written by hand, e.g. ``7 + 3 & 1`` is
``(+ 7 (& 3 1))``.
"""
import math

import pytest

from appendix import APPENDIX
from croqvm.lang import ast
from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.lexer import tokenize_program
from croqvm.lang.parser import parse_program
from croqvm.core.source import SourceFile, Span


def parse(text: str, defines=None):
    sink = DiagnosticSink()
    functions = tokenize_program(SourceFile("t.co", text), defines, sink)
    return parse_program(functions, sink), sink


def parse_ok(text: str, defines=None) -> ast.Program:
    program, sink = parse(text, defines)
    assert [d.message for d in sink.items if d.is_error] == []
    return program


def body(stmts: str) -> list[ast.Stmt]:
    """The statements of ``__co__ void f() { <stmts> }``."""
    return parse_ok("__co__ void f() {\n" + stmts + "\n}").functions[0].body.stmts


def stmt(text: str) -> ast.Stmt:
    (s,) = body(text)
    return s


def expr(text: str) -> ast.Expr:
    return stmt(f"x = {text};").value


def sx(e) -> str:
    """A hand-checkable prefix rendering of an expression tree."""
    def args(xs):
        return " ".join(sx(x) for x in xs)
    kind = type(e)
    if kind is ast.IntLit:
        return str(e.value)
    if kind is ast.FloatLit:
        return repr(e.value)
    if kind is ast.BoolLit:
        return "true" if e.value else "false"
    if kind is ast.StringLit:
        return repr(e.value)
    if kind is ast.Name:
        return e.id
    if kind is ast.Wildcard:
        return "_"
    if kind is ast.Unary:
        return f"({e.op} {sx(e.operand)})"
    if kind is ast.Postfix:
        return f"(post{e.op} {sx(e.operand)})"
    if kind is ast.Binary:
        return f"({e.op} {sx(e.lhs)} {sx(e.rhs)})"
    if kind is ast.Ternary:
        return f"(? {sx(e.cond)} {sx(e.then)} {sx(e.other)})"
    if kind is ast.Extent:
        return f"#{e.name.id}"
    if kind is ast.ElemCount:
        return f"(count {sx(e.operand)})"
    if kind is ast.SpanOf:
        return f"(span {sx(e.base)})" if e.dim is None else f"(span {sx(e.base)} {sx(e.dim)})"
    if kind is ast.DataOf:
        return f"(data {sx(e.base)})"
    if kind is ast.Call:
        return f"(call {e.func} {args(e.args)})"
    if kind is ast.Element:
        return f"(elem {sx(e.base)} {args(e.args)})"
    if kind is ast.Convert:
        return f"(to {e.dtype} {sx(e.operand)})"
    if kind is ast.ITupleLit:
        return "{" + args(e.elems) + "}"
    if kind is ast.MdspanLit:
        return "[" + args(e.elems) + "]"
    if kind is ast.Index:
        return f"(index {sx(e.base)} {sx(e.index)})"
    if kind is ast.ElemAccess:
        return f"(at {sx(e.base)} {args(e.indices)})"
    if kind is ast.ChunkAt:
        return f"(chunkat {sx(e.base)} {args(e.args)})"
    if kind is ast.Subspan:
        out = f"(subspan {sx(e.base)} ({args(e.sizes)})"
        if e.steps is not None:
            out += f" step({args(e.steps)})"
        if e.at is not None:
            out += f" at({args(e.at)})"
        return out + ")"
    if kind is ast.ViewFrom:
        return f"(view {sx(e.base)} ({args(e.sizes)}) from({args(e.origin)}))"
    raise AssertionError(f"no rendering for {kind.__name__}")


def warnings(text: str) -> list[str]:
    _, sink = parse(text)
    return [d.message for d in sink.items if d.severity == "warning"]


# --------------------------------------------------------------------------- §4.1 precedence

PRECEDENCE = [
    ("7 + 3 & 1", "(+ 7 (& 3 1))"),                 # the §4.1 examples
    ("a & 7 == 5", "(== (& a 7) 5)"),
    ("!a & b", "(! (& a b))"),
    ("p # q + 1", "(+ (# p q) 1)"),
    ("-3 & 1", "(& -3 1)"),                         # §4.3: negative literal binds tightest
    ("x-1.0f", "(- x 1.0)"),                        # D1: a subtraction
    ("- 3 & 1", "(- (& 3 1))"),                     # a blank: negation at level 11
    ("-x & 1", "(- (& x 1))"),
    ("-x * y", "(* (- x) y)"),
    ("a * !b + c", "(+ (* a (! b)) c)"),
    ("~a & b", "(& (~ a) b)"),                      # ~ (14) tighter than & (12)
    ("~a # b", "(# (~ a) b)"),
    ("a | b ^ c & d", "(& (^ (| a b) c) d)"),       # one level, left to right
    ("a & b # c", "(& a (# b c))"),                 # # (13) tighter than & (12)
    ("a + b * c - d", "(- (+ a (* b c)) d)"),
    ("a / b % c * d", "(* (% (/ a b) c) d)"),
    ("a || b && c || d", "(|| (|| a (&& b c)) d)"),
    ("a < b == c >= d", "(== (< a b) (>= c d))"),
    ("a << 1 + 2", "(<< a (+ 1 2))"),
    ("a >> b < c", "(< (>> a b) c)"),
    ("a #+ 1 * 2", "(* (#+ a 1) 2)"),               # #+ (9) tighter than * (8)
    ("a #* b #+ c", "(#+ (#* a b) c)"),
    ("p # q # r", "(# (# p q) r)"),
    ("c ? a : b ? d : e", "(? c a (? b d e))"),
    ("a || b ? 1 : 2", "(? (|| a b) 1 2)"),
    ("(a + b) * c", "(* (+ a b) c)"),
    ("a - -3", "(- a -3)"),
    ("a * -2.5f", "(* a -2.5)"),
    ("- -3", "(- -3)"),
    ("!!a", "(! (! a))"),
    ("x++ + ++y", "(+ (post++ x) (++ y))"),
    ("#p * 2", "(* #p 2)"),
    ("#p # q", "(# #p q)"),
    ("|a.span| / 2", "(/ (count (span a)) 2)"),
    ("x | |a.span|", "(| x (count (span a)))"),
    ("__to<f16>(x) + 1", "(+ (to f16 x) 1)"),
    ("__to<bool>(a & b)", "(to bool (& a b))"),
    ("cdiv(M, 64) * 2", "(* (call cdiv M 64) 2)"),
    ("__min(a, __max(b, c))", "(call __min a (call __max b c))"),
    ("__sqrt(x)", "(call __sqrt x)"),               # the checker rejects it by name
    ("t(1) + x(-2)", "(+ (call t 1) (call x -2))"),
    ("idx(1)(-1) * 2", "(* (elem (call idx 1) -1) 2)"),   # §4.1 level 15: e(i)
    ("(t)(0) # {p, q}(1)", "(# (elem t 0) (elem {p q} 1))"),
    ("-x(1)", "(- (call x 1))"),
    ("a.span(0) * a.span", "(* (span a 0) (span a))"),
    ("{a, b + 1}", "{a (+ b 1)}"),
    ("[M / 8, 8]", "[(/ M 8) 8]"),
    ("true && !false", "(&& true (! false))"),
]


@pytest.mark.parametrize("source,tree", PRECEDENCE)
def test_precedence(source, tree):
    assert sx(expr(source)) == tree


def test_literals_keep_their_types():
    assert expr("-2147483648") == ast.IntLit(-2147483648, "s64", Span("t.co", 2, 5, 2, 16))
    assert expr("7u").dtype == "u32"
    assert (expr("1.5").value, expr("1.5").dtype) == (1.5, "f64")
    inf = expr("inf")
    assert math.isinf(inf.value) and inf.dtype == "f32"
    assert isinstance(expr("_"), ast.Wildcard)


def test_macro_values_are_literals():
    s = parse_ok("#define N -4\n__co__ void f() { x = N & 1; }").functions[0].body.stmts[0]
    assert sx(s.value) == "(& -4 1)"


def test_spans_cover_the_construct_and_its_parentheses():
    e = expr("(a + b) * c")
    assert e.span == Span("t.co", 2, 5, 2, 16)
    assert e.lhs.span == Span("t.co", 2, 5, 2, 12)
    assert expr("a.at(i, j)").span == Span("t.co", 2, 5, 2, 15)


@pytest.mark.parametrize("source,message", [
    ("a & 7 == 5", "'&' binds tighter than '==' in Croqtile (unlike C); add parentheses."),
    ("7 + 3 & 1", "'&' binds tighter than '+' in Croqtile (unlike C); add parentheses."),
    ("a << b | c", "'|' binds tighter than '<<' in Croqtile (unlike C); add parentheses."),
    ("!a ^ b", "'^' binds tighter than prefix '!' in Croqtile (unlike C); add parentheses."),
])
def test_bitwise_precedence_warning(source, message):
    assert warnings(f"__co__ void f() {{ x = {source}; }}") == [message]


@pytest.mark.parametrize("source", ["(a & 7) == 5", "a & (7 == 5)", "a & b & c", "-3 & 1",
                                    "a & 1 && b", "(a & b) + 1", "~a & b"])
def test_no_warning_when_parenthesised_or_unsurprising(source):
    assert warnings(f"__co__ void f() {{ x = {source}; }}") == []


def test_warning_points_at_the_outer_operation():
    _, sink = parse("__co__ void f() {\n  if (t & 1 == 0) {}\n}")
    (w,) = sink.items
    assert (w.severity, w.span) == ("warning", Span("t.co", 2, 7, 2, 17))


# --------------------------------------------------------------------------- §8 views

VIEWS = [
    ("a.subspan(16, 32).at(bm, kt)", "(subspan a (16 32) at(bm kt))"),
    ("a.subspan(16, _).step(8, 8).at(bm, kt)", "(subspan a (16 _) step(8 8) at(bm kt))"),
    ("a.subspan(4, 4).step(2, 2)", "(subspan a (4 4) step(2 2))"),
    ("a.subspan(4, 4).at(i, j).at(1, 2)", "(at (subspan a (4 4) at(i j)) 1 2)"),
    ("sa[st].chunkat(_, w)", "(chunkat (index sa st) _ w)"),
    ("b.chunkat(p, q).subspan(2, 2)", "(subspan (chunkat b p q) (2 2))"),
    ("a.view(4, 8).from(i * 4, 0)", "(view a (4 8) from((* i 4) 0))"),
    ("f.data.at(i, j)", "(at (data f) i j)"),
    ("buf[i][j].at(0)", "(at (index (index buf i) j) 0)"),
    ("f.data.span(1)", "(span (data f) 1)"),
    ("out.at(px # qx, py # qy)", "(at out (# px qx) (# py qy))"),
    ("a.at(idx)", "(at a idx)"),
]


@pytest.mark.parametrize("source,tree", VIEWS)
def test_view_chains(source, tree):
    assert sx(expr(source)) == tree


# --------------------------------------------------------------------------- Appendix A

A1 = APPENDIX["A.1"]


def test_a1_elementwise_addition():
    (f,) = parse_ok(A1).functions
    assert (f.name, f.ret.name, f.params) == ("add_demo", "void", [])
    a, b, fill, par, show = f.body.stmts
    assert (a.storage, a.dtype.name, [sx(e) for e in a.shape]) == (None, "s32", ["2", "3"])
    assert [(i.name, i.array, i.init) for i in a.items] == [("a", [], None)]
    assert sx(b.items[0].init) == "10"
    (w,) = fill.withins
    assert (w.names, w.tuple_name, [sx(e) for e in w.bound], w.bound_is_list) == \
        (["i", "j"], None, ["2", "3"], True)
    assert (sx(fill.body.target), fill.body.op, sx(fill.body.value)) == \
        ("(at a i j)", "=", "(+ (* i 3) j)")
    (level,) = par.levels
    assert (level.names, level.level, level.bound_is_list) == (["i", "j"], None, True)
    assert (par.body.op, sx(par.body.value)) == ("+=", "(at b i j)")
    assert isinstance(show.body, ast.Print) and show.body.newline
    assert [sx(x) for x in show.body.args] == ["(at a i 0)", "(at a i 1)", "(at a i 2)"]
    assert f.span == Span("t.co", 1, 1, 10, 2)
    assert f.name_span == Span("t.co", 1, 13, 1, 21)


A2 = APPENDIX["A.2"]


def test_a2_scalar_matmul():
    (f,) = parse_ok(A2).functions
    assert f.ret.name == "auto"
    a, b = f.params
    assert (a.storage, a.type.name, [sx(d.expr) for d in a.shape], a.name) == \
        (None, "s32", ["M", "K"], "a")
    assert b.name == "b"
    _, par, ret = f.body.stmts
    assert [(lv.names, [sx(x) for x in lv.bounds], lv.level) for lv in par.levels] == [
        (["bm", "bn"], ["(/ M 8)", "(/ N 8)"], "block"),
        (["r", "s"], ["8", "8"], "thread")]
    (loop,) = par.body.stmts
    assert sx(loop.body.value) == "(* (at a (# bm r) k) (at b k (# bn s)))"
    assert sx(ret.value) == "c"


A3 = APPENDIX["A.3"]


def test_a3_tiles_in_shared_memory():
    (f,) = parse_ok(A3).functions
    outer = f.body.stmts[1]
    ta, tb, inner = outer.body.stmts[0].body.stmts
    assert (ta.target.id, ta.op, ta.is_async, ta.tma, ta.dst) == ("ta", "copy", False, False,
                                                                 "shared")
    assert sx(ta.src) == "(subspan a (16 32) at(bm kt))"
    assert ta.span == Span("t.co", 5, 7, 5, 59)  # a statement span stops before ";"
    assert inner.levels[0].level == "thread"
    assert sx(inner.body.stmts[0].body.value) == \
        "(* (at (data ta) tm k) (at (data tb) k tn))"


A4 = APPENDIX["A.4"]


def test_a4_double_buffering():
    (f,) = parse_ok(A4).functions
    w = f.body.stmts[1].body.stmts[0]
    (within,) = w.withins
    assert (within.names, [sx(x) for x in within.bound], within.bound_is_list) == \
        (["kt"], ["(/ K 16)"], False)
    cur_a, _, any_a, _, loop, last_wait, _ = w.body.stmts
    assert cur_a.is_async and cur_a.target.id == "cur_a"
    assert isinstance(any_a, ast.DmaAny) and any_a.target.id == "nxt_a"
    (r,) = loop.ranges
    assert (r.new_name, r.name, sx(r.lo), r.hi, r.step, loop.withins) == \
        (None, "kt", "1", None, None, [])
    _, _, wait, _, swap, _ = loop.body.stmts
    assert [sx(x) for x in wait.refs] == ["cur_a", "cur_b"]
    assert (swap.rotate, [n.id for n in swap.names]) == (False, ["cur_a", "nxt_a"])
    assert isinstance(last_wait, ast.Wait)


A5 = APPENDIX["A.5"]


def test_a5_warp_specialised_pipeline():
    (f,) = parse_ok(A5).functions
    assert [(p.storage, p.type.name, p.name) for p in f.params] == [
        ("global", "f16", "a"), ("global", "f16", "b"), ("global", "f32", "c")]
    (kernel,) = f.body.stmts
    assert [sx(x) for x in kernel.levels[0].bounds] == ["(call cdiv M 64)", "(call cdiv N 64)"]
    events, sa, _, sc, roles = kernel.body.stmts
    assert (events.storage, events.count) == ("shared", None)
    assert [i.ready for i in events.items] == [False, False]
    assert [(i.name, [sx(x) for x in i.array]) for i in events.items] == [
        ("full", ["2"]), ("empty", ["2"])]
    assert (sa.storage, sa.dtype.name, [sx(x) for x in sa.shape]) == ("shared", "f16",
                                                                      ["64", "64"])
    assert [sx(x) for x in sa.items[0].array] == ["2"]
    assert sc.items[0].array == []
    assert (roles.levels[0].names, roles.levels[0].level) == (["role"], "group-4")
    producer, consumer = roles.body.stmts
    assert producer.is_async and sx(producer.cond) == "(== role 0)"
    _, wait, copy_a, _, trig = producer.body.stmts[0].body.stmts
    assert [sx(x) for x in wait.refs] == ["(index empty st)"]
    assert (copy_a.target, copy_a.zfill, sx(copy_a.dst)) == (None, True, "(index sa st)")
    assert [sx(x) for x in trig.refs] == ["(index full st)"]
    fill, credits, loop, store, out = consumer.body.stmts
    assert (fill.target.id, fill.dtype, sx(fill.value), fill.assign_form) == \
        ("acc", "f32", "0.0", True)
    assert isinstance(credits.body, ast.Trigger)
    _, _, tiles, commit, _ = loop.body.stmts
    fa, _, mma = tiles.body.stmts
    assert (fa.target.id, sx(fa.view), fa.swizzle) == ("fa", "(chunkat (index sa st) _ w)",
                                                        None)
    assert (mma.layout, mma.c.id, sx(mma.a), sx(mma.b)) == ("row.row", "acc", "fa", "fb")
    assert isinstance(commit, ast.MmaCommit)
    assert (store.transp, store.frag.id, sx(store.view)) == (False, "acc", "sc")
    assert sx(out.dst) == "(subspan c (64 64) at(bm bn))"


A6 = APPENDIX["A.6"]


def test_a6_persistent_kernel():
    (f,) = parse_ok(A6).functions
    assert [(p.type.name, p.shape, p.name) for p in f.params][1] == ("f32", None, "alpha")
    total, par = f.body.stmts
    assert (total.mutable, total.type.name, total.items[0].name) == (False, "int", "total")
    assert sx(total.items[0].init) == "(* (call cdiv M 16) (call cdiv N 16))"
    assert [sx(b) for b in par.levels[0].bounds] == ["4"]
    assert par.levels[0].bound_is_list is False
    guard = par.body.stmts[0].body.stmts[1]
    row, _, inner = guard.then.stmts
    assert sx(row.value) == "(+ (* (/ tile (call cdiv N 16)) 16) r)"
    assert sx(inner.cond) == "(&& (< row M) (< col N))" and inner.other is None


A7 = APPENDIX["A.7"]


def test_a7_divergence_parses_with_one_warning():
    program, sink = parse(A7)
    assert [(d.severity, d.message) for d in sink.items] == [
        ("warning", "'&' binds tighter than '==' in Croqtile (unlike C); add parentheses.")]
    branch = program.functions[0].body.stmts[1].body.stmts[0]
    assert sx(branch.cond) == "(== (& t 1) 0)"
    assert [sx(a) for a in branch.then.stmts[1].args] == ["'even'", "t"]
    assert sx(branch.other.stmts[0].value) == "(- 0 t)"


A8 = APPENDIX["A.8"]


def test_a8_unbraced_inthreads_body():
    (f,) = parse_ok(A8).functions
    producer, consumer = f.body.stmts[1].body.stmts[2].body.stmts
    assert isinstance(producer.body, ast.Foreach)
    wait = producer.body.body.stmts[0]
    assert [sx(r) for r in wait.refs] == ["(index empty (% k 2))"]
    assert wait.span == Span("t.co", 11, 11, 11, 33)  # the caret of the §A.8 report
    assert len(consumer.body.stmts) == 1


# --------------------------------------------------------------------------- §9.1 DMA

def test_dma_copy_suffixes_in_any_order():
    s = stmt("f = dma.copy.swiz<128>.async.zfill a => local;")
    assert (s.op, s.is_async, s.zfill, s.swizzle, s.dst, s.tma) == ("copy", True, True, 128,
                                                                     "local", False)


def test_dma_without_target_and_tma():
    s = stmt("tma.copy.async a.chunkat(p, q) => global;")
    assert (s.target, s.tma, s.is_async, s.dst, sx(s.src)) == (None, True, True, "global",
                                                               "(chunkat a p q)")


def test_dma_transp_and_pad():
    t = stmt("g = dma.transp<1, 0>.async a => shared;")
    assert (t.op, t.perm, t.is_async, t.target.id) == ("transp", [1, 0], True, "g")
    p = stmt("h = dma.pad<{1, 2}, {3, 4}, {0, 0}, 0.5f> a => shared;")
    assert (p.op, [sx(x) for x in p.pad_lo], [sx(x) for x in p.pad_hi]) == \
        ("pad", ["1", "2"], ["3", "4"])
    assert ([sx(x) for x in p.pad_mid], sx(p.pad_value)) == (["0", "0"], "0.5")


def test_dma_into_an_existing_view_and_future_data():
    s = stmt("dma.copy f.data.subspan(4).at(i) => out.view(4).from(j);")
    assert (sx(s.src), sx(s.dst)) == ("(subspan (data f) (4) at(i))",
                                      "(view out (4) from(j))")


# --------------------------------------------------------------------------- §11.1 MMA

def test_mma_fill_forms():
    a, b, c, d = body("mc = mma.fill 0;\nmma.fill mc, 1.5f;\nmma.fill.f16 md, 0;\n"
                      "me = mma.fill.s32 -1;")
    assert (a.target.id, a.dtype, sx(a.value), a.assign_form) == ("mc", None, "0", True)
    assert (b.target.id, b.dtype, sx(b.value), b.assign_form) == ("mc", None, "1.5", False)
    assert (c.target.id, c.dtype, c.assign_form) == ("md", "f16", False)
    assert (d.dtype, sx(d.value)) == ("s32", "-1")


def test_mma_load_exec_store_commit():
    load, swz, rr, rc, cr, cc, st, stt, commit = body(
        "ma = mma.load sa.chunkat(_, k);\nmb = mma.load.swiz<64> sb;\n"
        "mma.row.row c, ma, mb;\nmma.row.col c, ma, b.subspan(16, 8).at(k, n);\n"
        "mma.col.row c, ma, mb;\nmma.col.col c, ma, mb;\n"
        "mma.store c, out.subspan(16, 16).at(i, j);\nmma.store.transp c, sc;\nmma.commit;")
    assert (load.target.id, sx(load.view), load.swizzle) == ("ma", "(chunkat sa _ k)", None)
    assert swz.swizzle == 64
    assert [m.layout for m in (rr, rc, cr, cc)] == ["row.row", "row.col", "col.row", "col.col"]
    assert sx(rc.b) == "(subspan b (16 8) at(k n))"
    assert (st.transp, st.frag.id, sx(st.view)) == (False, "c", "(subspan out (16 16) at(i j))")
    assert stt.transp
    assert isinstance(commit, ast.MmaCommit) and commit.span == Span("t.co", 10, 1, 10, 11)


# --------------------------------------------------------------------------- §6.1-§6.3 parallel

def test_parallel_levels_and_forms():
    s = stmt("parallel by 4, p by 2 : group-4, t = {x, y} by [8, 4] : group, "
             "q by a.span : thread {}")
    got = [(lv.names, lv.tuple_name, [sx(b) for b in lv.bounds], lv.bound_is_list, lv.level)
           for lv in s.levels]
    assert got == [([], None, ["4"], False, None),
                   (["p"], None, ["2"], False, "group-4"),
                   (["x", "y"], "t", ["8", "4"], True, "group"),
                   (["q"], None, ["(span a)"], False, "thread")]
    assert (s.is_async, s.stream) == (False, None)


def test_parallel_async_with_stream():
    s = stmt("parallel.async<st> p by [6] : block\n  x = 1;")
    assert (s.is_async, s.stream, s.levels[0].bound_is_list) == (True, "st", True)
    assert isinstance(s.body, ast.Assign)
    assert stmt("parallel.async p by 2 {}").stream is None


def test_plevel_span():
    s = stmt("parallel {a, b} by [2, 3] : block {}")
    assert s.levels[0].span == Span("t.co", 2, 10, 2, 34)


# --------------------------------------------------------------------------- with, foreach

def test_foreach_ranges():
    s = stmt("foreach kt(1:), t(lo:hi:2), u = t(1:-1), v(:-1), k(:-1:), w x = 1;")
    got = [(r.new_name, r.name, r.lo and sx(r.lo), r.hi and sx(r.hi), r.step) for r in s.ranges]
    assert got == [(None, "kt", "1", None, None), (None, "t", "lo", "hi", 2),
                   ("u", "t", "1", "-1", None), (None, "v", None, "-1", None),
                   (None, "k", None, "-1", None), (None, "w", None, None, None)]
    assert s.withins == []


def test_foreach_and_with_withins():
    f = stmt("foreach {m, n} in [4, 8], i in [8], idx = {a, b} in sp {}")
    got = [(w.names, w.tuple_name, [sx(b) for b in w.bound], w.bound_is_list)
           for w in f.withins]
    assert got == [(["m", "n"], None, ["4", "8"], True), (["i"], None, ["8"], True),
                   (["a", "b"], "idx", ["sp"], False)]
    w = stmt("with t in 16, {p, q} in [2, 2] ;")
    assert [x.names for x in w.withins] == [["t"], ["p", "q"]]
    assert isinstance(w.body, ast.Empty)


# --------------------------------------------------------------------------- statements

def test_control_flow():
    i, wh, inth, inth_async = body("if (a) x = 1; else if (b) { x = 2; } else x = 3;\n"
                                   "while (k < 4) k++;\n"
                                   "inthreads (p == 0) {}\ninthreads.async (p == 1) ;")
    assert isinstance(i.other, ast.If) and isinstance(i.other.other, ast.Assign)
    assert (sx(wh.cond), wh.body.op, wh.body.prefix) == ("(< k 4)", "++", False)
    assert (inth.is_async, inth_async.is_async) == (False, True)


def test_jumps_return_print_assert():
    b, c, y, r0, r1, p, pl, a = body(
        'break; continue; yield; return; return c.at(0) + 1;\n'
        'print(); println("a" "b", x, 1.5);\nassert(n > 0, "n must be positive");')
    assert [type(s) for s in (b, c, y)] == [ast.Break, ast.Continue, ast.Yield]
    assert r0.value is None and sx(r1.value) == "(+ (at c 0) 1)"
    assert (p.newline, p.args, pl.newline) == (False, [], True)
    assert [sx(x) for x in pl.args] == ["'ab'", "x", "1.5"]
    assert (sx(a.cond), a.message) == ("(> n 0)", "n must be positive")


def test_wait_trigger_swap_rotate_forms():
    w1, w2, t1, t2, s1, s2, r = body(
        "wait cur_a, cur_b;\nwait(f1, f2);\ntrigger full[st], e;\ntrigger(e[0][1]);\n"
        "swap a, b;\nswap(a, b);\nrotate(f0, f1, f2);")
    assert [sx(x) for x in w1.refs + w2.refs] == ["cur_a", "cur_b", "f1", "f2"]
    assert [sx(x) for x in t1.refs] == ["(index full st)", "e"]
    assert [sx(x) for x in t2.refs] == ["(index (index e 0) 1)"]
    assert [n.id for n in s1.names] == [n.id for n in s2.names] == ["a", "b"]
    assert (r.rotate, [n.id for n in r.names]) == (True, ["f0", "f1", "f2"])


def test_sync_forms():
    got = [(s.kind, s.level) for s in body(
        "sync.shared; sync.barrier : block; sync.fence : group-4; sync.global;\n"
        "sync.barrier : group; sync.barrier : thread;")]
    assert got == [("shared", None), ("barrier", "block"), ("fence", "group-4"),
                   ("global", None), ("barrier", "group"), ("barrier", "thread")]


def test_assignments():
    a, b, c, d, e, f, g, h = body(
        "x = e;\nx += 1;\nx - = 2;\nout.at(i, j) *= v;\nbuf[i].at(0) %= 3;\n"
        "++x;\nx--;\n--y;")
    assert [(sx(s.target), s.op) for s in (a, b, c, d, e)] == [
        ("x", "="), ("x", "+="), ("x", "-="), ("(at out i j)", "*="),
        ("(at (index buf i) 0)", "%=")]
    assert [(s.op, s.target.id, s.prefix) for s in (f, g, h)] == [
        ("++", "x", True), ("--", "x", False), ("--", "y", True)]
    assert b.span == Span("t.co", 3, 1, 3, 7)


def test_buffer_declarations():
    a, b, c = body("global f32 [M, N] out;\nshared f16 [64, 16] sa[2][3], sb {0.0f};\n"
                   "local s32 [lhs.span] t {1}, u;")
    assert (a.storage, a.dtype.name, [i.name for i in a.items]) == ("global", "f32", ["out"])
    assert [(i.name, [sx(x) for x in i.array], i.init and sx(i.init)) for i in b.items] == [
        ("sa", ["2", "3"], None), ("sb", [], "0.0")]
    assert (c.storage, [sx(x) for x in c.shape]) == ("local", ["(span lhs)"])
    assert [(i.name, i.init and sx(i.init)) for i in c.items] == [("t", "1"), ("u", None)]


def test_scalar_declarations():
    a, b, c, d, e, f, g = body(
        "int n = 4, m = n + 1;\nbool ok = true;\ns32 acc = 0;\nmutable int k = 0;\n"
        "mutable x = 1.5f;\nituple t = {a, b};\nmdspan sp : [a, 8];")
    assert [(s.mutable, s.type and s.type.name) for s in (a, b, c, d, e, f, g)] == [
        (False, "int"), (False, "bool"), (False, "s32"), (True, "int"), (True, None),
        (False, "ituple"), (False, "mdspan")]
    assert [(i.name, sx(i.init)) for i in a.items] == [("n", "4"), ("m", "(+ n 1)")]
    assert sx(f.items[0].init) == "{a b}" and sx(g.items[0].init) == "[a 8]"
    assert stmt("f16 h;").items[0].init is None  # the checker requires the initializer


def test_event_declarations():
    a, b, c, d, e = body("shared event full[2], empty[2];\nshared event e[2] = ready;\n"
                         "shared event<128> e1;\nevent plain;\n"
                         "shared event f = ready, g, h[3] = ready;")
    assert [(i.name, [sx(x) for x in i.array]) for i in a.items] == [("full", ["2"]),
                                                                      ("empty", ["2"])]
    assert [i.ready for i in a.items + b.items] == [False, False, True]
    assert [(i.name, i.ready) for i in e.items] == [("f", True), ("g", False), ("h", True)]
    assert (sx(c.count), c.items[0].name) == ("128", "e1")
    assert (d.storage, d.items[0].name) == (None, "plain")


# --------------------------------------------------------------------------- functions

def test_parameter_forms():
    (f,) = parse_ok("__co__ s32 [4, 8] f(global f16 [M, K] a, f16 [M, K], s32 [?, 4] x,\n"
                    "  int n, f32 alpha, stream s, bool, stream, local s8 [4] l) {}").functions
    assert (f.ret.name, [sx(e) for e in f.ret_shape]) == ("s32", ["4", "8"])
    got = [(p.storage, p.type.name, p.shape and [d.expr and sx(d.expr) for d in p.shape],
            p.name) for p in f.params]
    assert got == [("global", "f16", ["M", "K"], "a"), (None, "f16", ["M", "K"], None),
                   (None, "s32", [None, "4"], "x"), (None, "int", None, "n"),
                   (None, "f32", None, "alpha"), (None, "stream", None, "s"),
                   (None, "bool", None, None), (None, "stream", None, None),
                   ("local", "s8", ["4"], "l")]
    assert f.params[0].span == Span("t.co", 1, 21, 1, 40)


def test_several_functions_in_order():
    program = parse_ok("__co__ void a() {}\nint main() { return 0; }\n"
                       "__co__ auto b(int n) { return n; }")
    assert [f.name for f in program.functions] == ["a", "b"]
