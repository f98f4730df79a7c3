# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Racing's mini-batch schedule (Chen & Ghahramani 2016, Appx. C.3): T(1) = first_batch,
T(2) = first_batch + max(1, (N - first_batch) // 10), then T(t) = 2 T(t - 1), capped at N.
Used by ``coref.gibbs._gibbs``; twin: ``coref.gibbs._gibbs_py._sched`` / ``_n_rounds``.
"""


cdef inline Py_ssize_t _sched(Py_ssize_t r, Py_ssize_t prev, Py_ssize_t N,
                              Py_ssize_t fb) noexcept nogil:
    """Target sample size T(r) of an arm with population N (r = 1, 2, ...)."""
    cdef Py_ssize_t t, m
    if r == 1:
        t = fb
    elif r == 2:
        m = (N - fb) // 10
        if m < 1:
            m = 1
        t = fb + m
    else:
        t = 2 * prev
    if t > N:
        t = N
    return t


cdef inline Py_ssize_t _n_rounds(Py_ssize_t N, Py_ssize_t fb) noexcept nogil:
    """t*_y: number of rounds until T reaches N."""
    cdef Py_ssize_t r = 1, t = _sched(1, 0, N, fb)
    while t < N:
        r += 1
        t = _sched(r, t, N, fb)
    return r
