"""Shared fixtures: the repository root, the shared data folder (../shared, found relative
to the repository root, never by an absolute path), the shipped data, and small mention
tables with gold labels."""
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the repository; RACING_INFERENCE_SHARED overrides it (e.g. for a git worktree)
SHARED = Path(os.environ.get("RACING_INFERENCE_SHARED", REPO_ROOT / ".." / "shared"))
SHARED_CORE_DATA = SHARED / "data" / "coref"

try:  # a derandomized Hypothesis profile (scipy's "deterministic")
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("deterministic", derandomize=True, database=None)
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(scope="session")
def repo_root():
    """The repository root (the folder holding pyproject.toml)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_coref_data():
    """``../shared/data/coref`` beside the repository; skips the test if absent."""
    if not SHARED_CORE_DATA.is_dir():
        pytest.skip(f"shared coref data absent ({SHARED_CORE_DATA})")
    return SHARED_CORE_DATA.resolve()


@pytest.fixture(scope="session")
def aminer_dir():
    """The shipped AMiner folder (data/aminer_na); skips the test if absent."""
    p = REPO_ROOT / "data" / "aminer_na"
    if not p.is_dir():
        pytest.skip(f"shipped data absent ({p})")
    return p


def make_mentions(n_blocks=4, per=10, n_authors=2, seed=0, labeled=True):
    """Blocks of ``n_authors`` authors each, told apart by coauthors, venue and title words."""
    rng = np.random.default_rng(seed)
    rows = []
    for b in range(n_blocks):
        for i in range(per):
            a = int(rng.integers(n_authors))
            rows.append(dict(
                mention_id=f"B{b}/{i:03d}", block=f"Name_{b}", name=f"J. Doe{b}",
                coauthors=[f"co_{b}_{a}_{k}" for k in rng.choice(4, size=2, replace=False)],
                title=f"topic{a} method{a} study {i}", venue=f"Venue{a}", year=2000 + int(rng.integers(10)),
                affiliation=f"Univ {a}" if rng.random() < 0.5 else "", gold=f"Name_{b}/{a}" if labeled else None,
            ))
    df = pd.DataFrame(rows)
    df["year"] = df["year"].astype("Int64")
    df["gold"] = df["gold"].astype("string")
    return df


@pytest.fixture(scope="session")
def mentions_factory():
    """``make_mentions(n_blocks, per, n_authors, seed, labeled)`` -> mention DataFrame."""
    return make_mentions


@pytest.fixture(scope="session")
def shipped_model_and_data():
    """The shipped AMiner mentions and the shipped default model: ``(df, model)``.

    Skips the test when either is absent (an installed copy without data).
    """
    from coref.datasets import default_model_path, load_aminer
    from coref.model import load_model

    try:
        df = load_aminer()
        model, _ = load_model(default_model_path())
    except (FileNotFoundError, OSError) as exc:  # pragma: no cover - data absent
        pytest.skip(f"shipped AMiner data or default model absent: {exc}")
    return df, model


def racing_anneal(mod, enc, theta, bias, labels, inv_temps, K=5, row_min=6, memo=True,
                  state=(5, 9, 2, 7), cv_rank=None, cv_weight=0.0, index=None, accept=0.0, tier_cap=0,
                  memo_threads=1):
    """One racing ``anneal`` call of ``mod`` (``coref.gibbs._gibbs`` or its twin) on ``enc``
    from ``labels`` (all movable, first batch 3, the structural small-arm bound), with a
    partner memo of K partners built at ``row_min`` pending members (``memo`` False: none)
    and the control variate ``cv_rank`` / ``cv_weight``; ``index``: the memo's candidate
    index (``coref.gibbs.partners.PartnerIndex``) with ``accept``, or None; ``tier_cap`` > 0:
    the memo's second tier with an arena of that many entries; ``memo_threads``: threads of the
    first sweep's candidate memos.  Returns ``(hist, evals,
    state, memo_j, memo_f, memo_rest)``, and with a tier ``(memo_ovf, memo_ovf_at,
    memo_tier)`` after them."""
    from coref.gibbs import arm_bound, bound_table

    n = enc.n
    labels = np.asarray(labels).astype(np.int64).copy()
    size = np.bincount(labels, minlength=n).astype(np.int64)
    fmax, _ = arm_bound.component_bound(enc, theta, bias, 0)
    hist = np.zeros((len(inv_temps), n), np.int64)
    ev = np.zeros(len(inv_temps), np.int64)
    st = np.array(state, np.uint64)
    mj = np.zeros((n, K), np.int64) if memo else None
    mf = np.zeros((n, K)) if memo else None
    mr = np.full(n, np.nan) if memo else None
    tier = (np.zeros(tier_cap, np.int64), np.zeros(2 * n + 1, np.int64), np.zeros(n)) if tier_cap else (None,) * 3
    idx = (None,) * 5 if index is None else (index.q_ptr, index.q_key, index.k_ptr, index.k_men, index.rest)
    mod.anneal(enc, theta, bias, labels, size, np.arange(n, dtype=np.int64), np.asarray(inv_temps, float),
               np.zeros(len(inv_temps), np.int8), 0, 1, 3, 2, fmax, bound_table(0.05, n + 1), st, hist, ev,
               None, 0, mj, mf, mr, row_min, 0, cv_rank, cv_weight, *idx, accept, *tier,
               memo_threads=memo_threads)
    return (hist, ev, st, mj, mf, mr) + (tier if tier_cap else ())


@pytest.fixture(scope="session")
def racing_run():
    """:func:`racing_anneal`."""
    return racing_anneal


def racing_same_seed_and_switch(model, df, monkeypatch, attr, off_value, **gibbs_kwargs):
    """GibbsCoref racing on ``df`` twice with one seed (same labels and factor count), then
    with ``coref.gibbs.block.<attr>`` set to ``off_value``: the factor count must differ (the
    switched-off feature was in use).  Returns the two factor counts (on, off)."""
    from coref.gibbs import GibbsCoref
    from coref.gibbs import block as gibbs_block

    def fit():
        g = GibbsCoref(model, sampler="racing", record_history=False, **gibbs_kwargs).fit(df)
        return np.asarray(g.labels_), int(g.n_factor_evals_)

    a, b = fit(), fit()
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]
    monkeypatch.setattr(gibbs_block, attr, off_value)
    off = fit()
    assert off[1] != a[1]
    return a[1], off[1]


@pytest.fixture(scope="session")
def racing_switch_check():
    """:func:`racing_same_seed_and_switch`."""
    return racing_same_seed_and_switch


@pytest.fixture(scope="session")
def saved_model_factory(tmp_path_factory):
    """``make(n_blocks, per, seed)`` -> directory of a ``PairwiseModel(bias_shift=0)`` fitted on
    ``make_mentions(n_blocks, per, n_authors=3, seed)`` and saved (one per setting per session)."""
    from coref.model import PairwiseModel, save_model

    made = {}

    def make(*, n_blocks, per, seed):
        key = (n_blocks, per, seed)
        if key not in made:
            d = tmp_path_factory.mktemp("m") / "model"
            save_model(PairwiseModel(bias_shift=0.0).fit(make_mentions(n_blocks=n_blocks, per=per, n_authors=3,
                                                                        seed=seed)), d)
            made[key] = d
        return made[key]

    return make
