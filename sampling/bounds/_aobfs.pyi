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

class LookupSum:
    def __init__(self, cards: np.ndarray, ptr: np.ndarray, kstride: np.ndarray, vptr: np.ndarray,
                 vars_: np.ndarray, strides: np.ndarray, tables: list[np.ndarray]) -> None: ...
    def rows(self, k: int, a: np.ndarray, out: np.ndarray) -> None: ...

class AndOrTree:
    n_and: int
    n_or: int
    n_nodes: int
    n_expansions: int
    max_nodes: int
    cap_and: int
    cap_or: int
    full: bool
    memory_limited: bool
    reset_collapsed: bool
    stuck: bool
    n_collapses: int
    log_Z_upper_min: float
    def __init__(self, ch_ptr: np.ndarray, ch_idx: np.ndarray, is_leaf: np.ndarray, cards: np.ndarray,
                 arc: LookupSum, heur: LookupSum, log_const: float, max_nodes: int,
                 capacity: int = ..., memory_limited: bool = ...,
                 reset_collapsed: bool = ...) -> None: ...
    @property
    def log_Z_upper(self) -> float: ...
    @property
    def log_Z_lower(self) -> float: ...
    @property
    def solved(self) -> bool: ...
    @property
    def can_expand(self) -> bool: ...
    def expand(self, n: int) -> int: ...
    def worst(self) -> int: ...
    def collapse(self, n: int) -> int: ...
    def dis_rounds(self, prop: ProposalKernel, n_rounds: int, n_exp: int, n_samp: int, max_exp: int,
                   uniforms: np.ndarray, x: np.ndarray, out_logw: np.ndarray, out_logU: np.ndarray) -> int: ...
