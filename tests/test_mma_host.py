"""MMA at host level and on s32 operands (LANGUAGE.md §11.2 (c), §11.3), as Croqtile's own
interpreter (co-mock) runs them: the host lane is the unit, statements run one after the
other, s32 operands accumulate in s32. Every result is checked against numpy; each test
runs on every engine."""
import io

import numpy as np
import pytest

import croqvm
import engines

pytestmark = pytest.mark.usefixtures("engine")

# (layout, A's stored shape as a function of M, K, B's stored shape of K, N, and how the
# logical A [M, K] and B [K, N] are read from the stored tiles; §11.3's table)
LAYOUTS = {
    "row.row": (lambda m, k: (m, k), lambda k, n: (n, k), lambda a: a, lambda b: b.T),
    "row.col": (lambda m, k: (m, k), lambda k, n: (k, n), lambda a: a, lambda b: b),
    "col.row": (lambda m, k: (k, m), lambda k, n: (n, k), lambda a: a.T, lambda b: b.T),
    "col.col": (lambda m, k: (k, m), lambda k, n: (k, n), lambda a: a.T, lambda b: b),
}


def printed(src: str, func: str) -> list[int]:
    out = io.StringIO()
    engines.run(croqvm.compile(src, "host_mma.co"), func, out=out)
    return [int(x) for x in out.getvalue().split()]


def fill(name: str, shape, formula) -> str:
    """Host statements giving every element of ``name`` the value of ``formula`` in i, j."""
    return (f"  s32 [{shape[0]}, {shape[1]}] {name};\n"
            f"  foreach {{i, j}} in [{shape[0]}, {shape[1]}]\n"
            f"    {name}.at(i, j) = {formula[0]};\n")


# element formulas: as Croqtile writes them, and as numpy computes them
FA = ("i * 5 - j * 3 + 2", lambda i, j: i * 5 - j * 3 + 2)
FB = ("(i + 1) * (j - 2)", lambda i, j: (i + 1) * (j - 2))
FC = ("i + j", lambda i, j: i + j)
FD = ("i - j + 3", lambda i, j: i - j + 3)


def values(shape, formula):
    return formula[1](*np.indices(shape)).astype(np.int64)


def show(name: str, shape) -> str:
    return (f"  foreach {{i, j}} in [{shape[0]}, {shape[1]}]\n"
            f"    println({name}.at(i, j));\n")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("m, n, k, init", [(2, 2, 3, 0), (3, 4, 5, -7), (1, 6, 2, 40)])
def test_a_host_level_mma_computes_init_plus_a_times_b(layout, m, n, k, init):
    a_shape, b_shape, read_a, read_b = LAYOUTS[layout]
    sa, sb = a_shape(m, k), b_shape(k, n)
    src = ("__co__ void g() {\n" + fill("a", sa, FA) + fill("b", sb, FB)
           + f"  s32 [{m}, {n}] c;\n"
           + f"  mc = mma.fill.s32 {init};\n  ma = mma.load a;\n  mb = mma.load b;\n"
           + f"  mma.{layout} mc, ma, mb;\n  mma.store mc, c;\n" + show("c", (m, n)) + "}\n")
    want = init + read_a(values(sa, FA)) @ read_b(values(sb, FB))
    assert printed(src, "g") == want.ravel().tolist()


def test_host_statements_between_mma_operations_see_their_effects_in_order():
    # an accumulator used twice: C = (0 + A B) stored, then A B again on top of it
    src = ("__co__ void g() {\n" + fill("a", (2, 2), FC) + fill("b", (2, 2), FD)
           + "  s32 [2, 2] c;\n  s32 [2, 2] d;\n"
           "  mc = mma.fill.s32 0;\n  ma = mma.load a;\n  mb = mma.load b;\n"
           "  mma.row.col mc, ma, mb;\n  mma.store mc, c;\n"
           "  a.at(0, 0) = 100;\n"            # after the load: the fragment keeps its copy
           "  mma.row.col mc, ma, mb;\n  mma.store mc, d;\n"
           + show("c", (2, 2)) + show("d", (2, 2)) + "}\n")
    ab = values((2, 2), FC) @ values((2, 2), FD)
    assert printed(src, "g") == ab.ravel().tolist() + (2 * ab).ravel().tolist()


def test_s32_operands_accumulate_in_s32_with_wrap_around_in_a_kernel():
    # s32 products and sums wrap as s32 arithmetic does (§12.3)
    src = """
    __co__ void k(global s32 [4, 4] a, global s32 [4, 4] b, global s32 [4, 4] c) {
      parallel p by 1 : block {
        parallel q by 1 : group {
          mc = mma.fill.s32 1;
          ma = mma.load a;
          mb = mma.load b;
          mma.row.col mc, ma, mb;
          mma.store mc, c;
        }
      }
    }"""
    rng = np.random.default_rng(5)
    a = rng.integers(-2**31, 2**31, (4, 4)).astype(np.int32)
    b = rng.integers(-2**31, 2**31, (4, 4)).astype(np.int32)
    c = np.zeros((4, 4), np.int32)
    engines.run(croqvm.compile(src, "k.co"), "k", a, b, c)
    want = (1 + a.astype(object) @ b.astype(object)) % 2**32
    want = np.array([[x - 2**32 if x >= 2**31 else x for x in row] for row in want],
                    dtype=np.int64)
    np.testing.assert_array_equal(c, want)
