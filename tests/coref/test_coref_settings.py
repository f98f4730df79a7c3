"""coref.settings: the validators, GibbsSettings (validated once, frozen) and the sampler list."""
import dataclasses
import inspect
import math
import warnings

import numpy as np
import pytest

from coref.gibbs import GibbsCoref
from coref.settings import (ALL_SAMPLERS, GIBBS_PARAMS, INITS, SAMPLERS, GibbsSettings, check_delta,
                            check_memory_mb, check_positive, make_gibbs_settings, make_settings)


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.1, 2, True, False, "0.1", None, math.nan])
def test_check_delta_rejects_outside_the_open_unit_interval(bad):
    with pytest.raises(ValueError, match=r"^the delta parameter must be in \(0, 1\); got "):
        check_delta(bad)
    with pytest.raises(ValueError, match=r"^the delta parameter of coref\.run must be in \(0, 1\); "
                                         r"got .* instead$"):
        check_delta(bad, where="coref.run")


def test_check_delta_returns_a_float_and_names_the_parameter():
    assert check_delta(np.float32(0.25)) == 0.25 and type(check_delta(1e-3)) is float
    with pytest.raises(ValueError, match="the eps parameter must be"):
        check_delta(3, "eps")


@pytest.mark.parametrize("bad", [-1, -0.5, math.inf, math.nan, True, "8", None])
def test_check_memory_mb(bad):
    with pytest.raises(ValueError, match=r"^--factor-cache-mb must be a finite number >= 0; got "):
        check_memory_mb(bad, "--factor-cache-mb")


def test_check_memory_mb_and_positive_accept():
    assert check_memory_mb(0) == 0.0 and check_memory_mb(np.int64(256)) == 256.0
    assert check_positive(0.05, "t_end") == 0.05
    for bad in (0, -1.0, math.inf, math.nan, "1"):
        with pytest.raises(ValueError, match="t_end must be a finite number > 0"):
            check_positive(bad, "t_end")


def test_make_settings_reports_delta_as_before():
    with pytest.raises(ValueError, match=r"the delta parameter of coref\.predict must be in \(0, 1\); "
                                         r"got 1\.5 instead"):
        make_settings("predict", delta=1.5)
    assert make_settings("predict", delta=0.1).delta == 0.1


def test_one_sampler_list():
    assert SAMPLERS == ("racing", "exact") and ALL_SAMPLERS == SAMPLERS + ("auto",)
    with pytest.raises(ValueError, match=r"sampler must be one of \('racing', 'exact', 'auto'\)"):
        make_gibbs_settings(sampler="both")
    assert INITS == ("singletons", "one", "auto", "greedy", "components")


def test_gibbs_settings_defaults_are_gibbscoref_defaults():
    """make_gibbs_settings and GibbsCoref share every hyperparameter and its default, and a
    GibbsSettings built from the defaults equals the dataclass defaults."""
    init = inspect.signature(GibbsCoref.__init__).parameters
    make = inspect.signature(make_gibbs_settings).parameters
    assert set(GIBBS_PARAMS) == set(make)
    assert set(GIBBS_PARAMS) | {"self", "model", "rng", "record_history"} == set(init)
    for name in GIBBS_PARAMS:
        assert make[name].default == init[name].default, name
    assert make_gibbs_settings() == GibbsSettings()
    fields = {f.name for f in dataclasses.fields(GibbsSettings)}
    assert fields == set(GIBBS_PARAMS) - {"buffer_size"}


def test_gibbs_settings_are_frozen_and_normalised():
    s = make_gibbs_settings(patience=None, small_arm_bound=0, delta=np.float64(0.1), t_end=1)
    assert s.patience == 0 and s.small_arm_bound is False and type(s.delta) is float
    assert type(s.t_end) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.delta = 0.2
    assert dataclasses.replace(s, delta=0.2).delta == 0.2


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(init="two"), ValueError, "init must be one of"),
    (dict(delta=0), ValueError, r"delta parameter of GibbsCoref must be in \(0, 1\)"),
    (dict(n_sweeps=2.0), TypeError, "n_sweeps must be an int; got float"),
    (dict(merge_moves=True), TypeError, "merge_moves must be an int; got bool"),
    (dict(n_sweeps=0), ValueError, "n_sweeps must be >= 1; got 0"),
    (dict(patience=-1), ValueError, "patience must be None or an int >= 0"),
    (dict(patience=1.5), ValueError, "patience must be None or an int >= 0"),
    (dict(merge_max_temp=0), ValueError, "merge_max_temp must be a finite number > 0"),
    (dict(factor_cache_mb=-1), ValueError, "factor_cache_mb must be a finite number >= 0"),
    (dict(factor_cache_mb=True), ValueError, "factor_cache_mb must be a finite number >= 0"),
    (dict(early_stop_temp=math.inf), ValueError, "early_stop_temp must be a finite number > 0"),
    (dict(merge_exact_max=-1), ValueError, "merge_moves and merge_exact_max must be >= 0"),
    (dict(n_samples=-1), ValueError, "n_samples must be >= 0; got -1"),
    (dict(first_batch=1), ValueError, "first_batch must be >= 2; got 1"),
    (dict(t_start=0), ValueError, "t_start must be a finite number > 0"),
    (dict(t_end=math.nan), ValueError, "t_end must be a finite number > 0"),
])
def test_make_gibbs_settings_errors(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        make_gibbs_settings(**kw)


def test_buffer_size_warns_and_is_not_kept():
    with pytest.warns(DeprecationWarning, match="buffer_size"):
        s = make_gibbs_settings(buffer_size=4096)
    assert s == GibbsSettings()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_gibbs_settings()


def test_gibbscoref_validates_at_fit_into_settings():
    """GibbsCoref keeps its constructor arguments as given (set after construction too) and
    validates them at fit, with the messages of make_gibbs_settings."""
    g = GibbsCoref(object(), sampler="exact", n_sweeps=5)
    assert (g.sampler, g.n_sweeps, g.patience) == ("exact", 5, 3)
    g.n_sweeps = 0
    with pytest.raises(ValueError, match="n_sweeps must be >= 1"):
        g.fit(None)
    g.n_sweeps = 5
    with pytest.raises(RuntimeError, match="the model is not fitted"):
        g.fit(None)
