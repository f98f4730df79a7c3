"""The split encoder (per-mention pieces + block assembly) equals the reference encoder bit for bit."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from coref.features import EncodedBlock, MentionEncoding, Vocabulary, assemble_block, encode_mentions, encode_parts

from ._legacy_encode import legacy_encode_mentions

SHARED = Path(__file__).resolve().parents[2] / "data" / "aminer_na"


def assert_same_block(a, b):
    """Every field of two EncodedBlocks equal: same dtype, same shape, same bits."""
    import dataclasses

    for f in dataclasses.fields(EncodedBlock):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), f.name
            assert x.dtype == y.dtype, (f.name, x.dtype, y.dtype)
            assert x.shape == y.shape, (f.name, x.shape, y.shape)
            assert x.tobytes() == y.tobytes(), f.name
        else:
            assert type(x) is type(y) and x == y, (f.name, x, y)
