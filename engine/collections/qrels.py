"""Judgments (qrels) from a file, counted as trec_eval counts them, and the grade scale.

Two formats, told apart line by line (one per file):

- BEIR TSV: ``query-id <TAB> corpus-id <TAB> score``, with or without a header line;
- TREC: ``query-id iteration doc-id grade``, separated by any whitespace (the iteration is ignored).

What is kept follows trec_eval (so our metrics equal it on the raw qrels): a judgment of a document
skipped as empty, or of a document not in the corpus, stays in the pool (recall and MAP
denominators, the NDCG ideal) although no strategy can retrieve it; a negative grade (Cranfield's
-1) means "not relevant" and is read as 0 (it still counts as judged), and, for the metrics of
incomplete judgments (bpref, the condensed lists, infAP, the RBP residual), "in the judging pool but
not judged", as trec_eval reads it (the pairs go to ``pooled``). Judgments naming queries
that are not loaded (no text to search with) are dropped: trec_eval only scores the queries a run
answers. Each of these cases is counted in a note.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchgrade.engine.collections.problems import Shown, plural, problem, show
from searchgrade.engine.collections.readers import text_lines

QRELS_HEADER = ("query-id", "corpus-id", "score")
#: The note of judgments none of which names a document of the corpus (the page warns with it).
NO_MATCHING_DOCUMENTS = "no judgment names a document of the corpus"
_FORMATS = {3: "BEIR TSV (query-id, corpus-id, score)", 4: "TREC (query-id, iteration, doc-id, grade)"}


@dataclass(frozen=True)
class Known:
    """The ids a judgment may name, and those the loader skipped as empty."""

    queries: set[str]
    empty_queries: set[str]
    docs: set[str]
    empty_docs: set[str]


#: Why a judgment is dropped or kept with a note: key -> the note's wording.
_DROPPED = {
    "empty_query": "naming queries skipped for empty text",
    "unknown_query": "naming queries not in {queries}",
    "repeated": "repeating an earlier identical judgment",
}
_KEPT = {
    "empty_doc": ("names a document skipped as empty", "name documents skipped as empty"),
    "unknown_doc": ("names a document not in the corpus", "name documents not in the corpus"),
}


def _cells(line: str, width: int | None) -> list[str]:
    """A line's cells: 3 tab-separated (BEIR) or 4 whitespace-separated (TREC); ``width`` is the
    file's format, from its first judgment (None: not known yet)."""
    tabbed = [cell.strip() for cell in line.split("\t")]
    if width == 3 or (width is None and len(tabbed) == 3):
        return tabbed
    return line.split()


def load_qrels(shown: Shown, known: Known, notes: list[str], queries_name: str,
               pooled: dict[str, set[str]] | None = None) -> dict[str, dict[str, int]]:
    """Judgments as query id -> document id -> grade (negative grades read as 0).

    Args:
        shown: The qrels file.
        known: The loaded (and skipped) query and document ids.
        notes: Receives one note per kind of judgment dropped or kept with a caveat.
        queries_name: How notes name the queries file.
        pooled: Receives, per query, the documents whose grade is negative (pooled, not judged).

    Returns:
        The judgments of loaded queries; empty when none names a loaded query, or none names a
        document of the corpus (ids that do not match), with a note saying so.

    Raises:
        SearchGradeError: A line that is neither format, mixed formats, a grade that is not an
            integer, or one pair graded twice differently.
    """
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    dropped: dict[str, list[str]] = {reason: [] for reason in _DROPPED}
    kept: dict[str, list[str]] = {reason: [] for reason in _KEPT}
    negative: list[str] = []
    width: int | None = None
    first_line = True
    for number, raw in text_lines(shown):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        cells = _cells(line, width)
        if width is None and len(cells) not in _FORMATS:
            raise problem(shown.line(number), f"expected 3 tab-separated columns (query-id, corpus-id, "
                          f"score) or 4 whitespace-separated ones (TREC: query-id, iteration, doc-id, "
                          f"grade), found {len(cells)} in {show(line)}",
                          "use one judgment per line in one of these formats")
        header = first_line and not _is_number(cells[-1])
        first_line = False
        if header:
            continue  # "query-id corpus-id score", or any first line whose grade is not a number
        if width is None:
            width = len(cells)
        elif len(cells) != width:
            raise problem(shown.line(number), f"{plural(len(cells), 'column')} where the file's first judgment "
                          f"has {width}, as {_FORMATS[width]}", "use one format for the whole file")
        query_id, doc_id, score = (cells[0], cells[1], cells[2]) if width == 3 else (cells[0], cells[2], cells[3])
        grade = _grade(score)
        if grade is None:
            raise problem(shown.line(number), f"score {show(score)} is not an integer grade",
                          "use whole numbers such as 0, 1, 2")
        pair = (query_id, doc_id)
        if pair in seen:
            first_number, first_grade = seen[pair]
            if first_grade != grade:
                raise problem(shown.line(number), f"query {query_id!r} and document {doc_id!r} are graded "
                              f"{grade} here but {first_grade} at line {first_number}",
                              "keep one judgment per pair")
            dropped["repeated"].append(f"line {number}")
            continue
        seen[pair] = (number, grade)
        if query_id not in known.queries:
            reason = "empty_query" if query_id in known.empty_queries else "unknown_query"
            dropped[reason].append(f"line {number}: query {query_id!r}")
            continue
        if doc_id not in known.docs:
            reason = "empty_doc" if doc_id in known.empty_docs else "unknown_doc"
            kept[reason].append(f"line {number}: document {doc_id!r}")
        if grade < 0:
            negative.append(f"line {number}: {grade}")
            grade = 0
            if pooled is not None:
                pooled.setdefault(query_id, set()).add(doc_id)
        qrels.setdefault(query_id, {})[doc_id] = grade
    _notes(shown, notes, queries_name, dropped, kept, negative)
    if not qrels:
        notes.append(f"{shown.short}: no judgment names a loaded query, so no judgments are used")
    elif not any(doc_id in known.docs for judged in qrels.values() for doc_id in judged):
        notes.append(f"{shown.short}: {NO_MATCHING_DOCUMENTS}, so no judgments are "
                     "used; check that its document ids are the corpus's ids")
        return {}
    return qrels


def _notes(shown: Shown, notes: list[str], queries_name: str, dropped: dict[str, list[str]],
           kept: dict[str, list[str]], negative: list[str]) -> None:
    for reason, where in dropped.items():
        if where:
            wording = _DROPPED[reason].format(queries=queries_name)
            notes.append(f"{shown.short}: dropped {plural(len(where), 'judgment')} {wording} (e.g. {where[0]})")
    for reason, where in kept.items():
        if where:
            one = len(where) == 1
            notes.append(f"{shown.short}: {plural(len(where), 'judgment')} {_KEPT[reason][0 if one else 1]} "
                         f"(e.g. {where[0]}): {'it still counts' if one else 'they still count'} in recall, "
                         "MAP and the NDCG ideal, as in trec_eval")
    if negative:
        verb = "counts" if len(negative) == 1 else "count"
        notes.append(f"{shown.short}: {plural(len(negative), 'judgment')} with a negative grade (e.g. "
                     f"{negative[0]}) {verb} as not relevant (grade 0), as in trec_eval; bpref, the "
                     "condensed lists, infAP and the RBP residual read them as in the pool but not "
                     "judged, as trec_eval does")


def grade_scale(qrels: dict[str, dict[str, int]]) -> tuple[int, int]:
    """The smallest and largest grade in the qrels, e.g. ``(1, 1)`` for scifact, ``(0, 4)`` for Cranfield.

    Raises:
        ValueError: The qrels hold no grade at all.
    """
    grades = [grade for docs in qrels.values() for grade in docs.values()]
    if not grades:
        raise ValueError("qrels hold no judgments, so they have no grade scale")
    return min(grades), max(grades)


def default_threshold(max_grade: int) -> int:
    """The relevance threshold (relevant = grade >= threshold) for a grade scale topping at max_grade.

    Binary labels (max 1) and 0-2 scales use 1: any positive label counts. Scales that reach 3 or
    more (the judge's 0-3 scale, Cranfield's 0-4) use 2, so "on the topic but no answer" (1) is not
    relevant, matching the judge's scale in PRODUCT.md.
    """
    return 2 if max_grade >= 3 else 1


def _grade(score: str) -> int | None:
    try:
        return int(score)
    except ValueError:
        pass
    try:
        value = float(score)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
