"""Candidate partners of each mention and a bound of f(i, j) for all the others.

Racing's partner memo (``coref.gibbs._memo``) keeps, per mention i, its K best partners
and ``rest_i`` >= f(i, j) for every other j.  Computing it from i's whole row costs n - 1
factors: about one exact sweep over a block, 1e10 factors at n = 100,000.  Most of those
pairs share nothing: no coauthor, coauthor group, venue, affiliation, or any rare word of
a title or profile, and the factor of such a pair is far below the leader of any step
(one-name 10,000-mention block, shipped model: the largest such factor is -0.24, the
median row maximum +11).  :func:`partner_index` finds each mention's candidates with an
inverted index of the keys whose sharing can raise the factor, and bounds the factor of
every non-candidate from the factor's structure, so a memo costs the candidates' factors
only.

The bound (``PartnerIndex.rest``) follows :func:`coref.gibbs.arm_bound.feature_intervals`
(case ``same_comp1 = 0``: the comp1 group is a key, so every same-group partner is a
candidate), with the features that need a shared key tightened for partners that share
no indexed key:

* equality indicators (same venue, affiliation, comp2, comp3 group) are 0; coauthor and
  coauthor-name overlaps (``co_*``, ``co_init_*``, always indexed) are 0;
* a dot product of weighted id lists over keys too common to index (more than
  ``max_df`` postings) is at most sum_t |w_it| max_j |w_jt| over i's unindexed keys
  (and 0 when every key of i is indexed);
* indicators of a shared token (``venue_acronym``, ``venue_contain``) are 0 unless i has
  an unindexed key.

The missing-field and name-form features (:data:`CLASS_FEATURES`) are not bounded one by
one but taken exactly for each class of partner (:func:`classes`: the fields a mention
lacks and its name form; a kernel ``pair_features`` call per pair of classes), with the
gated features (affiliation, year, abstract, keyword terms) counted only for classes that
have the field, and the maximum over the block's classes is kept: a partner without
coauthors cannot also be in i's unindexed comp3 group, and so on.  Full first names are
keys too (:data:`FIRST_NAME_KEYS`): where i's is indexed, every partner with the same first
name is a candidate, so the classes of that first name leave the maximum.  In a
first-initial block ("l wang": Lei, Li, Ling, L.) the same first name is the best class by
about 2 nats.  ``comp_topic_cos`` takes its extremes over the other coauthor groups
(:func:`comp_topic_interval`); in a block of :data:`TOPIC_EXACT_MIN_N` mentions or more, a mention
whose first level's bound is still above 0 gets the extremes of ``topic_cos`` and ``topic_drift``
over the block (:func:`topic_extremes`; both in float32, widened by the rounding bound).  On the
11,515-mention "l wang" block of ``coref synth --mentions 3000000`` the memos that took their whole
row fell from 74% of the mentions to 38% with the first names, and to 0.7% with both.  Every other
feature keeps its interval.  With ``max_df`` levels, each level indexes rarer keys too: more
candidates, a tighter bound (``coref.gibbs._memo.memo_build`` tries them in turn).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coref.factors.names import BASE_FEATURES, COMPONENT_DAMPING, N_BASE
from coref.gibbs.topic_bounds import comp_topic_interval, topic_extremes

__all__ = ["PartnerIndex", "partner_index", "check_index", "check_tier", "classes", "comp_topic_interval",
           "topic_extremes", "MAX_DF", "TOPIC_EXACT_MIN_N"]

#: Keys posted by more mentions than this are not indexed: their sharing is bounded
#: instead (:func:`partner_index`).
MAX_DF = 256
#: Index full first names (``first_code``), so that the class maximum of a mention whose
#: first name is indexed leaves out the partner classes of that first name (:func:`_class_max`).
FIRST_NAME_KEYS = True

_F = {name: k for k, (name, _, _) in enumerate(BASE_FEATURES)}


@dataclass
class PartnerIndex:
    """Candidates of every mention of one block (CSR arrays) and the bound of the rest.

    Attributes
    ----------
    q_ptr : ndarray of int64, shape (n_levels * (n + 1),)
        At level l, mention i's indexed query keys are ``q_key[q_ptr[l * (n + 1) + i]:
        q_ptr[l * (n + 1) + i + 1]]``.
    q_key : ndarray of int64
    k_ptr : ndarray of int64, shape (n_keys + 1,)
        The mentions posted under key k are ``k_men[k_ptr[k]:k_ptr[k + 1]]``.
    k_men : ndarray of int64
    rest : ndarray of float64, shape (n_levels * n,)
        ``rest[l * n + i] >= f(i, j)`` for every j != i posted under none of i's query
        keys of level l.
    n_keys, n_levels : int
    """

    q_ptr: np.ndarray
    q_key: np.ndarray
    k_ptr: np.ndarray
    k_men: np.ndarray
    rest: np.ndarray
    n_keys: int
    n_levels: int = 1

    def candidates(self, i, level=0):
        """Sorted distinct candidates j != i of mention i at ``level`` (ndarray of int64)."""
        o = level * (len(self.q_ptr) // self.n_levels)
        keys = self.q_key[self.q_ptr[o + i]:self.q_ptr[o + i + 1]]
        parts = [self.k_men[self.k_ptr[k]:self.k_ptr[k + 1]] for k in keys]
        out = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
        return out[out != i]


def _rows_of(ptr, ids, w, rows):
    """Entries of CSR rows ``rows[m]`` for m = 0..len(rows)-1: (m, id, weight) arrays."""
    ptr = np.asarray(ptr, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts
    tot = int(lens.sum())
    m = np.repeat(np.arange(len(rows), dtype=np.int64), lens)
    first = np.concatenate(([0], np.cumsum(lens)[:-1]))
    pos = np.repeat(starts - first, lens) + np.arange(tot, dtype=np.int64)
    return m, np.asarray(ids, dtype=np.int64)[pos], np.asarray(w, dtype=np.float64)[pos]


def _ids_of(a):
    """One key per mention with id >= 0: (m, id, 1.0)."""
    a = np.asarray(a, dtype=np.int64)
    m = np.flatnonzero(a >= 0)
    return m, a[m], np.ones(len(m))


def _namespaces(enc, c, first_names=False):
    """(name, query, post, forced, nonneg) of every key space whose sharing can raise f.

    ``c``: the case-0 coefficients (theta[:N_BASE]).  A space is listed when one of its
    features has a coefficient that a shared key can raise (c > 0, or c != 0 when the
    space's weights can be negative); the coauthor, coauthor-name and comp1 spaces always;
    the full first names with ``first_names`` (their features are the class table's).
    """
    n = int(enc.n)
    own = np.arange(n, dtype=np.int64)
    comp1 = np.asarray(enc.comp1, dtype=np.int64)
    has_aff = np.asarray(enc.affil_id) >= 0
    out = []

    def lists(p, rows=own):
        return _rows_of(getattr(enc, p + "_ptr"), getattr(enc, p + "_ids"), getattr(enc, p + "_w"), rows)

    def raises(names, nonneg):
        return any(c[_F[k]] > 0.0 or (not nonneg and c[_F[k]] != 0.0) for k in names)

    def nn(*t):
        return bool(all((x[2] >= 0.0).all() for x in t))

    out.append(("co", lists("co"), lists("co"), True, True))
    if first_names:
        f = _ids_of(enc.first_code)
        out.append(("first", f, f, False, True))
    ck = _rows_of(enc.ck_ptr, enc.ck_ids, np.ones(len(enc.ck_ids)), own)
    out.append(("ck", ck, ck, True, True))
    g = _ids_of(comp1)
    out.append(("comp1", g, g, True, True))
    for name, arr, feat in (("comp2", enc.comp2, "same_comp2"), ("comp3", enc.comp3, "same_comp_initials"),
                            ("venue", enc.venue_id, "venue_eq"), ("affil", enc.affil_id, "affil_eq")):
        if raises((feat,), True):
            t = _ids_of(arr)
            out.append((name, t, t, False, True))
    for name, p, feats, rows in (("ti", "ti", ("title_cos",), own), ("ve", "ve", ("venue_cos", "venue_contain"), own),
                                 ("ab", "ab", ("abstract_cos",), own), ("kw", "kw", ("keyword_cos",), own),
                                 ("pt", "pt", ("comp_title_cos",), comp1), ("pv", "pv", ("comp_venue_cos",), comp1),
                                 ("pa", "pa", ("comp_affil_cos",), comp1)):
        t = lists(p, rows)
        if raises(feats, nn(t)):
            out.append((name, t, t, False, nn(t)))
    af = lists("af")
    keep = has_aff[af[0]]
    af = (af[0][keep], af[1][keep], af[2][keep])
    if raises(("affil_cos",), nn(af)):
        out.append(("af", af, af, False, nn(af)))
    ti, pt = lists("ti"), lists("pt", comp1)
    if raises(("mention_comp_title",), nn(ti, pt)):
        out.append(("X", ti, pt, False, nn(ti, pt)))     # ti_i . pt_{comp1 j}
        out.append(("Y", pt, ti, False, nn(ti, pt)))     # pt_{comp1 i} . ti_j
    va, vt = lists("va"), lists("vt")
    if raises(("venue_acronym",), True):
        out.append(("Z", va, vt, False, True))
        out.append(("W", vt, va, False, True))
    return out


def partner_index(enc, theta, bias, max_df=MAX_DF):
    """The candidate partners of every mention of a block and ``rest``, the bound of the others.

    Parameters
    ----------
    enc : coref.encoding.EncodedBlock
        One encoded block of n mentions.
    theta : ndarray of float64, shape (2 * N_BASE,)
        Feature weights (as given to the kernel).
    bias : float
        The block's factor bias (as given to the kernel).
    max_df : int or sequence of int
        Keys posted by more mentions than this are bounded instead of indexed (the
        coauthor, coauthor-name and comp1 keys are always indexed).  A sequence gives one
        level per value (increasing; a level that indexes no more keys than the one
        before is left out): each level's candidates hold the previous level's, and its
        bound is tighter.

    Returns
    -------
    PartnerIndex or None
        None when the feature layout is not the one the bound knows
        (:data:`coref.gibbs.arm_bound.KNOWN_FEATURES`).

    Raises
    ------
    ValueError
        If ``theta`` does not have 2 * N_BASE entries, or a ``max_df`` is < 1 or they
        do not increase.
    """
    from coref.gibbs.arm_bound import KNOWN_FEATURES

    if tuple(name for name, _, _ in BASE_FEATURES) != KNOWN_FEATURES:
        return None
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (2 * N_BASE,):
        raise ValueError(f"theta must have shape ({2 * N_BASE},); got {theta.shape}")
    levels = [int(x) for x in np.atleast_1d(max_df)]
    if not levels or min(levels) < 1:
        raise ValueError(f"max_df must be >= 1; got {max_df}")
    if any(b <= a for a, b in zip(levels, levels[1:])):
        raise ValueError(f"max_df levels must increase; got {max_df}")
    n = int(enc.n)
    c = theta[:N_BASE]
    table = _class_table(enc, c)
    spaces = _namespaces(enc, c, first_names=FIRST_NAME_KEYS and table is not None)
    # key ids: each space's token ids shifted past the previous spaces'
    base, qm, qk, qw, pm, pk, pw, sp_of = 0, [], [], [], [], [], [], []
    bases = {}
    for s, (name, q, p, _, _) in enumerate(spaces):
        top = int(max(q[1].max(initial=-1), p[1].max(initial=-1))) + 1
        bases[name] = base
        qm.append(q[0]), qk.append(q[1] + base), qw.append(np.abs(q[2]))
        pm.append(p[0]), pk.append(p[1] + base), pw.append(np.abs(p[2]))
        sp_of.append(np.full(top, s, dtype=np.int64))
        base += top
    n_keys = base
    qm, qk, qw = np.concatenate(qm), np.concatenate(qk), np.concatenate(qw)
    pm, pk, pw = np.concatenate(pm), np.concatenate(pk), np.concatenate(pw)
    space = np.concatenate(sp_of) if sp_of else np.zeros(0, np.int64)
    df = np.bincount(pk, minlength=n_keys)
    maxw = np.zeros(n_keys)
    np.maximum.at(maxw, pk, pw)
    forced = np.array([f for _, _, _, f, _ in spaces], dtype=bool)
    n_sp = len(spaces)
    q_ptrs, q_keys, level_args, last = [], [], [], -1
    offset = 0
    # what every level shares: the case-0 feature intervals and the class table
    from coref.gibbs.arm_bound import feature_intervals

    iv = feature_intervals(enc)[:2]
    ct = comp_topic_interval(enc)
    for D in levels:
        indexed = forced[space] | (df <= D)
        n_idx = int(indexed.sum())
        if n_idx == last:
            continue                       # indexes nothing more than the level before
        last = n_idx
        # unindexed, shared with someone: bounded per space (sum of |w_i| max |w_j|, any)
        loose = ~indexed[qk] & (df[qk] > 0)
        light = np.zeros((n_sp, n))
        anyk = np.zeros((n_sp, n), dtype=bool)
        if loose.any():
            np.add.at(light, (space[qk[loose]], qm[loose]), qw[loose] * maxw[qk[loose]])
            anyk[space[qk[loose]], qm[loose]] = True
        # the indexed query keys per mention (CSR into the shared q_key, after the
        # previous levels' keys)
        sel = indexed[qk] & (df[qk] > 0)
        order = np.lexsort((qk[sel], qm[sel]))
        q_keys.append(qk[sel][order])
        q_ptrs.append(offset + np.concatenate(([0], np.cumsum(np.bincount(qm[sel], minlength=n)))))
        offset += int(sel.sum())
        # the comp3 group of each mention when that group is not indexed (-1 otherwise)
        group = np.full(n, -1, dtype=np.int64)
        if "comp3" in bases:
            comp3 = np.asarray(enc.comp3, dtype=np.int64)
            group = np.where(indexed[comp3 + bases["comp3"]], -1, comp3)
        # the first name of each mention when it is indexed (-1 otherwise): its partners are candidates
        first = np.full(n, -1, dtype=np.int64)
        if "first" in bases:
            fc = np.asarray(enc.first_code, dtype=np.int64)
            first = np.where((fc >= 0) & indexed[np.maximum(fc, 0) + bases["first"]], fc, -1)
        level_args.append((light, anyk, group, first))
    rests = [_rest_bound(enc, bias, c, spaces, *a[:3], iv, table, a[3], ct) for a in level_args]
    if n >= TOPIC_EXACT_MIN_N:
        # mentions whose first level's bound is above 0 (those a memo may not keep): the topic
        # terms at their extremes over the block, then those rows' bound at every level again
        up = np.flatnonzero(rests[0] > 0.0)
        tight = _exact_topic_terms(enc, iv, up)
        if tight is not None:
            for rest, a in zip(rests, level_args):       # the other rows' bounds do not change
                rest[up] = _rest_bound(enc, bias, c, spaces, *a[:3], tight, table, a[3], ct, rows=up)
    # the postings of every key the last level indexes (a subset for the earlier ones)
    sel = indexed[pk]
    order = np.lexsort((pm[sel], pk[sel]))
    k_men = pm[sel][order]
    k_ptr = np.concatenate(([0], np.cumsum(np.bincount(pk[sel], minlength=n_keys)))).astype(np.int64)
    return PartnerIndex(np.concatenate(q_ptrs).astype(np.int64),
                        np.ascontiguousarray(np.concatenate(q_keys), dtype=np.int64), k_ptr,
                        np.ascontiguousarray(k_men, dtype=np.int64), np.concatenate(rests), n_keys,
                        len(rests))


def _rest_bound(enc, bias, c, spaces, light, anyk, group, iv, table, first=None, ct=None, rows=None):
    """bias + sum_k max(c_k lo_k, c_k hi_k) over the case-0 intervals ``iv`` of a
    non-candidate, the class features' maximum taken from ``table`` (:func:`_class_table`),
    over the partner classes of another first name than ``first`` (where >= 0);
    ``comp_topic_cos`` in ``ct`` (:func:`comp_topic_interval`) when given.  Shape (n,), or
    (len(rows),) for the mentions ``rows`` only (the same values: each row's bound reads its
    own columns and the block's partner kinds)."""
    sel = slice(None) if rows is None else np.asarray(rows, dtype=np.int64)
    lo, hi = iv[0][:, sel].copy(), iv[1][:, sel].copy()
    light, anyk = light[:, sel], anyk[:, sel]
    if ct is not None:
        ct = (ct[0][sel], ct[1][sel])
    z = np.zeros(lo.shape[1])
    sp = {name: s for s, (name, _, _, _, _) in enumerate(spaces)}
    nonneg = {name: nn for name, _, _, _, nn in spaces}

    def put(feat, a, b):
        lo[_F[feat]], hi[_F[feat]] = a, b

    def dot(name):
        L = light[sp[name]]
        return (z if nonneg[name] else -L), L

    for feat in ("co_log_count", "co_jaccard", "co_idf", "co_any", "co_two", "co_log_count_logn",
                 "co_init_log_count", "co_init_extra", "co_compat_log_count", "co_conflict_log_count",
                 "same_comp1", "same_comp1_logsize"):
        put(feat, z, z)
    for name, feat in (("comp2", "same_comp2"), ("comp3", "same_comp_initials"), ("venue", "venue_eq"),
                       ("affil", "affil_eq")):
        if name in sp:
            put(feat, z, np.where(anyk[sp[name]], 1.0, 0.0))
    for name, feat in (("ti", "title_cos"), ("ab", "abstract_cos"), ("kw", "keyword_cos"), ("af", "affil_cos")):
        if name in sp:
            put(feat, *dot(name))
    if "ve" in sp:
        put("venue_cos", *dot("ve"))
        put("venue_contain", z, np.where(anyk[sp["ve"]], 1.0, 0.0))
    # the damped profile terms of two comp1 groups: dot * min(1, D / sqrt(|A| |B|)), |B| >= 1
    ls = np.asarray(enc.comp1_logsize, dtype=np.float64)[: int(enc.n)][sel]
    damp = np.minimum(1.0, float(COMPONENT_DAMPING) * np.exp(-0.5 * ls))
    for name, feat in (("pt", "comp_title_cos"), ("pv", "comp_venue_cos"), ("pa", "comp_affil_cos")):
        if name in sp:
            a, b = dot(name)
            put(feat, a * damp, b * damp)
    if ct is not None:
        put("comp_topic_cos", *ct)
    if "X" in sp:
        (a1, b1), (a2, b2) = dot("X"), dot("Y")
        put("mention_comp_title", 0.5 * (a1 + a2), 0.5 * (b1 + b2))
    if "Z" in sp:
        put("venue_acronym", z, np.where(anyk[sp["Z"]] | anyk[sp["W"]], 1.0, 0.0))
    a, b = c[:, None] * lo, c[:, None] * hi
    t = np.maximum(a, b)
    mag = np.maximum(np.abs(a), np.abs(b)).sum(axis=0)
    slack = 1e-9 * (abs(float(bias)) + mag) + 1e-12
    w3 = float(c[_F["same_comp_initials"]]) if "comp3" in sp else None
    best = _class_max(table, t, group, w3, first, rows)
    if best is None:
        return float(bias) + t.sum(axis=0) + slack
    free = np.ones(N_BASE, dtype=bool)
    free[[_F[k] for k in CLASS_FEATURES]] = False
    if w3 is not None:
        free[_F["same_comp_initials"]] = False
    for feats in _GATES.values():
        free[[_F[k] for k in feats]] = False
    return float(bias) + t[free].sum(axis=0) + best + slack


#: In blocks of at least this many mentions, the mentions whose first-level bound is above 0
#: get the extremes of ``topic_cos`` and ``topic_drift`` (:func:`topic_extremes`) instead of
#: |t_i| max |t| (and that times the largest year gap), and every level's bound is computed again.
#: One-name 100,000-mention block: 41 of 400 sampled mentions left the first level (about 35,000
#: factors each, 62% of the memo factors), these terms were their largest slack (``topic_drift``
#: 0.86 nats on average) and 19 of the 41 stay; ``coref predict`` 363 -> 330 s, factors 7.6e8 ->
#: 5.4e8.  It does not pay in smaller blocks (the index costs more, a fallback less): 30,000
#: mentions 28.2 / 29.2 s -> 28.5 / 29.1 s, 11,515 ("l wang", one thread) 22.2 / 21.9 s -> 23.4 /
#: 23.6 s (2026-12-05, side by side).
TOPIC_EXACT_MIN_N = 50_000


def _exact_topic_terms(enc, iv, rows):
    """``iv`` (lo, hi) with the topic intervals of ``rows`` narrowed to their extremes
    (:func:`topic_extremes`: float32, widened by the rounding bound; intersected with the old
    ones); None when nothing changes."""
    if not len(rows):
        return None
    ext = topic_extremes(enc, rows)
    if ext is None:
        return None
    lo, hi = iv[0].copy(), iv[1].copy()
    for k, (a, b) in ((_F["topic_cos"], ext[:2]), (_F["topic_drift"], ext[2:])):
        lo[k, rows] = np.maximum(lo[k, rows], a)
        hi[k, rows] = np.minimum(hi[k, rows], b)
    return lo, hi


#: Features fixed by the two mentions' :func:`classes` (missing fields and name form).
CLASS_FEATURES = ("co_missing", "affil_missing", "year_missing", "abstract_missing", "keyword_missing",
                  "name_compat", "name_first_eq", "name_first_conflict", "name_init_only",
                  "name_middle_conflict", "name_full_eq", "name_rarity", "name_init_ambiguity")
#: Features that are 0 unless both mentions have the field (class column of the gate).
_GATES = {1: ("affil_cos", "affil_eq"), 2: ("year_gap", "year_gap2", "topic_drift"),
          3: ("abstract_cos",), 4: ("keyword_cos",)}
#: Most classes :func:`_class_max` compares (V^2 pairs); above, the features' own intervals.
MAX_CLASSES = 3000


def classes(enc):
    """Each mention's class: missing coauthors / affiliation / year / abstract / keywords and
    its name form (the codes and statistics the name features read).

    Returns
    -------
    (cls, attrs, rep) : ndarray of int64 shape (n,), ndarray (V, 13), ndarray of int64 (V,)
        Class per mention, the attributes of each class (columns 0-4: field missing), and
        one member of each.
    """
    n = int(enc.n)

    def empty(p):
        return np.diff(np.asarray(getattr(enc, p + "_ptr"), dtype=np.int64)[: n + 1]) == 0

    att = np.column_stack([empty("co"), np.asarray(enc.affil_id) < 0, np.asarray(enc.year) < 0,
                           empty("ab"), empty("kw")]
                          + [np.asarray(getattr(enc, k), dtype=np.float64)
                             for k in ("first_code", "first_init", "init_len", "init_code", "given_code",
                                       "mid_init", "name_rarity", "init_amb")]).astype(np.float64)
    attrs, rep, cls = np.unique(att, axis=0, return_index=True, return_inverse=True)
    return cls.reshape(-1).astype(np.int64), attrs, rep.astype(np.int64)


def _class_table(enc, c):
    """``(cls, attrs, A)``: :func:`classes` and A[u, v], the class features' part of f for a
    mention of class u and a partner of class v (exact, from the kernel on one member of
    each); None for a block of one mention or more than :data:`MAX_CLASSES` classes."""
    from sampling.utils.kernels import load_kernel

    if int(enc.n) < 2:
        return None
    cls, attrs, rep = classes(enc)
    V = len(rep)
    if V > MAX_CLASSES:
        return None
    fk = load_kernel("coref.factors._factors")
    cf = np.array([_F[k] for k in CLASS_FEATURES])
    A = np.empty((V, V))
    step = max(1, 100000 // V)
    for u0 in range(0, V, step):
        u = np.arange(u0, min(V, u0 + step))
        I = np.ascontiguousarray(np.repeat(rep[u], V))
        J = np.ascontiguousarray(np.tile(rep, len(u)))
        phi = np.empty((len(I), 2 * N_BASE))
        fk.pair_features(enc, I, J, phi)
        A[u] = (phi[:, cf] * c[cf]).sum(axis=1).reshape(len(u), V)
    return cls, attrs, A


def _class_max(table, t, group, w3, first=None, rows=None):
    """max over the block's partner kinds of f's class part for mention i (shape (n,), or
    (len(rows),) with ``t`` of those rows only), or None.

    The class part of a pair (i, j): ``A[class i, class j]`` (:func:`_class_table`), plus
    each gate's interval maxima ``t`` when both classes have its field, plus (``w3`` not
    None) ``w3 * same_comp_initials``, which for a partner outside i's candidates is 1
    exactly when both are in the same unindexed comp3 group ``group`` (-1: none).  A
    partner kind is a (class, group) pair that some mention has.  ``first`` (shape (n,)):
    i's indexed first name (-1: none); the kinds of that first name are i's candidates and
    are left out (-inf when no kind is left: i has no partner outside its candidates).
    """
    if table is None:
        return None
    cls, attrs, A = table
    V = len(A)
    # the partner kinds are the block's; the rows read are ``rows`` (t's columns)
    kinds = np.unique(np.column_stack([cls, group]), axis=0)      # (E, 2): class, group
    if rows is not None:
        cls, group = cls[rows], group[rows]
        first = None if first is None else first[rows]
    n = len(cls)
    has = ~attrs[:, list(_GATES)].astype(bool)             # (V, gates): field present
    G = np.stack([t[[_F[k] for k in feats]].sum(axis=0) for feats in _GATES.values()], axis=1)  # (n, gates)
    kv, kg = kinds[:, 0], kinds[:, 1]
    kf = attrs[kv, 5].astype(np.int64)                             # the first_code of each kind's class
    out = np.empty(n)
    for u in range(V):
        members = np.flatnonzero(cls == u)
        for m0 in range(0, len(members), max(1, 200000 // len(kv))):
            mem = members[m0:m0 + max(1, 200000 // len(kv))]
            v = A[u][kv][None, :] + (G[mem][:, None, :] * (has[u] & has[kv])[None, :, :]).sum(axis=2)
            if w3 is not None:
                v = v + w3 * ((kg[None, :] == group[mem][:, None]) & (kg[None, :] >= 0))
            if first is not None:
                f = first[mem][:, None]
                v = np.where((f >= 0) & (kf[None, :] == f), -np.inf, v)
            out[mem] = v.max(axis=1, initial=-np.inf)
    return out


def check_index(q_ptr, q_key, k_ptr, k_men, rest, n):
    """Raise ValueError unless a candidate index (``PartnerIndex`` arrays) fits n mentions.

    Used by the kernel ``coref.gibbs._gibbs.anneal`` and its twin before a run.
    """
    qp, kp = np.asarray(q_ptr), np.asarray(k_ptr)
    nr = np.asarray(rest).shape[0]
    L = nr // n if n > 0 else 0
    if L < 1 or nr != L * n or qp.shape[0] != L * (n + 1) or kp.shape[0] < 1:
        raise ValueError(f"cand_q_ptr must have L (n + 1) entries and cand_rest L n (n = {n}, L levels)")
    qp = qp.reshape(L, n + 1)
    if qp[0, 0] != 0 or qp[L - 1, n] != len(q_key) or (np.diff(qp, axis=1) < 0).any() \
            or (qp[1:, 0] != qp[:L - 1, n]).any():
        raise ValueError("cand_q_ptr must rise from 0 to len(cand_q_key), level after level")
    if kp[0] != 0 or kp[-1] != len(k_men) or (np.diff(kp) < 0).any():
        raise ValueError("cand_k_ptr must rise from 0 to len(cand_k_men)")
    qk, km = np.asarray(q_key), np.asarray(k_men)
    if len(qk) and (qk.min() < 0 or qk.max() >= kp.shape[0] - 1):
        raise ValueError("cand_q_key holds a key outside [0, len(cand_k_ptr) - 1)")
    if len(km) and (km.min() < 0 or km.max() >= n):
        raise ValueError("cand_k_men holds a mention outside [0, n)")
    if np.isnan(np.asarray(rest, dtype=np.float64)).any():
        raise ValueError("cand_rest must not hold NaN")


def check_tier(ovf, at, tier, n):
    """Raise ValueError unless the memo's second tier arrays fit n mentions (kernel and twin)."""
    if at is None or tier is None or len(at) != 2 * n + 1 or len(tier) != n or len(ovf) < 1:
        raise ValueError("memo_ovf needs memo_ovf_at of shape (2 n + 1,) and memo_tier (n,)")
    if at[2 * n] < 0 or at[2 * n] > len(ovf):
        raise ValueError("memo_ovf_at[2 n] (the arena's fill) must lie in [0, len(memo_ovf)]")
