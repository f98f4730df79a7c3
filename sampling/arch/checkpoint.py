"""ARCH chain checkpoints: one ``.npz`` (no pickle), validated field by field before reuse.

Layout (``numpy.savez``, read back with ``allow_pickle=False``, so nothing in the
file can execute code):

* ``meta``: a JSON document (0-d unicode array) with ``format``
  (``"racing-inference/arch-checkpoint"``), ``version``, the run's ``config``
  (orders, sweeps, chains, method, racing settings, ...) and its SHA-256
  ``config_hash``, the SHA-256 ``data_hash`` of the standardised returns, the
  ``phase`` (``"warmup"`` / ``"sample"``), sweeps ``done`` per chain, the fixed
  ``log pi~`` once known, the per-phase counters and each chain's bit-generator
  state;
* per chain ``c``: ``chain{c}_<field>`` for the state arrays of
  :class:`~sampling.arch.chain.ChainState` and the traces so far;
* ``pseudo{j}_mean``, ``pseudo{j}_cov`` (the Carlin-Chib pseudo-priors);
* ``checksum``: SHA-256 over ``meta`` and every array, in name order.

:func:`load_checkpoint` refuses (with :class:`~sampling.exceptions.CheckpointError`
naming the file) anything that is not such a file, fails the checksum, was written
for other settings or other data, or holds fields of the wrong type, shape or range.
"""
from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np

from sampling.utils.atomic import atomic_open
from sampling.exceptions import CheckpointError

from .model import LaplaceApprox

__all__ = ["FORMAT", "VERSION", "config_hash", "data_hash", "load_checkpoint", "save_checkpoint"]

FORMAT = "racing-inference/arch-checkpoint"
VERSION = 1
_STATE_FIELDS = {  # name -> (dtype kind, shape as a function of (ctx))
    "xs_flat": ("f", lambda c: (c.sum_p,)),
    "log_pi": ("f", lambda c: (c.D,)),
    "log_step": ("f", lambda c: (c.D,)),
    "istate": ("i", lambda c: (3,)),
    "fstate": ("f", lambda c: (1,)),
    "cache_g": ("f", lambda c: (c.p_max,)),
    "perm": ("i", lambda c: (c.n_in,)),
    "stats": ("i", lambda c: None),
}
_TRACES = {"wq": ("i", 1), "wpi": ("f", 2), "sq": ("i", 1), "ev": ("i", 1)}


def _canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def config_hash(config):
    """SHA-256 of the canonical JSON of a run's settings."""
    return hashlib.sha256(_canonical(config).encode()).hexdigest()


def data_hash(z):
    """SHA-256 of the (standardised) returns as float64 bytes."""
    return hashlib.sha256(np.ascontiguousarray(z, dtype=np.float64).tobytes()).hexdigest()


def _checksum(meta_text, arrays):
    h = hashlib.sha256(meta_text.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path, saved, *, config, z):
    """Write the run state ``saved`` (see ``select_order``) to ``path`` atomically."""
    arrays = {}
    for c, st in enumerate(saved["states"]):
        for name in _STATE_FIELDS:
            arrays[f"chain{c}_{name}"] = getattr(st, name)
        for name in _TRACES:
            parts = saved[name][c]
            arrays[f"chain{c}_{name}"] = (np.concatenate(parts) if parts else
                                         np.empty((0, len(config["orders"])) if name == "wpi" else 0,
                                                  dtype=float if name == "wpi" else np.int64))
    for j, p in enumerate(saved["pseudo"]):
        arrays[f"pseudo{j}_mean"] = p.mean
        arrays[f"pseudo{j}_cov"] = p.cov
        arrays[f"pseudo{j}_scalars"] = np.array([p.log_post_map, p.log_evidence])
    meta = {
        "format": FORMAT, "version": VERSION, "config": config, "config_hash": config_hash(config),
        "data_hash": data_hash(z), "phase": saved["phase"], "done": list(map(int, saved["done"])),
        "fixed_pi": None if saved["fixed_pi"] is None else np.asarray(saved["fixed_pi"]).tolist(),
        "stats_p": saved["stats_p"], "stats_w": saved["stats_w"], "stats_s": saved["stats_s"],
        "rng": [st.rng.bit_generator.state for st in saved["states"]],
        "n_chains": len(saved["states"]), "n_models": len(saved["pseudo"]),
    }
    text = json.dumps(meta)
    arrays["meta"] = np.array(text)
    arrays["checksum"] = np.array(_checksum(text, {k: v for k, v in arrays.items() if k != "meta"}))
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)


def _fail(path, what):
    raise CheckpointError(f"{path}: not a valid ARCH checkpoint for this run: {what}; "
                          "remove it or drop --resume")


def _array(path, data, name, kind, shape=None, ndim=None):
    if name not in data:
        _fail(path, f"missing field {name!r}")
    a = data[name]
    if a.dtype.kind != kind and not (kind == "f" and a.dtype.kind == "i"):
        _fail(path, f"field {name!r} has dtype {a.dtype}, expected {'float' if kind == 'f' else 'int'}")
    if shape is not None and a.shape != shape:
        _fail(path, f"field {name!r} has shape {a.shape}, expected {shape}")
    if ndim is not None and a.ndim != ndim:
        _fail(path, f"field {name!r} has {a.ndim} dimensions, expected {ndim}")
    if kind == "f" and not np.all(np.isfinite(a)):
        _fail(path, f"field {name!r} holds NaN or inf")
    return a


def load_checkpoint(path, *, config, z, ctx, new_state, stat_keys):
    """Read and validate a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or path
    config : dict
        The current run's settings; the file must have been written for the same.
    z : ndarray
        The current run's standardised returns; the file's ``data_hash`` must match.
    ctx : ChainContext
        Sizes to check the arrays against.
    new_state : callable
        ``new_state(rng) -> ChainState`` (a fresh state whose arrays are overwritten).
    stat_keys : sequence of str
        The counter names every stats record must hold.

    Returns
    -------
    dict
        The run state (``states``, ``pseudo``, traces, counters, ``phase``, ``done``,
        ``fixed_pi``) as ``select_order`` keeps it.

    Raises
    ------
    CheckpointError
        Not an ``.npz`` of this format (e.g. a pickle), a failed checksum, other
        settings or data, or a field of the wrong type, shape or range; the message
        names the file.
    """
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        _fail(path, f"cannot be read as an .npz without pickle ({type(exc).__name__}: {exc})")
    if "meta" not in data or data["meta"].dtype.kind != "U" or data["meta"].shape != ():
        _fail(path, "no JSON 'meta' field")
    text = str(data["meta"][()])
    if "checksum" not in data or data["checksum"].dtype.kind != "U":
        _fail(path, "no 'checksum' field")
    rest = {k: v for k, v in data.items() if k not in ("meta", "checksum")}
    if str(data["checksum"][()]) != _checksum(text, rest):
        _fail(path, "checksum mismatch (the file was modified or truncated)")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(path, f"'meta' is not JSON ({exc})")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        _fail(path, f"format is {meta.get('format') if isinstance(meta, dict) else None!r}, expected {FORMAT!r}")
    if meta.get("version") != VERSION:
        _fail(path, f"version {meta.get('version')!r}, this code reads version {VERSION}")
    if meta.get("config_hash") != config_hash(config) or meta.get("config") != json.loads(_canonical(config)):
        _fail(path, "it was written by a run with other settings")
    if meta.get("data_hash") != data_hash(z):
        _fail(path, "it was written for other returns data")
    n_chains, D = config["n_chains"], ctx.D
    if meta.get("n_chains") != n_chains or meta.get("n_models") != D:
        _fail(path, "wrong number of chains or models")
    phase = meta.get("phase")
    if phase not in ("warmup", "sample"):
        _fail(path, f"phase {phase!r}")
    done = meta.get("done")
    limit = config["n_warmup"] if phase == "warmup" else config["n_iterations"]
    if (not isinstance(done, list) or len(done) != n_chains
            or not all(isinstance(d, int) and 0 <= d <= limit for d in done)):
        _fail(path, f"'done' must be {n_chains} sweep counts in [0, {limit}]; got {done!r}")
    fixed_pi = meta.get("fixed_pi")
    if fixed_pi is not None:
        fixed_pi = np.asarray(fixed_pi, dtype=float)
        if fixed_pi.shape != (D,) or not np.all(np.isfinite(fixed_pi)):
            _fail(path, "'fixed_pi' must be D finite numbers")
    elif phase == "sample":
        _fail(path, "phase 'sample' without 'fixed_pi'")
    stats = {}
    for key, n in (("stats_p", None), ("stats_w", n_chains), ("stats_s", n_chains)):
        val = meta.get(key)
        recs = [val] if n is None else val
        if not isinstance(recs, list) or (n is not None and len(recs) != n):
            _fail(path, f"{key!r} must hold {n} records")
        for rec in recs:
            if (not isinstance(rec, dict) or set(rec) != set(stat_keys) | {"wall_s", "cpu_s"}
                    or not all(isinstance(rec[k], int) and rec[k] >= 0 for k in stat_keys)
                    or not all(isinstance(rec[k], (int, float)) and rec[k] >= 0
                               for k in ("wall_s", "cpu_s"))):
                _fail(path, f"{key!r} records must hold the counters {sorted(stat_keys)}, "
                            "wall_s and cpu_s")
        stats[key] = val
    rngs = meta.get("rng")
    if not isinstance(rngs, list) or len(rngs) != n_chains:
        _fail(path, "'rng' must hold one bit-generator state per chain")
    pseudo = []
    for j in range(D):
        P = ctx.models[j].n_params
        mean = _array(path, data, f"pseudo{j}_mean", "f", (P,))
        cov = _array(path, data, f"pseudo{j}_cov", "f", (P, P))
        sc = _array(path, data, f"pseudo{j}_scalars", "f", (2,))
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            _fail(path, f"pseudo-prior {j} covariance is not positive definite")
        pseudo.append(LaplaceApprox(mean=mean, cov=cov, chol=chol, log_post_map=float(sc[0]),
                                    log_evidence=float(sc[1])))
    states, traces = [], {k: [] for k in _TRACES}
    for c in range(n_chains):
        rs = rngs[c]
        if not (isinstance(rs, dict) and rs.get("bit_generator") == "PCG64"):
            _fail(path, f"chain {c}: bit-generator state must be PCG64")
        gen = np.random.Generator(np.random.PCG64())
        try:
            gen.bit_generator.state = rs
        except (TypeError, ValueError, KeyError) as exc:
            _fail(path, f"chain {c}: bad bit-generator state ({exc})")
        st = new_state(gen)
        for name, (kind, shape_fn) in _STATE_FIELDS.items():
            shape = shape_fn(ctx) if shape_fn(ctx) is not None else getattr(st, name).shape
            a = _array(path, data, f"chain{c}_{name}", kind, shape)
            getattr(st, name)[...] = a
        if not 0 <= st.q_idx < D or st.t < 0 or not -1 <= st.cache_j < D:
            _fail(path, f"chain {c}: 'istate' out of range ({st.istate.tolist()})")
        if not np.array_equal(np.sort(st.perm), np.arange(ctx.n_in)):
            _fail(path, f"chain {c}: 'perm' is not a permutation of the {ctx.n_in} inliers")
        if np.any(st.stats < 0):
            _fail(path, f"chain {c}: negative counters")
        states.append(st)
        n_w = done[c] if phase == "warmup" else config["n_warmup"]
        n_s = done[c] if phase == "sample" else 0
        for name, (kind, ndim) in _TRACES.items():
            n = n_w if name in ("wq", "wpi") else (n_s if name == "sq" else n_w + n_s)
            shape = (n, D) if name == "wpi" else (n,)
            a = _array(path, data, f"chain{c}_{name}", kind, shape)
            if name in ("wq", "sq") and a.size and (a.min() < 0 or a.max() >= D):
                _fail(path, f"chain {c}: '{name}' holds model indices outside [0, {D})")
            traces[name].append([a.astype(float if kind == "f" else np.int64)] if n else [])
    return {"pseudo": pseudo, "stats_p": stats["stats_p"], "stats_w": stats["stats_w"],
            "stats_s": stats["stats_s"], "phase": phase, "done": done, "states": states,
            "fixed_pi": fixed_pi, **traces}
