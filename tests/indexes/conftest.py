"""Fixtures: a tiny corpus with unambiguous queries, and a tiny cross-encoder built locally."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchgrade.core.records import Collection, Document, Query

DOCS = {
    "d01": ("Penguins", "Penguins are flightless seabirds that live in Antarctica and eat krill."),
    "d02": ("Volcanoes", "A volcano erupts when molten magma rises through the crust."),
    "d03": ("Coffee", "Coffee beans are roasted seeds of the Coffea plant, brewed into a hot drink."),
    "d04": ("Chess", "Chess is a board game where each player commands sixteen pieces."),
    "d05": ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into sugar."),
    "d06": ("Bitcoin", "Bitcoin is a decentralised digital currency secured by a blockchain."),
    "d07": ("Marathon", "A marathon is a long-distance running race of 42 kilometres."),
    "d08": ("Insulin", "Insulin is a hormone that regulates blood sugar; diabetes disrupts it."),
    "d09": ("Jazz", "Jazz music originated in New Orleans with improvisation and swing."),
    "d10": ("Tides", "Ocean tides are caused by the gravitational pull of the moon."),
    "d11": ("Sourdough", "Sourdough bread is leavened with wild yeast and lactic acid bacteria."),
    "d12": ("Black holes", "A black hole is a region of spacetime where gravity traps light."),
    "d13": ("Vaccines", "Vaccines train the immune system to recognise a virus."),
    "d14": ("Glaciers", "Glaciers are slow rivers of ice that carve valleys as they move."),
    "d15": ("Honeybees", "Honeybees pollinate flowers and make honey from nectar in hives."),
    "d16": ("Tennis", "Tennis players hit a ball over a net with racquets on a court."),
    "d17": ("Compilers", "A compiler translates source code into machine instructions."),
    "d18": ("Rainbows", "A rainbow appears when sunlight is refracted by raindrops."),
    "d19": ("Earthquakes", "Earthquakes happen when tectonic plates slip along a fault."),
    "d20": ("Café culture", "Parisian café terraces serve espresso and croissants."),
}

class CountingModel:
    """The real embedder, counting every text it is asked to encode."""

    def __init__(self, model) -> None:
        self.model = model
        self.encoded: list[str] = []

    def encode(self, texts, **kwargs):
        self.encoded.extend(texts)
        return self.model.encode(texts, **kwargs)


QUERIES = {
    "q1": ("birds that cannot fly in the antarctic", "d01"),
    "q2": ("how does magma cause an eruption", "d02"),
    "q3": ("digital currency blockchain", "d06"),
    "q4": ("hormone controlling blood sugar", "d08"),
    "q5": ("why does the sea rise and fall with the moon", "d10"),
}


def make_collection(docs: dict[str, tuple[str, str]] = DOCS, name: str = "tiny") -> Collection:
    return Collection(
        name=name,
        path=f"/nowhere/{name}",
        documents=[Document(doc_id, title, text) for doc_id, (title, text) in docs.items()],
        queries=[Query(qid, text) for qid, (text, _) in QUERIES.items()],
        qrels={qid: {doc_id: 1} for qid, (_, doc_id) in QUERIES.items()},
    )


@pytest.fixture
def collection() -> Collection:
    return make_collection()


@pytest.fixture(scope="session")
def tiny_cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, 32-wide BERT with one output label and a WordPiece vocabulary of the corpus words.

    Random weights: it ranks nonsensically, but it is a real CrossEncoder, loaded from a local folder.
    """
    import re

    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    directory = tmp_path_factory.mktemp("tiny_cross_encoder")
    words = sorted({w for title, text in DOCS.values() for w in re.findall(r"\w+", f"{title} {text}".lower())})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                        num_labels=1)
    BertForSequenceClassification(config).save_pretrained(directory)
    BertTokenizer(str(directory / "vocab.txt")).save_pretrained(directory)
    return directory
