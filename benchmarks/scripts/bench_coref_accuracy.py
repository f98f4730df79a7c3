"""Coreference accuracy on every shipped labeled set, grouped k-fold by block, one table.

Runs ``coref.run`` (fit theta on the other folds' blocks, annealed Gibbs on the held-out
blocks, B3 pooled over the held-out folds) on:

===================  ==========================================  =====  =====================
 set                 path                                        folds  notes
===================  ==========================================  =====  =====================
 aminer              data/aminer_na (shipped with the package)     5    108 names
 s2and_qian          ../shared/data/coref/s2and_qian               5    606 blocks, no papers
 han_dblp            ../shared/data/coref/han_dblp_lbd             4    4 groups = 4 blocks
 crossref            ../shared/data/coref/crossref_orcid_gold      5    1,324 labeled mentions
===================  ==========================================  =====  =====================

and prints one table per (set, sampler): B3 precision / recall / F1, pooled over all
scored mentions; ``F1 wb``, the within-block B3 F1 (each gold author cut at block
boundaries, S2AND's protocol; it differs where an author spans blocks, as 24 do in S2AND
Qian); pairwise F1; factor evaluations; and wall time (the whole ``coref.run``, in
seconds). Sets whose data is absent
are listed as skipped.

    python benchmarks/scripts/bench_coref_accuracy.py [--sets aminer,s2and_qian] [--sampler racing|exact|both]
                                              [--csv git history: benchmarks/measured/coref_accuracy.csv]
                                              [--params '{"objective": "pseudolik"}'] [--gibbs '{"merge_moves": 10}']

``--params`` / ``--gibbs`` substitute the PairwiseModel / GibbsCoref parameters of every
fold (the same stand-in hooks the tests use), to compare variants on every set at once.

Run it from the repository root (the in-place build is what is measured).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the shared data sits beside the repository (main checkout) or beside its worktree folder
SHARED = next((p for p in (ROOT / ".." / "shared", ROOT / ".." / ".." / "shared") if p.is_dir()),
              ROOT / ".." / "shared") / "data" / "coref"

SETS = {
    "aminer": (ROOT / "data" / "aminer_na", "aminer", 5),
    "s2and_qian": (SHARED / "s2and_qian", "s2and", 5),
    "han_dblp": (SHARED / "han_dblp_lbd", "han", 4),
    "crossref": (SHARED / "crossref_orcid_gold" / "mentions.jsonl", "crossref", 5),
}
COLUMNS = ("set", "sampler", "folds", "n_scored", "b3_p", "b3_r", "b3_f1", "b3_f1_wb", "pair_f1", "factor_evals",
           "time_s")


def use_model_params(params):
    """Make ``coref.run`` fit ``PairwiseModel(**params)`` per fold (``{}``: the defaults)."""
    import functools

    import coref.jobs.folds
    from coref.model import PairwiseModel

    coref.jobs.folds.model_cls = lambda: functools.partial(PairwiseModel, **params)


def use_gibbs_params(params):
    """Make ``coref.run`` sample with ``GibbsCoref(..., **params)`` (``{}``: the defaults)."""
    import functools

    import coref.inference
    from coref.gibbs import GibbsCoref

    coref.inference._gibbs_cls = lambda: functools.partial(GibbsCoref, **params)


def run_set(name, sampler, seed=0):
    """Rows (dicts) of one set: one per sampler, or ``None`` if the data is absent."""
    from coref.jobs.run import run

    path, fmt, folds = SETS[name]
    if not path.exists():
        return None
    with tempfile.TemporaryDirectory(prefix=f"bench_acc_{name}_") as out:
        t0 = time.perf_counter()
        res = run(str(path), format=fmt, sampler=sampler, folds=folds, out=out, seed=seed,
                  progress=False, plots=False)
        elapsed = time.perf_counter() - t0
    rows = []
    for s in res.metrics["settings"]["samplers"]:
        m = res.metrics[s]
        rows.append({"set": name, "sampler": s, "folds": folds,
                     "n_scored": res.metrics["data"]["n_scored_mentions"],
                     "b3_p": m["b3_precision"], "b3_r": m["b3_recall"], "b3_f1": m["b3_f1"],
                     "b3_f1_wb": m["b3_within_block_f1"],
                     "pair_f1": m["pairwise_f1"], "factor_evals": m["n_factor_evals"], "time_s": elapsed})
    return rows


def format_table(rows):
    head = (f"{'set':<11} {'sampler':<7} {'folds':>5} {'scored':>7} {'B3 P':>7} {'B3 R':>7} "
            f"{'B3 F1':>7} {'F1 wb':>7} {'pair F1':>7} {'factor evals':>13} {'time s':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['set']:<11} {r['sampler']:<7} {r['folds']:>5} {r['n_scored']:>7} {r['b3_p']:>7.4f} "
                     f"{r['b3_r']:>7.4f} {r['b3_f1']:>7.4f} {r['b3_f1_wb']:>7.4f} {r['pair_f1']:>7.4f} "
                     f"{r['factor_evals']:>13,} "
                     f"{r['time_s']:>7.1f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated subset of {','.join(SETS)}")
    ap.add_argument("--sampler", default="racing", choices=("racing", "exact", "both"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default=None, help="also write the table as CSV (atomically)")
    ap.add_argument("--params", default="{}", metavar="JSON",
                    help='PairwiseModel parameters for every fold, e.g. \'{"objective": "logistic"}\' '
                         "(default {}: the shipped defaults)")
    ap.add_argument("--gibbs", default="{}", metavar="JSON",
                    help='extra GibbsCoref parameters, e.g. \'{"merge_moves": 10}\' (default {})')
    args = ap.parse_args(argv)
    import json

    given = {}
    for opt in ("params", "gibbs"):
        try:
            given[opt] = json.loads(getattr(args, opt))
        except json.JSONDecodeError as exc:
            ap.error(f"--{opt} is not valid JSON ({exc})")
        if not isinstance(given[opt], dict):
            ap.error(f"--{opt} must be a JSON object; got {getattr(args, opt)!r}")
    use_model_params(given["params"])
    use_gibbs_params(given["gibbs"])
    for opt, what in (("params", "PairwiseModel"), ("gibbs", "GibbsCoref")):
        if given[opt]:
            print(f"{what} parameters: {json.dumps(given[opt], sort_keys=True)}")
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in names if s not in SETS]
    if unknown:
        ap.error(f"unknown set(s) {unknown}; choose from {list(SETS)}")
    rows, skipped = [], []
    for name in names:
        r = run_set(name, args.sampler, args.seed)
        if r is None:
            skipped.append(f"{name} ({SETS[name][0]} absent)")
        else:
            rows.extend(r)
            print(format_table(r).splitlines()[-1], file=sys.stderr, flush=True)
    print(format_table(rows))
    ratio = {r["set"]: r["factor_evals"] for r in rows if r["sampler"] == "exact"}
    for r in rows:
        if r["sampler"] == "racing" and r["set"] in ratio and r["factor_evals"]:
            print(f"{r['set']}: exact / racing factor evaluations = {ratio[r['set']] / r['factor_evals']:.2f}")
    if skipped:
        print("skipped: " + "; ".join(skipped))
    if args.csv:
        import pandas as pd

        from sampling.utils.atomic import atomic_path

        with atomic_path(args.csv) as tmp:
            pd.DataFrame(rows, columns=COLUMNS).to_csv(tmp, index=False)


if __name__ == "__main__":
    main()
