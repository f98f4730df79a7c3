"""Stub of the compiled pairwise factor kernel (see _factors.pyx)."""
import numpy as np
from coref.features import EncodedBlock

n_features: int
MEMO_MAX_BYTES: int

def pair_features(enc: EncodedBlock, I: np.ndarray, J: np.ndarray, out: np.ndarray,
                  memo: bool | None = None) -> None: ...
def pair_factors(enc: EncodedBlock, theta: np.ndarray, bias: float, I: np.ndarray,
                 J: np.ndarray, out: np.ndarray, memo: bool | None = None) -> None: ...
def row_factors(enc: EncodedBlock, theta: np.ndarray, bias: float, i: int, J: np.ndarray,
                out: np.ndarray, memo: bool | None = None) -> bool: ...
def factor_matrix(enc: EncodedBlock, theta: np.ndarray, bias: float, out: np.ndarray,
                  memo: bool = True) -> None: ...
def factor_rate(enc: EncodedBlock, theta: np.ndarray, bias: float, n_evals: int,
                memo: bool = True) -> float: ...
