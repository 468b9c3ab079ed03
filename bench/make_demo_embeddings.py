"""Make the demo collection's shipped vectors with searchgrade's own indexer.

Embeds every document of demo/scifact with the default model (all-MiniLM-L6-v2, packaged) through
indexes.embeddings.encoder.encode_cached, then exports exactly those vectors as one cache shard to
demo/scifact/embeddings/<model slug>.npz, which build_searchers imports before embedding.

    python bench/make_demo_embeddings.py [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from searchgrade.engine.collections import load_collection
from searchgrade.engine.paths import DEMO_DIR
from searchgrade.indexes.embeddings.encoder import (
    EmbeddingCache,
    cache_dir_for,
    encode_cached,
    model_slug,
    text_key,
)
from searchgrade.indexes.settings import IndexSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="cache to embed into (default: a temporary folder)")
    args = parser.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="searchgrade-demo-"))
    model = IndexSettings().embedding_model
    collection = load_collection(DEMO_DIR)
    texts = [d.content for d in collection.documents]
    start = time.perf_counter()
    _, stats = encode_cached(model, texts, cache_dir_for(data_dir, model), 32, None)
    print(f"embedded {stats.embedded} of {len(texts)} texts in {time.perf_counter() - start:.0f} s")
    target = DEMO_DIR / "embeddings" / f"{model_slug(model)}.npz"
    target.parent.mkdir(exist_ok=True)
    written = EmbeddingCache(cache_dir_for(data_dir, model)).export_shard(
        target, [text_key(t) for t in texts])
    print(f"wrote {written} vectors to {target}")


if __name__ == "__main__":
    main()
