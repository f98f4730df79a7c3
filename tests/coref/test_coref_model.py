"""PairwiseModel: fitting theta on labeled pairs, factors, pickling, errors."""
import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.features import N_FEATURES
from coref.model import PairwiseModel, labeled_pairs

sys.path.insert(0, str(Path(__file__).parent))
from test_coref_gibbs import _df  # noqa: E402


def test_labeled_pairs_all_and_subsampled():
    gold = np.array(["a", "a", None, "b", "a"], dtype=object)
    I, J, y = labeled_pairs(None, gold, max_pairs=100, rng=np.random.default_rng(0))
    assert sorted(zip(I.tolist(), J.tolist())) == [(0, 1), (0, 3), (0, 4), (1, 3), (1, 4), (3, 4)]
    assert dict(zip(zip(I.tolist(), J.tolist()), y.tolist()))[(0, 4)] == 1
    assert y.sum() == 3
    gold = np.array([str(k % 3) for k in range(50)], dtype=object)
    I, J, y = labeled_pairs(None, gold, max_pairs=200, rng=np.random.default_rng(1))
    assert len(I) == 200 and np.all(I < J)
    assert len(set(zip(I.tolist(), J.tolist()))) == 200


def test_fit_factor_consistency_and_pickle():
    df = _df(n=25, n_blocks=3, seed=1)
    m = PairwiseModel(bias_shift=0.5).fit(df)
    assert m.theta_.shape == (N_FEATURES,)
    assert m.bias_ == pytest.approx(m.intercept_ + 0.5)
    enc = m.encode(df[df["block"] == "B0"])
    F = m.factor_matrix(enc)
    assert F[2, 7] == m.pairwise_factor(enc, 2, 7) == m.pairwise_factor(enc, 7, 2)
    phi = m.pair_features(enc, [2], [7])
    assert F[2, 7] == pytest.approx(phi[0] @ m.theta_ + m.bias_)
    # same-person pairs score higher on average
    gold = df[df["block"] == "B0"]["gold"].to_numpy()
    same = gold[:, None] == gold[None, :]
    off = ~np.eye(len(gold), dtype=bool)
    assert F[same & off].mean() > F[~same].mean() + 1.0
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.factor_matrix(m2.encode(df[df["block"] == "B0"]))[2, 7] == F[2, 7]


def test_auto_shift_picks_from_grid():
    df = _df(n=15, n_blocks=4, seed=2)
    m = PairwiseModel(bias_shift="auto", shift_grid=(-1.0, 0.0, 1.0), tune_sweeps=3).fit(df)
    assert m.shift_ in (-1.0, 0.0, 1.0)
    assert set(m.shift_scores_) == {-1.0, 0.0, 1.0}


def test_errors():
    df = _df(n=5)
    with pytest.raises(TypeError, match="DataFrame"):
        PairwiseModel().fit("x")
    with pytest.raises(ValueError, match="missing the mention column"):
        PairwiseModel().fit(df.drop(columns=["gold"]))
    with pytest.raises(ValueError, match="bias_shift must be"):
        PairwiseModel(bias_shift="big").fit(df)
    nolab = df.assign(gold=pd.array([None] * len(df), dtype="string"))
    with pytest.raises(ValueError, match="two labeled mentions"):
        PairwiseModel(bias_shift=0.0).fit(nolab)
    with pytest.raises(RuntimeError, match="not fitted"):
        PairwiseModel().encode(df)
    m = PairwiseModel(bias_shift=0.0).fit(_df(n=10, seed=4))
    with pytest.raises(IndexError, match="must be in"):
        m.pairwise_factor(m.encode(df), 0, 99)
