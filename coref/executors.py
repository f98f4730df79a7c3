"""Where block inference runs: this process or a Dask cluster, one BLAS / OpenMP thread per task.

``executor_context`` yields a ``distributed.Client`` (``workers=N`` starts a loopback
``distributed.LocalCluster``, ``scheduler=ADDRESS`` connects to a running one, a given
client is used as it is) or None for this process. :func:`run_on_dask` maps tasks over
a client, :func:`chunks` groups work items into tasks of about a given size, and
:func:`progress_bar` is a tqdm bar over mentions (tqdm is imported only when shown).
Dask and tqdm are optional: they are imported inside the functions that need them.
"""
from __future__ import annotations

import contextlib
import logging
import sys

__all__ = ["CONNECT_TIMEOUT", "chunks", "executor_context", "local_cluster", "progress_bar", "run_on_dask",
           "single_thread"]

CONNECT_TIMEOUT = "20s"  # --scheduler: give up connecting after this long


def single_thread():
    """Context limiting BLAS and OpenMP to one thread (same arithmetic on every executor)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def chunks(items, target, size):
    """Consecutive groups of ``items`` whose ``size(item)`` add up to about ``target`` (items kept whole).

    Parameters
    ----------
    items : iterable
    target : int
        A group is closed as soon as its sizes reach ``target``.
    size : callable
        Size of one item (e.g. its number of mentions).

    Yields
    ------
    list
        The items of one group, in order; the last group may be smaller.
    """
    group, total = [], 0
    for it in items:
        group.append(it)
        total += size(it)
        if total >= target:
            yield group
            group, total = [], 0
    if group:
        yield group


class _NoBar(contextlib.nullcontext):
    """Stands in for a disabled tqdm bar."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self


def progress_bar(total, desc, enabled):
    """A tqdm bar over ``total`` mentions on stderr, or (``enabled`` false) a stand-in that shows nothing.

    Returns
    -------
    context manager
        Yields an object with ``update(n)`` and ``set_postfix_str(text, refresh=...)``.
    """
    if not enabled:  # no bar: do not import tqdm at all
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="mention", leave=False, file=sys.stderr, dynamic_ncols=True)


def run_on_dask(client, tasks, on_done):
    """Submit ``tasks`` to a Dask ``client`` and hand each result to ``on_done`` as it arrives.

    Parameters
    ----------
    client : distributed.Client
    tasks : list of (callable, tuple, int)
        ``(function, args, priority)`` per task; every task runs once (``pure=False``).
    on_done : callable
        Called with each task's return value, in the order the tasks finish.

    Notes
    -----
    If a task or ``on_done`` raises (or the caller is interrupted), the tasks not yet
    finished are cancelled before the exception propagates.
    """
    from distributed import as_completed

    futures = [client.submit(fn, *args, pure=False, priority=priority) for fn, args, priority in tasks]
    try:
        for fut in as_completed(futures):
            on_done(fut.result())
            fut.release()
    except BaseException:
        client.cancel(futures)
        raise


def local_cluster(n_workers):
    """A ``distributed.LocalCluster``: worker processes with one thread each, loopback only.

    The dashboard is off; the scheduler's small HTTP server (health checks only) gets a
    free loopback port instead of 8787, so several clusters can run side by side.
    """
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, silence_logs=logging.ERROR,
                        scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False})


@contextlib.contextmanager
def executor_context(executor, workers, scheduler):
    """Yield ``(client or None, description)`` of where blocks run. Closes only what it started.

    Parameters
    ----------
    executor : None, "local" or distributed.Client
        A client is used as it is (and left open); None / "local" run in this process.
    workers : int or None
        Start a ``distributed.LocalCluster`` of this many one-thread worker processes on
        loopback (:func:`local_cluster`).
    scheduler : str or None
        Address of a running Dask scheduler to connect to (timeout :data:`CONNECT_TIMEOUT`).

    Yields
    ------
    (distributed.Client or None, str)

    Raises
    ------
    ValueError
        If both an executor and workers / scheduler are given.
    TypeError
        For an executor that is neither None, "local" nor a ``distributed.Client``.
    ConnectionError
        If ``scheduler`` cannot be reached.
    """
    if executor is not None and (workers is not None or scheduler is not None):
        raise ValueError("give either executor or workers / scheduler, not both")
    if workers is not None and scheduler is not None:
        raise ValueError("give either workers (start a local Dask cluster) or scheduler (connect to one), not both")
    if workers is not None:
        from distributed import Client

        cluster = local_cluster(workers)
        try:
            with Client(cluster) as client:
                yield client, f"dask LocalCluster ({workers} workers x 1 thread, loopback)"
        finally:
            cluster.close()
        return
    if scheduler is not None:
        from distributed import Client

        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConnectionError(f"--scheduler {scheduler!r}: could not connect to a Dask scheduler ({exc})") from exc
        try:
            yield client, f"dask scheduler {scheduler}"
        finally:
            client.close()
        return
    if executor is None or (isinstance(executor, str) and executor == "local"):
        yield None, "local"
        return
    if hasattr(executor, "submit") and hasattr(executor, "scatter"):
        yield executor, f"dask client {getattr(executor, 'scheduler', '')}"
        return
    raise TypeError(
        "the executor parameter of coref.run must be None, 'local' or a distributed.Client; "
        f"got {executor!r} instead"
    )
