"""Lexical rules of LANGUAGE.md §2: names, literals, operators, member tokens, locations."""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from croqvm.core.diagnostics import DiagnosticSink
from croqvm.lang.lexer import tokenize_program
from croqvm.core.source import SourceFile, Span


def lex(text, defines=None):
    sink = DiagnosticSink()
    functions = tokenize_program(SourceFile("t.co", text), defines, sink)
    return functions, sink.items


def body(code):
    """Tokens of ``code`` written on line 2 of a function, as (kind, value) pairs."""
    (fn,), diags = lex("__co__\n" + code)
    assert not [d for d in diags if d.is_error], diags
    return [(t.kind, t.value) for t in fn[1:-1]]


def errors(code):
    """``(message, line, col, end_col, hint)`` of each error for ``code`` on line 2."""
    _, diags = lex("__co__\n" + code)
    return [(d.message, d.span.line, d.span.col, d.span.end_col, d.hint)
            for d in diags if d.is_error]


def only(code):
    toks = lex("__co__\n" + code)[0][0][1:-1]
    assert len(toks) == 1, toks
    return toks[0]


# ------------------------------------------------------------------ names (§2.1)

@pytest.mark.parametrize("text, kind", [
    ("x", "NAME"), ("_", "NAME"), ("_x1", "NAME"), ("ready", "NAME"), ("by", "KEYWORD"),
    ("inf", "KEYWORD"), ("true", "KEYWORD"), ("f8_e4m3", "KEYWORD"), ("bin1", "KEYWORD"),
    ("__cok__", "KEYWORD"), ("__min", "KEYWORD"), ("__to", "KEYWORD"), ("__", "KEYWORD"),
    ("int", "KEYWORD"), ("cdiv", "KEYWORD"), ("byx", "NAME"),
])
def test_names_and_reserved_words(text, kind):
    assert body(text) == [(kind, text)]


# ------------------------------------------------------------------ integers (§2.2.1)

@pytest.mark.parametrize("text, value, dtype", [
    ("0", 0, "s32"), ("7", 7, "s32"), ("2147483647", 2**31 - 1, "s32"),
    ("2147483648", 2**31, "s64"), ("9223372036854775807", 2**63 - 1, "s64"),
    ("1l", 1, "s32"), ("1L", 1, "s32"), ("1ll", 1, "s64"), ("1LL", 1, "s64"), ("1lL", 1, "s64"),
    ("42u", 42, "u32"), ("42U", 42, "u32"), ("4294967295u", 2**32 - 1, "u32"),
    ("4294967296u", 2**32, "u64"), ("1ul", 1, "u32"), ("1ull", 1, "u64"), ("1ULL", 1, "u64"),
    ("18446744073709551615u", 2**64 - 1, "u64"),
    ("0x10", 16, "s32"), ("0XfF", 255, "s32"), ("0x7fffffff", 2**31 - 1, "s32"),
    ("0x80000000", 2**31, "s64"), ("0xffffffffu", 2**32 - 1, "u32"), ("0x1ll", 1, "s64"),
])
def test_integer_literal_types(text, value, dtype):
    tok = only(text)
    assert (tok.kind, tok.value, tok.dtype) == ("INT", value, dtype)


def test_integer_out_of_range_messages():
    assert errors("x = 9223372036854775808;") == [(
        "signed integer literal '9223372036854775808' out of range [0, 9223372036854775807].",
        2, 5, 24, None)]
    assert errors("18446744073709551616u") == [(
        "unsigned integer literal '18446744073709551616u' out of range "
        "[0, 18446744073709551615].", 2, 1, 22, None)]


@pytest.mark.parametrize("text, message, hint", [
    ("12abc", "invalid suffix 'abc' on integer literal '12abc'.", None),
    ("3f", "invalid suffix 'f' on integer literal '3f'.", "write 3.0f"),
    ("1lu", "invalid suffix 'lu' on integer literal '1lu'.", None),
    ("0x", "invalid hexadecimal literal '0x'.", None),
    ("0123", "integer literal '0123' has a leading zero (octal literals are not supported).",
     "write 123"),
])
def test_malformed_integers(text, message, hint):
    assert errors(text) == [(message, 2, 1, 1 + len(text), hint)]


def test_literals_are_never_negative():
    assert body("-5") == [("OP", "-"), ("INT", 5)]


# ------------------------------------------------------------------ floats (§2.2.2, §2.3)

@pytest.mark.parametrize("text, dtype", [
    ("1.5", "f64"), ("1.5f", "f32"), ("2.0F", "f32"), ("0.1", "f64"), ("0.1f", "f32"),
    ("00.25", "f64"), ("3.14159265358979f", "f32"),
])
def test_float_literals(text, dtype):
    tok = only(text)
    number = float(text.rstrip("fF"))
    expected = float(np.float32(number)) if dtype == "f32" else number
    assert (tok.kind, tok.value, tok.dtype) == ("FLOAT", expected, dtype)


def test_f32_literal_is_rounded_to_f32():
    assert only("0.1f").value == 0.100000001490116119384765625  # nearest f32 to 0.1


# The f32 overflow boundary is 2^128 - 2^103, halfway between the largest f32
# (2 - 2^-23) * 2^127 and 2^128: below it a literal rounds to the largest f32, at it
# (ties to even) to inf. 2^128 - 2^103 - 0.1 rounds up to the boundary in f64, so a
# literal rounded through f64 first is wrongly out of range.
F32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127
F32_OVERFLOW = 2 ** 128 - 2 ** 103


def test_f32_literal_just_below_the_overflow_boundary_is_the_largest_f32():
    tok = only(f"{F32_OVERFLOW - 1}.9f")
    assert (tok.value, tok.dtype) == (F32_MAX, "f32")


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[0-9]{1,40}\.[0-9]{1,40}", fullmatch=True))
def test_f32_literals_round_once_to_nearest_even(text):
    # the defining property, checked with exact arithmetic: no f32 is nearer to the
    # decimal value, and a tie goes to the even pattern; beyond the boundary it is an error
    exact = Fraction(text)
    if exact >= F32_OVERFLOW:
        assert errors(text + "f")
        return
    v = np.float32(only(text + "f").value)
    assert float(v) == only(text + "f").value           # an f32 value
    for n in (np.nextafter(v, np.float32(-1)), np.nextafter(v, np.float32(np.inf))):
        if np.isfinite(n) and n >= 0:
            d, dn = abs(Fraction(float(v)) - exact), abs(Fraction(float(n)) - exact)
            assert d < dn or (d == dn and not int(v.view(np.uint32)) & 1)


def test_f32_literal_at_the_overflow_boundary_is_out_of_range():
    text = f"{F32_OVERFLOW}.0f"
    assert errors(text) == [(f"floating-point literal '{text}' is out of range for f32.",
                             2, 1, 1 + len(text), None)]


def test_minus_is_always_an_operator():  # D1
    assert body("x-1.0f") == [("NAME", "x"), ("OP", "-"), ("FLOAT", float(np.float32(1.0)))]


@pytest.mark.parametrize("text, hint", [
    ("1e-3f", "write 0.001f"), ("1e3", "write 1000.0"), ("2.5e2", "write 250.0"),
    ("1.25E-1F", "write 0.125F"), ("6E+0", "write 6.0"), ("15e-1f", "write 1.5f"),
])
def test_exponents_are_refused_with_a_decimal_hint(text, hint):
    assert errors(text) == [("floating-point exponents are not supported", 2, 1,
                             1 + len(text), hint)]


@pytest.mark.parametrize("code, message, col, end_col, hint", [
    ("x = .5;", "floating-point literal '.5' needs a digit before the '.'.", 5, 7, "write 0.5"),
    ("x = .5f;", "floating-point literal '.5f' needs a digit before the '.'.", 5, 8,
     "write 0.5f"),
    ("x = 5.;", "floating-point literal '5.' needs a digit after the '.'.", 5, 7, "write 5.0"),
    ("x = 1.5q;", "invalid suffix 'q' on floating-point literal '1.5q'.", 5, 9, None),
])
def test_malformed_floats(code, message, col, end_col, hint):
    assert errors(code) == [(message, 2, col, end_col, hint)]


def test_inf_is_a_keyword_for_the_parser():
    assert body("-inf") == [("OP", "-"), ("KEYWORD", "inf")]


# ------------------------------------------------------------------ strings (§2.2.3)

def test_string_escapes():
    assert body(r'"a\nb\tc\"d\\e\qf"') == [("STRING", 'a\nb\tc"d\\e\\qf')]


def test_adjacent_strings_are_one_token_spanning_both():
    (fn,), _ = lex('__co__\nprint("ab" "cd",\n   "ef");')
    s = [t for t in fn if t.kind == "STRING"]
    assert [t.value for t in s] == ["abcd", "ef"]
    assert s[0].span == Span("t.co", 2, 7, 2, 16)


def test_adjacent_strings_across_lines():
    (fn,), _ = lex('__co__\n"ab"\n  "cd"')
    assert fn[1].value == "abcd" and fn[1].span == Span("t.co", 2, 1, 3, 7)


def test_unterminated_string():
    assert errors('print("abc);\nx') == [
        ("missing terminating '\"' character.", 2, 7, 13, None)]


def test_character_literal_is_an_error():
    assert errors("x = 'a';") == [("character literals are not supported.", 2, 5, 8, None)]


# ------------------------------------------------------------------ operators (§2.4)

@pytest.mark.parametrize("code, ops", [
    ("=> :: ++ -- == != <= >= && || << >>", "=> :: ++ -- == != <= >= && || << >>"),
    ("#+ #- #* #/ #%", "#+ #- #* #/ #%"),
    ("+ - * / % = < > ! ~ & | ^ ? : ; , . # ( ) [ ] { }",
     "+ - * / % = < > ! ~ & | ^ ? : ; , . # ( ) [ ] { }"),
    ("+=", "+ ="), ("<<=", "<< ="), (":::", ":: :"), ("->", "- >"), ("===", "== ="),
    ("a#-1", "#-"), ("a # b", "#"), ("x+++y", "++ +"), ("&&&", "&& &"),
])
def test_operators_longest_match(code, ops):
    assert [v for k, v in body(code) if k == "OP"] == ops.split()


def test_fused_bound_operator():
    assert body("a#-1") == [("NAME", "a"), ("OP", "#-"), ("INT", 1)]


# ------------------------------------------------------------------ member tokens (§2.4.2)

@pytest.mark.parametrize("code, expected", [
    ("a.at(i)", [("NAME", "a"), ("MEMBER", ".at"), ("OP", "("), ("NAME", "i"), ("OP", ")")]),
    ("a .at", [("NAME", "a"), ("MEMBER", ".at")]),
    ("a. at", [("NAME", "a"), ("OP", "."), ("NAME", "at")]),
    ("a.atx", [("NAME", "a"), ("OP", "."), ("NAME", "atx")]),
    ("a.at1", [("NAME", "a"), ("OP", "."), ("NAME", "at1")]),
    ("f.data.span", [("NAME", "f"), ("MEMBER", ".data"), ("MEMBER", ".span")]),
    ("v.chunkat", [("NAME", "v"), ("MEMBER", ".chunkat")]),
    ("v.subspan(2).step(1)", [("NAME", "v"), ("MEMBER", ".subspan"), ("OP", "("), ("INT", 2),
                              ("OP", ")"), ("MEMBER", ".step"), ("OP", "("), ("INT", 1),
                              ("OP", ")")]),
    ("dma.copy.async", [("KEYWORD", "dma"), ("MEMBER", ".copy"), ("MEMBER", ".async")]),
    ("dma.copy.swiz<128>", [("KEYWORD", "dma"), ("MEMBER", ".copy"), ("MEMBER", ".swiz"),
                            ("OP", "<"), ("INT", 128), ("OP", ">")]),
    ("mma.row.col", [("KEYWORD", "mma"), ("MEMBER", ".row"), ("MEMBER", ".col")]),
    ("mma.store.transp", [("KEYWORD", "mma"), ("MEMBER", ".store"), ("MEMBER", ".transp")]),
    ("mma.commit", [("KEYWORD", "mma"), ("MEMBER", ".commit")]),
    # '.fill' is a member word followed by '.', a non-identifier character; the dot before
    # the element type is plain (§2.4.2, as in the reference scanner).
    ("mma.fill.f16", [("KEYWORD", "mma"), ("MEMBER", ".fill"), ("OP", "."), ("KEYWORD", "f16")]),
    ("sync.shared", [("KEYWORD", "sync"), ("OP", "."), ("KEYWORD", "shared")]),
    ("sync.barrier", [("KEYWORD", "sync"), ("OP", "."), ("KEYWORD", "barrier")]),
    ("sync.fence", [("KEYWORD", "sync"), ("OP", "."), ("KEYWORD", "fence")]),
])
def test_member_tokens(code, expected):
    assert body(code) == expected


def test_mma_fill_with_value():
    toks = body("mc = mma.fill.f32 0.0f;")
    assert toks == [("NAME", "mc"), ("OP", "="), ("KEYWORD", "mma"), ("MEMBER", ".fill"),
                    ("OP", "."), ("KEYWORD", "f32"), ("FLOAT", 0.0), ("OP", ";")]


@pytest.mark.parametrize("code, expected", [
    ("group-4", [("GROUP4", "group-4")]),
    ("group - 4", [("KEYWORD", "group"), ("OP", "-"), ("INT", 4)]),
    ("group-42", [("KEYWORD", "group"), ("OP", "-"), ("INT", 42)]),
    (": group-4;", [("OP", ":"), ("GROUP4", "group-4"), ("OP", ";")]),
])
def test_group4(code, expected):
    assert body(code) == expected


# ------------------------------------------------------------------ errors and locations

def test_stray_character_is_reported_and_lexing_continues():
    (fn,), diags = lex("__co__\nx @ y $")
    assert [(d.message, d.span.line, d.span.col) for d in diags] == [
        ("stray '@' in program", 2, 3), ("stray '$' in program", 2, 7)]
    assert [t.value for t in fn[1:-1]] == ["x", "y"]


def test_non_ascii_is_stray():
    assert errors("é") == [("stray 'é' in program", 2, 1, 2, None)]


def test_a_byte_that_is_not_utf8_is_named_so():
    # a Latin-1 'é' (byte 0xE9) read as UTF-8 is replaced by U+FFFD
    text = b"x\xe9".decode("utf-8", errors="replace")
    assert errors(text) == [("stray byte that is not UTF-8 in program (croqvm reads "
                             "sources as UTF-8)", 2, 2, 3, None)]


def test_a_string_with_bytes_that_are_not_utf8_warns():
    _, diags = lex("__co__\n" + b'"a\xe9b"'.decode("utf-8", errors="replace"))
    assert [(d.severity, d.message, d.span.col, d.span.end_col) for d in diags] == [
        ("warning", "string literal with bytes that are not UTF-8: each prints as U+FFFD "
                    "(croqvm reads sources as UTF-8).", 1, 6)]


def test_tab_is_one_column():
    (fn,), _ = lex("__co__\n\t\tx\t=1;")
    assert [(t.value, t.span.col) for t in fn[1:-1]] == [("x", 3), ("=", 5), (1, 6), (";", 7)]


def test_crlf_line_endings():
    (fn,), _ = lex("__co__ void f() {\r\n  x = 1;\r\n}\r\n")
    x = fn[6]
    assert (x.value, x.span) == ("x", Span("t.co", 2, 3, 2, 4))
    assert fn[-2].span == Span("t.co", 3, 1, 3, 2)


def test_token_spans():
    (fn,), _ = lex("__co__ void f() {\n  out.at(3, 4) = 1.5f;\n}")
    assert [(t.value, t.span.col, t.span.end_col) for t in fn[6:12]] == [
        ("out", 3, 6), (".at", 6, 9), ("(", 9, 10), (3, 10, 11), (",", 11, 12), (4, 13, 14)]


def test_eof_token_sits_after_the_closing_brace():
    (fn,), _ = lex("__co__ void f() {\n}\nint x;")
    assert (fn[0].value, fn[-1].kind, fn[-1].span) == ("__co__", "EOF", Span.point("t.co", 2, 2))


def test_unterminated_function_keeps_its_tokens():
    (fn,), diags = lex("__co__ void f() {\n  x = 1;\n")
    assert [t.value for t in fn] == ["__co__", "void", "f", "(", ")", "{", "x", "=", 1, ";",
                                     None]
    assert fn[-1].span == Span.point("t.co", 3, 1)
    assert not [d for d in diags if d.is_error]  # the parser reports the missing '}'


def test_open_function_ends_where_the_next_begins():
    fns, _ = lex("__co__ void f() {\n x\n__co__ void g() { y }")
    assert [[t.value for t in fn] for fn in fns] == [
        ["__co__", "void", "f", "(", ")", "{", "x", None],
        ["__co__", "void", "g", "(", ")", "{", "y", "}", None]]


PIECES = list("__co__{}()\"'/*\\#\n\t .0123456789eEfuLx+-@abdefinlu\ré") + [
    "#if ", "#define A(x) ", "#endif", "group-4", "A(", "//", "/*", "*/", 'R"(', ")\""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80).map("".join))
def test_random_text_never_raises(text):
    lex_soundly(text)
    lex_soundly("__co__ void f() {" + text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise(data):
    lex_soundly(data.decode("latin-1"))
    lex_soundly("__co__ " + data.decode("utf-8", "replace"))


def lex_soundly(text):
    """Lex ``text``; every token and diagnostic has a position inside the file, in order."""
    functions, diags = lex(text)
    last_line = text.count("\n") + 1
    for span in [d.span for d in diags] + [t.span for fn in functions for t in fn]:
        assert 1 <= span.line <= span.end_line <= last_line + 1 and span.col >= 1, span
        assert (span.end_line, span.end_col) >= (span.line, span.col), span


def test_nan_and_inf_never_come_from_literals():
    assert all(math.isfinite(only(t).value) for t in ("1.0", "99999999.99f"))
