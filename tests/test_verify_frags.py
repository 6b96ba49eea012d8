"""The verifier's rules for the fragment opcodes (LANGUAGE.md §11.7): FRAG_GET and FRAG_SET
name an accumulator, SHFL_XOR a partner in the warp, MMA_GATHER a 2-D local buffer of the
fragment's type."""
import re

import pytest

import bytecode_builders as B
from croqvm.bytecode import opcodes as O
from croqvm.bytecode.module import BufferDecl, Storage
from croqvm.bytecode.verify import verify
from croqvm.core.errors import BytecodeError

W = O.WIDTH


def kern(m):
    return m.functions[0].kernels[0].code


def put(listing, *, local_shape=None, dtype=9):
    """misc() with its MMA_FILL (instruction 3) replaced by ``listing`` (operands written
    with their table's letter, as the disassembler does: r2, m1, b0, c0); a local buffer
    b1 of ``dtype`` with extents in registers ``local_shape`` when given."""
    def mutate(m):
        k = kern(m)
        if local_shape is not None:
            k.buffers.append(BufferDecl("f", Storage.LOCAL, dtype, list(local_shape)))
        k.code[3 * W:4 * W] = B.asm(re.sub(r"\b[rmbc](\d+)", r"\1", listing))
    return mutate


CASES = [
    ("FRAG_GET r2 m1 r0 r1", {}, "fragment 1 ('ma') is an A operand fragment; FRAG_GET takes "
                                 "an accumulator there"),
    ("FRAG_SET m2 r0 r1 r2", {}, "fragment 2 ('ma') is a B operand fragment; FRAG_SET takes "
                                 "an accumulator there"),
    ("FRAG_GET r0 m0 r2 r1", {}, "operand c"),
    ("SHFL_XOR r0 r1 0", {}, "lane mask 0 out of range (1..31)"),
    ("SHFL_XOR r0 r1 32", {}, "lane mask 32 out of range (1..31)"),
    ("SHFL_XOR r0 r2 1", {}, "operands a and b must have the same dtype"),
    ("MMA_GATHER m1 b0 0 c0", {}, "buffer 0 ('c') is not a 2-D local buffer"),
    ("MMA_GATHER m1 b1 0 c0", {"local_shape": [0, 1], "dtype": 11},
     "buffer 1 ('f') has f32 elements, but fragment 1 ('ma') is f16"),
    ("MMA_GATHER m1 b1 2 c0", {"local_shape": [0, 1]}, "flag 2 out of range"),
]


@pytest.mark.parametrize("listing, extra, message", CASES, ids=[c[0] for c in CASES])
def test_malformed_fragment_instruction_is_rejected(listing, extra, message):
    m = B.misc()
    put(listing, **extra)(m)
    with pytest.raises(BytecodeError) as err:
        verify(m)
    assert message in str(err.value)


def test_a_gather_from_a_local_buffer_of_the_fragments_type_is_valid():
    m = B.misc()
    put("MMA_GATHER m1 b1 0 c0", local_shape=[0, 0])(m)
    kern(m).consts[0].value = 16             # the extents: r0 holds 16
    verify(m)
