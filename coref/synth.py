"""Realistic synthetic citation mentions with gold authors, for scale tests.

The generator mimics what makes author coreference hard and large:

* **Ambiguous names.** Surnames and first names are drawn from Zipf
  distributions over pools that start with real common names (Wang, Li,
  Zhang, Smith, Kim, Gupta, Müller, García, ...) and continue with syllable-made
  names for the long tail, so a few first-initial + last-name blocks hold
  thousands of mentions (``"j wang"``) while most hold a handful.
* **Name variants.** Each mention prints its author as ``First Last``,
  ``F. Last``, ``First M. Last`` or ``F. M. Last``, and sometimes without
  accents (``José`` / ``Jose``). The block key (first initial + last name,
  accents stripped) is the same for every variant of one author.
* **Coauthor communities.** Authors belong to communities; each paper draws
  its authors from one community (weighted by a log-normal productivity), so
  coauthor overlap is informative, as in real data. Each mention carries its
  paper's ``paper_id`` (``"p<k>"``), so two authors of one paper in one block
  are kept apart (:mod:`coref.factors.papers`).
* **Topics, venues, years, affiliations.** Each community has a topic (a
  title vocabulary mixed with common words), a few venues (Zipf), an active
  period (paper years around a centre, a few NA) and authors have a home
  affiliation (printed on about half of their mentions, sometimes a different
  one).

Everything is drawn in bulk with numpy (one Generator, ``rng``) and assembled
with vectorised string operations; only the final per-mention coauthor lists are
Python lists, as the mention schema requires.
"""
from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd

from sampling.utils.rng import as_generator

__all__ = ["synthesize_mentions"]

_SURNAMES = (
    "Wang Li Zhang Liu Chen Yang Huang Zhao Wu Zhou Xu Sun Ma Zhu Hu Guo He Lin Gao Luo Zheng Liang Xie Tang Song "
    "Smith Johnson Williams Brown Jones Miller Davis Wilson Anderson Taylor Thomas Moore Martin Jackson Thompson White "
    "Kim Lee Park Choi Jung Kang Cho Yoon Nguyen Tran Pham Le "
    "Gupta Sharma Kumar Singh Patel Agarwal Reddy Rao Iyer Das "
    "Müller Schmidt Schneider Fischer Weber Meyer Wagner Becker Schulz Hoffmann "
    "García Rodríguez Martínez López González Pérez Sánchez Ramírez Fernández Gómez "
    "Rossi Russo Ferrari Esposito Bianchi Romano Colombo Tanaka Suzuki Sato Takahashi Watanabe Ito Yamamoto "
    "Silva Santos Oliveira Souza Pereira Costa Ivanov Smirnov Kuznetsov Popov Cohen Levi Dubois Lefèvre Moreau Nielsen "
    "Jensen Hansen Andersen Novák Kowalski Nowak Wiśniewski Yılmaz Kaya Demir"
).split()
_FIRST = (
    "Wei Jing Li Yan Hui Jun Ming Lei Jie Xin Hao Yu Bin Feng Tao Ying Qiang Ping Gang Hong "
    "John David Michael James Robert William Richard Thomas Mark Daniel Paul Steven Andrew Peter Christopher "
    "Mary Jennifer Linda Elizabeth Susan Sarah Karen Lisa Laura Anna Maria "
    "Ji-Hoon Min-Jun Seo-Yeon Hyun Sung "
    "Amit Rahul Ajay Anil Sanjay Priya Deepak Vijay Ravi Sunil "
    "Hans Jürgen Klaus Stefan Andreas Thomas Wolfgang Uwe "
    "José Juan Carlos Luis Javier Miguel Sofía Lucía Ana Pablo "
    "Giuseppe Marco Luca Francesco Alessandro Hiroshi Takeshi Kenji Yuki Akira "
    "João Pedro Lucas Gabriel Ivan Sergei Dmitri Olga Natalia François Zoë Søren Jiří Łukasz"
).split()
_COMMON_WORDS = (
    "a for of the and in with on to using based analysis approach method model system new study towards efficient "
    "learning data network networks framework algorithm algorithms evaluation design performance robust scalable "
    "distributed adaptive optimal fast improved novel automatic via under large multi"
).split()
_TOPIC_STEMS = (
    "graph query database index retrieval ranking search semantic ontology web xml mining cluster classification "
    "neural deep kernel bayesian inference sampling markov gaussian sparse matrix tensor optimization convex "
    "wireless sensor routing protocol mobile channel mimo antenna signal spectrum energy power circuit vlsi chip "
    "image video segmentation recognition tracking detection vision shape texture face pose camera "
    "protein gene sequence genome molecular cell drug clinical patient imaging diagnosis "
    "security privacy encryption attack malware authentication trust cryptographic "
    "compiler program verification type logic concurrency memory cache processor parallel gpu scheduling cloud "
    "robot control planning navigation manipulation agent game auction market economic social recommendation "
    "language speech translation parsing dialogue text sentiment entity corpus grammar"
).split()
_SYLLABLES = ("ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si "
              "so su ta te ti to tu va ve vi vo za ze zi zo han lin dor mar ten vel sor kar mir").split()
_PLACES = ("North South East West New Central Lake River Mount Bay Port Saint").split()
_DEPTS = ("Computer Science;Electrical Engineering;Mathematics;Physics;Biology;Statistics;Chemistry;"
          "Information Systems;Mechanical Engineering;Medicine").split(";")
_VARIANTS = ("full", "initial", "full_middle", "initial_middle")


def _ascii(s):
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _zipf_probs(n, a, offset=2.7):
    """Zipf-Mandelbrot probabilities p_k ∝ 1 / (k + offset)^a, k = 0..n-1."""
    w = 1.0 / (np.arange(n, dtype=np.float64) + offset) ** a
    return w / w.sum()


def _made_up(gen, n, n_syll, capitalize=True):
    """n distinct made-up words of at least n_syll syllables each (list of str)."""
    syl = np.asarray(_SYLLABLES, dtype=object)
    while len(syl) ** n_syll < 4 * n:  # keep rejection sampling cheap: never near the capacity
        n_syll += 1
    out, seen = [], set()
    while len(out) < n:
        k = max(2 * (n - len(out)), 16)
        parts = syl[gen.integers(0, len(syl), size=(k, n_syll))]
        for row in parts:
            w = "".join(row)
            w = w.capitalize() if capitalize else w
            if w not in seen:
                seen.add(w)
                out.append(w)
                if len(out) == n:
                    break
    return out


def _pool(gen, base, n, n_syll):
    """Name pool of size max(n, len(base)): real names first (Zipf head), made-up tail."""
    base = list(dict.fromkeys(base))
    if n <= len(base):
        return base[:n]
    tail = [w for w in _made_up(gen, n - len(base) + len(base) // 2, n_syll) if w not in set(base)]
    return base + tail[: n - len(base)]


def _check_args(n_mentions, n_authors, papers_per_author, zipf_a, unlabeled_fraction, initial_prob):
    if isinstance(n_mentions, bool) or not isinstance(n_mentions, (int, np.integer)):
        raise TypeError(f"the n_mentions parameter of synthesize_mentions must be an int; "
                        f"got {type(n_mentions).__name__} instead")
    if n_mentions < 1:
        raise ValueError(f"the n_mentions parameter of synthesize_mentions must be >= 1; got {n_mentions} instead")
    if n_authors is not None and not (1 <= int(n_authors) <= n_mentions):
        raise ValueError(f"the n_authors parameter must be in [1, n_mentions={n_mentions}]; got {n_authors} instead")
    if not papers_per_author > 0:
        raise ValueError(f"the papers_per_author parameter must be > 0; got {papers_per_author} instead")
    if not zipf_a > 0:
        raise ValueError(f"the zipf_a parameter must be > 0; got {zipf_a} instead")
    for name, v in (("unlabeled_fraction", unlabeled_fraction), ("initial_prob", initial_prob)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"the {name} parameter must be in [0, 1]; got {v} instead")


def synthesize_mentions(n_mentions, *, rng=None, n_authors=None, papers_per_author=6.0, mean_coauthors=2.0,
                        community_size=25, zipf_a=1.0, initial_prob=0.35, unlabeled_fraction=0.0):
    """Generate ``n_mentions`` synthetic author mentions with gold author labels.

    Parameters
    ----------
    n_mentions : int
        Number of rows (author mentions); >= 1.
    rng : None, int or numpy.random.Generator
        Randomness (see :func:`sampling.utils.rng.as_generator`); same seed, same frame.
    n_authors : int, optional
        Number of distinct true authors; default ``n_mentions / papers_per_author``
        (rounded, at least 1). Authors with no paper drawn do not appear.
    papers_per_author : float, default 6.0
        Mean mentions per author when ``n_authors`` is not given.
    mean_coauthors : float, default 2.0
        Paper size is 1 + Poisson(mean_coauthors) authors.
    community_size : int, default 25
        Mean number of authors per coauthor community.
    zipf_a : float, default 1.0
        Zipf exponent of the surname and first-name frequencies (larger = more
        concentrated, bigger blocks).
    initial_prob : float in [0, 1], default 0.35
        Probability that a mention prints the first name as an initial.
    unlabeled_fraction : float in [0, 1], default 0.0
        Fraction of mentions whose ``gold`` is NA.

    Returns
    -------
    pandas.DataFrame of shape (n_mentions, 10)
        The mention schema (:data:`coref.io.MENTION_COLUMNS`) and ``paper_id``: ``mention_id``
        ``"s<i>"``, ``block`` = first initial + last name (accents stripped,
        lower case, identical to :func:`coref.blocking.name_key` of the printed
        name), ``paper_id`` = ``"p<paper index>"`` (the mentions of one paper
        share it), ``gold`` = ``"a<author index>"``.

    Raises
    ------
    TypeError
        If ``n_mentions`` is not an int, or ``rng`` is of the wrong type.
    ValueError
        If a size or probability is out of range.

    Notes
    -----
    Time and memory are linear in ``n_mentions``; 1,000,000 mentions take on
    the order of 10 s and under 1.5 GB peak RSS on one core (see
    ``benchmarks/bench_coref_synth.py``).

    Examples
    --------
    >>> df = synthesize_mentions(1000, rng=0)
    >>> df.shape, df["gold"].notna().all()
    ((1000, 10), np.True_)
    """
    _check_args(n_mentions, n_authors, papers_per_author, zipf_a, unlabeled_fraction, initial_prob)
    gen = as_generator(rng)
    n = int(n_mentions)
    n_auth = int(n_authors) if n_authors is not None else max(1, int(round(n / papers_per_author)))
    S = np.dtypes.StringDType()

    # ---- name pools (Zipf over real head + made-up tail)
    n_sur = max(len(_SURNAMES), n_auth // 4)
    n_fst = max(len(_FIRST), min(n_auth // 8, 20_000))
    surnames = _pool(gen, _SURNAMES, n_sur, 3)
    firsts = _pool(gen, _FIRST, n_fst, 2)
    sur_arr, sur_ascii = np.array(surnames, dtype=S), np.array([_ascii(s) for s in surnames], dtype=S)
    fst_arr, fst_ascii = np.array(firsts, dtype=S), np.array([_ascii(s) for s in firsts], dtype=S)
    sur_key = np.array([_ascii(s).lower() for s in surnames], dtype=S)
    fst_init = np.array([_ascii(s)[0] for s in firsts], dtype=S)
    fst_init_lower = np.strings.lower(fst_init)
    middles = np.array(list("ABCDEFGHJKLMNPRSTW"), dtype=S)

    # ---- authors: name, middle initial, community, productivity, affiliation
    a_sur = gen.choice(n_sur, size=n_auth, p=_zipf_probs(n_sur, zipf_a))
    a_fst = gen.choice(n_fst, size=n_auth, p=_zipf_probs(n_fst, zipf_a))
    a_has_mid = gen.random(n_auth) < 0.3
    a_mid = gen.integers(0, len(middles), n_auth)
    n_comm = max(1, int(round(n_auth / community_size)))
    a_comm = gen.integers(0, n_comm, n_auth)
    a_prod = gen.lognormal(0.0, 1.0, n_auth)
    n_aff = max(1, n_auth // 15)
    a_aff = gen.integers(0, n_aff, n_auth)

    # authors sorted by community -> weighted draw inside a community by searchsorted
    order = np.argsort(a_comm, kind="stable")
    cum_w = np.cumsum(a_prod[order])
    comm_end = np.searchsorted(a_comm[order], np.arange(n_comm), side="right")
    comm_start = np.concatenate(([0], comm_end[:-1]))
    w_before = np.where(comm_start > 0, cum_w[np.maximum(comm_start - 1, 0)], 0.0)
    w_total = np.where(comm_end > comm_start, cum_w[np.maximum(comm_end - 1, 0)], 0.0) - w_before
    comm_weight = w_total / w_total.sum()

    # ---- papers: size, community, topic, venue, year; then slots = mentions
    n_pap_est = int(n / (1 + mean_coauthors) * 1.1) + 10
    sizes = 1 + gen.poisson(mean_coauthors, n_pap_est)
    while sizes.sum() < n:
        sizes = np.concatenate((sizes, 1 + gen.poisson(mean_coauthors, n_pap_est)))
    ends = np.cumsum(sizes)
    n_pap = int(np.searchsorted(ends, n) + 1)
    sizes = sizes[:n_pap]
    sizes[-1] -= int(ends[n_pap - 1] - n)  # trim the last paper so that sum(sizes) == n
    p_start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    p_comm = gen.choice(n_comm, size=n_pap, p=comm_weight)
    m_paper = np.repeat(np.arange(n_pap), sizes)
    m_comm = p_comm[m_paper]
    u = gen.random(n)
    target = w_before[m_comm] + u * w_total[m_comm]
    pos = np.minimum(np.searchsorted(cum_w, target, side="right"), comm_end[m_comm] - 1)
    m_author = order[pos]
    # the same author twice on one paper: redraw within the community, then anywhere
    for attempt in range(6):
        dup = pd.DataFrame({"p": m_paper, "a": m_author}).duplicated().to_numpy()
        if not dup.any():
            break
        k = np.flatnonzero(dup)
        if attempt < 5:
            c = m_comm[k]
            t = w_before[c] + gen.random(len(k)) * w_total[c]
            m_author[k] = order[np.minimum(np.searchsorted(cum_w, t, side="right"), comm_end[c] - 1)]
        else:
            m_author[k] = gen.integers(0, n_auth, len(k))

    # ---- printed names: variants, accents sometimes dropped
    initial = gen.random(n) < initial_prob
    with_mid = a_has_mid[m_author] & (gen.random(n) < 0.5)
    plain = gen.random(n) < 0.15
    fidx, sidx = a_fst[m_author], a_sur[m_author]
    first_full = np.where(plain, fst_ascii[fidx], fst_arr[fidx])
    first = np.where(initial, np.strings.add(fst_init[fidx], "."), first_full)
    mid = np.where(with_mid, np.strings.add(np.strings.add(" ", middles[a_mid[m_author]]), "."), "")
    last = np.where(plain, sur_ascii[sidx], sur_arr[sidx])
    printed = np.strings.add(np.strings.add(np.strings.add(first, mid), " "), last)
    block = np.strings.add(np.strings.add(fst_init_lower[fidx], " "), np.strings.lower(sur_key[sidx]))
    del first_full, first, mid, last

    # ---- titles: per-community topic words mixed with common words (one per paper)
    topic_vocab = _made_up(gen, 400, 3, capitalize=False)
    stems = np.array(_TOPIC_STEMS + topic_vocab, dtype=S)
    common = np.array(_COMMON_WORDS, dtype=S)
    n_topics = max(1, min(200, n_comm))
    topic_words = 12
    topic_table = gen.integers(0, len(stems), size=(n_topics, topic_words))
    p_topic = gen.integers(0, n_topics, n_comm)[p_comm]
    t_len = gen.integers(4, 10, n_pap)
    title = np.strings.capitalize(stems[topic_table[p_topic, gen.integers(0, topic_words, n_pap)]])
    for j in range(1, int(t_len.max())):
        from_topic = gen.random(n_pap) < 0.65
        word = np.where(from_topic, stems[topic_table[p_topic, gen.integers(0, topic_words, n_pap)]],
                        common[gen.integers(0, len(common), n_pap)])
        title = np.where(j < t_len, np.strings.add(np.strings.add(title, " "), word), title)
    del word, from_topic, topic_table

    # ---- venues: a few per community, Zipf
    n_venues = max(5, n_comm // 4)
    venue_names = [f"{a.upper()}{b.upper()}" if k % 2 else f"Proc. Conf. {a.capitalize()} {b.capitalize()}"
                   for k, (a, b) in enumerate(zip(_made_up(gen, n_venues, 1, False),
                                                  _made_up(gen, n_venues, 2, False)))]
    c_venues = gen.integers(0, n_venues, (n_comm, 4))
    p_venue = c_venues[p_comm, gen.choice(4, size=n_pap, p=_zipf_probs(4, 1.0, 1.0))]

    # ---- years: community active period; about 2% unknown
    c_year = gen.integers(1975, 2022, n_comm)
    p_year = np.clip(np.round(c_year[p_comm] + gen.normal(0, 5, n_pap)), 1960, 2025).astype(np.int64)
    year = pd.array(p_year[m_paper], dtype="Int64")
    year[gen.random(n) < 0.02] = pd.NA

    # ---- affiliations: home one on ~half the mentions, a different one sometimes
    aff_names = np.array([f"Dept. of {_DEPTS[k % len(_DEPTS)]}, {pl} {nm} University"
                          for k, (pl, nm) in enumerate(zip(np.array(_PLACES)[gen.integers(0, len(_PLACES), n_aff)],
                                                           _made_up(gen, n_aff, 2)))], dtype=S)
    show = gen.random(n) < 0.5
    moved = gen.random(n) < 0.1
    aff_idx = np.where(moved, gen.integers(0, n_aff, n), a_aff[m_author])
    affiliation = np.where(show, aff_names[aff_idx], "")

    # ---- coauthor lists (the only per-mention Python objects)
    names = printed.tolist()
    starts = p_start[m_paper].tolist()
    stops = (p_start + sizes)[m_paper].tolist()
    coauthors = np.empty(n, dtype=object)
    coauthors[:] = [names[s:i] + names[i + 1:e] for i, s, e in zip(range(n), starts, stops)]
    del starts, stops

    cols = {}
    cols["mention_id"] = pd.array(np.strings.add("s", np.arange(n).astype(S)).tolist(), dtype=str)
    cols["block"] = pd.array(block.tolist(), dtype=str)
    del block
    cols["name"] = pd.array(names, dtype=str)
    del names, printed
    cols["coauthors"] = coauthors
    cols["title"] = pd.array(title[m_paper].tolist(), dtype=str)
    del title
    cols["venue"] = pd.array(np.asarray(venue_names, dtype=S)[p_venue[m_paper]].tolist(), dtype=str)
    cols["year"] = year
    cols["affiliation"] = pd.array(affiliation.tolist(), dtype=str)
    del affiliation
    gold = np.strings.add("a", m_author.astype(S)).tolist()
    if unlabeled_fraction > 0:
        for i in np.flatnonzero(gen.random(n) < unlabeled_fraction).tolist():
            gold[i] = None
    cols["gold"] = pd.array(gold, dtype="string")
    del gold
    cols["paper_id"] = pd.array(np.strings.add("p", m_paper.astype(S)).tolist(), dtype="string")
    df = pd.DataFrame(cols, copy=False)
    return df
