"""Result types on one low floor: plain records that renderers read, importing only
``perfcmp.base`` and each other.

``history``  ``History``, the result of ``perfcmp history``

The pair comparison's ``ComparisonResult`` is ``perfcmp.result`` and the cluster comparison's
``ClusterReport`` / ``ClusterResult`` is ``perfcmp.cluster.result`` (both reshaped by other work
this round; they move here when it has landed).
"""
