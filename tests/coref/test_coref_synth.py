"""Tests of coref.synth: schema, reproducibility, realism knobs, CLI."""
import numpy as np
import pandas as pd
import pytest

import coref
import coref.cli
from coref.blocking import name_key
from coref.io import MENTION_COLUMNS, load_mentions
from coref.synth import synthesize_mentions


@pytest.fixture(scope="module")
def synth():
    return synthesize_mentions(20_000, rng=20240501)


def test_schema_and_ids(synth):
    df = synth
    assert tuple(df.columns) == MENTION_COLUMNS + ("paper_id",) and len(df) == 20_000
    assert df["mention_id"].is_unique
    for c in ("mention_id", "block", "name", "title", "venue", "affiliation"):
        assert pd.api.types.is_string_dtype(df[c]) and not df[c].isna().any()
    assert str(df["year"].dtype) == "Int64"
    assert isinstance(df["gold"].dtype, pd.StringDtype) and df["gold"].notna().all()
    assert all(isinstance(c, list) for c in df["coauthors"])
    assert (df["title"] != "").all() and (df["venue"] != "").all()
    assert df["year"].dropna().between(1960, 2025).all()


def test_the_mentions_of_one_paper_share_its_id_and_list_each_other(synth):
    papers = synth.groupby("paper_id", sort=False)
    # a paper of k authors has k mentions, each listing the k - 1 others (their printed names)
    assert (papers.size() == papers["coauthors"].first().map(len) + 1).all()
    for _, g in list(papers)[:200]:
        names = g["name"].tolist()
        for name, co in zip(names, g["coauthors"]):
            assert sorted(co) == sorted(names[:names.index(name)] + names[names.index(name) + 1:])
    assert papers["title"].nunique().max() == 1 and papers["year"].nunique().max() <= 1


def test_blocks_follow_the_printed_names(synth):
    assert (synth["name"].map(name_key) == synth["block"]).all()
    # name variants never split an author across blocks
    assert synth.groupby("gold")["block"].nunique().max() == 1
    # but an author does print several variants
    assert synth.groupby("gold")["name"].nunique().max() > 1


def test_blocks_are_zipf_skewed(synth):
    sizes = synth["block"].value_counts()
    assert sizes.iat[0] > 20 * sizes.median()
    assert (sizes == 1).sum() > 100  # a long tail of tiny blocks too
    assert synth.groupby("block")["gold"].nunique().max() > 20  # truly ambiguous names


def test_coauthors_are_the_other_authors_of_the_paper(synth):
    df = synth
    size = df["coauthors"].map(len) + 1
    # mentions of one paper are contiguous and share title/venue/year
    first = df.iloc[:20]
    k = size.iat[0]
    assert (first["title"].iloc[:k] == first["title"].iat[0]).all()
    names = first["name"].iloc[:k].tolist()
    for i in range(k):
        assert first["coauthors"].iat[i] == names[:i] + names[i + 1:]
    # coauthor communities: authors reappear with the same coauthors
    pairs = df.explode("coauthors").dropna(subset=["coauthors"])
    repeated = pairs.groupby(["gold", "coauthors"]).size()
    assert (repeated > 1).mean() > 0.2


def test_reproducible_and_seed_sensitive():
    a = synthesize_mentions(2000, rng=5)
    pd.testing.assert_frame_equal(a, synthesize_mentions(2000, rng=5))
    pd.testing.assert_frame_equal(a, synthesize_mentions(2000, rng=np.random.default_rng(5)))
    assert not a["name"].equals(synthesize_mentions(2000, rng=6)["name"])


def test_knobs_statistically():
    n = 20_000
    df = synthesize_mentions(n, rng=7, unlabeled_fraction=0.3, initial_prob=0.6)
    frac = df["gold"].isna().mean()
    assert abs(frac - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n)
    initials = df["name"].str.match(r"^\w\.\s").mean()
    assert abs(initials - 0.6) < 5 * np.sqrt(0.6 * 0.4 / n)
    assert synthesize_mentions(3000, rng=1, n_authors=10)["gold"].nunique() <= 10


def test_edge_sizes():
    one = synthesize_mentions(1, rng=0)
    assert len(one) == 1 and one["coauthors"].iat[0] == []
    assert len(synthesize_mentions(7, rng=0)) == 7


@pytest.mark.parametrize("args, exc, match", [
    ((0,), ValueError, "n_mentions parameter.*>= 1"),
    ((1.5,), TypeError, "n_mentions parameter.*int"),
    ((10,), ValueError, "unlabeled_fraction"),
], ids=["zero", "float", "fraction"])
def test_errors(args, exc, match):
    kwargs = {"unlabeled_fraction": 2.0} if match == "unlabeled_fraction" else {}
    with pytest.raises(exc, match=match):
        synthesize_mentions(*args, **kwargs)


def test_rng_type_error():
    with pytest.raises(TypeError, match="rng parameter"):
        synthesize_mentions(10, rng=np.random.RandomState(0))


def test_cli_writes_parquet_atomically(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    assert coref.cli.main(["synth", "--mentions", "3000", "--out", str(out), "--seed", "3"]) == 0
    assert "wrote 3000 mentions" in capsys.readouterr().out
    back = load_mentions(out)
    ref = synthesize_mentions(3000, rng=3)
    pd.testing.assert_frame_equal(back[ref.columns], ref)   # the loader adds the optional columns (all NA)
    assert back.drop(columns=ref.columns).map(lambda v: v is pd.NA or v == []).all().all()
    assert [p.name for p in tmp_path.iterdir()] == ["s.parquet"]
    assert coref.cli.main(["synth", "--mentions", "0", "--out", str(tmp_path / "x.parquet")]) == 2
    assert "n_mentions" in capsys.readouterr().err


def test_public_name():
    assert coref.synthesize_mentions is synthesize_mentions
