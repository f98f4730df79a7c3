# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Primitives of the factor kernel over sorted id lists and dense vectors.

A mention's id lists (coauthors, words, ...) are sorted, strictly increasing runs of
int ids with float64 weights.  Two lists are compared either by a merge (``merge_dot``)
or, in row mode, by looking the ids of one list up in a dense table that holds the
other (``look_dot``); both visit the shared ids in the same increasing order, so their
sums agree bit for bit.  ``meet`` tests two 128-bit signatures (``fill_sig``) and
proves when two lists share no id, so that the merge can be skipped (its sums are then
exactly 0.0).
"""
from libc.math cimport isfinite
from libc.stdint cimport uint64_t


cdef inline bint meet(const uint64_t* a, const uint64_t* b) noexcept nogil:
    """False when two id lists certainly share no id (their 128-bit signatures share no bit)."""
    return ((a[0] & b[0]) | (a[1] & b[1])) != 0


cdef inline void fill_sig(uint64_t* sig, const long long* ptr, const int* ids,
                          Py_ssize_t r) noexcept nogil:
    """128-bit signature (2 words) of row r of a CSR id list."""
    cdef long long a
    cdef uint64_t h
    sig[0] = 0
    sig[1] = 0
    for a in range(ptr[r], ptr[r + 1]):
        h = (<uint64_t>(<unsigned int>ids[a]) * <uint64_t>0x9E3779B97F4A7C15) >> 57
        sig[<int>(h >> 6)] |= (<uint64_t>1) << (h & 63)


cdef inline double merge_dot(const int* ids_a, const double* w_a, long long na,
                             const int* ids_b, const double* w_b, long long nb,
                             int* n_common, double* w_common) noexcept nogil:
    """sum of w_a * w_b over the ids two sorted lists share (count and sum of w_a too).

    Branch-free advance (a += ia <= ib; b += ib <= ia): the shared ids are visited in
    the same increasing order as by the textbook merge, so the sums are identical.
    """
    cdef long long a = 0, b = 0
    cdef double s = 0.0, sw = 0.0
    cdef int c = 0
    cdef int ia, ib
    while a < na and b < nb:
        ia = ids_a[a]
        ib = ids_b[b]
        if ia == ib:
            s += w_a[a] * w_b[b]
            sw += w_a[a]
            c += 1
        a += ia <= ib
        b += ib <= ia
    n_common[0] = c
    w_common[0] = sw
    return s


cdef inline double look_dot(const double* wm, const int* ids_b, const double* w_b,
                            long long nb) noexcept nogil:
    """sum of w_row * w_b over the ids of list b that the scattered row holds.

    Same value, bit for bit, as ``merge_dot`` (row list first): the shared ids are
    visited in the same increasing order, and every id the row lacks adds
    0.0 * w_b = +-0.0, which leaves the sum unchanged (the sum starts at +0.0 and so
    is never -0.0; weights are finite, checked by ``scan_field``).
    """
    cdef long long b
    cdef double s = 0.0
    for b in range(nb):
        s += wm[ids_b[b]] * w_b[b]
    return s


cdef inline double look_dot_rev(const double* wm, const int* ids_b, const double* w_b,
                                long long nb) noexcept nogil:
    """``look_dot`` with the product written w_b * w_row (``merge_dot`` with list b first)."""
    cdef long long b
    cdef double s = 0.0
    for b in range(nb):
        s += w_b[b] * wm[ids_b[b]]
    return s


cdef inline double look_count(const double* wm, const unsigned char* hm, const int* ids_b,
                              const double* w_b, long long nb, int* n_common,
                              double* w_common) noexcept nogil:
    """``look_dot`` plus the number of shared ids and the sum of the row's weights on them."""
    cdef long long b
    cdef double s = 0.0, sw = 0.0, wa
    cdef int c = 0, t
    for b in range(nb):
        t = ids_b[b]
        wa = wm[t]
        s += wa * w_b[b]
        sw += wa
        c += hm[t]
    n_common[0] = c
    w_common[0] = sw
    return s


cdef inline double list_dot(bint rowm, const double* wm, const int* ids, const double* w,
                            long long a, long long na, long long b, long long nb) noexcept nogil:
    """sum of w * w over the ids shared by the lists ids[a:a + na] and ids[b:b + nb].

    In row mode (``rowm``: list a is scattered in ``wm``) the ids of list b are looked
    up, otherwise the two are merged; same value either way.  Callers test ``meet``
    first (and then pass the arguments), so that a pair of lists that share no id costs
    one signature test.
    """
    cdef int c
    cdef double sw
    if rowm:
        return look_dot(wm, ids + b, w + b, nb)
    return merge_dot(ids + a, w + a, na, ids + b, w + b, nb, &c, &sw)


cdef inline double list_count(bint rowm, const double* wm, const unsigned char* hm,
                              const int* ids, const double* w, long long a, long long na,
                              long long b, long long nb, int* n_common,
                              double* w_common) noexcept nogil:
    """``list_dot`` plus the number of shared ids and the sum of list a's weights on them."""
    if rowm:
        return look_count(wm, hm, ids + b, w + b, nb, n_common, w_common)
    return merge_dot(ids + a, w + a, na, ids + b, w + b, nb, n_common, w_common)


cdef inline double csr_dot(const long long* ptr, const int* ids, const double* w,
                           Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """``merge_dot`` of rows i and j of one CSR list (indexed through ``ptr`` directly:
    one base register for both rows, which the hot loop of a large caller needs)."""
    cdef long long a = ptr[i], ae = ptr[i + 1], b = ptr[j], be = ptr[j + 1]
    cdef double s = 0.0
    cdef int ia, ib
    while a < ae and b < be:
        ia = ids[a]
        ib = ids[b]
        if ia == ib:
            s += w[a] * w[b]
        a += ia <= ib
        b += ib <= ia
    return s


cdef inline double csr_look(const double* wm, const long long* ptr, const int* ids,
                            const double* w, Py_ssize_t j) noexcept nogil:
    """``look_dot`` of row j of a CSR list against the scattered row ``wm``."""
    return look_dot(wm, ids + ptr[j], w + ptr[j], ptr[j + 1] - ptr[j])


cdef inline double dense_dot(const double* x, const double* y, Py_ssize_t k) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t t
    for t in range(k):
        s += x[t] * y[t]
    return s


cdef inline bint scan_field(const long long* ptr, const int* ids, const double* w,
                            Py_ssize_t n, int* max_id) noexcept nogil:
    """True when every row of a CSR id list is strictly increasing, ids >= 0, weights finite.

    Raises ``max_id`` to the largest id seen (``w`` may be NULL: no weight check).
    """
    cdef Py_ssize_t r
    cdef long long a
    cdef int prev
    for r in range(n):
        prev = -1
        for a in range(ptr[r], ptr[r + 1]):
            if ids[a] <= prev:
                return False
            prev = ids[a]
            if w != NULL and not isfinite(w[a]):
                return False
        if prev > max_id[0]:
            max_id[0] = prev
    return True


cdef inline void scatter(double* wm, const int* ids, const double* w, long long a,
                         long long na, bint on) noexcept nogil:
    """wm[ids[k]] = w[k] for k in [a, a + na) (``on``), or back to 0.0."""
    cdef long long k
    if on:
        for k in range(a, a + na):
            wm[ids[k]] = w[k]
    else:
        for k in range(a, a + na):
            wm[ids[k]] = 0.0
