"""Static errors of the checker (LANGUAGE.md §3-§11, §14.3, §15.2): one row per program,
with every error it must report, exact text and position, and nothing else.

A case that does not start with ``__co__`` is the body of ``__co__ void f() { ... }``, so
its first line is line 2 and columns count from the case's own first character.
"""
import pytest

from croqvm.lang.check.consteval import const_value
from croqvm.lang.frontend import front_end


def diagnose(text: str, severity="error") -> list[str]:
    if not text.startswith("__co__"):
        text = "__co__ void f() {\n" + text + "\n}"
    _, diags, _ = front_end(text, "t.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" for d in diags
            if d.severity == severity]


# A block with events 'e[2]' and 'one', a shared tile 's' and a global 'g'; the case's
# statements go in the thread-level body, from line 6 on.
EVENTS = ("__co__ void f(s32 [4] g) {\n  parallel p by 1 : block {\n    shared s32 [4] s;\n"
          "    shared event e[2], one;\n    parallel t by 32 : thread {\n%s\n    }\n  }\n}")
COPY = "      a = dma.copy.async g => s;\n"

CASES = [
    # names and scopes (§3.4)
    ("int x = 1; int x = 2;", ["2:16: symbol 'x' has been declared already."]),
    ("println(y);\nint y = 1;", ["2:9: symbol 'y' is used before declaration."]),
    ("if (true) { z = 1; }\nprintln(z);", ["3:9: symbol 'z' is used before declaration."]),
    ("foreach i in [4] { int i2 = 0; }\nforeach j in [4] { int i = j; }\nint j = 0;", []),
    ("s32 [8, 8] a;\nb = a.view(2, 3 : 8, 0).from(0, -1);\nc = a.view(2, 3 : 8).from(0, 0);",
     ["3:22: view stride 1 must be greater than 0.",
      "3:33: view offset 1 must not be negative (-1).",
      "4:5: data rank (2) must be consistent with view stride count (1)."]),
    ("s32 [8, 8] a;\nb = a.view(4, 4 : 9, 5).from(3, 1);",
     ["3:5: a view with element strides reaches element 74 of 'a' in memory order, which "
      "has 64 elements."]),
    ("s32 [8, 8] a;\nb = a.subspan(8, 4).at(0, 1).span_as(32);",
     ["3:5: span_as requires a contiguous view, but the view [8, 4] of 'a' [8, 8] is not "
      "one."]),
    ("__co__ void f(s32 [4, H, 8] a) {\n  b = a.subspan(1, H, 4).at(0, 0, 1).span_as(H * 4);"
     "\n}", []),
    ("s32 [8, 8] a;\nb = a.view(2, 4 : 8, 1).from(0, 0).span_as(8);",
     ["3:5: span_as requires a contiguous view, but the view [2, 4] of 'a' [8, 8] is not "
      "one."]),
    ("foreach i in [4] : unroll(8) { }",
     ["2:1: unroll factor (8) exceeds the loop extent (4)."]),
    ("with idx = {x, y} in [2, 8] {\n  foreach idx : unroll(4) { }\n}",
     ["3:3: unroll factor (4) exceeds the loop extent (2)."]),
    ("foreach i in [4] { foreach i in [2] { } }", []),      # an inner scope shadows
    ("foreach i in [4] { s32 i = 0; }", ["2:24: symbol 'i' has been declared already."]),
    ("parallel p by 2 { local s32 [2] p; }",
     ["2:33: symbol 'p' has been declared already."]),
    ("with {a, b} in [2, 2] { foreach c = a { int c = 1; } }",
     ["2:45: symbol 'c' has been declared already."]),
    ("__co__ void f(s32 [N] a) {\n  int N = 3;\n}",
     ["2:7: symbol 'N' has been declared already."]),
    ("println(_);", ["2:9: '_' means a whole dimension and can only be used in 'chunkat', "
                     "'subspan' and 'view' arguments."]),
    ("foreach _ in [3] { }", ["2:9: '_' can not be used as a name: it means a whole "
                             "dimension in 'chunkat', 'subspan' and 'view' arguments."]),
    ("x = y + 1;\nw = y;", ["2:5: symbol 'y' is used before declaration."]),
    # declarations, mutability, D13, D14 (§3.2-§3.4)
    ("int x;", ["2:5: declaration of 'x' requires an initializer."]),
    ("int x = 1;\nx = 2;", ["3:1: only mutables can be re-assigned (x)."]),
    ("x = 1;\nx += 2;", ["3:1: only mutables can be re-assigned (x)."]),
    ("int x = 1;\nx++;", ["3:1: only mutables can be re-assigned (x)."]),
    ("mutable int n = 0;\nparallel p by 4 {\n  n += 1;\n}", []),    # a warning (D14)
    ("ituple t = {1, 2};\nmutable u = t;",
     ["3:9: 'u' with a type of \"ituple<2>\" can not be declared as 'mutable'."]),
    ("foreach i in [4] { mutable j = i; }",
     ["2:28: 'j' with a type of \"int->[0,4]\" can not be declared as 'mutable'."]),
    ("s32 [4] a;\na = 3;",
     ["3:1: can not assign to buffer 'a': assign its elements with 'a.at(...)'."]),
    ("int x = true;", ["2:9: can not convert 'bool' to 's32' implicitly."]),
    ("bool b = 1 + 2;", ["2:10: can not convert 's32' to 'bool' implicitly."]),
    # storage classes (§3.2)
    ("shared s32 [32] staging;",
     ["2:17: shared variable 'staging' must be declared inside parallel-by."]),
    ("parallel p by 4 {\n  s32 [4] w;\n}", []),          # one global buffer: a warning
    ("parallel p by 4 {\n  global s32 [p + 1] w;\n}",
     ["3:15: global variable 'w' is made before the parallel-by, but its shape reads 'p', "
      "which is declared inside it."]),
    ("__co__ void f(shared s32 [4] a) { }",
     ["1:15: the shared data can not be used as a parameter."]),
    ("__co__ void f(s32 [?, 4] a) { }",
     ["1:20: The parameter with an unbounded dimension must be global."]),
    # element types and shapes (§3.1, §3.3)
    ("s32 [4, 0] a;", ["2:9: The mdspan size \"0\" is invalid!"]),
    ("s32 [4, 2 - 3] a;", ["2:9: The mdspan size \"-1\" is invalid!"]),
    ("parallel p by 2 { shared s32 [4] sa[0]; }",
     ["2:37: the size of buffer array 'sa' must be a positive integer constant."]),
    # operands (§4.2) and builtins (§4.4)
    ("if (1) { }", ["2:5: requires a predication expression but got 's32'."]),
    ("while (2.0f) { }", ["2:8: requires a predication expression but got 'f32'."]),
    ("println(true && 3);", ["2:17: requires a predication expression but got 's32'."]),
    ("println(1 + true);",
     ["2:9: in operation \"+\": unable to apply to the types (s32 vs. bool)."]),
    ("f32 x = 1.0f;\nprintln(x % 2);",
     ["3:9: in operation \"%\": unable to apply to the types (f32 vs. s32)."]),
    ("f32 x = 1.0f;\nprintln(x << 2);",
     ["3:9: in operation \"<<\": unable to apply to the types (f32 vs. s32)."]),
    ("println(__expf(2.0f));", ["2:9: builtin '__expf' is not supported by croqvm."]),
    ("println(cdiv(1.0f, 2));",
     ["2:9: 'cdiv' requires integers but got 'f32' and 's32'."]),
    ("s32 [4, 4] a;\nprintln(a.span(2));", ["3:9: out of bound in 'dimof'."]),
    ("ituple t = {1, 2};\nprintln(t(2));",
     ["3:11: index 2 is out of range for 't' (ituple<2>)."]),
    ("ituple t = {1, 2};\nprintln(t(0, 1));", ["3:9: 't(...)' takes one integer argument."]),
    # e(i) on another postfix expression (§4.1 level 15)
    ("println({1, 2}(2));", ["2:16: index 2 is out of range for an ituple<2>."]),
    ("__co__ void f(int n) {\n  println({1, 2}(n));\n}",
     ["2:18: the element index of an ituple must be a constant."]),
    ("println({1, 2}(0, 1));", ["2:9: an element '(...)' takes one integer argument."]),
    ("s32 [4] a;\nprintln(a.span(0)(1));",
     ["3:9: a value of type 's32' can not be called; '(i)' applies to ituples, mdspans and "
      "bounded ints only."]),
    ("mdspan sp : [7, 8];\nprintln(sp(2));",
     ["3:12: index 2 is out of range for 'sp' (mdspan<2> [7, 8])."]),
    ("sp : [7, 8, 9] + {1, 2};", ["2:6: in operation \"+\": unable to apply to the types "
                                  "(mdspan<3> [7, 8, 9] vs. ituple<2>)."]),
    ("mdspan<3> sp : [7, 8];", ["2:11: 'sp' is declared as \"mdspan<3>\" but initialized with "
                               "\"mdspan<2> [7, 8]\"."]),
    ("ituple<2> t = {1, 2, 3};", ["2:11: 't' is declared as \"ituple<2>\" but initialized "
                                 "with \"ituple<3>\"."]),
    ("parallel {x, y} by [2, 3] { println((x)(-1), ({x, y})(1)(-1)); }", []),
    # bounded values (§5)
    ("parallel p by 4 {\n  println(p # 1.0f);\n}",
     ["3:11: in operation \"#\": unable to apply to the types (int->[0,4] vs. f32)."]),
    ("foreach i in [4] { println(i #* 2); }",
     ["2:28: operator '#*' is not supported by croqvm."]),
    ("int x = 3;\nprintln(#x);", ["3:9: '#' requires a bounded variable but 'x' is 's32'."]),
    ("with t in 8 {\n  foreach t(3:1) { }\n}",
     ["3:11: range of 't' is invalid (lo 3, hi 1)."]),
    ("int c = 3;\nforeach c { }",
     ["3:9: expect a bounded type for iteration variable 'c' but got 's32'."]),
    ("parallel p by 4 {\n  foreach p { }\n}",
     ["3:11: expect the bounded variable 'p' to be declared by a 'with' statement instead "
      "of 'parallel-by'."]),
    ("with t in 8 {\n  parallel p by 2 { foreach t { } }\n}",
     ["3:29: 't' is declared outside the parallel-by and can not be modified inside it."]),
    ("with t in 8 { foreach u = t, u = t { } }",
     ["2:30: local iteration variable 'u' is already used in this foreach."]),
    ("foreach i in [4] { x = i + 1; foreach x { } }",
     ["2:39: expect the bounded variable 'x' to be declared by a 'with' statement."]),
    ("with idx = {i, j} in [2, 3] { foreach idx(1:) { } }",
     ["2:39: only bounded ints take ranges, but 'idx' is 'ituple<2>'."]),
    ("with t in 2.0f { }", ["2:11: expect a span type or int type, but got 'f32'."]),
    ("with {a, b} in [2, 3, 4] { }",
     ["2:6: un-matched with-matcher-count(2) and mdspan rank(3)."]),
    # views and element access (§8)
    ("s32 [4, 4] a;\nprintln(a.at(1));",
     ["3:9: accessing an spanned data (rank: 2) with 1 indices."]),
    ("s32 [4, 4] a;\nprintln(a.at(5, 0));",
     ["3:14: The 1st index `5` of element access 'a' should be less than 4"]),
    ("s32 [4, 4] a;\na.at(0, 4) = 1;",
     ["3:9: The 2nd index `4` of element access 'a' should be less than 4"]),
    ("parallel p by 4 {\n  f = dma.copy global_buf.chunkat(p) => shared;\n}",
     ["3:16: symbol 'global_buf' is used before declaration."]),
    ("s32 [4, 4] a;\nparallel p by 4 {\n  f = dma.copy a.chunkat(p) => local;\n}",
     ["4:16: data rank (2) must be consistent with tiling factor count (1)."]),
    ("s32 [4] a;\nparallel p by 8 : block {\n  f = dma.copy a.chunkat(p) => shared;\n}",
     ["4:16: tiling factor exceeds data size (8 > 4) in dimension 0."]),
    ("s32 [8, 8] a;\nparallel p by 1 {\n  t = dma.copy a.subspan(4) => shared;\n}",
     ["4:16: data rank (2) must be consistent with subspan rank (1)."]),
    ("s32 [8, 8] a;\nparallel p by 1 {\n  t = dma.copy a.subspan(0, 4) => shared;\n}",
     ["4:26: subspan dimension 0 can not be zero."]),
    ("s32 [8, 8] a;\nparallel p by 1 {\n  t = dma.copy a.subspan(4, 16) => shared;\n}",
     ["4:29: subspan too large for dimension 1 (16 > 8)."]),
    ("s32 [8, 8] a;\nparallel p by 1 {\n  t = dma.copy a.subspan(4, 4).at(7, 0) => shared;\n}",
     ["4:35: index out of bounds for dimension 0 (7 >= 2)."]),
    ("parallel p by 1 {\n  shared s32 [4] sa[2];\n  println(sa[2].at(0));\n}",
     ["4:14: index 2 is out of range for buffer array 'sa' [0, 2)."]),
    ("parallel p by 1 {\n  shared s32 [4] sa[2];\n  println(sa.at(0));\n}",
     ["4:11: buffer array 'sa' needs an index, as in 'sa[i]'."]),
    ("s32 [4, 8] a;\nparallel p by 1 { f = dma.copy a.view(2, 2).from(4, 0) => shared; }",
     ["3:50: offset out of bounds for dimension 0 (4 >= 4)."]),
    # parallel levels (§6.2-§6.3)
    ("parallel a by 2, b by 2, c by 2, d by 2 { }",
     ["2:34: too many parallel-by levels: 4 > 3."]),
    ("parallel p by 2048 : thread { }",
     ["2:1: Total physical threads per block (thread x group x group-4 dims) must not exceed "
      "1024."]),
    ("parallel p by 2 : group, t by 6 : thread { }",
     ["2:26: a 'thread' level inside 'group' must have exactly 32 instances (got 6)."]),
    ("parallel p by 2 : thread {\n  parallel q by 2 : group { }\n}",
     ["3:12: parallel-by level 'thread' can not enclose level 'group'."]),
    ("parallel p by 2 : group-4 {\n  parallel q by 2 : group { }\n}",
     ["3:12: explicit 'group' inside the 'group-4' parallel-by is not supported."]),
    ("parallel p by 2 : block {\n  parallel q by 2 {\n    parallel r by 32 : thread { }\n  }\n}",
     ["3:12: unable to infer the parallel-by level(s) between thread and block."]),
    ("parallel p by 2 : block {\n  parallel.async q by 2 : thread { }\n}",
     ["3:3: inner parallel-by level can not be asynchronous."]),
    ("parallel p by 0 { }",
     ["2:15: the parallel bound of 'p' is 0: it should be greater than 0."]),
    ("parallel p by 2.0f { }", ["2:15: the parallel bound requires integers but got 'f32'."]),
    ("parallel p by [5, 2] { }",
     ["2:10: The parallel variable 'p' can not be assigned multiple bounds."]),
    ("parallel {x, y} by 6 { }",
     ["2:10: parallel variables are more than their bounds (2 vs. 1)."]),
    ("parallel p by 2, p by 3 { }",
     ["2:18: The parallel variable 'p' has been used in the same parallelby block."]),
    ("__co__ void f(int n) { parallel.async<n> p by 2 { } }",
     ["1:24: 'n' is not a stream parameter."]),
    ("parallel p by 2 { sync.global; }",
     ["2:19: 'sync.global' can only be used outside parallel-by."]),
    ("sync.shared;", ["2:1: 'sync.shared' must be inside parallel-by."]),
    # control flow (§6.5) and inthreads (§6.7)
    ("yield;", ["2:1: unable to yield outside the parallel-by block(s)."]),
    ("break;", ["2:1: unable to break outside a loop."]),
    ("foreach i in [2] {\n  parallel p by 2 { continue; }\n}",
     ["3:21: unable to continue outside a loop."]),
    ("parallel p by 2 {\n  return;\n}",
     ["3:3: unable to return inside the parallel-by block(s)."]),
    ("inthreads (true) { }", ["2:12: inthreads can not be declared in global scope."]),
    ("parallel t by 8 {\n  inthreads (t % 2 == 0) { }\n}",
     ["3:14: inthreads' predicate must be strictly divergent."]),
    ("parallel p by 8 {\n  int k = 2;\n  inthreads (p == k) { }\n}",
     ["4:14: inthreads' predicate must be strictly divergent: croqvm allows only literals, "
      "symbolic dimensions, parameters and host-level scalars beside the parallel "
      "variable."]),
    ("parallel p by 8 {\n  inthreads.async (p < 4) {\n    inthreads.async (p == 1) { }\n  }\n}",
     ["4:22: inner inthreads can not be declared as async."]),
    ("assert(1 > 2, \"one is not bigger\");", ["2:1: assertion failed: one is not bigger"]),
    ("s32 [16, 16] a;\nprintln(a);", ["3:9: can not print a value of type 's32 [16, 16]'."]),
    ("println(true ? 1 : false);",
     ["2:9: in operation \"?:\": unable to apply to the types (s32 vs. bool)."]),
    # events (§10)
    ("parallel p by 8 {\n  inthreads (p == 0) { shared event e; }\n}",
     ["3:24: events can not be declared inside inthreads."]),
    ("parallel p by 2 { shared event<0> e; }",
     ["2:32: the arrival count of 'event<N>' must be a positive integer constant."]),
    ("parallel p by 8 { local event e; }",
     ["2:19: 'local' events are not supported by croqvm."]),
    ("parallel p by 8 {\n  shared event e;\n  wait e;\n}",
     ["4:3: event 'e' is waited but never triggered."]),
    ("parallel p by 8 {\n  int x = 1;\n  trigger x;\n}",
     ["4:11: expect `x' an event but got 's32'."]),
    # cyclic generations and trigger-after (§10.6, §10.7; lib/earlysema.cpp, lib/semacheck.cpp)
    (EVENTS % "      wait one.at(0);", ["6:12: '.at(order)' requires an event array."]),
    (EVENTS % "      shared event m[2][2];\n      wait m.at(0);",
     ["7:12: '.at(order)' requires a one-dimensional event array."]),
    (EVENTS % "      wait e.at(1.5f);", ["6:17: event order must be an integer expression."]),
    (EVENTS % "      mutable s32 k = 0;\n      wait e.at(k++ + 1);",
     ["7:17: an event order update must be the direct '.at' argument; use '.at(order++)' or "
      "update the order separately."]),
    (EVENTS % "      mutable s32 k = 0;\n      trigger e.at(k++);\n      wait e.at(k);", []),
    (EVENTS % (COPY + "      trigger e[0], one after a;"),
     ["7:7: trigger-after requires exactly one shared event that can be bound to native async "
      "completion."]),
    (EVENTS % (COPY + "      trigger e after a;"),
     ["7:7: trigger-after requires exactly one shared event that can be bound to native async "
      "completion."]),
    (EVENTS % ("      mutable s32 k = 0;\n" + COPY + "      b = dma.copy.async g => s;\n"
               "      trigger e.at(k++) after a, b;"),
     ["9:20: an incremented event order cannot be shared by multiple trigger-after "
      "dependencies; advance the order in a separate statement after the joined trigger."]),
    (EVENTS % (COPY + "      trigger one after a[0];"),
     ["6:7: some asyncs are not explicitly waited: a.",
      "7:25: trigger-after currently requires a named future."]),
    (EVENTS % "      int x = 1;\n      trigger one after x;",
     ["7:25: trigger-after dependency 'x' must be an async future, but got 's32'."]),
    (EVENTS % "      a = dma.copy g => s;\n      trigger one after a;",
     ["7:25: trigger-after dependency must be asynchronous."]),
    (EVENTS % (COPY + "      wait a;\n      trigger one after a;"),
     ["8:25: trigger-after cannot bind future 'a' after it was explicitly waited; trigger the "
      "event directly after the wait."]),
    (EVENTS % (COPY + "      trigger one after a;\n      trigger e[0] after a;"),
     ["8:26: trigger-after consumes future 'a' more than once; publish an event for multiple "
      "consumers."]),
    (EVENTS % (COPY + "      trigger one after a;\n" + COPY + "      trigger e[0] after a;"),
     []),
    (EVENTS % "      a = dma.copy.async s => g;\n      trigger one after a;",
     ["7:25: trigger-after cannot bind a TMA store future because shared-to-global TMA has no "
      "mbarrier completion; use a synchronous tma.copy followed by a direct trigger."]),
    (EVENTS % "      a = dma.copy.async g => local;\n      trigger one after a;",
     ["7:25: trigger-after requires native completion-event binding; use an explicit wait "
      "followed by a direct trigger for this DMA future."]),
    (EVENTS % "      a = dma.any;\n      trigger one after a;",
     ["6:7: dma.any 'a' is defined but never used!",
      "7:25: trigger-after requires a source-visible async DMA future producer."]),
    # an inner scope's declaration shadows an outer one of any kind (§3.4.4, §10.1)
    (EVENTS % "      shared event one;\n      trigger one;", []),
    (EVENTS % "      shared s32 [2] one;", []),
    (EVENTS % "      shared event s;\n      trigger s;", []),
    # DMA and futures (§9)
    ("s32 [4] a;\ns32 [4] b;\ndma.copy.async a => b;",
     ["4:1: forbid to associated async dma without a named future or a named event."]),
    ("s32 [4] a;\nf = dma.copy a => local;",
     ["3:1: `local' can not be DMA destination outside parallel-by."]),
    ("s32 [4] a;\nparallel p by 2 { f = dma.copy a => global; }",
     ["3:19: `global' can not be DMA destination inside parallel-by."]),
    ("s32 [2, 8] a;\nparallel p by 1 {\n  shared s32 [4, 4] b;\n  dma.copy a => b;\n}",
     ["5:3: Type inconsistent between DMA 'from'(s32 mdspan<2> [2, 8]) and 'to'(shared s32 "
      "mdspan<2> [4, 4])."]),
    # a smaller source without .zfill: only rank 2 between global and shared, equal rows
    ("s32 [2, 4] a;\nparallel p by 1 {\n  local s32 [4, 4] b;\n  dma.copy a => b;\n}",
     ["5:3: Type inconsistent between DMA 'from'(s32 mdspan<2> [2, 4]) and 'to'(local s32 "
      "mdspan<2> [4, 4])."]),
    ("s32 [2, 4, 2] a;\nparallel p by 1 {\n  shared s32 [4, 4, 2] b;\n  dma.copy a => b;\n}",
     ["5:3: Type inconsistent between DMA 'from'(s32 mdspan<3> [2, 4, 2]) and 'to'(shared s32 "
      "mdspan<3> [4, 4, 2])."]),
    ("s32 [2, 4] a;\nparallel p by 1 {\n  shared s32 [4, 4] b;\n  dma.copy a => b;\n}", []),
    ("s32 [4, 8] a;\ns32 [8, 4] b;\ndma.transp<0, 0> a => b;",
     ["4:1: dma.transp<0, 0> is not a permutation of the 2 dimensions of the source."]),
    ("s32 [4, 8] a;\ns32 [6, 10] b;\ndma.pad<{1}, {1}, {0}, 0> a => b;",
     ["4:1: dma.pad needs 2 values in each of its low, high and middle paddings (the rank "
      "of the source)."]),
    ("s32 [4, 8] a;\ns32 [8, 4] b;\nf32 [6, 10] c;\ndma.transp<1, 0> a => b;\n"
     "dma.pad<{1, 1}, {1, 1}, {0, 0}, 0> a => c;",
     ["6:1: Type inconsistent between DMA 'from'(s32 mdspan<2> [6, 10]) and 'to'(f32 "
      "mdspan<2> [6, 10])."]),
    ("s32 [4] a;\nf32 [4] b;\ndma.copy a => b;",
     ["4:1: Type inconsistent between DMA 'from'(s32 mdspan<1> [4]) and 'to'(f32 mdspan<1> "
      "[4])."]),
    ("s32 [2, 8] a;\ns32 [2, 8, 1] b;\ndma.copy a => b;",
     ["4:1: DMA statement has a rank mismatch between 'from' and 'to': 2 != 3."]),
    ("__co__ void f(s32 [M, N] x) {\n  parallel p by 2 : block, r by 16 : thread {\n"
     "    row = dma.copy x.subspan(1, N).at(p # r, 0) => shared;\n  }\n}",
     ["3:5: dma.copy into shared memory is executed once per block, but its source depends "
      "on thread index 'r': every thread would overwrite the same shared buffer."]),
    ("s32 [4] a;\ns32 [4] b;\ng = dma.copy a => b;\nwait g;",
     ["5:6: non-async future 'g' can not be waited."]),
    ("s32 [4] a;\nparallel p by 1 {\n  f = dma.copy.async a => shared;\n}",
     ["4:3: some asyncs are not explicitly waited: f."]),
    ("x = dma.any;", ["2:1: dma.any 'x' is defined but never used!"]),
    ("parallel p by 1 {\n  x = dma.any;\n  println(x.span);\n}",
     ["3:3: dma.any 'x' is defined but never used!"]),
    # the shape a placeholder's first DMA fixes, used before that DMA (§9.4.4)
    ("__co__ void f(s32 [N, 4] a) {\n  parallel p by 1 {\n    x = dma.any;\n"
     "    println(x.span(1), x.span(0));\n    x = dma.copy a => shared;\n  }\n}",
     ["4:24: 'x.span' is used before the shape of 'x' is fixed (line 5), and that shape, "
      "[N, 4], is not known at compile time."]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.any;\n  println(x.span(2));\n"
     "  x = dma.copy a => shared;\n}", ["5:11: out of bound in 'dimof'."]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.any;\n  y = x;\n  x = dma.copy a => shared;\n}",
     ["5:3: can not initialize variable 'y' with a placeholder."]),
    ("s32 [4] a;\ns32 [4] b;\ng = dma.copy a => b;\nh = g;",
     ["5:1: future 'g' can not be copied."]),
    ("s32 [4] a;\nparallel p by 1 {\n  f = dma.copy a => shared;\n  f = dma.copy a => local;\n}",
     ["5:3: 'f' is declared as \"future shared s32 [4]\" but assigned \"future local s32 "
      "[4]\"."]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.copy.async a => shared;\n"
     "  y = dma.copy.async a.subspan(2) => shared;\n  swap(x, y);\n  wait x;\n}",
     ["6:3: rotate/swap data of different types (async future shared s32 [4] vs. async "
      "future shared s32 [2])"]),
    # a run-time extent is not the declared constant one, even when it may equal it
    ("__co__ void f(s32 [N] a) {\n  parallel p by 1 {\n    x = dma.copy.async a.subspan(4).at(0) => shared;\n"
     "    y = dma.copy.async a.subspan(N).at(0) => shared;\n    swap(x, y);\n    wait x;\n  }\n}",
     ["5:5: rotate/swap data of different types (async future shared s32 [4] vs. async "
      "future shared s32 [N])"]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.copy.async a => shared;\n  swap(x);\n  wait x;\n}",
     ["5:3: Builtin function 'swap' accept exact two parameters."]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.copy.async a => shared;\n  rotate(x);\n"
     "  wait x;\n}",
     ["5:3: Builtin function 'rotate' accept two or more parameters."]),
    ("s32 [4] a;\nparallel p by 1 {\n  int k = 1;\n  x = dma.copy.async a => shared;\n"
     "  swap(x, k);\n  wait x;\n}",
     ["6:11: only support swapping of 'future'."]),
    ("s32 [4] a;\nparallel p by 1 {\n  x = dma.copy.async a => shared;\n"
     "  { y = dma.copy.async a => shared; swap(x, y); }\n  wait x;\n}",
     ["5:37: swapping values defined in different scopes is forbidden"]),
    # MMA (§11)
    ("s16 [2, 2] a;\nma = mma.load a;\nmb = mma.load a;\nmc = mma.fill.s32 0;\n"
     "mma.row.col mc, ma, mb;", ["6:1: MMA: operand element type 's16' is not supported."]),
    ("parallel p by 1 : group-4 {\n  shared f16 [64, 16] a;\n  shared f16 [64, 8] b;\n"
     "  fa = mma.load a;\n  fb = mma.load b;\n  acc = mma.fill 0.0f;\n"
     "  mma.row.row acc, fa, fb;\n}",
     ["8:3: MMA: matrix shapes do not match: `fa'([64, 16]) v.s. `fb'([64, 8])."]),
    ("parallel p by 1 : group-4, t by 128 : thread {\n  shared f16 [128, 16] a;\n"
     "  fa = mma.load a.subspan(1, 16).at(t, 0);\n}",
     ["4:17: mma.load is executed once per 'group-4' instance, but its operand depends on "
      "thread index 't'."]),
    ("parallel p by 1 : group {\n  shared f16 [16, 16] a;\n  mc = mma.fill 0.0f;\n"
     "  fa = mma.load a;\n  mma.row.row fa, fa, fa;\n  mma.store mc, a;\n  mc = 1;\n}",
     ["6:15: 'fa' of type \"fragment f16\" is not an MMA accumulator.",
      "8:3: can not assign to fragment 'mc'."]),
    ("parallel p by 1 : group-4 {\n  mc = mma.fill 0.0f;\n}",
     ["3:3: can not infer the shape of accumulator 'mc'."]),
    ("parallel p by 1 : group {\n  shared f16 [16, 16] a;\n  mc = mma.fill.s32 0;\n"
     "  fa = mma.load a;\n  mma.row.row mc, fa, fa;\n}",
     ["6:3: MMA: accumulator 'mc' is s32, but f16 operands accumulate in a float type."]),
    ("parallel p by 1 : group {\n  shared s8 [16, 16] a;\n  mc = mma.fill.f32 0;\n"
     "  fa = mma.load a;\n  mma.row.row mc, fa, fa;\n}",
     ["6:3: MMA: accumulator 'mc' is f32, but s8 operands accumulate in an integer type."]),
    ("parallel p by 1 : block {\n  shared f32 [16, 16] s;\n  mc = mma.fill.f32 0.0f;\n"
     "  parallel q by 1 : group { mma.store mc, s; }\n"
     "  parallel r by 1 : group-4 { mma.store mc, s; }\n}",
     ["6:31: fragment 'mc' is used by both 'group' and 'group-4' levels."]),
    # returns (§14.3.4) and functions (§1.1.3)
    ("__co__ int f() { int x = 1; }",
     ["1:12: non-void function 'f' does not contain a return statement."]),
    ("return 1;", ["2:1: return statement found in void function 'f'."]),
    ("__co__ auto f() {\n  s32 [4, 8] a;\n  s32 [8, 4] b;\n  if (true) { return a; }\n"
     "  return b;\n}",
     ["5:3: return type inconsistent: s32 [4, 8] vs. s32 [8, 4]"]),
    ("__co__ auto f() {\n  ituple t = {1, 2};\n  return t;\n}",
     ["3:3: returning value with type 'ituple<2>' is not supported."]),
    ("__co__ s32 [4] f() { s32 [8] a; return a; }",
     ["1:33: return type inconsistent: s32 [4] vs. s32 [8]"]),
    ("__co__ int f() { return; }", ["1:18: non-void function 'f' must return a value."]),
    ("__co__ bool f() { return 2; }", ["1:26: can not convert 's32' to 'bool' implicitly."]),
    ("__co__ s32 [4] f() { return 1; }", ["1:22: return type inconsistent: s32 [4] vs. s32"]),
    ("__co__ auto f() {\n  if (true) { return 1; }\n  return 1.5f;\n}",
     ["3:3: return type inconsistent: s32 vs. f32"]),
    ("__co__ void f() { }\n__co__ void f() { }", ["2:13: function 'f' has been defined already."]),
    ("__co__ int g() { return 1; }\n__co__ void f() { x = g(); }",
     ["2:23: function 'g' can not be called: Croqtile functions can not call each other."]),
]


@pytest.mark.parametrize("source, expected", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_static_error(source, expected):
    assert diagnose(source) == expected


# 'mc = mma.fill' in a nested parallel-by declares a new accumulator (lib/earlysema.cpp);
# the outer one, used by no MMA, is the reference's "the MMA operation of `mc` cannot be
# executed" (lib/Target/GPU/cute_codegen.cpp; tests/gpu/codegen/cute/mma_error.co).
NESTED_FILL = ("parallel b by 1 : block {\n  shared f16 [16, 16] a;\n  shared f32 [16, 16] o;\n"
               "  mc = mma.fill 0.0;\n  parallel g by 1 : group {\n    mc = mma.fill 0.0;\n"
               "    fa = mma.load a;\n    mma.row.row mc, fa, fa;\n    mma.store mc, o;\n  }\n"
               "%s}")


@pytest.mark.parametrize("source, expected", [
    (NESTED_FILL % "",
     ["5:3: the MMA operations of fragment 'mc' can not be executed: no MMA "
      "('mma.<a>.<b>') uses it. ['mc = mma.fill' inside a nested parallel-by declares a new "
      "accumulator, which hides this one there]"]),
    # even when a store gives it a shape
    (NESTED_FILL % "  parallel g by 1 : group\n    mma.store mc, o;\n",
     ["5:3: the MMA operations of fragment 'mc' can not be executed: no MMA "
      "('mma.<a>.<b>') uses it. ['mc = mma.fill' inside a nested parallel-by declares a new "
      "accumulator, which hides this one there]"]),
    # an MMA on the outer one after the nested parallel-by
    (NESTED_FILL % "  parallel g by 1 : group {\n    fb = mma.load a;\n"
                   "    mma.row.row mc, fb, fb;\n  }\n", []),
    # a re-fill in the same parallel-by, in a loop, is the same accumulator
    ("parallel g by 1 : group {\n  shared f16 [16, 16] a;\n  shared f32 [16, 16] o;\n"
     "  mc = mma.fill 0.0f;\n  fa = mma.load a;\n  foreach k in [2] {\n"
     "    mc = mma.fill 0.0f;\n    mma.row.row mc, fa, fa;\n  }\n  mma.store mc, o;\n}", []),
])
def test_a_fill_in_a_nested_parallel_declares_a_new_accumulator(source, expected):
    _, diags, _ = front_end("__co__ void f() {\n" + source + "\n}", "t.co")
    assert [f"{d.span.line}:{d.span.col}: {d.message}" + (f" [{d.hint}]" if d.hint else "")
            for d in diags if d.severity == "error"] == expected


WARNINGS = [
    ("s32 x = 1.5f;", ["2:9: implicit conversion from 'f32' to 's32' may lose precision."]),
    ("f64 d = 1.0;\nf32 y = d;", ["3:9: implicit conversion from 'f64' to 'f32' may lose "
                                   "precision."]),
    ("s32 [4] a;\ns8 [4] b;\nb.at(0) = a.at(1);",
     ["4:11: implicit conversion from 's32' to 's8' may lose precision."]),
    ("s8 x = 100;\nf16 h = 0.5f;\nf32 z = 7;", []),  # constants that fit exactly
    ("__co__ s32 f() {\n  return 2.5f;\n}",
     ["2:10: implicit conversion from 'f32' to 's32' may lose precision."]),
    ("__co__ s8 f() {\n  return 100;\n}", []),
    ("__co__ void f(s32 [4] a) {\n  a.at(0) = 1;\n}",
     ["2:3: writes to parameter 'a' are not visible to the caller; declare it 'global'."]),
    # a pipeline that lost its 'wait full': the consumer reads what nothing orders
    ("parallel p by 1 : block {\n  shared event full, empty;\n  trigger full;\n"
     "  trigger empty;\n  wait empty;\n}",
     ["4:11: event 'full' is triggered but never waited: its triggers order nothing."]),
]


@pytest.mark.parametrize("source, expected", WARNINGS)
def test_warning(source, expected):
    assert diagnose(source, "warning") == expected
    assert diagnose(source) == []


def test_independent_errors_are_all_reported_once():
    # two unrelated mistakes, and a bad declaration whose uses stay quiet
    errors = diagnose("int x;\nprintln(x + 1, x);\nint x2 = true;\nyield;")
    assert errors == ["2:5: declaration of 'x' requires an initializer.",
                      "4:10: can not convert 'bool' to 's32' implicitly.",
                      "5:1: unable to yield outside the parallel-by block(s)."]


def test_const_value_of_unchecked_or_faulting_expressions_is_none():
    # division by zero is a runtime error, not a constant (§12.3.1)
    from croqvm.lang import ast
    from croqvm.core.source import Span
    sp = Span.point("t.co", 1, 1)
    div = ast.Binary("/", ast.IntLit(1, "s32", sp), ast.IntLit(0, "s32", sp), sp)
    assert const_value(div) is None


def test_functions_that_parse_are_checked_beside_one_with_a_syntax_error():
    text = ("__co__ void g() {\n  int x = 1;\n  x = 2;\n}\n"
            "__co__ void f() {\n  parallel p by [ {\n}\n")
    assert diagnose(text) == ["3:3: only mutables can be re-assigned (x).",
                              "7:2: syntax error: expected ']' to close '['."]
