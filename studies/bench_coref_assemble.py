"""Block assembly speed: compiled ``coref._assemble`` vs its pure-numpy twin, side by side.

For the shipped AMiner data and for synthetic mentions (``--synth FILE``, e.g. from
``python -m coref synth --mentions 20000 --out X.parquet``; default: 20,000 generated in
process with seed 0), encodes every mention once with the shipped model's vocabulary
(``encode_parts``), cuts the per-block encodings (``take``), then times
``assemble_block`` (compiled) and ``assemble_block_py`` (twin) over all blocks, the two
alternating ``--repeat`` times in the same process (best time of each), and checks that
they give the same arrays, bit for bit, on every block. Prints ms per block of each and
their ratio.

Times the *importable* ``coref``; to time a source tree with in-place built kernels, put
it first on the path::

    PYTHONPATH=. python studies/bench_coref_assemble.py --synth synth20k.parquet

Three columns are timed: ``assemble_blocks`` over groups of about ``TOGETHER_MENTIONS``
mentions as ``coref predict`` / ``coref add`` run it (the coauthor-graph components of a
whole group in three scipy calls), ``assemble_block`` one block at a time (three scipy calls
per block), and the numpy twin (one block at a time).

Measured 2026-11-24 after the components moved to scipy (in-place build, 1M predict running
on the other core, best of 3; ``--synth /tmp/add20/m.parquet``, 20k mentions)::

    data                      blocks  mentions  grouped ms/blk  per-blk ms/blk  twin ms/block   twin/grouped
    shipped AMiner               108     7,026           0.160           0.696          1.277            8.0
    synthetic m.parquet        1,890    20,000           0.050           0.575          0.960           19.0

Before that, with the kernel's own union-find for the components (2026-11-24, shared 2-core
machine, load ~0.7, best of 5; the 20k file is
``python -m coref synth --mentions 20000 --out synth20k.parquet``, seed 0)::

    data                     blocks  mentions  compiled ms/block  twin ms/block  twin/compiled
    shipped AMiner              108     7,026              0.073          0.828           11.3
    synthetic 20k             1,890    20,000              0.025          0.535           21.0

(AMiner blocks are larger: 65 mentions on average, against 10.6.) ``coref predict`` on
the 20k synthetic mentions (racing, default settings, ``--quiet``), wall time of the
whole command, this tree's in-place build against the same tree before the kernel
(commit 52a4938, exported and built in place in a copy), alternating, best of 3::

    before 4.00 s (4.00, 4.08, 4.02), after 3.03 s (3.05, 3.03, 3.19)

(-0.97 s; the twin's 1,890 blocks x 0.535 ms = 1.01 s); clusters.csv and
mentions.parquet are byte-identical. ``coref add`` of the 3,981 mentions with
``crc32(mention_id) % 5 == 0`` to the ``coref predict`` of the other 16,019 (same
before/after alternation, best of 3): before 2.56 s (2.72, 2.72, 2.56), after 1.89 s
(1.92, 1.89, 1.92); clusters.csv byte-identical.

Command::

    for t in /tmp/asm_base /work/wt/asm; do
        /usr/bin/time -f %e env PYTHONPATH=$t python -m coref predict \\
            --data synth20k.parquet --out /tmp/out_$(basename $t) --quiet; done
"""
import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np


def _same(a, b, EncodedBlock):
    for f in dataclasses.fields(EncodedBlock):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            if not (isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
                    and x.tobytes() == y.tobytes()):
                return f.name
        elif type(x) is not type(y) or x != y:
            return f.name
    return None


def _blocks(df, voc):
    from coref.encoding.mentions import encode_parts

    enc = encode_parts(df, voc)
    return [enc.take(idx) for idx in df.groupby("block", sort=True).indices.values()]


def _time(fn, blocks):
    t0 = time.perf_counter()
    for b in blocks:
        fn(b)
    return time.perf_counter() - t0


def _time_groups(blocks):
    """assemble_blocks over consecutive groups of about TOGETHER_MENTIONS mentions (coref predict's)."""
    from coref.encoding.blocks import assemble_blocks
    from coref.inference import TOGETHER_MENTIONS

    t0 = time.perf_counter()
    group, size = [], 0
    for b in blocks:
        group.append(b)
        size += len(b)
        if size >= TOGETHER_MENTIONS:
            assemble_blocks(group)
            group, size = [], 0
    assemble_blocks(group)
    return time.perf_counter() - t0


def _compare(name, blocks, repeat):
    from coref.encoding._assemble_py import assemble_block_py
    from coref.encoding.blocks import EncodedBlock, assemble_block, assemble_blocks

    for b, g in zip(blocks, assemble_blocks(blocks)):
        for got in (g, assemble_block(b)):
            bad = _same(got, assemble_block_py(b), EncodedBlock)
            if bad is not None:
                raise AssertionError(f"{name}: compiled and twin differ in {bad!r}")
    best_g = best_c = best_p = float("inf")
    for _ in range(repeat):                       # alternate: all meet the same machine load
        best_g = min(best_g, _time_groups(blocks))
        best_c = min(best_c, _time(assemble_block, blocks))
        best_p = min(best_p, _time(assemble_block_py, blocks))
    nb = len(blocks)
    nm = sum(len(b) for b in blocks)
    print(f"{name:24s} {nb:7,d} {nm:9,d} {best_g / nb * 1e3:15.3f} {best_c / nb * 1e3:15.3f} "
          f"{best_p / nb * 1e3:14.3f} {best_p / best_g:14.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synth", type=Path, default=None,
                    help="synthetic mentions (parquet from `coref synth`); default: 20,000 generated, seed 0")
    ap.add_argument("--repeat", type=int, default=5, help="timings of each (best is kept)")
    args = ap.parse_args(argv)

    import coref
    from coref.inputs import resolve_model
    from coref.io import load_mentions

    voc = resolve_model(None)[0].vocabulary_
    here = Path(__file__).resolve().parents[1]
    df = load_mentions(here / "data" / "aminer_na", format="aminer")
    df = df[0] if isinstance(df, tuple) else df
    if args.synth is None:
        from coref.synth import synthesize_mentions

        sdf, sname = synthesize_mentions(20_000, rng=0), "synthetic 20k (seed 0)"
    else:
        sdf = load_mentions(args.synth)
        sdf, sname = (sdf[0] if isinstance(sdf, tuple) else sdf), f"synthetic {args.synth.name}"
    print(f"coref from {Path(coref.__file__).parent}")
    print(f"{'data':24s} {'blocks':>7s} {'mentions':>9s} {'grouped ms/blk':>15s} {'per-blk ms/blk':>15s} "
          f"{'twin ms/block':>14s} {'twin/grouped':>14s}")
    _compare("shipped AMiner", _blocks(df, voc), args.repeat)
    _compare(sname, _blocks(sdf, voc), args.repeat)


if __name__ == "__main__":
    main()
