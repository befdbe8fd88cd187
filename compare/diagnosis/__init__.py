"""Why two runs differ: findings with a mechanism, evidence, cost per step and advice.

``perfcmp.diagnosis.detect.diagnose`` reads a ``ComparisonResult`` (and a few per-side facts
the detail tables drop, ``detect.side_facts``) and returns a ``model.Diagnosis``; the rules
(patterns, thresholds, advice) are ``compare/diagnosis_rules.toml``. Kept free of imports so
that ``perfcmp.results.pair`` can import the model without a cycle.
"""
