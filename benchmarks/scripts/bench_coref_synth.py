"""Benchmark: time and peak memory of ``coref.synthesize_mentions`` at 10k, 100k, 1M mentions.

Wall time (``seconds``) and CPU time of the process (``cpu_seconds``, less
sensitive to a shared machine) are reported. Each size runs in a fresh subprocess so that peak memory is not inherited from
the previous size. Peak memory is reported two ways:

* ``peak_rss_mb``: the process high-water mark (``resource.getrusage`` ru_maxrss)
  minus the RSS right after the imports, i.e. what generation itself added;
* ``peak_traced_mb`` (with ``--tracemalloc``): the tracemalloc peak of Python and
  numpy allocations during generation (tracemalloc slows generation down, so the
  timing of that run is not reported).

Also asv-style functions (``time_synth_100k``, ``peakmem_synth_100k``,
``track_largest_block_100k``) for use under asv.

Usage::

    python benchmarks/scripts/bench_coref_synth.py [--sizes 10000,100000,1000000] [--tracemalloc] [--json out.json]
"""
import argparse
import json
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np, pandas as pd
from coref.synth import synthesize_mentions
n, traced = int(sys.argv[1]), sys.argv[2] == "1"
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if traced:
    tracemalloc.start()
t0, c0 = time.perf_counter(), time.process_time()
df = synthesize_mentions(n, rng=0)
dt, dc = time.perf_counter() - t0, time.process_time() - c0
out = {"n_mentions": n, "seconds": None if traced else round(dt, 2), "cpu_seconds": None if traced else round(dc, 2)}
if traced:
    out["peak_traced_mb"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    tracemalloc.stop()
else:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["peak_rss_mb"] = round(peak - base, 1)
    out["frame_mb"] = round(df.memory_usage(deep=True).sum() / 2**20, 1)
sizes = df["block"].value_counts()
out.update(n_blocks=int(len(sizes)), largest_block=int(sizes.iat[0]), n_blocks_ge_1000=int((sizes >= 1000).sum()),
           n_authors=int(df["gold"].nunique()))
print(json.dumps(out))
"""


def run_one(n, traced=False):
    res = subprocess.run([sys.executable, "-c", _CHILD, str(n), "1" if traced else "0"],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---- asv-style
def time_synth_100k():
    from coref.synth import synthesize_mentions

    synthesize_mentions(100_000, rng=0)


def peakmem_synth_100k():
    from coref.synth import synthesize_mentions

    synthesize_mentions(100_000, rng=0)


def track_largest_block_100k():
    from coref.synth import synthesize_mentions

    return int(synthesize_mentions(100_000, rng=0)["block"].value_counts().iat[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--tracemalloc", action="store_true", help="also measure the tracemalloc peak (extra run per size)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    args = ap.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        row = run_one(n)
        if args.tracemalloc:
            row["peak_traced_mb"] = run_one(n, traced=True)["peak_traced_mb"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
