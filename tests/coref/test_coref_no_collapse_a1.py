"""Features that do not grow with the block (issue 27): coauthor groups that do not percolate
(coref.encoding.components.bounded_groups) and block-size features that saturate
(coref.factors.names.BLOCK_SIZE_SATURATION), compiled kernel against its twin."""
import math

import numpy as np
import pytest

from coref.encoding.components import MAX_GROUP, bounded_groups
from coref.factors import _factors, _factors_py
from coref.factors.names import BLOCK_SIZE_SATURATION, FEATURE_NAMES, N_FEATURES


def test_bounded_groups_keeps_small_components_exactly():
    comp1 = np.array([0, 0, 1, 2, 1, 0], np.int32)
    comp2 = np.array([0, 1, 2, 3, 4, 5], np.int32)
    assert bounded_groups(comp1, comp2, 3).tolist() == comp1.tolist()
    assert bounded_groups(comp1, comp2).dtype == np.int32


def test_bounded_groups_splits_an_oversized_component_by_comp2_then_singletons():
    # comp1: mentions 0-4 one component of 5, 5-6 another; comp2 splits the 5 into {0, 2}, {1, 3, 4}
    comp1 = np.array([0, 0, 0, 0, 0, 1, 1], np.int32)
    comp2 = np.array([0, 1, 0, 1, 1, 2, 3], np.int32)
    # max 3: both comp2 parts fit -> {0, 2}, {1, 3, 4}, {5, 6} numbered by first mention
    assert bounded_groups(comp1, comp2, 3).tolist() == [0, 1, 0, 1, 1, 2, 2]
    # max 2: the part {1, 3, 4} is still too big -> single mentions
    assert bounded_groups(comp1, comp2, 2).tolist() == [0, 1, 0, 2, 3, 4, 4]


def test_bounded_groups_rejects_bad_input():
    with pytest.raises(ValueError, match="one length"):
        bounded_groups(np.zeros(3, np.int32), np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="max_size must be >= 1"):
        bounded_groups(np.zeros(3, np.int32), np.zeros(3, np.int32), 0)


def test_compiled_saturation_is_the_feature_layout():
    assert _factors.n_saturate == BLOCK_SIZE_SATURATION


@pytest.fixture(scope="module")
def big_block(shipped_model_and_data):
    """One block of 700 synthetic mentions of one name (more than BLOCK_SIZE_SATURATION and
    enough shared coauthor names for a component larger than MAX_GROUP before the split)."""
    from coref.synth import synthesize_mentions

    _, model = shipped_model_and_data
    df = synthesize_mentions(3000, rng=7)
    df = df.iloc[:700].copy()
    df["block"], df["name"] = "wei wang", "Wei Wang"
    return model, model.encode(df.reset_index(drop=True))


def test_block_size_features_saturate_in_kernel_and_twin(big_block):
    model, enc = big_block
    assert enc.n > BLOCK_SIZE_SATURATION
    rng = np.random.default_rng(0)
    I = rng.integers(0, enc.n, 300).astype(np.int64)
    J = ((I + 1 + rng.integers(0, enc.n - 1, 300)) % enc.n).astype(np.int64)
    got, want = np.empty((300, N_FEATURES)), np.empty((300, N_FEATURES))
    _factors.pair_features(enc, I, J, got)
    _factors_py.pair_features(enc, I, J, want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    k_log_n = FEATURE_NAMES.index("log_n")
    k_scaled = FEATURE_NAMES.index("co_log_count_logn")
    k_count = FEATURE_NAMES.index("co_log_count")
    assert np.all(got[:, k_log_n] == math.log(BLOCK_SIZE_SATURATION))
    np.testing.assert_allclose(got[:, k_scaled], math.log(BLOCK_SIZE_SATURATION) * got[:, k_count], rtol=1e-15)
    f_c, f_p = np.empty(300), np.empty(300)
    _factors.pair_factors(enc, model.theta_, model.bias_, I, J, f_c)
    _factors_py.pair_factors(enc, model.theta_, model.bias_, I, J, f_p)
    np.testing.assert_allclose(f_c, f_p, rtol=1e-12, atol=1e-12)


def test_no_coauthor_group_exceeds_max_group(big_block):
    from coref.encoding.components import token_components

    _, enc = big_block
    raw = token_components(enc.co_ptr, enc.co_ids, 1)
    assert np.bincount(raw).max() > MAX_GROUP                 # the chain percolates ...
    assert np.bincount(enc.comp1).max() <= MAX_GROUP          # ... the groups do not
    np.testing.assert_allclose(enc.comp1_logsize, np.log(np.bincount(enc.comp1)[enc.comp1]), rtol=1e-15)
