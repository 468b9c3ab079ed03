"""A sweep expands into named variants; 2 models x 2 chunk sizes embed each text once per model,
as the embedding cache's counters show, and cut each chunking once."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.chunking.spec import Chunking
from searchgrade.indexes.declared.spec import load_strategies_file, load_sweeps, sweep_specs
from searchgrade.indexes.registry import registry_for
from searchgrade.indexes.settings import IndexSettings
from searchgrade.indexes.variants.sweep import MAX_VARIANTS
from tests.static_model import make_static_model

SMALL = {"method": "tokens", "size": 48, "overlap": 8}
LARGE = {"method": "tokens", "size": 96, "overlap": 16}


@pytest.fixture(scope="module")
def second_model(tmp_path_factory):
    """Another static model with the same tokenizer (its first 128 dimensions)."""
    return make_static_model(tmp_path_factory.mktemp("static-128") / "minilm-static-128", dims=128)


def test_a_sweep_names_its_variants_from_the_settings_that_vary(tmp_path, static_model_dir, second_model):
    path = tmp_path / "sweep.toml"
    path.write_text(f'''
[sweep.grid]
kind = "ann"
embedding_model = ["{static_model_dir}", "{second_model}"]
chunking = [{{ method = "tokens", size = 48, overlap = 8 }}, "none"]
aggregate = "max"
''', encoding="utf-8")
    specs = load_strategies_file(path)
    assert list(specs) == ["grid-minilm-static-tokens48-8", "grid-minilm-static-whole",
                           "grid-minilm-static-128-tokens48-8", "grid-minilm-static-128-whole"]
    assert specs["grid-minilm-static-whole"].options["chunking"] is None
    assert specs["grid-minilm-static-128-tokens48-8"].options["embedding_model"] == str(second_model)
    sweep = load_sweeps(path)["grid"]
    assert sweep.reference == "ann" and list(sweep.axes) == ["embedding_model", "chunking"]
    assert sweep.variants["grid-minilm-static-whole"] == {"embedding_model": str(static_model_dir), "chunking": None}


def test_a_chunking_that_leaves_method_and_overlap_to_their_defaults_is_named_by_them():
    _, specs = sweep_specs({"grid": {"kind": "fulltext", "chunking": [{"size": 48}, {"size": 96, "overlap": 16}]}},
                           "sweep.toml")
    assert list(specs) == ["grid-tokens48-0", "grid-tokens96-16"]


@pytest.mark.parametrize(("table", "words"), [
    ({"kind": "http"}, "kind must be one of ann, fulltext"),
    ({"kind": "ann", "aggregate": []}, "aggregate is an empty list"),
    ({"kind": "ann", "aggregate": ["max", "first"] * 2, "chunking": [SMALL] * 2, "embedding_model": ["a/b"] * 4},
     f"more than {MAX_VARIANTS}"),
    ({"kind": "ann", "chunking": [{"method": "tokens", "size": 8, "overlap": 9}, SMALL]},
     "overlap of 9 must be at least 0 and less than size"),
    ({"kind": "ann", "embedding_model": ["./one/model", "./two/model"]}, "[strategy.grid-one-model]: embedding_model "
                                                                          "'./one/model' does not exist"),
])
def test_a_bad_sweep_is_one_line(table, words):
    with pytest.raises(SearchGradeError) as caught:
        sweep_specs({"grid": table}, "sweep.toml")
    assert words in str(caught.value) and "\n" not in str(caught.value) and "[sweep.grid]" in str(caught.value)


def test_two_models_by_two_chunk_sizes_embed_each_text_once_per_model(abstracts, tmp_path, static_model_dir,
                                                                      second_model):
    table = {"kind": "ann", "embedding_model": [str(static_model_dir), str(second_model)], "chunking": [SMALL, LARGE]}
    sweep_records, specs = sweep_specs({"grid": table})
    variants = list(sweep_records["grid"].variants)
    assert len(variants) == 4

    def build():
        return build_searchers(abstracts, IndexSettings(), tmp_path, strategies=variants,
                               registry=registry_for(specs))

    built = build()
    nodes = built.nodes
    # One chunking per setting: both models share the tokenizer, so each chunking is cut once.
    assert nodes[variants[0]].chunks is nodes[variants[2]].chunks
    assert nodes[variants[1]].chunks is nodes[variants[3]].chunks
    assert len(list((tmp_path / "chunks").iterdir())) == 2
    small, large = nodes[variants[0]].chunks, nodes[variants[1]].chunks
    small_texts = set(small.texts(abstracts.documents))
    large_texts = set(large.texts(abstracts.documents))
    shared = small_texts & large_texts  # abstracts short enough to be one chunk under both sizes
    assert shared
    for model_variants in (variants[:2], variants[2:]):
        first, second = (built.costs[v] for v in model_variants)
        # The cache's counters: each distinct text of a model is embedded once; the second chunk size
        # finds the texts the first one embedded.
        assert first["embedded"] == len(small_texts) and first["cache_hits"] == 0
        assert second["embedded"] == len(large_texts - small_texts) and second["cache_hits"] == len(shared)
        assert first["embedded"] + second["embedded"] == len(small_texts | large_texts)
    again = build()
    assert all(again.costs[v]["embedded"] == 0 and again.costs[v]["reused"] for v in variants)
    assert [h.docs for h in again.searchers[variants[3]].search(["vitamin D"], 5)] == \
        [h.docs for h in built.searchers[variants[3]].search(["vitamin D"], 5)]


def test_chunkings_differ_by_setting(abstracts):
    assert Chunking(**SMALL).fingerprint("t") != Chunking(**LARGE).fingerprint("t")
