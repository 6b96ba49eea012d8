"""LANGUAGE.md §1-§5 and §15.1-§15.2, rule by rule, where no other test pins the rule:
program shape and preprocessor (§1), lexical rules (§2), types, storage, declarations and
scopes (§3), expressions and builtins (§4), bounded variables (§5), and the diagnostic
format (§15.1). Every expected message, position and printed line is worked out by hand
from the specification text.

A case without ``__co__`` is the body of ``__co__ void f() {``, so its first line is
line 2 and columns count from the case's own first character.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import croqvm
from croqvm.lang.frontend import front_end

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

F = "__co__ void f() {\n"


def program(text: str) -> str:
    return text if "__co__" in text else F + text + "\n}"


def diagnose(text: str, severity: str = "error") -> list[str]:
    """``LINE:COL: message`` of every diagnostic of ``severity``, in the order reported."""
    _, diags, _ = front_end(program(text), "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == severity]


def output(text: str, func: str = "f", *args) -> str:
    out = io.StringIO()
    engines.run(croqvm.compile(program(text), "t.co"), func, *args, out=out)
    return out.getvalue()


def fault(text: str, func: str = "f", *args) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        output(text, func, *args)
    return str(info.value)


# =========================================================================== §1 program shape

def test_device_functions_and_cok_blocks_are_one_stretch_of_host_text():  # §1.1.2
    """A ``__co_device__`` function written in Croqtile is compiled (§6.10), one with a
    C++ header is host text."""
    text = ("__co_device__ int helper(int x) { return x; }\n"
            "__co_device__ extern \"C\" int plus(int *x) { return *x; }\n"
            "__device__ int twice(int x) { return 2 * x; }\n"
            "__cok__ {\n"
            "  int y = 3;\n"
            "}\n"
            "__co__ void f() { println(1); }\n")
    assert diagnose(text, "note") == ["2:1: host C++ code is not compiled by croqvm (lines 2-6)"]
    assert output(text) == "1\n"


def test_an_unknown_directive_is_host_text_not_a_directive():  # §1.2.1
    text = "#error not for croqvm\n" + F + "  println(2);\n}\n"
    assert diagnose(text, "note") == ["1:1: host C++ code is not compiled by croqvm (line 1)"]
    assert output(text) == "2\n"


def test_a_hash_at_the_start_of_a_line_without_a_directive_word_is_an_operator():  # §1.2.1
    assert output("parallel p by 4 {\n  x =\n#p;\n  if (p == 0) println(x);\n}") == "4\n"


def test_a_directive_may_follow_a_comment_and_none_hides_in_a_comment():  # §1.2.1
    text = "/*\n#define X 1\n*/\n/* size */ #define N 3\n" + F + "  println(N);\n}\n"
    assert output(text) == "3\n"
    assert diagnose("/*\n#define X 1\n*/\n" + F + "  println(X);\n}\n") == [
        "5:11: symbol 'X' is used before declaration."]


@pytest.mark.parametrize("text, expected", [
    ("#define BAD (1 + true)\n" + F + "  x = BAD;\n}",
     ['3:7: in operation "+": unable to apply to the types (s32 vs. bool).']),
    ("#define ADD(a, b) ((a) + (b))\n" + F + "  y = ADD(1, true);\n}",
     ['3:7: in operation "+": unable to apply to the types (s32 vs. bool).']),
])
def test_checker_errors_inside_an_expansion_point_at_the_macro_use(text, expected):  # §1.2.4
    assert diagnose(text) == expected


def test_defines_given_to_compile_precede_line_one():  # §1.2.4
    out = io.StringIO()
    prog = croqvm.compile(F + "  println(N, M);\n}", "t.co", {"N": None, "M": "7"})
    engines.run(prog, "f", out=out)
    assert out.getvalue() == "1 7\n"


# =========================================================================== §2 lexical rules

RESERVED = """
auto mdspan ituple stream event frag print println local shared global term device cluster
block group thread mutable int bool half bfp16 float double void true false inf nullptr dma
tma swap rotate mma assert sync barrier fence cooperative trigger if else inthreads parallel
by with in foreach apply reduce_max reduce_sum all_reduce_sum copy wait call select return
where while break vectorize unroll continue yield asm volatile goto cdiv after
s8 s16 s32 s64 u8 u16 u32 u64 f16 bf16 f32 f64 tf32 f8_e4m3 f8_e5m2 f8
f8_ue4m3 f8_ue8m0 f6_e2m3 f6_e3m2 f4_e2m1 s2 u2 s4 u4 s6 u6 u1 bin1
__min __cok__ __x __
""".split()


@pytest.mark.parametrize("word", RESERVED)
def test_a_reserved_word_can_not_be_declared(word):  # §2.1.3
    assert diagnose(f"int {word} = 1;") == [
        f"2:5: syntax error: '{word}' is a reserved word and can not be used as a name."]


def test_ready_is_an_ordinary_name():  # §2.1.3
    assert output("int ready = 5;\nprintln(ready);") == "5\n"


@pytest.mark.parametrize("expr, printed", [
    ("2147483647 + 1", "-2147483648"),            # int: s32 wraps (§12.3.1)
    ("2147483648 + 1", "2147483649"),             # too large for s32: s64
    ("4294967295u + 1u", "0"),                    # u32 wraps
    ("4294967296u - 1u", "4294967295"),           # too large for u32: u64
    ("1ll << 40", "1099511627776"),               # ll: s64
    ("0x7fffffff + 1", "-2147483648"),
    ("0x80000000", "2147483648"),
    ("inf", "inf"), ("-inf", "-inf"),
    ("1.0f / 3.0f", "0.333333"),
])
def test_literal_types_at_run_time(expr, printed):  # §2.2.1, §2.2.2
    assert output(f"println({expr});") == printed + "\n"


def test_strings_escape_and_concatenate_when_printed():  # §2.2.3
    assert output(r'println("a\tb" "c\qd\"e\\");') == 'a\tbc\\qd"e\\\n'


@pytest.mark.parametrize("code, line, col", [
    ('x = "abc";', 2, 1),
    ('println("a" + 1);', 2, 9),
])
def test_a_string_is_only_a_print_or_assert_argument(code, line, col):  # §2.2.3
    errors = diagnose(code)
    assert len(errors) == 1 and errors[0].startswith(f"{line}:{col}: ") and "string" in errors[0]


def test_compound_assignment_is_two_tokens_and_blanks_may_separate_them():  # §2.4.1, §6.6
    code = ("mutable x = 1;\nx + = 2;\nx - = 1;\nx * = 7;\nx / = 4;\nx %= 2;\nx%  =2;\n"
            "println(x);")
    assert output(code) == "1\n"    # 1 -> 3 -> 2 -> 14 -> 3 -> 1 -> 1


@pytest.mark.parametrize("op", ["<<=", ">>=", "&=", "|=", "^="])
def test_only_arithmetic_operators_make_compound_assignments(op):  # §2.4.1
    errors = diagnose(f"mutable x = 1;\nx {op} 1;")
    assert len(errors) == 1 and errors[0].startswith("3:3: syntax error: ")


# =========================================================================== §3 types

@pytest.mark.parametrize("decl, printed", [
    ("half h = 0.1f;", "0.0999756"),           # f16
    ("bfp16 h = 1.01f;", "1.00781"),           # bf16: 8 significant bits
    ("float h = 0.1f;", "0.1"),                # f32
    ("double h = 0.1;", "0.1"),                # f64
    ("f8 h = 0.3f;", "0.3125"),                # f8_e4m3: 0.25 * (1 + 2/8) is nearest
])
def test_type_aliases(decl, printed):  # §3.1
    assert output(f"{decl}\nprintln(h);") == printed + "\n"


def test_sub_byte_integers_wrap_to_their_width():  # §3.1, §12.3.3
    """u6 70 -> 6, s6 32 -> -32, s4 -9 -> 7, u2 7 -> 3, u1 3 -> 1, u6 100 -> 36; a float
    truncates into range; bin1 is bool."""
    assert output("""
        u6 [2] a;
        s6 [2] b;
        s4 [2] c;
        u2 [1] d;
        u1 [1] e;
        bin1 [1] g;
        a.at(0) = 60;
        a.at(1) = a.at(0) + 10;
        b.at(0) = 31;
        b.at(1) = b.at(0) + 1;
        c.at(0) = -9;
        c.at(1) = __to<s4>(-7.9f);
        d.at(0) = 7;
        e.at(0) = 3;
        g.at(0) = __to<bin1>(2);
        u6 h = 100;
        println(a.at(1), b.at(1), c.at(0), c.at(1), d.at(0), e.at(0), g.at(0), h);
    """) == "6 -32 7 -7 3 1 true 36\n"
    assert "runtime error: value 20 out of range for 'u4'." in fault("println(__to<u4>(20.0f));")


def test_a_sub_byte_parameter_is_wrapped_on_entry_and_returned_in_its_byte():  # §14.3.1
    prog = croqvm.compile("__co__ s6 [3] f(s6 [3] x) {\n  s6 [3] y;\n  foreach i in [3]\n"
                          "    y.at(i) = x.at(i) * 2;\n  return y;\n}", "t.co")
    got = engines.run(prog, "f", np.array([40, 17, -3], np.int8))   # 40 -> -24
    assert got.dtype == np.int8 and got.tolist() == [16, -30, -6]
    if engines.options() == {"engine": "python"}:        # the generated CUDA wraps alike
        cuda = prog.run("f", np.array([40, 17, -3], np.int8), device="cuda-cpu")
        assert cuda.tolist() == [16, -30, -6]


def test_a_view_can_be_named_but_not_re_assigned():  # §3.1, §8.3.5
    assert diagnose("s32 [8] a;\nparallel p by 2 { v = a.chunkat(p); }") == []
    assert diagnose("s32 [8] a;\nparallel p by 2 {\n  v = a.chunkat(p);\n  "
                    "v = a.chunkat(p);\n}") == ["5:3: only mutables can be re-assigned (v)."]


# --------------------------------------------------------------------------- storage §3.2

def test_local_buffers_at_host_level_are_rejected_like_shared_ones():  # §3.2.2
    assert diagnose("local s32 [4] l;") == [
        "2:15: local variable 'l' must be declared inside parallel-by."]


def test_global_written_at_host_level_is_allowed():  # §3.2.2
    assert output("global s32 [4] g;\ng.at(1) = 2;\nprintln(g.at(1));") == "2\n"


def test_unqualified_buffer_inside_parallel_is_global_with_a_warning():  # §3.2.3
    _, diags, _ = front_end(program("parallel p by 4 {\n  s32 [4] w;\n}"), "t.co")
    assert [(d.severity, d.message, d.hint) for d in diags] == [
        ("warning", "'w' declared inside parallel-by without 'shared' or 'local' is global: "
         "one buffer for the whole call, shared by every instance.",
         "declare it 'global' to say so, or 'shared' (one per block) or 'local' (one per "
         "thread)")]


@pytest.mark.parametrize("param, col", [
    ("shared int n", 25), ("global f32 x", 25), ("local bool b", 25), ("global stream s", 28)])
def test_scalar_parameters_take_no_storage_qualifier(param, col):  # §3.2.3, §6.1 param
    errors = diagnose(f"__co__ void f({param}) {{ }}")
    assert len(errors) == 1 and errors[0].startswith(f"1:{col}: syntax error: ")


def test_a_buffer_declaration_in_a_loop_is_reused_and_its_initializer_refills():  # §3.2.4 D12
    code = ("foreach i in [3] {\n  s32 [2] a;\n  s32 [2] b {5};\n  a.at(0) += 1;\n"
            "  b.at(0) += 1;\n  println(a.at(0), b.at(0));\n}")
    assert output(code) == "1 6\n2 6\n3 6\n"


def test_local_buffers_are_per_lane_and_shared_buffers_per_block():  # §3.2.1, D12
    code = ("parallel p by 2 : block, t by 2 : thread {\n  local s32 [1] l;\n"
            "  foreach k in [2] { l.at(0) += t + 1; }\n  println(p, t, l.at(0));\n}\n"
            "parallel p by 2 : block {\n  shared s32 [1] s;\n"
            "  foreach k in [3] { s.at(0) += p + 1; }\n  println(p, s.at(0));\n}")
    assert output(code) == "0 0 2\n0 1 4\n1 0 2\n1 1 4\n0 3\n1 6\n"


# --------------------------------------------------------------------------- shapes §3.3

def test_shape_items_and_spliced_mdspans():  # §3.3.1
    code = ("#define W 3\n__co__ void f(s32 [M, K] lhs, int n) {\n"
            "  s32 [lhs.span] o1;\n  s32 [2, lhs.span, W] o2;\n"
            "  mdspan sp : [n, cdiv(K, 2)];\n  s32 [sp] o3;\n"
            "  s32 [lhs.span(1) * 2 - 1, n + M] o4;\n"
            "  println(o1.span, o2.span, o3.span, o4.span, |o2.span|);\n"
            "  parallel p by 2 : block, q by 3 : thread {\n    local s32 [#q, #p] l;\n"
            "    if (p == 1 && q == 2) println(l.span);\n  }\n}")
    assert output(code, "f", np.zeros((4, 5), np.int32), 2) == \
        "[4, 5] [2, 4, 5, 3] [2, 3] [9, 6] 120\n[3, 2]\n"


@pytest.mark.parametrize("n", [0, -2])
def test_an_extent_below_one_known_only_at_run_time_is_a_runtime_error(n):  # §3.3.1
    report = fault("__co__ void f(int n) {\n  s32 [n] b;\n}", "f", n)
    assert report.startswith(f't.co:2:3: runtime error: The mdspan size "{n}" is invalid!')


def test_symbolic_extents_in_every_storage_class():  # §3.3.1
    code = ("__co__ void f(s32 [N] a) {\n  s32 [N, 2] g;\n"
            "  parallel p by 1 : block, t by 2 : thread {\n    local s32 [N, 2] l;\n"
            "    shared f32 [N] s;\n    l.at(N - 1, 1) = 7;\n"
            "    println(g.span, l.span, l.at(N - 1, 1), s.span(0));\n  }\n}")
    assert output(code, "f", np.zeros(3, np.int32)) == "[3, 2] [3, 2] 7 3\n" * 2


@pytest.mark.parametrize("decl, printed", [
    ("f16 [2] b {0.1f};", "0.0999756"),   # rounded to f16
    ("s8 [2] b {300};", "44"),            # 300 wraps to 44 (§12.3.3)
    ("f32 [2] b {1};", "1"),
])
def test_a_fill_value_is_converted_to_the_element_type(decl, printed):  # §3.3.2
    assert output(f"{decl}\nprintln(b.at(1));") == printed + "\n"


@pytest.mark.parametrize("code, col", [("N = 3;", 3), ("N++;", 3), ("N += 1;", 3)])
def test_a_symbolic_dimension_is_an_immutable_int(code, col):  # §3.3.3
    assert diagnose(f"__co__ void f(s32 [N] a) {{\n  {code}\n}}") == [
        f"2:{col}: only mutables can be re-assigned (N)."]


# --------------------------------------------------------------------------- scalars §3.4

def test_several_declarators_in_one_declaration():  # §3.4
    assert output("mutable int p = 2, q = 3;\np = q;\nprintln(p, q);") == "3 3\n"
    assert output("int a = 1, b = a + 1;\nprintln(a, b);") == "1 2\n"


def test_each_declarator_needs_an_initializer():  # §3.4.1
    assert diagnose("int a = 1, b;") == ["2:12: declaration of 'b' requires an initializer."]


@pytest.mark.parametrize("code, printed", [
    ("s32 x = 0;\nx = 5;\nprintln(x);", "5"),                     # explicit element type
    ("mutable bool b = true;\nb = false;\nprintln(b);", "false"),
    ("__co__ void f(f32 v) {\n  v = 3.5f;\n  println(v);\n}", "3.5"),  # element-type parameter
])
def test_mutable_scalars(code, printed):  # §3.4.2
    args = (1.0,) if code.startswith("__co__") else ()
    assert output(code, "f", *args) == printed + "\n"


@pytest.mark.parametrize("code, expected", [
    ("bool b = true;\nb = false;", ["3:1: only mutables can be re-assigned (b)."]),
    ("__co__ void f(int n) {\n  n = 3;\n}", ["2:3: only mutables can be re-assigned (n)."]),
    ("mdspan sp : [2, 3];\nsp = [3, 2];", ["3:1: only mutables can be re-assigned (sp)."]),
    ("mutable mdspan sp : [2, 3];",
     ["2:16: 'sp' with a type of \"mdspan<2> [2, 3]\" can not be declared as 'mutable'."]),
    # ++ and -- assign like += (§3.4.2): bounded values, ituples, mdspans never change
    ("parallel p by 2 { p++; }", ["2:19: only mutables can be re-assigned (p)."]),
    ("foreach i in [2] { --i; }", ["2:20: only mutables can be re-assigned (i)."]),
    ("ituple t = {1, 2};\nt++;", ["3:1: only mutables can be re-assigned (t)."]),
    ("mdspan sp : [2];\nsp--;", ["3:1: only mutables can be re-assigned (sp)."]),
])
def test_immutable_values(code, expected):  # §3.4.2
    assert diagnose(code) == expected


@pytest.mark.parametrize("code, expected", [
    ("if (true) x = 1; else x = 2;\nprintln(x);", ["3:9: symbol 'x' is used before declaration."]),
    ("while (false) int w = 1;\nprintln(w);", ["3:9: symbol 'w' is used before declaration."]),
    ("foreach i in [2] { }\nprintln(i);", ["3:9: symbol 'i' is used before declaration."]),
    ("with t in 4 { }\nprintln(t);", ["3:9: symbol 't' is used before declaration."]),
    ("parallel p by 2 { }\nprintln(p);", ["3:9: symbol 'p' is used before declaration."]),
    ("parallel p by 4 {\n  inthreads (p == 0) { int z = 1; }\n  println(z);\n}",
     ["4:11: symbol 'z' is used before declaration."]),
    ("if (true) int a = 1; else int a = 2;\nint a = 3;", []),        # each body is a scope
    ("{\n  int z = 1;\n}\n{\n  int z = 2;\n}", []),
    ("int a = 1;\n{\n  int a = 2;\n}", []),                     # shadows the outer 'a'
    ("int a = 1;\nint a = 2;", ["3:5: symbol 'a' has been declared already."]),
    ("__co__ void f(int n) {\n  int n = 1;\n}", ["2:7: symbol 'n' has been declared already."]),
    ("parallel p by 2 {\n  foreach p in [2] { }\n}", []),
    ("parallel p by 2 {\n  int p = 1;\n}", ["3:7: symbol 'p' has been declared already."]),
    ("int a = a + 1;", ["2:9: symbol 'a' is used before declaration."]),
])
def test_scopes(code, expected):  # §3.4.4
    assert diagnose(code) == expected


@pytest.mark.parametrize("code, expected", [
    ("s32 [4] a;\ns32 [4] b;\nf = dma.copy a => b;\nparallel p by 1 {\n"
     "  f = dma.copy a => b;\n}",
     ["6:3: 'f' is declared outside the parallel-by and can not be modified inside it."]),
    ("s32 [4] a;\ns32 [4] b;\nf = dma.copy.async a => b;\ng = dma.copy.async a => b;\n"
     "parallel p by 1 {\n  swap(f, g);\n}\nwait f;",
     ["7:8: 'f' is declared outside the parallel-by and can not be modified inside it."]),
])
def test_outer_futures_are_read_only_inside_parallel(code, expected):  # D14
    assert diagnose(code) == expected


@pytest.mark.parametrize("code, expected", [
    ("mutable int n = 0;\nparallel p by 4 { n++; }",
     ["3:19: 'n' is declared outside the parallel-by: each instance changes a copy of its "
      "own."]),
    ("parallel p by 2 { mutable int n = 0; parallel q by 2 { n = 1; } }",
     ["2:56: 'n' is declared outside the parallel-by: each instance changes a copy of its "
      "own."]),
])
def test_outer_scalars_change_per_instance_with_a_warning(code, expected):  # D14
    assert diagnose(code, "warning") == expected


@pytest.mark.parametrize("code, expected", [
    ("__co__ void f(s64 l) {\n  s32 c = l;\n}",
     ["2:11: implicit conversion from 's64' to 's32' may lose precision."]),
    ("__co__ void f(u32 u) {\n  s32 c = u;\n}",
     ["2:11: implicit conversion from 'u32' to 's32' may lose precision."]),
    ("__co__ void f(int i) {\n  u32 c = i;\n}",
     ["2:11: implicit conversion from 's32' to 'u32' may lose precision."]),
    ("__co__ void f(f16 h) {\n  bf16 c = h;\n}",
     ["2:12: implicit conversion from 'f16' to 'bf16' may lose precision."]),
    ("__co__ void f(f64 d) {\n  mutable s32 m = 0;\n  m = d;\n}",
     ["3:7: implicit conversion from 'f64' to 's32' may lose precision."]),
    ("__co__ void f(f32 g) {\n  mutable s32 m = 0;\n  m += g;\n}",
     ["3:8: implicit conversion from 'f32' to 's32' may lose precision."]),
    ("__co__ void f(s8 c, f16 h) {\n  s16 a = c;\n  f32 b = h;\n}", []),  # widening
])
def test_lossy_implicit_conversions_warn(code, expected):  # §3.4.6
    assert diagnose(code, "warning") == expected


# =========================================================================== §4 expressions

# a = 7, b = 3, x = 3, worked out with the §4.1 table (bitwise above arithmetic)
PRECEDENCE = [
    ("(a + b) & 1", "0"),
    ("a + b & 1", "8"),             # a + (b & 1)
    ("a & 7 == 5", "false"),        # (a & 7) == 5
    ("-x & 1", "-1"),               # -(x & 1), level 11 below level 12
    ("-3 & 1", "1"),                # (-3) & 1: a negative literal (§4.3)
    ("- 3 & 1", "-1"),              # a blank: negation of 3 & 1
    ("2 * -3 & 1", "2"),            # 2 * ((-3) & 1)
    ("a << 1 | 1", "14"),           # a << (1 | 1)
    ("~a & b", "0"),                # (~7) & 3
    ("x - 1 ^ 2", "0"),             # x - (1 ^ 2)
    ("a * b % 3", "0"), ("a - b - 1", "3"), ("a / b / 2", "1"),
    ("-a * b", "-21"), ("-(a + b)", "-10"),
    ("a < b == b > a", "true"),     # (a < b) == (b > a)
    ("a & -x", "5"),                # a prefix operator may follow '&': 7 & (-3)
    ("a & -x & 6", "6"),            # 7 & -(3 & 6): '-' takes the rest of the '&' chain
    ("a | ~x", "-1"),
    ("~-x", "2"),                   # ~(-3)
    ("~-x & 6", "1"),               # ~(-(3 & 6)) = ~(-2)
]


@pytest.mark.parametrize("expr, printed", PRECEDENCE)
def test_precedence_at_run_time(expr, printed):  # §4.1, §4.3
    code = f"__co__ void f(int a, int b, int x) {{\n  println({expr});\n}}"
    assert output(code, "f", 7, 3, 3) == printed + "\n"


@pytest.mark.parametrize("text, printed", [
    ("#define M - 3\n" + F + "  println(M & 1);\n}", "-1"),     # '- 3': negation of 3 & 1
    ("#define P -4\n" + F + "  println(P & 1);\n}", "0"),       # '-4': (-4) & 1
    ("#define N 3\n" + F + "  println(-N & 1, - N & 1);\n}", "1 -1"),
    ("#define K(x) -x\n" + F + "  println(K(3) & 1, K( 3) & 1);\n}", "1 1"),
])
def test_negative_literals_through_macros(text, printed):  # §4.3, §1.2.4
    assert output(text) == printed + "\n"


# --------------------------------------------------------------------------- operands §4.2

@pytest.mark.parametrize("code, expected", [
    ("println(true < false);",
     ['2:9: in operation "<": unable to apply to the types (bool vs. bool).']),
    ("println(1 == true);",
     ['2:9: in operation "==": unable to apply to the types (s32 vs. bool).']),
    ("println(1 & 2.0);",
     ['2:9: in operation "&": unable to apply to the types (s32 vs. f64).']),
    ("println(1.5f >> 1);",
     ['2:9: in operation ">>": unable to apply to the types (f32 vs. s32).']),
    ("println(1.5f - true);",
     ['2:9: in operation "-": unable to apply to the types (f32 vs. bool).']),
    ("ituple t = {1, 2};\nprintln(t + 1);",
     ['3:9: in operation "+": unable to apply to the types (ituple<2> vs. s32).']),
    ("println(!1);", ["2:10: requires a predication expression but got 's32'."]),
    ('assert(1, "m");', ["2:8: requires a predication expression but got 's32'."]),
    ("println(1 ? 2 : 3);", ["2:9: requires a predication expression but got 's32'."]),
    ("println(true || 1);", ["2:17: requires a predication expression but got 's32'."]),
])
def test_operand_types(code, expected):  # §4.2.1-§4.2.5
    assert diagnose(code) == expected


@pytest.mark.parametrize("code", ["println(~1.0f);", "println(-true);"])
def test_unary_operand_types(code):  # §4.2.1, §4.2.2
    errors = diagnose(code)
    assert len(errors) == 1 and errors[0].startswith("2:9: ")


def test_equality_of_two_bools():  # §4.2.3
    assert output("println(true == false, true != true, false == false);") == \
        "false false true\n"


def test_conditional_branches_take_their_common_type():  # §4.2.5
    assert output("__co__ void f(bool c) {\n  println(c ? 1 : 2.5f);\n}", "f", True) == "1\n"
    assert output("__co__ void f(bool c) {\n  println(c ? 1 : 2.5f);\n}", "f", False) == \
        "2.5\n"


def test_and_or_short_circuit_per_lane():  # §4.2.4
    code = ("parallel p by 4 {\n  if (p != 0 && 12 / p > 5) println(\"and\", p);\n"
            "  if (p == 0 || 12 / p < 5) println(\"or\", p);\n}")
    assert output(code) == "and 1\nand 2\nor 0\nor 3\n"   # p = 0 never divides


def test_a_conditional_evaluates_one_branch_per_lane():  # §4.2.5
    assert output("parallel p by 2 { println(p == 0 ? 1 : 10 / p); }") == "1\n10\n"


def test_increments_act_immediately_left_to_right():  # §4.2.6
    code = ("mutable int x = 1;\ny = x++ * 10 + x;\nz = x++ + ++x;\n"
            "println(y, z, x, x--, --x, x);")
    assert output(code) == "12 6 4 4 2 2\n"   # 1*10 + 2; 2 + 4; x is 4


def test_increments_are_per_lane():  # §4.2.6
    code = "parallel p by 2 {\n  mutable s32 k = p;\n  w = k++ + k * 10;\n  println(w, k);\n}"
    assert output(code) == "10 1\n21 2\n"


def test_increment_of_a_float_scalar():  # §4.2.6
    assert output("f32 x = 1.5f;\nx++;\n++x;\nprintln(x);") == "3.5\n"


# --------------------------------------------------------------------------- builtins §4.4

def test_span_extent_count_and_constant_name_index():  # §4.4
    code = ("__co__ void f(s32 [M, N] a) {\n  int k = 1;\n"
            "  println(a.span(k), a.span(0), |a.span|, a.span);\n}")
    assert output(code, "f", np.zeros((3, 5), np.int32)) == "5 3 15 [3, 5]\n"


def test_ituple_element_with_a_constant_name_index():  # §4.4
    assert output("ituple t = {4, 5};\nint k = 1;\nprintln(t(k), t(0));") == "5 4\n"


def test_the_last_values_of_a_bounded_variable():  # §4.4
    code = "parallel p by 4 {\n  r = p(-1);\n  if (p == 0) println(r, #r, p(-2));\n}"
    assert output(code) == "3 4 2\n"     # #p - 1, bounded by #p; #p - 2


@pytest.mark.parametrize("expr, printed", [
    ("cdiv(n, d)", "4"),                # (7 + 2 - 1) / 2
    ("cdiv(-n, d)", "-3"),              # (-7 + 2 - 1) / 2, truncated
    ("cdiv(n + 1, d)", "4"),
    ("__min(n, d)", "2"), ("__max(n, d)", "7"),
    ("__max(g, n)", "7"),               # f32
    ("__min(n, 2.5)", "2.5"),           # f64
    ("__min(1u, -1)", "1"),             # u32: -1 is 4294967295
    ("__max(1u, -1)", "4294967295"),
    ("__to<s32>(b)", "1"), ("__to<f32>(!b)", "0"),
    ("__to<bool>(n)", "true"), ("__to<bool>(0.0f)", "false"), ("__to<bool>(-0.0f)", "false"),
    ("__to<bool>(g - g)", "false"), ("__to<bool>(g)", "true"),
    ("__to<s8>(300)", "44"), ("__to<s32>(g)", "2"), ("__to<s32>(-g)", "-2"),
    ("__to<u8>(n - 8)", "255"), ("__to<f16>(g)", "2.75"),
])
def test_builtins(expr, printed):  # §4.4 (n = 7, d = 2, b = true, g = 2.75)
    code = f"__co__ void f(int n, int d, bool b, f32 g) {{\n  println({expr});\n}}"
    assert output(code, "f", 7, 2, True, 2.75) == printed + "\n"


def test_to_bool_of_nan_is_true():  # §4.4: number -> e != 0, and NaN != 0 (§12.3.4)
    code = "__co__ void f(f32 z) {\n  println(__to<bool>(z / z));\n}"
    assert output(code, "f", 0.0) == "true\n"


def test_cdiv_by_zero_is_a_runtime_error():  # §4.4, §12.3.1
    assert "runtime error: integer division by zero." in \
        fault("__co__ void f(int z) {\n  println(cdiv(7, z));\n}", "f", 0)


@pytest.mark.parametrize("name", ["__expf", "__fmod", "__bar_sync"])
def test_other_reference_builtins(name):  # §4.4
    assert diagnose(f"println({name}(2.0f));") == [
        f"2:9: builtin '{name}' is not supported by croqvm."]


def test_an_element_of_a_bounded_ituple_takes_an_offset():  # §4.1, §4.4
    code = "parallel idx = {x, y} by [2, 3] {\n  if (x == 0 && y == 0) println(idx(1)(-1));\n}"
    assert output(code) == "2\n"


def test_any_postfix_expression_takes_an_element():  # §4.1 level 15, §4.4
    # at x = 1, y = 4: #x - 1, the element y of {y, x}, #y - 2
    code = ("parallel {x, y} by [2, 5] {\n"
            "  if (x == 1 && y == 4) println((x)(-1), {y, x}(0), ({x, y})(1)(-2));\n}")
    assert output(code) == "1 4 3\n"


# =========================================================================== §5 bounded values

def test_extents_of_parallel_and_foreach_variables():  # §5.2
    assert output("parallel p by 16 { if (p == 0) println(#p); }") == "16\n"
    assert output("foreach i in [8] { if (i == 0) println(#i); }") == "8\n"


def test_extending_a_bound_keeps_the_value():  # §5.2
    code = ("parallel p by 4 {\n  a = p #+ 2;\n  b = p #- 1;\n"
            "  if (p == 3) println(a, #a, b, #b);\n}")
    assert output(code) == "3 6 3 3\n"


@pytest.mark.parametrize("op", ["#*", "#/", "#%"])
def test_other_bound_operators_parse_but_are_not_supported(op):  # §5.2
    assert diagnose(f"parallel p by 4 {{ println(p {op} 2); }}") == [
        f"2:27: operator '{op}' is not supported by croqvm."]


def test_compose_is_left_associative():  # §5.3
    code = ("parallel p by 2, q by 3 {\n  foreach r in [4] {\n    c = p # q # r;\n"
            "    if (r == 3) println(p, q, c, #c);\n  }\n}")
    # (p * 3 + q) * 4 + 3, bounded by 2 * 3 * 4
    assert output(code) == "0 0 3 24\n0 1 7 24\n0 2 11 24\n1 0 15 24\n1 1 19 24\n1 2 23 24\n"


@pytest.mark.parametrize("code, expected", [
    ("parallel p by 4 { println(p # 1); }",
     ['2:27: in operation "#": unable to apply to the types (int->[0,4] vs. s32).']),
    ("parallel p by 4 { println(1 # p); }",
     ['2:27: in operation "#": unable to apply to the types (s32 vs. int->[0,4]).']),
    ("__co__ void f(s32 [N] a) {\n  parallel p by N { println(p # 1); }\n}",
     ['2:29: in operation "#": unable to apply to the types (int->[0,N] vs. s32).']),
    ("parallel {p, q} by [2, 2] { t = {p, q} # {q, p}; }",
     ['2:33: in operation "#": unable to apply to the types (ituple<2> vs. ituple<2>).']),
])
def test_compose_takes_bounded_ints_only(code, expected):  # §5.3
    assert diagnose(code) == expected


def test_bounded_arithmetic_keeps_the_bound():  # §5.4
    code = ("parallel p by 4 {\n  k = 1 + p;\n  m = p % 3;\n  n = 7 - p;\n  o = p / 2;\n"
            "  g = p * 3;\n  println(k, #k, m, #m, n, #n, o, #o, g, #g);\n}")
    assert output(code) == ("1 4 0 4 7 4 0 4 0 4\n2 4 1 4 6 4 0 4 3 4\n"
                            "3 4 2 4 5 4 1 4 6 4\n4 4 0 4 4 4 1 4 9 4\n")


def test_a_bounded_ituple_counts_as_its_elements_in_an_index():  # §5.1
    code = ("s32 [2, 3] a;\nparallel idx = {x, y} by [2, 3] { a.at(idx) = x * 10 + y; }\n"
            "println(a.at(0, 0), a.at(0, 2), a.at(1, 1), a.at(1, 2));")
    assert output(code) == "0 2 11 12\n"


# --------------------------------------------------------------------------- ranges §5.5

def test_ranges():  # §5.5.2, D5
    code = ("__co__ void f(int k) {\n  with t in 8 {\n"
            "    foreach t(2:-1:2) print(t, \"\");\n    println();\n"
            "    foreach t(5:-4) print(t);\n    println(\"none\", t);\n"
            "    foreach t(k:) print(t, #t, \"\");\n    println();\n"
            "    foreach t(#t - 2:) print(t);\n    println();\n"
            "    foreach t(k + 1:-k) print(t);\n    println();\n  }\n}")
    assert output(code, "f", 2) == ("2 4 6 \n"            # while t < 8 - 1
                                    "none 0\n"            # 5 < 8 - 4 never holds
                                    "2 8 3 8 4 8 5 8 6 8 7 8 \n"   # #t unchanged
                                    "67\n"
                                    "345\n")              # t < 8 - 2


def test_ranges_per_lane():  # §5.5.2
    code = "parallel p by 3 {\n  with s in 5 {\n    foreach s(p:-p) println(p, s);\n  }\n}"
    # lane 0: 0..4, lane 1: 1..3, lane 2: 2; the warp runs the iterations in lockstep
    assert output(code) == "0 0\n1 1\n2 2\n0 1\n1 2\n0 2\n1 3\n0 3\n0 4\n"


def test_a_named_range_iterates_a_new_name():  # §5.5.3
    assert output("with t in 8 {\n  foreach u = t(1: :3) println(t, u, #u);\n}") == \
        "0 1 8\n0 4 8\n0 7 8\n"
    assert diagnose("with t in 8 {\n  foreach u = t(1:) { }\n  println(u);\n}") == [
        "4:11: symbol 'u' is used before declaration."]


@pytest.mark.parametrize("rng, lo, hi", [("t(-1:)", -1, 0), ("t(0:2)", 0, 2), ("t(-2:3)", -2, 3)])
def test_a_static_range_needs_lo_at_least_0_and_hi_at_most_0(rng, lo, hi):  # §5.5.2
    assert diagnose(f"with t in 8 {{ foreach {rng} {{ }} }}") == [
        f"2:23: range of 't' is invalid (lo {lo}, hi {hi})."]


def test_a_range_known_only_at_run_time_is_checked_at_run_time():  # §5.5.2
    report = fault("__co__ void f(int k) {\n  with t in 4 {\n    foreach t(k:) print(t);\n"
                   "  }\n}", "f", -1)
    assert "runtime error: range of 't' is invalid (lo -1, hi 0)." in report


# =========================================================================== §15 diagnostics

def test_a_static_error_is_rendered_with_gutter_caret_and_hint():  # §15.1
    text = F + "  parallel p by 4 {\n    s32 [p] w;\n  }\n}\n"
    with pytest.raises(croqvm.CompileError) as info:
        croqvm.compile(text, "k.co")
    assert str(info.value) == (
        "k.co:3:10: error: global variable 'w' is made before the parallel-by, but its "
        "shape reads 'p', which is declared inside it.\n"
        "    3 |     s32 [p] w;\n"
        "      |          ^\n"
        "hint: declare it 'shared' (one per block) or 'local' (one per thread)")


def test_warnings_have_the_same_shape():  # §15.1
    module = croqvm.compile(F + "  s8 x = 1.5f;\n}\n", "w.co")
    assert module.warnings == (
        "w.co:2:10: warning: implicit conversion from 'f32' to 's8' may lose precision.\n"
        "    2 |   s8 x = 1.5f;\n"
        "      |          ^~~~")


def test_the_caret_follows_tabs_of_the_source_line():  # §15.1, §2.1.1
    with pytest.raises(croqvm.CompileError) as info:
        croqvm.compile(F + "\tparallel p by 4 {\n\t\ts32 [p] w;\n\t}\n}\n", "k.co")
    assert str(info.value).splitlines()[:3] == [
        "k.co:3:8: error: global variable 'w' is made before the parallel-by, but its shape "
        "reads 'p', which is declared inside it.",
        "    3 | \t\ts32 [p] w;",
        "      | \t\t     ^"]


def test_errors_come_in_source_order_even_when_found_later():  # §15.1
    code = ("s32 [4] a;\nparallel p by 1 {\n  f = dma.copy.async a => shared;\n}\n"
            "yield;\nint q;")
    assert diagnose(code) == ["4:3: some asyncs are not explicitly waited: f.",
                              "6:1: unable to yield outside the parallel-by block(s).",
                              "7:5: declaration of 'q' requires an initializer."]


def test_at_most_50_errors_the_first_in_source_order():  # §15.1
    code = ("s32 [4] a;\nparallel p by 1 {\n  f = dma.copy.async a => shared;\n" +
            "".join(f"  x{i} = y{i};\n" for i in range(60)) + "}")
    errors = diagnose(code)
    assert len(errors) == 50
    assert errors[0] == "4:3: some asyncs are not explicitly waited: f."
    assert errors[-1] == "53:9: symbol 'y48' is used before declaration."


def test_the_parse_error_quoted_in_section_15_2():  # §15.2
    assert diagnose("with [4] { }") == [
        "2:6: syntax error: unexpected '[', expecting '{' or a name."]
