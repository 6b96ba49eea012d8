"""Compiling keeps memory bounded by the source size (bench/compile_scale.py --memory
measures whole processes on megabytes; these check the mechanisms, quickly).

A source dense with statements used to hold the tokens of every function at once and the
whole tree next to the whole module: about 190 bytes of Python allocations per byte of
source on the program below. Now the lexer hands the parser one function's tokens at a
time, each function's tree is dropped once it is lowered, a node keeps its span as a
plain int, and the module is verified and encoded a function at a time: about 68 (87
before the last three). Lowering packs each finished Code's instruction words four bytes
a word (``module.Words``), and ``.cqb`` files are written a piece at a time.
"""
import copy
import gc
import pickle
import tracemalloc

import croqvm
from croqvm.bytecode.cqb import decode, encode
from croqvm.bytecode.module import Words
from croqvm.core.diagnostics import DiagnosticSink
from croqvm.core.source import SourceFile, Span
from croqvm.lang.lexer import function_tokens

PEAK_PER_BYTE = 80      # tracemalloc's peak (Python's allocations) per byte of source


def kernel(name, groups):
    body = [f"__co__ void {name}(global s32 [1024] x) {{",
            "  parallel p by [4] : block, q by [256] : thread {"]
    for i in range(groups):
        body += [f"    s32 a{i} = x.at((p # q + {i}) % 1024) * {i % 7 + 1};",
                 f"    if (a{i} > {i % 100}) x.at(p # q) = a{i} - (q & {i % 31});",
                 f"    foreach k{i} in [2] x.at(q) += a{i} + k{i};"]
    return body + ["  }", "}"]


def dense_source(functions, groups=20):
    """``functions`` kernels of ``groups`` groups of three statements each."""
    return "\n".join(line for n in range(functions) for line in kernel(f"k{n}", groups)) + "\n"


def compile_and_encode(text):
    return encode(croqvm.compile(text, "big.co").module)


def test_compiling_a_dense_source_peaks_under_a_bound_per_source_byte():
    compile_and_encode(dense_source(1, groups=1))   # imports and caches outside the count
    text = dense_source(10)                          # about 28 KB
    gc.collect()
    tracemalloc.start()
    try:
        compile_and_encode(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_PER_BYTE * len(text)


def test_the_lexer_scans_a_function_when_the_parser_asks_for_it():
    sink = DiagnosticSink()
    text = "__co__ void f() {\n}\n__co__ void g() {\n  @\n}\n"
    lists = function_tokens(SourceFile("t.co", text), None, sink)
    assert [t.value for t in next(lists)][:3] == ["__co__", "void", "f"]
    assert sink.items == []                       # g's stray '@' is not scanned yet
    assert [t.value for t in next(lists)][:3] == ["__co__", "void", "g"]
    assert [d.message for d in sink.items] == ["stray '@' in program"]


def test_check_without_bodies_keeps_the_names_and_the_diagnostics():
    text = dense_source(3, groups=2) + "__co__ void w() {\n  s32 unused = 1.5;\n}\n"
    kept, kept_diags, _ = croqvm.check(text, "big.co")
    bare, bare_diags, _ = croqvm.check(text, "big.co", bodies=False)
    assert [f.name for f in bare.functions] == [f.name for f in kept.functions] == \
        ["k0", "k1", "k2", "w"]
    assert bare_diags == kept_diags and len(kept_diags) == 1
    assert all(not f.body.stmts and not f.params for f in bare.functions)
    assert kept.functions[0].params and kept.functions[0].body.stmts


def test_a_span_keeps_its_fields_in_one_int():
    places = [("f.co", 3, 7, 3, 12), ("f.co", 300000, 4000, 300010, 17),     # compact
              ("g.co", 5, 5000, 5, 5001), ("f.co", 1, 1, 9000, 2),           # wide
              ("h.co", 2**64 + 5, 1, 2**64 + 9, 3), ("f.co", 0, 0, 0, 0)]
    for place in places:
        span = Span(*place)
        assert (span.file, span.line, span.col, span.end_line, span.end_col) == place
        assert Span(**span.fields()) == span and str(span) == f"{place[0]}:{place[1]}:{place[2]}"
        assert span and pickle.loads(pickle.dumps(span)) == span
    assert len({Span(*place) for place in places}) == len(places)
    assert Span("f.co", 3, 7, 3, 12) != Span("g.co", 3, 7, 3, 12)
    assert Span("f.co", 3, 7, 3, 12).to(Span("f.co", 4, 1, 4, 5)) == Span("f.co", 3, 7, 4, 5)


def test_a_node_keeps_its_span_as_a_plain_int():
    tree, _, _ = croqvm.check(dense_source(1, groups=1), "big.co")
    node = tree.functions[0].body.stmts[0]
    assert type(node.span) is Span and (node.span.line, node.span.col) == (2, 3)
    assert type(node._packed_span) is int


def test_lowering_packs_the_instruction_words_which_stay_a_list_to_their_readers():
    module = croqvm.compile(dense_source(1, groups=2), "big.co").module
    words = module.functions[0].kernels[0].code.code
    decoded = decode(encode(module)).functions[0].kernels[0].code.code
    assert type(words) is Words and words.itemsize == 4 and type(decoded) is list
    assert words == decoded and decoded == words and not words != decoded
    assert words != decoded[:-1] and words[7:14].tolist() == decoded[7:14]
    copied = copy.deepcopy(words)
    assert type(copied) is Words and copied == words
    copied[0:7] = decoded[7:14]                 # a list into a slice, as a list takes it
    assert copied[:7].tolist() == decoded[7:14] and copied != words
