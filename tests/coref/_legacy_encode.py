"""Frozen copy of ``coref.features.encode_mentions`` as it was before the per-mention /
block-assembly split (commit 0f8e0dd): the reference the new encoder must equal bit for bit.
Do not edit: it is the specification the identity tests check against.
"""
import math

import numpy as np
import pandas as pd

from coref.blocking import normalize_name
from coref.encoding import EncodedBlock, Vocabulary, words
from coref.encoding.names import MAX_INITIALS as _MAX_INITIALS
from coref.encoding.text import AFFIL_STOP_WORDS as _AFFIL_STOP
from coref.encoding.text import REQUIRED_COLUMNS as _REQUIRED
from coref.encoding.text import field_texts as _field_texts


def _legacy_tfidf(voc, field_name, texts):
    """``Vocabulary.tfidf`` as it was (sklearn transform + CountVectorizer for unseen words)."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    from coref.encoding.text import Analyzer as _Analyzer

    texts = list(texts)
    vec = voc.vectorizers.get(field_name)
    analyzer = _Analyzer(field_name)
    known = {} if vec is None else vec.vocabulary_
    V = len(known)
    parts = []
    if vec is not None:
        parts.append(vec.transform(texts))
    new = CountVectorizer(analyzer=lambda t: [w for w in analyzer(t) if w not in known])
    try:
        Xn = new.fit_transform(texts).astype(np.float64)
        Xn = Xn * (math.log(1.0 + voc.n_docs) + 1.0)
        parts.append(sp.csr_matrix(Xn))
    except ValueError:  # no unseen word
        if vec is None:
            parts.append(sp.csr_matrix((len(texts), 0)))
    if vec is None:
        parts.insert(0, sp.csr_matrix((len(texts), V)))
    X = sp.hstack(parts, format="csr") if len(parts) > 1 else parts[0].tocsr()
    if X.shape[1] == 0:
        return sp.csr_matrix((len(texts), 0))
    X = normalize(X, norm="l2").tocsr()
    X.sort_indices()
    return X


def _legacy_topics(voc, df):
    """``Vocabulary.topics`` as it was."""
    from sklearn.preprocessing import normalize

    from coref.encoding.text import topic_texts as _topic_texts

    if voc.topic_svd is None:
        return np.zeros((len(df), 0))
    Z = voc.topic_svd.transform(voc.topic_vectorizer.transform(_topic_texts(df)))
    return np.ascontiguousarray(normalize(Z), dtype=np.float64)


def _from_sparse(X):
    """(ptr int64, ids int32 + padding, w float64 + padding) of a CSR matrix with sorted indices."""
    return (np.asarray(X.indptr, dtype=np.int64),
            np.concatenate([np.asarray(X.indices, dtype=np.int32), np.zeros(1, np.int32)]),
            np.concatenate([np.asarray(X.data, dtype=np.float64), np.zeros(1)]))


def _csr(token_lists, weight_fn, *, normalise):
    """Block-local ids (sorted per row) and weights for a list of token lists."""
    ids_of = {}
    ptr = np.zeros(len(token_lists) + 1, dtype=np.int64)
    all_ids, all_w = [], []
    for r, toks in enumerate(token_lists):
        counts = {}
        for t in toks:
            counts[t] = counts.get(t, 0) + 1
        row = []
        for t, c in counts.items():
            k = ids_of.setdefault(t, len(ids_of))
            row.append((k, weight_fn(t, c)))
        row.sort()
        if normalise and row:
            norm = math.sqrt(sum(w * w for _, w in row))
            if norm > 0:
                row = [(k, w / norm) for k, w in row]
        all_ids.extend(k for k, _ in row)
        all_w.extend(w for _, w in row)
        ptr[r + 1] = len(all_ids)
    ids = np.asarray(all_ids + [0], dtype=np.int32)
    w = np.asarray(all_w + [0.0], dtype=np.float64)
    return ptr, ids, w


def _codes(values):
    table = {}
    out = np.full(len(values), -1, dtype=np.int32)
    for r, v in enumerate(values):
        if v:
            out[r] = table.setdefault(v, len(table))
    return out


def _components(token_lists, min_shared):
    """Connected components of mentions linked by >= ``min_shared`` shared tokens.

    Uses :func:`scipy.sparse.csgraph.connected_components` on the mention x mention
    matrix of shared-token counts. Returns int32 labels in ``[0, n)``, numbered in
    the order of each component's first mention.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    n = len(token_lists)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    ids_of = {}
    rows, cols = [], []
    for r, toks in enumerate(token_lists):
        for t in set(toks):
            rows.append(r)
            cols.append(ids_of.setdefault(t, len(ids_of)))
    M = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, max(len(ids_of), 1)))
    A = (M @ M.T).tocsr()
    A.data[A.data < min_shared] = 0.0
    A.eliminate_zeros()
    _, labels = connected_components(A, directed=False)
    # number components by their first mention (scipy's order is already that; make it explicit)
    first = {}
    out = np.empty(n, dtype=np.int32)
    for r in range(n):
        out[r] = first.setdefault(int(labels[r]), len(first))
    return out


def _profiles(comp, ptr, ids, w, *, top):
    """Per-component profiles: summed member weights, top ``top`` ids, L2-normalised.

    Returns CSR (ptr, ids, w) with one row per mention index; row r is the profile
    of the component labelled r (empty for unused labels).
    """
    n = len(comp)
    acc = {}
    for r in range(n):
        prof = acc.setdefault(int(comp[r]), {})
        for k in range(int(ptr[r]), int(ptr[r + 1])):
            prof[int(ids[k])] = prof.get(int(ids[k]), 0.0) + float(w[k])
    rows = []
    for r in range(n):
        prof = acc.get(r)
        if not prof:
            rows.append([])
            continue
        best = sorted(prof.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        norm = math.sqrt(sum(v * v for _, v in best))
        rows.append(sorted((k, v / norm) for k, v in best) if norm > 0 else [])
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    out_ids, out_w = [], []
    for r, row in enumerate(rows):
        out_ids.extend(k for k, _ in row)
        out_w.extend(v for _, v in row)
        out_ptr[r + 1] = len(out_ids)
    return (out_ptr, np.asarray(out_ids + [0], dtype=np.int32),
            np.asarray(out_w + [0.0], dtype=np.float64))


def _name_parts(name):
    """(full first name or "", initials string, full given string or "") of a person name.

    Given names are every token but the last; hyphenated parts each give an initial
    (``"Tsong-Li"`` -> ``"tl"``) and are joined in the full forms (``"tsongli"``).
    """
    tokens = normalize_name(name).split()
    if len(tokens) < 2:
        return "", "", ""
    given = tokens[:-1]
    initials = "".join(p[0] for g in given for p in g.split("-") if p)[:_MAX_INITIALS]
    first = given[0].replace("-", "")
    first = first if len(first) >= 2 else ""
    full = "".join(g.replace("-", "") for g in given) if first else ""
    return first, initials, full


def _coauthor_key(name):
    """(initial + last name key, full first name or "") of a coauthor name."""
    tokens = normalize_name(name).replace("-", "").split()
    if not tokens:
        return "", ""
    if len(tokens) == 1:
        return tokens[0], ""
    first = tokens[0] if len(tokens[0]) >= 2 else ""
    return tokens[0][0] + " " + tokens[-1], first


def _acronym(ws):
    return "".join(w[0] for w in ws) if len(ws) >= 2 else ""


def legacy_encode_mentions(df: pd.DataFrame, vocabulary: Vocabulary | None = None) -> EncodedBlock:
    """Encode the mentions of one block for the compiled factor kernel.

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
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"df is missing the mention column(s) {missing}")
    voc = Vocabulary.fit(df) if vocabulary is None else vocabulary
    n = len(df)

    # coauthors: normalised names (hyphens dropped), block-local IDF
    co_raw = []
    for co in df["coauthors"].tolist():
        if co is None or (not isinstance(co, (list, tuple, np.ndarray))):
            co = []
        co_raw.append([a for a in co if isinstance(a, str)])
    co_lists = [sorted({k for k in (normalize_name(a).replace("-", "") for a in co) if k}) for co in co_raw]
    dfreq = {}
    for toks in co_lists:
        for t in toks:
            dfreq[t] = dfreq.get(t, 0) + 1
    co_ptr, co_ids, co_w = _csr(
        co_lists, lambda t, c: math.log((1.0 + n) / (1.0 + dfreq[t])) + 1.0, normalise=False)

    ti_ptr, ti_ids, ti_w = _from_sparse(_legacy_tfidf(voc, "title", _field_texts(df, "title")))
    ve_ptr, ve_ids, ve_w = _from_sparse(_legacy_tfidf(voc, "venue", _field_texts(df, "venue")))
    af_ptr, af_ids, af_w = _from_sparse(_legacy_tfidf(voc, "affiliation", _field_texts(df, "affiliation")))
    ab_ptr, ab_ids, ab_w = _from_sparse(_legacy_tfidf(voc, "abstract", _field_texts(df, "abstract")))
    kw_ptr, kw_ids, kw_w = _from_sparse(_legacy_tfidf(voc, "keywords", _field_texts(df, "keywords")))
    venue_words = [words(v) for v in df["venue"].tolist()]
    affil_words = [words(a, stop=_AFFIL_STOP) for a in df["affiliation"].tolist()]
    venue_id = _codes([" ".join(w) for w in venue_words])
    affil_id = _codes([" ".join(w) for w in affil_words])
    # venue acronyms ("international conference data engineering" -> "icde") vs venue words
    acr_codes = {}
    va = [[acr_codes.setdefault(a, len(acr_codes))] if (a := _acronym(ws)) else [] for ws in venue_words]
    vt = [sorted({acr_codes[w] for w in ws if w in acr_codes}) for ws in venue_words]
    va_ptr, va_ids, va_w = _csr(va, lambda t, c: 1.0, normalise=False)
    # vt ids ARE the acronym codes of va (so the kernel's sorted merge compares like with like);
    # the original encoder renumbered them by first appearance in vt, a bug fixed in 0.3
    vt_ptr = np.zeros(len(vt) + 1, dtype=np.int64)
    vt_ptr[1:] = np.cumsum([len(r) for r in vt])
    vt_ids = np.asarray([k for r in vt for k in r] + [0], dtype=np.int32)
    vt_w = np.ones(len(vt_ids), dtype=np.float64)
    vt_w[-1] = 0.0

    years = pd.array(df["year"], dtype="Int64")
    year = np.asarray(years.fillna(-1).to_numpy(dtype=np.int64), dtype=np.int32)
    year[year < 0] = -1

    # names: full first name, initials (packed, 5 bits each), full given names
    parts = [_name_parts(name) for name in df["name"].tolist()]
    firsts = [p[0] for p in parts]
    first_code = _codes(firsts)
    first_init = np.asarray([ord(p[1][0]) if p[1] else -1 for p in parts], dtype=np.int32)
    init_len = np.asarray([len(p[1]) for p in parts], dtype=np.int32)
    init_code = np.asarray([sum((ord(ch) - 96) << (5 * (len(p[1]) - 1 - k)) for k, ch in enumerate(p[1]))
                            for p in parts], dtype=np.int32)
    mid_init = np.asarray([ord(p[1][1]) if len(p[1]) >= 2 else -1 for p in parts], dtype=np.int32)
    given_code = _codes([p[2] for p in parts])
    first_count = pd.Series(firsts).value_counts()
    name_rarity = np.asarray([-math.log(first_count[f] / n) if f else 0.0 for f in firsts], dtype=np.float64)
    full_by_init = {}
    for f in firsts:
        if f:
            full_by_init.setdefault(f[0], set()).add(f)
    init_amb = np.asarray([math.log(1.0 + len(full_by_init.get(p[1][0], ()))) if p[1] else 0.0 for p in parts],
                          dtype=np.float64)

    comp1 = _components(co_lists, 1)
    comp2 = _components(co_lists, 2)
    # coauthors keyed by first initial + last name, with the full first name when known
    ck_keys, fn_of = {}, {}
    init_lists = []
    for co in co_raw:
        row = {}
        for a in co:
            key, first = _coauthor_key(a)
            if not key:
                continue
            fc = fn_of.setdefault(first, len(fn_of)) if first else -1
            row[key] = fc if key not in row or row[key] == fc else -1  # two full names: unknown
        init_lists.append(row)
    comp3 = _components([sorted(r) for r in init_lists], 1)
    ck_ptr = np.zeros(n + 1, dtype=np.int64)
    ck_rows = []
    for r, row in enumerate(init_lists):
        items = sorted((ck_keys.setdefault(k, len(ck_keys)), fc) for k, fc in row.items())
        ck_rows.extend(items)
        ck_ptr[r + 1] = len(ck_rows)
    ck_ids = np.asarray([k for k, _ in ck_rows] + [0], dtype=np.int32)
    ck_fn = np.asarray([fc for _, fc in ck_rows] + [-1], dtype=np.int32)
    ck_w = np.ones(len(ck_rows) + 1, dtype=np.float64)

    comp1_logsize = np.log(np.bincount(comp1, minlength=max(n, 1))[comp1].astype(np.float64))
    pt = _profiles(comp1, ti_ptr, ti_ids, ti_w, top=80)
    pv = _profiles(comp1, ve_ptr, ve_ids, ve_w, top=25)
    pa = _profiles(comp1, af_ptr, af_ids, af_w, top=25)
    comp_ymin = np.full(n, -1, dtype=np.int32)
    comp_ymax = np.full(n, -1, dtype=np.int32)
    for r in range(n):
        c, y = comp1[r], year[r]
        if y >= 0:
            comp_ymin[c] = y if comp_ymin[c] < 0 else min(comp_ymin[c], y)
            comp_ymax[c] = max(comp_ymax[c], y)

    # topic vectors of the mentions and of the comp1 components (rows by label)
    T = _legacy_topics(voc, df)
    k_topics = T.shape[1]
    CT = np.zeros_like(T)
    if k_topics and n:
        np.add.at(CT, comp1, T)
        norms = np.sqrt((CT * CT).sum(axis=1))
        CT[norms > 0] /= norms[norms > 0, None]
    topic = np.concatenate([T.ravel(), [0.0]])
    comp_topic = np.concatenate([CT.ravel(), [0.0]])

    def coherence(ptr, ids, w):
        rows = [r for r in range(n) if ptr[r + 1] > ptr[r]]
        if not rows:
            return 0.0
        acc = {}
        for r in rows:
            for k in range(int(ptr[r]), int(ptr[r + 1])):
                acc[int(ids[k])] = acc.get(int(ids[k]), 0.0) + float(w[k])
        return float(sum(v * v for v in acc.values()) / (len(rows) ** 2))

    n_middle = sum(1 for name in df["name"].tolist() if len(normalize_name(name).split()) >= 3)
    block_stats = (
        float(len(set(comp1.tolist())) / n) if n else 0.0,
        coherence(ti_ptr, ti_ids, ti_w),
        coherence(ve_ptr, ve_ids, ve_w),
        coherence(af_ptr, af_ids, af_w),
        float(n_middle / n) if n else 0.0,
    )

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
        init_code=init_code, init_len=init_len, mid_init=mid_init, given_code=given_code,
        name_rarity=name_rarity, init_amb=init_amb,
        ab_ptr=ab_ptr, ab_ids=ab_ids, ab_w=ab_w, kw_ptr=kw_ptr, kw_ids=kw_ids, kw_w=kw_w,
        va_ptr=va_ptr, va_ids=va_ids, va_w=va_w, vt_ptr=vt_ptr, vt_ids=vt_ids, vt_w=vt_w,
        n_topics=int(k_topics), topic=topic, comp_topic=comp_topic,
        block_stats=block_stats,
        mention_id=tuple(str(m) for m in df["mention_id"].tolist()),
    )
