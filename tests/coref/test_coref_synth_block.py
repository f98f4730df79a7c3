"""Tests of coref.synth_block: huge one-name blocks with heavy-tailed authors, and the CLI."""
import numpy as np
import pandas as pd
import pytest

import coref.cli
from coref.blocking import name_key
from coref.io import MENTION_COLUMNS, load_mentions
from coref.synth_block import power_law_sizes, synthesize_block


@pytest.fixture(scope="module")
def blk():
    return synthesize_block(6000, rng=4)


def test_schema_one_block_one_name(blk):
    df = blk
    assert tuple(df.columns) == MENTION_COLUMNS and len(df) == 6000 and df["mention_id"].is_unique
    assert set(df["block"]) == {"w wang"}
    assert (df["name"].map(name_key) == df["block"]).all()
    # one name or a variant: "Wei Wang" and "W. Wang" are the commonest prints
    top = df["name"].value_counts()
    assert set(top.index[:2]) == {"Wei Wang", "W. Wang"}
    assert df["name"].str.endswith(" Wang").all()
    assert df.groupby("gold")["block"].nunique().max() == 1
    assert str(df["year"].dtype) == "Int64" and all(isinstance(c, list) for c in df["coauthors"])


def test_cluster_sizes_are_heavy_tailed(blk):
    sizes = blk["gold"].value_counts()
    assert sizes.max() >= 200                      # a few authors with hundreds of mentions
    assert (sizes == 1).mean() > 0.3               # and many with one
    assert sizes.max() <= 600                      # max_cluster default: n // 10


def test_power_law_sizes_statistically():
    gen = np.random.default_rng(0)
    s = power_law_sizes(gen, 200_000, 2.0, 100)
    assert s.sum() == 200_000 and s.min() >= 1 and s.max() <= 100
    k = np.arange(1, 101)
    p = k ** -2.0 / (k ** -2.0).sum()
    body = s[:-1]                                  # the last size is trimmed
    for size in (1, 2, 3):
        frac = (body == size).mean()
        se = np.sqrt(p[size - 1] * (1 - p[size - 1]) / len(body))
        assert abs(frac - p[size - 1]) < 5 * se


def _jaccard(a, b):
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 0.0


def test_authors_are_distinguishable_by_their_evidence(blk):
    """Two mentions of one author share coauthors, title words and venues far more often than
    two mentions of different authors (of the same name)."""
    df = blk
    rng = np.random.default_rng(1)
    gold = df["gold"].to_numpy()
    by = pd.Series(np.arange(len(df))).groupby(gold).apply(list)
    multi = [v for v in by if len(v) >= 2]
    same = [tuple(rng.choice(v, 2, replace=False)) for v in (multi[k] for k in rng.integers(0, len(multi), 400))]
    diff = [tuple(rng.integers(0, len(df), 2)) for _ in range(400)]
    diff = [(a, b) for a, b in diff if gold[a] != gold[b]]
    co, ti, ve = df["coauthors"].to_numpy(), df["title"].str.lower().str.split(), df["venue"].to_numpy()

    def rates(pairs):
        return (np.mean([_jaccard(co[a], co[b]) > 0 for a, b in pairs]),
                np.mean([_jaccard(ti.iat[a], ti.iat[b]) for a, b in pairs]),
                np.mean([ve[a] == ve[b] for a, b in pairs]))

    s, d = rates(same), rates(diff)
    assert s[0] > 0.4 and d[0] < 0.1                # shared coauthors
    assert s[1] > 2 * d[1]                          # title words
    assert s[2] > 0.25 and d[2] < 0.1               # venues


def test_reproducible_and_several_blocks():
    a = synthesize_block(900, rng=7, n_blocks=3)
    b = synthesize_block(900, rng=7, n_blocks=3)
    pd.testing.assert_frame_equal(a, b)
    assert not synthesize_block(900, rng=8, n_blocks=3).equals(a)
    assert a["block"].value_counts().to_dict() == {"w wang": 300, "j li": 300, "y zhang": 300}
    assert a["mention_id"].is_unique


@pytest.mark.parametrize("kw,match", [
    (dict(n_mentions=0), "n_mentions"),
    (dict(n_mentions=10, n_blocks=7), "at most 6"),
    (dict(n_mentions=10, size_exponent=1.0), "size_exponent"),
    (dict(n_mentions=10, max_cluster=0), "max_cluster"),
])
def test_errors(kw, match):
    n = kw.pop("n_mentions")
    with pytest.raises(ValueError, match=match):
        synthesize_block(n, **kw)


def test_cli_one_name(tmp_path, capsys):
    out = tmp_path / "b.parquet"
    assert coref.cli.main(["synth", "--one-name", "--mentions", "1200", "--blocks", "2", "--size-exponent",
                           "2.2", "--out", str(out), "--seed", "5"]) == 0
    assert "wrote 1200 mentions" in capsys.readouterr().out
    back = load_mentions(out)
    ref = synthesize_block(1200, rng=5, n_blocks=2, size_exponent=2.2)
    pd.testing.assert_frame_equal(back[ref.columns], ref)
    assert coref.cli.main(["synth", "--one-name", "--mentions", "10", "--blocks", "9",
                           "--out", str(tmp_path / "x.parquet")]) == 2
    assert "at most 6" in capsys.readouterr().err
    assert coref.cli.main(["synth", "--one-name", "--mentions", "10", "--authors", "3",
                           "--out", str(tmp_path / "x.parquet")]) == 2
    assert "do not apply" in capsys.readouterr().err
