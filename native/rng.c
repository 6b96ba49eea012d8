/* The project PRNG (PLAN.md decision; croqvm/core/prng.py): SplitMix64. The state is a u64
 * seed; below(n) maps a draw onto [0, n) with the exact 128-bit product. */
#include "cq_engine.h"

uint64_t cq_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t cq_rng_below(uint64_t *state, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)cq_rng_next(state) * n) >> 64);
}
