"""ARCH checkpoints: .npz without pickle, validated field by field; tampered or foreign files refused."""
import json
import pickle

import numpy as np
import pytest

from sampling.arch import checkpoint as C
from sampling.arch import select_order, simulate_arch
from sampling.exceptions import CheckpointError

pytestmark = pytest.mark.filterwarnings("ignore::sampling.exceptions.LowESSWarning")
ORDERS = (1, 2, 4)
KW = dict(orders=ORDERS, method="subsampled", n_iterations=30, n_warmup=20, n_chains=2, rng=3,
          n_pilot=40, checkpoint_every=10)


@pytest.fixture(scope="module")
def returns():
    return simulate_arch(1200, [0.3, 0.4, 0.2], 6.0, rng=7)


@pytest.fixture
def written(returns, tmp_path):
    ck = tmp_path / "checkpoint_subsampled.npz"
    res = select_order(returns, checkpoint=str(ck), **KW)
    return ck, res


def _rewrite(path, mutate, *, fix_checksum):
    with np.load(path, allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    mutate(data)
    if fix_checksum:
        text = str(data["meta"][()])
        data["checksum"] = np.array(C._checksum(text, {k: v for k, v in data.items()
                                                       if k not in ("meta", "checksum")}))
    with open(path, "wb") as fh:
        np.savez(fh, **data)


def test_finished_checkpoint_resumes_to_the_same_result(returns, written):
    ck, res = written
    again = select_order(returns, checkpoint=str(ck), resume=True, **KW)
    np.testing.assert_array_equal(again.q_trace, res.q_trace)
    with np.load(ck, allow_pickle=False) as f:  # loads without pickle: nothing executable inside
        meta = json.loads(str(f["meta"][()]))
    assert meta["format"] == C.FORMAT and meta["version"] == C.VERSION
    assert meta["config_hash"] == C.config_hash(meta["config"])


def test_planted_malicious_pickle_is_never_executed(returns, tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('ran')",))

    ck = tmp_path / "checkpoint_subsampled.npz"
    ck.write_bytes(pickle.dumps({"phase": "sample", "evil": Evil()}))
    with pytest.raises(CheckpointError, match="checkpoint_subsampled.npz.*without pickle"):
        select_order(returns, checkpoint=str(ck), resume=True, **KW)
    assert not marker.exists()
    # an .npz holding an object (pickled) array is refused too, and not unpickled
    np.savez(ck, meta=np.array([Evil()], dtype=object))
    with pytest.raises(CheckpointError, match="checkpoint_subsampled.npz"):
        select_order(returns, checkpoint=str(ck), resume=True, **KW)
    assert not marker.exists()


def test_tampered_checkpoint_is_refused(returns, written):
    ck, _ = written

    def bump(d):
        d["chain0_xs_flat"] = d["chain0_xs_flat"] + 1e-3

    _rewrite(ck, bump, fix_checksum=False)
    with pytest.raises(CheckpointError, match=f"{ck.name}.*checksum mismatch"):
        select_order(returns, checkpoint=str(ck), resume=True, **KW)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.__setitem__("chain1_perm", np.zeros_like(d["chain1_perm"])), "not a permutation"),
    (lambda d: d.__setitem__("chain0_sq", d["chain0_sq"][:-3]), "chain0_sq.*shape"),
    (lambda d: d.__setitem__("pseudo1_cov", -np.eye(d["pseudo1_cov"].shape[0])), "positive definite"),
    (lambda d: d.__setitem__("chain0_log_pi", np.full(3, np.nan)), "NaN"),
    (lambda d: d.pop("chain0_istate"), "missing field 'chain0_istate'"),
    (lambda d: d.__setitem__("meta", np.array(str(d["meta"][()]).replace(C.FORMAT, "other"))), "format"),
])
def test_consistently_forged_fields_are_validated(returns, written, mutate, match):
    """Even with a matching checksum, each field is checked against what the run needs."""
    ck, _ = written
    _rewrite(ck, mutate, fix_checksum=True)
    with pytest.raises(CheckpointError, match=match):
        select_order(returns, checkpoint=str(ck), resume=True, **KW)


def test_checkpoint_of_another_run_is_refused(returns, written):
    ck, _ = written
    with pytest.raises(CheckpointError, match="other settings"):
        select_order(returns, checkpoint=str(ck), resume=True, **{**KW, "delta": 0.1})
    with pytest.raises(CheckpointError, match="other returns data"):
        select_order(np.where(np.arange(returns.size) == 9, returns + 0.2, returns),
                     checkpoint=str(ck), resume=True, **KW)
    ck.write_bytes(ck.read_bytes()[:200])
    with pytest.raises(CheckpointError, match=ck.name):
        select_order(returns, checkpoint=str(ck), resume=True, **KW)


def test_no_pickle_in_arch_sources():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "sampling"
    for f in list((root / "arch").glob("*.py")) + [root / "racing.py", root / "mh.py"]:
        text = f.read_text()
        assert "import pickle" not in text and "allow_pickle=True" not in text, f
