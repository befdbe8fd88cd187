"""The overall breakdown: E2E, Computing (by kernel category), Communication, Free, per side.

Built by ``perfcmp.overall`` from the step windows (the result's ``overall`` and ``steps``, not
detail tables); its verdicts test the
``overall:<row key>`` samples and the memory peaks, and the gates select them by alias
(``e2e``, ``computing``, ``communication``, ``free``) or as ``overall:<key>``.
"""

from perfcmp.dimensions import Dimension
from perfcmp.keys import OVERALL
from perfcmp.results.pair import TIMELINE

# its table: the trace output's events of one step (``perfcmp.diagnosis.timeline``), in the JSON
# document only (the workbook shows the breakdown itself: OverallMetrics, StepMetrics)
DIMENSION = Dimension(name="overall", order=0, option="profiling", tables={TIMELINE: "StepTimeline"},
                      key=OVERALL, selector=OVERALL)
