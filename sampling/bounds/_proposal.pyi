import numpy as np

class ProposalKernel:
    def __init__(self, cards: np.ndarray, pre: np.ndarray, pos: np.ndarray, size: np.ndarray,
                 comp_ptr: np.ndarray, comp_lw: np.ndarray, comp_kstride: np.ndarray,
                 comp_vptr: np.ndarray, comp_vars: np.ndarray, comp_strides: np.ndarray,
                 tables: list[np.ndarray], bucket_ptr: np.ndarray, bucket_fac: np.ndarray,
                 f_off: np.ndarray, f_vptr: np.ndarray, f_vars: np.ndarray, f_strides: np.ndarray,
                 f_flat: np.ndarray, row: np.ndarray) -> None: ...
    def sample(self, starts: np.ndarray, x: np.ndarray, uniforms: np.ndarray) -> tuple[float, float]: ...
    def sample_batch(self, starts: np.ndarray, uniforms: np.ndarray, x: np.ndarray, log_const: float,
                     out: np.ndarray) -> None: ...
