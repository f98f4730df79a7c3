"""Vocabulary.tfidf / Vocabulary.topics give scikit-learn's transforms (without importing it)."""
import math

import numpy as np
import pandas as pd

from coref.encoding import Vocabulary
from coref.encoding.text import Analyzer, field_texts, topic_texts

from .test_coref_encoding_blocks import RTOL, _corpus, _edge_blocks


def _sklearn_tfidf(voc, field_name, texts):
    """scikit-learn's TF-IDF of ``texts``: the fitted vectorizer's columns, then the unseen words
    (sorted) with the IDF of document frequency 0, rows L2-normalised."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    vec = voc.vectorizers.get(field_name)
    known = {} if vec is None else vec.vocabulary_
    analyzer = Analyzer(field_name)
    parts = [vec.transform(texts) if vec is not None else sp.csr_matrix((len(texts), 0))]
    new = CountVectorizer(analyzer=lambda t: [w for w in analyzer(t) if w not in known])
    try:
        parts.append(new.fit_transform(texts).astype(np.float64) * (math.log(1.0 + voc.n_docs) + 1.0))
    except ValueError:  # no unseen word
        pass
    X = sp.hstack(parts, format="csr")
    if X.shape[1] == 0:
        return X
    X = normalize(X, norm="l2").tocsr()
    X.sort_indices()
    return X


def test_vocabulary_tables_give_sklearn_transforms():
    from sklearn.preprocessing import normalize

    corpus = _corpus()
    voc = Vocabulary.fit(corpus, n_topics=4)
    back = Vocabulary.from_state(voc.to_state())
    df = pd.concat([corpus, _edge_blocks()], ignore_index=True)
    for f in ("title", "venue", "affiliation", "abstract", "keywords"):
        texts = field_texts(df, f)
        want = _sklearn_tfidf(voc, f, texts)
        for v in (voc, back):
            got = v.tfidf(f, texts)
            assert got.shape == want.shape, f
            np.testing.assert_array_equal(got.indptr, want.indptr)
            np.testing.assert_array_equal(got.indices, want.indices)
            np.testing.assert_allclose(got.data, want.data, rtol=RTOL, atol=0)
    want = normalize(voc.topic_svd.transform(voc.topic_vectorizer.transform(topic_texts(df))))
    for v in (voc, back):
        got = v.topics(df)
        assert got.shape == (len(df), 4) and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=0)


def test_a_saved_vocabulary_needs_no_sklearn_objects():
    """Encoding with a vocabulary read back from its state builds no scikit-learn object."""
    voc = Vocabulary.fit(_corpus(), n_topics=4)
    back = Vocabulary.from_state(voc.to_state())
    back.tfidf("title", field_texts(_edge_blocks(), "title"))
    back.topics(_edge_blocks())
    assert "vectorizers" not in back._sk and "topic_svd" not in back._sk
