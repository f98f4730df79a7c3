"""Error analysis of a ``coref run``: the worst blocks and the kinds of pairs it got wrong.

Reads ``clusters.csv`` of a finished run (``--out`` of ``coref run``) and the mentions it
clustered, then, over the scored mentions of one sampler:

* lists the blocks with the most B3 F1 lost (mentions x (1 - block B3 F1)), with their
  precision, recall and the numbers of missed / wrong pairs;
* sorts every MISSED pair (same gold author, different predicted clusters) and every
  WRONG pair (different gold authors, one predicted cluster) into kinds of evidence,
  each pair counted under every kind that applies:

  ``no_shared_coauthor``  the two mentions share no (normalised) coauthor name
  ``no_coauthor_path``    not even connected through a chain of shared coauthors in the block
  ``coauthors_missing``   one of them lists no coauthor at all
  ``initials_vs_full``    the two name forms differ: one given name is an initial of the other
  ``given_name_differs``  the given names differ and are not initial-compatible
  ``title_disjoint``      no title word in common (stop words removed)
  ``venue_differs``       both venues present and different
  ``year_gap_ge5``        both years present, at least 5 years apart
  ``affil_differs``       both affiliations present, no word in common
  ``affil_missing``       one of them has no affiliation

With ``--energy``, each scored block's error is also classed as a MODEL or a SEARCH error
with the fold's own fitted model (saved by the run in ``.checkpoint/<key>/model_fold<k>``): the
log-score E(y) = sum_{i < j, y_i = y_j} f(x_i, x_j) (natural log) of the predicted and of
the gold clustering of the block's labeled mentions (the block encoded whole, as Gibbs
does).  E(gold) > E(pred): the model prefers the truth and the sampler did not reach it
(search error); otherwise the model itself prefers the wrong clustering (model error).

    python studies/coref_errors.py --run /tmp/feat_base --data data/aminer_na [--sampler racing] [--top 15]
                                      [--energy]

Counts are over pairs, so big blocks dominate; the block table shows where.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("no_shared_coauthor", "no_coauthor_path", "coauthors_missing", "initials_vs_full",
         "given_name_differs", "title_disjoint", "venue_differs", "year_gap_ge5", "affil_differs",
         "affil_missing")


def _given(name):
    from coref.blocking import normalize_name

    parts = normalize_name(name).split()
    return parts[:-1] if len(parts) >= 2 else []


def pair_kinds(sub):
    """Boolean matrices (n, n) of each kind for one block ``sub`` (row order kept)."""
    from coref.encoding.components import token_list_components as _components
    from coref.blocking import normalize_name
    from coref.encoding.text import words

    n = len(sub)
    co = [frozenset(k for k in (normalize_name(a) for a in (c if isinstance(c, (list, tuple, np.ndarray)) else []))
                    if k) for c in sub["coauthors"]]
    comp = np.asarray(_components([sorted(c) for c in co], 1))
    titles = [frozenset(words(t)) for t in sub["title"]]
    venues = [" ".join(words(v)) for v in sub["venue"]]
    affils = [frozenset(words(a)) for a in sub["affiliation"]]
    years = pd.array(sub["year"], dtype="Int64")
    given = [_given(x) for x in sub["name"]]
    out = {k: np.zeros((n, n), dtype=bool) for k in KINDS}
    for i in range(n):
        for j in range(i + 1, n):
            v = {
                "no_shared_coauthor": not (co[i] & co[j]),
                "no_coauthor_path": comp[i] != comp[j],
                "coauthors_missing": not co[i] or not co[j],
                "title_disjoint": not (titles[i] & titles[j]),
                "venue_differs": bool(venues[i]) and bool(venues[j]) and venues[i] != venues[j],
                "year_gap_ge5": (not pd.isna(years[i]) and not pd.isna(years[j])
                                 and abs(int(years[i]) - int(years[j])) >= 5),
                "affil_differs": bool(affils[i]) and bool(affils[j]) and not (affils[i] & affils[j]),
                "affil_missing": not affils[i] or not affils[j],
            }
            gi, gj = given[i], given[j]
            if gi and gj and gi != gj:
                a, b = gi[0], gj[0]
                compatible = a[0] == b[0] and (len(a) == 1 or len(b) == 1)
                v["initials_vs_full"] = compatible
                v["given_name_differs"] = not compatible and a != b
            for k, x in v.items():
                if x:
                    out[k][i, j] = True
    return out


def analyse(clusters, df, sampler, top):
    from coref.evaluate import b3

    cs = clusters[(clusters["sampler"] == sampler) & clusters["scored"].astype(bool)]
    data = df.set_index("mention_id")
    block_rows = []
    totals = {"missed": {k: 0 for k in KINDS}, "wrong": {k: 0 for k in KINDS}}
    n_missed = n_wrong = 0
    for block, sub in cs.groupby("block", sort=True):
        ids = sub["mention_id"].astype(str).to_numpy()
        pred = sub["cluster_id"].astype(str).to_numpy()
        gold = sub["gold"].astype(str).to_numpy()
        res = b3(pd.Series(pred, index=ids), pd.Series(gold, index=ids))
        same_g = gold[:, None] == gold[None, :]
        same_p = pred[:, None] == pred[None, :]
        upper = np.triu(np.ones((len(ids), len(ids)), dtype=bool), 1)
        missed = same_g & ~same_p & upper
        wrong = ~same_g & same_p & upper
        block_rows.append({"block": block, "n": len(ids), "n_gold": len(set(gold)), "n_pred": len(set(pred)),
                           "b3_p": res.precision, "b3_r": res.recall, "b3_f1": res.f1,
                           "lost": len(ids) * (1.0 - res.f1), "missed": int(missed.sum()),
                           "wrong": int(wrong.sum())})
        if missed.any() or wrong.any():
            kinds = pair_kinds(data.loc[ids].reset_index())
            for k in KINDS:
                totals["missed"][k] += int((kinds[k] & missed).sum())
                totals["wrong"][k] += int((kinds[k] & wrong).sum())
        n_missed += int(missed.sum())
        n_wrong += int(wrong.sum())
    blocks = pd.DataFrame(block_rows).sort_values("lost", ascending=False)
    return blocks, totals, n_missed, n_wrong


def energies(run, clusters, df, sampler):
    """Per scored block: fold, E(pred), E(gold) (natural log) and the block's F1 lost.

    Blocks whose fold model is not in ``run/.checkpoint`` are left out (counted by the caller).
    """
    from coref.evaluate import b3
    from coref.model import load_model

    cs = clusters[(clusters["sampler"] == sampler) & clusters["scored"].astype(bool)]
    models, rows = {}, []
    for block, sub in cs.groupby("block", sort=True):
        fold = int(sub["fold"].iloc[0])
        if fold not in models:
            # .checkpoint/<settings key>/model_fold<k>; the newest run's if several
            found = sorted((Path(run) / ".checkpoint").glob(f"*/model_fold{fold}"), key=lambda p: p.stat().st_mtime)
            models[fold] = load_model(found[-1])[0] if found else None
        model = models[fold]
        if model is None:
            continue
        whole = df[df["block"].astype(str) == str(block)].sort_values("mention_id", kind="stable")
        F = model.factor_matrix(model.encode(whole.reset_index(drop=True)))
        pos = pd.Series(np.arange(len(whole)), index=whole["mention_id"].to_numpy())
        idx = pos.loc[sub["mention_id"].astype(str)].to_numpy()
        Fl = F[np.ix_(idx, idx)]
        pred = sub["cluster_id"].astype(str).to_numpy()
        gold = sub["gold"].astype(str).to_numpy()
        upper = np.triu(np.ones(Fl.shape, dtype=bool), 1)
        e_pred = float(Fl[(pred[:, None] == pred[None, :]) & upper].sum())
        e_gold = float(Fl[(gold[:, None] == gold[None, :]) & upper].sum())
        f1 = b3(pd.Series(pred, index=sub["mention_id"].to_numpy()),
                pd.Series(gold, index=sub["mention_id"].to_numpy())).f1
        rows.append({"block": block, "fold": fold, "n": len(sub), "e_pred": e_pred, "e_gold": e_gold,
                     "lost": len(sub) * (1.0 - f1)})
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="output directory of coref run (holds clusters.csv)")
    ap.add_argument("--data", required=True, help="the --data the run used")
    ap.add_argument("--format", default=None)
    ap.add_argument("--sampler", default="racing")
    ap.add_argument("--top", type=int, default=15, help="worst blocks to list")
    ap.add_argument("--energy", action="store_true",
                    help="class each block's error as a model or a search error (fold models of the run)")
    args = ap.parse_args(argv)
    from coref.io import load_mentions

    clusters = pd.read_csv(Path(args.run) / "clusters.csv", dtype={"mention_id": str, "cluster_id": str,
                                                                  "gold": str, "block": str})
    df = load_mentions(args.data, format=args.format)
    df["mention_id"] = df["mention_id"].astype(str)
    blocks, totals, n_missed, n_wrong = analyse(clusters, df, args.sampler, args.top)
    pd.set_option("display.width", 160)
    print(f"worst {args.top} of {len(blocks)} blocks by B3 F1 lost (mentions x (1 - F1)):")
    print(blocks.head(args.top).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    share = blocks.head(args.top)["lost"].sum() / max(blocks["lost"].sum(), 1e-12)
    print(f"these {args.top} blocks hold {share:.0%} of the F1 lost\n")
    print(f"pairs: {n_missed:,} missed (same author, split), {n_wrong:,} wrong (different authors, merged)")
    print(f"{'kind':<20} {'missed':>9} {'%':>6} {'wrong':>9} {'%':>6}")
    for k in KINDS:
        m, w = totals["missed"][k], totals["wrong"][k]
        print(f"{k:<20} {m:>9,} {m / max(n_missed, 1):>6.1%} {w:>9,} {w / max(n_wrong, 1):>6.1%}")
    if args.energy:
        e = energies(args.run, clusters, df, args.sampler)
        n_blocks = blocks.shape[0]
        if e.empty:
            print(f"\nno fold model under {Path(args.run) / '.checkpoint'}: energies skipped")
            return
        err = e[e["lost"] > 1e-9]
        search = err[err["e_gold"] > err["e_pred"] + 1e-9]
        model = err[err["e_gold"] <= err["e_pred"] + 1e-9]
        tot = max(err["lost"].sum(), 1e-12)
        print(f"\nenergy E(y) = sum of f within clusters (natural log), fold models; {len(e)} of {n_blocks} "
              f"blocks, {len(err)} with an error")
        print(f"search errors (E(gold) > E(pred)): {len(search)} blocks, {search['lost'].sum() / tot:.0%} of the "
              f"F1 lost; model errors (E(gold) <= E(pred)): {len(model)} blocks, {model['lost'].sum() / tot:.0%}")
        print(f"sum over blocks: E(gold) {e['e_gold'].sum():,.1f}, E(pred) {e['e_pred'].sum():,.1f}")
        worst = e.sort_values("lost", ascending=False).head(args.top)
        print(worst.to_string(index=False, float_format=lambda x: f"{x:.1f}"))


if __name__ == "__main__":
    main()
