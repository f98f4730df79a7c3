"""Array helpers of the encoding: CSR lists and sorted string tables (numpy only).

Shared by :mod:`coref.encoding.vocabulary`, :mod:`coref.encoding.mentions`,
:mod:`coref.encoding.components` and the block assembly twin; not public API.
"""
from __future__ import annotations

import numpy as np

#: an empty string table (dtype ``<U1``)
EMPTY_TABLE = np.zeros(0, dtype="<U1")


def tfidf_block(ptr, col, w, V):
    """Final TF-IDF rows of one block from normalised per-mention rows (see ``count_rows``).

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


def str_table(values):
    """Sorted unique strings (code-point order, as Python sorts) as a numpy unicode array."""
    vals = sorted(set(values))
    return np.array(vals, dtype=str) if vals else EMPTY_TABLE


def union_sorted(a, b):
    """``np.unique(np.concatenate([a, b]))`` of two string tables, by merging when both are sorted
    and unique (a search per entry of ``b`` instead of sorting both)."""
    dtype = np.result_type(a.dtype, b.dtype)
    if not (len(a) and len(b)) or np.any(a[1:] <= a[:-1]) or np.any(b[1:] <= b[:-1]):
        return np.unique(np.concatenate([a, b]).astype(dtype))
    pos = np.searchsorted(a, b)
    found = a[np.minimum(pos, len(a) - 1)] == b
    found &= pos < len(a)
    return np.insert(a.astype(dtype), pos[~found], b[~found].astype(dtype))


def intern(values):
    """(table, int32 ids): ``table[ids[r]] == values[r]``; "" -> -1."""
    table = str_table(v for v in values if v)
    pos = {s: i for i, s in enumerate(table.tolist())}
    ids = np.fromiter((pos[v] if v else -1 for v in values), dtype=np.int32, count=len(values))
    return table, ids


def intern_lists(lists, table=None):
    """(table, ptr int64, ids int32) of token lists; the order within each list is kept."""
    if table is None:
        table = str_table(t for row in lists for t in row)
    pos = {s: i for i, s in enumerate(table.tolist())}
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in lists], out=ptr[1:])
    ids = np.fromiter((pos[t] for row in lists for t in row), dtype=np.int32, count=int(ptr[-1]))
    return table, ptr, ids


def take_csr(ptr, rows):
    """(new ptr, gather index) of the rows ``rows`` of a CSR list."""
    start, stop = ptr[rows], ptr[np.asarray(rows) + 1]
    lens = stop - start
    new_ptr = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    idx = np.repeat(start - new_ptr[:-1], lens) + np.arange(new_ptr[-1], dtype=np.int64)
    return new_ptr, idx
