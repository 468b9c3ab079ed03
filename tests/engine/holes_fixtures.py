"""A run with holes, and an assessor who knows the truth: for the tests of incomplete judgments.

``holey_spec``: qrels made by judging only fulltext's top 10 (as a test collection pooled from
another system), so ann, which finds more relevant documents, returns many results nobody judged.
``Oracle`` answers the judge's requests from the hidden truth, through the fake OpenAI server.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

from searchgrade.core.records import Document, Query
from tests.engine.llm.fake_server import chat_body
from tests.engine.llm_fakes import pair_of, stage_of
from tests.pages.synthetic import RunSpec

K = 10


def holey_spec(n_queries: int = 30, seed: int = 0) -> tuple[RunSpec, dict[str, dict[str, int]]]:
    """The run (graded by fulltext-pooled qrels, 0-3) and the truth: query -> doc -> grade (0 if absent)."""
    rng = random.Random(seed)
    documents = [Document(f"d{i}", f"Title {i}", f"Body of document {i}, about topic {i % 97}.") for i in range(600)]
    queries = [Query(f"q{i:02d}", f"question number {i}") for i in range(n_queries)]
    truth: dict[str, dict[str, int]] = {}
    rankings: dict[str, dict[str, list[str]]] = {"fulltext": {}, "ann": {}}
    for q in queries:
        docs = rng.sample(range(600), 40)
        relevant = docs[:12]
        truth[q.query_id] = {f"d{d}": rng.choice([2, 3]) for d in relevant}
        # fulltext: 3 relevant documents and 7 others; ann: 7 relevant (4 that fulltext missed) and 3
        # others, none of them in fulltext's top 10 (so unjudged).
        fulltext = [relevant[0], docs[20], relevant[1], docs[21], docs[22], relevant[2], *docs[23:27]]
        ann = [relevant[3], relevant[0], relevant[4], docs[30], relevant[5], relevant[1], docs[31], relevant[6],
               relevant[2], docs[32]]
        rankings["fulltext"][q.query_id] = [f"d{d}" for d in fulltext]
        rankings["ann"][q.query_id] = [f"d{d}" for d in ann]
    qrels = {q.query_id: {d: truth[q.query_id].get(d, 0) for d in rankings["fulltext"][q.query_id]}
             for q in queries}
    spec = RunSpec(documents, queries, qrels, rankings, k=K, name="pooled from fulltext",
                   collection_name="holey")
    return spec, truth


class Oracle:
    """A fake server's responder: the judge's grade is the truth's (0 where the truth has none),
    put on the judge's 0-3 scale by ``to_judge``.

    Args:
        queries, documents: What the requests quote (query texts and document contents).
    """

    def __init__(self, queries: Sequence[Query], documents: Sequence[Document], truth: dict[str, dict[str, int]],
                 to_judge: Callable[[int], int] = lambda grade: grade) -> None:
        from searchgrade.engine.llm.judge import JudgeSettings
        from searchgrade.engine.llm.prompts import neutralise_tags

        cut = JudgeSettings().max_doc_chars  # the prompt quotes the document as the judge sends it
        self.query_of = {neutralise_tags(q.text).strip(): q.query_id for q in queries}
        self.doc_of = {neutralise_tags(d.content[:cut]).strip(): d.doc_id for d in documents}
        self.truth = truth
        self.to_judge = to_judge
        self.lock = threading.Lock()
        self.judged: list[tuple[str, str]] = []

    def __call__(self, body: dict[str, Any], n: int) -> tuple[int, Any, dict[str, str]]:
        if stage_of(body) != "judge":
            raise AssertionError("only the judge should be asked")
        query, document = pair_of(body)
        qid, doc_id = self.query_of[query], self.doc_of[document]
        with self.lock:
            self.judged.append((qid, doc_id))
        grade = self.to_judge(self.truth.get(qid, {}).get(doc_id, 0))
        return 200, chat_body(json.dumps({"grade": grade, "reason": f"truth {grade}"})), {}
