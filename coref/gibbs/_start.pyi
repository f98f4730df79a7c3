"""Stub of the compiled greedy first clustering (see _start.pyx)."""
import numpy as np
from coref.features import EncodedBlock

def greedy_start(enc: EncodedBlock, theta: np.ndarray, bias: float, max_members: int,
                 labels: np.ndarray) -> tuple[int, int]: ...
