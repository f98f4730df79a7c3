"""Two mentions of one paper are two authors (coref.factors.papers): the mates, the factor
penalty in the kernel and its twin, and exact and racing Gibbs keeping mates apart."""
import numpy as np
import pandas as pd
import pytest

from coref.factors import _factors, _factors_py
from coref.factors.names import N_FEATURES, SAME_PAPER_PENALTY
from coref.factors.papers import paper_mates
from coref.gibbs import GibbsCoref


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in lists])
    return ptr, np.array([x for r in lists for x in r] + [0], np.int32)


def test_paper_mates_are_one_paper_with_other_coauthors():
    # mentions 0, 1, 5 on paper 0 (0 and 5 list the same coauthors: one author twice, not mates);
    # 3 and 4 on paper 1 with equal lists (a duplicate record); 2 unknown
    ptr, ids = _csr([[1, 2], [0, 2], [1, 2], [5], [5], [1, 2]])
    mate_ptr, mate_idx = paper_mates(np.array([0, 0, -1, 1, 1, 0]), ptr, ids)
    rows = [mate_idx[mate_ptr[i]:mate_ptr[i + 1]].tolist() for i in range(6)]
    assert rows == [[1], [0, 5], [], [], [], [1]]


def test_no_mates_without_shared_known_papers():
    ptr, ids = _csr([[1], [2], [3]])
    assert paper_mates(np.array([-1, -1, -1]), ptr, ids) == (None, None)
    assert paper_mates(np.array([0, 1, -1]), ptr, ids) == (None, None)
    assert paper_mates(np.array([0, 0, -1]), *_csr([[1], [1], [3]])) == (None, None)
    with pytest.raises(ValueError, match="co_ptr must have n"):
        paper_mates(np.array([0, 0]), ptr, ids)


def test_compiled_penalty_is_the_named_constant():
    assert _factors.same_paper_penalty == SAME_PAPER_PENALTY


def _block(n_big=40, paper=True):
    """One "w wang" block: n_big papers of one Wei Wang (coauthors Li Na, Zhang San), and on
    his first paper a second author, W. Wang, with the same title, venue and year."""
    rows = [dict(mention_id=f"a{k}", block="w wang", name="Wei Wang",
                 coauthors=["Li Na", "Zhang San"] + (["W. Wang"] if k == 0 else []),
                 title=f"graph sampling for entity resolution part {k % 3}", venue="KDD", year=2015,
                 affiliation="Tsinghua University", paper_id=f"p{k}") for k in range(n_big)]
    rows.append(dict(mention_id="b", block="w wang", name="W. Wang", coauthors=["Li Na", "Zhang San", "Wei Wang"],
                     title=rows[0]["title"], venue="KDD", year=2015, affiliation="Tsinghua University",
                     paper_id="p0"))
    df = pd.DataFrame(rows)
    df["paper_id"] = df["paper_id"].astype("string")
    if not paper:
        df["paper_id"] = pd.array([pd.NA] * len(df), dtype="string")
    return df


def test_kernel_and_twin_lower_only_the_mates_factor(shipped_model_and_data):
    _, model = shipped_model_and_data
    with_id, without = model.encode(_block(8)), model.encode(_block(8, paper=False))
    n = with_id.n
    I, J = np.triu_indices(n, 1)
    I, J = I.astype(np.int64), J.astype(np.int64)
    got = {}
    for name, enc in (("with", with_id), ("without", without)):
        fc, fp = np.empty(len(I)), np.empty(len(I))
        _factors.pair_factors(enc, model.theta_, model.bias_, I, J, fc)
        _factors_py.pair_factors(enc, model.theta_, model.bias_, I, J, fp)
        np.testing.assert_allclose(fc, fp, rtol=1e-12, atol=1e-12)
        got[name] = fc
    mate = (I == 0) & (J == n - 1)                    # a0 and b: one paper, two coauthor lists
    np.testing.assert_allclose(got["with"][mate], got["without"][mate] - SAME_PAPER_PENALTY, rtol=1e-12)
    np.testing.assert_array_equal(got["with"][~mate], got["without"][~mate])
    feats = np.empty((len(I), N_FEATURES))
    _factors.pair_features(with_id, I, J, feats)      # a constraint, not a feature
    feats0 = np.empty_like(feats)
    _factors.pair_features(without, I, J, feats0)
    np.testing.assert_array_equal(feats, feats0)


@pytest.mark.parametrize("sampler", ["exact", "racing"])
def test_gibbs_keeps_paper_mates_apart(shipped_model_and_data, sampler):
    _, model = shipped_model_and_data
    out = {}
    for paper in (True, False):
        g = GibbsCoref(model, sampler=sampler, n_sweeps=6, rng=0, record_history=False).fit(_block(paper=paper))
        out[paper] = g.clusters_
    assert out[True]["b"] != out[True]["a0"]          # two authors of one paper
    assert out[False]["b"] == out[False]["a0"]        # without the ids the evidence merges them
    big = out[True].drop("b")
    assert big.nunique() == 1                         # the other mentions stay one author


def test_explain_names_the_constraint(shipped_model_and_data):
    from coref.explain import explain_pair

    _, model = shipped_model_and_data
    df = _block(8)
    e = explain_pair(model, df, "a0", "b")
    assert e.by_group["group"].iloc[-1] == "one paper, two authors (constraint)"
    assert e.by_group["contribution"].iloc[-1] == -SAME_PAPER_PENALTY
    np.testing.assert_allclose(e.by_group["cumulative"].iloc[-1], e.f, rtol=1e-9)
    assert "one paper, two authors" in e.text()
    other = explain_pair(model, df, "a1", "b")          # not on one paper: no such row
    assert "one paper, two authors (constraint)" not in other.by_group["group"].tolist()


def test_racing_kernel_and_twin_drop_the_mates_clusters_alike(shipped_model_and_data):
    from coref.gibbs import _gibbs, _gibbs_py
    from coref.gibbs.schedule import bound_table

    _, model = shipped_model_and_data
    enc = model.encode(_block(30))
    assert enc.mate_ptr is not None
    theta, bias = np.ascontiguousarray(model.theta_, dtype=np.float64), float(model.bias_)
    n = enc.n
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = np.zeros(n, dtype=np.int64)          # everyone in one cluster, the mates included
        size = np.zeros(n, np.int64)
        size[0] = n
        state = np.array([3, 1, 4, 1], np.uint64)
        hist = np.zeros((3, n), np.int64)
        ev = np.zeros(3, np.int64)
        mod.anneal(enc, theta, bias, labels, size, np.arange(n, dtype=np.int64), np.array([1.0, 2.0, 10.0]),
                   np.zeros(3, np.int8), 0, 1, 3, 0, np.full(n, -np.inf), bound_table(0.05, n + 1), state, hist, ev)
        out.append((hist, ev, state))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    final = out[0][0][-1]
    mids = list(enc.mention_id)
    assert final[mids.index("b")] != final[mids.index("a0")]
