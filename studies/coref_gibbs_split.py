"""Where the Gibbs wall time of ``coref run`` goes, per sampler: kernel, block prior, the rest.

Fits the five grouped-fold models as ``coref run`` does, then fits exact and racing Gibbs
on every held-out fold (one ``GibbsCoref.fit`` per fold, all its blocks), timing inside
``GibbsCoref.wall_s_``:

- ``kernel_s``: the compiled sweeps (``coref.gibbs._gibbs.anneal``),
- ``prior_s``: the block prior's rate estimate (``coref.model.block_bias_evals``),
- ``other_s``: the rest of ``wall_s_`` (Python set-up and packing),

with the factors evaluated and the wall ratio exact / racing.  ``--tree DIR`` (repeatable):
run the measurement in a subprocess with ``DIR`` first on ``sys.path`` (a checkout built
in place: ``python setup.py build_ext --inplace``), the trees interleaved ``--repeat``
times, so that two versions are compared side by side on one machine in one run::

    git worktree add /tmp/old REV && (cd /tmp/old && python setup.py build_ext --inplace)
    python -P studies/coref_gibbs_split.py --tree /tmp/old --tree . --repeat 3

Without ``--tree`` it measures whatever ``import coref`` finds (run it with ``python -P``
from outside the checkout to time the installed build).

Measured 2026-11-24 (4834e96 -> e03b974, shared memo tables; 3 interleaved repeats):
``git history: benchmarks/measured/coref_gibbs_split_2026-11-24.txt``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def measure(folds=5, seed=0):
    """One measurement in this process; returns {sampler: {...}}."""
    import pandas as pd

    import coref.gibbs as G
    from coref.gibbs import GibbsCoref
    from coref.inference import single_thread
    from coref.inputs import load_input
    from coref.jobs.folds import assign_folds, fit_fold_model as _fit_fold_model

    df, _ = load_input(None, format=None, strict=False, command="run", need_gold=True)
    fold_of, labeled = assign_folds(df, folds)
    df["_fold"] = df["block"].map(fold_of).astype(int)
    models = {f: _fit_fold_model(df, labeled, f)[0] for f in range(folds)}
    acc = {s: {"kernel_s": 0.0, "prior_s": 0.0, "wall_s": 0.0, "n_factor_evals": 0} for s in ("exact", "racing")}
    cur = [None]
    anneal, bias_evals = G._gibbs.anneal, G.block_bias_evals

    def timed(fn, key):
        def call(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                acc[cur[0]][key] += time.perf_counter() - t
        return call

    G._gibbs.anneal, G.block_bias_evals = timed(anneal, "kernel_s"), timed(bias_evals, "prior_s")
    try:
        with single_thread():
            for f in range(folds):
                sub = df[df["_fold"] == f].drop(columns="_fold").reset_index(drop=True)
                sub = pd.concat([s for _, s in sub.groupby("block", sort=True)], ignore_index=True)
                for sampler in ("exact", "racing"):
                    cur[0] = sampler
                    g = GibbsCoref(models[f], sampler=sampler, rng=seed).fit(sub)
                    acc[sampler]["wall_s"] += g.wall_s_
                    acc[sampler]["n_factor_evals"] += int(g.n_factor_evals_)
    finally:
        G._gibbs.anneal, G.block_bias_evals = anneal, bias_evals
    for a in acc.values():
        a["other_s"] = a["wall_s"] - a["kernel_s"] - a["prior_s"]
    return acc


def _row(name, acc):
    e, r = acc["exact"], acc["racing"]
    return (f"{name:<24} " + "  ".join(f"{s} kernel {a['kernel_s']:.3f} prior {a['prior_s']:.3f} other "
                                        f"{a['other_s']:.3f} wall {a['wall_s']:.3f}"
                                        for s, a in (("exact", e), ("racing", r)))
            + f"  wall ratio {e['wall_s'] / r['wall_s']:.2f}  evals ratio "
              f"{e['n_factor_evals'] / r['n_factor_evals']:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", default=[], help="checkout built in place (repeatable)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.json_child:
        print(json.dumps(measure()))
        return
    if not args.tree:
        for _ in range(args.repeat):
            print(_row("(import coref)", measure()), flush=True)
        return
    for _ in range(args.repeat):
        for tree in args.tree:
            tree = os.path.abspath(tree)
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, "-P", os.path.abspath(__file__), "--json-child"], env=env,
                                 cwd=tree, capture_output=True, text=True, check=True).stdout
            print(_row(os.path.basename(tree) or tree, json.loads(out.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
