"""Scripted replies for LLM-mode pipeline and CLI tests (served by tests/engine/llm/fake_server.py)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

from tests.engine.llm.fake_server import chat_body

_DATA = re.compile(r"<(query|document)>\n(.*?)\n</\1>", re.DOTALL)

#: The tiny collection's documents are short: let every one be sampled.
MIN_WORDS = 5


def stage_of(body: dict[str, Any]) -> str:
    """'judge' or 'querygen', from the system prompt of a request."""
    return "judge" if "search quality rater" in body["messages"][0]["content"] else "querygen"


def data_of(body: dict[str, Any]) -> dict[str, str]:
    """The <query> and <document> blocks of a request's first user message (the last of each)."""
    return {tag: text.strip() for tag, text in _DATA.findall(body["messages"][1]["content"])}


def pair_of(body: dict[str, Any]) -> tuple[str, str]:
    data = data_of(body)
    return data["query"], data["document"]


def stable_hash(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16)


def querygen_reply(body: dict[str, Any]) -> str:
    """Queries about the document's first word (its title), distinct across documents."""
    topic = data_of(body)["document"].split()[0].lower()
    return json.dumps({"natural": [f"what should a beginner know about {topic}",
                                   f"why do people care about {topic} at all"],
                       "keyword": [f"{topic} basics"]})


def judge_reply(body: dict[str, Any], n: int) -> str:
    query, document = pair_of(body)
    grade = stable_hash(query, document) % 4
    return json.dumps({"grade": grade, "reason": f"reply {n}"})


class Recorder:
    """A responder (see FakeOpenAIServer) that answers validly and records requests per stage.

    Args:
        invalid_every: Answer invalid JSON to every n-th judge request (0: never).
        always_invalid: A predicate on (query, document): those pairs always get invalid JSON.
        fail_after: Answer 401 to every judge request after this many (a server that turns us away).
    """

    def __init__(self, invalid_every: int = 0, always_invalid=None, fail_after: int | None = None) -> None:
        self.invalid_every = invalid_every
        self.always_invalid = always_invalid
        self.fail_after = fail_after
        self.lock = threading.Lock()
        self.posts = {"judge": 0, "querygen": 0}
        self.judged_pairs: list[tuple[str, str]] = []
        #: Judge replies sent as valid, by their reason text.
        self.valid_replies: dict[str, int] = {}

    def __call__(self, body: dict[str, Any], n: int) -> tuple[int, Any, dict[str, str]]:
        stage = stage_of(body)
        with self.lock:
            self.posts[stage] += 1
            count = self.posts[stage]
        if stage == "querygen":
            return 200, chat_body(querygen_reply(body)), {}
        if self.fail_after is not None and count > self.fail_after:
            return 401, {"error": {"message": "invalid api key"}}, {}
        pair = pair_of(body)
        with self.lock:
            self.judged_pairs.append(pair)
        if (self.always_invalid is not None and self.always_invalid(*pair)) or (
            self.invalid_every and count % self.invalid_every == 0
        ):
            return 200, chat_body('{"grade": "high", "reason": '), {}
        content = judge_reply(body, n)
        with self.lock:
            self.valid_replies[json.loads(content)["reason"]] = json.loads(content)["grade"]
        return 200, chat_body(content), {}
