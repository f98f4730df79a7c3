"""Pure-Python reference twin of the compiled factor kernel (``coref.factors._factors``).

Slow; used by the tests to check the Cython kernel feature by feature.  The
operations are done in the same order as in ``_phi.pxd`` so that results
agree to the last bit on the same inputs.
"""
import math

import numpy as np

from coref.factors.names import BLOCK_SIZE_SATURATION, COMPONENT_DAMPING, N_BASE, N_FEATURES, SAME_PAPER_PENALTY


def _shared(ptr_a, ids_a, i, ptr_b, ids_b, j):
    """Positions (a, b) of the ids that row i of list a and row j of list b share, increasing."""
    a, ae, b, be = int(ptr_a[i]), int(ptr_a[i + 1]), int(ptr_b[j]), int(ptr_b[j + 1])
    while a < ae and b < be:
        x, y = int(ids_a[a]), int(ids_b[b])
        if x == y:
            yield a, b
            a += 1
            b += 1
        elif x < y:
            a += 1
        else:
            b += 1


def _dot_sorted(ptr, ids, w, i, j):
    """(sum of w_i * w_j, count, sum of w_i) over the ids rows i and j share."""
    s = 0.0
    sw = 0.0
    c = 0
    for a, b in _shared(ptr, ids, i, ptr, ids, j):
        s += float(w[a]) * float(w[b])
        sw += float(w[a])
        c += 1
    return s, c, sw


def _dot2(pa, ia, wa, i, pb, ib, wb, j):
    s = 0.0
    for a, b in _shared(pa, ia, i, pb, ib, j):
        s += float(wa[a]) * float(wb[b])
    return s


def _match_names(ptr, ids, fn, i, j):
    ok = bad = 0
    for a, b in _shared(ptr, ids, i, ptr, ids, j):
        fa, fb = int(fn[a]), int(fn[b])
        if fa < 0 or fb < 0 or fa == fb:
            ok += 1
        else:
            bad += 1
    return ok, bad


def _dense_dot(x, xo, y, yo, k):
    s = 0.0
    for t in range(k):
        s += float(x[xo + t]) * float(y[yo + t])
    return s


def _component_damping(logsize_a, logsize_b):
    """min(1, COMPONENT_DAMPING / sqrt(|A| |B|)) from two comp1 components' log sizes (as the kernel)."""
    damp = float(COMPONENT_DAMPING) * math.exp(-0.5 * (float(logsize_a) + float(logsize_b)))
    return damp if damp < 1.0 else 1.0


def block_phi(enc, i, j):
    """The N_FEATURES features phi(x_i, x_j) as a list of floats."""
    phi = [0.0] * N_FEATURES
    log_n = math.log(float(min(enc.n, BLOCK_SIZE_SATURATION))) if enc.n > 0 else 0.0
    ni = int(enc.co_ptr[i + 1] - enc.co_ptr[i])
    nj = int(enc.co_ptr[j + 1] - enc.co_ptr[j])
    _, c, sw = _dot_sorted(enc.co_ptr, enc.co_ids, enc.co_w, i, j)
    phi[0] = math.log1p(float(c))
    phi[1] = c / float(ni + nj - c) if ni + nj - c > 0 else 0.0
    phi[2] = sw
    phi[3] = 1.0 if c >= 1 else 0.0
    phi[4] = 1.0 if (ni == 0 or nj == 0) else 0.0
    phi[5] = 1.0 if c >= 2 else 0.0
    phi[6] = _dot_sorted(enc.ti_ptr, enc.ti_ids, enc.ti_w, i, j)[0]
    phi[7], cv, _ = _dot_sorted(enc.ve_ptr, enc.ve_ids, enc.ve_w, i, j)
    vi, vj = int(enc.venue_id[i]), int(enc.venue_id[j])
    phi[8] = 1.0 if (vi >= 0 and vi == vj) else 0.0
    nvi = int(enc.ve_ptr[i + 1] - enc.ve_ptr[i])
    nvj = int(enc.ve_ptr[j + 1] - enc.ve_ptr[j])
    phi[49] = 1.0 if (nvi > 0 and nvj > 0 and phi[8] == 0.0 and (cv == nvi or cv == nvj)) else 0.0
    ai, aj = int(enc.affil_id[i]), int(enc.affil_id[j])
    if ai >= 0 and aj >= 0:
        phi[9] = _dot_sorted(enc.af_ptr, enc.af_ids, enc.af_w, i, j)[0]
        phi[10] = 0.0
        phi[11] = 1.0 if ai == aj else 0.0
    else:
        phi[9], phi[10], phi[11] = 0.0, 1.0, 0.0
    yi, yj = int(enc.year[i]), int(enc.year[j])
    if yi >= 0 and yj >= 0:
        gap = math.fabs(float(yi - yj))
        if gap > 30.0:
            gap = 30.0
        phi[12] = gap / 10.0
        phi[13] = (gap / 10.0) * (gap / 10.0)
        phi[14] = 0.0
    else:
        phi[12], phi[13], phi[14] = 0.0, 0.0, 1.0
    fi, fj = int(enc.first_code[i]), int(enc.first_code[j])
    ii, ij = int(enc.first_init[i]), int(enc.first_init[j])
    if fi >= 0 and fi == fj:
        phi[15] = 1.0
    elif ii < 0 or ij < 0 or ii == ij:
        phi[15] = 0.5
    else:
        phi[15] = 0.0
    phi[16] = log_n * phi[0]
    phi[17] = 1.0 if int(enc.comp1[i]) == int(enc.comp1[j]) else 0.0
    phi[18] = 1.0 if int(enc.comp2[i]) == int(enc.comp2[j]) else 0.0
    phi[19] = phi[17] * float(enc.comp1_logsize[i])
    # terms of two different comp1 components (phi[20..23], phi[47]) are damped
    damp = 1.0 if phi[17] > 0.0 else _component_damping(enc.comp1_logsize[i], enc.comp1_logsize[j])
    if phi[17] > 0.0:
        phi[20] = phi[21] = phi[22] = 1.0
    else:
        ci, cj = int(enc.comp1[i]), int(enc.comp1[j])
        phi[20] = _dot_sorted(enc.pt_ptr, enc.pt_ids, enc.pt_w, ci, cj)[0] * damp
        phi[21] = _dot_sorted(enc.pv_ptr, enc.pv_ids, enc.pv_w, ci, cj)[0] * damp
        phi[22] = _dot_sorted(enc.pa_ptr, enc.pa_ids, enc.pa_w, ci, cj)[0] * damp
    phi[23], phi[24], phi[25] = 0.0, 1.0, 0.0
    if phi[17] == 0.0:
        ci, cj = int(enc.comp1[i]), int(enc.comp1[j])
        a0, a1 = int(enc.comp_ymin[ci]), int(enc.comp_ymax[ci])
        b0, b1 = int(enc.comp_ymin[cj]), int(enc.comp_ymax[cj])
        if a0 >= 0 and b0 >= 0:
            if a0 > b1:
                gap = float(a0 - b1)
            elif b0 > a1:
                gap = float(b0 - a1)
            else:
                gap = 0.0
            if gap > 30.0:
                gap = 30.0
            phi[23] = gap / 10.0 * damp
        dot = _dot2(enc.ti_ptr, enc.ti_ids, enc.ti_w, i, enc.pt_ptr, enc.pt_ids, enc.pt_w, cj)
        dot += _dot2(enc.ti_ptr, enc.ti_ids, enc.ti_w, j, enc.pt_ptr, enc.pt_ids, enc.pt_w, ci)
        phi[24] = 0.5 * dot
        phi[25] = float(enc.comp1_logsize[i]) + float(enc.comp1_logsize[j])
    phi[26] = 1.0 if int(enc.comp3[i]) == int(enc.comp3[j]) else 0.0
    phi[27] = log_n
    for k in range(5):
        phi[28 + k] = float(enc.block_stats[k])
    n_ok, n_bad = _match_names(enc.ck_ptr, enc.ck_ids, enc.ck_fn, i, j)
    phi[33] = math.log1p(float(n_ok + n_bad))
    phi[34] = phi[33] - phi[0] if phi[33] > phi[0] else 0.0
    phi[51] = math.log1p(float(n_ok))
    phi[52] = math.log1p(float(n_bad))
    fi, fj = int(enc.first_code[i]), int(enc.first_code[j])
    li, lj = int(enc.init_len[i]), int(enc.init_len[j])
    ci_, cj_ = int(enc.init_code[i]), int(enc.init_code[j])
    if li > 0 and lj > 0:
        compat = (cj_ >> (5 * (lj - li))) == ci_ if li <= lj else (ci_ >> (5 * (li - lj))) == cj_
    else:
        compat = False
    gi, gj = int(enc.given_code[i]), int(enc.given_code[j])
    phi[39] = 1.0 if (gi >= 0 and gi == gj) else 0.0
    phi[35] = 1.0 if ((fi >= 0 and fi == fj) or phi[39] > 0.0) else 0.0
    phi[36] = 1.0 if ((fi >= 0 and fj >= 0 and fi != fj and phi[39] == 0.0)
                      or (li > 0 and lj > 0 and int(enc.first_init[i]) != int(enc.first_init[j]))) else 0.0
    phi[37] = 1.0 if (phi[35] == 0.0 and phi[36] == 0.0 and compat and (fi < 0 or fj < 0)) else 0.0
    mi, mj = int(enc.mid_init[i]), int(enc.mid_init[j])
    phi[38] = 1.0 if (mi >= 0 and mj >= 0 and mi != mj) else 0.0
    ri, rj = float(enc.name_rarity[i]), float(enc.name_rarity[j])
    phi[40] = (ri if ri < rj else rj) if phi[35] > 0.0 else 0.0
    phi[41] = float(enc.init_amb[i]) if phi[37] > 0.0 else 0.0
    if enc.ab_ptr[i + 1] > enc.ab_ptr[i] and enc.ab_ptr[j + 1] > enc.ab_ptr[j]:
        phi[42], phi[43] = _dot_sorted(enc.ab_ptr, enc.ab_ids, enc.ab_w, i, j)[0], 0.0
    else:
        phi[42], phi[43] = 0.0, 1.0
    if enc.kw_ptr[i + 1] > enc.kw_ptr[i] and enc.kw_ptr[j + 1] > enc.kw_ptr[j]:
        phi[44], phi[45] = _dot_sorted(enc.kw_ptr, enc.kw_ids, enc.kw_w, i, j)[0], 0.0
    else:
        phi[44], phi[45] = 0.0, 1.0
    k = int(enc.n_topics)
    if k > 0:
        phi[46] = _dense_dot(enc.topic, i * k, enc.topic, j * k, k)
        if phi[17] > 0.0:
            phi[47] = 1.0
        else:
            phi[47] = _dense_dot(enc.comp_topic, int(enc.comp1[i]) * k, enc.comp_topic, int(enc.comp1[j]) * k, k) * damp
    else:
        phi[46] = phi[47] = 0.0
    dot = _dot2(enc.va_ptr, enc.va_ids, enc.va_w, i, enc.vt_ptr, enc.vt_ids, enc.vt_w, j)
    dot += _dot2(enc.va_ptr, enc.va_ids, enc.va_w, j, enc.vt_ptr, enc.vt_ids, enc.vt_w, i)
    phi[48] = 1.0 if dot > 0.0 else 0.0
    phi[50] = phi[46] * phi[12]
    for k in range(N_BASE):
        phi[N_BASE + k] = phi[k] * phi[17]
    return phi


def block_factor(enc, theta, bias, i, j):
    """f_theta(x_i, x_j) = bias + sum_k theta_k phi_k (same summation order as C: base, then interactions)."""
    phi = block_phi(enc, i, j)
    s = float(bias)
    for k in range(N_BASE):
        s += float(theta[k]) * phi[k]
    if phi[17] != 0.0:  # interaction half: phi[N_BASE + k] = phi[k] * same_comp1
        for k in range(N_BASE):
            s += float(theta[N_BASE + k]) * phi[k]
    pi, pj = int(enc.paper_code[i]), int(enc.paper_code[j])
    if pi >= 0 and pi == pj:  # paper mates (coref.factors.papers): two authors, a constraint, not a feature
        ci = enc.co_ids[enc.co_ptr[i]:enc.co_ptr[i + 1]].tolist()
        if ci != enc.co_ids[enc.co_ptr[j]:enc.co_ptr[j + 1]].tolist():
            s -= SAME_PAPER_PENALTY
    return s


def pair_features(enc, I, J, out):
    for k in range(len(I)):
        out[k, :] = block_phi(enc, int(I[k]), int(J[k]))


def pair_factors(enc, theta, bias, I, J, out):
    for k in range(len(I)):
        out[k] = block_factor(enc, theta, bias, int(I[k]), int(J[k]))


def member_sums(enc, theta, bias, order, start, size, code, rows, out):
    """Twin of the compiled ``member_sums``: per row, f summed over the other members of its cluster."""
    for k, i in enumerate(rows):
        c = code[i]
        s = 0.0
        for p in range(start[c], start[c] + size[c]):
            j = order[p]
            if j != i:
                s += block_factor(enc, theta, bias, int(i), int(j))
        out[k] = s


def factor_matrix(enc, theta, bias, out, memo=True, rows=None):
    # (memo, rows: the kernel's evaluation strategies; same values)
    n = enc.n
    for i in range(n):
        out[i, i] = 0.0
        for j in range(i + 1, n):
            f = block_factor(enc, theta, bias, i, j)
            out[i, j] = f
            out[j, i] = f


def factor_rate(enc, theta, bias, n_evals):
    n = enc.n
    if n < 2:
        return 0.0
    s, i, j = 0.0, 0, 1
    for _ in range(int(n_evals)):
        s += block_factor(enc, theta, bias, i, j)
        j += 1
        if j >= n:
            i += 1
            if i >= n - 1:
                i = 0
            j = i + 1
    return s


n_features = N_FEATURES
__all__ = ["block_phi", "block_factor", "pair_features", "pair_factors", "factor_matrix",
           "factor_rate", "n_features", "np"]
