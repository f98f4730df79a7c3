"""coref explain: the factor f = theta . phi + b of a pair, term by term and by group."""
import numpy as np
import pytest

from coref.explain import explain_pair, feature_groups
from coref.factors.names import FEATURE_NAMES
from coref.model import PairwiseModel, save_model


@pytest.fixture(scope="module")
def model_and_data(mentions_factory):
    df = mentions_factory(n_blocks=4, per=10, seed=21)
    return PairwiseModel(bias_shift=0.0).fit(df), df


def test_terms_sum_to_the_factor(model_and_data):
    model, df = model_and_data
    blk = df[df["block"] == "Name_1"].reset_index(drop=True)
    a, b = blk["mention_id"].iloc[2], blk["mention_id"].iloc[5]
    e = explain_pair(model, df, a, b)
    enc = model.encode(blk)
    assert e.f == model.pairwise_factor(enc, 2, 5)
    assert e.bias + e.by_feature["contribution"].sum() == pytest.approx(e.f, abs=1e-9)
    assert e.by_group["cumulative"].iloc[-1] == pytest.approx(e.f, abs=1e-9)
    assert e.by_group["group"].iloc[0] == "intercept (b)"
    assert e.by_group["contribution"].iloc[0] == model.bias_            # the pooled intercept
    # then the block's prior shift d_b: together the block's intercept
    assert e.by_group["group"].iloc[1] == "block prior (d_b)"
    assert e.by_group["contribution"].iloc[1] == pytest.approx(model.block_shift(enc), abs=1e-12)
    assert e.bias == model.block_bias(enc)
    # the block-constant features form one baseline row, the same for every pair of the block
    assert e.by_group["group"].iloc[2] == "block baseline (size, coherence)"
    for x, y in ((0, 1), (1, 4), (3, 6)):
        other = explain_pair(model, df, blk["mention_id"].iloc[x], blk["mention_id"].iloc[y])
        assert other.by_group["contribution"].iloc[1:3].tolist() == pytest.approx(
            e.by_group["contribution"].iloc[1:3].tolist(), abs=1e-12)
    assert "block" not in set(e.by_group["group"])
    import copy                                            # no block prior: no d_b row
    pooled = copy.deepcopy(model)
    pooled.block_prior = "none"
    p = explain_pair(pooled, df, a, b)
    assert p.by_group["group"].iloc[:2].tolist() == ["intercept (b)", "block baseline (size, coherence)"]
    assert p.bias == model.bias_ and p.f == pytest.approx(e.f - model.block_shift(enc), abs=1e-9)
    np.testing.assert_allclose(e.by_feature["contribution"], e.by_feature["theta"] * e.by_feature["phi"])
    assert (e.by_feature["contribution"].abs().diff().dropna() <= 0).all()      # largest first
    text = e.text()
    assert f"f({a}, {b}) = theta . phi + b = {e.f:+.3f}" in text and "coauthors" in text
    assert 0.0 <= e.probability <= 1.0


def test_groups_are_human_readable():
    labels, groups = feature_groups()
    assert len(labels) == len(groups) == len(FEATURE_NAMES)
    assert set(groups) <= {"coauthors", "coauthor graph", "title", "venue", "affiliation", "year", "name",
                           "block size"} | set(groups)
    g = dict(zip(FEATURE_NAMES, groups))
    if "title_cos" in g:
        assert g["title_cos"] == "title"


def test_errors(model_and_data):
    model, df = model_and_data
    with pytest.raises(KeyError, match="'nope' is not in the data"):
        explain_pair(model, df, "nope", df["mention_id"].iloc[0])
    with pytest.raises(ValueError, match="in block 'Name_0'.*only mentions of one block"):
        explain_pair(model, df, df["mention_id"].iloc[0], df["mention_id"].iloc[-1])
    with pytest.raises(ValueError, match="two different mentions"):
        explain_pair(model, df, df["mention_id"].iloc[0], df["mention_id"].iloc[0])


def test_cli(model_and_data, tmp_path, capsys):
    import json

    from coref.cli import main
    from coref.io import write_mentions

    model, df = model_and_data
    save_model(model, tmp_path / "m")
    path = write_mentions(df, tmp_path / "d.parquet")
    a, b = df["mention_id"].iloc[0], df["mention_id"].iloc[1]
    assert main(["explain", "--data", str(path), "--model", str(tmp_path / "m"), a, b]) == 0
    assert "by group" in capsys.readouterr().out
    assert main(["explain", "--data", str(path), "--model", str(tmp_path / "m"), "--json", a, b]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["f"] == pytest.approx(explain_pair(model, df, a, b).f)
    assert main(["explain", "--data", str(path), "--model", str(tmp_path / "m"), a, "zz"]) == 2
    assert "'zz' is not in the data" in capsys.readouterr().err


def _section(text, title):
    """Rows of the section of ``text`` whose heading starts with ``title`` (up to the next blank line)."""
    lines = text.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith(title))
    rows = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        rows.append(ln)
    return lines[start], rows


def test_text_full_names_aligned_and_block_terms_apart_on_unrelated_papers():
    """Issue 28 item 11: two unrelated papers of the shipped data, the shipped model."""
    from coref.jobs.explain import explain

    e = explain("Ajay_Gupta/0", "Ajay_Gupta/7")        # gold authors 2 and 8: unrelated papers
    text = e.text(top=50)
    for label in e.by_feature["label"]:                  # full names, never cut
        assert f"  {label} " in text
    assert set(e.by_feature["level"]) <= {"block", "missing", "evidence"}
    assert (e.by_feature.loc[e.by_feature["group"] == "block", "level"] == "block").all()
    head, block_rows = _section(text, "block-level terms")
    assert block_rows[0].split()[:2] == ["intercept", "(b)"] and block_rows[1].startswith("  block prior (d_b)")
    assert "block size (log)" in "\n".join(block_rows)
    # the block-level terms add up to intercept + prior + block baseline of the waterfall
    assert float(block_rows[-1].split()[-1]) == pytest.approx(e.by_group["cumulative"].iloc[2], abs=1e-3)
    head, ev_rows = _section(text, "evidence about this pair")
    assert len(ev_rows) == len(e.evidence) > 0
    block_labels = set(e.by_feature.loc[e.by_feature["level"] != "evidence", "label"])
    ranked = [float(r.split()[-1]) for r in ev_rows]
    assert ranked == sorted(ranked, key=abs, reverse=True)   # evidence ranked by |contribution|
    for r in ev_rows:                                        # only evidence about the pair
        assert not any(r.startswith(f"  {b} ") for b in block_labels)
    assert e.evidence["label"].iloc[0] in ev_rows[0]
    # aligned: every row of a table section ends at the same column, as does its heading
    for title in ("block-level terms", "missing information", "evidence about this pair"):
        head, rows = _section(text, title)
        assert {len(r) for r in rows} == {len(head)}, title


def test_evidence_excludes_block_and_missing_terms(model_and_data):
    model, df = model_and_data
    blk = df[df["block"] == "Name_2"].reset_index(drop=True)
    e = explain_pair(model, df, blk["mention_id"].iloc[0], blk["mention_id"].iloc[3])
    assert (e.evidence["level"] == "evidence").all()
    assert not e.evidence["feature"].str.split("*").str[0].str.contains("missing").any()
    assert len(e.evidence) == (e.by_feature["level"] == "evidence").sum()
    assert "(no evidence term is nonzero)" not in e.text() or e.evidence.empty
