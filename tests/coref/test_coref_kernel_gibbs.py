"""The Gibbs kernel's incremental cluster bookkeeping (candidate list and member pool
updated one mention per step, compacted racing arms) against the pure-Python twin on
a shipped block, with fixed mentions and clustered initial labels; and the split of
``GibbsCoref`` time into sampling (``wall_s_``) and encoding (``encode_s_``)."""
import numpy as np
import pytest

from coref.gibbs import _gibbs, _gibbs_py
from coref.gibbs import GibbsCoref, bound_table


@pytest.fixture(scope="module")
def shipped(shipped_model_and_data):
    df, model = shipped_model_and_data
    sizes = df.groupby("block").size().sort_values()
    name = [b for b, s in sizes.items() if 30 <= s <= 45][0]
    sub = df[df["block"] == name].sort_values("mention_id").reset_index(drop=True)
    return sub, model


def _run(mod, enc, model, labels, movable, inv_temps, racing, bound, state):
    n = enc.n
    size = np.bincount(labels, minlength=n).astype(np.int64)
    hist = np.zeros((len(inv_temps), n), np.int64)
    ev = np.zeros(len(inv_temps), np.int64)
    used = mod.anneal(enc, np.ascontiguousarray(model.theta_), float(model.bias_), labels, size,
                      movable, np.asarray(inv_temps, float), np.zeros(len(inv_temps), np.int8), 0,
                      racing, 3, bound, np.full(n, -np.inf), bound_table(0.05, n + 1), state,
                      hist, ev)
    assert (np.bincount(labels, minlength=n) == size).all()
    return used, hist, ev


@pytest.mark.parametrize("racing,bound", [(0, 0), (1, 0), (1, 1)],
                         ids=["exact", "racing", "racing-bound"])
def test_anneal_on_shipped_block_matches_twin(shipped, racing, bound):
    sub, model = shipped
    enc = model.encode(sub)
    n = enc.n
    rng = np.random.default_rng(3)
    # clustered start with gaps in the label space; a third of the mentions fixed
    labels0 = rng.choice(np.arange(0, n, 2), size=n).astype(np.int64)
    movable = np.sort(rng.choice(n, size=2 * n // 3, replace=False)).astype(np.int64)
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = labels0.copy()
        state = np.array([11, 2**63 + 1, 99, 2**40 + 7], np.uint64)
        used, hist, ev = _run(mod, enc, model, labels, movable, [0.7, 1.0, 4.0, 20.0],
                              racing, bound, state)
        out.append((hist, ev, state.copy()))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
    hist = out[0][0]
    fixed = np.setdiff1d(np.arange(n), movable)
    assert (hist[:, fixed] == labels0[fixed]).all()          # fixed mentions never move
    assert (hist[-1] != labels0).any()                        # the sampler did move some
    assert len(np.unique(hist[-1])) != len(np.unique(labels0))  # clusters emptied or opened


def test_wall_excludes_encoding(shipped):
    sub, model = shipped
    g = GibbsCoref(model, sampler="racing", n_sweeps=3, rng=0).fit(sub)
    assert g.encode_s_ > 0.0 and g.wall_s_ > 0.0 and g.cpu_s_ > 0.0
    h = GibbsCoref(model, sampler="racing", n_sweeps=3, rng=0).fit(sub)
    np.testing.assert_array_equal(g.labels_, h.labels_)       # timing split changes nothing


def _uniforms(seed):
    """The table's bin edges and their neighbours, random u, and the kernel's extreme u."""
    k = np.arange(1, 4096, dtype=float)
    u = np.concatenate([k / 4096, np.nextafter(k / 4096, 0), np.nextafter(k / 4096, 1),
                        np.random.default_rng(seed).random(100_000),
                        [0.5 * 2.0**-53, 1.0 - 0.5 * 2.0**-53]])
    return u[(u > 0) & (u < 1)]


def test_gumbel_upper_bounds_every_gumbel():
    """The table bound used to skip Gumbel logs is >= -log(-log(u)) everywhere, including
    the bin edges and the extremes of the kernel's uniforms ((x >> 11) + 0.5) 2^-53."""
    u = _uniforms(0)
    out = np.empty_like(u)
    _gibbs.gumbel_upper(u, out)
    g = -np.log(-np.log(u))
    assert (out >= g).all()
    # tight enough to skip logs: within 0.05 of the Gumbel away from u -> 0 and u -> 1
    inner = (u > 0.01) & (u < 0.99)
    assert (out[inner] - g[inner]).max() < 0.05
    with pytest.raises(ValueError, match="not in"):
        _gibbs.gumbel_upper(np.array([1.0]), np.empty(1))


def test_gumbel_lower_bounds_every_gumbel():
    """The lower table bound (with the upper one it brackets each arm's score, so that a
    comparison the bracket settles needs no logs) is <= -log(-log(u)) everywhere, -inf in
    the first bin, and below the upper bound."""
    u = _uniforms(1)
    lo = np.empty_like(u)
    up = np.empty_like(u)
    _gibbs.gumbel_lower(u, lo)
    _gibbs.gumbel_upper(u, up)
    g = -np.log(-np.log(u))
    assert (lo <= g).all() and (lo <= up).all()
    assert (lo[u < 1 / 4096] == -np.inf).all() and np.isfinite(lo[u >= 1 / 4096]).all()
    inner = (u > 0.01) & (u < 0.99)
    assert (g[inner] - lo[inner]).max() < 0.05
    with pytest.raises(ValueError, match="not in"):
        _gibbs.gumbel_lower(np.array([0.0]), np.empty(1))


@pytest.mark.parametrize("start", ["singletons", "one"])
def test_racing_bound_from_extreme_starts_matches_twin(shipped, start):
    """Lazy small arms, skipped Gumbel logs and the merged arm lists, from a start with
    n singleton arms (all lazy) and from one cluster (one open arm)."""
    sub, model = shipped
    enc = model.encode(sub)
    n = enc.n
    labels0 = np.arange(n, dtype=np.int64) if start == "singletons" else np.zeros(n, np.int64)
    movable = np.arange(n, dtype=np.int64)
    out = []
    for mod in (_gibbs, _gibbs_py):
        labels = labels0.copy()
        state = np.array([5, 2**62 + 3, 17, 2**33 + 1], np.uint64)
        out.append(_run(mod, enc, model, labels, movable, [1.0, 3.0, 10.0], 1, 1, state)
                   + (state.copy(),))
    for a, b in zip(out[0], out[1]):
        np.testing.assert_array_equal(a, b)
