"""Explain one decision: the pairwise factor f = theta . phi + b of two mentions, broken down.

f_theta(x_a, x_b) (natural-log odds that mentions a and b co-refer; Chen & Ghahramani
2016, Sec. 5.3) is a sum: the intercept b plus theta_k * phi_k for every feature k. The
breakdown lists each term and, like Splink's match-weight waterfall, sums them by
human-readable group (coauthors, title, venue, affiliation, year, name, ...) in order,
with the running total. The terms are of three levels: the block's (intercept, block
prior, block-constant features: equal for every pair of the block), indicators of
missing information (a mention lists no coauthor, ...), and the pair's evidence,
which :meth:`Explanation.text` ranks by |contribution| on its own. Feature labels and groups come from
``coref.factors.names.FEATURE_LABELS`` / ``FEATURE_GROUPS`` when the feature module defines
them, otherwise from the feature names.

References
----------
.. [1] Chen, Y. & Ghahramani, Z. (2016). Scalable discrete sampling as a multi-armed
   bandit problem. ICML. Sec. 5.3.
.. [2] Splink: "match weights" waterfall chart (moj-analytical-services/splink).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coref.factors.names import FEATURE_GROUPS, FEATURE_LABELS, FEATURE_NAMES, SAME_PAPER_PENALTY
from coref.model import block_bias_evals, block_theta

__all__ = ["Explanation", "explain_pair", "feature_groups", "LEVELS"]


_BLOCK_GROUP = "block"  # coref.factors.names.FEATURE_GROUPS' group of the block-constant features
_BASELINE_LABEL = "block baseline (size, coherence)"
#: the row of a pair of paper mates (coref.factors.papers): a constraint, not evidence
_SAME_PAPER_LABEL = "one paper, two authors (constraint)"
#: Levels of a term in :attr:`Explanation.by_feature` (column ``level``).
LEVELS = ("block", "missing", "evidence")


def _level(name, group):
    """``"block"`` (the same for every pair of the block), ``"missing"`` (an indicator) or ``"evidence"``."""
    if group == _BLOCK_GROUP:
        return "block"
    return "missing" if "missing" in name.split("*")[0] else "evidence"


def _fallback_group(name):
    base = name.split("*")[0]
    for key, group in (("title", "title"), ("venue", "venue"), ("affil", "affiliation"), ("year", "year"),
                       ("name", "name")):
        if key in base:
            return group
    if base.startswith("co_") or base == "same_comp_initials":
        return "coauthors"
    if "comp" in base:
        return "coauthor graph"
    return "block size"


def feature_groups():
    """(labels, groups): a human label and a group for every feature, in kernel order."""
    names = tuple(FEATURE_NAMES)
    labels = FEATURE_LABELS
    groups = FEATURE_GROUPS
    if isinstance(labels, dict):
        labels = tuple(labels.get(n, n) for n in names)
    if isinstance(groups, dict):
        groups = tuple(groups.get(n, _fallback_group(n)) for n in names)
    if labels is None or len(labels) != len(names):
        labels = names
    if groups is None or len(groups) != len(names):
        groups = tuple(_fallback_group(n) for n in names)
    return tuple(labels), tuple(groups)


@dataclass(frozen=True)
class Explanation:
    """The factor of one pair of mentions, term by term.

    Attributes
    ----------
    mention_a, mention_b, block : str
    f : float
        theta . phi + b, natural-log odds that the two co-refer.
    bias : float
        The intercept b of the block: the model's ``bias_`` (with the tuned shift) plus
        the block's prior shift d_b (:meth:`coref.model.PairwiseModel.block_bias`).
    by_feature : pandas.DataFrame
        feature, label, group, level, phi, theta, contribution (= theta * phi), nonzero
        terms sorted by |contribution|; ``level`` is ``"block"`` (a block-constant
        feature), ``"missing"`` (an indicator of missing information) or
        ``"evidence"`` (about the pair: similarities, shared coauthors, ...).
    by_group : pandas.DataFrame
        group, contribution, cumulative (waterfall order: intercept first, then the
        block prior d_b (only for a model with one, ``block_prior="pcc"``), then the
        block baseline: the sum of the block-constant features (block size, coherence),
        equal for every pair of the block, then the pair's own evidence by group, by
        decreasing |contribution|).
    big_block : bool, default False
        The block has at least ``model.big_.min_n`` mentions, so theta and b are the model's
        big-block weights (:mod:`coref.model.big_blocks`), fitted on simulated big blocks.
    """

    mention_a: str
    mention_b: str
    block: str
    f: float
    bias: float
    by_feature: pd.DataFrame
    by_group: pd.DataFrame
    big_block: bool = False

    @property
    def probability(self):
        """1 / (1 + exp(-f)): the pair's co-reference probability if f is a calibrated log-odds."""
        return 1.0 / (1.0 + math.exp(-self.f)) if self.f > -700 else 0.0

    @property
    def evidence(self):
        """The terms about the pair itself (``level == "evidence"``), largest |contribution| first."""
        return self.by_feature[self.by_feature["level"] == "evidence"].reset_index(drop=True)

    def text(self, *, top=12):
        """Plain text: the waterfall by group, then the block-level terms, then the pair's evidence.

        Full feature labels, columns aligned to the longest one. The block-level terms
        (intercept, block prior, block-constant features) and the indicators of
        missing information are listed apart from the evidence about the pair, which
        is ranked by |contribution| (the ``top`` largest).

        Parameters
        ----------
        top : int, default 12
            Evidence terms to list.

        Returns
        -------
        str
        """
        feats = self.by_feature
        ev = self.evidence.head(top)
        sections = [("block-level terms (the same for every pair of the block)", feats[feats["level"] == "block"]),
                    ("missing information", feats[feats["level"] == "missing"]),
                    (f"evidence about this pair ({min(top, len(self.evidence))} of {len(self.evidence)} terms, "
                     "largest first)", ev)]
        lead = [r for r in self.by_group.itertuples(index=False) if r.group in ("intercept (b)", "block prior (d_b)")]
        w = max([len(str(x)) + 2 for x in feats["label"]] + [len(str(g)) for g in self.by_group["group"]]
                + [len(t) for t, _ in sections] + [44])
        lines = [f"f({self.mention_a}, {self.mention_b}) = theta . phi + b = {self.f:+.3f} "
                 f"(log-odds; P(same author) = {self.probability:.3f}) in block {self.block!r}"
                 + (" (big-block weights, fitted on simulated blocks as large)" if self.big_block else ""), "",
                 f"{'by group':<{w}} {'contribution':>12} {'running total':>14}"]
        scale = max([abs(r.contribution) for r in self.by_group.itertuples(index=False)
                     if r.group != _SAME_PAPER_LABEL] + [1e-12])
        for r in self.by_group.itertuples(index=False):
            bar = ("+" if r.contribution >= 0 else "-") * min(20, int(round(20 * abs(r.contribution) / scale)))
            lines.append(f"{r.group:<{w}} {r.contribution:>+12.3f} {r.cumulative:>+14.3f}  {bar}".rstrip())
        head = f"{'phi':>8} {'theta':>9} {'theta*phi':>10}"
        for k, (title, rows) in enumerate(sections):
            if rows.empty and k < 2 and not (k == 0 and lead):
                continue
            lines += ["", f"{title:<{w}} {head}"]
            if k == 0:
                lines += [f"{'  ' + r.group:<{w}} {'':>8} {'':>9} {r.contribution:>+10.3f}" for r in lead]
            for r in rows.itertuples(index=False):
                lines.append(f"{'  ' + str(r.label):<{w}} {r.phi:>8.3f} {r.theta:>+9.3f} {r.contribution:>+10.3f}")
            if k == 0:
                sub = sum(r.contribution for r in lead) + float(rows["contribution"].sum())
                lines.append(f"{'  total, the same for every pair of the block':<{w}} {'':>8} {'':>9} {sub:>+10.3f}")
        if self.evidence.empty:
            lines.append("  (no evidence term is nonzero)")
        return "\n".join(lines)


def explain_pair(model, df, mention_a, mention_b):
    """Break the factor f_theta(x_a, x_b) down by feature and group.

    Parameters
    ----------
    model : coref.model.PairwiseModel
        Fitted.
    df : pandas.DataFrame
        Mentions holding both (features are computed within their block, which must be
        complete: coauthor-graph and block-constant features depend on it).
    mention_a, mention_b : str
        Mention ids.

    Returns
    -------
    Explanation
        Its terms sum to ``model.pairwise_factor`` up to floating-point rounding.

    Raises
    ------
    KeyError
        If a mention id is not in ``df``.
    ValueError
        If the two mentions are the same or in different blocks.
    """
    ids = df["mention_id"].astype(str)
    for m in (mention_a, mention_b):
        if not (ids == str(m)).any():
            raise KeyError(f"mention {m!r} is not in the data")
    if str(mention_a) == str(mention_b):
        raise ValueError("give two different mentions")
    blocks = df["block"].astype(str)
    ba = blocks[(ids == str(mention_a)).to_numpy()].iloc[0]
    bb = blocks[(ids == str(mention_b)).to_numpy()].iloc[0]
    if ba != bb:
        raise ValueError(f"{mention_a!r} is in block {ba!r} and {mention_b!r} in {bb!r}: only mentions of one block "
                         "are compared (f is never computed across blocks)")
    sub = df[(blocks == ba).to_numpy()].reset_index(drop=True)
    sub_ids = sub["mention_id"].astype(str).tolist()
    i, j = sub_ids.index(str(mention_a)), sub_ids.index(str(mention_b))
    enc = model.encode(sub)
    phi = model.pair_features(enc, [i], [j])[0]
    theta = block_theta(model, enc)           # the big-block weights in a big block
    contrib = theta * phi
    bias = block_bias_evals(model, enc)[0]        # bias_ + the block's prior shift
    f = float(model.pairwise_factor(enc, i, j))
    labels, groups = feature_groups()
    # a block-constant feature times same_comp1 is nonzero only when the two mentions are
    # linked through shared coauthors: it is coauthor evidence, not part of the baseline
    groups = ["coauthors" if g == _BLOCK_GROUP and n.endswith("*same_comp1") else g
              for n, g in zip(FEATURE_NAMES, groups)]
    feat = pd.DataFrame({"feature": list(FEATURE_NAMES), "label": labels, "group": groups,
                         "level": [_level(n, g) for n, g in zip(FEATURE_NAMES, groups)],
                         "phi": phi, "theta": theta, "contribution": contrib})
    feat = feat[feat["contribution"] != 0].copy()
    feat = feat.reindex(feat["contribution"].abs().sort_values(ascending=False, kind="stable").index)
    grp = feat.groupby("group", sort=False)["contribution"].sum()
    # features of the whole block (its size, coherence, ...) are the same for every pair
    # of the block: they shift the baseline the pair's own evidence is read against
    block_terms = float(grp.pop(_BLOCK_GROUP)) if _BLOCK_GROUP in grp.index else 0.0
    grp = grp.reindex(grp.abs().sort_values(ascending=False, kind="stable").index)
    # the block's prior odds: the pooled intercept, then this block's shift of it
    base = model.base_bias(enc) if hasattr(model, "base_bias") else float(model.bias_)
    prior = [("block prior (d_b)", bias - base)] if getattr(model, "block_prior", "none") == "pcc" else []
    lead = [("intercept (b)", bias - sum(v for _, v in prior))] + prior + [(_BASELINE_LABEL, block_terms)]
    mates = () if enc.mate_ptr is None else enc.mate_idx[enc.mate_ptr[i]:enc.mate_ptr[i + 1]].tolist()
    tail = [(_SAME_PAPER_LABEL, -float(SAME_PAPER_PENALTY))] if j in mates else []
    by_group = pd.DataFrame({"group": [g for g, _ in lead] + list(grp.index) + [g for g, _ in tail],
                             "contribution": [v for _, v in lead] + grp.tolist() + [v for _, v in tail]})
    by_group["cumulative"] = by_group["contribution"].cumsum()
    return Explanation(str(mention_a), str(mention_b), ba, f, bias, feat.reset_index(drop=True), by_group,
                       big_block=bool(getattr(model, "is_big_block", lambda n: False)(enc.n)))
