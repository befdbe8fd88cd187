"""Result types on one low floor: plain records that renderers read, importing only
``perfcmp.base``, msgspec and each other (never pandas or numpy: importing one is cheap).

``history``  ``History``, the result of ``perfcmp history``
``cluster``  ``ClusterResult`` and ``ClusterReport``, the result of a cluster comparison
``samples``  ``SampleSet``, a profile's per-step samples (what verdicts and golden baselines read)

The pair comparison's ``ComparisonResult`` is still ``perfcmp.results.pair`` (reshaped by other work
this round; it moves here, as ``pair``, when that has landed).
"""
