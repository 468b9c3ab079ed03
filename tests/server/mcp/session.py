"""What the MCP tests share: the server's environment, and tool calls through the SDK's client."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from searchgrade.server.mcp.settings import ENV_TOKEN
from tests.browser.server import DEPLOYMENT_ENVIRONMENT

#: Secrets the server's environment holds in every test: no result may contain them.
API_KEY = "sk-test-0123456789abcdef-never-shown"
TOKEN = "mcp-test-token-0123456789abcdef"


#: `searchgrade` as this interpreter runs it: the command an agent's configuration starts.
SEARCHGRADE = (sys.executable, "-m", "searchgrade.cli")


def server_env(**extra: str) -> dict[str, str]:
    """The server's environment: the machine's without its deployment settings, an API key (which
    must never come back), a model and an endpoint nobody listens on (estimates only), ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in DEPLOYMENT_ENVIRONMENT + (ENV_TOKEN,)}
    env.update(OPENAI_API_KEY=API_KEY, SEARCHGRADE_LLM_MODEL="test-model",
               OPENAI_BASE_URL="http://127.0.0.1:9/v1", **extra)
    return env


class Tools:
    """Calls tools of one session and keeps every text the server sent (to look for secrets)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.texts: list[str] = []

    async def raw(self, tool: str, /, **arguments: Any) -> Any:
        result = await self.session.call_tool(tool, arguments)
        self.texts += [c.text for c in result.content if getattr(c, "text", None) is not None]
        return result

    async def call(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = await self.raw(tool, **arguments)
        text = result.content[0].text
        assert not result.is_error, f"{tool} failed: {text}"
        return json.loads(text)

    async def error(self, tool: str, /, **arguments: Any) -> str:
        result = await self.raw(tool, **arguments)
        assert result.is_error, f"{tool} was expected to fail: {result.content[0].text[:300]}"
        return result.content[0].text

    async def until_done(self, run_id: str, timeout_s: float = 300) -> dict[str, Any]:
        import anyio

        deadline = time.monotonic() + timeout_s
        while True:
            progress = await self.call("run_progress", run_id=run_id)
            if progress["done"] or time.monotonic() > deadline:
                return progress
            await anyio.sleep(0.5)
