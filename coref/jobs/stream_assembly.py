"""The output files of a streamed ``coref predict``, joined from its block groups' pieces as they finish.

:func:`coref.jobs.streaming.predict_groups` clusters one block group at a time (in this
process or as Dask tasks, finishing in any order); :class:`GroupAssembly` takes each
finished group at once (:meth:`GroupAssembly.add`), so that the joining runs while
other groups are still sampled:

* the cluster number of each of the group's mentions goes into one int32 array over
  the input rows (4 bytes per row);
* its encodings file is linked into the output;
* its mentions and its rows of ``blocks.csv`` are appended to those files in group
  order (a group that finishes before an earlier one waits, on disk, until that one
  is in).

:meth:`GroupAssembly.finish` then writes ``clusters.csv`` in input order (one pass over
the ids, blocks and gold labels of the partition) and closes the other files. The
files are those the joining after the last group gave, byte for byte.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from coref.io.stream import BATCH_ROWS, ROWS_FILE, mention_schema
from sampling.utils.atomic import atomic_open

__all__ = ["GroupAssembly", "piece", "encodings_file", "PARTS", "BLOCKS_FILE", "BLOCK_COLUMNS"]

#: Per-block detail of the sampler used and of the block's prior: the columns of :data:`BLOCK_COLUMNS`.
BLOCKS_FILE = "blocks.csv"
#: The columns of ``blocks.csv``: block, n_mentions, group (the space-separated encodings files
#: of its mentions), sampler, why, and prior_shift (the block's d_b, natural-log odds; empty
#: in the rows of outputs written before it was recorded).
BLOCK_COLUMNS = ["block", "n_mentions", "group", "sampler", "why", "prior_shift"]
#: Folder of the partition (the groups' mentions, rows.parquet) in a checkpoint folder.
PARTS = "parts"


def piece(root, g, what):
    """Path of block group ``g``'s piece ``what`` (``"rows.npz"``, ``"json"``, ...) in ``root``."""
    return Path(root) / f"g{int(g):05d}.{what}"


def encodings_file(g):
    """Output file name of block group ``g``'s encodings."""
    return f"encodings-g{int(g):05d}.npz"


class GroupAssembly:
    """The output files of a streamed run, filled group by group (a context manager).

    Parameters
    ----------
    od : coref.outputs.OutputDir
        Entered; the files are written at ``od.path(name)``.
    root : pathlib.Path
        The checkpoint folder of the groups' pieces (:mod:`coref.jobs.streaming`).
    n_rows : int
        Rows of the input (the partition's ``row`` numbers are below it).
    n_groups : int

    Notes
    -----
    On an exception inside the ``with`` block the files begun are abandoned (the atomic
    writers remove their temporaries), and nothing partial is left at the output names.
    """

    def __init__(self, od, root, n_rows, n_groups):
        self.od, self.root, self.n_groups = od, Path(root), int(n_groups)
        self.knum = np.full(int(n_rows), -1, dtype=np.int32)
        self.next = 0
        self.done = set()
        self._stack = contextlib.ExitStack()
        self._mentions = None
        self._blocks = None

    def __enter__(self):
        import pyarrow.parquet as pq

        self._stack.__enter__()
        fh = self._stack.enter_context(atomic_open(self.od.path("mentions.parquet"), "wb"))
        self._mentions = self._stack.enter_context(pq.ParquetWriter(fh, mention_schema()))
        self._blocks = self._stack.enter_context(atomic_open(self.od.path(BLOCKS_FILE), "w", newline=""))
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)

    def add(self, g):
        """Take finished group ``g`` (its pieces written): cluster numbers, encodings, and what is now in order.

        Raises
        ------
        ValueError
            If ``g`` was added before or is not a group of the run.
        """
        g = int(g)
        if not 0 <= g < self.n_groups or g in self.done:
            raise ValueError(f"block group {g} is not a group still to add (0 .. {self.n_groups - 1})")
        with np.load(piece(self.root, g, "rows.npz"), allow_pickle=False) as z:
            self.knum[z["row"]] = z["k"]
        src = piece(self.root, g, "enc.npz")
        if src.is_file():
            dst = self.od.path(encodings_file(g))
            dst.unlink(missing_ok=True)        # (left by an earlier attempt in the same folder)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        self.done.add(g)
        while self.next in self.done:
            self._append(self.next)
            self.next += 1

    def _append(self, g):
        import pyarrow.parquet as pq

        self._mentions.write_table(pq.read_table(piece(self.root, g, "mentions.parquet")))
        text = piece(self.root, g, "blocks.csv").read_text(encoding="utf-8")
        self._blocks.write(text if g == 0 else text.split("\n", 1)[1])

    def finish(self):
        """Write clusters.csv (input order) once every group is in; close the other files.

        Raises
        ------
        RuntimeError
            If a group is missing.
        """
        import pyarrow.parquet as pq

        if self.next != self.n_groups:
            raise RuntimeError(f"block groups missing from the output: {sorted(set(range(self.n_groups)) - self.done)[:5]}")
        knum = self.knum
        with atomic_open(self.od.path("clusters.csv"), "w", newline="") as fh:
            header = True
            for batch in pq.ParquetFile(self.root / PARTS / ROWS_FILE).iter_batches(
                    batch_size=BATCH_ROWS, columns=["mention_id", "block", "gold", "row"]):
                frame = batch.to_pandas()
                k = knum[frame["row"].to_numpy()]
                keep = k >= 0
                frame = frame.loc[keep]
                out = pd.DataFrame({"mention_id": frame["mention_id"].to_numpy(dtype=object),
                                    "block": frame["block"].to_numpy(dtype=object)})
                out["cluster_id"] = out["block"] + "/" + pd.Series(k[keep]).astype(str).to_numpy(dtype=object)
                out["gold"] = pd.array(frame["gold"].to_numpy(dtype=object), dtype="string")
                out.to_csv(fh, index=False, header=header)
                header = False
        self.knum = None
        self._stack.close()
