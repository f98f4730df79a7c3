"""Seeds of a Gibbs run: the run seed, one generator per block, the kernel's generator state.

Blocks are independent: block ``b`` is sampled with :func:`block_rng`\\ (seed, b), which
seeds the kernel's xoshiro256** generator (:func:`kernel_state`), so results do not
depend on the order of the blocks or on the executor.
"""
from __future__ import annotations

import numbers
import zlib

import numpy as np

__all__ = ["block_rng", "resolve_seed", "kernel_state"]


def block_rng(seed: int, block: str) -> np.random.Generator:
    """The generator used for one block: ``default_rng(SeedSequence([seed, crc32(block)]))``.

    Parameters
    ----------
    seed : int
        Non-negative run seed.
    block : str
        Block name (UTF-8 encoded for the CRC-32).
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), zlib.crc32(str(block).encode())]))


def resolve_seed(rng) -> int:
    """The run seed of ``GibbsCoref(rng=...)``: a non-negative int.

    An int is used as is; a SeedSequence contributes its first generated 63-bit word; a
    Generator one draw ``integers(2**63)``; ``None`` draws the seed from OS entropy.

    Raises
    ------
    ValueError
        If an int seed is negative.
    TypeError
        If ``rng`` is of another type.
    """
    if rng is None:
        return int(np.random.SeedSequence().generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng must be a non-negative int seed; got {rng}")
        return int(rng)
    if isinstance(rng, np.random.SeedSequence):
        return int(rng.generate_state(2, np.uint32).view(np.uint64)[0] >> 1)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(2**63))
    raise TypeError("rng must be None, an int, a SeedSequence or a numpy.random.Generator; "
                    f"got {type(rng).__name__} instead")


def kernel_state(gen: np.random.Generator) -> np.ndarray:
    """A block's xoshiro256** state (4 x uint64) drawn from its generator (never all zero)."""
    state = gen.integers(0, 2**64, size=4, dtype=np.uint64, endpoint=False)
    if not state.any():            # the one state xoshiro256** cannot leave
        state[0] = 1
    return state
