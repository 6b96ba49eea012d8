"""Initialisation checking (``check="init"``, ``croqvm run --check init``, ``--poison`` its
other name; LANGUAGE.md §14.4, docs/EXECUTION.md §20): reads of registers no instruction
wrote in the reading lane, and of buffer elements nothing gave a value: those of a DMA's
own buffer that a tile reaching past its source's end did not cover. Declared buffers
start zeroed (§3.2.4), so reading them is no error. Compiled programs always initialise
their registers, so register reads are tested on hand-made modules, like the one
docs/EXECUTION.md §6 warns about: a constant loaded in a divergent branch.

The Python engine is the spec: the native engine's reports are compared with its, text
for text, serially and with a launch's blocks on threads.
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
from croqvm.cli.main import main
from croqvm.running.program import Program
from parity import assert_alike, outcome

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


def divergent_in_one_block(blocks=8, block=3):
    """Every block but ``block`` writes r3 in all its lanes; that one in lanes 0-15 only;
    then every lane reads r3."""
    a = Asm()
    k = a.code("""
        LANE r0
        CONST r1 k0
        LT r2 r0 r1
        BLOCKIDX r4 0
        CONST r5 k2
        NE r6 r4 r5
        OR r2 r2 r6
        IF r2
          CONST r3 k1
        END
        ADD r7 r3 r3
    """, regs="s32 s32 bool s32 s32 s32 bool s32",
               consts=[("s32", 16), ("s32", 5), ("s32", block)], lanesets=[ALL])
    return kernel_module(a, k, 32, grid=(blocks,))


def fault(module, engine="python", **options) -> str:
    with pytest.raises(croqvm.KernelFault) as info:
        Program(module).run("f", engine=engine, out=io.StringIO(), **options)
    return str(info.value)


def same_on_both_engines(module, func="f", args=(), dims=None, **options):
    """The native engine's outcome (result, arguments, output, error, stats) is the
    Python engine's, serially and with blocks on threads; the Python one's error text."""
    ref = outcome(module, func, list(args), dims or {}, "python", **options)
    for jobs in (1, 4):
        got = outcome(module, func, list(args), dims or {}, "native", jobs=jobs, **options)
        assert_alike(got, ref, f"native, jobs={jobs}")
    return ref[3][1] if ref[3] else None


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


@pytest.mark.parametrize("name", ["python", "native"])
def test_poison_is_check_init_on_every_engine(name):
    assert fault(divergent_constant(), name, poison=True) == \
        fault(divergent_constant(), name, check="init")


def test_an_uninitialised_register_read_is_reported_alike_on_both_engines():
    assert same_on_both_engines(divergent_constant(), check="init").startswith(
        "code.asm:8:9: runtime error: read of uninitialised register r3")
    assert same_on_both_engines(divergent_in_one_block(), check="init").splitlines()[-1] \
        == "  in kernel launched at host.asm:3:1, block (3), lane 16 (warp 0, lane 16)"


def test_without_the_check_registers_start_at_zero():
    out = io.StringIO()
    Program(divergent_constant()).run("f", engine="python", out=out)
    assert out.getvalue() == "5\n" * 16 + "0\n" * 16


# A copy of a tile that reaches past the end of ``a`` (20 elements) into a DMA's own
# buffer: block 6's tile is a.at(18), a.at(19) and one element past the end, which the
# copy leaves as it was, never written; lane 2 of that block reads it.
PARTIAL_LOCAL = """
__co__ void f(s32 [20] a, global s32 [7, 4] out) {
  parallel p by 7 : block {
    parallel t by 4 : thread {
      g = dma.copy a.subspan(3).at(p) => local;
      out.at(p, t) = g.data.at(t % 3);
    }
  }
}
"""


def test_an_uninitialised_local_element_is_reported_alike_on_both_engines():
    prog = croqvm.compile(PARTIAL_LOCAL.lstrip(), "local.co")
    text = same_on_both_engines(prog.module, args=[np.arange(20, dtype=np.int32),
                                                   np.zeros((7, 4), np.int32)], check="init")
    assert text.splitlines() == [
        "local.co:5:7: runtime error: read of uninitialised element g.data.at(2) (buffer "
        "declared at local.co:4:7).",
        "    5 |       out.at(p, t) = g.data.at(t % 3);",
        "      |       ^" + "~" * 30,
        "  in kernel launched at local.co:2:3, block (6), lane 2 (warp 0, lane 2)"]
    out = np.zeros((7, 4), np.int32)        # without the check, the element holds 0
    prog.run("f", np.arange(20, dtype=np.int32), out)
    assert out[6].tolist() == [18, 19, 0, 18]


PARTIAL_TILE = """
__co__ void f(f16 [3, 2] b, global f32 [2, 2] c) {
  parallel p by 1 : block {
    s = dma.copy b.subspan(2, 2).at(1, 0) => shared;
    parallel q by 1 : group {
      fa = mma.load s;
      mc = mma.fill.f32 0.0f;
      mma.row.row mc, fa, fa;
      mma.store mc, c;
    }
  }
}
"""


def test_an_mma_load_of_a_partly_written_tile_is_reported_alike_on_both_engines():
    # the tile's row 1 lies past b's end: the copy into shared memory leaves it unwritten
    prog = croqvm.compile(PARTIAL_TILE.lstrip(), "tile.co")
    text = same_on_both_engines(prog.module, args=[np.ones((3, 2), np.float16),
                                                   np.zeros((2, 2), np.float32)],
                                check="init")
    assert text.splitlines()[0] == (
        "tile.co:5:7: runtime error: read of uninitialised element s.at(1, 0) (buffer "
        "declared at tile.co:3:5).")


ZEROED = """
__co__ s32 [8, 16] matmul(s32 [8, 16] lhs, s32 [16, 16] rhs) {
  s32 [lhs.span(0), rhs.span(1)] output;
  parallel {p, q} by [2, 4] {
    foreach index = {m, n, k} in [8 / #p, 16 / #q, 16]
      output.at(p#m, q#n) += lhs.at(p#m, k) * rhs.at(k, q#n);
  }
  return output;
}

__co__ s32 [4, 8] sums(s32 [4, 8, 16] x) {
  s32 [4, 8] out;
  parallel b by 4 : block {
    shared s32 [8] total;
    parallel t by 8 : thread {
      local s32 [1] acc;
      foreach k in [16]
        acc.at(0) += x.at(b, t, k);
      total.at(t) += acc.at(0);
    }
    sync.shared;
    parallel t by 8 : thread
      out.at(b, t) = total.at(t);
  }
  return out;
}
"""


def test_accumulating_into_zeroed_buffers_is_not_reported():
    # §3.2.4: global, shared and local buffers start zeroed; the tutorial's matmul
    # (tests/tutorial/ch3_matmul_scalar.co) accumulates into its output so
    rng = np.random.default_rng(1)
    lhs, rhs = rng.integers(-9, 9, (8, 16), np.int32), rng.integers(-9, 9, (16, 16), np.int32)
    x = rng.integers(-9, 9, (4, 8, 16), np.int32)
    module = croqvm.compile(ZEROED, "zeroed.co").module
    for func, args, want in (("matmul", [lhs, rhs], lhs @ rhs), ("sums", [x], x.sum(axis=2))):
        assert same_on_both_engines(module, func, args, check="init") is None
        got = outcome(module, func, args, {}, "native", check="init")[0]
        np.testing.assert_array_equal(got, want)


def test_cli_check_init_and_poison_report_with_status_3(tmp_path, capsys):
    path = tmp_path / "part.co"
    path.write_text("__co__ void f() {\n  s32 [3] a;\n  g = dma.copy a.subspan(2).at(1) "
                    "=> global;\n  println(g.data.at(1));\n}\n")
    assert main(["run", str(path)]) == 0
    reports = []
    for option in (["--check", "init"], ["--poison"], ["--check", "init", "--engine",
                                                        "python"]):
        capsys.readouterr()
        assert main(["run", str(path), *option]) == 3
        reports.append(capsys.readouterr().err)
    assert reports[0].startswith(
        f"{path}:4:3: runtime error: read of uninitialised element g.data.at(1)")
    assert reports[0] == reports[1] == reports[2]


def _catalogue():
    spec = importlib.util.spec_from_file_location("init_catalog", ROOT / "programs" /
                                                  "catalog.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [e for e in module.PROGRAMS if e.stage is None]


@pytest.mark.parametrize("entry", _catalogue(), ids=lambda e: e.id)
def test_compiled_programs_read_nothing_uninitialised(entry):
    # Some programs rely on zero-filled buffers (§3.2.4), which the check accepts; none
    # reads a register it has not written, or an element nothing gave a value.
    prog = croqvm.compile_file(entry.path, defines=entry.defines)
    names = [entry.func] if entry.func else [f.name for f in prog.functions if not f.params]
    for name in names:
        args, dims = entry.make_args(np.random.default_rng(0), "test") if entry.func \
            else ([], {})
        assert same_on_both_engines(prog.module, name, args, dims, check="init") is None
