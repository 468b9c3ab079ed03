"""LLM mode: query generation and a 0-3 judge over any OpenAI-compatible chat endpoint.

- client: LLMClient (one JSON call with its retries and output-mode negotiation; many on threads).
- settings: LLMSettings, how to reach the model (stored with a run, never the key).
- env: what the server's environment gives (model, endpoint, key); read there only.
- key_policy: which endpoints may receive the key; credentials stripped and scrubbed elsewhere.
- output_modes: how a request asks for JSON; replies: a reply parsed and validated.
- retries: transient errors, Retry-After and backoff; accounting: what each stage cost.
- querygen: sample documents and generate natural-language and keyword queries.
- judge: grade (query, document) pairs, each unique pair once, cached across runs.
- schemas: the replies' pydantic models and JSON schemas; prompts: the prompt templates (.txt).
- cache: the LLM result cache (in the run store, or in memory), written as a stage runs.
"""
