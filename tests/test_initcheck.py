"""Initialisation checking (``check="init"``, ``croqvm run --check init``, ``--poison``;
LANGUAGE.md §14.4, docs/EXECUTION.md §20): reads of buffer elements never written (poison
mode) and of registers no instruction wrote in the reading lane. Compiled programs always
initialise their registers, so register reads are tested on hand-made modules, like the
one docs/EXECUTION.md §6 warns about: a constant loaded in a divergent branch.

The check observes the reference engine, which these tests name explicitly.
"""
from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest

import croqvm
from asm import ALL, Asm, P, kernel_module
from croqvm.cli import main
from croqvm.faults import Kind
from croqvm.program import Program

ROOT = Path(__file__).resolve().parent.parent


def divergent_constant(names=("", "", "", "")):
    """Lanes 0-15 load 5 into r3 under an IF, then every lane prints r3."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        LT r2 r0 r1
        IF r2
          CONST r3 k1
        END
        PRINT p0
    """, regs="s32 s32 bool s32", consts=[("s32", 16), ("s32", 5)], prints=[P("r3")],
               lanesets=[ALL])
    k.reg_names = list(names)
    return kernel_module(a, k, 32)


def fault(module, **options) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        Program(module).run("f", engine="python", out=io.StringIO(), **options)
    return str(info.value)


def test_a_register_read_before_any_write_in_the_lane_is_reported():
    assert fault(divergent_constant(), check="init").splitlines() == [
        "code.asm:8:9: runtime error: read of uninitialised register r3: no instruction has "
        "written it in this lane yet.",
        "    8 |         PRINT p0",
        "      |         ^~~~~~~~",
        "  in kernel launched at host.asm:3:1, block (0), lane 16 (warp 0, lane 16)"]


def test_a_named_register_is_reported_as_its_variable():
    text = fault(divergent_constant(("", "", "", "count")), check="init")
    assert text.startswith("code.asm:8:9: runtime error: read of uninitialised variable "
                           "'count': no instruction has written it in this lane yet.")


def test_poison_is_check_init_on_the_python_engine():
    assert fault(divergent_constant(), poison=True) == fault(divergent_constant(),
                                                             check="init")


def test_without_the_check_registers_start_at_zero():
    out = io.StringIO()
    Program(divergent_constant()).run("f", engine="python", out=out)
    assert out.getvalue() == "5\n" * 16 + "0\n" * 16


def test_a_shared_element_read_before_any_write_is_reported():
    prog = croqvm.compile("""
__co__ void early() {
  s32 [64] out;
  parallel b by 1 : block, t by 64 : thread {
    shared s32 [64] buf;
    if (t < 32)
      buf.at(t) = t;
    sync.shared;
    out.at(t) = buf.at(63 - t);
  }
}
""", "early.co")
    with pytest.raises(croqvm.KernelFault) as info:
        prog.run("early", engine="python", check="init")
    assert str(info.value).splitlines()[0] == (
        "early.co:9:5: runtime error: read of uninitialised element buf.at(63) (buffer "
        "declared at early.co:5:21).")


def test_cli_check_init_and_poison_report_with_status_3(tmp_path, capsys):
    path = tmp_path / "early.co"
    path.write_text("__co__ void f() {\n  s32 [4] a;\n  println(a.at(2));\n}\n")
    assert main(["run", str(path)]) == 0
    for option in (["--check", "init"], ["--poison"]):
        capsys.readouterr()
        assert main(["run", str(path), *option]) == 3
        assert capsys.readouterr().err.startswith(
            f"{path}:3:3: runtime error: read of uninitialised element a.at(2)")


def _catalogue():
    spec = importlib.util.spec_from_file_location("init_catalog", ROOT / "programs" /
                                                  "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [e for e in module.PROGRAMS if e.stage is None]


@pytest.mark.parametrize("entry", _catalogue(), ids=lambda e: e.id)
def test_compiled_programs_initialise_every_register(entry):
    # Some programs rely on croqvm's zero-filled buffers (D12), which the check reports;
    # none reads a register it has not written.
    prog = croqvm.compile_file(entry.path, defines=entry.defines)
    names = [entry.func] if entry.func else [f.name for f in prog.functions if not f.params]
    for name in names:
        args, dims = entry.make_args(np.random.default_rng(0), "test") if entry.func \
            else ([], {})
        try:
            prog.run(name, *args, engine="python", check="init", out=io.StringIO(), **dims)
        except croqvm.KernelFault as err:
            assert err.record is not None and err.record.kind == Kind.UNINITIALISED, str(err)
