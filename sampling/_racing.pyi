import numpy as np

def merge_block(
    rewards: np.ndarray,
    arms: np.ndarray,
    n_old: int,
    mean: np.ndarray,
    m2: np.ndarray,
    pair_m2: np.ndarray,
    do_pairs: bool,
    work: np.ndarray,
) -> None: ...
def eliminate(
    mean: np.ndarray,
    m2: np.ndarray,
    pair_m2: np.ndarray,
    arms: np.ndarray,
    n_seen: int,
    coef_sd: float,
    coef_c: float,
    c_range: np.ndarray,
    pairwise: bool,
    alive: np.ndarray,
) -> int: ...
def lil_ucb_run(
    buf: np.ndarray,
    buf_len: np.ndarray,
    buf_pos: np.ndarray,
    pulls: np.ndarray,
    sums: np.ndarray,
    active: np.ndarray,
    sigma: np.ndarray,
    n_data: int,
    eps: float,
    beta: float,
    lam: float,
    delta: float,
) -> tuple[int, int]: ...
def merge_pairs(
    rewards: np.ndarray,
    arms: np.ndarray,
    n_old: int,
    mean: np.ndarray,
    block_mean: np.ndarray,
    gram: np.ndarray,
    pair_m2: np.ndarray,
    rtol: float,
) -> None: ...
def perm_draw_wrapper(
    gen: np.random.Generator, perm: np.ndarray, pos: int, m: int
) -> tuple[np.ndarray, int]: ...
def race_matrix_wrapper(
    rewards: np.ndarray,
    offset: np.ndarray,
    first_batch: int,
    b_norm: float,
    gen: np.random.Generator,
    perm: np.ndarray,
) -> tuple[int, int]: ...
