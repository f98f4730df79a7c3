"""The folds of ``coref run``: grouped k-fold by block, and the pairwise model of each fold.

The model of fold k is fitted on the labeled blocks of the other folds, so B3 is never
reported on blocks whose labels trained theta. Fitted fold models are checkpointed
(:func:`coref.model.save_model`) under ``OUT/.checkpoint/KEY`` and reused by
``--resume`` when saved for the same settings key and fold.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold
from tqdm import tqdm

from coref.exceptions import ModelFormatError
from coref.inference import single_thread
from coref.model import PairwiseModel, load_model, save_model

__all__ = ["assign_folds", "model_cls", "fit_fold_model", "save_fold_model", "load_fold_model", "fit_models",
           "complete_fold_models"]


def model_cls():
    """The pairwise model class, looked up at call time (tests substitute a stand-in)."""
    return PairwiseModel


def assign_folds(df, folds):
    """Fold of each block: grouped k-fold over labeled blocks, round-robin for the rest.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with columns ``block`` and ``gold``.
    folds : int
        Number of folds, at least 2 and at most the number of labeled blocks.

    Returns
    -------
    fold_of : dict
        Block -> fold index in ``range(folds)``.
    labeled : set
        Blocks with at least one gold label (the ones that are scored and train theta).

    Raises
    ------
    ValueError
        If there are fewer labeled blocks than folds.

    Notes
    -----
    Labeled blocks are split with :class:`sklearn.model_selection.GroupKFold`
    (deterministic, balanced by number of mentions). Blocks without any gold label
    cannot train theta and cannot be scored; they are spread over the folds in sorted
    order so that they are still inferred.
    """
    has_gold = df["gold"].notna().groupby(df["block"], sort=True).any()
    labeled_blocks = has_gold.index[has_gold.to_numpy()]
    unlabeled_blocks = has_gold.index[~has_gold.to_numpy()]
    if len(labeled_blocks) < folds:
        raise ValueError(
            f"folds={folds} needs at least {folds} blocks with gold labels; the data has "
            f"{len(labeled_blocks)} (grouped k-fold by block: theta is never trained on the blocks it scores)"
        )
    lab = df[df["block"].isin(set(labeled_blocks))]
    fold_of = {}
    for k, (_, test_idx) in enumerate(GroupKFold(n_splits=folds).split(np.zeros(len(lab)), groups=lab["block"].to_numpy())):
        for b in pd.unique(lab["block"].to_numpy()[test_idx]):
            fold_of[b] = k
    for i, b in enumerate(sorted(unlabeled_blocks)):
        fold_of[b] = i % folds
    return fold_of, set(labeled_blocks)


def fit_fold_model(df, labeled, fold, model_kw=None):
    """Fit theta on the labeled blocks outside ``fold``.

    Parameters
    ----------
    df : pandas.DataFrame
        Mentions with ``gold`` and their fold in ``_fold``.
    labeled : collection
        Blocks with gold labels.
    fold : int
        The held-out fold.
    model_kw : dict or None
        Keyword arguments of the model class (``None``: its defaults).

    Returns
    -------
    model : coref.model.PairwiseModel
        Fitted.
    seconds : float
        Wall time of the fit.

    Notes
    -----
    Runs with one BLAS / OpenMP thread: the solver's floating-point sums then do not
    depend on how many threads the process (driver or Dask worker) would use, so
    theta -- and every cluster downstream -- is the same on every executor.
    """
    t0 = time.perf_counter()
    train = df[(df["_fold"] != fold) & df["block"].isin(labeled)].drop(columns="_fold").reset_index(drop=True)
    with single_thread():
        model = model_cls()(**(model_kw or {})).fit(train)
    return model, time.perf_counter() - t0


def save_fold_model(store, fold, model, fit_s):
    """Checkpoint the model of ``fold`` (with its fit seconds) in ``store``; stand-ins are not saved."""
    if isinstance(model, PairwiseModel):  # stand-ins in tests are not saved
        save_model(model, store.model_dir(fold), extra={"settings_key": store.key, "fold": int(fold),
                                                         "fit_s": float(fit_s)})


def load_fold_model(store, fold):
    """The checkpointed model of ``fold``, if it was saved for these settings.

    Returns
    -------
    model : coref.model.PairwiseModel or None
    fit_s : float or None
        Seconds its fit took. Both None when there is no checkpoint or it is refused
        (unreadable, or saved for other settings or another fold; the reason is
        appended to ``store.refused``).
    """
    d = store.model_dir(fold)
    if not d.exists():
        return None, None
    try:
        model, extra = load_model(d)
    except (ModelFormatError, OSError) as exc:
        store.refused.append(f"{d}: {exc}")
        return None, None
    if extra.get("settings_key") != store.key or extra.get("fold") != int(fold):
        store.refused.append(f"{d}: saved for settings {extra.get('settings_key')!r} fold {extra.get('fold')!r}")
        return None, None
    return model, float(extra.get("fit_s", 0.0))


def fit_models(df, labeled, need_folds, store, *, resume, client, progress, model_kw=None):
    """A fitted model for every fold of ``need_folds``, each checkpointed in ``store``.

    Parameters
    ----------
    df, labeled, model_kw
        As for :func:`fit_fold_model`.
    need_folds : list of int
    store : coref.outputs.CheckpointStore
    resume : bool
        Take the models checkpointed by an earlier run (:func:`load_fold_model`) first.
    client : distributed.Client or None
        Fit on Dask workers (same theta: one thread each), else here.
    progress : bool
        Progress bar on stderr.

    Returns
    -------
    models : dict
        Fold -> model.
    fit_s : dict
        Fold -> seconds of its fit.
    """
    models, fit_s = {}, {}
    todo = []
    for f in need_folds:
        m, secs = load_fold_model(store, f) if resume else (None, None)
        if m is None:
            todo.append(f)
        else:
            models[f], fit_s[f] = m, secs
    with tqdm(total=len(todo), desc="fit theta", unit="fold", disable=not progress or not todo,
              file=sys.stderr, leave=False) as bar:
        if client is None:
            for f in todo:
                models[f], fit_s[f] = fit_fold_model(df, labeled, f, model_kw)
                save_fold_model(store, f, models[f], fit_s[f])
                bar.update(1)
        elif todo:
            from distributed import as_completed

            df_future = client.scatter(df, hash=False)
            futures = {client.submit(fit_fold_model, df_future, labeled, f, model_kw, pure=False): f for f in todo}
            try:
                for fut in as_completed(list(futures)):
                    f = futures[fut]
                    models[f], fit_s[f] = fut.result()
                    save_fold_model(store, f, models[f], fit_s[f])
                    bar.update(1)
            except BaseException:
                client.cancel(list(futures))
                raise
    return models, fit_s


def complete_fold_models(df, labeled, models, store, folds, model_kw=None):
    """``models`` with a model for every fold (from checkpoints, else fitted), for the confidence step.

    Folds whose blocks were all taken from checkpoints have no model yet. Stand-in
    model classes without ``factor_matrix`` are left as they are (no confidence).
    """
    for f in range(folds):
        if f not in models and hasattr(model_cls(), "factor_matrix"):
            m_f = load_fold_model(store, f)[0]
            models[f] = m_f if m_f is not None else fit_fold_model(df, labeled, f, model_kw)[0]
    return models
