"""The evaluator: collections, runs and their configuration and stages, grading, the LLM, metrics,
statistics, labels, suites, tuning, the store. Never imports streamlit, and never imports the
layers above it (the view models in viewmodels/, server/, cli/, the screens).

``SearchGradeError`` (core.records) is re-exported here for the views, which import only engine.
"""

from searchgrade.core.records import SearchGradeError

__all__ = ["SearchGradeError"]
