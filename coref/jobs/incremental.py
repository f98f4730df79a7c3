"""New mentions into an existing clustering, without renumbering it.

Blocks that already exist: Gibbs starts from the existing clusters with every old
mention fixed (``GibbsCoref.fit(initial=..., fixed=...)``), so each new mention joins
an existing cluster or opens a new one, and no existing assignment changes. Such a block
also keeps the prior shift d_b its old run estimated (when that run recorded it, e.g.
``blocks.csv`` of a streamed output) while its new mentions number at most
:data:`KEEP_PRIOR_FRACTION` of its old ones: the new mentions are placed by the same
factors that clustered the old ones, and the estimate's n^2 pairs are not evaluated
again; a block grown more than that, one that reaches the model's big-block size (other
weights), or ``revisit`` has its prior estimated again (:func:`kept_prior_shifts`). With
``revisit`` the old mentions of those blocks may move too; a final cluster then keeps
the id held by most of its old mentions (larger clusters choose first) and the others
get new ids. Blocks that are new are clustered from scratch, as ``coref predict`` does.
New clusters in an existing block get ``"<block>/<k>"`` with k above every id of the
form ``"<block>/<int>"`` in use.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.encoding import mentions as mention_encoding
from coref.encoding.mentions import MentionEncoding
from coref.inference import block_order, infer_blocks
from coref.io import gc_paused
from coref.jobs.clusters import canonical_cluster_ids, result_margins, result_shifts, sampler_choices

__all__ = ["add_clusters", "next_cluster_k", "name_final_clusters", "kept_prior_shifts", "KEEP_PRIOR_FRACTION",
           "ADD_SWEEPS"]

#: Default Gibbs sweeps of an add (``coref add``, ``AuthorCoref.add``): only the new mentions move,
#: against fixed clusters. On the shipped data (80% predicted, 20% added, the coref-add check's split),
#: 2026-11-24: 10 sweeps B3 F1 0.8827 with 856,854 factor evaluations, 5 sweeps 0.8828 with 651,488,
#: 4 sweeps 0.8824 (an earlier feature set: 10 sweeps 0.8795, 30 sweeps 0.8794).
ADD_SWEEPS = 5

#: An existing block keeps its recorded prior shift while its new mentions are at most this
#: fraction of its old ones (and ``revisit`` is off); otherwise the shift is estimated again.
KEEP_PRIOR_FRACTION = 0.1


def next_cluster_k(ids, block):
    """1 + the largest k of the ids ``{block}/{k}`` (k decimal digits), 0 if there is none."""
    prefix = f"{block}/"
    cut = len(prefix)
    ks = [int(i[cut:]) for i in ids if i.startswith(prefix) and i[cut:].isdecimal()]
    return max(ks) + 1 if ks else 0


@gc_paused()
def add_clusters(model, old_mentions, old_clusters, new_mentions, settings, *, client=None, progress=False,
                 old_encodings=None, return_encodings=False, old_prior_shifts=None):
    """Cluster ``new_mentions`` into an existing clustering.

    Parameters
    ----------
    model : coref.model.PairwiseModel
        Fitted.
    old_mentions : pandas.DataFrame
        The mentions already clustered (mention schema).
    old_clusters : pandas.DataFrame
        mention_id, block, cluster_id of ``old_mentions`` (optional gold passed through).
    new_mentions : pandas.DataFrame
        Mentions to add (mention schema; ``gold`` ignored and passed through).
    settings : coref.settings.CorefSettings
        Seed, delta, sweeps, ``revisit`` and ``strict``.
    client, progress
        As in :func:`coref.jobs.clusters.predict_clusters`.
    old_encodings : coref.encoding.MentionEncoding, list of them, or None
        Per-mention encodings of (at least) the old mentions (a list: of its parts
        together), made with ``model``'s
        vocabulary (``encodings.npz`` of the earlier output, validated); ``None``
        encodes the old mentions that are needed again. Only the new mentions are
        encoded from their text; each touched block is assembled from both.
    return_encodings : bool or "new"
        Also return, under ``info["encodings"]``, the per-mention encoding of every
        mention of the result (old then new, the rows of ``clusters``); ``"new"``: of
        the new mentions only (the rows of ``clusters`` after the old ones).
    old_prior_shifts : mapping of str -> float, or None
        Existing block -> the prior shift d_b (natural-log odds) its old run used; kept
        as described in the module docstring (:data:`KEEP_PRIOR_FRACTION`).

    Returns
    -------
    clusters : pandas.DataFrame
        Old rows first (in their order), then the new ones: mention_id, block,
        cluster_id (+ gold when either side has it).
    info : dict
        Counts: new mentions, skipped duplicates, blocks touched / new, mentions that
        joined existing clusters, new clusters, old ids changed, factor evaluations,
        ``n_blocks_prior_kept`` (touched blocks that kept their old prior shift); and
        ``margins`` (Series mention_id -> margin, for the blocks that were sampled) and
        ``prior_shifts`` (block -> the d_b its factors used, for the blocks sampled).

    Raises
    ------
    ValueError
        If a new mention id is already clustered and ``settings.strict``; if the old
        tables disagree.
    RuntimeError
        If a fixed old mention was moved (a sampler that ignores ``fixed``).
    """
    old = _OldClusters(old_clusters)
    new, skipped = _drop_clustered(new_mentions, old.ids, strict=settings.strict)
    old_blocks = set(old.block_of.tolist())
    new_blocks = set(new["block"].tolist())
    touched = sorted(new_blocks & old_blocks)
    fresh = sorted(new_blocks - old_blocks)
    feats = [c for c in new.columns if c != "gold"]
    source = _EncodingSource(model, old, old_mentions, old_encodings, new, feats)
    sampled = _Sampled()
    # existing blocks: start from the old clusters, old mentions fixed (unless revisit)
    if touched:
        _sample_touched(sampled, model, settings, old, new, source, set(touched), client=client, progress=progress,
                        old_prior_shifts=old_prior_shifts)
    # new blocks: from scratch, ids as coref predict gives them
    if fresh:
        _sample_fresh(sampled, model, settings, new, feats, source, set(fresh), client=client, progress=progress)
    clusters, info = _assemble(old, old_clusters, new, sampled, revisit=settings.revisit)
    info = {"n_old_mentions": int(len(old.ids)), "n_new_mentions": int(len(new)),
            "n_skipped_duplicates": len(skipped), "skipped_duplicates": skipped[:20],
            "n_blocks_touched": len(touched), "n_blocks_new": len(fresh), **info,
            **sampled.stats, "sampling": sampler_choices(sampled.results, settings),
            "margins": result_margins(sampled.results), "prior_shifts": result_shifts(sampled.results)}
    if return_encodings == "new":
        info["encodings"] = source.new_enc
    elif return_encodings:
        info["encodings"] = source.all_encodings()
    return clusters, info


class _OldClusters:
    """The old clustering by mention id: ``ids``, ``block_of`` and ``cid`` (cluster id), as str."""

    def __init__(self, old_clusters):
        old_clusters = old_clusters.reset_index(drop=True)
        # (dtype object: pandas would store these str as Arrow strings, converted back at every use)
        self.ids = pd.Index(old_clusters["mention_id"].astype(str).to_numpy(dtype=object), dtype=object)
        if self.ids.has_duplicates:
            raise ValueError("old clusters: duplicate mention ids, e.g. "
                             + repr(self.ids[self.ids.duplicated()][:3].tolist()))
        self.block_of = pd.Series(old_clusters["block"].astype(str).to_numpy(dtype=object), index=self.ids,
                                  dtype=object)
        self.cid = pd.Series(old_clusters["cluster_id"].astype(str).to_numpy(dtype=object), index=self.ids,
                             dtype=object)


class _Sampled:
    """What the sampled blocks gave: block results, costs and the final ids."""

    def __init__(self):
        self.results = []
        self.stats = {"n_factor_evals": 0, "gibbs_wall_s": 0.0, "n_blocks_prior_kept": 0}
        self.final_old_of = {}   # old mention -> its final id (only where sampled)
        self.new_cid_of = {}     # new mention -> its id

    def extend(self, results):
        self.results.extend(results)
        for r in results:
            self.stats["n_factor_evals"] += r.n_factor_evals
            self.stats["gibbs_wall_s"] += r.wall_s


def _drop_clustered(new_mentions, old_ids, *, strict):
    """The new mentions whose id is not clustered yet (ids and blocks as str), and the ids skipped."""
    new = new_mentions.reset_index(drop=True).copy()
    new["mention_id"] = new["mention_id"].astype(str).to_numpy(dtype=object)
    old_set = set(old_ids.tolist())
    dup = np.fromiter((m in old_set for m in new["mention_id"].tolist()), bool, len(new))
    skipped = new.loc[dup, "mention_id"].tolist()
    if skipped and strict:
        raise ValueError(f"{len(skipped)} new mention id(s) are already clustered, e.g. {skipped[:3]}")
    new = new[~dup].reset_index(drop=True)
    new["block"] = new["block"].astype(str).to_numpy(dtype=object)
    return new, skipped


class _EncodingSource:
    """Per-mention encodings of the old and the new mentions, each made once.

    The new mentions' come from their text, in one batch; the old ones' from
    ``old_encodings`` (or, without them, from the text of the old mentions needed).
    ``enc_all`` holds old_encodings' rows, then the new mentions' (tables merged once);
    every block is assembled from a take of it, the same arrays as from a concat of takes.
    """

    def __init__(self, model, old, old_mentions, old_encodings, new, feats):
        self.model, self.old = model, old
        self.new_enc = mention_encoding.encode_parts(new[feats], model.vocabulary_)
        if old_encodings is not None:
            # (a list: several files' encodings, merged with the new mentions' in one concat)
            parts = list(old_encodings) if isinstance(old_encodings, (list, tuple)) else [old_encodings]
            old_ids = np.concatenate([p.mention_id for p in parts]) if parts else np.array([], object)
            pos = pd.Index(old_ids.astype(str)).get_indexer(old.ids)
            if (pos < 0).any():
                raise ValueError(f"old_encodings lack {int((pos < 0).sum())} of the old mentions, e.g. "
                                 f"{old.ids[pos < 0][:3].tolist()}")
            self.old_enc_of = pd.Series(pos, index=old.ids)
            self.enc_all = MentionEncoding.concat(parts + [self.new_enc])
            self.n_old_enc = len(old_ids)
            self.om = None                         # the old mentions' text is not needed
        else:
            self.old_enc_of = None
            om = old_mentions.copy()
            om["mention_id"] = om["mention_id"].astype(str)
            self.om = om.set_index("mention_id")

    def touched_part(self, in_touched, new, new_in, feats):
        """The mentions of the touched blocks and their encodings, block after block (blocks in order of
        first appearance, old ones first; mentions by id within a block: the order
        :func:`coref.inference.infer_blocks` assembles them in, so it gathers nothing again).

        Returns
        -------
        part : pandas.DataFrame
            mention_id, block (and, without old encodings, the mention fields).
        enc_part : coref.encoding.MentionEncoding
            The encodings of ``part``'s rows.
        old_row : ndarray of int64, shape (len(part),)
            Position of each row among the touched old mentions (``old.ids[in_touched]``); -1 for a new one.
        """
        old = self.old
        old_rows = old.block_of.index[in_touched]
        n_old = len(old_rows)
        new_pos = np.flatnonzero(new_in)
        mids = np.r_[old_rows.to_numpy(dtype=object), new["mention_id"].to_numpy(dtype=object)[new_pos]]
        blocks = np.r_[old.block_of.to_numpy()[in_touched], new["block"].to_numpy(dtype=object)[new_pos]]
        order = block_order(blocks, mids)[0]
        old_row = np.r_[np.arange(n_old), np.full(len(new_pos), -1)][order]
        if self.om is None:
            # the blocks are assembled from the encodings: infer_blocks reads only ids and blocks
            part = pd.DataFrame({"mention_id": mids[order], "block": blocks[order]})
            enc_part = self.enc_all.take(np.r_[self.old_enc_of.to_numpy()[in_touched],
                                               self.n_old_enc + new_pos][order])
        else:
            part_old = self.om.loc[old_rows].reset_index()
            part_old["block"] = old.block_of.loc[old_rows].to_numpy()
            cols = [c for c in feats if c in part_old.columns]
            part = pd.concat([part_old[cols], new.loc[new_in, cols]], ignore_index=True)
            enc_old = mention_encoding.encode_parts(part_old[cols], self.model.vocabulary_)
            enc_part = MentionEncoding.concat([enc_old, self.new_enc.take(new_pos)]).take(order)
            part = part.iloc[order].reset_index(drop=True)
        return part, enc_part, old_row.astype(np.int64)

    def all_encodings(self):
        """The encodings of every mention of the result: the old ones, then the new ones."""
        if self.old_enc_of is None:
            enc_all_old = mention_encoding.encode_parts(self.om.loc[self.old.ids].reset_index(), self.model.vocabulary_)
            return MentionEncoding.concat([enc_all_old, self.new_enc])
        return self.enc_all.take(np.r_[self.old_enc_of.to_numpy(), self.n_old_enc + np.arange(len(self.new_enc))])


def _sample_touched(sampled, model, settings, old, new, source, touched_set, *, client, progress,
                    old_prior_shifts=None):
    """Gibbs on the blocks that hold old and new mentions, from the old clusters; ids into ``sampled``."""
    # (object arrays: a hash-table isin; isin on pyarrow strings would loop in Python)
    in_touched = pd.Index(old.block_of.to_numpy(dtype=object)).isin(list(touched_set))
    new_in = np.fromiter((b in touched_set for b in new["block"].tolist()), bool, len(new))
    feats = [c for c in new.columns if c != "gold"]
    part, enc_part, old_row = source.touched_part(in_touched, new, new_in, feats)
    is_old = old_row >= 0
    initial = np.full(len(part), None, object)
    initial[is_old] = old.cid.to_numpy(dtype=object)[in_touched][old_row[is_old]]
    fixed = is_old & (not settings.revisit)
    keep = kept_prior_shifts(part["block"].to_numpy(dtype=object), is_old, old_prior_shifts, settings.revisit,
                             big_block=getattr(model, "is_big_block", None))
    sampled.stats["n_blocks_prior_kept"] += len(keep)
    results = infer_blocks(part, model, settings, record_history=False, client=client, progress=progress,
                           initial=initial, fixed=fixed, margins=True, encodings=enc_part, prior_shift=keep)
    sampled.extend(results)
    used = set(old.cid.tolist())
    mids = np.concatenate([r.mention_id for r in results]).astype(str) if results else np.zeros(0, str)
    if not np.array_equal(mids, part["mention_id"].to_numpy(dtype=object).astype(str)):
        raise RuntimeError("infer_blocks returned the touched blocks' mentions in another order than given")
    bounds = np.cumsum([0] + [len(r.mention_id) for r in results])
    for r, lo, hi in zip(results, bounds[:-1].tolist(), bounds[1:].tolist()):
        # (part is in block order, as infer_blocks returns its blocks: the rows of r are part[lo:hi])
        old_here = is_old[lo:hi]
        olds = initial[lo:hi]
        names = name_final_clusters(r, old_here, olds, olds[old_here].tolist(), used)
        sampled.final_old_of.update(zip(mids[lo:hi][old_here].tolist(), names[old_here].tolist()))
        sampled.new_cid_of.update(zip(mids[lo:hi][~old_here].tolist(), names[~old_here].tolist()))


def kept_prior_shifts(blocks, is_old, old_prior_shifts, revisit, big_block=None):
    """The touched blocks that keep their old prior shift, and that shift.

    Parameters
    ----------
    blocks : ndarray of object, shape (n,)
        Block of each mention of the touched blocks.
    is_old : ndarray of bool, shape (n,)
        Which mentions were clustered before.
    old_prior_shifts : mapping of str -> float, or None
        The recorded shifts (natural-log odds); blocks without a finite one are estimated.
    revisit : bool
        Old mentions may move: every block is estimated again.
    big_block : callable or None
        ``PairwiseModel.is_big_block``: a block that crosses the model's big-block size
        (``big_.min_n``) changes weights, and its shift (relative to the other weights'
        intercept) is estimated again.

    Returns
    -------
    dict of str -> float
        Blocks whose new mentions number at most :data:`KEEP_PRIOR_FRACTION` of their old ones
        and that keep their weights.
    """
    if revisit or not old_prior_shifts:
        return {}
    codes, names = pd.factorize(np.asarray(blocks, dtype=object))
    n_old = np.bincount(codes[is_old], minlength=len(names))
    n_new = np.bincount(codes[~is_old], minlength=len(names))
    out = {}
    for b, o, m in zip(names.tolist(), n_old.tolist(), n_new.tolist()):
        d = old_prior_shifts.get(b)
        same_weights = big_block is None or bool(big_block(o)) == bool(big_block(o + m))
        if d is not None and np.isfinite(d) and m <= KEEP_PRIOR_FRACTION * o and same_weights:
            out[b] = float(d)
    return out


def _sample_fresh(sampled, model, settings, new, feats, source, fresh_set, *, client, progress):
    """Gibbs on the blocks of new mentions only, ids as ``coref predict`` numbers them; into ``sampled``."""
    in_fresh = np.fromiter((b in fresh_set for b in new["block"]), bool, len(new))
    part = new.loc[in_fresh, feats].reset_index(drop=True)
    results = infer_blocks(part, model, settings, record_history=False, client=client, progress=progress,
                           margins=True, encodings=source.new_enc.take(np.flatnonzero(in_fresh)))
    sampled.extend(results)
    if results:   # ids as coref predict numbers them, all new blocks at once
        mids = np.concatenate([r.mention_id for r in results])
        ids = canonical_cluster_ids(np.concatenate([[r.block] * len(r.mention_id) for r in results]), mids,
                                    np.concatenate([r.cluster_id for r in results]))
        sampled.new_cid_of.update(zip(mids.astype(str).tolist(), list(ids)))


def _assemble(old, old_clusters, new, sampled, *, revisit):
    """The whole clustering (old rows, then new) and the counts of joined / new clusters and changed ids."""
    final_old = pd.Series([sampled.final_old_of.get(m, c) for m, c in zip(old.ids.tolist(), old.cid.tolist())],
                          index=old.ids, dtype=object)
    new_cid = pd.Series([sampled.new_cid_of.get(m) for m in new["mention_id"].tolist()],
                        index=pd.Index(new["mention_id"]), dtype=object)
    changed = int((final_old != old.cid).sum())
    if changed and not revisit:
        raise RuntimeError(f"the sampler moved {changed} fixed old mention(s); it must honour fixed=")
    out_old = pd.DataFrame({"mention_id": old.ids, "block": old.block_of.to_numpy(),
                            "cluster_id": final_old.to_numpy()})
    out_new = pd.DataFrame({"mention_id": new["mention_id"].to_numpy(), "block": new["block"].to_numpy(),
                            "cluster_id": new_cid.reindex(new["mention_id"]).to_numpy()})
    old_clusters = old_clusters.reset_index(drop=True)
    if "gold" in old_clusters.columns or "gold" in new.columns:
        out_old["gold"] = old_clusters["gold"].to_numpy() if "gold" in old_clusters.columns else pd.NA
        out_new["gold"] = new["gold"].to_numpy() if "gold" in new.columns else pd.NA
    clusters = pd.concat([out_old, out_new], ignore_index=True)
    existing = set(old.cid.tolist())
    joined = np.fromiter((c in existing for c in out_new["cluster_id"].tolist()), bool, len(out_new))
    return clusters, {"n_joined_existing": int(joined.sum()),
                      "n_new_clusters": int(out_new.loc[~joined, "cluster_id"].nunique()),
                      "n_old_ids_changed": changed}


def name_final_clusters(result, is_old, old_cid_of, block_ids, used):
    """Cluster id of every mention of one sampled block that held old mentions.

    A final cluster keeps the old id held by most of its old mentions (larger final
    clusters choose first, ties by the earliest mention, then by the id); a cluster
    left without one gets ``"<block>/<k>"``, k from :func:`next_cluster_k` and not in
    ``used``.

    Parameters
    ----------
    result : coref.inference.BlockResult
    is_old : ndarray of bool, shape (n_block_mentions,)
        Which mentions of ``result`` were clustered before.
    old_cid_of : dict or ndarray of object
        Old mention id -> its old cluster id; or the old cluster id of each mention of
        ``result`` (shape (n_block_mentions,), read where ``is_old``).
    block_ids : list of str
        The old cluster ids of the block (repeats allowed).
    used : set of str
        Every cluster id in use; the new ids are added to it.

    Returns
    -------
    ndarray of object, shape (n_block_mentions,)
    """
    block = result.block
    mids = result.mention_id.astype(str)
    codes, _ = pd.factorize(result.cluster_id.astype(str))
    sizes = np.bincount(codes)
    first = np.full(len(sizes), len(codes))
    np.minimum.at(first, codes, np.arange(len(codes)))
    fast = _one_old_id_each(codes, mids, is_old, old_cid_of, len(sizes))
    if fast is not None:
        return _name_with_one_old_id_each(block, codes, fast, sizes, first, block_ids, used)
    # votes[c] = {old id: how many of its mentions final cluster c holds}
    votes = {}
    for c, o in zip(codes[is_old].tolist(), _old_ids(mids, is_old, old_cid_of).tolist()):
        cnt = votes.setdefault(c, {})
        cnt[o] = cnt.get(o, 0) + 1
    k_next = next_cluster_k(block_ids, block)
    name_of = {}
    taken = set()
    # larger final clusters choose their id first; an id goes to the cluster holding most of its mentions
    for c in np.lexsort((first, -sizes)):
        cnt = votes.get(c, {})
        choice = next((o for o, _ in sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0])) if o not in taken), None)
        if choice is None:
            while f"{block}/{k_next}" in used:
                k_next += 1
            choice = f"{block}/{k_next}"
            used.add(choice)
            k_next += 1
        taken.add(choice)
        name_of[c] = choice
    return np.array([name_of[c] for c in codes], dtype=object)


def _old_ids(mids, is_old, old_cid_of):
    """The old cluster ids of the old mentions (``mids[is_old]``), ndarray of object; ``old_cid_of`` as
    in :func:`name_final_clusters` (a dict by mention id, or the old id of every mention)."""
    if isinstance(old_cid_of, np.ndarray):
        return np.asarray(old_cid_of[is_old], dtype=object)
    return np.array([old_cid_of[m] for m in mids[is_old].tolist()], dtype=object)


def _one_old_id_each(codes, mids, is_old, old_cid_of, n_clusters):
    """The old id of each final cluster (None where it holds no old mention) when no final
    cluster holds old mentions of two old clusters and no old cluster is split between two
    final ones (old mentions fixed: always); else None.  ``old_cid_of`` as in :func:`_old_ids`."""
    if not is_old.any():
        return np.full(n_clusters, None, dtype=object)
    old_ids = _old_ids(mids, is_old, old_cid_of)
    k, uniq = pd.factorize(old_ids)
    c = codes[is_old]
    lo = np.full(n_clusters, len(uniq), dtype=np.int64)
    hi = np.full(n_clusters, -1, dtype=np.int64)
    np.minimum.at(lo, c, k)
    np.maximum.at(hi, c, k)
    has = hi >= 0
    if (lo[has] != hi[has]).any() or len(np.unique(lo[has])) != int(has.sum()):
        return None
    out = np.full(n_clusters, None, dtype=object)
    out[has] = np.asarray(uniq, dtype=object)[lo[has]]
    return out


def _name_with_one_old_id_each(block, codes, old_id, sizes, first, block_ids, used):
    """:func:`name_final_clusters` when each final cluster holds old mentions of at most one
    old cluster: the same ids, without the votes (each old id is the only one its cluster
    can take, and no two clusters want it)."""
    name_of = old_id.copy()
    k_next = next_cluster_k(block_ids, block)
    for c in np.lexsort((first, -sizes)):
        if name_of[c] is None:
            while f"{block}/{k_next}" in used:
                k_next += 1
            name_of[c] = f"{block}/{k_next}"
            used.add(name_of[c])
            k_next += 1
    return name_of[codes]
