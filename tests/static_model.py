"""A real model2vec static model for tests, made in a second: all-MiniLM-L6-v2's own tokenizer with
its input token embeddings as the static vectors (what a transformer starts from, before its layers).

It is written by model2vec's own ``save_pretrained`` and read by its ``StaticModel``, exactly as a
distilled model is (``searchgrade embeddings distill``, tested on its own: it takes longer). Its
vectors are weaker than a distilled model's; tests use it for what holds whatever the model.
"""

from __future__ import annotations

from pathlib import Path


def make_static_model(folder: Path, dims: int | None = None) -> Path:
    """Write the static model into ``folder`` (made) and return it; ``dims``: keep only the first
    ``dims`` dimensions (another model, of the same tokenizer)."""
    import numpy as np
    from model2vec import StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from searchgrade.indexes.embeddings.encoder import packaged_model_path

    source = packaged_model_path()
    tensors = load_file(str(source / "model.safetensors"))
    name = next(k for k in tensors if k.endswith("word_embeddings.weight"))
    vectors = np.asarray(tensors[name], dtype=np.float32)[:, :dims]
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": int(vectors.shape[1]),
              "normalize": True, "pooling": "mean"}
    StaticModel(vectors=vectors, tokenizer=tokenizer, config=config, normalize=True).save_pretrained(str(folder))
    return folder
