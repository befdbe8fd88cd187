"""The overall breakdown: E2E, Computing (by kernel category), Communication, Free, per side.

Built by ``perfcmp.overall`` from the step windows (not a detail table); its verdicts test the
``overall:<row key>`` samples and the memory peaks, and the gates select them by alias
(``e2e``, ``computing``, ``communication``, ``free``) or as ``overall:<key>``.
"""

from perfcmp.dimensions import Dimension
from perfcmp.keys import OVERALL

DIMENSION = Dimension(name="overall", order=0, option="profiling", sheets=("OverallMetrics", "StepMetrics"),
                      key=OVERALL, selector=OVERALL)
