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
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from coref.blocking import normalize_name

__all__ = [
    "FEATURE_NAMES",
    "FEATURE_LABELS",
    "FEATURE_GROUPS",
    "N_FEATURES",
    "EncodedBlock",
    "Vocabulary",
    "encode_mentions",
    "normalize_name",
    "words",
]

_BASE_FEATURES = (
    # name, group, label
    ("co_log_count", "coauthors", "number of shared coauthors (log)"),
    ("co_jaccard", "coauthors", "share of coauthors in common (Jaccard)"),
    ("co_idf", "coauthors", "rarity-weighted shared coauthors"),
    ("co_any", "coauthors", "at least one shared coauthor"),
    ("co_missing", "coauthors", "a mention lists no coauthor"),
    ("co_two", "coauthors", "at least two shared coauthors"),
    ("title_cos", "title", "title word similarity"),
    ("venue_cos", "venue", "venue word similarity"),
    ("venue_eq", "venue", "same venue"),
    ("affil_cos", "affiliation", "affiliation word similarity"),
    ("affil_missing", "affiliation", "an affiliation is missing"),
    ("affil_eq", "affiliation", "same affiliation"),
    ("year_gap", "year", "years apart (per decade)"),
    ("year_gap2", "year", "years apart, squared"),
    ("year_missing", "year", "a year is missing"),
    ("name_compat", "name", "first names compatible"),
    ("co_log_count_logn", "coauthors", "shared coauthors, scaled by block size"),
    ("same_comp1", "coauthors", "linked through a chain of shared coauthors"),
    ("same_comp2", "coauthors", "linked through a chain of 2+ shared coauthors"),
    ("same_comp1_logsize", "coauthors", "size of the coauthor group linking them"),
    ("comp_title_cos", "title", "title similarity of their coauthor groups"),
    ("comp_venue_cos", "venue", "venue similarity of their coauthor groups"),
    ("comp_affil_cos", "affiliation", "affiliation similarity of their coauthor groups"),
    ("comp_year_gap", "year", "years between their coauthor groups"),
    ("mention_comp_title", "title", "title similarity with the other's coauthor group"),
    ("comp_logsizes", "coauthors", "sizes of their (different) coauthor groups"),
    ("same_comp_initials", "coauthors", "linked through coauthors matched by initials"),
    ("log_n", "block", "block size (log)"),
    ("comp_frac", "block", "coauthor groups per mention in the block"),
    ("title_coherence", "block", "title coherence of the block"),
    ("venue_coherence", "block", "venue coherence of the block"),
    ("affil_coherence", "block", "affiliation coherence of the block"),
    ("name_middle", "block", "share of names with a middle name in the block"),
    ("co_init_log_count", "coauthors", "coauthors shared by initial + last name (log)"),
    ("co_init_extra", "coauthors", "coauthors shared only through initials"),
    ("name_first_eq", "name", "same full first name"),
    ("name_first_conflict", "name", "different first names"),
    ("name_init_only", "name", "names agree only through an initial"),
    ("name_middle_conflict", "name", "different middle initials"),
    ("name_full_eq", "name", "same full given names"),
    ("name_rarity", "name", "rarity of the shared first name in the block"),
    ("name_init_ambiguity", "name", "full first names an initial could stand for"),
    ("abstract_cos", "abstract", "abstract word similarity"),
    ("abstract_missing", "abstract", "an abstract is missing"),
    ("keyword_cos", "keywords", "keyword similarity"),
    ("keyword_missing", "keywords", "keywords are missing"),
    ("topic_cos", "title", "topic similarity (title, venue, abstract, keywords)"),
    ("comp_topic_cos", "title", "topic similarity of their coauthor groups"),
    ("venue_acronym", "venue", "one venue is the acronym of the other"),
    ("venue_contain", "venue", "one venue name contains the other"),
    ("topic_drift", "title", "topic similarity times years apart"),
    ("co_compat_log_count", "coauthors", "coauthors matched by compatible names (log)"),
    ("co_conflict_log_count", "coauthors", "coauthor names that clash (log)"),
)
N_BASE = len(_BASE_FEATURES)
FEATURE_NAMES = tuple(n for n, _, _ in _BASE_FEATURES)
FEATURE_NAMES = FEATURE_NAMES + tuple(f"{name}*same_comp1" for name in FEATURE_NAMES)
#: feature name -> what it measures, in words a person understands
FEATURE_LABELS = {n: lab for n, _, lab in _BASE_FEATURES}
FEATURE_LABELS.update({f"{n}*same_comp1": f"{lab} (within one coauthor group)" for n, _, lab in _BASE_FEATURES})
#: feature name -> evidence group ("coauthors", "title", "venue", "affiliation", "year",
#: "name", "abstract", "keywords", "block"), to sum an explanation by group
FEATURE_GROUPS = {n: g for n, g, _ in _BASE_FEATURES}
FEATURE_GROUPS.update({f"{n}*same_comp1": g for n, g, _ in _BASE_FEATURES})
N_FEATURES = len(FEATURE_NAMES)

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


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Fitted word statistics of a mention corpus: TF-IDF per text field and an LSA topic model.

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

    n_docs: int = 0
    vectorizers: dict = field(default_factory=dict)
    topic_vectorizer: object = None
    topic_svd: object = None

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
            from sklearn.decomposition import TruncatedSVD
            from sklearn.feature_extraction.text import TfidfVectorizer

            tvec = TfidfVectorizer(analyzer=_Analyzer("topic"), min_df=2, max_features=_TOPIC_MAX_WORDS,
                                   sublinear_tf=True, norm="l2")
            try:
                X = tvec.fit_transform(texts)
            except ValueError:
                X = None
            if X is not None and X.shape[1] > n_topics + 1:
                svd = TruncatedSVD(n_components=int(n_topics), algorithm="randomized", n_iter=7,
                                   random_state=0).fit(X)
            else:
                tvec = None
        return cls(n_docs=int(len(df)), vectorizers=vecs, topic_vectorizer=tvec, topic_svd=svd)

    @property
    def n_topics(self) -> int:
        return 0 if self.topic_svd is None else int(self.topic_svd.components_.shape[0])

    def to_state(self) -> dict:
        """JSON-able state (plain dicts, lists, ints, floats and strings) for saving a fitted model.

        :meth:`from_state` is its inverse; nothing executable is stored.
        """
        def vec_state(v):
            if v is None:
                return None
            return {"vocabulary": {str(w): int(c) for w, c in v.vocabulary_.items()},
                    "idf": [float(x) for x in v.idf_]}

        topic = None
        if self.topic_svd is not None:
            topic = {**vec_state(self.topic_vectorizer),
                     "components": [[float(x) for x in row] for row in self.topic_svd.components_]}
        return {"version": 2, "n_docs": int(self.n_docs),
                "fields": {k: vec_state(self.vectorizers.get(k)) for k in _FIELDS}, "topic": topic}

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

        def check_vec(key, st, field_name, **kw):
            if not isinstance(st, dict) or not isinstance(st.get("vocabulary"), dict) \
                    or not isinstance(st.get("idf"), list):
                raise ValueError(f"vocabulary {key!r} must be a dict with 'vocabulary' and 'idf'")
            voc, idf = st["vocabulary"], st["idf"]
            V = len(idf)
            cols = sorted(c for c in voc.values() if isinstance(c, int) and not isinstance(c, bool))
            if len(cols) != len(voc) or cols != list(range(V)) or not all(isinstance(w, str) for w in voc):
                raise ValueError(f"vocabulary {key!r}: 'vocabulary' must map {V} words to the columns 0..{V - 1}")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 1.0
                       for x in idf):
                raise ValueError(f"vocabulary {key!r}: 'idf' must hold finite numbers >= 1")
            vec = field_name(**kw) if callable(field_name) else _new_vectorizer(field_name, **kw)
            vec.vocabulary_ = dict(voc)
            vec.idf_ = np.asarray(idf, dtype=np.float64)
            return vec

        vecs = {}
        for key in _FIELDS:
            if key not in state["fields"]:
                raise ValueError(f"vocabulary state lacks the field {key!r}")
            st = state["fields"][key]
            vecs[key] = None if st is None else check_vec(key, st, key)
        tvec = svd = None
        topic = state.get("topic")
        if topic is not None:
            from sklearn.decomposition import TruncatedSVD
            from sklearn.feature_extraction.text import TfidfVectorizer

            tvec = check_vec("topic", topic, lambda **kw: TfidfVectorizer(
                analyzer=_Analyzer("topic"), min_df=2, max_features=_TOPIC_MAX_WORDS, sublinear_tf=True,
                norm="l2"))
            comp = topic.get("components")
            V = len(topic["idf"])
            if not isinstance(comp, list) or not comp or not all(
                    isinstance(r, list) and len(r) == V and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in r)
                    for r in comp):
                raise ValueError(f"vocabulary 'topic': 'components' must be a non-empty list of rows of {V} "
                                 "finite numbers")
            svd = TruncatedSVD(n_components=len(comp))
            svd.components_ = np.asarray(comp, dtype=np.float64)
            svd.n_features_in_ = V
        return cls(n_docs=n, vectorizers=vecs, topic_vectorizer=tvec, topic_svd=svd)

    def tfidf(self, field_name: str, texts) -> "scipy.sparse.csr_matrix":  # noqa: F821
        """L2-normalised TF-IDF rows of ``texts`` (one field), sorted column ids per row.

        Columns ``0 .. V - 1`` are the fitted words; words the vocabulary never saw get
        columns ``V, V + 1, ...`` (local to this call) and the IDF of document frequency 0,
        ``log(1 + n_docs) + 1``.
        """
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.preprocessing import normalize

        texts = list(texts)
        vec = self.vectorizers.get(field_name)
        analyzer = _Analyzer(field_name)
        known = {} if vec is None else vec.vocabulary_
        V = len(known)
        parts = []
        if vec is not None:
            parts.append(vec.transform(texts))
        new = CountVectorizer(analyzer=lambda t: [w for w in analyzer(t) if w not in known])
        try:
            Xn = new.fit_transform(texts).astype(np.float64)
            Xn = Xn * (math.log(1.0 + self.n_docs) + 1.0)
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

    def topics(self, df: pd.DataFrame) -> np.ndarray:
        """Unit-norm LSA topic vectors of the mentions, ndarray of shape (n, n_topics) (zeros: no text)."""
        if self.topic_svd is None:
            return np.zeros((len(df), 0))
        from sklearn.preprocessing import normalize

        Z = self.topic_svd.transform(self.topic_vectorizer.transform(_topic_texts(df)))
        return np.ascontiguousarray(normalize(Z), dtype=np.float64)


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


def encode_mentions(df: pd.DataFrame, vocabulary: Vocabulary | None = None) -> EncodedBlock:
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

    ti_ptr, ti_ids, ti_w = _from_sparse(voc.tfidf("title", _field_texts(df, "title")))
    ve_ptr, ve_ids, ve_w = _from_sparse(voc.tfidf("venue", _field_texts(df, "venue")))
    af_ptr, af_ids, af_w = _from_sparse(voc.tfidf("affiliation", _field_texts(df, "affiliation")))
    ab_ptr, ab_ids, ab_w = _from_sparse(voc.tfidf("abstract", _field_texts(df, "abstract")))
    kw_ptr, kw_ids, kw_w = _from_sparse(voc.tfidf("keywords", _field_texts(df, "keywords")))
    venue_words = [words(v) for v in df["venue"].tolist()]
    affil_words = [words(a, stop=_AFFIL_STOP) for a in df["affiliation"].tolist()]
    venue_id = _codes([" ".join(w) for w in venue_words])
    affil_id = _codes([" ".join(w) for w in affil_words])
    # venue acronyms ("international conference data engineering" -> "icde") vs venue words
    acr_codes = {}
    va = [[acr_codes.setdefault(a, len(acr_codes))] if (a := _acronym(ws)) else [] for ws in venue_words]
    vt = [sorted({acr_codes[w] for w in ws if w in acr_codes}) for ws in venue_words]
    va_ptr, va_ids, va_w = _csr(va, lambda t, c: 1.0, normalise=False)
    vt_ptr, vt_ids, vt_w = _csr(vt, lambda t, c: 1.0, normalise=False)

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
    T = voc.topics(df)
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
