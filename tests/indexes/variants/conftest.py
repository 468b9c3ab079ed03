"""A collection of real abstracts long enough to cut into several chunks each."""

from __future__ import annotations

import json

import pytest

from searchgrade.core.records import Collection, Document, Query
from tests.conftest import DEMO

QUERY_TEXTS = [
    "microstructural development of white matter in preterm infants",
    "vitamin D and fracture risk in older women",
    "mutations that cause resistance to chemotherapy",
    "antibiotic use and the gut microbiome",
]


def scifact_documents(n: int = 200) -> list[Document]:
    out = []
    with open(DEMO / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append(Document(row["_id"], row["title"], row["text"]))
            if len(out) == n:
                break
    return out


@pytest.fixture(scope="package")
def abstracts() -> Collection:
    documents = scifact_documents()
    return Collection(name="abstracts", path="/nowhere/abstracts", documents=documents,
                      queries=[Query(f"q{i}", t) for i, t in enumerate(QUERY_TEXTS)], qrels={})
