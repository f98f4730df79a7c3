"""Exception and warning classes of the ``coref`` package."""

from sampling.exceptions import located


class MentionFormatError(ValueError):
    """A mention file or record could not be read.

    Parameters
    ----------
    message : str
        What is wrong; kept as ``reason``, while ``str(exc)`` is prefixed with
        ``path:record: `` (:func:`sampling.exceptions.located`).
    path : str or os.PathLike or None
        The file being read; kept as ``path`` (a str).
    record : int or str or None
        1-based line number, or the record / signature id, where it went wrong;
        kept as ``record``.
    """

    def __init__(self, message, *, path=None, record=None):
        self.path = None if path is None else str(path)
        self.record = record
        self.reason = message
        super().__init__(located(message, self.path, record, "record"))


class MixedFormatsError(MentionFormatError):
    """A folder holds data files of more than one format (the message lists them).

    Reading only one of the formats would drop the other files silently, so
    :func:`coref.io.load_mentions` refuses the folder instead.
    """


class SkippedRecordsWarning(UserWarning):
    """Some records could not be read and were skipped (counted in the load report)."""


class ModelFormatError(ValueError):
    """A saved model (or checkpoint) cannot be used: tampered, foreign, other version or feature layout.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str or None
        The file at fault (named in the message).
    """

    def __init__(self, message, *, path=None):
        self.path = None if path is None else str(path)
        super().__init__(f"{self.path}: {message}" if self.path else message)


class SkippedFilesWarning(SkippedRecordsWarning):
    """Whole files of a folder could not be read and were skipped (named in the load report).

    A subclass of :class:`SkippedRecordsWarning`, so a filter on that class
    also catches this one.
    """


class OutputError(OSError):
    """An output directory cannot be used (locked, unwritable, not a directory, unfinished)."""


class EncodingsError(ValueError):
    """A saved per-mention encoding cannot be reused (unreadable, foreign, tampered, stale or of another
    encoding version)."""


class ModelChangeError(ValueError):
    """``coref add`` was given another model than the one that made the clusters it extends.

    Pass the same model, or allow the change explicitly (``--allow-model-change``), which
    the new output's manifest records.
    """


class InputWarning(UserWarning):
    """The input was read, but not exactly as written: look at it before trusting the result.

    One line per file and kind, naming the file, the first line concerned and the
    number of rows: a list column split at an undocumented separator (``;``), a
    schema column absent (read as unknown for every row), blocks derived from the
    names. Kept in :attr:`coref.io.LoadReport.warnings`.
    """


class IgnoredFieldsWarning(UserWarning):
    """Input fields the model never learned are ignored (blanked before encoding).

    Issued once per field and model (its vocabulary) when mentions hold a field
    that fewer than two training mentions held; the message names the fields and
    why. ``PairwiseModel.ignored_fields(df)`` returns the same as a dict.
    """


class UnscoredBlocksWarning(UserWarning):
    """``--confidence`` left the mentions of blocks too large for its dense n x n matrices without a confidence.

    Issued once per run, naming the limit and how many blocks and mentions it left out
    (their rows say method ``none``; summary.json ``confidence_unscored`` counts them).
    """
