"""Fitting the block prior's learned correction (:class:`coref.model.shift_tree.ShiftTree`) on held-out blocks.

Each group of labeled blocks is clustered by a model fitted on the other groups (it never saw
their labels), at the block prior shift d_b + dd for every dd of
:data:`coref.model.shift_tree.SHIFT_GRID` (annealed Gibbs MAP, exact conditionals from the
cached factor matrix, as ``coref predict`` clusters such blocks), and scored by B3 F1 against
the gold authors; the tree is fitted on the blocks' statistics under their group's model
(:func:`coref.model.shift_tree.fit_shift_tree`).  The cost: every held-out block clustered
once per grid value (13 clusterings of the training mentions).
"""
from __future__ import annotations

import numpy as np

from coref.gibbs import FACTOR_CACHE_MB, GibbsCoref
from coref.evaluate import b3
from coref.inference import encode_blocks
from coref.model.block_prior import block_theta
from coref.model.shift_tree import SHIFT_GRID, block_statistics, fit_shift_tree, statistics_evals

__all__ = ["shift_tree_table", "fit_block_shift_tree"]


def shift_tree_table(model, df, *, rng=0, grid=SHIFT_GRID):
    """Statistics and B3 F1 at every shift correction of the labeled blocks of ``df`` under ``model``.

    Parameters
    ----------
    model : coref.model.PairwiseModel
        Fitted without the blocks of ``df``, without a ``shift_tree_``.
    df : pandas.DataFrame
        Labeled mentions (``gold``), whole blocks.
    rng : int
        Gibbs seed (block ``b``: ``coref.gibbs.block_rng(rng, b)``).

    Returns
    -------
    statistics : ndarray of shape (n_blocks, 3)
    f1 : ndarray of shape (n_blocks, len(grid))
    n_mentions : ndarray of shape (n_blocks,)
        Of the blocks the tree applies to (3 to ``SHIFT_TREE_MAX_N`` mentions, small-block weights).
    """
    df = df[df["gold"].notna()]
    sizes = df.groupby("block").size()
    keep = [b for b, n in sizes.items() if statistics_evals(int(n)) > 0 and not model.is_big_block(int(n))]
    df = df[df["block"].isin(keep)].reset_index(drop=True)
    if not len(df):
        return np.zeros((0, 3)), np.zeros((0, len(grid))), np.zeros(0)
    encodings = encode_blocks(model, df)
    blocks = sorted(map(str, keep))
    ids = df["mention_id"].astype(str)
    rows = {b: np.sort(ids[df["block"].astype(str).to_numpy() == b].to_numpy()) for b in blocks}
    stats, base = [], {}
    for b in blocks:
        enc = encodings.lookup(b, rows[b])     # (held in mention-id order, as Gibbs encodes a block)
        stats.append(block_statistics(enc, block_theta(model, enc), model.base_bias(enc)))
        base[b] = model.block_shift(enc)
    gold = df.set_index(ids)["gold"]
    f1 = np.zeros((len(blocks), len(grid)))
    for k, dd in enumerate(grid):
        g = GibbsCoref(model, sampler="exact", rng=rng, record_history=False, factor_cache_mb=FACTOR_CACHE_MB)
        g.fit(df.drop(columns=["gold"]), encodings=encodings, prior_shift={b: base[b] + dd for b in blocks})
        cl = g.clusters_.astype(str)
        for i, b in enumerate(blocks):
            f1[i, k] = b3(cl.loc[rows[b]], gold.loc[rows[b]].astype(str)).f1
    return np.array(stats), f1, np.array([sizes[b] for b in blocks], float)


def fit_block_shift_tree(parts, *, rng=0):
    """The shift tree of cross-fitted held-out blocks.

    Parameters
    ----------
    parts : sequence of (model, df)
        Each group of labeled blocks ``df`` with the model fitted on the others.
    rng : int

    Returns
    -------
    coref.model.shift_tree.ShiftTree or None
        None with too few blocks (:func:`coref.model.shift_tree.fit_shift_tree`).
    """
    tables = [shift_tree_table(m, df, rng=rng) for m, df in parts]
    stats = np.concatenate([t[0] for t in tables])
    f1 = np.concatenate([t[1] for t in tables])
    n = np.concatenate([t[2] for t in tables])
    return fit_shift_tree(stats, f1, n)
