"""A small synthetic collection whose grades carry a signal the base strategies cannot see.

Every topic has six documents of the same shape, which BM25 and the embedder rank in no useful
order; half belong to the "blue series", half to the "green series" (words that say nothing
about the topic, so no base strategy prefers either). Two generated queries per
topic share a source document (so they must share a fold). With ``learnable`` grades, the judge
graded the blue documents 3 and the green ones 0: a reranker can learn that. With random
grades, three of each topic's six documents were picked at random as grade 3: nothing to learn.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from searchgrade.core.records import Grade, Query
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.store import Store

TOPICS = ("volcano", "penguin", "glacier", "comet", "tornado", "coral", "meteor", "desert",
          "jungle", "tundra", "lagoon", "canyon", "geyser", "iceberg", "monsoon", "savanna",
          "fjord", "plateau", "reef", "delta", "marsh", "dune", "crater", "atoll")
GOOD, BAD = "blue", "green"
FILLER = ("notes", "report", "summary", "overview", "remarks", "account")


def documents() -> dict[str, tuple[str, str]]:
    docs = {}
    for t, topic in enumerate(TOPICS):
        for i in range(6):
            marker = GOOD if i % 2 == 0 else BAD
            docs[f"t{t}-{i}"] = (f"{topic} {FILLER[i]}", f"The {topic} {FILLER[i]}, {marker} series.")
    return docs


def queries(topics: range = range(len(TOPICS))) -> list[Query]:
    out = []
    for t in topics:
        topic = TOPICS[t]
        source = f"t{t}-0"
        out.append(Query(f"g-t{t}-n0", f"what do we know about the {topic}", "natural", source))
        out.append(Query(f"g-t{t}-k0", f"{topic} facts", "keyword", source))
    return out


def grades(learnable: bool, seed: int = 7, topics: range = range(len(TOPICS))) -> list[Grade]:
    rng = random.Random(seed)
    out = []
    for t in topics:
        good = {i for i in range(6) if i % 2 == 0} if learnable else set(rng.sample(range(6), 3))
        for query_suffix in ("n0", "k0"):
            for i in range(6):
                grade = 3 if i in good else 0
                out.append(Grade(f"g-t{t}-{query_suffix}", f"t{t}-{i}", grade, "llm", "judge-model", "v1"))
    return out


def write_collection(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc_id, (title, text) in documents().items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    return folder


def write_split(folder: Path, topics: range) -> tuple[Path, Path]:
    """A separate training split: queries.jsonl and a qrels file (learnable grades) of ``topics``."""
    queries_path, qrels_path = folder / "train-queries.jsonl", folder / "train-qrels.tsv"
    with open(queries_path, "w", encoding="utf-8") as f:
        for q in queries(topics):
            f.write(json.dumps({"_id": f"train-{q.query_id}", "text": q.text}) + "\n")
    with open(qrels_path, "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for g in grades(True, topics=topics):
            f.write(f"train-{g.query_id}\t{g.doc_id}\t{g.grade}\n")
    return queries_path, qrels_path


def store_run(store: Store, collection_path: Path, learnable: bool,
              topics: range = range(len(TOPICS))) -> str:
    """A complete LLM-judged run of the three base strategies holding these queries and grades."""
    config = RunConfig(mode="llm", strategies=("ann", "fulltext", "hybrid"))
    run_id = store.create_run(
        name=f"synthetic {'learnable' if learnable else 'random'}", collection_name="synthetic",
        collection_path=str(collection_path), mode="llm", label_source="llm", grade_min=0,
        grade_max=3, threshold=2, k=10, depth=10, config=config.to_json(),
    )
    with store.transaction() as con:
        store.write_queries(con, run_id, queries(topics))
        store.write_grades(con, run_id, grades(learnable, topics=topics))
    store.finish_run(run_id, "complete")
    return run_id
