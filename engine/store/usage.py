"""A run's LLM accounting per stage: calls, failures, retries, cache hits, tokens, time."""

from __future__ import annotations

from searchgrade.engine.store.connection import StoreConnection


class LLMUsageMixin(StoreConnection):
    """Additive counters of a run's LLM calls, per stage."""

    #: Counters of llm_usage, in engine.llm.accounting.StageUsage order.
    LLM_USAGE_COUNTERS = ("requests", "ok", "failures", "invalid_replies", "retries", "cache_hits",
                          "prompt_tokens", "completion_tokens", "latency_s")

    def add_llm_usage(self, run_id: str, stage: str, deltas: dict[str, float]) -> None:
        """Add counters (requests, tokens, ...) to a run's LLM accounting for one stage.

        Additive, so a resumed run keeps counting from where the stopped process left off.
        """
        unknown = set(deltas) - set(self.LLM_USAGE_COUNTERS)
        if unknown:
            raise ValueError(f"unknown LLM usage counters {sorted(unknown)}; "
                             f"allowed: {list(self.LLM_USAGE_COUNTERS)}")
        if not deltas:
            return
        # Column names come from the fixed allow-list above, never from user input.
        names = list(deltas)
        updates = ", ".join(f"{n} = llm_usage.{n} + excluded.{n}" for n in names)
        with self.connect() as con:
            con.execute(
                f"INSERT INTO llm_usage (run_id, stage, {', '.join(names)}) "  # noqa: S608 - constant names, values bound
                f"VALUES (?, ?, {', '.join('?' for _ in names)}) "
                f"ON CONFLICT (run_id, stage) DO UPDATE SET {updates}",
                [run_id, stage, *deltas.values()],
            )

    def llm_usage(self, run_id: str) -> dict[str, dict[str, float]]:
        """A run's LLM accounting: stage -> counter -> value (empty for a run without LLM calls)."""
        rows = self._dicts(
            f"SELECT stage, {', '.join(self.LLM_USAGE_COUNTERS)} FROM llm_usage WHERE run_id = ? "  # noqa: S608 - constant names, values bound
            "ORDER BY stage",
            [run_id],
        )
        return {r.pop("stage"): r for r in rows}
