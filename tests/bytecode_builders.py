"""Small, valid bytecode modules built by hand, for tests of every stage that reads bytecode.

Each builder returns a fresh Module (tests may mutate it) whose source text, spans and
instructions match, written the way lowering shapes code (docs/EXECUTION.md):

- ``squares()``: host code only -- ALLOC, FILL, a foreach LOOP with BREAK_IF, UPDATE,
  RET_BUF. Running it returns ``[1, 2, 5, 10]``.
- ``scale()``: a parameterised function whose host launches one kernel with a block DMA
  into shared memory, IF/ELSE/END, a LOOP with TRIGGER/WAIT_EVENT on an event whose
  arrival count comes from a lane set, the region's join BARRIER and a once-per-block
  PRINT. ``scale(x, k)`` returns ``x * k`` and prints ``block done: p`` per block.
- ``scale_sized_at_launch()``: ``scale()`` with the block size given by the launch.
- ``misc()``: host CONTINUE_IF, DIMOF, a DMA into its own buffer with a future, FUT_DIM,
  SELECT, ASSERT, PRINT, and a kernel of MMA ops on a warp's fragments.

``asm`` turns a listing into instruction words: one instruction per line, ``OPNAME
operands... [@span]``, ``;`` starts a comment, operand slots a..e in order; an
operand may be an opcode name (UPDATE's operator).
"""
from __future__ import annotations

from croqvm.core import dtypes as D
from croqvm.bytecode import opcodes as O
from croqvm.bytecode.module import (Access, BaseKind, BufferDecl, Code, CollSite, Const,
                                    DmaDesc, DmaOp, EventDecl, FragDecl, FragRole, Function,
                                    FutureDecl, Kernel, LaneSet, Launch, Module, Param,
                                    ParamKind, ParamStorage, PieceKind, PrintFormat, RetKind,
                                    Storage, View)

S32, F32, F16, BOOL = D.S32.code, D.F32.code, D.F16.code, D.BOOL.code
GLOBAL, SHARED = Storage.GLOBAL, Storage.SHARED
BUF, FUT = BaseKind.BUF, BaseKind.FUT
STR, REG = PieceKind.STR, PieceKind.REG


def consts(*pairs) -> list[Const]:
    """Constants from (dtype code, value) pairs."""
    return [Const(t, v) for t, v in pairs]


def asm(listing: str) -> list[int]:
    """Instruction words for a listing such as ``"ADD 0 0 2 @3\\nEND 6"``."""
    words = []
    for line in listing.splitlines():
        line = line.split(";")[0].split()
        if not line:
            continue
        span = int(line.pop()[1:]) if line[-1].startswith("@") else 0
        operands = [O.BY_NAME[x].code if x in O.BY_NAME else int(x) for x in line[1:]]
        words += [O.BY_NAME[line[0]].code, *operands]
        words += [0] * (O.MAX_OPERANDS - len(operands)) + [span]
    return words


def spans_for(text: str, marks: list[tuple[int, str]]) -> list[tuple[int, int, int, int, int]]:
    """A span (file 0) per (line, snippet): the snippet's first occurrence on that line."""
    lines = text.split("\n")
    out = []
    for line, snippet in marks:
        col = lines[line - 1].index(snippet) + 1
        out.append((0, line, col, line, col + len(snippet)))
    return out


# -- squares: host code only --------------------------------------------------------------

SQUARES_CO = """\
__co__ auto squares() {
  s32 [4] out {1};
  foreach i in [4]
    out.at(i) += i * i;
  return out;
}
"""


def squares() -> Module:
    spans = spans_for(SQUARES_CO, [(1, "__co__ auto squares()"), (2, "s32 [4] out {1};"),
                                   (3, "foreach i in [4]"), (4, "out.at(i) += i * i;"),
                                   (5, "return out;")])
    host = Code(
        code=asm("""
            CONST 1 0 @1          ; r1 := 4
            ALLOC 0 @1
            CONST 5 1 @1          ; r5 := 1, the initializer
            FILL 0 5 -1 @1
            CONST 2 1 @2          ; step
            CONST 0 2 @2          ; i := -1
            LOOP 12 @2
              ADD 0 0 2 @2
              GE 3 0 1 @2
              BREAK_IF 3 @2
              MUL 4 0 0 @3
              UPDATE 0 4 ADD @3   ; out.at(i) += r4
            END 6 @2
            RET_BUF 0 @4
        """),
        regs=[S32, S32, S32, BOOL, S32, S32],
        reg_names=["i", "", "", "", "", ""],
        consts=consts((S32, 4), (S32, 1), (S32, -1)),
        buffers=[BufferDecl("out", GLOBAL, S32, [1], span=1)],
        accesses=[Access(BUF, 0, -1, [0], "out.at(i)")],
    )
    fn = Function("squares", [], [], RetKind.BUFFER, S32, host, span=0)
    return Module([("squares.co", SQUARES_CO)], spans, [fn])


# -- scale: a kernel with DMA, divergence, a loop, events, a barrier, once ----------------

SCALE_CO = """\
__co__ auto scale(s32 [N] x, s32 k) {
  s32 [N] y;
  parallel p by cdiv(N, 32) : block {
    shared event done;
    shared s32 [32] tile;
    dma.copy x.view(32).from(p * 32) => tile;
    parallel t by 32 : thread {
      i = p * 32 + t;
      mutable s32 v = 0;
      if (i < N) v = tile.at(t) * k; else v = 0;
      if (i < N) y.at(i) = v;
      foreach j in [2] { trigger done; wait done; }
    }
    println("block done:", p);
  }
  return y;
}
"""


def scale() -> Module:
    spans = spans_for(SCALE_CO, [
        (1, "__co__ auto scale(s32 [N] x, s32 k)"),      # 0
        (2, "s32 [N] y;"),                                # 1
        (3, "parallel p by cdiv(N, 32) : block"),         # 2
        (4, "shared event done;"),                        # 3
        (5, "shared s32 [32] tile;"),                     # 4
        (6, "dma.copy x.view(32).from(p * 32) => tile;"),  # 5
        (7, "parallel t by 32 : thread"),                 # 6
        (8, "i = p * 32 + t;"),                           # 7
        (10, "if (i < N)"),                               # 8
        (10, "v = tile.at(t) * k;"),                      # 9
        (10, "v = 0;"),                                   # 10
        (11, "if (i < N)"),                               # 11
        (11, "y.at(i) = v;"),                             # 12
        (12, "foreach j in [2]"),                         # 13
        (12, "trigger done;"),                            # 14
        (12, "wait done;"),                               # 15
        (14, 'println("block done:", p);'),               # 16
        (16, "return y;"),                                # 17
        (9, "mutable s32 v = 0;"),                        # 18
    ])
    kernel_code = Code(
        code=asm("""
            BLOCKIDX 2 0 @2
            LANE 3 @6
            CONST 4 0 @5          ; 32
            CONST 8 1 @5          ; 0
            MUL 9 2 4 @5          ; p * 32
            ALLOC 2 @4
            DMA 0 0 @5
            ADD 5 9 3 @7          ; i
            CONST 7 1 @18         ; v = 0
            LT 6 5 0 @8
            IF 6 13 @8
              LOAD 7 0 @9
              MUL 7 7 1 @9
            ELSE 15 @8
              CONST 7 1 @10
            END 10 @8
            IF 6 18 @11
              STORE 1 7 @12
            END 16 @11
            CONST 12 2 @13        ; step 1
            CONST 13 3 @13        ; bound 2
            CONST 11 4 @13        ; j := -1
            LOOP 28 @13
              ADD 11 11 12 @13
              GE 14 11 13 @13
              BREAK_IF 14 @13
              TRIGGER 0 8 @14
              WAIT_EVENT 0 8 @15
            END 22 @13
            BARRIER 1 @6
            ONCE 10 0 0 @16
            IF 10 33 @16
              PRINT 0 @16
            END 31 @16
        """),
        regs=[S32, S32, S32, S32, S32, S32, BOOL, S32, S32, S32, BOOL, S32, S32, S32, BOOL,
              S32, S32, BOOL],
        reg_names=["N", "k", "p", "t", "", "i", "", "v", "", "", "", "j", "", "", "", "", "",
                   ""],
        consts=consts((S32, 32), (S32, 0), (S32, 1), (S32, 2), (S32, -1)),
        strings=["block done:"],
        buffers=[BufferDecl("x", GLOBAL, S32, [], param=0, span=0),
                 BufferDecl("y", GLOBAL, S32, [], span=1),
                 BufferDecl("tile", SHARED, S32, [4], span=4)],
        events=[EventDecl("done", 1, lanesets=[0], span=3)],
        accesses=[Access(BUF, 2, -1, [3], "tile.at(t)"), Access(BUF, 1, -1, [5], "y.at(i)")],
        views=[View(BUF, 0, -1, [9], [4], "x.view(32).from(p * 32)"),
               View(BUF, 2, -1, [8], [4], "tile")],
        dmas=[DmaDesc(DmaOp.COPY, 0, dst_view=1, text="dma.copy")],
        colls=[CollSite(1, 0, "dma.copy"), CollSite(1, 0, "barrier at end of parallel")],
        # ls0: the lanes that trigger 'done', t < 32 (all of them); ls1: the whole block
        lanesets=[LaneSet(asm("LANE 15 @14\nCONST 16 0 @14\nLT 17 15 16 @14"), 17), LaneSet()],
        prints=[PrintFormat([(STR, 0), (REG, 2)], True)],
        once_sites=1,
    )
    kernel = Kernel("scale_k0", kernel_code, block_size=32, grid_rank=1, span=2)
    host = Code(
        code=asm("""
            ALLOC 1 @1
            CONST 2 0 @2          ; 32
            CONST 3 1 @2          ; 31
            ADD 5 0 3 @2
            DIV 4 5 2 @2          ; cdiv(N, 32)
            LAUNCH 0 @2
            RET_BUF 1 @17
        """),
        regs=[S32, S32, S32, S32, S32, S32],
        reg_names=["N", "k", "", "", "", ""],
        consts=consts((S32, 32), (S32, 31)),
        buffers=[BufferDecl("x", GLOBAL, S32, [], param=0, span=0),
                 BufferDecl("y", GLOBAL, S32, [0], span=1)],
        launches=[Launch(0, [4], [(0, 0), (1, 1)], [(0, 0), (1, 1)], span=2)],
    )
    params = [Param("x", ParamKind.BUFFER, S32, ["N"], ParamStorage.GLOBAL, 0),
              Param("k", ParamKind.SCALAR, S32, [], ParamStorage.GLOBAL, 1)]
    fn = Function("scale", params, [("N", 0)], RetKind.BUFFER, S32, host, [kernel], span=0)
    return Module([("scale.co", SCALE_CO)], spans, [fn])


def scale_sized_at_launch() -> Module:
    """``scale()`` whose kernel takes its block size from the launch: host r2 (32)."""
    m = scale()
    m.functions[0].kernels[0].block_size = 0
    m.functions[0].host.launches[0].block = 2
    return m


# -- misc: futures, select, assert, print on the host; MMA in a kernel --------------------

MISC_CO = """\
__co__ void misc(f32 [4] a, global f16 [16, 16] c) {
  mutable s32 n = 0;
  foreach i in [4] {
    if (a.at(i) < 0.0f) continue;
    n += 1;
  }
  f = dma.copy a => global;
  f32 s = n > 2 ? 1.5f : -1.5f;
  assert(s > 0.0f, "too few positive elements");
  println("n =", n, f.span(0));
  parallel p by 1 : block
    parallel q by 1 : group {
      mc = mma.fill 0.0f;
      ma = mma.load c;
      mma.row.row mc, ma, ma;
      mma.store mc, c;
    }
}
"""


def misc() -> Module:
    spans = spans_for(MISC_CO, [
        (1, "__co__ void misc(f32 [4] a, global f16 [16, 16] c)"),   # 0
        (2, "mutable s32 n = 0;"),                                   # 1
        (3, "foreach i in [4]"),                                     # 2
        (4, "a.at(i) < 0.0f"),                                       # 3
        (4, "continue;"),                                            # 4
        (5, "n += 1;"),                                              # 5
        (7, "f = dma.copy a => global;"),                            # 6
        (8, "f32 s = n > 2 ? 1.5f : -1.5f;"),                        # 7
        (9, 'assert(s > 0.0f, "too few positive elements");'),       # 8
        (10, 'println("n =", n, f.span(0));'),                       # 9
        (11, "parallel p by 1 : block"),                             # 10
        (13, "mc = mma.fill 0.0f;"),                                 # 11
        (14, "ma = mma.load c;"),                                    # 12
        (15, "mma.row.row mc, ma, ma;"),                             # 13
        (16, "mma.store mc, c;"),                                    # 14
    ])
    kernel_code = Code(
        code=asm("""
            CONST 0 0 @14
            CONST 1 1 @14
            CONST 2 2 @11
            MMA_FILL 0 2 0 @11
            MMA_LOAD 1 0 0 @12    ; 'ma' as the A operand
            MMA_LOAD 2 0 0 @12    ; and as the B operand
            MMA_EXEC 0 1 2 0 0 @13
            MMA_STORE 0 0 0 0 @14
        """),
        regs=[S32, S32, F16],
        consts=consts((S32, 0), (S32, 16), (F16, 0.0)),
        buffers=[BufferDecl("c", GLOBAL, F16, [], param=1, span=0)],
        frags=[FragDecl("mc", FragRole.ACC, F16, 16, 16, 32, span=11),
               FragDecl("ma", FragRole.A, F16, 16, 16, 32, span=12),
               FragDecl("ma", FragRole.B, F16, 16, 16, 32, span=12)],
        views=[View(BUF, 0, -1, [0, 0], [1, 1], "c")],
        colls=[CollSite(0, 32, "mma")],
        lanesets=[LaneSet()],
    )
    kernel = Kernel("misc_k0", kernel_code, block_size=32, grid_rank=1, span=10)
    host = Code(
        code=asm("""
            CONST 0 0 @1          ; n = 0
            CONST 2 1 @2          ; 4
            CONST 3 2 @2          ; 1
            CONST 1 3 @2          ; i := -1
            LOOP 13 @2
              ADD 1 1 3 @2
              GE 4 1 2 @2
              BREAK_IF 4 @2
              LOAD 5 0 @3
              CONST 6 4 @3
              LT 7 5 6 @3
              CONTINUE_IF 7 @4
              ADD 0 0 3 @5
            END 4 @2
            CONST 16 0 @6
            DIMOF 17 0 0 @6
            DMA 0 -1 @6
            CONST 14 5 @7
            GT 9 0 14 @7
            CONST 10 6 @7
            CONST 11 7 @7
            SELECT 8 9 10 11 @7
            CONST 6 4 @8
            GT 12 8 6 @8
            ASSERT 12 0 @8
            FUT_DIM 13 0 0 @9
            PRINT 0 @9
            LAUNCH 0 @10
            RET @0
        """),
        regs=[S32, S32, S32, S32, BOOL, F32, F32, BOOL, F32, BOOL, F32, F32, BOOL, S32, S32,
              S32, S32, S32],
        reg_names=["n", "i", "", "", "", "", "", "", "s"] + [""] * 9,
        consts=consts((S32, 0), (S32, 4), (S32, 1), (S32, -1), (F32, 0.0), (S32, 2),
                      (F32, 1.5), (F32, -1.5)),
        strings=["too few positive elements", "n ="],
        buffers=[BufferDecl("a", GLOBAL, F32, [], param=0, span=0),
                 BufferDecl("c", GLOBAL, F16, [], param=1, span=0),
                 BufferDecl("", GLOBAL, F32, [17], span=6)],
        futures=[FutureDecl("f", F32, GLOBAL, False, [4], span=6)],
        accesses=[Access(BUF, 0, -1, [1], "a.at(i)")],
        views=[View(BUF, 0, -1, [16], [17], "a")],
        dmas=[DmaDesc(DmaOp.COPY, 0, dst_buffer=2, future=0, text="dma.copy")],
        prints=[PrintFormat([(STR, 1), (REG, 0), (REG, 13)], True)],
        launches=[Launch(0, [3], [(0, 1)], [], span=10)],
    )
    params = [Param("a", ParamKind.BUFFER, F32, [4], ParamStorage.DEFAULT, 0),
              Param("c", ParamKind.BUFFER, F16, [16, 16], ParamStorage.GLOBAL, 1)]
    fn = Function("misc", params, [], RetKind.VOID, -1, host, [kernel], span=0)
    return Module([("misc.co", MISC_CO)], spans, [fn])


ALL = {"squares": squares, "scale": scale, "misc": misc}
