"""The batch underwriter on Arrow columns (the optional ``batch`` extra).

The public surface, re-exported here (imported on first use, so that a module of this
package that needs no Arrow, such as :mod:`credit.batch.notices`, loads none):

* :func:`decide_frame` -- a flat case frame in, one decision row per case out, exactly
  the scalar underwriter's results; :func:`decide_record_batch` and
  :func:`decide_batches` for Arrow record batches (a Spark ``mapInArrow`` runner);
  :func:`decision_schema` / :func:`decision_arrow_schema` the output's schema;
* the flat case schema (:data:`CASE_COLUMNS`, :data:`MONITORING_COLUMNS`) and its
  converters :func:`cases_to_frame`, :func:`documents_to_frame`,
  :func:`frame_to_cases`;
* :func:`scalar_decide_frame` -- the same rows from the scalar underwriter (the
  reference of the differential tests);
* :func:`backtest` -- policy what-if; :func:`verify_notices` -- notices at scale.

docs/batch.md describes the schema, the exactness argument and the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from credit._exports import lazy_exports

if TYPE_CHECKING:
    from credit.batch.engine import (
        decide_batches,
        decide_frame,
        decide_record_batch,
        decision_arrow_schema,
        scalar_decide_frame,
    )
    from credit.batch.notices import verify_notices
    from credit.batch.schema import (
        CASE_COLUMNS,
        MONITORING_COLUMNS,
        cases_to_frame,
        decision_schema,
        documents_to_frame,
        frame_to_cases,
    )
    from credit.batch.whatif import backtest

__all__ = [
    "CASE_COLUMNS",
    "MONITORING_COLUMNS",
    "backtest",
    "cases_to_frame",
    "decide_batches",
    "decide_frame",
    "decide_record_batch",
    "decision_arrow_schema",
    "decision_schema",
    "documents_to_frame",
    "frame_to_cases",
    "scalar_decide_frame",
    "verify_notices",
]

_HOME = {
    "backtest": "credit.batch.whatif",
    "decide_batches": "credit.batch.engine",
    "decide_frame": "credit.batch.engine",
    "decide_record_batch": "credit.batch.engine",
    "decision_arrow_schema": "credit.batch.engine",
    "scalar_decide_frame": "credit.batch.engine",
    "verify_notices": "credit.batch.notices",
    "CASE_COLUMNS": "credit.batch.schema",
    "MONITORING_COLUMNS": "credit.batch.schema",
    "cases_to_frame": "credit.batch.schema",
    "decision_schema": "credit.batch.schema",
    "documents_to_frame": "credit.batch.schema",
    "frame_to_cases": "credit.batch.schema",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
