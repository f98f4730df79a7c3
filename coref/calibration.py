"""Calibration maps of coreference probabilities: what a model carries to calibrate its confidences.

* :class:`CalibrationMap`: a monotone map of probabilities, one temperature T
  (p -> sigmoid(logit(p) / T)) or an isotonic map (knots, linear interpolation),
  fitted on training folds only by :func:`fit_calibration` and applied to held-out
  probabilities.
* :class:`ConfidenceCalibration`: the pair map and the mention map saved with a model
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

__all__ = ["CalibrationMap", "ConfidenceCalibration", "fit_calibration"]

_EPS = 1e-12


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

    def to_dict(self):
        """JSON-able dict: ``{"version": 1, "pair": {...}, "mention": {...}, "info": {...}}``."""
        return {"version": 1, "pair": self.pair.to_dict(), "mention": self.mention.to_dict(), "info": dict(self.info)}

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
        if d.get("version") != 1:
            raise ValueError(f"{where}: 'version' must be 1; got {d.get('version')!r}")
        extra = set(d) - {"version", "pair", "mention", "info"}
        if extra:
            raise ValueError(f"{where}: unknown field(s) {sorted(extra)}")
        info = d.get("info", {})
        if not isinstance(info, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool))) for k, v in info.items()):
            raise ValueError(f"{where}: 'info' must map names to JSON scalars")
        return cls(CalibrationMap.from_dict(d.get("pair"), where=f"{where}.pair"),
                   CalibrationMap.from_dict(d.get("mention"), where=f"{where}.mention"), dict(info))


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
