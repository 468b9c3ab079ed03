"""Python strategies for the plugin tests: what a user's own class looks like."""

from __future__ import annotations


class KeywordSearch:
    """Ranks the tiny collection's documents by how many query words they share (a real search,
    small enough to check by hand), with ``(doc_id, score)`` pairs."""

    def __init__(self, documents: dict[str, str], fail_on: str = "") -> None:
        self.documents = documents
        self.fail_on = fail_on
        self.calls = 0

    def search(self, queries, k):
        self.calls += 1
        out = []
        for query in queries:
            if self.fail_on and self.fail_on in query:
                raise ConnectionError(f"index shard down for {query!r}")
            words = set(query.lower().split())
            scored = [(doc_id, float(len(words & set(text.lower().split()))))
                      for doc_id, text in self.documents.items()]
            out.append(sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))[:k])
        return out


class Described:
    """Mappings with title/text: documents the collection does not hold."""

    def search(self, queries, k):
        return [[{"id": "web-1", "score": 2.0, "title": "Outside", "text": "from the web"},
                 {"id": "d1", "score": 1.0}] for _ in queries]


class WrongCount:
    def search(self, queries, k):
        return []


class NoSearch:
    pass
