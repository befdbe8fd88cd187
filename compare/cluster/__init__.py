"""Cluster comparison: every rank of two training runs, the slow rank and the slow link.

``perfcmp compare -d NEW_RUN -bp BASE_RUN`` where a side is a directory of several rank
profiles compares the two runs rank by rank. The modules, one role each:

``plan``       which comparison the paths ask for: two profiles, or two cluster runs
``discover``   which rank profiles a run directory holds, and each one's rank id
``summary``    one rank read by a worker into a compact ``RankSummary`` (kilobytes)
``links``      a rank's communication links and transport bandwidths (communication*.json, DB)
``execute``    the work units run on a process pool or a Dask distributed cluster
``analyse``    the summaries of both runs put together: ranks paired, rank × step table, verdicts
``diagnose``   the robust outlier rules: slow ranks, waited-for ranks, slow links
``detail``     the ranks that matter compared as two profiles, for the workbook's per-rank sheets
``run``        the options, and ``run(options) -> ClusterReport``
``wording``    the sentences the renderers share (``perfcmp.render.cluster``: formatting only)

The result (``ClusterResult`` and the ``ClusterReport`` every renderer reads) is
``perfcmp.results.cluster``, on the results floor.

Kept light: nothing here is imported by ``perfcmp`` itself until a cluster is compared.
"""
