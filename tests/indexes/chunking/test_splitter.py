"""Chunks are exact spans of the text, counted by the variant's own tokenizer, kept on disk once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from searchgrade.core.records import Document
from searchgrade.indexes.chunking.chunks import load_or_cut
from searchgrade.indexes.chunking.spec import Chunking
from searchgrade.indexes.chunking.splitter import (
    count_sentences,
    cut,
    make_splitter,
    model_tokenizer,
    tokenizer_identity,
)

TEXT = ("Glaciers are slow rivers of ice. They carve valleys as they move, over thousands of years. "
        "Café owners in the Alps say the ice has retreated. Meltwater feeds rivers downstream! "
        "Is the retreat speeding up? Measurements since 1900 say it is.")


@pytest.fixture(scope="module")
def tokenizer():
    """all-MiniLM-L6-v2's own tokenizer, as a static model built on it holds it (no transformer loaded)."""
    from tokenizers import Tokenizer

    from searchgrade.indexes.embeddings.encoder import packaged_model_path

    model = SimpleNamespace(tokenizer=Tokenizer.from_file(str(packaged_model_path() / "tokenizer.json")))
    return model_tokenizer(model)


def test_token_chunks_are_exact_spans_within_the_size_in_the_models_own_tokens(tokenizer):
    spans = cut(make_splitter(Chunking("tokens", 16, 0), tokenizer), [TEXT])[0]
    assert len(spans) > 2
    for start, end in spans:
        piece = TEXT[start:end]
        assert piece and piece == piece.strip()
        assert len(tokenizer.encode(piece, add_special_tokens=False).ids) <= 16
    # In order, covering the text's words (nothing lost between chunks).
    assert [s for s, _ in spans] == sorted(s for s, _ in spans)
    assert "".join(TEXT[s:e] for s, e in spans).replace(" ", "") == TEXT.replace(" ", "")


def test_the_tokenizer_counts_every_token_even_where_the_model_truncates(tokenizer):
    # all-MiniLM-L6-v2's tokenizer.json truncates at 128 tokens: counting must not.
    assert len(tokenizer.encode("word " * 400, add_special_tokens=False).ids) == 400
    assert tokenizer_identity(tokenizer).startswith("tok-") and tokenizer_identity(None) == "bm25-words"


def test_sentence_chunks_hold_size_sentences_and_share_overlap_of_them():
    spans = cut(make_splitter(Chunking("sentences", 2, 1), None), [TEXT])[0]
    pieces = [TEXT[s:e] for s, e in spans]
    assert all(count_sentences(p) <= 2 for p in pieces)
    assert pieces[0] == "Glaciers are slow rivers of ice. They carve valleys as they move, over thousands of years."
    assert pieces[1].startswith("They carve valleys")  # one sentence shared with the chunk before


def test_sentences_are_counted_by_their_end_marks():
    assert [count_sentences(t) for t in ("One. Two! Three?", "No end mark", "Ends. And not", "", 'Quote." Next.')] \
        == [3, 1, 2, 0, 2]


def test_chunks_carry_the_title_are_kept_on_disk_and_an_empty_text_is_one_chunk(tmp_path, tokenizer):
    documents = [Document("a", "Glaciers", TEXT), Document("b", "Only a title", "")]
    chunking = Chunking("tokens", 16, 4)
    chunks, reused = load_or_cut(documents, chunking, tokenizer, tmp_path, "collection-fp")
    assert not reused and chunks.chunks_per_doc == len(chunks) / 2
    texts = chunks.texts(documents)
    assert all(t.startswith("Glaciers ") for t in texts[:-1]) and texts[-1] == "Only a title"
    assert chunks.item_ids()[0] == "a#0" and chunks.item_ids()[-1] == "b#0"
    passage = chunks.passage(1)
    assert passage.index == 1 and TEXT[passage.start:passage.end] == texts[1][len("Glaciers "):]
    again, reused = load_or_cut(documents, chunking, tokenizer, tmp_path, "collection-fp")
    assert reused and again.item_ids() == chunks.item_ids() and (again.starts == chunks.starts).all()
    other, reused = load_or_cut(documents, Chunking("tokens", 32, 4), tokenizer, tmp_path, "collection-fp")
    assert not reused and len(other) < len(chunks)
