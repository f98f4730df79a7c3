"""``coref.encoding.components.token_components``: shared-token components of mentions, many blocks at once."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coref.encoding.components import token_components


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in lists], out=ptr[1:])
    ids = np.array([t for r in lists for t in r] + [0], dtype=np.int32)   # a pad past ptr[-1]
    return ptr, ids


def _brute(lists, min_shared):
    """Union-find over every pair sharing >= min_shared tokens; labels by first mention."""
    n = len(lists)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in itertools.combinations(range(n), 2):
        # a token listed k times by one mention and m times by the other counts k * m times
        shared = sum(lists[a].count(t) * lists[b].count(t) for t in set(lists[a]) & set(lists[b]))
        if shared >= max(min_shared, 1):
            parent[find(b)] = find(a)
    codes, out = {}, []
    for r in range(n):
        out.append(codes.setdefault(find(r), len(codes)))
    return np.array(out, dtype=np.int32)


def test_tiny_graph_exact_labels():
    # 0-1 share "a"; 2 alone; 3-4 share "b" and "c" (two tokens); 1 and 3 share "d"
    lists = [[1], [1, 4], [7], [2, 3, 4], [2, 3]]
    ptr, ids = _csr(lists)
    assert token_components(ptr, ids, 1).tolist() == [0, 0, 1, 0, 0]
    assert token_components(ptr, ids, 2).tolist() == [0, 1, 2, 3, 3]
    assert token_components(ptr, ids, 3).tolist() == [0, 1, 2, 3, 4]
    assert token_components(ptr, ids, 1).dtype == np.int32


def test_blocks_never_link_and_are_numbered_apart():
    # the same token ids in two blocks: no edge across; each block numbered from 0
    lists = [[5], [6], [5], [6], [5, 6]]
    ptr, ids = _csr(lists)
    group = np.array([0, 0, 0, 1, 1])
    assert token_components(ptr, ids, 1, group=group).tolist() == [0, 1, 0, 0, 0]
    assert token_components(ptr, ids, 1).tolist() == [0, 0, 0, 0, 0]


def test_empty_and_tokenless_mentions():
    assert token_components(np.zeros(1, np.int64), np.zeros(1, np.int32)).tolist() == []
    ptr, ids = _csr([[], [], []])
    assert token_components(ptr, ids, 1).tolist() == [0, 1, 2]
    assert token_components(ptr, ids, 2).tolist() == [0, 1, 2]


lists_st = st.lists(st.lists(st.integers(0, 6), max_size=4), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(blocks=st.lists(lists_st, min_size=1, max_size=4), min_shared=st.integers(0, 3))
def test_batched_equals_brute_force_per_block(blocks, min_shared):
    lists = [r for b in blocks for r in b]
    group = np.repeat(np.arange(len(blocks)), [len(b) for b in blocks])
    ptr, ids = _csr(lists)
    got = token_components(ptr, ids, min_shared, group=group)
    want = np.concatenate([_brute(b, min_shared) for b in blocks])
    assert np.array_equal(got, want)
    for k, b in enumerate(blocks):       # one block at a time gives the same labels
        p, i = _csr(b)
        assert np.array_equal(token_components(p, i, min_shared), want[group == k])


def test_bad_input_is_refused():
    ptr, ids = _csr([[1], [2]])
    with pytest.raises(ValueError, match="non-decreasing 1-D CSR pointer starting at 0"):
        token_components(np.array([1, 2]), ids)
    with pytest.raises(ValueError, match="ids holds 1 entries; ptr needs 2"):
        token_components(ptr, ids[:1])
    with pytest.raises(ValueError, match="token ids must be >= 0"):
        token_components(ptr, np.array([-1, 2], np.int32))
    with pytest.raises(ValueError, match="one entry per mention"):
        token_components(ptr, ids, group=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="non-decreasing"):
        token_components(ptr, ids, group=np.array([1, 0]))
