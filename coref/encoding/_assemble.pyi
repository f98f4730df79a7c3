"""Stub of the compiled block assembly (see _assemble.pyx)."""
import numpy as np

TEXT_PREFIXES: tuple[str, ...]

def assemble(a: dict[str, np.ndarray], n_vocab: tuple[int, int, int, int, int], n: int,
             n_topics: int, comps: dict[str, np.ndarray]) -> dict[str, np.ndarray | tuple[float, ...]]: ...
