"""Maximum pseudo-likelihood fit of the pairwise factor for the clustering model Gibbs samples.

The Gibbs sampler of :mod:`coref.gibbs` samples the clustering y of a block from

    p(y | x) ∝ exp( sum_{i < j, y_i = y_j} f(x_i, x_j) ),   f = theta . phi_ij + b,

(Chen & Ghahramani 2016, Sec. 5.3; Singh et al. 2012), so a mention i joins cluster c
with probability ∝ exp(sum_{j in c} f_ij) and opens a new cluster with probability
∝ exp(0).  A theta fitted on independent labeled PAIRS (logistic regression) is the
log-odds of one pair; in a big heterogeneous cluster most pairs look negative although
the author is the same, so the summed score can stay below 0 and the sampler splits the
author.  Here theta and b are fitted for the model the sampler actually uses, by
maximum pseudo-likelihood (Besag 1975) on the gold clusterings of the labeled blocks:

    PL(theta, b) = sum_i log p(y_i = g_i | y_-i = g_-i, x)
                 = sum_i [ u_{i, g_i} - log(1 + sum_c exp(u_{i,c})) ],
    u_{i,c} = theta . s_{i,c} + b n_{i,c},  s_{i,c} = sum_{j in c, j != i} phi_ij,  n_{i,c} = |c \\ {i}|,

over the gold clusters c of i's block without i (the non-empty ones), with
u_{i, new} = 0 for "new cluster" (the gold choice of a mention whose gold cluster is a
singleton).  Only labeled mentions take part (as anchors i and as members j).

Features are standardised as in the logistic fit: with phi' = (phi - mu) / sd the
candidate's sum becomes z_{i,c} = (s_{i,c} - n_{i,c} mu) / sd and u = w . z + c n with
theta = w / sd and b = c - w . (mu / sd).  The minimised objective is

    J(w, c) = 0.5 ||w||^2 + C * ( -PL ),

(``C`` the inverse L2 strength, the intercept-like c unpenalised, as in scikit-learn's
``LogisticRegression``), by L-BFGS (``scipy.optimize.minimize``) with the analytic
gradient dJ/dw = w + C Z^T (p - e), dJ/dc = C n . (p - e), p the softmax of each anchor's
candidates (new cluster included) and e the indicator of its gold candidate.

Measured (grouped k-fold, benchmarks/measured/coref_accuracy_pseudolik_2026-11-24.txt): the
pure pseudo-likelihood theta makes the gold clustering score higher than what annealed Gibbs
from singletons reaches (a search error: AMiner B3 F1 0.752 against 0.882 for the logistic
theta), and with cluster-merge moves its MAP over-merges; adding the cluster-merge
conditionals and the pairwise logistic loss brings it back to, but not above, the logistic
theta.  With the logistic theta 98% of the F1 lost on AMiner is a model error (the model
scores the predicted clustering above the gold one) on pairs with no evidence in phi (no
co-author path, no title word or venue in common), which no reweighting of the same
features links.

Big blocks: at most ``max_anchors`` anchors per block, a uniform sample without
replacement of its labeled mentions drawn from the caller's generator (``rng.choice``),
so the cost per block is at most ``max_anchors`` x (labeled mentions) pair features; the
sums s_{i,c} are always over EVERY labeled member of c (exact, not subsampled).
"""
from __future__ import annotations

import numpy as np

__all__ = ["PLData", "block_candidates", "pl_data", "pl_objective", "fit_pseudolik"]


class PLData:
    """Candidates of every anchor mention, stacked.

    Attributes
    ----------
    S : ndarray of shape (m, d)
        Summed pair features s_{i,c} of each (anchor, candidate cluster) row.
    n : ndarray of shape (m,)
        Member count n_{i,c} >= 1 of each row.
    seg : ndarray of int64, shape (m,)
        Anchor index of each row, non-decreasing in [0, n_anchors).
    gold : ndarray of bool, shape (m,)
        True on the row of the anchor's gold cluster (at most one per anchor; none
        if the anchor's gold choice is "new cluster").
    n_anchors : int
        Anchors, including those with no candidate row (their loss is 0).
    M : ndarray of shape (r, d)
        Cluster-merge conditionals (optional, ``merges=True``): summed cross features
        sum_{i in A, j in B} phi_ij of two clusters A, B.
    Mn : ndarray of shape (r,)
        |A| |B| of each merge row.
    My : ndarray of shape (r,)
        1 if A and B are two halves of one gold cluster (merge), 0 if two gold clusters.
    """

    def __init__(self, S, n, seg, gold, n_anchors, M=None, Mn=None, My=None):
        d = np.shape(S)[1] if np.ndim(S) == 2 else 0
        self.M = np.zeros((0, d)) if M is None else np.ascontiguousarray(M, dtype=np.float64)
        self.Mn = np.zeros(0) if Mn is None else np.ascontiguousarray(Mn, dtype=np.float64)
        self.My = np.zeros(0) if My is None else np.ascontiguousarray(My, dtype=np.float64)
        r = self.M.shape[0]
        if self.Mn.shape != (r,) or self.My.shape != (r,):
            raise ValueError(f"PLData merge arrays disagree in shape: M {self.M.shape}, Mn {self.Mn.shape}, "
                             f"My {self.My.shape}")
        self.S = np.ascontiguousarray(S, dtype=np.float64)
        self.n = np.ascontiguousarray(n, dtype=np.float64)
        self.seg = np.ascontiguousarray(seg, dtype=np.int64)
        self.gold = np.ascontiguousarray(gold, dtype=bool)
        self.n_anchors = int(n_anchors)
        m = self.S.shape[0]
        if self.S.ndim != 2 or self.n.shape != (m,) or self.seg.shape != (m,) or self.gold.shape != (m,):
            raise ValueError(f"PLData arrays disagree in shape: S {self.S.shape}, n {self.n.shape}, "
                             f"seg {self.seg.shape}, gold {self.gold.shape}")
        if m and (np.any(np.diff(self.seg) < 0) or self.seg[0] < 0 or self.seg[-1] >= self.n_anchors):
            raise ValueError("PLData.seg must be non-decreasing anchor indices in [0, n_anchors)")
        if m and np.bincount(self.seg[self.gold], minlength=self.n_anchors).max(initial=0) > 1:
            raise ValueError("PLData: an anchor has more than one gold candidate")

    @staticmethod
    def concat(parts, d):
        """Stack several :class:`PLData` (anchor indices renumbered)."""
        parts = [p for p in parts if p.n_anchors]
        if not parts:
            return PLData(np.zeros((0, d)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), 0)
        off = np.cumsum([0] + [p.n_anchors for p in parts[:-1]])
        return PLData(np.vstack([p.S for p in parts]), np.concatenate([p.n for p in parts]),
                      np.concatenate([p.seg + o for p, o in zip(parts, off)]),
                      np.concatenate([p.gold for p in parts]), int(sum(p.n_anchors for p in parts)),
                      np.vstack([p.M.reshape(-1, d) for p in parts]), np.concatenate([p.Mn for p in parts]),
                      np.concatenate([p.My for p in parts]))


def block_candidates(pair_features, gold, *, max_anchors, rng, alone=False, merges=False):
    """Pseudo-likelihood candidates of the labeled mentions of one block.

    Parameters
    ----------
    pair_features : callable
        ``pair_features(I, J) -> ndarray (len(I), d)``, phi of the pairs (I[k], J[k])
        (row indices of the block).
    gold : sequence of shape (n,)
        Gold entity per row of the block; None (or NaN) = unlabeled (ignored).
    max_anchors : int >= 1
        At most this many anchors (uniform sample without replacement of the labeled
        rows, drawn with ``rng.choice``; all of them if there are fewer).
    rng : numpy.random.Generator
    alone : bool, default False
        Also add, for each anchor with gold cluster mates, a second conditional: the
        same block WITHOUT those mates (a sub-block, with its gold clustering), where the
        anchor's gold choice is "new cluster" against every other gold cluster.
    merges : bool, default False
        Also return the cluster-merge conditionals of the same model (composite
        likelihood): p(A and B merged | the rest) = sigmoid(sum_{i in A, j in B} f_ij),
        for every two gold clusters (label 0) and for one random split of each gold
        cluster of two or more members into two halves (label 1; a uniform random
        order of its members cut at a uniform point, drawn with ``rng``). The sums
        are accumulated over the anchors and scaled by (members / anchors) of the
        summing side (exact when every labeled mention is an anchor).

    Returns
    -------
    PLData
        One row per (anchor, gold cluster without the anchor, if non-empty), in one
        segment per anchor (and with ``alone``, a second segment per anchor with mates).

    Raises
    ------
    ValueError
        If ``max_anchors`` < 1.
    """
    if int(max_anchors) < 1:
        raise ValueError(f"max_anchors must be >= 1; got {max_anchors!r}")
    lab = np.array([i for i, g in enumerate(gold) if g is not None and g == g], dtype=np.int64)
    if lab.shape[0] < 2:
        return PLData(np.zeros((0, 0)), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), 0)
    keys = [gold[i] for i in lab]
    _, cl = np.unique(np.array(keys, dtype=object).astype(str), return_inverse=True)
    cl = cl.astype(np.int64)
    K = int(cl.max()) + 1
    size = np.bincount(cl, minlength=K)
    if lab.shape[0] > int(max_anchors):
        anchors = np.sort(rng.choice(lab.shape[0], size=int(max_anchors), replace=False))
    else:
        anchors = np.arange(lab.shape[0])
    S_rows, n_rows, seg_rows, gold_rows = [], [], [], []
    n_seg = 0
    if merges:
        side = np.zeros(lab.shape[0], np.int8)
        for k in range(K):
            mem = np.flatnonzero(cl == k)
            if mem.shape[0] >= 2:
                order = rng.permutation(mem)
                side[order[int(rng.integers(1, mem.shape[0])):]] = 1
        XAB = None
        n_anch = np.zeros(K)
        split_sum = None
        n_anch0 = np.zeros(K)
    by_cluster = np.argsort(cl, kind="stable")  # members grouped by gold cluster
    for a in anchors:
        others = by_cluster[by_cluster != a]
        phi = pair_features(np.full(others.shape[0], lab[a], np.int64), lab[others])
        d = phi.shape[1]
        cnt_o = np.bincount(cl[others], minlength=K)
        S = np.zeros((K, d))
        nz = np.flatnonzero(cnt_o)
        S[nz] = np.add.reduceat(phi, np.concatenate([[0], np.cumsum(cnt_o[nz])[:-1]]), axis=0)
        cnt = size.copy()
        cnt[cl[a]] -= 1
        keep = np.flatnonzero(cnt > 0)
        S_rows.append(S[keep])
        n_rows.append(cnt[keep])
        seg_rows.append(np.full(keep.shape[0], n_seg, np.int64))
        gold_rows.append(keep == cl[a])
        n_seg += 1
        if merges:
            if XAB is None:
                XAB = np.zeros((K, K, d))
                split_sum = np.zeros((K, d))
            XAB[cl[a]] += S
            n_anch[cl[a]] += 1
            if side[a] == 0 and size[cl[a]] >= 2:
                mask = (cl[others] == cl[a]) & (side[others] == 1)
                split_sum[cl[a]] += phi[mask].sum(axis=0)
                n_anch0[cl[a]] += 1
        if alone and cnt[cl[a]] > 0:
            other = keep[keep != cl[a]]
            S_rows.append(S[other])
            n_rows.append(cnt[other])
            seg_rows.append(np.full(other.shape[0], n_seg, np.int64))
            gold_rows.append(np.zeros(other.shape[0], bool))
            n_seg += 1
    M = Mn = My = None
    if merges and XAB is not None:
        M, Mn, My = [], [], []
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(n_anch > 0, size / np.maximum(n_anch, 1), 0.0)
        for A in range(K):
            for B in range(A + 1, K):
                est = [XAB[A, B] * scale[A]] if n_anch[A] else []
                est += [XAB[B, A] * scale[B]] if n_anch[B] else []
                if est:
                    M.append(sum(est) / len(est))
                    Mn.append(size[A] * size[B])
                    My.append(0.0)
            n0 = int(np.sum((cl == A) & (side == 0)))
            if size[A] >= 2 and n_anch0[A] > 0:
                M.append(split_sum[A] * (n0 / n_anch0[A]))
                Mn.append(n0 * (size[A] - n0))
                My.append(1.0)
        M = np.array(M).reshape(-1, d)
    return PLData(np.vstack(S_rows), np.concatenate(n_rows), np.concatenate(seg_rows),
                  np.concatenate(gold_rows), n_seg, M, Mn, My)


def pl_data(blocks, pair_features, d, *, max_anchors, rng, alone=False, merges=False):
    """:func:`block_candidates` over several blocks, stacked.

    Parameters
    ----------
    blocks : iterable of (enc, gold)
        Encoded block and its gold array (None = unlabeled).
    pair_features : callable
        ``pair_features(enc, I, J) -> ndarray (len(I), d)``.
    d : int
        Number of features.
    max_anchors, rng, alone, merges
        As in :func:`block_candidates` (one generator for all blocks, in order).

    Returns
    -------
    PLData
    """
    parts = [block_candidates(lambda I, J, e=enc: pair_features(e, I, J), gold, max_anchors=max_anchors, rng=rng,
                              alone=alone, merges=merges)
             for enc, gold in blocks]
    parts = [p for p in parts if p.n_anchors and p.S.shape[0]]
    return PLData.concat(parts, d)


def _segment_logsumexp1(u, seg, n_seg):
    """log(1 + sum_{k: seg_k = a} exp(u_k)) per segment a (the 1 is the new cluster's exp(0))."""
    mx = np.zeros(n_seg)
    np.maximum.at(mx, seg, u)  # mx >= 0: the new cluster's score
    e = np.exp(u - mx[seg])
    tot = np.exp(-mx) + np.bincount(seg, weights=e, minlength=n_seg)
    return mx + np.log(tot), mx, tot


def pl_objective(params, Z, n, seg, gold, n_anchors, C, Xp=None, yp=None, wp=None, cp=None):
    """J(w, c) = 0.5 ||w||^2 - C * PL and its gradient (module docstring).

    Parameters
    ----------
    params : ndarray of shape (d + 1,)
        (w, c) in standardised coordinates.
    Z : ndarray of shape (m, d)
        Standardised candidate sums z_{i,c}.
    n : ndarray of shape (m,)
        Candidate sizes.
    seg : ndarray of int64, shape (m,)
    gold : ndarray of bool, shape (m,)
    n_anchors : int
    C : float > 0
    Xp : ndarray of shape (p, d) or None
        Standardised summed features of binary conditionals, for the combined
        objective J + sum_k wp_k [log(1 + exp(v_k)) - y_k v_k], v = Xp w + c cp: the
        pairwise logistic loss of the same factor f (rows = labeled pairs, cp = 1, as
        fitted by ``LogisticRegression``) and the cluster-merge conditionals (cp = |A| |B|).
    yp : ndarray of shape (p,) or None
        Labels (0 / 1) of those rows.
    wp : ndarray of shape (p,) or None
        Row weights (inverse L2 strengths) >= 0.
    cp : ndarray of shape (p,) or None
        Factor counts of the rows (multiplier of c).

    Returns
    -------
    value : float
        Natural-log units.
    grad : ndarray of shape (d + 1,)
    """
    w, c = params[:-1], params[-1]
    u = Z @ w + c * n
    lse, mx, tot = _segment_logsumexp1(u, seg, n_anchors)
    nll = float(lse.sum() - u[gold].sum())
    p = np.exp(u - lse[seg])
    g = p - gold
    val = 0.5 * float(w @ w) + C * nll
    grad = np.empty_like(params)
    grad[:-1] = w + C * (Z.T @ g)
    grad[-1] = C * float(n @ g)
    if Xp is not None and Xp.shape[0]:
        v = Xp @ w + c * cp
        val += float(wp @ (np.logaddexp(0.0, v) - yp * v))
        r = wp * (0.5 * (1.0 + np.tanh(0.5 * v)) - yp)  # w (sigmoid(v) - y), overflow-free
        grad[:-1] += Xp.T @ r
        grad[-1] += float(cp @ r)
    return val, grad


def fit_pseudolik(data, *, theta0, b0, C, mu=None, sd=None, pairs=None, C_pairs=0.0, C_merge=0.0,
                  max_iter=500, tol=1e-6):
    """Maximum pseudo-likelihood (theta, b), warm-started from (theta0, b0).

    Parameters
    ----------
    data : PLData
        Candidates (:func:`pl_data`).
    theta0 : ndarray of shape (d,)
        Start (e.g. the logistic-regression theta).
    b0 : float
        Start of the bias b.
    C : float > 0
        Inverse L2 strength on the standardised weights.
    mu, sd : ndarray of shape (d,) or None
        Per-pair feature means and standard deviations used to standardise (e.g. those
        of the logistic fit's pairs). ``None``: estimated from the candidate sums (mean
        per member, and the member-weighted spread of the per-candidate member means).
    pairs : (X, y) or None
        Labeled pairs' raw features, shape (p, d), and same-entity flags, shape (p,):
        with ``C_pairs`` > 0 their logistic loss is added to J (the combined objective,
        see :func:`pl_objective`).
    C_pairs : float >= 0, default 0
    C_merge : float >= 0, default 0
        Weight of the cluster-merge conditionals ``data.M`` (logistic loss of
        sum_{A x B} f, see :func:`block_candidates`) in J.
    max_iter : int
        L-BFGS iterations.
    tol : float
        ``gtol`` / ``ftol`` scale of L-BFGS.

    Returns
    -------
    theta : ndarray of shape (d,)
    b : float
    info : dict
        ``nll`` (-PL at the optimum, natural log), ``nll0`` (at the start), ``objective`` and
        ``objective0`` (J at the optimum and at the start), ``n_anchors``,
        ``n_candidates``, ``n_iter``, ``converged``, ``message``.

    Raises
    ------
    ValueError
        If there is no candidate row, ``C`` <= 0, or the shapes disagree.
    """
    from scipy.optimize import minimize

    if not (float(C) > 0.0):
        raise ValueError(f"C must be > 0; got {C!r}")
    if data.S.shape[0] == 0:
        raise ValueError("no labeled mention has a gold cluster mate or another cluster in its block; "
                         "cannot fit theta by pseudo-likelihood")
    d = data.S.shape[1]
    theta0 = np.asarray(theta0, dtype=np.float64)
    if theta0.shape != (d,):
        raise ValueError(f"theta0 must have shape ({d},); got {theta0.shape}")
    if mu is None or sd is None:
        # E[phi^2] is not recoverable from sums: the spread of the per-candidate member means
        mu = data.S.sum(axis=0) / data.n.sum()
        sd = np.sqrt(np.average((data.S / data.n[:, None] - mu) ** 2, axis=0, weights=data.n))
    mu = np.asarray(mu, dtype=np.float64)
    sd = np.array(sd, dtype=np.float64)
    if mu.shape != (d,) or sd.shape != (d,):
        raise ValueError(f"mu and sd must have shape ({d},); got {mu.shape} and {sd.shape}")
    sd[~(sd >= 1e-6)] = 1.0  # (near-)constant features: no scaling
    Z = (data.S - data.n[:, None] * mu) / sd
    w0 = theta0 * sd
    c0 = float(b0) + float(np.sum(theta0 * mu))
    x0 = np.concatenate([w0, [c0]])
    if not (float(C_pairs) >= 0 and float(C_merge) >= 0):
        raise ValueError(f"C_pairs and C_merge must be >= 0; got {C_pairs!r} and {C_merge!r}")
    rows = []  # (standardised X, y, weight, count)
    if pairs is not None and float(C_pairs) > 0:
        Xp = (np.asarray(pairs[0], dtype=np.float64) - mu) / sd
        yp = np.asarray(pairs[1], dtype=np.float64)
        if Xp.ndim != 2 or Xp.shape[1] != d or yp.shape != (Xp.shape[0],):
            raise ValueError(f"pairs must be (X of shape (p, {d}), y of shape (p,)); got {Xp.shape} and {yp.shape}")
        rows.append((Xp, yp, np.full(len(yp), float(C_pairs)), np.ones(len(yp))))
    if float(C_merge) > 0 and data.M.shape[0]:
        rows.append(((data.M - data.Mn[:, None] * mu) / sd, data.My, np.full(len(data.My), float(C_merge)), data.Mn))
    if rows:
        Xp, yp, wp, cp = (np.concatenate([r[k] for r in rows]) for k in range(4))
    else:
        Xp = yp = wp = cp = None
    args = (Z, data.n, data.seg, data.gold, data.n_anchors, float(C), Xp, yp, wp, cp)
    f0, _ = pl_objective(x0, *args)
    nll0 = (pl_objective(x0, *args[:6])[0] - 0.5 * float(w0 @ w0)) / float(C)
    res = minimize(pl_objective, x0, args=args, jac=True, method="L-BFGS-B",
                   options={"maxiter": int(max_iter), "gtol": float(tol), "ftol": float(tol) * 1e-3})
    w, c = res.x[:-1], float(res.x[-1])
    theta = np.ascontiguousarray(w / sd)
    b = c - float(np.sum(w * mu / sd))
    nll = (pl_objective(res.x, *args[:6])[0] - 0.5 * float(w @ w)) / float(C)
    info = {"nll": nll, "nll0": nll0, "objective": float(res.fun), "objective0": float(f0), "n_anchors": data.n_anchors,
            "n_candidates": int(data.S.shape[0]),
            "n_iter": int(res.nit), "converged": bool(res.success), "message": str(res.message)}
    return theta, float(b), info
