"""The cost model of ``croqvm trace`` (docs/TRACE.md): how many cycles each instruction
takes, by class, and what copies and MMAs cost by their size. The defaults are an H100
SXM's; a TOML file overrides any of them (``load``).

Conventions: times are in cycles of one SM's clock; ``clock_ghz`` converts them to
microseconds for the Trace Event Format.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from ..core.errors import ArgumentError

# cycles of one warp-instruction by class (docs/TRACE.md "Instruction classes")
CYCLES = {
    "alu": 2,            # integer and float arithmetic, logic, compares, moves, conversions
    "divide": 20,        # DIV and MOD
    "math": 8,           # the builtin math functions (MATH)
    "control": 1,        # IF, ELSE, LOOP, END, BREAK_IF, CONTINUE_IF, YIELD
    "local": 2,          # an element access of local memory (registers)
    "shared": 30,        # an element access of shared memory
    "global": 500,       # an element access of global memory
    "atomic": 600,       # an atomic operation
    "shuffle": 4,        # SHFL_XOR
    "barrier": 20,       # a barrier or any collective's rendezvous, once complete
    "event": 10,         # TRIGGER, WAIT_EVENT and WAIT_EVENT_AT (an mbarrier arrive or test)
    "future": 10,        # WAIT, FUT_BIND and the other future bookkeeping
    "print": 200,        # PRINT, ASSERT
    "other": 1,          # anything else (NOP, ALLOC, FENCE, ...)
    "launch": 5000,      # from the host's LAUNCH to its blocks' first instruction
}


@dataclass(frozen=True)
class Copy:
    """A DMA or TMA copy: ``latency`` cycles plus its bytes at ``bytes_per_cycle``. A
    block's copies share one engine: their bytes move one copy after another, their
    latencies overlap."""
    latency: int
    bytes_per_cycle: float


@dataclass(frozen=True)
class Mma:
    """An MMA: ``latency`` cycles plus M*N*K multiply-adds at the rate of its operand type
    (``macs_per_cycle``, for a whole SM: a warpgroup's or block's MMA gets all of it, a
    warp's a quarter); ``move_bytes_per_cycle``: MMA_LOAD, MMA_STORE and MMA_FILL move
    their fragment at this rate after ``latency``."""
    latency: int
    macs_per_cycle: dict
    move_bytes_per_cycle: float


@dataclass(frozen=True)
class CostModel:
    clock_ghz: float = 1.755
    cycles: dict = field(default_factory=lambda: dict(CYCLES))
    dma: Copy = Copy(latency=600, bytes_per_cycle=16.0)
    tma: Copy = Copy(latency=500, bytes_per_cycle=32.0)
    mma: Mma = Mma(latency=30, macs_per_cycle={
        "f16": 2048, "bf16": 2048, "tf32": 1024, "f8": 4096, "f6": 4096, "f4": 8192,
        "s8": 4096, "u8": 4096, "f32": 128, "f64": 256, "other": 512}, move_bytes_per_cycle=128.0)

    def copy_cycles(self, nbytes: float, tma: bool) -> tuple[float, float]:
        """(the engine's busy cycles, the latency) of a copy of ``nbytes``."""
        c = self.tma if tma else self.dma
        return nbytes / c.bytes_per_cycle, float(c.latency)

    def mma_cycles(self, m: int, n: int, k: int, dtype: str, unit: int) -> float:
        rates = self.mma.macs_per_cycle
        rate = rates.get(dtype.split("_")[0], rates["other"])   # f8_e4m3 is f8
        if unit in (1, 32):
            rate /= 4
        return self.mma.latency + m * n * k / rate

    def move_cycles(self, nbytes: float) -> float:
        return self.mma.latency + nbytes / self.mma.move_bytes_per_cycle


def _positive(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ArgumentError(f"{where} must be a non-negative number, not {value!r}")
    return value


def _table(where: str, given, known: dict) -> dict:
    if not isinstance(given, dict):
        raise ArgumentError(f"{where} must be a table")
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ArgumentError(f"{where} has no entry '{unknown[0]}' (known: "
                            f"{', '.join(sorted(known))})")
    return {k: _positive(f"{where}.{k}", v) for k, v in given.items()}


def load(path: str) -> CostModel:
    """The default model with what the TOML file ``path`` overrides: ``clock_ghz``, and the
    tables ``[cycles]``, ``[dma]``, ``[tma]``, ``[mma]`` and ``[mma.macs_per_cycle]``."""
    import tomllib
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ArgumentError(f"--cost {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ArgumentError(f"--cost {path}: not valid TOML: {e}") from None
    model = CostModel()
    top = {"clock_ghz", "cycles", "dma", "tma", "mma"}
    unknown = sorted(set(data) - top)
    if unknown:
        raise ArgumentError(f"--cost {path}: unknown entry '{unknown[0]}' (known: "
                            f"{', '.join(sorted(top))})")
    changes = {}
    if "clock_ghz" in data:
        changes["clock_ghz"] = _positive(f"--cost {path}: clock_ghz", data["clock_ghz"])
        if not changes["clock_ghz"]:
            raise ArgumentError(f"--cost {path}: clock_ghz must be positive")
    if "cycles" in data:
        changes["cycles"] = {**model.cycles, **_table(f"--cost {path}: [cycles]", data["cycles"],
                                                      model.cycles)}
    for name in ("dma", "tma"):
        if name in data:
            old = getattr(model, name)
            known = {f.name: getattr(old, f.name) for f in fields(old)}
            changes[name] = replace(old, **_table(f"--cost {path}: [{name}]", data[name], known))
    if "mma" in data:
        mma = dict(data["mma"]) if isinstance(data["mma"], dict) else data["mma"]
        rates = mma.pop("macs_per_cycle", {}) if isinstance(mma, dict) else {}
        known = {"latency": 0, "move_bytes_per_cycle": 0}
        new = replace(model.mma, **_table(f"--cost {path}: [mma]", mma, known))
        given = _table(f"--cost {path}: [mma.macs_per_cycle]", rates, model.mma.macs_per_cycle)
        if any(v == 0 for v in given.values()):
            raise ArgumentError(f"--cost {path}: [mma.macs_per_cycle] rates must be positive")
        changes["mma"] = replace(new, macs_per_cycle={**model.mma.macs_per_cycle, **given})
    for name in ("dma", "tma"):
        if name in changes and changes[name].bytes_per_cycle == 0:
            raise ArgumentError(f"--cost {path}: [{name}] bytes_per_cycle must be positive")
    return replace(model, **changes)
