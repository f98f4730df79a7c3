"""Encoded blocks computed once and passed explicitly to every consumer.

Encoding a block (:meth:`coref.model.PairwiseModel.encode`) is the costliest step of a
run after Gibbs itself. The Gibbs sampler (:meth:`coref.gibbs.GibbsCoref.fit`), the
cluster margins and the confidence code (:func:`coref.confidence.assignment_confidence`)
all need the same :class:`~coref.encoding.EncodedBlock` of a block's rows in mention-id
order; an :class:`EncodingCache` is handed to each of them (``encodings=``) so that a
block is encoded once. It holds encodings only: the model (theta, bias, block prior)
stays the caller's, so a shift of the bias set after the encodings were made is seen.

An entry is found by block name and the exact sequence of mention ids it covers; a
cache made with ``parts`` (the per-mention encoding of a run, :class:`MentionEncoding`)
also assembles any block whose mentions are all among them
(:func:`coref.encoding.assemble_block`: the same arrays as encoding the text again).

Such a cache remembers the coauthor-graph components of every block it held (three int32
arrays per mention, :func:`coref.encoding.block_components`), also after :meth:`EncodingCache.drop`:
they are the costly part of an assembly (the spectral cuts of thin coauthor groups), and a
block dropped to bound memory and asked for again (the review queue after the confidence
pass) is assembled from them, the same arrays bit for bit.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from coref.encoding.blocks import assemble_block, block_components

__all__ = ["EncodingCache"]


def _ids(mention_ids):
    return np.asarray(mention_ids, dtype=object).astype(str)


#: the fields of an EncodedBlock that are its block_components entry
_COMPONENTS = ("comp1", "comp2", "comp3")


class EncodingCache:
    """Encoded blocks keyed by block name and the mention ids they cover.

    Parameters
    ----------
    model : PairwiseModel
        Fitted model whose ``encode(df)`` makes the blocks the cache does not hold.
    parts : MentionEncoding, optional
        Per-mention encoding of the mentions ``part_ids`` (rows aligned); blocks made of
        these mentions are assembled from it instead of encoded from their text.
    part_ids : array-like of str, optional
        Mention id of each row of ``parts`` (required with ``parts``).

    Raises
    ------
    ValueError
        If ``parts`` is given without ``part_ids`` of the same length.
    """

    def __init__(self, model, *, parts=None, part_ids=None):
        self.model = model
        self._blocks = {}
        self._components = {}      # block -> (mention ids, its block_components entry); kept by drop
        self._parts = parts
        self._part_index = None
        if parts is not None:
            if part_ids is None or len(part_ids) != len(parts):
                raise ValueError("EncodingCache: parts needs part_ids, one mention id per row of parts")
            self._part_index = pd.Index(_ids(part_ids))

    @classmethod
    def of_blocks(cls, model, df):
        """Every block of ``df`` encoded once, rows in mention-id order (the order Gibbs uses).

        Parameters
        ----------
        model : PairwiseModel
            Fitted model.
        df : pandas.DataFrame
            Mentions with ``mention_id`` and ``block`` (and the feature columns).

        Returns
        -------
        EncodingCache
        """
        cache = cls(model)
        for b, rows in df.groupby("block", sort=False).indices.items():
            part = df.iloc[rows]
            part = part.iloc[np.argsort(part["mention_id"].astype(str).to_numpy(dtype=object), kind="stable")]
            cache.put(b, part["mention_id"], model.encode(part))
        return cache

    def __len__(self):
        return len(self._blocks)

    def put(self, block, mention_ids, enc):
        """Store ``enc``, the encoding of ``block``'s mentions ``mention_ids`` (in that order)."""
        ids = _ids(mention_ids).tolist()
        self._blocks[str(block)] = (enc, ids)
        if self._parts is not None:     # (only a cache that assembles blocks needs them again)
            self._components[str(block)] = (ids, {c: getattr(enc, c) for c in _COMPONENTS})

    def _known_components(self, block, ids):
        """The remembered components of ``block`` when they cover exactly ``ids`` (a list), else None."""
        hit = self._components.get(block)
        return hit[1] if hit is not None and hit[0] == ids else None

    def _assemble(self, todo):
        """Assemble ``todo`` = [(block, ids list, rows of parts)], components computed (in one
        batch) only for the blocks whose components are not remembered; store nothing."""
        takes = [self._parts.take(rows) for _, _, rows in todo]
        comps = [self._known_components(block, ids) for block, ids, _ in todo]
        missing = [k for k, c in enumerate(comps) if c is None]
        if missing:
            for k, c in zip(missing, block_components([takes[k] for k in missing])):
                comps[k] = c
        return [assemble_block(t, c) for t, c in zip(takes, comps)]

    def prefetch(self, frames):
        """Assemble, in one batch, the blocks of ``frames`` that the cache can assemble but does not hold.

        Assembling many blocks at once finds their coauthor-graph components in three scipy
        calls in all (:func:`coref.encoding.assemble_blocks`) rather than three per block; the
        arrays are those of :meth:`lookup`. Pair with :meth:`drop` to bound memory.

        Parameters
        ----------
        frames : sequence of pandas.DataFrame
            One block each (``mention_id``, ``block``), rows in the order wanted.

        Returns
        -------
        list of str
            The blocks assembled and stored.
        """
        if self._part_index is None:
            return []
        todo = []
        for df in frames:
            if len(df) == 0:
                continue
            block, ids = str(df["block"].iloc[0]), _ids(df["mention_id"].to_numpy(dtype=object))
            hit = self._blocks.get(block)
            if hit is not None and ids.tolist() == hit[1]:
                continue
            rows = self._part_index.get_indexer(ids)
            if (rows >= 0).all():
                todo.append((block, ids.tolist(), rows))
        encs = self._assemble(todo)
        for (block, ids, _), enc in zip(todo, encs):
            self.put(block, ids, enc)
        return [block for block, _, _ in todo]

    def drop(self, blocks):
        """Forget the encodings of ``blocks`` (names; their components are kept); unknown names are ignored."""
        for b in blocks:
            self._blocks.pop(str(b), None)

    def lookup(self, block, mention_ids):
        """The encoding of ``block``'s mentions ``mention_ids`` (in that order), or None if not held.

        A stored entry must cover exactly these ids in this order; otherwise, with
        ``parts``, a block whose mentions all have a row there is assembled from them.
        """
        ids = _ids(mention_ids)
        hit = self._blocks.get(str(block))
        if hit is not None and ids.tolist() == hit[1]:
            return hit[0]
        if self._part_index is not None and len(ids):
            rows = self._part_index.get_indexer(ids)
            if (rows >= 0).all():
                return self._assemble([(str(block), ids.tolist(), rows)])[0]
        return None

    def encode(self, df):
        """The encoding of the rows of ``df`` (one block): held or assembled, else ``model.encode(df)``."""
        if len(df):
            hit = self.lookup(str(df["block"].iloc[0]), df["mention_id"].to_numpy(dtype=object))
            if hit is not None:
                return hit
        return self.model.encode(df)
