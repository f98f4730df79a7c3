"""Pure-Python reference twin of ``coref.gibbs._start`` (same block -> same labels).

Slow; used by the tests only.  See ``coref.gibbs._start`` for the algorithm.
"""
from coref.factors._factors_py import block_factor


def greedy_start(enc, theta, bias, max_members, labels):
    """Twin of the compiled ``greedy_start``: labels into ``labels``; (clusters, factors)."""
    n = int(enc.n)
    if max_members < 1:
        raise ValueError(f"max_members must be >= 1; got {max_members}")
    if len(labels) != n:
        raise ValueError(f"labels must have one entry per mention ({n}); got {len(labels)}")
    ptr = [int(x) for x in enc.co_ptr[: n + 1]]
    ids = [int(x) for x in enc.co_ids[: ptr[n]]] if n else []
    postings = {}
    for i in range(n):
        for a in ids[ptr[i]:ptr[i + 1]]:
            postings.setdefault(a, []).append(i)
    head, size, lab = [], [], []
    ev = 0
    for i in range(n):
        cand = []
        seen = set()
        for a in ids[ptr[i]:ptr[i + 1]]:
            for j in postings[a]:
                if j >= i:
                    break
                if lab[j] not in seen:
                    seen.add(lab[j])
                    cand.append(lab[j])
        best, bs = -1, 0.0
        for c in cand:
            s = 0.0
            for j in head[c]:
                s += block_factor(enc, theta, bias, i, j)
            ev += len(head[c])
            score = s * (float(size[c]) / float(len(head[c])))
            if score > 0.0 and (best < 0 or score > bs or (score == bs and c < best)):
                best, bs = c, score
        if best < 0:
            best = len(size)
            head.append([])
            size.append(0)
        lab.append(best)
        if len(head[best]) < max_members:
            head[best].append(i)
        size[best] += 1
    labels[:] = lab
    return len(size), ev
