from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "demo" / "scifact"
CRANFIELD = REPO / "tests" / "data" / "cranfield"

# A tiny BEIR collection about distinct topics, so every strategy can find the right documents.
TINY_DOCS = {
    "d1": ("Apple pie", "A classic apple pie recipe with cinnamon, butter and a flaky crust."),
    "d2": ("Bread baking", "How to bake sourdough bread: starter, flour, water, salt and patience."),
    "d3": ("Jupiter", "Jupiter is the largest planet in the solar system, a gas giant with many moons."),
    "d4": ("Mars", "Mars is the red planet; rovers have explored its dusty surface and old riverbeds."),
    "d5": ("Python language", "Python is a programming language known for readable code and a large library."),
    "d6": ("Rust language", "Rust is a systems programming language focused on memory safety without garbage collection."),
    "d7": ("Football", "Football, called soccer in some countries, is played by two teams of eleven players."),
    "d8": ("Tennis", "Tennis is a racket sport played on grass, clay or hard courts, singles or doubles."),
    "d9": ("Volcanoes", "Volcanoes erupt molten rock called lava; some islands were formed by volcanic activity."),
    "d10": ("Earthquakes", "Earthquakes are caused by the movement of tectonic plates along faults."),
    "d11": ("Coffee", "Coffee is brewed from roasted beans; espresso is made by forcing hot water through them."),
    "d12": ("Tea", "Tea is made by steeping leaves in hot water; green and black tea come from the same plant."),
}
TINY_QUERIES = {
    "q1": "how do I bake an apple pie",
    "q2": "largest planet in the solar system",
    "q3": "memory safe programming language",
    "q4": "what causes earthquakes",
    "q5": "how is espresso made",
}
TINY_QRELS = [
    ("q1", "d1", 2), ("q1", "d2", 1),
    ("q2", "d3", 2), ("q2", "d4", 1),
    ("q3", "d6", 2), ("q3", "d5", 1),
    ("q4", "d10", 2), ("q4", "d9", 1),
    ("q5", "d11", 2), ("q5", "d12", 0),
]


def write_beir(folder: Path, docs=TINY_DOCS, queries=TINY_QUERIES, qrels=TINY_QRELS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for doc_id, (title, text) in docs.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, text in queries.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with open(folder / "qrels.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, doc_id, grade in qrels:
            f.write(f"{qid}\t{doc_id}\t{grade}\n")
    return folder


@pytest.fixture
def tiny_beir(tmp_path) -> Path:
    return write_beir(tmp_path / "tiny")


@pytest.fixture(scope="session")
def static_model_dir(tmp_path_factory) -> Path:
    """A model2vec static model folder (tests/static_model.py), made once per session."""
    from tests.static_model import make_static_model

    return make_static_model(tmp_path_factory.mktemp("static-model") / "minilm-static")


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL 16 + pgvector (pgserver), started once for the whole test session."""
    from tests.indexes.declared.pg import Postgres

    server = Postgres()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _llama_server_stayed_up():
    """A test during which the session's llama.cpp server died fails saying how it died (its exit
    signal and log), not with the connection errors every later request would give."""
    from tests import llama_server
    dead_before = {id(server) for server in llama_server.STARTED if server.death() is not None}
    yield
    for server in llama_server.STARTED:
        if id(server) not in dead_before and (death := server.death()) is not None:
            pytest.fail(death)


@pytest.fixture(scope="session")
def demo_hybrid(tmp_path_factory):
    """The demo (SciFact, 300 queries, binary qrels) evaluated once per test session with ANN,
    full-text and hybrid (RRF: tied scores in the top 10 of about 50 queries): (data dir, run id).
    Tests that change the store copy ``searchgrade.duckdb`` first."""
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.pipeline import run_evaluation
    from searchgrade.engine.store import Store

    home = tmp_path_factory.mktemp("demo-hybrid")
    config = RunConfig(name="demo", strategies=("ann", "fulltext", "hybrid"), n_bootstrap=1000)
    run_id = run_evaluation(load_collection(DEMO), config, Store(home), home).run_id
    return home, run_id
