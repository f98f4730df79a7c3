"""Block assembly: the :class:`EncodedBlock` of a block from the encodings of its mentions.

The block-level work runs in the compiled kernel ``coref.encoding._assemble`` (one call per
block; its pure-numpy twin ``coref.encoding._assemble_py`` is used by the tests). The
connected components of the coauthor graphs come from scipy
(:func:`coref.encoding.components.token_components`), for all the blocks of a group in three
calls (:func:`block_components`, :func:`assemble_blocks`). The features computed from an
:class:`EncodedBlock` are listed in :mod:`coref.encoding`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from coref.encoding._arrays import take_csr
from coref.encoding.components import coauthor_groups, token_components
from coref.encoding.mentions import MentionEncoding, encode_parts
from coref.encoding.vocabulary import Vocabulary
from coref.factors.papers import paper_mates

__all__ = ["EncodedBlock", "assemble_block", "assemble_blocks", "block_components", "encode_mentions", "permute_block"]

#: CSR lists of an EncodedBlock indexed by mention: prefix -> aligned arrays besides ``ids``
#: (the component profiles ``pt`` / ``pv`` / ``pa`` are indexed by component label instead)
_MENTION_LISTS = {"co": ("w",), "ti": ("w",), "ve": ("w",), "af": ("w",), "ck": ("w", "fn"), "ab": ("w",),
                  "kw": ("w",), "va": ("w",), "vt": ("w",)}
#: per-mention arrays of an EncodedBlock (component labels keep their values: profiles, year
#: ranges and topics of the components are indexed by label)
_MENTION_ARRAYS = ("venue_id", "affil_id", "year", "first_code", "first_init", "comp1", "comp2", "comp3",
                   "comp1_logsize", "init_code", "init_len", "mid_init", "given_code", "paper_code", "name_rarity",
                   "init_amb")


@dataclass(frozen=True, eq=False)
class EncodedBlock:
    """One block of mentions as flat numpy arrays (the features are listed in :mod:`coref.encoding`).

    CSR lists ``*_ptr`` (int64, shape (n + 1,)), ``*_ids`` (int32, sorted within a
    mention, token ids) and ``*_w`` (float64) for coauthors (``co``), title words
    (``ti``), venue words (``ve``), affiliation words (``af``), abstract words (``ab``),
    keywords (``kw``), venue acronyms (``va``) and venue words as acronym keys (``vt``);
    the id / weight arrays carry one trailing padding entry so they are never empty.
    Per-mention int32 arrays of shape (n,): ``venue_id``, ``affil_id``, ``year``,
    ``first_code`` (full first name), ``first_init`` (-1 = missing), ``init_code`` /
    ``init_len`` (packed given-name initials, 5 bits each, first most significant),
    ``mid_init``, ``given_code``, ``paper_code`` (the paper, -1 = unknown; a constraint, never a feature),
    ``comp1``, ``comp2`` (components of the
    shared-coauthor graphs) and float64 ``comp1_logsize``, ``name_rarity``,
    ``init_amb``. Component profiles ``pt_*`` (title), ``pv_*`` (venue), ``pa_*``
    (affiliation): CSR with n rows, row r holding the profile of the component
    labelled r. ``topic`` / ``comp_topic``: float64 of shape (n * n_topics + 1,),
    row-major unit topic vectors of the mentions / of the components (rows by label).
    ``ck_*``: coauthors keyed by first initial + last name, with ``ck_fn`` the code of
    the coauthor's full first name (-1 = initial only). ``mate_ptr`` / ``mate_idx``: the
    paper mates of each mention (:func:`coref.factors.papers.paper_mates`; None = none).
    """

    n: int
    co_ptr: np.ndarray
    co_ids: np.ndarray
    co_w: np.ndarray
    ti_ptr: np.ndarray
    ti_ids: np.ndarray
    ti_w: np.ndarray
    ve_ptr: np.ndarray
    ve_ids: np.ndarray
    ve_w: np.ndarray
    af_ptr: np.ndarray
    af_ids: np.ndarray
    af_w: np.ndarray
    venue_id: np.ndarray
    affil_id: np.ndarray
    year: np.ndarray
    first_code: np.ndarray
    first_init: np.ndarray
    comp1: np.ndarray
    comp2: np.ndarray
    comp1_logsize: np.ndarray
    pt_ptr: np.ndarray
    pt_ids: np.ndarray
    pt_w: np.ndarray
    pv_ptr: np.ndarray
    pv_ids: np.ndarray
    pv_w: np.ndarray
    pa_ptr: np.ndarray
    pa_ids: np.ndarray
    pa_w: np.ndarray
    comp_ymin: np.ndarray
    comp_ymax: np.ndarray
    comp3: np.ndarray
    ck_ptr: np.ndarray
    ck_ids: np.ndarray
    ck_w: np.ndarray
    ck_fn: np.ndarray
    init_code: np.ndarray
    init_len: np.ndarray
    mid_init: np.ndarray
    given_code: np.ndarray
    paper_code: np.ndarray
    name_rarity: np.ndarray
    init_amb: np.ndarray
    ab_ptr: np.ndarray
    ab_ids: np.ndarray
    ab_w: np.ndarray
    kw_ptr: np.ndarray
    kw_ids: np.ndarray
    kw_w: np.ndarray
    va_ptr: np.ndarray
    va_ids: np.ndarray
    va_w: np.ndarray
    vt_ptr: np.ndarray
    vt_ids: np.ndarray
    vt_w: np.ndarray
    n_topics: int
    topic: np.ndarray
    comp_topic: np.ndarray
    block_stats: tuple = (0.0, 0.0, 0.0, 0.0, 0.0)
    mention_id: tuple = ()
    mate_ptr: np.ndarray | None = None
    mate_idx: np.ndarray | None = None

    def __len__(self) -> int:
        return self.n


_ASSEMBLE = None
_BLOCK_FIELDS = frozenset(f.name for f in fields(EncodedBlock))


def _assemble_kernel():
    """The compiled ``coref.encoding._assemble`` module (ImportError with how to build it if unbuilt)."""
    global _ASSEMBLE
    if _ASSEMBLE is None:
        from sampling.utils.kernels import load_kernel

        _ASSEMBLE = load_kernel("coref.encoding._assemble")
    return _ASSEMBLE


def block_components(encs):
    """The coauthor-graph components of several blocks, with three scipy calls in all.

    Parameters
    ----------
    encs : sequence of MentionEncoding
        The mentions of each block (one encoding per block, in block row order).

    Returns
    -------
    list of dict
        Per block, ``comp1`` / ``comp2`` (mentions sharing >= 1 / >= 2 coauthors; ``comp1``
        groups of :func:`coref.encoding.components.coauthor_groups`: components of more than
        :data:`coref.encoding.components.MAX_GROUP` mentions split, thin groups cut) and
        ``comp3`` (>= 1 coauthor keyed by first initial + last name): int32 arrays of shape
        (n_b,), numbered per block in the order of each component's first mention
        (:func:`coref.encoding.components.token_components`, scipy's ``connected_components``).
    """
    encs = list(encs)
    sizes = np.array([len(e) for e in encs], dtype=np.int64)
    group = np.repeat(np.arange(len(encs), dtype=np.int64), sizes)
    out = [{} for _ in encs]
    for name, prefix, min_shared in (("comp1", "co", 1), ("comp2", "co", 2), ("comp3", "ck", 1)):
        ptrs = [np.asarray(e.arrays[f"{prefix}_ptr"], dtype=np.int64) for e in encs]
        ptr = np.zeros(int(sizes.sum()) + 1, dtype=np.int64)
        if len(encs):
            np.cumsum(np.concatenate([np.diff(p) for p in ptrs]), out=ptr[1:])
        ids = np.concatenate([e.arrays[f"{prefix}_ids"][:int(p[-1])] for e, p in zip(encs, ptrs)]) \
            if len(encs) else np.zeros(0, np.int32)
        labels = token_components(ptr, ids, min_shared, group=group)
        for k, (a, b) in enumerate(zip(np.cumsum(sizes) - sizes, np.cumsum(sizes))):
            out[k][name] = labels[a:b]
    for o, e in zip(out, encs):
        o["comp1"] = coauthor_groups(o["comp1"], o["comp2"], e.arrays["co_ptr"], e.arrays["co_ids"])
    return out


def assemble_block(enc: MentionEncoding, components: dict | None = None) -> EncodedBlock:
    """The :class:`EncodedBlock` of one block from the per-mention encoding of its mentions.

    Block-local work, in one compiled call (``coref.encoding._assemble.assemble``): coauthor codes
    in order of first appearance and their block-local IDF ``log((1 + n) / (1 + df)) + 1``
    (natural log), block-local columns of unseen words, venue / name codes, the components
    of the shared-coauthor graphs, the component profiles, year ranges and topic vectors,
    name rarity and initial ambiguity, and the block statistics (features of
    Chen & Ghahramani 2016, Sec. 5.3, after Singh et al. 2012; see the module docstring).

    Parameters
    ----------
    enc : MentionEncoding
        The mentions of ONE block, in block row order (e.g. ``encode_parts(df).take(rows)``).
    components : dict or None
        The block's entry of :func:`block_components` (computed here when ``None``; pass it
        to assemble many blocks with three scipy calls in all, see :func:`assemble_blocks`).

    Returns
    -------
    EncodedBlock
        Equal, array for array and bit for bit, to ``encode_mentions`` of the same rows;
        equal to the pure-numpy twin ``coref.encoding._assemble_py.assemble_block_py`` in
        its integer arrays and to a relative 1e-12 in its floats (sums in another order).

    Raises
    ------
    ValueError
        If an array of ``enc`` is missing or has the wrong dtype, shape or CSR layout
        (the message names it).
    ImportError
        If the compiled kernel is not built (the message says how to build it).
    """
    n = len(enc)
    nv = enc.n_vocab
    if components is None:
        components = block_components([enc])[0]
    out = _assemble_kernel().assemble(
        enc.arrays, (nv["title"], nv["venue"], nv["affiliation"], nv["abstract"], nv["keywords"]), n,
        enc.n_topics, components)
    out["n"] = n
    out["n_topics"] = int(enc.n_topics)
    out["mention_id"] = tuple(map(str, enc.mention_id.tolist()))
    out["mate_ptr"], out["mate_idx"] = paper_mates(out["paper_code"], out["co_ptr"], out["co_ids"])
    if out.keys() != _BLOCK_FIELDS:
        raise RuntimeError(f"coref.encoding._assemble returned the fields {sorted(out)}, not those of EncodedBlock")
    # every field at once (a frozen dataclass's __init__ sets its 60 fields one by one, ~6 us)
    blk = object.__new__(EncodedBlock)
    blk.__dict__.update(out)
    return blk


def permute_block(enc: EncodedBlock, order) -> EncodedBlock:
    """The same block with its mentions in the order ``order`` (row k = mention ``order[k]``).

    Every factor is unchanged: f(k, l) of the result is f(order[k], order[l]) of ``enc``,
    bit for bit (the kernel reads per-mention records and per-label component data only).
    Racing Gibbs runs a big block with the mentions of each starting cluster next to each
    other in memory (``coref.gibbs.block.LOCALITY_MIN_N``).

    Parameters
    ----------
    enc : EncodedBlock
    order : ndarray of int, shape (n,)
        A permutation of ``range(n)``.

    Returns
    -------
    EncodedBlock

    Raises
    ------
    ValueError
        If ``order`` is not a permutation of ``range(enc.n)``.
    """
    order = np.asarray(order, dtype=np.int64)
    n = enc.n
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"order must be a permutation of range({n})")
    out = dict(enc.__dict__)
    for p, extra in _MENTION_LISTS.items():
        ptr, idx = take_csr(getattr(enc, f"{p}_ptr"), order)
        out[f"{p}_ptr"] = ptr
        for name in ("ids",) + extra:
            a = getattr(enc, f"{p}_{name}")
            out[f"{p}_{name}"] = np.concatenate((a[idx], a[len(a) - 1:]))    # the trailing padding entry
    for name in _MENTION_ARRAYS:
        out[name] = getattr(enc, name)[order]
    k = enc.n_topics
    out["topic"] = np.concatenate((enc.topic[:n * k].reshape(n, k)[order].ravel(), enc.topic[n * k:]))
    out["mention_id"] = tuple(enc.mention_id[i] for i in order.tolist()) if enc.mention_id else ()
    out["mate_ptr"], out["mate_idx"] = paper_mates(out["paper_code"], out["co_ptr"], out["co_ids"])
    blk = object.__new__(EncodedBlock)
    blk.__dict__.update(out)
    return blk


def assemble_blocks(encs) -> list:
    """:func:`assemble_block` of each of several blocks, their components in three scipy calls.

    Parameters
    ----------
    encs : sequence of MentionEncoding
        One encoding per block, each in block row order.

    Returns
    -------
    list of EncodedBlock
        ``[assemble_block(e) for e in encs]``, array for array.
    """
    encs = list(encs)
    return [assemble_block(e, c) for e, c in zip(encs, block_components(encs))]


def encode_mentions(df: pd.DataFrame, vocabulary: Vocabulary | None = None) -> EncodedBlock:
    """Encode the mentions of one block for the compiled factor kernel.

    Equivalent to ``assemble_block(encode_parts(df, vocabulary))``.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_mentions, ...)
        Mentions of ONE block with at least the columns ``mention_id``, ``name``,
        ``coauthors`` (list of str), ``title``, ``venue``, ``year`` (Int64, NA
        allowed), ``affiliation``; optionally ``abstract`` (str or NA) and
        ``keywords`` (list of str). Row order is kept (row r -> index r).
    vocabulary : Vocabulary or None
        Fitted TF-IDF and topic statistics; ``None`` fits one on ``df`` itself.

    Returns
    -------
    EncodedBlock

    Raises
    ------
    ValueError
        If a required column is missing.
    TypeError
        If ``df`` is not a DataFrame.
    """
    return assemble_block(encode_parts(df, vocabulary))
