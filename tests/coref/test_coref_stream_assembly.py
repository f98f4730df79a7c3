"""coref.jobs.stream_assembly: the output files of a streamed run joined from groups finishing in any order."""
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coref.io.stream import ROWS_FILE, mention_schema
from coref.jobs.stream_assembly import BLOCKS_FILE, PARTS, GroupAssembly, encodings_file, piece
from coref.outputs.directory import write_npz


class _Out:
    """What GroupAssembly needs of an OutputDir: ``path(name)``."""

    def __init__(self, d):
        self.out = Path(d)
        self.out.mkdir(parents=True, exist_ok=True)

    def path(self, name):
        return self.out / name


def _pieces(root):
    """Three groups over 7 input rows (row 3 skipped: no group has it); group 1 has no encodings piece."""
    groups = {0: ([0, 4], ["a", "a"], [0, 1]), 1: ([1, 5, 6], ["b", "b", "c"], [0, 0, 0]), 2: ([2], ["d"], [0])}
    ids = [f"m{r}" for r in range(7)]
    (root / PARTS).mkdir(parents=True)
    blocks_of = {r: b for rows, bl, _ in groups.values() for r, b in zip(rows, bl)}
    pq.write_table(pa.table({"mention_id": ids, "block": [blocks_of.get(r, "x") for r in range(7)],
                             "gold": ["g1", None, "g2", "g3", "g1", "g4", None], "row": np.arange(7)}),
                   root / PARTS / ROWS_FILE)
    for g, (rows, bl, k) in groups.items():
        write_npz(piece(root, g, "rows.npz"), {"row": np.array(rows, np.int64), "k": np.array(k, np.int32)})
        frame = pd.DataFrame({c.name: [None] * len(rows) for c in mention_schema()})
        frame["mention_id"] = [ids[r] for r in rows]
        frame["name"] = [f"N {r}" for r in rows]
        frame["block"] = bl
        for c in mention_schema():
            if pa.types.is_list(c.type):
                frame[c.name] = [[] for _ in rows]
        pq.write_table(pa.Table.from_pandas(frame, schema=mention_schema(), preserve_index=False),
                       piece(root, g, "mentions.parquet"))
        sizes = pd.Series(bl).value_counts(sort=False)
        pd.DataFrame({"block": sizes.index, "n_mentions": sizes.to_numpy(), "group": g, "sampler": "exact-cached",
                      "why": "w"}).to_csv(piece(root, g, "blocks.csv"), index=False)
        if g != 1:
            piece(root, g, "enc.npz").write_bytes(f"enc {g}".encode())


def _join(tmp_path, order, name):
    root = tmp_path / "root"
    if not root.exists():
        _pieces(root)
    od = _Out(tmp_path / name)
    with GroupAssembly(od, root, 7, 3) as joined:
        for g in order:
            joined.add(g)
        joined.finish()
    return od.out


def test_groups_joined_in_any_order_give_the_same_files(tmp_path):
    a = _join(tmp_path, [0, 1, 2], "a")
    b = _join(tmp_path, [2, 0, 1], "b")
    for name in ("clusters.csv", "mentions.parquet", BLOCKS_FILE, encodings_file(0), encodings_file(2)):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert not (a / encodings_file(1)).exists()
    assert (a / "clusters.csv").read_text().splitlines() == [
        "mention_id,block,cluster_id,gold", "m0,a,a/0,g1", "m1,b,b/0,", "m2,d,d/0,g2", "m4,a,a/1,g1",
        "m5,b,b/0,g4", "m6,c,c/0,"]
    assert pq.read_table(a / "mentions.parquet")["mention_id"].to_pylist() == ["m0", "m4", "m1", "m5", "m6", "m2"]
    blocks = pd.read_csv(a / BLOCKS_FILE)
    assert blocks["block"].tolist() == ["a", "b", "c", "d"] and blocks["group"].tolist() == [0, 1, 1, 2]
    assert (a / encodings_file(2)).read_bytes() == b"enc 2"


def test_a_missing_or_repeated_group_is_refused_and_leaves_no_files(tmp_path):
    root = tmp_path / "root"
    _pieces(root)
    od = _Out(tmp_path / "o")
    with pytest.raises(RuntimeError, match=r"block groups missing from the output: \[1\]"):
        with GroupAssembly(od, root, 7, 3) as joined:
            joined.add(0)
            joined.add(2)
            joined.finish()
    assert not (od.out / "clusters.csv").exists() and not (od.out / "mentions.parquet").exists()
    assert not (od.out / BLOCKS_FILE).exists()
    with pytest.raises(ValueError, match="block group 0 is not a group still to add"):
        with GroupAssembly(_Out(tmp_path / "o2"), root, 7, 3) as joined:
            joined.add(0)
            joined.add(0)
    with pytest.raises(ValueError, match="block group 3 is not a group still to add"):
        with GroupAssembly(_Out(tmp_path / "o3"), root, 7, 3) as joined:
            joined.add(3)
