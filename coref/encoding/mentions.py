"""The per-mention part of the encoding: :class:`MentionEncoding` and :func:`encode_parts`.

Encoding is split in two (``encode_mentions(df) == assemble_block(encode_parts(df))``):

* :func:`encode_parts` (here) does the per-mention work, fixed by the vocabulary, for any
  number of mentions of any blocks at once (one pass per field for the whole batch):
  TF-IDF rows, topic vectors, name parts, normalised coauthor keys. Strings are interned in
  sorted tables, so the result is numpy arrays only (it can be saved as npz).
* :func:`coref.encoding.blocks.assemble_block` does the block-level work from those pieces,
  in one compiled call (``coref.encoding._assemble``): block-local token ids and codes,
  coauthor IDF, profiles, block statistics; the coauthor-graph components come from scipy
  (:mod:`coref.encoding.components`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from coref.blocking import normalize_name
from coref.encoding._arrays import EMPTY_TABLE, intern, intern_lists, str_table, take_csr, union_sorted
from coref.encoding.names import acronym, coauthor_key_of, name_parts
from coref.encoding.text import AFFIL_STOP_WORDS, REQUIRED_COLUMNS, field_texts, words
from coref.encoding.vocabulary import Vocabulary
from coref.exceptions import IgnoredFieldsWarning

__all__ = ["CSR_ARRAYS", "INT_ARRAYS", "TABLE_REFS", "TEXT_PREFIX", "MentionEncoding", "encode_parts", "neutral_mentions"]

#: CSR lists of a :class:`MentionEncoding`: prefix -> (aligned value arrays besides ``ids``)
CSR_ARRAYS = {"co": (), "ti": ("w",), "ve": ("w",), "af": ("w",), "ab": ("w",), "kw": ("w",),
              "vw": (), "ck": ("fn",), "fs": ()}
#: per-mention int32 arrays of a :class:`MentionEncoding`
INT_ARRAYS = ("year", "first_init", "init_len", "init_code", "mid_init", "first0", "middle",
              "first_g", "given_g", "venue_g", "affil_g", "acr_g", "paper_g")
#: string tables and the arrays whose entries index them (-1 = none)
TABLE_REFS = {"co": ("co_ids",), "vtok": ("vw_ids", "acr_g"), "ck": ("ck_ids",), "fn": ("ck_fn", "fs_ids"),
              "first": ("first_g",), "given": ("given_g",), "venue": ("venue_g",), "affil": ("affil_g",),
              "paper": ("paper_g",)}
#: TF-IDF field -> CSR prefix; ids >= V (the vocabulary's size) index the table "u_<field>"
#: of words the vocabulary never saw
TEXT_PREFIX = {"title": "ti", "venue": "ve", "affiliation": "af", "abstract": "ab", "keywords": "kw"}


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
        for p, extra in CSR_ARRAYS.items():
            ptr, idx = take_csr(a[f"{p}_ptr"], rows)
            out[f"{p}_ptr"] = ptr
            for name in ("ids",) + extra:
                out[f"{p}_{name}"] = a[f"{p}_{name}"][idx]
        for name in INT_ARRAYS + ("topic",):
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
        csr = {p: a[f"{p}_ptr"] for p in CSR_ARRAYS}
        out = []
        for lo, hi in zip(b[:-1].tolist(), b[1:].tolist()):
            part = {}
            for p, extra in CSR_ARRAYS.items():
                ptr = csr[p]
                s, e = int(ptr[lo]), int(ptr[hi])
                part[f"{p}_ptr"] = ptr[lo:hi + 1] - s
                for name in ("ids",) + extra:
                    part[f"{p}_{name}"] = a[f"{p}_{name}"][s:e]
            for name in INT_ARRAYS + ("topic",):
                part[name] = a[name][lo:hi]
            out.append(MentionEncoding(self.mention_id[lo:hi], part, self.tables, self.n_vocab, self.n_topics))
        return out

    def compact(self) -> "MentionEncoding":
        """The same encoding with every table cut down to the strings it uses (smaller to ship)."""
        a = dict(self.arrays)
        tables = dict(self.tables)
        for t, refs in TABLE_REFS.items():
            used = np.unique(np.concatenate([a[r][a[r] >= 0] for r in refs]).astype(np.int64))
            tables[t] = self.tables[t][used]
            for r in refs:
                v = a[r].copy()
                v[v >= 0] = np.searchsorted(used, v[v >= 0])
                a[r] = v
        for f, p in TEXT_PREFIX.items():
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
        for t in list(TABLE_REFS) + [f"u_{f}" for f in TEXT_PREFIX]:
            union = parts[0].tables[t]
            for p in parts[1:]:
                union = union_sorted(union, p.tables[t])
            tables[t] = union if union.size else EMPTY_TABLE
        out = {}
        for name in [f"{p}_ptr" for p in CSR_ARRAYS]:
            ptrs = [p.arrays[name] for p in parts]
            offs = np.cumsum([0] + [int(x[-1]) for x in ptrs[:-1]])
            out[name] = np.concatenate([ptrs[0][:1]] + [x[1:] + o for x, o in zip(ptrs, offs)])
        table_of = {r: t for t, refs in TABLE_REFS.items() for r in refs}
        for p_ in parts:
            remap.append({t: np.searchsorted(tables[t], p_.tables[t]).astype(np.int32) for t in tables})
        names = [f"{p}_{v}" for p, extra in CSR_ARRAYS.items() for v in ("ids",) + extra] + list(INT_ARRAYS) + ["topic"]
        text_of = {f"{p}_ids": f for f, p in TEXT_PREFIX.items()}
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
        if set(self.n_vocab) != set(TEXT_PREFIX) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in self.n_vocab.values()):
            bad(f"n_vocab must map {sorted(TEXT_PREFIX)} to ints >= 0; got {self.n_vocab!r}")
        if vocabulary is not None:
            want = {f: vocabulary.n_words(f) for f in TEXT_PREFIX}
            if want != self.n_vocab or vocabulary.n_topics != self.n_topics:
                bad(f"made with another vocabulary (sizes {self.n_vocab}, {self.n_topics} topics; the model's "
                    f"{want}, {vocabulary.n_topics} topics)")
        want_tables = list(TABLE_REFS) + [f"u_{f}" for f in TEXT_PREFIX]
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

        want_arrays = ({f"{p}_{x}" for p, extra in CSR_ARRAYS.items() for x in ("ptr", "ids") + extra}
                       | set(INT_ARRAYS) | {"topic"})
        if set(a) != want_arrays:
            bad(f"arrays differ from the layout: missing {sorted(want_arrays - set(a))}, "
                f"unexpected {sorted(set(a) - want_arrays)}")
        for p, extra in CSR_ARRAYS.items():
            ptr = arr(f"{p}_ptr", np.int64, (n + 1,))
            if ptr[0] != 0 or np.any(np.diff(ptr) < 0):
                bad(f"array '{p}_ptr' must start at 0 and never decrease")
            nnz = int(ptr[-1])
            ids = arr(f"{p}_ids", np.int32, (nnz,))
            if p == "ck":
                arr("ck_fn", np.int32, (nnz,))
            if p in TEXT_PREFIX.values():
                w = arr(f"{p}_w", np.float64, (nnz,))
                if not np.all(np.isfinite(w)) or np.any(w <= 0):
                    bad(f"array '{p}_w' must hold finite weights > 0")
        for name in INT_ARRAYS:
            arr(name, np.int32, (n,))
        topic = arr("topic", np.float64, (n, self.n_topics))
        if not np.all(np.isfinite(topic)):
            bad("array 'topic' must be finite")
        for t, refs in TABLE_REFS.items():
            size = len(self.tables[t])
            for r in refs:
                v = a[r]
                lo = 0 if r.endswith("_ids") else -1
                if v.size and (v.min() < lo or v.max() >= size):
                    bad(f"array {r!r} indexes outside table {t!r} (size {size})")
        for f, p in TEXT_PREFIX.items():
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
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"df is missing the mention column(s) {missing}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1; got {chunk_size!r}")
    voc = Vocabulary.fit(df) if vocabulary is None else vocabulary
    df = neutral_mentions(df, voc)
    if len(df) > chunk_size:
        return MentionEncoding.concat(
            _encode_batch(df.iloc[k:k + chunk_size], voc) for k in range(0, len(df), int(chunk_size)))
    return _encode_batch(df, voc)


def neutral_mentions(df: pd.DataFrame, voc: Vocabulary) -> pd.DataFrame:
    """``df`` with the fields ``voc`` never saw blanked (:meth:`Vocabulary.neutral`).

    Issues one :class:`coref.exceptions.IgnoredFieldsWarning` per field and vocabulary, the
    first time mentions hold a field the vocabulary's training mentions did not.
    """
    df, ignored = voc.neutral(df)
    new = [f for f in ignored if f not in voc.warned_fields]
    if new:
        voc.warned_fields.update(new)
        warnings.warn(f"ignoring the input field(s) {', '.join(new)}: the model was trained on mentions "
                      f"without them, so it never learned what they mean and they would shift every "
                      f"factor (features and topic vectors are computed as if they were missing)",
                      IgnoredFieldsWarning, stacklevel=3)
    return df


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
    tables["co"], arrays["co_ptr"], arrays["co_ids"] = intern_lists(co_lists)

    # TF-IDF rows of the whole batch at once (a row does not depend on the other rows);
    # unseen words are numbered per block at assembly
    for f, p in TEXT_PREFIX.items():
        ptr, col, val, unseen = voc.count_rows(f, field_texts(df, f))
        n_vocab[f] = voc.n_words(f)
        arrays[f"{p}_ptr"], arrays[f"{p}_ids"], arrays[f"{p}_w"] = ptr, col.astype(np.int32), val
        tables[f"u_{f}"] = np.array(unseen, dtype=str) if len(unseen) else EMPTY_TABLE

    venue_words = [words(v) for v in df["venue"].tolist()]
    affil_words = [words(a, stop=AFFIL_STOP_WORDS) for a in df["affiliation"].tolist()]
    tables["venue"], arrays["venue_g"] = intern([" ".join(w) for w in venue_words])
    tables["affil"], arrays["affil_g"] = intern([" ".join(w) for w in affil_words])
    acr = [acronym(ws) for ws in venue_words]
    vsets = [sorted(set(ws)) for ws in venue_words]
    tables["vtok"] = str_table([a for a in acr if a] + [w for ws in vsets for w in ws])
    _, arrays["vw_ptr"], arrays["vw_ids"] = intern_lists(vsets, tables["vtok"])
    pos = {s: i for i, s in enumerate(tables["vtok"].tolist())}
    arrays["acr_g"] = np.fromiter((pos[a] if a else -1 for a in acr), dtype=np.int32, count=n)

    # the paper id, when given, is a constraint only (two mentions of one paper are two authors), never a feature
    papers = df["paper_id"].tolist() if "paper_id" in df.columns else [None] * n
    tables["paper"], arrays["paper_g"] = intern([p if isinstance(p, str) else "" for p in papers])

    years = pd.array(df["year"], dtype="Int64")
    year = np.asarray(years.fillna(-1).to_numpy(dtype=np.int64), dtype=np.int32)
    year[year < 0] = -1
    arrays["year"] = year

    # names: full first name, initials (packed, 5 bits each), full given names
    names = df["name"].tolist()
    parts = [name_parts(name) for name in names]
    firsts = [p[0] for p in parts]
    tables["first"], arrays["first_g"] = intern(firsts)
    tables["given"], arrays["given_g"] = intern([p[2] for p in parts])
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
    key_of = {a: coauthor_key_of(k) for a, k in norm_of.items()}
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
    tables["ck"], arrays["ck_ptr"], arrays["ck_ids"] = intern_lists([list(r) for r in ck_rows])
    tables["fn"], arrays["fs_ptr"], arrays["fs_ids"] = intern_lists(fs_rows)
    fpos = {s: i for i, s in enumerate(tables["fn"].tolist())}
    arrays["ck_fn"] = np.fromiter((-1 if v is None else fpos[v] for r in ck_rows for v in r.values()),
                                  dtype=np.int32, count=len(arrays["ck_ids"]))

    T = voc.topics(df)
    arrays["topic"] = np.ascontiguousarray(T, dtype=np.float64).reshape(n, T.shape[1])
    mids = np.array([str(m) for m in df["mention_id"].tolist()], dtype=object)
    return MentionEncoding(mids, arrays, tables, n_vocab, int(T.shape[1]))
