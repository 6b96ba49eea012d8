"""Where a run is: what every engine reports to a progress hook, and on an interrupt.

An engine that runs a function (``run_function(..., progress=hook)``) calls ``hook`` with
a ``RunPosition`` every ``PROGRESS_EVERY`` warp-instructions (the native engine: between
slices), and, when the user interrupts the run, raises ``Interrupted`` carrying the
position it stopped at. The record holds plain values only, so that any engine can fill
it and any front end (the CLI's progress line, its watchdog, a notebook) can read it.
"""
from __future__ import annotations

from .records import dataclass
from .source import Span

PROGRESS_EVERY = 1 << 16    # warp-instructions between two calls of the progress hook


@dataclass(frozen=True)
class RunPosition:
    """A snapshot of a running call.

    ``launch`` counts the kernel launches started so far (0: host code before the first);
    while a kernel runs, ``kernel_span`` is where it was launched, ``block`` the index of
    the block running, ``block_number`` its 0-based row-major ordinal among ``blocks``,
    and ``block_steps`` the warp-instructions that block has run. ``span`` is the
    statement of the instruction running, ``loop_span`` the innermost loop it is in
    (None outside loops), ``lanes`` the running warp's active lanes as text
    (``warp 1, lanes 32-63``). While a launch's blocks run on several threads (the native
    engine's ``jobs``), no one block runs: ``kernel_span`` is set, ``block`` is None and
    ``block_number`` counts the blocks started; when such a launch is interrupted,
    ``running`` holds the position of each block that was running. ``unit`` names what
    ``steps`` count: a device counts loop iterations (croqvm.cuda.launch.cpu_position).
    """
    function: str
    steps: int                  # warp-instructions so far: one instruction run by one warp
    lane_steps: int             # lane-instructions: the active lanes of each of those
    launch: int = 0
    kernel_span: Span | None = None
    block: tuple | None = None
    block_number: int = 0
    blocks: int = 0
    block_steps: int = 0
    span: Span | None = None
    loop_span: Span | None = None
    lanes: str = ""
    unit: str = "warp-instructions"
    running: tuple = ()         # RunPositions, by block

    @property
    def in_kernel(self) -> bool:
        return self.block is not None

    @property
    def on_threads(self) -> bool:
        return self.block is None and self.kernel_span is not None

    def block_text(self) -> str:
        """``(47, 40)``: the running block's index, as runtime errors write it."""
        return "(" + ", ".join(str(i) for i in self.block or ()) + ")"

    def where(self) -> str:
        """``'matmul', launch 1 (kernel at f.co:15:3), block (47, 40) (3049 of 4096)``."""
        text = f"'{self.function}'"
        if self.on_threads:
            return (f"{text}, launch {self.launch} (kernel at {self.kernel_span}), blocks on "
                    f"threads ({self.block_number} of {self.blocks} started)")
        if not self.in_kernel:
            return f"{text}, host code"
        return (f"{text}, launch {self.launch} (kernel at {self.kernel_span}), block "
                f"{self.block_text()} ({self.block_number + 1} of {self.blocks})")

    def describe(self) -> str:
        """One line: the place, the statement and lanes running, and the step count; then,
        for a launch on threads, a line for each block that was running."""
        at = f", at {self.span}" if self.span else ""
        lanes = f" ({self.lanes})" if self.lanes and self.in_kernel else ""
        blocks = "".join(f"\n  block {b.block_text()} ({b.block_number + 1} of {b.blocks}) "
                         f"at {b.span} ({b.lanes})" for b in self.running)
        return f"in {self.where()}{at}{lanes}, after {self.steps} {self.unit}{blocks}"


class Interrupted(KeyboardInterrupt):
    """A run stopped by the user (Ctrl-C); ``position`` says where it was."""

    def __init__(self, position: RunPosition):
        super().__init__(position.describe())
        self.position = position
