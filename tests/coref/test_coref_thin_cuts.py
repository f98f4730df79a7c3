"""Coauthor groups cut where they are thin (coref.encoding.components.cut_thin_groups, issue 27):
two coauthor circles joined by one shared coauthor are two groups; a dense circle stays whole."""
from itertools import combinations

import numpy as np
import pytest

from coref.encoding.components import (CUT_CONDUCTANCE, MIN_CUT_PART, coauthor_groups, cut_thin_groups,
                                       token_components)


def csr(lists):
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    return ptr, np.array([t for x in lists for t in x], np.int64)


def circle(first_token, n_mentions, n_coauthors, rng):
    """Mentions of one author: each lists 3 coauthors of a private circle of ``n_coauthors``."""
    return [sorted(first_token + rng.choice(n_coauthors, 3, replace=False)) for _ in range(n_mentions)]


def brute_conductance(A, mask):
    d = A.sum(1)
    return A[mask][:, ~mask].sum() / min(d[mask].sum(), d[~mask].sum())


def test_two_circles_joined_by_one_hub_are_cut_exactly_at_the_hub():
    rng = np.random.default_rng(0)
    a, b = circle(0, 30, 8, rng), circle(100, 25, 8, rng)
    a[3] = sorted(a[3] + [999])          # one coauthor (999) shared by one mention of each author
    b[7] = sorted(b[7] + [999])
    lists = a + b
    ptr, ids = csr(lists)
    comp1 = token_components(ptr, ids, 1)
    assert len(set(comp1.tolist())) == 1            # the chain makes one component
    out = cut_thin_groups(comp1, ptr, ids)
    assert out.dtype == np.int32
    assert out.tolist() == [0] * 30 + [1] * 25      # cut into the two authors, numbered by first mention


def test_a_dense_circle_and_small_groups_stay_whole():
    rng = np.random.default_rng(1)
    lists = circle(0, 40, 6, rng) + [[50], [50], [51]]
    ptr, ids = csr(lists)
    comp1 = token_components(ptr, ids, 1)
    assert cut_thin_groups(comp1, ptr, ids).tolist() == comp1.tolist()
    # below 2 * min_part mentions nothing is cut, however thin
    chain = [[k, k + 1] for k in range(2 * MIN_CUT_PART - 1)]
    p, i = csr(chain)
    c = token_components(p, i, 1)
    assert cut_thin_groups(c, p, i).tolist() == [0] * len(chain)
    assert cut_thin_groups(c, p, i, tau=0.0).tolist() == c.tolist()


def test_the_cut_is_the_least_conductance_sweep_cut_when_under_tau():
    """On a path of 2m mentions (each links the next), the least-conductance balanced cut is the
    middle edge; brute force over all cuts with >= min_part per side agrees."""
    m = 12
    lists = [[k, k + 1] for k in range(2 * m)]
    ptr, ids = csr(lists)
    comp1 = token_components(ptr, ids, 1)
    out = cut_thin_groups(comp1, ptr, ids, tau=1.0, min_part=m)
    assert out.tolist() == [0] * m + [1] * m
    A = np.zeros((2 * m, 2 * m))
    for i, j in combinations(range(2 * m), 2):
        A[i, j] = A[j, i] = len(set(lists[i]) & set(lists[j]))
    # the middle cut: 1 edge of weight 1 against a half's volume 2 (m - 1) + 1
    assert brute_conductance(A, np.array(out) == 0) == pytest.approx(1.0 / (2 * (m - 1) + 1))
    # and no other cut leaving >= 3 mentions on each side is thinner
    others = [brute_conductance(A, np.arange(2 * m) < k) for k in range(3, 2 * m - 2) if k != m]
    assert min(others) > 1.0 / (2 * (m - 1) + 1)


def test_coauthor_groups_bounds_then_cuts_and_is_deterministic():
    rng = np.random.default_rng(2)
    a, b = circle(0, 30, 8, rng), circle(100, 30, 8, rng)
    a[0] = sorted(a[0] + [999])
    b[0] = sorted(b[0] + [999])
    lists = a + b
    ptr, ids = csr(lists)
    c1, c2 = token_components(ptr, ids, 1), token_components(ptr, ids, 2)
    first = coauthor_groups(c1, c2, ptr, ids)
    assert first.tolist() == coauthor_groups(c1, c2, ptr, ids).tolist()
    assert sorted(np.bincount(first).tolist()) == [30, 30]
    assert CUT_CONDUCTANCE > 0


def test_cut_thin_groups_rejects_bad_input():
    ptr, ids = csr([[0], [0]])
    with pytest.raises(ValueError, match="min_part must be >= 1"):
        cut_thin_groups(np.zeros(2, np.int32), ptr, ids, min_part=0)
    with pytest.raises(ValueError, match="tau must be a finite number"):
        cut_thin_groups(np.zeros(2, np.int32), ptr, ids, tau=float("nan"))
    with pytest.raises(ValueError, match="len\\(ptr\\) - 1"):
        cut_thin_groups(np.zeros(3, np.int32), ptr, ids)


def test_the_cuts_run_blas_on_one_thread(monkeypatch):
    """The eigendecompositions of the cuts run with one BLAS thread (OpenBLAS's default threads
    made a 300 x 300 eigh 140x slower on a busy 2-core machine); the limit is lifted after."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import coref.encoding.components as components

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS runs on one thread here already: nothing to limit")
    seen = []
    eigh = np.linalg.eigh

    def spy(a):
        seen.append(blas_threads())
        return eigh(a)

    monkeypatch.setattr(components.np.linalg, "eigh", spy)
    rng = np.random.default_rng(0)
    a, b = circle(0, 30, 8, rng), circle(100, 25, 8, rng)
    a[3], b[7] = sorted(a[3] + [999]), sorted(b[7] + [999])
    ptr, ids = csr(a + b)
    assert cut_thin_groups(token_components(ptr, ids, 1), ptr, ids).tolist() == [0] * 30 + [1] * 25
    assert seen and all(t == [1] * len(t) for t in seen)
    assert blas_threads() == before
