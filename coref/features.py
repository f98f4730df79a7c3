# TRANSITIONAL SHIM (issue 26): re-exports for the integrator; delete after imports are rewritten.
"""Old home of the mention encoding, now the package :mod:`coref.encoding`."""
from coref.blocking import normalize_name
from coref.encoding.blocks import EncodedBlock, assemble_block, assemble_blocks, block_components, encode_mentions
from coref.encoding.components import token_list_components as _components
from coref.encoding.mentions import MentionEncoding, encode_parts
from coref.encoding.text import words
from coref.encoding.vocabulary import Vocabulary
from coref.factors.names import FEATURE_GROUPS, FEATURE_LABELS, FEATURE_NAMES, N_BASE, N_FEATURES

__all__ = ["FEATURE_NAMES", "FEATURE_LABELS", "FEATURE_GROUPS", "N_BASE", "N_FEATURES", "EncodedBlock",
           "MentionEncoding", "Vocabulary", "assemble_block", "assemble_blocks", "block_components",
           "encode_mentions", "encode_parts", "normalize_name", "words", "_components"]
