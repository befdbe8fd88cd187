"""Outputs of a cluster comparison (console, xlsx, JSON, Markdown, HTML), one module per format,
each formatting a ``perfcmp.results.cluster.ClusterReport`` only (``perfcmp.render`` protocol)."""
