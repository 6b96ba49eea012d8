"""A golden listing: LANGUAGE.md Appendix A.1 compiled and disassembled, checked line by
line against the spec by hand (ARCHITECTURE.md "The bytecode"; STYLE.md section 3).

What a reader can check in it: constants loaded once at the start of each program, the
foreach shape of docs/EXECUTION.md §4 (increment at the top, the variable reset to 0
after the loop; ``i * 3``, the same in every iteration over ``j``, computed before that
loop), the launch binding the host's buffers, and the kernel computing
``i = tid / 3``, ``j = tid % 3`` for ``{i, j} by [2, 3]`` (§6.2.4) with one UPDATE for
``+=``.
"""
import croqvm
from appendix import APPENDIX
from croqvm.bytecode.disasm import disassemble

GOLDEN = """\
function 'add_demo' -> void  (add.co:1:13)
  host
    regs    r0 s32, r1 s32, r2 s32, r3 s32 'i', r4 s32 'j', r5 s32, r6 bool, r7 bool
            r8 s32, r9 s32, r10 s32 'i', r11 bool, r12 s32, r13 s32, r14 s32, r15 s32
    consts  k0 s32 2, k1 s32 3, k2 s32 10, k3 s32 0, k4 s32 1, k5 s32 -1
    strs    s0 ' '
    buf0 'a': global s32 [r0, r1]
    buf1 'b': global s32 [r0, r1]
    acc0 'a': buf0 at (r3, r4)
    acc1 'a': buf0 at (r10, r12)
    acc2 'a': buf0 at (r10, r5)
    acc3 'a': buf0 at (r10, r0)
    fmt0: r13, s0 (=' '), r14, s0 (=' '), r15, newline
    launch0: kernel 0, grid (r5), buffers buf0 <- buf0, buf1 <- buf1, scalars -  (add.co:6:3)
    ; add.co:1  __co__ void add_demo() {
        add.co:1:13   0  CONST         r0, k0 (=2)
        add.co:1:13   1  CONST         r1, k1 (=3)
        add.co:1:13   2  CONST         r2, k2 (=10)
        add.co:1:13   3  CONST         r5, k4 (=1)
        add.co:1:13   4  CONST         r12, k3 (=0)
    ; add.co:2  s32 [2, 3] a;
        add.co:2:3    5  ALLOC         buf0 'a'
    ; add.co:3  s32 [2, 3] b {10};
        add.co:3:3    6  ALLOC         buf1 'b'
        add.co:3:3    7  FILL          buf1 'b', r2, -
    ; add.co:4  foreach {i, j} in [2, 3]
        add.co:4:3    8  CONST         r3, k3 (=0)
        add.co:4:3    9  CONST         r4, k3 (=0)
        add.co:4:3   10  CONST         r3, k5 (=-1)
        add.co:4:3   11  LOOP          -> 25
        add.co:4:3   12    ADD         r3, r3, r5
        add.co:4:3   13    GE          r6, r3, r0
        add.co:4:3   14    BREAK_IF    r6
        add.co:4:3   15    CONST       r4, k5 (=-1)
        add.co:4:3   16    MUL         r8, r3, r1
        add.co:4:3   17    LOOP        -> 23
        add.co:4:3   18      ADD       r4, r4, r5
        add.co:4:3   19      GE        r7, r4, r1
        add.co:4:3   20      BREAK_IF  r7
    ; add.co:5  a.at(i, j) = i * 3 + j;
        add.co:5:5   21      ADD       r9, r8, r4
        add.co:5:5   22      STORE     acc0 'a', r9
    ; add.co:4  foreach {i, j} in [2, 3]
        add.co:4:3   23    END         -> 17
        add.co:4:3   24    CONST       r4, k3 (=0)
        add.co:4:3   25  END           -> 11
        add.co:4:3   26  CONST         r3, k3 (=0)
    ; add.co:6  parallel {i, j} by [2, 3]                 // one unannotated level: 6 threads, one block
        add.co:6:3   27  LAUNCH        launch0 (kernel 0)
    ; add.co:8  foreach i in [2]
        add.co:8:3   28  CONST         r10, k3 (=0)
        add.co:8:3   29  CONST         r10, k5 (=-1)
        add.co:8:3   30  LOOP          -> 38
        add.co:8:3   31    ADD         r10, r10, r5
        add.co:8:3   32    GE          r11, r10, r0
        add.co:8:3   33    BREAK_IF    r11
    ; add.co:9  println(a.at(i, 0), a.at(i, 1), a.at(i, 2));
        add.co:9:5   34    LOAD        r13, acc1 'a'
        add.co:9:5   35    LOAD        r14, acc2 'a'
        add.co:9:5   36    LOAD        r15, acc3 'a'
        add.co:9:5   37    PRINT       fmt0
    ; add.co:8  foreach i in [2]
        add.co:8:3   38  END           -> 30
        add.co:8:3   39  CONST         r10, k3 (=0)
    ; add.co:1  __co__ void add_demo() {
        add.co:1:1   40  RET
  kernel 0 'add_demo.k0': grid rank 1, block size 6  (add.co:6:3)
    regs    r0 s32 'tid', r1 s32, r2 s32 'i', r3 s32, r4 s32 'j', r5 s32
    consts  k0 s32 3, k1 s32 2
    buf0 'a': global s32 [-]
    buf1 'b': global s32 [-]
    acc0 'a': buf0 at (r2, r4)
    acc1 'b': buf1 at (r2, r4)
    ; add.co:6  parallel {i, j} by [2, 3]                 // one unannotated level: 6 threads, one block
        add.co:6:3  0  CONST   r1, k0 (=3)
        add.co:6:3  1  CONST   r3, k1 (=2)
        add.co:6:3  2  LANE    r0
        add.co:6:3  3  DIV     r2, r0, r1
        add.co:6:3  4  MOD     r4, r0, r1
    ; add.co:7  a.at(i, j) += b.at(i, j);
        add.co:7:5  5  LOAD    r5, acc1 'b'
        add.co:7:5  6  UPDATE  acc0 'a', r5, ADD
"""


def test_appendix_a1_listing():
    assert disassemble(croqvm.compile(APPENDIX["A.1"], "add.co").module) + "\n" == GOLDEN
