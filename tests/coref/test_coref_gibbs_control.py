"""Racing's control variate (``coref.gibbs._cv``, ``coref.gibbs.control``; Chen & Ghahramani 2016, Sec. 3.4).

A subsampled arm is estimated as N_y mean(f - h) + H_y, H_y the exact sum of h over the
arm, kept from per-cluster rank counts that every move updates.  The compiled kernel must
equal its twin (which sums h over the arm's members directly) in labels, factor counts and
generator state over several sweeps of moves, for any ranks and weight; the ranks are the
block's most frequent first names; bad inputs are refused by both.
"""
import numpy as np
import pandas as pd
import pytest

from coref.factors.names import N_FEATURES
from coref.gibbs import _gibbs, _gibbs_py
from coref.gibbs.control import conflict_ranks, conflict_weight
from coref.synth_block import synthesize_block


@pytest.fixture(scope="module")
def block(shipped_model_and_data):
    _, model = shipped_model_and_data
    return model.encode(synthesize_block(120, rng=6))


def _run(run, mod, enc, theta, bias, labels, inv_temps, ranks, weight, memo=True):
    return run(mod, enc, theta, bias, labels, inv_temps, memo=memo, state=(3, 1, 4, 1), cv_rank=ranks,
               cv_weight=weight)[:3]


def _setup(enc, seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.4, N_FEATURES)
    theta[17] += 2.0                     # same_comp1: clusters of several mentions
    labels0 = rng.integers(0, enc.n // 8, enc.n)      # big clusters: subsampled arms
    ranks = rng.integers(-1, 4, enc.n).astype(np.int32)
    return theta, -1.0, labels0, ranks


@pytest.mark.parametrize("seed,weight,memo", [(0, -2.5, True), (1, 1.5, False), (2, -0.7, True)])
def test_racing_with_control_variate_matches_twin(block, seed, weight, memo, racing_run):
    enc = block
    theta, bias, labels0, ranks = _setup(enc, seed)
    temps = [1.0, 2.0, 8.0]
    out = [_run(racing_run, mod, enc, theta, bias, labels0, temps, ranks, weight, memo) for mod in (_gibbs, _gibbs_py)]
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    assert len(np.unique(out[0][0][-1])) > 2
    # the control variate changes the racing work (other draws), not the contract
    off = _run(racing_run, _gibbs, enc, theta, bias, labels0, temps, None, 0.0, memo)
    assert not np.array_equal(off[1], out[0][1])


def test_control_variate_off_is_the_plain_kernel(block, racing_run):
    """Weight 0, no ranks, or ranks with no two ranked mentions: the same run as without."""
    enc = block
    theta, bias, labels0, ranks = _setup(enc, 3)
    temps = [1.0, 4.0]
    base = _run(racing_run, _gibbs, enc, theta, bias, labels0, temps, None, 0.0)
    for r, w in ((ranks, 0.0), (None, -3.0), (np.full(enc.n, -1, np.int32), -3.0)):
        for mod in (_gibbs, _gibbs_py):
            got = _run(racing_run, mod, enc, theta, bias, labels0, temps, r, w)
            for a, b in zip(base, got):
                np.testing.assert_array_equal(a, b)


def test_control_variate_inputs_are_checked(block, racing_run):
    enc = block
    theta, bias, labels0, ranks = _setup(enc, 4)
    for mod in (_gibbs, _gibbs_py):
        with pytest.raises(ValueError, match="cv_rank must have one entry per mention"):
            _run(racing_run, mod, enc, theta, bias, labels0, [1.0], ranks[:-1], -1.0)
        bad = ranks.copy()
        bad[3] = -2
        with pytest.raises(ValueError, match="cv_rank entries must be >= -1"):
            _run(racing_run, mod, enc, theta, bias, labels0, [1.0], bad, -1.0)


class _Enc:
    def __init__(self, codes):
        self.first_code = np.asarray(codes, dtype=np.int32)
        self.n = len(codes)


def test_conflict_ranks_most_frequent_names_first():
    #          code: 7 x3, 2 x2, 9 x2, 4 x1, initials only x2
    enc = _Enc([7, 2, -1, 7, 9, 4, 9, 7, 2, -1])
    np.testing.assert_array_equal(conflict_ranks(enc), [0, 1, -1, 0, 2, 3, 2, 0, 1, -1])
    # ties (2 and 9, two each) go to the smaller code; beyond max_ranks: -1
    np.testing.assert_array_equal(conflict_ranks(enc, 2), [0, 1, -1, 0, -1, -1, -1, 0, 1, -1])
    assert conflict_ranks(enc, 2).dtype == np.int32
    assert conflict_ranks(_Enc([5, 5, -1])) is None          # one name: no pair can differ
    assert conflict_ranks(_Enc([-1, -1])) is None
    assert conflict_ranks(enc, 1) is None
    with pytest.raises(ValueError, match="max_ranks must be >= 0"):
        conflict_ranks(enc, -1)


def test_conflict_weight_reads_the_feature(shipped_model_and_data):
    from coref.factors.names import BASE_FEATURES
    _, model = shipped_model_and_data
    k = [name for name, _, _ in BASE_FEATURES].index("name_first_conflict")
    assert conflict_weight(model.theta_) == model.theta_[k]
    assert conflict_weight(model.theta_) < 0.0               # a conflict lowers f


def test_gibbs_with_control_variate_same_seed_same_result(shipped_model_and_data, monkeypatch,
                                                          racing_switch_check):
    """GibbsCoref racing on a block of several first names: the same seed gives the same
    clusters and factor counts, and the control variate is used (off: other counts)."""
    _, model = shipped_model_and_data
    df = synthesize_block(400, rng=2)
    assert pd.Series(df["name"].str.split().str[0]).nunique() > 2
    racing_switch_check(model, df, monkeypatch, "CONTROL_VARIATE_RANKS", 0, n_sweeps=5, rng=3)
