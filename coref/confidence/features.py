"""What predicts a wrong assignment, per mention: the inputs of the mention calibration model.

The posterior probability ``p`` of a mention's assignment is not enough on names the model
never saw: its errors are confident over-merges in big blocks (a sum of pairwise log-odds
over a cluster of k members rewards size), so the chance that an assignment is right also
depends on where the mention sits.  :func:`mention_features` gives, for each row of a
confidence frame (:func:`coref.confidence.assignment.assignment_confidence`):

``logit_p``, ``logit_p_direct``, ``logit_p_competing``
    log-odds of the posterior confidence ``p``, of the pairwise model's direct one
    ``p_direct`` and of the competing cluster's support ``p_competing`` (clipped to
    [1e-6, 1 - 1e-6]);
``margin``
    ``p - p_competing``;
``log_block_size``, ``log_cluster_size``, ``cluster_share``, ``log_n_clusters``
    log of the block's mentions, of the predicted cluster's mentions, the cluster's share
    of the block, log of the number of predicted clusters in the block;
``singleton``
    1 for a predicted cluster of one mention;
``big_share``
    ``log_cluster_size * cluster_share`` (large clusters that swallow their block);
``p``, ``p_direct``
    the two probabilities themselves (the logits saturate);
``logit_acceptance``
    min(logit_p, logit_p_direct) (:func:`coref.confidence.scores.acceptance_score`);
``log_block_size_sq``, ``log_cluster_size_sq``, ``direct_x_cluster``, ``block_x_share``
    squares and products that let a logistic model bend with size
    (``logit_p_direct * log_cluster_size``, ``log_block_size * cluster_share``).

and, when the frame carries them (``assignment_confidence(..., keep_features=True)``),
the columns :data:`coref.confidence.structure.STRUCTURE_FEATURES`: how the mention fits
its cluster (title / venue / coauthor / topic cosines with the cluster without it,
relative to the cluster's typical member) and how coherent the cluster is (pairs the
pairwise model rejects, coauthor groups spanned, years), the signs of an over-merge that
``p`` does not show, and their products with ``log_cluster_size`` (:data:`SIZE_INTERACTIONS`:
``rel_title_x_cluster``, ``rel_venue_x_cluster``, ``rel_coauthor_x_cluster``,
``rel_topic_x_cluster``, ``rel_f_x_cluster``, ``neg_share_x_cluster`` =
``cluster_neg_share * log_cluster_size``, ``groups_x_cluster`` = ``log_groups *
log_cluster_size``, ``split_f_x_cluster``, ``minor_x_cluster``): a member that fits its cluster worse than the typical one matters
more in a big cluster.

The calibration model on them (:class:`coref.calibration.LogisticMap`) is fitted on
cross-fitted training blocks (:func:`coref.confidence.fit.calibration_from_scores`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.calibration import VERSION2_FEATURES
from coref.confidence.structure import STRUCTURE_FEATURES

__all__ = ["MENTION_FEATURES", "STRUCTURE_FEATURES", "SIZE_INTERACTIONS", "mention_features"]

#: the features of the confidence frame alone (those a version-2 calibration's mention model reads)
MENTION_FEATURES = VERSION2_FEATURES
#: products of cluster-structure features with log_cluster_size (name -> structure column)
SIZE_INTERACTIONS = {"rel_title_x_cluster": "rel_title", "rel_venue_x_cluster": "rel_venue",
                     "rel_coauthor_x_cluster": "rel_coauthor", "rel_topic_x_cluster": "rel_topic",
                     "rel_f_x_cluster": "rel_f", "neg_share_x_cluster": "cluster_neg_share",
                     "groups_x_cluster": "log_groups", "split_f_x_cluster": "split_f",
                     "minor_x_cluster": "minor_group"}

_CLIP = 1e-6


def _logit(v):
    v = np.clip(np.asarray(v, float), _CLIP, 1.0 - _CLIP)
    return np.log(v) - np.log1p(-v)


def mention_features(confidence_df):
    """The calibration features of every row of a confidence frame.

    Parameters
    ----------
    confidence_df : pandas.DataFrame
        ``block``, ``cluster_id``, ``p``, ``p_direct``, ``p_competing`` (as written by
        :func:`coref.confidence.assignment.assignment_confidence`); every mention of each
        block it covers.

        With the columns :data:`STRUCTURE_FEATURES` too (all of them), they are added, and
        their products :data:`SIZE_INTERACTIONS`.

    Returns
    -------
    pandas.DataFrame
        The columns :data:`MENTION_FEATURES` (then :data:`STRUCTURE_FEATURES` and
        :data:`SIZE_INTERACTIONS` when the frame has the former), one row per row of
        ``confidence_df`` (same index), float.

    Raises
    ------
    ValueError
        If a needed column is missing, naming it.
    """
    need = ("block", "cluster_id", "p", "p_direct", "p_competing")
    miss = [c for c in need if c not in confidence_df.columns]
    if miss:
        raise ValueError(f"the confidence frame is missing the column(s) {miss} the calibration features need")
    block = confidence_df["block"].astype(str)
    cid = confidence_df["cluster_id"].astype(str)
    n_block = block.map(block.value_counts()).to_numpy(float)
    key = block + "\x00" + cid
    k = key.map(key.value_counts()).to_numpy(float)
    n_clusters = block.map(key.groupby(block).nunique()).to_numpy(float)
    p = confidence_df["p"].to_numpy(float)
    pc = confidence_df["p_competing"].to_numpy(float)
    share = k / n_block
    out = pd.DataFrame({"logit_p": _logit(p), "logit_p_direct": _logit(confidence_df["p_direct"]),
                        "logit_p_competing": _logit(pc), "margin": p - pc, "log_block_size": np.log(n_block),
                        "log_cluster_size": np.log(k), "cluster_share": share,
                        "log_n_clusters": np.log(n_clusters), "singleton": (k == 1).astype(float),
                        "big_share": np.log(k) * share}, index=confidence_df.index)
    out["p"] = np.clip(p, 0.0, 1.0)
    out["p_direct"] = np.clip(confidence_df["p_direct"].to_numpy(float), 0.0, 1.0)
    out["logit_acceptance"] = np.minimum(out["logit_p"], out["logit_p_direct"])
    out["log_block_size_sq"] = out["log_block_size"] ** 2
    out["log_cluster_size_sq"] = out["log_cluster_size"] ** 2
    out["direct_x_cluster"] = out["logit_p_direct"] * out["log_cluster_size"]
    out["block_x_share"] = out["log_block_size"] * share
    cols = list(MENTION_FEATURES)
    if all(c in confidence_df.columns for c in STRUCTURE_FEATURES):
        for c in STRUCTURE_FEATURES:
            out[c] = confidence_df[c].to_numpy(float)
        for name, c in SIZE_INTERACTIONS.items():
            out[name] = out[c] * out["log_cluster_size"]
        cols += list(STRUCTURE_FEATURES) + list(SIZE_INTERACTIONS)
    return out[cols]
