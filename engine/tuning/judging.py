"""Grades for results no one graded, on an LLM-judged run: the judge asked within a budget.

A trial's configuration retrieves documents the run never graded. On a run graded by the LLM judge
(mode llm), ``TuneJudge.fill`` judges the new (query, document) pairs of a trial's top k before the
trial is scored, through the judge and the cache the run used (engine/llm/judge.py, the store's
``llm_cache``): each pair once, a pair already in the cache free. During tuning at most ``budget``
pairs are sent to the judge over the whole study; with the budget spent, further new pairs stay
unjudged (they count 0, as every unjudged result does, and judged@k shows it) and are counted in
the report. The held-out comparison judges every pair it shows, whatever the budget.

It reads grades only through the Grades it is given (engine/tuning/grades.py): during tuning the
tuning queries', so it cannot look at a held-out query either. Grades it gets are added to those
Grades (in memory, for this study); the judge's requests (retries included) are counted per phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from searchgrade.core.records import Document, Query
from searchgrade.engine.tuning.grades import Grades
from searchgrade.engine.tuning.target import TrialLists

#: Pairs the tuning may send to the judge when --judge-budget is not given.
DEFAULT_JUDGE_BUDGET = 100


class TuneJudge:
    """The run's judge, for the pairs trials retrieve (see the module).

    Args:
        client: an engine.llm.client.LLMClient with the run's LLM settings.
        cache: the LLM cache (engine.llm.cache.StoreCache over the run store).
        settings: the run's JudgeSettings.
        queries: query id -> Query (text and type), every query of the run.
        documents: doc id -> Document, the collection's.
        budget: pairs the tuning may send to the judge (cache hits are free).
    """

    def __init__(self, client: Any, cache: Any, settings: Any, queries: Mapping[str, Query],
                 documents: Mapping[str, Document], budget: int) -> None:
        self.client = client
        self.cache = cache
        self.settings = settings
        self.queries = dict(queries)
        self.documents = documents
        self.budget = int(budget)
        #: Pairs sent to the judge (tuning, held out) and answered from the cache.
        self.sent = {"tuning": 0, "heldout": 0}
        self.cache_hits = 0
        self.failures = 0
        #: The judge's HTTP requests (retries and output-mode negotiation included), per phase.
        self.requests = {"tuning": 0, "heldout": 0}
        self._tried: set[tuple[str, str]] = set()
        self._over: set[tuple[str, str]] = set()

    def _key(self, query: Query, doc: Document) -> str:
        from searchgrade.engine.llm.judge import judge_key, judge_prompt

        return judge_key(query.text, doc.content, self.client.judge_identity, judge_prompt(self.settings).version,
                         self.settings.max_doc_chars)

    def _requests(self) -> int:
        return int(self.client.usage.snapshot().get("judge", {}).get("requests", 0))

    def fill(self, lists: TrialLists, query_ids: Sequence[str], grades: Grades, *, heldout: bool) -> int:
        """Judge the pairs of ``lists`` (top k of ``query_ids``) that hold no grade; returns the
        pairs sent to the judge. During tuning (``heldout`` False) within what is left of the budget."""
        from searchgrade.engine.llm.judge import CACHE_KIND, judge_pairs

        new: list[tuple[str, str]] = []
        for qid in query_ids:
            graded = grades.of_unread(qid)
            for doc_id in lists.docs.get(qid, []):
                pair = (qid, doc_id)
                if doc_id not in graded and pair not in self._tried and doc_id in self.documents and pair not in new:
                    new.append(pair)
        if not new:
            return 0
        keys = {pair: self._key(self.queries[pair[0]], self.documents[pair[1]]) for pair in new}
        cached = self.cache.get_many(CACHE_KIND, sorted(set(keys.values())))
        phase = "heldout" if heldout else "tuning"
        send: list[tuple[str, str]] = []
        misses: set[str] = set()
        for pair in new:
            key = keys[pair]
            if key in cached or key in misses:
                send.append(pair)  # a cache hit, or the same text and content as a pair already sent
            elif heldout or self.sent["tuning"] + len(misses) < self.budget:
                misses.add(key)
                send.append(pair)
            else:
                self._over.add(pair)
        if not send:
            return 0
        before = self._requests()
        result = judge_pairs([(self.queries[q], self.documents[d]) for q, d in send], self.client, self.cache,
                             self.settings)
        self.requests[phase] += self._requests() - before
        self.sent[phase] += result.judged
        self.cache_hits += result.cache_hits
        self.failures += result.failures
        for g in result.grades:
            pair = (g.query_id, g.doc_id)
            self._tried.add(pair)
            self._over.discard(pair)
            if g.grade is not None:
                grades.add(g.query_id, g.doc_id, int(g.grade))
        return result.judged

    def report(self) -> dict[str, Any]:
        """What the judging cost and left unjudged, for the tuning report (``judge``)."""
        return {"budget": self.budget, "pairs_judged": dict(self.sent), "cache_hits": self.cache_hits,
                "failures": self.failures, "requests": {**self.requests,
                                                        "total": self.requests["tuning"] + self.requests["heldout"]},
                "unjudged_over_budget": len(self._over), "budget_spent": self.sent["tuning"] >= self.budget}
