"""The judge's LLM requests sent by Ray actors, within one cluster-wide bound on requests in flight.

The judge's requests are sent by Ray actors (``LLMWorker``), each request holding a permit of a
named actor (``RequestLimiter``, one per endpoint): at most ``--concurrency`` requests in flight
across the cluster, whichever runs send them. A permit is a lease that expires (a holder that
died does not keep it), and a request that gets none in a bounded time stops the run with one
line. The driver keeps the cache, the accounting and the judge's identity.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.ray.session import NAMESPACE, RaySession, import_ray, worker_error


class RequestLimiter:
    """A named Ray actor holding ``slots`` permits: every LLM request a worker sends to one
    endpoint holds one, so the requests in flight stay within ``slots`` across the cluster,
    however many workers (and runs) send them.

    A permit is a lease: ``acquire`` returns a token that expires after the lease's seconds, and
    an expired token's permit is taken back. The actor outlives the runs that use it (on a
    cluster it is detached), so a holder that dies without releasing (a killed driver, a lost
    node, a caller gone while it waited) costs the others a lease's length, never the permit.
    ``release`` of a token that expired or was released already does nothing.
    """

    def __init__(self, slots: int) -> None:
        import asyncio

        self.slots = slots
        self.leases: dict[int, float] = {}  # token -> deadline (time.monotonic)
        self.freed = asyncio.Condition()
        self.tokens = itertools.count(1)
        self.peak = 0
        self.reclaimed = 0

    def _reclaim(self, now: float) -> None:
        for token, deadline in list(self.leases.items()):
            if deadline <= now:
                del self.leases[token]
                self.reclaimed += 1

    async def acquire(self, lease_s: float, wait_s: float) -> int | None:
        """A token valid for ``lease_s``, or None when no permit came free within ``wait_s``."""
        import asyncio
        import time

        give_up = time.monotonic() + wait_s
        async with self.freed:
            while True:
                now = time.monotonic()
                self._reclaim(now)
                if len(self.leases) < self.slots:
                    token = next(self.tokens)
                    self.leases[token] = now + lease_s
                    self.peak = max(self.peak, len(self.leases))
                    return token
                if now >= give_up:
                    return None
                # Woken by a release, or when the first lease ends (or the wait does).
                until = min([give_up, *self.leases.values()])
                try:
                    await asyncio.wait_for(self.freed.wait(), timeout=max(0.01, until - now))
                except asyncio.TimeoutError:
                    pass

    async def release(self, token: int) -> None:
        async with self.freed:
            if self.leases.pop(token, None) is not None:
                self.freed.notify()

    async def stats(self) -> dict[str, int]:
        return {"slots": self.slots, "peak_in_flight": self.peak, "leases_reclaimed": self.reclaimed}


#: Seconds a request permit is leased beyond the LLM timeout (a request holds one for one attempt).
LEASE_MARGIN_S = 30.0
#: A request waits this many leases for a permit before the run stops with one line.
PERMIT_WAIT_LEASES = 3
#: The limiter actor's name is this and the endpoint's URL. ("llm-requests:" named the limiter
#: whose permits never expired: a cluster may still hold one with leaked permits; it is not used.)
LIMITER_PREFIX = "llm-leases:"


@dataclass(frozen=True)
class _Lease:
    """Where permits come from and how long they are held and waited for."""

    limiter: Any
    name: str
    lease_s: float
    wait_s: float


class _Permit:
    """One request's permit from the limiter, held while the request is in flight."""

    def __init__(self, lease: _Lease) -> None:
        self.lease = lease
        self.token: int | None = None

    def __enter__(self) -> None:
        ray = import_ray()
        lease = self.lease
        try:
            # The limiter answers None at wait_s; the margin is for an actor that does not answer.
            self.token = ray.get(lease.limiter.acquire.remote(lease.lease_s, lease.wait_s),
                                 timeout=lease.wait_s + LEASE_MARGIN_S)
        except ray.exceptions.GetTimeoutError:
            self.token = None
        if self.token is None:
            raise SearchGradeError(
                f"no LLM request permit from the Ray actor {lease.name!r} (namespace {NAMESPACE!r}) in "
                f"{lease.wait_s:g} s: all its permits are held; if no other run judges with this "
                f"endpoint, remove it (ray.kill(ray.get_actor({lease.name!r}, namespace={NAMESPACE!r})) "
                "from a driver connected to the cluster) and resume the run")

    def __exit__(self, *exc: Any) -> None:
        ray = import_ray()
        if self.token is None:
            return
        try:  # a release that does not arrive costs the lease's length, not the permit
            ray.get(self.lease.limiter.release.remote(self.token), timeout=LEASE_MARGIN_S)
        except ray.exceptions.RayError:
            pass
        self.token = None


class _CallUsage:
    """An LLM client's accounting that also keeps what the current thread's call added, so a
    worker returns each call's counters with its reply (the driver adds them to the run's)."""

    def __init__(self) -> None:
        from searchgrade.engine.llm.accounting import Usage

        self.total = Usage()
        self.local = threading.local()

    def add(self, stage: str, **deltas: float) -> None:
        self.total.add(stage, **deltas)
        mine = getattr(self.local, "deltas", None)
        if mine is None:
            mine = self.local.deltas = {}
        for name, delta in deltas.items():
            mine.setdefault(stage, {})
            mine[stage][name] = mine[stage].get(name, 0) + delta

    def snapshot(self) -> dict[str, dict[str, float]]:
        return self.total.snapshot()

    def take(self) -> dict[str, dict[str, float]]:
        mine = getattr(self.local, "deltas", None) or {}
        self.local.deltas = {}
        return mine


class LLMWorker:
    """A Ray actor sending LLM requests (each through the cluster-wide limiter) for the driver.

    The endpoint is the driver's (its settings come with the base URL the driver resolved, not
    one a worker's environment might name). The API key is read from the worker's own
    environment, and only when the driver's client would send it (the endpoint is one the
    operator chose): it never travels through Ray.
    """

    def __init__(self, settings: Any, trusted: bool, lease: _Lease) -> None:
        from searchgrade.engine.llm.client import LLMClient
        from searchgrade.engine.llm.env import env_api_key

        self.client = LLMClient(settings, api_key=env_api_key() if trusted else None)
        self.client.usage = _CallUsage()  # type: ignore[assignment]
        self.client.request_gate = lambda: _Permit(lease)

    def complete(self, stage: str, messages: list[dict[str, str]], reply_model: Any,
                 schema: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any], str | None]:
        reply = self.client.complete(stage, messages, reply_model, schema, **kwargs)
        return reply, self.client.usage.take(), self.client.output_mode


class RayLLM:
    """The run's LLM client, with its requests sent by Ray workers through a cluster-wide limiter.

    Everything but ``complete`` is the driver's client (the model, its cache identity, the
    accounting the run stores, ``map``'s threads); ``complete`` runs on a worker, whose counters
    are added to the driver's accounting as each call returns.

    Args:
        workers: LLM worker actors (default: up to 4; requests wait on the network, not the CPU).
        lease_s: Seconds a request's permit is leased (default: the LLM timeout plus
            ``LEASE_MARGIN_S``; a request holds one for one attempt, retries take another).
        wait_s: Seconds a request waits for a permit before the run stops with one line (default:
            ``PERMIT_WAIT_LEASES`` leases, in which every permit held by a dead holder comes back).
    """

    def __init__(self, client: Any, session: RaySession, workers: int | None = None,
                 lease_s: float | None = None, wait_s: float | None = None) -> None:
        from dataclasses import replace

        from searchgrade.engine.llm.env import HOSTED_URL
        from searchgrade.engine.llm.key_policy import normalise_url

        ray = import_ray()
        self.local = client
        self.session = session
        # The workers send to the endpoint the driver resolved (OPENAI_BASE_URL read here, once).
        settings = replace(client.settings, base_url=client.settings.resolved_base_url() or HOSTED_URL)
        limiter_cls = ray.remote(num_cpus=0, max_concurrency=1000)(RequestLimiter)
        name = f"{LIMITER_PREFIX}{normalise_url(settings.base_url)}"
        options: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "get_if_exists": True}
        if session.address is not None:
            options["lifetime"] = "detached"  # the bound holds across runs sharing the cluster
        self.limiter = limiter_cls.options(**options).remote(settings.concurrency)
        lease_s = lease_s if lease_s is not None else settings.timeout_s + LEASE_MARGIN_S
        lease = _Lease(self.limiter, name, lease_s, wait_s if wait_s is not None else PERMIT_WAIT_LEASES * lease_s)
        worker_cls = ray.remote(num_cpus=0, max_concurrency=settings.concurrency)(LLMWorker)
        n = max(1, min(workers or 4, settings.concurrency))
        self.workers = [worker_cls.remote(settings, bool(client.trusted_endpoint), lease) for _ in range(n)]
        self._next = 0
        self._lock = threading.Lock()
        self._mode: str | None = None
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    @property
    def output_mode(self) -> str | None:
        return self._mode or self.local.output_mode

    def complete(self, stage: str, messages: list[dict[str, str]], reply_model: Any,
                 schema: dict[str, Any], **kwargs: Any) -> Any:
        ray = import_ray()
        with self._lock:
            worker = self.workers[self._next % len(self.workers)]
            self._next += 1
        try:
            reply, deltas, mode = ray.get(worker.complete.remote(stage, messages, reply_model, schema, kwargs))
        except ray.exceptions.RayError as exc:
            raise worker_error(exc) from None
        for counted_stage, counters in deltas.items():
            self.local.usage.add(counted_stage, **counters)
        with self._lock:
            self.calls += 1
            if mode is not None:
                self._mode = mode
        return reply

    def stats(self) -> dict[str, Any]:
        ray = import_ray()
        return {"workers": len(self.workers), "calls": self.calls,
                **ray.get(self.limiter.stats.remote(), timeout=LEASE_MARGIN_S)}

    def close(self) -> None:
        ray = import_ray()
        for worker in self.workers:
            ray.kill(worker)
        self.workers = []
