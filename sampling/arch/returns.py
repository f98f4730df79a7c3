"""Returns series for the ARCH model: price files, percent log returns, checks.

:func:`load_returns` reads price files (NinjaTrader minute bars or CSV) into percent log
returns (:func:`build_returns`), dropping the returns across intraday session breaks and
warning (:class:`~sampling.exceptions.DataWarning`) about extreme returns
(:func:`extreme_returns`, a documented MAD rule). :func:`check_returns` validates a
series before a fit, :func:`standardise` demeans and scales it.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sampling.exceptions import DataWarning, ReturnsDataError

__all__ = ["MIN_TERMS", "DEFAULT_RETURNS_FILE", "EXTREME_K", "default_returns_path", "load_prices",
           "build_returns", "extreme_returns", "load_returns", "check_returns", "standardise"]

#: Minimum number of likelihood terms (after conditioning on ``q_max``) we accept.
MIN_TERMS = 50

DEFAULT_RETURNS_FILE = "spy_1min_2011-01_pyalgotrade.txt"


def default_returns_path():
    """Path of the default shipped series (SPY 1-minute bars, January 2011)."""
    from sampling.utils.data import data_path

    return data_path("returns", DEFAULT_RETURNS_FILE)


def load_prices(path):
    """Read a price file into a DataFrame with columns ``time`` (or NaT) and ``price``.

    Formats recognised:

    * NinjaTrader minute bars (the shipped SPY files): no header, ``;``-separated
      ``YYYYMMDD HHMMSS;open;high;low;close;volume``; ``price`` is ``close``.
    * CSV (optionally gzipped) with a header holding ``Adj Close``, ``Close``,
      ``close`` or ``price`` and optionally ``Date``/``time``.

    Raises
    ------
    ReturnsDataError
        If the file cannot be read, has no price column, or holds NaN (missing),
        infinite or non-positive prices (the message names the file and the first
        bad row).
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        if head == b"\x1f\x8b":
            import gzip

            with gzip.open(path, "rt") as fh:
                first = fh.readline()
        else:
            with open(path, encoding="utf-8", errors="replace") as fh:
                first = fh.readline()
    except OSError as exc:
        raise ReturnsDataError(f"{path}: cannot read returns file ({exc})") from exc
    try:
        if ";" in first:
            df = pd.read_csv(path, sep=";", header=None,
                             names=["dt", "open", "high", "low", "close", "volume"])
            time = pd.to_datetime(df["dt"], format="%Y%m%d %H%M%S", errors="coerce")
            price = pd.to_numeric(df["close"], errors="coerce")
        else:
            df = pd.read_csv(path)
            cols = {c.strip().lower(): c for c in df.columns}
            key = next((cols[c] for c in ("adj close", "close", "price") if c in cols), None)
            if key is None:
                raise ReturnsDataError(
                    f"{path}: no price column; expected one of 'Adj Close', 'Close', 'price', "
                    f"got columns {list(df.columns)}")
            price = pd.to_numeric(df[key], errors="coerce")
            tkey = next((cols[c] for c in ("date", "time", "datetime") if c in cols), None)
            time = (pd.to_datetime(df[tkey], errors="coerce") if tkey is not None
                    else pd.Series(pd.NaT, index=df.index))
    except ReturnsDataError:
        raise
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ReturnsDataError(f"{path}: cannot parse returns file ({exc})") from exc
    values = price.to_numpy(dtype=float)
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        raise ReturnsDataError(
            f"{path}: {bad.size} missing/NaN price(s), first at data row {bad[0] + 1}")
    bad = np.flatnonzero(np.isinf(values))
    if bad.size:
        raise ReturnsDataError(
            f"{path}: {bad.size} non-finite (infinite) price(s), first at data row {bad[0] + 1} "
            f"({values[bad[0]]})")
    nonpos = np.flatnonzero(price.to_numpy(dtype=float) <= 0)
    if nonpos.size:
        raise ReturnsDataError(
            f"{path}: {nonpos.size} non-positive price(s), first at data row {nonpos[0] + 1}")
    return pd.DataFrame({"time": time.to_numpy(), "price": price.to_numpy(dtype=float)})


def build_returns(prices, times=None, *, max_gap_minutes=60.0):
    """Percent log returns ``100 * diff(log price)``, dropping returns across session gaps.

    Parameters
    ----------
    prices : ndarray of shape (n_prices,)
        Positive prices in time order.
    times : array of datetime64 of shape (n_prices,), optional
        Bar times. When given and the bars are intraday (median spacing at most
        ``max_gap_minutes``), a return whose two bars are more than
        ``max_gap_minutes`` apart spans two sessions (the SPY files have a ~7 h
        overnight break, SOURCES.md) and is dropped; the remaining returns are
        concatenated in time order. Shorter gaps inside a session (sparse
        extended-hours bars) are kept as one return over the gap. Daily or slower
        bars (median spacing above ``max_gap_minutes``) keep every return.
    max_gap_minutes : float
        Session-break threshold in minutes.

    Returns
    -------
    ndarray of shape (n_returns,)
        Percent log returns. Zero returns (price unchanged over the bar, ~20% of
        SPY 1-minute bars because of the 1-cent tick) are kept: the Student-t
        density is finite at 0 and dropping them would distort the volatility.
    """
    return _returns_and_rows(prices, times, max_gap_minutes)[0]


def _returns_and_rows(prices, times, max_gap_minutes):
    """:func:`build_returns` and, per return, the 0-based index of the bar it ends at."""
    p = np.asarray(prices, dtype=float)
    r = 100.0 * np.diff(np.log(p))
    rows = np.arange(1, p.size)
    if times is not None and r.size:
        t = pd.to_datetime(pd.Series(times))
        if t.notna().all():
            gap = t.diff().dt.total_seconds().to_numpy()[1:] / 60.0
            if np.median(gap) <= max_gap_minutes:  # intraday bars: drop the session breaks
                keep = gap <= max_gap_minutes
                r, rows = r[keep], rows[keep]
    return r, rows


#: Returns further than this many robust standard deviations from the median are flagged
#: by :func:`extreme_returns`. The largest genuine return of the shipped series is 29
#: robust sd (SPY 1-minute, March 2011; 14 in January 2011, 14 for the S&P 500 daily
#: closes), while one price off by a factor 10 gives about 10,000 on minute data.
EXTREME_K = 50.0


def extreme_returns(returns, k=EXTREME_K):
    """Positions of returns with ``|r - median| > k * s``, ``s`` a robust standard deviation.

    ``s = 1.4826 * MAD`` (the median absolute deviation from the median, scaled to equal
    the standard deviation of a normal sample); when more than half of the returns equal
    the median (MAD = 0), ``s = 1.2533 * mean |r - median|`` (also the normal sd). Such
    a return (a price keyed in wrong, a split not adjusted for) dominates an ARCH fit.

    Parameters
    ----------
    returns : array_like of shape (n,)
        Finite returns.
    k : float, default :data:`EXTREME_K`
        Threshold in robust standard deviations.

    Returns
    -------
    ndarray of int
        Positions of the flagged returns, in order (empty when the spread is 0).
    """
    r = np.asarray(returns, dtype=float)
    if r.size == 0:
        return np.empty(0, dtype=np.intp)
    dev = np.abs(r - np.median(r))
    s = 1.4826 * float(np.median(dev))
    if not s > 0:
        s = 1.2533 * float(np.mean(dev))
    if not s > 0:
        return np.empty(0, dtype=np.intp)
    return np.flatnonzero(dev > k * s)


def load_returns(path=None, *, max_gap_minutes=60.0):
    """Load a price file and build its returns (see :func:`build_returns`).

    ``path=None`` loads the shipped SPY 1-minute series of January 2011
    (``data/returns/spy_1min_2011-01_pyalgotrade.txt``; about 14,160 returns, the
    same order as the paper's 13,000). Several paths are concatenated in order
    (returns are built per file, so no return spans two files).

    Warns
    -----
    DataWarning
        When a file has returns :func:`extreme_returns` flags; the message names the
        file and the bar times (or data rows) of the first five.

    Raises
    ------
    ReturnsDataError
        Unreadable file, NaN, infinite or non-positive prices.
    """
    paths = [default_returns_path()] if path is None else (
        [path] if isinstance(path, (str, Path)) else list(path))
    parts = []
    for p in paths:
        df = load_prices(p)
        times = df["time"] if df["time"].notna().all() else None
        r, rows = _returns_and_rows(df["price"].to_numpy(), times, max_gap_minutes)
        _warn_extreme(p, r, rows, times)
        parts.append(r)
    r = np.concatenate(parts) if parts else np.empty(0)
    return r


def _warn_extreme(path, r, rows, times, shown=5):
    """DataWarning naming the file and the dates (or data rows) of :func:`extreme_returns`."""
    bad = extreme_returns(r)
    if not bad.size:
        return
    if times is not None:
        where = [f"{pd.Timestamp(times.iloc[rows[i]])} ({r[i]:+.4g}%)" for i in bad[:shown]]
    else:
        where = [f"data row {rows[i] + 1} ({r[i]:+.4g}%)" for i in bad[:shown]]
    more = f" and {bad.size - shown} more" if bad.size > shown else ""
    warnings.warn(f"{path}: {bad.size} extreme return(s), beyond {EXTREME_K:g} robust standard "
                  f"deviations (1.4826 MAD) of the median: at {', '.join(where)}{more}; check the "
                  "prices there (a price keyed in wrong or a split not adjusted for dominates the "
                  "fit)", DataWarning, stacklevel=3)


def check_returns(returns, *, q_max, name="returns"):
    """Validate a returns series; return it as a C-contiguous float64 array.

    Raises
    ------
    ReturnsDataError
        If it is not 1-D, holds NaN/inf, has at most ``q_max + MIN_TERMS``
        points, or is constant. ``name`` (a file name, say) prefixes the message.
    """
    try:
        r = np.ascontiguousarray(returns, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ReturnsDataError(f"{name}: returns must be numeric ({exc})") from exc
    if r.ndim != 1:
        raise ReturnsDataError(f"{name}: returns must be 1-D, got shape {r.shape}")
    bad = np.flatnonzero(~np.isfinite(r))
    if bad.size:
        raise ReturnsDataError(
            f"{name}: {bad.size} NaN/inf return(s), first at position {bad[0]}")
    need = q_max + MIN_TERMS
    if r.size < need:
        raise ReturnsDataError(
            f"{name}: too few returns: got {r.size}, need at least {need} "
            f"(q_max={q_max} conditioning points + {MIN_TERMS} likelihood terms)")
    if not np.std(r) > 0:
        raise ReturnsDataError(f"{name}: constant returns series (standard deviation 0)")
    return r


def standardise(returns):
    """Demean (constant-mean process, Appx. C.2) and scale to unit standard deviation.

    Returns ``(z, mean, scale)`` with ``z = (returns - mean) / scale``.
    """
    mean = float(np.mean(returns))
    scale = float(np.std(returns))
    return np.ascontiguousarray((returns - mean) / scale), mean, scale
