"""Cutting texts into chunks with semantic-text-splitter, counting with the variant's own tokenizer.

Why semantic-text-splitter (the ``text-splitter`` Rust crate): its chunks are exact spans of the
original text with their character offsets (so the drill-down shows the passage as written, and a
chunk's text is never a tokenizer's decoding of it, lower-cased and re-spaced); it takes a Hugging
Face ``tokenizers.Tokenizer`` object, so tokens are counted by the embedding model's own tokenizer,
loaded from the model's folder (no library default that downloads one); it cuts at the largest
semantic unit that fits (sentences, then words), in Rust, in parallel over a batch; and it is one
wheel with no Python dependencies. chonkie's token chunker decodes token ids back to text (a BERT
tokenizer's decoding is lower-cased with spaces around punctuation), and LangChain's splitters find
their offsets by searching the text again.

A variant without an embedding model (a full-text variant) counts BM25's own word tokens
(indexes/builtin/tokenizer.py). ``sentences`` counts sentences: the splitter cuts at Unicode
sentence boundaries, and a chunk holds at most ``size`` sentences as ``count_sentences`` counts
them (an end mark, ``.``, ``!`` or ``?``, followed by a space or the end).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.chunking.spec import Chunking

#: A sentence's end: end marks, closing quotes or brackets, then white space or the end.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?:\s+|$)")
_ENDS_WITH_MARK = re.compile(r"[.!?][\"'”’)\]]*$")
#: What counts the tokens of a variant without a model: BM25's words.
WORDS = "bm25-words"


def count_sentences(text: str) -> int:
    """Sentences in ``text``: its end marks, and one more when it does not end with one."""
    stripped = text.strip()
    if not stripped:
        return 0
    return len(_SENTENCE_END.findall(stripped)) + (0 if _ENDS_WITH_MARK.search(stripped) else 1)


def _splitter_module() -> Any:
    try:
        import semantic_text_splitter
    except ImportError as exc:
        raise SearchGradeError("semantic-text-splitter is not installed (pip install semantic-text-splitter)") from exc
    return semantic_text_splitter


def model_tokenizer(embedder: Any) -> Any:
    """A copy of an embedder's ``tokenizers.Tokenizer`` that counts every token (no truncation, no
    padding): a sentence-transformers model's fast tokenizer, an ONNX embedder's, a static model's.

    Raises:
        SearchGradeError: the model has no fast (Rust) tokenizer to count with.
    """
    from tokenizers import Tokenizer

    candidates = [getattr(embedder, "tokenizer", None),
                  getattr(getattr(embedder, "transformer", None), "tokenizer", None)]
    for candidate in candidates:
        inner = candidate if isinstance(candidate, Tokenizer) else getattr(candidate, "backend_tokenizer", None)
        if isinstance(inner, Tokenizer):
            copy = Tokenizer.from_str(inner.to_str())
            copy.no_truncation()
            copy.no_padding()
            return copy
    raise SearchGradeError(f"the embedding model {embedder!r} has no fast tokenizer (tokenizer.json) to count "
                           "chunk tokens with: use a model that has one, or chunk by method = \"sentences\"")


def tokenizer_identity(tokenizer: Any) -> str:
    """What names a tokenizer in chunk fingerprints: a digest of its definition, or ``bm25-words``."""
    if tokenizer is None:
        return WORDS
    return "tok-" + hashlib.sha256(tokenizer.to_str().encode("utf-8")).hexdigest()[:16]


def make_splitter(chunking: Chunking, tokenizer: Any) -> Any:
    """The splitter of ``chunking``, counting with ``tokenizer`` (None: BM25's words)."""
    module = _splitter_module()
    size, overlap = chunking.size, chunking.overlap
    if chunking.method == "sentences":
        return module.TextSplitter.from_callback(count_sentences, size, overlap)
    cls = module.MarkdownSplitter if chunking.method == "markdown" else module.TextSplitter
    if tokenizer is None:
        from searchgrade.indexes.builtin.tokenizer import tokenize

        words: Callable[[str], int] = lambda text: len(tokenize(text))  # noqa: E731 - the splitter's callback
        return cls.from_callback(words, size, overlap)
    return cls.from_huggingface_tokenizer(tokenizer, size, overlap)


def cut(splitter: Any, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
    """Each text's chunks as (start, end) character spans, in order (none for an empty text)."""
    out = []
    for spans in splitter.chunk_all_indices(list(texts)):
        out.append([(int(start), int(start) + len(chunk)) for start, chunk in spans])
    return out
