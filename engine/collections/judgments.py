"""``load_judgments``: a judgments file and the queries it names, apart from a collection (e.g. a
collection's training split, which ``searchgrade train-reranker --train-qrels`` learns from)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from searchgrade.core.records import Query
from searchgrade.engine.collections.problems import Shown, examples, plural, problem
from searchgrade.engine.collections.qrels import Known, load_qrels
from searchgrade.engine.collections.queries import load_queries

#: The caveat ``load_qrels`` adds for judgments of documents it keeps for trec_eval's counts; these
#: are dropped here instead (there is no text to learn from), so the caveat does not apply.
_TREC_EVAL_CAVEAT = "in recall, MAP and the NDCG ideal, as in trec_eval"


def load_judgments(
    qrels_path: str | Path, queries_path: str | Path, doc_ids: Sequence[str]
) -> tuple[list[Query], dict[str, dict[str, int]], list[str]]:
    """A qrels file (BEIR TSV with or without a header, or TREC) and the queries it names.

    Args:
        qrels_path: The judgments.
        queries_path: The queries' texts (JSONL, CSV, TSV or Parquet; columns guessed).
        doc_ids: The collection's (non-empty) documents; judgments of any other document are dropped.

    Returns:
        The queries of ``queries_path``, the judgments naming a query there and a document in
        ``doc_ids``, and notes on what was dropped.

    Raises:
        SearchGradeError: a file is missing or malformed.
    """
    qrels_shown, queries_shown = Shown.given(qrels_path), Shown.given(queries_path)
    for shown, what in ((qrels_shown, "qrels"), (queries_shown, "queries")):
        if not shown.path.is_file():
            raise problem(shown.label, f"no such {what} file", "pass an existing file")
    notes: list[str] = []
    queries, empty_ids, _ = load_queries(queries_shown, notes)
    docs = set(doc_ids)
    qrels_notes: list[str] = []
    qrels = load_qrels(qrels_shown, Known({q.query_id for q in queries}, set(empty_ids), docs, set()),
                       qrels_notes, queries_shown.short)
    notes.extend(n for n in qrels_notes if _TREC_EVAL_CAVEAT not in n)
    unknown: list[str] = []
    for query_id in list(qrels):
        judged = qrels[query_id]
        unknown.extend(d for d in judged if d not in docs)
        qrels[query_id] = {d: g for d, g in judged.items() if d in docs}
        if not qrels[query_id]:
            del qrels[query_id]
    if unknown:
        notes.append(f"{qrels_shown.short}: dropped {plural(len(unknown), 'judgment')} naming documents not "
                     f"in the corpus (ids {examples(sorted(set(unknown)))}): there is no text to learn from")
    return queries, qrels, notes


__all__ = ["load_judgments"]
