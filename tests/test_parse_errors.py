"""Syntax errors (LANGUAGE.md §15): exact message and position, recovery that reports every
independent error without cascades, the nesting guard, and random token lists.

Each case is the body of ``__co__ void f() { ... }``, so its first line is line 2.
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.lexer import tokenize_program
from croqvm.lang.parser import parse_function, parse_program
from croqvm.core.source import SourceFile, Span
from croqvm.lang.tokens import (EOF, FLOAT, GROUP4, INT, KEYWORD, MEMBER, MEMBER_WORDS, NAME,
                                OP, RESERVED, STRING, Token)


def diagnose(text: str):
    sink = DiagnosticSink()
    program = parse_program(tokenize_program(SourceFile("t.co", text), None, sink), sink)
    return program, [f"{d.span.line}:{d.span.col}: {d.message}" for d in sink.sorted()
                     if d.is_error]


def errors_in_body(body: str) -> list[str]:
    program, errors = diagnose("__co__ void f() {\n" + body + "\n}")
    assert program.functions == []  # a function with syntax errors is left out
    return errors


SE = "syntax error: "

CASES = [
    ("  parallel [4] {}", [f"2:12: {SE}unexpected '[', expecting 'by', '{{' or a name."]),
    ("  parallel p 4 {}", [f"2:13: {SE}expected 'by' after the parallel variables."]),
    ("  parallel p by 4 : warp {}",
     [f"2:21: {SE}unexpected 'warp', expecting 'cluster', 'block', 'group-4', 'group' or"
     " 'thread'."]),
    ("  parallel.async<> p by 4 {}", [f"2:18: {SE}unexpected '>', expecting the name of a "
                                      f"'stream' parameter."]),
    ("  x = 1\n  y = 2;", [f"2:8: {SE}expected ';' after the statement."]),
    ("  x = (a + b;", [f"2:13: {SE}expected ')' to close '('."]),
    ("  by = 3;", [f"2:3: {SE}'by' is a reserved word and can not be used as a name."]),
    ("  int by = 3;", [f"2:7: {SE}'by' is a reserved word and can not be used as a name."]),
    ("  x = block + 1;",
     [f"2:7: {SE}'block' is a reserved word and can not be used as a name."]),
    ("  if x > 0 { y = 1; }\n  else z = 2;", [f"2:5: {SE}expected '(' after 'if'."]),
    ("  else z = 2;", ["2:3: 'else' without a previous 'if'."]),
    ("  f = dma.copy a shared;",
     [f"2:17: {SE}expected '=>' between the source and the destination of the DMA."]),
    ("  dma.any;", [f"2:3: {SE}'dma.any' makes a placeholder future and must be assigned to "
                    f"a name, as in 'f = dma.any;'."]),
    ("  dma.move a => b;", [f"2:6: {SE}unexpected '.move', expecting '.copy', '.transp', "
                            f"'.pad' or '.any' after 'dma'."]),
    ("  dma.copy.async.async a => b;", [f"2:17: {SE}'.async' is written twice."]),
    ("  x = mma.row.row a, b, c;", [f"2:14: {SE}'mma.row.row' has no value to assign to 'x'; "
                                   f"'x = mma.row.row.async ...' makes an operation future."]),
    ("  mma.load a;", [f"2:6: {SE}'mma.load' must be assigned to a name, as in "
                       f"'fa = mma.load sa;', or name its fragment, as in "
                       f"'mma.load sa, f;'."]),
    ("  foreach kt(1) {}",
     [f"2:15: {SE}expected ':' in the range of 'kt', as in 'kt(lo:hi)'."]),
    ("  foreach t(0:0:-1) {}",
     [f"2:17: {SE}the step of the range of 't' must be a positive integer literal."]),
    ("  foreach i in [8], t(1:) {}", [f"2:3: {SE}a 'foreach' iterates either 'in' bounds or "
                                      f"ranges of bounded variables, not both."]),
    ("  with t 4 {}", [f"2:9: {SE}expected 'in' after the iteration variables."]),
    ("  sync.barrier;", [f"2:15: {SE}expected ':' and a level after 'sync.barrier', as in "
                         f"'sync.barrier : block;'."]),
    ("  sync.warp;", [f"2:7: {SE}unexpected '.warp', expecting '.shared', '.barrier', "
                      f"'.fence' or '.global' after 'sync'."]),
    ("  shared event e = go;", ["2:20: event initializer must be 'ready'"]),
    ("  shared f32 x;",
     [f"2:13: {SE}expected '[' and the shape of the 'shared' buffer after 'f32'."]),
    ("  s32 [] x;", [f"2:7: {SE}a buffer shape needs at least one dimension."]),
    ("  x = a.subspan(2).from(1);", [f"2:19: {SE}'.from' must follow '.view(...)'."]),
    ("  x = a.view(2);", [f"2:16: {SE}expected '.from(...)' after '.view(...)'."]),
    ("  assert(x > 0, 3);",
     [f"2:17: {SE}unexpected '3', expecting a string (the message of 'assert')."]),
    ("  x + 1;",
     [f"2:5: {SE}unexpected '+', expecting '=' or a compound assignment such as '+='."]),
    ("  a.span = 3;", [f"2:3: {SE}only a name or an element 'b.at(...)' can be assigned."]),
    ("  a.at(1)++;", [f"2:3: {SE}'++' applies to a name only."]),
    ("  x = #3;", [f"2:8: {SE}unexpected '3', expecting a name after '#' (the bound '#x' of "
                   f"a bounded variable)."]),
    ("  x = |a.span;",
     [f"2:14: {SE}expected '|' to close '|' (the element count '|a.span|')."]),
    ("  x = __to(y);",
     [f"2:11: {SE}expected '<' and a type after '__to', as in '__to<f32>(x)'."]),
    ("  x = a ? b;", [f"2:12: {SE}expected ':' in the conditional expression 'c ? a : b'."]),
    ("  swap(a, 1);", [f"2:11: {SE}unexpected '1', expecting a name."]),
    ("  wait;", [f"2:7: {SE}unexpected ';', expecting a name."]),
    ("  wait e.at 3;", [f"2:12: {SE}expected '(' and the event order after '.at', as in "
                        f"'wait full.at(order);'."]),
    ("  trigger e after;", [f"2:18: {SE}unexpected ';', expecting a name."]),
    ("  wait e after f;", [f"2:10: {SE}only 'trigger' takes an 'after' clause, as in 'trigger "
                           f"full after f;'."]),
    ("  x = ;", [f"2:7: {SE}unexpected ';', expecting an expression."]),
    ("  s33 x = 1;", [f"2:3: {SE}unknown type 's33'."]),
    ("  mdspan<0> sp : [4];", [f"2:10: {SE}the rank of 'mdspan<N>' must be a positive "
                              f"integer literal."]),
    ("  auto x = 1;", [f"2:3: {SE}unexpected 'auto', expecting a statement."]),
    ("  foreach i in [4] : unroll(0) { }", [f"2:29: {SE}unroll factor must be a positive "
                                            f"integer."]),
    ("  foreach i in [4] : roll { }", [f"2:22: {SE}expected 'unroll' or 'unroll(k)' after "
                                      f"':' of the 'foreach'."]),
    ("  )x = 1;\n  y = 2;", [f"2:3: {SE}unexpected ')', expecting a statement."]),
]


@pytest.mark.parametrize("body,expected", CASES, ids=[c[0].strip() for c in CASES])
def test_syntax_error(body, expected):
    assert errors_in_body(body) == expected


# --------------------------------------------------------------------------- headers

@pytest.mark.parametrize("rng, col", [("t(0::2)", 14), ("t(::2)", 13), ("t(1::)", 14)])
def test_a_double_colon_in_a_range_is_one_token(rng, col):
    # §2.4.1: longest match makes '::' one token, so it can not be two ':' of a range
    # (§5.5.2); with a blank between them it is
    sink = DiagnosticSink()
    parse_program(tokenize_program(SourceFile("t.co", f"__co__ void f() {{\n  foreach {rng} "
                                                      f"{{}}\n}}"), None, sink), sink)
    assert [(d.span.line, d.span.col, d.span.end_col, d.message, d.hint)
            for d in sink.sorted()] == [
        (2, col, col + 2, f"{SE}'::' is one token, not two ':' of the range of 't'.",
         "put a blank between them, as in 't(0: :2)', or write 't(0:0:2)'")]
    program, errors = diagnose("__co__ void f() {\n  foreach t(0: :2) {}\n  foreach t(: :2) {}"
                               "\n  foreach t(0:0:2) {}\n}")
    assert errors == [] and len(program.functions) == 1


@pytest.mark.parametrize("text,expected", [
    ("__co__ f() {\n}", [f"1:8: {SE}unexpected 'f', expecting a return type ('void', 'auto' "
                         f"or a type such as 's32')."]),
    ("__co__ void f(int a b) {\n}", [f"1:20: {SE}expected ')' to close '('."]),
    ("__co__ void f(int shared) {\n}",
     [f"1:19: {SE}'shared' is a reserved word and can not be used as a name."]),
    ("__co__ void f() {\n  x = 1;", [f"2:9: {SE}expected '}}' to close '{{'."]),
])
def test_function_header_errors(text, expected):
    program, errors = diagnose(text)
    assert (program.functions, errors) == ([], expected)


def test_header_error_still_reports_the_body():
    _, errors = diagnose("__co__ void f( {\n  x = ;\n}")
    assert errors == [f"1:16: {SE}unexpected '{{', expecting a type such as 's32' or 'f16'.",
                      f"2:7: {SE}unexpected ';', expecting an expression."]


# --------------------------------------------------------------------------- recovery

def test_independent_errors_are_all_reported():
    assert errors_in_body("  x = a.at(i j);\n  y = ;\n  z = 3 +;") == [
        f"2:13: {SE}expected ')' to close '('.",
        f"3:7: {SE}unexpected ';', expecting an expression.",
        f"4:10: {SE}unexpected ';', expecting an expression."]


def test_errors_inside_and_after_a_nested_body():
    assert errors_in_body("  parallel p by 4 {\n    x = 1 +;\n  }\n  y = ;") == [
        f"3:12: {SE}unexpected ';', expecting an expression.",
        f"5:7: {SE}unexpected ';', expecting an expression."]


@pytest.mark.parametrize("body", [
    "  parallel p by 4 : bogus {\n    x = 1;\n    y = ;\n  }\n  z = 1;",  # body skipped whole
    "  a = {1, 2 3};\n  b = 1;",            # the '}' of the ituple is not the block's
    "  x = (a + b;\n  y = 1;",               # an unclosed '(' does not hide the ';'
    "  if (a b) { x = 1; } else { y = ; }\n  z = 1;",
    "  foreach i in [8] x = ;\n  y = 1;",    # an unbraced body
])
def test_one_error_does_not_cascade(body):
    assert len(errors_in_body(body)) == 1


def test_errors_in_several_functions_and_a_valid_one():
    program, errors = diagnose("__co__ void a() { x = ; }\n__co__ void b() { y = 1 }\n"
                               "__co__ void c() { z = 1; }")
    assert [f.name for f in program.functions] == ["c"]
    assert errors == [f"1:23: {SE}unexpected ';', expecting an expression.",
                      f"2:24: {SE}expected ';' after the statement."]


# --------------------------------------------------------------------------- nesting

DEEP = 10_000
TOO_DEEP = f"{SE}nesting too deep (more than 64 levels of brackets or statements)."


@pytest.mark.parametrize("body", [
    "x = " + "(" * DEEP + "1" + ")" * DEEP + ";",
    "x = " + "(" * DEEP,
    "{" * DEEP + "}" * DEEP,
    "x = " + "a.at(" * DEEP + "1" + ")" * DEEP + ";",
    "x = " + "{" * DEEP + "1" + "}" * DEEP + ";",
    "x = " + "c ? a : " * DEEP + "y;",
    "if (a) " * DEEP + "x = 1;",
    "x = " + "| " * DEEP + "a;",
], ids=lambda body: body[:12])
def test_deep_nesting_is_one_clear_error(body):
    errors = errors_in_body(body)
    assert [e.split(": ", 1)[1] for e in errors] == [TOO_DEEP]


@pytest.mark.parametrize("body", [
    "x = " + "a + " * DEEP + "1;",
    "x = " + "-" * DEEP + "a;",
    "x = a" + "[0]" * DEEP + ";",
], ids=lambda body: body[:12])
def test_long_operator_chains_are_one_clear_error(body):
    errors = errors_in_body(body)
    assert [e.split(": ", 1)[1] for e in errors] == [
        f"{SE}expression too long (more than 256 operators in a row)."]


def test_nesting_below_the_limits_is_fine():
    program, errors = diagnose("__co__ void f() { x = " + "(" * 50 + "a" + ")" * 50 + " + "
                               + "b + " * 200 + "1; }")
    assert errors == [] and len(program.functions) == 1


# --------------------------------------------------------------------------- random tokens

_WORDS = sorted(RESERVED | {"__co__", "__to", "__min", "__max", "__sqrt", "ready", "async"})
_OPS = ("=> :: ++ -- == != <= >= && || << >> #+ #- #* #/ #% + - * / % = < > ! ~ & | ^ ? : ; "
        ", . # ( ) [ ] { }").split()
_TOKEN_SHAPES = st.one_of(
    st.tuples(st.just(OP), st.sampled_from(_OPS)),
    st.tuples(st.just(KEYWORD), st.sampled_from(_WORDS)),
    st.tuples(st.just(NAME), st.sampled_from(["a", "b", "x", "_", "ready", "async", "f"])),
    st.tuples(st.just(MEMBER), st.sampled_from(sorted("." + w for w in MEMBER_WORDS))),
    st.tuples(st.just(INT), st.integers(0, 300)),
    st.tuples(st.just(FLOAT), st.floats(0, 10, allow_nan=False)),
    st.tuples(st.just(STRING), st.just("s")),
    st.tuples(st.just(GROUP4), st.just("group-4")),
)


def _tokens(shapes, with_header: bool) -> list[Token]:
    if with_header:
        shapes = [(KEYWORD, "__co__"), (KEYWORD, "void"), (NAME, "f"), (OP, "("), (OP, ")"),
                  (OP, "{")] + list(shapes)
    toks = []
    for i, (kind, value) in enumerate(shapes):
        dtype = {INT: "s32", FLOAT: "f32"}.get(kind)
        toks.append(Token(kind, value, Span("r.co", 1, 2 * i + 1, 1, 2 * i + 2), dtype))
    toks.append(Token(EOF, None, Span("r.co", 1, 2 * len(shapes) + 1, 1, 2 * len(shapes) + 2)))
    return toks


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKEN_SHAPES, max_size=60), st.booleans())
def test_random_tokens_never_raise(shapes, with_header):
    sink = DiagnosticSink()
    parse_function(_tokens(shapes, with_header), sink)  # must not raise
    assert not [d for d in sink.items if "internal error" in d.message]


_A5_BODY = """
  parallel {bm, bn} by [cdiv(M, 64), cdiv(N, 64)] : block {
    shared event full[2], empty[2] = ready;
    shared f16 [64, 64] sa[2];
    parallel role by 2 : group-4 {
      inthreads.async (role == 0) {
        foreach kt in [cdiv(K, 64)] {
          st = kt % 2;
          wait empty[st];
          dma.copy.zfill a.subspan(64, 64).at(bm, kt) => sa[st];
          trigger full[st];
        }
      }
      inthreads.async (role == 1) {
        acc = mma.fill.f32 0.0f;
        foreach kt(1:), u = kt(0:-1:2) { fa = mma.load sa[st].chunkat(_, w); }
        mma.row.row acc, fa, fa;
        mma.store.transp acc, c.subspan(64, 64).at(bm, bn);
      }
    }
  }
"""


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_programs_never_raise(data):
    sink = DiagnosticSink()
    (tokens,) = tokenize_program(SourceFile("m.co", "__co__ void g() {" + _A5_BODY + "}"),
                                 None, sink)
    tokens = list(tokens)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(tokens) - 2))
        action = data.draw(st.sampled_from(["drop", "dup", "swap"]))
        if action == "drop":
            del tokens[i]
        elif action == "dup":
            tokens.insert(i, tokens[i])
        else:
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    parse_function(tokens, sink)  # must not raise
    assert not [d for d in sink.items if "internal error" in d.message]
