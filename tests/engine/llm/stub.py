"""A stub of the openai client: ``chat.completions.create(**kwargs)`` answered by a function."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx2
import openai

_REQUEST = httpx2.Request("POST", "http://stub.invalid/v1/chat/completions")


def completion(content: str | None, finish_reason: str = "stop", prompt_tokens: int = 10,
               completion_tokens: int = 5) -> SimpleNamespace:
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=content), finish_reason=finish_reason)],
        usage=SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
    )


def status_error(status: int, message: str = "error", headers: dict[str, str] | None = None) -> Exception:
    response = httpx2.Response(status, headers=headers or {}, request=_REQUEST)
    classes = {400: openai.BadRequestError, 401: openai.AuthenticationError,
               404: openai.NotFoundError, 422: openai.UnprocessableEntityError,
               429: openai.RateLimitError}
    cls = classes.get(status, openai.InternalServerError if status >= 500 else openai.APIStatusError)
    return cls(message, response=response, body=None)


def timeout_error() -> Exception:
    return openai.APITimeoutError(request=_REQUEST)


def refused_error() -> Exception:
    """What the openai package raises when nothing listens at the endpoint."""
    return _connection_error(httpx2.ConnectError("[Errno 111] Connection refused", request=_REQUEST))


def cut_short_error() -> Exception:
    """A connection the server closed mid-reply: it is there, so not a refusal."""
    return _connection_error(httpx2.RemoteProtocolError("Server disconnected without sending a response.",
                                                        request=_REQUEST))


def _connection_error(cause: Exception) -> Exception:
    """openai's APIConnectionError raised from ``cause``, as the package raises it."""
    try:
        raise openai.APIConnectionError(request=_REQUEST) from cause
    except openai.APIConnectionError as exc:
        return exc


def judge_json(grade: int = 2, reason: str = "answers it") -> str:
    return json.dumps({"grade": grade, "reason": reason})


class StubOpenAI:
    """Records every request; ``respond(kwargs, n)`` returns reply text or an exception to raise.

    n is the 0-based index of the request. ``delay_s`` makes each request take that long, to
    observe concurrency.
    """

    def __init__(self, respond: Callable[[dict[str, Any], int], str | Exception], delay_s: float = 0.0):
        self.respond = respond
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        with self._lock:
            n = len(self.requests)
            self.requests.append(kwargs)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            answer = self.respond(kwargs, n)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(answer, Exception):
            raise answer
        return completion(answer)


def always(text: str) -> Callable[[dict[str, Any], int], str]:
    return lambda kwargs, n: text


def user_text(kwargs: dict[str, Any]) -> str:
    """The first user message (the prompt; a retry appends a correction after it)."""
    return next(m["content"] for m in kwargs["messages"] if m["role"] == "user")
