"""The project's pseudo-random numbers: SplitMix64, fully specified so that every engine
draws the same numbers (docs/EXECUTION.md §15-§16).

The state is a u64, the seed itself (any Python int, taken modulo 2**64). Each draw adds
the golden-ratio increment and mixes (all arithmetic modulo 2**64)::

    state += 0x9E3779B97F4A7C15
    z = state
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    return z ^ (z >> 31)

``below(n)`` is ``(next() * n) >> 64`` with the exact 128-bit product: uniform enough in
[0, n) for every n used here, and one draw always (no rejection loop to port).

Random inputs (``croqvm run --random-inputs``, ``random_array``) draw from one generator
seeded with the run's seed, parameter after parameter in order, each array's elements in
row-major order, one draw per element (a scalar is one element):

    bool                       below(2) != 0
    signed integers            below(16) - 8        uniform in [-8, 8)
    unsigned integers          below(16)            uniform in [0, 16)
                               (sub-byte integers: those values wrapped to their width)
    floating point             2 * (next() >> 11) / 2**53 - 1, uniform in [-1, 1) on a
                               2**-52 grid (exact in f64), then rounded to nearest even
                               into the type (croqvm.core.numerics.round_to), which may
                               round a value just below 1 up to 1
    unsigned floating point    (next() >> 11) / 2**53, uniform in [0, 1), rounded so
    (f8_ue8m0, f8_ue4m3)
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .numerics import decode, round_to, wrap_narrow

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix(z):
    """SplitMix64's output function of a state: a Python int, or a uint64 array."""
    if isinstance(z, np.ndarray):
        with np.errstate(over="ignore"):
            z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        return z ^ (z >> np.uint64(31))
    z = ((z ^ (z >> 30)) * _M1) & MASK
    z = ((z ^ (z >> 27)) * _M2) & MASK
    return z ^ (z >> 31)


class SplitMix64:
    """A SplitMix64 generator; ``state`` is its whole state."""

    def __init__(self, seed: int):
        self.state = seed & MASK

    def next(self) -> int:
        """The next 64 random bits."""
        self.state = (self.state + GAMMA) & MASK
        return mix(self.state)

    def below(self, n: int) -> int:
        """A number in [0, n) from one draw: ``(next() * n) >> 64``."""
        return (self.next() * n) >> 64

    def draws(self, count: int) -> np.ndarray:
        """The next ``count`` draws as a uint64 array: what ``count`` calls of ``next``
        give (state k is the seed plus k increments, so they are computed at once)."""
        steps = np.arange(1, count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            states = np.uint64(self.state) + steps * np.uint64(GAMMA)
        self.state = (self.state + count * GAMMA) & MASK
        return mix(states)


# elements drawn at a time: the draws and their conversion take some 40 bytes an element,
# so the memory an array takes is its own plus a few tens of MiB, however large it is
DRAW_CHUNK = 1 << 20


def random_array(rng: SplitMix64, dtype: int, shape: tuple) -> np.ndarray:
    """Random data of dtype code ``dtype`` and ``shape``, in the parameter's numpy dtype,
    drawn as the module docstring says."""
    t = dtypes.BY_CODE[dtype]
    n = 1
    for d in shape:
        n *= int(d)
    out = np.empty(n, t.numpy_param)
    for at in range(0, n, DRAW_CHUNK):
        part = out[at:at + DRAW_CHUNK]
        part[...] = _values(rng.draws(len(part)), t)
    return out.reshape(shape)


def _values(bits: np.ndarray, t) -> np.ndarray:
    """The elements of type ``t`` that the draws ``bits`` give."""
    # below(2) and below(16) are the top 1 and 4 bits of a draw
    if t.kind == "bool":
        return (bits >> np.uint64(63)) != 0
    if t.is_int:
        top = (bits >> np.uint64(60)).astype(np.int64)
        out = top - 8 if t.signed else top
        return wrap_narrow(out, t) if t.bits < 8 else out.astype(t.numpy_param)
    unit = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    out = round_to(2.0 * unit - 1.0 if t.signed else unit, t)
    if t.name in dtypes.BIT_STORED:      # the values of the patterns
        out = decode(out, t)
    return out.astype(t.numpy_param)
