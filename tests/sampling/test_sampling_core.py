"""The private racing core: one module used by design, one control-variate type."""
import ast
import math
from pathlib import Path

import numpy as np
import pytest

import sampling
from sampling import ControlVariate, mh_accept, race
from sampling._race_core import IndexSampler, PermutationSampler

ROOT = Path(__file__).resolve().parents[2]
RACING_MODULES = ["racing.py", "mh.py", "ucb.py", "discrete.py", "control_variates.py"]


@pytest.mark.parametrize("name", RACING_MODULES)
def test_no_private_cross_module_imports(name):
    """Racing modules take shared pieces from sampling._race_core only, never another module's _names."""
    tree = ast.parse((ROOT / "sampling" / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sampling"):
            for alias in node.names:
                assert not alias.name.startswith("_"), (name, node.module, alias.name)
            if node.module not in ("sampling._race_core", "sampling.utils.rng", "sampling.utils.kernels"):
                assert not node.module.split(".")[-1].startswith("_"), (name, node.module)
    assert "_racing_py" not in (ROOT / "sampling" / name).read_text()


def test_mh_accept_takes_the_one_control_variate_type():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(50_000)
    l = 0.3 * x + 1e-3 * rng.standard_normal(x.size) + 1e-4
    cv_obj = ControlVariate.for_one_state(lambda i: 0.3 * x[i], 0.3 * x.mean())
    a = mh_accept(lambda i: l[i], l.size, 0.0, rng=4, control_variate=cv_obj)
    b = mh_accept(lambda i: l[i], l.size, 0.0, rng=4, control_variate=(lambda i: 0.3 * x[i], 0.3 * x.mean()))
    assert (a.accept, a.n_evals, a.mu_hat) == (b.accept, b.n_evals, b.mu_hat)
    assert a.accept == (l.mean() > 0.0)
    with pytest.raises(ValueError, match="control_variate mean of mh_accept must have shape \\(1,\\)"):
        mh_accept(lambda i: l[i], l.size, 0.0, control_variate=ControlVariate(lambda s, i: x[i][None], np.zeros(2)))


@pytest.mark.parametrize("cls", [IndexSampler, PermutationSampler])
def test_index_samplers_give_disjoint_uniform_batches(cls):
    n, reps = 40, 4000
    gen = np.random.default_rng(7)
    first = np.zeros(n)
    for _ in range(reps):
        s = cls(n, gen)
        a, b, c = s.draw(5), s.draw(5), s.draw(30)
        allx = np.concatenate([a, b, c])
        assert np.array_equal(np.sort(allx), np.arange(n))  # disjoint, exhaustive
        if cls is IndexSampler:
            assert np.all(np.diff(a) > 0)  # sorted batches; PermutationSampler keeps shuffle order
        first[a] += 1
    p = 5 / n
    assert np.all(np.abs(first / reps - p) < 5 * math.sqrt(p * (1 - p) / reps))


def test_permutation_sampler_continues_from_kept_arrangement():
    """A kept arrangement is reused across races; each race's first batch is still uniform."""
    n, reps = 30, 6000
    gen = np.random.default_rng(11)
    s = PermutationSampler(n, gen)
    cnt = np.zeros(n)
    for _ in range(reps):
        s.restart()
        cnt[s.draw(3)] += 1
    p = 3 / n
    assert np.all(np.abs(cnt / reps - p) < 5 * math.sqrt(p * (1 - p) / reps))
    assert np.array_equal(np.sort(s.perm), np.arange(n))


def test_race_still_matches_exact_argmax_with_direct_pairs():
    from sampling._race_core import check_common, run_race

    rng = np.random.default_rng(5)
    data = rng.normal(size=(4, 3000))
    errors = 0
    for rep in range(30):
        g = rng.gumbel(size=4)
        offset = g / 3000
        exact = int(np.argmax(data.sum(axis=1) + g))
        res = [run_race(lambda arms, idx: data[arms][:, idx], offset, 3000, delta=0.01, bound="normal",
                        variance="pairwise", first_batch=50, c_range=np.zeros(4), gen=np.random.default_rng(rep),
                        func="t", pairs=p)[0] for p in ("gram", "direct")]
        assert res[0] == res[1]
        errors += res[0] != exact
    assert errors <= 3  # each draw errs with probability <= delta = 0.01


def test_kernels_come_from_load_kernel(monkeypatch):
    import importlib

    import sampling.utils.kernels as build

    def boom(name):
        raise ImportError(f"cannot import the compiled kernel {name}; {build.BUILD_HINT}")

    monkeypatch.setattr(build, "load_kernel", boom)
    import sampling._race_core as core

    with pytest.raises(ImportError, match="sampling._racing.*build"):
        importlib.reload(core)
    monkeypatch.undo()
    importlib.reload(core)
    assert core.kernels.__name__ == "sampling._racing"
    assert sampling.race is race


def test_compiled_permutation_draw_matches_the_python_sampler():
    from sampling import _racing

    for n, sizes in ((50, (5, 5, 10, 30)), (7, (2, 5)), (1000, (50, 50, 100, 200, 400, 200))):
        g1, g2 = np.random.default_rng(n), np.random.default_rng(n)
        p1 = np.arange(n, dtype=np.int64)
        ref = PermutationSampler(n, g2, np.arange(n, dtype=np.int64))
        pos = 0
        for m in sizes:
            batch, pos = _racing.perm_draw_wrapper(g1, p1, pos, m)
            np.testing.assert_array_equal(batch, ref.draw(m))
        assert pos == n == ref.pos
        np.testing.assert_array_equal(p1, ref.perm)
        assert g1.bit_generator.state == g2.bit_generator.state
