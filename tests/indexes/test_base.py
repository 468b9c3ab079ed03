from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes import base
from searchgrade.indexes.base import Answer, FailedAttempt, Failure, Found, answer_each, search_each, timed, top_k


def test_top_k_orders_by_score_then_row():
    scores = np.array([0.5, 2.0, 0.5, 3.0, 0.5, -1.0])
    assert top_k(scores, 3).tolist() == [3, 1, 0]
    assert top_k(scores, 4).tolist() == [3, 1, 0, 2]  # ties at 0.5 in row order
    assert top_k(scores, 10).tolist() == [3, 1, 0, 2, 4, 5]


def test_top_k_matches_a_full_stable_sort_on_random_ties():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=200).astype(float)
    expected = np.argsort(-scores, kind="stable")
    for k in (1, 7, 50, 199, 200):
        assert top_k(scores, k).tolist() == expected[:k].tolist()


def test_search_each_times_every_query_separately():
    def one(query: str, k: int) -> list[ScoredDoc]:
        return [ScoredDoc(query, 1.0, 1)][:k]

    hits = search_each(one, ["a", "b"], 5)
    assert [h.docs[0].doc_id for h in hits] == ["a", "b"]
    assert all(h.latency_s > 0 for h in hits)


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_search_each_rejects_k_below_one_or_not_whole(k):
    with pytest.raises(ValueError, match="k must be"):
        search_each(lambda q, k: [], ["a"], k)


def test_search_each_rejects_one_string_as_queries():
    with pytest.raises(TypeError, match="sequence of strings"):
        search_each(lambda q, k: [], "abc", 1)


def test_timed_accumulates_per_stage():
    timings: dict[str, float] = {}
    with timed(timings, "x"):
        pass
    first = timings["x"]
    with timed(timings, "x"):
        pass
    assert timings["x"] >= first > 0


def test_answer_each_retries_only_what_explain_says_may_pass_and_counts_the_attempts():
    calls: dict[str, int] = {}

    def search(query: str) -> Found:
        calls[query] = calls.get(query, 0) + 1
        if query == "flaky" and calls[query] == 1:
            raise ConnectionError("reset")
        if query in ("down", "wrong"):
            raise ConnectionError("refused") if query == "down" else KeyError("id")
        return Found([ScoredDoc(query, 1.0, 1)])

    def explain(exc: Exception, attempt: int) -> FailedAttempt:
        return FailedAttempt(f"{type(exc).__name__} on attempt {attempt}", retry=isinstance(exc, ConnectionError))

    outcomes = answer_each(["ok", "flaky", "down", "wrong"], search, retries=2, explain=explain)
    assert isinstance(outcomes[0], Answer) and isinstance(outcomes[1], Answer)
    assert outcomes[2] == Failure("ConnectionError on attempt 3 (after 3 attempts)", 3)
    assert outcomes[3] == Failure("KeyError on attempt 1", 1)  # not worth another attempt
    assert calls == {"ok": 1, "flaky": 2, "down": 3, "wrong": 1}


def test_answer_each_raises_what_explain_does_not_claim_and_everything_without_explain():
    def search(query: str) -> Found:
        raise ZeroDivisionError(query)

    with pytest.raises(ZeroDivisionError):
        answer_each(["a"], search)
    with pytest.raises(ZeroDivisionError):
        answer_each(["a"], search, explain=lambda exc, attempt: None)


class Clock:
    """time.perf_counter and time.sleep as answer_each sees them: seconds pass only when told."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 100.0
        monkeypatch.setattr(base.time, "perf_counter", lambda: self.now)
        monkeypatch.setattr(base.time, "sleep", self.advance)

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_answer_each_times_the_successful_attempt_not_the_wait_and_adds_each_share(monkeypatch):
    clock = Clock(monkeypatch)
    attempts = []

    def search(query: str) -> Found:
        attempts.append(query)
        clock.advance(1.0)
        if len(attempts) == 1:
            raise TimeoutError
        clock.advance(0.5)
        return Found([ScoredDoc(query, 1.0, 1)])

    (answer,) = answer_each(["q"], search, retries=1, shares=[5.0],
                            explain=lambda exc, attempt: FailedAttempt("slow", retry=True, wait_s=30.0))
    assert answer.seconds == pytest.approx(5.0 + 1.5)  # neither the failed attempt nor the wait


def test_answer_each_keeps_query_order_with_queries_in_flight():
    threads = set()

    def search(query: int) -> Found:
        threads.add(threading.current_thread().name)
        time.sleep(0.01 * (query % 3))
        return Found([ScoredDoc(str(query), 1.0, 1)])

    outcomes = answer_each(list(range(12)), search, concurrency=4, thread_name="sg-test")
    assert [o.docs[0].doc_id for o in outcomes] == [str(i) for i in range(12)]
    assert len(threads) > 1 and all(name.startswith("sg-test") for name in threads)


def test_answer_each_in_batches_shares_a_calls_seconds_and_fails_its_queries_together(monkeypatch):
    clock = Clock(monkeypatch)
    calls = []

    def search(texts: list[str]) -> list[Found]:
        calls.append(list(texts))
        clock.advance(0.25)
        if "bad" in texts:
            raise ValueError("no")
        return [Found([ScoredDoc(t, 1.0, 1)]) for t in texts]

    outcomes = answer_each(["a", "b", "bad", "c", "d"], search, batch_size=2,
                           explain=lambda exc, attempt: FailedAttempt(str(exc)))
    assert calls == [["a", "b"], ["bad", "c"], ["d"]]
    assert outcomes[2:4] == [Failure("no", 1), Failure("no", 1)]
    assert [o.seconds for o in (outcomes[0], outcomes[1], outcomes[4])] == [0.125, 0.125, 0.25]


def test_answer_each_refuses_shares_that_do_not_match_the_queries():
    with pytest.raises(ValueError, match="1 shares for 2 queries"):
        answer_each(["a", "b"], lambda q: Found([]), shares=[0.0])


def test_after_three_refusals_in_a_row_the_queries_left_are_not_asked():
    from searchgrade.indexes.base import Refusals

    calls: list[str] = []
    answered = {"q3"}  # the server answers once between refusals: the count starts again

    def search(query: str) -> Found:
        calls.append(query)
        if query in answered:
            return Found([ScoredDoc(query, 1.0, 1)])
        raise ConnectionRefusedError("refused")

    def explain(exc: Exception, attempt: int) -> FailedAttempt:
        return FailedAttempt("cannot connect (connection refused)", retry=True, refused=True)

    refusals = Refusals()
    queries = ["q1", "q2", "q3", "q4", "q5", "q6"]
    outcomes = answer_each(queries, search, retries=1, explain=explain, refusals=refusals)
    # q1's two attempts are two refusals, q2's first the third in a row: the server counts as down,
    # and q3 on are not asked (q3 would have been answered).
    assert calls == ["q1", "q1", "q2"]
    assert outcomes[0] == Failure("cannot connect (connection refused) (after 2 attempts)", 2)
    assert outcomes[1].error.endswith("(3 connections refused in a row: the server counts as down)")
    assert all(o.error.startswith("not asked: 3 connections in a row were refused") and o.attempts == 0
               for o in outcomes[2:])
    # A later chunk of the same node is not asked either.
    assert answer_each(["q7"], search, explain=explain, refusals=refusals)[0].attempts == 0
    assert calls == ["q1", "q1", "q2"]


def test_an_answer_between_refusals_starts_the_count_again():
    from searchgrade.indexes.base import Refusals

    def search(query: str) -> Found:
        if query.startswith("up"):
            return Found([ScoredDoc(query, 1.0, 1)])
        raise ConnectionRefusedError("refused")

    def explain(exc: Exception, attempt: int) -> FailedAttempt:
        return FailedAttempt("refused", refused=True)

    outcomes = answer_each(["a", "b", "up1", "c", "d", "up2", "e"], search, explain=explain, refusals=Refusals())
    assert [isinstance(o, Answer) for o in outcomes] == [False, False, True, False, False, True, False]
    assert all(o.attempts == 1 for o in outcomes if isinstance(o, Failure))  # every one was asked
