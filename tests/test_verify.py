"""The verifier rejects malformed modules with a message naming the place (STYLE.md §2).

Each row of MALFORMED takes a valid hand-built module, breaks one thing, and states the
message (wasm's ``assert_invalid``): the same module is rejected by ``verify`` and, once
encoded without verification, by ``decode``.
"""
import struct
import warnings

import numpy as np
import pytest

import bytecode_builders as B
from croqvm.bytecode import cqb, opcodes as O, schema
from croqvm.core import dtypes as D
from croqvm.bytecode.module import (FORMAT_VERSION, Access, BaseKind, Const, DmaOp, FutureDecl,
                                    Launch, PieceKind, PrintFormat, Storage, View)
from croqvm.bytecode.verify import verified, verify
from croqvm.core.errors import BytecodeError

W = O.WIDTH


def host(m):
    return m.functions[0].host


def kern(m):
    return m.functions[0].kernels[0].code


def put(code, i, listing):
    """Replace instruction i by one written as in bytecode_builders.asm."""
    code.code[i * W:(i + 1) * W] = B.asm(listing)


def word(code, i, slot, value):
    """Set word ``slot`` (0 opcode, 1..5 operands a..e, 6 span) of instruction i."""
    code.code[i * W + slot] = value


def flatten_c(m):
    """misc() with 'c' a 1-D parameter, viewed whole by the kernel's MMA ops."""
    m.functions[0].params[1].shape = [256]
    kern(m).views[0] = View(BaseKind.BUF, 0, -1, [0], [1])


def swap_in_g(m, shape=(4,), indices=(1,)):
    """misc() with a second future 'g' of ``shape`` that takes f's data by SWAP, read
    with ``indices``."""
    host(m).futures.append(FutureDecl("g", D.F32.code, Storage.GLOBAL, False, list(shape)))
    host(m).accesses.append(Access(BaseKind.FUT, 1, -1, list(indices), "g.data.at(i, i)"))
    put(host(m), 14, "SWAP 0 1 @6")


def const(code, k, dtype, value):
    code.consts[k] = Const(dtype.code, value)


def op_on(m, listing, *dtypes):
    """misc()'s host with instruction 21 replaced by ``listing`` on registers r18, r19, ...
    of ``dtypes``."""
    host(m).regs.extend(d.code for d in dtypes)
    put(host(m), 21, listing)


def no_loads(m):
    """misc()'s kernel without its MMA_LOADs, so fragments may change type freely."""
    put(kern(m), 4, "NOP")
    put(kern(m), 5, "NOP")


def frag(m, n, **fields):
    for name, value in fields.items():
        setattr(kern(m).frags[n], name, value)


def store_view(m, extents):
    """misc()'s MMA_STORE into a new view 1 of 'c' with extent registers ``extents``."""
    kern(m).views.append(View(BaseKind.BUF, 0, -1, [0, 0], list(extents), "c"))
    word(kern(m), 7, 2, 1)


def check_with_values(m, newline=False):
    """misc() whose ASSERT (instruction 24) shows r0 in its message: an ASSERT_FMT of
    print format 1, 'too few positive elements' then n."""
    host(m).prints.append(PrintFormat([(PieceKind.STR, 0), (PieceKind.REG, 0)], newline))
    put(host(m), 24, "ASSERT_FMT 12 1 @8")


MALFORMED = [
    # --- instruction words
    ("unknown opcode", B.squares, lambda m: word(host(m), 0, 0, 200),
     "function 'squares', host, instruction 0: unknown opcode 200"),
    ("ragged code", B.squares, lambda m: host(m).code.extend([0, 0, 0]),
     "function 'squares', host: code length 101 is not a multiple of 7 words"),
    ("register index", B.squares, lambda m: word(host(m), 7, 2, 40),
     "function 'squares', host, instruction 7 (ADD): register index 40 out of range "
     "(6 registers)"),
    ("access index", B.scale, lambda m: word(kern(m), 11, 2, 9),
     "function 'scale', kernel 0 ('scale_k0'), instruction 11 (LOAD): access index 9 out of "
     "range (2 accesses)"),
    ("-1 only where optional", B.squares, lambda m: word(host(m), 1, 1, -1),
     "instruction 1 (ALLOC): buffer index -1 out of range (1 buffers)"),
    ("unused slot", B.squares, lambda m: word(host(m), 1, 3, 5),
     "instruction 1 (ALLOC): unused operand slots must be 0, got [0, 5, 0, 0]"),
    ("span index", B.squares, lambda m: word(host(m), 0, 6, 99),
     "instruction 0 (CONST): span index 99 out of range (5 spans)"),
    # --- structured control flow
    ("IF stores a wrong ELSE", B.scale, lambda m: word(kern(m), 10, 2, 14),
     "instruction 13 (ELSE): the IF at instruction 10 stores 14 as its ELSE/END"),
    ("END stores a wrong opener", B.scale, lambda m: word(kern(m), 15, 1, 9),
     "instruction 15 (END): stores 9 as its opener, but closes the IF at instruction 10"),
    ("ELSE in a LOOP", B.squares, lambda m: put(host(m), 7, "ELSE 12"),
     "instruction 7 (ELSE): ELSE outside an IF"),
    ("second ELSE", B.scale, lambda m: put(kern(m), 14, "ELSE 15 @8"),
     "instruction 14 (ELSE): second ELSE of the IF at instruction 10"),
    ("BREAK_IF outside a loop", B.squares, lambda m: put(host(m), 13, "BREAK_IF 3"),
     "instruction 13 (BREAK_IF): BREAK_IF needs an enclosing LOOP"),
    ("unclosed LOOP", B.squares, lambda m: put(host(m), 12, "NOP"),
     "function 'squares', host: LOOP at instruction 6 is never closed (it stores 12 as its end)"),
    ("END without opener", B.squares, lambda m: put(host(m), 0, "END 0"),
     "instruction 0 (END): END without an open IF or LOOP"),
    ("target out of range", B.squares, lambda m: word(host(m), 6, 1, 99),
     "instruction 6 (LOOP): target index 99 out of range (14 instructions)"),
    # --- register dtypes and constants
    ("IF on an int", B.scale, lambda m: word(kern(m), 10, 1, 5),
     "instruction 10 (IF): operand a r5 is s32, but must be bool"),
    ("ADD of s32 and f32", B.misc, lambda m: word(host(m), 5, 3, 5),
     "instruction 5 (ADD): operands a and c must have the same dtype, got s32 and f32"),
    ("comparison into s32", B.squares, lambda m: word(host(m), 8, 1, 4),
     "instruction 8 (GE): operand a r4 is s32, but must be bool"),
    ("XOR of floats", B.misc, lambda m: put(host(m), 21, "XOR 8 10 11 @7"),
     "instruction 21 (XOR): operand a r8 is f32, but must be a 32- or 64-bit integer or bool"),
    ("CONST of another dtype", B.misc, lambda m: word(host(m), 0, 2, 4),
     "instruction 0 (CONST): constant k4 is f32, but r0 is s32"),
    ("ASSERT string index", B.misc, lambda m: word(host(m), 24, 2, 5),
     "instruction 24 (ASSERT): string index 5 out of range (2 strings)"),
    ("ASSERT_FMT on a float", B.misc, lambda m: (check_with_values(m), word(host(m), 24, 1, 8)),
     "instruction 24 (ASSERT_FMT): operand a r8 is f32, but must be bool"),
    ("ASSERT_FMT print format index", B.misc,
     lambda m: (check_with_values(m), word(host(m), 24, 2, 2)),
     "instruction 24 (ASSERT_FMT): print format index 2 out of range (2 print formats)"),
    ("ASSERT_FMT message with a newline", B.misc, lambda m: check_with_values(m, newline=True),
     "instruction 24 (ASSERT_FMT): print format 1 ends with a newline; a fault message is "
     "one line"),
    ("ASSERT_FMT with a third operand", B.misc,
     lambda m: (check_with_values(m), word(host(m), 24, 3, 5)),
     "instruction 24 (ASSERT_FMT): unused operand slots must be 0, got [5, 0, 0]"),
    ("integer in a float constant", B.misc, lambda m: const(host(m), 4, D.F32, 0),
     "function 'misc', host, constant k4: a f32 constant holds the integer 0"),
    ("float in an integer constant", B.squares, lambda m: const(host(m), 0, D.S32, 4.0),
     "function 'squares', host, constant k0: a s32 constant holds the float 4.0"),
    ("s8 constant out of range", B.squares, lambda m: const(host(m), 0, D.S8, 300),
     "constant k0: 300 is out of range for s8 (-128..127)"),
    ("u64 constant below zero", B.squares, lambda m: const(host(m), 0, D.U64, -1),
     "constant k0: -1 is out of range for u64 (0..18446744073709551615)"),
    ("bool constant 2", B.squares, lambda m: const(host(m), 0, D.BOOL, 2),
     "constant k0: 2 is out of range for bool (0..1)"),
    ("f32 constant not exact", B.misc, lambda m: const(host(m), 6, D.F32, 0.1),
     "constant k6: 0.1 is not a f32 value (constants are rounded to their dtype by the "
     "compiler)"),
    ("bf16 constant not exact", B.misc, lambda m: const(host(m), 6, D.BF16, 1.5 + 2**-10),
     "constant k6: 1.5009765625 is not a bf16 value"),
    ("infinite e4m3 constant", B.misc, lambda m: const(host(m), 6, D.F8_E4M3, float("inf")),
     "constant k6: inf is not a f8_e4m3 value"),
    ("constant of an unknown dtype", B.squares, lambda m: const(host(m), 0, D.S32, 4) or
     setattr(host(m).consts[0], "dtype", 40),
     "constant k0: unknown dtype code 40"),
    ("UPDATE with a comparison", B.squares, lambda m: word(host(m), 11, 3, O.EQ),
     f"instruction 11 (UPDATE): update operator {O.EQ} is not a binary ALU opcode"),
    ("unknown register dtype", B.squares, lambda m: host(m).regs.__setitem__(2, 99),
     "function 'squares', host, register r2: unknown dtype code 99"),
    ("too many registers", B.squares, lambda m: host(m).regs.extend([3] * 65531),
     "function 'squares', host: 65537 registers, more than the limit of 65536"),
    # --- placement
    ("RET in a kernel", B.scale, lambda m: put(kern(m), 29, "RET"),
     "kernel 0 ('scale_k0'), instruction 29 (RET): RET is only allowed in host code"),
    ("YIELD on the host", B.squares, lambda m: put(host(m), 13, "YIELD"),
     "host, instruction 13 (YIELD): YIELD is only allowed in kernels"),
    ("RET_VAL in a void function", B.misc, lambda m: put(host(m), 28, "RET_VAL 0"),
     "instruction 28 (RET_VAL): RET_VAL in a function returning void"),
    ("strides of another rank", B.scale,
     lambda m: setattr(kern(m).views[0], "strides", [8, 8]) or setattr(kern(m).views[0], "flat", 8),
     "view 0 ('x.view(32).from(p * 32)'): 2 stride registers for a view of rank 1"),
    ("strides without a first element", B.scale,
     lambda m: setattr(kern(m).views[0], "strides", [8]),
     "view 0 ('x.view(32).from(p * 32)'): register index -1 out of range"),
    ("MMA on a strided view", B.misc,
     lambda m: (setattr(kern(m).views[0], "strides", [0, 0]),
                setattr(kern(m).views[0], "flat", 0)),
     "instruction 4 (MMA_LOAD): view 0 has element strides or reshapes a future's data"),
    ("MMA on a 1-D view", B.misc, lambda m: flatten_c(m),
     "instruction 4 (MMA_LOAD): view 0 has rank 1; MMA tiles are 2-D"),
    ("BLOCKIDX beyond the grid", B.scale, lambda m: word(kern(m), 0, 2, 1),
     "instruction 0 (BLOCKIDX): grid dimension 1 out of range (grid rank 1)"),
    ("ONCE site", B.scale, lambda m: word(kern(m), 30, 2, 1),
     "instruction 30 (ONCE): once site index 1 out of range (1 once sites)"),
    ("collective site", B.scale, lambda m: word(kern(m), 29, 1, 5),
     "instruction 29 (BARRIER): collective site index 5 out of range (2 collective sites)"),
    ("FENCE on the host", B.squares, lambda m: put(host(m), 13, "FENCE 0"),
     "host, instruction 13 (FENCE): FENCE is only allowed in kernels"),
    ("FENCE of a unit too wide", B.scale, lambda m: put(kern(m), 29, "FENCE 2048"),
     "instruction 29 (FENCE): unit of 2048 lanes out of range (0 for the block, else 1..1024)"),
    ("SYNC_GLOBAL in a kernel", B.scale, lambda m: put(kern(m), 29, "SYNC_GLOBAL"),
     "instruction 29 (SYNC_GLOBAL): SYNC_GLOBAL is only allowed in host code"),
    # --- computation types (§12.2): conversions only in CVT
    ("ADD of s8", B.misc, lambda m: op_on(m, "ADD 18 19 20", D.S8, D.S8, D.S8),
     "instruction 21 (ADD): operand a r18 is s8, but must be an arithmetic type (s32, u32, "
     "s64, u64, f16, bf16, f32, f64)"),
    ("MUL of tf32", B.misc, lambda m: op_on(m, "MUL 18 19 20", D.TF32, D.TF32, D.TF32),
     "instruction 21 (MUL): operand a r18 is tf32, but must be an arithmetic type"),
    ("AND of u16", B.misc, lambda m: op_on(m, "AND 18 19 20", D.U16, D.U16, D.U16),
     "instruction 21 (AND): operand a r18 is u16, but must be a 32- or 64-bit integer or bool"),
    ("SHL of s8", B.misc, lambda m: op_on(m, "SHL 18 19 20", D.S8, D.S8, D.S32),
     "instruction 21 (SHL): operand a r18 is s8, but must be a 32- or 64-bit integer"),
    ("SHL by an s8 count", B.misc, lambda m: op_on(m, "SHL 18 19 20", D.S32, D.S32, D.S8),
     "instruction 21 (SHL): operand c r20 is s8, but must be a 32- or 64-bit integer"),
    ("a u32 shifted into an s32", B.misc, lambda m: op_on(m, "SHR 18 19 20", D.S32, D.U32, D.S32),
     "instruction 21 (SHR): operands a and b must have the same dtype, got s32 and u32"),
    ("EQ of fp8", B.misc, lambda m: op_on(m, "EQ 18 19 20", D.BOOL, D.F8_E4M3, D.F8_E4M3),
     "instruction 21 (EQ): operand b r19 is f8_e4m3, but must be an arithmetic type or bool"),
    ("BNOT of bool", B.misc, lambda m: op_on(m, "BNOT 18 19", D.BOOL, D.BOOL),
     "instruction 21 (BNOT): operand a r18 is bool, but must be a 32- or 64-bit integer"),
    ("LANE into u32", B.misc, lambda m: op_on(m, "LANE 18", D.U32),
     "instruction 21 (LANE): operand a r18 is u32, but must be s32"),
    ("UPDATE of u32 elements with an s32", B.squares,
     lambda m: setattr(host(m).buffers[0], "dtype", D.U32.code),
     "instruction 11 (UPDATE): the value r4 is s32, but u32 elements and s32 values compute in "
     "u32"),
    ("UPDATE with AND in f32", B.squares,
     lambda m: (put(host(m), 10, "NOP"), host(m).regs.__setitem__(4, D.F32.code),
                setattr(host(m).buffers[0], "dtype", D.F32.code), word(host(m), 11, 3, O.AND)),
     "instruction 11 (UPDATE): AND update computing in f32; AND takes a 32- or 64-bit integer "
     "or bool"),
    # --- ONCE and its effect block (§7.2.2)
    ("ONCE without its IF", B.scale, lambda m: put(kern(m), 31, "IF 6 33 @16"),
     "kernel 0 ('scale_k0'), instruction 30 (ONCE): must be followed by IF r10, the effect "
     "block (§7.2.2)"),
    ("an effect block with an ELSE", B.scale,
     lambda m: (put(kern(m), 31, "IF 10 32 @16"), put(kern(m), 32, "ELSE 33 @16")),
     "instruction 30 (ONCE): its effect block (the IF at instruction 31) has an ELSE"),
    ("a barrier in an effect block", B.scale, lambda m: put(kern(m), 32, "BARRIER 1 @16"),
     "instruction 32 (BARRIER): not allowed in the effect block of the ONCE at instruction 30 "
     "(straight-line code without control flow, blocking, collective or ONCE instructions)"),
    # --- MMA fragments (§11.3, D11)
    ("MMA_FILL of an operand", B.misc, lambda m: put(kern(m), 3, "MMA_FILL 1 2 0 @11"),
     "instruction 3 (MMA_FILL): fragment 1 ('ma') is an A operand fragment; MMA_FILL takes an "
     "accumulator there"),
    ("MMA_LOAD into an accumulator of another element type", B.misc,
     lambda m: (put(kern(m), 4, "MMA_LOAD 0 0 0 @12"), frag(m, 0, dtype=D.F32.code)),
     "instruction 4 (MMA_LOAD): view 0 has f16 elements, but fragment 0 ('mc') is f32"),
    ("MMA_EXEC with B as A", B.misc, lambda m: put(kern(m), 6, "MMA_EXEC 0 2 1 0 0 @13"),
     "instruction 6 (MMA_EXEC): fragment 2 ('ma') is a B operand fragment; MMA_EXEC takes an A "
     "operand fragment there"),
    ("MMA_LOAD of another element type", B.misc, lambda m: frag(m, 1, dtype=D.F32.code),
     "instruction 4 (MMA_LOAD): view 0 has f16 elements, but fragment 1 ('ma') is f32"),
    ("MMA_LOAD of another extent", B.misc, lambda m: frag(m, 1, rows=8),
     "instruction 4 (MMA_LOAD): view 0 has extents [16, 16], but the fragment is [8, 16]"),
    ("MMA_EXEC of two operand types", B.misc, lambda m: (no_loads(m), frag(m, 2, dtype=D.F32.code)),
     "instruction 6 (MMA_EXEC): A is f16 but B is f32; MMA operands have one element type (or "
     "are both 8-bit integers)"),
    ("MMA_EXEC of s16 operands", B.misc,
     lambda m: (no_loads(m), frag(m, 1, dtype=D.S16.code), frag(m, 2, dtype=D.S16.code)),
     "instruction 6 (MMA_EXEC): s16 operands; MMA takes f16, bf16, tf32, f8_e4m3, f8_e5m2, f32, "
     "f64, s8, u8, s32"),
    ("MMA_EXEC of float operands into s32", B.misc, lambda m: frag(m, 0, dtype=D.S32.code),
     "instruction 6 (MMA_EXEC): f16 operands accumulate in a float type, not s32"),
    ("MMA_EXEC with disagreeing K", B.misc, lambda m: (no_loads(m), frag(m, 2, cols=8)),
     "instruction 6 (MMA_EXEC): K is 16 in A ('ma') but 8 in B ('ma' [16, 8])"),
    ("MMA_EXEC with disagreeing N", B.misc, lambda m: frag(m, 0, cols=8),
     "instruction 6 (MMA_EXEC): N is 8 in C ('mc') but 16 in B ('ma' [16, 16])"),
    ("MMA_STORE of another extent", B.misc, lambda m: store_view(m, [0, 1]),
     "instruction 7 (MMA_STORE): view 1 has extents [0, 16], but the fragment is [16, 16]"),
    ("transposed MMA_STORE of another extent", B.misc,
     lambda m: (store_view(m, [1, 0]), word(kern(m), 7, 3, 1)),
     "instruction 7 (MMA_STORE): view 1 has extents [16, 0], but the fragment stored "
     "transposed is [16, 16]"),
    # --- side tables
    ("shared buffer on the host", B.squares,
     lambda m: setattr(host(m).buffers[0], "storage", Storage.SHARED),
     "buffer 0 ('out'): a shared buffer in host code; host buffers are global"),
    ("extent register", B.squares, lambda m: setattr(host(m).buffers[0], "shape", [7]),
     "buffer 0 ('out'): register index 7 out of range (6 registers)"),
    ("bool extent", B.squares, lambda m: setattr(host(m).buffers[0], "shape", [3]),
     "buffer 0 ('out'): extent register r3 is bool, but must be s32"),
    ("empty buffer array", B.squares, lambda m: setattr(host(m).buffers[0], "array", [0]),
     "buffer 0 ('out'): buffer array extent 0 must be at least 1"),
    ("buffer array without index", B.squares,
     lambda m: setattr(host(m).buffers[0], "array", [2]),
     "access 0 ('out.at(i)'): buffer array 'out' needs an array index register"),
    ("parameter index", B.squares, lambda m: setattr(host(m).buffers[0], "param", 3),
     "buffer 0 ('out'): parameter index 3 out of range (0 parameters)"),
    ("shapeless buffer", B.squares, lambda m: setattr(host(m).buffers[0], "shape", []),
     "buffer 0 ('out'): no shape registers, and no parameter or launch binding gives it a "
     "shape"),
    ("access rank", B.squares, lambda m: setattr(host(m).accesses[0], "indices", [0, 0]),
     "access 0 ('out.at(i)'): 2 indices for a base of rank 1"),
    ("rank of a launch-bound buffer", B.scale,
     lambda m: setattr(kern(m).accesses[1], "indices", [5, 5]),
     "kernel 0 ('scale_k0'), access 1 ('y.at(i)'): 2 indices for a base of rank 1"),
    ("DIMOF beyond a parameter's rank", B.misc, lambda m: word(host(m), 15, 3, 1),
     "instruction 15 (DIMOF): dimension 1 out of range (rank 1)"),
    ("FUT_DIM beyond the data's rank", B.misc, lambda m: word(host(m), 25, 3, 1),
     "instruction 25 (FUT_DIM): dimension 1 out of range (rank 1)"),
    ("rank of a future's data", B.misc, lambda m: swap_in_g(m, indices=(1, 1)),
     "access 1 ('g.data.at(i, i)'): 2 indices for a base of rank 1"),
    ("SWAP of futures of two types", B.misc, lambda m: swap_in_g(m, shape=(4, 4), indices=(1, 1)),
     "instruction 14 (SWAP): exchanges future 0 ('f') (global f32 [4]) and future 1 ('g') "
     "(global f32 [4, 4]), whose types differ"),
    ("event without slots", B.scale, lambda m: setattr(kern(m).events[0], "slots", 0),
     "kernel 0 ('scale_k0'), event 0 ('done'): 0 slots; an event has at least 1"),
    ("DMA without destination", B.scale, lambda m: setattr(kern(m).dmas[0], "dst_view", -1),
     "DMA 0 ('dma.copy'): no destination"),
    # the future holds no data before its first fill: there would be nowhere to copy to
    ("DMA filling a future without a buffer of its own", B.misc,
     lambda m: setattr(host(m).dmas[0], "dst_buffer", -1),
     "DMA 0 ('dma.copy'): no destination"),
    ("DMA into a view of another element type", B.scale,
     lambda m: setattr(kern(m).buffers[2], "dtype", D.F32.code),
     "kernel 0 ('scale_k0'), DMA 0 ('dma.copy'): copies s32 data of rank 1 into the "
     "destination view, of f32 elements and rank 1 (§9.2: one element type and rank)"),
    ("DMA into an own buffer of another rank", B.misc,
     lambda m: setattr(host(m).buffers[2], "shape", [17, 17]),
     "DMA 0 ('dma.copy'): copies f32 data of rank 1 into the own buffer, of f32 elements "
     "and rank 2"),
    ("DMA into an own buffer without a shape", B.scale,
     lambda m: (kern(m).buffers.append(B.BufferDecl("own", Storage.GLOBAL, B.S32, [])),
                setattr(kern(m).dmas[0], "dst_view", -1), setattr(kern(m).dmas[0], "dst_buffer", 3),
                host(m).launches[0].buffers.append((3, 1))),
     "DMA 0 ('dma.copy'): own buffer 3 ('own') has no shape registers"),
    ("DMA filling a future of another element type", B.misc,
     lambda m: setattr(host(m).futures[0], "dtype", D.F16.code),
     "DMA 0 ('dma.copy'): fills future 0 ('f') (global f16 [4]) with global f32 data of "
     "rank 1"),
    ("sync DMA filling an async future", B.misc,
     lambda m: setattr(host(m).futures[0], "is_async", True),
     "DMA 0 ('dma.copy'): fills future 0 ('f') (async global f32 [4]) with global f32 data "
     "of rank 1"),
    ("DMA filling a future of another rank", B.misc,
     lambda m: setattr(host(m).futures[0], "shape", [2, 2]),
     "DMA 0 ('dma.copy'): fills future 0 ('f') (global f32 [2, 2]) with global f32 data of "
     "rank 1"),
    ("DMA filling a future of another extent", B.scale,
     lambda m: (kern(m).futures.append(FutureDecl("f", B.S32, Storage.SHARED, False, [16])),
                setattr(kern(m).dmas[0], "future", 0)),
     "DMA 0 ('dma.copy'): fills future 0 ('f') (shared s32 [16]) with data of extents [32]"),
    ("DMA filling a future of another storage", B.scale,
     lambda m: (kern(m).futures.append(FutureDecl("f", B.S32, Storage.LOCAL, False, [32])),
                setattr(kern(m).dmas[0], "future", 0)),
     "DMA 0 ('dma.copy'): fills future 0 ('f') (local s32 [32]) with shared s32 data of rank 1"),
    ("future without a rank", B.misc, lambda m: setattr(host(m).futures[0], "shape", []),
     "future 0 ('f'): a future's data has rank >= 1"),
    ("future extent 0", B.misc, lambda m: setattr(host(m).futures[0], "shape", [0]),
     "future 0 ('f'): extent 0 (expected an extent >= 1, or -1 for one known at run time)"),
    ("fragment extent -2", B.misc, lambda m: setattr(kern(m).frags[0], "rows", -2),
     "fragment 0 ('mc'): tile extent -2 (expected an extent >= 1, or -1 for one known at "
     "run time)"),
    ("bool fragment", B.misc, lambda m: setattr(kern(m).frags[0], "dtype", D.BOOL.code),
     "fragment 0 ('mc'): a fragment holds numbers, not bool"),
    ("transpose without permutation", B.misc,
     lambda m: setattr(host(m).dmas[0], "op", DmaOp.TRANSP),
     "DMA 0 ('dma.copy'): permutation [] for a DMA 'transp' of rank 1"),
    ("lane set that stores", B.scale,
     lambda m: kern(m).lanesets[0].code.extend(B.asm("STORE 0 17")),
     "lane set 0, instruction 3 (STORE): STORE is not allowed in a lane set's code"),
    ("lane set that checks", B.scale,
     lambda m: kern(m).lanesets[0].code.extend(B.asm("ASSERT_FMT 17 0")),
     "lane set 0, instruction 3 (ASSERT_FMT): ASSERT_FMT is not allowed in a lane set's code"),
    ("lane set result not bool", B.scale, lambda m: setattr(kern(m).lanesets[0], "result", 15),
     "lane set 0: result r15 is s32, but must be bool"),
    ("print of a missing string", B.misc,
     lambda m: host(m).prints[0].pieces.__setitem__(0, (PieceKind.STR, 5)),
     "print format 0: string index 5 out of range (2 strings)"),
    ("launch of a missing kernel", B.scale, lambda m: setattr(host(m).launches[0], "kernel", 3),
     "function 'scale', host, launch 0: kernel index 3 out of range (1 kernels)"),
    ("launch argument dtype", B.scale,
     lambda m: setattr(host(m).launches[0], "scalars", [(0, 0), (6, 1)]),
     "launch 0: passes r1 (s32) to kernel register r6 (bool)"),
    ("launch grid rank", B.scale, lambda m: setattr(host(m).launches[0], "grid", [4, 4]),
     "launch 0: 2 grid extents for a kernel of grid rank 1"),
    ("unbound kernel buffer", B.scale, lambda m: setattr(host(m).launches[0], "buffers", [(0, 0)]),
     "launch 0: leaves global kernel buffer(s) y unbound"),
    ("launch in a kernel's tables", B.scale,
     lambda m: kern(m).launches.append(Launch(0, [4], [], [])),
     "kernel 0 ('scale_k0'): launch descriptors belong to host code"),
    # --- function, kernel and module level
    ("scalar parameter slot", B.scale, lambda m: setattr(m.functions[0].params[1], "dtype", 11),
     "parameter 1 ('k'): slot r1 is not a f32 register"),
    ("block size", B.scale, lambda m: setattr(m.functions[0].kernels[0], "block_size", 2048),
     "kernel 0 ('scale_k0'): block size 2048 out of range (0 for one given by each launch, "
     "else 1..1024)"),
    ("negative block size", B.scale, lambda m: setattr(m.functions[0].kernels[0], "block_size", -1),
     "kernel 0 ('scale_k0'): block size -1 out of range"),
    ("block size at launch, not given", B.scale,
     lambda m: setattr(m.functions[0].kernels[0], "block_size", 0),
     "function 'scale', host, launch 0: gives no block size register for kernel 0, whose "
     "block size is given at launch"),
    ("block size register index", B.scale_sized_at_launch,
     lambda m: setattr(host(m).launches[0], "block", 6),
     "launch 0: register index 6 out of range (6 registers)"),
    ("block size register dtype", B.scale_sized_at_launch,
     lambda m: (host(m).regs.append(0), setattr(host(m).launches[0], "block", 6)),
     "launch 0: block size register r6 is bool, but must be s32"),
    ("block size register for a static size", B.scale,
     lambda m: setattr(host(m).launches[0], "block", 2),
     "launch 0: gives block size register r2 for a kernel whose block size is 32"),
    ("shared memory", B.scale, lambda m: const(kern(m), 0, D.S32, 100000),
     "kernel 0 ('scale_k0'): 400008 bytes of shared memory per block, more than the limit "
     "of 233472 (228 KiB)"),
    ("span file", B.squares, lambda m: m.spans.__setitem__(0, (3, 1, 1, 1, 2)),
     "module, span 0: source file index 3 out of range (1 source files)"),
    # a caret under 2**40 columns would take all memory to print
    ("span beyond its line", B.squares, lambda m: m.spans.__setitem__(0, (0, 1, 1, 1, 2**40)),
     "module, span 0: (0, 1, 1, 1, 1099511627776) does not lie in source file 0 (7 lines)"),
    ("span beyond its file", B.squares, lambda m: m.spans.__setitem__(0, (0, 9, 1, 9, 2)),
     "module, span 0: (0, 9, 1, 9, 2) does not lie in source file 0 (7 lines)"),
    ("span ending before it starts", B.squares,
     lambda m: m.spans.__setitem__(0, (0, 2, 5, 2, 3)),
     "module, span 0: (0, 2, 5, 2, 3) does not lie in source file 0 (7 lines)"),
    # the engines had no instance to copy: an internal error on both
    ("return of a buffer nothing allocates", B.squares,
     lambda m: (put(host(m), 1, "CONST 5 1 @1"), put(host(m), 3, "CONST 5 1 @1")),
     "instruction 13 (RET_BUF): returns buffer 0, which is no parameter's and which nothing "
     "allocates"),
    ("two functions of one name", B.squares, lambda m: m.functions.append(B.squares().functions[0]),
     "function 'squares': a second function of this name"),
    ("format version", B.squares, lambda m: setattr(m, "version", 1),
     f"module: format version 1, expected {FORMAT_VERSION}"),
]


@pytest.mark.parametrize("build", B.ALL.values(), ids=list(B.ALL))
def test_hand_built_modules_are_valid(build):
    m = build()
    verify(m)                                  # raises BytecodeError on any fault
    assert cqb.decode(cqb.encode(m)) == m      # and the file holds exactly the module


def test_a_block_size_given_at_launch_is_valid_and_round_trips():
    m = B.scale_sized_at_launch()
    verify(m)
    back = cqb.decode(cqb.encode(m))
    assert back == m
    assert (back.functions[0].kernels[0].block_size, host(back).launches[0].block) == (0, 2)


def test_a_check_showing_values_is_valid_and_round_trips():
    m = B.misc()
    check_with_values(m)
    verify(m)
    back = cqb.decode(cqb.encode(m))
    assert back == m
    assert host(back).code[24 * W:25 * W] == [O.ASSERT_FMT, 12, 1, 0, 0, 0, 8]


def test_a_module_is_verified_once_it_passes_until_it_fails():
    """What ``verified`` tells an engine: a module that passed ``verify``, or was encoded
    or decoded; not one made in memory, nor one that failed the verifier after passing."""
    m = B.squares()
    assert not verified(m)
    verify(m)
    assert verified(m)
    assert verified(cqb.decode(cqb.encode(B.squares())))
    m.version = 1
    with pytest.raises(BytecodeError):
        verify(m)
    assert not verified(m)


@pytest.mark.parametrize("name, build, mutate, message", MALFORMED, ids=[r[0] for r in MALFORMED])
def test_malformed_module_is_rejected(name, build, mutate, message):
    module = build()
    mutate(module)
    with pytest.raises(BytecodeError) as err:
        verify(module)
    assert str(err.value).startswith("malformed .cqb: ")
    assert message in str(err.value)
    hostile = cqb.pack(schema.to_plain(module))
    with pytest.raises(BytecodeError) as err:
        cqb.decode(hostile, "bad.cqb")
    assert str(err.value).startswith("bad.cqb: malformed .cqb: ")
    assert message in str(err.value)


def test_a_constant_its_dtype_overflows_is_rejected_without_a_numpy_warning():
    # the check rounds 1e300 to f16 (inf): numpy's overflow warning came a line before
    # the one-line error
    module = B.misc()
    const(host(module), 6, D.F16, 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(BytecodeError, match=r"constant k6: 1e\+300 is not a f16 value"):
            cqb.decode(cqb.pack(schema.to_plain(module)))


def test_a_signalling_nan_constant_is_valid_without_a_numpy_warning():
    # a NaN holds in every float type; casting a signalling one warned 'invalid value'
    module = B.misc()
    const(host(module), 6, D.F32, struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cqb.decode(cqb.pack(schema.to_plain(module)))


def test_wrong_python_types_are_bytecode_errors():
    m = B.squares()
    host(m).code[1] = np.int64(1)
    with pytest.raises(BytecodeError, match=r"module\.functions\[0\]\.host\.code\[1\]: "
                                            "expected an integer, got int64"):
        verify(m)
    m = B.squares()
    host(m).buffers[0].name = None
    with pytest.raises(BytecodeError, match=r"buffers\[0\]\.name: expected a string, got NoneType"):
        verify(m)
    m = B.squares()
    host(m).buffers[0].storage = "texture"
    with pytest.raises(BytecodeError, match=r"buffers\[0\]\.storage: expected an integer "
                                            r"\(Storage\), got str"):
        verify(m)
    m = B.squares()
    host(m).accesses[0].base_kind = Storage.SHARED
    with pytest.raises(BytecodeError, match=r"accesses\[0\]\.base_kind: expected an integer "
                                            r"\(BaseKind\), got Storage"):
        verify(m)


BOUND = """
__co__ void bound(s32 [4] g) {
  parallel p by 1 : block {
    shared s32 [4] s;
    shared event e[2];
    parallel t by 32 : thread {
      f = dma.copy.async g => s;
      trigger e[0] after f;
      wait e.at(0);
    }
  }
}
"""


def _first(code, name):
    return next(i for i in range(len(code.code) // W) if code.code[i * W] == O.BY_NAME[name].code)


def test_a_future_bound_without_its_trigger_is_rejected():
    import croqvm
    m = croqvm.compile(BOUND, "bound.co").module
    put(kern(m), _first(kern(m), "TRIGGER"), "NOP")
    with pytest.raises(BytecodeError) as err:
        verify(m)
    assert f"instruction {_first(kern(m), 'FUT_BIND')} (FUT_BIND): must be followed by the " \
           "TRIGGER that publishes it (FUT_BINDs may come between)" in str(err.value)


def test_a_parity_wait_takes_an_s64_order():
    import croqvm
    m = croqvm.compile(BOUND, "bound.co").module
    i = _first(kern(m), "WAIT_EVENT_AT")
    s32 = kern(m).regs.index(D.S32.code)
    word(kern(m), i, 2, s32)
    with pytest.raises(BytecodeError) as err:
        verify(m)
    assert f"instruction {i} (WAIT_EVENT_AT): operand b r{s32} is s32, but must be s64" \
        in str(err.value)
