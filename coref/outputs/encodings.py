"""The per-mention encodings of a clustering, saved as ``encodings.npz`` and reused by ``coref add``.

The file records two versions, like S2AND's ``FeaturizationInfo(featurizer_version=...)``:
``version`` is the layout of the file, :data:`ENCODING_VERSION` the encoding itself
(what :func:`coref.encoding.encode_parts` computes from a mention and a vocabulary).
A file of another encoding version is refused (:class:`~coref.exceptions.EncodingsError`),
so ``coref add`` encodes the old mentions again instead of mixing two encodings.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from coref.exceptions import EncodingsError
from coref.encoding.mentions import MentionEncoding
from coref.outputs.directory import content_digest, write_npz

__all__ = ["ENCODINGS_FILE", "ENCODING_VERSION", "EncodingsError", "write_encodings", "read_encodings"]

ENCODINGS_FILE = "encodings.npz"
#: Version of the per-mention encoding (:func:`coref.encoding.encode_parts`, its arrays
#: and tables). Increase it whenever a change of the encoder makes an old file's arrays
#: differ from what the encoder computes now: files of another version are refused.
ENCODING_VERSION = 1
_ENCODINGS_FORMAT = "coref-mention-encodings"
_ENCODINGS_VERSION = 1


def write_encodings(path, enc, *, model_sha256):
    """Save a :class:`coref.encoding.MentionEncoding` as an npz file (no pickle), atomically.

    Layout: ``header`` (JSON string: format ``coref-mention-encodings``, version 1,
    ``encoding_version`` (:data:`ENCODING_VERSION`), the SHA-256 of the model.json whose
    vocabulary made it, ``n_mentions``, ``n_vocab``, ``n_topics``, and ``content_sha256``
    over the model checksum, the rest of the header and every array), ``mention_id``
    (unicode), ``array__<name>`` for each array and ``table__<name>`` for each string
    table of the encoding.

    Parameters
    ----------
    path : str or os.PathLike
    enc : coref.encoding.MentionEncoding
    model_sha256 : str
        Hex SHA-256 of the model's model.json (``coref.inputs.resolve_model`` info).
    """
    header = {"format": _ENCODINGS_FORMAT, "version": _ENCODINGS_VERSION, "encoding_version": ENCODING_VERSION,
              "model_json_sha256": str(model_sha256), "n_mentions": int(len(enc)), "n_vocab": {k: int(v) for k, v in enc.n_vocab.items()},
              "n_topics": int(enc.n_topics)}
    arrays = {"header": np.array(json.dumps(header, sort_keys=True)),
              "mention_id": np.asarray(enc.mention_id, dtype=str)}
    arrays.update({f"array__{k}": v for k, v in enc.arrays.items()})
    arrays.update({f"table__{k}": v for k, v in enc.tables.items()})
    header["content_sha256"] = content_digest(header["model_json_sha256"], header,
                                              {k: v for k, v in arrays.items() if k != "header"})
    arrays["header"] = np.array(json.dumps(header, sort_keys=True))
    write_npz(path, arrays)


def read_encodings(path, *, model_sha256, mention_ids, vocabulary=None, check_digest=True):
    """A saved per-mention encoding, validated field by field, rows in the order of ``mention_ids``.

    Parameters
    ----------
    path : str or os.PathLike
    model_sha256 : str
        The model now in use: the file must have been made with it.
    mention_ids : array-like of str or None
        The mentions the file must cover, exactly (no more, no fewer); None: the file's
        own, in its order (an output whose manifest lists the file and its SHA-256).
    vocabulary : coref.encoding.Vocabulary or None
        When given, the file's vocabulary sizes must be its.
    check_digest : bool, default True
        Check ``content_sha256``; False only for a file whose bytes were just checked
        against a manifest (:func:`coref.outputs.read_manifest`).

    Returns
    -------
    coref.encoding.MentionEncoding

    Raises
    ------
    EncodingsError
        Naming the file and the field: unreadable, another format or version, another
        encoding version (:data:`ENCODING_VERSION`), another model, other mentions, or an array of the wrong name, dtype, shape or range.
    """
    path = Path(path)

    def bad(msg):
        raise EncodingsError(f"{path}: {msg}")

    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        bad(f"unreadable ({type(exc).__name__}: {exc})")
    try:
        header = json.loads(str(data.pop("header")[()]))
    except (KeyError, ValueError, TypeError) as exc:
        bad(f"no valid JSON header ({type(exc).__name__}: {exc})")
    if not isinstance(header, dict):
        bad("the header is not a JSON object")
    why = {"encoding_version": " (encoded by another version of coref's encoder)",
           "model_json_sha256": " (made with another model)"}
    for k, v in (("format", _ENCODINGS_FORMAT), ("version", _ENCODINGS_VERSION), ("encoding_version", ENCODING_VERSION),
                 ("model_json_sha256", model_sha256)):
        if header.get(k) != v:
            bad(f"header field {k!r} is {header.get(k)!r}, expected {v!r}{why.get(k, '')}")
    members = {k: v for k, v in data.items() if k != "header"}   # what content_sha256 covers
    if "mention_id" not in data:
        bad("no array 'mention_id'")
    mids = data.pop("mention_id")
    if mids.ndim != 1 or mids.dtype.kind != "U":
        bad("'mention_id' must be a 1-D unicode array")
    if header.get("n_mentions") != len(mids):
        bad(f"header n_mentions {header.get('n_mentions')!r} differs from the {len(mids)} mention ids")
    arrays = {k[len("array__"):]: v for k, v in data.items() if k.startswith("array__")}
    tables = {k[len("table__"):]: v for k, v in data.items() if k.startswith("table__")}
    other = [k for k in data if not k.startswith(("array__", "table__"))]
    if other:
        bad(f"unexpected member(s) {other}")
    n_vocab, n_topics = header.get("n_vocab"), header.get("n_topics")
    if not isinstance(n_vocab, dict) or isinstance(n_topics, bool) or not isinstance(n_topics, int):
        bad("header fields 'n_vocab' (object) and 'n_topics' (int) are required")
    enc = MentionEncoding(mids.astype(object), arrays, tables, n_vocab, n_topics)
    try:
        enc.validate(vocabulary, where=str(path))
    except ValueError as exc:
        raise EncodingsError(str(exc)) from None
    pos = None          # (ids unique: checked by validate)
    if mention_ids is not None:
        want = np.asarray(mention_ids, dtype=object).astype(str)
        pos = pd.Index(enc.mention_id, dtype=object).get_indexer(want)
        if len(want) != len(mids) or (pos < 0).any():
            missing = int((pos < 0).sum())
            bad(f"covers {len(mids)} mentions; the clustering has {len(want)} ({missing} of them not in the file)")
    # last, so that a structural fault is named as such: a valid-looking edit is caught here
    if check_digest and header.get("content_sha256") != content_digest(model_sha256, header, members):
        bad("its content_sha256 does not match its content and model: the file was edited after it was written "
            "(or written by an older coref)")
    return enc if pos is None else enc.take(pos)
