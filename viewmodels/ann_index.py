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


def variant_index_lines(stats: dict[str, Any]) -> list[str]:
    """Each ANN variant's approximate index in words (the run's stats["variant_ann_recall"]):
    "ANN index of static-chunks: inverted-file (IVF) over 361,380 chunks, approximate: it finds 71.0%
    of what exact search finds (recall@10 on 200 sampled queries)"."""
    out = []
    for name, measured in sorted(((stats or {}).get("variant_ann_recall") or {}).items()):
        index = INDEX_NAMES.get(measured.get("index"), str(measured.get("index")))
        items = f" over {measured['items']:,} items" if measured.get("items") else ""
        recall = measured.get("recall")
        shown = "an unmeasured share" if recall is None else (
            "99.9%" if f"{recall:.1%}" == "100.0%" and recall < 1 else f"{recall:.1%}")
        out.append(f"ANN index of {name}: {index}{items}, approximate: it finds {shown} of what exact search "
                   f"finds (recall@{measured.get('k')} on {measured.get('queries', 0):,} sampled queries)")
    return out

