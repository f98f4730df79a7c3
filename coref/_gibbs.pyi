"""Stub of the compiled Gibbs sweep (see _gibbs.pyx)."""
import numpy as np
from coref.features import EncodedBlock

def sweep(enc: EncodedBlock, theta: np.ndarray, bias: float, labels: np.ndarray,
          size: np.ndarray, order: np.ndarray, inv_temp: float, racing: int,
          first_batch: int, b_table: np.ndarray, gumbels: np.ndarray, uniforms: np.ndarray,
          state: np.ndarray) -> bool: ...
