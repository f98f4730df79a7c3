"""Would the factor trust topical agreement less in bigger blocks if it could? A harness over block-size interactions.

Issue 27 (names never seen): in the dev name ``Wei_Wang`` (299 mentions) two authors of one field,
18 and 27 mentions in disjoint coauthor groups of the same years, are merged because every
cross pair scores about +5 nats, mostly from the terms that compare the two coauthor groups as
wholes (``comp_title_cos`` +4.1, ``comp_topic_cos`` +2.3, ``comp_venue_cos`` +1.7 per pair,
against a block bias of -8.1). "How common a name is changes how much a match means" suggests
weights that fall with block size. This harness tests that on the folds of a ``coref_grouped_cv.py``
run: each variant appends the products ``phi_k * s(n)`` of a set of features with
s(n) = log(min(n, BLOCK_SIZE_SATURATION)) - log(30) (n: block size) to the pair features, fits a
plain logistic theta on the training folds (as ``coref_damping_grid.py`` does: no shift tuning,
block prior or calibration), clusters each held-out block with annealed exact Gibbs from its
factor matrix and reports B3 F1 over all held-out mentions, the dev names, the blocks of >= 100
mentions and those of the dev names. Variants: ``none``; ``comp`` (the group-profile terms and
``mention_comp_title``); ``topical`` (those and the mention-level title, venue, topic, abstract,
keyword and affiliation terms); ``all`` (every base feature but ``log_n``)::

    python benchmarks/scripts/coref_grouped_cv.py --code . --label now --protocols cv
    python -P benchmarks/scripts/coref_size_interactions.py /tmp/coref_grouped_cv_now

Measured 2026-12-04 (seed-0 folds of both sets, label ``s12base``; B3 F1 all / dev names /
blocks >= 100 / dev blocks >= 100 / blocks < 100): none 0.8841 / 0.8974 / 0.8687 / 0.8801 / 0.8949;
comp 0.8818 / 0.8942 / 0.8637 / 0.8655 / 0.8945; topical 0.8820 / 0.8941 / 0.8643 / 0.8674 /
0.8943; all 0.8844 / 0.8948 / 0.8601 / 0.8609 / 0.9014. The interactions learned on the labeled
blocks (at most ~300 mentions) do not carry to held-out names: every variant scores the big blocks
lower. The regularisation of theta does not move it either (``coref_damping_grid.py --K 20``:
C = 0.02 0.8849 / 0.8929, C = 0.1 0.8841 / 0.8974, C = 1.0 0.8833 / 0.8979 over all / dev names).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coref_damping_grid as grid  # noqa: E402  (the folds' pairs, fit, Gibbs and B3 of that harness)

from coref.factors.names import BASE_FEATURES, BLOCK_SIZE_SATURATION, COMPONENT_DAMPING, FEATURE_NAMES  # noqa: E402

_COMP = ["comp_title_cos", "comp_venue_cos", "comp_topic_cos", "comp_affil_cos", "comp_year_gap", "mention_comp_title"]
VARIANTS = {
    "none": [],
    "comp": _COMP,
    "topical": _COMP + ["title_cos", "venue_cos", "topic_cos", "venue_eq", "abstract_cos", "keyword_cos",
                        "affil_cos", "affil_eq"],
    "all": [name for name, _, _ in BASE_FEATURES if name != "log_n"],
}


def size_term(n):
    """s(n) = log(min(n, BLOCK_SIZE_SATURATION)) - log(30): 0 for a block of 30 mentions."""
    return np.log(min(int(n), BLOCK_SIZE_SATURATION)) - np.log(30.0)


def with_interactions(X, n, cols):
    """``X`` with the columns ``cols`` times s(n) appended (``X`` itself when ``cols`` is empty)."""
    return np.hstack([X, X[:, cols] * size_term(n)]) if cols else X


def run_fold(fold, C):
    """Held-out labels of every variant on one fold: {variant: [DataFrame(block, label, gold)]}."""
    model, test, pairs = grid.fold_pairs(fold)
    y = np.concatenate([p[3] for p in pairs])
    base = [grid.features(enc, I, J, COMPONENT_DAMPING) for enc, I, J, _ in pairs]
    fits = {}
    for name, feats in VARIANTS.items():
        cols = [FEATURE_NAMES.index(f) for f in feats]
        X = np.vstack([with_interactions(X, p[0].n, cols) for X, p in zip(base, pairs)])
        fits[name] = (grid.fit_theta(X, y, C), cols)

    def scores(name, enc, I, J):
        (theta, b), cols = fits[name]
        return with_interactions(grid.features(enc, I, J, COMPONENT_DAMPING), enc.n, cols) @ theta + b

    return grid.cluster_heldout(model, test, list(VARIANTS), scores)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", help="a coref_grouped_cv.py work folder with cv_<k>/ folds")
    ap.add_argument("--C", type=float, default=0.1, help="inverse L2 strength of the logistic fit")
    ap.add_argument("--out", default=None, help="JSON file for the results")
    a = ap.parse_args(argv)
    folds = sorted(Path(a.work).glob("cv_*"))
    if not folds:
        ap.error(f"no cv_<k> folds in {a.work}")
    rows = {name: [] for name in VARIANTS}
    for fold in folds:
        for name, frames in run_fold(fold, a.C).items():
            rows[name].extend(frames)
        print(f"{fold.name} done", flush=True)
    result = {}
    for name, frames in rows.items():
        allm = pd.concat(frames, ignore_index=True)
        big = allm.groupby("block")["block"].transform("size") >= 100
        dev = allm["block"].str.startswith("dev:")
        result[name] = {"all": grid.f1(allm), "dev": grid.f1(allm[dev]), "blocks_ge_100": grid.f1(allm[big]),
                        "dev_blocks_ge_100": grid.f1(allm[dev & big]), "blocks_lt_100": grid.f1(allm[~big])}
        print(name + ": " + ", ".join(f"{k} {v:.4f}" for k, v in result[name].items()), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
