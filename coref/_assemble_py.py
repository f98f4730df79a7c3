# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of the block assembly twin, now :mod:`coref.encoding._assemble_py`."""
from coref.encoding._assemble_py import assemble_block_py

__all__ = ["assemble_block_py"]
