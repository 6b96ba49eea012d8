/* generated from croqvm/bytecode/opcodes.py, croqvm/bytecode/module.py, croqvm/core/dtypes.py, croqvm/core/faults.py, croqvm/core/limits.py, croqvm/core/intrinsics.py by python -m croqvm.bytecode.generate; do not edit */
/* cq_opcodes.h -- the bytecode as C: the instruction encoding, the opcode table, the enum values of the .cqb model (docs/CQB.md), element types, fault kinds and limits. Meanings: docs/OPCODES.md. */
#ifndef CQ_OPCODES_H
#define CQ_OPCODES_H

#include <stdint.h>

#define CQ_FORMAT_VERSION 6
#define CQ_WIDTH 7  /* words per instruction: opcode, a, b, c, d, e, span */
#define CQ_SPAN 6  /* the word holding the span index */
#define CQ_MAX_OPERANDS 5
#define CQ_DYNAMIC (-1)  /* an extent known only at run time */
#define CQ_WARP_SIZE 32
#define CQ_WARPGROUP_SIZE 128
#define CQ_MAX_BLOCK_SIZE 1024
#define CQ_NAMED_BARRIERS 16
#define CQ_SM_COUNT 132
#define CQ_SM_THREADS 2048
#define CQ_SM_BLOCKS 32
#define CQ_MAX_REGISTERS 65536
#define CQ_MAX_SHARED_BYTES 233472

/* Opcodes: word 0 of an instruction (docs/OPCODES.md). */
enum cq_opcode {
    CQ_OP_NOP = 0,  /* nothing */
    CQ_OP_CONST = 1,  /* R[a] := K[b], a constant of R[a]'s dtype */
    CQ_OP_MOV = 2,  /* R[a] := R[b] */
    CQ_OP_CVT = 3,  /* R[a] := R[b] converted to R[a]'s dtype (§12.3.3): integers wrap, floats truncate toward zero into integers, every number rounds once to nearest even into a float type, x != 0 into bool */
    CQ_OP_LANE = 4,  /* R[a] := the lane's index in its block (0 on the host) */
    CQ_OP_BLOCKIDX = 5,  /* R[a] := the block's index along grid dimension b */
    CQ_OP_ADD = 6,  /* R[a] := R[b] + R[c] (integers wrap) */
    CQ_OP_SUB = 7,  /* R[a] := R[b] - R[c] (integers wrap) */
    CQ_OP_MUL = 8,  /* R[a] := R[b] * R[c] (integers wrap) */
    CQ_OP_DIV = 9,  /* R[a] := R[b] / R[c]: integers truncate toward zero, MIN / -1 wraps to MIN, an integer division by zero faults */
    CQ_OP_MOD = 10,  /* R[a] := R[b] % R[c]: the sign of the dividend, MIN % -1 is 0, an integer division by zero faults; floats as C's fmod */
    CQ_OP_MIN = 11,  /* R[a] := min(R[b], R[c]); a NaN operand is ignored, equal operands (+0 and -0 included) give R[b] */
    CQ_OP_MAX = 12,  /* R[a] := max(R[b], R[c]); a NaN operand is ignored, equal operands (+0 and -0 included) give R[b] */
    CQ_OP_AND = 13,  /* R[a] := R[b] & R[c] (bool: logical and) */
    CQ_OP_OR = 14,  /* R[a] := R[b] | R[c] (bool: logical or) */
    CQ_OP_XOR = 15,  /* R[a] := R[b] ^ R[c] */
    CQ_OP_SHL = 16,  /* R[a] := R[b] << R[c]; a count outside 0 .. bits(T) - 1 faults */
    CQ_OP_SHR = 17,  /* R[a] := R[b] >> R[c], arithmetic for signed T; a count outside 0 .. bits(T) - 1 faults */
    CQ_OP_EQ = 18,  /* R[a] := R[b] == R[c] (false with a NaN) */
    CQ_OP_NE = 19,  /* R[a] := R[b] != R[c] (true with a NaN) */
    CQ_OP_LT = 20,  /* R[a] := R[b] < R[c] (false with a NaN) */
    CQ_OP_LE = 21,  /* R[a] := R[b] <= R[c] (false with a NaN) */
    CQ_OP_GT = 22,  /* R[a] := R[b] > R[c] (false with a NaN) */
    CQ_OP_GE = 23,  /* R[a] := R[b] >= R[c] (false with a NaN) */
    CQ_OP_NEG = 24,  /* R[a] := -R[b] (integers wrap) */
    CQ_OP_NOT = 25,  /* R[a] := !R[b] */
    CQ_OP_BNOT = 26,  /* R[a] := ~R[b] */
    CQ_OP_SELECT = 27,  /* R[a] := R[b] ? R[c] : R[d] */
    CQ_OP_IF = 28,  /* lanes with R[a] run on; the others skip to ->b (ELSE or END) */
    CQ_OP_ELSE = 29,  /* switch to the lanes that skipped the IF; ->a is the END */
    CQ_OP_LOOP = 30,  /* start a loop whose END is ->a */
    CQ_OP_BREAK_IF = 31,  /* lanes with R[a] leave the innermost loop (masked until its END) */
    CQ_OP_CONTINUE_IF = 32,  /* lanes with R[a] skip to the next iteration of the innermost loop */
    CQ_OP_END = 33,  /* close the IF/LOOP at ->a: reconverge, or iterate while lanes remain */
    CQ_OP_YIELD = 34,  /* terminate the active lanes (§6.5) */
    CQ_OP_ONCE = 35,  /* R[a] := true for the one lane performing this outer-level execution of site b in its instance of c lanes (0: the block) (§7.2.2); the IF R[a] that follows is the effect block the other lanes wait for at its END */
    CQ_OP_ALLOC = 36,  /* allocate and zero buffer a for this instance, if not yet (§3.2.4) */
    CQ_OP_FILL = 37,  /* every element of buffer a := R[b] converted to the element type; a collective of site c when it names one */
    CQ_OP_LOAD = 38,  /* R[a] := @b converted to R[a]'s dtype (bounds-checked) */
    CQ_OP_STORE = 39,  /* @a := R[b] converted to the element type (bounds-checked) */
    CQ_OP_UPDATE = 40,  /* @a := @a <op c> R[b], one lane after another (c: a binary ALU opcode); the element converts to R[b]'s dtype T, the result back */
    CQ_OP_DIMOF = 41,  /* R[a] := extent c of buffer b's current instance */
    CQ_OP_DMA = 42,  /* copy as DMA descriptor a says; a collective of site b when it names one */
    CQ_OP_FUT_ANY = 43,  /* future a := a placeholder without data (dma.any) */
    CQ_OP_WAIT = 44,  /* complete future a's async transfer; a barrier of site b when it names one */
    CQ_OP_SWAP = 45,  /* exchange the handles of futures a and b (of one type) */
    CQ_OP_FUT_DIM = 46,  /* R[a] := extent c of future b's data */
    CQ_OP_BARRIER = 47,  /* rendezvous of the participants of site a */
    CQ_OP_FENCE = 48,  /* a memory fence among the lanes of the executing lane's unit of a lanes (0: the block; sync.fence, §6.8); nothing in the interpreters, whose memory is sequentially consistent */
    CQ_OP_TRIGGER = 49,  /* arrive once at slot R[b] of event a */
    CQ_OP_WAIT_EVENT = 50,  /* block until slot R[b] of event a completes the lane's next generation */
    CQ_OP_SYNC_GLOBAL = 51,  /* wait until every kernel launched asynchronously so far has completed (sync.global, §6.8); nothing in the interpreters, which run every launch to completion */
    CQ_OP_MMA_FILL = 52,  /* accumulator a := R[b] converted to its element type, everywhere */
    CQ_OP_MMA_LOAD = 53,  /* fragment a (an operand, or an accumulator it starts) := the tile of view b, of a's element type */
    CQ_OP_MMA_EXEC = 54,  /* accumulator a += b x c in layout d (0 row.row, 1 row.col, 2 col.row, 3 col.col): k ascending, each step rounded once (§12.4) */
    CQ_OP_MMA_STORE = 55,  /* view b := accumulator a converted to the view's element type (c=1: transposed) */
    CQ_OP_PRINT = 56,  /* print format a, one lane after another */
    CQ_OP_ASSERT = 57,  /* fault with message S[b], verbatim, where R[a] is false */
    CQ_OP_ASSERT_FMT = 58,  /* fault where R[a] is false, with the text print format b writes for the lowest such lane (§13.2): run-time checks that show values (§5.5.2, §6.2.2) */
    CQ_OP_LAUNCH = 59,  /* run the kernel launch described by a (an async one need not have completed before SYNC_GLOBAL or the function's end) */
    CQ_OP_RET = 60,  /* return nothing (the end of every host program) */
    CQ_OP_RET_VAL = 61,  /* return R[a] */
    CQ_OP_RET_BUF = 62,  /* return a copy of buffer a */
    CQ_OP_WAIT_EVENT_AT = 63,  /* block until slot R[b] % S of event a (S slots) has completed a generation of the parity of (R[b] / S) + 1, as an mbarrier parity wait of phase (R[b] / S) % 2 does */
    CQ_OP_FUT_BIND = 64,  /* hand future a's async transfer to the TRIGGER that follows: it lands, counts as waited by the lane, and the trigger's arrival publishes it */
    CQ_OP_MMA_ASYNC = 65,  /* the MMAs just executed on accumulator a complete asynchronously: a has one more pending completion, and no other operation may use it until MMA_WAIT */
    CQ_OP_MMA_WAIT = 66,  /* complete the pending asynchronous MMAs of accumulator a (a wait of its operation future) */
    CQ_OP_MMA_STORE_MASK = 67,  /* view b := accumulator a converted to the view's element type, the elements of rows below R[c] and columns below R[d] only */
    CQ_OP_FRAG_GET = 68,  /* R[a] := element (R[c], R[d]) of accumulator b's copy, converted to R[a]'s dtype */
    CQ_OP_FRAG_SET = 69,  /* element (R[b], R[c]) of accumulator a's copy := R[d] converted to its element type */
    CQ_OP_SHFL_XOR = 70,  /* R[a] := R[b] of the lane whose index in the warp is the lane's xor c (a warp shuffle; that lane must be active) */
    CQ_OP_MMA_GATHER = 71,  /* fragment a := the 2-D local buffer b, element (r, c) from the copy of the lane that holds it (c=1: the lane holding (c, r) of the layout, a transposed operand), converted to a's element type */
    CQ_OP_ASM = 72,  /* inline assembly a, for the GPU's assembler: it reads and writes the registers its operands name; on any other device it is a runtime error */
    CQ_OP_CALL_CXX = 73,  /* call a: per active lane, in increasing lane order, the C++ function with that lane's argument registers, its result into that lane's result register */
    CQ_OP_MATH = 74,  /* R[a] := math function e of R[b] (and R[c], R[d] for those of two and three arguments; the others repeat R[b]), computed in f64 and rounded once (docs/NUMERICS.md) */
    CQ_OP_ATOMIC = 75,  /* R[a] := @b, then @b := atomic operation e of @b and R[c] (__atomic_cas: R[c] where @b == R[d]; the others repeat R[c]), one lane after another in lane order */
    CQ_OP_BAR_SYNC = 76,  /* the warp arrives at named barrier R[a] (1-15), whose phase completes when R[b] threads (a positive multiple of 32, at most the block's warps' lanes) have arrived, and blocks until it completes */
    CQ_OP_BAR_ARRIVE = 77,  /* the warp arrives at named barrier R[a] as BAR_SYNC does, without waiting */
    CQ_OP_GRID_SYNC = 78,  /* grid barrier: the participants of site a in every block of the cooperative launch meet; a block finished before it, or one that can not be resident while the others wait, is a deadlock */
    CQ_OP_CALL_EXTERN = 79,  /* call b of function S[a], defined in no file of the program: the CUDA path leaves it to the C++ compiler; on the CPU it is a runtime error */
    CQ_OP_SET_MAXNREG = 80,  /* the warp's registers per thread become a (b=1: an increase, 0: a decrease; setmaxnreg on sm_90a); no effect on the CPU */
    CQ_OP_MMA_SCALE = 81,  /* accumulator a += partial sum b (an accumulator of a's shape and type) scaled per row: element (i, j) adds b[i][j] times s_i, where s_i := the i-th element of view c in row-major order (0 outside its buffer) times R[d], rounded to f32; f32 accumulates by one fused multiply-add, f16 rounds the product to f32, then to f16, then adds; then b := 0 */
    CQ_OP_MMA_SPARSE = 82,  /* A operand fragment a := the dense [M, 2K] tile that packed fragment b [M, K] and metadata fragment c [M, K/4] of 8-bit integers stand for: in row i, the kept values b[i][2g] and b[i][2g + 1] of group g go to columns 4g + p and 4g + q, where p | q << 2 is half-byte g % 2 (the low one first) of c[i][g / 2] (q's value when p = q); every other element is 0 */
    CQ_OP_TRIGGER_CLUSTER = 83,  /* arrive once at slot R[b] of event a in every block of the executing block's cluster, its own included */
};

#define CQ_NUM_OPCODES 84

/* When an opcode is a collective (CQ_COLLECTIVE) or may block (CQ_BLOCKS); WITH_SITE: when its collective-site operand (kind 'c?') is >= 0. */
enum cq_mode {
    CQ_MODE_NEVER = 0,
    CQ_MODE_ALWAYS = 1,
    CQ_MODE_WITH_SITE = 2,
};

/* Bits of CQ_FLAGS. */
enum cq_flag {
    CQ_FLAG_OPENS = 1,  /* IF, LOOP: push a control frame */
    CQ_FLAG_CLOSES = 2,  /* END */
    CQ_FLAG_HOST_ONLY = 4,  /* only in host programs */
    CQ_FLAG_KERNEL_ONLY = 8,  /* only in kernels */
    CQ_FLAG_EFFECT_BLOCK = 16,  /* ONCE: the IF on its result that follows is its effect block */
};

/* Opcode names. */
static const char *const CQ_OP_NAME[CQ_NUM_OPCODES] = {
    "NOP", "CONST", "MOV", "CVT", "LANE", "BLOCKIDX", "ADD", "SUB", "MUL", "DIV", "MOD",
    "MIN", "MAX", "AND", "OR", "XOR", "SHL", "SHR", "EQ", "NE", "LT", "LE", "GT", "GE",
    "NEG", "NOT", "BNOT", "SELECT", "IF", "ELSE", "LOOP", "BREAK_IF", "CONTINUE_IF", "END",
    "YIELD", "ONCE", "ALLOC", "FILL", "LOAD", "STORE", "UPDATE", "DIMOF", "DMA", "FUT_ANY",
    "WAIT", "SWAP", "FUT_DIM", "BARRIER", "FENCE", "TRIGGER", "WAIT_EVENT", "SYNC_GLOBAL",
    "MMA_FILL", "MMA_LOAD", "MMA_EXEC", "MMA_STORE", "PRINT", "ASSERT", "ASSERT_FMT",
    "LAUNCH", "RET", "RET_VAL", "RET_BUF", "WAIT_EVENT_AT", "FUT_BIND", "MMA_ASYNC",
    "MMA_WAIT", "MMA_STORE_MASK", "FRAG_GET", "FRAG_SET", "SHFL_XOR", "MMA_GATHER", "ASM",
    "CALL_CXX", "MATH", "ATOMIC", "BAR_SYNC", "BAR_ARRIVE", "GRID_SYNC", "CALL_EXTERN",
    "SET_MAXNREG", "MMA_SCALE", "MMA_SPARSE", "TRIGGER_CLUSTER"
};

/* Operands used (a..e); the other operand words are 0. */
static const uint8_t CQ_NUM_OPERANDS[CQ_NUM_OPCODES] = {
    0, 2, 2, 2, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 4, 2,
    1, 1, 1, 1, 1, 0, 3, 1, 3, 2, 2, 3, 3, 2, 1, 2, 2, 3, 1, 1, 2, 2, 0, 3, 3, 5, 4, 1, 2,
    2, 1, 0, 1, 1, 2, 1, 2, 2, 5, 4, 4, 3, 4, 1, 1, 5, 5, 3, 3, 1, 2, 2, 5, 4, 2
};

/* Operand kind letters in operand order, '?' after a kind that also takes -1 (CQ_KIND_* below). */
static const char *const CQ_OPERAND_KINDS[CQ_NUM_OPCODES] = {
    "", "rk", "rr", "rr", "r", "ri", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr",
    "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rrr", "rr",
    "rr", "rr", "rrrr", "rt", "t", "t", "r", "r", "t", "", "rii", "b", "brc?", "ra", "ar",
    "ari", "rbi", "dc?", "f", "fc?", "ff", "rfi", "c", "i", "er", "er", "", "mrc?", "mvc?",
    "mmmic?", "mvic?", "p", "rs", "rp", "l", "", "r", "b", "er", "f", "mc?", "mc?",
    "mvrrc?", "rmrr", "mrrr", "rri", "mbic?", "x", "y", "rrrri", "rarri", "rrc", "rrc",
    "c", "sz", "ii", "mmvrc?", "mmmc?", "er"
};

/* The operand (0 = a) holding the register the op writes, -1: none. */
static const int8_t CQ_WRITES[CQ_NUM_OPCODES] = {
    -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    -1, -1, -1, -1, -1, -1, -1, 0, -1, -1, 0, -1, -1, 0, -1, -1, -1, -1, 0, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, -1, 0, -1, -1,
    -1, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1
};

/* The operand naming its collective site, -1: none. */
static const int8_t CQ_SITE[CQ_NUM_OPCODES] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, -1, -1, -1, -1, 1, -1,
    1, -1, -1, 0, -1, -1, -1, -1, 2, 2, 4, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 1, 4,
    -1, -1, -1, 3, -1, -1, -1, -1, 2, 2, 0, -1, -1, 4, 3, -1
};

/* enum cq_mode: when the op is a collective of the site's participants. */
static const uint8_t CQ_COLLECTIVE[CQ_NUM_OPCODES] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 2, 0, 0, 1, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 2, 0
};

/* enum cq_mode: when the op may block its warp. */
static const uint8_t CQ_BLOCKS[CQ_NUM_OPCODES] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 2, 0, 0, 1, 0, 0, 1, 0, 2, 2, 2, 2, 0, 0,
    0, 0, 0, 0, 0, 1, 0, 2, 2, 2, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0
};

/* enum cq_flag bits. */
static const uint8_t CQ_FLAGS[CQ_NUM_OPCODES] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    0, 1, 0, 0, 2, 8, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 4, 0, 0, 0, 0, 0, 0,
    0, 4, 4, 4, 4, 8, 8, 0, 0, 0, 0, 0, 8, 0, 8, 8, 0, 0, 8, 8, 8, 8, 8, 0, 0, 8
};

/* UPDATE's operator immediate is one of these opcodes. */
static const uint8_t CQ_UPDATE_OPS[12] = {
    CQ_OP_ADD, CQ_OP_SUB, CQ_OP_MUL, CQ_OP_DIV, CQ_OP_MOD, CQ_OP_MIN, CQ_OP_MAX, CQ_OP_AND,
    CQ_OP_OR, CQ_OP_XOR, CQ_OP_SHL, CQ_OP_SHR
};

/* Operand kinds: the letters of CQ_OPERAND_KINDS. */
enum cq_operand_kind {
    CQ_KIND_REGISTER = 'r',  /* indexes Code.regs */
    CQ_KIND_CONSTANT = 'k',  /* indexes Code.consts */
    CQ_KIND_STRING = 's',  /* indexes Code.strings */
    CQ_KIND_BUFFER = 'b',  /* indexes Code.buffers */
    CQ_KIND_FUTURE = 'f',  /* indexes Code.futures */
    CQ_KIND_EVENT = 'e',  /* indexes Code.events */
    CQ_KIND_FRAGMENT = 'm',  /* indexes Code.frags */
    CQ_KIND_ACCESS = 'a',  /* indexes Code.accesses */
    CQ_KIND_VIEW = 'v',  /* indexes Code.views */
    CQ_KIND_DMA = 'd',  /* indexes Code.dmas */
    CQ_KIND_COLLECTIVE_SITE = 'c',  /* indexes Code.colls */
    CQ_KIND_PRINT_FORMAT = 'p',  /* indexes Code.prints */
    CQ_KIND_LAUNCH = 'l',  /* indexes Code.launches */
    CQ_KIND_INLINE_ASSEMBLY = 'x',  /* indexes Code.asms */
    CQ_KIND_CXX_CALL = 'y',  /* indexes Code.cxx_calls */
    CQ_KIND_EXTERN_CALL = 'z',  /* indexes Code.extern_calls */
    CQ_KIND_TARGET = 't',
    CQ_KIND_IMMEDIATE = 'i',
};

/* module.RetKind: What a function returns (§14.3.4). */
enum cq_ret_kind {
    CQ_RET_KIND_VOID = 0,
    CQ_RET_KIND_BUFFER = 1,
    CQ_RET_KIND_SCALAR = 2,
};

/* module.ParamKind: A function parameter (§14.3.1). */
enum cq_param_kind {
    CQ_PARAM_KIND_BUFFER = 0,
    CQ_PARAM_KIND_SCALAR = 1,
    CQ_PARAM_KIND_STREAM = 2,
};

/* module.ParamStorage: Whether a buffer parameter is copied back to the caller (§14.3.3). */
enum cq_param_storage {
    CQ_PARAM_STORAGE_DEFAULT = 0,
    CQ_PARAM_STORAGE_GLOBAL = 1,
};

/* module.Storage: Where a buffer or a future's data lives (§3.2). */
enum cq_storage {
    CQ_STORAGE_GLOBAL = 0,
    CQ_STORAGE_SHARED = 1,
    CQ_STORAGE_LOCAL = 2,
};

/* module.FragRole: The operand position of an MMA fragment (§11.3): ``MMA_EXEC acc, a, b``. */
enum cq_frag_role {
    CQ_FRAG_ROLE_ACC = 0,
    CQ_FRAG_ROLE_A = 1,
    CQ_FRAG_ROLE_B = 2,
};

/* module.BaseKind: What an ``Access`` or ``View`` is rooted at (§8). */
enum cq_base_kind {
    CQ_BASE_KIND_BUF = 0,
    CQ_BASE_KIND_FUT = 1,
};

/* module.DmaOp: The operation of a DMA statement (§9.1, §9.6). */
enum cq_dma_op {
    CQ_DMA_OP_COPY = 0,
    CQ_DMA_OP_TRANSP = 1,
    CQ_DMA_OP_PAD = 2,
};

/* module.L2Hint: The L2 cache policy a TMA load asks for (Croqtile: tma.md): a hint the interpreters
    record and the CUDA generator passes on; it changes no value. */
enum cq_l2_hint {
    CQ_L2_HINT_NONE = 0,
    CQ_L2_HINT_EVICT_FIRST = 1,
    CQ_L2_HINT_EVICT_LAST = 2,
};

/* module.PieceKind: A piece of a print format: a string of ``Code.strings`` or a register's value. */
enum cq_piece_kind {
    CQ_PIECE_KIND_STR = 0,
    CQ_PIECE_KIND_REG = 1,
};

/* Element types (dtype codes; the comment is the CUDA type). */
enum cq_dtype {
    CQ_DT_BOOL = 0,  /* bool */
    CQ_DT_S8 = 1,  /* int8_t */
    CQ_DT_S16 = 2,  /* int16_t */
    CQ_DT_S32 = 3,  /* int32_t */
    CQ_DT_S64 = 4,  /* int64_t */
    CQ_DT_U8 = 5,  /* uint8_t */
    CQ_DT_U16 = 6,  /* uint16_t */
    CQ_DT_U32 = 7,  /* uint32_t */
    CQ_DT_U64 = 8,  /* uint64_t */
    CQ_DT_F16 = 9,  /* __half */
    CQ_DT_BF16 = 10,  /* __nv_bfloat16 */
    CQ_DT_F32 = 11,  /* float */
    CQ_DT_F64 = 12,  /* double */
    CQ_DT_TF32 = 13,  /* float */
    CQ_DT_F8_E4M3 = 14,  /* __nv_fp8_e4m3 */
    CQ_DT_F8_E5M2 = 15,  /* __nv_fp8_e5m2 */
    CQ_DT_F6_E2M3 = 16,  /* __nv_fp6_e2m3 */
    CQ_DT_F6_E3M2 = 17,  /* __nv_fp6_e3m2 */
    CQ_DT_F4_E2M1 = 18,  /* __nv_fp4_e2m1 */
    CQ_DT_F8_UE8M0 = 19,  /* __nv_fp8_e8m0 */
    CQ_DT_F8_UE4M3 = 20,  /* __nv_fp8_e4m3 */
    CQ_DT_S2 = 21,  /* cute::int2b_t */
    CQ_DT_U2 = 22,  /* cute::uint2b_t */
    CQ_DT_S4 = 23,  /* cute::int4b_t */
    CQ_DT_U4 = 24,  /* cute::uint4b_t */
    CQ_DT_S6 = 25,  /* cute::int6b_t */
    CQ_DT_U6 = 26,  /* cute::uint6b_t */
    CQ_DT_U1 = 27,  /* cute::uint1b_t */
};

#define CQ_NUM_DTYPES 28

/* Bits of the type. */
static const uint8_t CQ_DTYPE_BITS[CQ_NUM_DTYPES] = {
    8, 8, 16, 32, 64, 8, 16, 32, 64, 16, 16, 32, 64, 32, 8, 8, 6, 6, 4, 8, 8, 2, 2, 4, 4,
    6, 6, 1
};

/* 0 bool, 1 integer, 2 float. */
static const uint8_t CQ_DTYPE_KIND[CQ_NUM_DTYPES] = {
    0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1
};

/* Signed types. */
static const uint8_t CQ_DTYPE_SIGNED[CQ_NUM_DTYPES] = {
    0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 0
};

/* Bytes a value is stored in: bf16, tf32 and fp8 are stored as float. */
static const uint8_t CQ_DTYPE_STORAGE_BYTES[CQ_NUM_DTYPES] = {
    1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 4, 8, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
};

/* Runtime error kinds an engine reports; Python formats the messages (croqvm/core/faults.py). */
enum cq_fault {
    CQ_FAULT_STEP_LIMIT = 1,
    CQ_FAULT_GRID_BOUND = 2,
    CQ_FAULT_TOO_MANY_THREADS = 3,
    CQ_FAULT_BLOCK_SIZE = 4,
    CQ_FAULT_FLOAT_TO_INT = 5,
    CQ_FAULT_DIVISION_BY_ZERO = 6,
    CQ_FAULT_SHIFT_COUNT = 7,
    CQ_FAULT_ALLOC_EXTENT = 8,
    CQ_FAULT_ALLOC_BUFFER = 9,
    CQ_FAULT_ALLOC_TILE = 10,
    CQ_FAULT_ALLOC_FRAGMENT = 11,
    CQ_FAULT_BUFFER_ARRAY_INDEX = 12,
    CQ_FAULT_BUFFER_BEFORE_DECLARATION = 13,
    CQ_FAULT_OUT_OF_RANGE = 14,
    CQ_FAULT_UNINITIALISED = 15,
    CQ_FAULT_FUTURE_NO_DATA = 16,
    CQ_FAULT_FUTURE_NOT_WAITED = 17,
    CQ_FAULT_FUTURE_WAITED_TWICE = 18,
    CQ_FAULT_NEVER_WAITED = 19,
    CQ_FAULT_EMPTY_TILE = 20,
    CQ_FAULT_TILE_OUTSIDE = 21,
    CQ_FAULT_DMA_SHAPE = 22,
    CQ_FAULT_EVENT_INDEX = 24,
    CQ_FAULT_NOT_A_PARTICIPANT = 25,
    CQ_FAULT_DIVERGENT_COLLECTIVE = 26,
    CQ_FAULT_UNIT_INACTIVE = 27,
    CQ_FAULT_UNIT_TERMINATED = 28,
    CQ_FAULT_OPERANDS_DIFFER = 29,
    CQ_FAULT_MMA_READ_OUTSIDE = 30,
    CQ_FAULT_MMA_UNINITIALISED = 31,
    CQ_FAULT_FRAGMENT_EMPTY = 32,
    CQ_FAULT_MMA_SHAPES = 33,
    CQ_FAULT_MMA_TILE_SHAPE = 34,
    CQ_FAULT_MMA_STORE_OWNERS = 35,
    CQ_FAULT_ASSERT = 36,
    CQ_FAULT_ASSERT_FMT = 37,
    CQ_FAULT_GRID_LIMIT = 38,
    CQ_FAULT_SHARED_LIMIT = 39,
    CQ_FAULT_UNINITIALISED_REGISTER = 40,
    CQ_FAULT_MMA_PENDING = 41,
    CQ_FAULT_MMA_NOT_PENDING = 42,
    CQ_FAULT_FRAGMENT_INDEX = 43,
    CQ_FAULT_FRAGMENT_NOT_OWNED = 44,
    CQ_FAULT_SHUFFLE_INACTIVE = 45,
    CQ_FAULT_ASM_ON_CPU = 46,
    CQ_FAULT_BAR_ID = 47,
    CQ_FAULT_BAR_COUNT = 48,
    CQ_FAULT_BAR_COUNT_DIFFERS = 49,
    CQ_FAULT_GRID_FINISHED = 50,
    CQ_FAULT_GRID_RESIDENT = 51,
    CQ_FAULT_EXTERN_CALL = 52,
    CQ_FAULT_FUTURE_NOT_CONTIGUOUS = 53,
};

/* ATOMIC's operation immediate (croqvm/core/intrinsics.py): the new element from the old one and the value v. */
enum cq_atomic {
    CQ_ATOMIC_ADD = 0,  /* old + v */
    CQ_ATOMIC_SUB = 1,  /* old - v */
    CQ_ATOMIC_EXCH = 2,  /* v */
    CQ_ATOMIC_MIN = 3,  /* min(old, v) */
    CQ_ATOMIC_MAX = 4,  /* max(old, v) */
    CQ_ATOMIC_AND = 5,  /* old & v */
    CQ_ATOMIC_OR = 6,  /* old | v */
    CQ_ATOMIC_XOR = 7,  /* old ^ v */
    CQ_ATOMIC_CAS = 8,  /* v if old == cmp, else old */
};

#endif  /* CQ_OPCODES_H */
