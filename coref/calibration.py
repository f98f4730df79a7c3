"""Calibration maps of coreference probabilities: what a model carries to calibrate its confidences.

* :class:`CalibrationMap`: a monotone map of probabilities, one temperature T
  (p -> sigmoid(logit(p) / T)) or an isotonic map (knots, linear interpolation),
  fitted on training folds only by :func:`fit_calibration` and applied to held-out
  probabilities.
* :class:`LogisticMap`: a logistic regression of correctness on named features (the
  mention calibration model on names never seen: the features of
  :func:`coref.confidence.features.mention_features`), coefficients and standardisation
  stored as JSON numbers, fitted by :func:`fit_logistic`.
* :class:`ConfidenceCalibration`: the pair map, the mention map (and the mention model) saved with a model
  (``model.json`` field ``calibration``, :mod:`coref.model.persist`), validated field by
  field when read back.

Fitting them for a model on labeled mentions (clustering and scoring them first) is
:func:`coref.confidence.fit_confidence_calibration`.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np

__all__ = ["CalibrationMap", "ConfidenceCalibration", "fit_calibration", "LogisticMap", "fit_logistic",
           "CALIBRATION_VERSIONS", "VERSION2_FEATURES"]

_EPS = 1e-12
#: versions of the ``calibration`` field this code reads: 1 (two maps), 2 (and a mention model on
#: :data:`VERSION2_FEATURES`), 3 (a mention model on any named features, e.g. the cluster-structure ones)
CALIBRATION_VERSIONS = (1, 2, 3)
#: the features a version-2 mention model may read (those of the confidence frame alone,
#: :data:`coref.confidence.features.MENTION_FEATURES`)
VERSION2_FEATURES = ("logit_p", "logit_p_direct", "logit_p_competing", "margin", "log_block_size",
                     "log_cluster_size", "cluster_share", "log_n_clusters", "singleton", "big_share", "p",
                     "p_direct", "logit_acceptance", "log_block_size_sq", "log_cluster_size_sq",
                     "direct_x_cluster", "block_x_share")


@dataclasses.dataclass(frozen=True)
class CalibrationMap:
    """A monotone map of probabilities fitted on training folds.

    Attributes
    ----------
    method : {"temperature", "isotonic", "identity"}
    temperature : float
        T of p -> sigmoid(logit(p) / T) (``"temperature"``).
    x, y : tuple of float
        Knots of the isotonic map (linear interpolation, clipped at the ends).
    """

    method: str
    temperature: float = 1.0
    x: tuple = ()
    y: tuple = ()

    def apply(self, p):
        """Map probabilities (array_like in [0, 1]) to calibrated probabilities."""
        p = np.clip(np.asarray(p, float), 0.0, 1.0)
        if self.method == "identity":
            return p
        if self.method == "temperature":
            z = np.log(np.clip(p, _EPS, 1 - _EPS)) - np.log(np.clip(1 - p, _EPS, 1 - _EPS))
            out = 1.0 / (1.0 + np.exp(-z / self.temperature))
            return np.where(p <= 0.0, 0.0, np.where(p >= 1.0, 1.0, out))
        return np.interp(p, np.asarray(self.x), np.asarray(self.y))

    def to_dict(self):
        """JSON-able dict of the map."""
        return {"method": self.method, "temperature": float(self.temperature),
                "x": [float(v) for v in self.x], "y": [float(v) for v in self.y]}

    def to_json(self):
        """JSON text of the map (no code is ever read back)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d, *, where="calibration map"):
        """Validate a dict written by :meth:`to_dict`, field by field.

        Raises
        ------
        ValueError
            Naming ``where`` and the field: an unknown method, a temperature that is
            not a finite number > 0, knots that are not equal-length lists of finite
            numbers, x not non-decreasing in [0, 1], y not non-decreasing in [0, 1], an
            isotonic map without knots, or an unknown key.
        """
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a JSON object; got {type(d).__name__}")
        extra = set(d) - {"method", "temperature", "x", "y"}
        if extra:
            raise ValueError(f"{where}: unknown field(s) {sorted(extra)}")
        if d.get("method") not in ("temperature", "isotonic", "identity"):
            raise ValueError(f"{where}: 'method' must be temperature, isotonic or identity; got {d.get('method')!r}")
        t = d.get("temperature", 1.0)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t > 0):
            raise ValueError(f"{where}: 'temperature' must be a finite number > 0; got {t!r}")
        x, y = d.get("x", []), d.get("y", [])
        if not (isinstance(x, list) and isinstance(y, list) and len(x) == len(y)
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                        for v in x + y)):
            raise ValueError(f"{where}: 'x' and 'y' must be lists of finite numbers of equal length")
        xa, ya = np.asarray(x, float), np.asarray(y, float)
        if xa.size and (np.any(np.diff(xa) < 0) or xa.min() < 0 or xa.max() > 1):
            raise ValueError(f"{where}: 'x' must be non-decreasing in [0, 1]")
        if ya.size and (np.any(np.diff(ya) < -1e-12) or ya.min() < 0 or ya.max() > 1):
            raise ValueError(f"{where}: 'y' must be non-decreasing in [0, 1] (a monotone map)")
        if d["method"] == "isotonic" and xa.size == 0:
            raise ValueError(f"{where}: an isotonic map needs at least one knot")
        return cls(d["method"], float(t), tuple(float(v) for v in x), tuple(float(v) for v in y))

    @classmethod
    def from_json(cls, text):
        """Read a map written by :meth:`to_json` (validated by :meth:`from_dict`).

        Raises
        ------
        ValueError
            If the text is not JSON, or a field is missing or of the wrong kind.
        """
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"calibration map JSON: not valid JSON ({exc})") from None
        return cls.from_dict(d, where="calibration map JSON")


@dataclasses.dataclass(frozen=True)
class LogisticMap:
    """P(correct | features) = sigmoid(intercept + sum_k coef_k (x_k - mean_k) / scale_k).

    Attributes
    ----------
    features : tuple of str
        Names of the input columns, in order.
    mean, scale, coef : tuple of float
        Standardisation and coefficients, one per feature (scale > 0).
    intercept : float
    """

    features: tuple
    mean: tuple
    scale: tuple
    coef: tuple
    intercept: float

    def apply(self, X):
        """Probabilities for a DataFrame ``X`` holding the columns :attr:`features` (extra ones ignored).

        Raises
        ------
        ValueError
            If a feature column is missing, naming it.
        """
        miss = [f for f in self.features if f not in X.columns]
        if miss:
            raise ValueError(f"the mention calibration model needs the feature(s) {miss}")
        Z = (np.asarray(X[list(self.features)], float) - np.asarray(self.mean)) / np.asarray(self.scale)
        z = self.intercept + Z @ np.asarray(self.coef)
        return 0.5 * (1.0 + np.tanh(0.5 * z))       # sigmoid, overflow-free

    def to_dict(self):
        """JSON-able dict of the model."""
        return {"features": list(self.features), "mean": [float(v) for v in self.mean],
                "scale": [float(v) for v in self.scale], "coef": [float(v) for v in self.coef],
                "intercept": float(self.intercept)}

    @classmethod
    def from_dict(cls, d, *, where="mention model"):
        """Validate a dict written by :meth:`to_dict`, field by field.

        Raises
        ------
        ValueError
            Naming ``where`` and the field: not an object, an unknown or missing field,
            feature names that are not distinct strings, lists of another length than
            the features or with non-finite numbers, a scale <= 0, a non-finite intercept.
        """
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a JSON object; got {type(d).__name__}")
        keys = {"features", "mean", "scale", "coef", "intercept"}
        if set(d) != keys:
            raise ValueError(f"{where}: fields must be {sorted(keys)}; got {sorted(d)}")
        f = d["features"]
        if not (isinstance(f, list) and f and all(isinstance(v, str) for v in f) and len(set(f)) == len(f)):
            raise ValueError(f"{where}: 'features' must be a non-empty list of distinct names")
        for k in ("mean", "scale", "coef"):
            v = d[k]
            if not (isinstance(v, list) and len(v) == len(f) and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
                raise ValueError(f"{where}: '{k}' must be a list of {len(f)} finite numbers")
        if any(x <= 0 for x in d["scale"]):
            raise ValueError(f"{where}: 'scale' must be > 0")
        b = d["intercept"]
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b):
            raise ValueError(f"{where}: 'intercept' must be a finite number; got {b!r}")
        return cls(tuple(f), *(tuple(float(x) for x in d[k]) for k in ("mean", "scale", "coef")), float(b))


def fit_logistic(X, y, *, C=1.0):
    """Fit a :class:`LogisticMap` (``sklearn.linear_model.LogisticRegression``, L2, on standardised columns).

    Parameters
    ----------
    X : pandas.DataFrame of shape (n, k)
        Features (held-out / cross-fitted predictions only).
    y : array_like of shape (n,)
        0/1 outcomes (the assignment was right).
    C : float, default 1
        Inverse L2 strength.

    Returns
    -------
    LogisticMap

    Raises
    ------
    ValueError
        If ``X`` is empty, has non-finite values, or ``y`` has one class only.
    """
    from sklearn.linear_model import LogisticRegression

    A = np.asarray(X, float)
    y = np.asarray(y, float).ravel()
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[0] != y.size:
        raise ValueError(f"X and y must be non-empty with one row per outcome; got {A.shape} and {y.shape}")
    if not np.isfinite(A).all():
        raise ValueError("X has non-finite values")
    if np.unique(y).size < 2:
        raise ValueError("y has one class only: nothing to fit a mention model on")
    mean = A.mean(axis=0)
    scale = A.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    lr = LogisticRegression(C=float(C), max_iter=2000).fit((A - mean) / scale, y.astype(int))
    return LogisticMap(tuple(str(c) for c in X.columns), tuple(mean.tolist()), tuple(scale.tolist()),
                       tuple(float(v) for v in lr.coef_[0]), float(lr.intercept_[0]))


@dataclasses.dataclass(frozen=True)
class ConfidenceCalibration:
    """The calibration maps saved with a model (``model.json`` field ``calibration``).

    Attributes
    ----------
    pair : CalibrationMap
        Applied to pair probabilities P(y_a = y_b | x) (``pairs.csv`` column
        ``p_calibrated``).
    mention : CalibrationMap
        Applied to mention confidences (``confidence.csv`` columns ``p_calibrated``,
        and the interval ends ``p_lower`` / ``p_upper`` are NOT mapped).
    info : dict
        JSON scalars describing the fit (method, number of pairs and mentions, source).
    """

    pair: CalibrationMap
    mention: CalibrationMap
    info: dict = dataclasses.field(default_factory=dict)
    mention_model: LogisticMap | None = None

    def to_dict(self):
        """JSON-able dict: ``{"version": 1, "pair": {...}, "mention": {...}, "info": {...}}``, and with a
        mention model ``"mention_model": {...}`` and ``"version"`` 2 (it reads only the features of
        :data:`VERSION2_FEATURES`) or 3 (it reads others, e.g. the cluster-structure features of
        :mod:`coref.confidence.structure`, which code reading version 2 cannot compute)."""
        d = {"version": 1, "pair": self.pair.to_dict(), "mention": self.mention.to_dict(), "info": dict(self.info)}
        if self.mention_model is not None:
            d["version"] = 2 if set(self.mention_model.features) <= set(VERSION2_FEATURES) else 3
            d["mention_model"] = self.mention_model.to_dict()
        return d

    @classmethod
    def from_dict(cls, d, *, where="calibration"):
        """Validate field by field (see :meth:`CalibrationMap.from_dict`).

        Raises
        ------
        ValueError
            Naming ``where`` and the field.
        """
        if not isinstance(d, dict):
            raise ValueError(f"{where}: expected a JSON object; got {type(d).__name__}")
        if d.get("version") not in CALIBRATION_VERSIONS or isinstance(d.get("version"), bool):
            raise ValueError(f"{where}: 'version' must be one of {CALIBRATION_VERSIONS}; got {d.get('version')!r}")
        extra = set(d) - {"version", "pair", "mention", "info"} - ({"mention_model"} if d["version"] >= 2 else set())
        if extra:
            raise ValueError(f"{where}: unknown field(s) {sorted(extra)}")
        info = d.get("info", {})
        if not isinstance(info, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool))) for k, v in info.items()):
            raise ValueError(f"{where}: 'info' must map names to JSON scalars")
        if d["version"] >= 2 and "mention_model" not in d:
            raise ValueError(f"{where}: version {d['version']} needs a 'mention_model'")
        mm = LogisticMap.from_dict(d["mention_model"], where=f"{where}.mention_model") if d["version"] >= 2 else None
        if d["version"] == 2 and not set(mm.features) <= set(VERSION2_FEATURES):
            raise ValueError(f"{where}: a version 2 mention model reads only {list(VERSION2_FEATURES)}; got "
                             f"{sorted(set(mm.features) - set(VERSION2_FEATURES))}")
        return cls(CalibrationMap.from_dict(d.get("pair"), where=f"{where}.pair"),
                   CalibrationMap.from_dict(d.get("mention"), where=f"{where}.mention"), dict(info), mm)


def fit_calibration(p, y, *, method="temperature"):
    """Fit a :class:`CalibrationMap` on training-fold probabilities and outcomes.

    Parameters
    ----------
    p : array_like of shape (n,)
        Model probabilities in [0, 1] (training folds only).
    y : array_like of shape (n,)
        0/1 outcomes.
    method : {"temperature", "isotonic"}, default "temperature"
        One temperature minimising the log loss (``scipy.optimize.minimize_scalar``
        over ln T in [-4, 4]), or ``sklearn.isotonic.IsotonicRegression``.

    Returns
    -------
    CalibrationMap

    Raises
    ------
    ValueError
        For an unknown method, mismatched lengths or no data.
    """
    p = np.clip(np.asarray(p, float).ravel(), 0.0, 1.0)
    y = np.asarray(y, float).ravel()
    if p.shape != y.shape or p.size == 0:
        raise ValueError(f"p and y must be non-empty and of equal length; got {p.shape} and {y.shape}")
    if method == "temperature":
        from scipy.optimize import minimize_scalar

        z = np.log(np.clip(p, 1e-9, 1 - 1e-9)) - np.log(np.clip(1 - p, 1e-9, 1 - 1e-9))

        def loss(logt):
            q = np.clip(1.0 / (1.0 + np.exp(-z / np.exp(logt))), 1e-12, 1 - 1e-12)
            return -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))

        res = minimize_scalar(loss, bounds=(-4.0, 4.0), method="bounded")
        return CalibrationMap("temperature", float(np.exp(res.x)))
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p, y)
        return CalibrationMap("isotonic", 1.0, tuple(float(v) for v in iso.X_thresholds_),
                              tuple(float(v) for v in iso.y_thresholds_))
    raise ValueError(f"the method parameter must be 'temperature' or 'isotonic'; got {method!r}")
