"""An LLM reply's text parsed and validated against its pydantic model, or why it is invalid."""

from __future__ import annotations

import json
import re
from typing import Generic, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class Reply(NamedTuple, Generic[M]):
    """A validated reply, or the reason there is none."""

    value: M | None
    error: str | None


def parse_reply(
    content: str | None, reply_model: type[M], finish_reason: str | None = None
) -> tuple[M | None, str]:
    """Validate a reply's text; (value, "") or (None, why it is invalid)."""
    if not content or not content.strip():
        return None, "empty reply"
    text = content.strip()
    if text.startswith("```"):
        # ```json ... ``` fences, common without server-side JSON mode.
        text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        data = None
        if 0 <= start < end:
            try:
                data = json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                pass
        if data is None:
            cut = " (cut at max_tokens)" if finish_reason == "length" else ""
            return None, f"not JSON{cut}: {text[:80]!r}"
    try:
        return reply_model.model_validate(data), ""
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        return None, f"{where}: {first['msg']}"
