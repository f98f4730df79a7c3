"""Confidence of coreference assignments: posterior marginals and certified intervals.

For a predicted clustering of the mentions of a block, the *confidence* of mention i
is the posterior probability that it belongs with its predicted cluster C(i)::

    conf(i) = mean_{j in C(i), j != i} P(y_i = y_j | x)      if C(i) has other members,
    conf(i) = P(i is a cluster of its own | x)                if C(i) = {i},

under p(y | x) proportional to exp(sum_{i < j, y_i = y_j} f(x_i, x_j)) (Chen &
Ghahramani 2016, Sec. 5.3).  It is computed in one of three ways, or not at all (column ``method``):

``exact``
    The whole block (at most ``max_exact`` mentions) is one sub-model whose set
    partitions are summed exactly (:func:`coref.confidence.exact.exact_log_z`): the true
    marginals; or a sub-model S of at most ``max_exact`` mentions conditioned on the
    rest of the block's predicted assignment (then the probabilities are conditional
    on y_R; every row says which sub-model it came from by ``n_submodel``).
``dis``
    A sub-model S of up to ``max_submodel`` mentions, conditioned on the rest, written
    as a graphical model (:func:`coref.confidence.submodels.submodel`); the ratios
    P(A | y_R) = Z_A / Z of all its events are certified together by
    :func:`sampling.bounds.event_probabilities` (:mod:`coref.confidence.events`): one
    stream of weighted mini-bucket importance samples (Lou, Dechter & Ihler 2017, Eq.
    7-8; DIS without its search tree) and the empirical Bernstein bound of their
    Theorem 1 inverted for each ratio, every one-sided test at delta / (2 (n_events + 1)),
    so that all the intervals of the sub-model hold jointly with probability at least
    1 - delta (union bound).
``gibbs``
    Mentions beyond the sub-models: Monte Carlo estimates from ``n_samples`` sweeps of
    single-site Gibbs at temperature 1 started from the predicted clustering after
    ``n_burn`` sweeps (:func:`coref.confidence.marginals.gibbs_marginals`).  They are Rao-Blackwellised:
    each kept sweep contributes the exact conditional P(y_i = cluster of j | y_{-i})
    rather than the indicator 1{y_i = y_j}, which has lower variance and gives every
    pair a non-zero probability.  No certified interval (``p_lower`` / ``p_upper``
    NaN).
``none``
    The mentions of a block of more than ``max_block`` mentions (:data:`DEFAULT_MAX_BLOCK`):
    the dense n x n matrices above do not fit, so they get no probability (NaN) and no
    pair rows; their clusters are reported as given.

Cluster-level moves (``n_moves``): the sampled chain can add split-merge proposals
(:mod:`coref.confidence.moves`, exact Metropolis-Hastings at temperature 1) so that it can
leave the MAP's mode by whole clusters.  The reported clustering (``point_estimate``):
the MAP as given, or repaired where the block's pair marginals contradict it
(:mod:`coref.confidence.consensus`), so that clusters and pair probabilities come from
one posterior.  ``confidence``: the mention model's probability that the assignment is
right (:mod:`coref.confidence.features`, :class:`coref.calibration.LogisticMap`), or the
older mention map below for a model saved without one.

Calibration (column ``p_calibrated`` of both outputs): for pairs, the image of
(p + sigmoid(f)) / 2 (:func:`coref.confidence.scores.pair_score`) under a monotone map;
for mentions, the image of min(p, p_direct) (``p_direct`` = mean sigmoid(f) to the other
members of the predicted cluster, :func:`coref.confidence.scores.acceptance_score`),
mapped to the frequency with which such an assignment is correct; each a monotone map
(isotonic or one temperature, :class:`coref.calibration.ConfidenceCalibration`) fitted on
labeled TRAINING mentions clustered and scored by the same model
(:func:`coref.confidence.fit.fit_confidence_calibration`; ``coref fit`` saves it with the model, ``coref
predict --confidence`` applies it, ``coref run`` fits one per fold on the training folds
only and scores it on the held-out fold).  NaN when the model carries no map.  The
interval ends are not mapped: they certify the model's probability ``p``.

Guarantee of ``dis`` rows: a mention's value is a weighted mean of the probabilities
of its events, and its interval the same mean of their interval ends, so all the rows
of one sub-model hold jointly with probability at least 1 - delta (a statement per
sub-model, not simultaneous over sub-models).

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

import numbers

import numpy as np
import pandas as pd

from coref.calibration import ConfidenceCalibration
from coref.confidence.certify import CERTIFY_MAX_SUBMODEL, Certify
from coref.confidence.events import conditional_rows
from coref.confidence.features import mention_features
from coref.confidence.exact import DEFAULT_MAX_EXACT, MAX_EXACT_SUBSET, log_block_probabilities
from coref.confidence.consensus import binder_point_estimate, consensus_ids
from coref.confidence.marginals import competing_clusters, direct_confidence, gibbs_marginals, mention_confidence
from coref.confidence.scores import acceptance_score, pair_score
from coref.confidence.structure import STRUCTURE_FEATURES, cluster_structure, empty_structure
from coref.confidence.submodels import subproblem
from coref.gibbs import block_rng

__all__ = ["assignment_confidence", "with_calibration", "apply_calibration", "CONFIDENCE_COLUMNS", "PAIR_COLUMNS",
           "DEFAULT_MAX_SUBMODEL", "DEFAULT_N_SAMPLES", "DEFAULT_N_BURN", "DEFAULT_CERTIFY_SECONDS",
           "CERTIFY_MAX_SUBMODEL", "DEFAULT_N_MOVES", "POINT_ESTIMATES", "DEFAULT_MAX_BLOCK"]


CONFIDENCE_COLUMNS = ("mention_id", "block", "cluster_id", "p", "p_lower", "p_upper", "method", "n_submodel",
                      "p_direct", "competing_cluster", "p_competing", "p_calibrated", "confidence")
PAIR_COLUMNS = ("block", "mention_a", "mention_b", "p", "p_direct", "p_calibrated")

#: default largest sub-model (see benchmarks/bench_coref_confidence.py).  Below
#: DEFAULT_MAX_EXACT, so by default every sub-model is summed exactly and DIS is opt-in.
#: Measured on the shipped data (7,026 mentions, shipped model, racing MAP clusters, one
#: loaded 2-core machine): the confidence step took 6.3 s with sampled marginals only,
#: 12.0 s with exact sub-models of <= 8 mentions (621 rows) and 166 s with <= 12 (807
#: rows; O(K 3^m) per event), for the same coverage (79.6%) and correctness (97.7%) at
#: confidence >= 0.95.  On 12-20-mention sub-models DIS intervals had a median width of
#: 0.92 at 2 s per partition function and 0.034 at 10 s (90th percentile 0.98), when a
#: DIS sub-model of m mentions needed about m + 1 runs (now one sample stream for all its
#: events, :func:`coref.confidence.events.certify_events`).  Raise ``max_submodel`` (and
#: ``max_exact`` <= 12) for bigger exact sub-models, or to 16-20 with ``time_limit=10``
#: for certified DIS intervals.
DEFAULT_MAX_SUBMODEL = 8
#: default largest block whose confidences are computed: its dense n x n factor and pair-probability
#: matrices, their pair rows and the cluster-structure features take about 48 n^2 bytes (0.8 GB at
#: 4,096 mentions; 480 GB at 100,000).  The mentions of a larger block get no confidence (method
#: ``none``, NaN probabilities, no pair rows), counted in ``confidence_df.attrs["unscored"]``.
DEFAULT_MAX_BLOCK = 4096
#: Blocks are assembled from a run's per-mention encodings in batches of about this many
#: mentions (one batched components call per batch; memory bounded by one batch)
PREFETCH_MENTIONS = 20_000
#: default Gibbs sweeps kept / discarded for the sampled marginals (Rao-Blackwellised,
#: see :func:`coref.confidence.marginals.gibbs_marginals` and benchmarks/bench_coref_confidence.py)
DEFAULT_N_SAMPLES = 20
DEFAULT_N_BURN = 10
#: default split-merge proposals after each sweep of the sampled marginals
#: (:func:`coref.confidence.moves.split_merge_moves`): off.  Measured (model fitted on
#: aminer_na, dev names): with 20 per sweep the chain leaves the MAP for the model's own
#: temperature-1 mode, which merges more (6,679 pairs with P > 0.99 split by the MAP, against
#: 268 without), the confidence step takes 2.5x longer, the mention calibration is no
#: better (10% least confident hold 0.28 of the wrong ones either way) and the repaired
#: clustering loses B3 F1 (0.8735 with 5 moves, 0.8801 without, MAP 0.8851).
DEFAULT_N_MOVES = 0
#: the clusterings :func:`assignment_confidence` can report: the given (MAP) one, the MAP
#: repaired where the posterior contradicts it, or the Binder-loss point estimate of the
#: posterior started from it (:func:`coref.confidence.consensus.binder_point_estimate`)
POINT_ESTIMATES = ("map", "repair", "binder")
#: ``point_estimate="repair"``: the posterior pair probabilities below / above which a
#: joined / split pair of the MAP is a contradiction to repair
REPAIR_CONFLICTS = (0.01, 0.99)
#: Suggested ``certify_seconds`` for ``coref predict --confidence`` (the function's own
#: default is 0: off, so that library calls stay deterministic).  Measured on the 3,176 dev
#: mentions (shipped model, one loaded 2-core machine; ``coref predict`` takes 5-7 s there):
#: 10 s certified 13 rows in one DIS sub-model of 13 mentions, interval widths median 0.105,
#: max 0.120 (10.5 s used); 5 s certified the same rows with widths of 0.97 (uninformative).
#: With one sample stream per sub-model (2026-11-26, load ~9 on 2 cores) the default budget
#: (then twice the clustering time, 6.8-8.9 s) certified 16 rows of one 16-mention sub-model in
#: 6.3 s, widths median 0.026, max 0.041.
DEFAULT_CERTIFY_SECONDS = 10.0


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


def assignment_confidence(model, df, clusters, *, delta=0.05, max_submodel=DEFAULT_MAX_SUBMODEL,
                          max_exact=DEFAULT_MAX_EXACT, n_samples=DEFAULT_N_SAMPLES, n_burn=DEFAULT_N_BURN,
                          time_limit=10.0, memory_mb=256, review_threshold=0.95, rng=0, encoding="leader",
                          pair_min_p=0.01, calibration="model", pair_factors=False, certify_seconds=0.0,
                          encodings=None, n_moves=DEFAULT_N_MOVES, point_estimate="map", keep_features=False,
                          max_block=None):
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
        The intervals of the ``dis`` rows of one sub-model hold jointly with probability
        >= 1 - delta.
    max_submodel : int, default :data:`DEFAULT_MAX_SUBMODEL`
        Largest sub-model bounded by DIS; larger sets are cut to the least confident.
    max_exact : int, default :data:`DEFAULT_MAX_EXACT`
        Largest sub-model (or whole block) summed exactly.
    n_samples, n_burn : int, default :data:`DEFAULT_N_SAMPLES` and :data:`DEFAULT_N_BURN`
        Gibbs sweeps at temperature 1 kept / discarded, per block above ``max_exact``
        (Rao-Blackwellised estimates, :func:`coref.confidence.marginals.gibbs_marginals`).
    time_limit : float, default 10
        Budget of one ``dis`` sub-model (wall-clock seconds, one sample stream for Z and
        all its events).
    memory_mb : float, default 256
        Weighted mini-bucket memory budget of a ``dis`` sub-model.
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
        the sigmoid(f) baseline of :func:`coref.confidence.figures.confidence_figures`.
    certify_seconds : float >= 0, default 0
        Wall-clock budget of a certification pass (0 = off; :data:`DEFAULT_CERTIFY_SECONDS`
        is the suggested value for the command line).  In each block above ``max_exact``,
        after the sub-model above, if its least confident ``gibbs`` row is below
        ``review_threshold``, the next least confident ``gibbs`` rows (at most
        :data:`CERTIFY_MAX_SUBMODEL`) form a second sub-model,
        conditioned on the rest; when it has more than ``max_exact`` mentions (too large to
        sum exactly) its rows get DIS intervals (method ``dis``) within
        min(``time_limit``, remaining budget), stopping once its intervals are narrow
        (:data:`coref.confidence.events.CERTIFY_TARGET_WIDTH`); a smaller one is skipped (the
        budget goes to what only DIS can bound). Blocks are visited in name order until the budget is spent; a DIS
        sub-model is skipped when less than 1.5 times what the previous one took is
        left.  The result is in ``confidence_df.attrs["certify"]``: ``seconds``
        (budget), ``used_seconds``, ``n_submodels``, ``n_certified`` (rows given a DIS
        interval by the pass), ``width_median`` and ``width_max`` of their intervals (NaN
        when none).
    encodings : coref.encoding.EncodingCache, optional
        Blocks of ``df`` already encoded (e.g. by the run that clustered them); a block
        it holds or can assemble is not encoded again.
    n_moves : int >= 0, default :data:`DEFAULT_N_MOVES`
        Split-merge proposals after each Gibbs sweep of a sampled block
        (:func:`coref.confidence.moves.split_merge_moves`, exact Metropolis-Hastings at
        temperature 1), so that the chain can leave the MAP's mode by whole clusters.
    point_estimate : {"map", "repair", "binder"}, default "map"
        The clustering the rows describe (``cluster_id``): ``"map"`` the given one;
        ``"repair"`` the given one where the block's pair marginals contradict it (a pair
        with P > 0.99 split or P < 0.01 joined, :data:`REPAIR_CONFLICTS`) moved by
        Binder-loss descent (:func:`coref.confidence.consensus.binder_point_estimate`
        with ``conflicts``); ``"binder"`` the Binder-loss descent over every mention.
        The pair marginals are computed first (from the given clustering), the
        sub-model rows after, conditioned on the reported clustering.
    keep_features : bool, default False
        Keep the columns :data:`coref.confidence.structure.STRUCTURE_FEATURES` (the
        mention's fit to its cluster, inputs of the mention model) after the others.
    max_block : int >= 1 or None, default None
        Largest block whose confidences are computed (memory grows as n^2; None:
        :data:`DEFAULT_MAX_BLOCK`).  The mentions of a larger block keep their predicted
        cluster and get method ``none``, NaN probabilities and no pair rows;
        ``confidence_df.attrs["unscored"]`` counts them (``max_block``, ``n_blocks``,
        ``n_mentions``).

    Returns
    -------
    confidence_df : pandas.DataFrame
        ``mention_id``, ``block``, ``cluster_id`` (the reported clustering, see
        ``point_estimate``), ``p`` (conf(i), module docstring), ``p_lower``,
        ``p_upper`` (NaN for ``gibbs`` rows), ``method`` (exact | dis | gibbs | none),
        ``n_submodel`` (mentions of the sub-model the row came from; 0 for gibbs),
        ``p_direct`` (mean sigmoid(f) to the other members of the predicted cluster; 1
        for a singleton), ``p_calibrated`` (the calibration map's image of
        :func:`coref.confidence.scores.acceptance_score` = min(p, p_direct): the probability, estimated on
        training data, that the assignment is correct; NaN without a map; with a mention
        model: its probability on :func:`coref.confidence.features.mention_features`),
        ``competing_cluster`` / ``p_competing`` (the most probable other place of the
        mention and its support, :func:`coref.confidence.marginals.competing_clusters`;
        empty id = a cluster of its own), ``confidence`` (``p_calibrated``, or ``p``
        without calibration: the column to act on).
    pairs_df : pandas.DataFrame
        ``block``, ``mention_a``, ``mention_b`` (mention_a < mention_b), ``p`` =
        P(y_a = y_b | x) (exact whole-block marginals or Gibbs estimates),
        ``p_direct`` = sigmoid(f), ``p_calibrated`` (the pair map's image of
        :func:`coref.confidence.scores.pair_score` = (p + p_direct) / 2; NaN without a map), and ``f`` with
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
    cluster_of = _check_iv(df, clusters, delta, max_submodel, max_exact, n_samples, n_burn, time_limit,
                           review_threshold)
    if isinstance(certify_seconds, bool) or not (isinstance(certify_seconds, numbers.Real)
                                                 and 0.0 <= float(certify_seconds) < float("inf")):
        raise ValueError(f"the certify_seconds parameter must be a finite number >= 0; got {certify_seconds!r}")
    if isinstance(n_moves, bool) or not isinstance(n_moves, numbers.Integral) or n_moves < 0:
        raise ValueError(f"the n_moves parameter must be an int >= 0; got {n_moves!r}")
    if point_estimate not in POINT_ESTIMATES:
        raise ValueError(f"the point_estimate parameter must be one of {POINT_ESTIMATES}; got {point_estimate!r}")
    if max_block is None:
        max_block = DEFAULT_MAX_BLOCK
    if isinstance(max_block, bool) or not isinstance(max_block, numbers.Integral) or max_block < 1:
        raise ValueError(f"the max_block parameter must be an int >= 1; got {max_block!r}")
    unscored = {"max_block": int(max_block), "n_blocks": 0, "n_mentions": 0}
    cert = Certify(float(certify_seconds))
    conf_rows, pair_frames = [], []
    if len(df) == 0:
        return _empty_conf(keep_features), _empty_pairs(pair_factors)
    groups = [(b, g.iloc[np.argsort(g["mention_id"].astype(str).to_numpy(), kind="stable")])
              for b, g in df.groupby(df["block"].astype(str), sort=True)]
    batch_end, fetched = 0, []
    for k, (block, sub_df) in enumerate(groups):
        if encodings is not None and k >= batch_end:   # assemble the next blocks in one batch
            encodings.drop(fetched)
            batch_end, size = k, 0
            while batch_end < len(groups) and (batch_end == k or size < PREFETCH_MENTIONS):
                size += len(groups[batch_end][1])
                batch_end += 1
            fetched = encodings.prefetch([g for _, g in groups[k:batch_end] if 1 < len(g) <= max_block])
        ids = sub_df["mention_id"].astype(str).to_numpy()
        cid = cluster_of.loc[ids].to_numpy()
        if len(ids) > max_block:             # too large for the dense matrices: no confidence
            conf_rows.append(_unscored_rows(block, ids, cid))
            unscored["n_blocks"] += 1
            unscored["n_mentions"] += len(ids)
            continue
        labels = np.unique(cid, return_inverse=True)[1].astype(np.int64)
        n = len(ids)
        gen = block_rng(int(rng), block)
        p = np.ones(n)
        lo = np.ones(n)
        hi = np.ones(n)
        meth = np.array(["exact"] * n, dtype=object)
        nsub = np.full(n, n, dtype=np.int64)
        enc = None if n <= 1 else (model.encode(sub_df) if encodings is None else encodings.encode(sub_df))
        F = model.factor_matrix(enc) if n > 1 else np.zeros((1, 1))
        if n == 1:
            P, alone = np.ones((1, 1)), np.ones(1)
        elif n <= max_exact:
            lp, _ = log_block_probabilities(subproblem(F, np.arange(n)))
            pv = np.exp(lp)
            X = ((np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1).astype(float)
            P = (X * pv[:, None]).T @ X
            np.fill_diagonal(P, 1.0)
            alone = pv[1 << np.arange(n)]
        else:
            P, alone = gibbs_marginals(F, labels, n_samples=n_samples, n_burn=n_burn, n_moves=int(n_moves),
                                       rng=np.random.default_rng(int(gen.integers(2**62))))
        if point_estimate != "map" and n > 1:
            labels = binder_point_estimate(P, labels, conflicts=REPAIR_CONFLICTS if point_estimate == "repair" else None)
            cid = consensus_ids(block, cid, labels)
        p = mention_confidence(P, alone, labels)
        if 1 < n <= max_exact:
            lo, hi = p.copy(), p.copy()
        elif n > max_exact:
            lo = np.full(n, np.nan)
            hi = np.full(n, np.nan)
            meth[:] = "gibbs"
            nsub[:] = 0
            low = np.argsort(p, kind="stable")
            low = low[p[low] < float(review_threshold)][:int(max_submodel)]
            if low.size:
                sp = subproblem(F, np.sort(low), labels)
                how = "exact" if sp.m <= max_exact else "dis"
                rows = conditional_rows(sp, labels, method=how, delta=float(delta),
                                         time_limit=float(time_limit), memory_mb=float(memory_mb),
                                         gen=gen, encoding=encoding)
                for k, i in enumerate(sp.S):
                    p[i], lo[i], hi[i] = rows[k]
                    meth[i] = how
                    nsub[i] = sp.m
            cert.run(F, labels, p, lo, hi, meth, nsub, review_threshold=float(review_threshold),
                     max_exact=int(max_exact), delta=float(delta), time_limit=float(time_limit),
                     memory_mb=float(memory_mb), gen=gen, encoding=encoding)
        comp, p_comp = competing_clusters(P, alone, labels)
        comp_id = np.where(comp >= 0, cid[np.maximum(comp, 0)] if n else comp, "")
        conf_rows.append({"mention_id": ids, "block": block, "cluster_id": cid, "p": p, "p_lower": lo,
                          "p_upper": hi, "method": meth, "n_submodel": nsub,
                          "p_direct": direct_confidence(F, labels), "competing_cluster": comp_id,
                          "p_competing": p_comp, **cluster_structure(enc, F, P, labels)})
        a, b = np.triu_indices(n, 1)
        keep = (P[a, b] >= float(pair_min_p)) | (labels[a] == labels[b])
        pf = {"block": block, "mention_a": ids[a[keep]], "mention_b": ids[b[keep]],
              "p": np.clip(P[a[keep], b[keep]], 0.0, 1.0),
              "p_direct": 0.5 * (1.0 + np.tanh(0.5 * F[a[keep], b[keep]]))}
        if pair_factors:
            pf["f"] = F[a[keep], b[keep]]
        pair_frames.append(pf)
    if encodings is not None:
        encodings.drop(fetched)
    # one DataFrame per table, not one per block (each construction converts its str columns)
    conf = _frame(conf_rows)
    conf["method"] = conf["method"].astype(str)
    pairs = _frame(pair_frames) if pair_frames else _empty_pairs(pair_factors)
    conf, pairs = with_calibration(conf, pairs, _resolve_calibration(model, calibration))
    cols = list(PAIR_COLUMNS) + (["f"] if pair_factors else [])
    conf = conf[list(CONFIDENCE_COLUMNS) + (list(STRUCTURE_FEATURES) if keep_features else [])].copy()
    conf.attrs["certify"] = cert.summary()
    conf.attrs["unscored"] = unscored
    return conf, pairs[cols]


def with_calibration(confidence_df, pairs_df, calibration):
    """The two outputs of :func:`assignment_confidence` with their ``p_calibrated`` (and ``confidence``)
    columns (re)computed by ``calibration`` (a :class:`coref.calibration.ConfidenceCalibration`; None: NaN).

    Mentions: with a mention model (``calibration.mention_model``, a
    :class:`coref.calibration.LogisticMap`) its probability on
    :func:`coref.confidence.features.mention_features`; otherwise the mention map's image of
    :func:`coref.confidence.scores.acceptance_score`.  ``confidence`` is ``p_calibrated``, or ``p``
    where there is no calibration.  Pairs: the pair map's image of
    :func:`coref.confidence.scores.pair_score`.  The frames are modified in place and returned.
    """
    cal = calibration
    if cal is None:
        confidence_df["p_calibrated"] = np.nan
    elif cal.mention_model is not None:
        X = mention_features(confidence_df)
        miss = [c for c in cal.mention_model.features if c not in X.columns]
        if miss:
            raise ValueError(f"the model's mention calibration reads {miss}, which this confidence frame lacks "
                             "(compute it with assignment_confidence(..., keep_features=True))")
        confidence_df["p_calibrated"] = cal.mention_model.apply(X) if len(confidence_df) else np.zeros(0)
    else:
        confidence_df["p_calibrated"] = cal.mention.apply(acceptance_score(confidence_df))
    confidence_df["confidence"] = confidence_df["p_calibrated"].where(confidence_df["p_calibrated"].notna(),
                                                                      confidence_df["p"])
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
        Fitted on training folds only (:func:`coref.calibration.fit_calibration`); None leaves a frame as
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


def _empty_pairs(pair_factors=False):
    return pd.DataFrame({c: pd.Series(dtype=float if c.startswith("p") else object)
                         for c in PAIR_COLUMNS + (("f",) if pair_factors else ())})


def _unscored_rows(block, ids, cid):
    """The confidence rows of a block above ``max_block``: its clusters as given, method ``none``, no probability."""
    n = len(ids)
    nan = np.full(n, np.nan)
    return {"mention_id": ids, "block": block, "cluster_id": cid, "p": nan, "p_lower": nan,
            "p_upper": nan, "method": "none", "n_submodel": np.zeros(n, np.int64), "p_direct": nan,
            "competing_cluster": "", "p_competing": nan, **empty_structure(n)}


def _frame(parts):
    """One DataFrame of the per-block row dicts ``parts`` (columns: the first one's; a str value
    is the whole block's), as ``pd.concat`` of a DataFrame per part gives it."""
    n = [max((len(v) for v in d.values() if isinstance(v, np.ndarray)), default=0) for d in parts]
    cols = {}
    for c in parts[0]:
        cols[c] = np.concatenate([np.full(k, d[c], dtype=object) if isinstance(d[c], str) else np.asarray(d[c])
                                  for d, k in zip(parts, n)])
    return pd.DataFrame(cols)


def _empty_conf(keep_features=False):
    return pd.DataFrame({c: pd.Series(dtype=np.int64 if c == "n_submodel" else float if c.startswith("p")
                                      or c == "confidence" or c in STRUCTURE_FEATURES else object)
                         for c in CONFIDENCE_COLUMNS + (STRUCTURE_FEATURES if keep_features else ())})
