"""The evaluator: collections, runs and their configuration, grading, scoring, the store, the
dashboard's view models (report/) and the command line (cli/). Never imports streamlit.

``SearchGradeError`` (core.records) is re-exported here for the views, which import only engine.
"""

from searchgrade.core.records import SearchGradeError

__all__ = ["SearchGradeError"]
