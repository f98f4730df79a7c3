"""``--sampler auto`` is the default of ``coref predict`` / ``coref add`` / ``AuthorCoref``;
the outputs say which sampler each block used and why; ``--sampler racing`` keeps the
clusters racing gave when it was the default."""
import argparse
import inspect
import json
from pathlib import Path

import pandas as pd
import pytest

import coref.cli
from coref.cli import add as add_cli
from coref.cli import fit as fit_cli
from coref.cli import predict as predict_cli
from coref.estimator import AuthorCoref
from coref.inference import block_sampler
from coref.jobs.add import add
from coref.jobs.predict import predict

ROOT = Path(__file__).resolve().parents[2]
NELSON = ROOT / "data" / "aminer_na" / "David_Nelson.xml"



def _parse(module, argv):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args(argv)


def test_default_sampler_is_auto_everywhere(tmp_path):
    assert inspect.signature(predict).parameters["sampler"].default == "auto"
    assert inspect.signature(add).parameters["sampler"].default == "auto"
    assert AuthorCoref().sampler == "auto"
    assert _parse(predict_cli, ["--out", "x"]).sampler == "auto"
    assert _parse(add_cli, ["--out", "x", "--clusters", "c", "--data", "d"]).sampler == "auto"
    assert _parse(fit_cli, ["--model", "m"]).sampler == "auto"        # saved with the model
    assert _parse(predict_cli, ["--out", "x", "--sampler", "racing"]).sampler == "racing"
    with pytest.raises(SystemExit):
        _parse(predict_cli, ["--out", "x", "--sampler", "fast"])


def test_block_sampler_names():
    assert [block_sampler(s, c) for s, c in [("auto", True), ("auto", False), ("auto", None), ("exact", True),
                                             ("exact", False), ("racing", False)]] == [
        "exact-cached", "racing", "racing", "exact-cached", "exact", "racing"]


def _cluster_numbers(out):
    c = pd.read_csv(out / "clusters.csv", dtype=str)
    return [int(x.split("/")[1]) for x in c["cluster_id"]]


def _racing_gibbs_partition():
    """The partition of racing Gibbs run directly (what predict ran when racing was its
    default): the shipped model, seed 0, as pd.factorize codes in file order."""
    from coref.datasets import DEFAULT_MODEL
    from coref.gibbs import GibbsCoref
    from coref.inputs import load_input
    from coref.model import load_model

    model, _ = load_model(DEFAULT_MODEL)
    df, _ = load_input(NELSON, command="predict")
    g = GibbsCoref(model, sampler="racing", rng=0, record_history=False).fit(df)
    return pd.factorize(g.clusters_.reindex(df["mention_id"]).to_numpy())[0].tolist()


@pytest.mark.skipif(not NELSON.exists(), reason="shipped data absent")
def test_racing_still_gives_racing_gibbs_clusters_and_auto_the_exact_ones(tmp_path, capsys):
    racing = predict(NELSON, out=tmp_path / "r", sampler="racing", progress=False)
    racing_before = _racing_gibbs_partition()
    assert pd.factorize(pd.Series(_cluster_numbers(tmp_path / "r")))[0].tolist() == racing_before
    assert racing["sampling"]["n_blocks"] == {"exact-cached": 0, "exact": 0, "racing": 1}
    assert racing["sampling"]["blocks"][0]["why"] == "--sampler racing"
    # the command line's default is auto: exact Gibbs from the cached matrix, the exact sampler's clusters
    capsys.readouterr()
    assert coref.cli.main(["predict", "--data", str(NELSON), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    # (in memory: coref.jobs.predict.MEMORY_FACTOR_CACHE_MB)
    assert "Sampler `auto`: 1 block exact Gibbs from the cached factor matrix (n <= 11,585: matrix <= 1024 MiB)." \
        in capsys.readouterr().out
    exact = predict(NELSON, out=tmp_path / "e", sampler="exact", progress=False)
    assert _cluster_numbers(tmp_path / "a") == _cluster_numbers(tmp_path / "e")
    auto = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert auto["settings"]["samplers"] == ["auto"]
    assert auto["sampling"]["blocks"] == [{"block": "David_Nelson", "n_mentions": 20, "sampler": "exact-cached",
                                           "why": "factor matrix 0.00305 MiB <= budget 1024 MiB"}]
    assert auto["n_factor_evals"] < exact["n_factor_evals"]          # the matrix: each factor once
    assert exact["sampling"]["blocks"][0]["why"] == "--sampler exact without --factor-cache-mb"


def _two_sizes(mentions_factory):
    """Blocks of 12 and 4 mentions: a budget of 8 * 6^2 bytes caches only the small one."""
    big = mentions_factory(n_blocks=1, per=12, n_authors=3, seed=5)
    small = mentions_factory(n_blocks=1, per=4, n_authors=2, seed=6)
    small = small.assign(block="Other", mention_id="s" + small["mention_id"].astype(str))
    return pd.concat([big, small], ignore_index=True)


BUDGET = 8 * 6 * 6 / 2**20


def test_summary_and_report_say_which_sampler_each_block_used(mentions_factory, tmp_path):
    df = _two_sizes(mentions_factory)
    big = df["block"].iloc[0]
    res = predict(df, out=tmp_path / "p", progress=False, factor_cache_mb=BUDGET)
    s = res["sampling"]
    assert (s["sampler"], s["max_cached_n"], s["n_blocks"]) == ("auto", 6, {"exact-cached": 1, "exact": 0,
                                                                             "racing": 1})
    by_block = {b["block"]: b for b in s["blocks"]}
    assert by_block["Other"]["sampler"] == "exact-cached" and by_block[big]["sampler"] == "racing"
    assert by_block[big]["why"] == f"factor matrix {8 * 144 / 2**20:.3g} MiB over the budget of {BUDGET:g} MiB"
    text = (f"Sampler `auto`: 1 block exact Gibbs from the cached factor matrix (n <= 6: matrix <= {BUDGET:g} "
            f"MiB); 1 block racing (matrix over the budget of {BUDGET:g} MiB).")
    assert s["text"] == text
    assert text in (tmp_path / "p" / "report.md").read_text()
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["sampling"] == s
    # coref add: the blocks it samples (old + new mentions of a touched block), named the same way
    new = df[df["block"] == "Other"].assign(mention_id=lambda d: "n" + d["mention_id"])
    a = add(tmp_path / "p", new, out=tmp_path / "q", progress=False, factor_cache_mb=BUDGET)
    assert a["sampling"]["blocks"] == [{"block": "Other", "n_mentions": 8, "sampler": "racing",
                                        "why": f"factor matrix {8 * 64 / 2**20:.3g} MiB over the budget of "
                                               f"{BUDGET:g} MiB"}]
    assert "1 block racing" in (tmp_path / "q" / "report.md").read_text()


def test_estimator_records_the_sampling(mentions_factory):
    df = _two_sizes(mentions_factory)
    est = AuthorCoref(n_sweeps=4, big_blocks=None).fit(df)
    est.predict(df.drop(columns="gold"))
    assert est.sampling_["n_blocks"] == {"exact-cached": 2, "exact": 0, "racing": 0}
    est.set_params(sampler="racing").predict(df.drop(columns="gold"))
    assert est.sampling_["n_blocks"] == {"exact-cached": 0, "exact": 0, "racing": 2}


def _result(sampler, block, n, cached):
    import numpy as np

    from coref.inference import BlockResult
    ids = np.array([f"{block}{k}" for k in range(n)], dtype=object)
    return BlockResult(sampler, 0, block, ids, ids, 0, 0.0, np.zeros(2, np.int64), cached=cached)


def test_sampler_choices_counts_and_reasons():
    from coref.jobs.clusters import sampler_choices
    from coref.jobs.predict import cache_params
    from coref.settings import make_settings

    auto = make_settings("predict", sampler="auto")
    s = sampler_choices([_result("auto", "a", 3, True), _result("auto", "b", 1, False),
                         _result("auto", "c", 6000, False), _result("auto", "d", 5, True)], auto)
    assert (s["factor_cache_mib"], s["max_cached_n"], s["n_blocks"]) == (256.0, 5792, {"exact-cached": 2, "exact": 0,
                                                                                         "racing": 2})
    assert [b["why"] for b in s["blocks"]] == ["factor matrix 6.87e-05 MiB <= budget 256 MiB",
                                              "one mention: nothing to sample",
                                              "factor matrix 275 MiB over the budget of 256 MiB",
                                              "factor matrix 0.000191 MiB <= budget 256 MiB"]
    assert s["text"] == ("Sampler `auto`: 2 blocks exact Gibbs from the cached factor matrix (n <= 5,792: matrix "
                         "<= 256 MiB); 1 block racing (matrix over the budget of 256 MiB); 1 one-mention block "
                         "(nothing to sample).")
    # a block within the budget that the per-block cost model gave to racing
    s = sampler_choices([_result("auto", "e", 50, False)], auto)
    assert s["blocks"][0]["why"] == "factor matrix 0.0191 MiB within the budget, but racing costs less"
    assert s["text"] == "Sampler `auto`: 1 block racing (matrix within the budget, racing cheaper)."
    exact = make_settings("predict", sampler="exact", gibbs_params=cache_params(1.0))
    s = sampler_choices([_result("exact", "a", 300, True), _result("exact", "c", 600, False)], exact)
    assert (s["max_cached_n"], s["n_blocks"]["exact"], s["blocks"][1]["why"]) == (
        362, 1, "factor matrix 2.75 MiB over the budget of 1 MiB")
    racing = make_settings("predict", sampler="racing")
    assert sampler_choices([], racing)["text"] == "Sampler `racing`: no blocks."
