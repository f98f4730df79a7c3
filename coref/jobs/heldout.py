"""Calibration of the confidences of ``coref run`` on held-out folds (cross-fitted maps)."""
from __future__ import annotations

import hashlib
import json
import sys

import pandas as pd
from tqdm import tqdm

from coref.confidence import (assignment_confidence, calibration_from_scores, confidence_figures,
                              with_calibration)
from coref.inference import single_thread
from coref.settings import CALIBRATIONS, check_calibration

__all__ = ["heldout_confidence", "check_calibration", "CALIBRATIONS"]

#: Confidence calibration maps ``coref fit`` / ``coref run`` can fit ("none": no map).


def heldout_confidence(df, fold_of, labeled, models, clusters, *, sampler, calibration="isotonic", seed=0,
                       threshold=0.95, progress=False, confidence_kw=None):
    """Calibration of the confidences on held-out folds (issue 13, items 4-5).

    The held-out clusters of each fold k (``sampler``) get their confidences from fold
    k's model (:func:`coref.confidence.assignment_confidence`, every pair within a
    block, Rao-Blackwellised Gibbs marginals at temperature 1). Fold k's calibration
    maps (pair and mention, :func:`coref.confidence.calibration_from_scores`) are then
    fitted on the held-out scores of the OTHER folds, each from its own fold model
    (cross-fitting): no label of fold k enters its map, and every map learns from
    scores of mentions their model was not fitted on, as the maps of ``coref fit``
    do. Figures per fold and pooled: :func:`coref.confidence.confidence_figures`.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with ``gold``.
    fold_of : dict
        Block -> fold.
    labeled : collection
        Blocks with gold labels.
    models : dict
        Fold -> fitted model (theta of the other folds).
    clusters : pandas.DataFrame
        ``sampler``, ``fold``, ``block``, ``mention_id``, ``cluster_id`` (held-out).
    sampler : str
        Which sampler's clusters are scored.
    calibration : {"isotonic", "temperature", "none"}
    seed : int
    threshold : float, default 0.95
    progress : bool
    confidence_kw : dict, optional
        Passed to :func:`coref.confidence.assignment_confidence` (e.g. ``n_samples``,
        ``max_submodel``), for the training and the held-out mentions alike.

    Returns
    -------
    dict
        ``sampler``, ``calibration``, ``threshold``, ``folds`` (per-fold figures),
        ``pooled`` (figures over every held-out pair and mention, with the
        ``reliability`` tables), or ``skipped`` (why) when the models cannot produce
        factor matrices (e.g. a stand-in).
    """
    check_calibration(calibration)
    if not all(hasattr(m, "factor_matrix") and hasattr(m, "encode") for m in models.values()):
        return {"skipped": "the fold models have no factor_matrix / encode", "sampler": sampler,
                "calibration": calibration}
    kw = dict(confidence_kw or {})
    gold = df.set_index(df["mention_id"].astype(str))["gold"]
    fold = df["block"].map(fold_of)
    lab = df["block"].isin(labeled)
    scored = {}                                      # fold -> (confidences, pairs, clusters), uncalibrated
    for k in tqdm(sorted(models), desc="confidence", unit="fold", disable=not progress, file=sys.stderr,
                  leave=False):
        test = df[(fold == k) & lab].reset_index(drop=True)
        if test.empty:
            continue
        cl = clusters[(clusters["sampler"] == sampler) & (clusters["fold"] == k)
                      & clusters["block"].isin(test["block"].unique())]
        cl = cl[["mention_id", "block", "cluster_id"]].astype({"mention_id": str, "cluster_id": str})
        # keep_features: the mention model may read the cluster-structure columns (calibration format 3)
        conf, pairs = assignment_confidence(models[k], test.drop(columns="gold"), cl, calibration=None,
                                            pair_min_p=0.0, pair_factors=True, rng=seed, keep_features=True,
                                            **kw)
        scored[k] = (conf, pairs, cl)
    per_fold, confs, pairs_all, cls = [], [], [], []
    for k, (conf, pairs, cl) in scored.items():
        others = [v for j, v in scored.items() if j != k]
        cal = None
        if calibration != "none" and others:
            with single_thread():
                cal = calibration_from_scores(*(pd.concat([o[i] for o in others], ignore_index=True)
                                                for i in range(3)), gold, method=calibration,
                                              info={"source": "held-out scores of the other folds, each from "
                                                              "its own fold model",
                                                    "folds": sorted(int(j) for j in scored if j != k)})
        conf, pairs = with_calibration(conf, pairs, cal)
        fig = confidence_figures(conf, pairs, gold, cl, threshold=threshold)
        fig.pop("reliability", None)
        per_fold.append({"fold": int(k), **fig,
                         "calibration_info": None if cal is None else dict(cal.info),
                         "calibration_sha256": None if cal is None else hashlib.sha256(
                             json.dumps(cal.to_dict(), sort_keys=True).encode()).hexdigest()})
        confs.append(conf)
        pairs_all.append(pairs)
        cls.append(cl)
    if not confs:
        return {"skipped": "no labeled held-out block", "sampler": sampler, "calibration": calibration}
    pooled = confidence_figures(pd.concat(confs, ignore_index=True), pd.concat(pairs_all, ignore_index=True), gold,
                                pd.concat(cls, ignore_index=True), threshold=threshold)
    return {"sampler": sampler, "calibration": calibration, "threshold": float(threshold), "folds": per_fold,
            "pooled": pooled}
