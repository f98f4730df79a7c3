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
