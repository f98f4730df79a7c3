"""Why the one-name cut of ``../shared/checks/coref-no-collapse`` scores far below 0.85.

The check takes the authors of ``coref synth --mentions 1000000 --seed 0`` in order of first
appearance until 10,000 mentions, and gives all of them one name and one block. This script
measures what separates those authors in the data, without any model:

* the gold authors' coauthor groups: authors linked when they share a paper, over the whole
  corpus (their connected components are the generator's coauthor communities, whose members
  draw coauthors, topic, venues and years alike and differ only by an affiliation printed on
  about half of their mentions);
* how many authors of the cut share a group, and the B3 F1 of the clustering that puts each
  group in one cluster (every author told apart from the other groups, none within a group);
* the share of the cut's mentions that share their paper with another mention of the cut (two
  authors of one paper, now with one name).

Measured (2026-12-05): 676 authors in 203 groups (3.3 per group; the generator's 233
communities, a few joined by a paper drawn across them); clustering by group scores B3 F1
0.545 (P 0.375, R 1.0); 48.6% of the mentions share their paper with another mention of the
cut. The shipped model scores 0.480, and 0.438 with the paper ids as a constraint: it tells
groups apart, not the authors of one group, and no model of these fields can (the generator
draws them alike). A 10,000-mention block of ``coref synth --one-name`` (personal coauthor
circles and vocabularies) scores 0.917.

    python studies/coref_one_name_cut.py [--mentions 1000000] [--cut 10000] [--seed 0]
"""
import argparse

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from coref.synth import synthesize_mentions


def b3(pred, gold):
    """B3 precision, recall and F1 of two labelings of the same mentions."""
    df = pd.DataFrame({"p": pred, "g": gold})
    n_pg = df.groupby(["p", "g"])["p"].transform("size")
    p = (n_pg / df.groupby("p")["p"].transform("size")).mean()
    r = (n_pg / df.groupby("g")["g"].transform("size")).mean()
    return p, r, 2 * p * r / (p + r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mentions", type=int, default=1_000_000)
    ap.add_argument("--cut", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    df = synthesize_mentions(a.mentions, rng=a.seed)
    gold, authors = pd.factorize(df["gold"])
    paper = pd.factorize(df["paper_id"])[0]
    # authors linked through shared papers: the mention -> paper bipartite graph, components over authors
    n_a, n_p = len(authors), paper.max() + 1
    g = coo_matrix((np.ones(len(df)), (gold, n_a + paper)), shape=(n_a + n_p, n_a + n_p))
    _, comp = connected_components(g, directed=False)
    group = comp[:n_a]
    sizes = df.groupby("gold", sort=False).size()
    first = df.drop_duplicates("gold")["gold"]
    keep = set(sizes.reindex(first).cumsum().pipe(lambda c: c[c <= a.cut]).index)
    cut = df["gold"].isin(keep).to_numpy()
    gc, grp = gold[cut], group[gold[cut]]
    n_auth, n_grp = len(np.unique(gc)), len(np.unique(grp))
    p, r, f = b3(grp, gc)
    shared = pd.Series(paper[cut]).duplicated(keep=False).mean()
    print(f"cut: {cut.sum()} mentions of {n_auth} authors in {n_grp} coauthor groups ({n_auth / n_grp:.1f} per group)")
    print(f"one cluster per group: B3 P {p:.3f} R {r:.3f} F1 {f:.3f}")
    print(f"mentions sharing their paper with another mention of the cut: {shared:.1%}")


if __name__ == "__main__":
    main()
