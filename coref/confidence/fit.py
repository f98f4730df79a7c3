"""Fitting a model's confidence calibration maps on labeled (training) mentions.

The mentions are clustered (annealed Gibbs MAP), scored by
:func:`coref.confidence.assignment.assignment_confidence`, and the pair and mention
maps (:class:`coref.calibration.ConfidenceCalibration`) fitted on the scores against
the gold labels, optionally cross-fitted over block groups so that the maps learn the
model's confidence on data it was not fitted on.
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from coref.calibration import ConfidenceCalibration, fit_calibration, fit_logistic
from coref.confidence.assignment import DEFAULT_N_BURN, DEFAULT_N_SAMPLES, assignment_confidence
from coref.confidence.features import mention_features
from coref.confidence.scores import acceptance_score, mention_correct, pair_labels, pair_score
from coref.gibbs import FACTOR_CACHE_MB, GibbsCoref
from coref.inference import encode_blocks

__all__ = ["fit_confidence_calibration", "scored_training_mentions", "calibration_from_scores", "map_clusters",
           "subsampled_blocks", "DEFAULT_SUBSAMPLE_SIZES", "MENTION_MODEL_C"]

#: inverse L2 strength of the mention model (:func:`coref.calibration.fit_logistic`).  Measured
#: by grouped 5-fold CV over aminer_na + aminer_dblp_dev (cross-fitted training scores of each
#: fold, its held-out fold scored): C = 0.1 / 0.3 / 1 gave ECE 0.016 / 0.017 / 0.018, review
#: queue 0.61 / 0.61 / 0.60, coverage of confidence >= 0.95 0.82 / 0.83 / 0.84 at accuracy 0.979
#: each.  A monotone (isotonic) map of its output per block-size band (<= 10, 11-50, 51-150,
#: > 150 mentions) was no better (ECE 0.023; one isotonic map for all: 0.023).
MENTION_MODEL_C = 0.1
#: sizes of the random sub-blocks added to each held-out group (:func:`subsampled_blocks`)
DEFAULT_SUBSAMPLE_SIZES = (2, 3, 5, 8, 13, 21, 34)


def map_clusters(model, df, *, sampler, rng, encodings=None):
    """Predicted clustering (annealed Gibbs MAP) of ``df``: mention_id, block, cluster_id.

    ``encodings``: a :class:`coref.encoding.EncodingCache` of ``df``'s blocks, if made already.
    """
    g = GibbsCoref(model, sampler=sampler, rng=rng, record_history=False,
                   factor_cache_mb=FACTOR_CACHE_MB).fit(df, encodings=encodings)
    cl = g.clusters_.rename("cluster_id").reset_index()
    cl["cluster_id"] = cl["cluster_id"].astype(str)
    cl["block"] = df.set_index(df["mention_id"].astype(str)).loc[cl["mention_id"].astype(str), "block"].to_numpy()
    return cl


def fit_confidence_calibration(model, df, *, clusters=None, method="isotonic", sampler="exact", rng=0,
                               folds=0, refit=None, subsample_sizes=DEFAULT_SUBSAMPLE_SIZES, **confidence_kw):
    """Fit the pair and mention calibration maps on labeled (training) mentions.

    The mentions of ``df`` are clustered (annealed Gibbs MAP, unless ``clusters`` is
    given), their confidences computed with
    :func:`coref.confidence.assignment.assignment_confidence` (every pair
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
    subsample_sizes : sequence of int, default :data:`DEFAULT_SUBSAMPLE_SIZES`
        With cross-fitting: each held-out group is scored together with random sub-blocks
        of its blocks of these sizes (:func:`subsampled_blocks`), so that the mention
        model sees how the model errs in small blocks too (empty: none).
    **confidence_kw
        Passed to :func:`coref.confidence.assignment.assignment_confidence` (``pair_min_p``
        is forced to 0 and no calibration is applied).

    Returns
    -------
    ConfidenceCalibration
        The pair and mention maps; ``info`` names the source of the scores (in-sample
        or cross-fitted), the number of blocks and the Gibbs sweeps of the marginals.

    Raises
    ------
    ValueError
        If ``df`` has no ``gold`` column, no labeled pair or mention to fit on, fewer
        blocks than ``folds``, or ``folds`` without ``refit`` (or with ``clusters``).
    """
    conf, pairs, cl, gold, info = scored_training_mentions(model, df, clusters=clusters, sampler=sampler, rng=rng,
                                                           folds=folds, refit=refit, subsample_sizes=subsample_sizes,
                                                           **confidence_kw)
    return calibration_from_scores(conf, pairs, cl, gold, method=method, info=info)


def scored_training_mentions(model, df, *, clusters=None, sampler="exact", rng=0, folds=0, refit=None,
                             subsample_sizes=DEFAULT_SUBSAMPLE_SIZES, **confidence_kw):
    """The scores :func:`fit_confidence_calibration` fits its maps on (same parameters and errors).

    Returns
    -------
    (confidence_df, pairs_df, clusters, gold, info)
        The uncalibrated outputs of :func:`coref.confidence.assignment.assignment_confidence`
        (every pair; the confidence frame with the columns
        :data:`coref.confidence.structure.STRUCTURE_FEATURES`), the clustering they score
        (``mention_id``, ``block``, ``cluster_id``), the gold author per mention_id and the
        ``info`` dict of the fit.
    """
    if "gold" not in df.columns:
        raise ValueError("fitting a calibration needs labeled mentions: df has no 'gold' column")
    if not (isinstance(folds, numbers.Integral) and not isinstance(folds, bool) and (folds == 0 or folds >= 2)):
        raise ValueError(f"folds must be 0 (no cross-fitting) or an integer >= 2; got {folds!r}")
    if folds and (refit is None or clusters is not None):
        raise ValueError("cross-fitting (folds >= 2) needs refit and takes no clusters")
    kw = {**confidence_kw, "pair_min_p": 0.0, "calibration": None, "rng": rng, "keep_features": True}
    parts = []
    if folds:
        from sklearn.model_selection import GroupKFold

        blocks = df["block"].astype(str).to_numpy()
        if len(np.unique(blocks)) < folds:
            raise ValueError(f"cross-fitting in {folds} folds needs at least {folds} blocks; "
                             f"df has {len(np.unique(blocks))}")
        for k, (tr, te) in enumerate(GroupKFold(n_splits=int(folds)).split(np.zeros(len(df)), groups=blocks)):
            held = df.iloc[te].reset_index(drop=True)
            if len(subsample_sizes):
                held = pd.concat([held, subsampled_blocks(held, subsample_sizes, rng=int(rng) + k)], ignore_index=True)
            parts.append((refit(df.iloc[tr].reset_index(drop=True)), held, None))
        source = f"training mentions, cross-fitted: each of {int(folds)} block groups clustered and scored by a " \
                 "model fitted on the others"
    else:
        parts.append((model, df, clusters))
        source = "training mentions clustered and scored by the model"
    scored = []
    for m, part, cl in parts:
        encodings = encode_blocks(m, part)     # each block encoded once for its clustering and confidences
        if cl is None:
            cl = map_clusters(m, part, sampler=sampler, rng=rng, encodings=encodings)
        cl = cl[["mention_id", "block", "cluster_id"]]
        conf, pairs = assignment_confidence(m, part.drop(columns=["gold"]), cl, encodings=encodings, **kw)
        # the clustering scored is the one reported (a point estimate may have repaired the MAP)
        scored.append((conf, pairs, conf[["mention_id", "block", "cluster_id"]]))
    conf, pairs, cl = (pd.concat([x[i] for x in scored], ignore_index=True) for i in range(3))
    every = pd.concat([p for _, p, _ in parts], ignore_index=True)
    gold = every.set_index(every["mention_id"].astype(str))["gold"]
    info = {"source": source, "n_blocks": int(df["block"].nunique()), "n_subsampled_blocks":
            int(every["block"].nunique() - df["block"].nunique()),
            "n_samples": int(kw.get("n_samples", DEFAULT_N_SAMPLES)), "n_burn": int(kw.get("n_burn", DEFAULT_N_BURN))}
    return conf, pairs, cl, gold, info


def calibration_from_scores(confidence_df, pairs_df, clusters, gold, *, method="isotonic", info=None):
    """Fit the two calibration maps on scored, labeled mentions.

    The pair map (:func:`coref.calibration.fit_calibration`) takes
    :func:`coref.confidence.scores.pair_score` ((p + sigmoid(f)) / 2)
    to 1{gold_a = gold_b}; the mention map takes :func:`coref.confidence.scores.acceptance_score`
    (min(p, p_direct)) to correctness (the mention's gold author is the majority gold
    author of its predicted cluster, :func:`coref.confidence.scores.mention_correct`);
    when ``confidence_df`` has the columns of :func:`coref.confidence.features.mention_features`'
    inputs (``block``, ``p_competing``), the mention model
    (:func:`coref.calibration.fit_logistic` of correctness on :data:`coref.confidence.features.MENTION_FEATURES`,
    and :data:`coref.confidence.structure.STRUCTURE_FEATURES` when the frame has them) is fitted
    too, and it is what :func:`coref.confidence.assignment.with_calibration` applies.

    Parameters
    ----------
    confidence_df, pairs_df : pandas.DataFrame
        From :func:`coref.confidence.assignment.assignment_confidence` with ``pair_min_p=0``
        (rows of method ``none``, blocks too large to score, are left out).
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
        The pair map and the mention map, each fitted with ``method``.

    Raises
    ------
    ValueError
        If there is no labeled pair within a block or no labeled mention.
    """
    g = gold.copy()
    g.index = g.index.astype(str)
    if "method" in confidence_df.columns:   # blocks above max_block have no scores (method none): left out
        confidence_df = confidence_df[confidence_df["method"].astype(str) != "none"]
    ok, y = pair_labels(pairs_df, g)
    if not ok.any():
        raise ValueError("no labeled pair within a block to fit the pair calibration on")
    correct = mention_correct(clusters, g)
    correct = correct[correct.index.isin(confidence_df["mention_id"].astype(str))]
    if correct.empty:
        raise ValueError("no labeled mention to fit the mention calibration on")
    score = pd.Series(acceptance_score(confidence_df), index=confidence_df["mention_id"].astype(str).to_numpy())
    cp = score.reindex(correct.index).to_numpy(float)
    pair_map = fit_calibration(pair_score(pairs_df)[ok], y, method=method)
    mention_map = fit_calibration(cp, correct.to_numpy(float), method=method)
    meta = {"method": method, "n_pairs": int(ok.sum()), "n_mentions": int(len(correct)), **(info or {})}
    mention_model = None
    if {"block", "p_competing"} <= set(confidence_df.columns) and correct.nunique() == 2:
        X = mention_features(confidence_df)
        X.index = confidence_df["mention_id"].astype(str).to_numpy()
        mention_model = fit_logistic(X.reindex(correct.index), correct.to_numpy(float), C=MENTION_MODEL_C)
        meta["mention_model"] = "logistic regression on " + ", ".join(X.columns)
    return ConfidenceCalibration(pair_map, mention_map, meta, mention_model)


def subsampled_blocks(df, sizes=DEFAULT_SUBSAMPLE_SIZES, *, rng=0):
    """Random sub-blocks of a labeled frame's blocks: the same names seen as smaller blocks.

    Training blocks are large (tens to hundreds of mentions) while new data often comes
    in blocks of a few; a calibration map fitted only on the former cannot know how
    the model errs on the latter.  For every block of ``df`` and every size s in
    ``sizes`` smaller than the block, one uniformly random subset of s mentions becomes
    a block of its own, named ``f"{block}#s{s}"``, its mentions ``f"{mention_id}#s{s}"``
    (gold kept).

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with ``mention_id`` and ``block`` (and ``gold``).
    sizes : sequence of int >= 1
    rng : int, default 0
        Seed of the subsets.

    Returns
    -------
    pandas.DataFrame
        The sub-blocks' mentions (columns of ``df``), empty when no block is big enough.

    Raises
    ------
    ValueError
        If a size is not an int >= 1.
    """
    if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in sizes):
        raise ValueError(f"sizes must be integers >= 1; got {list(sizes)!r}")
    gen = np.random.default_rng(int(rng))
    parts = []
    for block, sub in df.groupby(df["block"].astype(str), sort=True):
        for s in sorted(set(int(v) for v in sizes)):
            if s >= len(sub):
                continue
            pick = sub.iloc[np.sort(gen.choice(len(sub), size=s, replace=False))].copy()
            pick["mention_id"] = pick["mention_id"].astype(str) + f"#s{s}"
            pick["block"] = f"{block}#s{s}"
            parts.append(pick)
    return pd.concat(parts, ignore_index=True) if parts else df.iloc[:0].copy()
