"""Saving and loading a fitted :class:`coref.model.pairwise.PairwiseModel`.

Saved model format (:func:`save_model` / :func:`load_model`), a directory of three
files, none of them executable::

    model.json     {"format": "coref-pairwise-model", "version": 2, "coref_version": str,
                    "feature_names": [str, ...]        # the phi layout theta was fitted on
                    "params": {C, max_pairs_per_block, class_weight, bias_shift, shift_grid,
                               shift_tol, tune_sweeps, tune_max_blocks, rng,
                               objective, pl_C, pl_max_anchors, pl_alone, pl_pair_C,
                               pl_merge_C,    # the last six optional (absent: a logistic
                                              # theta, "logistic", 1.0, 400, false, 0, 0)
                               block_prior, block_prior_cap, block_prior_pairs,
                                              # optional (absent: "none", a model saved
                                              # before block priors)
                               name_priors,   # optional (absent: false)
                               big_blocks, big_block_min_n},  # optional (absent: null, 1000)
                    "intercept": float, "shift": float, "bias": float, "n_pairs": int,
                    "pair_rate": float,               # r_train in (0, 1); with block_prior "pcc"
                    "shift_scores": {str(shift): float},
                    "vocabulary": {"n_docs": int, "tables": {"title"|"venue"|"affiliation": {word: int}},
                                   "input_fields": [str]},  # optional: the fields the training
                                              # mentions held; others are blanked at encoding
                                              # (absent: a model saved before, every field used)
                    "feature_varied": [bool],  # optional: per feature, varied on the training
                                              # pairs (false: theta 0); absent in older models
                    "prior_weights": {str: float},  # optional: name-conflict features that did
                                              # not vary and their prior weight (theta there;
                                              # params.name_priors, coref.model.name_priors)
                    "big_blocks": {"min_n": int, "intercept": float, "shift": float, "bias": float,
                                   "pair_rate": float, "n_pairs": int, "feature_varied": [bool],
                                   "source": {...}},  # optional: the weights of blocks of >= min_n
                                              # mentions (coref.model.big_blocks), theta in the
                                              # npz as "big_theta"; absent: theta everywhere
                    "shift_tree": {...},               # optional (``coref fit``): the block prior's learned
                                              # correction, coref.model.shift_tree.ShiftTree.to_dict
                    "extra": {...},                    # e.g. AuthorCoref settings, training data summary
                    "calibration": {...}}              # optional (``coref fit``): the confidence
                                                       # calibration maps, see below
    theta.npz      float64 array "theta" of shape (len(feature_names),) (and "big_theta", the same
                   shape, with "big_blocks"), and the long numeric
                   lists of the vocabulary state (e.g. LSA components) as arrays "state_<k>",
                   referenced from model.json as {"$npz": "state_<k>"}
    manifest.json  {"format": "coref-model-manifest", "version": 2,
                    "files": {"model.json": sha256, "theta.npz": sha256}}

The optional ``calibration`` field (written when ``model.calibration_`` is set, e.g.
by ``coref fit``) is :meth:`coref.calibration.ConfidenceCalibration.to_dict`:
``{"version": 1, "pair": MAP, "mention": MAP, "info": {str: scalar}}`` with MAP =
``{"method": "isotonic"|"temperature"|"identity", "temperature": float > 0,
"x": [float], "y": [float]}`` (isotonic knots, non-decreasing in [0, 1]); version 2 adds
``"mention_model": {"features": [str], "mean": [float], "scale": [float], "coef": [float],
"intercept": float}`` (a logistic mention model on the features of the confidence frame,
``coref.calibration.VERSION2_FEATURES``), version 3 the same on any named features (those
with the cluster-structure features of ``coref.confidence.structure``, written by ``coref fit``
since calibration version 3); versions 1-3 load.  It is
validated field by field on load (a model without it loads with
``calibration_ = None``: the format version is unchanged).

:func:`load_model` checks the manifest's format and version, the SHA-256 of every file,
the model version, that ``feature_names`` equals this code's
``coref.factors.names.FEATURE_NAMES``, the shape and finiteness of theta and every field's
type, and raises :class:`ModelFormatError` naming the file otherwise. The npz is read
with ``allow_pickle=False``.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import zipfile
from pathlib import Path

import numpy as np

from coref import __version__
from coref.calibration import ConfidenceCalibration
from coref.exceptions import ModelFormatError
from coref.factors.names import FEATURE_NAMES
from coref.encoding.vocabulary import Vocabulary
from coref.model.big_blocks import BIG_BLOCK_MIN_N, BigBlockWeights, check_big_blocks
from coref.model.shift_tree import ShiftTree
from coref.model.name_priors import check_prior_weights
from coref.model.pairwise import PairwiseModel
from sampling.utils.atomic import atomic_path, atomic_write_text

__all__ = ["save_model", "load_model", "MODEL_FORMAT", "MODEL_VERSION"]

MODEL_FORMAT = "coref-pairwise-model"
#: 2: the component terms of the factor are damped (``coref.factors.names.COMPONENT_DAMPING``);
#: a version-1 theta was fitted on undamped ones, so it is refused with a request to refit.
MODEL_VERSION = 2
_MANIFEST_FORMAT = "coref-model-manifest"
_FILES = ("model.json", "theta.npz")


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _params_state(model):
    rng = model.rng
    if rng is not None and not (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        rng = None  # a Generator is not data; the fitted state does not depend on it any more
    shift = model.bias_shift
    return {"C": float(model.C), "max_pairs_per_block": int(model.max_pairs_per_block),
            "class_weight": model.class_weight,
            "bias_shift": shift if shift == "auto" else float(shift),
            "shift_grid": [float(x) for x in model.shift_grid], "shift_tol": float(model.shift_tol),
            "tune_sweeps": int(model.tune_sweeps), "tune_max_blocks": int(model.tune_max_blocks),
            "rng": None if rng is None else int(rng), "objective": str(model.objective),
            "pl_C": float(model.pl_C), "pl_max_anchors": int(model.pl_max_anchors),
            "pl_alone": bool(model.pl_alone), "pl_pair_C": float(model.pl_pair_C),
            "pl_merge_C": float(model.pl_merge_C), "block_prior": str(model.block_prior),
            "block_prior_cap": float(model.block_prior_cap), "block_prior_pairs": int(model.block_prior_pairs),
            "name_priors": bool(getattr(model, "name_priors", False)),
            # a DataFrame of big blocks is data, not a parameter: its weights are in "big_blocks"
            "big_blocks": model.big_blocks if isinstance(getattr(model, "big_blocks", None), str) else None,
            "big_block_min_n": int(getattr(model, "big_block_min_n", BIG_BLOCK_MIN_N))}


def save_model(model, path, *, extra=None):
    """Save a fitted :class:`PairwiseModel` to the directory ``path`` (JSON + npz + manifest).

    Parameters
    ----------
    model : PairwiseModel
        Fitted.
    path : str or os.PathLike
        Directory (created). Existing model files in it are replaced atomically, the
        manifest last.
    extra : dict or None
        JSON-able metadata stored under ``"extra"`` (read back by :func:`load_model`).

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    RuntimeError
        If the model is not fitted.
    """
    model.check_fitted()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays = {"theta": np.asarray(model.theta_, dtype=np.float64)}
    vocab = _externalize(model.vocabulary_.to_state(), arrays)
    doc = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "coref_version": __version__,
           "feature_names": list(model.feature_names_), "params": _params_state(model),
           "intercept": float(model.intercept_), "shift": float(model.shift_), "bias": float(model.bias_),
           "n_pairs": int(model.n_pairs_), "pair_rate": float(getattr(model, "pair_rate_", 0.5)),
           "shift_scores": {repr(float(k)): float(v) for k, v in model.shift_scores_.items()},
           "vocabulary": vocab, "extra": extra or {}}
    varied = getattr(model, "feature_varied_", None)
    if varied is not None:
        doc["feature_varied"] = [bool(v) for v in varied]
        doc["prior_weights"] = {k: float(v) for k, v in (getattr(model, "prior_weights_", None) or {}).items()}
    big = getattr(model, "big_", None)
    if big is not None:
        arrays["big_theta"] = np.asarray(big.theta, dtype=np.float64)
        doc["big_blocks"] = {"min_n": int(big.min_n), "intercept": float(big.intercept), "shift": float(big.shift),
                             "bias": float(big.bias), "pair_rate": float(big.pair_rate), "n_pairs": int(big.n_pairs),
                             "feature_varied": [bool(v) for v in big.feature_varied], "source": big.source}
    cal = getattr(model, "calibration_", None)
    if cal is not None:
        doc["calibration"] = cal.to_dict()
    tree = getattr(model, "shift_tree_", None)
    if tree is not None:
        doc["shift_tree"] = tree.to_dict()
    (path / "manifest.json").unlink(missing_ok=True)  # an interrupted save is not a model
    atomic_write_text(path / "model.json", json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n")
    with atomic_path(path / "theta.npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    manifest = {"format": _MANIFEST_FORMAT, "version": MODEL_VERSION,
                "files": {name: _sha256(path / name) for name in _FILES}}
    atomic_write_text(path / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return path


_PL_PARAMS = ("objective", "pl_C", "pl_max_anchors", "pl_alone", "pl_pair_C", "pl_merge_C")
_BP_PARAMS = ("block_prior", "block_prior_cap", "block_prior_pairs")

_BIG = 256  # numeric lists longer than this go to the npz, referenced as {"$npz": name}


def _externalize(obj, arrays):
    """Copy of a JSON-able state with long numeric lists moved into ``arrays`` (npz)."""
    if isinstance(obj, dict):
        return {k: _externalize(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list) and len(obj) > _BIG:
        try:
            a = np.asarray(obj, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if a is not None and a.ndim in (1, 2):
            name = f"state_{len(arrays)}"
            arrays[name] = a
            return {"$npz": name}
    if isinstance(obj, list):
        return [_externalize(v, arrays) for v in obj]
    return obj


def _internalize(obj, arrays, used, file):
    """Inverse of :func:`_externalize`; ``used`` collects the array names referenced."""
    if isinstance(obj, dict):
        if set(obj) == {"$npz"}:
            name = obj["$npz"]
            if not isinstance(name, str) or name not in arrays or name == "theta" or name in used:
                raise ModelFormatError(f"bad array reference {name!r}", path=file)
            used.add(name)
            a = arrays[name]
            if a.dtype != np.float64 or a.ndim not in (1, 2) or not np.all(np.isfinite(a)):
                raise ModelFormatError(f"array {name!r} must be finite float64 of 1 or 2 dimensions", path=file)
            return a.tolist()
        return {k: _internalize(v, arrays, used, file) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_internalize(v, arrays, used, file) for v in obj]
    return obj


def _field(doc, key, kind, file):
    v = doc.get(key) if isinstance(doc, dict) else None
    ok = {"float": isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
          "int": isinstance(v, int) and not isinstance(v, bool) and v >= 0,
          "dict": isinstance(v, dict), "list": isinstance(v, list), "str": isinstance(v, str)}[kind]
    if not ok:
        raise ModelFormatError(f"field {key!r} must be a {kind}; got {v!r:.60}", path=file)
    return v


def _feature_mismatch(saved, current):
    k = next((i for i, (a, b) in enumerate(zip(saved, current)) if a != b), min(len(saved), len(current)))
    a = saved[k] if k < len(saved) else "<end>"
    b = current[k] if k < len(current) else "<end>"
    return (f"the model was fitted on {len(saved)} features, this code computes {len(current)} "
            f"(first difference at feature {k}: {a!r} in the model, {b!r} here)")


def _read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"not valid JSON ({exc})", path=path) from None


def _refit_hint(version):
    """What to do with a model of an older version (empty for other values)."""
    if version == 1:
        return (" (a version-1 model was fitted before the component terms of the factor were damped; "
                "refit it with `coref fit --data LABELED --model DIR`)")
    return ""


def _check_manifest(path):
    """The manifest's format, version and file list, and the SHA-256 of every file it lists."""
    mpath = path / "manifest.json"
    if not mpath.is_file():
        raise ModelFormatError("no manifest.json: not a coref model directory (or an interrupted save)",
                               path=mpath)
    manifest = _read_json(mpath)
    if not isinstance(manifest, dict) or manifest.get("format") != _MANIFEST_FORMAT:
        raise ModelFormatError("not a coref model manifest", path=mpath)
    if manifest.get("version") != MODEL_VERSION:
        raise ModelFormatError(f"model format version {manifest.get('version')!r}; this coref reads "
                               f"version {MODEL_VERSION}" + _refit_hint(manifest.get("version")), path=mpath)
    files = manifest.get("files")
    if not isinstance(files, dict) or sorted(files) != sorted(_FILES):
        raise ModelFormatError(f"the manifest must list exactly {list(_FILES)}", path=mpath)
    for name in _FILES:
        f = path / name
        if not f.is_file():
            raise ModelFormatError("listed in manifest.json but missing", path=f)
        if _sha256(f) != files[name]:
            raise ModelFormatError("SHA-256 does not match manifest.json: the file was modified "
                                   "(tampered or corrupted); refusing to load it", path=f)


def _read_doc(jpath, path):
    """model.json: its format, version and feature layout (that of this code)."""
    doc = _read_json(jpath)
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise ModelFormatError(f"format {doc.get('format') if isinstance(doc, dict) else None!r}, "
                               f"expected {MODEL_FORMAT!r}", path=jpath)
    if doc.get("version") != MODEL_VERSION:
        raise ModelFormatError(f"model version {doc.get('version')!r}; this coref reads version {MODEL_VERSION}"
                               + _refit_hint(doc.get("version")), path=jpath)
    names = _field(doc, "feature_names", "list", jpath)
    if names != list(FEATURE_NAMES):
        raise ModelFormatError(
            _feature_mismatch(names, list(FEATURE_NAMES)) + "; refit it with `coref fit --data LABELED "
            f"--model {path}` (the shipped default: see coref.datasets.DEFAULT_MODEL)", path=jpath)
    return doc


def _read_arrays(npz):
    """The arrays of theta.npz (no pickles), theta finite float64 of this code's feature count."""
    try:
        with np.load(npz, allow_pickle=False) as z:
            if "theta" not in z.files:
                raise ModelFormatError(f"no array 'theta'; got {sorted(z.files)}", path=npz)
            arrays = {k: np.array(z[k]) for k in z.files}
            theta = arrays["theta"]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, ModelFormatError):
            raise
        raise ModelFormatError(f"unreadable npz ({exc})", path=npz) from None
    _check_theta(theta, "theta", npz)
    return arrays


def _check_theta(theta, name, npz):
    """Raise ModelFormatError unless ``theta`` is a finite float64 array of this code's feature count."""
    if theta.dtype != np.float64 or theta.shape != (len(FEATURE_NAMES),) or not np.all(np.isfinite(theta)):
        raise ModelFormatError(f"{name} must be finite float64 of shape ({len(FEATURE_NAMES)},); got "
                               f"{theta.dtype} {theta.shape}", path=npz)


def _model_from_params(p, jpath):
    """An unfitted PairwiseModel with the saved parameters, each checked (KeyError / TypeError /
    ValueError for a missing or unusable one: the caller names the file)."""
    model = PairwiseModel(**{k: p[k] for k in ("C", "max_pairs_per_block", "class_weight", "bias_shift",
                                                "shift_grid", "shift_tol", "tune_sweeps", "tune_max_blocks",
                                                "rng")},
                          # absent in models saved before the pseudo-likelihood fit (logistic theta)
                          **{"objective": "logistic", **{k: p[k] for k in _PL_PARAMS if k in p}},
                          # absent in models saved before block priors: none
                          **{"block_prior": "none", **{k: p[k] for k in _BP_PARAMS if k in p}},
                          # absent in models saved before the name-conflict priors: none
                          name_priors=p.get("name_priors", False),
                          # absent in models saved before the big-block weights
                          big_blocks=p.get("big_blocks"), big_block_min_n=p.get("big_block_min_n", BIG_BLOCK_MIN_N))
    check_big_blocks(model.big_blocks, model.big_block_min_n, lambda msg: ModelFormatError("params." + msg, path=jpath))
    if not isinstance(model.name_priors, bool):
        raise TypeError(f"params.name_priors must be true or false; got {model.name_priors!r}")
    model.check_block_prior(lambda msg: ModelFormatError("params." + msg, path=jpath))
    if model.objective not in ("logistic", "pseudolik"):
        raise ModelFormatError(f"params.objective must be 'logistic' or 'pseudolik'; got {model.objective!r}",
                               path=jpath)
    if not (isinstance(model.pl_C, (int, float)) and not isinstance(model.pl_C, bool)
            and math.isfinite(model.pl_C) and model.pl_C > 0):
        raise ModelFormatError(f"params.pl_C must be a finite number > 0; got {model.pl_C!r}", path=jpath)
    if not (isinstance(model.pl_max_anchors, int) and not isinstance(model.pl_max_anchors, bool)
            and model.pl_max_anchors >= 1):
        raise ModelFormatError(f"params.pl_max_anchors must be an integer >= 1; got {model.pl_max_anchors!r}",
                               path=jpath)
    if not isinstance(model.pl_alone, bool):
        raise ModelFormatError(f"params.pl_alone must be a boolean; got {model.pl_alone!r}", path=jpath)
    for k in ("pl_pair_C", "pl_merge_C"):
        v = getattr(model, k)
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
            raise ModelFormatError(f"params.{k} must be a finite number >= 0; got {v!r}", path=jpath)
    return model


def load_model(path):
    """Load a model saved by :func:`save_model`, verifying it first.

    Parameters
    ----------
    path : str or os.PathLike
        Model directory.

    Returns
    -------
    model : PairwiseModel
        Fitted, ready for ``encode`` / ``pairwise_factor`` / ``GibbsCoref``.
    extra : dict
        The ``extra`` metadata saved with it.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a directory.
    coref.exceptions.ModelFormatError
        Naming the file: no manifest or model file (not a coref model), a checksum
        mismatch (tampered or corrupted), another format or version, a feature layout
        other than this code's (retrain with ``coref fit``), or a malformed field.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model directory not found: {path}")
    _check_manifest(path)
    jpath = path / "model.json"
    doc = _read_doc(jpath, path)
    arrays = _read_arrays(path / "theta.npz")
    p = _field(doc, "params", "dict", jpath)
    try:
        model = _model_from_params(p, jpath)
        used = set()
        vocab_state = _internalize(_field(doc, "vocabulary", "dict", jpath), arrays, used, jpath)
        own = {"theta"} | ({"big_theta"} if "big_blocks" in doc else set())
        if used != set(arrays) - own:
            raise ModelFormatError(f"arrays not referenced by model.json: {sorted(set(arrays) - used - own)}",
                                   path=path / "theta.npz")
        vocab = Vocabulary.from_state(vocab_state)
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"bad params or vocabulary ({exc})", path=jpath) from None
    model.theta_ = np.ascontiguousarray(arrays["theta"])
    model.intercept_ = float(_field(doc, "intercept", "float", jpath))
    model.shift_ = float(_field(doc, "shift", "float", jpath))
    model.bias_ = float(_field(doc, "bias", "float", jpath))
    if abs(model.bias_ - (model.intercept_ + model.shift_)) > 1e-9 * max(1.0, abs(model.bias_)):
        raise ModelFormatError("bias must equal intercept + shift", path=jpath)
    model.n_pairs_ = int(_field(doc, "n_pairs", "int", jpath))
    model.pair_rate_ = 0.5
    if model.block_prior == "pcc":
        model.pair_rate_ = float(_field(doc, "pair_rate", "float", jpath))
        if not 0.0 < model.pair_rate_ < 1.0:
            raise ModelFormatError(f"field 'pair_rate' must be in (0, 1); got {model.pair_rate_!r}", path=jpath)
    scores = _field(doc, "shift_scores", "dict", jpath)
    try:
        model.shift_scores_ = {float(k): float(v) for k, v in scores.items()}
    except (TypeError, ValueError):
        raise ModelFormatError("shift_scores must map numbers to numbers", path=jpath) from None
    model.vocabulary_ = vocab
    model.feature_names_ = FEATURE_NAMES
    model.pl_info_ = {}
    model.feature_varied_ = None  # absent: saved before the record
    model.prior_weights_ = {}
    if "feature_varied" in doc:
        varied = doc["feature_varied"]
        if not (isinstance(varied, list) and len(varied) == len(FEATURE_NAMES)
                and all(isinstance(v, bool) for v in varied)):
            raise ModelFormatError(f"field 'feature_varied' must be a list of {len(FEATURE_NAMES)} booleans",
                                   path=jpath)
        model.feature_varied_ = np.array(varied, dtype=bool)
        model.prior_weights_ = doc.get("prior_weights", {})     # absent: saved before the name priors
        check_prior_weights(model.prior_weights_, model.theta_, model.feature_varied_,
                            lambda msg: ModelFormatError(msg, path=jpath))
        if model.prior_weights_ and not model.name_priors:
            raise ModelFormatError("field 'prior_weights' is set but params.name_priors is false", path=jpath)
    model.big_ = _big_blocks(doc, arrays, jpath, path / "theta.npz")
    model.shift_tree_ = None     # absent: saved before the tree, or fitted without one
    if "shift_tree" in doc:
        try:
            model.shift_tree_ = ShiftTree.from_dict(doc["shift_tree"], where="field 'shift_tree'")
        except ValueError as exc:
            raise ModelFormatError(str(exc), path=jpath) from None
    model.calibration_ = None
    if "calibration" in doc:
        try:
            model.calibration_ = ConfidenceCalibration.from_dict(doc["calibration"], where="field 'calibration'")
        except ValueError as exc:
            raise ModelFormatError(str(exc), path=jpath) from None
    return model, _field(doc, "extra", "dict", jpath)


def _big_blocks(doc, arrays, jpath, npz):
    """The ``big_blocks`` record of model.json and the npz's ``big_theta``, checked; None when absent."""
    if "big_blocks" not in doc:    # (a big_theta without it is refused as an array model.json does not reference)
        return None
    rec = _field(doc, "big_blocks", "dict", jpath)
    where = "field 'big_blocks'"
    theta = arrays.get("big_theta")
    if theta is None:
        raise ModelFormatError(f"no array 'big_theta' for the {where} of model.json", path=npz)
    _check_theta(theta, "big_theta", npz)
    vals = {}
    for k, kind in (("min_n", int), ("n_pairs", int), ("intercept", float), ("shift", float), ("bias", float),
                    ("pair_rate", float)):
        v = rec.get(k)
        ok = isinstance(v, numbers.Integral) if kind is int else isinstance(v, numbers.Real)
        if not ok or isinstance(v, bool) or not math.isfinite(v):
            raise ModelFormatError(f"{where}.{k} must be a finite {kind.__name__}; got {v!r}", path=jpath)
        vals[k] = kind(v)
    if vals["min_n"] < 2 or vals["n_pairs"] < 0:
        raise ModelFormatError(f"{where}: min_n must be >= 2 and n_pairs >= 0; got {vals['min_n']}, "
                               f"{vals['n_pairs']}", path=jpath)
    if not 0.0 < vals["pair_rate"] < 1.0:
        raise ModelFormatError(f"{where}.pair_rate must be in (0, 1); got {vals['pair_rate']!r}", path=jpath)
    if abs(vals["bias"] - (vals["intercept"] + vals["shift"])) > 1e-9 * max(1.0, abs(vals["bias"])):
        raise ModelFormatError(f"{where}: bias must equal intercept + shift", path=jpath)
    varied = rec.get("feature_varied")
    if not (isinstance(varied, list) and len(varied) == len(FEATURE_NAMES) and all(isinstance(v, bool) for v in varied)):
        raise ModelFormatError(f"{where}.feature_varied must be a list of {len(FEATURE_NAMES)} booleans", path=jpath)
    source = rec.get("source", {})
    if not isinstance(source, dict):
        raise ModelFormatError(f"{where}.source must be an object", path=jpath)
    return BigBlockWeights(theta=np.ascontiguousarray(theta), feature_varied=np.array(varied, dtype=bool),
                           source=source, **vals)
