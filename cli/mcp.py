"""`searchgrade mcp`: serve the run store to agents over MCP (stdio, or streamable HTTP)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from searchgrade.cli.options import add_common, add_strategies_file
from searchgrade.core.records import SearchGradeError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def add_commands(sub: argparse._SubParsersAction) -> None:
    from searchgrade.server.mcp.settings import DEFAULT_MAX_QUERIES, ENV_TOKEN

    p = sub.add_parser("mcp", help="an MCP server for agents: runs, suites, summaries, comparisons, the gate "
                       "(stdio; --http for streamable HTTP)")
    p.add_argument("--allow-runs", action="store_true",
                   help="let agents start evaluations and suite runs (default: read-only)")
    p.add_argument("--max-queries", type=int, default=DEFAULT_MAX_QUERIES,
                   help=f"a started run samples at most this many queries; a suite with more frozen queries "
                   f"is refused (default: {DEFAULT_MAX_QUERIES})")
    p.add_argument("--max-tokens", type=int, default=0,
                   help="an LLM run whose dry-run estimate is above this many tokens is refused "
                   "(default: 0, no LLM run)")
    p.add_argument("--collections-root", metavar="DIR",
                   help="agents may also evaluate collections in this folder (default: only 'demo' "
                   "and the collections of stored runs)")
    add_strategies_file(p)
    p.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp "
                   "instead of stdio")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"with --http (default: {DEFAULT_HOST}); any other address needs ${ENV_TOKEN}")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"with --http (default: {DEFAULT_PORT})")
    add_common(p)
    p.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from searchgrade.engine.paths import data_dir
    from searchgrade.server.mcp.settings import McpSettings

    if not args.http and (args.host != DEFAULT_HOST or args.port != DEFAULT_PORT):
        raise SearchGradeError("--host and --port go with --http (stdio needs neither)")
    settings = McpSettings(
        data_dir=data_dir(args.data_dir), allow_runs=args.allow_runs, max_queries=args.max_queries,
        max_tokens=args.max_tokens,
        collections_root=Path(args.collections_root).expanduser() if args.collections_root else None,
        strategies_file=args.strategies_file)
    settings.check()
    token = None
    if args.http:
        from searchgrade.server.mcp.http import required_token

        token = required_token(args.host)  # refuses before anything is opened or bound
    try:
        from searchgrade.server.mcp.server import build_server
        server = build_server(settings)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("mcp", "mcp_types"):
            raise SearchGradeError("the MCP SDK is not installed: pip install 'mcp>=2.3,<3'") from None
        raise
    if args.http:
        from searchgrade.server.mcp.http import serve

        print(f"searchgrade mcp: streamable HTTP at http://{args.host}:{args.port}/mcp "
              f"({'bearer token required' if token else 'loopback, no token'}; "
              f"{'runs allowed' if settings.allow_runs else 'read-only'})", file=sys.stderr, flush=True)
        serve(server, args.host, args.port, token)
        return 0
    server.run("stdio")  # until the agent closes the session; a run it started goes on in its worker
    return 0
