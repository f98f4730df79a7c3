"""GibbsCoref early stop (patience, early_stop_temp): the documented rule, exactly."""
import numpy as np
import pytest

from coref.gibbs import GibbsCoref
from tests.coref.test_coref_gibbs import _Model, _df, _theta


def _expected_used(hist, temps, patience, t_stop):
    """First sweep s ending `patience` consecutive unchanged sweeps with tau <= t_stop."""
    run = 0
    for s in range(1, len(temps) + 1):
        if temps[s - 1] <= t_stop:
            run = run + 1 if np.array_equal(hist[s], hist[s - 1]) else 0
            if run >= patience:
                return s
    return len(temps)


@pytest.mark.parametrize("sampler", ["exact", "racing"])
def test_early_stop_follows_rule_and_prefix_matches(sampler):
    df = _df(n=12, n_blocks=4, seed=7)
    m = _Model(_theta(), -1.0)
    full = GibbsCoref(m, sampler=sampler, n_sweeps=25, rng=2, patience=0).fit(df)
    es = GibbsCoref(m, sampler=sampler, n_sweeps=25, rng=2, patience=2,
                    early_stop_temp=0.3).fit(df)
    blocks = df["block"].to_numpy()
    n_stopped = 0
    for b in np.unique(blocks):
        cols = blocks == b
        used = _expected_used(full.labels_history_[:, cols], full.temperatures_, 2, 0.3)
        assert es.n_sweeps_used_[b] == used
        assert full.n_sweeps_used_[b] == 25
        n_stopped += used < 25
        # same random stream up to the stop, then frozen
        np.testing.assert_array_equal(es.labels_history_[:used + 1, cols],
                                      full.labels_history_[:used + 1, cols])
        assert (es.labels_history_[used:, cols] == es.labels_history_[used, cols]).all()
    assert n_stopped >= 2                      # the test exercises the stop
    h = es.history_
    active = [sum(es.n_sweeps_used_[b] >= s for b in es.n_sweeps_used_) for s in range(1, 26)]
    assert list(h["n_blocks_active"]) == [0] + active
    assert es.n_factor_evals_ < full.n_factor_evals_
    assert h["n_factor_evals"].iloc[-1] == es.n_factor_evals_
    last = max(es.n_sweeps_used_.values())
    assert (h["n_factor_evals"].diff().iloc[last + 1:] == 0).all()


def test_early_stop_deterministic_and_errors():
    df = _df(n=10, n_blocks=2, seed=1)
    m = _Model(_theta(), -1.0)
    a = GibbsCoref(m, n_sweeps=20, rng=5).fit(df)
    b = GibbsCoref(m, n_sweeps=20, rng=5).fit(df)
    assert a.n_sweeps_used_ == b.n_sweeps_used_
    np.testing.assert_array_equal(a.labels_, b.labels_)
    with pytest.raises(ValueError, match="patience must be None or an int >= 0"):
        GibbsCoref(m, patience=-1).fit(df)
    with pytest.raises(ValueError, match="early_stop_temp must be a finite number > 0"):
        GibbsCoref(m, early_stop_temp=0.0).fit(df)
