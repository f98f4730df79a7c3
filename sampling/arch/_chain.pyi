import numpy as np

STATS: tuple[str, ...]

class ChainKernel:
    def __init__(self, ctx: object, state: object, settings: dict) -> None: ...
    def sweep(
        self,
        z: np.ndarray,
        gumbel: np.ndarray,
        u: np.ndarray,
        gen: np.random.Generator,
        adapt_step: bool,
        adapt_pi: bool,
        check: bool,
    ) -> tuple[int, int]: ...
    def mh_step(self, xi: np.ndarray, u: float, gen: np.random.Generator, gamma: float) -> bool: ...
