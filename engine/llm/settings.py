"""How to reach the model: the LLM settings stored with a run (the API key never is)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.env import env_base_url, require_model
from searchgrade.engine.llm.output_modes import OUTPUT_MODES


@dataclass(frozen=True)
class LLMSettings:
    """How to reach the model. Stored with a run; the API key never is (it is not a field)."""

    model: str
    #: None: $OPENAI_BASE_URL, else the hosted OpenAI API.
    base_url: str | None = None
    concurrency: int = 4
    timeout_s: float = 60.0
    #: Extra requests after a timeout, connection error, 408/409/429 or 5xx.
    max_retries: int = 4
    #: Extra requests after a reply that is not valid JSON for its schema.
    invalid_reply_retries: int = 2
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    #: A longer Retry-After is cut to this.
    max_retry_after_s: float = 120.0
    #: None: no temperature is sent, the endpoint samples as it is set up to.
    temperature: float | None = 0.0
    max_tokens: int = 400
    #: Force one of OUTPUT_MODES instead of negotiating.
    output_mode: str | None = None
    #: Where ``base_url`` was typed: "" for the operator's (the command line, the environment),
    #: "app" or "exposed app" for a URL typed in the browser, whose every connection then goes
    #: through core/outbound.py's policy wherever the run goes on (a resume, a suite, tuning).
    declared_in: str = ""

    def validate(self) -> None:
        if not self.model:
            raise SearchGradeError("no LLM model given; pass --model NAME (e.g. gpt-4o-mini)")
        if self.concurrency < 1:
            raise SearchGradeError(f"--concurrency of {self.concurrency} must be at least 1")
        if self.timeout_s <= 0:
            raise SearchGradeError(f"LLM timeout of {self.timeout_s} s must be positive")
        if self.max_retries < 0 or self.invalid_reply_retries < 0:
            raise SearchGradeError("LLM retry counts must be 0 or more")
        if self.max_tokens < 1:
            raise SearchGradeError(f"LLM max_tokens of {self.max_tokens} must be at least 1")
        if self.output_mode is not None and self.output_mode not in OUTPUT_MODES:
            raise SearchGradeError(
                f"LLM output mode {self.output_mode!r} is not one of {', '.join(OUTPUT_MODES)}"
            )

    def resolved_base_url(self) -> str | None:
        return self.base_url or env_base_url()

    def to_json(self) -> dict[str, Any]:
        """The settings as stored with a run: no key, and no credentials inside the URL."""
        d = asdict(self)
        url = self.resolved_base_url()
        if url:
            parts = urlsplit(url)
            if parts.username or parts.password:
                host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
                url = urlunsplit(parts._replace(netloc=host))
        d["base_url"] = url
        if not self.declared_in:
            del d["declared_in"]  # the operator's endpoint: stored as before the field existed
        return d


def settings_from_env(environ: Mapping[str, str] | None = None) -> LLMSettings:
    """LLMSettings with the model from $SEARCHGRADE_LLM_MODEL (the endpoint comes from $OPENAI_BASE_URL)."""
    return LLMSettings(model=require_model(None, environ))
