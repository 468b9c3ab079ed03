"""LLM mode: query generation and a 0-3 judge over any OpenAI-compatible chat endpoint.

- client: LLMClient (JSON replies, output-mode negotiation, retries, accounting) and LLMSettings.
- querygen: sample documents and generate natural-language and keyword queries.
- judge: grade (query, document) pairs, each unique pair once, cached across runs.
- agreement: judge-vs-human Cohen's kappa and confusion matrix.
- cache: the LLM result cache (in the run store, or in memory).
"""
