"""Text normalisation: the words of a title, venue, affiliation, abstract or keyword list.

:func:`words` is the one tokenizer of the encoding (lower-case ASCII alphanumeric words,
stop words and 1-letter words dropped, a crude plural stem); :class:`Analyzer` wraps it for
scikit-learn's ``TfidfVectorizer``; :func:`field_texts` / :func:`topic_texts` read the text
of one field (or of the topic model's fields) per mention from a DataFrame.
"""
from __future__ import annotations

import functools
import math
import re
import unicodedata

import numpy as np
import pandas as pd

__all__ = ["AFFIL_STOP_WORDS", "Analyzer", "INPUT_FIELDS", "OPTIONAL_TEXT", "REQUIRED_COLUMNS", "STOP_WORDS",
           "TEXT_FIELDS", "blank_fields", "field_present", "field_texts", "topic_texts", "words"]


#: the mention columns encoding needs
REQUIRED_COLUMNS = ("mention_id", "name", "coauthors", "title", "venue", "year", "affiliation")
#: optional text columns (absent in old files: then every mention misses them)
OPTIONAL_TEXT = ("abstract", "keywords")

STOP_WORDS = frozenset(
    "a an and are as at by for from in into is its of on or the to with via using "
    "based new towards toward study approach method methods analysis system systems".split()
)
AFFIL_STOP_WORDS = frozenset("of the and at in for dept department univ university".split())
_WORD_RE = re.compile(r"[a-z0-9]+")
# placeholder strings some sources use for a missing field (AMiner writes "null")
_MISSING = frozenset({"null", "none", "nan", "n/a", "na", "unknown"})
#: the TF-IDF text fields of a mention, in the kernel's order
TEXT_FIELDS = ("title", "venue", "affiliation", "abstract", "keywords")
#: the input fields whose presence a fitted vocabulary records (``Vocabulary.fields``): a field
#: absent from the training mentions is blanked at encoding (:func:`blank_fields`)
INPUT_FIELDS = ("title", "venue", "affiliation", "abstract", "keywords", "year", "coauthors")


def _ascii_lower(text) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text is pd.NA:
        return ""
    text = unicodedata.normalize("NFKD", str(text))
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    return "" if text.strip() in _MISSING else text


def words(text, *, stop=STOP_WORDS) -> list[str]:
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


class Analyzer:
    """Picklable ``TfidfVectorizer`` analyzer: :func:`words` with a named stop list."""

    def __init__(self, stop_name):
        self.stop_name = stop_name

    def __call__(self, text):
        return words(text, stop=AFFIL_STOP_WORDS if self.stop_name == "affiliation" else STOP_WORDS)


def field_texts(df, name) -> list:
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


def topic_texts(df) -> list:
    parts = [field_texts(df, f) for f in ("title", "venue", "abstract", "keywords")]
    return [" ".join(p) for p in zip(*parts)]


def _has_value(v) -> bool:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return False
    if isinstance(v, (list, tuple, np.ndarray)):
        return any(isinstance(k, str) and _WORD_RE.search(_ascii_lower(k)) is not None for k in v)
    return _WORD_RE.search(_ascii_lower(v)) is not None


def field_present(df, name) -> np.ndarray:
    """Per row, whether the input field ``name`` (one of :data:`INPUT_FIELDS`) holds a value.

    Text fields and list fields (``keywords``, ``coauthors``) hold a value when they contain
    an alphanumeric character (placeholders such as ``"null"`` do not count); ``year`` when it
    is not NA. An absent column holds no value. Returns a bool ndarray of shape (len(df),).
    """
    if name not in df.columns:
        return np.zeros(len(df), dtype=bool)
    if name == "year":
        return ~np.asarray(pd.isna(pd.array(df[name], dtype="Int64")), dtype=bool)
    return np.fromiter((_has_value(v) for v in df[name].tolist()), dtype=bool, count=len(df))


def blank_fields(df, names):
    """A copy of ``df`` with the input fields ``names`` missing in every row.

    Text fields become ``""`` (``abstract``: NA), ``year`` NA, ``keywords`` and ``coauthors``
    empty lists: what a mention without that field looks like to the encoding.
    """
    df = df.copy()
    for name in names:
        if name not in df.columns:
            continue
        if name in ("keywords", "coauthors"):
            df[name] = [[] for _ in range(len(df))]
        elif name == "year":
            df[name] = pd.array([pd.NA] * len(df), dtype="Int64")
        elif name == "abstract":
            df[name] = pd.array([pd.NA] * len(df), dtype="string")
        else:
            df[name] = ""
    return df
