"""``coref explain`` as a function: the pairwise factor of two mentions, broken down by feature."""
from __future__ import annotations

from coref.explain import explain_pair
from coref.inputs import load_input, resolve_model
from coref.settings import make_settings

__all__ = ["explain"]


def explain(mention_a, mention_b, *, data=None, format=None, model=None):
    """Load the model and the mentions, and explain f_theta of ``mention_a`` and ``mention_b``.

    Parameters
    ----------
    mention_a, mention_b : str
        Mention ids of one block.
    data : None, str, os.PathLike or pandas.DataFrame
        Mentions holding both (``None``: the shipped AMiner set).
    format : str or None
        Loader format (``None``: detected).
    model : None, str or os.PathLike
        Model directory; ``None`` = the shipped default.

    Returns
    -------
    coref.explain.Explanation

    Raises
    ------
    KeyError
        If a mention id is not in the data.
    FileNotFoundError, ValueError, TypeError, coref.exceptions.MentionFormatError,
    coref.exceptions.ModelFormatError
        For bad input, the same mention twice, mentions of two blocks, or a bad model.
    """
    make_settings("explain", format=format)
    fitted, _, _ = resolve_model(model)
    df, _ = load_input(data, format=format, command="explain")
    return explain_pair(fitted, df, mention_a, mention_b)
