"""A client for any OpenAI-compatible chat endpoint that returns validated JSON replies.

The output mode (how a request asks for JSON) is negotiated once per endpoint
(engine/llm/output_modes.py). Retries are done here, not by the openai package (it is created
with ``max_retries=0``), so that every HTTP request sent is counted: the calls a run reports equal
the requests the server got. Transient errors are retried after a wait (engine/llm/retries.py); a
reply that is not valid JSON for its schema (engine/llm/replies.py) is retried with a short
correction turn, then returned as a failure. 401, 403 and 404 stop everything (they will not get
better), and so does an endpoint that refuses ``REFUSALS_TO_STOP`` connections in a row (no server
listening: retrying each item would spend its whole backoff on every one). The API key is never stored in settings, logged or put in a message, and is sent only to
an endpoint the operator chose (engine/llm/key_policy.py): any other endpoint gets no key.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from pydantic import BaseModel

from searchgrade.core.outbound import OutboundRefused, policy_for
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.accounting import Usage
from searchgrade.engine.llm.env import HOSTED_URL, env_api_key
from searchgrade.engine.llm.key_policy import (
    api_key_for,
    key_allowed,
    key_withheld_note,
    normalise_url,
    scrub,
    strip_credentials,
)
from searchgrade.engine.llm.output_modes import FORMAT_ERROR, OUTPUT_MODES, REJECTED, ask_for_json
from searchgrade.engine.llm.replies import Reply, parse_reply
from searchgrade.engine.llm.retries import TRANSIENT, backoff_seconds, retry_after_seconds
from searchgrade.engine.llm.settings import LLMSettings

T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


class _Rejected(Exception):  # noqa: N818 - control flow inside the client
    """The server refused the request as sent (400-class)."""


class _GaveUp(Exception):  # noqa: N818 - control flow inside the client
    """Retries exhausted on transient errors."""


#: Connections refused in a row (over every thread of a client) after which the endpoint counts as
#: down and the stage stops, instead of each item spending its retries and their waits.
REFUSALS_TO_STOP = 3

#: Fields of a GET /models entry that change between calls (llama.cpp's "created" is the time of
#: the request; vLLM's permission entries carry fresh ids).
_VOLATILE_MODEL_FIELDS = {"created", "object", "permission", "permissions"}


def _httpx_of(openai: Any) -> Any:
    """The httpx module the openai package builds its clients with (httpx, or httpx2)."""
    import importlib

    return importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])


class LLMClient:
    """JSON calls to an OpenAI-compatible endpoint, with retries, negotiation and accounting.

    Args:
        settings: Model, endpoint, concurrency, timeouts and retry policy.
        api_key: The key; None means $OPENAI_API_KEY when the endpoint may have it (the
            configured one, or one allowed: engine/llm/key_policy.py), else no key. A local
            server needs none.
        client: Anything with ``chat.completions.create(**kwargs)`` (a stub in tests); None builds
            an ``openai.OpenAI`` with ``max_retries=0``.
        sleep: Called with the seconds to wait between retries (tests pass a recorder).
        usage: Where the calls are counted; None: a new ``Usage`` of its own (a panel's judges
            share the run's, each under its own stage).
    """

    def __init__(
        self,
        settings: LLMSettings,
        *,
        api_key: str | None = None,
        client: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        usage: Usage | None = None,
    ) -> None:
        settings.validate()
        self.settings = settings
        self.usage = usage if usage is not None else Usage()
        self.rejected_modes: list[str] = []
        self._sleep = sleep
        self._random = random.Random()
        self._mode: str | None = settings.output_mode
        self._mode_lock = threading.Lock()
        self._adaptations: dict[str, bool] = {}
        self._identity: str | None = None
        self._identity_lock = threading.Lock()
        self._refused = 0
        self._refused_lock = threading.Lock()
        #: Why the endpoint counts as down (``_refused_once``): no request is sent after it.
        self._down: str | None = None
        url = settings.resolved_base_url()
        #: The operator chose this endpoint (engine/llm/key_policy.py), or passed the key explicitly.
        self.trusted_endpoint = api_key is not None or key_allowed(url)
        key = api_key if api_key is not None else api_key_for(url)
        #: Why a key that is set was not sent to this endpoint (said when the endpoint refuses us).
        self.key_withheld = None if self.trusted_endpoint else key_withheld_note(url)
        # Kept only to scrub it from error text; never in settings, logs or messages.
        self._secrets = tuple(s for s in (key, env_api_key()) if s and len(s) >= 4)
        self._client = client if client is not None else self._openai_client(key)
        #: Called for a context held around every HTTP request: a bound on requests in flight
        #: shared beyond this client (engine/ray/stage_runner.py: one across a Ray cluster).
        self.request_gate: Callable[[], AbstractContextManager[Any]] | None = None

    def _openai_client(self, key: str | None) -> Any:
        try:
            import openai
        except ImportError:
            raise SearchGradeError("openai is not installed (pip install openai)") from None
        base_url = self.settings.resolved_base_url()
        if not key:
            if base_url is None:
                raise SearchGradeError(
                    "no API key for the hosted OpenAI API: set OPENAI_API_KEY, or set "
                    "OPENAI_BASE_URL / --base-url to a local OpenAI-compatible server"
                )
            key = "no-key"  # local servers ignore it, the openai package requires one
        extra: dict[str, Any] = {}
        if not self.trusted_endpoint:
            # The openai package also sends credentials of its own from the environment
            # (OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS): none of it leaves for an
            # endpoint the operator did not choose. Nor does it follow a redirect.
            http: dict[str, Any] = {"event_hooks": {"request": [strip_credentials]}, "follow_redirects": False}
            policy = policy_for(self.settings.declared_in)
            if policy is not None:
                # Typed in the browser: the URL is checked now (one line before any request), and
                # every connection goes to an address the policy checked (a name that resolves
                # elsewhere later is refused too), with no proxy or .netrc from the environment.
                policy.check_url(base_url or HOSTED_URL, "LLM endpoint base URL")
                http.update(transport=policy.httpx_transport(_httpx_of(openai)), trust_env=False)
            extra["http_client"] = openai.DefaultHttpxClient(**http)
        return openai.OpenAI(
            api_key=key, base_url=base_url, max_retries=0, timeout=self.settings.timeout_s, **extra
        )

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def judge_identity(self) -> str:
        """Who answers, for cache keys: the model name and what the endpoint reports about it.

        The same model name can be two different models (llama.cpp serves whatever it loaded,
        whatever name is asked for), so the name alone must not share cached replies. The endpoint's
        ``GET /models`` entry for the model (or its only entry) is fingerprinted, without fields
        that change from call to call; an endpoint that lists nothing usable is identified by its
        URL instead. A moved endpoint serving the same model keeps its cache.
        """
        with self._identity_lock:
            if self._identity is None:
                self._identity = f"{self.settings.model}|{self._fingerprint()}"
            return self._identity

    def _fingerprint(self) -> str:
        url = "url:" + normalise_url(self.settings.resolved_base_url())
        try:
            listing = self._client.models.list()
            entries = [e if isinstance(e, dict) else e.model_dump() for e in getattr(listing, "data", listing)]
        except Exception:  # noqa: BLE001 - no listing (404, a stub, a server without it): the URL
            return url
        mine = [e for e in entries if e.get("id") == self.settings.model]
        if not mine and len(entries) == 1:
            mine = entries  # one model served, whatever name is asked for (llama.cpp)
        if len(mine) != 1:
            return url
        stable = {k: v for k, v in mine[0].items() if k not in _VOLATILE_MODEL_FIELDS}
        return "models:" + hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @property
    def output_mode(self) -> str | None:
        """The output mode the endpoint accepted (None until the first accepted request)."""
        return self._mode

    # -- one call ----------------------------------------------------------------------------

    def complete(
        self,
        stage: str,
        messages: list[dict[str, str]],
        reply_model: type[M],
        schema: dict[str, Any],
        *,
        schema_name: str = "reply",
        seed: int | None = None,
        temperature: float | None = None,
    ) -> Reply[M]:
        """Ask for a JSON reply and validate it against ``reply_model``.

        Returns:
            Reply(value, None) on a valid reply; Reply(None, error) when the call failed (invalid
            replies after every retry, transient errors after every retry, or a rejected request).

        Raises:
            SearchGradeError: The endpoint refuses us for good (401, 403, 404).
        """
        conversation = list(messages)
        errors: list[str] = []
        for attempt in range(self.settings.invalid_reply_retries + 1):
            try:
                content, finish_reason = self._request(
                    stage, conversation, schema, schema_name, seed, temperature
                )
            except (_Rejected, _GaveUp) as exc:
                self.usage.add(stage, failures=1)
                return Reply(None, str(exc))
            value, error = parse_reply(content, reply_model, finish_reason)
            if value is not None:
                self.usage.add(stage, ok=1)
                return Reply(value, None)
            self.usage.add(stage, invalid_replies=1)
            errors.append(error)
            conversation = [
                *messages,
                {"role": "assistant", "content": (content or "")[:2000]},
                {"role": "user", "content": f"That reply is not valid: {error}. Reply again with "
                 "only the JSON object, exactly as asked."},
            ]
        self.usage.add(stage, failures=1)
        return Reply(None, f"invalid reply after {len(errors)} attempts: {errors[-1]}")

    def _request(
        self,
        stage: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        schema_name: str,
        seed: int | None,
        temperature: float | None,
    ) -> tuple[str | None, str | None]:
        def send(mode: str, negotiating: bool = False) -> tuple[str | None, str | None]:
            return self._send(stage, mode, messages, schema, schema_name, seed, temperature,
                              negotiating)

        mode = self._mode
        if mode is not None:
            return send(mode)
        # The first call negotiates while the others wait, so that a rejected mode is tried once
        # per endpoint, not once per worker thread.
        with self._mode_lock:
            if self._mode is not None:
                mode = self._mode
            else:
                rejected: list[str] = []
                last: _Rejected | None = None
                for candidate in OUTPUT_MODES:
                    try:
                        reply = send(candidate, negotiating=True)
                    except _Rejected as exc:
                        rejected.append(candidate)
                        last = exc
                        continue
                    self._mode = candidate
                    self.rejected_modes = rejected
                    return reply
                # Every mode refused: likely this request (say, too long), not the modes; stay
                # undecided so the next call negotiates again.
                raise _Rejected(f"rejected in every output mode; last: {last}")
        return send(mode)

    def _send(
        self,
        stage: str,
        mode: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        schema_name: str,
        seed: int | None,
        temperature: float | None,
        negotiating: bool = False,
    ) -> tuple[str | None, str | None]:
        import openai

        kwargs = self._request_kwargs(mode, messages, schema, schema_name, seed, temperature)
        error = ""
        for attempt in range(self.settings.max_retries + 1):
            if self._down is not None:
                raise SearchGradeError(self._down)
            self.usage.add(stage, requests=1)
            t0 = time.perf_counter()
            wait_s: float | None = None
            try:
                with self.request_gate() if self.request_gate is not None else nullcontext():
                    t0 = time.perf_counter()  # the wait for a permit is not the endpoint's latency
                    response = self._client.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
                self._answered()
                error = f"timed out after {self.settings.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                if isinstance(exc.__cause__, OutboundRefused):  # no retry mends a refused address
                    raise SearchGradeError(str(exc.__cause__)) from None
                error = f"connection error: {self._scrub(str(exc))}"
                if _cannot_connect(exc):
                    self._refused_once(error)
                else:
                    self._answered()
            except openai.APIStatusError as exc:
                self._answered()
                status = exc.status_code
                detail = self._scrub(_one_line(exc))
                adapted = self._adapt(kwargs, status, detail)
                if adapted:
                    self.usage.add(stage, latency_s=time.perf_counter() - t0)
                    continue
                # llama-cpp-python answers an unknown response_format with a 500 that names it.
                if status in REJECTED or (negotiating and FORMAT_ERROR.search(detail)):
                    self.usage.add(stage, latency_s=time.perf_counter() - t0)
                    raise _Rejected(f"request rejected ({status}, mode {mode}): {detail}") from None
                if status not in TRANSIENT and status < 500:
                    fix = ("check OPENAI_API_KEY, --model and OPENAI_BASE_URL" if not self.key_withheld
                           or status not in (401, 403) else self.key_withheld)
                    raise SearchGradeError(
                        f"the LLM endpoint {self.settings.resolved_base_url() or 'api.openai.com'} "
                        f"answered {status} for model {self.settings.model!r}: {detail}; {fix}"
                    ) from None
                error = f"HTTP {status}: {detail}"
                wait_s = retry_after_seconds(exc.response.headers)
            else:
                self._answered()
                usage = getattr(response, "usage", None)
                self.usage.add(
                    stage,
                    latency_s=time.perf_counter() - t0,
                    prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                    completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                )
                choices = getattr(response, "choices", None) or []
                if not choices:
                    return None, "no choices"
                return choices[0].message.content, choices[0].finish_reason
            self.usage.add(stage, latency_s=time.perf_counter() - t0)
            if attempt == self.settings.max_retries:
                break
            self.usage.add(stage, retries=1)
            if wait_s is None:
                wait_s = backoff_seconds(attempt, self.settings.backoff_s, self.settings.max_backoff_s,
                                         self._random)
            self._sleep(min(wait_s, self.settings.max_retry_after_s))
        raise _GaveUp(f"{error} (gave up after {self.settings.max_retries + 1} requests)")

    def _answered(self) -> None:
        """The endpoint answered (or is there but slow): refusals in a row start again at 0."""
        with self._refused_lock:
            self._refused = 0

    def _refused_once(self, error: str) -> None:
        """Count a refused connection; the ``REFUSALS_TO_STOP``-th in a row stops the stage."""
        with self._refused_lock:
            self._refused += 1
            if self._refused >= REFUSALS_TO_STOP and self._down is None:
                self._down = (
                    f"the LLM endpoint {self.settings.resolved_base_url() or 'api.openai.com'} refused "
                    f"{REFUSALS_TO_STOP} connections in a row ({error}): is the server running? Start it, "
                    "or point --base-url (OPENAI_BASE_URL) at one, then resume the run")
        if self._down is not None:
            raise SearchGradeError(self._down) from None

    def _adapt(self, kwargs: dict[str, Any], status: int, detail: str) -> bool:
        """Adjust to a 400 about a parameter some models refuse; True if the request changed.

        Newer hosted models refuse ``max_tokens`` (they want ``max_completion_tokens``) and any
        ``temperature`` but the default. The change is remembered for later requests.
        """
        if status != 400:
            return False
        if "max_tokens" in kwargs and "max_completion_tokens" in detail:
            self._adaptations["max_completion_tokens"] = True
            kwargs["max_completion_tokens"] = kwargs.pop("max_tokens")
            return True
        if "temperature" in kwargs and "temperature" in detail:
            self._adaptations["omit_temperature"] = True
            del kwargs["temperature"]
            return True
        return False

    def _request_kwargs(
        self,
        mode: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        schema_name: str,
        seed: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature if temperature is None else temperature,
            "max_tokens": self.settings.max_tokens,
        }
        if self._adaptations.get("max_completion_tokens"):
            kwargs["max_completion_tokens"] = kwargs.pop("max_tokens")
        if self._adaptations.get("omit_temperature") or kwargs["temperature"] is None:
            # None: the endpoint's own sampling settings (a judge's repeats measure it as deployed).
            del kwargs["temperature"]
        if seed is not None:
            kwargs["seed"] = seed
        ask_for_json(kwargs, mode, messages, schema, schema_name)
        return kwargs

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    # -- many calls --------------------------------------------------------------------------

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        """Run ``fn`` over items on ``settings.concurrency`` threads; yield (index, result) as done.

        At most ``2 * concurrency`` items are submitted ahead, so stopping the iteration (or an
        exception) leaves little work in flight. An exception in ``fn`` is raised here.
        """
        workers = self.settings.concurrency
        pending: dict[Future[R], int] = {}
        next_index = 0
        executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm")
        try:
            while next_index < len(items) or pending:
                while next_index < len(items) and len(pending) < 2 * workers:
                    pending[executor.submit(fn, items[next_index])] = next_index
                    next_index += 1
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    yield index, future.result()
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


def _cannot_connect(exc: BaseException) -> bool:
    """The request reached no server: the connection was refused, or no address answered (httpx's
    ConnectError, under whichever httpx the openai package ships), not a reply cut short."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or any(c.__name__ == "ConnectError" for c in type(seen).__mro__):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _one_line(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())[:300]
