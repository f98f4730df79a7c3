"""``coref fit``: train the pairwise model once on labeled mentions and save it.

Fits :class:`coref.estimator.AuthorCoref` (theta by logistic regression on labeled
within-block pairs, and the tuned intercept shift) on every labeled block of ``--data``
and writes the model directory of :func:`coref.model.save_model` (JSON + npz +
manifest with SHA-256 checksums; the schema is in :mod:`coref.model`).

The shipped default model is regenerated with::

    python -m coref fit --data data/aminer_na --model coref/models/default
"""
from __future__ import annotations

import sys
import time

__all__ = ["fit", "add_arguments", "main"]


def fit(data, *, model, format=None, strict=False, rng=0, C=0.1, bias_shift="auto", sampler="racing",
        delta=0.05, n_sweeps=None, calibration="isotonic", block_prior="pcc", calibration_folds=5):
    """Fit on ``data`` and save to the directory ``model``.

    Parameters
    ----------
    data : None, str, os.PathLike or pandas.DataFrame
        Labeled mentions (``None``: the shipped AMiner set).
    model : str or os.PathLike
        Model directory to write.
    format, strict
        Loader options.
    rng, C, bias_shift, sampler, delta, n_sweeps, block_prior
        :class:`coref.estimator.AuthorCoref` parameters (saved with the model).
    calibration : {"isotonic", "temperature", "none"}, default "isotonic"
        Fit the confidence calibration maps (pair probabilities and mention
        confidences, :func:`coref.confidence.fit_confidence_calibration`) on the
        training mentions, clustered and scored by the fitted model, and save them
        with it (``model.json`` field ``calibration``); ``coref predict --confidence``
        applies them (``p_calibrated`` columns). ``"none"``: no maps.
    calibration_folds : int, default 5
        The maps are fitted on cross-fitted scores: the labeled blocks are split into
        this many groups, each clustered and scored by a model fitted (with the same
        parameters) on the others (:func:`coref.confidence.fit_confidence_calibration`).
        Capped at the number of labeled blocks; below 2 (or 0): the final model scores
        its own training mentions (in-sample, over-confident).

    Returns
    -------
    dict
        ``path``, ``n_mentions``, ``n_blocks``, ``n_labeled``, ``n_pairs``, ``shift``, ``fit_s``,
        ``calibration`` (the maps' ``info``, or None) and ``calibration_s``.

    Raises
    ------
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError
        For bad data (e.g. no block with two labeled mentions) or parameters.
    """
    from coref.estimator import AuthorCoref
    from coref.inputs import load_input
    from coref.model import save_model
    from coref.outputs import mentions_checksum
    from coref.settings import make_settings

    make_settings("fit", format=format, strict=strict)
    if calibration not in ("isotonic", "temperature", "none"):
        raise ValueError(f"the calibration parameter must be 'isotonic', 'temperature' or 'none'; got {calibration!r}")
    t0 = time.perf_counter()
    df, desc = load_input(data, format=format, strict=strict, command="fit", need_gold=True)
    est = AuthorCoref(rng=rng, C=C, bias_shift=bias_shift, sampler=sampler, delta=delta, n_sweeps=n_sweeps,
                      block_prior=block_prior).fit(df)
    fit_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    cal_info = None
    if calibration != "none":
        from coref.confidence import fit_confidence_calibration

        if not (isinstance(calibration_folds, int) and not isinstance(calibration_folds, bool)
                and calibration_folds >= 0):
            raise ValueError(f"calibration_folds must be an integer >= 0; got {calibration_folds!r}")
        lab = df[df["gold"].notna()].reset_index(drop=True)
        folds = min(int(calibration_folds), int(lab["block"].nunique()))
        folds = folds if folds >= 2 else 0

        import sklearn.base

        def refit(train):            # the same estimator parameters, on the other groups only
            return sklearn.base.clone(est).fit(train).model_

        est.model_.calibration_ = fit_confidence_calibration(est.model_, lab, method=calibration, rng=int(est.seed_),
                                                             folds=folds, refit=refit if folds else None)
        cal_info = est.model_.calibration_.info
    cal_s = time.perf_counter() - t1
    training = {"path": desc["path"], "format": desc["format"], "n_mentions": int(len(df)),
                "n_blocks": int(df["block"].nunique()), "n_labeled": int(df["gold"].notna().sum()),
                "n_skipped": desc.get("n_skipped", 0), "mentions_sha256": mentions_checksum(df)}
    path = save_model(est.model_, model, extra={"estimator": "AuthorCoref", "params": est.get_params(),
                                                "seed": est.seed_, "training": training})
    return {"model": str(path), "training": training, **{k: training[k] for k in ("n_mentions", "n_blocks", "n_labeled")},
            "n_pairs": est.model_.n_pairs_, "shift": est.model_.shift_,
            "fit_s": fit_s, "calibration": cal_info, "calibration_s": cal_s}


def add_arguments(parser):
    """Options of ``coref fit``."""
    from coref.io import FORMATS
    from coref.settings import ALL_SAMPLERS

    parser.add_argument("--data", metavar="LABELED", default=None,
                        help="labeled mention file or directory (default: the shipped AMiner set)")
    parser.add_argument("--format", choices=FORMATS, default=None, help="input format (default: detected)")
    parser.add_argument("--model", metavar="DIR", required=True, help="model directory to write")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--C", type=float, default=0.1, help="inverse L2 strength of the regression (default 0.1)")
    parser.add_argument("--sampler", choices=ALL_SAMPLERS, default="racing", help="Gibbs sampler saved with the model")
    parser.add_argument("--delta", type=float, default=0.05, help="racing error level saved with the model")
    parser.add_argument("--sweeps", dest="n_sweeps", type=int, default=None, metavar="N",
                        help="Gibbs sweeps saved with the model")
    parser.add_argument("--calibration", choices=("isotonic", "temperature", "none"), default="isotonic",
                        help="confidence calibration maps fitted on the training mentions and saved with the "
                             "model, applied by `coref predict --confidence` (default isotonic)")
    parser.add_argument("--calibration-folds", dest="calibration_folds", type=int, default=5, metavar="K",
                        help="fit the calibration maps on scores cross-fitted over K groups of blocks (default 5; "
                             "0: the final model scores its own training mentions)")
    parser.add_argument("--block-prior", dest="block_prior", choices=("pcc", "none"), default="pcc",
                        help="per-block prior odds of coreference, estimated from the block's own pair "
                             "probabilities (pcc, default) or the pooled training intercept for every block (none)")
    parser.add_argument("--strict", action="store_true", help="fail on the first bad record or file")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def main(args):
    """Entry point of ``coref fit``; returns the exit status."""
    from coref.predict import ERRORS, report_error

    try:
        r = fit(args.data, model=args.model, format=args.format, strict=args.strict, rng=args.seed, C=args.C,
                sampler=args.sampler, delta=args.delta, n_sweeps=args.n_sweeps,
                calibration=getattr(args, "calibration", "isotonic"),
                block_prior=getattr(args, "block_prior", "pcc"),
                calibration_folds=getattr(args, "calibration_folds", 5))
    except ERRORS as exc:
        return report_error("fit", args, exc)
    print(f"fitted theta on {r['n_pairs']:,} labeled pairs from {r['n_labeled']} labeled mentions in "
          f"{r['n_blocks']} blocks (intercept shift {r['shift']:+.2f}) in {r['fit_s']:.1f} s", file=sys.stdout)
    if r["calibration"] is not None:
        c = r["calibration"]
        how = "cross-fitted scores" if "cross-fitted" in str(c.get("source", "")) else "in-sample scores"
        print(f"calibration ({c['method']}) fitted on {c['n_pairs']:,} pairs and {c['n_mentions']} mentions of the "
              f"training data ({how}) in {r['calibration_s']:.1f} s")
    print(f"model: {r['model']}/ (model.json, theta.npz, manifest.json)")
    return 0
