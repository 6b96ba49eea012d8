"""The disassembler: records first, then a listing with positions, depth and operands by kind."""
import pytest

import bytecode_builders as B
from croqvm.bytecode import opcodes as O
from croqvm.bytecode.disasm import Instruction, disassemble, instructions
from croqvm.bytecode.module import Code, Function, Module, PieceKind, PrintFormat, RetKind

SQUARES_LISTING = """\
function 'squares' -> buffer s32  (squares.co:1:1)
  host
    regs    r0 s32 'i', r1 s32, r2 s32, r3 bool, r4 s32, r5 s32
    consts  k0 s32 4, k1 s32 1, k2 s32 -1
    buf0 'out': global s32 [r1]
    acc0 'out.at(i)': buf0 at (r0)
    ; squares.co:2  s32 [4] out {1};
        squares.co:2:3   0  CONST       r1, k0 (=4)
        squares.co:2:3   1  ALLOC       buf0 'out'
        squares.co:2:3   2  CONST       r5, k1 (=1)
        squares.co:2:3   3  FILL        buf0 'out', r5, -
    ; squares.co:3  foreach i in [4]
        squares.co:3:3   4  CONST       r2, k1 (=1)
        squares.co:3:3   5  CONST       r0, k2 (=-1)
        squares.co:3:3   6  LOOP        -> 12
        squares.co:3:3   7    ADD       r0, r0, r2
        squares.co:3:3   8    GE        r3, r0, r1
        squares.co:3:3   9    BREAK_IF  r3
    ; squares.co:4  out.at(i) += i * i;
        squares.co:4:5  10    MUL       r4, r0, r0
    --> squares.co:4:5  11    UPDATE    acc0 'out.at(i)', r4, ADD
    ; squares.co:3  foreach i in [4]
        squares.co:3:3  12  END         -> 6
    ; squares.co:5  return out;
        squares.co:5:3  13  RET_BUF     buf0 'out'"""


def test_golden_listing_with_marker():
    m = B.squares()
    assert disassemble(m, marker=(m.functions[0].host, 11)) == SQUARES_LISTING


def test_marker_only_in_the_named_code():
    m = B.scale()
    text = disassemble(m, marker=(m.functions[0].kernels[0].code, 26))
    marked = [line for line in text.splitlines() if "-->" in line]
    assert marked == ["    --> scale.co:12:26  26    TRIGGER     ev0 'done', r8"]


def test_records_of_an_if_else():
    kernel = B.scale().functions[0].kernels[0].code
    got = instructions(kernel)[9:16]
    assert got == [
        Instruction(9, O.LT, "LT", (6, 5, 0), ("r6", "r5", "r0"), 8, 0),
        Instruction(10, O.IF, "IF", (6, 13), ("r6", "-> 13"), 8, 0),
        Instruction(11, O.LOAD, "LOAD", (7, 0), ("r7", "acc0 'tile.at(t)'"), 9, 1),
        Instruction(12, O.MUL, "MUL", (7, 7, 1), ("r7", "r7", "r1"), 9, 1),
        Instruction(13, O.ELSE, "ELSE", (15,), ("-> 15",), 8, 0),
        Instruction(14, O.CONST, "CONST", (7, 1), ("r7", "k1 (=0)"), 10, 1),
        Instruction(15, O.END, "END", (10,), ("-> 10",), 8, 0),
    ]


OPERANDS = [
    (B.scale, "kernel", 6, ("dma0 (dma.copy)", "coll0 (dma.copy)")),
    (B.scale, "kernel", 29, ("coll1 (barrier at end of parallel)",)),
    (B.scale, "kernel", 30, ("r10", "0", "0")),
    (B.scale, "kernel", 32, ("fmt0",)),
    (B.scale, "host", 5, ("launch0 (kernel 0)",)),
    (B.misc, "host", 15, ("r17", "buf0 'a'", "0")),
    (B.misc, "host", 24, ("r12", "s0 (='too few positive elements')")),
    (B.misc, "host", 25, ("r13", "fut0 'f'", "0")),
    (B.misc, "kernel", 6, ("frag0 'mc'", "frag1 'ma'", "frag2 'ma'", "row.row", "coll0 (mma)")),
    (B.misc, "kernel", 7, ("frag0 'mc'", "view0 'c'", "0", "coll0 (mma)")),
]


@pytest.mark.parametrize("build, part, index, reprs", OPERANDS)
def test_operands_rendered_by_kind(build, part, index, reprs):
    fn = build().functions[0]
    code = fn.host if part == "host" else fn.kernels[0].code
    assert instructions(code)[index].argreprs == reprs


def test_declarations_of_a_kernel_function():
    lines = disassemble(B.scale()).splitlines()
    for expected in [
        "function 'scale' -> buffer s32  (scale.co:1:1)",
        "  param 0 'x': buffer global s32 [N] -> buf0",
        "  param 1 'k': scalar s32 -> r1",
        "  dim 'N' -> r0",
        "    launch0: kernel 0, grid (r4), buffers buf0 <- buf0, buf1 <- buf1, scalars "
        "r0 <- r0, r1 <- r1  (scale.co:3:3)",
        "  kernel 0 'scale_k0': grid rank 1, block size 32  (scale.co:3:3)",
        "    buf2 'tile': shared s32 [r4]",
        "    ev0 'done': 1 slot, arrivals: lanes of ls0",
        "    view0 'x.view(32).from(p * 32)': buf0 origin (r9) extents (r4)",
        "    dma0 'dma.copy': copy view0 => view1",
        "    coll1 'barrier at end of parallel': lanes of ls1, per the block",
        "    ls0: lanes with r17",
        "    ls1: every lane",
        "          scale.co:12:26  2  LT     r17, r15, r16",
        "    fmt0: s0 (='block done:'), r2, newline",
        "    once sites: 1",
    ]:
        assert expected in lines


def test_a_block_size_given_at_launch_names_its_host_register():
    lines = disassemble(B.scale_sized_at_launch()).splitlines()
    assert "  kernel 0 'scale_k0': grid rank 1, block size r2 (at launch)  (scale.co:3:3)" \
        in lines
    assert "    launch0: kernel 0, grid (r4), buffers buf0 <- buf0, buf1 <- buf1, scalars " \
        "r0 <- r0, r1 <- r1, block r2  (scale.co:3:3)" in lines


def test_misc_declarations():
    lines = disassemble(B.misc()).splitlines()
    for expected in [
        "  param 0 'a': buffer default f32 [4] -> buf0",
        "    buf2: global f32 [r17]",
        "    fut0 'f': global f32 [4]",
        "    dma0 'dma.copy': copy view0 => own buf2 future fut0",
        "    frag0 'mc': acc f16 [16, 16], one per 32 lanes",
        "    frag2 'ma': b f16 [16, 16], one per 32 lanes",
        "    coll0 'mma': lanes of ls0, per 32 lanes",
    ]:
        assert expected in lines


def test_a_check_showing_values_lists_its_message_format():
    m = B.misc()
    host = m.functions[0].host
    host.prints.append(PrintFormat([(PieceKind.STR, 0), (PieceKind.REG, 0)], False))
    host.code[24 * O.WIDTH:25 * O.WIDTH] = B.asm("ASSERT_FMT 12 1 @8")
    assert instructions(host)[24].argreprs == ("r12", "fmt1")
    lines = disassemble(m).splitlines()
    assert "    fmt1: s0 (='too few positive elements'), r0" in lines
    assert "        misc.co:9:3   24  ASSERT_FMT     r12, fmt1" in lines


def test_broken_code_is_shown_not_raised():
    m = B.squares()
    host = m.functions[0].host
    host.code[7 * O.WIDTH + 2] = 40             # ADD with a register nobody declared
    host.code[1 * O.WIDTH + 1] = 9              # ALLOC of buffer 9
    host.code[0] = 200
    host.code[13 * O.WIDTH + 6] = 99            # a span that does not exist
    text = disassemble(m)
    rows = {line.split()[1]: line for line in text.splitlines() if line.startswith("        ")}
    assert rows["0"].split()[2:] == ["<opcode", "200>"]
    assert rows["1"].split()[2:] == ["ALLOC", "buf9", "<out", "of", "range>"]
    assert rows["7"].split()[2:] == ["ADD", "r0,", "r40,", "r2"]
    assert rows["13"].split()[0] == "?"


def test_every_opcode_renders_even_with_empty_tables():
    words = []
    for op in O.TABLE:
        words += [op.code] + [0] * O.MAX_OPERANDS + [0]
    records = instructions(Code(code=words))
    assert [r.opname for r in records] == [op.name for op in O.TABLE]
    module = Module([("x.co", "")], [(0, 1, 1, 1, 2)],
                    [Function("f", [], [], RetKind.VOID, -1, Code(code=words))])
    assert disassemble(module).count("\n") > len(O.TABLE)
