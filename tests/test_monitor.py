"""The progress line and the watchdog of croqvm run (croqvm.cli.monitor), on a clock the test
sets: what they print and when."""
import io

from croqvm.cli.monitor import Monitor
from croqvm.core.position import RunPosition
from croqvm.core.source import SourceFile, Span

SOURCE = SourceFile("k.co", "__co__ void k() {\n  parallel t by 32 {\n    while (true) { }\n  }\n}\n")
LOOP = Span("k.co", 3, 5, 3, 22)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def position(steps, block_number=0, blocks=4, block_steps=0):
    return RunPosition("k", steps, steps * 32, launch=1, kernel_span=Span("k.co", 2, 3, 2, 20),
                       block=(block_number,), block_number=block_number, blocks=blocks,
                       block_steps=block_steps, span=LOOP, loop_span=LOOP,
                       lanes="warp 0, lanes 0-31")


def monitor(show, tty=False, watchdog=0.0):
    clock, out = Clock(), io.StringIO()
    return Monitor(out, {"k.co": SOURCE}, show=show, watchdog=watchdog, tty=tty,
                   clock=clock), clock, out


def test_lines_give_blocks_rate_and_time_left_in_the_launch():
    m, clock, out = monitor("always")
    clock.now += 1.0
    m(position(500_000, block_number=0))
    clock.now += 3.0
    m(position(1_000_000, block_number=1))
    assert out.getvalue().splitlines() == [
        "progress: 'k', launch 1, block 1/4 (0%), 500.0k warp-instructions, 500.0k/s",
        "progress: 'k', launch 1, block 2/4 (25%), 1.0M warp-instructions, 250.0k/s, launch "
        "ends in ~9 s"]


def test_lines_not_on_a_terminal_come_once_a_second():
    m, clock, out = monitor("always")
    for _ in range(5):
        clock.now += 0.3
        m(position(1000))
    assert len(out.getvalue().splitlines()) == 2    # at 0.3 s and 1.5 s


def test_a_terminal_gets_one_redrawn_line_after_two_seconds():
    m, clock, out = monitor("auto", tty=True)
    clock.now += 1.0
    m(position(1000))
    assert out.getvalue() == ""
    clock.now += 1.5
    m(position(2000, block_number=2))
    assert out.getvalue().startswith("\r\033[Kprogress: 'k', launch 1, block 3/4 (50%)")
    m.finish()
    assert out.getvalue().endswith("\r\033[K")


def test_no_line_when_stderr_is_no_terminal_or_quiet():
    for show, tty in (("auto", False), ("never", True)):
        m, clock, out = monitor(show, tty=tty)
        clock.now += 10
        m(position(1000))
        assert out.getvalue() == ""


def test_the_watchdog_notes_a_block_once_and_a_new_block_starts_afresh():
    m, clock, out = monitor("never", watchdog=10)
    m(position(1000, block_steps=10))
    clock.now += 9
    m(position(2000, block_steps=20))
    assert out.getvalue() == ""
    clock.now += 2
    m(position(3000, block_steps=30))
    clock.now += 20
    m(position(4000, block_steps=40))
    assert out.getvalue() == (
        "k.co:3:5: note: block (0) of the kernel launched at k.co:2:3 has been running for "
        "11 s (30 warp-instructions); warp 0, lanes 0-31 is in this loop\n"
        "    3 |     while (true) { }\n"
        "      |     ^~~~~~~~~~~~~~~~~\n"
        "hint: a loop that never ends runs until Ctrl-C, which says where the run was; "
        "--max-steps N stops a run after N warp-instructions.\n")
    m(position(5000, block_number=1, block_steps=1))
    clock.now += 5
    m(position(6000, block_number=1, block_steps=2))
    assert out.getvalue().count("note:") == 1


def test_blocks_on_threads_show_as_the_launch_with_its_blocks_started():
    m, clock, out = monitor("always", watchdog=10)
    threads = RunPosition("k", 1000, 32000, launch=1, kernel_span=Span("k.co", 2, 3, 2, 20),
                          block_number=2, blocks=4)
    clock.now += 1
    m(threads)
    clock.now += 10
    m(threads)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("progress: 'k', launch 1, blocks on threads, 2/4 started, 1.0k "
                        "warp-instructions, 1.0k/s")
    assert lines[1] == ("k.co:2:3: note: the kernel launched at k.co:2:3 (its blocks on "
                        "threads) has been running for 10 s (1000 warp-instructions); it is "
                        "in this statement")
    assert threads.describe() == ("in 'k', launch 1 (kernel at k.co:2:3), blocks on threads "
                                  "(2 of 4 started), after 1000 warp-instructions")
