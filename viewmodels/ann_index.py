"""What a run's ANN index costs against exact search, in words (Results and `searchgrade show`).

No pandas here: the CLI imports it.
"""

from __future__ import annotations

from typing import Any

INDEX_NAMES = {"flat": "exact", "ivf": "inverted-file (IVF)", "hnsw": "HNSW graph"}


def ann_index_text(stats: dict[str, Any]) -> str | None:
    """The run's stats["ann_recall"] in words; None when the run had no ANN.

    "ANN index: inverted-file (IVF), approximate: it finds 97.2% of what exact search finds
    (recall@10 on 200 sampled queries)", or, for exact search, that nothing is lost.
    """
    measured = (stats or {}).get("ann_recall")
    if not measured:
        return None
    if measured.get("exact"):
        return "ANN index: exact search (every document vector compared): nothing lost to approximation"
    name = INDEX_NAMES.get(measured.get("index"), str(measured.get("index")))
    recall = measured.get("recall")
    if recall is None:
        return f"ANN index: {name}, approximate: its recall against exact search was not measured"
    # One decimal, and 100% only when nothing at all was missed.
    shown = f"{recall:.1%}"
    if shown == "100.0%" and recall < 1:
        shown = "99.9%"
    return (f"ANN index: {name}, approximate: it finds {shown} of what exact search finds "
            f"(recall@{measured['k']} on {measured['queries']:,} sampled queries)")
