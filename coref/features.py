"""Mention encoding for the pairwise coreference factor.

A block of mentions (rows of the DataFrame of ``coref.load_mentions``) is turned
into an :class:`EncodedBlock`: integer / float numpy arrays only (CSR token lists
with weights, ids, years, name codes), so that the compiled kernel
(``coref._factors``, ``coref._gibbs``) evaluates one factor f_theta(x_i, x_j)
without touching a Python object.

Features phi(x_i, x_j) (``FEATURE_NAMES``, in kernel order):

====  ==================  ===========================================================
 k    name                definition
====  ==================  ===========================================================
 0    co_log_count        log(1 + number of shared coauthors)
 1    co_jaccard          shared / union of the two coauthor sets
 2    co_idf              sum of block-local IDF weights of the shared coauthors
 3    co_any              1 if at least one shared coauthor
 4    co_missing          1 if either mention has no coauthors
 5    co_two              1 if at least two shared coauthors
 6    title_cos           cosine of TF-IDF title-word vectors
 7    venue_cos           cosine of TF-IDF venue-word vectors
 8    venue_eq            1 if the normalised venue strings are equal (and present)
 9    affil_cos           cosine of TF-IDF affiliation-word vectors (0 if missing)
 10   affil_missing       1 if either affiliation is missing
 11   affil_eq            1 if the normalised affiliations are equal
 12   year_gap            min(|year_i - year_j|, 30) / 10 (0 if missing)
 13   year_gap2           year_gap ** 2
 14   year_missing        1 if either year is missing
 15   name_compat         1 same first name, 0.5 compatible initials, 0 otherwise
 16   co_log_count_logn   co_log_count * log(block size)
 17   same_comp1          1 if i, j are connected in the block's shared-coauthor graph
 18   same_comp2          same, for the graph whose edges need >= 2 shared coauthors
 19   same_comp1_logsize  same_comp1 * log(size of that component)
 20   comp_title_cos      cosine of the title profiles of the two comp1 components
 21   comp_venue_cos      same for venue words (profiles: top words, summed TF-IDF)
 22   comp_affil_cos      same for affiliation words (all three are 1 within one component)
 23   comp_year_gap       gap between the year ranges of the two components / 10 (cap 3)
 24   mention_comp_title  mean cosine of each mention's title with the other's component
                          title profile (1 within one component)
 25   comp_logsizes       log |comp(i)| + log |comp(j)| for different components (else 0)
 26   same_comp_initials  same_comp1 with coauthors keyed by first initial + last name
 27   log_n               log(block size)                      (block constant)
 28   comp_frac           number of comp1 components / n       (block constant)
 29   title_coherence     squared norm of the mean title vector ~ mean pairwise title cosine
 30   venue_coherence     same for venue vectors               (block constant)
 31   affil_coherence     same for affiliation vectors (mentions with one) (block constant)
 32   name_middle         fraction of names with 3+ parts      (block constant)
 33   co_init_log_count   log(1 + shared coauthors keyed by first initial + last name)
 34   co_init_extra       co_init_log_count - co_log_count (matches through initials only)
 35+k <name>*same_comp1   feature k times same_comp1 (separate weights inside a component)
====  ==================  ===========================================================

Word IDF for titles, venues and affiliations comes from a :class:`Vocabulary`
fitted on a corpus of mentions (unlabeled text only; the model fits it on its
training mentions); coauthor IDF is block-local, ``log((1 + n) / (1 + df)) + 1``.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = [
    "FEATURE_NAMES",
    "N_FEATURES",
    "EncodedBlock",
    "Vocabulary",
    "encode_mentions",
    "normalize_name",
    "words",
]

FEATURE_NAMES = (
    "co_log_count", "co_jaccard", "co_idf", "co_any", "co_missing", "co_two",
    "title_cos", "venue_cos", "venue_eq", "affil_cos", "affil_missing", "affil_eq",
    "year_gap", "year_gap2", "year_missing", "name_compat", "co_log_count_logn",
    "same_comp1", "same_comp2", "same_comp1_logsize",
    "comp_title_cos", "comp_venue_cos", "comp_affil_cos",
    "comp_year_gap", "mention_comp_title", "comp_logsizes", "same_comp_initials",
    "log_n", "comp_frac", "title_coherence", "venue_coherence", "affil_coherence",
    "name_middle", "co_init_log_count", "co_init_extra",
)
FEATURE_NAMES = FEATURE_NAMES + tuple(f"{name}*same_comp1" for name in FEATURE_NAMES)
N_FEATURES = len(FEATURE_NAMES)

_REQUIRED = ("mention_id", "name", "coauthors", "title", "venue", "year", "affiliation")

_STOP = frozenset(
    "a an and are as at by for from in into is its of on or the to with via using "
    "based new towards toward study approach method methods analysis system systems".split()
)
_AFFIL_STOP = frozenset("of the and at in for dept department univ university".split())
_WORD_RE = re.compile(r"[a-z0-9]+")
# placeholder strings some sources use for a missing field (AMiner writes "null")
_MISSING = frozenset({"null", "none", "nan", "n/a", "na", "unknown"})


def _ascii_lower(text) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text is pd.NA:
        return ""
    text = unicodedata.normalize("NFKD", str(text))
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    return "" if text.strip() in _MISSING else text


def normalize_name(name) -> str:
    """Normalised person name: ASCII lower case, letters only, single spaces.

    ``"Jason Tsong-Li Wang"`` -> ``"jason tsongli wang"``.
    """
    s = _ascii_lower(name).replace("-", "").replace("'", "").replace(".", " ")
    return " ".join(re.sub(r"[^a-z ]", " ", s).split())


def words(text, *, stop=_STOP) -> list[str]:
    """Lower-case alphanumeric words of ``text`` without stop words and 1-letter words.

    A trailing plural ``s`` is removed from words longer than 4 letters (a crude stem).
    """
    out = []
    for w in _WORD_RE.findall(_ascii_lower(text)):
        if len(w) < 2 or w in stop:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


@dataclass(frozen=True)
class Vocabulary:
    """Document frequencies of title / venue / affiliation words over a corpus.

    Attributes
    ----------
    n_docs : int
        Number of mentions the frequencies were counted on.
    title_df, venue_df, affil_df : dict of str -> int
        Number of mentions whose field contains the word.
    """

    n_docs: int = 0
    title_df: dict = field(default_factory=dict)
    venue_df: dict = field(default_factory=dict)
    affil_df: dict = field(default_factory=dict)

    @classmethod
    def fit(cls, df: pd.DataFrame) -> "Vocabulary":
        """Count document frequencies on the mentions of ``df`` (no labels used)."""
        t, v, a = {}, {}, {}
        for col, table, stop in (("title", t, _STOP), ("venue", v, _STOP),
                                 ("affiliation", a, _AFFIL_STOP)):
            for text in df[col].tolist():
                for w in set(words(text, stop=stop)):
                    table[w] = table.get(w, 0) + 1
        return cls(n_docs=int(len(df)), title_df=t, venue_df=v, affil_df=a)

    def to_state(self) -> dict:
        """JSON-able state (plain dicts, ints and strings) for saving a fitted model.

        :meth:`from_state` is its inverse; nothing executable is stored.
        """
        return {"n_docs": int(self.n_docs),
                "tables": {"title": dict(self.title_df), "venue": dict(self.venue_df),
                           "affiliation": dict(self.affil_df)}}

    @classmethod
    def from_state(cls, state: dict) -> "Vocabulary":
        """Rebuild a vocabulary from :meth:`to_state` output, validating every field.

        Raises
        ------
        ValueError
            If a field is missing or has the wrong type (the message names it).
        """
        if not isinstance(state, dict) or not isinstance(state.get("tables"), dict):
            raise ValueError("vocabulary state must be a dict with a 'tables' dict")
        n = state.get("n_docs")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"vocabulary field n_docs must be an int >= 0; got {n!r}")
        tables = {}
        for key in ("title", "venue", "affiliation"):
            t = state["tables"].get(key)
            if not isinstance(t, dict) or not all(
                    isinstance(w, str) and isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= n
                    for w, c in t.items()):
                raise ValueError(f"vocabulary table {key!r} must map words to document counts in [0, n_docs]")
            tables[key] = dict(t)
        return cls(n_docs=n, title_df=tables["title"], venue_df=tables["venue"], affil_df=tables["affiliation"])

    def idf(self, table: dict, word: str) -> float:
        """Smoothed IDF ``log((1 + n_docs) / (1 + df)) + 1`` (unseen words: df = 0)."""
        return math.log((1.0 + self.n_docs) / (1.0 + table.get(word, 0))) + 1.0


@dataclass(frozen=True, eq=False)
class EncodedBlock:
    """One block of mentions as flat numpy arrays (see module docstring).

    CSR lists ``*_ptr`` (int64, shape (n + 1,)), ``*_ids`` (int32, sorted within a
    mention, block-local token ids) and ``*_w`` (float64) for coauthors (``co``),
    title words (``ti``), venue words (``ve``) and affiliation words (``af``); the
    id / weight arrays carry one trailing padding entry so they are never empty.
    Per-mention int32 arrays of shape (n,): ``venue_id``, ``affil_id``, ``year``,
    ``first_code``, ``first_init`` (-1 = missing), ``comp1``, ``comp2``
    (components of the shared-coauthor graphs) and float64 ``comp1_logsize``.
    Component profiles ``pt_*`` (title), ``pv_*`` (venue), ``pa_*`` (affiliation):
    CSR with n rows, row r holding the profile of the component labelled r.
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
    block_stats: tuple = (0.0, 0.0, 0.0, 0.0, 0.0)
    mention_id: tuple = ()

    def __len__(self) -> int:
        return self.n


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

    Returns int32 labels (the smallest member index of each component).
    """
    n = len(token_lists)
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    holders = {}
    for r, toks in enumerate(token_lists):
        for t in toks:
            holders.setdefault(t, []).append(r)
    if min_shared <= 1:
        for rows in holders.values():
            for r in rows[1:]:
                a, b = find(rows[0]), find(r)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    else:
        shared = {}
        for rows in holders.values():
            for x in range(len(rows)):
                for y in range(x + 1, len(rows)):
                    key = (rows[x], rows[y])
                    shared[key] = shared.get(key, 0) + 1
        for (r1, r2), c in shared.items():
            if c >= min_shared:
                a, b = find(r1), find(r2)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return np.asarray([find(r) for r in range(n)], dtype=np.int32)


def _profiles(comp, ptr, ids, w, *, top):
    """Per-component profiles: summed member weights, top ``top`` ids, L2-normalised.

    Returns CSR (ptr, ids, w) with one row per mention index; row r is the profile
    of the component labelled r (empty for non-root rows).
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


def encode_mentions(df: pd.DataFrame, vocabulary: Vocabulary | None = None) -> EncodedBlock:
    """Encode the mentions of one block for the compiled factor kernel.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_mentions, ...)
        Mentions of ONE block with at least the columns ``mention_id``, ``name``,
        ``coauthors`` (list of str), ``title``, ``venue``, ``year`` (Int64, NA
        allowed), ``affiliation``. Row order is kept (row r -> index r).
    vocabulary : Vocabulary or None
        Word document frequencies for the TF-IDF weights; ``None`` fits one on
        ``df`` itself.

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

    # coauthors: normalised names, block-local IDF
    co_lists = []
    for co in df["coauthors"].tolist():
        if co is None or (not isinstance(co, (list, tuple, np.ndarray))):
            co = []
        co_lists.append(sorted({k for k in (normalize_name(a) for a in co) if k}))
    dfreq = {}
    for toks in co_lists:
        for t in toks:
            dfreq[t] = dfreq.get(t, 0) + 1
    co_ptr, co_ids, co_w = _csr(
        co_lists, lambda t, c: math.log((1.0 + n) / (1.0 + dfreq[t])) + 1.0, normalise=False)

    ti_ptr, ti_ids, ti_w = _csr([words(t) for t in df["title"].tolist()],
                                lambda t, c: c * voc.idf(voc.title_df, t), normalise=True)
    venue_words = [words(v) for v in df["venue"].tolist()]
    ve_ptr, ve_ids, ve_w = _csr(venue_words, lambda t, c: c * voc.idf(voc.venue_df, t),
                                normalise=True)
    affil_words = [words(a, stop=_AFFIL_STOP) for a in df["affiliation"].tolist()]
    af_ptr, af_ids, af_w = _csr(affil_words, lambda t, c: c * voc.idf(voc.affil_df, t),
                                normalise=True)
    venue_id = _codes([" ".join(w) for w in venue_words])
    affil_id = _codes([" ".join(w) for w in affil_words])

    years = pd.array(df["year"], dtype="Int64")
    year = np.asarray(years.fillna(-1).to_numpy(dtype=np.int64), dtype=np.int32)
    year[year < 0] = -1

    firsts = []
    for name in df["name"].tolist():
        parts = normalize_name(name).split()
        firsts.append(parts[0] if len(parts) >= 2 else "")
    first_code = _codes(firsts)
    first_init = np.asarray([ord(f[0]) if f else -1 for f in firsts], dtype=np.int32)

    comp1 = _components(co_lists, 1)
    comp2 = _components(co_lists, 2)
    init_lists = [sorted({(t.split()[0][0] + " " + t.split()[-1]) for t in toks})
                  for toks in co_lists]
    comp3 = _components(init_lists, 1)
    ck_ptr, ck_ids, ck_w = _csr(init_lists, lambda t, c: 1.0, normalise=False)
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
        comp3=comp3, ck_ptr=ck_ptr, ck_ids=ck_ids, ck_w=ck_w, block_stats=block_stats,
        mention_id=tuple(str(m) for m in df["mention_id"].tolist()),
    )
