"""Cluster every block of a mention table with a fitted model, and name the clusters.

Every block is clustered with annealed Gibbs (:class:`coref.gibbs.GibbsCoref`; by default
``"auto"``: exact from the cached factor matrix where it fits, racing elsewhere),
locally or on Dask; block ``b`` uses ``coref.gibbs.block_rng(seed, b)``, so the same
seed gives the same clusters on any executor. Cluster ids are ``"<block>/<k>"``,
k = 0, 1, ... in the order of each cluster's smallest mention id: stable strings,
unique across blocks (Chen & Ghahramani 2016, Sec. 5.3 and Appx. C.3).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from coref.encoding import mentions as mention_encoding
from coref.gibbs import FACTOR_CACHE_MB
from coref.inference import infer_blocks
from coref.io import gc_paused

__all__ = ["canonical_cluster_ids", "predict_clusters", "result_margins", "result_shifts", "sampler_choices",
           "sampling_budget", "sampling_tally", "add_tallies", "sampling_summary", "with_auto_budget"]


def _mib(n):
    """MiB of the n x n float64 factor matrix of a block of n mentions."""
    return 8.0 * n * n / 2.0**20


def _blocks(k, what="blocks"):
    """``"1 block"``, ``"2 blocks"`` (``what`` in the plural, ending in s)."""
    return f"{k:,} {what if k != 1 else what[:-1]}"


def _why(sampler, used, n, budget):
    """Why a block of ``n`` mentions got ``used`` when ``sampler`` was asked for."""
    if used == "exact-cached":
        return f"factor matrix {_mib(n):.3g} MiB <= budget {budget:g} MiB"
    if n <= 1:
        return "one mention: nothing to sample"
    if sampler == "auto" and _mib(n) <= budget:   # (coref.gibbs' per-block cost model, not the budget)
        return f"factor matrix {_mib(n):.3g} MiB within the budget, but racing costs less"
    if sampler == "auto" or (sampler == "exact" and budget > 0):
        return f"factor matrix {_mib(n):.3g} MiB over the budget of {budget:g} MiB"
    return f"--sampler {sampler}" + (" without --factor-cache-mb" if sampler == "exact" else "")


def sampler_choices(results, settings):
    """The ``sampling`` entry of summary.json: which sampler each block used and why.

    Parameters
    ----------
    results : list of coref.inference.BlockResult
        The blocks sampled (``BlockResult.block_sampler``).
    settings : coref.settings.CorefSettings
        The sampler asked for and the factor-matrix budget (``factor_cache_mb``; 0 under
        ``"auto"`` means :data:`coref.gibbs.FACTOR_CACHE_MB`).

    Returns
    -------
    dict
        ``sampler`` (asked for), ``factor_cache_mib`` (the budget in force),
        ``max_cached_n`` (the largest block whose matrix fits it, 0 when off),
        ``n_blocks`` per used sampler (``"exact-cached"``, ``"exact"``, ``"racing"``),
        ``text`` (one sentence for report.md) and ``blocks``: one dict per block
        (``block``, ``n_mentions``, ``sampler``, ``why``).
    """
    sampler, budget, max_n = sampling_budget(settings)
    blocks = [{"block": r.block, "n_mentions": int(len(r.mention_id)), "sampler": r.block_sampler,
               "why": _why(sampler, r.block_sampler, len(r.mention_id), budget)} for r in results]
    return {**sampling_summary(settings, sampling_tally(blocks)), "blocks": blocks}


def with_auto_budget(settings, mib):
    """``settings`` with the factor-matrix budget ``mib`` (MiB) for ``--sampler auto`` when none was given.

    Other samplers and an explicit ``factor_cache_mb`` are kept as they are (the same
    object); the budget in force is recorded in the settings (summary.json, the key of a
    run).

    Parameters
    ----------
    settings : coref.settings.CorefSettings
    mib : float > 0

    Returns
    -------
    coref.settings.CorefSettings
    """
    gp = dict(settings.gibbs_params)
    if settings.samplers[0] != "auto" or float(gp.get("factor_cache_mb", 0.0) or 0.0) > 0.0:
        return settings
    gp["factor_cache_mb"] = float(mib)
    return dataclasses.replace(settings, gibbs_params=tuple(sorted(gp.items())))


def sampling_budget(settings):
    """``(sampler asked for, factor-matrix budget in MiB in force, largest block whose matrix fits it)``."""
    sampler = settings.samplers[0]
    budget = float(settings.gibbs_kwargs(sampler).get("factor_cache_mb", 0.0) or 0.0)
    if sampler == "auto" and budget == 0.0:
        budget = float(FACTOR_CACHE_MB)
    if sampler == "racing":
        budget = 0.0        # racing never reads a matrix
    max_n = int(np.floor(np.sqrt(budget * 2.0**20 / 8.0))) if budget > 0 else 0
    return sampler, budget, max_n


def sampling_tally(blocks):
    """Counts of the per-block entries of :func:`sampler_choices` (``block``, ``n_mentions``, ``sampler``, ``why``).

    Returns
    -------
    dict
        ``n_blocks`` per used sampler, ``n_one_mention`` (blocks of one mention) and
        ``n_racing_cheaper`` (racing although the matrix fit, by the cost model): what
        :func:`sampling_summary` needs; tallies of several parts add key by key.
    """
    return {"n_blocks": {k: int(sum(b["sampler"] == k for b in blocks)) for k in ("exact-cached", "exact", "racing")},
            "n_one_mention": int(sum(b["n_mentions"] <= 1 for b in blocks)),
            "n_racing_cheaper": int(sum(b["why"].endswith("racing costs less") for b in blocks))}


def add_tallies(a, b):
    """The tally of the blocks of two tallies (:func:`sampling_tally`)."""
    return {"n_blocks": {k: a["n_blocks"].get(k, 0) + b["n_blocks"].get(k, 0) for k in ("exact-cached", "exact", "racing")},
            "n_one_mention": a["n_one_mention"] + b["n_one_mention"],
            "n_racing_cheaper": a["n_racing_cheaper"] + b["n_racing_cheaper"]}


def sampling_summary(settings, tally):
    """The ``sampling`` entry of summary.json without the per-block list, from a :func:`sampling_tally`."""
    sampler, budget, max_n = sampling_budget(settings)
    counts, single, cheaper = tally["n_blocks"], tally["n_one_mention"], tally["n_racing_cheaper"]
    parts = []
    if counts["exact-cached"]:
        parts.append(f"{_blocks(counts['exact-cached'])} exact Gibbs from the cached factor matrix "
                     f"(n <= {max_n:,}: matrix <= {budget:g} MiB)")
    if counts["exact"]:
        parts.append(f"{_blocks(counts['exact'])} exact Gibbs evaluating every factor"
                     + (f" (matrix over the budget of {budget:g} MiB)" if budget > 0 else " (--sampler exact)"))
    n_racing = (counts["racing"] - single if sampler != "exact" else counts["racing"]) - cheaper
    if n_racing:
        parts.append(f"{_blocks(n_racing)} racing"
                     + (f" (matrix over the budget of {budget:g} MiB)" if sampler == "auto" else " (--sampler racing)"))
    if cheaper:
        parts.append(f"{_blocks(cheaper)} racing (matrix within the budget, racing cheaper)")
    if single and sampler != "exact":
        parts.append(f"{_blocks(single, 'one-mention blocks')} (nothing to sample)")
    text = f"Sampler `{sampler}`: " + ("; ".join(parts) if parts else "no blocks") + "."
    return {"sampler": sampler, "factor_cache_mib": budget, "max_cached_n": max_n, "n_blocks": dict(counts),
            "n_one_mention": single, "n_racing_cheaper": cheaper, "text": text}


def canonical_cluster_ids(blocks, mention_ids, keys):
    """Cluster ids ``"<block>/<k>"`` numbered by each cluster's smallest mention id.

    Parameters
    ----------
    blocks, mention_ids, keys : array-like of shape (n_mentions,)
        Block, mention id and any cluster key (same key = same cluster within a block).

    Returns
    -------
    ndarray of object, shape (n_mentions,)
        Depends only on the partition, not on the keys' values.
    """
    frame = pd.DataFrame({"b": np.asarray(blocks, dtype=object).astype(str),
                          "m": np.asarray(mention_ids, dtype=object).astype(str),
                          "k": np.asarray(keys, dtype=object).astype(str)})
    first = frame.groupby(["b", "k"], sort=False)["m"].transform("min")
    frame["first"] = first
    order = frame[["b", "first"]].drop_duplicates().sort_values(["b", "first"], kind="stable")
    order["n"] = order.groupby("b").cumcount()
    n = frame.merge(order, on=["b", "first"], how="left")["n"].to_numpy()
    return (frame["b"] + "/" + pd.Series(n).astype(str)).to_numpy(dtype=object)


def result_margins(results):
    """Margin of every mention in its final cluster, from the block results of the inference.

    Parameters
    ----------
    results : list of coref.inference.BlockResult
        Inferred with ``margins=True``.

    Returns
    -------
    pandas.Series of float
        mention_id -> the sum of f_theta to the other members of its cluster (NaN for
        singletons; :func:`coref.margins.cluster_margins`).
    """
    if not results:
        return pd.Series(dtype=float)
    return pd.Series(np.concatenate([r.margin for r in results]),
                     index=np.concatenate([r.mention_id for r in results]).astype(str))


def result_shifts(results):
    """Block -> the prior shift d_b its factors used (natural-log odds), for the results that say it."""
    return {r.block: float(r.prior_shift) for r in results if getattr(r, "prior_shift", None) is not None}


@gc_paused()
def predict_clusters(df, model, settings, *, client=None, progress=False, return_encodings=False):
    """Cluster every block of ``df`` with a fitted model.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions (schema of :func:`coref.io.load_mentions`); a ``gold`` column is ignored.
    model : coref.model.PairwiseModel
        Fitted.
    settings : coref.settings.CorefSettings
        Seed, delta, sweeps (validated once by :func:`coref.settings.make_settings`).
    client : distributed.Client or None
        Dask client; ``None`` runs here.
    progress : bool
        Show a progress bar.
    return_encodings : bool
        Also return, under ``stats["encodings"]``, the per-mention encoding of ``df``
        (:class:`coref.encoding.MentionEncoding`, rows of ``df``), for ``encodings.npz``.

    Returns
    -------
    clusters : pandas.DataFrame
        mention_id, block, cluster_id (+ gold, passed through, when ``df`` has it), in
        the row order of ``df``.
    stats : dict
        ``n_factor_evals`` and ``gibbs_wall_s`` summed over blocks; ``sampling``
        (:func:`sampler_choices`: the sampler of each block and why); ``margins``
        (:func:`result_margins`); ``prior_shifts`` (:func:`result_shifts`).
    """
    feats = df.drop(columns=[c for c in ("gold",) if c in df.columns]).reset_index(drop=True)
    # the per-mention work once for all blocks (batched); each block is assembled from it
    encodings = mention_encoding.encode_parts(feats, model.vocabulary_)
    results = infer_blocks(feats, model, settings, record_history=False, client=client, progress=progress,
                           margins=True, encodings=encodings)
    mids = np.concatenate([r.mention_id for r in results]) if results else np.array([], object)
    keys = np.concatenate([r.cluster_id for r in results]) if results else np.array([], object)
    blocks = np.concatenate([[r.block] * len(r.mention_id) for r in results]) if results else np.array([], object)
    cid = pd.Series(canonical_cluster_ids(blocks, mids, keys), index=pd.Index(mids.astype(str)))
    clusters = pd.DataFrame({"mention_id": df["mention_id"].astype(str).to_numpy(),
                             "block": df["block"].astype(str).to_numpy()})
    clusters["cluster_id"] = cid.reindex(clusters["mention_id"]).to_numpy()
    if "gold" in df.columns:
        clusters["gold"] = df["gold"].to_numpy()
    stats = {"n_factor_evals": int(sum(r.n_factor_evals for r in results)),
             "gibbs_wall_s": float(sum(r.wall_s for r in results)),
             "sampling": sampler_choices(results, settings),
             "margins": result_margins(results), "prior_shifts": result_shifts(results)}
    if return_encodings:
        stats["encodings"] = encodings
    return clusters, stats
