"""`searchgrade mcp`: searchgrade's runs, comparisons and regression gate for agents, over the
Model Context Protocol (docs/mcp.md).

- settings: the operator's limits (read-only unless --allow-runs, --max-queries, --max-tokens).
- payload: what a result is made of (compact JSON, corpus text marked untrusted, secrets scrubbed).
- reads: the read-only tools, over the view models the app and the CLI use.
- runs: starting a run as a background job (server/jobs.py), its progress, the cost estimate.
- resources: a run's summary and its per-query metrics CSV.
- server: the MCPServer with its tools; http: the streamable HTTP transport and its bearer token.
"""
