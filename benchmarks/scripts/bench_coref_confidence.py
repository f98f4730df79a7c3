"""Certified confidence for coreference on the shipped AMiner data (issue 13 must-show figures).

Parts (``--part table`` / ``a`` / ``b`` / ``names`` / ``time`` / ``all``):

(a) sub-models cut from the shipped data (theta fitted on the other folds, the rest of
    the block fixed at the fold's predicted clustering):
    a1. exact ln Z (subset DP and variable elimination on the graphical model) against
        brute-force enumeration of set partitions, sub-models of <= 8 mentions;
    a2. DIS intervals [L_A / U, U_A / L] (delta/2 each) against the exact P(A) on
        ``--n-coverage`` random sub-models of 4-10 mentions with a short budget;
    a3. interval width for 12-20-mention sub-models (the least confident mentions of
        a block, as ``assignment_confidence`` picks them) at each of ``--budgets``
        seconds per partition function (``--n-width`` sub-models, wall clock), leader
        vs growth encoding on a few, and one worked example.
(b) grouped 5-fold (``assign_folds``, what ``coref run`` uses): theta fitted on 4
    folds, racing Gibbs MAP on the 5th, then ``coref.jobs.heldout.heldout_confidence``:
    calibration maps (isotonic) fitted on the held-out scores of the 4 OTHER folds, each
    from its own fold model (cross-fitted, since 2026-11-24; before, the training folds
    were clustered and scored by the held-out fold's theta, in-sample), confidences of
    the held-out fold (Rao-Blackwellised
    Gibbs marginals, exact sub-models of <= 8 mentions), maps applied. Prints the
    must-show table per fold and pooled: ECE (10 equal-width bins) and Brier of the
    pair probabilities over every pair within a block (raw posterior, calibrated,
    sigmoid(f)), coverage and correctness of mentions with confidence >= 0.95 (correct
    = the mention's gold author is the majority gold author of its predicted cluster).
(names) held-out names: ``coref fit`` on half of the shipped name files,
    ``coref predict --confidence`` on the other half, scored against the gold
    passed through to mentions.parquet.
(time) ``coref predict`` on the shipped data with and without ``--confidence``.
``--part table`` (default) runs b, names, time and the a3 widths at ``--budgets``.

Run from the worktree root::

    PYTHONPATH=$PWD python benchmarks/scripts/bench_coref_confidence.py            # must-show table
    PYTHONPATH=$PWD python benchmarks/scripts/bench_coref_confidence.py --part a   # a1-a3

Nothing is asserted; the figures are printed (and written as JSON with ``--out``).

Measured 2026-11-23 on the shared 2-core machine (load average 4-6):

``--part a`` (409 s, earlier build): a1 30 sub-models of 2-8 mentions, max |ln Z - brute
force| 2.8e-14 (DP, VE on both encodings). a2 200/200 intervals contain the exact P(A)
(delta 0.05, 0.2 s per Z; 158 events with exact P in [0.001, 0.999]; 96 intervals
closed by search). a3 10 sub-models of 12-20 mentions: width median 0.92 / 90th pct
1.00 at 2 s per Z, median 0.034 / 90th pct 0.98 at 10 s per Z; leader encoding 0.065
and 0.11 wide vs growth 1.00 at 2.5 s (m = 14). Worked example (10 s, Ning_Zhang, 12
mentions, 23 fixed clusters, A = "row 60 alone"): ln Z in [5.0823, 5.1071], ln Z_A in
[3.8593, 3.8777], P(A) in [0.2871, 0.2998], exact 0.2937.

``--part widths --budgets 10`` (282 s, this build, fold 0 of ``assign_folds``): 10
sub-models of 12-20 mentions (the least confident of a block, the rest fixed) at 10 s
per partition function: interval width median 0.000 (5 of 10 closed exactly by the
search: few fixed clusters), 90th percentile 0.104; the widest, Lei_Wang m = 20 with
73 fixed clusters, [0.043, 1.000]. Worked example (Robert_Schreiber, m = 12, K = 8
fixed clusters, A = "row 48 is a cluster of its own", delta = 0.05 each side): P(A) in
[0.2683, 0.2706], estimate 0.2694, exact (subset DP) 0.2693. Encodings at 2.5 s, m = 14,
K = 43: width leader 0.58, growth 1.00.

``--part b`` (195 s; 417,713 labeled pairs, 7,026 mentions)::

    fold  ECE raw  ECE cal  ECE sig(f)  Brier raw  Brier cal  Brier sig(f)  cover raw  correct  cover cal  correct
    0     0.0404   0.0345   0.0426      0.0410     0.0382     0.0408        0.7447     0.9655   0.7068     0.9828
    1     0.1000   0.0473   0.0323      0.1007     0.0784     0.0796        0.7725     0.9899   0.6867     0.9969
    2     0.1122   0.0609   0.0548      0.1123     0.0788     0.0780        0.8823     0.9717   0.7846     0.9909
    3     0.0386   0.0321   0.0526      0.0393     0.0383     0.0416        0.7505     0.9545   0.6837     0.9854
    4     0.0682   0.0385   0.0319      0.0689     0.0654     0.0718        0.8241     0.9810   0.7728     0.9917
    pool  0.0709   0.0147   0.0158      0.0717     0.0593     0.0619        0.7948     0.9728   0.7269     0.9896

"cal" pairs: the isotonic image of (p + sigmoid(f)) / 2; "cal" mentions: the isotonic
image of min(p, p_direct), p_direct = mean sigmoid(f) to the cluster's other members.
The raw posterior marginal alone loses to sigmoid(f) on Brier (0.0717 vs 0.0619: whole
clusters split or merged by the MAP are confidently wrong); the maps of the posterior
alone gave Brier 0.0668 and, for mentions, 72.1% coverage at 97.6% correct. Confidence
and calibration for the 5 folds took 117 s (4 training folds clustered and scored per
fold).

``--part names`` (38 s): fit on 54 names, predict --confidence on the other 54 (3,107
mentions, accuracy 0.941): confidence >= 0.95 raw covers 75.7% at 96.3% correct,
calibrated 73.5% at 98.03%; pairs.csv rows (55,772: p >= 0.01 or within a cluster) ECE
0.0431 raw / 0.0367 calibrated, Brier 0.0461 / 0.0429.

``--part time``: ``coref predict`` on the shipped data 10.6 s, with ``--confidence``
25.6 s (adds 15.0 s; was 86 s with 100 + 30 indicator sweeps of GibbsCoref and exact
sub-models of 12 mentions). In-process on the shipped model: the confidence step took
6.3 s with sampled marginals only, 12.0 s with exact sub-models of <= 8 mentions, 166 s
with <= 12, for the same coverage (79.6%) and correctness (97.7%) at p >= 0.95.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

from coref.datasets import data_path  # noqa: E402

DATA = data_path("aminer_na")  # the shipped AMiner set, found from any directory

from coref import GibbsCoref, PairwiseModel, load_mentions  # noqa: E402
from coref.confidence.submodels import build_graphical_model, subproblem
from coref.confidence.exact import exact_log_z
from coref.confidence import event_probability  # noqa: E402
from coref.jobs.folds import assign_folds


def _log(*a):
    print(*a, flush=True)


def set_partitions(items):
    """Every set partition of ``items``: the brute-force enumerator of the confidence tests."""
    sys.path.insert(0, str(ROOT / "tests" / "coref"))
    from test_coref_confidence import set_partitions as enumerate_partitions
    return enumerate_partitions(items)


def brute_log_z(F, S, assignment):
    from scipy.special import logsumexp

    n = F.shape[0]
    S = list(S)
    rest = [r for r in range(n) if r not in S]
    labs = sorted({int(assignment[r]) for r in rest})
    vals = []
    for part in set_partitions(S + [("anchor", c) for c in labs]):
        y, ok = {}, True
        for gi, g in enumerate(part):
            an = [a for a in g if isinstance(a, tuple)]
            if len(an) > 1:
                ok = False
                break
            for s in g:
                if not isinstance(s, tuple):
                    y[s] = an[0][1] if an else ("new", gi)
        if not ok:
            continue
        for r in rest:
            y[r] = int(assignment[r])
        vals.append(sum(F[a, b] for a in range(n) for b in range(a + 1, n) if (a in S or b in S) and y[a] == y[b]))
    return float(logsumexp(vals))


def fold_setup(df, k, folds=5):
    fold_of, labeled = assign_folds(df, folds)
    f = df["block"].map(fold_of)
    train = df[(f != k) & df["block"].isin(labeled)].reset_index(drop=True)
    test = df[f == k].reset_index(drop=True)
    return train, test


def predict(model, df, seed=0, sampler="exact"):
    g = GibbsCoref(model, sampler=sampler, rng=seed, record_history=False).fit(df)
    cl = g.clusters_.rename("cluster_id").reset_index()
    cl["block"] = df.set_index(df["mention_id"].astype(str)).loc[cl["mention_id"], "block"].to_numpy()
    return cl


def block_arrays(model, df, clusters, block):
    sub = df[df["block"] == block]
    sub = sub.iloc[np.argsort(sub["mention_id"].astype(str).to_numpy(), kind="stable")]
    cid = clusters.set_index("mention_id").loc[sub["mention_id"].astype(str), "cluster_id"].to_numpy()
    labels = np.unique(cid, return_inverse=True)[1].astype(np.int64)
    F = model.factor_matrix(model.encode(sub))
    return sub, F, labels


def singleton_confidence(F, labels):
    """Exact P(mention i stays with its predicted cluster | all other mentions fixed)."""
    n = F.shape[0]
    out = np.empty(n)
    for i in range(n):
        rest = np.arange(n) != i
        labs, inv = np.unique(labels[rest], return_inverse=True)
        u = np.bincount(inv, weights=F[i, rest], minlength=labs.size)
        logits = np.append(u, 0.0)
        own = np.flatnonzero(labs == labels[i])
        k = int(own[0]) if own.size else labs.size  # predicted singleton: the new cluster
        out[i] = np.exp(logits[k] - np.logaddexp.reduce(logits))
    return out


def uncertain_set(F, labels, m, gen, pool=30):
    """m mentions drawn among the ``pool`` least confident (singleton conditionals)."""
    order = np.argsort(singleton_confidence(F, labels), kind="stable")
    cand = order[:max(m, min(pool, F.shape[0]))]
    return np.sort(gen.choice(cand, size=m, replace=False))


def random_event(sub, labels, gen):
    S = sub.S
    i = int(gen.choice(S))
    kinds = ["same", "alone"] + (["cluster"] if sub.K else [])
    kind = kinds[int(gen.integers(len(kinds)))]
    if kind == "same":
        j = int(gen.choice(S[S != i]))
        return ("same", min(i, j), max(i, j))
    if kind == "cluster":
        return ("cluster", i, int(gen.choice(sub.cluster_labels)))
    return ("alone", i)


# ----------------------------------------------------------------------------- part a

def part_a(df, args, res, only_widths=False):
    gen = np.random.default_rng(2024)
    train, test = fold_setup(df, 0)
    t0 = time.perf_counter()
    model = PairwiseModel().fit(train)
    clusters = predict(model, test)
    _log(f"[a] fold 0: theta fitted on {train['block'].nunique()} blocks in {time.perf_counter() - t0:.1f} s; "
         f"{test['block'].nunique()} test blocks")
    blocks = sorted(test["block"].unique())
    cache = {b: block_arrays(model, test, clusters, b) for b in blocks}

    if only_widths:
        return part_a3(args, res, gen, blocks, cache)
    # a1: brute force, <= 8 mentions
    worst = 0.0
    n_a1 = 0
    t0 = time.perf_counter()
    while n_a1 < args.n_brute:
        b = blocks[int(gen.integers(len(blocks)))]
        _, F, labels = cache[b]
        n = F.shape[0]
        if n < 4:
            continue
        m = int(gen.integers(2, 9))
        # cut: a random set of <= 10 rows of the block, S = m of them, the others fixed
        rows = np.sort(gen.choice(n, size=min(n, m + int(gen.integers(0, 3))), replace=False))
        Fc, lc = F[np.ix_(rows, rows)], labels[rows]
        S = np.sort(gen.choice(len(rows), size=min(m, len(rows)), replace=False))
        sub = subproblem(Fc, S, lc if len(S) < len(rows) else None)
        if len(S) + sub.K > 10:
            continue
        bf = brute_log_z(Fc, S, lc)
        from sampling.bounds import log_partition

        e1 = abs(exact_log_z(sub) - bf)
        e2 = abs(log_partition(build_graphical_model(sub)) - bf)
        e3 = abs(log_partition(build_graphical_model(sub, encoding="growth")) - bf)
        worst = max(worst, e1, e2, e3)
        n_a1 += 1
    res["a1"] = {"n_submodels": n_a1, "max_abs_error": worst, "seconds": time.perf_counter() - t0}
    _log(f"[a1] {n_a1} sub-models of <= 8 mentions: max |ln Z - brute force| = {worst:.3e} "
         "(subset DP, VE on leader and growth models)")

    # a2: coverage of DIS intervals
    delta = args.delta
    hits, widths, n_exact_width, n_nontrivial = 0, [], 0, 0
    t0 = time.perf_counter()
    for r in range(args.n_coverage):
        while True:
            b = blocks[int(gen.integers(len(blocks)))]
            _, F, labels = cache[b]
            n = F.shape[0]
            if n >= 6:
                break
        m = int(gen.integers(4, min(10, n - 1) + 1))
        S = uncertain_set(F, labels, m, gen)
        sub = subproblem(F, S, labels)
        for _ in range(20):  # prefer a non-trivial event (exact P in [0.001, 0.999])
            con = random_event(sub, labels, gen)
            ex = event_probability(sub, con, method="exact").p
            if 0.001 <= ex <= 0.999:
                break
        n_nontrivial += 0.001 <= ex <= 0.999
        d = event_probability(sub, con, method="dis", delta=delta, time_limit=args.coverage_budget,
                              rng=int(gen.integers(2**31)))
        hit = d.p_lower - 1e-12 <= ex <= d.p_upper + 1e-12
        hits += hit
        widths.append(d.p_upper - d.p_lower)
        n_exact_width += d.p_upper - d.p_lower < 1e-9
    cov = hits / args.n_coverage
    res["a2"] = {"n_submodels": args.n_coverage, "delta": delta, "budget_s": args.coverage_budget,
                 "coverage": cov, "target": 1 - 2 * delta, "median_width": float(np.median(widths)),
                 "n_zero_width": int(n_exact_width), "n_nontrivial": int(n_nontrivial),
                 "seconds": time.perf_counter() - t0}
    _log(f"[a2] DIS intervals contain the exact P(A) in {hits}/{args.n_coverage} = {cov:.3f} "
         f"(target >= {1 - 2 * delta:.2f}); budget {args.coverage_budget} s per Z; median width "
         f"{np.median(widths):.4f}; {n_exact_width} closed by search (width 0); {n_nontrivial} events with "
         "exact P in [0.001, 0.999]")

    part_a3(args, res, gen, blocks, cache)


def part_a3(args, res, gen, blocks, cache):
    """a3: interval width for 12-20 mentions at each budget (the same sub-models for every budget)."""
    delta = args.delta
    sizes = [12, 14, 16, 18, 20]
    big = [b for b in blocks if cache[b][1].shape[0] >= 30]
    picks = []
    for r in range(args.n_width):
        m = sizes[r % len(sizes)]
        b = big[int(gen.integers(len(big)))]
        _, F, labels = cache[b]
        S = uncertain_set(F, labels, m, gen, pool=m)  # the m least confident, as assignment_confidence
        sub = subproblem(F, S, labels)
        i = int(S[int(np.argmin(singleton_confidence(F, labels)[S]))])
        con = ("cluster", i, int(labels[i])) if labels[i] in sub.cluster_labels else ("alone", i)
        ex = event_probability(sub, con, method="exact").p if m <= 12 else float("nan")
        picks.append((b, m, sub, con, ex, int(gen.integers(2**31))))
    res["a3"] = {}
    example = None
    for budget in [float(x) for x in args.budgets.split(",")]:
        widths, rows_out = [], []
        t0 = time.perf_counter()
        for b, m, sub, con, ex, seed in picks:
            d = event_probability(sub, con, method="dis", delta=delta, time_limit=budget, rng=seed)
            w = d.p_upper - d.p_lower
            widths.append(w)
            rows_out.append({"block": b, "m": m, "K": sub.K, "event": list(con), "p": d.p, "lower": d.p_lower,
                             "upper": d.p_upper, "width": w, "exact": ex})
            _log(f"[a3] {budget:g} s: {b}: m={m} K={sub.K} {con}: p={d.p:.4f} in [{d.p_lower:.4f}, "
                 f"{d.p_upper:.4f}] width {w:.4f}" + (f" exact {ex:.4f}" if m <= 12 else ""))
            if m == 12 and example is None and budget == max(float(x) for x in args.budgets.split(",")):
                example = {"block": b, "S_rows": sub.S.tolist(), "K": sub.K, "event": list(con), "delta": delta,
                           "budget_s": budget, "log_Z": d.log_Z, "log_Z_A": d.log_Z_A, "p": d.p,
                           "interval": [d.p_lower, d.p_upper], "exact": ex}
        by_m = pd.DataFrame(rows_out).groupby("m")["width"].median().to_dict()
        res["a3"][str(budget)] = {"n_submodels": len(picks), "median_width": float(np.median(widths)),
                                  "p90_width": float(np.quantile(widths, 0.9)), "median_width_by_m": by_m,
                                  "rows": rows_out, "seconds": time.perf_counter() - t0}
        _log(f"[a3] 12-20 mentions at {budget:g} s per Z ({len(picks)} sub-models): median width "
             f"{np.median(widths):.4f}, 90th pct {np.quantile(widths, 0.9):.4f}; median by m {by_m}")
    res["worked_example"] = example
    if example:
        _log("[a3] worked example: " + json.dumps(example))
    budget = max(float(x) for x in args.budgets.split(","))

    # encodings, side by side on the same sub-models (budget/4 each)
    enc = []
    for r in range(args.n_encoding):
        m = 14
        b = big[int(gen.integers(len(big)))]
        _, F, labels = cache[b]
        S = uncertain_set(F, labels, m, gen, pool=m)
        sub = subproblem(F, S, labels)
        out = {}
        for e in ("leader", "growth"):
            d = event_probability(sub, ("alone", int(S[0])), method="dis", delta=delta,
                                  time_limit=budget / 4, rng=5, encoding=e)
            out[e] = d.p_upper - d.p_lower
        enc.append(out)
        _log(f"[a3] encodings, m=14 K={sub.K}, {budget / 4:.1f} s per Z: width leader "
             f"{out['leader']:.4f}, growth {out['growth']:.4f}")
    res["encodings"] = enc


# ----------------------------------------------------------------------------- part b, c

def correct_mentions(conf, df):
    gold = df.set_index(df["mention_id"].astype(str))["gold"]
    c = conf.copy()
    c["gold"] = gold.reindex(c["mention_id"].astype(str)).to_numpy()
    c = c[c["gold"].notna()]
    maj = c.groupby("cluster_id")["gold"].agg(lambda s: s.value_counts().index[0])
    c["correct"] = (c["gold"].to_numpy() == maj.reindex(c["cluster_id"]).to_numpy()).astype(float)
    return c


def dense_pairs(model, df, pairs):
    """Every pair within a block with p (0 for pairs not listed), the factor f and gold."""
    out = []
    for b, sub in df.groupby("block", sort=True):
        sub = sub.iloc[np.argsort(sub["mention_id"].astype(str).to_numpy(), kind="stable")]
        ids = sub["mention_id"].astype(str).to_numpy()
        F = model.factor_matrix(model.encode(sub))
        a, c = np.triu_indices(len(ids), 1)
        g = sub["gold"].to_numpy(dtype=object)
        out.append(pd.DataFrame({"mention_a": ids[a], "mention_b": ids[c], "f": F[a, c],
                                 "y": [(ga == gb) if not (pd.isna(ga) or pd.isna(gb)) else np.nan
                                       for ga, gb in zip(g[a], g[c])]}))
    d = pd.concat(out, ignore_index=True)
    key = pairs.set_index(["mention_a", "mention_b"])["p"]
    d["p"] = key.reindex(pd.MultiIndex.from_arrays([d["mention_a"], d["mention_b"]])).fillna(0.0).to_numpy()
    return d[d["y"].notna()].astype({"y": float})


def part_bc(df, args, res):
    """Grouped 5-fold must-show table through ``coref.jobs.heldout.heldout_confidence`` (what ``coref run`` runs)."""
    from coref.inference import single_thread
    from coref.jobs.heldout import heldout_confidence

    fold_of, labeled = assign_folds(df, 5)
    fo = df["block"].map(fold_of)
    models, cls = {}, []
    t_fit = t_pred = 0.0
    for k in range(5):
        train = df[(fo != k) & df["block"].isin(labeled)].reset_index(drop=True)
        t0 = time.perf_counter()
        with single_thread():
            models[k] = PairwiseModel().fit(train)
        t1 = time.perf_counter()
        test = df[fo == k].reset_index(drop=True)
        cl = predict(models[k], test, sampler=args.sampler)
        t_fit += t1 - t0
        t_pred += time.perf_counter() - t1
        cls.append(cl.assign(sampler=args.sampler, fold=k))
    clusters = pd.concat(cls, ignore_index=True)
    _log(f"[b] theta fitted on 4 folds x 5 in {t_fit:.0f} s; held-out Gibbs MAP ({args.sampler}) in {t_pred:.0f} s")
    t0 = time.perf_counter()
    out = heldout_confidence(df, {b: int(f) for b, f in fold_of.items()}, labeled, models, clusters,
                             sampler=args.sampler, calibration=args.cal_method, seed=0)
    t_conf = time.perf_counter() - t0
    out["seconds"] = t_conf
    res["b"] = out
    cols = ("n_pairs", "ece", "ece_calibrated", "ece_sigmoid_f", "brier", "brier_calibrated", "brier_sigmoid_f",
            "n_mentions", "coverage", "correct", "coverage_calibrated", "correct_calibrated")
    rows = [{"fold": r["fold"], **{c: r.get(c) for c in cols}} for r in out["folds"]]
    rows.append({"fold": "pooled", **{c: out["pooled"].get(c) for c in cols}})
    table = pd.DataFrame(rows).set_index("fold")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4f}".format):
        _log(f"[b] held-out calibration, {args.cal_method} maps fitted on the other folds' held-out scores "
             f"(targets: ECE <= 0.03, Brier < sigmoid(f), coverage >= 0.70 at >= 98% correct):")
        _log(table.to_string())
    _log(f"[time] confidence + calibration for the 5 folds {t_conf:.0f} s (maps cross-fitted from the other folds' held-out scores)")


def part_names(df, args, res):
    """Held-out names: ``coref fit`` on half of the shipped names, ``coref predict --confidence`` on the rest."""
    import shutil
    import subprocess
    import tempfile

    from coref.confidence import confidence_figures

    files = sorted(DATA.glob("*.xml"))
    gen = np.random.default_rng(args.names_seed)
    pick = set(gen.choice(len(files), size=len(files) // 2, replace=False).tolist())
    tmp = Path(tempfile.mkdtemp(prefix="bench_conf_names_"))
    try:
        for k, f in enumerate(files):
            d = tmp / ("train" if k in pick else "test")
            d.mkdir(exist_ok=True)
            shutil.copy(f, d / f.name)
        env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "coref", "fit", "--data", str(tmp / "train"), "--model",
                        str(tmp / "model"), "--calibration-folds", str(args.calibration_folds)],
                       check=True, env=env, cwd=str(tmp), stdout=subprocess.DEVNULL)
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "coref", "predict", "--data", str(tmp / "test"), "--model",
                        str(tmp / "model"), "--out", str(tmp / "out"), "--confidence", "--quiet"],
                       check=True, env=env, cwd=str(tmp), stdout=subprocess.DEVNULL)
        t2 = time.perf_counter()
        conf = pd.read_csv(tmp / "out" / "confidence.csv", dtype={"mention_id": str, "cluster_id": str})
        pairs = pd.read_csv(tmp / "out" / "pairs.csv", dtype={"mention_a": str, "mention_b": str})
        ment = pd.read_parquet(tmp / "out" / "mentions.parquet")
        gold = ment.set_index(ment["mention_id"].astype(str))["gold"]
        fig = confidence_figures(conf, pairs, gold)
        fig.pop("reliability", None)
        fig.update({"n_train_names": len(pick), "n_test_names": len(files) - len(pick), "fit_s": t1 - t0,
                    "predict_confidence_s": t2 - t1})
        res["names"] = fig
        _log(f"[names] fit on {len(pick)} names ({t1 - t0:.0f} s), predict --confidence on the other "
             f"{len(files) - len(pick)} ({t2 - t1:.0f} s): {fig['n_mentions']} mentions, accuracy "
             f"{fig['accuracy']:.4f}; confidence >= 0.95 raw: coverage {fig['coverage']:.4f} correct "
             f"{fig['correct']:.4f}; calibrated: coverage {fig['coverage_calibrated']:.4f} correct "
             f"{fig['correct_calibrated']:.4f}; pairs.csv rows ({fig['n_pairs']}, p >= 0.01 or within a cluster): "
             f"ECE {fig['ece']:.4f} / calibrated {fig['ece_calibrated']:.4f}, Brier {fig['brier']:.4f} / "
             f"{fig['brier_calibrated']:.4f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def part_time(df, args, res):
    """Wall time that ``--confidence`` adds to ``coref predict`` on the shipped data (shipped model), side by side."""
    import tempfile

    from coref.jobs.predict import predict as coref_predict

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for flag in (False, True):
            t0 = time.perf_counter()
            coref_predict(str(DATA), out=Path(tmp) / f"o{int(flag)}", confidence=flag, progress=False)
            out["with" if flag else "without"] = time.perf_counter() - t0
    out["added_s"] = out["with"] - out["without"]
    res["time"] = out
    _log(f"[time] coref predict on the shipped data: {out['without']:.1f} s, with --confidence "
         f"{out['with']:.1f} s (adds {out['added_s']:.1f} s)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=("table", "a", "widths", "b", "names", "time", "all"), default="table",
                    help="table (default): b, names, time and the a3 widths at --budgets; a: a1-a3; all: everything")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--n-brute", type=int, default=30)
    ap.add_argument("--n-coverage", type=int, default=200)
    ap.add_argument("--coverage-budget", type=float, default=0.2)
    ap.add_argument("--n-width", type=int, default=10)
    ap.add_argument("--budgets", type=str, default="10", help="DIS seconds per Z for a3, comma-separated")
    ap.add_argument("--n-encoding", type=int, default=2)
    ap.add_argument("--sampler", choices=("racing", "exact"), default="racing",
                    help="Gibbs MAP of the held-out folds (coref run scores racing's clusters)")
    ap.add_argument("--names-seed", type=int, default=13, help="seed of the names part's half split (default 13)")
    ap.add_argument("--calibration-folds", type=int, default=5,
                    help="coref fit --calibration-folds for the names part (0: in-sample maps)")
    ap.add_argument("--cal-method", choices=("isotonic", "temperature", "none"), default="isotonic")
    ap.add_argument("--out", type=str, default=None)
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"shipped data not found at {DATA}; nothing to measure")
        return 0
    warnings.simplefilter("ignore")
    df = load_mentions(str(DATA))
    res = {"args": vars(args)}
    t0 = time.perf_counter()
    if args.part in ("a", "all"):
        part_a(df, args, res)
    if args.part in ("b", "table", "all"):
        part_bc(df, args, res)
    if args.part in ("names", "table", "all"):
        part_names(df, args, res)
    if args.part in ("time", "table", "all"):
        part_time(df, args, res)
    if args.part in ("table", "widths"):
        part_a(df, args, res, only_widths=True)
    res["seconds"] = time.perf_counter() - t0
    _log(f"total {res['seconds']:.0f} s")
    if args.out:
        from sampling.utils.atomic import atomic_write_text

        atomic_write_text(args.out, json.dumps(res, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
