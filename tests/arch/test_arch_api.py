"""select_order's result in ArviZ, the lazy ``sampling.arch`` attribute, ``sampling --version``, plots."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sampling.arch import select_order, simulate_arch

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.LowESSWarning")
ROOT = Path(__file__).resolve().parents[2]
ORDERS = (1, 2, 4)


@pytest.fixture(scope="module")
def result():
    r = simulate_arch(1200, [0.3, 0.4, 0.2], 6.0, rng=5)
    return select_order(r, orders=ORDERS, n_iterations=80, n_warmup=40, n_chains=2, rng=1, n_pilot=40)


def test_to_inference_data_labels_q_by_order(result):
    idata = result.to_inference_data()
    post = idata.posterior
    assert post["q"].dims == ("chain", "draw") and post["q"].shape == (2, 80)
    np.testing.assert_array_equal(post["q"].values, result.q_trace)
    assert list(post["q_indicator"].coords["order"].values) == list(ORDERS)
    # the indicator means are the adjusted posterior; constant_data holds p(q | r) by order
    np.testing.assert_allclose(post["q_indicator"].mean(dim=("chain", "draw")).values,
                               result.adjusted_posterior)
    np.testing.assert_allclose(idata.constant_data["posterior"].sel(order=2).item(),
                               result.posterior[1])
    assert idata.warmup_posterior["q"].shape == (2, 40)
    assert idata.sample_stats["n_loglik_evals"].shape == (2, 80)
    import arviz as az

    assert az.ess(idata, var_names=["q"], method="bulk")["q"].item() == pytest.approx(result.ess)
    s = result.posterior_by_order
    assert list(s.index) == list(ORDERS) and s.sum() == pytest.approx(1.0)


def test_sampling_arch_is_a_lazy_attribute(tmp_path):
    code = ("import sys, sampling; assert 'sampling.arch' not in sys.modules; "
            "m = sampling.arch; assert m.select_order is sys.modules['sampling.arch'].select_order; "
            "assert 'arch' in dir(sampling); print('ok')")
    # the same (built) package the tests import, whether installed or built in place; run
    # outside the checkout so that an unbuilt repository root cannot shadow it
    import os

    import sampling as pkg

    env = dict(os.environ, PYTHONPATH=str(Path(pkg.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    import sampling

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sampling.nope  # noqa: B018


def test_sampling_version(capsys, monkeypatch):
    from importlib import metadata

    from sampling import cli

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("sampling (racing-inference) ")

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)  # not installed: still the package's version
    import sampling

    assert cli.version() == sampling.__version__


def test_plot_legends_name_only_what_ran(result, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sampling.arch import cli

    titles = []
    real = cli._atomic_savefig
    monkeypatch.setattr(cli, "_atomic_savefig",
                        lambda fig, path: (titles.append((path.name, fig.axes[0].get_title(),
                                                          [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
                                                          if fig.axes[0].get_legend() else [])),
                                           real(fig, path)))
    cli._plots({"subsampled": result}, tmp_path)
    plt.close("all")
    by = {name: (title, legend) for name, title, legend in titles}
    assert "exact" not in by["fig2b_log_posterior.png"][0]
    assert "dashed: subsampled" in by["fig2b_log_posterior.png"][0]
    assert "p(q | r)" in by["fig2_posterior_q.png"][1][0]
    assert all("exact" not in t for t, _ in by.values())
    assert (tmp_path / "fig2_posterior_q.png").stat().st_size > 0


def test_interleaved_runs_give_the_separate_results():
    from sampling.arch.sampler import select_orders_interleaved

    r = simulate_arch(1000, [0.3, 0.4, 0.2], 6.0, rng=6)
    kws = [dict(returns=r, orders=ORDERS, method=m, n_iterations=40, n_warmup=20, n_chains=2, rng=s,
                n_pilot=40, checkpoint_every=15) for m, s in (("subsampled", 1), ("exact", 2))]
    inter = select_orders_interleaved(kws)
    for kw, res in zip(kws, inter):
        alone = select_order(**kw)
        assert res.method == kw["method"]
        np.testing.assert_array_equal(res.q_trace, alone.q_trace)
        assert res.n_loglik_evals == alone.n_loglik_evals
