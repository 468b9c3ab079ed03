"""The dry run's token estimate against a real tokenizer: the prompt tokens llama.cpp counts for
the very prompts the estimate measures (the 270M Gemma's tokenizer; a protocol check, no grading)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.judge import JudgeSettings, judge_prompt
from searchgrade.engine.llm.prompts import neutralise_tags
from searchgrade.engine.run.estimate import estimate_tokens

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]

CRANFIELD = Path(__file__).resolve().parents[2] / "data" / "cranfield"


def _server_prompt_tokens(base_url: str, messages: list[dict[str, str]]) -> int:
    body = json.dumps({"model": "gemma-3-270m", "messages": messages, "max_tokens": 1}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return int(json.load(reply)["usage"]["prompt_tokens"])


def test_the_estimated_prompt_tokens_are_within_a_third_of_what_the_server_counts(llama_server):
    collection = load_collection(CRANFIELD)
    prompt = judge_prompt(JudgeSettings())
    queries = {q.query_id: q for q in collection.queries}
    docs = {d.doc_id: d for d in collection.documents}
    pairs = [(queries[q], docs[d]) for q, judged in sorted(collection.qrels.items())[:6] for d in list(judged)[:1]
             if q in queries and d in docs]
    estimated = counted = 0
    for query, doc in pairs:
        messages = prompt.messages(query=neutralise_tags(query.text), document=neutralise_tags(doc.content))
        estimated += estimate_tokens(messages)
        counted += _server_prompt_tokens(llama_server, messages)
    assert len(pairs) == 6
    assert counted * 2 / 3 <= estimated <= counted * 4 / 3, (estimated, counted)
