"""Output directories you can trust: a lock while written, a manifest written last, block
checkpoints and per-mention encodings that are data (npz / JSON), validated before reuse,
and the report files of each command.

- :mod:`coref.outputs.directory`: :class:`OutputDir` (checks, lock, new files written beside
  the previous run and swapped in, manifest last), :func:`check_out_location`,
  :func:`read_manifest`, :func:`sha256_file`, :func:`mentions_checksum`.
- :mod:`coref.outputs.lock`: the lock file, running vs interrupted commands.
- :mod:`coref.outputs.checkpoints`: :class:`CheckpointStore`, per-block results of ``coref run``.
- :mod:`coref.outputs.encodings`: ``encodings.npz`` (:func:`write_encodings`,
  :func:`read_encodings`), versioned by :data:`ENCODING_VERSION`.
"""
from coref.exceptions import EncodingsError, OutputError
from coref.outputs.checkpoints import CHECKPOINT_DIR, CheckpointStore
from coref.outputs.directory import (LOCK, MANIFEST, OutputDir, check_out_location, manifest_digest,
                                     mentions_checksum, read_manifest, sha256_file, verify_listed)
from coref.outputs.encodings import ENCODING_VERSION, ENCODINGS_FILE, read_encodings, write_encodings

__all__ = ["OutputError", "OutputDir", "sha256_file", "mentions_checksum", "read_manifest", "verify_listed", "CheckpointStore",
           "CHECKPOINT_DIR", "MANIFEST", "LOCK", "check_out_location", "manifest_digest", "ENCODINGS_FILE", "ENCODING_VERSION", "EncodingsError",
           "write_encodings", "read_encodings"]
