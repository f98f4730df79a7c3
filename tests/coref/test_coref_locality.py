"""Big racing blocks sampled with each starting cluster's mentions together in memory
(coref.encoding.permute_block, coref.gibbs.block.LOCALITY_MIN_N): the same factors in
another row order, and the results mapped back to the block's own order."""
import numpy as np
import pytest

from coref.encoding import blocks as enc_blocks
from coref.factors import _factors
from coref.factors.names import N_FEATURES
from coref.gibbs import GibbsCoref
from coref.gibbs import block as gibbs_block
from coref.synth import synthesize_mentions


@pytest.fixture(scope="module")
def one_name(shipped_model_and_data):
    """400 synthetic mentions of one block, with paper ids (some shared inside the block)."""
    _, model = shipped_model_and_data
    df = synthesize_mentions(2000, rng=11).iloc[:400].copy()
    df["block"], df["name"] = "wei wang", "Wei Wang"
    df = df.sort_values("mention_id").reset_index(drop=True)
    return model, df, model.encode(df)


def test_permuted_block_has_the_same_factors(one_name):
    model, _, enc = one_name
    order = np.random.default_rng(0).permutation(enc.n)
    perm = enc_blocks.permute_block(enc, order)
    assert perm.mention_id == tuple(enc.mention_id[k] for k in order)
    rng = np.random.default_rng(1)
    I = rng.integers(0, enc.n, 2000).astype(np.int64)
    J = ((I + 1 + rng.integers(0, enc.n - 1, 2000)) % enc.n).astype(np.int64)
    f_p, f_o = np.empty(2000), np.empty(2000)
    _factors.pair_factors(perm, model.theta_, model.bias_, I, J, f_p)
    _factors.pair_factors(enc, model.theta_, model.bias_, order[I], order[J], f_o)
    np.testing.assert_array_equal(f_p, f_o)                       # bit for bit
    x_p, x_o = np.empty((2000, N_FEATURES)), np.empty((2000, N_FEATURES))
    _factors.pair_features(perm, I, J, x_p)
    _factors.pair_features(enc, order[I], order[J], x_o)
    np.testing.assert_array_equal(x_p, x_o)
    if enc.mate_ptr is not None:                                  # paper mates follow their mentions
        mates = {(int(i), int(j)) for i in range(enc.n) for j in enc.mate_idx[enc.mate_ptr[i]:enc.mate_ptr[i + 1]]}
        got = {(int(order[i]), int(order[j])) for i in range(enc.n)
               for j in perm.mate_idx[perm.mate_ptr[i]:perm.mate_ptr[i + 1]]}
        assert got == mates


def test_permute_block_rejects_a_non_permutation(one_name):
    _, _, enc = one_name
    with pytest.raises(ValueError, match="permutation of range"):
        enc_blocks.permute_block(enc, np.zeros(enc.n, np.int64))
    with pytest.raises(ValueError, match="permutation of range"):
        enc_blocks.permute_block(enc, np.arange(enc.n - 1))


def test_unpermute_maps_labels_history_and_marginals_back():
    order = np.array([2, 0, 3, 1])                  # row k of the sampled block = mention order[k]
    n = 4
    labels_p = np.array([7, 7, 5, 6])
    hist_p = np.array([[0, 1, 2, 3], [7, 7, 5, 6]])
    # pairs (rows 0, 1) and (rows 2, 3) of the sampled block = mentions (2, 0) and (3, 1)
    keys_p = np.array([0 * n + 1, 2 * n + 3])
    conf_p = np.array([0.9, 0.8, 0.7, 0.6])
    run = gibbs_block.BlockRun(labels_p, np.array([3, 4]), hist_p, (keys_p, np.array([5, 2]), conf_p, 11), 1, False, 0.5)
    out = gibbs_block._unpermute(run, order)
    assert out.labels.tolist() == [7, 6, 7, 5]
    assert out.lab_hist.tolist() == [[1, 3, 0, 2], [7, 6, 7, 5]]
    keys, counts, conf, evals = out.marginals
    assert keys.tolist() == [0 * n + 2, 1 * n + 3] and counts.tolist() == [5, 2] and evals == 11
    assert conf.tolist() == [0.8, 0.6, 0.9, 0.7]
    assert out.evals.tolist() == [3, 4] and out.used == 1 and out.prior_shift == 0.5


def test_racing_block_runs_in_start_cluster_order(one_name, monkeypatch):
    model, df, _ = one_name
    monkeypatch.setattr(gibbs_block, "START_MIN_N", 100)
    seen = []
    real = gibbs_block._sample

    def spy(settings, model, enc, gen, temps, labels, *args):
        seen.append((enc.mention_id, labels.copy()))
        return real(settings, model, enc, gen, temps, labels, *args)

    monkeypatch.setattr(gibbs_block, "_sample", spy)
    res = {}
    for min_n in (100, 10**9):
        monkeypatch.setattr(gibbs_block, "LOCALITY_MIN_N", min_n)
        g = GibbsCoref(model, sampler="racing", n_sweeps=4, rng=0, n_samples=2, record_history=False).fit(df)
        res[min_n] = g
    (mids_local, start_local), (mids_plain, start_plain) = seen
    canonical = tuple(df["mention_id"])
    assert mids_plain == canonical and mids_local != canonical and sorted(mids_local) == sorted(canonical)
    # the sampled block holds each starting cluster's mentions in one run of rows
    assert np.all(np.diff(start_local) >= 0) and len(np.unique(start_plain)) == len(np.unique(start_local)) < len(df)
    for g in res.values():                          # results come back indexed by mention id
        assert g.clusters_.index.tolist() == sorted(canonical)
        assert g.mention_confidence_.between(0, 1).all()
    for min_n in (100, 10**9):                      # same seed, same result
        monkeypatch.setattr(gibbs_block, "LOCALITY_MIN_N", min_n)
        again = GibbsCoref(model, sampler="racing", n_sweeps=4, rng=0, n_samples=2, record_history=False).fit(df)
        assert again.clusters_.equals(res[min_n].clusters_)
        assert again.mention_confidence_.equals(res[min_n].mention_confidence_)
