"""How a request asks for JSON: the output modes an OpenAI-compatible endpoint may accept.

The hosted API, llama.cpp's server, vLLM, Ollama and others speak the same chat API but differ in
how they constrain output to JSON. The client negotiates once per endpoint, trying in order:

1. ``json_schema``: ``response_format={"type": "json_schema", "json_schema": {...}}`` (hosted API,
   vLLM);
2. ``json_object_schema``: ``{"type": "json_object", "schema": ...}`` (llama.cpp servers, which
   reject ``json_schema`` with a 400/422);
3. ``json_object``: plain JSON mode, the schema described in the prompt;
4. ``prompt``: no ``response_format`` at all, the schema described in the prompt.

A mode counts as supported once the server answers it with 200; modes rejected before that (a
400/413/415/422, or while negotiating any error that names the response format: llama-cpp-python
answers ``json_schema`` with a 500 saying so) are remembered in the client's ``rejected_modes``.
"""

from __future__ import annotations

import json
import re
from typing import Any

OUTPUT_MODES = ("json_schema", "json_object_schema", "json_object", "prompt")

#: Status codes that mean "the server cannot take this request as sent": try the next output
#: mode while negotiating, else record the item as failed.
REJECTED = {400, 413, 415, 422}
#: While negotiating, an error that names the output format means "mode not supported".
FORMAT_ERROR = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)


def ask_for_json(kwargs: dict[str, Any], mode: str, messages: list[dict[str, str]],
                 schema: dict[str, Any], schema_name: str) -> None:
    """Set the request's ``response_format`` for ``mode`` (in ``kwargs``); in the modes without
    server-side constraints, the schema goes into the last message instead."""
    from searchgrade.engine.llm.schemas import strict_schema

    if mode == "json_schema":
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": strict_schema(schema), "strict": True},
        }
    elif mode == "json_object_schema":
        kwargs["response_format"] = {"type": "json_object", "schema": schema}
    else:
        # Without server-side constraints the schema goes into the prompt.
        described = [dict(m) for m in messages]
        described[-1]["content"] += (
            "\n\nThe JSON object must match this JSON schema:\n" + json.dumps(schema)
        )
        kwargs["messages"] = described
        if mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
