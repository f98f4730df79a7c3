"""Huge one-name synthetic blocks: the regime of the racing paper (many big, similar clusters).

:func:`synthesize_block` makes one or a few blocks of mentions whose authors all print
(variants of) one name, like the thousands of "Wei Wang"s of a real digital library
(Chen & Ghahramani 2016 ran racing Gibbs on clusters of up to 1,829 mentions with up to
215 candidate clusters per step).  What is drawn:

* **Cluster sizes.** The mentions per author follow a discrete power law
  P(s) ∝ s^-a on 1 .. ``max_cluster`` (``size_exponent`` a, default 1.8), drawn until
  the block is full (the last author trimmed), so most authors have a handful of papers
  and a few have thousands.
* **One name.** Every author of block b has the surname of block b (Wang, Li, Zhang, ...)
  and, for 70% of them, the block's common first name (Wei, ...); the others a first
  name with the same initial (Wen, Wenjie, Weiping, ...).  Each mention prints
  ``First Last``, ``F. Last``, ``First M. Last`` or ``F. M. Last`` (30% of the authors
  have a middle initial), so the block key (``"w wang"``) is the same for all and the
  name alone separates few authors.
* **What distinguishes authors** (as in real data, no single field suffices):
  each author has a research *field* (one of ``n_fields``, shared with many other
  authors of the block) and a personal *collaborator circle* (5-40 coauthors: 85% their
  own, 15% from a pool of 30 researchers of the field, so authors of one field share a
  few), a personal vocabulary (6 title words of their own beside the field's 20),
  2-3 favourite venues of the field, a career (start year, 5-35 years) and a home
  affiliation (shown on half the mentions; 10% print another one).  Each paper takes
  0-5 coauthors from the circle (Zipf: a few regular collaborators), a title of 5-10
  words (45% field words, 35% personal, 20% common), one of the venues, a year in the
  career.
* **Gold** is ``"<block>/a<k>"`` for author k of the block.

Deterministic by seed: the same arguments and seed give the same frame.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sampling.utils.rng import as_generator

__all__ = ["synthesize_block", "power_law_sizes"]

# (surname, common first name, other first names with the same initial)
_NAMES = (
    ("Wang", "Wei", "Wen Wenjie Weiping Weimin Wu Wanli Weihua"),
    ("Li", "Jing", "Jun Jie Jian Jinhua Jiayi Junjie Jia"),
    ("Zhang", "Yan", "Yu Yong Yang Yifan Yuan Yiming Ying"),
    ("Kim", "Ji-Hoon", "Jae Jin Jong Ji-Woo Jun-Ho Jisoo Joon"),
    ("Smith", "John", "James Jennifer Jason Julia Joseph Jessica Jack"),
    ("Kumar", "Amit", "Anil Ajay Arun Anand Ashok Anita Arjun"),
)
_MIDDLES = tuple("ABCDEFGHJKLMNPRSTW")
_SYL = ("ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si "
        "so su ta te ti to tu va ve vi vo za ze zi zo han lin dor mar ten vel sor kar mir").split()
_COMMON = ("a for of the and in with on to using based analysis approach method model system new study "
           "towards efficient learning data network framework algorithm evaluation design").split()


def power_law_sizes(gen, n, exponent, max_size):
    """Cluster sizes s_k ~ P(s) ∝ s^-exponent on 1..max_size, drawn until they sum to n.

    Returns an int64 array summing exactly to ``n`` (the last size trimmed), in draw order.
    """
    s = np.arange(1, max_size + 1, dtype=np.float64)
    p = s ** -float(exponent)
    p /= p.sum()
    mean = float((s * p).sum())
    out = []
    total = 0
    while total < n:
        k = max(16, int(1.2 * (n - total) / mean) + 16)
        d = gen.choice(max_size, size=k, p=p) + 1
        cum = total + np.cumsum(d)
        stop = int(np.searchsorted(cum, n))
        if stop < k:
            d = d[:stop + 1].copy()
            d[-1] -= int(cum[stop] - n)
            out.append(d)
            break
        out.append(d)
        total = int(cum[-1])
    return np.concatenate(out).astype(np.int64)


def _words(gen, n, n_syll, seen):
    """n new made-up words of at least n_syll syllables (not in ``seen``, which is extended).

    More syllables are used when the n_syll-syllable words would run short, so that
    rejection sampling stays cheap (never near the capacity).
    """
    syl = np.asarray(_SYL, dtype=object)
    while len(syl) ** n_syll < 4 * (n + len(seen)):
        n_syll += 1
    out = []
    while len(out) < n:
        for row in syl[gen.integers(0, len(syl), size=(2 * (n - len(out)) + 8, n_syll))]:
            w = "".join(row)
            if w not in seen:
                seen.add(w)
                out.append(w)
                if len(out) == n:
                    break
    return out


def _check(n_mentions, n_blocks, size_exponent, max_cluster, n_fields):
    for name, v in (("n_mentions", n_mentions), ("n_blocks", n_blocks), ("n_fields", n_fields)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"the {name} parameter of synthesize_block must be an int >= 1; got {v!r}")
    if n_blocks > len(_NAMES):
        raise ValueError(f"the n_blocks parameter of synthesize_block must be at most {len(_NAMES)}; "
                         f"got {n_blocks}")
    if not size_exponent > 1.0:
        raise ValueError(f"the size_exponent parameter must be > 1; got {size_exponent!r}")
    if max_cluster is not None and (isinstance(max_cluster, bool) or int(max_cluster) < 1):
        raise ValueError(f"the max_cluster parameter must be an int >= 1; got {max_cluster!r}")


def synthesize_block(n_mentions, *, rng=None, n_blocks=1, size_exponent=1.8, max_cluster=None,
                     n_fields=None):
    """Generate ``n_mentions`` mentions in ``n_blocks`` one-name blocks with heavy-tailed authors.

    Parameters
    ----------
    n_mentions : int
        Total mentions (>= 1), split evenly over the blocks.
    rng : None, int or numpy.random.Generator
        Randomness; same seed, same frame.
    n_blocks : int, default 1
        Number of blocks (at most 6), one surname each ("w wang", "j li", ...).
    size_exponent : float > 1, default 1.8
        Exponent a of the power law P(s) ∝ s^-a of the mentions per author.
    max_cluster : int, optional
        Largest possible author size; default min(3000, max(1, block size // 10)).
    n_fields : int, optional
        Research fields per block; default max(2, authors / 40) rounded.

    Returns
    -------
    pandas.DataFrame of shape (n_mentions, 9)
        The mention schema (:data:`coref.io.MENTION_COLUMNS`), ``mention_id`` ``"b<i>"``.

    Raises
    ------
    ValueError
        If a size or the exponent is out of range.
    """
    _check(n_mentions, n_blocks, size_exponent, max_cluster, n_fields or 1)
    gen = as_generator(rng)
    per = [n_mentions // n_blocks + (1 if b < n_mentions % n_blocks else 0) for b in range(n_blocks)]
    frames = []
    offset = 0
    seen = set()
    for b, nb in enumerate(per):
        if nb == 0:
            continue
        frames.append(_one_block(gen, b, nb, offset, size_exponent, max_cluster, n_fields, seen))
        offset += nb
    return pd.concat(frames, ignore_index=True)


def _one_block(gen, b, n, offset, exponent, max_cluster, n_fields, seen):
    """One block of n mentions (see :func:`synthesize_block`)."""
    surname, common_first, others = _NAMES[b]
    others = others.split()
    key = f"{common_first[0].lower()} {surname.lower()}"
    mc = int(max_cluster) if max_cluster is not None else min(3000, max(1, n // 10))
    sizes = power_law_sizes(gen, n, exponent, mc)
    n_auth = len(sizes)
    nf = int(n_fields) if n_fields is not None else max(2, int(round(n_auth / 40)))
    # ---- authors: name, field, circle, vocabulary, venues, career, affiliation
    first = np.where(gen.random(n_auth) < 0.7, common_first,
                     np.asarray(others, dtype=object)[gen.integers(0, len(others), n_auth)])
    has_mid = gen.random(n_auth) < 0.3
    mid = np.asarray(_MIDDLES, dtype=object)[gen.integers(0, len(_MIDDLES), n_auth)]
    field = gen.integers(0, nf, n_auth)
    field_words = np.array(_words(gen, nf * 20, 3, seen), dtype=object).reshape(nf, 20)
    own_words = np.array(_words(gen, n_auth * 6, 3, seen), dtype=object).reshape(n_auth, 6)
    n_ven = max(4, nf * 3)
    ven_names = np.array([f"Proc. {w.capitalize()} Conf." if k % 2 else f"J. {w.capitalize()}"
                         for k, w in enumerate(_words(gen, n_ven, 2, seen))], dtype=object)
    field_ven = gen.integers(0, n_ven, (nf, 6))
    a_ven = field_ven[field[:, None], gen.integers(0, 6, (n_auth, 3))]
    start = gen.integers(1975, 2015, n_auth)
    length = gen.integers(5, 36, n_auth)
    n_aff = max(2, n_auth // 5)
    aff_names = np.array([f"Dept. of {w.capitalize()}, {v.capitalize()} University"
                          for w, v in zip(_words(gen, n_aff, 2, seen), _words(gen, n_aff, 2, seen))],
                         dtype=object)
    a_aff = gen.integers(0, n_aff, n_auth)
    pool_per_field = 30
    co_first = np.array([w.capitalize() for w in _words(gen, 1000, 2, seen)], dtype=object)
    co_last = np.array([w.capitalize() for w in _words(gen, 1000, 3, seen)], dtype=object)
    co_names = (co_first[gen.integers(0, 1000, nf * pool_per_field)] + " "
                + co_last[gen.integers(0, 1000, nf * pool_per_field)])
    circle_len = np.minimum(5 + (sizes // 3), 40)
    # ---- mentions
    author = np.repeat(np.arange(n_auth), sizes)
    gen.shuffle(author)
    variant_init = gen.random(n) < 0.35
    show_mid = has_mid[author] & (gen.random(n) < 0.6)
    f = np.array([s[0] + "." if vi else s for s, vi in zip(first[author], variant_init)], dtype=object)
    printed = [fi + (" " + m + "." if sm else "") + " " + surname
               for fi, m, sm in zip(f, mid[author], show_mid)]
    year = start[author] + (gen.random(n) * length[author]).astype(np.int64)
    venue = ven_names[a_ven[author, gen.integers(0, 3, n)]]
    aff_idx = np.where(gen.random(n) < 0.1, gen.integers(0, n_aff, n), a_aff[author])
    affiliation = np.where(gen.random(n) < 0.5, aff_names[aff_idx], "")
    t_len = gen.integers(5, 11, n)
    src = gen.random((n, 10))
    fw = field_words[field[author][:, None], gen.integers(0, 20, (n, 10))]
    ow = own_words[author[:, None], gen.integers(0, 6, (n, 10))]
    cw = np.asarray(_COMMON, dtype=object)[gen.integers(0, len(_COMMON), (n, 10))]
    words = np.where(src < 0.45, fw, np.where(src < 0.8, ow, cw))
    titles = [" ".join(row[:k]).capitalize() for row, k in zip(words.tolist(), t_len.tolist())]
    # circles: each author's collaborators from the field pool, Zipf-weighted within
    circ_seed = gen.integers(0, 2**62, n_auth)
    n_co = np.minimum(gen.poisson(2.0, n), 5)
    co_u = gen.random((n, 5))
    coauthors = np.empty(n, dtype=object)
    circles = {}
    for m in range(n):
        a = int(author[m])
        c = circles.get(a)
        if c is None:
            # personal collaborators (first + last name drawn from 1000 x 1000), 15% of
            # them from the field's pool of 30 names that many of its authors share
            g = np.random.default_rng(int(circ_seed[a]))
            ln = int(circle_len[a])
            n_sh = int(g.binomial(ln, 0.15))
            own = co_first[g.integers(0, 1000, ln - n_sh)] + " " + co_last[g.integers(0, 1000, ln - n_sh)]
            sh = co_names[field[a] * pool_per_field + g.choice(pool_per_field, size=n_sh, replace=False)]
            c = [str(x) for x in np.concatenate([own, sh])[g.permutation(ln)]]
            circles[a] = c
        k = int(n_co[m])
        # Zipf over the circle: index floor(L * u^3) favours its first members
        idx = np.unique((len(c) * co_u[m, :k] ** 3).astype(np.int64))
        coauthors[m] = [c[t] for t in idx]
    return pd.DataFrame({
        "mention_id": pd.array([f"b{offset + m}" for m in range(n)], dtype=str),
        "block": pd.array([key] * n, dtype=str),
        "name": pd.array(printed, dtype=str),
        "coauthors": coauthors,
        "title": pd.array(titles, dtype=str),
        "venue": pd.array(venue.tolist(), dtype=str),
        "year": pd.array(year, dtype="Int64"),
        "affiliation": pd.array(affiliation.tolist(), dtype=str),
        "gold": pd.array([f"{key}/a{a}" for a in author.tolist()], dtype="string"),
    })
