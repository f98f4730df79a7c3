"""The work arrays of one ``coref.gibbs._gibbs.anneal`` call (all of length n + 2)."""
import numpy as np

__all__ = ["Work"]


class Work:
    """Per-arm and per-mention scratch arrays of the Gibbs kernel for a block of n mentions.

    int64: cand, cidx, start, members, fill, T, N, order, act, pool, bj, bc, lz, nr, mcnt
    (and nc, shape (1,)); float64: acc, acc2, est, se2, gumbels, us, row, msum, mabs, hc;
    int8: alive, gok.
    """

    _INT = ("cand", "cidx", "start", "members", "fill", "T", "N", "order", "act", "pool", "bj", "bc", "lz",
            "nr", "mcnt")
    _FLOAT = ("acc", "acc2", "est", "se2", "gumbels", "us", "row", "msum", "mabs", "hc")

    def __init__(self, n):
        m = int(n) + 2
        for k in self._INT:
            setattr(self, k, np.zeros(m, np.int64))
        for k in self._FLOAT:
            setattr(self, k, np.zeros(m))
        self.alive = np.zeros(m, np.int8)
        self.gok = np.zeros(m, np.int8)
        self.nc = np.zeros(1, np.int64)
