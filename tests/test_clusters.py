"""The ``cluster`` level (LANGUAGE.md §6.3.7): a kernel's outermost level, around its block
level; its indices are each block's place in its cluster. What programs print or report is
written out by hand.
"""
from __future__ import annotations

import io
import textwrap

import pytest

import croqvm
from croqvm.lang.frontend import front_end

import engines

pytestmark = pytest.mark.usefixtures("engine")   # every test runs on each engine


def run(source: str, func: str, *args) -> str:
    out = io.StringIO()
    prog = croqvm.compile(textwrap.dedent(source).lstrip("\n"), "cl.co")
    engines.run(prog, func, *args, out=out)
    return out.getvalue()


def _sorted_if_device(text: str) -> list[str]:
    """The lines printed; sorted on a device, whose blocks print in any order."""
    lines = text.splitlines()
    return lines if engines.interprets(engines._active[-1]) else sorted(lines)


def test_cluster_indices_are_the_block_index_modulo_the_cluster():
    """Clusters of 4 blocks along x: cm = bm % 4 (blocks in row-major order)."""
    printed = run("""
        __co__ void nested() {
          parallel {cm} by [4] : cluster {
            parallel {bm, bn} by [8, 1] : block {
              println(cm, bm);
            }
          }
        }
    """, "nested")
    want = [f"{bm % 4} {bm}" for bm in range(8)]
    assert _sorted_if_device(printed) == (want if engines.interprets(engines._active[-1])
                                          else sorted(want))


def test_a_cluster_in_two_dimensions_with_threads():
    """Clusters of 2 x 2 blocks over a 4 x 2 grid: (c0, c1) = (b0 % 2, b1 % 2)."""
    printed = run("""
        __co__ void flat() {
          parallel {c0, c1} by [2, 2] : cluster, {b0, b1} by [4, 2] : block,
                   t by 32 : thread {
            if (t == 0)
              println(b0, b1, c0, c1);
          }
        }
    """, "flat")
    want = [f"{b0} {b1} {b0 % 2} {b1 % 2}" for b0 in range(4) for b1 in range(2)]
    assert _sorted_if_device(printed) == (want if engines.interprets(engines._active[-1])
                                          else sorted(want))


def test_the_grid_must_be_whole_clusters():
    source = textwrap.dedent("""
        __co__ void uneven(int n) {
          parallel c by 4 : cluster, b by n : block
            println(c, b);
        }
    """).lstrip("\n")
    prog = croqvm.compile(source, "cl.co")
    with pytest.raises(croqvm.KernelFault) as info:
        engines.run(prog, "uneven", 6, out=io.StringIO())
    assert str(info.value) == textwrap.dedent("""\
        cl.co:2:3: runtime error: the grid's dimension 0 has 6 blocks, which is not a multiple of the cluster's 4.
            2 |   parallel c by 4 : cluster, b by n : block
              |   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
          in host code of 'uneven'""")


HINT = ("write 'parallel c by C : cluster, b by B : block { ... }', or a 'cluster' "
        "parallel-by whose body is only the 'block' one")


@pytest.mark.parametrize("body, expected", [
    ("parallel c by 2 : cluster { int x = 1; parallel b by 4 : block { } }",
     ["2:10: a 'cluster' level must be the outermost level of a kernel, directly around its "
      f"'block' level. [{HINT}]"]),
    ("parallel b by 4 : block { parallel c by 2 : cluster { } }",
     ["2:36: a 'cluster' level must be the outermost level of a kernel, directly around its "
      f"'block' level. [{HINT}]"]),
    ("parallel c by 16 : cluster, b by 32 : block { }",
     ["2:10: a cluster of 16 blocks is more than the 8 a cluster may have."]),
])
def test_static_errors(body, expected):
    _, diags, _ = front_end("__co__ void f() {\n" + body + "\n}", "t.co")
    assert [f"{d.span.line}:{d.span.col}: {d.message}" + (f" [{d.hint}]" if d.hint else "")
            for d in diags if d.severity == "error"] == expected
