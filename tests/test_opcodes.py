"""The opcode table is consistent with itself and with the rules that read it (STYLE.md §1:
one table drives the encoder, the verifier, the disassembler, the engines and the docs)."""
import pytest

from croqvm.bytecode import opcodes as O
from croqvm.core.faults import Kind
from croqvm.bytecode.verify_code import _IMMEDIATE_RULES, ENTRY_RULES
from croqvm.bytecode.verify_rules import CLASSES


@pytest.mark.parametrize("op", O.TABLE, ids=[op.name for op in O.TABLE])
def test_each_row_states_a_rule_per_operand(op):
    assert op.code == O.TABLE.index(op)
    assert getattr(O, op.name) == op.code            # the names written out for tools
    assert all(kind.rstrip("?") in O.OPERAND_KINDS for kind in op.operands)
    assert len(op.types) == op.operands.count("r")
    assert all(rule.rstrip("=") in CLASSES for rule in op.types)
    assert len(op.imms) == op.operands.count("i")
    assert all(rule in _IMMEDIATE_RULES for rule in op.imms)
    assert op.entry == "" or op.entry in ENTRY_RULES


@pytest.mark.parametrize("op", O.TABLE, ids=[op.name for op in O.TABLE])
def test_flags_agree_with_the_operands(op):
    if op.writes >= 0:
        assert op.operands[op.writes] == "r"
    site = [k for k in op.operands if k.startswith("c")]
    # a named barrier's site gives only the lanes a warp must arrive with (§6.8)
    named_barrier = op.name in ("BAR_SYNC", "BAR_ARRIVE")
    assert (op.collective == O.Mode.ALWAYS) == (site == ["c"] and not named_barrier)
    assert (op.collective == O.Mode.WITH_SITE) == (site == ["c?"])
    assert op.blocks == O.Mode.ALWAYS or op.blocks == op.collective
    assert not (op.host_only and op.kernel_only)
    assert op.returns is None or op.host_only
    assert not (op.opens and op.closes)


def test_writes_is_every_op_that_assigns_a_register():
    """``R[a] :=`` in the meaning and the ``writes`` flag say the same."""
    assert {op.name for op in O.TABLE if op.writes == 0} == \
        {op.name for op in O.TABLE if op.meaning.startswith("R[a] :=")}


def test_only_once_has_an_effect_block_and_it_writes_its_condition():
    assert [op.name for op in O.TABLE if op.effect_block] == ["ONCE"]
    assert O.BY_NAME["ONCE"].writes == 0 and O.BY_NAME["ONCE"].types == ("bool",)


def test_the_names_written_out_are_exactly_the_table():
    written = {name for name, value in vars(O).items()
               if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
               and name not in ("WIDTH", "SPAN", "MAX_OPERANDS")}
    assert written == set(O.BY_NAME)


def test_update_operators_are_binary_alu_ops():
    for code in O.BINARY_ALU:
        assert O.TABLE[code].types[1:] in (("arith=", "arith="), ("logic=", "logic="),
                                           ("shift=", "shift"))


def test_every_fault_kind_belongs_to_an_opcode():
    """Every runtime error but the step limit and an uninitialised register (any
    instruction's) is some opcode's."""
    named = {kind for op in O.TABLE for kind in op.faults}
    assert all(isinstance(kind, Kind) for kind in named)
    assert set(Kind) - named == {Kind.STEP_LIMIT, Kind.UNINITIALISED_REGISTER}
