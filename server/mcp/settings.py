"""What the operator decided when starting ``searchgrade mcp``: where the runs are, and what an
agent may start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from searchgrade.core.records import SearchGradeError

#: --max-queries default: a started run evaluates a seeded sample of at most this many queries.
DEFAULT_MAX_QUERIES = 50
#: --max-tokens default: 0, no LLM run may start until the operator sets a ceiling.
DEFAULT_MAX_TOKENS = 0
#: The environment variable that holds the HTTP transport's bearer token.
ENV_TOKEN = "SEARCHGRADE_MCP_TOKEN"


@dataclass(frozen=True)
class McpSettings:
    """The server's limits (see docs/mcp.md "Safety")."""

    data_dir: Path
    #: Tools that start work (start_evaluation) are refused unless True (--allow-runs).
    allow_runs: bool = False
    #: A started run samples at most this many queries (LLM mode: generates at most this many).
    max_queries: int = DEFAULT_MAX_QUERIES
    #: An LLM run whose dry-run estimate is above this many tokens is refused (0: every LLM run).
    max_tokens: int = DEFAULT_MAX_TOKENS
    #: Besides the demo and the collections of stored runs, collections may be read from here.
    collections_root: Path | None = None
    #: The operator's strategies file (declared search systems an agent may name).
    strategies_file: str | None = None

    def check(self) -> None:
        """The operator's options, checked once at start (SearchGradeError names the bad one)."""
        if self.max_queries < 1:
            raise SearchGradeError(f"--max-queries of {self.max_queries} must be at least 1")
        if self.max_tokens < 0:
            raise SearchGradeError(f"--max-tokens of {self.max_tokens} is negative: use 0 (no LLM run) "
                                   "or a ceiling such as 200000")
        if self.collections_root is not None and not self.collections_root.is_dir():
            raise SearchGradeError(f"--collections-root {self.collections_root} is not a folder; "
                                   "pass an existing folder of collections")
