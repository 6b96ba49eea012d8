"""The runtime message catalogue and fault records (croqvm/reports/messages.py, croqvm/core/faults.py,
croqvm/reports/render.py): every kind has one well-formed template, engines report records, and a
record alone gives the message text (what a second engine relies on)."""
import pathlib
import re
import string

import pytest

from asm import ALL, Asm, function, kernel_module, run
from croqvm.core import dtypes
from croqvm.bytecode.module import BufferDecl, CollSite, Const, Storage
from croqvm.core.errors import InternalError, KernelFault
from croqvm.core.faults import Kind
from croqvm.reports.messages import REPORTS, TEMPLATES, WRITERS, message
from croqvm.reports.messages_doc import faults_markdown
from croqvm.running.program import Program
from croqvm.reports import render as report
from croqvm.core.source import SpanTable

ROOT = pathlib.Path(__file__).resolve().parent.parent


def fields(text: str) -> set[str]:
    """The argument names a template uses (``{x.are}`` uses ``x``)."""
    return {re.split(r"[.\[]", name)[0]
            for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("name, template", [(k.name, TEMPLATES[k]) for k in Kind] +
                         list(REPORTS.items()))
def test_every_template_uses_exactly_its_typed_arguments(name, template):
    assert fields(template.text) == {n for n, _ in template.args}
    assert {t for _, t in template.args} <= set(WRITERS)


def test_every_kind_has_a_template_and_numbers_are_distinct():
    assert set(TEMPLATES) == set(Kind)
    assert len({int(k) for k in Kind}) == len(Kind)


def test_every_kind_is_raised_by_the_engine():
    """No catalogue entry is dead: each kind is named where a fault is raised."""
    sources = "".join(p.read_text() for p in (ROOT / "croqvm").rglob("*.py")
                      if p.name != "messages.py")
    assert [k.name for k in Kind if f"Kind.{k.name}" not in sources] == []


def test_numeric_messages_need_no_context():
    s32 = dtypes.S32.code
    assert message(Kind.FLOAT_TO_INT, (3e10, s32), None) == \
        "value 3e+10 out of range for 's32'."
    assert message(Kind.SHIFT_COUNT, (40, s32), None) == "shift count 40 out of range for 's32'."
    assert message(Kind.DIVISION_BY_ZERO, (), None) == "integer division by zero."


def divide_by_lane_minus_three():
    """Each of 40 lanes computes 7 / (lane - 3): lane 3 divides by zero."""
    a = Asm()
    k = a.code("LANE r0\nCONST r1 k0\nSUB r2 r0 r1\nCONST r3 k1\nDIV r4 r3 r2",
               regs="s32 s32 s32 s32 s32", consts=[("s32", 3), ("s32", 7)])
    return kernel_module(a, k, 40, grid=(2,))


@pytest.mark.usefixtures("engine")
def test_a_runtime_error_carries_its_record():
    with pytest.raises(KernelFault) as e:
        run(divide_by_lane_minus_three())
    rec = e.value.record
    assert (rec.kind, rec.operands, rec.launch, rec.block, rec.lane, rec.warp, rec.ip) == \
        (Kind.DIVISION_BY_ZERO, (), 0, (0,), 3, 0, 4)
    assert str(e.value) == "\n".join([
        "code.asm:5:1: runtime error: integer division by zero.",
        "    5 | DIV r4 r3 r2",
        "      | ^~~~~~~~~~~~",
        "  in kernel launched at host.asm:3:1, block (0), lane 3 (warp 0, lane 3)"])


@pytest.mark.usefixtures("engine")
def test_the_record_alone_gives_the_text():
    """What a C engine returns (a record) renders as the Python engine's error does."""
    module = divide_by_lane_minus_three()
    with pytest.raises(KernelFault) as e:
        run(module)
    again = report.fault(SpanTable(module.sources, module.spans), module.functions[0],
                         e.value.record)
    assert str(again) == str(e.value)


def test_an_instruction_that_can_not_be_prepared_is_an_internal_error_at_it():
    """An unverified module whose f64 constant no float holds: no traceback, but the
    internal error of §1.2 of the audit, at the instruction (the verifier's job is to
    reject such a module before any engine sees it)."""
    a = Asm()
    host = a.code("CONST r0 k0\nRET", regs="f64")
    host.consts = [Const(dtypes.F64.code, 10 ** 400)]
    with pytest.raises(InternalError) as e:
        Program(a.module(function("f", host))).run("f", engine="python")
    assert str(e.value).startswith("code.asm:1:1: error: internal error: OverflowError")
    assert str(e.value).endswith("in host code of 'f'")


@pytest.mark.usefixtures("engine")
def test_collective_operands_compare_by_their_bits():
    """§7.4.5: 0.0 and -0.0 are different operands of a collective FILL."""
    a = Asm()
    k = a.code("""
        LANE r0
        CVT r1 r0
        CONST r2 k0
        MUL r3 r1 r2
        CONST r4 k1
        SUB r3 r4 r3
        CONST r5 k2
        MUL r6 r5 r3          # 0 * (1 - 2 lane): 0.0 in lane 0, -0.0 in lane 1
        CONST r7 k3
        ALLOC b0
        FILL b0 r6 c0""", regs="s32 f32 f32 f32 f32 f32 f32 s32",
        consts=[("f32", 2.0), ("f32", 1.0), ("f32", 0.0), ("s32", 4)],
        buffers=[BufferDecl("s", Storage.SHARED, dtypes.F32.code, [7])],
        colls=[CollSite(0, 0, "s {v}")], lanesets=[ALL])
    with pytest.raises(KernelFault) as e:
        run(kernel_module(a, k, 2))
    assert str(e.value).splitlines()[0] == (
        "code.asm:12:9: runtime error: operands of collective 's {v}' differ between lane 0 "
        "and lane 1 (value 0 vs -0).")


def test_the_faults_document_is_generated_from_the_catalogue():
    """docs/FAULTS.md: regenerate with ``python -m croqvm.reports.messages_doc > docs/FAULTS.md``."""
    assert (ROOT / "docs" / "FAULTS.md").read_text() == faults_markdown()
