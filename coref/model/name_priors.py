"""Prior weights of the name-conflict features that labeled data keyed by full names cannot teach.

A training set whose blocks are full names (AMiner: every mention of a block prints
"Jing Guo") never shows two full first names, or two middle initials, that differ inside
one block, so ``name_first_conflict`` and ``name_middle_conflict`` never vary there and
:meth:`coref.model.pairwise.PairwiseModel.fold_constant_features` gives them weight 0.  A
library blocks by first initial and last name ("j guo": Jing, Jie, John, Jun and
"J." Guo), and there a conflict is the strongest evidence a block holds: a mention printed
"Jing Guo" and one printed "John Guo" are two people.  Learned weight 0 ignores it, and
the clusters of such blocks swallow each other (100k ``coref synth`` mentions, blocks of
>= 100: B3 precision 0.93 and F1 0.893, and a 463-mention "j guo" block of 62 authors,
F1 0.466 with 29 clusters).

Author-disambiguation systems treat incompatible first names as a near-constraint (S2AND,
Subramanian et al. 2021, keeps such signatures apart unless a nickname table links
them).  Here each feature the training data did not vary gets the prior weight of
:data:`NAME_CONFLICT_PRIORS` (natural-log odds added to f when the feature is 1); a
feature the training data did vary keeps its learned weight.  The values are strong but
not hard: a pair with a conflict still joins when its other evidence exceeds the penalty
(the median co-referent pair of the synthetic blocks has f near 11).  Measured (shipped
model, first 100k mentions of ``coref synth --mentions 1000000 --seed 0``, blocks >= 100
mentions): B3 F1 0.893 -> 0.903 (all: 0.906 -> 0.935), the "j guo" block 0.466 -> 0.824;
the AMiner sets never fire either feature, so their clusters do not change.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from coref.factors.names import FEATURE_NAMES

__all__ = ["NAME_CONFLICT_PRIORS", "apply_name_priors", "check_prior_weights"]

#: Prior weight (natural-log odds) of each name-conflict feature the training pairs never varied.
NAME_CONFLICT_PRIORS = {"name_first_conflict": -8.0, "name_middle_conflict": -4.0}


def apply_name_priors(theta, varied):
    """``theta`` with :data:`NAME_CONFLICT_PRIORS` on the features that did not vary.

    Parameters
    ----------
    theta : ndarray of shape (N_FEATURES,)
        Fitted weights (0 where the feature did not vary).
    varied : ndarray of bool, shape (N_FEATURES,)
        Whether each feature varied on the training pairs.

    Returns
    -------
    theta : ndarray of shape (N_FEATURES,)
        A copy, with the priors set.
    applied : dict of str -> float
        The features given a prior weight, and the weight.
    """
    theta = np.array(theta, dtype=np.float64)
    applied = {}
    for name, w in NAME_CONFLICT_PRIORS.items():
        k = FEATURE_NAMES.index(name)
        if not varied[k]:
            theta[k] = w
            applied[name] = float(w)
    return theta, applied


def check_prior_weights(prior_weights, theta, varied, error):
    """Raise ``error(message)`` unless ``prior_weights`` (feature -> weight) names only
    name-conflict features that did not vary, with finite weights <= 0, and ``theta`` is 0 on
    every other feature that did not vary and equals the prior weight on these."""
    if not isinstance(prior_weights, dict):
        raise error(f"'prior_weights' must be an object {{feature: weight}}; got {type(prior_weights).__name__}")
    for name, w in prior_weights.items():
        if name not in NAME_CONFLICT_PRIORS:
            raise error(f"'prior_weights' names {name!r}, not a name-conflict feature "
                        f"({', '.join(NAME_CONFLICT_PRIORS)})")
        if not (isinstance(w, numbers.Real) and not isinstance(w, bool) and math.isfinite(w) and w <= 0):
            raise error(f"'prior_weights'[{name!r}] must be a finite number <= 0; got {w!r}")
        if varied[FEATURE_NAMES.index(name)]:
            raise error(f"'prior_weights' names {name!r}, which varied in training (its weight is learned)")
    expect = np.zeros(len(FEATURE_NAMES))
    for name, w in prior_weights.items():
        expect[FEATURE_NAMES.index(name)] = w
    if np.any(np.asarray(theta)[~varied] != expect[~varied]):
        raise error("theta must be 0 for every feature that did not vary in training ('feature_varied' false), "
                    "except the name-conflict prior weights ('prior_weights')")
