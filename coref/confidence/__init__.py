"""Confidence of coreference assignments: posterior marginals, certified intervals, calibration.

For a predicted clustering of a block, the confidence of mention i is the posterior
probability that it belongs with its predicted cluster (definition and guarantees:
:mod:`coref.confidence.assignment`).  The package, bottom up:

* :mod:`~coref.confidence.submodels`: a set S of mentions, the rest of the block fixed,
  as numbers (:class:`SubProblem`) and as a graphical model (:func:`submodel`).
* :mod:`~coref.confidence.exact`: its partition function summed exactly (subset DP).
* :mod:`~coref.confidence.events`: P(A | y_R) of an event, exact or bounded by DIS.
* :mod:`~coref.confidence.marginals`: pair marginals at temperature 1 by Gibbs.
* :mod:`~coref.confidence.scores`: ECE, Brier, reliability, the calibrated scores.
* :mod:`~coref.confidence.assignment`: :func:`assignment_confidence`, the driver.
* :mod:`~coref.confidence.moves`: split-merge moves of the temperature-1 chain.
* :mod:`~coref.confidence.consensus`: the Binder-loss point estimate / repair of the MAP.
* :mod:`~coref.confidence.features`: what predicts a wrong assignment (calibration inputs).
* :mod:`~coref.confidence.certify`: the DIS certification pass within a time budget.
* :mod:`~coref.confidence.fit`: calibration maps fitted on labeled mentions.
* :mod:`~coref.confidence.review`: the curator's review queue (``review.csv``).
* :mod:`~coref.confidence.figures`: held-out figures and the report section.

The calibration maps themselves (:class:`CalibrationMap`, :class:`ConfidenceCalibration`,
:func:`fit_calibration`) live in :mod:`coref.calibration`, below the model that saves them.
"""
from coref.calibration import CalibrationMap, ConfidenceCalibration, fit_calibration
from coref.confidence.assignment import (CONFIDENCE_COLUMNS, DEFAULT_MAX_SUBMODEL, DEFAULT_N_BURN, DEFAULT_N_SAMPLES,
                                         PAIR_COLUMNS, apply_calibration, assignment_confidence, with_calibration)
from coref.confidence.events import EventProbability, event_probability
from coref.confidence.exact import DEFAULT_MAX_EXACT, MAX_EXACT_SUBSET, exact_log_z, log_block_probabilities
from coref.confidence.figures import confidence_figures, write_confidence_report
from coref.confidence.fit import (calibration_from_scores, fit_confidence_calibration, map_clusters,
                                  scored_training_mentions)
from coref.confidence.consensus import binder_loss, binder_point_estimate
from coref.confidence.features import MENTION_FEATURES, SIZE_INTERACTIONS, STRUCTURE_FEATURES, mention_features
from coref.confidence.structure import cluster_structure
from coref.confidence.marginals import competing_clusters, gibbs_marginals, marginal_sweep_py
from coref.confidence.moves import split_merge_moves
from coref.confidence.review import REVIEW_COLUMNS, review_table
from coref.confidence.scores import (acceptance_score, brier_score, calibration_scores, ece_score, mention_correct,
                                     pair_labels, pair_score, reliability_table)
from coref.confidence.submodels import SubProblem, build_graphical_model, check_constraints, submodel, subproblem

__all__ = ["submodel", "assignment_confidence", "event_probability", "EventProbability", "apply_calibration",
           "calibration_scores", "fit_calibration", "CalibrationMap", "write_confidence_report",
           "ConfidenceCalibration", "fit_confidence_calibration", "calibration_from_scores", "with_calibration",
           "confidence_figures", "gibbs_marginals", "acceptance_score", "pair_score",
           "CONFIDENCE_COLUMNS", "PAIR_COLUMNS", "DEFAULT_MAX_SUBMODEL", "DEFAULT_MAX_EXACT",
           "DEFAULT_N_SAMPLES", "DEFAULT_N_BURN", "SubProblem", "subproblem", "check_constraints",
           "build_graphical_model", "exact_log_z", "log_block_probabilities", "MAX_EXACT_SUBSET", "marginal_sweep_py",
           "map_clusters", "ece_score", "brier_score", "reliability_table", "mention_correct", "pair_labels",
           "binder_loss", "binder_point_estimate", "MENTION_FEATURES", "mention_features", "competing_clusters",
           "split_merge_moves", "REVIEW_COLUMNS", "review_table", "STRUCTURE_FEATURES", "SIZE_INTERACTIONS", "cluster_structure",
           "scored_training_mentions"]
