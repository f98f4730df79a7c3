"""Mention encoding for the pairwise coreference factor.

A block of mentions (rows of the DataFrame of ``coref.load_mentions``) is turned
into an :class:`EncodedBlock`: integer / float numpy arrays only (CSR token lists
with weights, ids, years, name codes, dense topic vectors), so that the compiled
kernel (``coref._factors``, ``coref._gibbs``) evaluates one factor
f_theta(x_i, x_j) without touching a Python object.

Features phi(x_i, x_j) (``FEATURE_NAMES``, in kernel order; ``FEATURE_LABELS`` says
each in words, ``FEATURE_GROUPS`` maps each to the evidence it uses):

====  ======================  ===========================================================
 k    name                    definition
====  ======================  ===========================================================
 0    co_log_count            log(1 + number of shared coauthors)
 1    co_jaccard              shared / union of the two coauthor sets
 2    co_idf                  sum of block-local IDF weights of the shared coauthors
 3    co_any                  1 if at least one shared coauthor
 4    co_missing              1 if either mention has no coauthors
 5    co_two                  1 if at least two shared coauthors
 6    title_cos               cosine of TF-IDF title-word vectors
 7    venue_cos               cosine of TF-IDF venue-word vectors
 8    venue_eq                1 if the normalised venue strings are equal (and present)
 9    affil_cos               cosine of TF-IDF affiliation-word vectors (0 if missing)
 10   affil_missing           1 if either affiliation is missing
 11   affil_eq                1 if the normalised affiliations are equal
 12   year_gap                min(|year_i - year_j|, 30) / 10 (0 if missing)
 13   year_gap2               year_gap ** 2
 14   year_missing            1 if either year is missing
 15   name_compat             1 same full first name, 0.5 compatible (or missing), 0 otherwise
 16   co_log_count_logn       co_log_count * log(block size)
 17   same_comp1              1 if i, j are connected in the block's shared-coauthor graph
 18   same_comp2              same, for the graph whose edges need >= 2 shared coauthors
 19   same_comp1_logsize      same_comp1 * log(size of that component)
 20   comp_title_cos          cosine of the title profiles of the two comp1 components
 21   comp_venue_cos          same for venue words (profiles: top words, summed TF-IDF)
 22   comp_affil_cos          same for affiliation words (all three are 1 within one component)
 23   comp_year_gap           gap between the year ranges of the two components / 10 (cap 3)
 24   mention_comp_title      mean cosine of each mention's title with the other's component
                              title profile (1 within one component)
 25   comp_logsizes           log |comp(i)| + log |comp(j)| for different components (else 0)
 26   same_comp_initials      same_comp1 with coauthors keyed by first initial + last name
 27   log_n                   log(block size)                      (block constant)
 28   comp_frac               number of comp1 components / n       (block constant)
 29   title_coherence         squared norm of the mean title vector ~ mean pairwise title cosine
 30   venue_coherence         same for venue vectors               (block constant)
 31   affil_coherence         same for affiliation vectors (mentions with one) (block constant)
 32   name_middle             fraction of names with 3+ parts      (block constant)
 33   co_init_log_count       log(1 + shared coauthors keyed by first initial + last name)
 34   co_init_extra           co_init_log_count - co_log_count (matches through initials only)
 35   name_first_eq           1 if both full first names are present and equal (or the whole
                              given names are: "Jian Xin" / "Jianxin")
 36   name_first_conflict     1 if the first names (or their initials) are present and differ
 37   name_init_only          1 if the names agree only through an initial ("J." vs "Jie")
 38   name_middle_conflict    1 if both have a second given initial and they differ
 39   name_full_eq            1 if the whole given names (all parts, hyphens dropped) are equal
 40   name_rarity             -log(share of the block's mentions with that first name) if
                              name_first_eq, else 0 (the smaller of the two readings)
 41   name_init_ambiguity     log(1 + distinct full first names with that initial in the block)
                              if name_init_only, else 0
 42   abstract_cos            cosine of TF-IDF abstract-word vectors (0 if missing)
 43   abstract_missing        1 if either mention has no abstract
 44   keyword_cos             cosine of TF-IDF keyword vectors (0 if missing)
 45   keyword_missing         1 if either mention has no keywords
 46   topic_cos               cosine of LSA topic vectors (title, venue, abstract, keywords)
 47   comp_topic_cos          cosine of the mean topic vectors of the two comp1 components
 48   venue_acronym           1 if one venue's acronym is a word of the other venue
 49   venue_contain           1 if one venue's words are all in the other's (not equal)
 50   topic_drift             topic_cos * year_gap (topic agreement across the years apart)
 51   co_compat_log_count     log(1 + coauthors matched by initial + last name whose full
                              first names do not conflict)
 52   co_conflict_log_count   log(1 + coauthors with one initial + last name but different
                              full first names)
 53+k <name>*same_comp1       feature k times same_comp1 (separate weights inside a component)
====  ======================  ===========================================================

Word IDF for titles, venues, affiliations, abstracts and keywords comes from the
scikit-learn ``TfidfVectorizer`` s of a :class:`Vocabulary` fitted on a corpus of
mentions (unlabeled text only; the model fits it on its training mentions); a word
the vocabulary never saw gets the IDF of a word of document frequency 0, so two new
mentions sharing a new word still match. The topic vectors are a truncated SVD
(latent semantic analysis) of the mentions' words, fitted in the same vocabulary.
Coauthor IDF is block-local, ``log((1 + n) / (1 + df)) + 1``. The optional columns
``abstract`` (str or NA) and ``keywords`` (list of str) may be absent; a missing
value is never matched (indicator features instead).
"""
from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from coref.blocking import normalize_name
from coref.factors.names import FEATURE_GROUPS, FEATURE_LABELS, FEATURE_NAMES, N_BASE, N_FEATURES

__all__ = [
    "FEATURE_NAMES",
    "FEATURE_LABELS",
    "FEATURE_GROUPS",
    "N_FEATURES",
    "EncodedBlock",
    "MentionEncoding",
    "Vocabulary",
    "assemble_block",
    "assemble_blocks",
    "block_components",
    "encode_mentions",
    "encode_parts",
    "normalize_name",
    "words",
]


_REQUIRED = ("mention_id", "name", "coauthors", "title", "venue", "year", "affiliation")
#: optional text columns (absent in old files: then every mention misses them)
OPTIONAL_TEXT = ("abstract", "keywords")

_STOP = frozenset(
    "a an and are as at by for from in into is its of on or the to with via using "
    "based new towards toward study approach method methods analysis system systems".split()
)
_AFFIL_STOP = frozenset("of the and at in for dept department univ university".split())
_WORD_RE = re.compile(r"[a-z0-9]+")
# placeholder strings some sources use for a missing field (AMiner writes "null")
_MISSING = frozenset({"null", "none", "nan", "n/a", "na", "unknown"})
_N_TOPICS = 32          # LSA dimensions
_TOPIC_MAX_WORDS = 4000  # most frequent words (document frequency >= 2) of the topic model
_FIELDS = ("title", "venue", "affiliation", "abstract", "keywords")
_MAX_INITIALS = 6


def _ascii_lower(text) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text is pd.NA:
        return ""
    text = unicodedata.normalize("NFKD", str(text))
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    return "" if text.strip() in _MISSING else text


def words(text, *, stop=_STOP) -> list[str]:
    """Lower-case alphanumeric words of ``text`` without stop words and 1-letter words.

    A trailing plural ``s`` is removed from words longer than 4 letters (a crude stem).
    """
    if isinstance(text, str):
        return list(_words_cached(text, stop))
    return list(_words(text, stop))


@functools.lru_cache(maxsize=1 << 18)
def _words_cached(text, stop):
    return tuple(_words(text, stop))


def _words(text, stop):
    out = []
    for w in _WORD_RE.findall(_ascii_lower(text)):
        if len(w) < 2 or w in stop:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class _Analyzer:
    """Picklable ``TfidfVectorizer`` analyzer: :func:`words` with a named stop list."""

    def __init__(self, stop_name):
        self.stop_name = stop_name

    def __call__(self, text):
        return words(text, stop=_AFFIL_STOP if self.stop_name == "affiliation" else _STOP)


def _field_texts(df, name) -> list:
    """Texts of one field per row ("" when the column is absent or the value missing)."""
    if name not in df.columns:
        return [""] * len(df)
    if name == "keywords":
        out = []
        for v in df[name].tolist():
            if isinstance(v, (list, tuple, np.ndarray)):
                out.append(" ; ".join(str(k) for k in v if isinstance(k, str)))
            else:
                out.append("" if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v))
        return out
    return ["" if v is None or v is pd.NA or (isinstance(v, float) and v != v) else str(v)
            for v in df[name].tolist()]


def _topic_texts(df) -> list:
    parts = [_field_texts(df, f) for f in ("title", "venue", "abstract", "keywords")]
    return [" ".join(p) for p in zip(*parts)]


def _new_vectorizer(field_name, **kw):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer=_Analyzer(field_name), norm=None, smooth_idf=True, **kw)


class Vocabulary:
    """Fitted word statistics of a mention corpus: TF-IDF per text field and an LSA topic model.

    The statistics are kept as plain tables (word -> column, IDF per column, the SVD
    components); encoding uses them directly, with the arithmetic of scikit-learn's
    ``TfidfVectorizer.transform`` / ``TruncatedSVD.transform`` / ``normalize`` (same
    results, bit for bit), so clustering with a saved model does not import
    scikit-learn. The scikit-learn objects are built on first access.

    Attributes
    ----------
    n_docs : int
        Number of mentions the vocabulary was fitted on.
    vectorizers : dict of str -> sklearn TfidfVectorizer or None
        Per field (``title``, ``venue``, ``affiliation``, ``abstract``, ``keywords``):
        fitted with ``norm=None`` and smooth IDF ``log((1 + n_docs) / (1 + df)) + 1``;
        ``None`` when the corpus had no word in that field.
    topic_vectorizer : sklearn TfidfVectorizer or None
        Sublinear, L2-normalised TF-IDF over title + venue + abstract + keyword words.
    topic_svd : sklearn TruncatedSVD or None
        Its truncated SVD (latent semantic analysis); ``None`` if the corpus is too small.
    """

    def __init__(self, n_docs=0, words=None, idf=None, topic_words=None, topic_idf=None, topic_components=None):
        self.n_docs = int(n_docs)
        #: field -> {word: column} (None: the field had no word)
        self._words = {k: (None if (words or {}).get(k) is None else dict(words[k])) for k in _FIELDS}
        self._idf = {k: (None if self._words[k] is None else np.asarray(idf[k], dtype=np.float64)) for k in _FIELDS}
        self._topic_words = None if topic_components is None else dict(topic_words)
        self._topic_idf = None if topic_components is None else np.asarray(topic_idf, dtype=np.float64)
        self._topic_components = (None if topic_components is None
                                  else np.ascontiguousarray(topic_components, dtype=np.float64))
        self._sk = {}

    @classmethod
    def fit(cls, df: pd.DataFrame, *, n_topics: int = _N_TOPICS) -> "Vocabulary":
        """Fit the TF-IDF vectorizers and the topic model on the mentions of ``df`` (no labels used).

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions with ``title``, ``venue``, ``affiliation`` and optionally
            ``abstract`` / ``keywords`` columns.
        n_topics : int, default 32
            LSA dimensions (fewer if the corpus has fewer distinct words).
        """
        vecs = {}
        for name in _FIELDS:
            texts = _field_texts(df, name)
            vec = _new_vectorizer(name)
            try:
                vec.fit(texts)
            except ValueError:  # sklearn: "empty vocabulary" (no word in this field)
                vec = None
            vecs[name] = vec
        tvec, svd = None, None
        texts = _topic_texts(df)
        if len(df) > n_topics:
            tvec = _new_topic_vectorizer()
            try:
                X = tvec.fit_transform(texts)
            except ValueError:
                X = None
            if X is not None and X.shape[1] > n_topics + 1:
                from sklearn.decomposition import TruncatedSVD

                svd = TruncatedSVD(n_components=int(n_topics), algorithm="randomized", n_iter=7,
                                   random_state=0).fit(X)
            else:
                tvec = None
        voc = cls(n_docs=int(len(df)),
                  words={k: (None if v is None else v.vocabulary_) for k, v in vecs.items()},
                  idf={k: (None if v is None else v.idf_) for k, v in vecs.items()},
                  topic_words=None if svd is None else tvec.vocabulary_,
                  topic_idf=None if svd is None else tvec.idf_,
                  topic_components=None if svd is None else svd.components_)
        voc._sk.update(vectorizers=vecs, topic_vectorizer=tvec if svd is not None else None, topic_svd=svd)
        return voc

    # scikit-learn objects, built on first access (fit keeps the ones it fitted)
    @property
    def vectorizers(self) -> dict:
        if "vectorizers" not in self._sk:
            vecs = {}
            for k in _FIELDS:
                if self._words[k] is None:
                    vecs[k] = None
                    continue
                vec = _new_vectorizer(k)
                vec.vocabulary_ = dict(self._words[k])
                vec.idf_ = self._idf[k].copy()
                vecs[k] = vec
            self._sk["vectorizers"] = vecs
        return self._sk["vectorizers"]

    @property
    def topic_vectorizer(self):
        if "topic_vectorizer" not in self._sk:
            tvec = None
            if self._topic_components is not None:
                tvec = _new_topic_vectorizer()
                tvec.vocabulary_ = dict(self._topic_words)
                tvec.idf_ = self._topic_idf.copy()
            self._sk["topic_vectorizer"] = tvec
        return self._sk["topic_vectorizer"]

    @property
    def topic_svd(self):
        if "topic_svd" not in self._sk:
            svd = None
            if self._topic_components is not None:
                from sklearn.decomposition import TruncatedSVD

                svd = TruncatedSVD(n_components=len(self._topic_components))
                svd.components_ = self._topic_components.copy()
                svd.n_features_in_ = self._topic_components.shape[1]
            self._sk["topic_svd"] = svd
        return self._sk["topic_svd"]

    @property
    def n_topics(self) -> int:
        return 0 if self._topic_components is None else int(self._topic_components.shape[0])

    def n_words(self, field_name: str) -> int:
        """V, the number of words the vocabulary knows in one field (0 if the field had none)."""
        w = self._words.get(field_name)
        return 0 if w is None else len(w)

    def to_state(self) -> dict:
        """JSON-able state (plain dicts, lists, ints, floats and strings) for saving a fitted model.

        :meth:`from_state` is its inverse; nothing executable is stored.
        """
        def vec_state(words, idf):
            if words is None:
                return None
            return {"vocabulary": {str(w): int(c) for w, c in words.items()}, "idf": [float(x) for x in idf]}

        topic = None
        if self._topic_components is not None:
            topic = {**vec_state(self._topic_words, self._topic_idf),
                     "components": [[float(x) for x in row] for row in self._topic_components]}
        return {"version": 2, "n_docs": int(self.n_docs),
                "fields": {k: vec_state(self._words[k], self._idf[k]) for k in _FIELDS}, "topic": topic}

    @classmethod
    def from_state(cls, state: dict) -> "Vocabulary":
        """Rebuild a vocabulary from :meth:`to_state` output, validating every field.

        Raises
        ------
        ValueError
            If a field is missing or has the wrong type or shape (the message names it).
        """
        if not isinstance(state, dict) or state.get("version") != 2 or not isinstance(state.get("fields"), dict):
            raise ValueError("vocabulary state must be a dict with version 2 and a 'fields' dict")
        n = state.get("n_docs")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"vocabulary field n_docs must be an int >= 0; got {n!r}")

        def check_vec(key, st):
            if not isinstance(st, dict) or not isinstance(st.get("vocabulary"), dict) \
                    or not isinstance(st.get("idf"), list):
                raise ValueError(f"vocabulary {key!r} must be a dict with 'vocabulary' and 'idf'")
            voc, idf = st["vocabulary"], st["idf"]
            V = len(idf)
            # whole-list checks (a saved model has ~10^5 words): exact types, then numpy
            if len(voc) != V or set(map(type, voc)) - {str} or set(map(type, voc.values())) - {int} or (
                    V and not np.array_equal(np.sort(np.fromiter(voc.values(), np.int64, V)), np.arange(V))):
                raise ValueError(f"vocabulary {key!r}: 'vocabulary' must map {V} words to the columns 0..{V - 1}")
            arr = _finite_numbers(idf)
            if arr is None or not np.all(arr >= 1.0):
                raise ValueError(f"vocabulary {key!r}: 'idf' must hold finite numbers >= 1")
            return dict(voc), arr

        words, idfs = {}, {}
        for key in _FIELDS:
            if key not in state["fields"]:
                raise ValueError(f"vocabulary state lacks the field {key!r}")
            st = state["fields"][key]
            words[key], idfs[key] = (None, None) if st is None else check_vec(key, st)
        topic = state.get("topic")
        tw = tidf = comp = None
        if topic is not None:
            tw, tidf = check_vec("topic", topic)
            comp = topic.get("components")
            V = len(tidf)
            rows = [_finite_numbers(r) if isinstance(r, list) and len(r) == V else None
                    for r in (comp if isinstance(comp, list) else [])]
            if not isinstance(comp, list) or not comp or any(r is None for r in rows):
                raise ValueError(f"vocabulary 'topic': 'components' must be a non-empty list of rows of {V} "
                                 "finite numbers")
            comp = np.stack(rows)
        return cls(n_docs=n, words=words, idf=idfs, topic_words=tw, topic_idf=tidf, topic_components=comp)

    def _count_rows(self, field_name, texts):
        """Per text: L2-normalised TF-IDF of the known and the unseen words.

        Returns
        -------
        ptr : ndarray of int64, shape (n + 1,)
        cols : ndarray of int64
            Per row, the known words' columns (ascending, < V), then the unseen words as
            ``V + k`` (k = the word's index in ``unseen``), ascending.
        values : ndarray of float64
            ``count * idf`` (known; ``TfidfVectorizer`` with ``norm=None``) and
            ``count * (log(1 + n_docs) + 1)`` (unseen), each row divided by its L2 norm
            (squares summed in column order, as scikit-learn's ``normalize`` does).
        unseen : list of str
            The unseen words, sorted.
        """
        index = self._words.get(field_name) or {}
        idf = self._idf.get(field_name)
        V = len(index)
        analyzer = _Analyzer(field_name)
        ptr = [0]
        cols, counts = [], []
        rows = {}       # text -> its row (venues and affiliations repeat: each distinct text once)
        for text in texts:
            row = rows.get(text)
            if row is None:
                cnt = Counter(analyzer(text))
                known = sorted((index[w], c) for w, c in cnt.items() if w in index)
                new = sorted((w, c) for w, c in cnt.items() if w not in index)
                # known columns, then the unseen words as (word, count) (numbered below)
                row = rows[text] = ([k for k, _ in known] + new, [c for _, c in known] + [c for _, c in new])
            cols.extend(row[0])
            counts.extend(row[1])
            ptr.append(len(cols))
        unseen = sorted({c[0] for row in rows.values() for c in row[0] if not isinstance(c, int)})
        pos = {w: V + i for i, w in enumerate(unseen)}
        col = np.fromiter((c if isinstance(c, int) else pos[c[0]] for c in cols), dtype=np.int64, count=len(cols))
        val = np.asarray(counts, dtype=np.float64)
        known = col < V
        if idf is not None:
            val[known] *= idf[col[known]]
        val[~known] *= math.log(1.0 + self.n_docs) + 1.0
        ptr = np.asarray(ptr, dtype=np.int64)
        _normalize_rows(ptr, val)
        return ptr, col, val, unseen

    def tfidf(self, field_name: str, texts) -> "scipy.sparse.csr_matrix":  # noqa: F821
        """L2-normalised TF-IDF rows of ``texts`` (one field), sorted column ids per row.

        Columns ``0 .. V - 1`` are the fitted words; words the vocabulary never saw get
        columns ``V, V + 1, ...`` (local to this call, in sorted order of the words) and
        the IDF of document frequency 0, ``log(1 + n_docs) + 1``.
        """
        import scipy.sparse as sp

        texts = list(texts)
        ptr, col, val, unseen = self._count_rows(field_name, texts)
        width = self.n_words(field_name) + len(unseen)
        if width == 0:
            return sp.csr_matrix((len(texts), 0))
        enc = _tfidf_block(ptr, col, val, self.n_words(field_name))
        return sp.csr_matrix((enc[2][:-1], enc[1][:-1], enc[0]), shape=(len(texts), width))

    def topics(self, df: pd.DataFrame) -> np.ndarray:
        """Unit-norm LSA topic vectors of the mentions, ndarray of shape (n, n_topics) (zeros: no text).

        The arithmetic of ``normalize(svd.transform(topic_vectorizer.transform(texts)))``
        (sublinear TF, IDF, L2 rows; sparse @ dense; L2 rows, norms below 10 eps left).
        """
        if self._topic_components is None:
            return np.zeros((len(df), 0))
        index, idf = self._topic_words, self._topic_idf
        analyzer = _Analyzer("topic")
        ptr = [0]
        cols, counts = [], []
        get = index.get
        for text in _topic_texts(df):
            cnt = Counter(k for k in map(get, analyzer(text)) if k is not None)
            ks = sorted(cnt)
            cols.extend(ks)
            counts.extend(cnt[k] for k in ks)
            ptr.append(len(cols))
        data = np.asarray(counts, dtype=np.float64)
        col = np.asarray(cols, dtype=np.int32)
        np.log(data, data)
        data += 1.0
        data *= idf[col]
        ptr = np.asarray(ptr, dtype=np.int64)
        _normalize_rows(ptr, data)
        Z = _csr_dot(ptr, col, data, np.ascontiguousarray(self._topic_components.T))
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        norms[norms < 10 * np.finfo(norms.dtype).eps] = 1.0
        Z /= norms[:, None]
        return np.ascontiguousarray(Z, dtype=np.float64)


def _finite_numbers(values):
    """float64 array of a list of ints / floats (no bools, no strings) if all finite, else None."""
    if set(map(type, values)) - {int, float}:
        return None
    arr = np.asarray(values, dtype=np.float64)
    return arr if arr.ndim == 1 and np.all(np.isfinite(arr)) else None


def _new_topic_vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer=_Analyzer("topic"), min_df=2, max_features=_TOPIC_MAX_WORDS, sublinear_tf=True,
                           norm="l2")


def _csr_dot(ptr, col, data, B):
    """CSR rows (ptr, col, data) times a dense C-ordered (V, k) matrix, as scipy's ``csr_matvecs``
    computes it: each output row starts at 0 and adds ``data * B[col]`` entry by entry in stored
    order (the same roundings), numpy only."""
    n = len(ptr) - 1
    Z = np.zeros((n, B.shape[1]), dtype=np.float64)
    lens = np.diff(ptr)
    for p in range(int(lens.max()) if n else 0):
        rows = np.flatnonzero(lens > p)
        k = ptr[rows] + p
        Z[rows] += data[k, None] * B[col[k]]
    return Z


def _normalize_rows(ptr, data):
    """L2-normalise CSR rows in place, summing squares in stored order (sklearn's
    ``inplace_csr_row_normalize_l2``); all-zero rows are left."""
    n = len(ptr) - 1
    if not len(data):
        return
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    sums = np.bincount(row, weights=data * data, minlength=n)
    norms = np.sqrt(sums)
    nz = sums != 0.0
    data /= np.where(nz, norms, 1.0)[row]


def _tfidf_block(ptr, col, w, V):
    """Final TF-IDF rows of one block from normalised per-mention rows (see ``_count_rows``).

    Unseen words (ids >= V, sorted by word within a row) get the block-local columns
    ``V, V + 1, ...`` in sorted order of the words, so rows stay sorted. Returns
    (ptr int64, ids int32 + pad, w float64 + pad).
    """
    ids = col.astype(np.int64)
    un = ids >= V
    if un.any():
        ids[un] = V + np.searchsorted(np.unique(ids[un]), ids[un])
    return (ptr.copy(), np.concatenate([ids.astype(np.int32), np.zeros(1, np.int32)]),
            np.concatenate([w, np.zeros(1)]))


@dataclass(frozen=True, eq=False)
class EncodedBlock:
    """One block of mentions as flat numpy arrays (see module docstring).

    CSR lists ``*_ptr`` (int64, shape (n + 1,)), ``*_ids`` (int32, sorted within a
    mention, token ids) and ``*_w`` (float64) for coauthors (``co``), title words
    (``ti``), venue words (``ve``), affiliation words (``af``), abstract words (``ab``),
    keywords (``kw``), venue acronyms (``va``) and venue words as acronym keys (``vt``);
    the id / weight arrays carry one trailing padding entry so they are never empty.
    Per-mention int32 arrays of shape (n,): ``venue_id``, ``affil_id``, ``year``,
    ``first_code`` (full first name), ``first_init`` (-1 = missing), ``init_code`` /
    ``init_len`` (packed given-name initials, 5 bits each, first most significant),
    ``mid_init``, ``given_code``, ``comp1``, ``comp2`` (components of the
    shared-coauthor graphs) and float64 ``comp1_logsize``, ``name_rarity``,
    ``init_amb``. Component profiles ``pt_*`` (title), ``pv_*`` (venue), ``pa_*``
    (affiliation): CSR with n rows, row r holding the profile of the component
    labelled r. ``topic`` / ``comp_topic``: float64 of shape (n * n_topics + 1,),
    row-major unit topic vectors of the mentions / of the components (rows by label).
    ``ck_*``: coauthors keyed by first initial + last name, with ``ck_fn`` the code of
    the coauthor's full first name (-1 = initial only).
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

    def __len__(self) -> int:
        return self.n


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
    return _coauthor_key_of(normalize_name(name).replace("-", ""))


def _coauthor_key_of(norm):
    """:func:`_coauthor_key` of a name already normalised (hyphens dropped)."""
    tokens = norm.split()
    if not tokens:
        return "", ""
    if len(tokens) == 1:
        return tokens[0], ""
    first = tokens[0] if len(tokens[0]) >= 2 else ""
    return tokens[0][0] + " " + tokens[-1], first


def _acronym(ws):
    return "".join(w[0] for w in ws) if len(ws) >= 2 else ""


# --------------------------------------------------------------------------- per-mention encoding
#
# Encoding is split in two (``encode_mentions(df) == assemble_block(encode_parts(df))``):
#
# * :func:`encode_parts` does the per-mention work, fixed by the vocabulary, for any number
#   of mentions of any blocks at once (one scikit-learn transform per field for the whole
#   batch): TF-IDF rows, topic vectors, name parts, normalised coauthor keys. Strings are
#   interned in sorted tables, so the result is numpy arrays only (it can be saved as npz).
# * :func:`assemble_block` does the block-level work from those pieces, in one compiled call
#   (``coref._assemble``): block-local token ids and codes, coauthor IDF, profiles, block
#   statistics; the coauthor-graph components come from scipy (``coref._graph``).

#: CSR lists of a :class:`MentionEncoding`: prefix -> (aligned value arrays besides ``ids``)
_ME_CSR = {"co": (), "ti": ("w",), "ve": ("w",), "af": ("w",), "ab": ("w",), "kw": ("w",),
           "vw": (), "ck": ("fn",), "fs": ()}
#: per-mention int32 arrays of a :class:`MentionEncoding`
_ME_INT = ("year", "first_init", "init_len", "init_code", "mid_init", "first0", "middle",
           "first_g", "given_g", "venue_g", "affil_g", "acr_g")
#: string tables and the arrays whose entries index them (-1 = none)
_ME_REFS = {"co": ("co_ids",), "vtok": ("vw_ids", "acr_g"), "ck": ("ck_ids",), "fn": ("ck_fn", "fs_ids"),
            "first": ("first_g",), "given": ("given_g",), "venue": ("venue_g",), "affil": ("affil_g",)}
#: TF-IDF field -> CSR prefix; ids >= V (the vocabulary's size) index the table "u_<field>"
#: of words the vocabulary never saw
_TEXT_PREFIX = {"title": "ti", "venue": "ve", "affiliation": "af", "abstract": "ab", "keywords": "kw"}
_EMPTY_TABLE = np.zeros(0, dtype="<U1")


def _str_table(values):
    """Sorted unique strings (code-point order, as Python sorts) as a numpy unicode array."""
    vals = sorted(set(values))
    return np.array(vals, dtype=str) if vals else _EMPTY_TABLE


def _union_sorted(a, b):
    """``np.unique(np.concatenate([a, b]))`` of two string tables, by merging when both are sorted
    and unique (a search per entry of ``b`` instead of sorting both)."""
    dtype = np.result_type(a.dtype, b.dtype)
    if not (len(a) and len(b)) or np.any(a[1:] <= a[:-1]) or np.any(b[1:] <= b[:-1]):
        return np.unique(np.concatenate([a, b]).astype(dtype))
    pos = np.searchsorted(a, b)
    found = a[np.minimum(pos, len(a) - 1)] == b
    found &= pos < len(a)
    return np.insert(a.astype(dtype), pos[~found], b[~found].astype(dtype))


def _intern(values):
    """(table, int32 ids): ``table[ids[r]] == values[r]``; "" -> -1."""
    table = _str_table(v for v in values if v)
    pos = {s: i for i, s in enumerate(table.tolist())}
    ids = np.fromiter((pos[v] if v else -1 for v in values), dtype=np.int32, count=len(values))
    return table, ids


def _intern_lists(lists, table=None):
    """(table, ptr int64, ids int32) of token lists; the order within each list is kept."""
    if table is None:
        table = _str_table(t for row in lists for t in row)
    pos = {s: i for i, s in enumerate(table.tolist())}
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in lists], out=ptr[1:])
    ids = np.fromiter((pos[t] for row in lists for t in row), dtype=np.int32, count=int(ptr[-1]))
    return table, ptr, ids


def _take_csr(ptr, rows):
    """(new ptr, gather index) of the rows ``rows`` of a CSR list."""
    start, stop = ptr[rows], ptr[np.asarray(rows) + 1]
    lens = stop - start
    new_ptr = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    idx = np.repeat(start - new_ptr[:-1], lens) + np.arange(new_ptr[-1], dtype=np.int64)
    return new_ptr, idx


@dataclass(frozen=True, eq=False)
class MentionEncoding:
    """The per-mention part of the encoding of a set of mentions (any blocks), given a vocabulary.

    Everything :func:`assemble_block` needs to build the :class:`EncodedBlock` of any
    subset of the mentions, as numpy arrays only (strings interned in sorted tables), so
    it can be saved (``coref.outputs.write_encodings``) and reused (``coref add``).

    Attributes
    ----------
    mention_id : ndarray of str, shape (n,)
    arrays : dict of str -> ndarray
        CSR lists ``<p>_ptr`` (int64, shape (n + 1,)) and ``<p>_ids`` (int32) for ``p`` in
        ``co`` (normalised coauthor names, sorted per mention), ``ti``, ``ve``, ``af``,
        ``ab``, ``kw`` (L2-normalised TF-IDF rows, float64 ``<p>_w``: the vocabulary's
        words by column id (< V, its size), then the words it never saw as ids ``V + k``
        (the k-th word of the sorted table ``u_<field>``), ascending), ``vw`` (venue words), ``ck`` (coauthors
        keyed by initial + last name in order of appearance, with ``ck_fn`` their full
        first name or -1) and ``fs`` (full first names of the coauthors in order of
        appearance); int32 arrays of shape (n,) ``year``, ``first_init``, ``init_len``,
        ``init_code``, ``mid_init``, ``first0`` (code point of the first name's first
        letter, -1), ``middle`` (1 if the name has 3+ parts), and the table ids
        ``first_g``, ``given_g``, ``venue_g``, ``affil_g``, ``acr_g`` (venue acronym)
        (-1 = none); float64 ``topic`` of shape (n, n_topics).
    tables : dict of str -> ndarray of str
        Sorted unique strings (``co``, ``vtok``, ``ck``, ``fn``, ``first``, ``given``,
        ``venue``, ``affil``, ``u_title``, ``u_venue``, ``u_affiliation``,
        ``u_abstract``, ``u_keywords``).
    n_vocab : dict of str -> int
        V, the vocabulary's number of words per TF-IDF field.
    n_topics : int
    """

    mention_id: np.ndarray
    arrays: dict
    tables: dict
    n_vocab: dict
    n_topics: int

    def __len__(self) -> int:
        return len(self.mention_id)

    def take(self, rows) -> "MentionEncoding":
        """The encoding of the mentions ``rows`` (int positions, in that order); tables shared."""
        rows = np.asarray(rows, dtype=np.int64)
        a = self.arrays
        out = {}
        for p, extra in _ME_CSR.items():
            ptr, idx = _take_csr(a[f"{p}_ptr"], rows)
            out[f"{p}_ptr"] = ptr
            for name in ("ids",) + extra:
                out[f"{p}_{name}"] = a[f"{p}_{name}"][idx]
        for name in _ME_INT + ("topic",):
            out[name] = a[name][rows]
        return MentionEncoding(self.mention_id[rows], out, self.tables, self.n_vocab, self.n_topics)

    def split(self, bounds) -> list:
        """The encodings of the consecutive row ranges ``bounds[k]:bounds[k + 1]`` (tables shared).

        ``[e.split(b)[k] for k]`` equals ``e.take(range(b[k], b[k + 1]))`` array for array; the
        per-mention arrays are views, so splitting one :meth:`take` of many blocks (rows
        grouped by block) costs a few slices per block instead of a gather per field.

        Parameters
        ----------
        bounds : array-like of int, shape (n_parts + 1,)
            Non-decreasing row offsets from 0 to ``len(self)``.

        Raises
        ------
        ValueError
            If ``bounds`` does not run non-decreasing from 0 to ``len(self)``.
        """
        b = np.asarray(bounds, dtype=np.int64)
        if b.ndim != 1 or len(b) < 1 or b[0] != 0 or b[-1] != len(self) or np.any(np.diff(b) < 0):
            raise ValueError(f"bounds must run non-decreasing from 0 to {len(self)}")
        a = self.arrays
        csr = {p: a[f"{p}_ptr"] for p in _ME_CSR}
        out = []
        for lo, hi in zip(b[:-1].tolist(), b[1:].tolist()):
            part = {}
            for p, extra in _ME_CSR.items():
                ptr = csr[p]
                s, e = int(ptr[lo]), int(ptr[hi])
                part[f"{p}_ptr"] = ptr[lo:hi + 1] - s
                for name in ("ids",) + extra:
                    part[f"{p}_{name}"] = a[f"{p}_{name}"][s:e]
            for name in _ME_INT + ("topic",):
                part[name] = a[name][lo:hi]
            out.append(MentionEncoding(self.mention_id[lo:hi], part, self.tables, self.n_vocab, self.n_topics))
        return out

    def compact(self) -> "MentionEncoding":
        """The same encoding with every table cut down to the strings it uses (smaller to ship)."""
        a = dict(self.arrays)
        tables = dict(self.tables)
        for t, refs in _ME_REFS.items():
            used = np.unique(np.concatenate([a[r][a[r] >= 0] for r in refs]).astype(np.int64))
            tables[t] = self.tables[t][used]
            for r in refs:
                v = a[r].copy()
                v[v >= 0] = np.searchsorted(used, v[v >= 0])
                a[r] = v
        for f, p in _TEXT_PREFIX.items():
            V = self.n_vocab[f]
            ids = a[f"{p}_ids"]
            unseen = ids >= V
            used = np.unique(ids[unseen].astype(np.int64) - V)
            tables[f"u_{f}"] = self.tables[f"u_{f}"][used]
            ids = ids.copy()
            ids[unseen] = V + np.searchsorted(used, ids[unseen].astype(np.int64) - V)
            a[f"{p}_ids"] = ids
        return MentionEncoding(self.mention_id, a, tables, self.n_vocab, self.n_topics)

    @classmethod
    def concat(cls, parts) -> "MentionEncoding":
        """One encoding of the mentions of ``parts`` in order (tables merged, ids remapped).

        Raises
        ------
        ValueError
            If the parts come from different vocabularies (sizes or topic dimensions differ).
        """
        parts = list(parts)
        if not parts:
            raise ValueError("concat needs at least one MentionEncoding")
        first = parts[0]
        for p in parts[1:]:
            if p.n_vocab != first.n_vocab or p.n_topics != first.n_topics:
                raise ValueError("cannot concatenate encodings of different vocabularies "
                                 f"({p.n_vocab}, {p.n_topics} topics vs {first.n_vocab}, {first.n_topics})")
        tables, remap = {}, []
        for t in list(_ME_REFS) + [f"u_{f}" for f in _TEXT_PREFIX]:
            union = parts[0].tables[t]
            for p in parts[1:]:
                union = _union_sorted(union, p.tables[t])
            tables[t] = union if union.size else _EMPTY_TABLE
        out = {}
        for name in [f"{p}_ptr" for p in _ME_CSR]:
            ptrs = [p.arrays[name] for p in parts]
            offs = np.cumsum([0] + [int(x[-1]) for x in ptrs[:-1]])
            out[name] = np.concatenate([ptrs[0][:1]] + [x[1:] + o for x, o in zip(ptrs, offs)])
        table_of = {r: t for t, refs in _ME_REFS.items() for r in refs}
        for p_ in parts:
            remap.append({t: np.searchsorted(tables[t], p_.tables[t]).astype(np.int32) for t in tables})
        names = [f"{p}_{v}" for p, extra in _ME_CSR.items() for v in ("ids",) + extra] + list(_ME_INT) + ["topic"]
        text_of = {f"{p}_ids": f for f, p in _TEXT_PREFIX.items()}
        for name in names:
            vals = []
            for p_, rm in zip(parts, remap):
                v = p_.arrays[name]
                if name in table_of:
                    m = rm[table_of[name]]
                    v = np.where(v >= 0, m[np.maximum(v, 0)] if len(m) else -1, v).astype(v.dtype)
                elif name in text_of:
                    f = text_of[name]
                    V = first.n_vocab[f]
                    m = rm[f"u_{f}"]
                    v = v.copy()
                    un = v >= V
                    v[un] = V + m[v[un] - V]
                vals.append(v)
            out[name] = np.concatenate(vals)
        mids = np.concatenate([p.mention_id for p in parts])
        return cls(mids, out, tables, dict(first.n_vocab), first.n_topics)

    def validate(self, vocabulary: "Vocabulary | None" = None, *, where: str = "encoding") -> None:
        """Check every array and table (names, dtypes, shapes, ranges) against each other.

        Parameters
        ----------
        vocabulary : Vocabulary or None
            When given, ``n_vocab`` and ``n_topics`` must be its sizes.
        where : str
            Named in the error messages (e.g. the file read).

        Raises
        ------
        ValueError
            Naming ``where`` and the first field that is missing or inconsistent.
        """
        def bad(msg):
            raise ValueError(f"{where}: {msg}")

        n = len(self.mention_id)
        if self.mention_id.ndim != 1 or self.mention_id.dtype.kind not in "UO":
            bad("mention_id must be a 1-D array of strings")
        if len(set(self.mention_id.tolist())) != n:
            bad("mention_id values repeat")
        if not isinstance(self.n_topics, int) or self.n_topics < 0:
            bad(f"n_topics must be an int >= 0; got {self.n_topics!r}")
        if set(self.n_vocab) != set(_TEXT_PREFIX) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in self.n_vocab.values()):
            bad(f"n_vocab must map {sorted(_TEXT_PREFIX)} to ints >= 0; got {self.n_vocab!r}")
        if vocabulary is not None:
            want = {f: vocabulary.n_words(f) for f in _TEXT_PREFIX}
            if want != self.n_vocab or vocabulary.n_topics != self.n_topics:
                bad(f"made with another vocabulary (sizes {self.n_vocab}, {self.n_topics} topics; the model's "
                    f"{want}, {vocabulary.n_topics} topics)")
        want_tables = list(_ME_REFS) + [f"u_{f}" for f in _TEXT_PREFIX]
        if set(self.tables) != set(want_tables):
            bad(f"tables must be {sorted(want_tables)}; got {sorted(self.tables)}")
        for t in want_tables:
            v = self.tables[t]
            if not isinstance(v, np.ndarray) or v.ndim != 1 or v.dtype.kind != "U":
                bad(f"table {t!r} must be a 1-D unicode array")
            if len(v) > 1 and not bool(np.all(v[1:] > v[:-1])):
                bad(f"table {t!r} must be sorted without repeats")
        a = self.arrays

        def arr(name, dtype, shape=None):
            v = a.get(name)
            if not isinstance(v, np.ndarray) or v.dtype != np.dtype(dtype):
                bad(f"array {name!r} must be a {np.dtype(dtype).name} array; got "
                    f"{getattr(v, 'dtype', type(v).__name__)}")
            if shape is not None and v.shape != shape:
                bad(f"array {name!r} has shape {v.shape}, expected {shape}")
            return v

        want_arrays = ({f"{p}_{x}" for p, extra in _ME_CSR.items() for x in ("ptr", "ids") + extra}
                       | set(_ME_INT) | {"topic"})
        if set(a) != want_arrays:
            bad(f"arrays differ from the layout: missing {sorted(want_arrays - set(a))}, "
                f"unexpected {sorted(set(a) - want_arrays)}")
        for p, extra in _ME_CSR.items():
            ptr = arr(f"{p}_ptr", np.int64, (n + 1,))
            if ptr[0] != 0 or np.any(np.diff(ptr) < 0):
                bad(f"array '{p}_ptr' must start at 0 and never decrease")
            nnz = int(ptr[-1])
            ids = arr(f"{p}_ids", np.int32, (nnz,))
            if p == "ck":
                arr("ck_fn", np.int32, (nnz,))
            if p in _TEXT_PREFIX.values():
                w = arr(f"{p}_w", np.float64, (nnz,))
                if not np.all(np.isfinite(w)) or np.any(w <= 0):
                    bad(f"array '{p}_w' must hold finite weights > 0")
        for name in _ME_INT:
            arr(name, np.int32, (n,))
        topic = arr("topic", np.float64, (n, self.n_topics))
        if not np.all(np.isfinite(topic)):
            bad("array 'topic' must be finite")
        for t, refs in _ME_REFS.items():
            size = len(self.tables[t])
            for r in refs:
                v = a[r]
                lo = 0 if r.endswith("_ids") else -1
                if v.size and (v.min() < lo or v.max() >= size):
                    bad(f"array {r!r} indexes outside table {t!r} (size {size})")
        for f, p in _TEXT_PREFIX.items():
            v = a[f"{p}_ids"]
            top = self.n_vocab[f] + len(self.tables[f"u_{f}"])
            if v.size and (v.min() < 0 or v.max() >= top):
                bad(f"array '{p}_ids' has column ids outside [0, {top})")


def encode_parts(df: pd.DataFrame, vocabulary: Vocabulary | None = None, *,
                 chunk_size: int = 100_000) -> MentionEncoding:
    """The per-mention part of the encoding of ``df`` (any number of blocks), in batches.

    ``assemble_block(encode_parts(df, voc).take(rows))`` equals
    ``encode_mentions(df.iloc[rows], voc)`` array for array, bit for bit, for the rows
    of any one block.

    Parameters
    ----------
    df : pandas.DataFrame of shape (n_mentions, ...)
        Mentions (columns as for :func:`encode_mentions`), of one or many blocks.
    vocabulary : Vocabulary or None
        Fitted TF-IDF and topic statistics; ``None`` fits one on ``df`` itself.
    chunk_size : int, default 100000
        Mentions encoded per batch; batches are joined with :meth:`MentionEncoding.concat`
        (string tables merged, so the assembled blocks are the same). Bounds the transient
        memory of the batch (about 2 kB per mention) on millions of mentions.

    Returns
    -------
    MentionEncoding

    Raises
    ------
    ValueError
        If a required column is missing, or ``chunk_size`` < 1.
    TypeError
        If ``df`` is not a DataFrame.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__} instead")
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"df is missing the mention column(s) {missing}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1; got {chunk_size!r}")
    voc = Vocabulary.fit(df) if vocabulary is None else vocabulary
    if len(df) > chunk_size:
        return MentionEncoding.concat(
            _encode_batch(df.iloc[k:k + chunk_size], voc) for k in range(0, len(df), int(chunk_size)))
    return _encode_batch(df, voc)


def _encode_batch(df: pd.DataFrame, voc: Vocabulary) -> MentionEncoding:
    """:func:`encode_parts` of one batch (arguments checked by the caller)."""
    n = len(df)
    arrays, tables, n_vocab = {}, {}, {}

    # coauthors: normalised names (hyphens dropped), sorted per mention
    co_raw = []
    for co in df["coauthors"].tolist():
        if co is None or (not isinstance(co, (list, tuple, np.ndarray))):
            co = []
        co_raw.append([a for a in co if isinstance(a, str)])
    # each distinct coauthor name normalised once (names repeat across papers)
    norm_of = {a: normalize_name(a).replace("-", "") for a in {a for co in co_raw for a in co}}
    co_lists = [sorted({k for k in map(norm_of.__getitem__, co) if k}) for co in co_raw]
    tables["co"], arrays["co_ptr"], arrays["co_ids"] = _intern_lists(co_lists)

    # TF-IDF rows of the whole batch at once (a row does not depend on the other rows);
    # unseen words are numbered per block at assembly
    for f, p in _TEXT_PREFIX.items():
        ptr, col, val, unseen = voc._count_rows(f, _field_texts(df, f))
        n_vocab[f] = voc.n_words(f)
        arrays[f"{p}_ptr"], arrays[f"{p}_ids"], arrays[f"{p}_w"] = ptr, col.astype(np.int32), val
        tables[f"u_{f}"] = np.array(unseen, dtype=str) if len(unseen) else _EMPTY_TABLE

    venue_words = [words(v) for v in df["venue"].tolist()]
    affil_words = [words(a, stop=_AFFIL_STOP) for a in df["affiliation"].tolist()]
    tables["venue"], arrays["venue_g"] = _intern([" ".join(w) for w in venue_words])
    tables["affil"], arrays["affil_g"] = _intern([" ".join(w) for w in affil_words])
    acr = [_acronym(ws) for ws in venue_words]
    vsets = [sorted(set(ws)) for ws in venue_words]
    tables["vtok"] = _str_table([a for a in acr if a] + [w for ws in vsets for w in ws])
    _, arrays["vw_ptr"], arrays["vw_ids"] = _intern_lists(vsets, tables["vtok"])
    pos = {s: i for i, s in enumerate(tables["vtok"].tolist())}
    arrays["acr_g"] = np.fromiter((pos[a] if a else -1 for a in acr), dtype=np.int32, count=n)

    years = pd.array(df["year"], dtype="Int64")
    year = np.asarray(years.fillna(-1).to_numpy(dtype=np.int64), dtype=np.int32)
    year[year < 0] = -1
    arrays["year"] = year

    # names: full first name, initials (packed, 5 bits each), full given names
    names = df["name"].tolist()
    parts = [_name_parts(name) for name in names]
    firsts = [p[0] for p in parts]
    tables["first"], arrays["first_g"] = _intern(firsts)
    tables["given"], arrays["given_g"] = _intern([p[2] for p in parts])
    arrays["first0"] = np.asarray([ord(f[0]) if f else -1 for f in firsts], dtype=np.int32)
    arrays["first_init"] = np.asarray([ord(p[1][0]) if p[1] else -1 for p in parts], dtype=np.int32)
    arrays["init_len"] = np.asarray([len(p[1]) for p in parts], dtype=np.int32)
    arrays["init_code"] = np.asarray(
        [sum((ord(ch) - 96) << (5 * (len(p[1]) - 1 - k)) for k, ch in enumerate(p[1])) for p in parts],
        dtype=np.int32)
    arrays["mid_init"] = np.asarray([ord(p[1][1]) if len(p[1]) >= 2 else -1 for p in parts], dtype=np.int32)
    arrays["middle"] = np.asarray([len(normalize_name(name).split()) >= 3 for name in names], dtype=np.int32)

    # coauthors keyed by first initial + last name (in order of appearance), with the full
    # first name when known (None: missing, or two different full names); and every full
    # first name in order of appearance (the block codes them in that order)
    ck_rows, fs_rows = [], []
    key_of = {a: _coauthor_key_of(k) for a, k in norm_of.items()}
    for co in co_raw:
        row, fs = {}, {}
        for a in co:
            key, first = key_of[a]
            if not key:
                continue
            val = first or None
            if first:
                fs.setdefault(first, None)
            row[key] = val if key not in row or row[key] == val else None
        ck_rows.append(row)
        fs_rows.append(list(fs))
    tables["ck"], arrays["ck_ptr"], arrays["ck_ids"] = _intern_lists([list(r) for r in ck_rows])
    tables["fn"], arrays["fs_ptr"], arrays["fs_ids"] = _intern_lists(fs_rows)
    fpos = {s: i for i, s in enumerate(tables["fn"].tolist())}
    arrays["ck_fn"] = np.fromiter((-1 if v is None else fpos[v] for r in ck_rows for v in r.values()),
                                  dtype=np.int32, count=len(arrays["ck_ids"]))

    T = voc.topics(df)
    arrays["topic"] = np.ascontiguousarray(T, dtype=np.float64).reshape(n, T.shape[1])
    mids = np.array([str(m) for m in df["mention_id"].tolist()], dtype=object)
    return MentionEncoding(mids, arrays, tables, n_vocab, int(T.shape[1]))


# --------------------------------------------------------------------------- block assembly
#
# The block-level work runs in the compiled kernel ``coref._assemble`` (one call per block:
# numpy's per-call overhead dominated the ~35 numpy calls of the former implementation,
# kept as the pure-numpy twin ``coref._assemble_py.assemble_block_py`` for the tests). The
# connected components of the coauthor graphs come from scipy (``coref._graph``), for all
# the blocks of a group in three calls (:func:`block_components`, :func:`assemble_blocks`).

_ASSEMBLE = None
_BLOCK_FIELDS = frozenset(f.name for f in fields(EncodedBlock))


def _assemble_kernel():
    """The compiled ``coref._assemble`` module (ImportError with how to build it if unbuilt)."""
    global _ASSEMBLE
    if _ASSEMBLE is None:
        from sampling.utils.kernels import load_kernel

        _ASSEMBLE = load_kernel("coref._assemble")
    return _ASSEMBLE


def _components(token_lists, min_shared):
    """Connected components of mentions (token lists) linked by >= ``min_shared`` shared tokens.

    Returns int32 labels in ``[0, n)``, numbered in the order of each component's first
    mention (:func:`coref._graph.token_components`, scipy).
    """
    from coref._graph import token_components

    _, ptr, ids = _intern_lists([sorted(set(map(str, t))) for t in token_lists])
    return token_components(ptr, ids, min_shared)


def block_components(encs):
    """The coauthor-graph components of several blocks, with three scipy calls in all.

    Parameters
    ----------
    encs : sequence of MentionEncoding
        The mentions of each block (one encoding per block, in block row order).

    Returns
    -------
    list of dict
        Per block, ``comp1`` / ``comp2`` (mentions sharing >= 1 / >= 2 coauthors) and
        ``comp3`` (>= 1 coauthor keyed by first initial + last name): int32 arrays of shape
        (n_b,), numbered per block in the order of each component's first mention
        (:func:`coref._graph.token_components`, scipy's ``connected_components``).
    """
    from coref._graph import token_components

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
    return out


def assemble_block(enc: MentionEncoding, components: dict | None = None) -> EncodedBlock:
    """The :class:`EncodedBlock` of one block from the per-mention encoding of its mentions.

    Block-local work, in one compiled call (``coref._assemble.assemble``): coauthor codes
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
        Equal, array for array and bit for bit, to ``encode_mentions`` of the same rows
        and to the pure-numpy twin ``coref._assemble_py.assemble_block_py``.

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
    if out.keys() != _BLOCK_FIELDS:
        raise RuntimeError(f"coref._assemble returned the fields {sorted(out)}, not those of EncodedBlock")
    # every field at once (a frozen dataclass's __init__ sets its 60 fields one by one, ~6 us)
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
