"""The opcode table: the single source of truth for croqvm's bytecode (ARCHITECTURE.md).

Instruction encoding (``Code.code`` is a flat list of ints, ``WIDTH`` per instruction)::

    +--------+------+------+------+------+------+------+
    | opcode |  a   |  b   |  c   |  d   |  e   | span |
    +--------+------+------+------+------+------+------+
      word 0   1      2      3      4      5      6

Operands a..e are read by the kinds listed in ``Op.operands`` (unused slots are 0);
``span`` indexes ``Module.spans``. Everything else -- the encoder's arity checks, the
verifier, the disassembler, the engines' dispatch tables and the native C header -- is
derived from ``TABLE``.

Operand kinds (``OPERAND_KINDS``) name the table an operand indexes in the enclosing
``Code`` (croqvm.bytecode.module). A kind followed by ``?`` also accepts -1 ("none").

Notation of the meanings: ``R[a]`` register a of the executing lane, ``K[b]`` constant b,
``S[b]`` string b, ``@a`` the element an access descriptor names, ``->T`` a stored
instruction index.
"""
from __future__ import annotations

from dataclasses import dataclass

WIDTH = 7          # words per instruction
SPAN = WIDTH - 1   # the word holding the span index
MAX_OPERANDS = 5

OPERAND_KINDS = {
    "r": ("regs", "register"),
    "k": ("consts", "constant"),
    "s": ("strings", "string"),
    "b": ("buffers", "buffer"),
    "f": ("futures", "future"),
    "e": ("events", "event"),
    "m": ("frags", "fragment"),
    "a": ("accesses", "access"),
    "v": ("views", "view"),
    "d": ("dmas", "dma"),
    "c": ("colls", "collective site"),
    "p": ("prints", "print format"),
    "l": ("launches", "launch"),
    "t": (None, "target"),   # instruction index, checked by the structure pass
    "i": (None, "immediate"),
}


@dataclass(frozen=True)
class Op:
    code: int
    name: str
    operands: tuple      # operand kinds, e.g. ("r", "r", "r")
    meaning: str
    collective: bool = False   # executed once by a converged set of lanes (ARCHITECTURE.md)
    blocks: bool = False       # may suspend the warp
    opens: bool = False        # IF / LOOP: pushes a control frame
    closes: bool = False       # END
    host_only: bool = False
    kernel_only: bool = False


def _ops(*rows):
    return tuple(Op(i, *row[:3], **(row[3] if len(row) > 3 else {})) for i, row in enumerate(rows))


_COLL = {"collective": True, "blocks": True, "kernel_only": True}

TABLE = _ops(
    # --- data and arithmetic (§4, §12): dtypes are those of the registers
    ("NOP", (), "nothing"),
    ("CONST", ("r", "k"), "R[a] := K[b] (of R[a]'s dtype)"),
    ("MOV", ("r", "r"), "R[a] := R[b] (same dtype)"),
    ("CVT", ("r", "r"), "R[a] := R[b] converted to R[a]'s dtype (§12.3; may fault)"),
    ("LANE", ("r",), "R[a] := the lane's index in its block (0 on the host)"),
    ("BLOCKIDX", ("r", "i"), "R[a] := the block's index along grid dimension b"),
    ("ADD", ("r", "r", "r"), "R[a] := R[b] + R[c]"),
    ("SUB", ("r", "r", "r"), "R[a] := R[b] - R[c]"),
    ("MUL", ("r", "r", "r"), "R[a] := R[b] * R[c]"),
    ("DIV", ("r", "r", "r"), "R[a] := R[b] / R[c] (integers truncate; zero faults)"),
    ("MOD", ("r", "r", "r"), "R[a] := R[b] % R[c] (sign of the dividend; zero faults)"),
    ("MIN", ("r", "r", "r"), "R[a] := min(R[b], R[c])"),
    ("MAX", ("r", "r", "r"), "R[a] := max(R[b], R[c])"),
    ("AND", ("r", "r", "r"), "R[a] := R[b] & R[c] (bool: logical and)"),
    ("OR", ("r", "r", "r"), "R[a] := R[b] | R[c] (bool: logical or)"),
    ("XOR", ("r", "r", "r"), "R[a] := R[b] ^ R[c]"),
    ("SHL", ("r", "r", "r"), "R[a] := R[b] << R[c] (count checked)"),
    ("SHR", ("r", "r", "r"), "R[a] := R[b] >> R[c] (arithmetic if signed; count checked)"),
    ("EQ", ("r", "r", "r"), "R[a] := R[b] == R[c] (R[a] is bool)"),
    ("NE", ("r", "r", "r"), "R[a] := R[b] != R[c]"),
    ("LT", ("r", "r", "r"), "R[a] := R[b] < R[c]"),
    ("LE", ("r", "r", "r"), "R[a] := R[b] <= R[c]"),
    ("GT", ("r", "r", "r"), "R[a] := R[b] > R[c]"),
    ("GE", ("r", "r", "r"), "R[a] := R[b] >= R[c]"),
    ("NEG", ("r", "r"), "R[a] := -R[b]"),
    ("NOT", ("r", "r"), "R[a] := !R[b] (bool)"),
    ("BNOT", ("r", "r"), "R[a] := ~R[b]"),
    ("SELECT", ("r", "r", "r", "r"), "R[a] := R[b] ? R[c] : R[d]"),
    # --- structured control flow (§6.5, §7.3)
    ("IF", ("r", "t"), "lanes with R[a] run on; the others skip to ->b (ELSE or END)",
     {"opens": True}),
    ("ELSE", ("t",), "switch to the lanes that skipped the IF; ->a is the END"),
    ("LOOP", ("t",), "start a loop whose END is ->a", {"opens": True}),
    ("BREAK_IF", ("r",), "lanes with R[a] leave the innermost loop (masked until its END)"),
    ("CONTINUE_IF", ("r",), "lanes with R[a] skip to the next iteration of the innermost loop"),
    ("END", ("t",), "close the IF/LOOP at ->a: reconverge, or iterate while lanes remain",
     {"closes": True}),
    ("YIELD", (), "terminate the active lanes (§6.5)", {"kernel_only": True}),
    ("ONCE", ("r", "i", "i"),
     "R[a] := true for the one lane performing this outer-level execution of site b "
     "in its instance of c lanes (0: the block) (§7.2.2)", {"kernel_only": True}),
    # --- memory (§3.2, §8.6)
    ("ALLOC", ("b",), "allocate and zero buffer a for this instance, if not yet (§3.2.4)"),
    ("FILL", ("b", "r", "c?"), "every element of buffer a := R[b]; collective at site c"),
    ("LOAD", ("r", "a"), "R[a] := @b (bounds-checked)"),
    ("STORE", ("a", "r"), "@a := R[b] converted to the element type"),
    ("UPDATE", ("a", "r", "i"), "@a := @a <op c> R[b], one lane after another (c: an opcode)"),
    ("DIMOF", ("r", "b", "i"), "R[a] := extent c of buffer b's current instance"),
    # --- DMA and futures (§9)
    ("DMA", ("d", "c?"), "copy as DMA descriptor a says; a collective of site b when it "
     "names one", {"blocks": True}),
    ("FUT_ANY", ("f",), "future a := a placeholder without data (dma.any)"),
    ("WAIT", ("f", "c?"), "complete future a's async transfer; a barrier of site b",
     {"blocks": True}),
    ("SWAP", ("f", "f"), "exchange the handles of futures a and b"),
    ("FUT_DIM", ("r", "f", "i"), "R[a] := extent c of future b's data"),
    # --- synchronisation (§6.7, §6.8, §7.2.3, §10)
    ("BARRIER", ("c",), "rendezvous of the participants of site a", _COLL),
    ("TRIGGER", ("e", "r"), "arrive once at slot R[b] of event a", {"kernel_only": True}),
    ("WAIT_EVENT", ("e", "r"), "block until slot R[b] of event a completes the lane's next "
     "generation", {"blocks": True, "kernel_only": True}),
    # --- MMA (§11): each a collective of its unit
    ("MMA_FILL", ("m", "r", "c"), "fragment a := R[b] everywhere", _COLL),
    ("MMA_LOAD", ("m", "v", "c"), "fragment a := the tile of view b", _COLL),
    ("MMA_EXEC", ("m", "m", "m", "i", "c"),
     "fragment a += b x c in layout d (0 row.row, 1 row.col, 2 col.row, 3 col.col)", _COLL),
    ("MMA_STORE", ("m", "v", "i", "c"), "view b := fragment a (c=1: transposed)", _COLL),
    # --- output and checks (§6.9, §13)
    ("PRINT", ("p",), "print format a, one lane after another"),
    ("ASSERT", ("r", "s"), "fault with message S[b], verbatim, where R[a] is false"),
    # --- host (§14.2)
    ("LAUNCH", ("l",), "run the kernel launch described by a", {"host_only": True}),
    ("RET", (), "return nothing", {"host_only": True}),
    ("RET_VAL", ("r",), "return R[a]", {"host_only": True}),
    ("RET_BUF", ("b",), "return a copy of buffer a", {"host_only": True}),
    # --- appended, so that every opcode above keeps its number (format 1 files still read)
    ("ASSERT_FMT", ("r", "p"), "fault where R[a] is false, with the text print format b "
     "writes for the lowest such lane (§13.2): run-time checks that show values (§5.5.2, "
     "§6.2.2)"),
)

BY_NAME = {op.name: op for op in TABLE}
assert all(len(op.operands) <= MAX_OPERANDS for op in TABLE)


def _export():
    g = globals()
    for op in TABLE:
        g[op.name] = op.code


_export()

# Binary ALU opcodes in operator order: UPDATE's immediate names one of these.
BINARY_ALU = tuple(BY_NAME[n].code for n in
                   ("ADD", "SUB", "MUL", "DIV", "MOD", "MIN", "MAX", "AND", "OR", "XOR",
                    "SHL", "SHR"))
COMPARE = tuple(BY_NAME[n].code for n in ("EQ", "NE", "LT", "LE", "GT", "GE"))
