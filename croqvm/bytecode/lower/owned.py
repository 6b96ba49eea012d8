"""The accumulator elements a lane holds, as loops of plain integer arithmetic
(LANGUAGE.md §11.7): the C fragment of ``mma.sync.m16n8`` per warp, the D fragment of
``wgmma.m64nN`` per warpgroup (a warp per 16-row band), everything for a one-lane unit.
Shared by the lowering of fragment statements and of MMA on frags."""
from __future__ import annotations

from croqvm.core import dtypes
from croqvm.core.limits import WARP_SIZE

from .state import Lowerer
from .values import FragRef

ROW_LANES = 4            # the lanes of a warp holding one row of a C/D fragment


def loop(lw: Lowerer, count, name: str, body) -> None:
    """``for i in [0, count)``: body(i register); count an int or a register."""
    b = lw.b
    i = b.reg(dtypes.S32, name)
    end = lw.int_reg(count) if isinstance(count, int) else count
    b.emit("CONST", i, b.const(dtypes.S32, -1))
    loop = b.open_loop()
    b.emit("ADD", i, i, lw.int_reg(1))
    b.emit("BREAK_IF", b.op("GE", dtypes.BOOL, i, end))
    body(i)
    b.close_loop(loop)


def when(lw: Lowerer, cond: int, body) -> None:
    pc = lw.b.open_if(cond)
    body()
    lw.b.close_if(pc)


def _arith(lw: Lowerer, name: str, x: int, k: int) -> int:
    """R[x] <name> k, k a constant."""
    return lw.b.op(name, dtypes.S32, x, lw.int_reg(k))


def _arith_r(lw: Lowerer, name: str, x: int, y: int) -> int:
    """R[x] <name> R[y]."""
    return lw.b.op(name, dtypes.S32, x, y)


def _less(lw: Lowerer, x: int, bound: int) -> int:
    return lw.b.op("LT", dtypes.BOOL, x, lw.int_reg(bound))


class Owned:
    """The elements of an accumulator the executing lane holds (LANGUAGE.md §11.7): rows
    ``8t + l/4`` (in a warpgroup, of the lane's warp's 16-row bands), columns
    ``8u + 2(l%4) + e``, e in {0, 1}, for lane ``l`` of its warp."""

    def __init__(self, lw: Lowerer, ref: FragRef, shape, name: str, node):
        self.lw, self.ref = lw, ref
        self.rows, self.cols = shape
        self.unit = ref.unit
        if self.unit == 0:
            lw.error(node.span, f"the elements of accumulator '{name}' are held by the "
                                f"block as a whole here, not by a warp, a warpgroup or one "
                                f"lane.", hint="use them inside the 'group' or 'group-4' "
                                               "level that owns the accumulator")

    def per_lane(self) -> bool:
        return self.unit in (WARP_SIZE, WARP_SIZE * 4)

    def lane_parts(self):
        """(l / 4, 2 * (l % 4), warp index in the unit) of the executing lane."""
        lw, b = self.lw, self.lw.b
        lane = b.reg(dtypes.S32)
        b.emit("LANE", lane)
        rank = _arith(lw, "MOD", lane, self.unit)
        l = _arith(lw, "MOD", rank, WARP_SIZE)
        row0 = _arith(lw, "DIV", l, ROW_LANES)
        col0 = _arith(lw, "MUL", _arith(lw, "MOD", l, ROW_LANES), 2)
        return row0, col0, _arith(lw, "DIV", rank, WARP_SIZE)

    def rows_loop(self, body, uniform: bool = False) -> None:
        """body(i) for each held row i; ``uniform``: every lane of a warp runs the same
        iterations (for shuffles), with ``i`` possibly past the last row."""
        lw = self.lw
        row0, col0, warp = self.lane_parts()
        self.col0 = col0

        def band(t):
            i = _arith_r(lw, "ADD", _arith(lw, "MUL", t, 8), row0)
            inside = _less(lw, i, self.rows)
            if self.unit == WARP_SIZE:
                mine = lw.true_reg()
            else:           # rows of 16-row bands cycle over the four warps
                quarter = _arith(lw, "MOD", _arith(lw, "DIV", t, 2), 4)
                mine = lw.b.op("EQ", dtypes.BOOL, quarter, warp)
            if uniform:
                when(lw, mine, lambda: body(i, inside))
            else:
                when(lw, lw.b.op("AND", dtypes.BOOL, mine, inside), lambda: body(i, inside))
        loop(lw, -(-self.rows // 8), "frag.band", band)

    def cols_loop(self, body) -> None:
        """body(j) for each held column j, ascending (after rows_loop set the lane)."""
        lw = self.lw

        def chunk(u):
            base = _arith_r(lw, "ADD", _arith(lw, "MUL", u, 8), self.col0)

            def pair(e):
                j = _arith_r(lw, "ADD", base, e)
                when(lw, _less(lw, j, self.cols), lambda: body(j))
            loop(lw, 2, "frag.pair", pair)
        loop(lw, -(-self.cols // 8), "frag.chunk", chunk)

    def each(self, body) -> None:
        """body(i, j) for every element the lane holds: all of them in a one-lane unit."""
        lw = self.lw
        if self.per_lane():
            self.rows_loop(lambda i, _: self.cols_loop(lambda j: body(i, j)))
        else:
            loop(lw, self.rows, "frag.row",
                 lambda i: loop(lw, self.cols, "frag.col", lambda j: body(i, j)))

    def get(self, i: int, j: int, dtype: dtypes.DType) -> int:
        r = self.lw.b.reg(dtype)
        self.lw.b.emit("FRAG_GET", r, self.ref.acc, i, j)
        return r
