# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A control variate for racing's subsampled arms: the first-name conflicts of a cluster.

Chen & Ghahramani (2016), Sec. 3.4: racing estimates an arm's sum S_y = sum_{j in C_y}
f(i, j) from a subsample; with a function h(i, j) whose sum H_y over the arm is known
exactly, the estimate N_y mean(f - h) + H_y has the same expectation and the residuals'
smaller variance, so the race ends with fewer draws.  Here

    h(i, j) = w [r_i >= 0 and r_j >= 0 and r_i != r_j],

r the rank of a mention's full first name among the block's most frequent ones (-1 for an
initial only or a rarer name) and w the weight of ``name_first_conflict``: inside the
big clusters of a first-initial block ("Wei", "Wen", "W." Wang) that one feature carries
most of the variance of f (``coref.gibbs.control``).  H_y = w (named_y - same_y(r_i)) from
per-cluster counts of the ranked mentions (``named``) and of each rank (``cnt``), kept up
to date by every move (``cv_move``); mention i's own membership cancels in the difference.
Used by ``coref.gibbs._gibbs``; twin: ``coref.gibbs._gibbs_py``.
"""


cdef struct CVState:
    const int* rank          # (n,) rank of each mention's first name, -1 = none
    long long* named         # (n,) per label: members with rank >= 0
    int* cnt                 # (n * M,) per label and rank: members
    Py_ssize_t M             # number of ranks
    double w                 # weight of h (0: off)


cdef inline void cv_init(CVState* cv, const long long* labels, Py_ssize_t n) noexcept nogil:
    """The counts of the labels as they are (zeroed first)."""
    cdef Py_ssize_t k
    for k in range(n):
        cv.named[k] = 0
    for k in range(n * cv.M):
        cv.cnt[k] = 0
    for k in range(n):
        if cv.rank[k] >= 0:
            cv.named[labels[k]] += 1
            cv.cnt[labels[k] * cv.M + cv.rank[k]] += 1


cdef inline double cv_arm(const CVState* cv, Py_ssize_t label, int ri,
                          double inv_temp) noexcept nogil:
    """H_y / tau: the exact sum of h(i, j) / tau over the members j != i of cluster ``label``."""
    if ri < 0:
        return 0.0
    return cv.w * <double>(cv.named[label] - cv.cnt[label * cv.M + ri]) * inv_temp


cdef inline void cv_move(CVState* cv, Py_ssize_t i, Py_ssize_t old, Py_ssize_t new) noexcept nogil:
    """Mention i moved from cluster ``old`` to ``new``."""
    cdef int r = cv.rank[i]
    if r < 0 or old == new:
        return
    cv.named[old] -= 1
    cv.cnt[old * cv.M + r] -= 1
    cv.named[new] += 1
    cv.cnt[new * cv.M + r] += 1
