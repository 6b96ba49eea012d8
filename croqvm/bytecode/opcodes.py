"""The opcode table: the single source of truth for croqvm's bytecode (ARCHITECTURE.md).

Instruction encoding (``Code.code`` is a flat list of ints, ``WIDTH`` per instruction)::

    +--------+------+------+------+------+------+------+
    | opcode |  a   |  b   |  c   |  d   |  e   | span |
    +--------+------+------+------+------+------+------+
      word 0   1      2      3      4      5      6

Operands a..e are read by the kinds listed in ``Op.operands`` (unused slots are 0);
``span`` indexes ``Module.spans``. Everything else -- the encoder's arity checks and
constant-register guard, the verifier's operand, type and placement rules, the
disassembler, the engines' dispatch tables, the native C header and docs/OPCODES.md
(``python -m croqvm.bytecode.generate``) -- is derived from ``TABLE``.

Operand kinds (``OPERAND_KINDS``) name the table an operand indexes in the enclosing
``Code`` (croqvm.bytecode.module). A kind followed by ``?`` also accepts -1 ("none").

Notation of the meanings: ``R[a]`` register a of the executing lane, ``K[b]`` constant b,
``S[b]`` string b, ``@a`` the element an access descriptor names, ``->T`` a stored
instruction index.

Each row also states:

- ``types``: the dtype rule of each register operand, in operand order (the classes of
  ``verify_rules.CLASSES``; a trailing ``=`` ties the dtypes of all such operands of the
  instruction). Arithmetic never promotes: its operands are already of the operation type
  (LANGUAGE.md §12.2), a *computation type* -- s32, u32, s64, u64, f16, bf16, f32, f64, and
  bool for logic -- and so is its result. Lowering converts narrower integers, bool,
  tf32 and fp8 with ``CVT`` first, so conversions happen in CVT (and where a value
  meets memory: LOAD, STORE, FILL, MMA_FILL, which convert as CVT does) and nowhere else.
- ``imms``: the rule of each immediate operand (``verify_code`` knows them).
- ``writes``: the position of the register operand the op writes, or -1.
- ``optype``: the operation type and the result, for the docs.
- ``faults``: the runtime errors the op itself may raise (the kinds of the message
  catalogue); every instruction may also exceed the step limit, and with
  ``check="init"`` read a register no instruction wrote (``UNINITIALISED_REGISTER``).
- ``collective`` / ``blocks``: never, always, or when the op's collective-site operand
  (kind ``c?``) names a site (``Mode``).
- ``entry``: a rule on the side-table entry an operand names (``verify_code``).
- ``returns``: for a return opcode, the ``Function.ret_kind`` it belongs to.

Two rules of synchronisation hold for every engine and for generated CUDA code:

- A *collective* is a rendezvous of its participants (LANGUAGE.md §7.4): no participant
  runs past it until every live participant has arrived; its effect then happens once;
  and every participant observes the effect after it. It therefore implies a full
  barrier of the participants before and after its effect.
- ``ONCE r, site, unit`` is always followed by ``IF r`` whose body (no ELSE) is the
  site's *effect block*: straight-line code without control flow, blocking, collective or
  ONCE instructions (the verifier checks it). The claiming lane runs the block; every
  other lane of the instance that reaches the same execution of the site waits at the
  IF's END until the claimer has left the block, so the effect is visible to all of them
  from the next instruction on (§7.2.2). The interpreters publish by not preempting the
  claiming warp until it is past that END; a GPU waits on a per-site flag there.
"""
from __future__ import annotations

from enum import IntEnum

from croqvm.core.faults import Kind as K
from croqvm.core.records import dataclass

from .module import RetKind

WIDTH = 7          # words per instruction
SPAN = WIDTH - 1   # the word holding the span index
MAX_OPERANDS = 5


def decode(flat) -> list[tuple]:
    """The instructions of a flat code array, each a tuple of WIDTH words: the opcode,
    the operands, the span."""
    return [tuple(flat[i:i + WIDTH]) for i in range(0, len(flat), WIDTH)]


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
    "x": ("asms", "inline assembly"),
    "y": ("cxx_calls", "cxx call"),
    "z": ("extern_calls", "extern call"),
    "t": (None, "target"),   # instruction index, checked by the structure pass
    "i": (None, "immediate"),
}


class Mode(IntEnum):
    """When an opcode is a collective, or may block its warp."""
    NEVER = 0
    ALWAYS = 1
    WITH_SITE = 2      # when its collective-site operand (kind ``c?``) is >= 0


@dataclass(frozen=True)
class Op:
    code: int
    name: str
    operands: tuple      # operand kinds, e.g. ("r", "r", "r")
    meaning: str
    types: tuple = ()          # a dtype rule per register operand (module docstring)
    imms: tuple = ()           # a rule per immediate operand
    writes: int = -1           # position of the register operand written, -1: none
    optype: str = ""           # operation type and result (docs)
    faults: tuple = ()         # the faults.Kind of each runtime error it may raise
    collective: Mode = Mode.NEVER   # executed once by a converged set of lanes (§7.4)
    blocks: Mode = Mode.NEVER       # may suspend the warp
    opens: bool = False        # IF / LOOP: pushes a control frame
    closes: bool = False       # END
    host_only: bool = False
    kernel_only: bool = False
    entry: str = ""            # rule on the table entry an operand names
    returns: RetKind | None = None  # a return opcode: the function kind it belongs to
    effect_block: bool = False      # ONCE: the IF on its result that follows is its effect block


# -- families of rows ---------------------------------------------------------------------

_ARITH = dict(types=("arith=", "arith=", "arith="), writes=0,
              optype="T, the operands' type (an arithmetic computation type); result T")
_LOGIC = dict(types=("logic=", "logic=", "logic="), writes=0,
              optype="T, the operands' type (a 32- or 64-bit integer, or bool); result T")
_SHIFT = dict(types=("shift=", "shift=", "shift"), writes=0, faults=(K.SHIFT_COUNT,),
              optype="T, R[b]'s type (a 32- or 64-bit integer); the count R[c] is any such "
                     "integer; result T")
_COMPARE = dict(types=("bool", "compare=", "compare="), writes=0,
                optype="T, the operands' type (a computation type, §12.3.4); result bool")
_LEAF = dict(writes=0)
_COLL = dict(collective=Mode.ALWAYS, blocks=Mode.ALWAYS, kernel_only=True)
_SITE = dict(collective=Mode.WITH_SITE, blocks=Mode.WITH_SITE)
_COLL_FAULTS = (K.NOT_A_PARTICIPANT, K.DIVERGENT_COLLECTIVE)
_MMA_FAULTS = (K.NOT_A_PARTICIPANT, K.UNIT_INACTIVE, K.UNIT_TERMINATED, K.OPERANDS_DIFFER)
_BASE_FAULTS = (K.BUFFER_BEFORE_DECLARATION, K.BUFFER_ARRAY_INDEX, K.FUTURE_NO_DATA,
                K.FUTURE_NOT_WAITED, K.OUT_OF_RANGE)
_CONVERT = (K.FLOAT_TO_INT,)
_BAR_FAULTS = (K.NOT_A_PARTICIPANT, K.DIVERGENT_COLLECTIVE, K.OPERANDS_DIFFER, K.BAR_ID,
               K.BAR_COUNT, K.BAR_COUNT_DIFFERS)


def _op(name: str, operands: tuple, meaning: str, *families: dict, **fields) -> tuple:
    merged: dict = {}
    for family in families:
        merged.update(family)
    merged.update(fields)
    return name, operands, meaning, merged


_ROWS = (
    # --- data and arithmetic (§4, §12)
    _op("NOP", (), "nothing"),
    _op("CONST", ("r", "k"), "R[a] := K[b], a constant of R[a]'s dtype", _LEAF,
        types=("any",), entry="typed_const"),
    _op("MOV", ("r", "r"), "R[a] := R[b]", _LEAF, types=("any=", "any=")),
    _op("CVT", ("r", "r"), "R[a] := R[b] converted to R[a]'s dtype (§12.3.3): integers wrap, "
        "floats truncate toward zero into integers, every number rounds once to nearest "
        "even into a float type, x != 0 into bool", _LEAF, types=("any", "any"),
        faults=_CONVERT, optype="from R[b]'s dtype to R[a]'s; NaN or out of range into an "
        "integer faults"),
    _op("LANE", ("r",), "R[a] := the lane's index in its block (0 on the host)", _LEAF,
        types=("index",)),
    _op("BLOCKIDX", ("r", "i"), "R[a] := the block's index along grid dimension b", _LEAF,
        types=("index",), imms=("grid_dim",)),
    _op("ADD", ("r", "r", "r"), "R[a] := R[b] + R[c] (integers wrap)", _ARITH),
    _op("SUB", ("r", "r", "r"), "R[a] := R[b] - R[c] (integers wrap)", _ARITH),
    _op("MUL", ("r", "r", "r"), "R[a] := R[b] * R[c] (integers wrap)", _ARITH),
    _op("DIV", ("r", "r", "r"), "R[a] := R[b] / R[c]: integers truncate toward zero, "
        "MIN / -1 wraps to MIN, an integer division by zero faults", _ARITH,
        faults=(K.DIVISION_BY_ZERO,)),
    _op("MOD", ("r", "r", "r"), "R[a] := R[b] % R[c]: the sign of the dividend, MIN % -1 is "
        "0, an integer division by zero faults; floats as C's fmod", _ARITH,
        faults=(K.DIVISION_BY_ZERO,)),
    _op("MIN", ("r", "r", "r"), "R[a] := min(R[b], R[c]); a NaN operand is ignored, equal "
        "operands (+0 and -0 included) give R[b]", _ARITH),
    _op("MAX", ("r", "r", "r"), "R[a] := max(R[b], R[c]); a NaN operand is ignored, equal "
        "operands (+0 and -0 included) give R[b]", _ARITH),
    _op("AND", ("r", "r", "r"), "R[a] := R[b] & R[c] (bool: logical and)", _LOGIC),
    _op("OR", ("r", "r", "r"), "R[a] := R[b] | R[c] (bool: logical or)", _LOGIC),
    _op("XOR", ("r", "r", "r"), "R[a] := R[b] ^ R[c]", _LOGIC),
    _op("SHL", ("r", "r", "r"), "R[a] := R[b] << R[c]; a count outside 0 .. bits(T) - 1 "
        "faults", _SHIFT),
    _op("SHR", ("r", "r", "r"), "R[a] := R[b] >> R[c], arithmetic for signed T; a count "
        "outside 0 .. bits(T) - 1 faults", _SHIFT),
    _op("EQ", ("r", "r", "r"), "R[a] := R[b] == R[c] (false with a NaN)", _COMPARE),
    _op("NE", ("r", "r", "r"), "R[a] := R[b] != R[c] (true with a NaN)", _COMPARE),
    _op("LT", ("r", "r", "r"), "R[a] := R[b] < R[c] (false with a NaN)", _COMPARE),
    _op("LE", ("r", "r", "r"), "R[a] := R[b] <= R[c] (false with a NaN)", _COMPARE),
    _op("GT", ("r", "r", "r"), "R[a] := R[b] > R[c] (false with a NaN)", _COMPARE),
    _op("GE", ("r", "r", "r"), "R[a] := R[b] >= R[c] (false with a NaN)", _COMPARE),
    _op("NEG", ("r", "r"), "R[a] := -R[b] (integers wrap)", _LEAF, types=("arith=", "arith="),
        optype="T, the operand's type (an arithmetic computation type); result T"),
    _op("NOT", ("r", "r"), "R[a] := !R[b]", _LEAF, types=("bool", "bool"),
        optype="bool"),
    _op("BNOT", ("r", "r"), "R[a] := ~R[b]", _LEAF, types=("shift=", "shift="),
        optype="T, the operand's type (a 32- or 64-bit integer); result T"),
    _op("SELECT", ("r", "r", "r", "r"), "R[a] := R[b] ? R[c] : R[d]", _LEAF,
        types=("any=", "bool", "any=", "any=")),
    # --- structured control flow (§6.5, §7.3)
    _op("IF", ("r", "t"), "lanes with R[a] run on; the others skip to ->b (ELSE or END)",
        types=("bool",), opens=True),
    _op("ELSE", ("t",), "switch to the lanes that skipped the IF; ->a is the END"),
    _op("LOOP", ("t",), "start a loop whose END is ->a", opens=True),
    _op("BREAK_IF", ("r",), "lanes with R[a] leave the innermost loop (masked until its END)",
        types=("bool",)),
    _op("CONTINUE_IF", ("r",), "lanes with R[a] skip to the next iteration of the innermost "
        "loop", types=("bool",)),
    _op("END", ("t",), "close the IF/LOOP at ->a: reconverge, or iterate while lanes remain",
        closes=True),
    _op("YIELD", (), "terminate the active lanes (§6.5)", kernel_only=True),
    _op("ONCE", ("r", "i", "i"), "R[a] := true for the one lane performing this outer-level "
        "execution of site b in its instance of c lanes (0: the block) (§7.2.2); the IF R[a] "
        "that follows is the effect block the other lanes wait for at its END", _LEAF,
        types=("bool",), imms=("once_site", "unit"), kernel_only=True, effect_block=True),
    # --- memory (§3.2, §8.6)
    _op("ALLOC", ("b",), "allocate and zero buffer a for this instance, if not yet (§3.2.4)",
        faults=(K.ALLOC_EXTENT, K.SHARED_LIMIT, K.ALLOC_BUFFER)),
    _op("FILL", ("b", "r", "c?"), "every element of buffer a := R[b] converted to the element "
        "type; a collective of site c when it names one", _SITE, types=("any",),
        faults=(K.BUFFER_BEFORE_DECLARATION,) + _CONVERT + _COLL_FAULTS + (K.OPERANDS_DIFFER,)),
    _op("LOAD", ("r", "a"), "R[a] := @b converted to R[a]'s dtype (bounds-checked)", _LEAF,
        types=("any",), faults=_BASE_FAULTS + (K.UNINITIALISED,) + _CONVERT),
    _op("STORE", ("a", "r"), "@a := R[b] converted to the element type (bounds-checked)",
        types=("any",), faults=_BASE_FAULTS + _CONVERT),
    _op("UPDATE", ("a", "r", "i"), "@a := @a <op c> R[b], one lane after another (c: a binary "
        "ALU opcode); the element converts to R[b]'s dtype T, the result back",
        types=("arith",), imms=("alu_op",),
        optype="T, R[b]'s type: the computation type of the element type and the value's "
        "(§12.2); result converted to the element type",
        faults=_BASE_FAULTS + (K.UNINITIALISED, K.DIVISION_BY_ZERO, K.SHIFT_COUNT) + _CONVERT),
    _op("DIMOF", ("r", "b", "i"), "R[a] := extent c of buffer b's current instance", _LEAF,
        types=("index",), imms=("buffer_dim",), faults=(K.BUFFER_BEFORE_DECLARATION,)),
    # --- DMA and futures (§9)
    _op("DMA", ("d", "c?"), "copy as DMA descriptor a says; a collective of site b when it "
        "names one", _SITE,
        faults=(K.EMPTY_TILE, K.TILE_OUTSIDE, K.DMA_SHAPE, K.NEVER_WAITED,
                K.ALLOC_EXTENT, K.SHARED_LIMIT, K.ALLOC_BUFFER, K.ALLOC_TILE)
        + _BASE_FAULTS[:4]
        + _COLL_FAULTS + (K.OPERANDS_DIFFER, K.FUTURE_NOT_CONTIGUOUS)),
    _op("FUT_ANY", ("f",), "future a := a placeholder without data (dma.any)"),
    _op("WAIT", ("f", "c?"), "complete future a's async transfer; a barrier of site b when it "
        "names one", _SITE, faults=(K.FUTURE_WAITED_TWICE,) + _COLL_FAULTS),
    _op("SWAP", ("f", "f"), "exchange the handles of futures a and b (of one type)",
        entry="same_future"),
    _op("FUT_DIM", ("r", "f", "i"), "R[a] := extent c of future b's data", _LEAF,
        types=("index",), imms=("future_dim",), faults=(K.FUTURE_NO_DATA,)),
    # --- synchronisation (§6.7, §6.8, §7.2.3, §10, §14.2)
    _op("BARRIER", ("c",), "rendezvous of the participants of site a", _COLL,
        faults=_COLL_FAULTS),
    _op("FENCE", ("i",), "a memory fence among the lanes of the executing lane's unit of a "
        "lanes (0: the block; sync.fence, §6.8); nothing in the interpreters, whose memory "
        "is sequentially consistent", imms=("unit",), kernel_only=True),
    _op("TRIGGER", ("e", "r"), "arrive once at slot R[b] of event a", types=("index",),
        entry="event_scope", faults=(K.EVENT_INDEX,), kernel_only=True),
    _op("WAIT_EVENT", ("e", "r"), "block until slot R[b] of event a completes the lane's next "
        "generation", types=("index",), faults=(K.EVENT_INDEX,), blocks=Mode.ALWAYS,
        kernel_only=True),
    _op("SYNC_GLOBAL", (), "wait until every kernel launched asynchronously so far has "
        "completed (sync.global, §6.8); nothing in the interpreters, which run every launch "
        "to completion", host_only=True),
    # --- MMA (§11): each a collective of its unit, named by its site; on the host (no site,
    # §11.2 (c)) the host lane runs it alone
    _op("MMA_FILL", ("m", "r", "c?"), "accumulator a := R[b] converted to its element type, "
        "everywhere", _SITE, types=("any",), entry="mma_fill",
        faults=_CONVERT + _MMA_FAULTS + (K.MMA_PENDING,)),
    _op("MMA_LOAD", ("m", "v", "c?"), "fragment a (an operand, or an accumulator it starts) "
        ":= the tile of view b, of a's element type", _SITE, entry="mma_load",
        faults=(K.EMPTY_TILE, K.MMA_READ_OUTSIDE, K.MMA_UNINITIALISED, K.MMA_TILE_SHAPE)
        + _BASE_FAULTS[:4]
        + _MMA_FAULTS + (K.MMA_PENDING,)),
    _op("MMA_EXEC", ("m", "m", "m", "i", "c?"), "accumulator a += b x c in layout d (0 "
        "row.row, 1 row.col, 2 col.row, 3 col.col): k ascending, each step rounded once "
        "(§12.4)", _SITE, imms=("mma_layout",), entry="mma_exec",
        optype="the accumulator's type; A and B of one element type (or both 8-bit integers)",
        faults=(K.FRAGMENT_EMPTY, K.MMA_SHAPES, K.ALLOC_FRAGMENT) + _MMA_FAULTS
        + (K.MMA_PENDING,)),
    _op("MMA_STORE", ("m", "v", "i", "c?"), "view b := accumulator a converted to the "
        "view's element type (c=1: transposed)", _SITE, imms=("flag",), entry="mma_store",
        faults=(K.MMA_TILE_SHAPE, K.MMA_STORE_OWNERS, K.ALLOC_FRAGMENT) + _BASE_FAULTS[:4]
        + _MMA_FAULTS + (K.MMA_PENDING,)),
    # --- output and checks (§6.9, §13)
    _op("PRINT", ("p",), "print format a, one lane after another"),
    _op("ASSERT", ("r", "s"), "fault with message S[b], verbatim, where R[a] is false",
        types=("bool",), faults=(K.ASSERT,)),
    _op("ASSERT_FMT", ("r", "p"), "fault where R[a] is false, with the text print format b "
        "writes for the lowest such lane (§13.2): run-time checks that show values (§5.5.2, "
        "§6.2.2)", types=("bool",), entry="message", faults=(K.ASSERT_FMT,)),
    # --- host (§14.2)
    _op("LAUNCH", ("l",), "run the kernel launch described by a (an async one need not have "
        "completed before SYNC_GLOBAL or the function's end)", host_only=True,
        faults=(K.GRID_BOUND, K.GRID_LIMIT, K.TOO_MANY_THREADS, K.BLOCK_SIZE)),
    _op("RET", (), "return nothing (the end of every host program)", host_only=True),
    _op("RET_VAL", ("r",), "return R[a]", types=("any",), host_only=True,
        returns=RetKind.SCALAR),
    _op("RET_BUF", ("b",), "return a copy of buffer a", host_only=True,
        returns=RetKind.BUFFER, faults=(K.BUFFER_BEFORE_DECLARATION,)),
    # --- cyclic event generations and trigger-after (§10.6, §10.7)
    _op("WAIT_EVENT_AT", ("e", "r"), "block until slot R[b] % S of event a (S slots) has "
        "completed a generation of the parity of (R[b] / S) + 1, as an mbarrier parity wait "
        "of phase (R[b] / S) % 2 does", types=("order",), faults=(K.EVENT_INDEX,),
        blocks=Mode.ALWAYS, kernel_only=True),
    _op("FUT_BIND", ("f",), "hand future a's async transfer to the TRIGGER that follows: it "
        "lands, counts as waited by the lane, and the trigger's arrival publishes it",
        faults=(K.FUTURE_WAITED_TWICE,), kernel_only=True),
    # --- asynchronous MMA and masked stores (§11.1, §11.5)
    _op("MMA_ASYNC", ("m", "c?"), "the MMAs just executed on accumulator a complete "
        "asynchronously: a has one more pending completion, and no other operation may use "
        "it until MMA_WAIT", _SITE, entry="mma_acc", faults=_MMA_FAULTS),
    _op("MMA_WAIT", ("m", "c?"), "complete the pending asynchronous MMAs of accumulator a "
        "(a wait of its operation future)", _SITE, entry="mma_acc",
        faults=(K.MMA_NOT_PENDING,) + _MMA_FAULTS),
    _op("MMA_STORE_MASK", ("m", "v", "r", "r", "c?"), "view b := accumulator a converted to "
        "the view's element type, the elements of rows below R[c] and columns below R[d] "
        "only", _SITE, types=("index", "index"), entry="mma_store",
        faults=(K.MMA_TILE_SHAPE, K.MMA_STORE_OWNERS, K.ALLOC_FRAGMENT, K.MMA_PENDING)
        + _BASE_FAULTS[:4] + _MMA_FAULTS),
    # --- fragment elements (§11.7): the lane reads and writes only the elements of its
    # unit's copy that the hardware layout gives it (a lane of the host or of a one-lane
    # unit holds them all)
    _op("FRAG_GET", ("r", "m", "r", "r"), "R[a] := element (R[c], R[d]) of accumulator b's "
        "copy, converted to R[a]'s dtype", _LEAF, types=("any", "index", "index"),
        entry="frag_elem",
        faults=(K.FRAGMENT_INDEX, K.FRAGMENT_NOT_OWNED, K.ALLOC_FRAGMENT) + _CONVERT),
    _op("FRAG_SET", ("m", "r", "r", "r"), "element (R[b], R[c]) of accumulator a's copy := "
        "R[d] converted to its element type", types=("index", "index", "any"),
        entry="frag_elem",
        faults=(K.FRAGMENT_INDEX, K.FRAGMENT_NOT_OWNED, K.ALLOC_FRAGMENT) + _CONVERT),
    _op("SHFL_XOR", ("r", "r", "i"), "R[a] := R[b] of the lane whose index in the warp is "
        "the lane's xor c (a warp shuffle; that lane must be active)", _LEAF,
        types=("any=", "any="), imms=("lane_mask",), faults=(K.SHUFFLE_INACTIVE,),
        kernel_only=True),
    _op("MMA_GATHER", ("m", "b", "i", "c?"), "fragment a := the 2-D local buffer b, element "
        "(r, c) from the copy of the lane that holds it (c=1: the lane holding (c, r) of the "
        "layout, a transposed operand), converted to a's element type", _SITE,
        imms=("flag",), entry="mma_gather",
        faults=(K.MMA_TILE_SHAPE, K.MMA_UNINITIALISED, K.BUFFER_BEFORE_DECLARATION)
        + _MMA_FAULTS),
    # --- inline assembly (§6.11)
    _op("ASM", ("x",), "inline assembly a, for the GPU's assembler: it reads and writes the "
        "registers its operands name; on any other device it is a runtime error",
        faults=(K.ASM_ON_CPU,), kernel_only=True, entry="asm_operands"),
    # --- C++ device functions (§6.10.4)
    _op("CALL_CXX", ("y",), "call a: per active lane, in increasing lane order, the C++ "
        "function with that lane's argument registers, its result into that lane's result "
        "register", kernel_only=True, entry="cxx_call"),
    # --- builtin functions (§4.4, §4.5; croqvm/core/intrinsics.py)
    _op("MATH", ("r", "r", "r", "r", "i"), "R[a] := math function e of R[b] (and R[c], R[d] "
        "for those of two and three arguments; the others repeat R[b]), computed in f64 and "
        "rounded once (docs/NUMERICS.md)", _LEAF, types=("any", "math=", "math=", "math="),
        imms=("math_fn",), optype="T, the arguments' type (f16, bf16, f32 or f64); result T, "
        "bool for __isfinite"),
    _op("ATOMIC", ("r", "a", "r", "r", "i"), "R[a] := @b, then @b := atomic operation e of "
        "@b and R[c] (__atomic_cas: R[c] where @b == R[d]; the others repeat R[c]), one lane "
        "after another in lane order", _LEAF, types=("any=", "any=", "any="),
        imms=("atomic_op",), entry="atomic",
        optype="T, the element type of @b, one the operation takes (croqvm/core/intrinsics.py); "
        "result T", faults=_BASE_FAULTS + (K.UNINITIALISED,)),
    # --- named barriers (__bar_sync, __bar_arrive; §6.8): the warp counts for its 32 lanes;
    # site c is the statement's collective set, whose lanes of the warp must all be active.
    # Not collectives: no rendezvous of a fixed set of lanes, no effect run once
    _op("BAR_SYNC", ("r", "r", "c"), "the warp arrives at named barrier R[a] (1-15), whose "
        "phase completes when R[b] threads (a positive multiple of 32, at most the block's "
        "warps' lanes) have arrived, and blocks until it completes", types=("index", "index"),
        faults=_BAR_FAULTS, blocks=Mode.ALWAYS, kernel_only=True),
    _op("BAR_ARRIVE", ("r", "r", "c"), "the warp arrives at named barrier R[a] as BAR_SYNC "
        "does, without waiting", types=("index", "index"), faults=_BAR_FAULTS,
        kernel_only=True),
    # --- cooperative launches (§7.1.4)
    _op("GRID_SYNC", ("c",), "grid barrier: the participants of site a in every block of the "
        "cooperative launch meet; a block finished before it, or one that can not be "
        "resident while the others wait, is a deadlock", _COLL,
        faults=_COLL_FAULTS + (K.GRID_FINISHED, K.GRID_RESIDENT)),
    # --- functions defined in no file of the program, and the register budget (§6.10.6)
    _op("CALL_EXTERN", ("s", "z"), "call b of function S[a], defined in no file of the "
        "program: the CUDA path leaves it to the C++ compiler; on the CPU it is a runtime "
        "error", faults=(K.EXTERN_CALL,), kernel_only=True, entry="extern_call"),
    _op("SET_MAXNREG", ("i", "i"), "the warp's registers per thread become a (b=1: an "
        "increase, 0: a decrease; setmaxnreg on sm_90a); no effect on the CPU",
        imms=("reg_budget", "flag"), kernel_only=True),
    # --- block-scaled MMA (§11.8)
    _op("MMA_SCALE", ("m", "m", "v", "r", "c?"), "accumulator a += partial sum b (an "
        "accumulator of a's shape and type) scaled per row: element (i, j) adds b[i][j] times "
        "s_i, where s_i := the i-th element of view c in row-major order (0 outside its "
        "buffer) times R[d], rounded to f32; f32 accumulates by one fused multiply-add, f16 "
        "rounds the product to f32, then to f16, then adds; then b := 0", _SITE,
        types=("scale",), entry="mma_scale",
        optype="the accumulator's type, f16 or f32; scales f32",
        faults=(K.FRAGMENT_EMPTY, K.MMA_TILE_SHAPE, K.MMA_UNINITIALISED, K.ALLOC_FRAGMENT,
                K.MMA_PENDING) + _BASE_FAULTS[:4] + _MMA_FAULTS),
    # --- 2:4 structured-sparse MMA (§11.9)
    _op("MMA_SPARSE", ("m", "m", "m", "c?"), "A operand fragment a := the dense [M, 2K] "
        "tile that packed fragment b [M, K] and metadata fragment c [M, K/4] of 8-bit "
        "integers stand for: in row i, the kept values b[i][2g] and b[i][2g + 1] of group g "
        "go to columns 4g + p and 4g + q, where p | q << 2 is half-byte g % 2 (the low one "
        "first) of c[i][g / 2] (q's value when p = q); every other element is 0", _SITE,
        entry="mma_sparse",
        faults=(K.FRAGMENT_EMPTY, K.MMA_SHAPES, K.ALLOC_FRAGMENT) + _MMA_FAULTS),
    # --- cluster-scope trigger (§10.8)
    _op("TRIGGER_CLUSTER", ("e", "r"), "arrive once at slot R[b] of event a in every block "
        "of the executing block's cluster, its own included", types=("index",),
        entry="event_scope", faults=(K.EVENT_INDEX,), kernel_only=True),
)

TABLE = tuple(Op(code, name, operands, meaning, **fields)
              for code, (name, operands, meaning, fields) in enumerate(_ROWS))
BY_NAME = {op.name: op for op in TABLE}
assert all(len(op.operands) <= MAX_OPERANDS for op in TABLE)

# Opcode numbers by name, written out so that tools see them; a test checks them against TABLE.
(NOP, CONST, MOV, CVT, LANE, BLOCKIDX, ADD, SUB, MUL, DIV, MOD, MIN, MAX, AND, OR, XOR, SHL,
 SHR, EQ, NE, LT, LE, GT, GE, NEG, NOT, BNOT, SELECT, IF, ELSE, LOOP, BREAK_IF, CONTINUE_IF,
 END, YIELD, ONCE, ALLOC, FILL, LOAD, STORE, UPDATE, DIMOF, DMA, FUT_ANY, WAIT, SWAP, FUT_DIM,
 BARRIER, FENCE, TRIGGER, WAIT_EVENT, SYNC_GLOBAL, MMA_FILL, MMA_LOAD, MMA_EXEC, MMA_STORE,
 PRINT, ASSERT, ASSERT_FMT, LAUNCH, RET, RET_VAL, RET_BUF, WAIT_EVENT_AT, FUT_BIND, MMA_ASYNC,
 MMA_WAIT, MMA_STORE_MASK, FRAG_GET, FRAG_SET, SHFL_XOR, MMA_GATHER, ASM, CALL_CXX, MATH,
 ATOMIC, BAR_SYNC, BAR_ARRIVE, GRID_SYNC, CALL_EXTERN, SET_MAXNREG, MMA_SCALE,
 MMA_SPARSE, TRIGGER_CLUSTER) = range(len(TABLE))

# Binary ALU opcodes in operator order: UPDATE's immediate names one of these.
BINARY_ALU = (ADD, SUB, MUL, DIV, MOD, MIN, MAX, AND, OR, XOR, SHL, SHR)
COMPARE = (EQ, NE, LT, LE, GT, GE)
