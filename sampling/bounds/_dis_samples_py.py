"""Pure-Python reference twin of ``_aobfs.AndOrTree.dis_samples`` (DIS rounds that return
each sample's whole configuration), run on the twin tree ``_aobfs_py.AndOrTree``; the
tests compare the two. Same uniforms, same splitmix64 stream, same floating-point order.
"""
import math

import numpy as np

_NEG_INF = -math.inf
_MASK = (1 << 64) - 1


class SplitMix64:
    """The splitmix64 generator (Steele, Lea & Flood 2014) of the compiled kernel: ``next()``
    gives the same doubles in [0, 1) for the same 64-bit seed."""

    def __init__(self, seed):
        self.state = int(seed) & _MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        z ^= z >> 31
        return (z >> 11) * (1.0 / 9007199254740992.0)


def subtree_sizes(children, roots):
    """Number of variables in each variable's pseudo subtree (itself included)."""
    size = np.ones(len(children), dtype=np.int64)
    order, stack = [], list(roots)
    while stack:
        v = int(stack.pop())
        order.append(v)
        stack.extend(int(c) for c in children[v])
    for v in reversed(order):
        size[v] += sum(int(size[c]) for c in children[v])
    return size


def _sample(tree, prop, u, x, solved):
    """One two-step draw from q_S (twin of the kernel's ``_sample``); appends the variables of
    the solved OR nodes reached to ``solved``; returns ln f/q_S."""
    root = tree.root_
    log_U = tree.log_Z_upper
    log_h, used, starts = 0.0, 0, []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.solved:
            solved.extend(int(c) for c in (tree.roots_ if node.var < 0 else tree.children_[node.var]))
            continue
        if node.children is None:
            starts.extend(int(c) for c in (tree.roots_ if node.var < 0 else tree.children_[node.var]))
            log_h += node.log_u
            continue
        for s in node.children:
            if s.solved:
                solved.append(int(s.var))
                continue
            kids = s.children
            if len(kids) == 1:
                c = kids[0]
            else:
                target = u[used]
                used += 1
                acc, c = 0.0, None
                for k in kids:
                    acc += math.exp(k.log_w + k.log_u - s.log_u)
                    if target < acc:
                        c = k
                        break
                if c is None:
                    best = _NEG_INF
                    for k in kids:
                        if k.log_u > _NEG_INF and k.log_w + k.log_u > best:
                            best, c = k.log_w + k.log_u, k
            x[s.var] = c.val
            stack.append(c)
    if not starts:
        return log_U - log_h
    log_q, log_g = prop.sample(np.asarray(starts, dtype=np.int64), x, u[used:])
    if log_g == _NEG_INF:
        return _NEG_INF
    return log_U + log_g - log_h - log_q


def _draw_solved(tree, prop, size, y, x, rng, max_tries, tally):
    """Exact draw of y and its pseudo subtree given its ancestors (twin of ``_draw_solved``)."""
    ra = [float(v) for v in tree.arc_fn(y, x)]
    card = len(ra)
    rh = [0.0] * card if tree.is_leaf_[y] else [float(v) for v in tree.heur_fn(y, x)]
    tally[1] += 1
    t = [ra[i] + rh[i] for i in range(card)]
    m = max(t)
    if m == _NEG_INF:
        x[y] = 0
        return
    tot = 0.0
    for v in t:
        tot += math.exp(v - m)
    kids = np.asarray(tree.children_[y], dtype=np.int64)
    n_u = int(size[y]) - 1
    for _ in range(max_tries):
        tally[0] += 1
        target = rng.next() * tot
        acc, idx = 0.0, card - 1
        for xv in range(card):
            acc += math.exp(t[xv] - m)
            if target < acc:
                idx = xv
                break
        while idx > 0 and t[idx] == _NEG_INF:
            idx -= 1
        x[y] = idx
        if kids.size == 0:
            return
        buf = np.array([rng.next() for _ in range(n_u)])
        log_q, log_g = prop.sample(kids, x, buf)
        ratio = log_g - log_q - rh[idx]
        if log_g > _NEG_INF and (ratio >= 0.0 or rng.next() < math.exp(ratio)):
            return
    tally[2] += 1


def dis_samples(tree, prop, n_rounds, n_exp, n_samp, max_exp, uniforms, seeds, max_tries, X, out_logw,
                out_logU, counts):
    """Twin of the compiled ``AndOrTree.dis_samples`` (same arguments after ``tree``, a
    ``_aobfs_py.AndOrTree``; ``prop`` has ``sample(starts, x, uniforms) -> (ln q, ln g)``)."""
    size = subtree_sizes(tree.children_, tree.roots_)
    tally = [0, 0, 0]
    i = 0
    for _ in range(int(n_rounds)):
        if n_exp > 0:
            k = n_exp if max_exp < 0 else min(n_exp, max_exp)
            if k > 0:
                k = tree.expand(k)
                if max_exp >= 0:
                    max_exp -= k
        log_U = tree.log_Z_upper
        for _ in range(int(n_samp)):
            X[i, :] = 0
            solved = []
            out_logw[i] = _sample(tree, prop, uniforms[i], X[i], solved)
            out_logU[i] = log_U
            if out_logw[i] > _NEG_INF:
                rng = SplitMix64(seeds[i])
                for y in solved:
                    _draw_solved(tree, prop, size, y, X[i], rng, int(max_tries), tally)
            i += 1
    for t in range(3):
        counts[t] += tally[t]
    return i
