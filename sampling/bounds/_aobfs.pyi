import numpy as np

from sampling.bounds._proposal import ProposalKernel

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
    def dis_samples(self, prop: ProposalKernel, n_rounds: int, n_exp: int, n_samp: int, max_exp: int,
                    uniforms: np.ndarray, seeds: np.ndarray, max_tries: int, X: np.ndarray,
                    out_logw: np.ndarray, out_logU: np.ndarray, counts: np.ndarray) -> int: ...
