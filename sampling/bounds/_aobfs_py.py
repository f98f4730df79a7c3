"""Pure-Python reference twin of ``_aobfs.LookupSum`` (used by the tests only; the
tree's twin is the Python backend of ``aobfs.AOBFS``)."""


class LookupSum:
    """Same constructor and ``rows`` as the compiled ``_aobfs.LookupSum``."""

    def __init__(self, cards, ptr, kstride, vptr, vars_, strides, tables):
        self.cards, self.ptr, self.kstride = cards, ptr, kstride
        self.vptr, self.vars_, self.strides, self.tables = vptr, vars_, strides, list(tables)

    def rows(self, k, a, out):
        """Write the sums for ``k = 0..card[k]-1`` into ``out``."""
        card = int(self.cards[k])
        for xv in range(card):
            out[xv] = 0.0
        for c in range(self.ptr[k], self.ptr[k + 1]):
            base = sum(int(a[self.vars_[j]]) * int(self.strides[j]) for j in range(self.vptr[c], self.vptr[c + 1]))
            for xv in range(card):
                out[xv] += self.tables[c][base + self.kstride[c] * xv]
