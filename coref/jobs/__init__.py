"""The coref commands as functions: keyword arguments in, a frozen result object out.

Each job validates its settings once (:func:`coref.settings.make_settings`), does the
work, writes its output directory and returns a result; none prints. The command line
(:mod:`coref.cli`) is a thin layer over them.

=====================  ==========================================  =========================
job                    module                                      returns
=====================  ==========================================  =========================
``fit``                :mod:`coref.jobs.fit`                       :class:`FitResult`
``predict``            :mod:`coref.jobs.predict`                   :class:`ClusteringResult`
``add``                :mod:`coref.jobs.add`                       :class:`ClusteringResult`
``explain``            :mod:`coref.jobs.explain`                   :class:`coref.explain.Explanation`
``run``                :mod:`coref.jobs.run`                       :class:`RunResult`
=====================  ==========================================  =========================

The building blocks below them: :mod:`coref.jobs.clusters` (cluster every block, ids),
:mod:`coref.jobs.incremental` (new mentions into an existing clustering),
:mod:`coref.jobs.writing` (the files of a predict / add output), :mod:`coref.jobs.folds`,
:mod:`coref.jobs.scoring` and :mod:`coref.jobs.heldout` (the k-fold evaluation of ``run``).
"""
