"""Lowering: the checked AST -> bytecode (croqvm/bytecode/lower/, docs/EXECUTION.md).

Structural tests look at the emitted opcodes the way Lua's ``code.lua`` does
(``assert_ops(code, "LOOP", "ADD", "GE", "BREAK_IF")``: a contiguous run of opcodes);
semantic tests run tiny programs on the reference interpreter and compare printed output
or results with values worked out by hand or with numpy. Every module goes through
``.cqb`` encode/decode first, so it also passes the verifier.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

from appendix import APPENDIX

import croqvm
from croqvm.core import dtypes
from croqvm.bytecode import cqb, opcodes
from croqvm.bytecode.disasm import disassemble
from croqvm.bytecode.lower import lower_program
from croqvm.bytecode.module import ParamKind, ParamStorage, RetKind, Storage
from croqvm.core.errors import CompileError, KernelFault
from croqvm.running.program import Program
from croqvm.lang import ast
from croqvm.core.source import SourceFile, Span

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


# --------------------------------------------------------------------------- helpers

def lower(src: str, defines=None):
    module = croqvm.compile(src, "t.co", defines).module
    return cqb.decode(cqb.encode(module))


def ops(code) -> list[str]:
    words = code.code
    return [opcodes.TABLE[words[i]].name for i in range(0, len(words), opcodes.WIDTH)]


def operands(code, pc: int) -> list[int]:
    base = pc * opcodes.WIDTH
    return code.code[base + 1: base + 1 + opcodes.MAX_OPERANDS]


def assert_ops(code, *names):
    """``names`` occur in ``code`` as one contiguous run of opcodes."""
    seq = ops(code)
    n = len(names)
    assert any(tuple(seq[i:i + n]) == names for i in range(len(seq) - n + 1)), \
        f"{names} not in {seq}"


def const_regs(code) -> dict[int, object]:
    """Register -> value for registers loaded by CONST."""
    return {operands(code, pc)[0]: code.consts[operands(code, pc)[1]].value
            for pc, n in enumerate(ops(code)) if n == "CONST"}


def dma_site(code) -> int:
    """The collective site the first DMA instruction of ``code`` names (-1: none)."""
    return next(operands(code, pc)[1] for pc, n in enumerate(ops(code)) if n == "DMA")


def prologue(code, words=None) -> list:
    """The values the CONSTs at the start of ``code`` (or of laneset ``words``) load into
    constant registers (unnamed ones; a named register is a variable)."""
    words = code.code if words is None else words
    values = []
    for pc in range(0, len(words), opcodes.WIDTH):
        reg, k = words[pc + 1], words[pc + 2]
        if opcodes.TABLE[words[pc]].name != "CONST" or code.reg_names[reg]:
            break
        values.append(code.consts[k].value)
    return values


def run(src: str, func=None, args=(), dims=None, **kw) -> str:
    module = lower(src)
    out = io.StringIO()
    names = [func] if func else [f.name for f in module.functions if not f.params]
    for name in names:
        engines.run(Program(module), name, *args, out=out, **(dims or {}), **kw)
    return out.getvalue()


def call(src: str, func: str, *args):
    return engines.run(Program(lower(src)), func, *args, out=io.StringIO())


def kernel(src: str, k: int = 0):
    return lower(src).functions[0].kernels[k]


# --------------------------------------------------------------------------- host code

def test_a1_elementwise_addition_prints_the_sums():
    src = """
    __co__ void add_demo() {
      s32 [2, 3] a;
      s32 [2, 3] b {10};
      foreach {i, j} in [2, 3]
        a.at(i, j) = i * 3 + j;
      parallel {i, j} by [2, 3]
        a.at(i, j) += b.at(i, j);
      foreach i in [2]
        println(a.at(i, 0), a.at(i, 1), a.at(i, 2));
    }"""
    assert run(src) == "10 11 12\n13 14 15\n"


def test_foreach_increments_at_the_top_and_resets_the_variable():
    code = lower("__co__ void f() { foreach i in [4] println(i); }").functions[0].host
    assert_ops(code, "LOOP", "ADD", "GE", "BREAK_IF", "PRINT", "END", "CONST", "RET")
    seq = ops(code)
    loop, end = seq.index("LOOP"), seq.index("END")
    assert operands(code, loop)[0] == end and operands(code, end)[0] == loop


def test_while_breaks_on_the_negated_condition():
    src = "__co__ void f() { mutable int n = 0; while (n < 3) { n += 1; } println(n); }"
    host = lower(src).functions[0].host
    assert prologue(host) == [3, 1]            # constants load once, before the loop
    n = host.reg_names.index("n")
    assert const_regs(host)[n] == 0            # the variable has a register of its own
    assert_ops(host, "LOOP", "LT", "NOT", "BREAK_IF", "ADD", "END")
    add = ops(host).index("ADD")
    assert operands(host, add)[:2] == [n, n]   # n += 1 is one instruction
    assert run(src) == "3\n"


def test_if_else_targets_point_at_else_and_end():
    code = lower("""__co__ void f(int x) { if (x > 0) println(1); else println(2); }""") \
        .functions[0].host
    seq = ops(code)
    i, e, end = seq.index("IF"), seq.index("ELSE"), seq.index("END")
    assert operands(code, i)[1] == e and operands(code, e)[0] == end
    assert operands(code, end)[0] == i


def test_break_continue_and_with_values():
    src = """
    __co__ void f() {
      mutable int n = 0;
      while (true) {
        n += 1;
        if (n % 2 == 0) continue;
        if (n > 7) break;
        print(n);
      }
      println(" n", n);
      with t in 6 {
        foreach t(1:-1) print(t);
        println(" after", t);
        foreach u = t(:-2:2) print(u);
        println();
      }
    }"""
    assert run(src) == "1357 n 9\n1234 after 0\n02\n"


def test_range_with_runtime_bounds_is_checked():
    src = "__co__ void f(int lo) { with t in 4 { foreach t(lo:) print(t); } }"
    assert_ops(lower(src).functions[0].host, "GE", "AND", "ASSERT_FMT")
    with pytest.raises(KernelFault, match=r"range of 't' is invalid \(lo -1, hi 0\)\.\n"):
        call(src, "f", -1)
    assert run(src, "f", [2]) == "23"


def test_a_range_check_in_a_kernel_shows_the_lowest_failing_lane():
    # lo = 1 - q is -1 in lane 2 and -2 in lane 3
    src = ("__co__ void f() { parallel p by 1, q by 4 : thread { with t in 4 {\n"
           "  foreach t(1 - q:) print(t); } } }")
    with pytest.raises(KernelFault) as e:
        call(src, "f")
    lines = str(e.value).splitlines()
    assert lines[0] == "t.co:2:3: runtime error: range of 't' is invalid (lo -1, hi 0)."
    assert lines[-1].endswith("block (0), lane 2 (warp 0, lane 2)")


def test_a_failed_range_check_shows_both_ends():  # §5.5.2: the default lo is 0
    src = "__co__ void f(int hi) { with t in 4 { foreach t(:hi) print(t); } }"
    with pytest.raises(KernelFault, match=r"range of 't' is invalid \(lo 0, hi 3\)\.\n"):
        call(src, "f", 3)
    assert run(src, "f", [-1]) == "012"


def test_short_circuit_guards_a_faulting_operand_with_if():
    src = """
    __co__ void f() {
      int z = 0;
      bool b = z != 0 && 10 / z > 1;
      bool c = z == 0 || 10 / z > 1;
      println(b, c, z == 0 ? 1 : 10 / z);
    }"""
    code = lower(src).functions[0].host
    assert_ops(code, "IF")
    assert run(src) == "false true 1\n"


def test_a_composed_index_computes_no_bound_but_a_bounded_variable_keeps_one():
    src = """
    __co__ void f() {
      s32 [6] v;
      parallel {p, q} by [2, 3] {
        v.at(p # q) = p # q;
        i = p # q;
        if (i == 0) println(#i);
      }
      println(v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5));
    }"""
    # p # q is p * #q + q, three times; its bound #p * #q is computed for i alone
    assert ops(kernel(src).code).count("MUL") == 3 + 1
    assert run(src) == "6\n0 1 2 3 4 5\n"


def test_pure_logic_needs_no_branch():
    code = lower("__co__ void f(int a) { bool b = a > 1 && a < 5; println(b); }") \
        .functions[0].host
    assert ops(code) == ["CONST", "CONST", "GT", "LT", "AND", "PRINT", "RET"]
    assert code.reg_names[operands(code, 4)[0]] == "b"      # the AND computes b itself


def test_an_immutable_variable_takes_over_the_temporary_it_is_computed_in():
    src = """
    __co__ void f(int k) {
      mutable int n = k;
      int twice = n * 2;
      int same = n;
      n += 5;
      println(twice, same, n);
    }"""
    code = lower(src).functions[0].host
    mul = ops(code).index("MUL")
    assert code.reg_names[operands(code, mul)[0]] == "twice"
    moves = [operands(code, pc)[:2] for pc, n in enumerate(ops(code)) if n == "MOV"]
    names = [[code.reg_names[r] for r in pair] for pair in moves]
    assert names == [["n", "k"], ["same", "n"]]     # copies of variables only
    assert run(src, "f", [4]) == "8 4 9\n"


def test_compound_assignment_wraps_in_the_declared_type():
    src = """
    __co__ void f() {
      mutable s8 x = 100;
      x += 100;
      println(x, x++, x, ++x);
    }"""
    assert_ops(lower(src).functions[0].host, "ADD", "CVT")
    assert run(src) == "-56 -56 -55 -54\n"


def test_element_compound_assignment_is_one_update():
    code = lower("__co__ void f() { f32 [4] b; b.at(1) += 2.5f; }").functions[0].host
    seq = ops(code)
    assert seq.count("UPDATE") == 1 and "LOAD" not in seq
    assert operands(code, seq.index("UPDATE"))[2] == opcodes.ADD


@pytest.mark.parametrize("expr, text", [
    ("{1, 2}", "{1, 2}"),
    ("b.span", "[2, 3]"),
    ("|b.span|", "6"),
    ("b.span(1)", "3"),
    ("1.5f * 2", "3"),
    ("__to<int>(2.75f)", "2"),
    ("__to<bool>(0)", "false"),
    ("cdiv(7, 2)", "4"),
    ("__min(3, -4)", "-4"),
    ("7 + 3 & 1", "8"),
    ("-7 / 2", "-3"),
    ("-7 % 3", "-1"),
    ('"s", 1, true', "s 1 true"),
])
def test_print_pieces(expr, text):
    src = f"__co__ void f() {{ s32 [2, 3] b; println({expr}); }}"
    assert run(src) == text + "\n"


def test_assert_carries_its_message():
    src = '__co__ void f(int x) { assert(x > 0, "x must be positive"); }'
    code = lower(src).functions[0].host
    assert "assertion failed: x must be positive" in code.strings
    with pytest.raises(KernelFault, match="assertion failed: x must be positive"):
        call(src, "f", 0)


def test_an_assert_message_with_braces_is_printed_verbatim():
    src = '__co__ void f(int x) { assert(x > 0, "x {0} {y} }{ %d"); }'
    assert "ASSERT" in ops(lower(src).functions[0].host)
    with pytest.raises(KernelFault) as e:
        call(src, "f", 0)
    assert str(e.value).splitlines()[0] == \
        "t.co:1:24: runtime error: assertion failed: x {0} {y} }{ %d"


def test_parameters_dims_and_results():
    src = """
    __co__ auto total(global s32 [?] v, s32 [N] w, int k) {
      mutable s32 t = 0;
      foreach i in [v.span(0)] t += v.at(i) * k;
      return t + N;
    }"""
    fn = lower(src).functions[0]
    assert [(p.name, p.kind, p.shape, p.storage) for p in fn.params] == [
        ("v", ParamKind.BUFFER, ["?"], ParamStorage.GLOBAL),
        ("w", ParamKind.BUFFER, ["N"], ParamStorage.DEFAULT),
        ("k", ParamKind.SCALAR, [], ParamStorage.GLOBAL)]
    assert [name for name, _ in fn.dims] == ["N"]
    assert (fn.ret_kind, fn.ret_dtype) == (RetKind.SCALAR, dtypes.S32.code)
    v = np.arange(5, dtype=np.int32)
    assert call(src, "total", v, np.zeros(3, np.int32), 2) == 2 * 10 + 3


def test_returned_future_data_is_copied_out():
    src = """
    __co__ auto tr(s32 [4, 6] a) {
      f = dma.transp<1, 0> a => global;
      return f.data;
    }"""
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    np.testing.assert_array_equal(call(src, "tr", a), a.T)


def test_spans_are_those_of_the_statement():
    module = lower("__co__ void f() {\n  s32 [4] a;\n  a.at(1) = 7;\n}")
    host = module.functions[0].host
    pc = ops(host).index("STORE")
    span = module.spans[host.code[pc * opcodes.WIDTH + opcodes.WIDTH - 1]]
    assert span[1:3] == (3, 3)


def test_named_scalars_name_their_registers():
    host = lower("__co__ void f(int k) { mutable int count = k; println(count); }") \
        .functions[0].host
    assert {"k", "count"} <= set(host.reg_names)


# --------------------------------------------------------------------------- kernels (§6.2-§6.3)

@pytest.mark.parametrize("body, block_size, grid_rank", [
    ("parallel p by 6 { }", 6, 1),                                              # D=1
    ("parallel p by 3 { parallel q by 5 { } }", 5, 1),                          # D=2
    ("parallel p by 3 { parallel q by 4 { parallel r by 32 { } } }", 128, 1),   # D=3
    ("parallel p by 2 : block { parallel q by 8 { } }", 8, 1),                  # D15
    ("parallel p by 2 { parallel q by 64 : thread { } }", 64, 1),               # D15
    ("parallel {a, b} by [2, 3] : block, t by 7 : thread { }", 7, 2),
    ("parallel {a, b, c} by [2, 3, 4] : block { }", 1, 3),
    ("parallel g by 2 : group-4 { }", 256, 1),
    ("parallel p by 1 : block { parallel g by 3 : group { } parallel t by 40 : thread { } }",
     96, 1),
])
def test_block_size_and_grid_rank(body, block_size, grid_rank):
    k = kernel(f"__co__ void f() {{ {body} }}")
    assert (k.block_size, k.grid_rank) == (block_size, grid_rank)


def test_sub_indices_are_row_major_in_lane_order():
    src = "__co__ void f() { parallel {x, y} by [2, 3] { print(x, y, \"\"); } }"
    assert run(src) == "0 0 0 1 0 2 1 0 1 1 1 2 "
    code = kernel(src).code                  # x = tid / 3, y = tid % 3, computed in place
    assert "MOV" not in ops(code) and {"x", "y"} <= set(code.reg_names)


def test_group4_and_group_indices():
    src = """
    __co__ void f() {
      parallel g by 2 : group-4 {
        parallel t by 128 : thread { if (t == 0 || t == 127) print(g, t, ""); }
      }
      parallel {a, b} by [2, 2] : group {
        parallel t by 32 : thread { if (t == 31) print(a, b, ""); }
      }
    }"""
    assert run(src) == "0 0 0 127 1 0 1 127 0 0 0 1 1 0 1 1 "


def test_lanes_beyond_a_nest_are_idle():
    src = """
    __co__ void f() {
      parallel p by 1 : block {
        parallel a by 8 : thread { }
        parallel b by 3 : thread { print(b); }
      }
    }"""
    k = kernel(src)
    assert k.block_size == 8
    assert_ops(k.code, "LT", "IF", "PRINT", "END", "BARRIER")
    lt = ops(k.code).index("LT")
    assert const_regs(k.code)[operands(k.code, lt)[2]] == 3    # tid < 3: b's lanes
    assert run(src) == "012"


def test_blocks_come_from_blockidx_and_compose():
    src = """
    __co__ auto matmul(s32 [M, K] a, s32 [K, N] b) {
      s32 [M, N] c;
      parallel {bm, bn} by [M / 4, N / 4] : block, {r, s} by [4, 4] : thread {
        foreach k in [K]
          c.at(bm # r, bn # s) += a.at(bm # r, k) * b.at(k, bn # s);
      }
      return c;
    }"""
    k = kernel(src)
    assert ops(k.code).count("BLOCKIDX") == 2 and (k.block_size, k.grid_rank) == (16, 2)
    rng = np.random.default_rng(1)
    a = rng.integers(-9, 9, (8, 5), dtype=np.int32)
    b = rng.integers(-9, 9, (5, 12), dtype=np.int32)
    np.testing.assert_array_equal(call(src, "matmul", a, b), a @ b)


def test_host_values_become_launch_bindings():
    src = """
    __co__ void f(global s32 [8] out, int k) {
      int off = k * 2;
      parallel p by 8 { out.at(p) = p + off; }
    }"""
    fn = lower(src).functions[0]
    launch = fn.host.launches[0]
    kcode = fn.kernels[0].code
    assert [kcode.buffers[s].name for s, _ in launch.buffers] == ["out"]
    assert "off" in [kcode.reg_names[r] for r, _ in launch.scalars]
    out = np.zeros(8, np.int32)
    engines.run(Program(lower(src)), "f", out, 5, out=io.StringIO())
    np.testing.assert_array_equal(out, np.arange(8) + 10)


def test_block_size_above_1024_is_rejected():
    with pytest.raises(CompileError, match="must not exceed 1024"):
        lower("__co__ void f() { parallel p by 2 : group-4 { } parallel q by 9 : group-4 { } }")


SCALE_BY_N = """
__co__ auto scale(s32 [N] x, int k) {
  s32 [N] y;
  parallel p by N
    y.at(p) = x.at(p) * k;
  return y;
}"""


def warps_of(src: str, func: str, lanes: int, *args) -> float:
    """The warps of the one block ``func`` launches with ``lanes`` lanes, from the engine's
    step counts: the kernel is straight-line, so each warp runs each of its K instructions
    once with all its lanes active, and host steps run one lane each; hence
    lane-steps - warp-steps = K * (lanes - warps)."""
    module = lower(src)
    kern = module.function(func).kernels[0].code
    assert not {"IF", "LOOP"} & set(ops(kern))
    stats = {}
    engines.run(Program(module), func, *args, out=io.StringIO(), stats=stats)
    return lanes - (stats["lane_steps"] - stats["warp_steps"]) / (len(kern.code) // opcodes.WIDTH)


def test_block_internal_bounds_may_come_from_the_host():
    module = lower(SCALE_BY_N)
    fn = module.functions[0]
    k, launch = fn.kernels[0], fn.host.launches[0]
    assert k.block_size == 0 and launch.block >= 0          # given at launch, in a register
    assert f"grid rank 1, block size r{launch.block} (at launch)" in disassemble(module)
    assert "IF" not in ops(k.code)      # the only nest fills the block: no lane is idle
    x = np.arange(5, dtype=np.int32)
    np.testing.assert_array_equal(call(SCALE_BY_N, "scale", x, 3), x * 3)
    with pytest.raises(KernelFault, match="the parallel bound of 'q' is -3: it should be "
                       "greater than 0."):
        call("__co__ void f(int n) { parallel q by n { } }", "f", -3)


@pytest.mark.parametrize("n, warps", [(5, 1), (32, 1), (33, 2), (100, 4), (1024, 32)])
def test_a_block_sized_at_launch_has_as_many_lanes_as_the_nest(n, warps):
    x = np.arange(n, dtype=np.int32)
    assert warps_of(SCALE_BY_N, "scale", n, x, 2) == warps


def test_a_block_sized_at_launch_over_1024_threads_faults_at_the_launch():
    with pytest.raises(KernelFault) as info:
        call(SCALE_BY_N, "scale", np.zeros(2000, np.int32), 1)
    assert str(info.value).splitlines()[0] == (
        "t.co:4:3: runtime error: Total physical threads per block (thread x group x group-4 "
        "dims) must not exceed 1024.")
    assert str(info.value).splitlines()[-2:] == [
        "  in host code of 'scale'",
        "hint: a parallel level with more instances than a block holds belongs on the grid: "
        "annotate it ': block'"]


def test_block_size_at_launch_does_not_overflow():
    """65536 * 65536 lanes wrap to 0 in 32 bits; the count is capped, not wrapped."""
    src = "__co__ void f(int a, int b) { parallel {p, q} by [a, b] { } }"
    with pytest.raises(KernelFault, match="must not exceed 1024"):
        call(src, "f", 65536, 65536)
    assert call(src, "f", 32, 32) is None


def test_block_and_thread_levels_sized_on_the_host():
    src = """
    __co__ auto f(s32 [N] x, int T) {
      s32 [N] y;
      parallel b by cdiv(N, T) : block, t by T : thread {
        int i = b * T + t;
        if (i < N) y.at(i) = x.at(i) + b * 100;
      }
      return y;
    }"""
    k = kernel(src)
    assert (k.block_size, k.grid_rank) == (0, 1)
    x = np.arange(10, dtype=np.int32)
    blocks = np.array([0] * 4 + [1] * 4 + [2] * 2)
    np.testing.assert_array_equal(call(src, "f", x, 4), x + blocks * 100)
    np.testing.assert_array_equal(call(src, "f", x, 64), x)


def test_a_group4_nest_sized_on_the_host():
    src = """
    __co__ auto f(s32 [G, 128] x) {
      s32 [G, 128] y;
      parallel g by G : group-4 {
        parallel t by 128 : thread { y.at(g, t) = x.at(g, t) + g * 1000; }
      }
      return y;
    }"""
    assert kernel(src).block_size == 0
    x = np.arange(3 * 128, dtype=np.int32).reshape(3, 128)
    np.testing.assert_array_equal(call(src, "f", x), x + np.array([[0], [1000], [2000]]))
    with pytest.raises(KernelFault, match="must not exceed 1024"):
        call(src, "f", np.zeros((9, 128), np.int32))      # 9 warpgroups: 1152 threads


@pytest.mark.parametrize("n, out", [(3, "012 | 01234567"), (12, "01234567891011 | 01234567")])
def test_lanes_beyond_a_nest_in_a_block_sized_at_launch_are_idle(n, out):
    """The block is as large as its largest nest: 8 lanes for n = 3, n lanes for n = 12."""
    src = """
    __co__ void f(int n) {
      parallel p by 1 : block {
        parallel b by n : thread { print(b); }
        print(" | ");
        parallel a by 8 : thread { print(a); }
      }
    }"""
    k = kernel(src)
    assert k.block_size == 0 and ops(k.code).count("IF") >= 2     # both nests may idle lanes
    assert run(src, "f", [n]) == out


def test_block_internal_bounds_computed_in_the_kernel_are_rejected():
    with pytest.raises(CompileError) as info:
        lower("__co__ void f() {\n  parallel p by 2 : block {\n    int n = p + 1;\n"
              "    parallel q by n : thread { }\n  }\n}")
    text = str(info.value)
    assert "t.co:4:19: error: croqvm needs the bounds of block-internal parallel levels " \
           "when the kernel starts; 'n' is computed inside it." in text
    assert "hint: compute the bound before the parallel-by, or use a macro" in text


# --------------------------------------------------------------------------- regions (§7.2)

OUTER = """
__co__ void f() {
  s32 [2, 4] out;
  parallel p by 2 : block {
    shared s32 [4] tile;
    foreach k in [2] {
      tile.at(k) = p * 10 + k;
      println("block", p, "k", k);
      parallel q by 4 : thread {
        out.at(p, q) += tile.at(0) + tile.at(1) + q;
      }
    }
  }
  foreach i in [2] println(out.at(i, 0), out.at(i, 1), out.at(i, 2), out.at(i, 3));
}"""


def test_outer_level_effects_happen_once_per_instance():
    k = kernel(OUTER)
    assert_ops(k.code, "ONCE", "IF", "STORE", "END")
    assert_ops(k.code, "ONCE", "IF", "PRINT", "END")
    # out(p, q) = sum over k of tile(0) + tile(1) + q, tile(k) written at iteration k
    assert run(OUTER) == ("block 0 k 0\nblock 0 k 1\nblock 1 k 0\nblock 1 k 1\n"
                          "1 3 5 7\n31 33 35 37\n")


def test_a7_divergent_branches_run_then_reconverge():
    src = """
    __co__ void diverge() {
      s32 [8] v;
      parallel t by 8 : thread {
        if ((t & 1) == 0) { v.at(t) = t * 10; println("even", t); }
        else { v.at(t) = 0 - t; println("odd", t); }
        println("join", t);
      }
      println(v.at(0), v.at(1), v.at(2), v.at(3), v.at(4), v.at(5), v.at(6), v.at(7));
    }"""
    expect = [f"even {t}" for t in (0, 2, 4, 6)] + [f"odd {t}" for t in (1, 3, 5, 7)] + \
        [f"join {t}" for t in range(8)] + ["0 -1 20 -3 40 -5 60 -7"]
    assert run(src) == "\n".join(expect) + "\n"


def test_group4_outer_level_runs_once_per_warpgroup():
    src = """
    __co__ void f() {
      parallel p by 1 : block {
        parallel g by 2 : group-4 {
          shared s32 [2] s;
          println("g", g);
          s.at(g) = g + 1;
          parallel t by 128 : thread { if (t == 5) println("t", g, s.at(g)); }
        }
      }
    }"""
    code = kernel(src).code
    onces = [operands(code, pc)[:3] for pc, n in enumerate(ops(code)) if n == "ONCE"]
    assert [unit for _, _, unit in onces] == [128, 128]
    assert run(src) == "g 0\nt 0 1\ng 1\nt 1 2\n"


def test_regions_join_and_start_with_barriers():
    k = kernel(OUTER)
    texts = [k.code.colls[operands(k.code, pc)[0]].text
             for pc, name in enumerate(ops(k.code)) if name == "BARRIER"]
    assert texts == ["barrier at start of parallel", "barrier at end of parallel"]
    quiet = kernel("__co__ void f() { parallel p by 2 : block { int x = 1; "
                   "parallel q by 4 : thread { println(q + x); } } }")
    assert ops(quiet.code).count("BARRIER") == 1


def test_inthreads_barrier_and_sync_units():
    src = """
    __co__ void f() {
      parallel p by 1 : block {
        parallel g by 2 : group-4 {
          inthreads (g == 1) { sync.barrier : group-4; }
          sync.shared;
          sync.barrier : group;
          sync.barrier : thread;
        }
      }
    }"""
    code = kernel(src).code
    sites = [code.colls[operands(code, pc)[0]] for pc, n in enumerate(ops(code)) if n == "BARRIER"]
    assert [(s.text, s.unit) for s in sites] == [
        ("sync.barrier : group-4", 128), ("barrier at end of inthreads", 0),
        ("sync.shared", 0), ("sync.barrier : group", 32), ("barrier at end of parallel", 0)]


def test_fences_sync_global_and_async_launches_reach_the_bytecode():
    """What a GPU needs and the interpreters do not (§6.8, §14.2): fences with their level's
    lane count, sync.global, and the async flag of a launch."""
    src = """
    __co__ void f() {
      s32 [4] a;
      parallel.async p by 1 : block {
        parallel g by 1 : group-4, t by 128 : thread {
          sync.fence : block; sync.fence : group-4; sync.fence : group; sync.fence : thread;
        }
      }
      sync.global;
      parallel q by 1 : block { a.at(0) = 1; }
    }"""
    fn = lower(src).functions[0]
    code = fn.kernels[0].code
    assert [operands(code, pc)[0] for pc, n in enumerate(ops(code)) if n == "FENCE"] == \
        [0, 128, 32, 1]
    assert_ops(fn.host, "LAUNCH", "SYNC_GLOBAL", "LAUNCH")
    assert [la.is_async for la in fn.host.launches] == [True, False]
    assert run(src) == ""


# --------------------------------------------------------------------------- lanesets and events (§7.4, §10)

_EVAL = {
    "ADD": lambda a, b: a + b, "SUB": lambda a, b: a - b, "MUL": lambda a, b: a * b,
    "DIV": lambda a, b: int(a / b), "MOD": lambda a, b: a - int(a / b) * b,
    "LT": lambda a, b: a < b, "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b,
    "GE": lambda a, b: a >= b, "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b,
    "AND": lambda a, b: a and b, "OR": lambda a, b: a or b,
}


def members(k, ls_index: int, block=(0, 0, 0)) -> list[int]:
    """The lanes of laneset ``ls_index``, by running its straight-line code per lane."""
    code = k.code
    ls = code.lanesets[ls_index]
    assert k.block_size > 0
    if ls.result == -1:
        return list(range(k.block_size))
    lanes = []
    for lane in range(k.block_size):
        r = {}
        for pc in range(len(ls.code) // opcodes.WIDTH):
            name = opcodes.TABLE[ls.code[pc * opcodes.WIDTH]].name
            a, b, c = ls.code[pc * opcodes.WIDTH + 1: pc * opcodes.WIDTH + 4]
            if name == "LANE":
                r[a] = lane
            elif name == "BLOCKIDX":
                r[a] = block[b]
            elif name == "CONST":
                r[a] = code.consts[b].value
            elif name == "MOV":
                r[a] = r[b]
            elif name == "NOT":
                r[a] = not r[b]
            else:
                r[a] = _EVAL[name](r[b], r[c])
        if r[ls.result]:
            lanes.append(lane)
    return lanes


# Appendix A.8 with its initial credits restored: prints 49.
PIPELINE = APPENDIX["A.8"].replace(
    "// foreach s in [STAGES] trigger empty[s];      <- the missing initial credits",
    "foreach s in [STAGES] trigger empty[s];")


def test_event_arrivals_come_from_the_trigger_lanesets():
    k = kernel(PIPELINE)
    full, empty = k.code.events
    assert (full.name, full.slots, full.count, empty.name, empty.slots) == \
        ("full", 2, -1, "empty", 2)
    assert [members(k, ls) for ls in full.lanesets] == [list(range(128))]
    assert [members(k, ls) for ls in empty.lanesets] == [list(range(128, 256))]
    assert run(PIPELINE) == "49\n"


def test_ready_events_and_fixed_counts():
    k = kernel("__co__ void f() { parallel p by 1 : block { shared event e[3] = ready; "
               "shared event<64> g; parallel t by 64 : thread { trigger g; wait e[1]; } } }")
    e, g = k.code.events
    assert (e.slots, e.ready, g.count) == (3, True, 64)
    wait = ops(k.code).index("WAIT_EVENT")
    assert const_regs(k.code)[operands(k.code, wait)[1]] == 1    # slot e[1]


def test_whole_event_array_acts_on_each_slot():
    k = kernel("__co__ void f() { parallel p by 1 : block { shared event e[3]; "
               "parallel t by 32 : thread { trigger e; } } }")
    consts = const_regs(k.code)
    slots = [consts[operands(k.code, pc)[1]] for pc, n in enumerate(ops(k.code)) if n == "TRIGGER"]
    assert slots == [0, 1, 2]


def test_inthreads_laneset_conjoins_region_and_predicate():
    src = """
    __co__ void f(global s32 [4] out) {
      parallel p by 1 : block {
        parallel a by 64 : thread { }
        parallel q by 40 : thread {
          inthreads (q >= 30) { dma.copy out => shared; }
        }
      }
    }"""
    k = kernel(src)
    coll = k.code.colls[dma_site(k.code)]
    assert (coll.text, coll.unit) == ("dma.copy", 0)
    assert members(k, coll.laneset) == list(range(30, 40))


# --------------------------------------------------------------------------- views and DMA (§8, §9)

VIEWS = """
__co__ auto tiles(s32 [8, 12] a) {
  s32 [8, 12] c;
  parallel {p, q} by [2, 3] : block {
    t = dma.copy a.chunkat(p, q) => shared;
    dma.copy t.data => c.chunkat(p, q);
  }
  return c;
}
__co__ auto sub(s32 [8, 12] a) {
  s32 [2, 3] c;
  dma.copy a.subspan(2, 3).step(3, 4).at(1, 2) => c;
  return c;
}
__co__ auto vf(s32 [8, 12] a) {
  s32 [3, 2] c;
  dma.copy a.view(3, 2).from(4, 5) => c;
  return c;
}
__co__ auto row(s32 [8, 12] a) {
  s32 [1, 12] c;
  parallel r by 8 : block {
    if (r == 5) { dma.copy a.chunkat(r, _) => c; }
  }
  return c;
}
"""


@pytest.mark.parametrize("func, expect", [
    ("tiles", lambda a: a),
    ("sub", lambda a: a[3:5, 8:11]),       # origin (1 * 3, 2 * 4)
    ("vf", lambda a: a[4:7, 5:7]),
    ("row", lambda a: a[5:6, :]),
])
def test_views_select_the_numpy_slice(func, expect):
    a = np.arange(96, dtype=np.int32).reshape(8, 12)
    np.testing.assert_array_equal(call(VIEWS, func, a), expect(a))


def test_static_views_fold_to_constants():
    code = lower(VIEWS).functions[1].host
    view = code.views[code.dmas[0].src]
    consts = const_regs(code)
    assert [consts[r] for r in view.origin + view.extents] == [3, 8, 2, 3]


def test_run_time_extents_are_read_where_a_view_uses_them():
    """Element accesses and sized subspans never need a buffer's extents; chunkat and
    ``.span(k)`` read the ones they use."""
    src = """
    __co__ auto f(s32 [M, N] a) {
      s32 [M, N] c;
      foreach {i, j} in [M, N] c.at(i, j) = a.at(i, j) * 2;
      println(a.span(1));
      with t in 2 {
        h = dma.copy a.chunkat(t, _) => global;
        c.at(0, 0) = h.data.at(1, 1) + 100;
      }
      return c;
    }"""
    code = lower(src).functions[0].host
    dims = [operands(code, pc)[2] for pc, n in enumerate(ops(code)) if n == "DIMOF"]
    assert dims == [1, 0, 1]        # a.span(1); chunkat divides extent 0, keeps extent 1
    a = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = io.StringIO()
    c = engines.run(Program(lower(src)), "f", a, out=out)
    expect = a * 2
    expect[0, 0] = a[1, 1] + 100    # chunk t = 0 of 2 along dimension 0: rows 0-1
    assert out.getvalue() == "3\n"
    np.testing.assert_array_equal(c, expect)


def test_dma_into_storage_owns_a_buffer_of_the_source_shape():
    k = lower(VIEWS).functions[0].kernels[0]
    d = k.code.dmas[0]
    own = k.code.buffers[d.dst_buffer]
    assert (own.name, own.storage, len(own.shape)) == ("t", Storage.SHARED, 2)
    assert d.future >= 0 and dma_site(k.code) >= 0 and d.dst_view == -1


def test_a_dma_owned_buffer_takes_its_shape_registers_and_the_shared_limit():
    """The own buffer is allocated with its shape registers (here [N, N], known at the
    call), and a shared one counts toward the block's shared memory as an ALLOC would."""
    src = """
    __co__ void big(s32 [N, N] a) {
      parallel p by 1 : block {
        t = dma.copy a => shared;
        println(t.data.at(0, 1), t.span(1));
      }
    }"""
    assert run(src, "big", [np.arange(100, dtype=np.int32).reshape(10, 10)]) == "1 10\n"
    with pytest.raises(KernelFault) as e:
        call(src, "big", np.zeros((300, 300), np.int32))
    assert str(e.value).splitlines()[0] == (
        "t.co:4:9: runtime error: allocating 't': 360000 bytes of shared memory per block, "
        "more than the limit of 233472 (228 KiB).")


def test_pad_and_transpose():
    src = """
    __co__ auto pad(s32 [2, 3] a) {
      f = dma.pad<{1, 0}, {0, 2}, {0, 1}, 7> a => global;
      return f.data;
    }"""
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    expect = np.full((3, 7), 7, np.int32)
    expect[1:, 0:6:2] = a                  # lo (1, 0), one gap column after each element
    np.testing.assert_array_equal(call(src, "pad", a), expect)


DOUBLE_BUFFER = """
__co__ auto db(s32 [8, 32] a) {
  s32 [8, 8] c;
  parallel p by 1 : block, {r, s} by [8, 8] : thread {
    with kt in 4 {
      cur = dma.copy.async a.subspan(8, 8).at(0, kt) => shared;
      nxt = dma.any;
      foreach kt(1:) {
        nxt = dma.copy.async a.subspan(8, 8).at(0, kt) => shared;
        wait cur;
        c.at(r, s) += cur.data.at(r, s);
        swap(cur, nxt);
      }
      wait cur;
      c.at(r, s) += cur.data.at(r, s);
    }
  }
  return c;
}"""


def test_double_buffering_waits_at_the_copy_site():
    k = kernel(DOUBLE_BUFFER)
    assert_ops(k.code, "FUT_ANY")
    assert_ops(k.code, "SWAP")
    waits = [operands(k.code, pc)[1] for pc, n in enumerate(ops(k.code)) if n == "WAIT"]
    assert waits and all(w == dma_site(k.code) for w in waits)
    a = np.arange(256, dtype=np.int32).reshape(8, 32)
    expect = sum(a[:, 8 * j:8 * j + 8] for j in range(4))
    np.testing.assert_array_equal(call(DOUBLE_BUFFER, "db", a), expect)


def test_rotate_is_a_chain_of_swaps():
    src = """
    __co__ void f(s32 [4] a) {
      parallel p by 1 : block {
        x = dma.copy a => shared; y = dma.copy a => shared; z = dma.copy a => shared;
        rotate(x, y, z);
      }
    }"""
    code = kernel(src).code
    pairs = [tuple(operands(code, pc)[:2]) for pc, n in enumerate(ops(code)) if n == "SWAP"]
    assert pairs == [(0, 1), (1, 2)]


# --------------------------------------------------------------------------- MMA (§11)

MMA = """
__co__ auto mm(f16 [16, 8] a, f16 [16, 8] b) {
  f32 [16, 16] c;
  parallel p by 1 : block {
    shared f32 [16, 16] sc;
    parallel g by 1 : group {
      acc = mma.fill.f32 0.0f;
      fa = mma.load a;
      mma.row.row acc, fa, b;
      mma.store acc, sc;
    }
    dma.copy sc => c;
  }
  return c;
}"""


def test_mma_fragments_belong_to_their_unit():
    code = kernel(MMA).code
    assert [(f.name, f.unit) for f in code.frags] == [("acc", 32), ("fa", 32), ("b", 32)]
    assert code.frags[0].dtype == dtypes.F32.code
    assert_ops(code, "MMA_LOAD", "MMA_EXEC")      # b is loaded into a hidden fragment first
    assert ops(code).count("MMA_LOAD") == 2
    units = {code.colls[operands(code, pc)[opcodes.BY_NAME[n].operands.index("c?")]].unit
             for pc, n in enumerate(ops(code)) if n.startswith("MMA_")}
    assert units == {32}


def test_mma_row_row_is_a_times_b_transposed():
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 4, (16, 8)).astype(np.float16)
    b = rng.integers(-4, 4, (16, 8)).astype(np.float16)
    expect = a.astype(np.float32) @ b.astype(np.float32).T   # small integers: exact
    np.testing.assert_array_equal(call(MMA, "mm", a, b), expect)


# --------------------------------------------------------------------------- constants

BRANCHES = """
__co__ auto f(s32 [8] x) {
  s32 [8] y;
  parallel t by 8 : thread {
    mutable s32 v = 0;
    if (x.at(t) > 3) v = x.at(t) + 7;
    else v = x.at(t) * 7;
    y.at(t) = v - 7;
  }
  return y;
}"""


def test_a_constant_first_used_in_one_branch_holds_in_every_lane():
    """7 appears in the then-branch first; a CONST there would leave it 0 in the lanes
    that take the else-branch and in the lanes that skipped the then-branch (§7.3)."""
    x = np.array([5, 0, 4, 1, 9, 2, 3, 8], np.int32)
    np.testing.assert_array_equal(call(BRANCHES, "f", x), np.where(x > 3, x + 7, x * 7) - 7)
    code = kernel(BRANCHES).code
    assert 7 in prologue(code) and list(const_regs(code).values()).count(7) == 1


def codes_of(module):
    """(code, instruction words) of every host program, kernel and laneset."""
    for fn in module.functions:
        yield fn.host, fn.host.code
        for k in fn.kernels:
            yield k.code, k.code.code
            yield from ((k.code, ls.code) for ls in k.code.lanesets)


@pytest.mark.parametrize("src", [OUTER, PIPELINE, VIEWS, DOUBLE_BUFFER, MMA, BRANCHES])
def test_each_constant_is_loaded_once_per_code_and_never_written_again(src):
    """Constants sit in a prologue, one CONST per (dtype, value), and a CONST elsewhere
    sets a named variable."""
    module = lower(src)
    for code, words in codes_of(module):
        n = len(prologue(code, words))
        writes = {}
        for pc in range(0, len(words), opcodes.WIDTH):
            op = opcodes.TABLE[words[pc]]
            if op.writes == 0:
                writes.setdefault(words[pc + 1], []).append(pc // opcodes.WIDTH)
        loaded = [(code.regs[words[pc + 1]], code.consts[words[pc + 2]].dtype,
                   repr(code.consts[words[pc + 2]].value))
                  for pc in range(0, n * opcodes.WIDTH, opcodes.WIDTH)]
        assert len(set(loaded)) == len(loaded)                   # one register per constant
        for pc in range(n):                                      # written by its CONST only
            assert writes[words[pc * opcodes.WIDTH + 1]] == [pc]
        later = [pc for pc in range(n, len(words) // opcodes.WIDTH)
                 if opcodes.TABLE[words[pc * opcodes.WIDTH]].name == "CONST"]
        assert all(code.reg_names[words[pc * opcodes.WIDTH + 1]] for pc in later)


def test_a_matmul_kernel_loads_its_tile_size_once():
    src = """
    __co__ auto mm(s32 [32, 32] a, s32 [32, 32] b) {
      s32 [32, 32] c;
      parallel {bm, bn} by [2, 2] : block {
        foreach kt in [2] {
          ta = dma.copy a.subspan(16, 16).at(bm, kt) => shared;
          tb = dma.copy b.subspan(16, 16).at(kt, bn) => shared;
          parallel {tm, tn} by [16, 16] : thread {
            foreach k in [16]
              c.at(bm # tm, bn # tn) += ta.data.at(tm, k) * tb.data.at(k, tn);
          }
        }
      }
      return c;
    }"""
    code = kernel(src).code
    assert [v for v in const_regs(code).values() if v == 16] == [16]
    assert prologue(code).count(16) == 1
    a = np.arange(1024, dtype=np.int32).reshape(32, 32) % 7
    b = np.arange(1024, dtype=np.int32).reshape(32, 32) % 5
    np.testing.assert_array_equal(call(src, "mm", a, b), a @ b)


def test_prologue_carries_the_span_of_the_function_and_the_kernel():
    module = lower("__co__ void f() {\n  parallel p by 4 {\n    println(p + 9);\n  }\n}")
    fn = module.functions[0]
    k = fn.kernels[0]
    for code, span in [(fn.host, fn.span), (k.code, k.span)]:
        n = len(prologue(code))
        assert n and {code.code[pc * opcodes.WIDTH + opcodes.WIDTH - 1] for pc in range(n)} \
            == {span}
    assert module.spans[k.span][1:3] == (2, 3)


LANESET = """
__co__ auto f(s32 [4] a) {
  s32 [4] out;
  parallel p by 1 : block {
    parallel b by 64 : thread { }
    parallel q by 40 : thread {
      inthreads (q >= 30) {
        t = dma.copy a => shared;
        if (q < 34) out.at(q - 30) = t.data.at(q - 30) * 30;
      }
    }
  }
  return out;
}"""


def test_laneset_code_loads_its_own_constants():
    """A laneset runs in a register file of its own when the block starts, so the kernel's
    prologue does not reach it: it loads 40 (q's lanes) and 30 itself."""
    k = kernel(LANESET)
    ls = k.code.lanesets[k.code.colls[dma_site(k.code)].laneset]
    assert sorted(prologue(k.code, ls.code)) == [30, 40]
    kernel_regs = set(const_regs(k.code))
    lane_regs = {ls.code[pc + 1] for pc in range(0, len(ls.code), opcodes.WIDTH)}
    assert not kernel_regs & lane_regs
    assert members(k, k.code.colls[dma_site(k.code)].laneset) == list(range(30, 40))
    # a wrong laneset (every lane of q, say) would make the copy a divergent collective
    np.testing.assert_array_equal(call(LANESET, "f", np.arange(1, 5, dtype=np.int32)),
                                  np.arange(1, 5) * 30)


# --------------------------------------------------------------------------- errors

def test_unsupported_constructs_are_reported_at_the_construct():
    with pytest.raises(CompileError) as info:
        lower("__co__ void f(global s32 [4] a) {\n  g = dma.copy a => global;\n"
              "  parallel p by 4 { println(g.data.at(p)); }\n}")
    assert str(info.value).startswith(
        "t.co:3:29: error: not supported by croqvm yet: using the host future 'g' inside a "
        "parallel-by.")


def test_a_shared_future_filled_by_two_sets_of_lanes_is_refused():
    # §9.5.6: one generation of its completion event would need the lanes of both copies
    with pytest.raises(CompileError) as info:
        lower("__co__ void f(s32 [128] a) {\n  parallel b by 1 : block {\n"
              "    shared s32 [128] s;\n    parallel p by 2 : group-4 {\n"
              "      x = dma.any;\n"
              "      inthreads.async (p == 0) { x = dma.copy.async a => s; }\n"
              "      inthreads.async (p == 1) { x = dma.copy.async a => s; wait x; }\n"
              "    }\n  }\n}")
    assert str(info.value).startswith(
        "t.co:7:34: error: not supported by croqvm yet: copies into the shared future 'x' by "
        "different sets of lanes.")


def test_the_data_of_a_shared_future_is_refused_outside_the_branch_that_fills_it():
    src = ("__co__ void f(s32 [128] a, global s32 [128] o) {\n  parallel b by 1 : block {\n"
           "    parallel p by 2 : group-4, t by 128 : thread {\n      x = dma.any;\n"
           "      inthreads.async (p == 0) { x = dma.copy.async a => shared; READ }\n"
           "      inthreads.async (p == 1) { wait x; }\n    }\n  }\n}")
    lower(src.replace("READ", "wait x; o.at(t) = x.data.at(t);"))     # the issuers may
    with pytest.raises(CompileError) as info:
        lower(src.replace("READ", "").replace("wait x; }", "wait x; o.at(t) = x.data.at(t); }"))
    assert str(info.value).startswith(
        "t.co:6:52: error: not supported by croqvm yet: the data of the shared future 'x' "
        "outside the 'inthreads' branch that fills it (read its destination buffer).")


def test_internal_failures_become_diagnostics():
    span = Span("t.co", 1, 1, 1, 5)
    name = ast.Name("x", span)          # never annotated by a checker
    fn = ast.Function(ast.TypeRef("void", span), None, "f", [],
                      ast.Block([ast.Print(True, [name], span)], span), span)
    _, diagnostics = lower_program(ast.Program([fn]), [SourceFile("t.co", "text")])
    [d] = diagnostics
    assert (str(d.span), d.is_internal) == ("t.co:1:1", True)
    assert d.message.startswith("internal error: ")


def test_folded_values_are_the_values_the_code_computes():
    """A bf16 or tf32 constant used as a bound or an index is rounded as at run time."""
    src = """
    __co__ void f(global s32 [1] cnt, global s32 [300] a) {
      x = __to<bf16>(257.0f);
      n = __to<s32>(x);
      parallel p by n  cnt.at(0) += 1;
      a.at(n) = 9;
      m = __to<s32>(__to<tf32>(2049.0f));
      println(n, m);
    }"""
    cnt, a = np.zeros(1, np.int32), np.zeros(300, np.int32)
    assert run(src, "f", (cnt, a)) == "256 2048\n"
    assert cnt[0] == 256 and a[256] == 9 and a[257] == 0


def test_a_shift_count_is_checked_before_any_conversion():
    src = "__co__ int f(s64 n) { return 1 << n; }"
    assert call(src, "f", 31) == -2 ** 31
    with pytest.raises(KernelFault, match=r"shift count 4294967297 out of range for 's32'\."):
        call(src, "f", 2 ** 32 + 1)


def test_registers_over_the_limit_are_a_source_error_at_the_function(monkeypatch):
    import croqvm.bytecode.lower as lowering
    monkeypatch.setattr(lowering, "MAX_REGISTERS", 8)
    src = "__co__ void f() {\n  mutable int x = 0;\n" + "  x = x + 1;\n" * 20 + "}\n"
    _, diags, _ = croqvm.check(src, "t.co")
    [d] = diags
    assert (str(d.span), d.message.split(" needs ")[0]) == ("t.co:1:13", "the host code of 'f'")
    assert d.message.endswith("registers, more than the limit of 8.")
    with pytest.raises(CompileError):
        croqvm.compile(src, "t.co")
