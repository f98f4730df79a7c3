"""Pure-numpy twin of the compiled block assembly ``coref.encoding._assemble`` (used only by the tests).

:func:`assemble_block_py` is the numpy implementation that :func:`coref.encoding.blocks.assemble_block`
used before the kernel: ~35 numpy calls per block. The kernel must give the same integer
arrays and the same floats to a relative 1e-12 (its sums run in another order);
``tests/coref/test_coref_assemble_kernel.py`` compares them. Both take the
coauthor-graph components from scipy (:func:`coref.encoding.components.token_components`).
"""
from __future__ import annotations

import numpy as np

from coref.encoding._arrays import tfidf_block
from coref.encoding.blocks import EncodedBlock
from coref.encoding.components import coauthor_groups, token_components
from coref.encoding.mentions import TEXT_PREFIX, MentionEncoding
from coref.factors.papers import paper_mates

__all__ = ["assemble_block_py"]


def _row_of(ptr):
    """Row index of each entry of a CSR list."""
    return np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))


def _first_codes(values):
    """Codes 0, 1, ... of ``values`` in the order of first appearance; and the values by code."""
    values = np.asarray(values)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64), values[:0]
    uniq, first, inv = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq), dtype=np.int64)
    return rank[inv.reshape(-1)], uniq[order]


def _codes_of(gids):
    """int32 codes of interned values by first appearance; -1 stays -1 (``_codes``)."""
    out = np.full(len(gids), -1, dtype=np.int32)
    ok = gids >= 0
    out[ok] = _first_codes(gids[ok])[0]
    return out


def _csr_sorted(n, row, ids, *values, pads=()):
    """CSR (ptr int64, ids int32 + pad 0, values + pads) of entries sorted by (row, id)."""
    order = np.lexsort((ids, row))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n)[:n], out=ptr[1:])
    out = [ptr, np.concatenate([ids[order].astype(np.int32), np.zeros(1, np.int32)])]
    for v, pad in zip(values, pads):
        out.append(np.concatenate([v[order], np.full(1, pad, dtype=v.dtype)]))
    return out


def _profiles(comp, ptr, ids, w, *, top):
    """Per-component profiles: summed member weights, top ``top`` ids, L2-normalised.

    Returns CSR (ptr, ids, w) with one row per mention index; row r is the profile
    of the component labelled r (empty for unused labels).
    """
    n = len(comp)
    nnz = int(ptr[-1])
    if nnz == 0:
        return np.zeros(n + 1, dtype=np.int64), np.zeros(1, np.int32), np.zeros(1)
    c = comp[_row_of(ptr)].astype(np.int64)
    k = ids[:nnz].astype(np.int64)
    width = int(k.max()) + 1
    key, inv = np.unique(c * width + k, return_inverse=True)
    val = np.bincount(inv.reshape(-1), weights=w[:nnz])       # sequential sums, mention order
    kc, kid = key // width, key % width
    order = np.lexsort((kid, -val, kc))                        # per component: largest first, then id
    kc, kid, val = kc[order], kid[order], val[order]
    starts = np.searchsorted(kc, kc, side="left")
    keep = (np.arange(len(kc)) - starts) < top
    kc, kid, val = kc[keep], kid[keep], val[keep]
    bounds = np.flatnonzero(np.r_[True, kc[1:] != kc[:-1], True])
    norms = np.sqrt(np.add.reduceat(val * val, bounds[:-1]))
    vnorm = val / np.repeat(norms, np.diff(bounds))
    return _csr_sorted(n, kc, kid, vnorm, pads=(0.0,))


def _coherence(n, ptr, ids, w):
    """Squared norm of the summed rows over the squared number of non-empty rows (0 if none)."""
    rows = int(np.count_nonzero(np.diff(ptr[:n + 1])))
    if not rows:
        return 0.0
    nnz = int(ptr[-1])
    codes, _ = _first_codes(ids[:nnz])
    acc = np.bincount(codes, weights=w[:nnz])                 # word sums in order of first appearance
    return float((acc * acc).sum() / (rows ** 2))


def assemble_block_py(enc: MentionEncoding) -> EncodedBlock:
    """Pure-numpy twin of :func:`coref.encoding.blocks.assemble_block` (the compiled ``coref.encoding._assemble``).

    Parameters
    ----------
    enc : MentionEncoding
        The mentions of ONE block, in block row order (e.g. ``encode_parts(df).take(rows)``).

    Returns
    -------
    EncodedBlock
        Equal, array for array, to ``encode_mentions`` of the same rows.
    """
    a = enc.arrays
    n = len(enc)

    # coauthors: block-local ids in order of first appearance, block-local IDF
    co_row = _row_of(a["co_ptr"])
    co_code, _ = _first_codes(a["co_ids"])
    dfreq = np.bincount(co_code) if len(co_code) else np.zeros(0, np.int64)
    co_wc = np.log((1.0 + n) / (1.0 + dfreq)) + 1.0
    co_ptr, co_ids, co_w = _csr_sorted(n, co_row, co_code, co_wc[co_code], pads=(0.0,))

    # TF-IDF rows: unseen words get block-local columns V, V + 1, ... (sorted)
    text = {p: tfidf_block(a[f"{p}_ptr"], a[f"{p}_ids"].astype(np.int64), a[f"{p}_w"], enc.n_vocab[f])
            for f, p in TEXT_PREFIX.items()}
    ti_ptr, ti_ids, ti_w = text["ti"]
    ve_ptr, ve_ids, ve_w = text["ve"]
    af_ptr, af_ids, af_w = text["af"]

    venue_id = _codes_of(a["venue_g"])
    affil_id = _codes_of(a["affil_g"])
    # venue acronyms: codes in order of first appearance; venue words that are acronyms of the
    # block carry the SAME codes (vt ids = va ids), so the kernel's sorted merge of va (one
    # mention) with vt (the other) finds "one venue is the acronym of the other"
    acr_g = a["acr_g"]
    has = acr_g >= 0
    acr_code, acr_vals = _first_codes(acr_g[has])
    va_ptr, va_ids, va_w = _csr_sorted(n, np.flatnonzero(has), acr_code, np.ones(len(acr_code)), pads=(0.0,))
    vw_row, vw = _row_of(a["vw_ptr"]), a["vw_ids"]
    sorted_acr = np.sort(acr_vals)
    code_of_sorted = np.empty(len(acr_vals), dtype=np.int64)
    code_of_sorted[np.searchsorted(sorted_acr, acr_vals)] = np.arange(len(acr_vals))
    at = np.searchsorted(sorted_acr, vw)
    hit = (at < len(sorted_acr)) & (sorted_acr[np.minimum(at, max(len(sorted_acr) - 1, 0))] == vw) \
        if len(sorted_acr) else np.zeros(len(vw), bool)
    vrow, vcode = vw_row[hit], code_of_sorted[at[hit]]
    o = np.lexsort((vcode, vrow))
    vt_ptr, vt_ids, vt_w = _csr_sorted(n, vrow[o], vcode[o], np.ones(len(o)), pads=(0.0,))

    year = a["year"].copy()

    first_g = a["first_g"]
    first_code = _codes_of(first_g)
    given_code = _codes_of(a["given_g"])
    paper_code = _codes_of(a["paper_g"])
    first_init = a["first_init"].copy()
    name_rarity = np.zeros(n, dtype=np.float64)
    ok = first_g >= 0
    if ok.any():
        _, inv, cnt = np.unique(first_g[ok], return_inverse=True, return_counts=True)
        name_rarity[ok] = -np.log(cnt / n)[inv.reshape(-1)]
    # distinct full first names per initial letter
    amb = {}
    if ok.any():
        width = len(enc.tables["first"]) + 1
        pairs = np.unique(a["first0"][ok].astype(np.int64) * width + first_g[ok])   # distinct (letter, name)
        letters, counts = np.unique(pairs // width, return_counts=True)
        amb = dict(zip(letters.tolist(), counts.tolist()))
    n_names = np.array([amb.get(i, 0) for i in first_init.tolist()], dtype=np.float64)
    init_amb = np.where(first_init >= 0, np.log1p(n_names), 0.0)

    # the coauthor-graph components: scipy, as the compiled path gets them
    comp2 = token_components(a["co_ptr"], a["co_ids"], 2)
    comp1 = coauthor_groups(token_components(a["co_ptr"], a["co_ids"], 1), comp2, a["co_ptr"], a["co_ids"])
    comp3 = token_components(a["ck_ptr"], a["ck_ids"], 1)
    # coauthors keyed by initial + last name: block codes in order of appearance
    ck_code, _ = _first_codes(a["ck_ids"])
    fs_code, fs_vals = _first_codes(a["fs_ids"])
    fn_code = np.full(len(enc.tables["fn"]) + 1, -1, dtype=np.int64)
    fn_code[fs_vals] = np.arange(len(fs_vals))
    ck_fn_code = fn_code[a["ck_fn"]]                       # -1 -> the last entry, -1
    ck_ptr, ck_ids, ck_fn = _csr_sorted(n, _row_of(a["ck_ptr"]), ck_code, ck_fn_code.astype(np.int32), pads=(-1,))
    ck_w = np.ones(len(ck_ids), dtype=np.float64)

    comp1_logsize = np.log(np.bincount(comp1, minlength=max(n, 1))[comp1].astype(np.float64))
    pt = _profiles(comp1, ti_ptr, ti_ids, ti_w, top=80)
    pv = _profiles(comp1, ve_ptr, ve_ids, ve_w, top=25)
    pa = _profiles(comp1, af_ptr, af_ids, af_w, top=25)
    comp_ymin = np.full(n, -1, dtype=np.int32)
    comp_ymax = np.full(n, -1, dtype=np.int32)
    hasy = year >= 0
    if hasy.any():
        big = np.iinfo(np.int32).max
        lo = np.full(n, big, dtype=np.int32)
        np.minimum.at(lo, comp1[hasy], year[hasy])
        hi = np.full(n, -1, dtype=np.int32)
        np.maximum.at(hi, comp1[hasy], year[hasy])
        comp_ymin = np.where(lo == big, -1, lo).astype(np.int32)
        comp_ymax = hi

    # topic vectors of the mentions and of the comp1 components (rows by label)
    T = a["topic"]
    k_topics = T.shape[1]
    CT = np.zeros_like(T)
    if k_topics and n:
        np.add.at(CT, comp1, T)
        norms = np.sqrt((CT * CT).sum(axis=1))
        CT[norms > 0] /= norms[norms > 0, None]
    topic = np.concatenate([T.ravel(), [0.0]])
    comp_topic = np.concatenate([CT.ravel(), [0.0]])

    n_middle = int(a["middle"].sum())
    block_stats = (
        float(len(np.unique(comp1)) / n) if n else 0.0,
        _coherence(n, ti_ptr, ti_ids, ti_w),
        _coherence(n, ve_ptr, ve_ids, ve_w),
        _coherence(n, af_ptr, af_ids, af_w),
        float(n_middle / n) if n else 0.0,
    )
    ab_ptr, ab_ids, ab_w = text["ab"]
    kw_ptr, kw_ids, kw_w = text["kw"]
    mates = paper_mates(paper_code, co_ptr, co_ids)
    return EncodedBlock(
        n=n, co_ptr=co_ptr, co_ids=co_ids, co_w=co_w,
        ti_ptr=ti_ptr, ti_ids=ti_ids, ti_w=ti_w,
        ve_ptr=ve_ptr, ve_ids=ve_ids, ve_w=ve_w,
        af_ptr=af_ptr, af_ids=af_ids, af_w=af_w,
        venue_id=venue_id, affil_id=affil_id, year=year,
        first_code=first_code, first_init=first_init,
        comp1=comp1, comp2=comp2, comp1_logsize=comp1_logsize,
        pt_ptr=pt[0], pt_ids=pt[1], pt_w=pt[2], pv_ptr=pv[0], pv_ids=pv[1], pv_w=pv[2],
        pa_ptr=pa[0], pa_ids=pa[1], pa_w=pa[2], comp_ymin=comp_ymin, comp_ymax=comp_ymax,
        comp3=comp3, ck_ptr=ck_ptr, ck_ids=ck_ids, ck_w=ck_w, ck_fn=ck_fn,
        init_code=a["init_code"].copy(), init_len=a["init_len"].copy(), mid_init=a["mid_init"].copy(),
        given_code=given_code, paper_code=paper_code, name_rarity=name_rarity, init_amb=init_amb,
        ab_ptr=ab_ptr, ab_ids=ab_ids, ab_w=ab_w, kw_ptr=kw_ptr, kw_ids=kw_ids, kw_w=kw_w,
        va_ptr=va_ptr, va_ids=va_ids, va_w=va_w, vt_ptr=vt_ptr, vt_ids=vt_ids, vt_w=vt_w,
        n_topics=int(k_topics), topic=topic, comp_topic=comp_topic,
        block_stats=block_stats,
        mention_id=tuple(str(m) for m in enc.mention_id.tolist()),
        mate_ptr=mates[0], mate_idx=mates[1],
    )
