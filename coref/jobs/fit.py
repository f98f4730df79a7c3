"""``coref fit`` as a function: train the pairwise model once on labeled mentions and save it.

Fits :class:`coref.estimator.AuthorCoref` (theta by logistic regression on labeled
within-block pairs, and the tuned intercept shift) on every labeled block of the data
and writes the model directory of :func:`coref.model.save_model` (JSON + npz +
manifest with SHA-256 checksums; the schema is in :mod:`coref.model`).

The shipped default model is regenerated with::

    python -m coref fit --model coref/models/default      # (no --data: aminer_na + aminer_dblp_dev)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from coref.estimator import AuthorCoref
from coref.inputs import input_paths, load_input
from coref.jobs.result import SummaryAccess
from coref.model import save_model
from coref.outputs import check_out_location, mentions_checksum
from coref.settings import check_calibration, make_settings

__all__ = ["fit", "FitResult"]


@dataclass(frozen=True)
class FitResult(SummaryAccess):
    """What :func:`fit` wrote and learned.

    Attributes
    ----------
    model : str
        The model directory written.
    training : dict
        What the model was trained on (saved with it): path, format, counts, checksum.
    n_mentions, n_blocks, n_labeled : int
        Mentions, blocks and labeled mentions of the training data.
    n_pairs : int
        Labeled pairs theta was fitted on.
    shift : float
        The tuned intercept shift.
    fit_s : float
        Seconds to load and fit.
    calibration : dict or None
        The calibration maps' ``info`` (None without maps).
    calibration_s : float
        Seconds to fit the maps.
    shift_tree : dict or None
        The block prior's learned correction (:meth:`coref.model.shift_tree.ShiftTree.to_dict`), None without one.
    shift_tree_s : float
        Seconds to fit it (its cross-fitted models included).
    """

    model: str
    training: dict
    n_mentions: int
    n_blocks: int
    n_labeled: int
    n_pairs: int
    shift: float
    fit_s: float
    calibration: dict | None
    calibration_s: float
    shift_tree: dict | None = None
    shift_tree_s: float = 0.0

    @property
    def summary(self):
        """Every field as a dict (what ``coref.jobs.fit.fit`` returned)."""
        return asdict(self)


def fit(data, *, model, format=None, strict=False, rng=0, C=0.1, bias_shift="auto", sampler="auto",
        delta=0.05, n_sweeps=None, calibration="isotonic", block_prior="pcc", calibration_folds=5,
        big_blocks="synthetic", shift_tree=True):
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
    big_blocks : {"synthetic", None}, default "synthetic"
        Also fit the weights of blocks of 1,000 mentions and more on simulated labeled big
        blocks (:mod:`coref.model.big_blocks`); None: one theta for every block.
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
    shift_tree : bool, default True
        Also fit the block prior's learned correction on the same cross-fitted groups
        (:mod:`coref.model.shift_tree`; saved as ``shift_tree`` in model.json).

    Returns
    -------
    FitResult
        ``result[key]`` reads its fields as the dict ``coref.jobs.fit.fit`` returned.

    Raises
    ------
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError
        For bad data (e.g. no block with two labeled mentions) or parameters.
    coref.outputs.OutputError
        Before any work, if ``model`` is a file, cannot be written, or is the data
        folder (or inside it). The model directory is written only after the fit.
    """
    make_settings("fit", format=format, strict=strict)
    check_calibration(calibration)
    # where the model goes is checked before the (long) fit: not a file, writable, not the data
    check_out_location(model, [p for p in input_paths(data=data) if p[0] == "--data"], option="--model")
    df, desc = load_input(data, format=format, strict=strict, command="fit", need_gold=True)
    est = AuthorCoref(rng=rng, C=C, bias_shift=bias_shift, sampler=sampler, delta=delta, n_sweeps=n_sweeps,
                      block_prior=block_prior, big_blocks=big_blocks, calibration=calibration,
                      calibration_folds=calibration_folds, shift_tree=shift_tree).fit(df)
    cal = est.model_.calibration_
    cal_info = None if cal is None else cal.info
    training = {"path": desc["path"], "format": desc["format"], "n_mentions": int(len(df)),
                "n_blocks": int(df["block"].nunique()), "n_labeled": int(df["gold"].notna().sum()),
                "n_skipped": desc.get("n_skipped", 0), "mentions_sha256": mentions_checksum(df)}
    path = save_model(est.model_, model, extra={"estimator": "AuthorCoref", "params": est.get_params(),
                                                "seed": est.seed_, "training": training})
    return FitResult(model=str(path), training=training, n_mentions=training["n_mentions"],
                     n_blocks=training["n_blocks"], n_labeled=training["n_labeled"], n_pairs=est.model_.n_pairs_,
                     shift=est.model_.shift_, fit_s=est.fit_times_["fit_s"], calibration=cal_info,
                     calibration_s=est.fit_times_["calibration_s"],
                     shift_tree=None if est.model_.shift_tree_ is None else est.model_.shift_tree_.to_dict(),
                     shift_tree_s=est.fit_times_["shift_tree_s"])
