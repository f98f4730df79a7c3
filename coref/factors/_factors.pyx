# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled pairwise factor kernel f_theta(x_i, x_j) for author coreference.

The C-level feature code is inline in the ``.pxd`` files beside this one (surface:
``_factors.pxd``; shared with ``coref.gibbs._gibbs``); this module exposes vectorised
Python entry points.  Inputs are validated by ``coref.features`` / ``coref.model``;
nothing is re-checked here.  Reference twin: ``coref.factors._factors_py``.

``memo``: the terms that depend only on the two mentions' coauthor components
(profile cosines, component year gap, component topic cosine) and on one mention
and the other's component (title against profile) are kept in per-call memo tables
(at most ``MEMO_MAX_BYTES`` each); they hold the values computed the first time, so
results are the same with or without them.  ``None`` = on when the call evaluates
at least n^2 / 8 pairs (the tables cost about n^2 entries to set up).
"""
n_features = N_FEATURES
#: compile-time number of base features (must equal ``coref.factors.names.N_BASE``)
n_base = N_BASE
#: compile-time block-size saturation (must equal ``coref.factors.names.BLOCK_SIZE_SATURATION``)
n_saturate = N_SAT
#: compile-time penalty of two mentions of one paper, nats (must equal ``coref.factors.names.SAME_PAPER_PENALTY``)
same_paper_penalty = SAME_PAPER
#: compile-time damping constant of the component terms (must equal ``coref.factors.names.COMPONENT_DAMPING``)
comp_damping = COMP_DAMP
MEMO_MAX_BYTES = 64 * 1024 * 1024
#: ``factor_matrix`` evaluates in row mode from this many mentions on (``rows=None``)
MATRIX_ROW_MIN_N = 32
cdef enum:
    _TILE = 64          # rows and columns of a tile when factor_matrix mirrors its upper triangle

# share_memo's tables, by id(enc): (enc, tables).  The entry holds the encoding, so its
# id cannot be reused while it is registered; nothing is written on the (frozen) encoding
_SHARED = {}


def share_memo(object enc, Py_ssize_t max_bytes=MEMO_MAX_BYTES):
    """Keep one set of component memo tables for ``enc`` for every kernel call until ``unshare_memo``.

    The tables hold features of the block (no model parameter), filled on first use
    with the values a call would compute, so the calls on one encoding (the block
    prior's pairs, then the Gibbs sweeps) compute each entry once instead of once per
    call; no value changes.  Each table is left out when it would take more than
    ``max_bytes``.  The tables are kept in this module, keyed by the encoding's
    identity (``shared_memo``), not on the encoding.
    """
    _SHARED[id(enc)] = (enc, memo_arrays(enc.comp1, max_bytes))


def unshare_memo(object enc):
    """Drop the tables of ``share_memo`` (no-op if there are none)."""
    if shared_memo(enc) is not None:
        del _SHARED[id(enc)]


def shared_memo(object enc):
    """The tables ``share_memo`` keeps for ``enc``: ``(n_comp, comp_idx, cc_memo, mc_memo)`` or None."""
    entry = _SHARED.get(id(enc))
    if entry is None or entry[0] is not enc:
        return None
    return entry[1]


cdef BlockData _view(object enc, const double[::1] theta, double bias, list keep,
                     Py_ssize_t memo_bytes, bint rows=False) except *:
    """``make_block`` with the tables of ``share_memo`` when ``enc`` has them."""
    return make_block(enc, theta, bias, keep, memo_bytes, rows, shared_memo(enc))


cdef Py_ssize_t _memo_bytes(object memo, object enc, Py_ssize_t m):
    cdef Py_ssize_t n = enc.n
    if memo is None:
        memo = m * 8 >= n * n
    return MEMO_MAX_BYTES if memo else 0


def pair_features(object enc,                 # IN  EncodedBlock
                  const long long[::1] I,      # IN  (m,)
                  const long long[::1] J,      # IN  (m,)
                  double[:, ::1] out,          # OUT (m, N_FEATURES)
                  memo=None):
    """phi(x_I[k], x_J[k]) for every k into ``out``."""
    cdef double[::1] theta = _zeros()
    cdef list keep = []
    cdef Py_ssize_t k, m = I.shape[0]
    cdef BlockData d = _view(enc, theta, 0.0, keep, _memo_bytes(memo, enc, m))
    with nogil:
        for k in range(m):
            block_phi(&d, I[k], J[k], &out[k, 0])


def pair_factors(object enc,                   # IN  EncodedBlock
                 const double[::1] theta,      # IN  (N_FEATURES,)
                 double bias,
                 const long long[::1] I,       # IN  (m,)
                 const long long[::1] J,       # IN  (m,)
                 double[::1] out,              # OUT (m,)
                 memo=None):
    """f_theta(x_I[k], x_J[k]) for every k into ``out``.

    Pairs are evaluated in row mode (``row_set``: mention I[k]'s id lists scattered
    once, each id of J[k] looked up), which gives the merges' values bit for bit, when
    each distinct I[k] has four pairs or more on average: in the given order when equal
    I[k] are adjacent (e.g. the pairs of ``numpy.triu_indices``), else grouped by I[k]
    (a stable argsort; each value still goes to its own ``out[k]``).
    """
    import numpy as np
    cdef list keep = []
    cdef Py_ssize_t k, q, m = I.shape[0]
    cdef Py_ssize_t[::1] order
    cdef bint rows = m >= 2 and _runs(I) * 4 <= m
    cdef bint sort = False
    if m >= 2 and not rows:
        o = np.argsort(np.asarray(I), kind="stable")
        if _runs(np.asarray(I)[o]) * 4 <= m:
            order = o.astype(np.intp)
            rows = sort = True
    cdef BlockData d = _view(enc, theta, bias, keep, _memo_bytes(memo, enc, m), rows)
    with nogil:
        for q in range(m):
            k = order[q] if sort else q
            if rows and d.row != I[k]:
                row_clear(&d)
                row_set(&d, I[k])
            out[k] = block_factor(&d, I[k], J[k])
        row_clear(&d)


cdef Py_ssize_t _runs(const long long[::1] I) noexcept nogil:
    """Number of runs of equal values in I."""
    cdef Py_ssize_t k, r = 1 if I.shape[0] > 0 else 0
    for k in range(1, I.shape[0]):
        r += I[k] != I[k - 1]
    return r


def member_sums(object enc,                    # IN  EncodedBlock
                const double[::1] theta,       # IN  (N_FEATURES,)
                double bias,
                const long long[::1] order,    # IN  (n,) rows grouped by cluster, ascending within
                const long long[::1] start,    # IN  (n_clusters,) first position of each cluster in order
                const long long[::1] size,     # IN  (n_clusters,) members of each cluster
                const long long[::1] code,     # IN  (n,) cluster of each row
                const long long[::1] rows,     # IN  (m,) the mentions to sum for
                double[::1] out,               # OUT (m,)
                memo=None):
    """out[k] = sum of f_theta(x_i, x_j) over the other members j of the cluster of i = rows[k].

    The members in ``order`` order, from 0.0 (the sums of ``np.bincount`` over the pairs
    in that order, bit for bit).  Twin: ``coref.factors._factors_py.member_sums``.

    Raises
    ------
    ValueError
        If the arrays disagree in length, or a row, code or cluster range is out of bounds.
    """
    cdef list keep = []
    cdef Py_ssize_t k, p, i, j, c, m = rows.shape[0], n = order.shape[0], nc = start.shape[0]
    cdef Py_ssize_t pairs = 0
    cdef double s
    if out.shape[0] != m or code.shape[0] != n or size.shape[0] != nc or enc.n != n:
        raise ValueError("member_sums: out / rows, code / order / enc.n and size / start must agree in length")
    for c in range(nc):
        if start[c] < 0 or size[c] < 0 or start[c] + size[c] > n:
            raise ValueError(f"member_sums: cluster {c} runs outside order")
    for k in range(m):
        if not 0 <= rows[k] < n or not 0 <= code[rows[k]] < nc:
            raise ValueError(f"member_sums: rows[{k}] or its code is out of range")
        pairs += size[code[rows[k]]]
    for k in range(n):
        if not 0 <= order[k] < n:
            raise ValueError(f"member_sums: order[{k}] is out of range")
    cdef BlockData d = _view(enc, theta, bias, keep, _memo_bytes(memo, enc, pairs))
    with nogil:
        for k in range(m):
            i = rows[k]
            c = code[i]
            s = 0.0
            for p in range(start[c], start[c] + size[c]):
                j = order[p]
                if j != i:
                    s += block_factor(&d, i, j)
            out[k] = s


def row_factors(object enc,                    # IN  EncodedBlock
                const double[::1] theta,       # IN  (N_FEATURES,)
                double bias,
                Py_ssize_t i,
                const long long[::1] J,        # IN  (m,)
                double[::1] out,               # OUT (m,)
                memo=None):
    """f_theta(x_i, x_J[k]) for every k into ``out``, in row mode (as a Gibbs step does).

    Mention i's id lists are scattered into the block's row tables (``row_set``) and
    each factor looks up the ids of J[k] instead of merging sorted lists; same values,
    bit for bit, as ``pair_factors``.  Returns True when row mode was used, False when
    the block does not allow it (an id list not strictly increasing, a negative id, a
    non-finite weight, or tables above ``ROW_MAX_BYTES`` = 32 MiB: then the merges
    run).

    Raises
    ------
    IndexError
        If i is not a mention of the block.
    """
    cdef list keep = []
    cdef Py_ssize_t k, m = J.shape[0]
    cdef BlockData d = _view(enc, theta, bias, keep, _memo_bytes(memo, enc, m), True)
    cdef bint used
    if not 0 <= i < d.n:
        raise IndexError(f"mention {i} is not in the block (n = {d.n})")
    with nogil:
        row_set(&d, i)
        used = d.row == i
        for k in range(m):
            out[k] = block_factor(&d, i, J[k])
        row_clear(&d)
    return bool(used)


def factor_matrix(object enc,                  # IN  EncodedBlock
                  const double[::1] theta,     # IN  (N_FEATURES,)
                  double bias,
                  double[:, ::1] out,          # OUT (n, n), symmetric, zero diagonal
                  memo=True, rows=None):
    """All pairwise factors of a block (n (n - 1) / 2 evaluations).

    ``rows`` (None: n >= ``MATRIX_ROW_MIN_N``): evaluate row i's pairs (i, j > i) in row
    mode (``row_set``), the same values bit for bit, about twice as fast per factor in
    blocks of thousands; for a few mentions the row tables cost more than they save.
    """
    cdef list keep = []
    cdef bint use_rows = enc.n >= MATRIX_ROW_MIN_N if rows is None else bool(rows)
    cdef BlockData d = _view(enc, theta, bias, keep, MEMO_MAX_BYTES if memo else 0, use_rows)
    cdef Py_ssize_t i, j, i0, j0, n = d.n, tile = _TILE
    with nogil:
        for i in range(n):
            out[i, i] = 0.0
            if use_rows:
                row_set(&d, i)
            for j in range(i + 1, n):
                out[i, j] = block_factor(&d, i, j)
            row_clear(&d)
        # the lower triangle from the upper, tile by tile (writing out[j, i] in the loop above
        # strides through the matrix: most of the time in blocks of thousands)
        i0 = 0
        while i0 < n:
            j0 = i0
            while j0 < n:
                for i in range(i0, min(i0 + tile, n)):
                    for j in range(max(j0, i + 1), min(j0 + tile, n)):
                        out[j, i] = out[i, j]
                j0 += tile
            i0 += tile


def factor_rate(object enc, const double[::1] theta, double bias, long long n_evals,
                memo=True):
    """Evaluate ``n_evals`` factors cycling over pairs; returns their sum (benchmark)."""
    cdef list keep = []
    cdef BlockData d = _view(enc, theta, bias, keep, MEMO_MAX_BYTES if memo else 0)
    cdef Py_ssize_t n = d.n
    cdef long long k
    cdef Py_ssize_t i = 0, j = 1
    cdef double s = 0.0
    if n < 2:
        return 0.0
    with nogil:
        for k in range(n_evals):
            s += block_factor(&d, i, j)
            j += 1
            if j >= n:
                i += 1
                if i >= n - 1:
                    i = 0
                j = i + 1
    return s


def _zeros():
    import numpy as np
    return np.zeros(N_FEATURES)
