# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""xoshiro256** (Blackman & Vigna 2018) for the Gibbs kernel: one generator per block.

State: 4 x uint64 (never all zero).  ``below(s, m)`` = ((x >> 32) m) >> 32, an integer in
[0, m) for m < 2^32; ``uniform(s)`` = ((x >> 11) + 0.5) 2^-53 in (0, 1).  The twin is
``coref.gibbs._gibbs_py.Xoshiro``.
"""
from libc.stdint cimport uint64_t


cdef inline uint64_t rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t xo_next(uint64_t* s) noexcept nogil:
    """xoshiro256** step."""
    cdef uint64_t result = rotl(s[1] * 5, 7) * 9
    cdef uint64_t t = s[1] << 17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = rotl(s[3], 45)
    return result


cdef inline Py_ssize_t below(uint64_t* s, Py_ssize_t m) noexcept nogil:
    """Integer in [0, m) (m < 2^32)."""
    return <Py_ssize_t>(((xo_next(s) >> 32) * <uint64_t>m) >> 32)


cdef inline double uniform(uint64_t* s) noexcept nogil:
    """u = ((x >> 11) + 0.5) 2^-53 in (0, 1): the uniform of one Gumbel draw."""
    return (<double>(xo_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0)
