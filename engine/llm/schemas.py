"""The LLM's replies as pydantic models, and the JSON schemas sent to the endpoint.

A reply is accepted only if it parses as JSON and validates against its model; anything else is
retried, then recorded as a failure (never turned into a default value).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Longest reason kept; a longer one is cut (the grade is still valid).
MAX_REASON_CHARS = 500
#: Longest generated query accepted, in characters.
MAX_QUERY_CHARS = 300


class JudgeReply(BaseModel):
    """The judge's verdict on one (query, document) pair."""

    model_config = ConfigDict(extra="ignore")

    grade: int = Field(ge=0, le=3)
    reason: str

    @field_validator("grade", mode="before")
    @classmethod
    def _integer_grade(cls, value: Any) -> int:
        # JSON true would pass as 1 and "2" as 2 under pydantic's lax mode: neither is a grade.
        if isinstance(value, bool):
            raise ValueError("grade must be an integer 0-3, not a boolean")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int):
            raise ValueError(f"grade must be an integer 0-3, got {value!r}")
        return value

    @field_validator("reason", mode="after")
    @classmethod
    def _short_reason(cls, value: str) -> str:
        value = " ".join(value.split())
        return value[:MAX_REASON_CHARS]


class QueryGenReply(BaseModel):
    """Queries written for one document: natural-language questions and keyword queries."""

    model_config = ConfigDict(extra="ignore")

    natural: list[str]
    keyword: list[str]

    @field_validator("natural", "keyword", mode="after")
    @classmethod
    def _clean(cls, values: list[str]) -> list[str]:
        cleaned = [" ".join(v.split()) for v in values]
        return [v for v in cleaned if v and len(v) <= MAX_QUERY_CHARS]

    @model_validator(mode="after")
    def _some_query(self) -> QueryGenReply:
        if not self.natural and not self.keyword:
            raise ValueError("no usable query in the reply")
        return self


def judge_schema() -> dict[str, Any]:
    """The JSON schema of a judge reply (also a valid strict OpenAI structured-output schema)."""
    return {
        "type": "object",
        "properties": {
            "grade": {"type": "integer", "enum": [0, 1, 2, 3]},
            "reason": {"type": "string", "maxLength": 300},
        },
        "required": ["grade", "reason"],
        "additionalProperties": False,
    }


def querygen_schema(n_natural: int, n_keyword: int) -> dict[str, Any]:
    """The JSON schema of a query-generation reply asking for exact list lengths."""

    def strings(n: int) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string", "maxLength": 200},
            "minItems": n,
            "maxItems": n,
        }

    return {
        "type": "object",
        "properties": {"natural": strings(n_natural), "keyword": strings(n_keyword)},
        "required": ["natural", "keyword"],
        "additionalProperties": False,
    }


#: Keywords that strict structured output of the hosted API may reject; grammar-based servers
#: (llama.cpp) use them to bound the output, which is why they are in the schemas at all.
_NON_STRICT_KEYWORDS = ("maxLength", "minLength", "minItems", "maxItems")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a schema without the keywords strict structured output may not accept."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _NON_STRICT_KEYWORDS}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(copy.deepcopy(schema))
