"""An O(n) upper bound of max_j f_theta(x_i, x_j) for racing's small-arm test.

Racing Gibbs (``coref.gibbs._gibbs``, ``small_arm_bound``) skips a small candidate
cluster y when g_y + sum_{j in C_y} min(fmax_i, fmax_j) / tau is already behind the
leader; fmax_i must bound f(i, j) and f(j, i) for every j != i of the block.  The exact
row maxima cost n (n - 1) / 2 factors (5e9 at n = 100,000); :func:`feature_bound`
bounds them from the factor's structure instead, in O(size of the encoded block):

    f(i, j) = bias + sum_k theta_k phi_k + same_comp1 * sum_k theta_{K+k} phi_k

(``coref.factors``, K = ``N_BASE``), so with an interval [lo_k(i), hi_k(i)] that holds
phi_k(i, j) and phi_k(j, i) for every j, and the two cases same_comp1 = 0 / 1 apart,

    fmax_i = bias + max_s sum_k max(c_k^s lo_k^s(i), c_k^s hi_k^s(i)),
    c_k^0 = theta_k,  c_k^1 = theta_k + theta_{K+k}.

The intervals come from each feature's definition (``coref.factors._factors_py``):
overlap counts are at most the row's own length (and 0 across comp1 groups for a
mention that shares no coauthor outside its group), dot products of id lists / unit
vectors at most the product of the row's norm and the block's largest norm
(Cauchy-Schwarz; >= 0 when every weight is), indicators in [0, 1] unless the row
alone decides them (a missing field), year gaps at most the distance to the block's
extreme years, constants (block statistics) exact.  A relative slack of 1e-9 covers
the rounding of the kernel's sums.

The intervals are tied to the feature layout :data:`KNOWN_FEATURES`; when
``coref.factors.names.FEATURE_NAMES`` differs (features added or renamed),
:func:`feature_bound` returns None and the caller falls back to the exact pass.
"""
from __future__ import annotations

import math

import numpy as np

from sampling.utils.kernels import load_kernel

from coref.factors.names import BASE_FEATURES, BLOCK_SIZE_SATURATION, N_BASE

_factors = load_kernel("coref.factors._factors")

__all__ = ["KNOWN_FEATURES", "feature_bound", "feature_intervals", "component_bound"]

#: The base features (kernel order) whose intervals :func:`feature_intervals` knows.
KNOWN_FEATURES = (
    "co_log_count", "co_jaccard", "co_idf", "co_any", "co_missing", "co_two", "title_cos", "venue_cos",
    "venue_eq", "affil_cos", "affil_missing", "affil_eq", "year_gap", "year_gap2", "year_missing",
    "name_compat", "co_log_count_logn", "same_comp1", "same_comp2", "same_comp1_logsize",
    "comp_title_cos", "comp_venue_cos", "comp_affil_cos", "comp_year_gap", "mention_comp_title",
    "comp_logsizes", "same_comp_initials", "log_n", "comp_frac", "title_coherence", "venue_coherence",
    "affil_coherence", "name_middle", "co_init_log_count", "co_init_extra", "name_first_eq",
    "name_first_conflict", "name_init_only", "name_middle_conflict", "name_full_eq", "name_rarity",
    "name_init_ambiguity", "abstract_cos", "abstract_missing", "keyword_cos", "keyword_missing",
    "topic_cos", "comp_topic_cos", "venue_acronym", "venue_contain", "topic_drift",
    "co_compat_log_count", "co_conflict_log_count",
)


def _rows(ptr, w, n):
    """Per-row length, L2 norm, sum of positive and of negative weights (shape (n,) each)."""
    ptr = np.asarray(ptr, dtype=np.int64)
    ln = np.diff(ptr[: n + 1])
    w = np.asarray(w, dtype=np.float64)[: ptr[n]]
    row = np.repeat(np.arange(n), ln)
    norm = np.sqrt(np.bincount(row, weights=w * w, minlength=n))
    spos = np.bincount(row, weights=np.maximum(w, 0.0), minlength=n)
    sneg = np.bincount(row, weights=np.minimum(w, 0.0), minlength=n)
    return ln, norm, spos, sneg, bool((w >= 0.0).all())


def _dot(norm_a, max_b, nonneg):
    """Cauchy-Schwarz interval of a . b with |a| = norm_a, |b| <= max_b (lo = 0 if weights >= 0)."""
    hi = norm_a * max_b
    return (np.zeros_like(hi) if nonneg else -hi), hi


def _const(n, v):
    return np.full(n, float(v)), np.full(n, float(v))


def feature_intervals(enc):
    """Per-mention intervals of every base feature, for partners in other / the same comp1.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One encoded block of n mentions.

    Returns
    -------
    (lo0, hi0, lo1, hi1) : four ndarrays of float64, shape (N_BASE, n)
        ``lo0[k, i] <= phi_k(i, j), phi_k(j, i) <= hi0[k, i]`` for every j != i with
        ``comp1[j] != comp1[i]``; ``lo1`` / ``hi1`` the same for ``comp1[j] == comp1[i]``.
    """
    n = int(enc.n)
    z = np.zeros(n)
    one = np.ones(n)
    lo0, hi0 = np.zeros((N_BASE, n)), np.zeros((N_BASE, n))
    co_len, co_norm, co_pos, co_neg, _ = _rows(enc.co_ptr, enc.co_w, n)
    ti_len, ti_norm, _, _, ti_nn = _rows(enc.ti_ptr, enc.ti_w, n)
    ve_len, ve_norm, _, _, ve_nn = _rows(enc.ve_ptr, enc.ve_w, n)
    _, af_norm, _, _, af_nn = _rows(enc.af_ptr, enc.af_w, n)
    ab_len, ab_norm, _, _, ab_nn = _rows(enc.ab_ptr, enc.ab_w, n)
    kw_len, kw_norm, _, _, kw_nn = _rows(enc.kw_ptr, enc.kw_w, n)
    ck_len = np.diff(np.asarray(enc.ck_ptr, dtype=np.int64)[: n + 1])
    comp1 = np.asarray(enc.comp1, dtype=np.int64)
    _, pt_norm, _, _, pt_nn = _rows(enc.pt_ptr, enc.pt_w, n)
    _, pv_norm, _, _, pv_nn = _rows(enc.pv_ptr, enc.pv_w, n)
    _, pa_norm, _, _, pa_nn = _rows(enc.pa_ptr, enc.pa_w, n)
    log_n = math.log(min(n, BLOCK_SIZE_SATURATION)) if n > 0 else 0.0     # as the kernel
    lcc = np.log1p(co_len.astype(np.float64))
    ind = lambda m: (z, np.where(m, 1.0, 0.0))          # noqa: E731  an indicator possible iff m
    iv = {}
    iv["co_log_count"] = (z, lcc)
    iv["co_jaccard"] = ind(co_len > 0)
    iv["co_idf"] = (np.minimum(co_neg, 0.0), np.maximum(co_pos, 0.0))
    iv["co_any"] = ind(co_len > 0)
    any_co_missing = bool((co_len == 0).any())
    iv["co_missing"] = (np.where(co_len == 0, 1.0, 0.0), np.where(co_len == 0, 1.0, float(any_co_missing)))
    iv["co_two"] = ind(co_len >= 2)
    iv["title_cos"] = _dot(ti_norm, ti_norm.max(initial=0.0), ti_nn)
    ve_lo, ve_hi = _dot(ve_norm, ve_norm.max(initial=0.0), ve_nn)
    iv["venue_cos"] = (np.minimum(ve_lo, 0.0), ve_hi)
    iv["venue_eq"] = ind(np.asarray(enc.venue_id) >= 0)
    aff = np.asarray(enc.affil_id) >= 0
    a_lo, a_hi = _dot(af_norm, af_norm.max(initial=0.0), af_nn)
    iv["affil_cos"] = (np.where(aff, np.minimum(a_lo, 0.0), 0.0), np.where(aff, np.maximum(a_hi, 0.0), 0.0))
    any_aff_missing = bool((~aff).any())
    iv["affil_missing"] = (np.where(aff, 0.0, 1.0), np.where(aff, float(any_aff_missing), 1.0))
    iv["affil_eq"] = ind(aff)
    year = np.asarray(enc.year, dtype=np.int64)
    known = year >= 0
    if known.any():
        ymin, ymax = int(year[known].min()), int(year[known].max())
        gap = np.minimum(np.maximum(year - ymin, ymax - year), 30).astype(np.float64) / 10.0
        gap = np.where(known, gap, 0.0)
    else:
        gap = z
    iv["year_gap"] = (z, gap)
    iv["year_gap2"] = (z, gap * gap)
    any_year_missing = bool((~known).any())
    iv["year_missing"] = (np.where(known, 0.0, 1.0), np.where(known, float(any_year_missing), 1.0))
    iv["name_compat"] = (z, one)
    iv["co_log_count_logn"] = (z, log_n * lcc)
    iv["same_comp2"] = (z, one)
    ls = np.asarray(enc.comp1_logsize, dtype=np.float64)
    iv["same_comp_initials"] = (z, one)
    iv["log_n"] = _const(n, log_n)
    for k, name in enumerate(("comp_frac", "title_coherence", "venue_coherence", "affil_coherence",
                              "name_middle")):
        iv[name] = _const(n, enc.block_stats[k])
    lck = np.log1p(ck_len.astype(np.float64))
    for name in ("co_init_log_count", "co_init_extra", "co_compat_log_count", "co_conflict_log_count"):
        iv[name] = (z, lck)
    fc, gc = np.asarray(enc.first_code), np.asarray(enc.given_code)
    can35 = (fc >= 0) | (gc >= 0)
    iv["name_first_eq"] = ind(can35)
    iv["name_first_conflict"] = (z, one)
    iv["name_init_only"] = (z, one)
    iv["name_middle_conflict"] = ind(np.asarray(enc.mid_init) >= 0)
    iv["name_full_eq"] = ind(gc >= 0)
    r = np.asarray(enc.name_rarity, dtype=np.float64)
    rmin = r.min(initial=0.0)
    iv["name_rarity"] = (np.where(can35, np.minimum(np.minimum(r, rmin), 0.0), 0.0),
                         np.where(can35, np.maximum(r, 0.0), 0.0))
    amb = np.asarray(enc.init_amb, dtype=np.float64)
    iv["name_init_ambiguity"] = (np.minimum(np.minimum(amb, amb.min(initial=0.0)), 0.0),
                                 np.maximum(np.maximum(amb, amb.max(initial=0.0)), 0.0))
    for p, ln, nrm, nn in (("abstract", ab_len, ab_norm, ab_nn), ("keyword", kw_len, kw_norm, kw_nn)):
        has = ln > 0
        d_lo, d_hi = _dot(nrm, nrm.max(initial=0.0), nn)
        iv[f"{p}_cos"] = (np.where(has, np.minimum(d_lo, 0.0), 0.0), np.where(has, np.maximum(d_hi, 0.0), 0.0))
        any_missing = float((~has).any())
        iv[f"{p}_missing"] = (np.where(has, 0.0, 1.0), np.where(has, any_missing, 1.0))
    kt = int(enc.n_topics)
    if kt > 0:
        T = np.asarray(enc.topic, dtype=np.float64)[: n * kt].reshape(n, kt)
        t_norm = np.sqrt((T * T).sum(axis=1))
        iv["topic_cos"] = _dot(t_norm, t_norm.max(initial=0.0), False)
        CT = np.asarray(enc.comp_topic, dtype=np.float64)[: n * kt].reshape(n, kt)
        ct_norm = np.sqrt((CT * CT).sum(axis=1))
        ct_i = ct_norm[comp1]
        ct_lo, ct_hi = _dot(ct_i, ct_norm.max(initial=0.0), False)
    else:
        iv["topic_cos"] = (z, z)
        ct_lo = ct_hi = z
    iv["venue_acronym"] = (z, one)
    iv["venue_contain"] = ind(ve_len > 0)
    tl, th = iv["topic_cos"]
    corners = np.stack([tl * 0.0, th * 0.0, tl * gap, th * gap])
    iv["topic_drift"] = (corners.min(axis=0), corners.max(axis=0))
    # comp1-dependent features: other comp1 (case 0) / same comp1 (case 1). The kernel damps
    # the component terms of case 0 by a factor in (0, 1] (COMPONENT_DAMPING): the damped value
    # lies between 0 and the undamped one, inside these intervals, which all hold 0
    c0, c1 = {}, {}
    c0["same_comp1"], c1["same_comp1"] = (z, z), (one, one)
    c0["same_comp1_logsize"], c1["same_comp1_logsize"] = (z, z), (ls, ls)
    for name, nrm, nn in (("comp_title_cos", pt_norm, pt_nn), ("comp_venue_cos", pv_norm, pv_nn),
                          ("comp_affil_cos", pa_norm, pa_nn)):
        c0[name] = _dot(nrm[comp1], nrm.max(initial=0.0), nn)
        c1[name] = (one, one)
    c0["comp_year_gap"], c1["comp_year_gap"] = (z, np.full(n, 3.0)), (z, z)
    m_hi = 0.5 * (ti_norm * pt_norm.max(initial=0.0) + ti_norm.max(initial=0.0) * pt_norm[comp1])
    c0["mention_comp_title"] = ((z if (ti_nn and pt_nn) else -m_hi), m_hi)
    c1["mention_comp_title"] = (one, one)
    c0["comp_logsizes"] = (ls + ls.min(initial=0.0), ls + ls.max(initial=0.0))
    c1["comp_logsizes"] = (z, z)
    c0["comp_topic_cos"] = (ct_lo, ct_hi)
    # comp1 groups are the components of the shared-coauthor graph, cut where they are big
    # or thin (coref.encoding.components.coauthor_groups): a mention that shares no
    # coauthor outside its group has every coauthor overlap 0 across groups
    out_co = _shares_outside(enc, comp1)
    for name in ("co_log_count", "co_jaccard", "co_idf", "co_any", "co_two", "co_log_count_logn"):
        a, b = iv[name]
        c0[name] = (np.where(out_co, a, 0.0), np.where(out_co, b, 0.0))
    c1["comp_topic_cos"] = (one, one) if kt > 0 else (z, z)
    lo1, hi1 = np.zeros((N_BASE, n)), np.zeros((N_BASE, n))
    for k, name in enumerate(KNOWN_FEATURES):
        a0, b0 = c0.get(name, iv.get(name))
        a1, b1 = c1.get(name, iv.get(name))
        lo0[k], hi0[k], lo1[k], hi1[k] = a0, b0, a1, b1
    return lo0, hi0, lo1, hi1


def _shares_outside(enc, comp1):
    """Per mention: it shares a coauthor with a mention of another comp1 group (bool (n,))."""
    n = int(enc.n)
    ptr = np.asarray(enc.co_ptr, dtype=np.int64)[: n + 1]
    ids = np.asarray(enc.co_ids, dtype=np.int64)[: ptr[n]]
    m = np.repeat(np.arange(n), np.diff(ptr))
    out = np.zeros(n, dtype=bool)
    if len(ids) == 0:
        return out
    # a coauthor id seen in two groups: every mention listing it shares across groups
    order = np.lexsort((comp1[m], ids))
    t, g = ids[order], comp1[m][order]
    first = np.concatenate(([True], t[1:] != t[:-1]))
    gmin = np.minimum.reduceat(g, np.flatnonzero(first))
    gmax = np.maximum.reduceat(g, np.flatnonzero(first))
    mixed = np.repeat(gmin != gmax, np.diff(np.append(np.flatnonzero(first), len(t))))
    out[m[order][mixed]] = True
    return out


def _case_bound(c, lo, hi):
    """sum_k max(c_k lo_k, c_k hi_k) per mention, and the sum of |terms| (for the slack)."""
    a, b = c[:, None] * lo, c[:, None] * hi
    t = np.maximum(a, b)
    return t.sum(axis=0), np.maximum(np.abs(a), np.abs(b)).sum(axis=0)


def _case_bounds(enc, theta, bias):
    """(b0, b1, slack) of :func:`feature_bound`, or None for an unknown feature layout."""
    if tuple(name for name, _, _ in BASE_FEATURES) != KNOWN_FEATURES:
        return None
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (2 * N_BASE,):
        raise ValueError(f"theta must have shape ({2 * N_BASE},); got {theta.shape}")
    lo0, hi0, lo1, hi1 = feature_intervals(enc)
    b0, m0 = _case_bound(theta[:N_BASE], lo0, hi0)
    b1, m1 = _case_bound(theta[:N_BASE] + theta[N_BASE:], lo1, hi1)
    slack = 1e-9 * (abs(float(bias)) + np.maximum(m0, m1)) + 1e-12
    return float(bias) + b0 + slack, float(bias) + b1 + slack


def feature_bound(enc, theta, bias):
    """fmax_i >= f_theta(x_i, x_j) and f_theta(x_j, x_i) for every j != i, without a factor.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One encoded block of n mentions.
    theta : ndarray of float64, shape (2 * N_BASE,)
        Feature weights (base, then interactions with ``same_comp1``).
    bias : float
        The block's factor bias (as given to the kernel).

    Returns
    -------
    ndarray of float64, shape (n,), or None
        The bound per mention (-inf for a block of one mention); None when the feature
        layout is not :data:`KNOWN_FEATURES` (the caller then computes the exact maxima).

    Raises
    ------
    ValueError
        If ``theta`` does not have 2 * N_BASE entries.
    """
    res = component_bound(enc, theta, bias, 0)
    return None if res is None else res[0]


def component_bound(enc, theta, bias, max_pairs):
    """:func:`feature_bound` with the same-comp1 partners' maxima computed exactly where cheap.

    A mention's partners in other comp1 components are bounded from the feature
    intervals (case same_comp1 = 0); its partners in
    its own component are evaluated exactly (both orders, ``coref.factors._factors.
    pair_factors``), component by component in increasing size while the ordered pairs
    stay within ``max_pairs``; larger components keep the interval bound (case 1).
    With components of a few hundred mentions this costs sum_c |c| (|c| - 1) factors,
    far below n (n - 1) / 2, and the bound is the exact maximum wherever the best
    partner shares a coauthor chain.

    Parameters
    ----------
    enc, theta, bias
        As :func:`feature_bound`.
    max_pairs : int
        Most ordered pairs to evaluate (0: none, the pure interval bound).

    Returns
    -------
    (fmax, n_factors) : (ndarray of float64, shape (n,), int), or None
        The bound and the factors evaluated; None for an unknown feature layout.

    Raises
    ------
    ValueError
        If ``theta`` does not have 2 * N_BASE entries.
    """
    n = int(enc.n)
    cases = _case_bounds(enc, theta, bias)
    if cases is None:
        return None
    if n < 2:
        return np.full(n, -np.inf), 0
    b0, b1 = cases
    comp1 = np.asarray(enc.comp1, dtype=np.int64)
    count = np.bincount(comp1, minlength=n)
    csize = count[comp1]
    inner = np.where(csize > 1, b1, -np.inf)          # bound over the same-comp1 partners
    evals = 0
    if max_pairs > 0:
        # the components in increasing size (stable) while their ordered pairs fit the
        # budget, all at once: every ordered pair (a, b), a != b, of each, one kernel call
        by_size = np.argsort(count, kind="stable")
        comps = by_size[count[by_size] >= 2]
        s = count[comps]
        take = np.cumsum(s * (s - 1)) <= max_pairs
        comps, s = comps[take], s[take]
        if len(comps):
            order = np.argsort(comp1, kind="stable")          # mentions by component
            starts = np.concatenate(([0], np.cumsum(count)))
            lead = np.concatenate(([0], np.cumsum(s)[:-1]))   # each component's offset in mem
            mem = order[np.repeat(starts[comps] - lead, s) + np.arange(int(s.sum()))]
            size_of = np.repeat(s, s)                          # per member: its component's size
            I = np.repeat(mem, size_of)                        # member-major, as repeat / tile
            rep_lead = np.concatenate(([0], np.cumsum(size_of)[:-1]))
            J = mem[np.repeat(np.repeat(lead, s), size_of) + np.arange(len(I))
                    - np.repeat(rep_lead, size_of)]
            keep = I != J
            I, J = np.ascontiguousarray(I[keep]), np.ascontiguousarray(J[keep])
            f = np.empty(len(I))
            theta = np.ascontiguousarray(theta, dtype=np.float64)
            _factors.pair_factors(enc, theta, float(bias), I, J, f)
            m = np.full(n, -np.inf)
            np.maximum.at(m, I, f)
            np.maximum.at(m, J, f)
            inner[mem] = m[mem]
            evals = len(I)
    out = np.where(csize < n, b0, -np.inf)            # a partner in another comp1 exists
    return np.maximum(out, inner), evals
