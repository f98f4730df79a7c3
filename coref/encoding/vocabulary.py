"""The fitted word statistics of a mention corpus: TF-IDF per text field and an LSA topic model.

Word IDF for titles, venues, affiliations, abstracts and keywords comes from the
scikit-learn ``TfidfVectorizer`` s of a :class:`Vocabulary` fitted on a corpus of
mentions (unlabeled text only; the model fits it on its training mentions); a word
the vocabulary never saw gets the IDF of a word of document frequency 0, so two new
mentions sharing a new word still match. The topic vectors are a truncated SVD
(latent semantic analysis) of the mentions' words, fitted in the same vocabulary.
"""
from __future__ import annotations

import math
from collections import Counter
from functools import partial

import numpy as np
import pandas as pd

from coref.encoding._arrays import tfidf_block
from coref.encoding.text import INPUT_FIELDS, TEXT_FIELDS, Analyzer, blank_fields, field_present, field_texts, topic_texts

__all__ = ["Vocabulary"]

_N_TOPICS = 32          # LSA dimensions
_TOPIC_MAX_WORDS = 4000  # most frequent words (document frequency >= 2) of the topic model
_MIN_PRESENT = 2         # a field is learned when at least this many training mentions hold it


def _new_vectorizer(field_name, **kw):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer=Analyzer(field_name), norm=None, smooth_idf=True, **kw)


class Vocabulary:
    """Fitted word statistics of a mention corpus: TF-IDF per text field and an LSA topic model.

    The statistics are kept as plain tables (word -> column, IDF per column, the SVD
    components); encoding uses them directly, with the arithmetic of scikit-learn's
    ``TfidfVectorizer.transform`` / ``TruncatedSVD.transform`` / ``normalize`` (the same
    results; tested to a relative 1e-12), so clustering with a saved model does not import
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
    fields : tuple of str or None
        The input fields (:data:`coref.encoding.text.INPUT_FIELDS`) that at least two of the
        fitted mentions held. Encoding with this vocabulary blanks every other field
        (:meth:`neutral`), so a field the corpus never had is ignored everywhere it enters:
        its own features and the topic vectors. ``None`` (a vocabulary saved before this
        record): every field is used.
    """

    def __init__(self, n_docs=0, words=None, idf=None, topic_words=None, topic_idf=None, topic_components=None,
                 fields=None):
        self.n_docs = int(n_docs)
        self.fields = None if fields is None else tuple(f for f in INPUT_FIELDS if f in set(fields))
        self.warned_fields = set()  # the ignored fields a warning was already issued for
        #: field -> {word: column} (None: the field had no word)
        self._words = {k: (None if (words or {}).get(k) is None else dict(words[k])) for k in TEXT_FIELDS}
        self._idf = {k: (None if self._words[k] is None else np.asarray(idf[k], dtype=np.float64)) for k in TEXT_FIELDS}
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
        for name in TEXT_FIELDS:
            texts = field_texts(df, name)
            vec = _new_vectorizer(name)
            try:
                vec.fit(texts)
            except ValueError:  # sklearn: "empty vocabulary" (no word in this field)
                vec = None
            vecs[name] = vec
        tvec, svd = None, None
        texts = topic_texts(df)
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
                  topic_components=None if svd is None else svd.components_,
                  fields=[f for f in INPUT_FIELDS if int(field_present(df, f).sum()) >= _MIN_PRESENT])
        voc._sk.update(vectorizers=vecs, topic_vectorizer=tvec if svd is not None else None, topic_svd=svd)
        return voc

    # scikit-learn objects, built on first access (fit keeps the ones it fitted)
    def _sklearn(self, key, build):
        if key not in self._sk:
            self._sk[key] = build()
        return self._sk[key]

    @property
    def vectorizers(self) -> dict:
        return self._sklearn("vectorizers", lambda: {
            k: self._fitted(partial(_new_vectorizer, k), self._words[k], self._idf[k]) for k in TEXT_FIELDS})

    @property
    def topic_vectorizer(self):
        return self._sklearn("topic_vectorizer",
                             lambda: self._fitted(_new_topic_vectorizer, self._topic_words, self._topic_idf))

    @staticmethod
    def _fitted(make, words, idf):
        """A vectorizer ``make()`` with the fitted word columns and IDF (``None`` if there are no words)."""
        if words is None:
            return None
        vec = make()
        vec.vocabulary_ = dict(words)
        vec.idf_ = idf.copy()
        return vec

    @property
    def topic_svd(self):
        def build():
            if self._topic_components is None:
                return None
            from sklearn.decomposition import TruncatedSVD

            svd = TruncatedSVD(n_components=len(self._topic_components))
            svd.components_ = self._topic_components.copy()
            svd.n_features_in_ = self._topic_components.shape[1]
            return svd
        return self._sklearn("topic_svd", build)

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
        state = {"version": 2, "n_docs": int(self.n_docs),
                 "fields": {k: vec_state(self._words[k], self._idf[k]) for k in TEXT_FIELDS}, "topic": topic}
        if self.fields is not None:
            state["input_fields"] = list(self.fields)
        return state

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
        for key in TEXT_FIELDS:
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
        fields = state.get("input_fields")  # absent: saved before the record, every field used
        if fields is not None and (not isinstance(fields, list) or not set(map(type, fields)) <= {str}
                                   or not set(fields) <= set(INPUT_FIELDS) or len(set(fields)) != len(fields)):
            raise ValueError(f"vocabulary field 'input_fields' must be a list of distinct names of "
                             f"{list(INPUT_FIELDS)}; got {fields!r:.80}")
        return cls(n_docs=n, words=words, idf=idfs, topic_words=tw, topic_idf=tidf, topic_components=comp,
                   fields=fields)

    def ignored_fields(self, df: pd.DataFrame) -> dict:
        """The input fields of ``df`` that encoding with this vocabulary ignores, and why.

        Parameters
        ----------
        df : pandas.DataFrame
            Mentions.

        Returns
        -------
        dict of str -> str
            Field -> reason, for each field that some mention of ``df`` holds but fewer than
            two of the fitted mentions did (in :data:`~coref.encoding.text.INPUT_FIELDS`
            order); empty when nothing is ignored (always, for ``fields=None``).
        """
        if self.fields is None:
            return {}
        return {f: f"the model's {self.n_docs} training mentions held no {f} (fewer than {_MIN_PRESENT}), "
                   "so it never learned what it means"
                for f in INPUT_FIELDS if f not in self.fields and field_present(df, f).any()}

    def neutral(self, df: pd.DataFrame):
        """``df`` with the fields this vocabulary ignores blanked, and those fields.

        Returns
        -------
        df : pandas.DataFrame
            ``df`` itself when no field is ignored, else a copy with the fields of
            :meth:`ignored_fields` missing in every row (:func:`coref.encoding.text.blank_fields`),
            so the encoding (features and topic vectors) is that of the mentions without them.
        ignored : dict of str -> str
            :meth:`ignored_fields` of ``df``.
        """
        ignored = self.ignored_fields(df)
        return (blank_fields(df, list(ignored)) if ignored else df), ignored

    def count_rows(self, field_name, texts):
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
        analyzer = Analyzer(field_name)
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
        ptr, col, val, unseen = self.count_rows(field_name, texts)
        width = self.n_words(field_name) + len(unseen)
        if width == 0:
            return sp.csr_matrix((len(texts), 0))
        enc = tfidf_block(ptr, col, val, self.n_words(field_name))
        return sp.csr_matrix((enc[2][:-1], enc[1][:-1], enc[0]), shape=(len(texts), width))

    def topics(self, df: pd.DataFrame) -> np.ndarray:
        """Unit-norm LSA topic vectors of the mentions, ndarray of shape (n, n_topics) (zeros: no text).

        The arithmetic of ``normalize(svd.transform(topic_vectorizer.transform(texts)))``
        (sublinear TF, IDF, L2 rows; sparse @ dense; L2 rows, norms below 10 eps left).
        """
        if self._topic_components is None:
            return np.zeros((len(df), 0))
        index, idf = self._topic_words, self._topic_idf
        analyzer = Analyzer("topic")
        ptr = [0]
        cols, counts = [], []
        get = index.get
        for text in topic_texts(df):
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

    return TfidfVectorizer(analyzer=Analyzer("topic"), min_df=2, max_features=_TOPIC_MAX_WORDS, sublinear_tf=True,
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
