"""Per-block results of ``coref run`` as checkpoints that are data (npz + JSON header), validated before reuse.

Nothing here unpickles: a checkpoint is an ``np.load(..., allow_pickle=False)`` npz file
whose JSON header and arrays are checked against the block it claims to cover (its
name, its mention ids, the settings key) before reuse; anything else is refused,
counted and recomputed. The header carries ``content_sha256``, a SHA-256 over the
settings key, the rest of the header and every array
(:func:`coref.outputs.directory.content_digest`): a
checkpoint edited after it was written (e.g. every mention put in one cluster, a
structurally valid file) is refused by name and recomputed.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from coref.outputs.directory import content_digest, write_npz

__all__ = ["CheckpointStore", "CHECKPOINT_DIR"]

CHECKPOINT_DIR = ".checkpoint"
_CHECKPOINT_FORMAT = "coref-block-checkpoint"
_CHECKPOINT_VERSION = 3          # 3: header field content_sha256
_ARRAYS = ("mention_id", "cluster_id", "evals_history", "labels_history")


class CheckpointStore:
    """Per-block results of ``coref run`` under ``OUT/.checkpoint/KEY`` as npz files.

    One file per (sampler, fold, block) holds a JSON header (format, version, settings
    key, sampler, fold, block, counts, ``content_sha256``) and the arrays ``mention_id``, ``cluster_id``,
    ``evals_history`` and ``labels_history``. :meth:`load_block` returns the result only
    if every field matches what the caller expects, including the exact set of the
    block's mention ids; otherwise it records why in :attr:`refused` and returns None.
    """

    def __init__(self, out, key):
        self.key = key
        self.root = Path(out) / CHECKPOINT_DIR / key
        self.refused = []

    def _block_path(self, sampler, fold, block):
        h = hashlib.sha256(str(block).encode("utf-8")).hexdigest()[:24]
        return self.root / sampler / f"fold{int(fold)}" / f"{h}.npz"

    def model_dir(self, fold):
        """Directory of the fold's saved model (``coref.model`` format)."""
        return self.root / f"model_fold{int(fold)}"

    def save_block(self, result):
        """Write ``result`` (a :class:`coref.inference.BlockResult`) as the checkpoint of its block, atomically."""
        header = {"format": _CHECKPOINT_FORMAT, "version": _CHECKPOINT_VERSION, "settings_key": self.key,
                  "sampler": result.sampler, "fold": int(result.fold), "block": str(result.block),
                  "n_mentions": int(len(result.mention_id)), "n_factor_evals": int(result.n_factor_evals),
                  "wall_s": float(result.wall_s)}
        lh = result.labels_history
        arrays = {
            "header": np.array(json.dumps(header)),
            "mention_id": np.asarray(result.mention_id, dtype=str),
            "cluster_id": np.asarray(result.cluster_id, dtype=str),
            "evals_history": np.asarray(result.evals_history, dtype=np.int64),
            "labels_history": (np.zeros((0, len(result.mention_id)), np.int32) if lh is None
                               else np.asarray(lh, dtype=np.int32)),
        }
        header["content_sha256"] = content_digest(self.key, header, {k: arrays[k] for k in _ARRAYS})
        arrays["header"] = np.array(json.dumps(header))
        write_npz(self._block_path(result.sampler, result.fold, result.block), arrays)

    def load_block(self, sampler, fold, block, mention_ids):
        """The checkpointed :class:`coref.inference.BlockResult`, or None (refusal recorded).

        Parameters
        ----------
        mention_ids : array-like of str
            The block's mention ids now; the checkpoint must cover exactly these.
        """
        path = self._block_path(sampler, fold, block)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                header = json.loads(str(z["header"][()]))
                arrs = {k: z[k] for k in _ARRAYS}
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError) as exc:
            self.refused.append(f"{path}: unreadable checkpoint ({type(exc).__name__}: {exc})")
            return None
        want = {"format": _CHECKPOINT_FORMAT, "version": _CHECKPOINT_VERSION, "settings_key": self.key,
                "sampler": sampler, "fold": int(fold), "block": str(block)}
        for k, v in want.items():
            if not isinstance(header, dict) or header.get(k) != v:
                got = header.get(k) if isinstance(header, dict) else None
                self.refused.append(f"{path}: {k} is {got!r}, expected {v!r}")
                return None
        ids = np.asarray(arrs["mention_id"]).astype(str)
        now = np.asarray(mention_ids).astype(str)
        n = len(now)
        if len(ids) != n or set(ids.tolist()) != set(now.tolist()) or len(set(ids.tolist())) != n:
            missing = len(set(now.tolist()) - set(ids.tolist()))
            self.refused.append(f"{path}: covers {len(ids)} mentions of block {block!r}, which has {n} "
                                f"({missing} missing from the checkpoint)")
            return None
        cid = np.asarray(arrs["cluster_id"]).astype(str)
        ev = np.asarray(arrs["evals_history"])
        lh = np.asarray(arrs["labels_history"])
        if (cid.shape != (n,) or ev.ndim != 1 or ev.dtype.kind not in "iu" or lh.ndim != 2 or lh.shape[1] != n
                or lh.dtype.kind not in "iu" or (lh.shape[0] and lh.shape[0] != len(ev))
                or not isinstance(header.get("n_factor_evals"), int) or header.get("n_mentions") != n
                or not isinstance(header.get("wall_s"), (int, float))):
            self.refused.append(f"{path}: array shapes or counts do not match block {block!r}")
            return None
        if header.get("content_sha256") != content_digest(self.key, header, arrs):
            self.refused.append(f"{path}: edited after it was written (its content_sha256 does not match its "
                                f"content and settings): block {block!r} recomputed")
            return None
        from coref.inference import BlockResult   # (here: inference pulls in the samplers, which
        #                                          no command should import just to start up)
        return BlockResult(sampler, int(fold), str(block), ids.astype(object), cid.astype(object),
                           int(header["n_factor_evals"]), float(header["wall_s"]), ev.astype(np.int64),
                           lh.astype(np.int32) if lh.shape[0] else None)
