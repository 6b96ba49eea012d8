"""The preprocessor and function extraction of LANGUAGE.md §1: macros, conditionals,
#line, host-text notes."""
import pytest

from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.lexer import tokenize_program
from croqvm.core.source import SourceFile, Span


def lex(text, defines=None):
    sink = DiagnosticSink()
    functions = tokenize_program(SourceFile("t.co", text), defines, sink)
    return functions, sink.items


def values(text, defines=None):
    """The token values of each function, without '__co__' and EOF; no errors allowed."""
    fns, diags = lex(text, defines)
    assert not [d for d in diags if d.is_error], diags
    return [" ".join(str(t.value) for t in fn[1:-1]) for fn in fns]


def messages(text, defines=None, severity="error"):
    _, diags = lex(text, defines)
    return [(d.message, d.span.line if d.span else None, d.span.col if d.span else None)
            for d in diags if d.severity == severity]


def co(code):
    return "__co__ {\n" + code + "\n}\n"


# ------------------------------------------------------------------ object-like macros

def test_object_macro():
    assert values("#define N 16\n" + co("x = N * N;")) == ["{ x = 16 * 16 ; }"]


def test_expanded_tokens_carry_the_span_of_the_use():
    (fn,), _ = lex("#define N (4 + 1)\n__co__ {\n  x = N;\n}")
    assert [(t.value, t.span) for t in fn[4:9]] == [(v, Span("t.co", 3, 7, 3, 8))
                                                   for v in ("(", 4, "+", 1, ")")]


def test_nested_macros_expand_recursively():
    assert values("#define A B + 1\n#define B C * 2\n#define C 7\n" + co("A")) == \
        ["{ 7 * 2 + 1 }"]


def test_a_macro_never_expands_inside_itself():
    assert values("#define X X + 1\n" + co("X")) == ["{ X + 1 }"]
    assert values("#define A B\n#define B A\n" + co("A B")) == ["{ A B }"]


def test_empty_macro():
    assert values("#define NOTHING\n" + co("a NOTHING b")) == ["{ a b }"]


def test_comments_are_removed_before_directives():
    text = "#define N 16 // size\n#define M /* one */ 1 /* two\n lines */\n" + co("N M")
    assert values(text) == ["{ 16 1 }"]


def test_line_continuation():
    assert values("#define SUM 1 + \\\n  2 + \\\n  3\n" + co("SUM")) == ["{ 1 + 2 + 3 }"]


def test_keywords_can_be_macros():
    assert values("#define float f32\n" + co("float x;")) == ["{ f32 x ; }"]


def test_undef():
    assert values("#define N 1\n" + co("N") + "#undef N\n" + co("N")) == ["{ 1 }", "{ N }"]


def test_definitions_count_from_their_line_on():
    text = co("N") + "#define N 5\n" + co("N") + co("x\n#define N 6\nN")
    assert values(text) == ["{ N }", "{ 5 }", "{ x 6 }"]


def test_definitions_in_host_text_apply():
    assert values("int main() {\n#define W 32\n}\n" + co("W")) == ["{ 32 }"]


# ------------------------------------------------------------------ function-like macros

def test_function_macro():
    assert values("#define ADD(a, b) ((a) + (b))\n" + co("ADD(x, 2)")) == \
        ["{ ( ( x ) + ( 2 ) ) }"]


def test_arguments_split_at_top_level_commas_only():
    text = "#define FIRST(a, b) a\n" + co("FIRST(f(1, 2), 3) FIRST((x, y), z)")
    assert values(text) == ["{ f ( 1 , 2 ) ( x , y ) }"]


def test_arguments_keep_their_own_spans():
    (fn,), _ = lex("#define TWICE(a) a + a\n__co__ {\n  TWICE(k);\n}")
    k1, plus, k2 = fn[2:5]
    assert k1.span == k2.span == Span("t.co", 3, 9, 3, 10)
    assert plus.span == Span("t.co", 3, 3, 3, 11)  # the whole use TWICE(k)


def test_nested_calls_and_arguments_expanded_first():
    text = "#define SQ(x) ((x) * (x))\n#define N 3\n" + co("SQ(SQ(N))")
    assert values(text) == ["{ ( ( ( ( 3 ) * ( 3 ) ) ) * ( ( ( 3 ) * ( 3 ) ) ) ) }"]


def test_result_is_rescanned_with_the_rest_of_the_input():
    text = "#define F G\n#define G(x) x * 2\n" + co("F(3)")
    assert values(text) == ["{ 3 * 2 }"]


def test_function_macro_name_without_parenthesis_stays_a_name():
    assert values("#define F(x) x\n" + co("F + 1")) == ["{ F + 1 }"]


def test_blank_before_parenthesis_makes_an_object_macro():
    assert values("#define F (x) x\n" + co("F(1)")) == ["{ ( x ) x ( 1 ) }"]


def test_zero_parameter_macro():
    assert values("#define Z() 0\n" + co("Z()")) == ["{ 0 }"]


def test_arguments_may_span_lines():
    assert values("#define F(a, b) a - b\n" + co("F(1,\n  2)")) == ["{ 1 - 2 }"]


@pytest.mark.parametrize("use, message", [
    ("F(1, 2, 3)", "macro 'F' expects 2 arguments, but 3 were given."),
    ("F(1)", "macro 'F' expects 2 arguments, but 1 was given."),
    ("G(1, 2)", "macro 'G' expects 1 argument, but 2 were given."),
])
def test_argument_count_must_match(use, message):
    text = "#define F(a, b) a\n#define G(a) a\n__co__ {\n  x = " + use + ";\n}"
    assert messages(text) == [(message, 4, 7)]


def test_unterminated_macro_call():
    assert messages("#define F(a) a\n__co__ {\n F(1, 2\n") == [
        ("unterminated argument list invoking macro 'F'.", 3, 2)]


@pytest.mark.parametrize("define, col", [
    ("#define S(x) #x", 14), ("#define J(a, b) a ## b", 19), ("#define H # 1", 11)])
def test_hash_operators_in_macros_are_refused_on_use(define, col):
    text = define + "\n__co__ {\n S(1) J(1, 2) H\n}"
    assert messages(text) == [("'#' and '##' are not supported in macros.", 1, col)]


def test_variadic_macros_are_refused_on_use():
    text = "#define V(fmt, ...) fmt\n__co__ {\n V(1, 2)\n}"
    assert messages(text) == [("variadic macros ('...') are not supported in macros.", 1, 16)]


def test_host_macros_with_unsupported_features_are_fine_when_unused():
    text = "#define STR(x) #x\n#define LOG(...) printf(__VA_ARGS__)\n" + co("x")
    assert messages(text) == []


@pytest.mark.parametrize("directive, message", [
    ("#define 3 x", "macro names must be identifiers."),
    ("#define F(a x", "missing ')' in the parameter list of macro 'F'."),
    ("#define F(a, a) a", "duplicate parameter 'a' in macro 'F'."),
    ("#define F(1) a", "'1' may not appear in the parameter list of macro 'F'."),
])
def test_malformed_definitions(directive, message):
    assert messages(directive + "\n") == [(message, 1, 1)]


def test_errors_in_macro_bodies_point_at_the_use():
    text = "#define BAD 1e3\n__co__ {\n  x = BAD;\n}"
    assert messages(text) == [("floating-point exponents are not supported", 3, 7)]


def test_exponential_expansion_is_stopped():
    defs = "".join(f"#define M{i} M{i + 1} M{i + 1}\n" for i in range(30))
    msgs = messages(defs + co("M0"))
    assert msgs == [("macro expansion is too large.", 32, 1)]


# ------------------------------------------------------------------ -D options

def test_command_line_defines():  # §1.2.4: -D A=7, -D B (1), -D C= (nothing)
    text = co("A B C")
    assert values(text, {"A": "7", "B": None, "C": ""}) == ["{ 7 1 }"]


def test_command_line_function_macro_and_override():
    assert values(co("SQ(4)"), {"SQ(x)": "x*x"}) == ["{ 4 * 4 }"]
    assert values("#define N 2\n" + co("N"), {"N": "9"}) == ["{ 2 }"]  # -D precedes line 1


def test_command_line_defines_in_conditions():
    text = "#ifdef FAST\n" + co("fast") + "#else\n" + co("slow") + "#endif\n"
    assert values(text, {"FAST": None}) == ["{ fast }"]
    assert values(text) == ["{ slow }"]


# ------------------------------------------------------------------ conditionals

def cond(expr, defines=None):
    """Whether ``#if expr`` is true, read from which function survives."""
    text = f"#if {expr}\n" + co("yes") + "#else\n" + co("no") + "#endif\n"
    (result,) = values(text, defines)
    return result == "{ yes }"


@pytest.mark.parametrize("expr, truth", [
    ("1", True), ("0", False), ("1 + 2 * 3 == 7", True), ("(1 + 2) * 3 == 9", True),
    # C precedence: equality binds tighter than the bitwise operators
    ("1 | 2 == 3", True), ("2 & 1 == 1", False), ("(2 & 1) == 0", True),
    ("1 << 2 + 1 == 8", True), ("10 - 2 - 3 == 5", True), ("2 * 3 % 4 == 2", True),
    ("-7 / 2 == -3", True), ("-7 % 2 == -1", True), ("~0 == -1", True), ("!0 && !!5", True),
    ("1 ? 0 : 1", False), ("0 ? 1 : 2 == 2", True), ("0x10 == 16", True), ("3 > 2 > 1", False),
    ("1 || 1 / 0", True), ("0 && 1 / 0", False), ("UNKNOWN", False), ("UNKNOWN + 1", True),
    ("10u > 3", True), ("4 >= 4 && 3 <= 2", False), ("5 ^ 1 == 4", True),
])
def test_if_expressions(expr, truth):
    assert cond(expr) is truth


@pytest.mark.parametrize("expr, truth", [
    ("defined(N)", True), ("defined N", True), ("defined(M)", False), ("!defined M", True),
    ("defined N && N == 4", True), ("N * 2 == 8", True), ("SQ(N) == 16", True),
    ("defined SQ", True),
])
def test_if_with_macros_and_defined(expr, truth):
    text = "#define N 4\n#define SQ(x) ((x) * (x))\n" + \
        f"#if {expr}\n" + co("yes") + "#else\n" + co("no") + "#endif\n"
    assert values(text) == ["{ yes }" if truth else "{ no }"]


def test_elif_chain():
    text = ("#if V == 1\n" + co("one") + "#elif V == 2\n" + co("two") +
            "#elif V == 2\n" + co("again") + "#else\n" + co("other") + "#endif\n")
    assert values(text, {"V": "1"}) == ["{ one }"]
    assert values(text, {"V": "2"}) == ["{ two }"]
    assert values(text, {"V": "3"}) == ["{ other }"]


def test_ifdef_ifndef_and_nesting():
    text = ("#define A\n#ifdef A\n#ifndef B\n" + co("a_not_b") + "#else\n" + co("a_b") +
            "#endif\n#else\n#if 1\n" + co("never") + "#endif\n#endif\n")
    assert values(text) == ["{ a_not_b }"]
    assert values(text, {"B": None}) == ["{ a_b }"]


def test_false_region_is_not_evaluated_or_defined():
    text = "#if 0\n#if 1 / 0 +\n#define N 5\n#endif\n#endif\n" + co("N")
    assert values(text) == ["{ N }"]


def test_directives_inside_a_function():
    text = "__co__ {\n  a\n#if 0\n  b }\n#endif\n  c\n}\n"
    assert values(text) == ["{ a c }"]


@pytest.mark.parametrize("text, expected", [
    ("#endif\n", [("'#endif' without '#if'.", 1, 1)]),
    ("#else\n", [("'#else' without '#if'.", 1, 1)]),
    ("#elif 1\n", [("'#elif' without '#if'.", 1, 1)]),
    ("#if 1\n#else\n#else\n#endif\n", [("'#else' after '#else'.", 3, 1)]),
    ("#if 1\n#else\n#elif 1\n#endif\n", [("'#elif' after '#else'.", 3, 1)]),
    ("\n  #if 1\n#ifdef X\n", [("unterminated '#if'.", 2, 3), ("unterminated '#ifdef'.", 3, 1)]),
    ("#if\n#endif\n", [("'#if' with no expression.", 1, 1)]),
    ("#ifdef\n#endif\n", [("no macro name given in '#ifdef' directive.", 1, 1)]),
    ("#if 1 / 0\n#endif\n", [("division by zero in '#if'.", 1, 7)]),
    ("#if (1\n#endif\n", [("missing ')' in '#if' expression.", 1, 5)]),
    ("#if 1 2\n#endif\n", [("missing binary operator before '2' in '#if'.", 1, 7)]),
    ("#if 1.5\n#endif\n", [("floating-point literals are not allowed in '#if'.", 1, 5)]),
    ("#if defined\n#endif\n", [("'defined' needs a macro name in '#if'.", 1, 5)]),
    ("#if 1 +\n#endif\n", [("'#if' expression ends unexpectedly.", 1, 7)]),
    ("#line x\n", [("'#line' needs a positive line number and, optionally, a file name "
                    "in quotes.", 1, 1)]),
    ("/* open", [("unterminated comment.", 1, 1)]),
])
def test_directive_errors(text, expected):
    assert messages(text) == expected


def test_deep_nesting_does_not_crash():
    text = "#if 1\n" * 3000 + co("x") + "#endif\n" * 3000
    assert values(text) == ["{ x }"]
    assert messages("#if " + "(" * 500 + "1" + ")" * 500 + "\n#endif\n") == [
        ("'#if' expression is nested too deeply.", 1, 1)]


def test_include_and_pragma_are_skipped_silently():
    text = "#include <cstdio>\n#include \"x.h\"\n#pragma once\n" + co("x")
    _, diags = lex(text)
    assert diags == []


def test_directive_with_blanks_after_hash_and_hash_as_operator():
    assert values("  #  define N 2\n" + co("a\n# N")) == ["{ a # 2 }"]


# ------------------------------------------------------------------ #line

def test_line_directive_sets_lines_and_file():
    (fn,), _ = lex("#line 100\n__co__ {\n#line 7 \"k.co\"\n  x\n}")
    assert [(t.value, t.span.file, t.span.line) for t in fn[:4]] == [
        ("__co__", "t.co", 100), ("{", "t.co", 100), ("x", "k.co", 7), ("}", "k.co", 8)]


def test_line_directive_in_notes():
    assert messages("#line 50\nint x;\n", severity="note") == [
        ("host C++ code is not compiled by croqvm (line 50)", 50, 1)]


# ------------------------------------------------------------------ functions and host text

def test_functions_in_false_regions_do_not_exist():
    text = co("a") + "#if 0\n" + co("b") + "#endif\n" + co("c")
    assert values(text) == ["{ a }", "{ c }"]


def test_co_in_comments_and_strings_is_not_a_function():
    text = ('// __co__ f() {}\n/* __co__ g() {} */\nconst char *s = "__co__ {";\n'
            "char c = '\"'; int x__co__ = 1;\n" + co("x"))
    assert values(text) == ["{ x }"]


def test_braces_in_strings_and_comments_do_not_close_the_function():
    text = '__co__ {\n  print("}"); // }\n  /* } */ y\n}\nint z;'
    assert values(text) == ['{ print ( } ) ; y }']


def test_host_text_notes_cover_each_stretch():
    text = "\n".join([
        "#include <cstdio>",          # 1: directive only
        "// comment",                 # 2
        "int helper() {",             # 3
        "",                           # 4
        "  return 1;",                # 5
        "}",                          # 6
        "__co__ void f() { x }",      # 7
        "",                           # 8
        "int main() { return 0; }",   # 9
        "/* trailing */",             # 10
    ])
    _, diags = lex(text)
    notes = [(d.severity, d.message, d.span) for d in diags]
    assert notes == [
        ("note", "host C++ code is not compiled by croqvm (lines 3-6)", Span("t.co", 3, 1, 3, 15)),
        ("note", "host C++ code is not compiled by croqvm (line 9)", Span("t.co", 9, 1, 9, 25)),
    ]


def test_no_note_for_blank_comment_and_directive_host_text():
    text = "#define N 2\n\n/* x\n y */\n// z\n#if 0\nint ignored;\n#endif\n" + co("N")
    assert messages(text, severity="note") == []


def test_host_text_on_the_same_line_as_a_function():
    text = "int a; __co__ {\n x\n} int b;\n"
    assert messages(text, severity="note") == [
        ("host C++ code is not compiled by croqvm (line 1)", 1, 1),
        ("host C++ code is not compiled by croqvm (line 3)", 3, 1)]


def test_raw_strings_in_host_code():
    text = 'auto s = R"x(__co__ { )x";\n' + co("y")
    assert values(text) == ["{ y }"]
