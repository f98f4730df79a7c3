"""The WMB weight step uses the conditional entropies of the moment-matched beliefs (the
order of pyGMs ``msgForward``; issue 30, item 4: our WMB no looser than pyGMs')."""
import numpy as np
import pytest

from sampling.bounds._partition import partition
from sampling.bounds._reparam import MessagePasses
from sampling.bounds._tables import logsumexp0, match_stats
from sampling.bounds.exact import log_partition
from sampling.bounds.model import random_model
from sampling.bounds.wmb import WeightedMiniBucket

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.ConvergenceWarning")


class _Spy(MessagePasses):
    """Records, per reparameterised bucket, the weights before and after and the tables F_c
    as the call leaves them (matched)."""

    def reparameterise(self, k, mbs, nu):
        w0 = self.weight[mbs].copy()
        super().reparameterise(k, mbs, nu)
        self.seen.append((list(mbs), w0, [self.F[c].copy() for c in mbs], self.weight[mbs].copy(), nu))


@pytest.mark.parametrize("seed", [0, 3])
def test_weight_step_follows_the_entropies_of_the_matched_beliefs(seed):
    m = random_model(16, 34, max_scope=2, max_card=3, rng=seed).squeeze()
    w = WeightedMiniBucket(m, i_bound=1).prepare()
    st = partition(m, w.elim_order, w.pseudo_tree, 1)
    p = _Spy(m, st, w.elim_order, weight_step=0.7, match=True)
    p.seen = []
    p.forward(update=False)
    nu = p.backward()
    p.forward(update=True, nu=nu)
    assert p.seen  # some bucket has more than one mini-bucket
    for mbs, w0, Fs, w1, nus in p.seen:
        H = np.array([match_stats(F, nus[c], logsumexp0(F, wc), wc, st.scope[c], p.common[c])[1]
                      for c, F, wc in zip(mbs, Fs, w0)])
        lw = np.log(w0) - 0.7 * (H - float(np.dot(w0, H)))
        nw = np.exp(lw - lw.max())
        nw = np.maximum(nw / nw.sum(), 1e-6)
        np.testing.assert_allclose(w1, nw / nw.sum(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", range(5))
def test_reparameterised_bound_stays_above_exact_log_z(seed):
    m = random_model(14, 24, max_scope=3, max_card=3, rng=seed)
    lz = log_partition(m)
    for match in (True, False):
        wmb = WeightedMiniBucket(m, i_bound=1, n_iters=8, tol=0.0, match=match).fit()
        assert all(b >= lz - 1e-9 for b in wmb.bound_history_)
        assert wmb.log_Z_upper == min(wmb.bound_history_) or wmb.log_Z_upper == pytest.approx(min(wmb.bound_history_), abs=1e-9)
        assert wmb.log_Z_upper <= wmb.bound_history_[0] + 1e-12
