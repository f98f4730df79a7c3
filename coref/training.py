"""Fitting a pairwise model: theta, then the intercept shift chosen by running Gibbs.

:class:`coref.model.PairwiseModel` fits theta (logistic regression or pseudo-likelihood)
and its block prior; with ``bias_shift="auto"`` it asks a *shift tuner* for the
intercept shift.  The tuner here, :func:`tune_shift`, runs short exact annealed Gibbs
(:class:`coref.gibbs.GibbsCoref`) for each candidate shift and keeps the one with the
best training B3 F1.  It sits above the sampler (:mod:`coref.gibbs`, :mod:`coref.inference`)
and below :mod:`coref.model.pairwise`, whose ``fit`` calls it; it builds the cross-fitted
models as ``type(model)(...)``, so it never imports the model class.
"""
from __future__ import annotations

import numpy as np

from coref.evaluate import b3
from coref.gibbs import FACTOR_CACHE_MB, GibbsCoref
from coref.inference import encode_blocks

__all__ = ["tune_shift"]


def tune_shift(model, df, rng):
    """The intercept shift with the best B3 F1 on (cross-fitted) training blocks.

    The blocks of ``df`` with two labeled mentions are split in two halves; a model with
    ``model``'s parameters and no shift is fitted on each half, and at most
    ``model.tune_max_blocks`` blocks of the other half are clustered by exact annealed
    Gibbs (``model.tune_sweeps`` sweeps) for each shift of ``model.shift_grid``.  The
    chosen shift is the smallest |shift| whose mean B3 F1 (weighted by labeled
    mentions) is within ``model.shift_tol`` of the best: the inner estimates are noisy,
    and the calibrated intercept should not move for noise.

    Parameters
    ----------
    model : PairwiseModel
        The model being fitted (its parameters are read, it is not changed).
    df : pandas.DataFrame
        Its training mentions (``gold``).
    rng : numpy.random.Generator
        Advanced in place (the split, and the inner fits).

    Returns
    -------
    shift : float
        0.0 with fewer than four blocks of two labeled mentions.
    scores : dict of float -> float
        Mean training B3 F1 per candidate shift (empty with fewer than four blocks).
    """
    # only blocks with two labeled mentions can train a theta or score a shift: an
    # inner split over all blocks could leave a half with nothing to fit on
    n_lab = df["gold"].notna().groupby(df["block"]).sum()
    blocks = np.array(sorted(n_lab.index[n_lab.to_numpy() >= 2]))
    if len(blocks) < 4:
        return 0.0, {}
    perm = rng.permutation(len(blocks))
    n_fold = 2
    scores = {float(s): [] for s in model.shift_grid}
    chosen = set(blocks[perm[: int(model.tune_max_blocks)]])
    for k in range(n_fold):
        test_b = set(blocks[perm[k::n_fold]])
        train = df[df["block"].isin(set(blocks) - test_b)]
        test = df[df["block"].isin(test_b & chosen)]
        test = test[test["gold"].notna()]
        if len(test) == 0:
            continue
        sub = type(model)(C=model.C, max_pairs_per_block=model.max_pairs_per_block,
                          class_weight=model.class_weight, bias_shift=0.0,
                          rng=rng, objective=model.objective, pl_C=model.pl_C,
                          pl_max_anchors=model.pl_max_anchors, pl_alone=model.pl_alone,
                          pl_pair_C=model.pl_pair_C, pl_merge_C=model.pl_merge_C,
                          block_prior=model.block_prior, block_prior_cap=model.block_prior_cap,
                          block_prior_pairs=model.block_prior_pairs, name_priors=model.name_priors)
        sub.fit(train)
        # each test block encoded once for all shifts (a shift moves the bias only)
        pre = encode_blocks(sub, test)
        for s in model.shift_grid:
            sub.set_shift(float(s))
            g = GibbsCoref(sub, sampler="exact", n_sweeps=int(model.tune_sweeps),
                           rng=0, record_history=False,
                           factor_cache_mb=FACTOR_CACHE_MB).fit(test, encodings=pre)
            f1 = b3(g.clusters_, test.set_index("mention_id")["gold"]).f1
            scores[float(s)].append((len(test), f1))
    avg = {s: (sum(n * f for n, f in v) / sum(n for n, _ in v) if v else 0.0)
           for s, v in scores.items()}
    top = max(avg.values())
    near = [s for s in avg if avg[s] >= top - float(model.shift_tol)]
    best = min(near, key=lambda s: (abs(s), s))
    return float(best), avg
