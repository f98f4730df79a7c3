"""The Python API's confidence on names it never saw: ``AuthorCoref`` fitted on one labeled set, another predicted.

What a user of ``coref.AuthorCoref`` gets: ``fit`` on TRAIN (default: the shipped ``aminer_na``), then
``predict`` and ``confidence`` on TEST (default: ``aminer_dblp_dev``, shipped or in ``../shared``), once with the
parameters given by ``--before`` (default: the defaults before 2026-12-04, no big-block weights and no
calibration) and once with the current defaults. Each run writes ``clusters.csv`` (gold passed through) and
``confidence.csv`` to ``OUT/<label>/``, the layout ``../shared/checks/confidence.py`` scores::

    python -P benchmarks/scripts/coref_api_trust.py --out /tmp/api_trust
    python ../shared/checks/confidence.py /tmp/api_trust/before --f1 0.90 --queue 0.50 --ece 0.03 --cov 0.70 --acc 0.98
    python ../shared/checks/confidence.py /tmp/api_trust/after  --f1 0.90 --queue 0.50 --ece 0.03 --cov 0.70 --acc 0.98

Measured 2026-12-04 (fit on aminer_na, the 3,176 dev mentions): before ECE 0.082, lowest-10% holds 0.08 of 239
wrong, coverage 0.957 at 0.924 correct (fit 7.2 s); after ECE 0.017, 0.59, 0.743 at 0.980 (fit 47.3 s); B3 F1 0.902.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import coref

ROOT = Path(__file__).resolve().parents[2]


def default_test():
    """aminer_dblp_dev: shipped in data/, else from ../shared."""
    shipped = ROOT / "data" / "aminer_dblp_dev"
    return shipped if shipped.exists() else ROOT.parent / "shared" / "data" / "coref" / "aminer_dblp_dev"


def run(train, test, params, out):
    """Fit with ``params``, predict and score ``test``; write clusters.csv and confidence.csv to ``out``."""
    t = time.perf_counter()
    est = coref.AuthorCoref(rng=0, **params).fit(train)
    fit_s = time.perf_counter() - t
    features = test.drop(columns="gold")
    clusters = est.predict(features)
    confidence, _ = est.confidence(features, clusters)
    out.mkdir(parents=True, exist_ok=True)
    clusters.merge(test[["mention_id", "gold"]], on="mention_id").to_csv(out / "clusters.csv", index=False)
    confidence.to_csv(out / "confidence.csv", index=False)
    return fit_s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default=None, help="labeled mentions to fit on (default: shipped aminer_na)")
    ap.add_argument("--test", default=None, help="labeled mentions to predict (default: aminer_dblp_dev)")
    ap.add_argument("--before", default='{"big_blocks": null, "calibration": "none"}',
                    help="JSON of the AuthorCoref parameters of the 'before' run")
    ap.add_argument("--out", required=True, help="output folder (before/ and after/ inside)")
    a = ap.parse_args(argv)
    train = coref.load_mentions(a.train or coref.datasets.data_path("aminer_na"))
    test = coref.load_mentions(a.test or default_test())
    for label, params in (("before", json.loads(a.before)), ("after", {})):
        fit_s = run(train, test, params, Path(a.out) / label)
        print(f"{label}: {params or 'defaults'}: fit {fit_s:.1f} s -> {Path(a.out) / label}", flush=True)


if __name__ == "__main__":
    main()
