"""Calling functions (LANGUAGE.md §14.3-§14.4, §15.3): argument checks with the exact
§14.3.2 messages, copy-back, results, poison mode, the step limit, schedules."""
import io

import numpy as np
import pytest

import bytecode_builders as B
from asm import Asm, P, function, kernel_module, run
from croqvm.bytecode.module import (Access, BaseKind, BufferDecl, Param, ParamKind, ParamStorage,
                                    Storage)
from croqvm.bytecode.verify import verify
from croqvm.core.errors import ArgumentError, KernelFault
from croqvm.running.program import Program

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine

F16, F32, S32, BF16 = 9, 11, 3, 10


def matmul_like():
    """'matmul'(f16 [M, K] lhs, f16 [K, N] rhs, global f32 [64, N] out, f32 alpha)."""
    a = Asm()
    host = a.code("RET", buffers=[BufferDecl("lhs", Storage.GLOBAL, F16, [], param=0),
                                  BufferDecl("rhs", Storage.GLOBAL, F16, [], param=1),
                                  BufferDecl("out", Storage.GLOBAL, F32, [], param=2)],
                  regs="f32 s32 s32 s32")
    params = [Param("lhs", ParamKind.BUFFER, F16, ["M", "K"], ParamStorage.GLOBAL, 0),
              Param("rhs", ParamKind.BUFFER, F16, ["K", "N"], ParamStorage.GLOBAL, 1),
              Param("out", ParamKind.BUFFER, F32, [64, "N"], ParamStorage.GLOBAL, 2),
              Param("alpha", ParamKind.SCALAR, F32, [], slot=0)]
    fn = function("matmul", host, params=params, dims=[("M", 1), ("K", 2), ("N", 3)])
    return a.module(fn)


def f16(*shape):
    return np.zeros(shape, np.float16)


GOOD = [f16(64, 256), f16(256, 32), np.zeros((64, 32), np.float32), 1.5]


@pytest.mark.parametrize("change, message", [
    ({1: f16(128, 32)}, "the 2nd parameter ('rhs', dim: 0) is 128 but symbolic dimension "
                        "'K' is 256 (bound by the 1st parameter ('lhs', dim: 1))."),
    ({2: np.zeros((32, 32), np.float32)},
     "shape inconsistent on the 3rd parameter ('out', dim: 0): expect: 64, but got 32."),
    ({0: f16(64, 256, 1)}, "the 1st parameter ('lhs') expects rank 2 but got rank 3."),
    ({0: np.zeros((64, 256), np.float32)},
     "the 1st parameter ('lhs') expects dtype float16 but got float32."),
    ({0: [[1.0]]}, "the 1st parameter ('lhs') expects a numpy array but got list."),
    ({3: "x"}, "the 4th parameter ('alpha') expects a number (f32) but got str."),
])
def test_argument_errors(change, message):
    args = [change.get(i, x) for i, x in enumerate(GOOD)]
    with pytest.raises(ArgumentError) as e:
        engines.run(Program(matmul_like()), "matmul", *args)
    assert str(e.value) == message


def test_argument_count():
    with pytest.raises(ArgumentError) as e:
        engines.run(Program(matmul_like()), "matmul", *GOOD[:3])
    assert str(e.value) == "'matmul' takes 4 arguments but got 3."


def test_good_arguments_bind():
    assert engines.run(Program(matmul_like()), "matmul", *GOOD) is None


def scale_kernel(dtype=F32, storage="global"):
    """x[lane] := x[lane] * alpha, for 8 lanes; returns nothing."""
    a = Asm()
    k = a.code("LANE r0\nLOAD r1 a0\nMUL r1 r1 r2\nSTORE a0 r1", regs="s32 f32 f32",
               buffers=[BufferDecl("x", Storage.GLOBAL, dtype, [])],
               accesses=[Access(BaseKind.BUF, 0, -1, [0], "x")])
    storage = ParamStorage[storage.upper()]
    return kernel_module(a, k, 8, params=[Param("x", ParamKind.BUFFER, dtype, [8], storage, 0),
                                          Param("alpha", ParamKind.SCALAR, F32, [], slot=1)],
                         bind=[(0, 0)], scalars=[(2, 1)], regs="f32",
                         buffers=[BufferDecl("x", Storage.GLOBAL, dtype, [], param=0)])


def test_global_parameters_are_copied_back():
    x = np.arange(8, dtype=np.float32)
    run(scale_kernel(), args=[x, 0.5])
    assert np.array_equal(x, np.arange(8) * 0.5)


def test_other_parameters_are_not_copied_back():
    x = np.arange(8, dtype=np.float32)
    run(scale_kernel(storage="default"), args=[x, 0.5])
    assert np.array_equal(x, np.arange(8))


def test_bf16_parameters_round_on_entry_and_return_as_float32():
    x = np.full(8, 1 + 2 ** -8 + 2 ** -9, np.float32)   # rounds up to 1 + 2^-7 in bf16
    run(scale_kernel(BF16), args=[x, 1.0])
    assert x.dtype == np.float32 and np.all(x == 1 + 2 ** -7)


def returning(kind):
    """r = f16 [3] zeros; r[1] = 2.5; return r[1] (scalar) or r (buffer)."""
    a = Asm()
    host = a.code(f"CONST r0 k0\nCONST r1 k1\nCONST r2 k2\nALLOC b0\nSTORE a0 r1\n"
                  f"{'RET_VAL r1' if kind == 'scalar' else 'RET_BUF b0'}",
                  regs="s32 f16 s32", consts=[("s32", 3), ("f16", 2.5), ("s32", 1)],
                  buffers=[BufferDecl("r", Storage.GLOBAL, F16, [0])],
                  accesses=[Access(BaseKind.BUF, 0, -1, [2], "r")])
    return a.module(function("f", host, ret=kind, ret_dtype=F16))


def test_returning_a_scalar_gives_a_python_float():
    got = run(returning("scalar"))[0]
    assert type(got) is float and got == 2.5


def test_returning_a_buffer_gives_a_new_array():
    got = run(returning("buffer"))[0]
    assert got.dtype == np.float16 and got.tolist() == [0.0, 2.5, 0.0]


def test_returning_a_buffer_whose_allocation_was_skipped_is_a_fault():
    # the verifier takes it (an ALLOC of the buffer exists); the engines had no instance
    a = Asm()
    host = a.code("CONST r0 k0\nCONST r1 k1\nIF r1 4\nALLOC b0\nEND\nRET_BUF b0",
                  regs="s32 bool", consts=[("s32", 3), ("bool", 0)],
                  buffers=[BufferDecl("r", Storage.GLOBAL, F16, [0])])
    with pytest.raises(KernelFault) as e:
        run(a.module(function("f", host, ret="buffer", ret_dtype=F16)))
    assert str(e.value).splitlines()[0] == ("code.asm:6:1: runtime error: buffer 'r' is used "
                                            "before its declaration executed.")


def poison_program(store_first):
    a = Asm()
    src = a.source("p.co", "__co__ void f() {\n  s32 [4, 5] out;\n  println(out.at(3, 4));\n}\n")
    decl = a.find(src, "s32 [4, 5] out")
    host = a.code(f"""
        CONST r0 k0
        CONST r1 k1
        ALLOC b0
        CONST r2 k2
        CONST r3 k3
        {"STORE a0 r3" if store_first else ""}
        LOAD r4 a0 @s{a.find(src, "out.at(3, 4)")}
        PRINT p0
    """, regs="s32 s32 s32 s32 s32", consts=[("s32", 4), ("s32", 5), ("s32", 3), ("s32", 4)],
        buffers=[BufferDecl("out", Storage.GLOBAL, S32, [0, 1], span=decl)],
        accesses=[Access(BaseKind.BUF, 0, -1, [2, 3], "out")], prints=[P("r4")])
    return a.module(function("f", host))


def test_buffers_start_zeroed_and_poison_mode_reads_the_zeros():
    # An ALLOC is a declaration, which zero-fills its buffer (LANGUAGE.md §3.2.4): what
    # poison mode reports are the elements nothing gave a value (tests/test_initcheck.py).
    assert run(poison_program(False))[1] == "0\n"
    assert run(poison_program(False), poison=True)[1] == "0\n"
    assert run(poison_program(True), poison=True)[1] == "4\n"


def test_out_of_range_access_names_the_index_and_dimension():
    a = Asm()
    host = a.code("CONST r0 k0\nALLOC b0\nCONST r1 k1\nCONST r2 k2\nLOAD r3 a0",
                  regs="s32 s32 s32 s32", consts=[("s32", 4), ("s32", 5), ("s32", 2)],
                  buffers=[BufferDecl("a", Storage.GLOBAL, S32, [0, 0])],
                  accesses=[Access(BaseKind.BUF, 0, -1, [1, 2], "a")])
    with pytest.raises(KernelFault) as e:
        run(a.module(function("f", host)))
    assert str(e.value).splitlines()[0] == ("code.asm:5:1: runtime error: out-of-range access "
                                            "a.at(5, 2): index 5 of dimension 0 is not in [0, 4).")


def spin_kernel():
    a = Asm()
    k = a.code("LOOP\nNOP\nEND", regs="")
    return kernel_module(a, k, 64)


def test_step_limit():
    with pytest.raises(KernelFault) as e:
        run(spin_kernel(), max_steps=1000)
    text = str(e.value).splitlines()
    assert text[0] == ("code.asm:3:1: runtime error: exceeded the step limit of 1000 "
                       "warp-instructions")   # the 1001st warp-instruction: an END
    assert text[-1].endswith("block (0), lane 0 (warp 0, lane 0)")


def test_division_by_zero_in_a_kernel_names_block_and_lane():
    a = Asm()
    k = a.code("LANE r0\nCONST r1 k0\nSUB r1 r0 r1\nDIV r2 r0 r1", regs="s32 s32 s32",
               consts=[("s32", 37)])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 64, grid=(2, 1)))
    assert str(e.value) == "\n".join([
        "code.asm:4:1: runtime error: integer division by zero.",
        "    4 | DIV r2 r0 r1",
        "      | ^~~~~~~~~~~~",
        "  in kernel launched at host.asm:4:1, block (0, 0), lane 37 (warp 1, lane 5)"])


def racy_kernel():
    """Every lane of two warps appends its lane to a shared log in turn; the printed
    order is the schedule."""
    a = Asm()
    k = a.code("LANE r0\nPRINT p0\nPRINT p0", regs="s32", prints=[P("r0")])
    return kernel_module(a, k, 64)


def test_random_schedule_is_deterministic_per_seed():
    outs = {seed: run(racy_kernel(), schedule="random", seed=seed)[1] for seed in (1, 2, 3)}
    assert run(racy_kernel(), schedule="random", seed=1)[1] == outs[1]
    assert len(set(outs.values())) > 1
    for out in outs.values():   # every lane prints twice, its two prints in order
        assert sorted(out.split()) == sorted([str(i) for i in range(64)] * 2)


def test_default_schedule_runs_each_warp_to_completion():
    out = run(racy_kernel())[1].split()
    assert out == [str(i) for i in range(32)] * 2 + [str(i) for i in range(32, 64)] * 2


def test_unknown_schedule():
    with pytest.raises(ArgumentError) as e:
        run(racy_kernel(), schedule="fifo")
    assert str(e.value) == "unknown schedule 'fifo': use 'rr' or 'random'."


def test_assertion_failure():
    a = Asm()
    k = a.code("LANE r0\nCONST r1 k0\nLT r2 r0 r1\nASSERT r2 s0", regs="s32 s32 bool",
               consts=[("s32", 40)], strings=["assertion failed: lane too large"])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 64))
    assert str(e.value).splitlines()[0] == \
        "code.asm:4:1: runtime error: assertion failed: lane too large"
    assert "lane 40 (warp 1, lane 8)" in str(e.value)


def test_a_failed_check_shows_the_values_of_its_lowest_failing_lane():
    a = Asm()
    k = a.code("LANE r0\nCONST r1 k0\nLT r2 r0 r1\nCONST r3 k1\nASSERT_FMT r2 p0",
               regs="s32 s32 bool f32",
               consts=[("s32", 40), ("f32", float(np.float32(1 / 3)))],
               strings=["lane ", " >= ", ", ok ", ", x "],
               prints=[P("s0 r0 s1 r1 s2 r2 s3 r3", newline=False)])
    module = kernel_module(a, k, 64)
    verify(module)
    with pytest.raises(KernelFault) as e:
        run(module)
    assert str(e.value).splitlines()[0] == \
        "code.asm:5:1: runtime error: lane 40 >= 40, ok false, x 0.333333"
    assert "lane 40 (warp 1, lane 8)" in str(e.value)


def test_an_assert_message_is_never_read_as_a_format():
    a = Asm()
    k = a.code("LANE r0\nCONST r1 k0\nLT r2 r0 r1\nASSERT r2 s0", regs="s32 s32 bool",
               consts=[("s32", 3)], strings=["assertion failed: {0} {r0} }{ %d"])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 32))
    assert str(e.value).splitlines()[0] == \
        "code.asm:4:1: runtime error: assertion failed: {0} {r0} }{ %d"


def test_print_output_goes_to_the_given_stream():
    out = io.StringIO()
    engines.run(Program(racy_kernel()), "f", out=out)
    assert out.getvalue().count("\n") == 128


def test_a_read_only_array_cannot_receive_results():
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    with pytest.raises(ArgumentError) as e:
        run(scale_kernel(), args=[x, 0.5])
    assert str(e.value) == ("the 1st parameter ('x') is 'global' and receives the results, "
                            "but the array is read-only.")


def test_unknown_function_and_bad_step_limit():
    with pytest.raises(ArgumentError) as e:
        run(racy_kernel(), name="g")
    assert str(e.value) == "no function named 'g' in this module."
    with pytest.raises(ArgumentError) as e:
        run(racy_kernel(), max_steps=0)
    assert str(e.value) == "the step limit must be an integer from 1 to 2^63 - 1, not 0."


def test_buffer_array_subscript_out_of_range():
    a = Asm()
    host = a.code("CONST r0 k0\nALLOC b0\nCONST r1 k1\nSTORE a0 r1\nCONST r1 k0\nLOAD r2 a0",
                  regs="s32 s32 s32", consts=[("s32", 2), ("s32", 1)],
                  buffers=[BufferDecl("sa", Storage.GLOBAL, S32, [0], array=[2])],
                  accesses=[Access(BaseKind.BUF, 0, 1, [1], "sa[st]")])
    with pytest.raises(KernelFault) as e:
        run(a.module(function("f", host)))
    assert str(e.value).splitlines()[0] == (
        "code.asm:6:1: runtime error: index 2 is out of range for buffer array 'sa' [0, 2).")


# --------------------------------------------------------------------------- block size at launch

def lanes_kernel(block: int):
    """Every lane prints its index; the launch gives the block size ``block``."""
    a = Asm()
    k = a.code("LANE r0\nPRINT p0", regs="s32", prints=[P("r0", newline=False)])
    return kernel_module(a, k, block, at_launch=True)


def test_a_block_size_given_at_launch_makes_that_many_lanes():
    out = run(lanes_kernel(40))[1]
    assert out == "".join(str(i) for i in range(40))


def test_a_block_size_given_at_launch_is_checked_at_the_launch():
    with pytest.raises(KernelFault) as e:
        run(lanes_kernel(1025))
    assert str(e.value) == "\n".join([
        "host.asm:4:1: runtime error: Total physical threads per block (thread x group x "
        "group-4 dims) must not exceed 1024.",
        "    4 | LAUNCH l0",
        "      | ^~~~~~~~~",
        "  in host code of 'f'",
        "hint: a parallel level with more instances than a block holds belongs on the grid: "
        "annotate it ': block'"])
    for size in (0, -3):
        with pytest.raises(KernelFault) as e:
            run(lanes_kernel(size))
        assert str(e.value).splitlines()[0] == (
            f"host.asm:4:1: runtime error: the block size of this launch is {size}: it "
            "should be greater than 0.")


@pytest.mark.parametrize("build", [B.scale, B.scale_sized_at_launch])
def test_a_static_block_size_and_one_given_at_launch_run_alike(build):
    x = np.arange(40, dtype=np.int32)
    result, out = run(build(), "scale", [x.copy(), 3])
    np.testing.assert_array_equal(result, x * 3)
    assert out == "block done:0\nblock done:1\n"


# --------------------------------------------------------------------------- impossible allocations

def test_a_buffer_no_memory_can_hold_is_a_runtime_error_at_its_alloc():
    a = Asm()
    host = a.code("CONST r0 k0\nCONST r1 k1\nALLOC b0\nRET", regs="s32 s32",
                  consts=[("s32", 1 << 30), ("s32", 1 << 30)],
                  buffers=[BufferDecl("x", Storage.GLOBAL, S32, [0, 1])])
    module = a.module(function("f", host))
    verify(module)          # well-formed: only running it shows the extents are absurd
    with pytest.raises(KernelFault) as e:
        run(module)
    assert str(e.value) == "\n".join([
        "code.asm:3:1: runtime error: can not allocate buffer 'x' of 1073741824 x 1073741824 "
        "elements.",
        "    3 | ALLOC b0",
        "      | ^~~~~~~~",
        "  in host code of 'f'"])


def test_the_first_lane_whose_local_buffer_can_not_be_allocated_is_reported():
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        LT r2 r0 r1
        CONST r3 k1
        CONST r4 k2
        SELECT r5 r2 r3 r4      # extent 1 for lanes 0-2, 2**30 from lane 3 on
        ALLOC b0
    """, regs="s32 s32 bool s32 s32 s32", consts=[("s32", 3), ("s32", 1), ("s32", 1 << 30)],
        buffers=[BufferDecl("t", Storage.LOCAL, S32, [5, 5])])
    module = kernel_module(a, k, 8)
    verify(module)
    with pytest.raises(KernelFault) as e:
        run(module)
    lines = str(e.value).splitlines()
    assert lines[0] == ("code.asm:8:9: runtime error: can not allocate buffer 't' of "
                        "1073741824 x 1073741824 elements.")
    assert lines[-1] == "  in kernel launched at host.asm:3:1, block (0), lane 3 (warp 0, lane 3)"
