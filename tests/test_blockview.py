"""Deadlock and partial-collective reports from a block view alone (croqvm/reports/blockview.py,
croqvm.reports.render.deadlock): what a second engine exports about a stuck block gives the
report the reference engine prints, word for word."""
import croqvm
from appendix import A8_REPORT, APPENDIX
from croqvm.reports import render as report
from croqvm.reports.blockview import (BLOCKED, DONE, BlockView, EventWaitView, FrameView,
                              RendezvousView, WarpView)
from croqvm.bytecode.opcodes import BY_NAME, WIDTH
from croqvm.core.source import SpanTable

def instructions(code, name: str) -> list[int]:
    """The indices of the instructions ``name`` in ``code``."""
    return [i for i in range(len(code.code) // WIDTH)
            if code.code[i * WIDTH] == BY_NAME[name].code]


def lanes(first: int, count: int) -> tuple:
    return tuple(range(first, first + count))


def test_a_deadlock_report_from_a_view():
    """Appendix A.8 without its initial credits, as a C engine would describe it."""
    module = croqvm.compile(APPENDIX["A.8"], "broken.co").module
    fn = module.functions[0]
    code = fn.kernels[0].code
    wait_empty, wait_full = instructions(code, "WAIT_EVENT")
    event = {e.name: i for i, e in enumerate(code.events)}

    def warp(w, ip, ev):
        wait = EventWaitView(ip, event[ev], 0, 0, 0, 128, 0)
        return WarpView(w, BLOCKED, ip, lanes(32 * w, 32), lanes(32 * w, 32), (), (wait,))

    view = BlockView(0, (0,), tuple(warp(w, wait_empty, "empty") for w in range(4)) +
                     tuple(warp(w, wait_full, "full") for w in range(4, 8)))
    got = report.deadlock(SpanTable(module.sources, module.spans), fn, view)
    assert str(got) == A8_REPORT


SYNC_IN_A_BRANCH = """\
__co__ void f() {
  parallel t by 64 {
    shared s32 [64] s;
    if (t < 40) {
      s.at(t) = t;
      sync.shared;
    }
  }
}
"""


def test_a_partial_collective_and_suspended_lanes_from_a_view():
    """Warp 0 waits at the barrier with lanes 0-15 while 16-31 wait inside the IF for the
    ELSE side; warp 1 finished without arriving: the group can never complete (§7.4.3)."""
    module = croqvm.compile(SYNC_IN_A_BRANCH, "k.co").module
    fn = module.functions[0]
    code = fn.kernels[0].code
    barrier, opener = instructions(code, "BARRIER")[0], instructions(code, "IF")[0]
    wait = RendezvousView(barrier, code.code[barrier * WIDTH + 1], 0, lanes(0, 16),
                          lanes(0, 64), False)
    view = BlockView(0, (0,), (
        WarpView(0, BLOCKED, barrier, lanes(0, 16), lanes(0, 32),
                 (FrameView(opener, lanes(0, 32)),), (wait,)),
        WarpView(1, DONE, len(code.code) // WIDTH, (), lanes(32, 32)),
    ))
    got = report.deadlock(SpanTable(module.sources, module.spans), fn, view)
    assert str(got) == "\n".join([
        "k.co:6:7: runtime error: 'sync.shared' was reached by only part of its group: "
        "lanes 32-63 finished the kernel without arriving.",
        "    6 |       sync.shared;",
        "      |       ^~~~~~~~~~~",
        "  warp 0 (lanes 0-15): sync.shared (k.co:6:7): arrived 16/64",
        "  lanes 16-31 suspended in divergent code at k.co:4:5",
        "  in kernel launched at k.co:2:3"])
