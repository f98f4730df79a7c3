"""Stub of the compiled Gibbs kernel (see _gibbs.pyx)."""
import numpy as np
from coref.features import EncodedBlock

def anneal(enc: EncodedBlock, theta: np.ndarray, bias: float, labels: np.ndarray,
           size: np.ndarray, movable: np.ndarray, inv_temps: np.ndarray, stop_mask: np.ndarray,
           patience: int, racing: int, first_batch: int, small_arm_bound: int,
           fmax: np.ndarray, b_table: np.ndarray, rng_state: np.ndarray, lab_hist: np.ndarray,
           evals: np.ndarray, fmat: np.ndarray | None = ..., fmat_mode: int = ...,
           memo_j: np.ndarray | None = ..., memo_f: np.ndarray | None = ...,
           memo_rest: np.ndarray | None = ..., memo_row_min: int = ...,
           still_moves: int = ..., cv_rank: np.ndarray | None = ...,
           cv_weight: float = ..., cand_q_ptr: np.ndarray | None = ...,
           cand_q_key: np.ndarray | None = ..., cand_k_ptr: np.ndarray | None = ...,
           cand_k_men: np.ndarray | None = ..., cand_rest: np.ndarray | None = ...,
           cand_accept: float = ..., memo_ovf: np.ndarray | None = ...,
           memo_ovf_at: np.ndarray | None = ..., memo_tier: np.ndarray | None = ...,
           memo_threads: int = ...) -> int: ...
def marginal_sweep(F: np.ndarray, S: np.ndarray, lab: np.ndarray, size: np.ndarray,
                   perm: np.ndarray, u: np.ndarray, exp: np.ufunc) -> None: ...
def gumbel_upper(u: np.ndarray, out: np.ndarray) -> None: ...
def gumbel_lower(u: np.ndarray, out: np.ndarray) -> None: ...
