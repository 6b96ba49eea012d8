"""Functions and the host (LANGUAGE.md §6.10, §6.11, §14.3.3): ``__co_device__``
functions called with ``call`` (inlined), inline assembly, and buffer parameters passed by
reference. Results are compared with values computed by hand or by numpy."""
import io
import shutil
import textwrap

import numpy as np
import pytest

import croqvm
import engines
from croqvm.core.errors import KernelFault
from croqvm.lang.frontend import front_end

pytestmark = pytest.mark.usefixtures("engine")   # every run below goes to each engine


def compile_(source: str):
    return croqvm.compile(textwrap.dedent(source).lstrip("\n"), "p.co")


def errors(source: str) -> list[str]:
    _, diags, _ = front_end(textwrap.dedent(source).lstrip("\n"), "p.co")
    return [f"{d.span.line}:{d.span.col}: {d.message}" + (f" | {d.hint}" if d.hint else "")
            for d in diags if d.is_error]


# --------------------------------------------------------------------------- call


POLY = """
    __co_device__ f32 poly(f32 x, s32 k) {
      mutable f32 acc = 0.0f;
      foreach i in [k]
        acc = acc * x + 1.0f;
      return acc;
    }
    __co_device__ void scale_row(f32 [R, C] m, s32 r, f32 factor) {
      foreach c in [C]
        m.at(r, c) = m.at(r, c) * factor;
    }
    __co__ f32 [8] run(f32 [8] xs, global f32 [4, 3] m) {
      f32 [8] out;
      parallel t by 8 {
        out.at(t) = call poly(xs.at(t), t);
      }
      parallel r by 4 : block {
        call scale_row(m, r, __to<f32>(r + 1));
      }
      return out;
    }
"""


def test_a_call_runs_the_callee_per_thread_with_scalars_by_value_and_buffers_by_name():
    """poly(x, k) = 1 + x + ... + x^(k-1) (Horner, in f32); scale_row writes the caller's
    buffer through its parameter, whose symbolic extents come from the argument."""
    xs = np.linspace(-1.5, 2.0, 8).astype(np.float32)
    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    want_m = m * np.arange(1, 5, dtype=np.float32)[:, None]
    want = []
    for k, x in enumerate(xs):
        acc = np.float32(0)
        for _ in range(k):
            acc = np.float32(acc * x + np.float32(1))
        want.append(acc)
    got = engines.run(compile_(POLY), "run", xs, m)
    assert got.tobytes() == np.array(want, np.float32).tobytes()
    assert (m == want_m).all()


def test_returns_leave_the_callee_lane_by_lane():
    """An early return in a branch skips the rest of the callee in the lanes that took
    it; the other lanes of the warp go on (§7.3)."""
    prog = compile_("""
        __co_device__ s32 classify(s32 v) {
          if (v < 3) {
            if (v == 0) return -1;
            return 10 + v;
          }
          mutable s32 r = v * v;
          if (v % 2 == 0) return r;
          r = r + 1000;
          return r;
        }
        __co__ s32 [8] f() {
          s32 [8] out;
          parallel t by 8
            out.at(t) = call classify(t);
          return out;
        }""")
    assert engines.run(prog, "f").tolist() == [-1, 11, 12, 1009, 16, 1025, 36, 1049]


def test_calls_nest_and_a_void_call_is_a_statement():
    prog = compile_("""
        __co_device__ s32 twice(s32 v) { return 2 * v; }
        __co_device__ void put(s32 [4] b, s32 i) {
          s32 v = call twice(i);
          b.at(i) = v + 1;
        }
        __co__ s32 [4] f() {
          s32 [4] out;
          parallel t by 4 {
            local s32 [4] mine;
            call put(mine, t);
            out.at(t) = mine.at(t);
          }
          return out;
        }""")
    assert engines.run(prog, "f").tolist() == [1, 3, 5, 7]


def test_a_fault_in_a_callee_names_its_line_and_every_call_around_it():
    prog = compile_("""
        __co_device__ s32 quot(s32 a, s32 b) {
          return a / b;
        }
        __co_device__ void fill(s32 [4] out, s32 i) {
          out.at(i) = call quot(12, i - 1);
        }
        __co__ void f() {
          s32 [4] out;
          parallel t by 4 : block
            call fill(out, t);
        }""")
    with pytest.raises(KernelFault) as e:
        engines.run(prog, "f", out=io.StringIO())
    assert str(e.value).splitlines() == [
        "p.co:2:3: runtime error: integer division by zero.",
        "    2 |   return a / b;",
        "      |   ^~~~~~~~~~~~",
        "  in the call at p.co:5:15",
        "  in the call at p.co:10:5",
        "  in kernel launched at p.co:9:3, block (1), lane 0 (warp 0, lane 0)"]


CALL_ERRORS = [
    ("""
     __co_device__ s32 a(s32 n) { return call b(n); }
     __co_device__ s32 b(s32 n) { mutable s32 x = call a(n); return x; }
     """, ["2:51: recursive call of 'a' (a -> b -> a): a '__co_device__' function is inlined "
           "where it is called and can not call itself. | write the recursion as a loop"]),
    ("""
     __co_device__ s32 sq(s32 n) { return n * n; }
     __co__ void f(s32 [8] y) {
       s32 z = call sq(1);
       parallel p by 2 {
         call sq(1, 2);
         call nope(1);
         call f(y);
         mutable s32 q = call sq(p) + 1;
         call sq<4>(p);
       }
     }
     """, ["3:11: unable to call kernel function outside the parallel-by block(s). | a "
           "'__co_device__' function runs on a thread: call it inside a 'parallel'",
           "5:5: 'sq' takes 1 argument(s) but got 2. | 'sq' is declared at line 1",
           "7:10: 'f' is a '__co__' function and can not be called: Croqtile functions can "
           "not call each other. | write the shared code as a '__co_device__' function",
           "8:21: 'call' can not be part of an expression. | assign its result to a "
           "variable first: 'mutable x = call f(...);'",
           "9:13: 'sq' is a '__co_device__' function and takes no template arguments."]),
    ("""
     __co_device__ void g(f32 [4] x, bool b) { }
     __co__ void f(f32 [8] y, s32 [4] z) {
       parallel p by 2 {
         call g(y, true);
         call g(z, true);
         call g(p, 1);
       }
     }
     """, ["4:12: (1st) argument of 'g' has 8 in dimension 0 but parameter 'x' has 4. | "
           "'g' is declared at line 1",
           "5:12: (1st) argument of 'g' has element type 's32' but parameter 'x' is 'f32'. "
           "| 'g' is declared at line 1",
           "6:12: (1st) argument of 'g' must be a buffer of type 'f32' but got "
           "'int->[0,2]'. | parameter 'x' is a buffer: pass a buffer's name",
           "6:15: can not convert 's32' to 'bool' implicitly. | write __to<bool>(...) for "
           "an explicit conversion"]),
    ("""
     __co_device__ auto h(s32 v) {
       parallel q by 2 { }
       s32 [4] tmp;
       foreach i in [4] { if (i > v) return i; }
       return 0;
     }
     """, ["1:15: a '__co_device__' function returns 'void' or a scalar of a written type. "
           "| write its result type, e.g. 'f32', or fill a buffer parameter",
           "2:3: 'parallel' can not be used in a '__co_device__' function: it runs on the "
           "one thread that calls it. | move it into the '__co__' function around the "
           "'call'",
           "3:3: a '__co_device__' function can only declare 'local' buffers. | write "
           "'local' before the buffer's type",
           "4:33: croqvm does not support 'return' inside a loop of a '__co_device__' "
           "function. | keep the result in a 'mutable' variable, 'break', and return it "
           "after the loop"]),
    ("""
     __co_device__ void g(f32 [16] x) { }
     __co__ void f(f32 [64] input) {
       parallel p by 4 {
         f = dma.copy input.chunkat(p) => local;
         call g(f.data);
       }
     }
     """, ["5:12: croqvm does not pass a future's data ('.data') to a function yet. | copy it "
           "into a named buffer ('dma.copy ... => buf;') and pass 'buf'"]),
]


@pytest.mark.parametrize("source, want", CALL_ERRORS)
def test_call_errors(source, want):
    assert errors(source) == want


EXTERN = """
    __co__ s32 [8] f(s32 go) {
      s32 [8] y;
      parallel p by 8 {
        local f32 [4] t;
        if (go == 1) call lib::fill<4, lib::K>(t, p);
        y.at(p) = p * 2;
      }
      return y;
    }
"""


def test_a_function_defined_in_no_file_is_a_warning_and_faults_only_where_reached():
    """§6.10.6: the call is left to the C++ compiler; the CPU has no code for it."""
    _, diags, _ = front_end(textwrap.dedent(EXTERN).lstrip("\n"), "p.co")
    assert [(d.span.line, d.span.col, d.message) for d in diags] == [
        (5, 23, "function 'lib::fill' is not defined in this file: the call is left to the "
                "C++ compiler, and running it on the CPU is a runtime error.")]
    prog = compile_(EXTERN)
    assert engines.run(prog, "f", 0).tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    want = ["p.co:5:18: runtime error: 'lib::fill' is defined in no file of this program: "
            "croqvm has no code to run for it.",
            "  in kernel launched at p.co:3:3, block (0), lane 0 (warp 0, lane 0)",
            "hint: define it in the file, as a '__co_device__' or a C++ '__device__' "
            "function"]
    with pytest.raises(KernelFault) as e:
        engines.run(prog, "f", 1)
    lines = str(e.value).splitlines()
    assert [lines[0]] + lines[3:] == want


def test_a_function_defined_in_no_file_reaches_nvcc_and_faults_on_cuda_cpu():
    from croqvm.cuda.emit import emit
    text = emit(compile_(EXTERN).module, arch="sm_80").text
    calls = [line.strip() for line in text.splitlines() if "lib::fill<" in line
             and not line.lstrip().startswith("//")]
    assert len(calls) == 1
    assert calls[0].startswith("lib::fill<4, lib::K>((float *)")
    assert ", r" in calls[0]                                   # p, by value
    if engines.options() != {"engine": "python"}:
        return                       # one build is enough: on the python engine's turn
    with pytest.raises(KernelFault) as e:
        compile_(EXTERN).run("f", 1, device="cuda-cpu")
    assert "'lib::fill' is defined in no file of this program" in str(e.value)


SETREG = """
    __co__ s32 [4] f() {
      s32 [4] y;
      parallel p by 4 : block {
        call croq::cuda::setreg_dec(40);
        y.at(p) = p + 1;
        call croq::cuda::setreg_inc(240);
      }
      return y;
    }
"""


def test_the_register_budget_is_setmaxnreg_on_sm90a_and_nothing_elsewhere():
    """§6.10.6 (lib/Target/GPU/cute_codegen.cpp): sm_90a only; the CPU runs on."""
    from croqvm.cuda.emit import emit
    prog = compile_(SETREG)
    assert engines.run(prog, "f").tolist() == [1, 2, 3, 4]
    asm = [line.split("//")[0].strip() for line in
           emit(prog.module, arch="sm_90a").text.splitlines() if "setmaxnreg" in line]
    assert asm == ['asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");',
                   'asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");']
    assert "setmaxnreg" not in emit(prog.module, arch="sm_80").text


def test_extern_call_and_register_budget_errors():
    assert errors("""
        __co__ void f(s32 [8] y) {
          parallel p by 2 : block {
            call croq::cuda::setreg_inc(20);
            call croq::cuda::setreg_dec(40, 1);
            call croq::cuda::setreg_dec(p);
            call ext(y.span);
          }
        }
        """) == [
        "3:33: 'croq::cuda::setreg_inc' takes a register count that is a multiple of 8 from "
        "24 to 256, but got 20. | setmaxnreg on sm_90a takes such counts",
        "4:5: 'croq::cuda::setreg_dec' expects exactly one integer argument, but got 2.",
        "5:33: 'croq::cuda::setreg_dec' expects an integer constant. | write the register "
        "count as a number, e.g. 240",
        "6:14: (1st) argument of 'ext' must be a scalar or a buffer's name but got "
        "'mdspan<1> [8]'. | a function defined in no file of the program takes values and "
        "pointers to buffers"]


ACC_ARGUMENT = """
    __device__ void mark(float* v) {
      for (int k = 0; k < 4; ++k) v[k] = v[k] * 10.0f + k;
    }
    __co_device__ void bump(f32 [4] v) {
      foreach k in [4]
        v.at(k) = v.at(k) + 1000.0f;
    }
    __co__ f32 [M, 8] f(f16 [M, 16] a, f16 [8, 16] b) {
      f32 [M, 8] c;
      parallel blk by 1 : block {
        shared f16 [M, 16] sa;
        shared f16 [8, 16] sb;
        dma.copy a => sa;
        dma.copy b => sb;
        parallel w by 1 : LEVEL {
          mc = mma.fill.f32 0.0f;
          mma.row.row mc, sa, sb;
          call mark(mc);
          call bump(mc);
          mma.store mc, c;
        }
      }
      return c;
    }
"""


@pytest.mark.parametrize("level, rows", [("group", 16), ("group-4", 64)])
def test_an_accumulator_passes_the_lanes_registers_in_the_fragments_order(level, rows):
    """§11.7 item 10: lane l's registers per 8-column chunk are (r, c), (r, c + 1),
    (r + 8, c), (r + 8, c + 1), r = l / 4 (+ 16 w in warp w of a warpgroup), c = 2 (l % 4);
    what the callees write comes back. acc(i, j) = i + j; mark makes it 10 acc + k."""
    a, b = np.zeros((rows, 16), np.float16), np.zeros((8, 16), np.float16)
    a[:, 0], a[:, 1], b[:, 0], b[:, 1] = np.arange(rows), 1, 1, np.arange(8)
    i, j = np.meshgrid(np.arange(rows), np.arange(8), indexing="ij")
    want = ((i + j) * 10 + 2 * (i % 16 >= 8) + j % 2 + 1000).astype(np.float32)
    prog = compile_(ACC_ARGUMENT.replace("LEVEL", level).replace("M,", f"{rows},"))
    np.testing.assert_array_equal(engines.run(prog, "f", a, b), want)
    if level == "group" and engines.options() == {"engine": "python"}:
        np.testing.assert_array_equal(prog.run("f", a, b, device="cuda-cpu"), want)


def test_an_accumulator_must_fit_a_written_extent():
    with pytest.raises(croqvm.CompileError) as e:
        compile_(ACC_ARGUMENT.replace("LEVEL", "group").replace("M,", "16,")
                 .replace("f32 [4] v", "f32 [8] v"))
    assert [line for line in str(e.value).splitlines() if "error" in line] == [
        "p.co:19:17: error: (1st) argument of 'bump' is accumulator 'mc', whose 4 elements "
        "in each lane's registers do not fit parameter 'v' [8]."]


def test_a_co_device_function_with_a_cxx_header_stays_host_text():
    """``__co_device__ extern "C" void k(int *a)`` is C++ (Croqtile: call-and-device.md);
    only one written in Croqtile is compiled."""
    _, diags, _ = front_end('__co_device__ extern "C" void k(int *a) { a[0] = 1; }\n'
                            '__co__ void f() { }\n', "p.co")
    assert [d.message for d in diags] == [
        "host C++ code is not compiled by croqvm (line 1)"]


# --------------------------------------------------------------------------- C++ device functions


CXX = """
    #include <cmath>
    __device__ __forceinline__ float lerp3(float a, float b, int k) {
      float t = (float)k / 7.0f;   // { a brace in a comment }
      return a + (b - a) * t;
    }
    __device__ unsigned long long mixbits(unsigned long long x, bool flip) {
      x ^= x >> 31; x *= 0x9E3779B97F4A7C15ull;
      return flip ? ~x : x;
    }
    template <int N> __device__ int times(int x) { return x * N; }
    __device__ void by_pointer(float *v) { v[0] = 1.0f; }
    __co__ f32 [8] f(f32 a, f32 b, global u64 [8] h) {
      f32 [8] out;
      parallel p by 8 {
        out.at(p) = call lerp3(a, b, p);
        h.at(p) = call mixbits(h.at(p), p % 2 == 1);
      }
      return out;
    }
"""


def test_a_cxx_device_function_runs_per_lane_with_its_own_arithmetic():
    """The C++ code is compiled, not interpreted: its float arithmetic is C's (one
    rounding per operation in f32), its unsigned 64-bit products wrap."""
    a, b = 0.25, 3.5
    h = np.arange(8, dtype=np.uint64) * np.uint64(1000003)
    t = np.arange(8, dtype=np.float32) / np.float32(7)
    want = np.float32(a) + (np.float32(b) - np.float32(a)) * t
    x = h ^ (h >> np.uint64(31))
    with np.errstate(over="ignore"):
        x = x * np.uint64(0x9E3779B97F4A7C15)
    x[1::2] = ~x[1::2]
    got = engines.run(compile_(CXX), "f", a, b, h)
    assert got.tobytes() == want.tobytes()
    assert h.tolist() == x.tolist()


def test_a_buffer_passed_to_a_pointer_parameter_is_the_lanes_instance():
    """As call-and-device.md's example: a buffer decays to a pointer to its first element;
    local buffers are the lane's own, a global one is the caller's."""
    prog = compile_("""
        __device__ void axpy(float a, const float *x, float *y, int n) {
          for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
        }
        __device__ int sum(const int *v, int n) {
          int s = 0;
          for (int i = 0; i < n; ++i) s += v[i];
          return s;
        }
        __co__ f32 [4, 8] f(f32 [4, 8] x, s32 [8] w) {
          f32 [4, 8] out;
          parallel p by 4 {
            local f32 [8] xs;
            local f32 [8] ys;
            foreach j in [8] { xs.at(j) = x.at(p, j); ys.at(j) = 1.0f; }
            call axpy(2.0f, xs, ys, 8);
            s32 total = call sum(w, 8);
            foreach j in [8] out.at(p, j) = ys.at(j) + __to<f32>(total);
          }
          return out;
        }""")
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / np.float32(7)
    w = np.arange(8, dtype=np.int32)
    want = np.float32(2) * x + np.float32(1) + np.float32(w.sum())
    assert engines.run(prog, "f", x, w).tobytes() == want.tobytes()


def test_a_cxx_result_counts_as_written_for_the_initialisation_check():
    if "device" in engines.options():
        return                                  # check="init" is the interpreters'
    h = np.arange(8, dtype=np.uint64)
    got = engines.run(croqvm.compile(textwrap.dedent(CXX), "p.co"), "f", 1.0, 2.0, h,
                      check="init")
    assert got[7] == np.float32(2.0)


def test_cxx_functions_reach_nvcc_with_the_kernels():
    from croqvm.cuda import compile as cc
    from croqvm.cuda.emit import emit
    text = emit(compile_(CXX).module, arch="sm_90a").text
    assert "__device__ __forceinline__ float lerp3(float a, float b, int k) {" in text
    assert any(line.strip().startswith("r") and "= lerp3(r" in line
               for line in text.splitlines())
    if shutil.which("nvcc") is None or engines.options() != {"engine": "python"}:
        return                       # one build is enough: on the python engine's turn
    assert cc.build(text, "sm_90a").read_bytes()[:4] == b"\x7fELF"


def test_cxx_call_errors():
    text = textwrap.dedent(CXX).replace(
        "out.at(p) = call lerp3(a, b, p);",
        "out.at(p) = call lerp3(a, b);\n    call times<2>(p);\n    call by_pointer(a);")
    assert errors(text) == [
        "15:17: 'lerp3' takes 3 argument(s) but got 2. | 'lerp3' is declared at line 2",
        "16:10: croqvm can not call the C++ function 'times': it is a template. | write it "
        "as a '__co_device__' function, or call a C++ function of scalars and pointers to "
        "elements",
        "17:21: (1st) argument of 'by_pointer' must be a buffer of 'f32' but got 'f32'. | a "
        "pointer parameter takes a buffer's name"]


def test_cxx_that_does_not_compile_for_the_cpu_is_reported():
    prog = compile_("""
        __device__ int lane_id(int x) { return x + threadIdx.x; }
        __co__ void f() {
          parallel p by 2 {
            s32 v = call lane_id(p);
            println(v);
          }
        }""")
    if "device" in engines.options():
        return                 # the CUDA path compiles the function with its kernel
    with pytest.raises(croqvm.CompileError) as e:
        engines.run(prog, "f", out=io.StringIO())
    assert str(e.value).startswith("the C++ device functions called ('lane_id') do not "
                                   "compile for the CPU; the compiler said:")
    assert "threadIdx" in str(e.value)


# --------------------------------------------------------------------------- parameters by reference


def test_a_reference_parameter_is_updated_in_place_and_a_plain_one_is_not():
    prog = compile_("""
        __co__ void bump(f32 [8] A, f32 [8] &B) {
          parallel p by 1 : block {
            parallel q by 8 : thread {
              A.at(q) = A.at(q) + 1.0f;
              B.at(q) = B.at(q) + 2.0f;
            }
          }
        }""")
    a = np.arange(8, dtype=np.float32)
    b = np.arange(8, dtype=np.float32) * 2
    assert engines.run(prog, "bump", a, b) is None
    assert (a == np.arange(8)).all()
    assert (b == np.arange(8) * 2 + 2).all()
    assert [d.message for d in prog.diagnostics if d.severity == "warning"] == [
        "writes to parameter 'A' are not visible to the caller; declare it 'global'."]


def test_reference_parameter_errors():
    assert errors("__co__ void f(s32 &x, global f32 [4] &g, f32 [4] &) {}") == [
        "1:15: Scalar parameter is not supported to be passed by reference for now. | "
        "remove the '&'; return the value instead",
        "1:23: The parameter 'g' is global, which is not allowed to be passed by reference. "
        "| a 'global' parameter is updated in place already: remove the '&'",
        "1:42: Unnamed parameter is not allowed to be passed by reference. | name the "
        "parameter after '&'"]


# --------------------------------------------------------------------------- device regions


def test_device_regions_run_their_bodies_where_they_stand():
    """A heterogeneous program (as tests/gpu/end2end/hetero_cpu_gpu.co): host code for the
    CPU, a kernel for the GPU, the reference parameter copied back."""
    prog = compile_("""
        __co__ void hetero(global f32 [64] A, f32 [64] &B) {
          parallel.async by 1 : device(cpu) {
            foreach i in [64]
              A.at(i) = A.at(i) + 1.0f;
          }
          parallel.async by 1 : device(gpu) {
            parallel p by 2 : block {
              parallel q by 32 : thread
                B.at(p * 32 + q) = B.at(p * 32 + q) * 2.0f;
            }
          }
          sync.global;
        }""")
    a = np.linspace(0, 1, 64).astype(np.float32)
    b = np.linspace(-3, 3, 64).astype(np.float32)
    want_a, want_b = a + np.float32(1), b * np.float32(2)
    engines.run(prog, "hetero", a, b)
    assert a.tobytes() == want_a.tobytes() and b.tobytes() == want_b.tobytes()


def test_device_region_errors():
    assert errors("""
        __co__ void f() {
          parallel p by 1 : device(cpu) { }
          parallel by 2 : device(gpu) { }
          parallel by 1 : device(tpu) { }
          parallel q by 2 : block {
            parallel by 1 : device(gpu) { }
          }
        }""") == [
        "2:12: a 'device(...)' level has no parallel variable. | write 'parallel by 1 : "
        "device(...)'",
        "3:12: croqvm runs one instance of a 'device(...)' level: write 'by 1'.",
        "4:12: unknown device 'tpu': croqvm knows 'cpu' and 'gpu'.",
        "6:14: a 'device(...)' level is the outermost level: it can not stand inside a "
        "parallel-by."]
    assert errors("__co__ void f() { parallel by 1 : device(cpu), by 2 { } }") == [
        "1:28: syntax error: a 'device(...)' level stands alone in its 'parallel'."]


# --------------------------------------------------------------------------- inline assembly


ASM = """
    __co__ s32 [2] mov(s32 val) {
      s32 [2] out;
      parallel p by 2 {
        out.at(p) = 5;
        __asm__ volatile("mov.u32 %[dst], %[src];" : [dst] "+r"(out.at(p)) : [src] "r"(val)
                         : "memory");
      }
      return out;
    }
"""


def test_inline_assembly_is_a_located_error_off_the_gpu():
    with pytest.raises(KernelFault) as e:
        engines.run(compile_(ASM), "mov", 7)
    lines = str(e.value).splitlines()
    assert lines[:2] + lines[3:] == [
        "p.co:5:5: runtime error: inline assembly ('__asm__') runs only on a GPU.",
        '    5 |     __asm__ volatile("mov.u32 %[dst], %[src];" : [dst] "+r"(out.at(p)) : '
        '[src] "r"(val)',
        "  in kernel launched at p.co:3:3, block (0), lane 0 (warp 0, lane 0)",
        "hint: run it with '--device gpu' (device='gpu' in Python)"]


ASM_ERRORS = [
    ('__co__ void f() { __asm__ goto("jmp %l[err]" :::: err); }',
     ["1:27: syntax error: __asm__ goto is not supported."]),
    ('__co__ void f() { parallel p by 1 { __asm__ volatile("nop" : : : : "memory"); } }',
     ["1:66: syntax error: invalid __asm__ syntax: at most three ':' sections (outputs, "
      "inputs, clobbers)."]),
    ('__co__ void f(s32 v) { __asm__("nop"); parallel p by 1 { int x = 1; '
     'asm("mov %0, %1;" : "r"(x) : "=r"(v)); } }',
     ["1:24: '__asm__' can only be used inside parallel-by. | inline assembly runs on GPU "
      "threads: put it inside a 'parallel'",
      "1:89: the constraint of an output operand must start with '=' or '+': 'r'. | "
      "outputs come first, after the first ':', inputs after the second",
      "1:93: only mutables can be re-assigned (x).",
      "1:98: the constraint of an input operand can not start with '=' or '+': '=r'. | "
      "outputs come first, after the first ':', inputs after the second"]),
]


@pytest.mark.parametrize("source, want", ASM_ERRORS)
def test_inline_assembly_errors(source, want):
    assert errors(source) == want


def test_inline_assembly_reaches_nvcc_with_its_operands_numbered():
    """The GPU code binds each operand to its register; nvcc takes no '%[name]'."""
    from croqvm.cuda import compile as cc
    from croqvm.cuda.emit import emit
    text = emit(compile_(ASM).module, arch="sm_90a").text
    asm = [line.strip() for line in text.splitlines() if line.strip().startswith("asm")]
    assert len(asm) == 1
    assert asm[0].startswith('asm volatile("mov.u32 %0, %1;" : "+r"(r')
    assert asm[0].split("//")[0].rstrip().endswith(' : "memory");')
    if shutil.which("nvcc") is None or engines.options() != {"engine": "python"}:
        return                       # one build is enough: on the python engine's turn
    assert cc.build(text, "sm_90a").read_bytes()[:4] == b"\x7fELF"
