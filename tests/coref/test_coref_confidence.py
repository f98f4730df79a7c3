"""Sub-models of a block as graphical models: exact ln Z against brute-force set partitions."""
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from coref.confidence import (MAX_EXACT_SUBSET, build_graphical_model, check_constraints, event_probability,
                              exact_log_z, log_block_probabilities, subproblem)
from sampling.bounds import log_partition, read_uai, write_uai


def set_partitions(items):
    """Every set partition of ``items`` (a list), each once."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for p in set_partitions(rest):
        for k in range(len(p)):
            yield p[:k] + [[first] + p[k]] + p[k + 1:]
        yield [[first]] + p


def brute_log_z(F, S, assignment, constraints=()):
    """ln Z_S by enumerating set partitions of S plus one anchor per existing cluster.

    Anchors stand for the fixed clusters; a partition with two anchors in one block is
    not a configuration (fixed clusters stay distinct). Independent of the encoding.
    """
    n = F.shape[0]
    S = list(S)
    rest = [r for r in range(n) if r not in S]
    labs = sorted({int(assignment[r]) for r in rest})
    items = S + [("anchor", c) for c in labs]
    vals = []
    for part in set_partitions(items):
        y = {}
        valid = True
        for gi, g in enumerate(part):
            an = [a for a in g if isinstance(a, tuple)]
            if len(an) > 1:
                valid = False
                break
            lab = an[0][1] if an else ("new", gi)
            for s in g:
                if not isinstance(s, tuple):
                    y[s] = lab
        if not valid:
            continue
        for r in rest:
            y[r] = int(assignment[r])
        good = True
        for con in constraints:
            if con[0] == "same" and y[con[1]] != y[con[2]]:
                good = False
            if con[0] == "cluster" and y[con[1]] != con[2]:
                good = False
            if con[0] == "alone" and sum(1 for v in y.values() if v == y[con[1]]) != 1:
                good = False
        if not good:
            continue
        vals.append(sum(F[a, b] for a in range(n) for b in range(a + 1, n)
                        if (a in S or b in S) and y[a] == y[b]))
    return float(logsumexp(vals)) if vals else -math.inf


def _random_block(n, n_labels, seed):
    rng = np.random.default_rng(seed)
    F = rng.normal(-0.5, 1.5, (n, n))
    F = (F + F.T) / 2
    np.fill_diagonal(F, 0.0)
    return F, rng.integers(0, n_labels, n)


def test_set_partitions_are_bell_numbers():
    assert [sum(1 for _ in set_partitions(list(range(k)))) for k in range(8)] == [1, 1, 2, 5, 15, 52, 203, 877]


CASES = [  # (n rows, S, number of labels)
    (8, list(range(8)), 1),          # whole block of 8 mentions, no fixed mention
    (9, [0, 2, 3, 5, 8], 3),         # 5 mentions, 3 or fewer existing clusters
    (10, [1, 2, 4, 6, 7, 9], 2),
    (6, [3], 3),                     # a single mention
]


@pytest.mark.parametrize("n, S, n_labels", CASES, ids=["block8", "S5", "S6", "S1"])
@pytest.mark.parametrize("encoding", ["leader", "growth"])
def test_log_z_equals_brute_force(n, S, n_labels, encoding):
    F, a = _random_block(n, n_labels, seed=n)
    sub = subproblem(F, S, a if len(S) < n else None)
    bf = brute_log_z(F, S, a)
    gm = build_graphical_model(sub, encoding=encoding)
    assert abs(log_partition(gm) - bf) < 1e-9
    assert abs(exact_log_z(sub) - bf) < 1e-9


def test_log_z_brute_force_eight_mentions_with_fixed_clusters():
    F, a = _random_block(10, 2, seed=3)
    S = [0, 1, 2, 3, 4, 5, 6, 7]
    sub = subproblem(F, S, a)
    assert sub.K >= 1
    bf = brute_log_z(F, S, a)
    assert abs(exact_log_z(sub) - bf) < 1e-9
    assert abs(log_partition(build_graphical_model(sub)) - bf) < 1e-9


def test_events_equal_brute_force():
    F, a = _random_block(9, 3, seed=11)
    S = [0, 2, 3, 5, 8]
    sub = subproblem(F, S, a)
    c = int(sub.cluster_labels[0])
    for cons in ([("same", 0, 3)], [("cluster", 5, c)], [("alone", 8)], [("same", 2, 8), ("cluster", 0, c)]):
        bf = brute_log_z(F, S, a, cons)
        norm = check_constraints(sub, cons)
        assert abs(exact_log_z(sub, norm) - bf) < 1e-9
        for enc in ("leader", "growth"):
            assert abs(log_partition(build_graphical_model(sub, norm, encoding=enc)) - bf) < 1e-9


def test_counting_is_exact_with_zero_factors():
    """All f = 0: Z counts configurations; a whole block of m has Bell(m) partitions."""
    F = np.zeros((7, 7))
    sub = subproblem(F, range(7))
    assert abs(math.exp(exact_log_z(sub)) - 877) < 1e-6
    for enc in ("leader", "growth"):
        assert abs(math.exp(log_partition(build_graphical_model(sub, encoding=enc))) - 877) < 1e-6


def test_block_probabilities_match_events():
    F, _ = _random_block(7, 1, seed=5)
    sub = subproblem(F, range(7))
    lp, lz = log_block_probabilities(sub)
    p = np.exp(lp)
    masks = np.arange(1 << 7)
    both = ((masks >> 1) & 1) & ((masks >> 4) & 1)
    p_same = p[both.astype(bool)].sum()
    assert abs(p_same - math.exp(exact_log_z(sub, [("same", 1, 4)]) - lz)) < 1e-12
    assert abs(p[1 << 2] - math.exp(exact_log_z(sub, [("alone", 2)]) - lz)) < 1e-12


def test_uai_round_trip(tmp_path):
    F, a = _random_block(8, 2, seed=2)
    sub = subproblem(F, [0, 3, 4, 6], a)
    gm = build_graphical_model(sub, check_constraints(sub, ("same", 0, 6)))
    path = tmp_path / "sub.uai"
    write_uai(gm, path)
    back = read_uai(path)
    assert abs(log_partition(back) - log_partition(gm)) < 1e-6  # UAI text keeps ~10 digits


def test_dis_interval_contains_exact():
    F, a = _random_block(12, 3, seed=7)
    sub = subproblem(F, [0, 1, 2, 3, 4, 5, 6], a)
    con = ("same", 1, 4)
    ex = event_probability(sub, con, method="exact")
    assert ex.p_lower == ex.p == ex.p_upper
    d = event_probability(sub, con, method="dis", delta=1e-3, time_limit=0.5, rng=1)  # fails w.p. <= 2e-3
    assert d.method == "dis"
    assert 0.0 <= d.p_lower <= d.p <= d.p_upper <= 1.0
    assert d.p_lower - 1e-9 <= ex.p <= d.p_upper + 1e-9


@pytest.mark.parametrize("S, assignment, match", [
    ([], None, "at least one"),
    ([0, 0], None, "repeat"),
    ([0, 9], None, "outside"),
    ([0, 1], None, "assignment is needed"),
    ([0, 1], [0, 1], "one label per block row"),
])
def test_subproblem_errors(S, assignment, match):
    F = np.zeros((4, 4))
    with pytest.raises(ValueError, match=match):
        subproblem(F, S, assignment)


def test_constraint_errors():
    F, a = _random_block(6, 2, seed=1)
    sub = subproblem(F, [0, 1, 2], a)
    with pytest.raises(ValueError, match="not in the sub-model"):
        check_constraints(sub, ("same", 0, 5))
    with pytest.raises(ValueError, match="not an existing cluster"):
        check_constraints(sub, ("cluster", 0, 99))
    with pytest.raises(ValueError, match="unknown constraint"):
        check_constraints(sub, ("differ", 0, 1))
    with pytest.raises(ValueError, match="must differ"):
        check_constraints(sub, ("same", 1, 1))
    with pytest.raises(TypeError, match="must be a tuple"):
        check_constraints(sub, [["same", 0, 1]])
    with pytest.raises(ValueError, match="encoding"):
        build_graphical_model(sub, encoding="bogus")


def test_exact_refuses_too_large():
    F = np.zeros((MAX_EXACT_SUBSET + 1, MAX_EXACT_SUBSET + 1))
    with pytest.raises(ValueError, match="limited to"):
        exact_log_z(subproblem(F, range(MAX_EXACT_SUBSET + 1)))


def test_brute_force_check_catches_label_symmetry():
    """Without the symmetry-breaking 0/1 factors each partition is counted many times:
    the brute-force comparison used above must (and does) reject that model."""
    from sampling.bounds import Factor, GraphicalModel

    F, a = _random_block(7, 2, seed=9)
    S = [0, 1, 2, 3, 4]
    sub = subproblem(F, S, a)
    m, K = sub.m, sub.K
    card = K + m  # free labels: K existing + m new, no first-use order
    factors = [Factor((k,), np.concatenate([sub.u[k], np.zeros(m)])) for k in range(m)]
    for k in range(m):
        for l in range(k + 1, m):
            t = np.zeros((card, card))
            t[np.arange(card), np.arange(card)] = sub.f[k, l]
            factors.append(Factor((k, l), t))
    naive = log_partition(GraphicalModel([card] * m, factors))
    bf = brute_log_z(F, S, a)
    assert naive - bf > 1.0  # overcounted by a large factor
    assert abs(log_partition(build_graphical_model(sub)) - bf) < 1e-9


def test_encode_blocks_encodes_each_block_once():
    """coref.inference.encode_blocks (used by fit_confidence_calibration and the intercept
    tuning): one model.encode per block, in mention-id order; later encode calls for that
    order return it, another row order is encoded anew (an EncodingCache holds encodings only)."""
    import pandas as pd

    from coref.inference import encode_blocks

    class Counting:
        def __init__(self):
            self.calls = []

        def encode(self, df):
            self.calls.append(tuple(df["mention_id"]))
            return object()

    m = Counting()
    df = pd.DataFrame({"mention_id": ["x2", "x1", "y1"], "block": ["b", "b", "c"]})
    w = encode_blocks(m, df)
    assert sorted(m.calls) == [("x1", "x2"), ("y1",)]
    a = df.iloc[[1, 0]]
    e1, e2 = w.encode(a), w.encode(a.copy())
    assert e1 is e2 and len(m.calls) == 2
    e3 = w.encode(a.iloc[::-1])                           # another row order: encoded anew
    assert e3 is not e1 and len(m.calls) == 3
    assert w.model is m and len(w) == 2


@pytest.mark.parametrize("encoding", ["leader", "growth"])
def test_event_indicators_equal_the_event_factors(encoding):
    # on every configuration the event's indicator is 1 exactly where the graphical model
    # with the event's factors keeps a non-zero weight
    import itertools

    from coref.confidence.submodels import event_indicators

    F, a = _random_block(8, 2, seed=5)
    sub = subproblem(F, [0, 2, 3, 6], a)
    i, j = int(sub.S[0]), int(sub.S[2])
    cons = [("same", i, j), ("cluster", j, int(sub.cluster_labels[0])), ("alone", int(sub.S[3])),
            [("same", i, j), ("alone", int(sub.S[1]))]]
    checked = [check_constraints(sub, c) for c in cons]
    gm = build_graphical_model(sub, encoding=encoding)
    xs = np.array(list(itertools.product(*[range(int(c)) for c in gm.cards])))
    valid = np.isfinite(gm.log_value(xs))
    ind = event_indicators(sub, checked)(xs[valid])
    assert ind.shape == (int(valid.sum()), len(cons))
    for k, c in enumerate(checked):
        want = np.isfinite(build_graphical_model(sub, c, encoding=encoding).log_value(xs[valid]))
        np.testing.assert_array_equal(ind[:, k], want)
        assert 0 < want.sum() < valid.sum()  # the check can fail both ways


def test_certify_events_hold_the_exact_probabilities_jointly():
    from coref.confidence.events import certify_events

    F, a = _random_block(14, 3, seed=9)
    sub = subproblem(F, [0, 1, 2, 4, 5, 7, 8, 11], a)
    S = [int(s) for s in sub.S]
    cons = [("same", S[0], S[1]), ("same", S[2], S[5]), ("cluster", S[3], int(sub.cluster_labels[1])),
            ("alone", S[4]), ("alone", S[7])]
    lz = exact_log_z(sub)
    want = [math.exp(exact_log_z(sub, check_constraints(sub, c)) - lz) for c in cons]
    res = certify_events(sub, [check_constraints(sub, c) for c in cons], delta=1e-3, time_limit=5.0, rng=2,
                         target_width=0.1)
    assert [r.method for r in res] == ["dis"] * len(cons)
    for r, p in zip(res, want):  # all hold jointly, failing with probability <= 1e-3
        assert r.p_lower - 1e-9 <= p <= r.p_upper + 1e-9
        assert r.log_Z[0] <= lz + 1e-9 and lz <= r.log_Z[2] + 1e-9
        assert r.log_Z_A[0] <= math.log(p) + lz + 1e-9 <= r.log_Z_A[2] + 2e-9
    assert np.median([r.p_upper - r.p_lower for r in res]) < 0.2  # informative (stops at 0.1 unless out of time)


def test_conditional_rows_dis_hold_the_exact_rows():
    from coref.confidence.events import conditional_rows

    F, a = _random_block(16, 4, seed=3)
    labels = np.unique(a, return_inverse=True)[1].astype(np.int64)
    sub = subproblem(F, [1, 2, 3, 5, 8, 9, 12], labels)
    gen = np.random.default_rng(0)
    kw = dict(delta=1e-3, time_limit=1.5, memory_mb=64, gen=gen, encoding="leader")
    ex = conditional_rows(sub, labels, method="exact", **kw)
    dis = conditional_rows(sub, labels, method="dis", **kw)
    assert all(p == lo == hi for p, lo, hi in ex)
    for (p, _, _), (q, lo, hi) in zip(ex, dis):
        assert lo - 1e-9 <= p <= hi + 1e-9 and lo <= q <= hi
