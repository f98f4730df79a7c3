# cython: language_level=3
"""C-level racing engine shared with other kernels (``cimport sampling._racing``).

Only what another ``.pyx`` cimports lives here (the ARCH chain, :mod:`sampling.arch._chain`).
"""
from numpy.random cimport bitgen_t

ctypedef void (*race_reward_fn)(void* ctx, const long long* arms, Py_ssize_t k,
                                const long long* idx, Py_ssize_t m, double* out) noexcept nogil

cdef struct RaceWork:
    long long* arms        # (D,)
    long long* idx         # (N,) batch indices
    double* mean           # (D,)
    double* m2             # (D,)
    double* pair_m2        # (D, D)
    double* full_mean      # (D,)
    double* work           # (D,)
    double* rewards        # (D, N // 2 + first_batch) row-major
    unsigned char* alive   # (D,)

cdef void race_merge_block(const double* rewards, Py_ssize_t k, Py_ssize_t m,
                           const long long* arms, long long n_old, double* mean, double* m2,
                           double* pair_m2, Py_ssize_t n_states, bint do_pairs,
                           double* work) noexcept nogil

cdef long long race_eliminate(const double* mean, const double* m2, const double* pair_m2,
                              Py_ssize_t n_states, const long long* arms, Py_ssize_t k,
                              long long n_seen, double coef_sd, double coef_c,
                              const double* c_range, bint pairwise,
                              unsigned char* alive) noexcept nogil

cdef Py_ssize_t race_perm_draw(bitgen_t* rng, long long* perm, Py_ssize_t n, Py_ssize_t pos,
                               Py_ssize_t m, long long* out) noexcept nogil

cdef long long race_run(race_reward_fn fn, void* ctx, const double* offset, Py_ssize_t n_states,
                        Py_ssize_t n_data, Py_ssize_t first_batch, double b_norm, bitgen_t* rng,
                        long long* perm, RaceWork* w, long long* n_evals) noexcept nogil

cdef bitgen_t* bitgen_of(object capsule) except NULL
