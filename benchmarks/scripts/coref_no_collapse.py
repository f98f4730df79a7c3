"""Benchmark: does clustering collapse as blocks grow?  B3 F1 by block-size band beside wall time.

Two inputs, both from ``coref.synth.synthesize_mentions`` (seed ``--seed``):

* the first ``--mentions`` synthetic mentions with their own blocks (first initial + last
  name), scored per block-size band (< 100, 100-999, >= 1000 mentions);
* one-name blocks cut from a ``--pool``-mention corpus, as ``/work/shared/checks/bigblock.py``
  does: the authors in order of first appearance until ``N`` mentions (``--one-name``), all
  renamed "Wei Wang" and put in one block.

Each input is clustered by ``python -m coref predict`` (shipped model, ``--sampler``) in a
subprocess, whose wall time is reported.  Beside each one-name block the script prints the
B3 F1 of an oracle that knows each author's coauthor community (authors linked by shared
papers, from the gold labels) and merges each community: ``coref synth`` draws the
coauthors, topic, venues and years of a paper from one community, so authors of one
community differ only by their (renamed) names and affiliations, and in a block cut in order
of first appearance each community has about three authors. A second oracle also splits each
community by the affiliation a mention prints (about half do): seed 0, the 10,000-mention block
(676 authors in 204 communities) scores 0.546 and 0.573: about what any model can reach on it (the
fields left, titles, venues, years and coauthors, are drawn per community; only "two mentions of one
paper are two authors" is left unused). Blocks
whose authors differ in more than name and affiliation: ``coref synth --one-name``.

Usage::

    python benchmarks/scripts/coref_no_collapse.py [--mentions 100000] [--pool 1000000]
        [--one-name 1000,10000] [--sampler racing] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd


def b3(pred, gold):
    """B3 precision, recall and F1 of two label arrays (one block, or labels made unique)."""
    d = pd.DataFrame({"p": np.asarray(pred), "g": np.asarray(gold)})
    n_pg = d.groupby(["p", "g"])["p"].transform("size")
    n_p = d.groupby("p")["p"].transform("size")
    n_g = d.groupby("g")["g"].transform("size")
    p, r = float((n_pg / n_p).mean()), float((n_pg / n_g).mean())
    return p, r, 2 * p * r / (p + r)


def predict(path, out, sampler):
    """Run ``coref predict`` on ``path``; return (clusters frame, wall seconds)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "coref", "predict", "--quiet", "--data", path, "--out", out,
                    "--sampler", sampler], check=True, stdout=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    return pd.read_csv(os.path.join(out, "clusters.csv"), dtype=str, keep_default_na=False), dt


def communities(df):
    """Gold author -> coauthor community (authors linked by a shared paper: consecutive rows
    of one paper share title, venue and year in ``coref synth`` output)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    key = df["title"].astype(str) + "|" + df["venue"].astype(str) + "|" + df["year"].astype(str)
    paper = (key != key.shift()).cumsum().to_numpy() - 1
    au, names = pd.factorize(df["gold"])
    m = sp.csr_matrix((np.ones(len(au)), (au, paper)))
    _, comm = connected_components(m @ m.T, directed=False)
    return dict(zip(names, comm))


def one_name_blocks(df, sizes):
    """The bigblock.py cut: authors in order of first appearance until N mentions, one name."""
    per = df.groupby("gold").size()
    cum = per.reindex(df.drop_duplicates("gold")["gold"]).cumsum()
    for n in sizes:
        x = df[df["gold"].isin(set(cum[cum <= n].index))].copy()
        x["block"] = "wei wang"
        x["name"] = "Wei Wang"
        yield n, x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mentions", type=int, default=100_000)
    ap.add_argument("--pool", type=int, default=1_000_000)
    ap.add_argument("--one-name", default="1000,10000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sampler", default="racing")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from coref.synth import synthesize_mentions
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pool = synthesize_mentions(max(a.pool, a.mentions), rng=a.seed)
        head = pool.iloc[:a.mentions]
        head.to_parquet(f"{tmp}/head.parquet")
        cl, dt = predict(f"{tmp}/head.parquet", f"{tmp}/head", a.sampler)
        cl = cl[cl["gold"] != ""]
        size = cl.groupby("block")["mention_id"].transform("size")
        lab_p, lab_g = cl["block"] + "|" + cl["cluster_id"], cl["block"] + "|" + cl["gold"]
        for name, keep in (("all", size >= 0), ("<100", size < 100), ("100-999", (size >= 100) & (size < 1000)),
                           (">=1000", size >= 1000)):
            if keep.any():
                p, r, f = b3(lab_p[keep], lab_g[keep])
                rows.append(dict(input=f"synth {a.mentions}", band=name, mentions=int(keep.sum()),
                                 blocks=int(cl.loc[keep, "block"].nunique()), P=round(p, 4), R=round(r, 4),
                                 F1=round(f, 4), wall_s=round(dt, 1)))
        comm = communities(pool)
        for n, x in one_name_blocks(pool, [int(s) for s in a.one_name.split(",") if s]):
            x.to_parquet(f"{tmp}/b{n}.parquet")
            cl, dt = predict(f"{tmp}/b{n}.parquet", f"{tmp}/b{n}", a.sampler)
            p, r, f = b3(cl["cluster_id"], cl["gold"])
            fo = b3(x["gold"].map(comm), x["gold"])[2]
            # ... and that also tells the authors of one community apart by the affiliation printed (half
            # the mentions): a ceiling for any model of these mentions, whose other fields are community-wide
            fa = b3(x["gold"].map(comm).astype(str) + "|" + x["affiliation"].fillna("").astype(str), x["gold"])[2]
            rows.append(dict(input=f"one name {n}", band=f"{len(x)} mentions", mentions=len(x),
                             authors=int(x["gold"].nunique()), clusters=int(cl["cluster_id"].nunique()),
                             P=round(p, 4), R=round(r, 4), F1=round(f, 4), community_oracle_F1=round(fo, 4),
                             community_affiliation_oracle_F1=round(fa, 4), wall_s=round(dt, 1)))
    print(pd.DataFrame(rows).to_string(index=False))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
