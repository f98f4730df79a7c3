"""Confidence of coreference assignments: posterior marginals and certified intervals.

For a predicted clustering of the mentions of a block, the *confidence* of mention i
is the posterior probability that it belongs with its predicted cluster C(i)::

    conf(i) = mean_{j in C(i), j != i} P(y_i = y_j | x)      if C(i) has other members,
    conf(i) = P(i is a cluster of its own | x)                if C(i) = {i},

under p(y | x) proportional to exp(sum_{i < j, y_i = y_j} f(x_i, x_j)) (Chen &
Ghahramani 2016, Sec. 5.3).  It is computed in one of three ways (column ``method``):

``exact``
    The whole block (at most ``max_exact`` mentions) is one sub-model whose set
    partitions are summed exactly (:func:`coref._submodel.exact_log_z`): the true
    marginals; or a sub-model S of at most ``max_exact`` mentions conditioned on the
    rest of the block's predicted assignment (then the probabilities are conditional
    on y_R; every row says which sub-model it came from by ``n_submodel``).
``dis``
    A sub-model S of up to ``max_submodel`` mentions, conditioned on the rest, written
    as a graphical model (:func:`submodel`) whose partition functions Z and Z_A are
    bounded by dynamic importance sampling (Lou, Dechter & Ihler 2017, Alg. 1,
    Theorem 1).  DIS is run on Z and on Z_A with delta/2 each; every one of its
    one-sided bounds L <= Z, Z <= U, L_A <= Z_A, Z_A <= U_A then fails with
    probability at most delta/2 (Theorem 1 bounds each side separately), so
    P(A | y_R) = Z_A / Z >= L_A / U and P(A | y_R) <= U_A / L each hold with
    probability at least 1 - delta, and the interval [L_A / U, U_A / L] with
    probability at least 1 - 2 delta.
``gibbs``
    Mentions beyond the sub-models: Monte Carlo estimates from ``n_samples`` sweeps of
    single-site Gibbs at temperature 1 started from the predicted clustering after
    ``n_burn`` sweeps (:func:`gibbs_marginals`, numpy).  They are Rao-Blackwellised:
    each kept sweep contributes the exact conditional P(y_i = cluster of j | y_{-i})
    rather than the indicator 1{y_i = y_j}, which has lower variance and gives every
    pair a non-zero probability.  No certified interval (``p_lower`` / ``p_upper``
    NaN).

Calibration (column ``p_calibrated`` of both outputs): for pairs, the image of
(p + sigmoid(f)) / 2 (:func:`pair_score`) under a monotone map; for mentions, the image of min(p, p_direct) (``p_direct`` = mean
sigmoid(f) to the other members of the predicted cluster, :func:`acceptance_score`),
mapped to the frequency with which such an assignment is correct; each a monotone map (isotonic or one temperature, :class:`ConfidenceCalibration`) fitted on
labeled TRAINING mentions clustered and scored by the same model
(:func:`fit_confidence_calibration`; ``coref fit`` saves it with the model, ``coref
predict --confidence`` applies it, ``coref run`` fits one per fold on the training folds
only and scores it on the held-out fold).  NaN when the model carries no map.  The
interval ends are not mapped: they certify the model's probability ``p``.

Per-row guarantee of ``dis`` rows: a mention's value is a weighted mean of the
probabilities of at most n_ev events; Z is bounded with delta/2 and each Z_A with
delta / (2 n_ev), so by the union bound each end of the row's interval holds with
probability at least 1 - delta and the interval with at least 1 - 2 delta (a statement
per row, not simultaneous over rows).

Sub-model choice per block: a whole block of at most ``max_exact`` mentions; in a
bigger block the mentions whose sampled confidence is lowest (below
``review_threshold``, at most ``max_submodel`` of them), conditioned on the rest.

Bad input and edge cases: an empty ``df`` gives empty frames; a block of one mention
has confidence 1 (its only partition); a sub-model asked for with more mentions than
``max_submodel`` is cut to the ``max_submodel`` least confident ones (the rest keep
their sampled rows); a mention of ``df`` missing from ``clusters`` is a ValueError
naming it.

References
----------
.. [1] Lou, Dechter & Ihler (2017), "Dynamic Importance Sampling for Anytime Bounds of
   the Partition Function", NIPS, Alg. 1, Eq. 13-14, Theorem 1.
.. [2] Chen & Ghahramani (2016), "Scalable discrete sampling as a multi-armed bandit
   problem", ICML, Sec. 5.3.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import pandas as pd

from coref._submodel import (MAX_EXACT_SUBSET, build_graphical_model, check_constraints,
                             exact_log_z, log_block_probabilities, subproblem)
from coref._calibration import (CalibrationMap, ConfidenceCalibration, brier_score, calibration_scores,
                                ece_score, fit_calibration, mention_correct, reliability_table,
                                write_confidence_report)

__all__ = ["submodel", "assignment_confidence", "event_probability", "EventProbability", "apply_calibration",
           "calibration_scores", "fit_calibration", "CalibrationMap", "write_confidence_report",
           "ConfidenceCalibration", "fit_confidence_calibration", "calibration_from_scores", "with_calibration", "confidence_figures", "gibbs_marginals",
           "acceptance_score", "pair_score",
           "CONFIDENCE_COLUMNS", "PAIR_COLUMNS", "DEFAULT_MAX_SUBMODEL", "DEFAULT_MAX_EXACT"]

CONFIDENCE_COLUMNS = ("mention_id", "cluster_id", "p", "p_lower", "p_upper", "method", "n_submodel", "p_direct",
                      "p_calibrated")
PAIR_COLUMNS = ("block", "mention_a", "mention_b", "p", "p_direct", "p_calibrated")

#: default largest sub-model (see benchmarks/bench_coref_confidence.py).  Below
#: DEFAULT_MAX_EXACT, so by default every sub-model is summed exactly and DIS is opt-in.
#: Measured on the shipped data (7,026 mentions, shipped model, racing MAP clusters, one
#: loaded 2-core machine): the confidence step took 6.3 s with sampled marginals only,
#: 12.0 s with exact sub-models of <= 8 mentions (621 rows) and 166 s with <= 12 (807
#: rows; O(K 3^m) per event), for the same coverage (79.6%) and correctness (97.7%) at
#: confidence >= 0.95.  On 12-20-mention sub-models DIS intervals had a median width of
#: 0.92 at 2 s per partition function and 0.034 at 10 s (90th percentile 0.98), and a
#: DIS sub-model of m mentions needs about m + 1 runs.  Raise ``max_submodel`` (and
#: ``max_exact`` <= 12) for bigger exact sub-models, or to 16-20 with ``time_limit=10``
#: for certified DIS intervals.
DEFAULT_MAX_SUBMODEL = 8
#: default largest sub-model summed exactly (subset dynamic program, O(K 3^m))
DEFAULT_MAX_EXACT = 12
#: default Gibbs sweeps kept / discarded for the sampled marginals (Rao-Blackwellised,
#: see :func:`gibbs_marginals` and benchmarks/bench_coref_confidence.py)
DEFAULT_N_SAMPLES = 20
DEFAULT_N_BURN = 10


def _factor_matrix(model, block):
    """(EncodedBlock, F) for a DataFrame block or an EncodedBlock."""
    if isinstance(block, pd.DataFrame):
        enc = model.encode(block)
    else:
        enc = block
    if not hasattr(enc, "n"):
        raise TypeError("enc_or_df_block must be a pandas DataFrame of one block or an EncodedBlock; "
                        f"got {type(block).__name__}")
    return enc, model.factor_matrix(enc)


def submodel(model, enc_or_df_block, S, *, assignment=None, constraint=None, encoding="leader"):
    """The sub-model of mentions ``S`` of a block, the rest fixed, as a graphical model.

    Parameters
    ----------
    model : PairwiseModel
        Fitted pairwise factor (``encode``, ``factor_matrix``).
    enc_or_df_block : pandas.DataFrame or EncodedBlock
        One block (row order = the indices of ``S`` and ``assignment``).
    S : sequence of int
        Distinct row indices of the sub-model's mentions.
    assignment : array_like of int of shape (n,), optional
        Cluster label per row; rows outside S are fixed at it. Required unless S is
        the whole block.
    constraint : None, tuple or list of tuples, optional
        Event(s) A: ``("same", i, j)`` for y_i = y_j, ``("cluster", i, c)`` for
        y_i = existing cluster label c, ``("alone", i)`` for "i is a cluster of its
        own"; i, j are rows in S.
    encoding : {"leader", "growth"}, default "leader"
        Label-symmetry removal (:mod:`coref._submodel`): restricted growth with
        auxiliary counts, or the first member of each new cluster as its label. Both
        have the same partition function; DIS bounds are far tighter with "leader"
        (measured in ``benchmarks/bench_coref_confidence.py``).

    Returns
    -------
    sampling.bounds.GraphicalModel
        Partition function Z_S = sum over the set partitions of S (each once), where
        every group is a new cluster or joins one existing cluster, of
        exp(sum of f over newly co-clustered pairs involving S), natural log; with a
        constraint, Z_A. Write it with ``sampling.bounds.write_uai``.

    Raises
    ------
    ValueError
        If S is empty, repeats or exceeds the rows, ``assignment`` is missing or of the
        wrong length, or a constraint names a row outside S or an unknown cluster.
    TypeError
        For non-integer rows or labels, or a malformed constraint.

    Examples
    --------
    >>> import numpy as np
    >>> from coref._submodel import subproblem, build_graphical_model
    >>> from sampling.bounds import log_partition
    >>> F = np.array([[0., 1., -1.], [1., 0., 0.5], [-1., 0.5, 0.]])
    >>> gm = build_graphical_model(subproblem(F, [0, 1, 2]))
    >>> # 5 partitions of 3 mentions: {}, {01}, {02}, {12}, {012}
    >>> w = [0, 1, -1, 0.5, 0.5]
    >>> bool(abs(log_partition(gm) - np.log(np.exp(w).sum())) < 1e-12)
    True

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Sec. 2 (graphical model, partition function).
    """
    _, F = _factor_matrix(model, enc_or_df_block)
    sub = subproblem(F, S, assignment)
    return build_graphical_model(sub, check_constraints(sub, constraint), encoding=encoding)


# ----------------------------------------------------------------------- one event

class EventProbability:
    """P(A | y_R) of one event in one sub-model, with its interval.

    Attributes
    ----------
    p : float
        Estimate (exact, or the ratio of the DIS estimates of Eq. 13, clipped to the
        interval; the interval's midpoint if DIS drew no sample with positive weight).
    p_lower, p_upper : float
        Interval in [0, 1]; equal to ``p`` for exact evaluation.
    method : str
        ``"exact"`` or ``"dis"``.
    log_Z : tuple of float
        (lower, estimate, upper) of ln Z.
    log_Z_A : tuple of float
        (lower, estimate, upper) of ln Z_A.
    """

    __slots__ = ("p", "p_lower", "p_upper", "method", "log_Z", "log_Z_A")

    def __init__(self, p, p_lower, p_upper, method, log_Z, log_Z_A):
        self.p, self.p_lower, self.p_upper = float(p), float(p_lower), float(p_upper)
        self.method, self.log_Z, self.log_Z_A = method, tuple(log_Z), tuple(log_Z_A)

    def __repr__(self):
        return (f"EventProbability(p={self.p:.4g}, interval=[{self.p_lower:.4g}, {self.p_upper:.4g}], "
                f"method={self.method!r})")


def _dis_log_z(gm, *, delta, time_limit, memory_mb, rng):
    """(lower, estimate, upper) of ln Z by DIS, each bound failing w.p. <= delta."""
    from sampling import bounds

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # WMB convergence notes: the bounds stay valid
        tr = bounds.run(gm, method="dis", time_limit=float(time_limit), memory_mb=float(memory_mb),
                        delta=float(delta), rng=rng)
    return (tr.final_log_Z_lower, tr.final_log_Z_hat, tr.final_log_Z_upper)


def _ratio(log_a, log_b):
    """min(1, exp(log_a - log_b)): 0 if Z_A's bound is 0, 1 if Z's lower bound is 0 (vacuous)."""
    if not np.isfinite(log_a):
        return 0.0
    if not np.isfinite(log_b):
        return 1.0
    return float(math.exp(min(0.0, log_a - log_b)))


def event_probability(sub, constraint, *, method="auto", delta=0.05, time_limit=10.0, memory_mb=256,
                      rng=0, log_Z=None, encoding="leader", max_exact=DEFAULT_MAX_EXACT):
    """P(A | y_R) = Z_A / Z_S for an event A of a sub-model, exact or certified by DIS.

    Parameters
    ----------
    sub : coref._submodel.SubProblem
    constraint : tuple or list of tuples
        The event (see :func:`submodel`).
    method : {"auto", "exact", "dis"}, default "auto"
        "auto": exact if ``sub.m <= max_exact``, else DIS.
    delta : float in (0, 1), default 0.05
        DIS runs on Z and Z_A with delta/2 each: each end of the interval holds with
        probability >= 1 - delta, the interval with >= 1 - 2 delta.
    time_limit : float, default 10
        DIS budget per partition function, seconds (wall clock).
    memory_mb : float, default 256
        DIS memory budget per run (WMB and search tree).
    rng : None, int or numpy.random.Generator
    log_Z : tuple of float, optional
        (lower, estimate, upper) of ln Z already computed (shared by several events);
        each of its bounds must fail with probability <= delta/2.
    encoding : {"leader", "growth"}

    Returns
    -------
    EventProbability

    Raises
    ------
    ValueError
        For a bad method or delta, or exact evaluation of more than
        ``coref._submodel.MAX_EXACT_SUBSET`` mentions.

    Notes
    -----
    Theorem 1 of [1]_: Zhat + Delta and Zhat - Delta are upper and lower bounds of Z,
    each with probability >= 1 - delta; here P(A) >= L_A / U and P(A) <= U_A / L,
    clipped to [0, 1] (a probability), where the Markov bound stands in for the lower
    bound while Zhat - Delta <= 0.

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Theorem 1.
    """
    if method not in ("auto", "exact", "dis"):
        raise ValueError(f"the method parameter must be 'auto', 'exact' or 'dis'; got {method!r}")
    if not (isinstance(delta, numbers.Real) and 0.0 < float(delta) < 1.0):
        raise ValueError(f"the delta parameter must be in (0, 1); got {delta!r}")
    cons = check_constraints(sub, constraint)
    if method == "auto":
        method = "exact" if sub.m <= max_exact else "dis"
    if method == "exact":
        lz = exact_log_z(sub) if log_Z is None else log_Z[1]
        la = exact_log_z(sub, cons)
        p = _ratio(la, lz)
        return EventProbability(p, p, p, "exact", (lz, lz, lz), (la, la, la))
    from sampling.utils.rng import as_generator

    gen = as_generator(rng)
    d = float(delta) / 2.0
    if log_Z is None:
        log_Z = _dis_log_z(build_graphical_model(sub, encoding=encoding), delta=d, time_limit=time_limit,
                           memory_mb=memory_mb, rng=gen)
    lzA = _dis_log_z(build_graphical_model(sub, cons, encoding=encoding), delta=d, time_limit=time_limit,
                     memory_mb=memory_mb, rng=gen)
    lo = _ratio(lzA[0], log_Z[2])
    hi = _ratio(lzA[2], log_Z[0])
    est = _ratio(lzA[1], log_Z[1]) if np.isfinite(log_Z[1]) else 0.5 * (lo + hi)
    est = min(max(est, lo), hi)
    return EventProbability(est, lo, hi, "dis", log_Z, lzA)


# ----------------------------------------------------------------------- sampled marginals

def _marginal_sweep_kernel():
    from sampling.utils.kernels import load_kernel

    return load_kernel("coref._gibbs").marginal_sweep


def _marginal_sweep_py(F, S, lab, size, perm, u, exp):
    """Pure-numpy twin of ``coref._gibbs.marginal_sweep`` (one sweep, arrays in place)."""
    n = F.shape[0]
    for k, i in enumerate(perm):
        a = lab[i]
        size[a] -= 1
        valid = size > 0
        w = np.zeros(n)
        si = S[i, valid]
        # the new-cluster option: slot a if it has just emptied, else the first empty slot
        e = a if size[a] == 0 else int(np.argmin(valid))
        m = max(si.max(initial=0.0), 0.0)
        w[valid] = exp(si - m)
        w[e] = exp(-m)
        c = np.cumsum(w)
        b = int(np.searchsorted(c, u[k] * c[-1], side="right"))
        b = min(b, n - 1)
        while w[b] == 0.0:  # float edge: step back to a slot with weight
            b -= 1
        if b != a:
            S[:, a] -= F[:, i]
            S[:, b] += F[:, i]
            lab[i] = b
        size[b] += 1


def gibbs_marginals(F, labels, *, n_samples, n_burn, rng, temperature=1.0, _sweep=None):
    """Rao-Blackwellised pair marginals from single-site Gibbs at a fixed temperature.

    The chain targets p(y | x) proportional to exp(sum_{i < j, y_i = y_j} F[i, j] / T)
    over the set partitions y of the block (T = ``temperature``; 1 is the model's
    posterior, Chen & Ghahramani 2016, Sec. 5.3).  It starts at ``labels`` (the
    predicted clustering), runs ``n_burn`` sweeps, then ``n_samples`` sweeps; after
    each kept sweep, for every mention i, the exact conditional
    q_i(c) = P(y_i = c | y_{-i}, x) over the clusters c of the others and one new
    cluster (weights exp(sum_{j in c} F[i, j] / T) and 1) is averaged instead of
    the 0/1 indicator 1{y_i = y_j}::

        P(y_i = y_j | x) ~= (1 / n_samples) sum_t (q_i^t(y_j^t) + q_j^t(y_i^t)) / 2,
        P(i alone | x)   ~= (1 / n_samples) sum_t q_i^t(new).

    Both are Rao-Blackwellised (conditioning on y_{-i}) estimates of the same
    marginals as the indicator average, with no larger variance; they are smooth in
    F, so a pair that never shares a cluster in the samples still gets its
    conditional probability rather than 0.

    Parameters
    ----------
    F : ndarray of shape (n, n)
        Pairwise factors f(x_i, x_j) (natural-log odds; the diagonal is ignored).
    labels : array_like of int of shape (n,)
        Start state (any integer labels).
    n_samples : int >= 1
        Sweeps averaged.
    n_burn : int >= 0
        Sweeps discarded first.
    rng : numpy.random.Generator
        Random order of each sweep and the draws.
    temperature : float > 0, default 1

    Returns
    -------
    P : ndarray of shape (n, n)
        Estimated P(y_i = y_j | x), symmetric, diagonal 1.
    alone : ndarray of shape (n,)
        Estimated P(i is a cluster of its own | x).

    Notes
    -----
    O(n) per site update, in one compiled call per sweep (``coref._gibbs.marginal_sweep``,
    which takes its exponentials from ``numpy.exp``; twin ``_marginal_sweep_py``, the
    earlier all-numpy loop), and O(n^2) per kept sweep in numpy (the matrix of
    conditionals of every mention); the cluster sums S[i, c] = sum_{j in c} F[i, j]
    are updated incrementally.  ``_sweep`` (tests): the sweep function to use.
    """
    F = np.array(F, dtype=float) / float(temperature)
    n = F.shape[0]
    if F.shape != (n, n):
        raise ValueError(f"F must be square; got shape {F.shape}")
    np.fill_diagonal(F, 0.0)
    lab = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    if lab.shape != (n,):
        raise ValueError(f"labels must have one entry per row of F ({n}); got {np.shape(labels)}")
    size = np.bincount(lab, minlength=n).astype(np.int64)
    # S[i, c] = sum_{j in cluster slot c} F[i, j]; n slots (at most n clusters)
    S = np.zeros((n, n))
    np.add.at(S.T, lab, F.T)
    P = np.zeros((n, n))
    alone = np.zeros(n)
    rows = np.arange(n)
    sweep = _marginal_sweep_kernel() if _sweep is None else _sweep
    for t in range(int(n_burn) + int(n_samples)):
        # the visiting order, then one uniform per visit (the stream of drawing them in turn)
        perm = rng.permutation(n).astype(np.int64)
        u = rng.random(n)
        sweep(F, S, lab, size, perm, u, np.exp)
        if t < int(n_burn):
            continue
        sz = np.broadcast_to(size, (n, n)).copy()
        sz[rows, lab] -= 1  # the clusters as mention i sees them (without i)
        L = np.where(sz > 0, S, -np.inf)
        m = np.maximum(L.max(axis=1), 0.0)
        E = np.exp(L - m[:, None])
        new = np.exp(-m)
        Z = E.sum(axis=1) + new
        Q = E[:, lab] / Z[:, None]  # Q[i, j] = q_i(slot of j), for j != i
        P += Q
        P += Q.T
        alone += new / Z
    P /= 2.0 * int(n_samples)
    alone /= int(n_samples)
    np.fill_diagonal(P, 1.0)
    return np.clip(P, 0.0, 1.0), np.clip(alone, 0.0, 1.0)


def _sampled_marginals(model, block_df, labels, *, n_samples, n_burn, seed):
    """Pair probabilities and singleton probabilities at temperature 1.

    Rao-Blackwellised single-site Gibbs (:func:`gibbs_marginals`) started from the
    predicted clustering: ``n_burn`` sweeps, then ``n_samples`` kept sweeps.

    Returns
    -------
    P : ndarray of shape (n, n)
        Estimated P(y_i = y_j | x) (diagonal 1), rows in ``block_df`` order.
    alone : ndarray of shape (n,)
        Estimated P(i is a cluster of its own | x).
    """
    F = model.factor_matrix(model.encode(block_df))
    return gibbs_marginals(F, labels, n_samples=n_samples, n_burn=n_burn, rng=np.random.default_rng(seed))


def _direct_confidence(F, labels):
    """p_direct(i) = mean_{j in C(i), j != i} sigmoid(F[i, j]); 1 for a predicted singleton."""
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    k = same.sum(axis=1)
    S = 0.5 * (1.0 + np.tanh(0.5 * F))  # sigmoid, overflow-free
    return np.where(k > 0, (S * same).sum(axis=1) / np.maximum(k, 1), 1.0)


def acceptance_score(confidence_df):
    """The score the mention calibration map is applied to: min(p, p_direct).

    ``p`` is the posterior probability that the mention belongs with its predicted
    cluster; ``p_direct`` the pairwise model's mean probability sigmoid(f) that it
    co-refers with each other member.  The posterior sums the factors over a cluster,
    so a few strong links can carry a mention whose links to most members are weak
    (or a whole wrongly merged group); requiring both to be high is what separates
    those.  Measured on the shipped data (grouped 5-fold, racing clusters): mentions
    with p >= 0.95 were 97.3% correct (79.4% of mentions), with min(p, p_direct) >= 0.9
    98.9% (72.9%).

    Parameters
    ----------
    confidence_df : pandas.DataFrame
        ``p`` and ``p_direct``.

    Returns
    -------
    ndarray of shape (n,)
    """
    return np.minimum(confidence_df["p"].to_numpy(float), confidence_df["p_direct"].to_numpy(float))


def pair_score(pairs_df):
    """The score the pair calibration map is applied to: (p + p_direct) / 2.

    The mean of the posterior marginal P(y_a = y_b | x) (temperature 1) and the raw
    pairwise logistic probability sigmoid(f).  The posterior is sharper (it uses
    transitivity) but is confidently wrong on whole split or merged clusters, where
    sigmoid(f) hedges; their mean had a lower Brier score than either on the shipped
    data (grouped 5-fold, pooled: 0.0600 against 0.0619 for sigmoid(f) and 0.0713 for
    the posterior; benchmarks/bench_coref_confidence.py).

    Parameters
    ----------
    pairs_df : pandas.DataFrame
        ``p`` and ``p_direct``.

    Returns
    -------
    ndarray of shape (n_pairs,)
    """
    return 0.5 * (pairs_df["p"].to_numpy(float) + pairs_df["p_direct"].to_numpy(float))


def _mention_confidence(P, alone, labels):
    """conf(i) from pair probabilities (module docstring)."""
    same = labels[:, None] == labels[None, :]
    np.fill_diagonal(same, False)
    k = same.sum(axis=1)
    conf = np.where(k > 0, (P * same).sum(axis=1) / np.maximum(k, 1), alone)
    return np.clip(conf, 0.0, 1.0)


# ----------------------------------------------------------------------- driver

def _check_iv(df, clusters, delta, max_submodel, max_exact, n_samples, n_burn, time_limit,
              review_threshold):
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
    if not isinstance(clusters, pd.DataFrame):
        raise TypeError(f"clusters must be a pandas DataFrame; got {type(clusters).__name__} instead")
    for name, frame, cols in (("df", df, ("mention_id", "block")),
                              ("clusters", clusters, ("mention_id", "block", "cluster_id"))):
        miss = [c for c in cols if c not in frame.columns]
        if miss:
            raise ValueError(f"{name} is missing the column(s) {miss}")
    if not (isinstance(delta, numbers.Real) and 0.0 < float(delta) < 1.0):
        raise ValueError(f"the delta parameter must be in (0, 1); got {delta!r}")
    for name, v, lo in (("max_submodel", max_submodel, 1), ("max_exact", max_exact, 1),
                        ("n_samples", n_samples, 1), ("n_burn", n_burn, 0)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"the {name} parameter must be an int; got {type(v).__name__}")
        if v < lo:
            raise ValueError(f"the {name} parameter must be >= {lo}; got {v}")
    if max_exact > MAX_EXACT_SUBSET:
        raise ValueError(f"the max_exact parameter must be <= {MAX_EXACT_SUBSET}; got {max_exact}")
    if not (isinstance(time_limit, numbers.Real) and float(time_limit) > 0):
        raise ValueError(f"the time_limit parameter must be > 0 seconds; got {time_limit!r}")
    if not (isinstance(review_threshold, numbers.Real) and 0.0 < float(review_threshold) <= 1.0):
        raise ValueError(f"the review_threshold parameter must be in (0, 1]; got {review_threshold!r}")
    if df["mention_id"].duplicated().any():
        dup = df["mention_id"][df["mention_id"].duplicated()].iloc[0]
        raise ValueError(f"mention_id values must be unique in df; {dup!r} repeats")
    key = clusters["mention_id"].astype(str).to_numpy()
    cid = clusters["cluster_id"].astype(str).to_numpy()
    cmap = pd.Series(cid, index=key)
    dup = cmap.index.duplicated(keep=False)
    if dup.any():
        clash = cmap[dup].groupby(level=0).nunique()
        if (clash > 1).any():
            raise ValueError(f"clusters gives mention {clash.index[clash.to_numpy() > 1][0]!r} two cluster_id values")
        cmap = cmap[~cmap.index.duplicated()]
    ids = df["mention_id"].astype(str)
    missing = ~ids.isin(cmap.index)
    if missing.any():
        raise ValueError(f"clusters has no row for mention {ids[missing].iloc[0]!r} "
                         f"({int(missing.sum())} mention(s) of df are missing)")
    return cmap


def _events(sub, labels):
    """Events and weights per S position for the confidence definition.

    Returns list (per k) of [(constraint, weight)], weights summing to 1.
    """
    S = sub.S
    in_S = np.zeros(labels.shape[0], bool)
    in_S[S] = True
    out = []
    for k, i in enumerate(S):
        mates = np.flatnonzero((labels == labels[i]) & (np.arange(labels.shape[0]) != i))
        if mates.size == 0:
            out.append([(("alone", int(i)), 1.0)])
            continue
        ev = []
        n_fixed = int((~in_S[mates]).sum())
        if n_fixed:
            ev.append((("cluster", int(i), int(labels[i])), n_fixed / mates.size))
        for j in mates[in_S[mates]]:
            ev.append((("same", int(min(i, j)), int(max(i, j))), 1.0 / mates.size))
        out.append(ev)
    return out


def _conditional_rows(sub, labels, *, method, delta, time_limit, memory_mb, gen, encoding):
    """(p, lower, upper) per S position for the conditional sub-model ``sub``."""
    events = _events(sub, labels)
    n_ev = max(len(e) for e in events)
    if method == "exact":
        lz = exact_log_z(sub)
        log_Z = (lz, lz, lz)
    else:
        gm = build_graphical_model(sub, encoding=encoding)
        log_Z = _dis_log_z(gm, delta=delta / 2.0, time_limit=time_limit, memory_mb=memory_mb, rng=gen)
    cache = {}
    rows = []
    for ev in events:
        p = lo = hi = 0.0
        for con, w in ev:
            if con not in cache:
                # delta/2 for Z, delta/(2 n_ev) for each Z_A: each end of a mention's
                # interval holds with probability >= 1 - delta (union bound over its
                # <= n_ev events), the interval with >= 1 - 2 delta
                cache[con] = event_probability(sub, con, method=method, delta=delta / n_ev,
                                               time_limit=time_limit, memory_mb=memory_mb, rng=gen,
                                               log_Z=log_Z, encoding=encoding)
            r = cache[con]
            p += w * r.p
            lo += w * r.p_lower
            hi += w * r.p_upper
        rows.append((min(max(p, lo), hi), lo, hi))
    return rows


def assignment_confidence(model, df, clusters, *, delta=0.05, max_submodel=DEFAULT_MAX_SUBMODEL,
                          max_exact=DEFAULT_MAX_EXACT, n_samples=DEFAULT_N_SAMPLES, n_burn=DEFAULT_N_BURN,
                          time_limit=10.0, memory_mb=256, review_threshold=0.95, rng=0, encoding="leader",
                          pair_min_p=0.01, calibration="model", pair_factors=False):
    """Confidence of every mention's predicted cluster, with certified intervals where affordable.

    Parameters
    ----------
    model : PairwiseModel
        Fitted pairwise factor.
    df : pandas.DataFrame
        Mentions (``mention_id``, ``block`` and the feature columns), one or many blocks.
    clusters : pandas.DataFrame
        The predicted clustering: ``mention_id``, ``block``, ``cluster_id``.
    delta : float in (0, 1), default 0.05
        Each end of a ``dis`` row's interval holds with probability >= 1 - delta, the
        interval with >= 1 - 2 delta (as in the must-show coverage check).
    max_submodel : int, default :data:`DEFAULT_MAX_SUBMODEL`
        Largest sub-model bounded by DIS; larger sets are cut to the least confident.
    max_exact : int, default :data:`DEFAULT_MAX_EXACT`
        Largest sub-model (or whole block) summed exactly.
    n_samples, n_burn : int, default :data:`DEFAULT_N_SAMPLES` and :data:`DEFAULT_N_BURN`
        Gibbs sweeps at temperature 1 kept / discarded, per block above ``max_exact``
        (Rao-Blackwellised estimates, :func:`gibbs_marginals`).
    time_limit : float, default 10
        DIS budget per partition function (wall-clock seconds); a DIS sub-model of m
        mentions needs 1 + (number of distinct events, about m) runs, so about
        (m + 1) * time_limit seconds per block that uses DIS.
    memory_mb : float, default 256
        DIS memory budget per run.
    review_threshold : float in (0, 1], default 0.95
        Mentions of big blocks whose sampled confidence is below it form the sub-model.
    rng : int, default 0
        Seed (per block: ``coref.gibbs.block_rng(rng, block)``).
    encoding : {"leader", "growth"}, default "leader"
    pair_min_p : float, default 0.01
        ``pairs_df`` keeps pairs with p >= pair_min_p and every pair inside a predicted
        cluster (0 keeps every pair).
    calibration : "model", None or ConfidenceCalibration, default "model"
        Maps for the ``p_calibrated`` columns: ``"model"`` uses the maps saved with the
        model (``model.calibration_``, set by ``coref fit`` and :func:`coref.model.load_model`;
        none there = NaN columns); None = NaN columns.
    pair_factors : bool, default False
        Add a column ``f`` (the pairwise factor, natural-log odds) to ``pairs_df``, for
        the sigmoid(f) baseline of :func:`confidence_figures`.

    Returns
    -------
    confidence_df : pandas.DataFrame
        ``mention_id``, ``cluster_id``, ``p`` (conf(i), module docstring), ``p_lower``,
        ``p_upper`` (NaN for ``gibbs`` rows), ``method`` (exact | dis | gibbs),
        ``n_submodel`` (mentions of the sub-model the row came from; 0 for gibbs),
        ``p_direct`` (mean sigmoid(f) to the other members of the predicted cluster; 1
        for a singleton), ``p_calibrated`` (the calibration map's image of
        :func:`acceptance_score` = min(p, p_direct): the probability, estimated on
        training data, that the assignment is correct; NaN without a map).
    pairs_df : pandas.DataFrame
        ``block``, ``mention_a``, ``mention_b`` (mention_a < mention_b), ``p`` =
        P(y_a = y_b | x) (exact whole-block marginals or Gibbs estimates),
        ``p_direct`` = sigmoid(f), ``p_calibrated`` (the pair map's image of
        :func:`pair_score` = (p + p_direct) / 2; NaN without a map), and ``f`` with
        ``pair_factors``.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, a missing column, repeated mention ids, or a mention of
        ``df`` without a row in ``clusters``.

    References
    ----------
    .. [1] Lou, Dechter & Ihler (2017), NIPS, Alg. 1, Theorem 1.
    """
    from coref.gibbs import block_rng

    cluster_of = _check_iv(df, clusters, delta, max_submodel, max_exact, n_samples, n_burn, time_limit,
                           review_threshold)
    conf_rows, pair_frames = [], []
    if len(df) == 0:
        return _empty_conf(), pd.DataFrame({c: pd.Series(dtype=float if c.startswith("p") else object)
                                            for c in PAIR_COLUMNS + (("f",) if pair_factors else ())})
    for block, sub_df in df.groupby(df["block"].astype(str), sort=True):
        sub_df = sub_df.iloc[np.argsort(sub_df["mention_id"].astype(str).to_numpy(), kind="stable")]
        ids = sub_df["mention_id"].astype(str).to_numpy()
        cid = cluster_of.loc[ids].to_numpy()
        labels = np.unique(cid, return_inverse=True)[1].astype(np.int64)
        n = len(ids)
        gen = block_rng(int(rng), block)
        p = np.ones(n)
        lo = np.ones(n)
        hi = np.ones(n)
        meth = np.array(["exact"] * n, dtype=object)
        nsub = np.full(n, n, dtype=np.int64)
        F = model.factor_matrix(model.encode(sub_df)) if n > 1 else np.zeros((1, 1))
        if n == 1:
            P = np.ones((1, 1))
        elif n <= max_exact:
            lp, _ = log_block_probabilities(subproblem(F, np.arange(n)))
            pv = np.exp(lp)
            X = ((np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
            P = (X * pv[:, None]).T @ X
            np.fill_diagonal(P, 1.0)
            alone = pv[1 << np.arange(n)]
            p = lo = hi = _mention_confidence(P, alone, labels)
        else:
            P, alone = gibbs_marginals(F, labels, n_samples=n_samples, n_burn=n_burn,
                                       rng=np.random.default_rng(int(gen.integers(2**62))))
            p = _mention_confidence(P, alone, labels)
            lo = np.full(n, np.nan)
            hi = np.full(n, np.nan)
            meth[:] = "gibbs"
            nsub[:] = 0
            low = np.argsort(p, kind="stable")
            low = low[p[low] < float(review_threshold)][:int(max_submodel)]
            if low.size:
                sp = subproblem(F, np.sort(low), labels)
                how = "exact" if sp.m <= max_exact else "dis"
                rows = _conditional_rows(sp, labels, method=how, delta=float(delta),
                                         time_limit=float(time_limit), memory_mb=float(memory_mb),
                                         gen=gen, encoding=encoding)
                for k, i in enumerate(sp.S):
                    p[i], lo[i], hi[i] = rows[k]
                    meth[i] = how
                    nsub[i] = sp.m
        conf_rows.append(pd.DataFrame({"mention_id": ids, "cluster_id": cid, "p": p, "p_lower": lo,
                                       "p_upper": hi, "method": meth, "n_submodel": nsub,
                                       "p_direct": _direct_confidence(F, labels)}))
        a, b = np.triu_indices(n, 1)
        keep = (P[a, b] >= float(pair_min_p)) | (labels[a] == labels[b])
        pf = pd.DataFrame({"block": block, "mention_a": ids[a[keep]], "mention_b": ids[b[keep]],
                           "p": np.clip(P[a[keep], b[keep]], 0.0, 1.0),
                           "p_direct": 0.5 * (1.0 + np.tanh(0.5 * F[a[keep], b[keep]]))})
        if pair_factors:
            pf["f"] = F[a[keep], b[keep]]
        pair_frames.append(pf)
    conf = pd.concat(conf_rows, ignore_index=True)
    conf["method"] = conf["method"].astype(str)
    pairs = pd.concat(pair_frames, ignore_index=True)
    conf, pairs = with_calibration(conf, pairs, _resolve_calibration(model, calibration))
    cols = list(PAIR_COLUMNS) + (["f"] if pair_factors else [])
    return conf[list(CONFIDENCE_COLUMNS)], pairs[cols]


def with_calibration(confidence_df, pairs_df, calibration):
    """The two outputs of :func:`assignment_confidence` with their ``p_calibrated`` columns
    (re)computed by ``calibration`` (a :class:`ConfidenceCalibration`; None: NaN).

    The mention map takes :func:`acceptance_score`, the pair map :func:`pair_score`. The
    frames are modified in place and returned.
    """
    cal = calibration
    confidence_df["p_calibrated"] = np.nan if cal is None else cal.mention.apply(acceptance_score(confidence_df))
    pairs_df["p_calibrated"] = np.nan if cal is None else cal.pair.apply(pair_score(pairs_df))
    return confidence_df, pairs_df


def _resolve_calibration(model, calibration):
    if calibration is None:
        return None
    if isinstance(calibration, str) and calibration == "model":
        calibration = getattr(model, "calibration_", None)
        if calibration is None:
            return None
    if not isinstance(calibration, ConfidenceCalibration):
        raise TypeError("calibration must be 'model', None or a ConfidenceCalibration; got "
                        f"{type(calibration).__name__}")
    return calibration


def apply_calibration(confidence_df, pairs_df, *, mention_map=None, pair_map=None):
    """Map held-out confidences and pair probabilities through fitted calibration maps.

    Parameters
    ----------
    confidence_df, pairs_df : pandas.DataFrame
        Outputs of :func:`assignment_confidence`.
    mention_map, pair_map : CalibrationMap, optional
        Fitted on training folds only (:func:`fit_calibration`); None leaves a frame as
        it is.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        New frames. ``p`` is mapped; so are ``p_lower`` / ``p_upper`` (the maps are
        monotone, so an interval on the model probability maps to an interval on its
        image; it is a certificate about the model, not about the calibration).
    """
    conf = confidence_df.copy()
    pairs = pairs_df.copy()
    if mention_map is not None:
        for col in ("p", "p_lower", "p_upper"):
            v = np.array(conf[col], dtype=float)
            ok = np.isfinite(v)
            v[ok] = mention_map.apply(v[ok])
            conf[col] = v
    if pair_map is not None and len(pairs):
        pairs["p"] = pair_map.apply(pairs["p"].to_numpy(float))
    return conf, pairs


def _empty_conf():
    return pd.DataFrame({"mention_id": pd.Series(dtype=object), "cluster_id": pd.Series(dtype=object),
                         "p": pd.Series(dtype=float), "p_lower": pd.Series(dtype=float),
                         "p_upper": pd.Series(dtype=float), "method": pd.Series(dtype=object),
                         "n_submodel": pd.Series(dtype=np.int64), "p_direct": pd.Series(dtype=float),
                         "p_calibrated": pd.Series(dtype=float)})


# ----------------------------------------------------------------------- calibration on labeled data

def _map_clusters(model, df, *, sampler, rng):
    """Predicted clustering (annealed Gibbs MAP) of ``df``: mention_id, block, cluster_id."""
    from coref.gibbs import FACTOR_CACHE_MB, GibbsCoref

    g = GibbsCoref(model, sampler=sampler, rng=rng, record_history=False,
                   factor_cache_mb=FACTOR_CACHE_MB).fit(df)
    cl = g.clusters_.rename("cluster_id").reset_index()
    cl["cluster_id"] = cl["cluster_id"].astype(str)
    cl["block"] = df.set_index(df["mention_id"].astype(str)).loc[cl["mention_id"].astype(str), "block"].to_numpy()
    return cl


def fit_confidence_calibration(model, df, *, clusters=None, method="isotonic", sampler="exact", rng=0,
                               folds=0, refit=None, **confidence_kw):
    """Fit the pair and mention calibration maps on labeled (training) mentions.

    The mentions of ``df`` are clustered (annealed Gibbs MAP, unless ``clusters`` is
    given), their confidences computed with :func:`assignment_confidence` (every pair
    within a block), and the maps fitted by :func:`calibration_from_scores`.  Only the
    labels of ``df`` are used: pass the training folds only.

    With ``folds >= 2`` and ``refit`` the scores are cross-fitted: the blocks of ``df``
    are split into ``folds`` groups (``sklearn.model_selection.GroupKFold``), and each
    group is clustered and scored by ``refit(the other groups)``, a model that never
    saw its labels, so that the maps learn the model's confidence on data it was not
    fitted on (in-sample scores are over-confident). Otherwise every mention is
    clustered and scored by ``model`` itself.

    Parameters
    ----------
    model : PairwiseModel
        Fitted (on these or other labeled mentions); unused with cross-fitting.
    df : pandas.DataFrame
        Labeled mentions (``gold``; unlabeled mentions are clustered but not used).
    clusters : pandas.DataFrame, optional
        ``mention_id``, ``block``, ``cluster_id``; default: cluster with ``sampler``.
        Not allowed with cross-fitting (each group is clustered by its own model).
    method : {"isotonic", "temperature"}, default "isotonic"
    sampler : {"exact", "racing"}, default "exact"
    rng : int, default 0
    folds : int, default 0
        Cross-fitting groups (0: none).
    refit : callable, optional
        ``refit(df_train) -> fitted model``; required with ``folds >= 2``.
    **confidence_kw
        Passed to :func:`assignment_confidence` (``pair_min_p`` is forced to 0 and no
        calibration is applied).

    Returns
    -------
    ConfidenceCalibration

    Raises
    ------
    ValueError
        If ``df`` has no ``gold`` column, no labeled pair or mention to fit on, fewer
        blocks than ``folds``, or ``folds`` without ``refit`` (or with ``clusters``).
    """
    if "gold" not in df.columns:
        raise ValueError("fitting a calibration needs labeled mentions: df has no 'gold' column")
    if not (isinstance(folds, numbers.Integral) and not isinstance(folds, bool) and (folds == 0 or folds >= 2)):
        raise ValueError(f"folds must be 0 (no cross-fitting) or an integer >= 2; got {folds!r}")
    if folds and (refit is None or clusters is not None):
        raise ValueError("cross-fitting (folds >= 2) needs refit and takes no clusters")
    kw = {**confidence_kw, "pair_min_p": 0.0, "calibration": None, "rng": rng}
    gold = df.set_index(df["mention_id"].astype(str))["gold"]
    parts = []
    if folds:
        from sklearn.model_selection import GroupKFold

        blocks = df["block"].astype(str).to_numpy()
        if len(np.unique(blocks)) < folds:
            raise ValueError(f"cross-fitting in {folds} folds needs at least {folds} blocks; "
                             f"df has {len(np.unique(blocks))}")
        for tr, te in GroupKFold(n_splits=int(folds)).split(np.zeros(len(df)), groups=blocks):
            parts.append((refit(df.iloc[tr].reset_index(drop=True)), df.iloc[te].reset_index(drop=True), None))
        source = f"training mentions, cross-fitted: each of {int(folds)} block groups clustered and scored by a " \
                 "model fitted on the others"
    else:
        parts.append((model, df, clusters))
        source = "training mentions clustered and scored by the model"
    from coref.inference import encode_blocks

    scored = []
    for m, part, cl in parts:
        m = encode_blocks(m, part)     # each block encoded once for its clustering and confidences
        if cl is None:
            cl = _map_clusters(m, part, sampler=sampler, rng=rng)
        cl = cl[["mention_id", "block", "cluster_id"]]
        conf, pairs = assignment_confidence(m, part.drop(columns=["gold"]), cl, **kw)
        scored.append((conf, pairs, cl))
    conf, pairs, cl = (pd.concat([x[i] for x in scored], ignore_index=True) for i in range(3))
    info = {"source": source, "n_blocks": int(df["block"].nunique()),
            "n_samples": int(kw.get("n_samples", DEFAULT_N_SAMPLES)), "n_burn": int(kw.get("n_burn", DEFAULT_N_BURN))}
    return calibration_from_scores(conf, pairs, cl, gold, method=method, info=info)


def calibration_from_scores(confidence_df, pairs_df, clusters, gold, *, method="isotonic", info=None):
    """Fit the two calibration maps on scored, labeled mentions.

    The pair map (:func:`fit_calibration`) takes :func:`pair_score` ((p + sigmoid(f)) / 2)
    to 1{gold_a = gold_b}; the mention map takes :func:`acceptance_score`
    (min(p, p_direct)) to correctness (the mention's gold author is the majority gold
    author of its predicted cluster, :func:`coref._calibration.mention_correct`).

    Parameters
    ----------
    confidence_df, pairs_df : pandas.DataFrame
        From :func:`assignment_confidence` with ``pair_min_p=0``.
    clusters : pandas.DataFrame
        ``mention_id``, ``cluster_id`` of the clustering they score.
    gold : pandas.Series
        Gold author per mention_id (NA: unlabeled, left out).
    method : {"isotonic", "temperature"}, default "isotonic"
    info : dict, optional
        Copied into the result's ``info`` (with ``method``, ``n_pairs``, ``n_mentions``).

    Returns
    -------
    ConfidenceCalibration

    Raises
    ------
    ValueError
        If there is no labeled pair within a block or no labeled mention.
    """
    g = gold.copy()
    g.index = g.index.astype(str)
    ok, y = _pair_labels_for(pairs_df, g)
    if not ok.any():
        raise ValueError("no labeled pair within a block to fit the pair calibration on")
    correct = mention_correct(clusters, g)
    if correct.empty:
        raise ValueError("no labeled mention to fit the mention calibration on")
    score = pd.Series(acceptance_score(confidence_df), index=confidence_df["mention_id"].astype(str).to_numpy())
    cp = score.reindex(correct.index).to_numpy(float)
    pair_map = fit_calibration(pair_score(pairs_df)[ok], y, method=method)
    mention_map = fit_calibration(cp, correct.to_numpy(float), method=method)
    meta = {"method": method, "n_pairs": int(ok.sum()), "n_mentions": int(len(correct)), **(info or {})}
    return ConfidenceCalibration(pair_map, mention_map, meta)


def _pair_labels_for(pairs, gold):
    from coref._calibration import _pair_labels

    return _pair_labels(pairs, gold)


def confidence_figures(confidence_df, pairs_df, gold, clusters=None, *, threshold=0.95, n_bins=10):
    """Held-out calibration and usefulness figures of :func:`assignment_confidence` outputs.

    Parameters
    ----------
    confidence_df, pairs_df : pandas.DataFrame
        From :func:`assignment_confidence` with ``pair_min_p=0`` (every pair within a
        block) and ``pair_factors=True`` (for the sigmoid(f) baseline).
    gold : pandas.Series
        Gold author per mention_id (NA = unlabeled, left out).
    clusters : pandas.DataFrame, optional
        ``mention_id``, ``cluster_id`` of the prediction (default: from
        ``confidence_df``).
    threshold : float, default 0.95
        Confidence level of the coverage / correctness figures.
    n_bins : int, default 10
        Equal-width bins of the ECE.

    Returns
    -------
    dict
        ``n_pairs``, ``positive_rate``; ``ece`` / ``brier`` (raw p), ``ece_calibrated``
        / ``brier_calibrated`` (``p_calibrated``; NaN without a map), ``ece_sigmoid_f``
        / ``brier_sigmoid_f`` (NaN without ``f``); ``n_mentions``, ``accuracy``,
        ``coverage`` / ``correct`` (share of labeled mentions with p >= threshold and
        the share of them that are correct), the same with ``_calibrated``; and
        ``reliability``: per bin ``n``, ``mean_p``, ``freq`` for raw, calibrated and
        sigmoid(f).
    """
    g = gold.copy()
    g.index = g.index.astype(str)
    ok, y = _pair_labels_for(pairs_df, g)
    out = {"threshold": float(threshold), "n_pairs": int(ok.sum())}
    nan = float("nan")
    if ok.any():
        p = pairs_df["p"].to_numpy(float)[ok]
        out["positive_rate"] = float(y.mean())
        out["ece"], out["brier"] = ece_score(p, y, n_bins), brier_score(p, y)
        pc = pairs_df["p_calibrated"].to_numpy(float)[ok] if "p_calibrated" in pairs_df else np.full(p.shape, nan)
        has_cal = bool(np.isfinite(pc).all())
        out["ece_calibrated"] = ece_score(pc, y, n_bins) if has_cal else nan
        out["brier_calibrated"] = brier_score(pc, y) if has_cal else nan
        rel = {"raw": reliability_table(p, y, n_bins)}
        if has_cal:
            rel["calibrated"] = reliability_table(pc, y, n_bins)
        if "f" in pairs_df.columns:
            q = 1.0 / (1.0 + np.exp(-pairs_df["f"].to_numpy(float)[ok]))
            out["ece_sigmoid_f"], out["brier_sigmoid_f"] = ece_score(q, y, n_bins), brier_score(q, y)
            rel["sigmoid_f"] = reliability_table(q, y, n_bins)
        else:
            out["ece_sigmoid_f"] = out["brier_sigmoid_f"] = nan
        out["reliability"] = {k: {c: [None if not np.isfinite(v) else float(v) for v in t[c]]
                                  for c in ("n", "mean_p", "freq")} for k, t in rel.items()}
    cl = confidence_df[["mention_id", "cluster_id"]] if clusters is None else clusters
    correct = mention_correct(cl, g)
    c = confidence_df.set_index(confidence_df["mention_id"].astype(str))
    out["n_mentions"] = int(len(correct))
    if len(correct):
        out["accuracy"] = float(correct.mean())
        for col, suffix in (("p", ""), ("p_calibrated", "_calibrated")):
            v = c[col].reindex(correct.index).to_numpy(float) if col in c else np.full(len(correct), nan)
            if not np.isfinite(v).all():
                out["coverage" + suffix] = out["correct" + suffix] = nan
                continue
            hi = v >= float(threshold)
            out["coverage" + suffix] = float(hi.mean())
            out["correct" + suffix] = float(correct.to_numpy()[hi].mean()) if hi.any() else nan
            out["n_confident" + suffix] = int(hi.sum())
    return out
