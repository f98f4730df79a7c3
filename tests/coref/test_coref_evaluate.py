"""Tests of coref.evaluate: hand-computed cases, independent implementations, properties, CLI."""
import json
import re
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coref.evaluate import B3Result, b3, evaluate_clusters, pairwise_scores
import coref.cli


def s(values, ids=None):
    ids = ids or [f"m{i}" for i in range(len(values))]
    return pd.Series(values, index=ids, dtype="string")


# ----------------------------------------------------------------------------- hand-computed
def test_b3_hand_three_mentions():
    # pred {m0,m1} {m2}; gold {m0} {m1,m2}
    r = b3(s(["a", "a", "b"]), s(["x", "y", "y"]))
    # precision: m0 1/2, m1 1/2, m2 1 -> 2/3; recall: m0 1, m1 1/2, m2 1/2 -> 2/3
    assert r == B3Result(2 / 3, 2 / 3, 2 / 3, 3)


def test_b3_hand_five_mentions():
    # pred {0,1,2} {3,4}; gold {0,1} {2,3,4}
    r = b3(s(list("aaabb")), s(list("xxyyy")))
    p = (2 / 3 + 2 / 3 + 1 / 3 + 1 + 1) / 5
    rc = (1 + 1 + 1 / 3 + 2 / 3 + 2 / 3) / 5
    assert r.precision == pytest.approx(p) and r.recall == pytest.approx(rc)
    assert r.f1 == pytest.approx(2 * p * rc / (p + rc))
    pw = pairwise_scores(s(list("aaabb")), s(list("xxyyy")))
    # pred pairs 3 + 1 = 4; gold pairs 1 + 3 = 4; true pairs {0,1} {3,4} = 2
    assert (pw.n_true_pairs, pw.n_pred_pairs, pw.n_gold_pairs) == (2, 4, 4)
    assert pw.precision == pw.recall == pw.f1 == 0.5


def test_all_singletons_and_one_cluster():
    gold = s(list("xxyz"))
    single = b3(s(list("abcd")), gold)
    assert single.precision == 1.0 and single.recall == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)
    one = b3(s(list("aaaa")), gold)
    assert one.recall == 1.0 and one.precision == pytest.approx((0.5 + 0.5 + 0.25 + 0.25) / 4)
    pw = pairwise_scores(s(list("abcd")), gold)
    assert (pw.precision, pw.recall, pw.f1) == (1.0, 0.0, 0.0)  # no predicted pair: precision 1 by convention


def test_unlabelled_mentions_are_excluded():
    pred = s(["a", "a", "a", "b"])
    gold = s(["x", "x", None, None])
    assert b3(pred, gold) == B3Result(1.0, 1.0, 1.0, 2)
    # same as scoring only the labelled two
    assert b3(pred.iloc[:2], gold.iloc[:2]) == b3(pred, gold)


def test_order_of_index_does_not_matter():
    pred = s(list("aaabb"))
    gold = s(list("xxyyy"))
    assert b3(pred, gold.iloc[::-1]) == b3(pred, gold)


@pytest.mark.parametrize("pred, gold, match", [
    (s(["a", "b"]), s(["x", "y"], ["m0", "m9"]), "same mention_ids"),
    (s(["a", "b"]), s(["x"]), "same mention_ids"),
    (s(["a", "b"], ["m0", "m0"]), s(["x", "y"]), "duplicates"),
    (s(["a", None]), s(["x", "y"]), "without a cluster"),
    (s(["a", "b"]), s([None, None]), "no labelled mention"),
    (s([]), s([]), "no labelled mention"),
], ids=["other-ids", "lengths", "dup", "pred-na", "all-unlabelled", "empty"])
def test_errors(pred, gold, match):
    with pytest.raises(ValueError, match=match):
        b3(pred, gold)
    with pytest.raises(ValueError, match=match):
        pairwise_scores(pred, gold)


def test_type_error():
    with pytest.raises(TypeError, match="pred parameter must be a pandas Series"):
        b3(["a"], s(["x"]))


# ----------------------------------------------------------------------------- independent implementations
def brute_pairwise(pred, gold):
    ids = list(pred.index)
    pp = {(i, j) for i, j in combinations(ids, 2) if pred[i] == pred[j]}
    gp = {(i, j) for i, j in combinations(ids, 2) if gold[i] == gold[j]}
    tp = len(pp & gp)
    return (tp / len(pp) if pp else 1.0), (tp / len(gp) if gp else 1.0)


def brute_b3(pred, gold):
    ids = list(pred.index)
    p = np.mean([sum(pred[j] == pred[i] and gold[j] == gold[i] for j in ids) / sum(pred[j] == pred[i] for j in ids)
                 for i in ids])
    r = np.mean([sum(pred[j] == pred[i] and gold[j] == gold[i] for j in ids) / sum(gold[j] == gold[i] for j in ids)
                 for i in ids])
    return p, r


def as_sets(series):
    return [set(g.index) for _, g in series.groupby(series, sort=True)]


@pytest.mark.parametrize("seed", range(5))
def test_against_scorch_bcubed_and_bruteforce(seed):
    from scorch.scores import b_cubed
    import bcubed

    rng = np.random.default_rng(seed)
    n = 60
    pred = s(rng.integers(0, 8, n).astype(str).tolist())
    gold = s(rng.integers(0, 6, n).astype(str).tolist())
    ours = b3(pred, gold)
    r_s, p_s, f_s = b_cubed(as_sets(gold), as_sets(pred))
    assert ours.precision == pytest.approx(p_s, abs=1e-12)
    assert ours.recall == pytest.approx(r_s, abs=1e-12)
    assert ours.f1 == pytest.approx(f_s, abs=1e-12)
    cdict = {m: {c} for m, c in pred.items()}
    ldict = {m: {c} for m, c in gold.items()}
    assert ours.precision == pytest.approx(bcubed.precision(cdict, ldict), abs=1e-12)
    assert ours.recall == pytest.approx(bcubed.recall(cdict, ldict), abs=1e-12)
    assert (ours.precision, ours.recall) == pytest.approx(brute_b3(pred, gold), abs=1e-12)
    pw = pairwise_scores(pred, gold)
    assert (pw.precision, pw.recall) == pytest.approx(brute_pairwise(pred, gold), abs=1e-12)


def test_han_name_baseline_matches_sources_md(shared_coref_data):
    """SOURCES.md: 'one cluster per exact name string' on Han A. Gupta gives P=0.6519 R=0.6263."""
    from coref.io import load_mentions

    path = shared_coref_data / "han_dblp_lbd"
    df = load_mentions(path, format="han").set_index("mention_id")
    res = {}
    for block, g in df.groupby("block"):
        res[block] = b3(g["name"], g["gold"])
    assert res["a gupta"].precision == pytest.approx(0.6519, abs=5e-5)
    assert res["a gupta"].recall == pytest.approx(0.6263, abs=5e-5)
    assert res["j lee"].precision == pytest.approx(0.2364, abs=5e-5)
    assert res["j lee"].recall == pytest.approx(0.8241, abs=5e-5)


# ----------------------------------------------------------------------------- properties
labels = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(labels, st.permutations(list(range(6))))
def test_relabelling_invariance_and_perfect_score(pairs, perm):
    pred = s([str(p) for p, _ in pairs])
    gold = s([str(g) for _, g in pairs])
    relabelled = s([f"c{perm[p]}" for p, _ in pairs])
    assert b3(relabelled, gold) == b3(pred, gold)
    assert pairwise_scores(relabelled, gold) == pairwise_scores(pred, gold)
    perfect = b3(gold.map(lambda g: "p" + g), gold)
    assert (perfect.precision, perfect.recall, perfect.f1) == (1.0, 1.0, 1.0)
    pw = pairwise_scores(gold, gold)
    assert (pw.precision, pw.recall, pw.f1) == (1.0, 1.0, 1.0)
    r = b3(pred, gold)
    assert 0 < r.precision <= 1 and 0 < r.recall <= 1
    # symmetry: swapping pred and gold swaps precision and recall
    swapped = b3(gold, pred)
    assert swapped.precision == pytest.approx(r.recall) and swapped.recall == pytest.approx(r.precision)


def test_evaluate_clusters_keys():
    out = evaluate_clusters(s(list("aaabb")), s(list("xxyyy")))
    assert set(out) == {"b3_precision", "b3_recall", "b3_f1", "pairwise_precision", "pairwise_recall",
                        "pairwise_f1", "n_mentions"}
    assert out["pairwise_f1"] == 0.5


# ----------------------------------------------------------------------------- CLI
def write(path, text):
    path.write_text(text)
    return str(path)


def test_cli_json(tmp_path, capsys):
    pred = write(tmp_path / "p.csv", "mention_id,cluster_id\nm0,a\nm1,a\nm2,a\nm3,b\nm4,b\n")
    gold = write(tmp_path / "g.csv", "mention_id,gold\nm0,x\nm1,x\nm2,y\nm3,y\nm4,y\n")
    assert coref.cli.main(["evaluate", pred, gold, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {**evaluate_clusters(s(list("aaabb")), s(list("xxyyy"))), "gold_column": "gold", "sampler": None}
    assert coref.cli.main(["evaluate", pred, gold]) == 0
    assert "b3        precision=" in capsys.readouterr().out


@pytest.mark.parametrize("pred_text, gold_text, match", [
    ("mention_id,cluster\nm0,a\n", "mention_id,gold\nm0,x\n", "p.csv: the prediction CSV needs a 'cluster_id'"),
    ("id,cluster_id\nm0,a\n", "mention_id,gold\nm0,x\n", "p.csv: the prediction CSV needs a 'mention_id'"),
    ("mention_id,cluster_id\nm0,a\n", "mention_id,label\nm0,x\n", "g.csv: the gold CSV needs a 'gold' or 'cluster_id'"),
    ("mention_id,cluster_id\nm0,a\n", "mention_id,gold\nm0,x\nm1,y\n", "1 mention_id.*no predicted cluster.*m1"),
    ("mention_id,cluster_id\nm0,a\nm0,b\n", "mention_id,gold\nm0,x\n", "duplicate mention_id"),
    ("mention_id,cluster_id\nm0,\n", "mention_id,gold\nm0,x\n", "empty cluster_id"),
], ids=["pred-col", "pred-id", "gold-col", "missing-id", "dup", "empty"])
def test_cli_errors(tmp_path, capsys, pred_text, gold_text, match):
    pred = write(tmp_path / "p.csv", pred_text)
    gold = write(tmp_path / "g.csv", gold_text)
    assert coref.cli.main(["evaluate", pred, gold]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err


def test_cli_extra_predictions_are_unlabelled(tmp_path, capsys):
    pred = write(tmp_path / "p.csv", "mention_id,cluster_id\nm0,a\nm1,a\nm2,b\n")
    gold = write(tmp_path / "g.csv", "mention_id,cluster_id\nm0,x\nm1,x\n")
    assert coref.cli.main(["evaluate", pred, gold, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["b3_f1"] == 1.0
    assert "1 predicted mention(s) are not in the gold file" in captured.err


def test_cli_missing_file(tmp_path, capsys):
    assert coref.cli.main(["evaluate", str(tmp_path / "p.csv"), str(tmp_path / "g.csv")]) == 2
    assert "not found" in capsys.readouterr().err


def test_cli_scores_the_gold_column_of_a_clusters_file(tmp_path, capsys):
    # the issue: `coref evaluate X.csv X.csv` on a run's own clusters.csv scored 1.0000, because the
    # gold file's cluster_id was used and its gold column ignored
    x = write(tmp_path / "x.csv", "mention_id,block,cluster_id,gold\na,b,1,1\nb,b,1,2\nc,b,2,2\n")
    assert coref.cli.main(["evaluate", x, x, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = evaluate_clusters(s(["1", "1", "2"]), s(["1", "2", "2"]))
    assert out["gold_column"] == "gold" and out["b3_f1"] == pytest.approx(ref["b3_f1"]) and out["b3_f1"] < 0.7
    assert coref.cli.main(["evaluate", x, x]) == 0
    assert "against gold column 'gold'" in capsys.readouterr().out


def test_cli_reads_a_run_clusters_file_by_sampler(tmp_path, capsys):
    text = ("sampler,fold,block,mention_id,cluster_id,gold,scored\n"
            "racing,0,b,m0,c0,x,True\nracing,0,b,m1,c0,x,True\nracing,0,b,m2,c1,y,True\n"
            "exact,0,b,m0,c0,x,True\nexact,0,b,m1,c1,x,True\nexact,0,b,m2,c1,y,True\n")
    x = write(tmp_path / "clusters.csv", text)
    assert coref.cli.main(["evaluate", x, x, "--json"]) == 0
    racing = json.loads(capsys.readouterr().out)
    assert racing["sampler"] == "racing" and racing["b3_f1"] == 1.0
    assert coref.cli.main(["evaluate", x, x, "--json", "--sampler", "exact"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert exact["sampler"] == "exact"
    assert exact["b3_f1"] == pytest.approx(evaluate_clusters(s(["c0", "c1", "c1"]), s(list("xxy")))["b3_f1"])
    assert coref.cli.main(["evaluate", x, x, "--sampler", "gibbs"]) == 2
    assert "no rows of sampler 'gibbs'" in capsys.readouterr().err


def test_cli_reads_gold_from_a_parquet_mention_table(tmp_path, capsys):
    # `coref predict` reads Parquet mention tables; their gold column scores a prediction directly
    pred = write(tmp_path / "pred.csv", "mention_id,block,cluster_id\na,b,1\nb,b,1\nc,b,2\nd,b,2\n")
    gold = pd.DataFrame({"mention_id": list("abcd"), "block": "b", "name": "A Li",
                         "gold": pd.array(["x", "y", "y", None], dtype="string")})
    gold.to_parquet(tmp_path / "gold.parquet")
    assert coref.cli.main(["evaluate", pred, str(tmp_path / "gold.parquet"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = evaluate_clusters(s(["1", "1", "2"]), s(["x", "y", "y"]))   # d has no gold: not scored
    assert out["gold_column"] == "gold" and out["b3_f1"] == pytest.approx(ref["b3_f1"])
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    assert coref.cli.main(["evaluate", pred, str(tmp_path / "bad.parquet")]) == 2
    assert "cannot read gold Parquet file" in capsys.readouterr().err
