"""coref.jobs.incremental.name_final_clusters: the shortcut for fixed old mentions gives the ids of the votes."""
import numpy as np
import pytest

from coref.inference import BlockResult
from coref.jobs import incremental


def _case(rng, n_old, n_new, fixed):
    """A block's old clustering and a final one: old mentions kept together (fixed) or shuffled."""
    mids = np.array([f"m{i:03d}" for i in range(n_old + n_new)], dtype=object)
    old_k = rng.integers(0, max(1, n_old // 3), n_old)
    old_cid_of = {m: f"b/{2 * k + 1}" for m, k in zip(mids[:n_old].tolist(), old_k.tolist())}
    if fixed:   # each old cluster stays one final cluster; new mentions join one or open new ones
        lab_old = old_k
        lab_new = rng.integers(0, (old_k.max() if n_old else 0) + 4, n_new)
    else:
        lab_old = rng.integers(0, 4, n_old)
        lab_new = rng.integers(0, 6, n_new)
    labels = np.r_[lab_old, lab_new].astype(str).astype(object)
    order = rng.permutation(len(mids))
    r = BlockResult("auto", 0, "b", mids[order], labels[order], 0, 0.0, np.zeros(2, np.int64))
    is_old = np.r_[np.ones(n_old, bool), np.zeros(n_new, bool)][order]
    return r, is_old, old_cid_of, sorted(set(old_cid_of.values()))


@pytest.mark.parametrize("fixed", [True, False])
def test_shortcut_gives_the_ids_of_the_votes(fixed, monkeypatch):
    rng = np.random.default_rng(4)
    n_fast = 0
    for _ in range(60):
        r, is_old, old_cid_of, block_ids = _case(rng, int(rng.integers(0, 30)), int(rng.integers(1, 12)), fixed)
        used = set(block_ids) | {"b/0", "b/4"}
        n_fast += incremental._one_old_id_each(
            np.unique(r.cluster_id.astype(str), return_inverse=True)[1], r.mention_id.astype(str), is_old,
            old_cid_of, len(set(r.cluster_id))) is not None
        got = incremental.name_final_clusters(r, is_old, old_cid_of, block_ids, used)
        with monkeypatch.context() as m:
            m.setattr(incremental, "_one_old_id_each", lambda *a: None)     # the votes only
            used2 = set(block_ids) | {"b/0", "b/4"}
            want = incremental.name_final_clusters(r, is_old, old_cid_of, block_ids, used2)
        assert got.tolist() == want.tolist() and used == used2
        if fixed:   # old mentions keep their ids
            assert [g for g, o in zip(got, is_old) if o] == [old_cid_of[m] for m, o in zip(r.mention_id, is_old) if o]
    if fixed:
        assert n_fast == 60          # the shortcut always applies with the old mentions fixed
    else:
        assert n_fast < 60           # and not where old clusters split or merge (the votes decide)


def test_kept_prior_shifts_keeps_a_recorded_shift_while_a_block_grows_little_and_keeps_its_weights():
    from coref.jobs.incremental import KEEP_PRIOR_FRACTION, kept_prior_shifts

    assert KEEP_PRIOR_FRACTION == 0.1
    # block: (old mentions, new mentions); shifts recorded for all but "d"
    sizes = {"a": (30, 3), "b": (30, 4), "c": (5, 0), "d": (40, 1), "e": (995, 5), "f": (20, 1)}
    blocks = np.array([b for b, (o, m) in sizes.items() for _ in range(o + m)], dtype=object)
    is_old = np.concatenate([np.r_[np.ones(o, bool), np.zeros(m, bool)] for o, m in sizes.values()])
    shifts = {"a": -0.5, "b": 0.25, "c": 1.0, "e": -1.5, "f": float("nan")}
    assert kept_prior_shifts(blocks, is_old, shifts, revisit=False) == {"a": -0.5, "c": 1.0, "e": -1.5}
    # "e" grows from 995 to 1,000 mentions: past a big-block size of 1,000 its weights change
    assert kept_prior_shifts(blocks, is_old, shifts, revisit=False, big_block=lambda n: n >= 1000) == {
        "a": -0.5, "c": 1.0}
    assert kept_prior_shifts(blocks, is_old, shifts, revisit=True) == {}
    assert kept_prior_shifts(blocks, is_old, None, revisit=False) == {}
