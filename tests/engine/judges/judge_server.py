"""Simulated judges over HTTP: one local OpenAI-compatible server (tests/engine/llm/fake_server.py)
that knows the simulated collection's qrels and answers each model name with its behaviour
(tests/engine/judges/simulated.py), counting what each model was asked."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from typing import Any

from searchgrade.core.records import Document
from tests.engine.judges.simulated import BEHAVIOURS, Simulated, faithful, lenient
from tests.engine.llm.fake_server import FakeOpenAIServer, chat_body
from tests.engine.llm_fakes import pair_of

#: A model that grades leniently unless its prompt carries people's examples (calibration's test).
NEEDS_EXAMPLES = "needs_examples"
#: Prompt tokens each model reports per call (its completion: 12).
PROMPT_TOKENS = 290


class JudgeResponder:
    """Answers a judge request by its model's behaviour on the pair's people grade."""

    def __init__(self, sim: Simulated, seed: int = 0) -> None:
        self.by_text = {text: q for q, text in sim.queries.items()}
        self.by_content = {Document(d, title, text).content: d for d, (title, text) in sim.docs.items()}
        self.sim = sim
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        #: Calls per model, and every request's (model, query id, doc id, user message).
        self.calls: Counter[str] = Counter()
        self.asked: list[tuple[str, str, str, str]] = []

    def __call__(self, body: dict[str, Any], n: int) -> tuple[int, Any, dict[str, str]]:
        model = body["model"]
        query, document = pair_of(body)
        q, d = self.by_text[query], self.by_content[document]
        user = body["messages"][1]["content"]
        if model == NEEDS_EXAMPLES:
            behaviour = faithful if "<example>" in user else lenient
        else:
            behaviour = BEHAVIOURS[model]
        with self.lock:
            self.calls[model] += 1
            self.asked.append((model, q, d, user))
            grade = behaviour(self.sim.grade(q, d), f"{q}|{d}", self.rng)
        reply = json.dumps({"grade": grade, "reason": f"{model} says {grade}"})
        return 200, chat_body(reply, PROMPT_TOKENS, 12), {}


def judge_server(sim: Simulated, models: list[str]) -> tuple[FakeOpenAIServer, JudgeResponder]:
    """The server (not started: use it as a context manager), listing ``models``."""
    responder = JudgeResponder(sim)
    server = FakeOpenAIServer(responder)
    server.models = [{"id": m, "object": "model", "owned_by": "simulated"} for m in models]
    return server, responder
